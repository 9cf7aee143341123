"""TAP output for Python test programs (tests/run.sh tallies it).

    from tap import Tap
    t = Tap()
    t.case("name", fn)        # runs fn(); an exception or failed check fails it
                              # (one taking 1 s or more prints "# name took N s")
    t.done()                  # prints the plan, exits 1 if anything failed

Use with /usr/bin/python3 (Debian's, which has python3-grpcio and
python3-kubernetes).
"""
import sys
import time
import traceback


class CheckFailed(AssertionError):
    pass


def check(cond, msg="check failed"):
    if not cond:
        raise CheckFailed(msg)


def check_eq(a, b, msg=""):
    if a != b:
        raise CheckFailed("%s%r != %r" % (msg + ": " if msg else "", a, b))


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0
        self.skipped = 0

    def case(self, name, fn, *args):
        self.n += 1
        start = time.monotonic()
        try:
            try:
                fn(*args)
            finally:
                took = time.monotonic() - start
                if took >= 1.0:  # as tests/lib/cxtest.c: where a program's time goes
                    print("# %s took %.1f s" % (name, took), flush=True)
        except SkipCase as e:
            self.skipped += 1
            print("ok %d - %s # SKIP %s" % (self.n, name, e), flush=True)
            return
        except Exception:
            self.failed += 1
            for line in traceback.format_exc().splitlines():
                print("# " + line)
            print("not ok %d - %s" % (self.n, name), flush=True)
            return
        print("ok %d - %s" % (self.n, name), flush=True)

    def done(self):
        print("1..%d" % self.n, flush=True)
        sys.exit(1 if self.failed else 0)


class SkipCase(Exception):
    pass
