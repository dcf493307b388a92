{{/* The chart name, at most 63 characters (a DNS label). */}}
{{- define "a2a-gateway.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The fully qualified app name: <release>-<chart> unless the release name holds the chart name. */}}
{{- define "a2a-gateway.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "a2a-gateway.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "a2a-gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ include "a2a-gateway.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "a2a-gateway.labels" -}}
helm.sh/chart: {{ include "a2a-gateway.chart" . }}
{{ include "a2a-gateway.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: {{ ternary "sidecar" "gateway" (eq .Values.mode "sidecar") }}
{{- end }}

{{- define "a2a-gateway.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/* The Secret holding the relay key(s): relayKey.existingSecret, else the chart's own. */}}
{{- define "a2a-gateway.relaySecretName" -}}
{{- if .Values.relayKey.existingSecret }}
{{- .Values.relayKey.existingSecret }}
{{- else }}
{{- printf "%s-relay" (include "a2a-gateway.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/*
The `data` value (base64 of the key text) of the chart's relay-key Secret. Input: dict with
"root" (the chart's context) and "existing" (the Secret found by `lookup`; empty in `helm
template` and on first install). relayKey.value wins; else the existing Secret's key is kept,
so that upgrades do not invalidate the relay URLs handed out; else a new key: randBytes gives
32 random bytes already in base64, the format the relay reads (`a2a-gateway keygen relay`).
*/}}
{{- define "a2a-gateway.relayKeyData" -}}
{{- $values := .root.Values.relayKey }}
{{- $old := (.existing | default dict).data | default dict }}
{{- if $values.value }}
{{- $values.value | b64enc }}
{{- else if index $old $values.secretKey }}
{{- index $old $values.secretKey }}
{{- else }}
{{- randBytes 32 | b64enc }}
{{- end }}
{{- end }}

{{/* Fails the render on values that cannot work. */}}
{{- define "a2a-gateway.validate" -}}
{{- if not (has .Values.mode (list "sidecar" "shared")) }}
{{- fail (printf "mode must be sidecar or shared, got %q" (toString .Values.mode)) }}
{{- end }}
{{- if hasKey (.Values.gateway.config | default dict) "listen" }}
{{- fail "gateway.config.listen is written by the chart from gateway.ports: set gateway.ports instead" }}
{{- end }}
{{- if and (eq .Values.mode "shared") (not (.Values.gateway.config | default dict).tenants) }}
{{- fail "mode shared needs gateway.config.tenants (see ci/shared-values.yaml)" }}
{{- end }}
{{- if hasKey ((.Values.gateway.config | default dict).auth | default dict) "server_tls" }}
{{- fail "gateway.config.auth.server_tls is written by the chart from tls: set tls.enabled and tls.secretName instead" }}
{{- end }}
{{- $state := (.Values.gateway.config | default dict).state | default dict }}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.redis.enabled) (ne (toString $state.backend) "redis") }}
{{- fail "replicaCount > 1 needs a shared state store: set redis.enabled, or gateway.config.state with backend redis" }}
{{- end }}
{{- if and .Values.redis.enabled $state }}
{{- fail "redis.enabled writes gateway.config.state: leave state out of gateway.config" }}
{{- end }}
{{- if and .Values.tls.enabled (not .Values.tls.secretName) }}
{{- fail "tls.enabled needs tls.secretName (a kubernetes.io/tls Secret)" }}
{{- end }}
{{- if not (has .Values.tls.clientAuth (list "none" "optional" "required")) }}
{{- fail (printf "tls.clientAuth must be none, optional or required, got %q" (toString .Values.tls.clientAuth)) }}
{{- end }}
{{- end }}

{{/* A probe; one on the `admin` port uses `http` when the admin listener is off. */}}
{{- define "a2a-gateway.probe" -}}
{{- $probe := deepCopy .probe }}
{{- if and $probe.httpGet (eq (toString $probe.httpGet.port) "admin") (not .root.Values.gateway.ports.admin) }}
{{- $_ := set $probe.httpGet "port" "http" }}
{{- end }}
{{- toYaml $probe }}
{{- end }}

{{/*
The gateway config file: gateway.config with `listen` from gateway.ports and, in sidecar mode
without tenants, one tenant for the legacy agent on 127.0.0.1:<legacyAgent.port>.
*/}}
{{- define "a2a-gateway.config" -}}
{{- include "a2a-gateway.validate" . }}
{{- $cfg := deepCopy (.Values.gateway.config | default dict) }}
{{- $listen := dict "http" (printf "0.0.0.0:%v" .Values.gateway.ports.http) }}
{{- if .Values.gateway.ports.grpc }}
{{- $_ := set $listen "grpc" (printf "0.0.0.0:%v" .Values.gateway.ports.grpc) }}
{{- end }}
{{- if .Values.gateway.ports.admin }}
{{- $_ := set $listen "admin" (printf "0.0.0.0:%v" .Values.gateway.ports.admin) }}
{{- end }}
{{- $_ := set $cfg "listen" $listen }}
{{- if .Values.redis.enabled }}
{{- $redis := printf "%s-redis" (include "a2a-gateway.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- $_ := set $cfg "state" (dict "backend" "redis" "url" (printf "redis://%s:6379/0" $redis)) }}
{{- else if not $cfg.state }}
{{- $_ := set $cfg "state" (dict "backend" "sqlite" "path" "/var/lib/a2a-gateway/state.db") }}
{{- end }}
{{- if .Values.tls.enabled }}
{{- $tls := dict "cert_file" "/etc/a2a-gateway/tls/tls.crt" "key_file" "/etc/a2a-gateway/tls/tls.key" }}
{{- if ne .Values.tls.clientAuth "none" }}
{{- $_ := set $tls "client_ca_file" "/etc/a2a-gateway/tls/ca.crt" }}
{{- $_ := set $tls "client_auth" .Values.tls.clientAuth }}
{{- end }}
{{- $auth := deepCopy ($cfg.auth | default dict) }}
{{- $_ := set $auth "server_tls" $tls }}
{{- $_ := set $cfg "auth" $auth }}
{{- end }}
{{- if and (eq .Values.mode "sidecar") (not $cfg.tenants) }}
{{- $backend := dict "url" (printf "http://127.0.0.1:%v/" .Values.legacyAgent.port) "version" "0.3" "binding" "JSONRPC" }}
{{- $_ := set $cfg "tenants" (dict .Values.legacyAgent.tenant (dict "backend" $backend)) }}
{{- if not $cfg.default_tenant }}
{{- $_ := set $cfg "default_tenant" .Values.legacyAgent.tenant }}
{{- end }}
{{- end }}
{{- toYaml $cfg }}
{{- end }}
