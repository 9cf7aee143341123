"""The PrometheusRule the chart renders (the alerts of docs/operations.md)
is valid for Prometheus (`promtool check rules`) and fires exactly when it
should (`promtool test rules` on synthetic series): no leader or two leaders
for a minute, all replicas down, a replica missing, NACKs, an inconsistent
standby, failing status writes, failing renewals, a certificate about to
expire — and not on a short blip, on retried conflicts, or on a
certificate with a month left."""
import os
import subprocess
import sys
import tempfile

import yaml

TOP = os.environ.get("COXSWAIN_TOP", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
sys.path.insert(0, os.path.join(TOP, "tests", "helm"))

import helmlib as h  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

t = Tap()
HA = h.render(values=[h.HA_VALUES])
SEL = 'namespace="coxswain-system",job="coxswain-admin"'
LOCK = "coxswain"


def rules():
    pr = HA.all("PrometheusRule")
    check_eq(len(pr), 1)
    return pr[0]["spec"]


def rule(name):
    for g in rules()["groups"]:
        for r in g["rules"]:
            if r.get("alert") == name:
                return r
    raise KeyError(name)


def promtool(*args, cwd=None):
    return subprocess.run(["promtool"] + list(args), capture_output=True, text=True,
                          cwd=cwd, timeout=60)


def case_check_rules():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rules.yml")
        with open(path, "w") as f:
            yaml.safe_dump(rules(), f)
        p = promtool("check", "rules", path)
        check_eq(p.returncode, 0, p.stdout + p.stderr)
        check("SUCCESS: 8 rules found" in p.stdout, p.stdout)


def leader_series(values, ups=None):
    """leader_election_master_status of pods p0, p1...; with the `up` of
    each target (scraped fine throughout unless |ups| says otherwise)."""
    ups = ups or ["1x60"] * len(values)
    return [{"series": 'leader_election_master_status{%s,name="%s",pod="p%d"}' % (SEL, LOCK, i),
             "values": v} for i, v in enumerate(values)] + up_series(ups)


def up_series(values):
    return [{"series": 'up{%s,pod="p%d"}' % (SEL, i), "values": v}
            for i, v in enumerate(values)]


def leader_alert(value):
    r = rule("CoxswainLeaderCount")
    return {"exp_labels": {"severity": "critical", "namespace": "coxswain-system"},
            "exp_annotations": {
                "summary": "coxswain in coxswain-system has %s leaders instead of 1" % value,
                "description": r["annotations"]["description"]}}


def run_tests(tests):
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "rules.yml"), "w") as f:
            yaml.safe_dump(rules(), f)
        with open(os.path.join(tmp, "test.yml"), "w") as f:
            yaml.safe_dump({"rule_files": ["rules.yml"], "evaluation_interval": "15s",
                            "tests": tests}, f)
        p = promtool("test", "rules", "test.yml", cwd=tmp)
        check_eq(p.returncode, 0, p.stdout + p.stderr)


def case_one_leader_is_quiet():
    run_tests([{"interval": "15s",
                "input_series": leader_series(["1x40", "0x40", "0x40"]),
                "alert_rule_test": [{"eval_time": "9m", "alertname": "CoxswainLeaderCount",
                                     "exp_alerts": []}]}])


def case_no_leader_fires_after_a_minute():
    # a handover: p0 leads, then nobody for 3 minutes
    run_tests([{"interval": "15s",
                "input_series": leader_series(["1 1 1 1 0x20", "0x24", "0x24"]),
                "alert_rule_test": [
                    {"eval_time": "1m30s", "alertname": "CoxswainLeaderCount",
                     "exp_alerts": []},
                    {"eval_time": "2m30s", "alertname": "CoxswainLeaderCount",
                     "exp_alerts": [leader_alert(0)]}]}])


def case_two_leaders_fire():
    run_tests([{"interval": "15s",
                "input_series": leader_series(["1x20", "1x20", "0x20"]),
                "alert_rule_test": [{"eval_time": "2m", "alertname": "CoxswainLeaderCount",
                                     "exp_alerts": [leader_alert(2)]}]}])


def case_two_locks_two_leaders_fire():
    # a lock renamed in a rolling update: old replicas lead the old lock,
    # new ones the new lock; summed per namespace, that is 2
    series = [{"series": 'leader_election_master_status{%s,name="%s",pod="p0"}' % (SEL, LOCK),
               "values": "1x20"},
              {"series": 'leader_election_master_status{%s,name="%s",pod="p1"}' % (SEL, LOCK),
               "values": "0x20"},
              {"series": 'leader_election_master_status{%s,name="renamed",pod="p2"}' % SEL,
               "values": "1x20"}] + up_series(["1x20"] * 3)
    run_tests([{"interval": "15s", "input_series": series,
                "alert_rule_test": [{"eval_time": "2m", "alertname": "CoxswainLeaderCount",
                                     "exp_alerts": [leader_alert(2)]}]}])
    # another namespace's leader does not count
    other = [{"series": 'leader_election_master_status{namespace="other",job="coxswain-admin",'
                        'name="%s",pod="q0"}' % LOCK, "values": "1x20"}]
    run_tests([{"interval": "15s", "input_series": leader_series(["1x20", "0x20"]) + other,
                "alert_rule_test": [{"eval_time": "2m", "alertname": "CoxswainLeaderCount",
                                     "exp_alerts": []}]}])


def case_short_handover_is_quiet():
    # 45 s without a leader (a crash failover) stays under the 1m "for"
    run_tests([{"interval": "15s",
                "input_series": leader_series(["1 1 0 0 0 0x20", "0 0 0 0 0 1x20", "0x25"]),
                "alert_rule_test": [
                    {"eval_time": "1m", "alertname": "CoxswainLeaderCount", "exp_alerts": []},
                    {"eval_time": "3m", "alertname": "CoxswainLeaderCount", "exp_alerts": []}]}])


def case_failover_with_a_dead_leaders_last_scrape_is_quiet():
    # Scraped every 30 s (the chart's ServiceMonitor; timeout 10 s): a
    # takeover on proof of death within milliseconds gives the new leader
    # its 1 at its next scrape, while the dead leader's last 1 stays the
    # latest sample of its series until Prometheus marks it stale. Its pod
    # deleted (a force delete, or a rolling update right after a release):
    # the target leaves service discovery and Prometheus writes the
    # staleness markers at the second scrape tick after that, plus 10 % of
    # an interval (scrape.go, endOfRunStaleness), after up to 5 s of
    # discovery updates: its last 1 stays visible up to ~75 s after its
    # last scrape. Modelled: last scraped at 60 s, stale at 150 s, the new
    # leader's 1 from 75 s. The sum alone said 2 from 75 s to 150 s, over
    # the 1m "for": it paged at 2m15s.
    dead = "1x4 _x5 stale"
    series = leader_series([dead, "0x4 1x30", "0x35"], ups=[dead, "1x35", "1x35"])
    run_tests([{"interval": "15s", "input_series": series,
                "alert_rule_test": [
                    {"eval_time": t, "alertname": "CoxswainLeaderCount", "exp_alerts": []}
                    for t in ("1m15s", "1m45s", "2m", "2m15s", "2m30s", "3m", "6m")]}])
    # The pod stays and the process is killed (kill -9, OOM): the next
    # scrape fails (up 0, the series stale), the restarted process stands by.
    series = leader_series(["1x4 stale 0x20", "0x4 1x20", "0x25"],
                           ups=["1x4 0 1x20", "1x25", "1x25"])
    run_tests([{"interval": "15s", "input_series": series,
                "alert_rule_test": [
                    {"eval_time": t, "alertname": "CoxswainLeaderCount", "exp_alerts": []}
                    for t in ("1m15s", "1m30s", "2m", "3m", "6m")]}])


def case_vanished_leader_counts_as_none():
    # The leader's target is gone and nobody took over: its last 1 no
    # longer counts once its scrape is 45 s old, and "no leader" pages a
    # minute later, long before its series would go stale on its own.
    series = leader_series(["1x4", "0x30", "0x30"], ups=["1x4", "1x30", "1x30"])
    run_tests([{"interval": "15s", "input_series": series,
                "alert_rule_test": [
                    {"eval_time": "1m30s", "alertname": "CoxswainLeaderCount", "exp_alerts": []},
                    {"eval_time": "3m", "alertname": "CoxswainLeaderCount",
                     "exp_alerts": [leader_alert(0)]}]}])


def case_two_live_leaders_still_fire_with_scrape_gaps():
    # Two leaders that are really alive, both scraped every 30 s: they
    # count however their scrapes interleave.
    series = [{"series": 'leader_election_master_status{%s,name="%s",pod="p%d"}' % (SEL, LOCK, i),
               "values": v} for i, v in enumerate(["1 _ 1 _ 1 _ 1 _ 1 _ 1 _ 1 _ 1",
                                                   "_ 1 _ 1 _ 1 _ 1 _ 1 _ 1 _ 1 _"])]
    series += up_series(["1 _ 1 _ 1 _ 1 _ 1 _ 1 _ 1 _ 1", "_ 1 _ 1 _ 1 _ 1 _ 1 _ 1 _ 1 _"])
    run_tests([{"interval": "15s", "input_series": series,
                "alert_rule_test": [{"eval_time": "2m", "alertname": "CoxswainLeaderCount",
                                     "exp_alerts": [leader_alert(2)]}]}])


def case_freshness_follows_the_interval():
    r = h.render(sets={"metrics.prometheusRule.enabled": True,
                       "metrics.serviceMonitor.interval": "1m",
                       "metrics.serviceMonitor.scrapeTimeout": "15s",
                       "metrics.prometheusRule.leaderAlertFor": "2m"})
    check(r.ok, r.err)
    lc = [x for x in r.all("PrometheusRule")[0]["spec"]["groups"][0]["rules"]
          if x["alert"] == "CoxswainLeaderCount"][0]
    check("timestamp(up{" in lc["expr"] and lc["expr"].endswith("< 80)) != 1"),
          "freshness is interval + timeout + 5 s: " + lc["expr"])


def case_down_and_missing_replicas():
    down = rule("CoxswainDown")
    missing = rule("CoxswainReplicasMissing")
    run_tests([
        {"interval": "15s", "input_series": up_series(["0x20"] * 5),
         "alert_rule_test": [{"eval_time": "4m", "alertname": "CoxswainDown",
                              "exp_alerts": [{"exp_labels": {"severity": "critical"},
                                              "exp_annotations": down["annotations"]}]}]},
        {"interval": "1m", "input_series": up_series(["1x15"] * 4 + ["0x15"]),
         "alert_rule_test": [
             {"eval_time": "5m", "alertname": "CoxswainReplicasMissing", "exp_alerts": []},
             {"eval_time": "12m", "alertname": "CoxswainReplicasMissing",
              "exp_alerts": [{"exp_labels": {"severity": "warning"},
                              "exp_annotations": {
                                  "summary": "only 4 of 5 coxswain replicas are up; failover "
                                             "capacity is reduced"}}]},
             {"eval_time": "12m", "alertname": "CoxswainDown", "exp_alerts": []}]},
        {"interval": "1m", "input_series": up_series(["1x15"] * 5),
         "alert_rule_test": [{"eval_time": "12m", "alertname": "CoxswainReplicasMissing",
                              "exp_alerts": []}]},
    ])
    check("< 5" in missing["expr"], "threshold follows replicaCount: " + missing["expr"])


def case_nacks_snapshot_and_status_failures():
    nack = rule("CoxswainXdsNacks")
    status = rule("CoxswainStatusWriteFailures")
    run_tests([{"interval": "1m", "input_series": [
        {"series": 'coxswain_xds_nacks_total{%s,pod="p0",group="edge",type="rds"}' % SEL,
         "values": "0+2x20"},
        {"series": 'coxswain_xds_nacks_total{%s,pod="p0",group="mesh",type="cds"}' % SEL,
         "values": "5x20"},
        {"series": 'coxswain_snapshot_consistent{%s,pod="p1",gateway="gw/public"}' % SEL,
         "values": "1 1 0x18"},
        {"series": 'coxswain_snapshot_consistent{%s,pod="p2",gateway="gw/public"}' % SEL,
         "values": "1x20"},
        {"series": 'coxswain_snapshot_consistent{%s,pod="p2",gateway="gw/internal"}' % SEL,
         "values": "1x20"},
        {"series": 'coxswain_status_writes_total{%s,pod="p0",kind="VirtualService",'
                   'result="forbidden"}' % SEL, "values": "0+30x20"},
        # conflicts are retried: never an alert
        {"series": 'coxswain_status_writes_total{%s,pod="p0",kind="Gateway",'
                   'result="conflict"}' % SEL, "values": "0+60x20"},
        {"series": 'coxswain_status_writes_total{%s,pod="p0",kind="Gateway",'
                   'result="ok"}' % SEL, "values": "0+600x20"},
        {"series": 'coxswain_leader_election_renew_failures_total{%s,pod="p0",name="%s"}'
                   % (SEL, LOCK), "values": "0 0 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17"},
        {"series": 'coxswain_leader_election_renew_failures_total{%s,pod="p1",name="%s"}'
                   % (SEL, LOCK), "values": "3x20"},
    ], "alert_rule_test": [
        {"eval_time": "15m", "alertname": "CoxswainXdsNacks", "exp_alerts": [{
            "exp_labels": {"severity": "warning", "group": "edge", "type": "rds"},
            "exp_annotations": {
                "summary": "proxies of node group edge reject rds resources (NACK)",
                "description": nack["annotations"]["description"]}}]},
        {"eval_time": "15m", "alertname": "CoxswainSnapshotInconsistent", "exp_alerts": [{
            "exp_labels": {"severity": "warning", "gateway": "gw/public"},
            "exp_annotations": {
                "summary": "a standby serves a different snapshot for Gateway gw/public than "
                           "the published ProxySnapshot"}}]},
        {"eval_time": "15m", "alertname": "CoxswainStatusWriteFailures", "exp_alerts": [{
            "exp_labels": {"severity": "warning", "kind": "VirtualService",
                           "result": "forbidden"},
            "exp_annotations": {
                "summary": "the leader keeps failing to write VirtualService statuses "
                           "(forbidden, 500m/s)",
                "description": status["annotations"]["description"]}}]},
        {"eval_time": "15m", "alertname": "CoxswainLeaseRenewFailing", "exp_alerts": [{
            "exp_labels": {"severity": "warning"},
            "exp_annotations": {
                "summary": "lease renewals of %s keep failing; the leader will step down if "
                           "they fail for leaderElection.renewDeadline" % LOCK,
                "description": rule("CoxswainLeaseRenewFailing")["annotations"]["description"]}}]},
        # failures that stopped (p1 flat) do not alert on their own
        {"eval_time": "2m", "alertname": "CoxswainLeaseRenewFailing", "exp_alerts": []},
    ]}])


def case_certificate_expiring():
    # promtool's clock starts at 0: a certificate expiring 7 days in fires
    # after an hour, one with 30 days left never does
    run_tests([{"interval": "5m", "input_series": [
        {"series": 'coxswain_tls_certificate_expiry_timestamp_seconds{%s,pod="p0",'
                   'secret="edge/www"}' % SEL, "values": "604800x30"},
        {"series": 'coxswain_tls_certificate_expiry_timestamp_seconds{%s,pod="p1",'
                   'secret="edge/www"}' % SEL, "values": "604800x30"},
        {"series": 'coxswain_tls_certificate_expiry_timestamp_seconds{%s,pod="p0",'
                   'secret="edge/shop"}' % SEL, "values": "2592000x30"},
    ], "alert_rule_test": [
        {"eval_time": "30m", "alertname": "CoxswainCertificateExpiringSoon", "exp_alerts": []},
        {"eval_time": "2h", "alertname": "CoxswainCertificateExpiringSoon", "exp_alerts": [{
            "exp_labels": {"severity": "warning", "secret": "edge/www"},
            "exp_annotations": {
                "summary": "the certificate of Secret edge/www expires in 6d 22h 0m 0s",
                "description": rule("CoxswainCertificateExpiringSoon")["annotations"][
                    "description"]}}]},
    ]}])


def case_alerts_follow_release():
    r = h.render(name="edge", namespace="gw-system",
                 sets={"metrics.prometheusRule.enabled": True,
                       "metrics.prometheusRule.leaderAlertFor": "3m"})
    check(r.ok, r.err)
    spec = r.all("PrometheusRule")[0]["spec"]
    lc = [x for x in spec["groups"][0]["rules"] if x["alert"] == "CoxswainLeaderCount"][0]
    sel = 'namespace="gw-system",job="edge-coxswain-admin"'
    check_eq(lc["expr"], 'sum by (namespace) (leader_election_master_status{%s} '
                         'and on (namespace, pod) (up{%s} == 1) '
                         'and on (namespace, pod) (time() - timestamp(up{%s}) < 45)) != 1'
             % (sel, sel, sel))
    check_eq(lc["for"], "3m")
    # the job label Prometheus gives the ServiceMonitor's targets is the
    # admin Service's name
    check(r.get("Service", "edge-coxswain-admin", "gw-system"))


t.case("promtool check rules accepts the rendered PrometheusRule", case_check_rules)
t.case("one leader: CoxswainLeaderCount stays quiet", case_one_leader_is_quiet)
t.case("no leader for over a minute: CoxswainLeaderCount fires", case_no_leader_fires_after_a_minute)
t.case("two leaders: CoxswainLeaderCount fires with value 2", case_two_leaders_fire)
t.case("two locks with a leader each (a renamed lock): CoxswainLeaderCount fires",
       case_two_locks_two_leaders_fire)
t.case("a 45 s failover does not page", case_short_handover_is_quiet)
t.case("a proof-of-death failover while the dead leader's last scrape is still the latest "
       "(pod deleted, or process killed): CoxswainLeaderCount stays quiet",
       case_failover_with_a_dead_leaders_last_scrape_is_quiet)
t.case("a leader whose target vanished counts as none: CoxswainLeaderCount fires with 0",
       case_vanished_leader_counts_as_none)
t.case("two live leaders scraped at different times still fire",
       case_two_live_leaders_still_fire_with_scrape_gaps)
t.case("the freshness window follows the scrape interval and timeout",
       case_freshness_follows_the_interval)
t.case("CoxswainDown and CoxswainReplicasMissing", case_down_and_missing_replicas)
t.case("NACKs, inconsistent standby, status write and renew failures fire",
       case_nacks_snapshot_and_status_failures)
t.case("a certificate expiring within 14 days fires, one with 30 days left does not",
       case_certificate_expiring)
t.case("selectors and the lock name follow the release", case_alerts_follow_release)
t.done()
