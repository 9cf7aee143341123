{{/* Names, labels and small computed values shared by the templates. */}}

{{- define "coxswain.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name: <release>-<chart> unless the release name
already contains the chart name, capped at 63 characters. */}}
{{- define "coxswain.fullname" -}}
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

{{- define "coxswain.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "coxswain.selectorLabels" -}}
app.kubernetes.io/name: {{ include "coxswain.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "coxswain.labels" -}}
helm.sh/chart: {{ include "coxswain.chart" . }}
{{ include "coxswain.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: control-plane
app.kubernetes.io/part-of: coxswain
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "coxswain.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "coxswain.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The election lock's name (a Lease or a ConfigMap in the release
namespace). */}}
{{- define "coxswain.lockName" -}}
{{- default (include "coxswain.fullname" .) .Values.leaderElection.resourceName -}}
{{- end -}}

{{- define "coxswain.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The Prometheus selector that picks this release's scrape targets. */}}
{{- define "coxswain.promSelector" -}}
namespace="{{ .Release.Namespace }}",job="{{ include "coxswain.fullname" . }}-admin"
{{- end -}}

{{/* coxswain.durationMs: a Go duration ("15s", "1500ms", "1m30s", "1.5h")
as milliseconds (a float, printed). Units ms, s, m and h. */}}
{{- define "coxswain.durationMs" -}}
{{- $d := toString . -}}
{{- if not (regexMatch "^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$" $d) -}}
{{- fail (printf "%q is not a duration (write it like 15s, 1500ms or 1m30s)" $d) -}}
{{- end -}}
{{- $unitMs := dict "ms" 1.0 "s" 1000.0 "m" 60000.0 "h" 3600000.0 -}}
{{- $total := 0.0 -}}
{{- range $part := regexFindAll "[0-9]+(\\.[0-9]+)?(ms|s|m|h)" $d -1 -}}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" $part -}}
{{- $unit := trimPrefix $num $part -}}
{{- $total = addf $total (mulf (float64 $num) (get $unitMs $unit)) -}}
{{- end -}}
{{- $total -}}
{{- end -}}

{{/*
The Secret holding the xDS server's certificate: xds.tls.secretName, else
<fullname>-xds-tls (what cert-manager writes, or the user creates).
*/}}
{{- define "coxswain.xdsTlsSecret" -}}
{{- if .Values.xds.tls.secretName -}}
{{- .Values.xds.tls.secretName -}}
{{- else -}}
{{- printf "%s-xds-tls" (include "coxswain.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
