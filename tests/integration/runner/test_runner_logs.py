"""tests/run.sh: make valgrind and make test on one build dir at once
(.ci/run runs make valgrind beside make test SANITIZE=1; a developer may
run it beside make test) keep their logs apart. The runner empties its log
dir first: with one log dir for both, the second run erased the first
one's logs and tallies, and both wrote the same program's log.

Two runners on a fake build dir holding one unit program that says which
run started it and takes a few seconds; the valgrind runner starts while
the plain one is running.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
from tap import Tap, check, check_eq  # noqa: E402

PROGRAM = """#!/bin/sh
echo 1..1
echo "# run: $COXSWAIN_SANITIZE"
sleep "$SLEEP_S"
echo "ok 1 - slept"
"""


def runner(build, valgrind, seconds):
    env = dict(os.environ, BUILD=build, T="/tests/unit/zzfake/", SLEEP_S=str(seconds),
               COXSWAIN_SANITIZE="valgrind" if valgrind else "0",
               VALGRIND="1" if valgrind else "0")
    return subprocess.Popen(["bash", os.path.join(TOP, "tests", "run.sh")], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def case_logs_apart():
    build = tempfile.mkdtemp(prefix="runner-logs-")
    try:
        prog = os.path.join(build, "tests", "unit", "zzfake", "test_slow")
        os.makedirs(os.path.dirname(prog))
        with open(prog, "w") as f:
            f.write(PROGRAM)
        os.chmod(prog, 0o755)
        plain = runner(build, False, 6)
        time.sleep(2)  # the plain run is inside its program now
        vg = runner(build, True, 1)
        out_vg, _ = vg.communicate(timeout=120)
        out_plain, _ = plain.communicate(timeout=120)
        print("# plain: %r" % out_plain[-300:])
        print("# valgrind: %r" % out_vg[-300:])
        check_eq(plain.returncode, 0, out_plain)
        check_eq(vg.returncode, 0, out_vg)
        check(out_plain.rstrip().endswith("1 passed, 0 failed"), out_plain)
        check(out_vg.rstrip().endswith("1 passed, 0 failed"), out_vg)
        for d, run in (("test-logs", "0"), ("valgrind-logs", "valgrind")):
            log = os.path.join(build, d, "tests_unit_zzfake_test_slow.log")
            with open(log) as f:
                text = f.read()
            check("# run: %s\n" % run in text, "%s holds another run's log: %r" % (d, text))
            check(os.path.exists(log + ".tally"), "%s: the tally is gone" % d)
    finally:
        shutil.rmtree(build, ignore_errors=True)


t = Tap()
t.case("make valgrind and make test at once on one build dir keep their logs apart",
       case_logs_apart)
t.done()
