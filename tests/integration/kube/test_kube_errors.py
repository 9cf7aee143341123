"""Every error the Kubernetes API can answer, injected into every verb the
daemon uses, through kubesim's fault rules: no request loop (the rate stays
under the replica's --kube-api-qps/--kube-api-burst bound, and each verb and
resource far under it: backoff, not the cap, keeps it quiet), a log line
naming the verb, resource, object and the server's message (once per
distinct error), a metric by error class, and /readyz?verbose saying why an
informer is not synced.

The matrix runs in parallel: one replica per error class, each leader of its
own lock and watching its own namespace, so the twelve are independent. A
rule matches every request of that replica's main client (User-Agent
"coxswain/..."): after it is in place, a VirtualService change (seen on the
already open watch) makes the status writer patch and the publisher update
its ProxySnapshot, and kubesim ends the replica's watches so every informer
must watch (or list) again; all of it fails with the class.

Separate cases: the elector's create loop in a missing namespace (bounded
by the cap; log line), a lease update refused with 403, a ProxySnapshot
create in a missing namespace, and /readyz?verbose for 401, 403 (kubesim's
RBAC) and 404 (the CRDs missing)."""
import os
import re
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))

import objects as O  # noqa: E402
import replicas as R  # noqa: E402
from kubesim import KubeSim  # noqa: E402
from tap import Tap, check  # noqa: E402

SLOW = 3.0 if R.sanitized() else 1.0
QPS, BURST = 50, 50
WINDOW = 4.0 * SLOW
# A verb on a resource that backs off sends few requests in the window; a
# loop held back only by the cap would send up to QPS * WINDOW.
PER_VERB_MAX = 12

# (name, fault rule, what the log line says, metric class, verbs that must
# have failed loudly in the window)
CLASSES = [
    ("400", {"action": "fail", "code": 400}, "HTTP 400", "bad_request"),
    ("401", {"action": "fail", "code": 401}, "HTTP 401", "unauthorized"),
    ("403", {"action": "fail", "code": 403}, "HTTP 403", "forbidden"),
    ("404", {"action": "fail", "code": 404}, "HTTP 404", "not_found"),
    ("409", {"action": "fail", "code": 409}, "HTTP 409", "conflict"),
    ("410", {"action": "fail", "code": 410}, "HTTP 410", "expired"),
    ("422", {"action": "fail", "code": 422}, "HTTP 422", "invalid"),
    ("429", {"action": "fail", "code": 429, "retry_after": 1}, "HTTP 429", "too_many_requests"),
    ("500", {"action": "fail", "code": 500}, "HTTP 500 InternalError", "internal"),
    ("503", {"action": "fail", "code": 503}, "HTTP 503 ServiceUnavailable", "unavailable"),
    ("timeout", {"action": "hang"}, "timeout", "timeout"),
    ("reset", {"action": "close"}, "transport", "transport"),
]


def objects(ns):
    return [O.gateway(ns, "gw"),
            O.upstream_static(ns, "up", [("10.0.0.1", 8080)]),
            O.virtual_service(ns, "vs", ["%s.example" % ns], [O.route("/", "up")])]


def setup_namespace(api, ns, cpns):
    for n in (ns, cpns):
        O.namespace(api, n)
    for o in objects(ns):
        st, out = api.create(o)
        check(st == 201, "create %s: %s %s" % (o["kind"], st, out))


def replica(ks, name, ns, cpns, extra=()):
    return R.Replica(ks, name, extra=["--watch-namespaces", ns, "--namespace", cpns,
                                        "--leader-elect-resource-name", "lock-" + name,
                                        "--kube-api-qps", str(QPS), "--kube-api-burst",
                                        str(BURST)] + list(extra))


def user_agents(ks, ident):
    """(main client, elector) User-Agents of replica |ident| as kubesim saw them."""
    main = elect = None
    for c in ks.counters():
        u = c["user"]
        if u.endswith("replica/" + ident):
            if u.startswith("coxswain-election/"):
                elect = u
            elif u.startswith("coxswain/"):
                main = u
    return main, elect


def counts(ks, users):
    """{(user, verb, resource): count} for |users| (kubesim's counters)."""
    out = {}
    for c in ks.counters():
        if c["user"] in users:
            out[(c["user"], c["verb"], c["resource"])] = c["count"]
    return out


def converged(api, ns):
    ok, _ = O.status_converged(api, ns)
    return ok


def log_lines(rep, pattern):
    return [ln for ln in rep.log().splitlines() if re.search(pattern, ln)]


# ---- the matrix ---------------------------------------------------------------------------


class Matrix:
    def __init__(self):
        self.ks = O.start_kubesim()
        self.api = O.Api(self.ks)
        self.reps = {}
        for i, (name, _, _, _) in enumerate(CLASSES):
            setup_namespace(self.api, "app%d" % i, "cs%d" % i)
        for i, (name, _, _, _) in enumerate(CLASSES):
            self.reps[name] = replica(self.ks, "r" + name, "app%d" % i, "cs%d" % i)
        R.wait_for(lambda: all(r.ready() and r.leader_info()["leading"]
                                 for r in self.reps.values()), 40 * SLOW,
                     what="every replica ready and leading its own lock")
        R.wait_for(lambda: all(converged(self.api, "app%d" % i) for i in range(len(CLASSES))),
                     30 * SLOW, what="statuses written")
        R.wait_for(lambda: all(R.writers_idle(r) for r in self.reps.values()), 30 * SLOW,
                     what="writers idle")
        self.ua = {n: user_agents(self.ks, r.name) for n, r in self.reps.items()}
        for n, (m, e) in self.ua.items():
            check(m and e, "User-Agents of r%s: %r %r" % (n, m, e))
        self.results = {}

    def run(self):
        self.ks.admin("DELETE", "/counters")
        t0 = time.monotonic()
        for i, (name, rule, _, _) in enumerate(CLASSES):
            r = dict(rule)
            r["user"] = self.ua[name][0]
            self.ks.add_fault(**r)
        # A change the open watches bring in: a status patch and a new
        # ProxySnapshot version to write, both failing now.
        for i in range(len(CLASSES)):
            st, out = self.api.patch("VirtualService", "app%d" % i, "vs",
                                     {"spec": {"routes": [O.route("/v2", "up")]}})
            check(st == 200, "patch vs: %s %s" % (st, out))
        time.sleep(1.0 * SLOW)
        for name in self.reps:
            self.ks.admin("POST", "/end-watches", {"user": self.ua[name][0]})
        time.sleep(max(0.0, WINDOW - (time.monotonic() - t0)))
        self.window = time.monotonic() - t0
        users = set()
        for m, e in self.ua.values():
            users.update((m, e))
        self.counts = counts(self.ks, users)
        self.metrics = {n: r.metrics_text() for n, r in self.reps.items()}
        self.ready = {n: r.http("/readyz?verbose") for n, r in self.reps.items()}
        self.ks.clear_faults()

    def close(self):
        for r in self.reps.values():
            r.stop()
        self.ks.close()


def case_rate(mx, name):
    main, elect = mx.ua[name]
    total = sum(v for (u, _, _), v in mx.counts.items() if u in (main, elect))
    bound = BURST + QPS * mx.window + 2
    check(total <= bound, "%s: %d requests in %.1f s, over the bound %.0f" % (name, total,
                                                                               mx.window, bound))
    for (u, verb, res), v in sorted(mx.counts.items()):
        if u == main:
            check(v <= PER_VERB_MAX * SLOW,
                  "%s: %d %s %s in %.1f s: no backoff" % (name, v, verb, res, mx.window))
    # The faults were reached: something was sent and failed.
    check(sum(v for (u, _, _), v in mx.counts.items() if u == main) >= 3,
          "%s: the replica sent almost nothing: %r" % (name, mx.counts))


def case_logs(mx, name, what):
    i = [c[0] for c in CLASSES].index(name)
    rep = mx.reps[name]
    ns, cpns = "app%d" % i, "cs%d" % i
    expect = [r"kube: patch virtualservices/status %s/vs failed: %s" % (ns, re.escape(what)),
              r"kube: update proxysnapshots %s/\S+ failed: %s" % (cpns, re.escape(what))]
    if name != "timeout":  # a hung watch is a stall, 90 s later
        expect.append(r"kube: (watch|list) \S+ in namespace %s failed: %s" % (ns, re.escape(what)))
    for pat in expect:
        lines = log_lines(rep, pat)
        check(lines, "%s: no log line matching %r in:\n%s" % (
            name, pat, "\n".join(log_lines(rep, "kube:"))[-3000:]))
        # Once per distinct error: the same object and error again within
        # the interval makes no second line.
        keys = {}
        for ln in lines:
            k = re.sub(r"^\S+ ", "", ln)
            keys[k] = keys.get(k, 0) + 1
        check(max(keys.values()) == 1, "%s: repeated lines: %r" % (name, keys))
        if what.startswith("HTTP"):
            check("injected fault" in lines[0] or "Internal error" in lines[0] or
                  "unable to handle" in lines[0] or "Too many" in lines[0],
                  "%s: the server's message is missing: %s" % (name, lines[0]))


def case_metric(mx, name, cls):
    got = R.parse_metrics(mx.metrics[name])
    found = {dict(lab).get("verb") for (n, lab), v in got.items()
             if n == "coxswain_kube_request_errors_total" and v > 0 and
             dict(lab).get("class") == cls and dict(lab).get("client") == "coxswain"}
    check("patch" in found, "%s: no coxswain_kube_request_errors_total{class=%s,verb=patch}: %r"
          % (name, cls, found))


def case_recovers(mx):
    R.wait_for(lambda: all(converged(mx.api, "app%d" % i) for i in range(len(CLASSES))),
                 45 * SLOW, what="statuses written again once the faults are gone")
    for name, rep in mx.reps.items():
        check(rep.alive(), "r%s died" % name)
        check(log_lines(rep, r"kube: .* succeeds again after"),
              "r%s: no recovery line" % name)


# ---- the elector, a missing namespace, readyz ----------------------------------------------


def case_elector_missing_namespace():
    ks = O.start_kubesim()
    try:
        rep = R.Replica(ks, "nons", namespace="nosuchns",
                        extra=["--kube-api-qps", "20", "--kube-api-burst", "20"])
        time.sleep(1.0)
        ks.admin("DELETE", "/counters")
        t0 = time.monotonic()
        time.sleep(WINDOW)
        main, elect = user_agents(ks, "nons")
        c = counts(ks, {main, elect})
        took = time.monotonic() - t0
        total = sum(c.values())
        # Before the limit: ~11,000 create-lease requests per second.
        check(total <= 20 + 20 * took + 2, "%d requests in %.1f s" % (total, took))
        # The elector says it (election_report.c); its client only counts it.
        lines = log_lines(rep, r'election: create leases nosuchns/coxswain: HTTP 404 .*namespaces '
                               r'"nosuchns" not found')
        check(len(lines) == 1, "log lines: %r" % lines)
        check(not log_lines(rep, r"warn .*kube: create leases"), "said twice")
        check(rep.metric("coxswain_kube_request_errors_total", client="coxswain-election",
                         verb="create", resource="leases", **{"class": "not_found"}) >= 1,
              "not counted by the client")
        check(rep.alive(), "replica died")
        rep.stop()
    finally:
        ks.close()


def case_lease_update_forbidden():
    ks = O.start_kubesim()
    try:
        api = O.Api(ks)
        O.namespace(api, "coxswain-system")
        rep = R.Replica(ks, "lf", extra=["--kube-api-qps", "20", "--kube-api-burst", "20"])
        R.wait_for(lambda: rep.leader_info()["leading"], 20 * SLOW, what="leading")
        main, elect = user_agents(ks, "lf")
        ks.admin("DELETE", "/counters")
        ks.add_fault(user=elect, verb="update", resource="leases", action="fail", code=403)
        t0 = time.monotonic()
        time.sleep(WINDOW)
        c = counts(ks, {main, elect})
        took = time.monotonic() - t0
        check(sum(c.values()) <= 20 + 20 * took + 2, "%r in %.1f s" % (c, took))
        lines = log_lines(rep, r"election: update leases coxswain-system/coxswain: HTTP 403")
        check(len(lines) == 1, "log lines: %r" % lines)
        check(not log_lines(rep, r"warn .*kube: update leases"), "said twice")
        check(not rep.leader_info()["leading"], "still leading without renewals")
        ks.clear_faults()
        R.wait_for(lambda: rep.leader_info()["leading"], 20 * SLOW, what="leading again")
        rep.stop()
    finally:
        ks.close()


def case_snapshot_namespace_missing():
    ks = O.start_kubesim()
    try:
        api = O.Api(ks)
        setup_namespace(api, "appx", "csx")
        rep = R.Replica(ks, "pns", elect=False, namespace="nosuchns2",
                        extra=["--watch-namespaces", "appx"])
        pat = (r'kube: create proxysnapshots nosuchns2/\S+ failed: HTTP 404 NotFound: '
               r'namespaces "nosuchns2" not found')
        R.wait_for(lambda: log_lines(rep, pat), 20 * SLOW, what="the create failing")
        main, _ = user_agents(ks, "pns")
        ks.admin("DELETE", "/counters")
        time.sleep(WINDOW)
        c = counts(ks, {main})
        creates = c.get((main, "create", "proxysnapshots"), 0)
        # The publisher's backoff (500 ms doubling, each delay cut by up to
        # half at random) allows n attempts in the window when the n
        # shortest delays fit in it: 4 in 4 s, 5 in the sanitizers' 12 s.
        most = max(n for n in range(1, 20) if 0.25 * (2 ** n - 1) <= WINDOW)
        check(creates <= most, "%d creates in %.1f s (the backoff allows %d)" % (
            creates, WINDOW, most))
        check(len(log_lines(rep, pat)) == 1, "more than one line")
        check(rep.metric("coxswain_kube_request_errors_total", verb="create",
                         resource="proxysnapshots", **{"class": "not_found"}) >= 1,
              "no metric")
        rep.stop()
    finally:
        ks.close()


def readyz_says(rep, *needles, absent=()):
    def f():
        st, body = rep.http("/readyz?verbose")
        text = body.decode(errors="replace")
        return (st == 500 and all(n in text for n in needles) and
                not any(a in text for a in absent) and text)
    return R.wait_for(f, 20 * SLOW, what="/readyz?verbose naming %r" % (needles,))


def case_readyz_reasons():
    # kubesim with RBAC: an admin token, one without any role, and tokens
    # it does not know.
    ks = KubeSim(allow_all=False, tokens={"tok-admin": ("admin", ["system:masters"]),
                                          "tok-nobody": "nobody"})
    d = tempfile.mkdtemp(prefix="kube-errors-")
    try:
        reps = []
        for name, tok in (("forbidden", "tok-nobody"), ("unauthorized", "tok-wrong"),
                          ("nocrds", "tok-admin")):
            kc = os.path.join(d, name + ".kubeconfig")
            R.write_kubeconfig(kc, ks.port, tok)
            reps.append(R.Replica(ks, name, elect=False, kubeconfig=kc))
        text = readyz_says(reps[0], "configmaps (", "HTTP 403 Forbidden", 'User "nobody" cannot')
        check("gateways (" in text, text)
        readyz_says(reps[1], "HTTP 401 Unauthorized")
        # The built-in kinds sync; the coxswain.dev ones stay listed, with why.
        text = readyz_says(reps[2], "gateways (", "HTTP 404 NotFound",
                           "the server could not find the requested resource",
                           absent=("configmaps (",))
        check("virtualservices (watch: HTTP 404" in text or
              "virtualservices (list: HTTP 404" in text, text)
        check(log_lines(reps[0], r'kube: (list|watch) configmaps in all namespaces failed: '
                                 r'HTTP 403 Forbidden: configmaps is forbidden'),
              "no 403 log line")
        check(log_lines(reps[1], r"kube: (list|watch) \S+ in all namespaces failed: HTTP 401"),
              "no 401 log line")
        for r in reps:
            r.stop()
    finally:
        ks.close()


def main():
    t = Tap()
    mx = None
    try:
        mx = Matrix()
        mx.run()
        for name, _, what, cls in CLASSES:
            t.case("%s: request rate under the bound, each verb backing off" % name, case_rate,
                   mx, name)
            t.case("%s: one log line per verb, resource, object and message" % name, case_logs,
                   mx, name, what)
            t.case("%s: counted in coxswain_kube_request_errors_total{class=%s}" % (name, cls),
                   case_metric, mx, name, cls)
        t.case("every replica recovers once the faults are gone", case_recovers, mx)
    except Exception as e:  # the set-up failed: every case fails with it
        t.case("set-up of the matrix", lambda: (_ for _ in ()).throw(e))
    finally:
        if mx:
            mx.close()
    t.case("the elector in a missing namespace: capped, one log line",
           case_elector_missing_namespace)
    t.case("a lease update refused with 403: capped, logged, the leader steps down",
           case_lease_update_forbidden)
    t.case("a ProxySnapshot create in a missing namespace backs off", case_snapshot_namespace_missing)
    t.case("/readyz?verbose says why informers are not synced (401, 403, 404)", case_readyz_reasons)
    t.done()


if __name__ == "__main__":
    main()
