# cx-test: exclusive (measures latencies a neighbouring test would disturb)
"""A short `make chaos` inside `make test`: three replicas on kubesim under
the randomised fault schedule for 60 s (15 s under sanitizers), through the
same driver (tests/chaos/chaos.py). Each invariant is one TAP case, read
from the driver's summary; the seed is printed (CHAOS_SEED reruns the same
schedule).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
sys.path.insert(0, os.path.join(TOP, "tests", "chaos"))
import chaos  # noqa: E402
import chaos_report  # noqa: E402
import replicas  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

SAN = replicas.sanitized()
SECONDS = int(os.environ.get("CHAOS_TEST_SECONDS", "15" if SAN else "60"))
LEADERSHIP_KINDS = chaos_report.LEADERSHIP_KINDS


def main():
    t = Tap()
    out = tempfile.mkdtemp(prefix="chaos-test-")
    summary_path = os.path.join(out, "summary.json")
    cmd = ["/usr/bin/python3", os.path.join(TOP, "tests", "chaos", "chaos.py"),
           "--seconds", str(SECONDS), "--out", out, "--json", summary_path]
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=SECONDS + 240)
    wall = time.monotonic() - t0
    for line in p.stdout.splitlines():
        print("# " + line)
    s = {}
    try:
        with open(summary_path) as f:
            s = json.load(f)
    except (OSError, ValueError):
        pass
    viol = s.get("violations", {})

    def harness():
        check(p.returncode in (0, 1), "chaos.py exited with %d (2: harness failure)" %
              p.returncode)
        check(s, "no summary written")
        check_eq(s["seconds"], SECONDS)
        print("# seed %d, %.0f s wall" % (s["seed"], wall))

    def every_fault():
        kinds = set(s["faults"])
        if SAN:
            check(len(kinds) >= 4, "only %s in %d s" % (sorted(kinds), SECONDS))
        else:
            check_eq(sorted(kinds), sorted(chaos.FAULTS), "fault types injected")

    def not_vacuous():
        ld = s["leadership"]
        check(ld["terms"] >= 2, "leadership never moved: %d terms" % ld["terms"])
        check(s["writes"]["guarded"] >= (20 if SAN else 100),
              "only %d guarded writes" % s["writes"]["guarded"])
        check(s["writes"]["virtualservice_changes"] >= SECONDS,
              "only %d VirtualService changes" % s["writes"]["virtualservice_changes"])
        if s["mode"] == "elect":   # the daemon's status writes carry no send time
            check(ld["counts"]["guarded_sent_known"] >= s["writes"]["guarded"] // 2,
                  "send times known for only %d guarded writes" %
                  ld["counts"]["guarded_sent_known"])

    def leadership():
        bad = {k: v for k, v in viol.items() if k in LEADERSHIP_KINDS}
        check(not bad, "leadership violations: %s\n%s" % (bad, "\n".join(
            v["detail"] for v in s["violation_list"] if v["kind"] in LEADERSHIP_KINDS)))

    def canary():
        # canary_note says why there is no catch: the canary did not run
        # (no convergence), its write failed, or the checker missed it
        check(s.get("canary"), "canary: %s" % s.get("canary_note"))
        check(s["canary"].startswith(("sent-outside-term", "write-outside-term")), s["canary"])

    def exits():
        pr = s["processes"]
        check_eq(pr["unexpected_exits"], 0, "unexpected exits")
        check_eq(pr["clean_shutdowns"], pr["shutdowns"], "clean SIGTERM shutdowns")
        check(pr["shutdowns"] >= 3, "only %d shutdowns" % pr["shutdowns"])

    def rss():
        check("rss" not in viol, "RSS: %s" % [v["detail"] for v in s["violation_list"]
                                              if v["kind"] == "rss"])
        check(s["rss"], "no RSS samples")

    def converged():
        check("no-convergence" not in viol, [v["detail"] for v in s["violation_list"]
                                             if v["kind"] == "no-convergence"])
        check(s["converge_s"] is not None, "no convergence time")

    def verdict():
        check_eq(p.returncode, 1 if s["violations_total"] else 0, "exit status")
        check_eq(s["violations_total"], 0, "violations: %s" % viol)

    t.case("the %d s chaos run completed" % SECONDS, harness)
    t.case("faults of every type were injected", every_fault)
    t.case("leadership moved and guarded writes kept coming (the check is not vacuous)",
           not_vacuous)
    t.case("no guarded write outside its writer's term, none after its lease, no early takeover",
           leadership)
    t.case("a rogue guarded write is reported (the checker is live)", canary)
    t.case("no replica exited unexpectedly; every SIGTERM shutdown was clean", exits)
    t.case("RSS stayed bounded", rss)
    t.case("once faults stopped, one leader and every standby agrees", converged)
    t.case("exit status says the verdict; no violation at all", verdict)
    if p.returncode == 0:
        import shutil
        shutil.rmtree(out, ignore_errors=True)
    else:
        print("# artifacts kept in " + out)
    t.done()


if __name__ == "__main__":
    main()
