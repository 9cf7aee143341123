"""The chart's alerts and Grafana dashboard against a real Prometheus
(Debian's prometheus server): the chart is installed with the real Helm on
kubesim (TLS, RBAC), three replicas run with the installed Deployment's
args under its service account, Prometheus scrapes them (static targets
labelled as the ServiceMonitor's would be) with the rules of the installed
PrometheusRule. Killing the leader while the API refuses every write to the
lock for longer than the lease makes CoxswainLeaderCount fire; letting the
standbys write again makes it resolve; the leader gauges of two replicas
are never both 1; and every query of the dashboard ConfigMap returns data
from this Prometheus, with the panels that must move (streams, pushes,
NACKs, translations, failovers) moving and the lock's kind flat among the
watch events passed to the translator while the lock renews."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import yaml

TOP = os.environ.get("COXSWAIN_TOP", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
sys.path.insert(0, os.path.join(TOP, "tests", "helm"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ads  # noqa: E402
import chartrun as cr  # noqa: E402
import helmlib as h  # noqa: E402
from replicas import sanitized, wait_for  # noqa: E402
from tap import SkipCase, Tap, check, check_eq  # noqa: E402

t = Tap()
NS = h.NAMESPACE
SEL = 'namespace="%s",job="coxswain-admin"' % NS
SLOW = 3 if sanitized() else 1
LEASE = 3  # seconds
ALERT_FOR = "3s"
RATE = "20s"  # what Grafana's $__rate_interval becomes here (scrapes every second)
VALUES = {
    "leaderElection.leaseDuration": "%ds" % LEASE, "leaderElection.renewDeadline": "2s",
    "leaderElection.retryPeriod": "500ms",
    # a ConfigMap lock: its renewals reach the ConfigMap informer (TLS
    # inputs), so "the lock's kind stays flat" is a real claim
    "leaderElection.resourceLock": "configmaps",
    "metrics.prometheusRule.enabled": "true", "metrics.prometheusRule.leaderAlertFor": ALERT_FOR,
    "metrics.grafanaDashboard.enabled": "true",
    # its ADS client (ads.py) speaks h2c without credentials: this test is
    # about scrapes and alerts, not the xDS transport
    "xds.tls.enabled": "false",
}
MONITORING_CRDS = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: prometheusrules.monitoring.coreos.com}
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {plural: prometheusrules, singular: prometheusrule, kind: PrometheusRule,
          listKind: PrometheusRuleList}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"""


class Env:
    ks = None
    reps = []
    streams = []
    prom = None
    prom_url = None
    tmp = None
    start = None
    docs = []


E = Env()


def kubectl(*args, stdin=None):
    p = subprocess.run(["kubectl", "--kubeconfig", E.ks.kubeconfig, "--request-timeout=20s"] +
                       list(args), capture_output=True, text=True, timeout=60, input=stdin)
    check_eq(p.returncode, 0, "kubectl %s: %s" % (" ".join(args), p.stderr))
    return p.stdout


def prom(path, **params):
    url = E.prom_url + path + ("?" + urllib.parse.urlencode(params) if params else "")
    with urllib.request.urlopen(url, timeout=10) as r:
        body = json.loads(r.read())
    check_eq(body["status"], "success", body)
    return body["data"]


def query(expr):
    return prom("/api/v1/query", query=expr)["result"]


def try_query(expr):
    """query() for waits: None while Prometheus is not ready (503)."""
    try:
        return query(expr)
    except OSError:
        return None


def query_range(expr):
    return prom("/api/v1/query_range", query=expr, start="%.3f" % E.start,
                end="%.3f" % time.time(), step="1")["result"]


def alerts(name):
    return [a for a in prom("/api/v1/alerts")["alerts"] if a["labels"]["alertname"] == name]


def setup():
    E.ks = cr.rbac_kubesim()
    E.tmp = tempfile.mkdtemp(prefix="cx-prom-")
    kubectl("apply", "-f", "-", stdin=MONITORING_CRDS)
    args = ["install", "coxswain", h.CHART, "-n", NS, "--create-namespace"]
    for k, v in VALUES.items():
        args += ["--set", "%s=%s" % (k, v)]
    p = h.helm(*args, kubeconfig=E.ks.kubeconfig)
    check_eq(p.returncode, 0, p.stderr)
    p = h.helm("get", "manifest", "coxswain", "-n", NS, kubeconfig=E.ks.kubeconfig)
    E.docs = [d for d in yaml.safe_load_all(p.stdout) if d]
    kubectl("apply", "-f", os.path.join(TOP, "examples"))


def rules_file():
    pr = [d for d in E.docs if d["kind"] == "PrometheusRule"]
    check_eq(len(pr), 1)
    path = os.path.join(E.tmp, "rules.yml")
    with open(path, "w") as f:
        yaml.safe_dump(pr[0]["spec"], f)
    p = subprocess.run(["promtool", "check", "rules", path], capture_output=True, text=True)
    check_eq(p.returncode, 0, p.stdout + p.stderr)
    return path


def dashboard():
    cms = [d for d in E.docs if d["kind"] == "ConfigMap" and
           d["metadata"]["name"] == "coxswain-dashboard"]
    check_eq(len(cms), 1)
    check_eq(cms[0]["metadata"]["labels"].get("grafana_dashboard"), "1")
    return json.loads(cms[0]["data"]["coxswain.json"])


def start_prometheus(rules):
    targets = [{"targets": ["127.0.0.1:%d" % r.admin_port],
                "labels": {"namespace": NS, "pod": r.pod}} for r in E.reps]
    conf = {"global": {"scrape_interval": "1s", "scrape_timeout": "1s",
                       "evaluation_interval": "1s"},
            "rule_files": [rules],
            "scrape_configs": [{"job_name": "coxswain-admin", "static_configs": targets}]}
    path = os.path.join(E.tmp, "prometheus.yml")
    with open(path, "w") as f:
        yaml.safe_dump(conf, f)
    log = open(os.path.join(E.tmp, "prometheus.log"), "w")
    E.prom = subprocess.Popen(["prometheus", "--config.file=" + path,
                               "--storage.tsdb.path=" + os.path.join(E.tmp, "data"),
                               "--web.listen-address=127.0.0.1:0"],
                              stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    log.close()

    def addr():
        m = re.search(r'msg="Listening on" address=(127\.0\.0\.1:\d+)',
                      open(os.path.join(E.tmp, "prometheus.log")).read())
        if E.prom.poll() is not None:
            raise AssertionError("prometheus exited:\n" +
                                 open(os.path.join(E.tmp, "prometheus.log")).read()[-2000:])
        return m and m.group(1)
    E.prom_url = "http://" + wait_for(addr, 30, what="prometheus to listen")


def leader():
    ls = [r for r in E.reps if r.alive() and (r.try_leader_info() or {}).get("leading")]
    return ls[0] if len(ls) == 1 else None


# ---- the cases ----------------------------------------------------------------

def case_scrapes_three_replicas():
    setup()
    rules = rules_file()
    dep = cr.deployment(E.docs)
    check("--leader-elect-resource-lock=configmaps" in
          dep["spec"]["template"]["spec"]["containers"][0]["args"])
    for i in range(3):
        # its ADS client (ads.py) presents no credentials
        E.reps.append(cr.ChartReplica(E.ks, dep, "coxswain-5c7d9f8b6-%d" % i,
                                      extra=["--xds-auth=none"]))
    wait_for(lambda: all(r.ready() for r in E.reps), 30 * SLOW, what="3 replicas ready")
    wait_for(leader, 30 * SLOW, what="one leader")
    E.start = time.time()
    start_prometheus(rules)
    wait_for(lambda: [x for x in try_query('count(up{%s} == 1)' % SEL) or []
                      if x["value"][1] == "3"],
             30 * SLOW, what="prometheus scraping 3 replicas")
    # the rules are loaded, and one leader is quiet
    names = {r["name"] for g in prom("/api/v1/rules")["groups"] for r in g["rules"]}
    check("CoxswainLeaderCount" in names and len(names) == 8, names)
    wait_for(lambda: query('sum by (namespace) (leader_election_master_status{%s}) == 1' % SEL),
             20 * SLOW, what="the leader's gauge scraped")
    time.sleep(4)  # longer than the alert's "for"
    check_eq(alerts("CoxswainLeaderCount"), [])


def case_traffic_for_the_dashboard():
    if not E.prom_url:
        raise SkipCase("no Prometheus (first case)")
    gws = json.loads(kubectl("-n", "default", "get", "gateways", "-o", "json"))["items"]
    gw = "default/" + gws[0]["metadata"]["name"]
    # a stream on every replica (ACKed), and one NACK
    for i, r in enumerate(E.reps):
        s = ads.AdsStream("127.0.0.1:%d" % r.xds_port, gw, node_id="e2e-%d" % i)
        E.streams.append(s)
        resp = s.subscribe(ads.LDS)
        check(resp["resources"] > 0 and resp["nonce"], resp)
        if i == 1:
            s.nack(resp, "rejected by the e2e test")
        else:
            s.ack(resp)
    wait_for(lambda: query('sum(coxswain_xds_streams{%s}) == 3' % SEL), 20 * SLOW,
             what="3 xDS streams scraped")
    wait_for(lambda: query('sum(coxswain_xds_requests_total{%s,verdict="nack"}) >= 1' % SEL),
             20 * SLOW, what="the NACK counted")
    # a change: a new VirtualService is translated and gets a status
    vs = [d for d in yaml.safe_load_all(open(os.path.join(TOP, "examples",
                                                          "virtualservices.yaml")))
          if d and d["kind"] == "VirtualService"][0]
    vs["metadata"]["name"] += "-e2e"
    vs["spec"]["domains"] = ["e2e-%d.example.com" % os.getpid()]
    writes = 'sum(coxswain_status_writes_total{%s,kind="VirtualService",result="ok"})' % SEL
    translations = 'sum(coxswain_translations_total{%s,result="ok"})' % SEL
    before = {q: float(query(q)[0]["value"][1]) for q in (writes, translations)}
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump(vs))

    def status():
        o = json.loads(kubectl("-n", "default", "get", "virtualservice", vs["metadata"]["name"],
                               "-o", "json"))
        return (o.get("status") or {}).get("state")
    check_eq(wait_for(status, 20 * SLOW, what="the new VirtualService's status"), "Accepted")
    # Prometheus has seen the translation and the status write
    for q, v in before.items():
        wait_for(lambda: query("%s > %g" % (q, v)), 20 * SLOW, what="%s above %g" % (q, v))


def case_no_leader_fires_and_recovers():
    if not E.prom_url:
        raise SkipCase("no Prometheus (first case)")
    old = leader()
    check(old, "no leader")
    # the API refuses every write to the lock: nobody can take over. Before
    # the kill: a standby with proof of death takes over within
    # milliseconds, and would lead (for a renew deadline) if the lock could
    # still be written when it tried.
    rules = [E.ks.add_fault(verb=v, resource="configmaps", namespace=NS, name="coxswain",
                            action="fail", code=503) for v in ("update", "create")]
    check(all(rules), rules)
    old.kill(signal.SIGKILL)
    killed = time.monotonic()
    firing = wait_for(lambda: [a for a in alerts("CoxswainLeaderCount")
                               if a["state"] == "firing"], 40 * SLOW,
                      what="CoxswainLeaderCount firing")
    check_eq(float(firing[0]["value"]), 0.0, firing)
    check_eq(firing[0]["labels"]["namespace"], NS)
    # no leader for longer than the lease
    while time.monotonic() - killed < 2 * LEASE:
        time.sleep(0.2)
    check(leader() is None, "a standby led while the lock could not be written")
    E.ks.clear_faults()
    new = wait_for(leader, 30 * SLOW, what="a standby taking over")
    check(new is not old)
    wait_for(lambda: not alerts("CoxswainLeaderCount"), 40 * SLOW,
             what="CoxswainLeaderCount resolved")
    wait_for(lambda: query('sum by (namespace) (leader_election_master_status{%s}) == 1' % SEL),
             20 * SLOW, what="the new leader's gauge scraped")
    time.sleep(1.5)  # a range query's last step lands after it


def case_never_two_leaders():
    if not E.prom_url:
        raise SkipCase("no Prometheus (first case)")
    series = query_range('sum by (namespace) (leader_election_master_status{%s})' % SEL)
    check_eq(len(series), 1, series)
    values = [float(v) for _, v in series[0]["values"]]
    check(values, "no samples")
    check(max(values) <= 1, "two leaders' gauges were 1 at once: max %s" % max(values))
    check(0 in values and 1 in values[values.index(0):],
          "the outage and the recovery are in the data: %s" % values)
    # per replica, too: at no instant two pods at 1
    per_pod = query_range('leader_election_master_status{%s} == 1' % SEL)
    ones = {}
    for s in per_pod:
        for ts, _ in s["values"]:
            ones.setdefault(ts, set()).add(s["metric"]["pod"])
    check(ones and max(len(v) for v in ones.values()) == 1,
          {ts: v for ts, v in ones.items() if len(v) > 1})


def case_dashboard_queries_return_data():
    if not E.prom_url:
        raise SkipCase("no Prometheus (first case)")
    dash = dashboard()
    titles = []
    moved = {}
    for p in dash["panels"]:
        titles.append(p["title"])
        for tg in p["targets"]:
            expr = tg["expr"].replace("$__rate_interval", RATE)
            res = query_range(expr)
            check(res and any(s["values"] for s in res),
                  "panel %r: no data for %s" % (p["title"], expr))
            vals = [float(v) for s in res for _, v in s["values"] if v != "NaN"]
            moved[(p["title"], tg["refId"])] = (max(vals) if vals else 0.0, res)
    must_move = ["Leader", "Leadership terms", "Failovers", "Translations",
                 "Translation duration", "xDS streams", "xDS pushes", "xDS NACKs",
                 "Status writes", "Watch events to the translator, by kind"]
    for title in must_move:
        check(title in titles, "the dashboard has no panel %r" % title)
        check(moved[(title, "A")][0] > 0, "panel %r stayed at 0: %s" % (title, moved[(title, "A")][1]))
    # the lock's kind (ConfigMap) is flat among the events passed on ...
    by_kind = moved[("Watch events to the translator, by kind", "A")][1]
    lock_kind = [s for s in by_kind if s["metric"].get("kind") == "ConfigMap"]
    check(all(float(v) == 0 for s in lock_kind for _, v in s["values"]), lock_kind)
    # ... while the lock was renewed all along: the lock is excluded at the
    # API server, so no renewal even reaches the ConfigMap informers
    renewals = query('sum(increase(coxswain_leader_election_requests_total{%s,purpose="renew",'
                     'outcome="ok"}[5m]))' % SEL)
    check(renewals and float(renewals[0]["value"][1]) > 10, renewals)
    cm_events = query('sum(increase(coxswain_informer_events_total{%s,resource="configmaps",'
                      'type="MODIFIED"}[5m]))' % SEL)
    check(cm_events and float(cm_events[0]["value"][1]) == 0, cm_events)

try:
    t.case("Prometheus scrapes three replicas of the installed chart; rules loaded; quiet",
           case_scrapes_three_replicas)
    t.case("xDS streams, a NACK and a change, for the dashboard", case_traffic_for_the_dashboard)
    t.case("leader killed, lock unwritable past the lease: CoxswainLeaderCount fires, resolves",
           case_no_leader_fires_and_recovers)
    t.case("two replicas' leader gauges are never both 1", case_never_two_leaders)
    t.case("every dashboard query returns data; the lock's kind stays flat",
           case_dashboard_queries_return_data)
finally:
    for s in E.streams:
        try:
            s.close()
        except Exception:  # noqa: BLE001 - closing a dead stream
            pass
    if E.prom is not None:
        E.prom.terminate()
        E.prom.wait(10)
    for r in E.reps:
        if r.alive():
            r.stop()
    if E.ks is not None:
        E.ks.close()
    if E.tmp:
        shutil.rmtree(E.tmp, ignore_errors=True)
t.done()
