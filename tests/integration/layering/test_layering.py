#!/usr/bin/env python3
"""The house's layering, checked on the real compiler's header lists.

- Every product source compiles with its own module's include list (the
  Makefile's DEPS_<module>); the compiler's full dependency list (-M, system
  headers included) of each is read here.
- The I/O-free cores (common, filters, translator, election's decision core)
  never reach libevent, curl or nghttp2 headers.
- election/ reaches nothing under controlplane/: not the daemon, and not
  the Kubernetes client either (it depends on its own small interface,
  election/election_kube.h, which the daemon implements).
- No product source file passes 1,000 lines; no folder holds more than 20
  C files.
- Every module folder has a README.md saying what it owns, whose
  "May include:" line is the module's include list in the Makefile.
"""
import functools
import glob
import os
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "lib"))
from tap import Tap, check  # noqa: E402

TOP = os.environ.get("COXSWAIN_TOP") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BUILD = os.environ.get("COXSWAIN_BUILD") or os.path.join(TOP, "build")

PRODUCT = ["common", "filters", "election", "translator"] + sorted(
    d for pat in ("translator/*", "controlplane/*") for d in glob.glob(pat, root_dir=TOP)
    if os.path.isdir(os.path.join(TOP, d)))
IO_FREE = (glob.glob("common/*.c", root_dir=TOP) + glob.glob("filters/*.c", root_dir=TOP)
           + glob.glob("translator/*.c", root_dir=TOP) + glob.glob("translator/*.cc", root_dir=TOP)
           + glob.glob("translator/*/*.c", root_dir=TOP)
           + ["election/election_core.c", "election/election_record.c",
              "election/election_config.c", "election/election_guard.c",
              "election/election_report.c"])
IO_HEADERS = ("/event2/", "/curl/", "/nghttp2/", "/event.h")
DAEMON_DIRS = ("controlplane/",)


def cflags(src):
    # The flags are the module's (its folder's) and the language's: one
    # make run per pair, not per file.
    return _cflags(os.path.dirname(src), os.path.splitext(src)[1])


@functools.lru_cache(maxsize=None)
def _cflags(folder, ext):
    probe = os.path.join(folder, "probe" + ext)
    out = subprocess.run(["make", "-s", "--no-print-directory", "print-cflags", "F=" + probe,
                          "BUILD=" + os.path.relpath(BUILD, TOP)],
                         cwd=TOP, check=True, capture_output=True, text=True).stdout
    return tuple(f for f in shlex.split(out) if f not in ("-MMD", "-MP"))


@functools.lru_cache(maxsize=None)
def headers(src):
    cc = "c++" if src.endswith(".cc") else "cc"  # C++ shims over C++ libraries
    p = subprocess.run([cc, "-M"] + list(cflags(src)) + [src], cwd=TOP, capture_output=True,
                       text=True)
    check(p.returncode == 0, "%s does not compile with its module's includes: %s"
          % (src, p.stderr[-400:]))
    deps = p.stdout.replace("\\\n", " ").split(":", 1)[1].split()
    return tuple(os.path.normpath(os.path.join(TOP, d)) for d in deps)


def case_io_free_cores():
    bad = []
    for src in sorted(IO_FREE):
        for h in headers(src):
            if any(x in h for x in IO_HEADERS):
                bad.append("%s includes %s" % (src, h))
    check(not bad, "\n".join(bad[:20]))


def case_every_module_compiles_with_its_list():
    srcs = [s for m in PRODUCT for ext in ("c", "cc") for s in glob.glob(m + "/*." + ext,
                                                                        root_dir=TOP)]
    check(len(srcs) > 60, "found only %d sources" % len(srcs))
    for src in srcs:
        headers(src)


def case_election_does_not_reach_the_daemon():
    bad = []
    for src in sorted(glob.glob("election/*.c", root_dir=TOP)):
        for h in headers(src):
            rel = os.path.relpath(h, TOP)
            if rel.startswith(DAEMON_DIRS):
                bad.append("%s includes %s" % (src, rel))
    check(not bad, "\n".join(bad))


def case_file_and_folder_sizes():
    big = []
    for m in PRODUCT:
        for f in glob.glob(m + "/*.[ch]", root_dir=TOP) + glob.glob(m + "/*.cc", root_dir=TOP):
            with open(os.path.join(TOP, f), errors="replace") as fh:
                n = sum(1 for _ in fh)
            if n > 1000:
                big.append("%s: %d lines" % (f, n))
        nc = len(glob.glob(m + "/*.c", root_dir=TOP))
        if nc > 20:
            big.append("%s: %d C files" % (m, nc))
    check(not big, "\n".join(big))


def include_list(folder):
    """The module folders (and gen) on a module's include list."""
    out = []
    for f in _cflags(folder, ".c"):
        if not f.startswith("-I"):
            continue
        d = os.path.normpath(f[2:])
        if os.path.isabs(d):
            continue  # system packages (pkg-config)
        if d == os.path.normpath(os.path.relpath(os.path.join(BUILD, "gen"), TOP)):
            d = "gen"
        out.append(d)
    return out


def case_module_readmes():
    bad = []
    for m in PRODUCT:
        path = os.path.join(TOP, m, "README.md")
        if not os.path.exists(path):
            bad.append("%s: no README.md (what the folder owns and may include)" % m)
            continue
        text = open(path).read()
        if not text.startswith("# %s/ " % m):
            bad.append("%s/README.md: the first line is not '# %s/ - ...'" % (m, m))
        lines = [ln for ln in text.splitlines() if ln.startswith("May include: ")]
        if len(lines) != 1:
            bad.append("%s/README.md: want one 'May include:' line" % m)
            continue
        said = [x.strip() for x in lines[0][len("May include: "):].split(",")]
        want = include_list(m)
        if sorted(said) != sorted(want):
            bad.append("%s/README.md says it may include %s; the Makefile's list is %s"
                       % (m, said, want))
    check(not bad, "\n".join(bad))


t = Tap()
t.case("I/O-free cores include no libevent, curl or nghttp2 header", case_io_free_cores)
t.case("every product source compiles with its module's include list",
       case_every_module_compiles_with_its_list)
t.case("election/ reaches nothing under controlplane/ (daemon, kube client, writers, xDS)",
       case_election_does_not_reach_the_daemon)
t.case("no product file over 1,000 lines, no folder over 20 C files", case_file_and_folder_sizes)
t.case("every module folder's README.md says what it owns and matches its include list",
       case_module_readmes)
t.done()
