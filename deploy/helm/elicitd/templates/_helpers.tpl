{{- define "elicitd.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "elicitd.fullname" -}}
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

{{- define "elicitd.selectorLabels" -}}
app.kubernetes.io/name: {{ include "elicitd.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "elicitd.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "elicitd.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The Secret holding the state key and the webhook secret. */}}
{{- define "elicitd.secretName" -}}
{{- default (include "elicitd.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{/* The Secret holding the static tokens, if any: the one given, else the chart's (the
     tokens given, or one generated when there is no OAuth either). */}}
{{- define "elicitd.tokensSecret" -}}
{{- if .Values.auth.tokens.existingSecret }}
{{- .Values.auth.tokens.existingSecret }}
{{- else if or .Values.auth.tokens.values (not .Values.auth.oauth.issuers) }}
{{- include "elicitd.fullname" . }}
{{- end }}
{{- end }}

{{/* Refuse values that cannot work, before anything is applied. */}}
{{- define "elicitd.check" -}}
{{- if not (has .Values.mode (list "cluster" "single")) }}
{{- fail (printf "mode must be cluster or single, got %q" .Values.mode) }}
{{- end }}
{{- if and .Values.auth.oauth.issuers (not .Values.auth.oauth.publicURL) }}
{{- fail "auth.oauth.issuers needs auth.oauth.publicURL (--public-url)" }}
{{- end }}
{{- range .Values.auth.tokens.values }}
{{- if lt (len .) 16 }}
{{- fail "auth.tokens.values: each token must be at least 16 characters" }}
{{- end }}
{{- end }}
{{- $noticed := mul (int .Values.readinessProbe.periodSeconds) (int .Values.readinessProbe.failureThreshold) }}
{{- if le (int .Values.drainWaitSeconds) $noticed }}
{{- fail (printf "drainWaitSeconds (%d) must exceed readinessProbe.periodSeconds * failureThreshold (%d): the pod must leave the endpoints before it refuses calls" (int .Values.drainWaitSeconds) $noticed) }}
{{- end }}
{{- if gt (int .Values.drainWaitSeconds) 300 }}
{{- fail "drainWaitSeconds must be at most 300 (--drain-wait takes up to 5m)" }}
{{- end }}
{{- if lt (int .Values.terminationGracePeriodSeconds) (add (int .Values.drainWaitSeconds) 5) }}
{{- fail (printf "terminationGracePeriodSeconds (%d) must be at least drainWaitSeconds + 5 (%d): elicitd exits within --drain-wait and 2 s" (int .Values.terminationGracePeriodSeconds) (add (int .Values.drainWaitSeconds) 5)) }}
{{- end }}
{{- if and (eq .Values.mode "cluster") (not .Values.store.nats.url) }}
{{- fail "mode cluster needs store.nats.url" }}
{{- end }}
{{- end }}
