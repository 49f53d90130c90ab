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

{{/* registry/repository:tag of images.<c.image> */}}
{{- define "crl.image" -}}
{{- $img := index .root.Values.images .c.image -}}
{{- if not $img -}}
{{- fail (printf "%s.image: there is no images.%s" .name .c.image) -}}
{{- end -}}
{{- $repo := $img.repository -}}
{{- if .root.Values.images.registry -}}
{{- $repo = printf "%s/%s" (trimSuffix "/" .root.Values.images.registry) $repo -}}
{{- end -}}
{{- printf "%s:%s" $repo (default .root.Chart.AppVersion $img.tag) -}}
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
shipped per-service file config/<name>.yaml (the same file `crl up` passes
to the local cluster: one source for both), then the component's `config`
from the values (which may not redefine what the chart manages).
*/}}
{{- define "crl.config" -}}
{{- $root := .root -}}
{{- $c := .c -}}
{{- $srv := $root.Values.server -}}
{{- $shipped := ($root.Files.Get (printf "config/%s.yaml" .name)) | fromYaml | default dict -}}
{{- $user := mergeOverwrite $shipped (deepCopy ($c.config | default dict)) -}}
{{- range $k := list "listen" "metrics_listen" "drain_delay" "shutdown_timeout" "auth_token_file" "tls_cert_file" "tls_key_file" "tls_client_ca_file" -}}
{{- if hasKey $user $k -}}
{{- fail (printf "%s.config.%s is managed by the chart: use %s.grpcPort, server.*, auth.* or tls.*" $.name $k $.name) -}}
{{- end -}}
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

{{/* Container securityContext of the worker (and of its sandbox check). */}}
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
      {{- if or (and $isWorker $gpu $c.gpu.fromDeviceNodes) $c.env }}
      env:
        {{- if and $isWorker $gpu $c.gpu.fromDeviceNodes }}
        - name: CRL_GPUS
          value: devices
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
    {{- with $c.extraVolumes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
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
