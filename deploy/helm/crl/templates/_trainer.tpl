{{- /*
Data-parallel trainer ranks (trainer.distributed, worldSize > 1): a
StatefulSet, one pod per rank, instead of the trainer's Deployment.

  <fullname>-trainer-ranks  headless Service: stable DNS for every rank, not-
                            ready pods included (ranks meet before any is
                            ready); rank 0's c10d store listens on `port`.
  <fullname>-trainer        the StatefulSet; its pods get RANK (the pod's
                            index label), WORLD_SIZE, LOCAL_RANK=0 (one GPU
                            per pod), MASTER_ADDR (rank 0's DNS name) and
                            MASTER_PORT, the variables torchrun sets.
Parallel pod management: the ranks start together (OrderedReady would wait
for rank 0 to be ready, which it is only once every rank has joined).
*/ -}}

{{/* The trainer's world size (1 when not distributed): dict "c" */}}
{{- define "crl.trainer.worldSize" -}}
{{- int ((.c.distributed | default dict).worldSize | default 1) -}}
{{- end -}}

{{/* The refusals of trainer values, at render time: dict "root" "name" "c" */}}
{{- define "crl.trainer.check" -}}
{{- $c := .c -}}
{{- $d := $c.distributed | default dict -}}
{{- if gt (int $c.replicas) 1 -}}
{{- fail (printf "trainer.replicas: %d trainers would share one out_dir (policy volume); run one, or data-parallel ranks with trainer.distributed.worldSize" (int $c.replicas)) -}}
{{- end -}}
{{- if ne (($c.strategy | default dict).type | default "RollingUpdate") "Recreate" -}}
{{- fail "trainer.strategy.type must be Recreate: in a rolling update the old trainer may still write the out_dir the new one resumes from" -}}
{{- end -}}
{{- if gt (int (include "crl.trainer.worldSize" .)) 1 -}}
{{- if and (eq ($d.backend | default "gloo") "nccl") (not $c.gpu.enabled) -}}
{{- fail "trainer.distributed.backend=nccl needs trainer.gpu.enabled=true (NCCL runs on CUDA GPUs; gloo runs on CPU)" -}}
{{- end -}}
{{- if not .root.Values.policy.persistence.enabled -}}
{{- fail "trainer.distributed.worldSize > 1 needs policy.persistence.enabled: the ranks share out_dir on one ReadWriteMany volume" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The launcher's variables of a rank: dict "root" "name" "c" */}}
{{- define "crl.trainer.rankEnv" -}}
{{- $d := .c.distributed -}}
{{- $full := include "crl.componentFullname" . -}}
- name: RANK
  valueFrom:
    fieldRef:
      fieldPath: metadata.labels['apps.kubernetes.io/pod-index']
- name: WORLD_SIZE
  value: {{ include "crl.trainer.worldSize" . | quote }}
- name: LOCAL_RANK
  value: "0"
- name: MASTER_ADDR
  value: {{ printf "%s-0.%s-ranks.%s.svc" $full $full .root.Release.Namespace | quote }}
- name: MASTER_PORT
  value: {{ int $d.port | quote }}
{{- end -}}

{{/* The headless Service and the StatefulSet of the ranks: dict "root" "name" "c" */}}
{{- define "crl.trainer.ranks" -}}
{{- $ctx := . -}}
{{- $c := .c -}}
{{- $full := include "crl.componentFullname" . -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ $full }}-ranks
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "crl.labels" . | nindent 4 }}
spec:
  clusterIP: None
  publishNotReadyAddresses: true
  selector:
    {{- include "crl.selectorLabels" . | nindent 4 }}
  ports:
    - name: rendezvous
      port: {{ int $c.distributed.port }}
      targetPort: {{ int $c.distributed.port }}
      protocol: TCP
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ $full }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "crl.labels" . | nindent 4 }}
spec:
  serviceName: {{ $full }}-ranks
  replicas: {{ include "crl.trainer.worldSize" . }}
  podManagementPolicy: Parallel
  revisionHistoryLimit: 5
  updateStrategy:
    type: RollingUpdate
  selector:
    matchLabels:
      {{- include "crl.selectorLabels" . | nindent 6 }}
  template:
    {{- include "crl.podTemplate" (merge (dict "extraEnv" (include "crl.trainer.rankEnv" $ctx | fromYamlArray)) $ctx) | nindent 4 }}
{{- end -}}
