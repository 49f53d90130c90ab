#!/usr/bin/env bash
# Validates what can be validated without a cluster or a container engine:
#   * YAML/JSON syntax of the chart's values, Chart.yaml, the alert rules and
#     the Grafana dashboard (and that the dashboard matches its generator);
#   * the chart: `helm lint` and `helm template` over several value sets,
#     when helm is installed (it is not in Debian's archive);
#   * the alert rules: `promtool check rules` + `promtool test rules`
#     (apt-get install prometheus), when promtool is installed;
#   * the container scripts: shellcheck, when installed.
# Usage: deploy/check.sh   (from anywhere; needs python3 with PyYAML)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
skip() { echo "SKIP: $*"; }

python3 - "$here" <<'PY'
import json, sys, yaml
here = sys.argv[1]
for p in ("helm/crl/Chart.yaml", "helm/crl/values.yaml", "helm/crl/files/alerts.rules.yaml",
          "prometheus/alerts_test.yaml"):
    yaml.safe_load(open(f"{here}/{p}"))
json.load(open(f"{here}/grafana/crl-dashboard.json"))
print("OK: YAML and JSON parse")
PY
python3 "$here/grafana/generate_dashboard.py" --check

if command -v helm >/dev/null; then
  chart="$here/helm/crl"
  helm lint "$chart"
  for set in \
      "" \
      "--set tls.enabled=true --set tls.secretName=crl-tls --set tls.requireClientCert=true" \
      "--set worker.gpu.enabled=false --set worker.cache.type=ephemeral" \
      "--set orchestrator.enabled=true --set prompt.enabled=true --set sampler.enabled=true --set trainer.enabled=true --set metrics.serviceMonitor.enabled=true" \
      "--set worker.sandbox.profile=privileged-userns --set auth.existingSecret=crl-token"; do
    # shellcheck disable=SC2086
    helm template crl "$chart" $set > "$tmp/out.yaml" || { echo "FAIL: helm template $set"; fail=1; }
  done
  echo "OK: helm lint/template"
else
  skip "helm not installed (chart templates not rendered)"
fi

if command -v promtool >/dev/null; then
  promtool check rules "$here/helm/crl/files/alerts.rules.yaml"
  (cd "$here/prometheus" && promtool test rules alerts_test.yaml)
else
  skip "promtool not installed (apt-get install prometheus)"
fi

if command -v shellcheck >/dev/null; then
  shellcheck "$repo/docker/runtime-deps.sh" "$repo/docker/worker-entrypoint.sh" "$here/check.sh"
  echo "OK: shellcheck"
else
  skip "shellcheck not installed"
fi
exit $fail
