"""A replica holding a world: time to ready and steady RSS, against the
world's JSON bytes.

Worlds of N VirtualServices (5 routes each), N Upstreams (kube, one Service
each), N Services and N EndpointSlices (10 endpoints each), one Gateway, in
50 namespaces: the shape of bench_translator's world. kubesim starts from a
state file holding the world with every status already written (what a
leader leaves), so the replica (one, leading) only lists, decodes,
translates and serves.

- ready_s: from the process's start to /readyz answering 200 (informers
  synced, first snapshot served);
- steady RSS: VmRSS once it is ready and its writers are idle, sampled
  RSS_SAMPLES times a second apart after SETTLE_S seconds (median);
- peak RSS: the process's high-water mark (VmHWM) at the end (median);
- baseline: the world's JSON bytes (every object as the API server stores
  it, compact JSON); ratio = steady RSS / JSON bytes (target <= 4 at 10k
  and 50k).

BENCH_REPEAT repetitions per size (default 3; each a fresh kubesim and
replica): the rows give the median and min/max. Prints one JSON object
(bench/run.sh). Not part of `make test`.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
import objects as kobj  # noqa: E402
import replicas  # noqa: E402
from kubesim import KubeSim  # noqa: E402

REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))
# "N" or "N:repetitions", comma-separated
SIZES = [(int(x.split(":")[0]), int(x.split(":")[1]) if ":" in x else REPEAT)
         for x in os.environ.get("BENCH_REPLICA_SIZES", "10000,50000").split(",")]
# A folder where each world's state file is kept and reused (they take
# minutes to build at 50k): unset, they are built in a temporary folder.
CACHE = os.environ.get("BENCH_REPLICA_CACHE")
SETTLE_S = float(os.environ.get("BENCH_REPLICA_SETTLE_S", "5"))
RSS_SAMPLES = 5
NAMESPACES = 50
ROUTES = 5
ENDPOINTS = 10
TS = "2026-01-01T00:00:00Z"


def log(*a):
    print("bench_replica:", *a, file=sys.stderr, flush=True)


def world(n):
    gw = {"apiVersion": "coxswain.dev/v1", "kind": "Gateway",
          "metadata": {"name": "gw", "namespace": "ns-0"},
          "spec": {"bindPort": 8080, "virtualServiceNamespaces": ["*"]}}
    out = [gw]
    for i in range(n):
        ns = "ns-%d" % (i % NAMESPACES)
        routes = [{"match": {"prefix": "/api/v%d/r%d/0" % (r, r),
                             "headers": [{"name": "x-tenant", "exact": "t%d" % r}]},
                   "upstream": {"name": "up-%d" % i}, "timeout": "%ds" % (5 + r)}
                  for r in range(ROUTES)]
        out.append({"apiVersion": "coxswain.dev/v1", "kind": "VirtualService",
                    "metadata": {"name": "vs-%d" % i, "namespace": ns,
                                 "labels": {"app": "app-%d" % i}},
                    "spec": {"domains": ["vs-%d.example.com" % i], "routes": routes}})
        out.append({"apiVersion": "coxswain.dev/v1", "kind": "Upstream",
                    "metadata": {"name": "up-%d" % i, "namespace": ns},
                    "spec": {"kube": {"service": "svc-%d" % i, "port": 80},
                             "connectTimeout": "2s"}})
        out.append({"apiVersion": "v1", "kind": "Service",
                    "metadata": {"name": "svc-%d" % i, "namespace": ns},
                    "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}})
        eps = [{"addresses": ["10.%d.%d.%d" % ((i >> 8) & 255, i & 255, e + 1)],
                "conditions": {"ready": True}, "zone": "zone-%d" % (e % 3)}
               for e in range(ENDPOINTS)]
        out.append({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                    "metadata": {"name": "svc-%d-abcde" % i, "namespace": ns,
                                 "labels": {"kubernetes.io/service-name": "svc-%d" % i}},
                    "addressType": "IPv4", "ports": [{"name": "http", "port": 8080}],
                    "endpoints": eps})
    return out


RESOURCE = {"Gateway": ("coxswain.dev", "v1", "gateways"),
            "VirtualService": ("coxswain.dev", "v1", "virtualservices"),
            "Upstream": ("coxswain.dev", "v1", "upstreams"),
            "Service": ("", "v1", "services"),
            "EndpointSlice": ("discovery.k8s.io", "v1", "endpointslices")}


def make_state(n, tmp):
    """A kubesim state file with CRDs, namespaces and the world, every
    status already written; returns (path, the world's JSON bytes)."""
    seed = KubeSim(state=True)
    api = kobj.Api(seed)
    kobj.apply_crds(seed.request, timeout=10)
    for ns in ["coxswain-system"] + ["ns-%d" % i for i in range(NAMESPACES)]:
        kobj.namespace(api, ns)
    seed.stop()
    with open(seed.state) as f:
        state = json.load(f)
    shutil.rmtree(seed.dir, ignore_errors=True)
    objs = world(n)
    # the reports, by `coxswain translate` over slices of the world (its
    # input file is capped; a VirtualService's objects are all in its slice)
    path = os.path.join(tmp, "objs.json")
    reps = {}
    for lo in range(0, n, 10000):
        part = [objs[0]] + objs[1 + 4 * lo:1 + 4 * min(n, lo + 10000)]
        with open(path, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "List", "items": part}, f)
        p = subprocess.run([replicas.coxswain(), "translate", "--reports-only", "-f", path],
                           capture_output=True, text=True, check=True)
        for r in json.loads(p.stdout)["reports"]:
            reps[(r["kind"], r["namespace"], r["name"])] = r
    rv = int(state["resourceVersion"])
    nbytes = 0
    for i, o in enumerate(objs):
        rv += 1
        md = o["metadata"]
        md.update({"uid": "00000000-0000-4000-8000-%012d" % i, "resourceVersion": str(rv),
                   "creationTimestamp": TS})
        r = reps.get((o["kind"], md["namespace"], md["name"]))
        if o["apiVersion"].startswith("coxswain.dev"):
            md["generation"] = 1
        if r:
            o["status"] = {"state": r["state"], "observedGeneration": 1, "conditions": [
                {"type": "Accepted", "status": "False" if r["state"] == "Rejected" else "True",
                 "reason": r["reason"], "message": r["message"], "observedGeneration": 1,
                 "lastTransitionTime": TS}]}
            if o["kind"] == "Gateway":
                o["status"]["conditions"].append(
                    {"type": "XdsAccepted", "status": "True", "reason": "Accepted",
                     "message": "no proxy rejects the current configuration",
                     "observedGeneration": 1, "lastTransitionTime": TS})
        g, v, res = RESOURCE[o["kind"]]
        state["objects"].append({"group": g, "version": v, "resource": res, "object": o})
        nbytes += len(json.dumps(o, separators=(",", ":")))
    state["resourceVersion"] = str(rv)
    spath = os.path.join(tmp, "state-%d.json" % n)
    with open(spath, "w") as f:
        json.dump(state, f)
    os.unlink(path)
    return spath, nbytes


def peak_rss(pid):
    """The process's RSS high-water mark in bytes (VmHWM): its first full
    translation, while the lists' JSON is still held."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM for pid %d" % pid)


def one_run(state_path):
    ks = KubeSim(state=True, start=False)
    shutil.copy(state_path, ks.state)
    ks.start(timeout=300)
    r = None
    try:
        t0 = time.monotonic()
        r = replicas.Replica(ks, "r", lease="15s", renew="10s", retry="2s")
        replicas.wait_for(r.ready, 600, step=0.02, what="replica ready")
        ready_s = time.monotonic() - t0
        replicas.wait_for(lambda: replicas.writers_idle(r), 600, what="writers idle")
        time.sleep(SETTLE_S)
        samples = []
        for _ in range(RSS_SAMPLES):
            samples.append(r.sample_rss())
            time.sleep(1)
        return ready_s, statistics.median(samples) * 1024, peak_rss(r.pid)
    finally:
        if r:
            r.stop()
        ks.stop()


def main():
    tmp = tempfile.mkdtemp(prefix="bench-replica-")
    rows = []
    try:
        for n, repeat in SIZES:
            cached = os.path.join(CACHE, "state-%d.json" % n) if CACHE else None
            if cached and os.path.exists(cached) and os.path.exists(cached + ".bytes"):
                log("reusing the %d world (%s)" % (n, cached))
                spath = cached
                with open(cached + ".bytes") as f:
                    nbytes = json.load(f)
            else:
                log("building the %d world" % n)
                spath, nbytes = make_state(n, CACHE or tmp)
                if cached:
                    with open(cached + ".bytes", "w") as f:
                        json.dump(nbytes, f)
            ready, rss, peak = [], [], []
            for k in range(repeat):
                rs, rb, pk = one_run(spath)
                ready.append(rs)
                rss.append(rb)
                peak.append(pk)
                log("%d: run %d: ready %.2f s, steady RSS %.1f MB (%.2fx the JSON, %.1f MB), "
                    "peak %.1f MB" % (n, k + 1, rs, rb / 1e6, rb / nbytes, nbytes / 1e6, pk / 1e6))
            if not cached:
                os.unlink(spath)
            med = statistics.median(rss)
            rows.append({
                "case": "replica, %dk VirtualServices (+Upstreams, Services, EndpointSlices)"
                        % (n // 1000),
                "p50_ms": round(statistics.median(ready) * 1000, 0),
                "baseline": "the world's JSON bytes (ratio = steady RSS / JSON bytes)",
                "ratio": round(med / nbytes, 2),
                "objects": 1 + 4 * n,
                "world_json_mb": round(nbytes / 1e6, 1),
                "steady_rss_mb": round(med / 1e6, 1),
                "steady_rss_mb_min_max": "%.1f-%.1f" % (min(rss) / 1e6, max(rss) / 1e6),
                "peak_rss_mb": round(statistics.median(peak) / 1e6, 1),
                "ready_s_min_med_max": "%.2f/%.2f/%.2f" % (min(ready), statistics.median(ready),
                                                           max(ready)),
                "rss_bytes_per_object": round(med / (1 + 4 * n)),
                "repetitions": repeat,
            })
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    load = os.getloadavg()[0]
    print(json.dumps({
        "benchmark": "replica",
        "title": "A replica holding a world: time to ready and steady RSS",
        "notes": "One leading replica (coxswain run) against kubesim started from a state file "
                 "holding N VirtualServices x %d routes, N Upstreams (kube), N Services and N "
                 "EndpointSlices x %d endpoints and one Gateway in %d namespaces, every status "
                 "already written. p50_ms: process start to /readyz 200 (informers synced, "
                 "first snapshot served), median of the runs (repetitions; min/med/max in "
                 "ready_s_min_med_max). Steady RSS: VmRSS once ready and its writers idle, "
                 "%g s later, median of %d samples a second apart; median over the runs. "
                 "Baseline: the world's JSON bytes (each object as stored, compact). Target: "
                 "steady RSS <= 4x the JSON at 10k and 50k. Load average at the end: %.1f on "
                 "%d cores." % (ROUTES, ENDPOINTS, NAMESPACES, SETTLE_S, RSS_SAMPLES, load,
                                os.cpu_count() or 0),
        "rows": rows,
        "plots": [{"name": "memory", "title": "Replica steady RSS against the world",
                   "xlabel": "VirtualServices (x4 objects)", "ylabel": "MB", "logx": True,
                   "logy": True, "style": "linespoints",
                   "series": [{"label": "steady RSS (median)",
                               "points": [[(r["objects"] - 1) // 4, r["steady_rss_mb"]]
                                          for r in rows]},
                              {"label": "the world's JSON",
                               "points": [[(r["objects"] - 1) // 4, r["world_json_mb"]]
                                          for r in rows]},
                              {"label": "target: 4x the JSON",
                               "points": [[(r["objects"] - 1) // 4, 4 * r["world_json_mb"]]
                                          for r in rows]}]}],
        "glance": [{"metric": "replica steady RSS, %s" % r["case"].split(" (")[0].split(", ")[1],
                    "value": "%.0f MB (%.2fx its %.1f MB of JSON)" % (
                        r["steady_rss_mb"], r["ratio"], r["world_json_mb"]),
                    "baseline": "the world's JSON bytes"} for r in rows[-1:]],
    }))


if __name__ == "__main__":
    main()
