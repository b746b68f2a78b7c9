{{/* Chart name, cut to the 63 characters of a DNS label. */}}
{{- define "infill.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Release fullname: "<release>-infill", or the release name alone when it
already holds the chart's name. Cut to 50 characters so that the longest
suffix ("-ollama-headless") still fits a Service name (63).
*/}}
{{- define "infill.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "infill.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object; component: server, ollama or vllm. */}}
{{- define "infill.labels" -}}
helm.sh/chart: {{ include "infill.chart" .root }}
{{ include "infill.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: infill
{{- end }}

{{- define "infill.selectorLabels" -}}
app.kubernetes.io/name: {{ include "infill.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "infill.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "infill.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Name of the Secret holding the token file. */}}
{{- define "infill.tokensSecret" -}}
{{- if .Values.auth.tokens.lines }}
{{- printf "%s-tokens" (include "infill.fullname" .) }}
{{- else }}
{{- default (printf "%s-tokens" (include "infill.fullname" .)) .Values.auth.tokens.existingSecret }}
{{- end }}
{{- end }}

{{/* "true" when callers must authenticate: tokens or client certificates. */}}
{{- define "infill.authenticated" -}}
{{- if or .Values.auth.tokens.enabled (and .Values.tls.enabled .Values.tls.clientCA.secretName) }}true{{ end }}
{{- end }}

{{/* "true" with mutual TLS: no probe of the kubelet can complete a handshake. */}}
{{- define "infill.mutualTLS" -}}
{{- if and .Values.tls.enabled .Values.tls.clientCA.secretName }}true{{ end }}
{{- end }}

{{/*
The backend infill talks to, as a dict: kind (ollama or openai) and url. The
backend this chart runs wins over backend.url.
*/}}
{{- define "infill.backend" -}}
{{- $full := include "infill.fullname" . }}
{{- if and .Values.ollama.enabled .Values.vllm.enabled }}
{{- fail "enable one backend: ollama.enabled or vllm.enabled (infill routes to one URL today)" }}
{{- else if .Values.ollama.enabled }}
{{- dict "kind" "ollama" "url" (printf "http://%s-ollama:11434" $full) | toJson }}
{{- else if .Values.vllm.enabled }}
{{- dict "kind" "openai" "url" (printf "http://%s-vllm:8000" $full) | toJson }}
{{- else }}
{{- if not .Values.backend.url }}
{{- fail "backend.url is empty: name the backend's URL, or set ollama.enabled or vllm.enabled" }}
{{- end }}
{{- dict "kind" .Values.backend.kind "url" .Values.backend.url | toJson }}
{{- end }}
{{- end }}

{{/*
infill-server's arguments. Flags, not INFILL_* variables: a flag the binary
does not know stops it at start, where an unknown variable would be ignored.
*/}}
{{- define "infill.args" -}}
{{- $b := include "infill.backend" . | fromJson -}}
- {{ printf "--listen=0.0.0.0:%v" .Values.ports.grpc | quote }}
- {{ printf "--http-listen=0.0.0.0:%v" .Values.ports.http | quote }}
- {{ printf "--metrics-listen=0.0.0.0:%v" .Values.ports.metrics | quote }}
- "--metrics-public"
{{- if eq $b.kind "ollama" }}
- {{ printf "--ollama-url=%v" $b.url | quote }}
{{- else if eq $b.kind "openai" }}
{{- /* The --backend flag (issue 24, backends): kind, URL, model, context and slots of one backend. */}}
- {{ printf "--backend=kind=openai,url=%v,model=%v,num_ctx=%v,slots=%v" $b.url .Values.model .Values.numCtx .Values.backend.slots | quote }}
{{- else }}
{{- fail (printf "backend.kind %q: want ollama or openai" $b.kind) }}
{{- end }}
- {{ printf "--model=%v" .Values.model | quote }}
- {{ printf "--num-ctx=%v" .Values.numCtx | quote }}
- {{ printf "--backend-slots=%v" .Values.backend.slots | quote }}
- {{ printf "--queue-length=%v" .Values.queueLength | quote }}
- {{ printf "--evaluation=%v" .Values.evaluation | quote }}
- "--log-json"
{{- if .Values.auth.tokens.enabled }}
- {{ printf "--auth-tokens=/etc/infill/tokens/%v" .Values.auth.tokens.key | quote }}
{{- end }}
{{- if .Values.tls.enabled }}
- "--tls-cert=/etc/infill/tls/tls.crt"
- "--tls-key=/etc/infill/tls/tls.key"
{{- if .Values.tls.clientCA.secretName }}
- {{ printf "--tls-client-ca=/etc/infill/client-ca/%v" .Values.tls.clientCA.key | quote }}
{{- end }}
{{- end }}
{{- if .Values.auth.insecure }}
- "--insecure"
{{- else if not (include "infill.authenticated" .) }}
{{- fail "infill listens beyond the pod's loopback: turn on auth.tokens.enabled or tls.clientCA, or set auth.insecure=true to serve without authentication" }}
{{- end }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/* Tolerations, node selector, affinity and runtime class of a GPU backend (.ollama or .vllm). */}}
{{- define "infill.gpuScheduling" -}}
{{- with .runtimeClassName }}
runtimeClassName: {{ . }}
{{- end }}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
