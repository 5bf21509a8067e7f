{{/* The release's full name: the release name, with the chart name unless it holds it. */}}
{{- define "addon-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "addon-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "addon-operator.labels" -}}
{{ include "addon-operator.selectorLabels" . }}
app.kubernetes.io/part-of: addon-operator
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "addon-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "addon-operator.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Replicas: ha.replicas with HA; without it one (two operators without a lease would race). */}}
{{- define "addon-operator.replicas" -}}
{{- if .Values.ha.enabled -}}
{{- .Values.ha.replicas -}}
{{- else if gt (int .Values.replicas) 1 -}}
{{- fail "replicas > 1 needs ha.enabled=true (leader election); without it two operators would work at once" -}}
{{- else -}}
{{- .Values.replicas -}}
{{- end -}}
{{- end -}}
