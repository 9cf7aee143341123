"""Warm or cold standbys (--standby): what each costs the API server, and
what each gains at takeover.

N objects (N VirtualServices on one Envoy-mode Gateway, N/100 Upstreams) in
kubesim, every status already reconciled; one leader and two standbys, all
in the same mode. For N = 10k and 50k and each mode:

- load: during a churn of CHURN_RATE VirtualService edits per second for
  CHURN_S seconds, the watches the standbys hold open at kubesim, and the
  bytes and watch events the API server sends them (bytes: TCP_INFO
  bytes_received of their connections to kubesim, through `ss`, so their
  electors' lock watch included; events: their informers');
- takeover after kill -9 of the leader (the lease must expire first), then
  after SIGTERM of the next leader (released at once): K VirtualServices
  are edited right after the signal (their statuses go stale), and the new
  leader's phases are timed from the signal: lease acquired (kubesim's
  audit), informers synced, first snapshot built, serving xDS (its
  coxswain_takeover_seconds), every status reconciled (the K edited
  objects at their new generation and its status writer idle).

The baseline of a cold row is the warm row of the same size and case.
Lease 3s, renew deadline 2s, retry 500ms; --status-qps=0 and
--kube-api-qps=100000 (no rate limit: the figures show the caches, not the
buckets).

    SIZES=10000,50000 /usr/bin/python3 bench/bench_takeover.py
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
import objects as kobj  # noqa: E402
import replicas  # noqa: E402
from kubesim import KubeSim  # noqa: E402

SIZES = [int(x) for x in os.environ.get("SIZES", "10000,50000").split(",") if x]
CHURN_RATE = float(os.environ.get("CHURN_RATE", "20"))
CHURN_S = float(os.environ.get("CHURN_S", "10"))
NS = "bench"
LEASE = ("3s", "2s", "500ms")
EXTRA = ["--status-qps=0", "--status-burst=1000", "--kube-api-qps=100000",
         "--kube-api-burst=100000", "--log-level=warn"]


def log(*a):
    print("#", *a, file=sys.stderr, flush=True)


def api_bytes(pid, port):
    """Bytes process |pid| has received on its open connections to kubesim
    (TCP_INFO bytes_received, through `ss`): what the API server sent it."""
    out = subprocess.run(["ss", "-tinpH", "state", "established", "( dport = :%d )" % port],
                         capture_output=True, text=True).stdout
    total, mine = 0, False
    for line in out.splitlines():
        if not line.startswith(("\t", " ")):
            mine = ("pid=%d," % pid) in line
            continue
        if mine:
            for tok in line.split():
                if tok.startswith("bytes_received:"):
                    total += int(tok.split(":", 1)[1])
    return total


def group_size(n):
    """Edited VirtualServices per takeover (label g=i // group_size)."""
    return min(1000, n // 10)


def objects(n):
    nu = max(10, n // 100)
    out = [{"apiVersion": "coxswain.dev/v1", "kind": "Gateway",
            "metadata": {"namespace": NS, "name": "edge"},
            "spec": {"mode": "envoy", "bindPort": 8080}}]
    for i in range(nu):
        out.append({"apiVersion": "coxswain.dev/v1", "kind": "Upstream",
                    "metadata": {"namespace": NS, "name": "u%d" % i},
                    "spec": {"static": {"hosts": [{"address": "10.%d.%d.%d" % (
                        i >> 16 & 255, i >> 8 & 255, i & 255), "port": 8080}]}}})
    for i in range(n):
        out.append({"apiVersion": "coxswain.dev/v1", "kind": "VirtualService",
                    "metadata": {"namespace": NS, "name": "vs%d" % i,
                                 "labels": {"g": str(i // group_size(n))}},
                    "spec": {"domains": ["vs%d.bench" % i],
                             "routes": [{"match": {"prefix": "/"},
                                         "upstream": {"name": "u%d" % (i % nu)}}]}})
    return out


def reports(objs, tmp):
    path = os.path.join(tmp, "objs.json")
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": objs}, f)
    p = subprocess.run([replicas.coxswain(), "translate", "--reports-only", "-f", path],
                       capture_output=True, text=True)
    return {(r["kind"], r["name"]): r for r in json.loads(p.stdout)["reports"]}


def make_state(n, tmp):
    """A kubesim state file: CRDs, namespaces and N objects with their
    statuses already reconciled (what a previous leader would have left)."""
    seed = KubeSim(state=True)
    api = kobj.Api(seed)
    kobj.apply_crds(seed.request, timeout=10)
    kobj.namespace(api, "coxswain-system")
    kobj.namespace(api, NS)
    seed.stop()
    with open(seed.state) as f:
        state = json.load(f)
    shutil.rmtree(seed.dir, ignore_errors=True)
    objs = objects(n)
    reps = reports(objs, tmp)
    rv = int(state["resourceVersion"])
    ts = "2026-01-01T00:00:00Z"
    plural = {"Gateway": "gateways", "Upstream": "upstreams", "VirtualService": "virtualservices"}
    for i, o in enumerate(objs):
        rv += 1
        md = o["metadata"]
        md.update({"uid": "00000000-0000-4000-8000-%012d" % i, "resourceVersion": str(rv),
                   "generation": 1, "creationTimestamp": ts})
        r = reps[(o["kind"], md["name"])]
        conds = [{"type": "Accepted", "status": "False" if r["state"] == "Rejected" else "True",
                  "reason": r["reason"], "message": r["message"], "observedGeneration": 1,
                  "lastTransitionTime": ts}]
        if o["kind"] == "Gateway":
            conds.append({"type": "XdsAccepted", "status": "True", "reason": "Accepted",
                          "message": "no proxy rejects the current configuration",
                          "observedGeneration": 1, "lastTransitionTime": ts})
        o["status"] = {"state": r["state"], "observedGeneration": 1, "conditions": conds}
        state["objects"].append({"group": "coxswain.dev", "version": "v1",
                                 "resource": plural[o["kind"]], "object": o})
    state["resourceVersion"] = str(rv)
    path = os.path.join(tmp, "state-%d.json" % n)
    with open(path, "w") as f:
        json.dump(state, f)
    return path


def edited_converged(api, group, k):
    st, out = api.request("GET", kobj.obj_path("VirtualService", NS) +
                          "?labelSelector=g%%3D%d" % group)
    items = out.get("items", []) if st == 200 else []
    return len(items) >= k and all(
        (o.get("status") or {}).get("observedGeneration") == o["metadata"]["generation"]
        for o in items)


def start(ks, name, mode):
    return replicas.Replica(ks, name, lease=LEASE[0], renew=LEASE[1], retry=LEASE[2],
                            extra=EXTRA + ["--standby=" + mode])


def informer_events(r):
    return sum(v for (n, lab), v in r.metrics().items()
               if n == "coxswain_informer_events_total" and dict(lab).get("type") != "BOOKMARK")


def informers(r):
    return sum(1 for (n, _), _v in r.metrics().items() if n == "coxswain_informer_synced")


def churn(ks, rate, secs, first):
    """Edits VirtualServices vs<first>.. at |rate| per second for |secs|."""
    api = kobj.Api(ks)
    n = int(rate * secs)
    t0 = time.monotonic()
    for i in range(n):
        due = t0 + i / rate
        d = due - time.monotonic()
        if d > 0:
            time.sleep(d)
        st, _ = api.patch("VirtualService", NS, "vs%d" % (first + i),
                          {"spec": {"domains": ["vs%d.bench" % (first + i), "churn.bench"]}})
        assert st == 200, st
    api.close()
    return n


def standby_load(ks, lead, standbys, mode, n):
    """The churn, and what the standbys cost the API server meanwhile."""
    time.sleep(2.0)  # settled
    before = [(api_bytes(r.proc.pid, ks.port), informer_events(r)) for r in standbys]
    edits = churn(ks, CHURN_RATE, CHURN_S, n // 2)
    time.sleep(1.0)  # the last events delivered
    held = ks.admin("GET", "/state")["watches"] - (informers(lead) + 1)
    by = [api_bytes(r.proc.pid, ks.port) - b[0] for r, b in zip(standbys, before)]
    ev = [informer_events(r) - b[1] for r, b in zip(standbys, before)]
    row = {"case": "%s standbys, load during a churn" % mode, "objects": n + max(10, n // 100) + 1,
           "edits": edits, "edits_per_s": CHURN_RATE,
           "watches_per_standby": round(held / len(standbys), 1),
           "bytes_per_standby": int(sum(by) / len(by)),
           "events_per_standby": int(sum(ev) / len(ev))}
    log(json.dumps(row))
    return row


def audit_acquired(ks, name, after_mono_ns):
    for a in ks.audit():
        if a.get("resource") == "leases" and a.get("verb") in ("create", "update") and \
                200 <= a.get("code", 0) < 300 and a["mono_ns"] >= after_mono_ns and \
                a.get("user", "").endswith("replica/" + name):
            return a["mono_ns"]
    return None


def takeover(ks, reps, mode, crash, group, n):
    """Kills (or SIGTERMs) the leader; times the new leader's phases."""
    api = kobj.Api(ks)
    k = group_size(n)
    lead = replicas.wait_leader([r for r in reps if r.alive()], 30)
    replicas.wait_for(lambda: replicas.writers_idle(lead), 300, what="leader idle")
    others = [r for r in reps if r is not lead and r.alive()]
    t0_ns = time.monotonic_ns()
    t0 = t0_ns / 1e9
    if crash:
        lead.kill(signal.SIGKILL)
    else:
        lead.send_term()
    edits = {}

    def edit():
        ea = kobj.Api(ks)
        for i in range(k):
            st, _ = ea.patch("VirtualService", NS, "vs%d" % (group * k + i),
                             {"spec": {"routes": [{"match": {"prefix": "/v%d/" % group},
                                                   "upstream": {"name": "u0"}}]}})
            assert st == 200, st
        edits["s"] = time.monotonic() - t0
        ea.close()
    th = threading.Thread(target=edit)
    th.start()
    new = None
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if new is None:
            for r in others:
                try:
                    if r.leader_info()["leading"]:
                        new = r
                except (OSError, TypeError, KeyError):
                    pass
        elif "s" in edits:
            try:
                li = new.leader_info()
            except OSError:
                li = None
            if li and li["leading"] and li["status_writer"]["idle"] and \
                    edited_converged(api, group, k):
                break
        time.sleep(0.02)
    else:
        raise AssertionError("not reconciled in 600 s")
    t_done = time.monotonic() - t0
    th.join()
    acq = audit_acquired(ks, new.name, t0_ns)
    leader_s = (acq - t0_ns) / 1e9 if acq else None
    ph = {dict(lab)["phase"]: v for (nm, lab), v in new.metrics().items()
          if nm == "coxswain_takeover_seconds"}
    row = {"case": "%s standby, %s" % (mode, "kill -9" if crash else "SIGTERM"),
           "objects": n + max(10, n // 100) + 1, "changed": k,
           "leader_s": round(leader_s, 3) if leader_s is not None else None}
    if leader_s is not None:
        for key in ("synced", "snapshot", "serving"):
            row[key + "_s"] = round(leader_s + ph.get(key, 0), 3)
    row["reconciled_s"] = round(t_done, 3)
    row["edits_s"] = round(edits["s"], 2)
    log(json.dumps(row))
    api.close()
    return row, lead


def run_mode(n, state_path, mode):
    ks = KubeSim(state=True, start=False, args=["--event-window", "20000"])
    shutil.copy(state_path, ks.state)
    ks.start(timeout=120)
    reps = []
    rows = []
    try:
        # a leads before the standbys start (either may win a race)
        a = start(ks, "a", mode)
        reps.append(a)
        replicas.wait_ready(reps, 300)
        replicas.wait_for(lambda: a.leader_info()["leading"], 30, what="a leading")
        for name in ("b", "c"):
            reps.append(start(ks, name, mode))
        if mode == "warm":
            replicas.wait_ready(reps, 300)
        replicas.wait_for(lambda: replicas.writers_idle(a), 300, what="a idle")
        rows.append(standby_load(ks, a, reps[1:], mode, n))
        row, dead = takeover(ks, reps, mode, True, 1, n)
        rows.append(row)
        # the killed one comes back as a standby, then SIGTERM of the leader
        reps.remove(dead)
        reps.append(start(ks, dead.name + "2", mode))
        if mode == "warm":
            replicas.wait_ready([r for r in reps if r.alive()], 300)
        else:
            time.sleep(2.0)
        row, _ = takeover(ks, reps, mode, False, 2, n)
        rows.append(row)
        return rows
    finally:
        for r in reps:
            r.stop(timeout=30)
        ks.close()


def main():
    tmp = tempfile.mkdtemp(prefix="bench-takeover-")
    rows = []
    try:
        for n in SIZES:
            log("generating %d objects" % n)
            st = make_state(n, tmp)
            for mode in ("warm", "cold"):
                rows.extend(run_mode(n, st, mode))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    # A cold row's baseline is the warm row of the same size and case.
    for r in rows:
        if r["case"].startswith("cold"):
            warm = [w for w in rows if w["objects"] == r["objects"] and
                    w["case"] == r["case"].replace("cold", "warm")]
            if not warm:
                continue
            w = warm[0]
            if "reconciled_s" in r:
                r["baseline_warm_reconciled_s"] = w["reconciled_s"]
                r["ratio"] = round(r["reconciled_s"] / w["reconciled_s"], 3)
            else:
                r["baseline_warm_bytes"] = w["bytes_per_standby"]
                r["ratio"] = round(r["bytes_per_standby"] / max(1, w["bytes_per_standby"]), 4)
    big = max(r["objects"] for r in rows) if rows else 0
    glance = []
    for case, what, key, fmt in (
            ("cold standbys, load during a churn", "API server bytes to each standby during %.0f "
             "edits/s, %dk objects" % (CHURN_RATE, big // 1000), "bytes_per_standby",
             "%d B (cold)"),
            ("cold standby, kill -9", "kill -9 of the leader, %dk objects: every status "
             "reconciled" % (big // 1000), "reconciled_s", "%.2f s (cold standby)"),
            ("cold standby, SIGTERM", "SIGTERM of the leader, %dk objects: every status "
             "reconciled" % (big // 1000), "reconciled_s", "%.2f s (cold standby)")):
        c = [r for r in rows if r["objects"] == big and r["case"] == case]
        if c and "ratio" in c[0]:
            base = ("%d B" % c[0]["baseline_warm_bytes"] if "baseline_warm_bytes" in c[0]
                    else "%.2f s" % c[0]["baseline_warm_reconciled_s"])
            glance.append({"metric": what, "value": fmt % c[0][key],
                           "baseline": "%.3gx warm standbys (%s)" % (c[0]["ratio"], base)})
    plots = []
    timed = [r for r in rows if r.get("leader_s") is not None and "reconciled_s" in r]
    if timed:
        ytics, series = [], {k: [] for k in ("lease", "sync", "snapshot", "serve", "statuses")}
        for i, r in enumerate(reversed(timed)):
            y = i + 1
            ytics.append([y, "%s, %dk" % (r["case"], round(r["objects"] / 1000))])
            series["lease"].append([0, r["leader_s"], y])
            series["sync"].append([r["leader_s"], r.get("synced_s", r["leader_s"]), y])
            series["snapshot"].append([r.get("synced_s", r["leader_s"]),
                                       r.get("snapshot_s", r["leader_s"]), y])
            series["serve"].append([r.get("snapshot_s", r["leader_s"]),
                                    r.get("serving_s", r["leader_s"]), y])
            series["statuses"].append([r.get("serving_s", r["leader_s"]), r["reconciled_s"], y])
        labels = {"lease": "until the new leader holds the lease",
                  "sync": "informers listing (cold)", "snapshot": "first translation (cold)",
                  "serve": "until xDS serves it", "statuses": "until every status is reconciled"}
        plots.append({"name": "timeline", "title": "Takeover phases, warm and cold standbys",
                      "xlabel": "seconds after kill -9 / SIGTERM", "style": "intervals",
                      "ytics": ytics,
                      "series": [{"label": labels[k], "points": v} for k, v in series.items()]})
    load = [r for r in rows if "bytes_per_standby" in r]
    if load:
        xt, pts = [], {"warm": [], "cold": []}
        for i, n in enumerate(sorted({r["objects"] for r in load})):
            xt.append([i + 1, "%dk objects" % round(n / 1000)])
            for r in load:
                if r["objects"] == n:
                    m = "warm" if r["case"].startswith("warm") else "cold"
                    pts[m].append([i + 1 + (-0.2 if m == "warm" else 0.2),
                                   max(1, r["bytes_per_standby"]) / 1024.0])
        plots.append({"name": "load", "title": "API server bytes to each standby during a churn "
                      "of %.0f edits/s for %.0f s" % (CHURN_RATE, CHURN_S),
                      "ylabel": "KiB per standby", "logy": True, "style": "boxes",
                      "boxwidth": 0.35, "xtics": xt,
                      "series": [{"label": "warm standby", "points": pts["warm"]},
                                 {"label": "cold standby (its lock watch only)",
                                  "points": pts["cold"]}]})
    print(json.dumps({
        "benchmark": "takeover",
        "glance": glance,
        "title": "Warm or cold standbys: API server load and takeover",
        "notes": "One leader and two standbys in the same mode (--standby). Load rows: during a "
                 "churn of %.0f VirtualService edits/s for %.0f s, the watches each standby "
                 "holds at kubesim, the bytes kubesim sent it (its informers and its elector's "
                 "lock watch; TCP_INFO of its connections to kubesim) and its informer events. Takeover rows: "
                 "seconds from kill -9 (the lease must expire: 3 s) or SIGTERM (released at once) "
                 "of the leader, K VirtualServices edited meanwhile: leader_s the new leader's "
                 "lease (kubesim's audit), synced_s/snapshot_s/serving_s its informers synced, "
                 "first snapshot built and served (coxswain_takeover_seconds), reconciled_s every "
                 "edited status written and its writer idle. Lease 3s/2s/500ms, --status-qps=0, "
                 "--kube-api-qps=100000. "
                 "A cold row's baseline is the warm row of the same size and case."
                 % (CHURN_RATE, CHURN_S),
        "rows": rows,
        "plots": plots}))


if __name__ == "__main__":
    main()
