{{/*
Names, labels and the pieces every component shares. Component helpers take
a dict: (dict "root" $ "name" "worker" "c" .Values.worker).
*/}}

{{- define "crl.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "crl.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "crl.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The components, in a fixed order. */}}
{{- define "crl.components" -}}
worker timing orchestrator prompt sampler trainer
{{- end -}}

{{/* <fullname>-<component> (fullname: the release name, or <release>-crl); dict "root" "name" */}}
{{- define "crl.componentFullname" -}}
{{- printf "%s-%s" (include "crl.fullname" .root) .name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "crl.selectorLabels" -}}
app.kubernetes.io/name: {{ include "crl.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{- define "crl.labels" -}}
helm.sh/chart: {{ include "crl.chart" .root }}
{{ include "crl.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: crl
{{- end -}}

{{/*
registry/repository:tag of images.<c.image>, or registry/repository@digest
when images.<c.image>.digest is set (the digest pins the content; the tag
is then ignored).
*/}}
{{- define "crl.image" -}}
{{- $img := index .root.Values.images .c.image -}}
{{- if not $img -}}
{{- fail (printf "%s.image: there is no images.%s" .name .c.image) -}}
{{- end -}}
{{- $repo := $img.repository -}}
{{- if .root.Values.images.registry -}}
{{- $repo = printf "%s/%s" (trimSuffix "/" .root.Values.images.registry) $repo -}}
{{- end -}}
{{- if $img.digest -}}
{{- if not (regexMatch "^sha256:[0-9a-f]{64}$" $img.digest) -}}
{{- fail (printf "images.%s.digest: %q is not sha256:<64 hex digits>" .c.image $img.digest) -}}
{{- end -}}
{{- printf "%s@%s" $repo $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo (default .root.Chart.AppVersion $img.tag) -}}
{{- end -}}
{{- end -}}

{{/* In-cluster gRPC address of a component's Service: dict "root" "name" */}}
{{- define "crl.address" -}}
{{- $c := index .root.Values .name -}}
{{- printf "%s.%s.svc:%d" (include "crl.componentFullname" .) .root.Release.Namespace (int $c.grpcPort) -}}
{{- end -}}

{{/* The workers as the timing oracle and the orchestrator dial them: every
address of the headless Service, re-resolved as pods come and go. */}}
{{- define "crl.workersAddress" -}}
{{- printf "dns:///%s" (include "crl.address" (dict "root" .root "name" "worker")) -}}
{{- end -}}

{{/* Whether a component runs the policy (trainer; sampler with backend policy): dict "root" "name" "c" */}}
{{- define "crl.usesPolicy" -}}
{{- if or (eq .name "trainer") (and (eq .name "sampler") (eq (default "policy" .c.backend) "policy")) -}}true{{- end -}}
{{- end -}}

{{/* Bytes of a Kubernetes quantity ("20Gi", "500M", "1073741824"). */}}
{{- define "crl.quantityBytes" -}}
{{- $q := toString . -}}
{{- $units := dict "" 1 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 -}}
{{- $num := regexFind "^[0-9]+" $q -}}
{{- $unit := trimPrefix $num $q -}}
{{- if or (not $num) (not (hasKey $units $unit)) -}}
{{- fail (printf "%q: not a quantity the chart understands (an integer with Ki, Mi, Gi, Ti, k, M, G, T or no suffix)" $q) -}}
{{- end -}}
{{- mul (int64 $num) (int64 (index $units $unit)) -}}
{{- end -}}

{{- define "crl.drainSeconds" -}}
{{- if hasKey .c "drainDelaySeconds" -}}{{ int .c.drainDelaySeconds }}{{- else -}}{{ int .root.Values.server.drainDelaySeconds }}{{- end -}}
{{- end -}}

{{- define "crl.shutdownSeconds" -}}
{{- if hasKey .c "shutdownTimeoutSeconds" -}}{{ int .c.shutdownTimeoutSeconds }}{{- else -}}{{ int .root.Values.server.shutdownTimeoutSeconds }}{{- end -}}
{{- end -}}

{{/* Always longer than the service's own bounded shutdown. */}}
{{- define "crl.graceSeconds" -}}
{{- add (include "crl.drainSeconds" . | int) (include "crl.shutdownSeconds" . | int) (int .root.Values.server.terminationGraceMarginSeconds) -}}
{{- end -}}

{{/* Name of the Secret holding the bearer token. */}}
{{- define "crl.authSecretName" -}}
{{- if .Values.auth.existingSecret -}}
{{- .Values.auth.existingSecret -}}
{{- else -}}
{{- printf "%s-auth" (include "crl.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "crl.authSecretKey" -}}
{{- if .Values.auth.existingSecret -}}{{ .Values.auth.secretKey }}{{- else -}}token{{- end -}}
{{- end -}}

{{- define "crl.tlsSecretName" -}}
{{- $name := default .root.Values.tls.secretName (.c.tls | default dict).secretName -}}
{{- if not $name -}}
{{- fail (printf "tls.enabled: set tls.secretName (or %s.tls.secretName) to a kubernetes.io/tls Secret" .name) -}}
{{- end -}}
{{- $name -}}
{{- end -}}

{{/* Worker paths, from its config (the volumes follow the options). */}}
{{- define "crl.worker.cacheDir" -}}{{ default "/var/cache/crl" (.c.config | default dict).cache_dir }}{{- end -}}
{{- define "crl.worker.workDir" -}}{{ default "/var/lib/crl/work" (.c.config | default dict).work_dir }}{{- end -}}

{{/*
The YAML config file of a component: the chart's server settings, then the
wiring between the components (addresses of the other Services, the token
and TLS files for the calls they make, data and model paths on the
component's volumes), then the shipped per-service file config/<name>.yaml
(the same file `crl up` passes to the local cluster: one source for both),
then the component's `config` from the values. The server keys may not be
redefined; the wiring may (e.g. workers outside this release).
*/}}
{{- define "crl.config" -}}
{{- $root := .root -}}
{{- $c := .c -}}
{{- $srv := $root.Values.server -}}
{{- $shipped := ($root.Files.Get (printf "config/%s.yaml" .name)) | fromYaml | default dict -}}
{{- $userConfig := deepCopy ($c.config | default dict) -}}
{{- range $k := list "listen" "metrics_listen" "drain_delay" "shutdown_timeout" "auth_token_file" "tls_cert_file" "tls_key_file" "tls_client_ca_file" -}}
{{- if or (hasKey $userConfig $k) (hasKey $shipped $k) -}}
{{- fail (printf "%s.config.%s is managed by the chart: use %s.grpcPort, server.*, auth.* or tls.*" $.name $k $.name) -}}
{{- end -}}
{{- end -}}
{{- /* Client side of every call a component makes (prefix_<key>). */ -}}
{{- $client := dict -}}
{{- if $root.Values.auth.enabled -}}
{{- $_ := set $client "auth_token_file" "/etc/crl/auth/token" -}}
{{- end -}}
{{- if $root.Values.tls.enabled -}}
{{- $_ := set $client "tls" true -}}
{{- $_ := set $client "tls_ca_file" "/etc/crl/tls/ca.crt" -}}
{{- if $root.Values.tls.requireClientCert -}}
{{- $_ := set $client "tls_cert_file" "/etc/crl/tls/tls.crt" -}}
{{- $_ := set $client "tls_key_file" "/etc/crl/tls/tls.key" -}}
{{- end -}}
{{- end -}}
{{- $wiring := dict -}}
{{- $prefixes := list -}}
{{- $enabled := dict -}}
{{- range $n := splitList " " (include "crl.components" $root) -}}
{{- if (index $root.Values $n).enabled -}}
{{- $_ := set $enabled $n (include "crl.address" (dict "root" $root "name" $n)) -}}
{{- end -}}
{{- end -}}
{{- if $enabled.worker -}}
{{- $_ := set $enabled "worker" (include "crl.workersAddress" (dict "root" $root)) -}}
{{- end -}}
{{- $policy := $root.Values.policy -}}
{{- if eq .name "timing" -}}
{{- if $enabled.worker }}{{ $_ := set $wiring "workers" $enabled.worker }}{{ end -}}
{{- $prefixes = list "worker" -}}
{{- else if eq .name "orchestrator" -}}
{{- if $enabled.worker }}{{ $_ := set $wiring "workers" $enabled.worker }}{{ end -}}
{{- range $n := list "prompt" "sampler" "timing" "trainer" -}}
{{- if hasKey $enabled $n }}{{ $_ := set $wiring $n (index $enabled $n) }}{{ end -}}
{{- end -}}
{{- /* The store: PostgreSQL when orchestrator.postgres.url is set; else SQLite on the StatefulSet's volume, or without persistence on /tmp (an emptyDir: lost with the pod). */ -}}
{{- with ($c.postgres | default dict).url }}
{{- if regexMatch "://[^/@]*:[^/@]*@" . }}{{ fail "orchestrator.postgres.url: no password in the URL (orchestrator.postgres.passwordSecret)" }}{{ end -}}
{{- $_ := set $wiring "store" . -}}
{{- end -}}
{{- $_ := set $wiring "data_dir" (ternary $c.persistence.mountPath "/tmp/crl-data" (eq (toString $c.persistence.enabled) "true")) -}}
{{- $prefixes = list "upstream" -}}
{{- else if eq .name "sampler" -}}
{{- $backend := default "policy" $c.backend -}}
{{- if eq $backend "policy" -}}
{{- $_ := set $wiring "policy" $policy.modelPath -}}
{{- else if eq $backend "endpoints" -}}
{{- $ep := $c.endpoints | default dict -}}
{{- with $ep.urls }}{{ $_ := set $wiring "endpoints" . }}{{ end -}}
{{- with $ep.model }}{{ $_ := set $wiring "endpoint_model" . }}{{ end -}}
{{- if ($ep.apiKeySecret | default dict).name -}}
{{- $_ := set $wiring "endpoint_api_key_file" "/etc/crl/endpoint/api-key" -}}
{{- end -}}
{{- else -}}
{{- fail (printf "sampler.backend: %q is not policy or endpoints" $backend) -}}
{{- end -}}
{{- if $enabled.trainer }}{{ $_ := set $wiring "trainer" $enabled.trainer }}{{ end -}}
{{- $prefixes = list "trainer" -}}
{{- else if eq .name "trainer" -}}
{{- $_ := set $wiring "model" $policy.modelPath -}}
{{- $_ := set $wiring "out_dir" (printf "%s/trainer" (trimSuffix "/" $policy.mountPath)) -}}
{{- if $policy.persistence.enabled }}{{ $_ := set $wiring "resume" true }}{{ end -}}
{{- end -}}
{{- range $p := $prefixes -}}
{{- range $k, $v := $client }}{{ $_ := set $wiring (printf "%s_%s" $p $k) $v }}{{ end -}}
{{- end -}}
{{- $user := mergeOverwrite $wiring $shipped $userConfig -}}
{{- /* What a binary refuses to start without, caught at render time. */ -}}
{{- $required := dict "timing" (list "workers|worker") "orchestrator" (list "workers" "prompt" "sampler" "timing") "trainer" (list "model" "out_dir") -}}
{{- range $key := (index $required .name | default list) -}}
{{- $found := false -}}
{{- range $alt := splitList "|" $key }}{{ if index $user $alt }}{{ $found = true }}{{ end }}{{ end -}}
{{- if not $found -}}
{{- $opt := first (splitList "|" $key) -}}
{{- fail (printf "%s needs --%s: enable the component it names or set %s.config.%s" $.name $opt $.name $opt) -}}
{{- end -}}
{{- end -}}
{{- if and (eq .name "sampler") (not (or (index $user "policy") (index $user "endpoints"))) -}}
{{- fail "sampler.backend=endpoints needs sampler.endpoints.urls (OpenAI-compatible base URLs, e.g. http://vllm.llm.svc:8000/v1)" -}}
{{- end -}}
{{- $cfg := dict
      "listen" (printf "%s:%d" $srv.listenHost (int $c.grpcPort))
      "metrics_listen" (printf "%s:%d" $srv.listenHost (int $srv.metricsPort))
      "drain_delay" (printf "%ss" (include "crl.drainSeconds" .))
      "shutdown_timeout" (printf "%ss" (include "crl.shutdownSeconds" .))
      "log_level" $srv.logLevel -}}
{{- if $root.Values.auth.enabled -}}
{{- $_ := set $cfg "auth_token_file" "/etc/crl/auth/token" -}}
{{- end -}}
{{- if $root.Values.tls.enabled -}}
{{- $_ := set $cfg "tls_cert_file" "/etc/crl/tls/tls.crt" -}}
{{- $_ := set $cfg "tls_key_file" "/etc/crl/tls/tls.key" -}}
{{- if $root.Values.tls.requireClientCert -}}
{{- $_ := set $cfg "tls_client_ca_file" "/etc/crl/tls/ca.crt" -}}
{{- end -}}
{{- end -}}
{{- if eq .name "worker" -}}
{{- /* Secrets are directories: the sandbox masks directories with an empty tmpfs. */ -}}
{{- $hidden := list "/etc/crl/auth" "/etc/crl/tls" -}}
{{- range $p := ($c.hiddenPaths | default list) }}{{ $hidden = append $hidden $p }}{{ end -}}
{{- if hasKey $user "hidden_paths" -}}
{{- range $p := (kindIs "slice" $user.hidden_paths | ternary $user.hidden_paths (splitList "," (toString $user.hidden_paths))) }}{{ $hidden = append $hidden $p }}{{ end -}}
{{- end -}}
{{- $_ := set $user "hidden_paths" (uniq $hidden) -}}
{{- if ($c.tasks | default dict).volume -}}
{{- $_ := set $user "task_root" $c.tasks.mountPath -}}
{{- end -}}
{{- /* Byte budgets below the volumes' sizes: the worker evicts before the kubelet evicts the pod. */ -}}
{{- $cacheSize := ternary $c.cache.sizeLimit $c.cache.ephemeral.size (eq $c.cache.type "emptyDir") -}}
{{- range $pair := list (list "cache_max_bytes" $cacheSize "worker.cache") (list "work_max_bytes" $c.workDirSizeLimit "worker.workDirSizeLimit") -}}
{{- $key := index $pair 0 -}}
{{- $limit := include "crl.quantityBytes" (index $pair 1) | int64 -}}
{{- $budget := int64 (default 0 (index $user $key)) -}}
{{- if or (le $budget 0) (ge $budget $limit) -}}
{{- fail (printf "worker.config.%s (%d) must be above 0 and below %s (%s = %d bytes), leaving room for in-flight builds and the KernelBench PCH" $key $budget (index $pair 2) (toString (index $pair 1)) $limit) -}}
{{- end -}}
{{- end -}}
{{- if $c.gpu.enabled -}}
{{- if and $c.gpu.fromDeviceNodes (hasKey $user "gpus") -}}
{{- fail "worker.config.gpus conflicts with worker.gpu.fromDeviceNodes=true (the entrypoint passes --gpus): set one of them" -}}
{{- end -}}
{{- else -}}
{{- $_ := set $user "gpus" "" -}}
{{- if lt (int (default 0 $user.host_lanes)) 1 -}}
{{- $_ := set $user "host_lanes" 1 -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $cfg = mergeOverwrite $cfg $user -}}
{{- tpl (toYaml $cfg) $root -}}
{{- end -}}

{{/* A probe: dict "root" "name" "c" "kind" (startup|liveness|readiness). */}}
{{- define "crl.probe" -}}
{{- $p := index .c.probes .kind -}}
{{- $svc := ternary .c.healthService "" (eq .kind "readiness") -}}
{{- if .root.Values.tls.enabled }}
{{- /* kubelet's gRPC probes cannot speak TLS: the crl CLI in the image does. */}}
exec:
  command:
    - /opt/crl/bin/crl
    - health
    - localhost:{{ int .c.grpcPort }}
    - --service={{ $svc }}
    - --tls
    - --tls_ca_file=/etc/crl/tls/ca.crt
    {{- if .root.Values.tls.requireClientCert }}
    - --tls_cert_file=/etc/crl/tls/tls.crt
    - --tls_key_file=/etc/crl/tls/tls.key
    {{- end }}
    - --timeout={{ sub (int (default 3 $p.timeoutSeconds)) 1 | max 1 }}s
{{- else }}
grpc:
  port: {{ int .c.grpcPort }}
  {{- if $svc }}
  service: {{ $svc }}
  {{- end }}
{{- end }}
periodSeconds: {{ int (default 10 $p.periodSeconds) }}
timeoutSeconds: {{ int (default 3 $p.timeoutSeconds) }}
failureThreshold: {{ int (default 3 $p.failureThreshold) }}
{{- end -}}

{{/* hostUsers of the worker's sandbox profile ("" = leave unset). */}}
{{- define "crl.worker.hostUsers" -}}
{{- $profile := .c.sandbox.profile -}}
{{- if has $profile (list "restricted-userns" "privileged-userns") -}}
false
{{- else if eq $profile "custom" -}}
{{- if not (kindIs "invalid" .c.hostUsers) }}{{ .c.hostUsers }}{{ end -}}
{{- end -}}
{{- end -}}

{{/* Container securityContext of the worker. */}}
{{- define "crl.worker.securityContext" -}}
{{- $profile := .c.sandbox.profile -}}
{{- if eq $profile "restricted-userns" -}}
# Root in the pod's own user namespace (hostUsers: false): the worker maps
# uid 65534 into the sandbox's user namespace and chowns build directories.
runAsUser: 0
runAsNonRoot: false
privileged: false
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
# The sandbox mounts a fresh /proc for its PID namespace; the kernel allows
# that only where the container's /proc has no masked paths.
procMount: Unmasked
# The runtime's default seccomp profile refuses unshare(CLONE_NEWUSER) and
# mount(2) without CAP_SYS_ADMIN; crl-runner installs its own filter for
# candidate code.
seccompProfile:
  type: Unconfined
{{- if semverCompare ">=1.30-0" .root.Capabilities.KubeVersion.Version }}
# The runtime's default AppArmor profile denies mount(2).
appArmorProfile:
  type: Unconfined
{{- end }}
capabilities:
  drop: [ALL]
  add: [CHOWN, DAC_OVERRIDE, FOWNER, KILL, SETUID, SETGID]
{{- else if or (eq $profile "privileged-userns") (eq $profile "privileged") -}}
runAsUser: 0
runAsNonRoot: false
privileged: true
readOnlyRootFilesystem: true
{{- else if eq $profile "custom" -}}
{{- toYaml (.c.securityContext | default dict) -}}
{{- else -}}
{{- fail (printf "worker.sandbox.profile: %q is not one of restricted-userns, privileged-userns, privileged, custom" $profile) -}}
{{- end -}}
{{- end -}}

{{/* Pod annotations the worker's profile needs on clusters without the appArmorProfile field. */}}
{{- define "crl.worker.podAnnotations" -}}
{{- if and (eq .c.sandbox.profile "restricted-userns") (semverCompare "<1.30-0" .root.Capabilities.KubeVersion.Version) }}
container.apparmor.security.beta.kubernetes.io/worker: unconfined
{{- end }}
{{- end -}}

{{/*
The pod template of a component (Deployment or StatefulSet):
dict "root" "name" "c".
*/}}
{{- define "crl.podTemplate" -}}
{{- $root := .root -}}
{{- $c := .c -}}
{{- $name := .name -}}
{{- $isWorker := eq $name "worker" -}}
{{- $gpu := and (hasKey $c "gpu") $c.gpu.enabled -}}
{{- $policy := $root.Values.policy -}}
{{- $usesPolicy := include "crl.usesPolicy" . -}}
{{- $endpointKey := and (eq $name "sampler") (eq (default "policy" $c.backend) "endpoints") (($c.endpoints | default dict).apiKeySecret | default dict).name -}}
metadata:
  labels:
    {{- include "crl.selectorLabels" . | nindent 4 }}
    app.kubernetes.io/part-of: crl
    {{- with $c.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    checksum/config: {{ include "crl.config" . | sha256sum }}
    {{- if $root.Values.metrics.scrapeAnnotations }}
    prometheus.io/scrape: "true"
    prometheus.io/port: {{ $root.Values.server.metricsPort | int | quote }}
    prometheus.io/path: /metrics
    {{- end }}
    {{- if $isWorker }}
    {{- with include "crl.worker.podAnnotations" . | trim }}
    {{- . | nindent 4 }}
    {{- end }}
    {{- end }}
    {{- with $c.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  # No Kubernetes API access from any crl pod (and none at all for code
  # running next to candidates).
  automountServiceAccountToken: false
  enableServiceLinks: false
  terminationGracePeriodSeconds: {{ include "crl.graceSeconds" . }}
  {{- if $isWorker }}
  {{- $hostUsers := include "crl.worker.hostUsers" . }}
  {{- if $hostUsers }}
  hostUsers: {{ $hostUsers }}
  {{- end }}
  {{- end }}
  {{- with $root.Values.images.pullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $c.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  {{- with $c.runtimeClassName }}
  runtimeClassName: {{ . }}
  {{- end }}
  {{- with $c.podSecurityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $c.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $c.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $c.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $c.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if and $usesPolicy $policy.embedded.init }}
  {{- if not (hasPrefix (printf "%s/" (trimSuffix "/" $policy.mountPath)) $policy.modelPath) }}
  {{- fail (printf "policy.modelPath (%s) must lie under policy.mountPath (%s) for policy.embedded.init" $policy.modelPath $policy.mountPath) }}
  {{- end }}
  initContainers:
    # The embedded policy (models/embedded: a 2.4M-parameter Llama-style model
    # and a tokenizer trained on the shipped tasks and prompts), created at
    # policy.modelPath when nothing is there yet; what `crl up` prepares
    # locally. Trainer and sampler pods both run it; on a shared volume the
    # first complete copy wins (atomic rename).
    - name: policy-init
      image: {{ include "crl.image" (dict "root" $root "name" "policy.embedded" "c" (dict "image" $policy.embedded.image)) }}
      imagePullPolicy: {{ $root.Values.images.pullPolicy }}
      command: ["/bin/sh", "-c"]
      args:
        - |
          set -eu
          model={{ $policy.modelPath | quote }}
          if [ -f "$model/config.json" ] && [ -f "$model/model.safetensors" ]; then
            echo "policy-init: $model is there"
            exit 0
          fi
          work="$model.build.$(uname -n)"
          rm -rf "$work"
          mkdir -p "$work/corpus" "$work/tokenizer"
          n=0
          add() {
            root=$1
            shift
            find "$root" -type f \( "$@" \) | LC_ALL=C sort > "$work/list"
            while read -r f; do
              cp "$f" "$work/corpus/${n}_$(basename "$f")"
              n=$((n + 1))
            done < "$work/list"
          }
          add /opt/crl/tasks/native -name '*.cc' -o -name '*.cu' -o -name '*.yaml'
          add /opt/crl/prompts -name '*.tmpl'
          add /opt/crl/include/crl -name '*.h'
          /opt/crl/bin/crl policy tokenizer-train --corpus "$work/corpus" --vocab 4096 \
            --out "$work/tokenizer/tokenizer.json"
          /opt/crl/bin/crl policy init --config /opt/crl/models/embedded/config.json --out "$work/policy" \
            --tokenizer "$work/tokenizer/tokenizer.json" --seed {{ int $policy.embedded.seed }}
          mkdir -p "$(dirname "$model")"
          mv -T "$work/policy" "$model" 2>/dev/null || [ -f "$model/model.safetensors" ]
          rm -rf "$work"
          echo "policy-init: wrote $model"
      {{- with $policy.embedded.resources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml ($c.securityContext | default dict) | nindent 8 }}
      volumeMounts:
        - name: tmp
          mountPath: /tmp
        - name: policy
          mountPath: {{ $policy.mountPath }}
  {{- end }}
  containers:
    - name: {{ $name }}
      image: {{ include "crl.image" . }}
      imagePullPolicy: {{ $root.Values.images.pullPolicy }}
      {{- if not $isWorker }}
      command: [{{ printf "/opt/crl/bin/%s" $c.binary | quote }}]
      {{- end }}
      {{- /* The worker image's entrypoint (tini -> crl-worker-entrypoint) runs crl-worker. */}}
      args:
        - --config=/etc/crl/config/config.yaml
        {{- range $c.extraArgs }}
        - {{ tpl (toString .) $root | quote }}
        {{- end }}
      {{- $pgSecret := "" }}
      {{- if eq $name "orchestrator" }}{{ $pgSecret = (($c.postgres | default dict).passwordSecret | default dict).name }}{{ end }}
      {{- if or (and $isWorker $gpu $c.gpu.fromDeviceNodes) $c.env $pgSecret }}
      env:
        {{- if and $isWorker $gpu $c.gpu.fromDeviceNodes }}
        - name: CRL_GPUS
          value: devices
        {{- end }}
        {{- if $pgSecret }}
        # The PostgreSQL store's password (libpq reads PGPASSWORD).
        - name: PGPASSWORD
          valueFrom:
            secretKeyRef:
              name: {{ $pgSecret }}
              key: {{ default "password" $c.postgres.passwordSecret.key }}
        {{- end }}
        {{- with $c.env }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- end }}
      ports:
        - name: grpc
          containerPort: {{ int $c.grpcPort }}
          protocol: TCP
        - name: metrics
          containerPort: {{ int $root.Values.server.metricsPort }}
          protocol: TCP
      startupProbe:
        {{- include "crl.probe" (dict "root" $root "name" $name "c" $c "kind" "startup") | trim | nindent 8 }}
      livenessProbe:
        {{- include "crl.probe" (dict "root" $root "name" $name "c" $c "kind" "liveness") | trim | nindent 8 }}
      readinessProbe:
        {{- include "crl.probe" (dict "root" $root "name" $name "c" $c "kind" "readiness") | trim | nindent 8 }}
      {{- $resources := deepCopy ($c.resources | default dict) }}
      {{- if $gpu }}
      {{- $count := int (default 1 $c.gpu.count) }}
      {{- if $isWorker }}{{ $count = 1 }}{{ end }}
      {{- $limits := $resources.limits | default dict }}
      {{- $_ := set $limits $c.gpu.resourceName $count }}
      {{- $_ := set $resources "limits" $limits }}
      {{- end }}
      {{- with $resources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- if $isWorker }}
        {{- include "crl.worker.securityContext" . | nindent 8 }}
        {{- else }}
        {{- toYaml ($c.securityContext | default dict) | nindent 8 }}
        {{- end }}
      volumeMounts:
        - name: config
          mountPath: /etc/crl/config
          readOnly: true
        {{- if $root.Values.auth.enabled }}
        - name: auth
          mountPath: /etc/crl/auth
          readOnly: true
        {{- end }}
        {{- if $root.Values.tls.enabled }}
        - name: tls
          mountPath: /etc/crl/tls
          readOnly: true
        {{- end }}
        - name: tmp
          mountPath: /tmp
        {{- if $isWorker }}
        - name: cache
          mountPath: {{ include "crl.worker.cacheDir" . }}
        - name: work
          mountPath: {{ include "crl.worker.workDir" . }}
        {{- if $c.tasks.volume }}
        - name: tasks
          mountPath: {{ $c.tasks.mountPath }}
          readOnly: true
        {{- end }}
        {{- end }}
        {{- if and (eq $name "orchestrator") $c.persistence.enabled }}
        - name: data
          mountPath: {{ $c.persistence.mountPath }}
        {{- end }}
        {{- if $usesPolicy }}
        - name: policy
          mountPath: {{ $policy.mountPath }}
        {{- end }}
        {{- if $endpointKey }}
        - name: endpoint-key
          mountPath: /etc/crl/endpoint
          readOnly: true
        {{- end }}
        {{- with $c.extraVolumeMounts }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
  volumes:
    - name: config
      configMap:
        name: {{ include "crl.componentFullname" . }}
    {{- if $root.Values.auth.enabled }}
    - name: auth
      secret:
        secretName: {{ include "crl.authSecretName" $root }}
        # Owner-only (group-readable through fsGroup for non-root services).
        # The sandbox's uid 65534 can never read it.
        defaultMode: 0400
        items:
          - key: {{ include "crl.authSecretKey" $root }}
            path: token
    {{- end }}
    {{- if $root.Values.tls.enabled }}
    - name: tls
      secret:
        secretName: {{ include "crl.tlsSecretName" . }}
        defaultMode: 0400
    {{- end }}
    - name: tmp
      emptyDir:
        sizeLimit: {{ default "1Gi" $c.tmpSizeLimit }}
    {{- if $isWorker }}
    {{- if eq $c.cache.type "ephemeral" }}
    - name: cache
      ephemeral:
        volumeClaimTemplate:
          metadata:
            labels:
              {{- include "crl.selectorLabels" . | nindent 14 }}
          spec:
            accessModes: [ReadWriteOnce]
            {{- with $c.cache.ephemeral.storageClassName }}
            storageClassName: {{ . }}
            {{- end }}
            resources:
              requests:
                storage: {{ $c.cache.ephemeral.size }}
    {{- else if eq $c.cache.type "emptyDir" }}
    - name: cache
      emptyDir:
        sizeLimit: {{ $c.cache.sizeLimit }}
    {{- else }}
    {{- fail (printf "worker.cache.type: %q is not emptyDir or ephemeral" $c.cache.type) }}
    {{- end }}
    - name: work
      emptyDir:
        sizeLimit: {{ $c.workDirSizeLimit }}
    {{- with $c.tasks.volume }}
    - name: tasks
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- end }}
    {{- if $usesPolicy }}
    - name: policy
      {{- if $policy.persistence.enabled }}
      persistentVolumeClaim:
        claimName: {{ include "crl.policyClaimName" $root }}
      {{- else }}
      emptyDir:
        sizeLimit: {{ $policy.persistence.size }}
      {{- end }}
    {{- end }}
    {{- if $endpointKey }}
    - name: endpoint-key
      secret:
        secretName: {{ $endpointKey }}
        defaultMode: 0400
        items:
          - key: {{ default "api-key" $c.endpoints.apiKeySecret.key }}
            path: api-key
    {{- end }}
    {{- with $c.extraVolumes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}

{{/* The policy volume's claim: policy.persistence.existingClaim, or the chart's <fullname>-policy. */}}
{{- define "crl.policyClaimName" -}}
{{- default (printf "%s-policy" (include "crl.fullname" .)) .Values.policy.persistence.existingClaim -}}
{{- end -}}

{{/* ConfigMap holding a component's config.yaml. */}}
{{- define "crl.configMap" -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "crl.componentFullname" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "crl.labels" . | nindent 4 }}
data:
  config.yaml: |
    {{- include "crl.config" . | nindent 4 }}
{{- end -}}
