{{- /* crl.config: a component's config file, the wiring between the components (crl.configMap, in _helpers.tpl, puts it in a ConfigMap). */ -}}
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
{{- /* No workers: the orchestrator evaluates on the workers crl-timing lists (configured once, for timing). */ -}}
{{- range $n := list "prompt" "sampler" "timing" "trainer" -}}
{{- if hasKey $enabled $n }}{{ $_ := set $wiring $n (index $enabled $n) }}{{ end -}}
{{- end -}}
{{- /* The store: PostgreSQL when orchestrator.postgres.url is set; else SQLite on the StatefulSet's volume, or without persistence on /tmp (an emptyDir: lost with the pod). */ -}}
{{- with ($c.postgres | default dict).url }}
{{- if regexMatch "://[^/@]*:[^/@]*@" . }}{{ fail "orchestrator.postgres.url: no password in the URL (orchestrator.postgres.passwordSecret)" }}{{ end -}}
{{- $_ := set $wiring "store" . -}}
{{- end -}}
{{- $_ := set $wiring "data_dir" (ternary $c.persistence.mountPath "/tmp/crl-data" (eq (toString $c.persistence.enabled) "true")) -}}
{{- /* The judge on suspicious rewards (docs/hacks.md). */ -}}
{{- $judge := $c.judge | default dict -}}
{{- with $judge.url -}}
{{- if not $judge.model }}{{ fail "orchestrator.judge.url needs orchestrator.judge.model (the model the endpoint serves)" }}{{ end -}}
{{- $_ := set $wiring "judge_url" . -}}
{{- $_ := set $wiring "judge_model" $judge.model -}}
{{- with $judge.timeoutSeconds }}{{ $_ := set $wiring "judge_timeout_seconds" . }}{{ end -}}
{{- if hasKey $judge "rejudgeEverySeconds" }}{{ $_ := set $wiring "rejudge_every_seconds" $judge.rejudgeEverySeconds }}{{ end -}}
{{- if ($judge.apiKeySecret | default dict).name }}{{ $_ := set $wiring "judge_api_key_file" "/etc/crl/judge/api-key" }}{{ end -}}
{{- end -}}
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
{{- $d := $c.distributed | default dict -}}
{{- if gt (int ($d.worldSize | default 1)) 1 -}}
{{- /* RANK, WORLD_SIZE and MASTER_* come from the pod's environment (_trainer.tpl). */ -}}
{{- $_ := set $wiring "dist_backend" ($d.backend | default "gloo") -}}
{{- $_ := set $wiring "dist_peer_timeout" ($d.peerTimeoutSeconds | default 30) -}}
{{- $_ := set $wiring "serve_followers" true -}}
{{- end -}}
{{- end -}}
{{- range $p := $prefixes -}}
{{- range $k, $v := $client }}{{ $_ := set $wiring (printf "%s_%s" $p $k) $v }}{{ end -}}
{{- end -}}
{{- $user := mergeOverwrite $wiring $shipped $userConfig -}}
{{- /* What a binary refuses to start without, caught at render time. */ -}}
{{- $required := dict "timing" (list "workers|worker") "orchestrator" (list "prompt" "sampler" "timing") "trainer" (list "model" "out_dir") -}}
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
