"""The hostile-input suite as a benchmark row: every tests/hostile/test_*.py
program runs with HOSTILE_RESULTS set, and each attack it makes records
whether the replica survived it, its peak RSS and its bound. The row says
how many cases ran, how many crashed a replica (must be 0) and the peak RSS
of any replica under attack, against the same-run baseline: the RSS of a
replica of the same world at rest (started, synced, serving, no attack).

Prints one JSON object (bench/run.sh).
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "tests", "hostile"))


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def baseline_rss_kb():
    """RSS of a replica at rest in the hostile world (3 samples, median)."""
    import hostilelib as H
    w = H.World(program="bench_hostile")
    try:
        samples = []
        for _ in range(3):
            time.sleep(0.5)
            samples.append(w.rss_kb())
        return sorted(samples)[1]
    finally:
        w.close()


def main():
    progs = sorted(glob.glob(os.path.join(TOP, "tests", "hostile", "test_*.py")))
    res = tempfile.NamedTemporaryFile(prefix="hostile-", suffix=".jsonl", delete=False)
    res.close()
    env = dict(os.environ, HOSTILE_RESULTS=res.name)
    failed_programs = []
    t0 = time.monotonic()
    for p in progs:
        log("bench hostile: %s" % os.path.basename(p))
        r = subprocess.run(["/usr/bin/python3", p], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=900)
        if r.returncode != 0:
            failed_programs.append(os.path.basename(p))
            log(r.stdout.decode(errors="replace")[-3000:])
    wall = time.monotonic() - t0
    lines = [json.loads(x) for x in open(res.name) if x.strip()]
    os.unlink(res.name)
    base = baseline_rss_kb()
    by_prog = {}
    for d in lines:
        by_prog.setdefault(d["program"], []).append(d)
    rows = []
    for prog in sorted(by_prog):
        ds = by_prog[prog]
        peak = max(d["peak_rss_kb"] for d in ds)
        worst = max(ds, key=lambda d: d["peak_rss_kb"])
        rows.append({
            "case": prog.replace(".py", ""),
            "cases": len(ds),
            "passed": sum(1 for d in ds if d["ok"]),
            "crashes": sum(1 for d in ds if d["crashed"]),
            "peak_rss_mb": round(peak / 1024, 1),
            "peak_case": worst["case"],
            "seconds": round(sum(d["seconds"] for d in ds), 1),
            "baseline": "RSS of a replica of the same world at rest",
            "baseline_rss_mb": round(base / 1024, 1),
            "ratio": round(peak / base, 2) if base else None,
        })
    allp = max((d["peak_rss_kb"] for d in lines), default=0)
    total = {
        "case": "all hostile cases",
        "cases": len(lines),
        "passed": sum(1 for d in lines if d["ok"]),
        "crashes": sum(1 for d in lines if d["crashed"]),
        "peak_rss_mb": round(allp / 1024, 1),
        "seconds": round(wall, 1),
        "baseline": "RSS of a replica of the same world at rest",
        "baseline_rss_mb": round(base / 1024, 1),
        "ratio": round(allp / base, 2) if base else None,
    }
    rows.append(total)
    out = {
        "benchmark": "hostile",
        "title": "Hostile inputs: replicas under attack (tests/hostile)",
        "notes": ("Every case of tests/hostile/ (xDS, admin and the other areas' programs) "
                  "attacks a live replica, then asserts it alive, under the case's RSS bound "
                  "and still serving a legitimate proxy. cases = attacks made, passed = all "
                  "three held, crashes = replicas that died (target 0), peak RSS = the highest "
                  "RSS sampled (every 20 ms) during any attack, against a replica of the same "
                  "world at rest in the same run. Programs that failed: %s."
                  % (", ".join(failed_programs) or "none")),
        "rows": rows,
        "glance": [{"metric": "hostile-input cases (xDS, admin, API responses, objects)",
                    "value": "%d cases, %d crashes, peak RSS %.1f MB"
                    % (total["cases"], total["crashes"], total["peak_rss_mb"]),
                    "baseline": "%.1fx a replica at rest (%.1f MB)"
                    % (total["ratio"] or 0, total["baseline_rss_mb"])}],
    }
    print(json.dumps(out))
    return 0 if not failed_programs and total["crashes"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
