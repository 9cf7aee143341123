{{/*
coxswain.validate: rules that tie several values together, which
values.schema.json cannot express. Each failure names the values involved,
their current settings and what to do. Included once, at the top of
deployment.yaml, so any violation fails the whole render.
*/}}
{{- define "coxswain.validate" -}}
{{- $v := .Values -}}
{{- $le := $v.leaderElection -}}
{{- $replicas := int $v.replicaCount -}}

{{- if $le.enabled -}}
{{- $lease := float64 (include "coxswain.durationMs" $le.leaseDuration) -}}
{{- $renew := float64 (include "coxswain.durationMs" $le.renewDeadline) -}}
{{- $retry := float64 (include "coxswain.durationMs" $le.retryPeriod) -}}
{{- if le $retry 0.0 -}}
{{- fail (printf "leaderElection.retryPeriod (%s) must be greater than 0" $le.retryPeriod) -}}
{{- end -}}
{{- if lt $lease 1000.0 -}}
{{- fail (printf "leaderElection.leaseDuration (%s) must be at least 1s: the lock records it in whole seconds" $le.leaseDuration) -}}
{{- end -}}
{{- if ne (mod (int64 $lease) 1000) 0 -}}
{{- fail (printf "leaderElection.leaseDuration (%s) must be a whole number of seconds: the lock records leaseDurationSeconds as an integer" $le.leaseDuration) -}}
{{- end -}}
{{- if ge $renew $lease -}}
{{- fail (printf "leaderElection.renewDeadline (%s) must be less than leaderElection.leaseDuration (%s): a leader has to stop writing before its lease can expire and a standby takes over" $le.renewDeadline $le.leaseDuration) -}}
{{- end -}}
{{- if le $renew (mulf 1.2 $retry) -}}
{{- fail (printf "leaderElection.renewDeadline (%s) must be greater than 1.2 x leaderElection.retryPeriod (%s): the leader needs room for more than one renewal attempt before it gives up" $le.renewDeadline $le.retryPeriod) -}}
{{- end -}}
{{- if lt $lease (addf $renew $retry) -}}
{{- fail (printf "leaderElection.leaseDuration (%s) must be at least leaderElection.renewDeadline (%s) + leaderElection.retryPeriod (%s): otherwise a standby may take the lease while the old leader still believes it may write" $le.leaseDuration $le.renewDeadline $le.retryPeriod) -}}
{{- end -}}
{{- if $le.peer.enabled -}}
{{- $pp := int $le.peer.port -}}
{{- if or (eq $pp (int $v.xds.port)) (eq $pp (int $v.admin.port)) -}}
{{- fail (printf "leaderElection.peer.port (%d) must differ from xds.port (%d) and admin.port (%d)" $pp (int $v.xds.port) (int $v.admin.port)) -}}
{{- end -}}
{{- end -}}
{{- else if gt $replicas 1 -}}
{{- fail (printf "leaderElection.enabled=false with replicaCount %d: every replica would write statuses and ProxySnapshots at once. Enable leader election or set replicaCount to 1" $replicas) -}}
{{- end -}}

{{- $pdb := $v.podDisruptionBudget -}}
{{- if $pdb.enabled -}}
{{- $hasMin := and (hasKey $pdb "minAvailable") (ne (toString $pdb.minAvailable) "<nil>") -}}
{{- $hasMax := and (hasKey $pdb "maxUnavailable") (ne (toString $pdb.maxUnavailable) "<nil>") -}}
{{- if and $hasMin $hasMax -}}
{{- fail "podDisruptionBudget: set either minAvailable or maxUnavailable, not both (set the other to null)" -}}
{{- end -}}
{{- if not (or $hasMin $hasMax) -}}
{{- fail "podDisruptionBudget.enabled=true needs minAvailable or maxUnavailable" -}}
{{- end -}}
{{- /* A number (float64 from a values file or --set-json, int64 from
--set); a string is a percentage, which the schema bounds. */ -}}
{{- if and $hasMin (not (kindIs "string" $pdb.minAvailable)) -}}
{{- if ge (int $pdb.minAvailable) $replicas -}}
{{- fail (printf "podDisruptionBudget.minAvailable (%d) must be less than replicaCount (%d): otherwise no node could ever be drained. Raise replicaCount or disable the budget" (int $pdb.minAvailable) $replicas) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- if eq (int $v.xds.port) (int $v.admin.port) -}}
{{- fail (printf "xds.port and admin.port must differ (both are %d)" (int $v.xds.port)) -}}
{{- end -}}

{{- if $v.xds.tls.enabled -}}
{{- if $v.xds.tls.certManager.enabled -}}
{{- $_ := required "xds.tls.certManager.enabled=true needs xds.tls.certManager.issuerRef.name" $v.xds.tls.certManager.issuerRef.name -}}
{{- end -}}
{{- else if $v.xds.tls.clientAuth.enabled -}}
{{- fail "xds.tls.clientAuth.enabled=true needs xds.tls.enabled=true: client certificates are only checked over TLS" -}}
{{- else if $v.xds.tls.certManager.enabled -}}
{{- fail "xds.tls.certManager.enabled=true needs xds.tls.enabled=true" -}}
{{- end -}}

{{- $sm := $v.metrics.serviceMonitor -}}
{{- if $sm.enabled -}}
{{- if gt (float64 (include "coxswain.durationMs" $sm.scrapeTimeout)) (float64 (include "coxswain.durationMs" $sm.interval)) -}}
{{- fail (printf "metrics.serviceMonitor.scrapeTimeout (%s) must not exceed metrics.serviceMonitor.interval (%s): Prometheus rejects such a scrape config" $sm.scrapeTimeout $sm.interval) -}}
{{- end -}}
{{- end -}}

{{- end -}}
