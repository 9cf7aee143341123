#!/usr/bin/env python3
"""Every fuzz target builds with the project's compiler and flags and runs
its committed corpus clean.

`make fuzz` needs clang's libFuzzer and runs for minutes, so it is not part
of `make test`; without this check a target that stopped compiling, or an
input that once found a bug and crashes again, would go unnoticed until
someone fuzzes. `make test` builds each tests/fuzz/fuzz_*.c with
tests/fuzz/replay_main.c (build/fuzz-replay/, sanitizers under SANITIZE=1)
and this program replays tests/fuzz/corpus/<target>/ through each one.
"""
import glob
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "lib"))
from tap import Tap, check, check_eq  # noqa: E402

TOP = os.environ.get("COXSWAIN_TOP") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BUILD = os.environ.get("COXSWAIN_BUILD") or os.path.join(TOP, "build")


def replay(name):
    binary = os.path.join(BUILD, "fuzz-replay", name)
    corpus = os.path.join(TOP, "tests", "fuzz", "corpus", name)
    check(os.access(binary, os.X_OK), "%s was not built" % binary)
    check(os.path.isdir(corpus), "%s has no seed corpus in %s" % (name, corpus))
    inputs = [f for f in os.listdir(corpus) if not f.startswith(".")]
    check(inputs, "%s: empty corpus" % name)
    r = subprocess.run([binary, corpus], capture_output=True, text=True, timeout=300)
    check_eq(r.returncode, 0, "%s exited %d:\n%s" % (name, r.returncode, r.stderr[-3000:]))
    check_eq(r.stdout.strip(), "replayed %d inputs" % len(inputs), name)


def main():
    t = Tap()
    names = sorted(os.path.basename(p)[:-2] for p in glob.glob(
        os.path.join(TOP, "tests", "fuzz", "fuzz_*.c")))
    for name in names:
        t.case("%s replays its corpus" % name, replay, name)
    t.done()


if __name__ == "__main__":
    main()
