"""Informer benchmark against kubesim, in the same run as its I/O floor.

- Initial sync of 10k and 50k ConfigMaps by `coxswain kube-watch
  --exit-on-sync` (paged list of 500, one unpaged list, streaming list):
  time to synced and peak RSS, against a plain `curl` of the whole list
  (the bytes alone, no decoding) as the floor.
- Watch events processed per second: the informer is synced and stopped
  (SIGSTOP), 20,000 updates pile up in its watch, it is continued and timed
  until it has applied them all; the floor is `curl -N` of the same watch
  from the same resourceVersion piped to `head -n 20000`.

Prints one JSON object (bench/run.sh). Not part of `make test`.
"""
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
from kubesim import KubeSim  # noqa: E402

TOP = os.environ.get("COXSWAIN_TOP") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BUILD = os.environ.get("COXSWAIN_BUILD") or os.path.join(TOP, "build")
COXSWAIN = os.path.join(BUILD, "bin", "coxswain")
NS = "bench"
REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))


def log(msg):
    sys.stderr.write("bench_informer: %s\n" % msg)
    sys.stderr.flush()


def writers(ks, jobs, threads=4):
    """Runs (method, path, body) jobs over |threads| keep-alive connections."""
    errors = []

    def run(part):
        conn = http.client.HTTPConnection("127.0.0.1", ks.port, timeout=60)
        for method, path, body in part:
            data = json.dumps(body).encode()
            conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            r.read()
            if r.status not in (200, 201):
                errors.append(r.status)
        conn.close()
    parts = [jobs[i::threads] for i in range(threads)]
    ts = [threading.Thread(target=run, args=(p,)) for p in parts]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise RuntimeError("writes failed: %s" % errors[:5])


def fill(ks, start, n):
    path = "/api/v1/namespaces/%s/configmaps" % NS
    jobs = [("POST", path, {"metadata": {"name": "cm-%06d" % i, "namespace": NS,
                                         "labels": {"app": "bench", "shard": str(i % 10)}},
                            "data": {"key": "value-%d" % i, "blob": "x" * 200}})
            for i in range(start, start + n)]
    writers(ks, jobs)


def curl_list(ks):
    url = "http://127.0.0.1:%d/api/v1/namespaces/%s/configmaps" % (ks.port, NS)
    t0 = time.monotonic()
    out = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{size_download}", url],
                         capture_output=True, text=True, check=True)
    return (time.monotonic() - t0) * 1000.0, int(out.stdout)


def informer_sync(ks, *args):
    t0 = time.monotonic()
    p = subprocess.run([COXSWAIN, "kube-watch", "--kubeconfig", ks.kubeconfig, "--resource",
                        "configmaps", "--kind", "ConfigMap", "--namespace", NS, "--quiet",
                        "--exit-on-sync"] + list(args),
                       capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
    wall = (time.monotonic() - t0) * 1000.0
    synced = [json.loads(l) for l in p.stdout.splitlines() if '"synced"' in l]
    if p.returncode != 0 or not synced:
        raise RuntimeError("kube-watch failed: %s %s" % (p.returncode, p.stderr[-500:]))
    return wall, synced[0]


def median(xs):
    return statistics.median(xs)


def sync_rows(ks, n):
    rows = []
    floors = [curl_list(ks) for _ in range(REPEAT)]
    floor = median([f[0] for f in floors])
    size = floors[0][1]
    for label, args in (("paged 500", ["--streaming", "off"]),
                        ("unpaged", ["--streaming", "off", "--page-size", "0"]),
                        ("streaming list", ["--streaming", "on"])):
        runs = [informer_sync(ks, *args) for _ in range(REPEAT)]
        walls = [r[0] for r in runs]
        objs = runs[0][1]["objects"]
        if objs != n:
            raise RuntimeError("synced %d objects, want %d" % (objs, n))
        rss = max(r[1]["max_rss_kb"] for r in runs)
        p50 = median(walls)
        rows.append({"case": "initial sync %dk ConfigMaps, %s" % (n // 1000, label),
                     "p50_ms": round(p50, 1),
                     "baseline_p50_ms": round(floor, 1),
                     "ratio": round(p50 / floor, 2),
                     "max_rss_mib": round(rss / 1024.0, 1),
                     "list_bytes": size,
                     "baseline": "curl of the whole list (unpaged) to /dev/null"})
        log(rows[-1]["case"] + ": %.0f ms (curl %.0f ms), %.1f MiB" % (p50, floor, rss / 1024.0))
    return rows


def watch_rate(ks, changes=20000):
    # Informer synced, then frozen while the changes pile up in its watch.
    p = subprocess.Popen([COXSWAIN, "kube-watch", "--kubeconfig", ks.kubeconfig, "--resource",
                          "configmaps", "--kind", "ConfigMap", "--namespace", NS, "--quiet",
                          "--streaming", "off", "--progress", str(changes)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if '"synced"' not in line:
        raise RuntimeError("no sync: " + line)
    time.sleep(0.5)  # the watch is open
    st, doc = ks.request("GET", "/api/v1/namespaces/%s/configmaps?limit=1" % NS)
    rv = doc["metadata"]["resourceVersion"]
    p.send_signal(signal.SIGSTOP)
    path = "/api/v1/namespaces/%s/configmaps/" % NS
    jobs = [("PATCH", path + "cm-%06d" % (i % 1000), {"data": {"key": "v%d" % i}})
            for i in range(changes)]
    # merge patch needs its content type
    conn_jobs = [(m, pth, b) for m, pth, b in jobs]
    errors = []

    def run(part):
        conn = http.client.HTTPConnection("127.0.0.1", ks.port, timeout=60)
        for _, pth, body in part:
            conn.request("PATCH", pth, body=json.dumps(body).encode(),
                         headers={"Content-Type": "application/merge-patch+json"})
            r = conn.getresponse()
            r.read()
            if r.status != 200:
                errors.append(r.status)
        conn.close()
    ts = [threading.Thread(target=run, args=(conn_jobs[i::4],)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise RuntimeError("patches failed: %s" % errors[:5])
    time.sleep(0.5)
    t0 = time.monotonic()
    p.send_signal(signal.SIGCONT)
    line = p.stdout.readline()
    took = time.monotonic() - t0
    p.stdin.close()
    p.wait(30)
    prog = json.loads(line)
    if prog.get("event") != "progress" or prog.get("changes") != changes:
        raise RuntimeError("unexpected: " + line)
    # Floor: the same backlog read by curl from the same RV.
    url = ("http://127.0.0.1:%d/api/v1/namespaces/%s/configmaps?watch=1&resourceVersion=%s"
           % (ks.port, NS, rv))
    t1 = time.monotonic()
    # head exits after the last line; curl would wait on the open watch, so
    # it is killed then.
    c = subprocess.Popen(["curl", "-sN", url], stdout=subprocess.PIPE)
    h = subprocess.Popen(["head", "-n", str(changes)], stdin=c.stdout,
                         stdout=subprocess.DEVNULL)
    c.stdout.close()
    h.wait(120)
    floor = time.monotonic() - t1
    c.kill()
    c.wait()
    row = {"case": "watch events applied per second (%d queued updates)" % changes,
           "events_per_s": round(changes / took),
           "baseline_events_per_s": round(changes / floor),
           "ratio": round(floor / took, 2),
           "baseline": "curl -N of the same watch from the same RV, piped to head"}
    log("%s: %.0f/s (curl %.0f/s)" % (row["case"], changes / took, changes / floor))
    return row


def main():
    rows = []
    with KubeSim(args=["--event-window", "100000"]) as ks:
        ks.create("namespaces", {"metadata": {"name": NS}})
        have = 0
        for n in (10000, 50000):
            log("creating %d ConfigMaps" % (n - have))
            fill(ks, have, n - have)
            have = n
            rows += sync_rows(ks, n)
        rows.append(watch_rate(ks))
    print(json.dumps({
        "benchmark": "informer",
        "title": "Informer: initial sync and watch throughput against kubesim",
        "notes": ("coxswain kube-watch (one informer, libcurl multi on libevent) against kubesim "
                  "on the same machine; median of %d runs; the floor is curl doing the same "
                  "I/O without decoding. RSS is the informer process's peak." % REPEAT),
        "rows": rows}))


if __name__ == "__main__":
    main()
