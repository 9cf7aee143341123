# cx-test: exclusive (measures latencies a neighbouring test would disturb)
"""The elector never loops without backoff and never fails silently.

Real `coxswain elect` processes on kubesim (3s / 2s / 500ms):
- a lock namespace that does not exist (both lock kinds): the CREATEs back
  off (they were ~11,000/s for Leases, ~7,000/s for ConfigMaps), one log
  line says `create leases nosuchns/coxswain: HTTP 404 ... namespaces
  "nosuchns" not found`, the error metric and /debug/leader say it too;
- the leader's RBAC removed under it: its log says 403 with the server's
  message, and the step-down line names that 403, not only the deadline;
- every error the API can answer (400, 401, 403, 404, 409, 410, 422, 429,
  500, 503, a request never answered, a connection closed) injected through
  kubesim's faults into every verb the elector uses (get, create, update,
  list, watch of the lock; create of its Events), one elector per error, in
  parallel: the request rate stays under the bound the backoff gives, each
  failure that happened is logged once with verb, resource, object, status
  and the server's message, and counted by class.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib"))
import replicas  # noqa: E402
from audit import user_agent  # noqa: E402
from kubesim import KubeSim  # noqa: E402
from replicas import Elector, write_kubeconfig  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

RETRY_S = 0.5
SLACK = 3 if replicas.sanitized() else 1


def note(fmt, *args):
    print("# " + (fmt % args), flush=True)


def counts(ks, user):
    """{(verb, resource): n} of |user|'s requests since the last reset."""
    out = {}
    for c in ks.counters():
        if c["user"] == user:
            k = (c["verb"], c["resource"])
            out[k] = out.get(k, 0) + c["count"]
    return out


def metric(body, family, **labels):
    want = ",".join('%s="%s"' % kv for kv in sorted(labels.items()))
    for line in body.splitlines():
        if line.startswith(family + "{"):
            got = ",".join(sorted(line[len(family) + 1:line.index("}")].split(",")))
            if got == want:
                return float(line.rsplit(" ", 1)[1])
    return None


def log_lines(e, needle):
    return [ln for ln in e.log().splitlines() if needle in ln]


def http(e, path):
    st, body = e.http(path, timeout=5)
    return st, body.decode(errors="replace")


def main():
    t = Tap()
    ks = KubeSim(args=["--bookmark-interval", "2s"])
    try:
        run(t, ks)
    finally:
        ks.close()
    rbac(t)
    t.done()


def run(t, ks):
    # ---- a lock namespace that does not exist ----------------------------
    def missing_namespace():
        els = [Elector(ks, "ns-" + lock, lock=lock, write_interval=None, admin=True, proxy=False,
                       extra=["--leader-elect-resource-namespace", "nosuchns"])
               for lock in ("leases", "configmaps")]
        try:
            time.sleep(0.5)
            ks.admin("DELETE", "/counters")
            window = 6.0
            time.sleep(window)
            for e, lock in zip(els, ("leases", "configmaps")):
                c = counts(ks, user_agent(e.name))
                creates = c.get(("create", lock), 0)
                total = sum(c.values())
                note("%s: %d creates, %d requests in %.0f s: %s", lock, creates, total, window, c)
                # Backoff 0.5, 1, 2, 2, ... s x [1, 1.2): at most 5 in 6 s.
                check(1 <= creates <= 5, "%s: %d creates in %.0f s" % (lock, creates, window))
                check(total <= 9, "%s: %d requests in %.0f s" % (lock, total, window))
                want = ('create %s nosuchns/coxswain: HTTP 404 (not_found): namespaces '
                        '"nosuchns" not found' % lock)
                check_eq(len(log_lines(e, want)), 1, "log lines with %r" % want)
                st, body = http(e, "/metrics")
                v = metric(body, "coxswain_leader_election_errors_total", name="coxswain",
                           **{"class": "not_found"})
                check(v is not None and v >= creates, "errors_total{not_found} = %s" % v)
                check(metric(body, "coxswain_leader_election_errors_total", name="coxswain",
                             **{"class": "forbidden"}) == 0, "every class present from start")
                check(metric(body, "coxswain_leader_election_stepdowns_total", name="coxswain",
                             reason="renew deadline passed") == 0,
                      "step-down reasons present from start")
                doc = json.loads(http(e, "/debug/leader")[1])
                check('namespaces \\"nosuchns\\" not found' in json.dumps(doc["lastError"]),
                      "lastError: %r" % doc["lastError"])
            # The namespace appears: the lock is taken at the next try.
            ks.create("namespaces", {"metadata": {"name": "nosuchns"}})
            for e in els:
                e.wait("started-leading", timeout=5 * SLACK)
                check_eq(len(log_lines(e, "create %s succeeded after" % (
                    "leases" if "leases" in e.name else "configmaps"))), 1, "recovery line")
        finally:
            for e in els:
                e.stop()
    t.case("missing lock namespace: creates back off, one log line, metric, /debug/leader",
           missing_namespace)

    # ---- every error, every verb -------------------------------------------
    def every_error_every_verb():
        errors = [400, 401, 403, 404, 409, 410, 422, 429, 500, 503, "hang", "close"]
        els = {}
        try:
            for code in errors:
                e = Elector(ks, "x-%s" % code, name="lock-%s" % code, write_interval=None,
                            admin=True, proxy=False)
                els[code] = e
            for e in els.values():
                e.wait("started-leading", timeout=10 * SLACK)

            def rule(code, **match):
                r = dict(match)
                if code == "hang":
                    r["action"] = "hang"
                elif code == "close":
                    r["action"] = "close"
                else:
                    r.update(action="fail", code=code)
                return r

            def phase(label, verbs, before=None, window=5.0):
                """Faults on |verbs| (verb, resource) for every elector, each
                its own error; |before| does what makes the elector use
                them. Returns {code: counts}."""
                ks.admin("DELETE", "/faults")
                for code, e in els.items():
                    for verb, res in verbs:
                        ks.add_fault(**rule(code, user=user_agent(e.name), verb=verb,
                                            resource=res))
                ks.admin("DELETE", "/counters")
                if before:
                    before()
                time.sleep(window)
                out = {code: counts(ks, user_agent(e.name)) for code, e in els.items()}
                ks.admin("DELETE", "/faults")
                worst = max(out.items(), key=lambda kv: sum(kv[1].values()))
                note("%s: most requests %d (%s) in %.0f s: %s", label, sum(worst[1].values()),
                     worst[0], window, worst[1])
                for code, c in out.items():
                    total = sum(c.values())
                    # 6/s at a 500 ms retryPeriod (before the backoff: up
                    # to ~11,000/s). Most of it is the polls at retryPeriod
                    # while the watch is down, and libcurl sending a
                    # request twice when its reused connection was closed.
                    bound = int(3 * window / RETRY_S)
                    check(total <= bound, "%s, %s: %d requests in %.0f s (bound %d): %s" % (
                        label, code, total, window, bound, c))
                return out

            def logged(code, verb, res, c):
                """If |verb| on |res| happened under the fault, its failure was
                logged once (a first line; repeats are summarized only after
                a minute) with the object, the status and the message."""
                if c.get((verb, res), 0) == 0:
                    return 0
                e = els[code]
                obj = "default/(event)" if res == "events" else "default/lock-%s" % code
                if code == "hang":
                    head = "%s %s %s: no answer (timeout): " % (verb, res, obj)
                elif code == "close":
                    head = "%s %s %s: no answer (transport): " % (verb, res, obj)
                else:
                    head = "%s %s %s: HTTP %d (" % (verb, res, obj, code)
                if code == "hang" and verb == "watch":
                    return 1  # a silent watch is a quiet lock until the stall timer (150 s)

                def retried():
                    return [ln for ln in log_lines(e, head) if "retrying with backoff" in ln]
                lines = retried()
                if code == "hang" and not lines:
                    # a request that hung near the phase's end is said when
                    # its timeout passes, after the phase
                    end = time.monotonic() + 10 * SLACK
                    while not lines and time.monotonic() < end:
                        time.sleep(0.2)
                        lines = retried()
                if code == 404 and verb == "get":
                    return 1  # a GET's 404 is an answer: the lock is missing
                if code == 409 and verb == "update":
                    return 1  # a 409 reads as a race: info level, counted below
                if code == 410 and verb == "watch":
                    return 1  # 410 is "re-list", said once it repeats
                check(len(lines) >= 1, "%s: no log line %r" % (e.name, head))
                check(len(lines) <= 2, "%s: %d lines %r" % (e.name, len(lines), head))
                if isinstance(code, int) and lines:
                    check(words[code] in lines[0], "no server message %r: %r" % (
                        words[code], lines[0]))
                return 1

            # The server's own words for each injected error, asked once.
            words = {}
            for code in errors:
                if not isinstance(code, int):
                    continue
                ks.add_fault(name="probe-%d" % code, verb="get", action="fail", code=code,
                             count=1)
                st, body = ks.request("GET", "/apis/coordination.k8s.io/v1/namespaces/default/"
                                      "leases/probe-%d" % code)
                check_eq(st, code)
                words[code] = (body.get("message") if isinstance(body, dict) else body).strip()

            seen = {}

            def tally(out, verb, res):
                for code, c in out.items():
                    seen[(code, verb)] = seen.get((code, verb), 0) + logged(code, verb, res, c)

            # update: the leader's renewals fail; it steps down at the renew
            # deadline and keeps trying as a standby (it still holds the lock).
            out = phase("update", [("update", "leases")])
            tally(out, "update", "leases")
            # get, list: the watch is ended and cannot come back; the
            # re-list fails, the elector polls (GET), which fails too.
            out = phase("get+list", [("get", "leases"), ("list", "leases"), ("watch", "leases")],
                        before=lambda: ks.admin("POST", "/end-watches", {"resource": "leases"}))
            tally(out, "get", "leases")
            tally(out, "list", "leases")
            # watch: the list works, every watch fails.
            out = phase("watch", [("watch", "leases")],
                        before=lambda: ks.admin("POST", "/end-watches", {"resource": "leases"}))
            tally(out, "watch", "leases")

            # create (lock and Events): the lock is deleted; the elector steps
            # down (an Event) and fails to create it again.
            def delete_locks():
                for code in errors:
                    ks.request("DELETE", "/apis/coordination.k8s.io/v1/namespaces/default/leases/"
                               "lock-%s" % code)
            out = phase("create", [("create", "leases"), ("create", "events")],
                        before=delete_locks)
            tally(out, "create", "leases")
            tally(out, "create", "events")
            for code in errors:
                for verb in ("update", "get", "list", "watch", "create"):
                    if (code, verb) not in seen or seen[(code, verb)] == 0:
                        note("%s %s: not reached in this run", code, verb)
            # The classes are counted.
            classes = {400: "bad_request", 401: "unauthorized", 403: "forbidden",
                       404: "not_found", 409: "conflict", 410: "expired", 422: "invalid",
                       429: "throttled", 500: "server", 503: "server", "hang": "timeout",
                       "close": "transport"}
            for code, cls in classes.items():
                st, body = http(els[code], "/metrics")
                v = metric(body, "coxswain_leader_election_errors_total",
                           name="lock-%s" % code, **{"class": cls})
                check(v is not None and v >= 1, "%s: errors_total{class=%s} = %s" % (code, cls, v))
            # Everything cleared: each elector leads its lock again.
            for e in els.values():
                deadline = time.monotonic() + 15 * SLACK
                while not e.leading() and time.monotonic() < deadline:
                    time.sleep(0.1)
                check(e.leading(), "%s does not lead again" % e.name)
        finally:
            ks.admin("DELETE", "/faults")
            for e in els.values():
                e.stop()
    t.case("every error into every verb: bounded rate, one log line each, metrics by class",
           every_error_every_verb)


def rbac(t):
    """RBAC removed under a running leader: 403 in its log and in the
    step-down line."""
    def rbac_removed():
        tokens = {"admin-token": ("admin", ["system:masters"]), "el-token": "elector"}
        ks = KubeSim(allow_all=False, tokens=tokens, kubeconfig_token="admin-token")
        e = None
        try:
            role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                    "metadata": {"name": "elector", "namespace": "default"},
                    "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                               "verbs": ["get", "list", "watch", "create", "update"]},
                              {"apiGroups": [""], "resources": ["events"],
                               "verbs": ["create"]}]}
            rb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                  "metadata": {"name": "elector", "namespace": "default"},
                  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                              "name": "elector"},
                  "subjects": [{"kind": "User", "name": "elector"}]}
            for res, obj in (("roles", role), ("rolebindings", rb)):
                st, _ = ks.request("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/"
                                   "default/" + res, obj, token="admin-token")
                check(st == 201, "create %s: %s" % (res, st))
            kc = os.path.join(ks.dir, "kubeconfig-elector")
            write_kubeconfig(kc, ks.port, token="el-token")
            e = Elector(ks, "rb", write_interval=None, admin=True, kubeconfig=kc)
            e.wait("started-leading", timeout=10 * SLACK)
            cut = replicas.mono()
            st, _ = ks.request("DELETE", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/"
                               "rolebindings/elector", token="admin-token")
            check(st == 200, "delete the binding: %s" % st)
            e.wait("stopped-leading", after=cut, timeout=6 * SLACK)
            time.sleep(1.0)
            text = e.log()
            first = [ln for ln in text.splitlines()
                     if "update leases default/coxswain: HTTP 403 (forbidden): " in ln]
            check(len(first) >= 1, "no 403 line in the log")
            check(any('leases.coordination.k8s.io \\"coxswain\\" is forbidden' in ln or
                      'leases.coordination.k8s.io "coxswain" is forbidden' in ln
                      for ln in first), "the server's message is missing: %r" % first[:1])
            stop = [ln for ln in text.splitlines() if "stopped leading" in ln]
            check(stop and "renew deadline passed; last renewal failure: update leases "
                  "default/coxswain: HTTP 403 (forbidden)" in stop[-1],
                  "step-down line: %r" % stop[-1:])
            note("%s", stop[-1][:300] if stop else "")
            st, body = http(e, "/metrics")
            v = metric(body, "coxswain_leader_election_errors_total", name="coxswain",
                       **{"class": "forbidden"})
            check(v is not None and v >= 1, "errors_total{forbidden} = %s" % v)
        finally:
            if e:
                e.stop()
            ks.close()
    t.case("RBAC removed under the leader: 403 and the server's words in the log and the "
           "step-down line", rbac_removed)


main()
