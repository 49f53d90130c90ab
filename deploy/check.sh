#!/usr/bin/env bash
# Validates what can be validated without a cluster or a container engine:
#   * YAML/JSON syntax of the chart's values, Chart.yaml, the alert rules and
#     the Grafana dashboard (and that the dashboard matches its generator);
#   * the chart, with the real helm (deploy/helm.sh: v4 from a pinned npm
#     package; helm is not in Debian's archive): `helm lint --strict` and
#     `helm template` over several value sets, every object validated against
#     the Kubernetes API schemas by tests/js/validate_k8s.mjs; value sets the
#     chart must refuse (values.schema.json, the templates' own checks), each
#     with the words its error must contain;
#   * the alert rules: `promtool check rules` + `promtool test rules`
#     (apt-get install prometheus), when promtool is installed;
#   * the container scripts: shellcheck, when installed.
# Usage: deploy/check.sh   (from anywhere; needs python3 with PyYAML and
# node with tests/js's packages: scripts/setup.sh installs them). Exits
# non-zero on any failure; the chart's failing value sets are named.
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

# The chart: linted and rendered by the real helm over several value sets,
# every object validated against the Kubernetes API schemas
# (tests/js/validate_k8s.mjs: kubernetes-models + prometheus-operator models
# from npm, plus a strict unknown-field check).
chart="$here/helm/crl"
validator="$repo/tests/js/validate_k8s.mjs"
renderer="helm $("$here/helm.sh" version --template '{{.Version}}' 2>/dev/null || echo '(missing)')"
render() { "$here/helm.sh" template crl "$chart" "$@"; }
lint() { "$here/helm.sh" lint --strict --quiet "$chart" "$@"; }
python3 "$here/helm/schema.py" --check || fail=1
if ! command -v node >/dev/null || [ ! -d "$repo/tests/js/node_modules/kubernetes-models" ]; then
  echo "FAIL: the validator needs node and tests/js's packages (scripts/setup.sh, or npm ci --prefix tests/js)"
  fail=1
  validator=""
fi
# label|arguments (helm template and helm lint flags)
value_sets=(
  "default|"
  "mtls|--set tls.enabled=true --set tls.secretName=crl-tls --set tls.requireClientCert=true"
  "cpu-worker|--set worker.gpu.enabled=false --set worker.cache.type=ephemeral"
  "worker-timing-only|--set orchestrator.enabled=false --set prompt.enabled=false --set sampler.enabled=false --set trainer.enabled=false --set metrics.serviceMonitor.enabled=true"
  "privileged-userns|--set worker.sandbox.profile=privileged-userns --set auth.existingSecret=crl-token"
  "all-optional|--set metrics.serviceMonitor.enabled=true --set metrics.prometheusRule.enabled=true --set orchestrator.ingress.enabled=true"
  "kube-1.29|--kube-version 1.29.0"
  "ingress-digests|--set orchestrator.ingress.enabled=true --set orchestrator.ingress.className=nginx --set orchestrator.ingress.host=crl.example.com --set orchestrator.ingress.tls[0].secretName=crl-ingress --set orchestrator.ingress.tls[0].hosts[0]=crl.example.com --set-string orchestrator.ingress.annotations.nginx\\.ingress\\.kubernetes\\.io/backend-protocol=GRPC --set images.services.digest=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef --set images.worker.digest=sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
  "sampler-endpoints-gpu-trainer|--set sampler.backend=endpoints --set sampler.endpoints.urls[0]=http://vllm.llm.svc:8000/v1 --set sampler.endpoints.model=qwen --set sampler.endpoints.apiKeySecret.name=vllm-key --set trainer.image=trainer --set trainer.gpu.enabled=true --set policy.persistence.existingClaim=my-model --set policy.embedded.init=false"
  "postgres-store|--set orchestrator.postgres.url=postgresql://crl@postgres.db.svc:5432/crl?sslmode=require --set orchestrator.postgres.passwordSecret.name=crl-postgres --set orchestrator.postgres.to[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=db"
  "judge|--set orchestrator.judge.url=https://llm.example.com/v1 --set orchestrator.judge.model=judge --set orchestrator.judge.apiKeySecret.name=judge-key --set orchestrator.judge.to[0].ipBlock.cidr=203.0.113.0/24 --set orchestrator.judge.rejudgeEverySeconds=0"
  "trainer-ranks|--set trainer.distributed.worldSize=2"
  "trainer-ranks-nccl|--set trainer.distributed.worldSize=4 --set trainer.distributed.backend=nccl --set trainer.gpu.enabled=true --set trainer.image=trainer"
  "no-auth-no-persistence|--set auth.enabled=false --set orchestrator.persistence.enabled=false --set policy.persistence.enabled=false --set tests.smoke.backend=host --set worker.config.host_lanes=1"
)
failed_sets=()
for entry in "${value_sets[@]}"; do
  label=${entry%%|*}
  args=${entry#*|}
  out="$tmp/chart-$label.yaml"
  # shellcheck disable=SC2086
  if ! lint $args > "$tmp/render.err" 2>&1; then
    sed 's/^/    /' "$tmp/render.err"
    echo "FAIL: [$label] helm lint --strict: ${args:-(defaults)}"
    failed_sets+=("$label"); fail=1; continue
  fi
  # shellcheck disable=SC2086
  if ! render $args > "$out" 2> "$tmp/render.err"; then
    sed 's/^/    /' "$tmp/render.err"
    echo "FAIL: [$label] $renderer could not render the chart with: ${args:-(defaults)}"
    failed_sets+=("$label"); fail=1; continue
  fi
  [ -n "$validator" ] || continue
  if node "$validator" "$out" > "$tmp/validate.out" 2>&1; then
    echo "OK: [$label] $(tail -n 1 "$tmp/validate.out")"
  else
    grep -v '^OK ' "$tmp/validate.out" | sed 's/^/    /'
    echo "FAIL: [$label] rendered objects do not validate (${args:-defaults})"
    failed_sets+=("$label"); fail=1
  fi
done
if [ ${#failed_sets[@]} -eq 0 ] && [ -n "$validator" ]; then
  echo "OK: chart rendered ($renderer) and validated over ${#value_sets[@]} value sets"
elif [ ${#failed_sets[@]} -eq 0 ]; then
  echo "FAIL: chart rendered ($renderer) over ${#value_sets[@]} value sets but not validated"
else
  echo "FAIL: chart value sets: ${failed_sets[*]}"
fi

# Values the chart must refuse: label|words its error must contain|arguments.
refused_sets=(
  "misspelt key|additional properties 'replica' not allowed|--set worker.replica=8"
  "unknown egress|value must be one of 'none', 'restricted', 'all'|--set orchestrator.networkPolicy.egress=open"
  "port out of range|/timing/grpcPort|--set timing.grpcPort=70000"
  "password in the store URL|no password in the URL|--set orchestrator.postgres.url=postgresql://crl:secret@db:5432/crl"
  "judge without a model|orchestrator.judge.model|--set orchestrator.judge.url=http://vllm:8000/v1"
  "trainer rolling update|trainer.strategy.type must be Recreate|--set trainer.strategy.type=RollingUpdate"
  "two trainers on one out_dir|trainer.replicas: 2|--set trainer.replicas=2"
  "NCCL ranks without GPUs|backend=nccl needs trainer.gpu.enabled=true|--set trainer.distributed.worldSize=2 --set trainer.distributed.backend=nccl"
  "ranks without a shared volume|needs policy.persistence.enabled|--set trainer.distributed.worldSize=2 --set policy.persistence.enabled=false"
  "unknown rank backend|value must be one of 'gloo', 'nccl'|--set trainer.distributed.backend=mpi"
)
refused_ok=0
for entry in "${refused_sets[@]}"; do
  IFS='|' read -r label words args <<< "$entry"
  # shellcheck disable=SC2086
  if render $args > /dev/null 2> "$tmp/refused.err"; then
    echo "FAIL: [$label] the chart rendered with: $args"; fail=1
  elif ! grep -qF -- "$words" "$tmp/refused.err"; then
    sed 's/^/    /' "$tmp/refused.err"
    echo "FAIL: [$label] refused, but the error does not say: $words"; fail=1
  else
    refused_ok=$((refused_ok + 1))
  fi
done
echo "OK: $refused_ok of ${#refused_sets[@]} bad value sets refused with the right words"

# The install notes size the fleet (docs/scaling.md): silent at the
# defaults, a line per undersized setting for 80 GPU workers.
notes() { "$here/helm.sh" install crl "$chart" --dry-run=client "$@" 2>&1 | sed -n '/^NOTES:/,$p'; }
if notes | grep -q "Sizing"; then
  echo "FAIL: the install notes warn about sizing at the defaults"; fail=1
elif [ "$(notes --set worker.replicas=80 | grep -c "^Sizing")" != 2 ]; then
  notes --set worker.replicas=80 | sed 's/^/    /'
  echo "FAIL: the install notes do not warn about candidates in flight and timing threads for 80 workers"; fail=1
else
  echo "OK: the install notes warn when the fleet outgrows candidates in flight or timing threads"
fi

if command -v promtool >/dev/null; then
  promtool check rules "$here/helm/crl/files/alerts.rules.yaml"
  (cd "$here/prometheus" && promtool test rules alerts_test.yaml)
else
  skip "promtool not installed (apt-get install prometheus)"
fi

if command -v shellcheck >/dev/null; then
  shellcheck "$repo/docker/runtime-deps.sh" "$repo/docker/install-tree.sh" "$repo/docker/worker-entrypoint.sh" "$here/check.sh"
  # The sh scripts the chart renders into pods (the policy's initContainer,
  # the `helm test` pod), from every value set that rendered.
  scripts=$(python3 - "$tmp" <<'PY'
import glob, sys, yaml
tmp = sys.argv[1]
n = 0
for path in sorted(glob.glob(f"{tmp}/chart-*.yaml")):
    for doc in yaml.safe_load_all(open(path)):
        if not doc or doc.get("kind") not in ("Pod", "Deployment", "StatefulSet"):
            continue
        spec = doc["spec"] if doc["kind"] == "Pod" else doc["spec"]["template"]["spec"]
        for c in spec.get("initContainers", []) + spec.get("containers", []):
            if c.get("command", [])[:2] == ["/bin/sh", "-c"]:
                with open(f"{tmp}/pod-script-{n}.sh", "w") as f:
                    f.write(f"# {path.rsplit('/', 1)[1]}: {doc['kind']}/{doc['metadata']['name']} {c['name']}\n")
                    f.write(c["args"][0])
                n += 1
print(n)
PY
)
  if [ "$scripts" -gt 0 ]; then
    shellcheck -s sh "$tmp"/pod-script-*.sh
  fi
  echo "OK: shellcheck (and $scripts sh scripts of rendered pods)"
else
  skip "shellcheck not installed"
fi
exit $fail
