"""Takeover with warm caches vs cold: is a warm standby worth it?

N objects (N VirtualServices on one Envoy-mode Gateway, N/100 Upstreams) in
kubesim, every status already reconciled. The leader dies; meanwhile K
VirtualServices change (K = min(1000, N/10)), so their statuses are stale.
Measured from the leader's death until every status is reconciled again
(the new leader's status writer idle and all K edited objects at their new
generation), for:

- warm: a standby has been running all along (informers synced, snapshot
  built) and takes over;
- cold: nobody stands by; a replica is started only at the failover (it
  must list everything and translate before it can reconcile);

each after a crash (kill -9: the lease must expire first) and after a
graceful exit (SIGTERM: the lease is released at once). Lease 3s, renew
deadline 2s, retry 500ms; --status-qps=0 (no rate limit, so the figure shows
the caches, not the bucket).

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
NS = "bench"
LEASE = ("3s", "2s", "500ms")
EXTRA = ["--status-qps=0", "--status-burst=1000", "--log-level=warn"]


def log(*a):
    print("#", *a, file=sys.stderr, flush=True)


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
                                 "labels": {"g": str(i // 1000)}},
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


def edited_converged(api, k):
    st, out = api.request("GET", kobj.obj_path("VirtualService", NS) + "?labelSelector=g%3D0")
    items = out.get("items", []) if st == 200 else []
    return len(items) >= k and all(
        (o.get("status") or {}).get("observedGeneration") == o["metadata"]["generation"]
        for o in items)


def one(n, state_path, warm, crash):
    k = min(1000, n // 10)
    ks = KubeSim(state=True, start=False, args=["--event-window", "20000"])
    shutil.copy(state_path, ks.state)
    ks.start(timeout=120)
    api = kobj.Api(ks)
    reps = []
    try:
        a = replicas.Replica(ks, "a", lease=LEASE[0], renew=LEASE[1], retry=LEASE[2], extra=EXTRA)
        reps.append(a)
        # a leads before the standby starts: started together, either may
        # win the first election (b did once, and the run failed)
        replicas.wait_ready(reps, 300)
        replicas.wait_for(lambda: a.leader_info()["leading"], 30, what="a leading")
        if warm:
            reps.append(replicas.Replica(ks, "b", lease=LEASE[0], renew=LEASE[1], retry=LEASE[2],
                                    extra=EXTRA))
            replicas.wait_ready(reps, 300)
        replicas.wait_for(lambda: replicas.writers_idle(a), 300, what="a idle")
        pre = a.metric("coxswain_status_writes_total")
        t0 = time.monotonic()
        if crash:
            a.kill(signal.SIGKILL)
        else:
            a.proc.send_signal(signal.SIGTERM)
        if not warm:
            b = replicas.Replica(ks, "b", lease=LEASE[0], renew=LEASE[1], retry=LEASE[2],
                            extra=EXTRA, start=False)
            reps.append(b)
            b.start(timeout=60)
        b = reps[-1]
        # The edits run beside the polling, so leadership is timed as it
        # happens (a warm standby leads within milliseconds of a SIGTERM).
        edits = {}

        def edit():
            ea = kobj.Api(ks)
            for i in range(k):
                st, _ = ea.patch("VirtualService", NS, "vs%d" % i,
                                 {"spec": {"routes": [{"match": {"prefix": "/v2/"},
                                                       "upstream": {"name": "u0"}}]}})
                assert st == 200, st
            edits["s"] = time.monotonic() - t0
            ea.close()
        th = threading.Thread(target=edit)
        th.start()
        t_lead = t_ready = None
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            try:
                li = b.leader_info()
            except OSError:
                time.sleep(0.02)
                continue
            now = time.monotonic() - t0
            if t_ready is None and li["ready"]:
                t_ready = now
            if t_lead is None and li["leading"]:
                t_lead = now
            if "s" in edits and li["leading"] and li["status_writer"]["idle"] and \
                    edited_converged(api, k):
                t_done = time.monotonic() - t0
                break
            time.sleep(0.01 if t_lead is None else 0.05)
        else:
            raise AssertionError("not reconciled in 600 s")
        th.join()
        t_edits = edits["s"]
        writes = b.metric("coxswain_status_writes_total", result="ok")
        row = {"case": "%s standby, %s" % ("warm" if warm else "cold",
                                           "kill -9" if crash else "SIGTERM"),
               "objects": n + max(10, n // 100) + 1, "changed": k,
               "leader_s": round(t_lead, 3), "ready_s": round(t_ready, 3),
               "reconciled_s": round(t_done, 3), "edits_s": round(t_edits, 2),
               "status_writes": int(writes), "writes_before": int(pre)}
        log(json.dumps(row))
        return row
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
            for crash in (True, False):
                for warm in (True, False):
                    rows.append(one(n, st, warm, crash))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    # Each warm row's baseline is the cold row of the same size and failure.
    for r in rows:
        if r["case"].startswith("warm"):
            cold = [c for c in rows if c["objects"] == r["objects"] and
                    c["case"] == r["case"].replace("warm", "cold")]
            if cold:
                r["baseline_cold_reconciled_s"] = cold[0]["reconciled_s"]
                r["ratio"] = round(r["reconciled_s"] / cold[0]["reconciled_s"], 3)
    # The headline: the largest size, every status reconciled, warm vs cold.
    glance = []
    big = max(r["objects"] for r in rows) if rows else 0
    for how in ("kill -9", "SIGTERM"):
        w = [r for r in rows if r["objects"] == big and r["case"] == "warm standby, " + how]
        if w and "ratio" in w[0]:
            glance.append({"metric": "%s of the leader, %dk objects: every status reconciled" % (
                how, big // 1000), "value": "%.2f s (warm standby)" % w[0]["reconciled_s"],
                "baseline": "%.2fx a replica started at failover (%.2f s)" % (
                    w[0]["ratio"], w[0]["baseline_cold_reconciled_s"])})
    print(json.dumps({
        "benchmark": "takeover",
        "glance": glance,
        "title": "Takeover: warm standby vs a replica started at failover",
        "notes": "Seconds from the leader's death (kill -9) or SIGTERM until every status is "
                 "reconciled again by the new leader; K VirtualServices changed meanwhile. "
                 "leader_s: the new leader acquired the lease; ready_s: its caches synced and "
                 "first snapshot built. Lease 3s/2s/500ms, --status-qps=0. The baseline of a "
                 "warm row is the cold row of the same size and failure.",
        "rows": rows}))


if __name__ == "__main__":
    main()
