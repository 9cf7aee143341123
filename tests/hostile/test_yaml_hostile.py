"""Hostile YAML given to `coxswain translate` (operators' CI feeds it files
that anyone with a pull request can write).

Each attack file is refused as a whole: exit status 2, one line on stderr
naming the file, the line and column, and the limit it passed (common/
cx_yaml.h), while the child's peak RSS stays under a stated bound. The
bounds on time are the timeouts: the refusals cost milliseconds where the
old parser spent seconds (alias bombs copied 4,000,000 nodes before its cap)
or minutes (a duplicate-key check quadratic in a mapping's width). A file
that uses anchors within the limits still translates, aliases expanded.
No replica is needed: `coxswain translate` is offline.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import replicas as R  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

SLOW = 4 if R.sanitized() else 1
MAX_ALIAS_NODES = 100000  # CX_YAML_MAX_ALIAS_NODES
MAX_DEPTH = 128  # CX_YAML_MAX_DEPTH

t = Tap()
tmp = tempfile.mkdtemp(prefix="yaml-hostile-")


def translate(name, text, timeout=30):
    """Writes |text| to tmp/|name| and translates it: (exit status, stdout,
    stderr, peak RSS in KB, path). Killed (and failed) past |timeout|
    seconds."""
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    with open(path + ".out", "w+") as out, open(path + ".err", "w+") as err:
        p = subprocess.Popen([R.coxswain(), "translate", "--reports-only", "-f", path],
                             stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout * SLOW
        while True:
            # wait4 rather than wait: the child's own peak RSS
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                p.kill()
                os.wait4(p.pid, 0)
                p.returncode = -9
                check(False, "%s: still running after %d s" % (name, timeout * SLOW))
            time.sleep(0.02)
        p.returncode = -9  # reaped above: keep Popen from waiting again
        out.seek(0)
        err.seek(0)
        return os.waitstatus_to_exitcode(status), out.read(), err.read(), usage.ru_maxrss, path


def check_refused(name, text, *needles, rss_mb=60):
    rc, out, err, peak, path = translate(name, text)
    check_eq(rc, 2, err)
    check_eq(out, "", "nothing translated")
    check(err.startswith("translate: %s: line " % path), err)
    for n in needles:
        check(n in err, "%r not in %r" % (n, err))
    check(peak < rss_mb * 1024 * SLOW, "peak RSS %d KB" % peak)


def laughs(levels, fan, lol="lol"):
    lines = ["l0: &l0 [%s]" % ", ".join([lol] * fan)]
    for i in range(1, levels + 1):
        lines.append("l%d: &l%d [%s]" % (i, i, ", ".join(["*l%d" % (i - 1)] * fan)))
    return "\n".join(lines) + "\n"


def case_billion_laughs():
    """9 anchors of 9 aliases each over 9 strings: 9^9 strings if expanded,
    refused once aliases would have copied more than the limit."""
    check_refused("laughs.yaml", laughs(9, 9), "aliases expand too much",
                  "over the limit of %d" % MAX_ALIAS_NODES)


def case_laughs_of_objects():
    """The same bomb inside a List of objects, the aliases standing for
    mappings: refused before the translator sees a single object."""
    doc = ["apiVersion: v1", "kind: List", "x0: &x0 {a: lol, b: lol, c: lol, d: lol}"]
    for i in range(1, 10):
        doc.append("x%d: &x%d {%s}" % (i, i, ", ".join("k%d: *x%d" % (k, i - 1) for k in range(8))))
    doc.append("items: [*x9]")
    check_refused("objects.yaml", "\n".join(doc) + "\n", "aliases expand too much",
                  "over the limit of %d" % MAX_ALIAS_NODES)


def case_deep_alias_chain():
    """Each anchor one level deeper than the one it aliases: the text nests
    two levels, the copies 3000; refused at the nesting limit."""
    text = "a0: &a0 x\n" + "".join("a%d: &a%d [*a%d]\n" % (i, i, i - 1) for i in range(1, 3000))
    check_refused("chain.yaml", text, "line 128 column 14: nesting too deep",
                  "alias *a126 would reach 129 levels, over the limit of %d" % MAX_DEPTH)


def case_doubling_alias_chain():
    """Each anchor two aliases of the one before: 2^3000 nodes if expanded."""
    text = "a0: &a0 x\n" + "".join("a%d: &a%d [*a%d, *a%d]\n" % (i, i, i - 1, i - 1)
                                   for i in range(1, 3000))
    check_refused("doubling.yaml", text, "aliases expand too much",
                  "over the limit of %d" % MAX_ALIAS_NODES)


def case_wide_mapping_duplicate():
    """300,000 keys and a duplicate of one at the end: found in linear time
    (the scan of every key before each new one took 205 s of CPU)."""
    n = 300000
    text = "".join("k%d: %d\n" % (i, i) for i in range(n)) + "k123456: again\n"
    check_refused("wide.yaml", text, "line %d column 1: duplicate key \"k123456\"" % (n + 1),
                  rss_mb=400)


def case_many_anchors():
    """90,000 anchors and as many aliases: each alias found by name (the
    scan of every anchor per alias took 14 s), and aliases within the
    limits are expanded; the file holds no object, so nothing is
    translated."""
    n = 90000
    text = ("a: [%s]\n" % ", ".join("&a%d %d" % (i, i) for i in range(n)) +
            "b: [%s]\n" % ", ".join("*a%d" % i for i in range(n)))
    rc, out, err, peak, _ = translate("anchors.yaml", text)
    check_eq(rc, 0, err)
    check_eq(json.loads(out)["reports"], [])
    check(peak < 400 * 1024 * SLOW, "peak RSS %d KB" % peak)


def case_legit_anchors():
    """A List whose VirtualServices share one anchored route list (the
    legitimate use): translated, every VirtualService Accepted."""
    lines = ["apiVersion: v1", "kind: List", "items:",
             "- {apiVersion: coxswain.dev/v1, kind: Gateway,"
             " metadata: {namespace: ns, name: gw}, spec: {mode: proxyless}}",
             "- {apiVersion: coxswain.dev/v1, kind: Upstream,"
             " metadata: {namespace: ns, name: up},"
             " spec: {static: {hosts: [{address: 127.0.0.1, port: 50051}]}}}"]
    for i in range(50):
        routes = ("&routes [{match: {prefix: /}, upstream: {name: up}}]" if i == 0
                  else "*routes")
        lines.append("- {apiVersion: coxswain.dev/v1, kind: VirtualService,"
                     " metadata: {namespace: ns, name: vs%d},"
                     " spec: {domains: [vs%d.example], routes: %s}}" % (i, i, routes))
    rc, out, err, _, _ = translate("legit.yaml", "\n".join(lines) + "\n")
    check_eq(rc, 0, err)
    reports = json.loads(out)["reports"]
    vs = [r for r in reports if r["kind"] == "VirtualService"]
    check_eq(len(vs), 50, reports)
    check_eq({r["state"] for r in vs}, {"Accepted"}, vs)


def main():
    t.case("billion laughs", case_billion_laughs)
    t.case("laughs of objects in a List", case_laughs_of_objects)
    t.case("deep alias chain", case_deep_alias_chain)
    t.case("doubling alias chain", case_doubling_alias_chain)
    t.case("wide mapping with a duplicate key", case_wide_mapping_duplicate)
    t.case("many anchors", case_many_anchors)
    t.case("legitimate anchors", case_legit_anchors)
    shutil.rmtree(tmp, ignore_errors=True)
    t.done()


if __name__ == "__main__":
    main()
