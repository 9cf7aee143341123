"""Hostile objects against a live replica (tests/hostile/hostilelib.py).

A tenant with create rights on coxswain's kinds writes objects meant to make
the translator produce without bound (delegation bombs, huge route lists,
regexes RE2 takes long to compile or Envoy refuses). Each case asserts that
the offending object is Rejected with a message naming the limit and the
numbers, that the legitimate VirtualService on the same Gateway stays
Accepted and served, that the replica is alive and its peak RSS stayed under
the stated bound. The world runs with smaller Gateway budgets than the
defaults so the Gateway-level cases stay small (see WORLD_FLAGS); the
per-VirtualService ones are the defaults.
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostilelib as H  # noqa: E402
from hostilelib import check, check_eq  # noqa: E402

import objects as O  # noqa: E402  (tests/lib, on the path hostilelib set)
import replicas as R  # noqa: E402

NS = H.NS
GATEWAY_ROUTES = 3000
RESOURCE_BYTES = 1 << 20
WORLD_FLAGS = ["--max-routes-per-gateway=%d" % GATEWAY_ROUTES,
               "--max-resource-bytes=%d" % RESOURCE_BYTES]

t = H.Tap()
w = None


def route_table(name, routes):
    return {"apiVersion": "coxswain.dev/v1", "kind": "RouteTable",
            "metadata": {"namespace": NS, "name": name}, "spec": {"routes": routes}}


def delegate(prefix, table):
    return {"match": {"prefix": prefix}, "delegate": {"name": table}}


def bomb_objects(prefix="bomb", fan=64, leaf_upstream="legit-backend"):
    """The four objects of the issue: a VirtualService with |fan| routes on
    prefix / delegating to RouteTable rt0, rt0 -> rt1 -> rt2 each with |fan|
    routes on / delegating onward, rt2's routes sending to an Upstream:
    fan^4 routes (16.7 million for 64) if nothing stops the expansion."""
    objs = [O.virtual_service(NS, prefix, ["%s.hostile.example" % prefix],
                                [delegate("/", prefix + "-rt0") for _ in range(fan)])]
    for i in range(3):
        if i < 2:
            routes = [delegate("/", "%s-rt%d" % (prefix, i + 1)) for _ in range(fan)]
        else:
            routes = [O.route("/", leaf_upstream) for _ in range(fan)]
        objs.append(route_table("%s-rt%d" % (prefix, i), routes))
    return objs


def create(objs):
    for o in objs:
        st, out = w.api.create(o)
        check_eq(st, 201, "create %s %s: %s" % (o["kind"], o["metadata"]["name"], out))


def remove(objs):
    for o in objs:
        w.api.delete(o["kind"], NS, o["metadata"]["name"])


def wait_state(kind, name, timeout=60, reason=None, needles=()):
    """The object's status once it has a state (the leader wrote it); with
    |reason|, once its first condition has that reason and its message
    every one of |needles| (the objects of one case reach the informers one
    by one, so an early translation may have seen only some of them: the
    bomb without its last RouteTable is refused by another budget, with the
    same reason). On timeout the last status is returned."""
    out = {}

    def has():
        st = w.status(kind, name) or {}
        out.clear()
        out.update(st)
        if not st.get("state"):
            return False
        if reason is None:
            return True
        r, msg = condition(st)
        return r == reason and all(n in msg for n in needles)

    try:
        R.wait_for(has, timeout * H.slowdown(), what="%s %s status" % (kind, name))
    except AssertionError:
        if reason is None or not out.get("state"):
            raise  # the caller's checks say what the status was otherwise
    return out


def condition(st):
    conds = st.get("conditions") or [{}]
    return conds[0].get("reason", ""), conds[0].get("message", "")


def check_rejected(kind, name, reason, *needles):
    st = wait_state(kind, name, reason=reason, needles=needles)
    r, msg = condition(st)
    check_eq(st.get("state"), "Rejected", "%s %s: %s %s" % (kind, name, r, msg))
    check_eq(r, reason, msg)
    for n in needles:
        check(n in msg, "%s %s: %r not in %r" % (kind, name, n, msg))
    return msg


def check_legit_accepted():
    st = w.status("VirtualService", "legit") or {}
    check_eq(st.get("state"), "Accepted", "legit VirtualService: %s" % st)


def case_delegation_bomb():
    """The issue's four objects (64^4 routes): the VirtualService is
    Rejected once its routes pass --max-routes-per-virtual-service (4096);
    the expansion stops there, so memory stays small."""
    objs = bomb_objects()
    with w.attack("delegation-bomb", rss_mb=300):
        create(objs)
        msg = check_rejected("VirtualService", "bomb", "BudgetExceeded", "4096",
                             "--max-routes-per-virtual-service")
        check("more than" in msg, msg)
        for i in range(3):  # the RouteTables themselves are fine
            st = wait_state("RouteTable", "bomb-rt%d" % i)
            check(st.get("state") != "Rejected", "bomb-rt%d: %s" % (i, st))
        check_legit_accepted()
    remove(objs)


def case_delegation_fanout():
    """Fan-out without routes (the leaves send to a missing Upstream, so no
    route is ever added): the RouteTable expansions are counted, and the
    VirtualService is Rejected past --max-delegations-per-virtual-service."""
    objs = bomb_objects("fanout", leaf_upstream="does-not-exist")
    with w.attack("delegation-fanout", rss_mb=150):
        create(objs)
        check_rejected("VirtualService", "fanout", "BudgetExceeded", "1024",
                       "--max-delegations-per-virtual-service")
        check_legit_accepted()
    remove(objs)


def case_gateway_route_budget():
    """A huge route list that passes the per-VirtualService budget but not
    the Gateway's: 4 x 1000 routes through one RouteTable. The legitimate,
    older VirtualService keeps its routes; the newcomer is Rejected on the
    Gateway with the numbers."""
    big = route_table("big", [O.route("/big/%d" % i, "legit-backend") for i in range(1000)])
    hog = O.virtual_service(NS, "hog", ["hog.hostile.example"],
                              [delegate("/big", "big") for _ in range(4)])
    with w.attack("gateway-route-budget", rss_mb=150):
        create([big, hog])
        msg = check_rejected("VirtualService", "hog", "BudgetExceeded",
                             "--max-routes-per-gateway", str(GATEWAY_ROUTES), "4000",
                             H.LEGIT_GW)
        check_legit_accepted()
        st = wait_state("Gateway", "legit")
        check(st.get("state") in ("Accepted", "Warning"), st)
    remove([hog, big])
    # the budget freed, a small one fits again
    small = O.virtual_service(NS, "small", ["small.hostile.example"],
                                [O.route("/s", "legit-backend")])
    create([small])
    st = wait_state("VirtualService", "small")
    check_eq(st.get("state"), "Accepted", st)
    remove([small])


def case_resource_bytes():
    """One VirtualService whose encoded VirtualHost passes
    --max-resource-bytes (1 MiB here): 600 routes with 2 KB paths."""
    long_routes = [O.route("/" + ("x" * 2000) + "/%d" % i, "legit-backend")
                   for i in range(600)]
    fat = O.virtual_service(NS, "fat", ["fat.hostile.example"], long_routes)
    with w.attack("resource-bytes", rss_mb=150):
        create([fat])
        check_rejected("VirtualService", "fat", "BudgetExceeded", "--max-resource-bytes",
                       str(RESOURCE_BYTES))
        check_legit_accepted()
    remove([fat])


def regex_vs(name, regexes, headers=()):
    routes = []
    for i, re in enumerate(regexes):
        r = {"match": {"regex": re}, "upstream": {"name": "legit-backend"}}
        if headers:
            r["match"]["headers"] = [{"name": "x-h%d" % k, "regex": h % i}
                                     for k, h in enumerate(headers)]
        routes.append(r)
    return O.virtual_service(NS, name, ["%s.hostile.example" % name], routes)


def case_regex_bombs():
    """Regexes Envoy's default limit refuses are errors, not warnings; the
    costly ones (a huge Unicode repetition, many Unicode classes, thousands
    of regexes in one object) are refused before RE2 spends much on them,
    the rest of an object over its budget not compiled at all."""
    over = regex_vs("re-over", ["/[a-z]{60}/[0-9]{60}"])
    huge = regex_vs("re-huge", ["(\\pL|\\pN){1000}"])
    classes = regex_vs("re-classes", ["/" + "\\pL" * 40])
    many = regex_vs("re-many", ["/[a-z]{40}/%d" % i for i in range(1000)],
                    headers=("v[0-9]{40}-%d", "w[a-f]{40}-%d"))
    objs = [over, huge, classes, many]
    with w.attack("regex-bombs", rss_mb=150):
        create(objs)
        check_rejected("VirtualService", "re-over", "RegexProgramSize", "program size of 126",
                       "limit of 100", "--max-regex-program-size")
        check_rejected("VirtualService", "re-huge", "RegexProgramSize", "limit of 100")
        check_rejected("VirtualService", "re-classes", "InvalidRegex", "Unicode classes")
        check_rejected("VirtualService", "re-many", "RegexProgramSize", "100000")
        check_legit_accepted()
    remove(objs)


def case_offline_translate_bomb():
    """`coxswain translate` on the four objects (it reached 8.7 GB before):
    exit 1, the VirtualService Rejected with the limit, peak RSS of the
    child under 300 MB."""
    import json
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "bomb.json")
        objs = [O.gateway(NS, "gw"),
                O.upstream_static(NS, "legit-backend", [("127.0.0.1", 50051)])] + bomb_objects()
        with open(path, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "List", "items": objs}, f)
        # a wrapper process measures its one child, the translate run
        wrapper = ("import resource, subprocess, sys\n"
                   "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
                   "sys.stderr.write(p.stderr)\n"
                   "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
                   "print(p.returncode)\n"
                   "sys.stdout.write(p.stdout)\n")
        p = subprocess.run(["/usr/bin/python3", "-c", wrapper, R.coxswain(), "translate", "-f",
                            path, "--reports-only"], capture_output=True, text=True,
                           timeout=120 * H.slowdown())
        peak_kb, rc, out = p.stdout.split("\n", 2)
        p = subprocess.CompletedProcess(p.args, int(rc), out, p.stderr)
        peak = int(peak_kb)
        check_eq(p.returncode, 1, p.stderr)
        reports = json.loads(p.stdout)["reports"]
        vs = [r for r in reports if r["kind"] == "VirtualService" and r["name"] == "bomb"][0]
        check_eq(vs["state"], "Rejected", vs)
        check("--max-routes-per-virtual-service" in vs["message"], vs)
        check(peak < 300 * 1024 * H.slowdown(), "translate peak RSS %d KB" % peak)


# ---- the bounds of the route and cluster features (issue 22) ------------------------

BIG_RE = "/[a-z]{60}/[0-9]{60}"  # an RE2 program of 126 instructions: over 100


def feature_vs(name, route_extra=None, spec_extra=None):
    r = O.route("/", "legit-backend", **(route_extra or {}))
    vs = O.virtual_service(NS, name, ["%s.hostile.example" % name], [r])
    vs["spec"].update(spec_extra or {})
    return vs


def feature_upstream(name, **spec):
    up = O.upstream_static(NS, name, [("127.0.0.1", 50051)])
    up["spec"].update(spec)
    return up


# (object, reason, what its message must name): one bound each, the count
# one past the translator's limit (the CRDs say the same: see below)
def count_bombs():
    hdr = [{"name": "x-h%d" % i, "exact": "v"} for i in range(33)]
    ops = [{"name": "x-s%d" % i, "value": "v"} for i in range(33)]
    return [
        (feature_vs("fb-match-headers", {"match": {"prefix": "/", "headers": hdr}}),
         "InvalidSpec", ["spec.routes[0].match.headers", "at most 32 items allowed, got 33"]),
        (feature_vs("fb-header-ops", {"requestHeaders": {"set": ops}}),
         "InvalidSpec", ["spec.routes[0].requestHeaders.set", "at most 32 items allowed, got 33"]),
        (feature_vs("fb-query", {"match": {"prefix": "/", "queryParams": [
            {"name": "q%d" % i} for i in range(17)]}}),
         "InvalidSpec", ["spec.routes[0].match.queryParams", "at most 16 items allowed, got 17"]),
        (feature_vs("fb-cors", spec_extra={"cors": {"allowOrigins": [
            "https://o%d.example" % i for i in range(33)]}}),
         "InvalidSpec", ["spec.cors.allowOrigins", "at most 32 items allowed, got 33"]),
        (feature_vs("fb-hash", {"hashPolicy": [{"header": "x-h%d" % i} for i in range(9)]}),
         "InvalidSpec", ["spec.routes[0].hashPolicy", "at most 8 items allowed, got 9"]),
        (feature_vs("fb-listeners", spec_extra={"listeners": ["l%d" % i for i in range(17)]}),
         "InvalidSpec", ["spec.listeners", "at most 16 items allowed, got 17"]),
        (feature_upstream("fb-localities", localities=[
            {"zone": "z%d" % i, "weight": 1} for i in range(65)]),
         "InvalidSpec", ["spec.localities", "at most 64 items allowed, got 65"]),
        (feature_upstream("fb-priority", localities=[{"zone": "z", "priority": 128}]),
         "InvalidSpec", ["spec.localities[0].priority", "between 0 and 127, got 128"]),
        (feature_upstream("fb-health-checks", healthChecks=[
            {"timeout": "1s", "interval": "5s", "tcp": {}} for _ in range(9)]),
         "InvalidSpec", ["spec.healthChecks", "at most 8 items allowed, got 9"]),
    ]


def case_feature_count_bounds():
    """Every list the route and cluster features added has a bound, in the
    CRD schema (the API server refuses the object, 422, naming the field
    and the limit) and in the translator (for objects stored before a CRD
    update, or in files given to `coxswain translate`: the object Rejected
    with the field path, the limit and the count, everything else
    translated)."""
    import json
    bombs = count_bombs()
    for obj, _, needles in bombs:
        st, out = w.api.create(obj)
        check_eq(st, 422, "create %s: %s" % (obj["metadata"]["name"], out))
        text = json.dumps(out)
        check(needles[0].split(".")[-1].split("[")[0] in text, "%s: %s" % (needles[0], text))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "bounds.json")
        objs = [O.gateway(NS, "gw", mode="envoy"),
                O.upstream_static(NS, "legit-backend", [("127.0.0.1", 50051)]),
                O.virtual_service(NS, "legit", ["legit.hostile.example"],
                                  [O.route("/", "legit-backend")])] + [b[0] for b in bombs]
        with open(path, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "List", "items": objs}, f)
        p = subprocess.run([R.coxswain(), "translate", "-f", path], capture_output=True,
                           text=True, timeout=60 * H.slowdown())
        check_eq(p.returncode, 1, p.stderr)
        out = json.loads(p.stdout)
        reports = {(r["kind"], r["name"]): r for r in out["reports"]}
        for obj, reason, needles in bombs:
            r = reports[(obj["kind"], obj["metadata"]["name"])]
            check_eq(r["state"], "Rejected", r)
            check_eq(r["reason"], reason, r)
            for n in needles:
                check(n in r["message"], "%r not in %r" % (n, r["message"]))
        check_eq(reports[("VirtualService", "legit")]["state"], "Accepted",
                 reports[("VirtualService", "legit")])
        (group,) = out["snapshot"]["groups"]
        check_eq([c["name"] for c in group["clusters"]["resources"]], ["%s/legit-backend" % NS],
                 group["clusters"])


def case_feature_regex_bombs():
    """Regexes in the fields the route features added (CORS origin regexes,
    regexRewrite, query-parameter matchers) pass the same RE2 checks as
    path regexes: a program over Envoy's limit Rejects the object, live,
    naming the limit and the flag; the legitimate VirtualService stays
    Accepted and served."""
    cors = feature_vs("fb-re-cors", spec_extra={"cors": {"allowOriginRegexes": [BIG_RE]}})
    rewrite = feature_vs("fb-re-rewrite", {"regexRewrite": {"pattern": BIG_RE,
                                                            "substitution": "/"}})
    query = feature_vs("fb-re-query", {"match": {"prefix": "/", "queryParams": [
        {"name": "q", "regex": BIG_RE}]}})
    backref = feature_vs("fb-re-backref", {"regexRewrite": {"pattern": "(a)\\1",
                                                            "substitution": "/"}})
    objs = [cors, rewrite, query, backref]
    with w.attack("feature-regex-bombs", rss_mb=150):
        create(objs)
        check_rejected("VirtualService", "fb-re-cors", "RegexProgramSize",
                       "spec.cors.allowOriginRegexes[0]", "limit of 100",
                       "--max-regex-program-size")
        check_rejected("VirtualService", "fb-re-rewrite", "RegexProgramSize",
                       "spec.routes[0].regexRewrite.pattern", "limit of 100")
        check_rejected("VirtualService", "fb-re-query", "RegexProgramSize",
                       "spec.routes[0].match.queryParams[0]", "limit of 100")
        check_rejected("VirtualService", "fb-re-backref", "InvalidRegex",
                       "spec.routes[0].regexRewrite.pattern", "invalid escape sequence")
        check_legit_accepted()
    remove(objs)


def case_listener_certificate_bound():
    """16 HTTPS listeners of 64 certificates each: the CRD allows every list
    (16 listeners, 64 certificates per tls), so the Gateway-wide bound is
    the translator's: Rejected naming the limit and the count (before a
    single Secret is looked up), the legitimate VirtualService stays
    Accepted and served, the replica alive and its RSS bounded."""
    gw = O.gateway(NS, "cert-bomb", mode="envoy")
    gw["spec"]["listeners"] = [
        {"name": "l%d" % i, "port": 20000 + i, "protocol": "HTTPS",
         "tls": {"certificates": [{"secretRef": {"name": "c%d-%d" % (i, k)}}
                                  for k in range(64)]}} for i in range(16)]
    with w.attack("listener-certificate-bound", rss_mb=150):
        create([gw])
        check_rejected("Gateway", "cert-bomb", "InvalidSpec", "spec.listeners",
                       "names 1024 certificates in all", "at most 128")
        check_legit_accepted()
    remove([gw])


def main():
    global w
    w = H.World(extra=WORLD_FLAGS)
    try:
        t.case("offline translate: the four-object bomb", case_offline_translate_bomb)
        t.case("delegation bomb: Rejected at the routes budget", case_delegation_bomb)
        t.case("delegation fan-out without routes", case_delegation_fanout)
        t.case("huge route list: the Gateway's routes budget", case_gateway_route_budget)
        t.case("one resource over the bytes budget", case_resource_bytes)
        t.case("regex bombs", case_regex_bombs)
        t.case("route and cluster features: count bounds", case_feature_count_bounds)
        t.case("route and cluster features: regex bombs", case_feature_regex_bombs)
        t.case("listeners' own certificates: the Gateway-wide bound",
               case_listener_certificate_bound)
    finally:
        w.close()
    t.done()


main()
