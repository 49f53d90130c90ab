{{- /* A component's pod: probes, the worker's sandbox profile, the pod template, the Secret-held key files. */ -}}
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
{{- $keyFiles := include "crl.keyFiles" . | fromJsonArray -}}
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
      {{- if or (and $isWorker $gpu $c.gpu.fromDeviceNodes) $c.env $pgSecret .extraEnv }}
      env:
        {{- with .extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
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
        {{- range $keyFiles }}
        - name: {{ .volume }}
          mountPath: {{ .dir }}
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
    {{- range $keyFiles }}
    - name: {{ .volume }}
      secret:
        secretName: {{ .secret }}
        defaultMode: 0400
        items:
          - key: {{ .key }}
            path: api-key
    {{- end }}
    {{- with $c.extraVolumes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}

{{/*
API keys a component reads from a file, each from a Secret of the user's
(sampler.endpoints.apiKeySecret, orchestrator.judge.apiKeySecret): a JSON list
of {volume, secret, key, dir}; the file is <dir>/api-key.
*/}}
{{- define "crl.keyFiles" -}}
{{- $c := .c -}}
{{- $out := list -}}
{{- $endpoints := ($c.endpoints | default dict) -}}
{{- if and (eq .name "sampler") (eq (default "policy" $c.backend) "endpoints") ($endpoints.apiKeySecret | default dict).name -}}
{{- $out = append $out (dict "volume" "endpoint-key" "secret" $endpoints.apiKeySecret.name "key" (default "api-key" $endpoints.apiKeySecret.key) "dir" "/etc/crl/endpoint") -}}
{{- end -}}
{{- $judge := ($c.judge | default dict) -}}
{{- if and (eq .name "orchestrator") $judge.url ($judge.apiKeySecret | default dict).name -}}
{{- $out = append $out (dict "volume" "judge-key" "secret" $judge.apiKeySecret.name "key" (default "api-key" $judge.apiKeySecret.key) "dir" "/etc/crl/judge") -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}
