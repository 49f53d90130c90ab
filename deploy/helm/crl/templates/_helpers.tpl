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
The TCP port of a URL: its own, else the scheme's (postgres 5432, https 443,
http 80). dict "url" "what" (the value's name, for the error).
*/}}
{{- define "crl.urlPort" -}}
{{- $u := urlParse .url -}}
{{- $port := regexFind "[0-9]+$" (regexFind ":[0-9]+$" $u.host) -}}
{{- if not $port -}}
{{- $port = get (dict "postgresql" "5432" "postgres" "5432" "https" "443" "http" "80") $u.scheme -}}
{{- end -}}
{{- if not $port }}{{ fail (printf "%s: %q has no port and a scheme without a default one" .what .url) }}{{ end -}}
{{- $port -}}
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
