"""deploy/Dockerfile, checked without a Docker engine (none runs here):
every package it names exists in this Debian bookworm; the build stage has
mk/deps.sh's build packages; the runtime stage has exactly the libraries the
Makefile links (one package per -l) and every library `ldd` finds in the
built binary; it runs as the non-root user the chart expects; its COPY
lines bring every source directory the Makefile compiles; and the build
stage's make command is a real target that builds the binary.

Not proven here: that `docker build` succeeds (no engine) — the image's
content is derived from the same package names and make target that this
machine's own build uses."""
import os
import re
import shlex
import subprocess
import sys

import yaml

TOP = os.environ.get("COXSWAIN_TOP", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BUILD = os.environ.get("COXSWAIN_BUILD", os.path.join(TOP, "build"))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))

from tap import Tap, check, check_eq  # noqa: E402

t = Tap()
DOCKERFILE = os.path.join(TOP, "deploy", "Dockerfile")
MULTIARCH = subprocess.run(["gcc", "-print-multiarch"], capture_output=True,
                           text=True).stdout.strip() or "x86_64-linux-gnu"
IN_BASE_IMAGE = {"libc6"}  # essential in debian:bookworm-slim


def parse_dockerfile():
    """Returns a list of stages: {"from", "name", "instructions": [(op, arg)]}."""
    text = open(DOCKERFILE).read().replace("\\\n", " ")
    stages = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        op, _, arg = line.partition(" ")
        op = op.upper()
        if op == "FROM":
            parts = arg.split()
            stages.append({"from": parts[0], "name": parts[2] if len(parts) > 2 else None,
                           "instructions": []})
        elif stages:
            stages[-1]["instructions"].append((op, arg.strip()))
    return stages


STAGES = parse_dockerfile()


def apt_installs(stage):
    pkgs = []
    for op, arg in stage["instructions"]:
        if op != "RUN" or "apt-get install" not in arg:
            continue
        seg = arg.split("apt-get install", 1)[1].split("&&")[0]
        pkgs += [w for w in shlex.split(seg) if not w.startswith("-")]
    return pkgs


def deps_build_group():
    """The packages of the '# build' group at the top of mk/deps.sh."""
    text = open(os.path.join(TOP, "mk", "deps.sh")).read()
    block = text.split("PKGS=(", 1)[1].split(")", 1)[0]
    out, on = [], False
    for line in block.splitlines():
        s = line.strip()
        if s.startswith("#"):
            on = s == "# build"
            continue
        if on:
            out += s.split("#")[0].split()
    return out


def makefile_var(name):
    text = open(os.path.join(TOP, "Makefile")).read().replace("\\\n", " ")
    m = re.search(r"^%s\s*:?=\s*(.*)$" % name, text, re.M)
    return m.group(1).split()


def packages_of(paths):
    """{path: Debian package owning it}, with one dpkg -S call (tolerant of
    usrmerge: /usr/lib/... may be registered as /lib/...)."""
    reals = {p: os.path.realpath(p) for p in paths}
    names = sorted({os.path.basename(r) for r in reals.values()})
    out = subprocess.run(["dpkg", "-S"] + names, capture_output=True, text=True).stdout
    owner = {}
    for line in out.splitlines():
        pkg, _, f = line.partition(": ")
        if MULTIARCH in f:
            owner.setdefault(os.path.basename(f), pkg.split(":")[0])
    res = {}
    for p, r in reals.items():
        b = os.path.basename(r)
        if b not in owner:
            raise AssertionError("no package owns %s" % p)
        res[p] = owner[b]
    return res


def case_two_stages_on_bookworm_slim():
    check_eq(len(STAGES), 2)
    args = {}
    for line in open(DOCKERFILE):
        m = re.match(r"ARG (\w+)=(\S+)", line)
        if m:
            args[m.group(1)] = m.group(2)
    for s in STAGES:
        base = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], s["from"])
        check_eq(base, "debian:bookworm-slim")
    check_eq(STAGES[0]["name"], "build")
    osr = open("/etc/os-release").read()
    check("VERSION_CODENAME=bookworm" in osr, "package checks need a bookworm machine")


def case_packages_exist_in_bookworm():
    pkgs = apt_installs(STAGES[0]) + apt_installs(STAGES[1])
    q = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${Status}\\n"] + pkgs,
                       capture_output=True, text=True).stdout
    installed = {l.split()[0] for l in q.splitlines() if l.endswith("install ok installed")}
    rest = [p for p in pkgs if p not in installed]
    if rest:  # not installed here: ask apt whether bookworm has them
        pol = subprocess.run(["apt-cache", "policy"] + rest, capture_output=True,
                             text=True).stdout
        for pkg in rest:
            m = re.search(r"^%s:\n\s+Installed: .*\n\s+Candidate: (\S+)" % re.escape(pkg),
                          pol, re.M)
            check(m and m.group(1) != "(none)", "%s is not a bookworm package here" % pkg)
    check(len(pkgs) >= 20, pkgs)


def case_build_stage_has_deps_build_group():
    build = set(apt_installs(STAGES[0]))
    missing = set(deps_build_group()) - build
    check(not missing, "build stage lacks %s (mk/deps.sh build group)" % sorted(missing))
    check("libc6-dev" in build)


def product_binary():
    """The coxswain binary as the image and the Dockerfile build it: this
    run's, or under the sanitizer runs the plain build's (a sanitizer link
    keeps libraries a plain one drops, e.g. libevent_pthreads), built here
    if that run has not built it."""
    if os.environ.get("COXSWAIN_SANITIZE", "0") == "0":
        exe = os.path.join(BUILD, "bin", "coxswain")
        check(os.path.exists(exe), "build/bin/coxswain is built by make test first")
        return exe
    exe = os.path.join(TOP, "build", "bin", "coxswain")
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "BUILD", "SANITIZE")}
    p = subprocess.run(["make", "-j2", "build/bin/coxswain"], cwd=TOP, capture_output=True,
                       text=True, env=env, timeout=900)
    check_eq(p.returncode, 0, p.stderr[-2000:])
    return exe


def case_runtime_libs_match_the_image():
    # the packages `make image` installs: those shipping the libraries the
    # binary links (deploy/image/build.sh derives them with ldd and dpkg -S)
    exe = product_binary()
    p = subprocess.run([os.path.join(TOP, "deploy", "image", "build.sh"), "--binary", exe,
                        "--print-packages"], capture_output=True, text=True, timeout=120)
    check_eq(p.returncode, 0, p.stderr)
    want = {x for x in p.stdout.split() if not sanitizer_pkg(x)}
    check("libcurl4" in want and "libssl3" in want, want)
    runtime = set(apt_installs(STAGES[1])) - {"ca-certificates"}
    check_eq(sorted(runtime), sorted(want - IN_BASE_IMAGE))
    # and every -l of the Makefile's pkg-config list that the binary keeps
    # (the linker drops unused ones) is among them
    libs = subprocess.run(["pkg-config", "--libs"] + makefile_var("PKGS"), capture_output=True,
                          text=True, check=True).stdout.split()
    dyn = subprocess.run(["readelf", "-d", exe], capture_output=True, text=True,
                         check=True).stdout
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[(\S+)\]", dyn))
    sos = []
    for flag in libs:
        if not flag.startswith("-l"):
            continue
        so = "/usr/lib/%s/lib%s.so" % (MULTIARCH, flag[2:])
        check(os.path.exists(so), "%s missing" % so)
        soname = re.search(r"\(SONAME\)\s+Library soname: \[(\S+)\]", subprocess.run(
            ["readelf", "-d", so], capture_output=True, text=True, check=True).stdout)
        if soname and soname.group(1) in needed:
            sos.append(so)
    check(len(sos) >= 8, sos)
    check(set(packages_of(sos).values()) <= want | IN_BASE_IMAGE)


def dep_closure(pkgs):
    """Installed packages reachable through Depends/Pre-Depends from pkgs
    (what apt installs along with them), from this machine's dpkg database."""
    seen, todo = set(), list(pkgs)
    while todo:
        batch = [p for p in set(todo) if p not in seen]
        todo = []
        if not batch:
            break
        seen.update(batch)
        out = subprocess.run(["dpkg-query", "-W", "-f=${Package}\t${Depends}, ${Pre-Depends}\\n"]
                             + batch, capture_output=True, text=True).stdout
        for line in out.splitlines():
            _, _, deps = line.partition("\t")
            for alt in deps.split(","):
                for choice in alt.split("|"):
                    name = choice.strip().split(" ")[0].split(":")[0]
                    if name:
                        todo.append(name)
                        break  # the first alternative, as apt prefers
    return seen


def sanitizer_pkg(pkg):
    return os.environ.get("COXSWAIN_SANITIZE", "0") != "0" and \
        re.match(r"lib(asan|ubsan)\d+$", pkg)


def case_runtime_covers_ldd():
    exe = product_binary()
    runtime = set(apt_installs(STAGES[1]))
    # the binary's own NEEDED libraries come from packages the runtime stage
    # names (or the base image's libc)
    dyn = subprocess.run(["readelf", "-d", exe], capture_output=True, text=True,
                         check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(\S+)\]", dyn)
    check(needed, dyn)
    ldd = subprocess.run(["ldd", exe], capture_output=True, text=True, check=True).stdout
    where = dict(re.findall(r"^\s*(\S+) => (\S+) \(", ldd, re.M))
    owners = packages_of(list(where.values()))
    for lib in needed:
        check(lib in where, "%s not resolved by ldd" % lib)
        pkg = owners[where[lib]]
        if sanitizer_pkg(pkg):
            continue  # the test build's sanitizer runtime, not in the image's build
        check(pkg in runtime | IN_BASE_IMAGE,
              "%s (NEEDED, from %s) is not installed in the runtime stage" % (lib, pkg))
    # every library loaded transitively comes with those packages' dependencies
    sanitizers = {p for p in owners.values() if sanitizer_pkg(p)}
    closure = dep_closure(runtime | IN_BASE_IMAGE | sanitizers)
    for path, pkg in owners.items():
        if sanitizer_pkg(pkg):
            continue
        check(pkg in closure, "%s (from %s) would be missing in the image" % (path, pkg))
    check(not any(p.endswith("-dev") for p in dep_closure(runtime)), "a -dev package at run time")


def case_runtime_user_entrypoint():
    ins = STAGES[1]["instructions"]
    users = [a for op, a in ins if op == "USER"]
    check_eq(users, ["65532:65532"])
    values = yaml.safe_load(open(os.path.join(TOP, "deploy", "helm", "coxswain", "values.yaml")))
    check_eq(values["podSecurityContext"]["runAsUser"], 65532)
    check_eq(values["podSecurityContext"]["runAsGroup"], 65532)
    check_eq([a for op, a in ins if op == "ENTRYPOINT"], ['["/usr/local/bin/coxswain"]'])
    check_eq([a for op, a in ins if op == "CMD"], ['["run"]'])
    copies = [a for op, a in ins if op == "COPY"]
    check_eq(copies, ["--from=build /src/build/bin/coxswain /usr/local/bin/coxswain"])
    exposed = " ".join(a for op, a in ins if op == "EXPOSE").split()
    check_eq(sorted(exposed), ["18000", "18080"])
    # glibc's heap on huge pages, as deploy/image/build.sh's image has it
    check_eq([a for op, a in ins if op == "ENV"], ["GLIBC_TUNABLES=glibc.malloc.hugetlb=1"])
    build_sh = open(os.path.join(TOP, "deploy", "image", "build.sh")).read()
    check("--config.env GLIBC_TUNABLES=glibc.malloc.hugetlb=1" in build_sh,
          "deploy/image/build.sh does not set the same GLIBC_TUNABLES")


def case_build_stage_copies_every_module():
    copied = set()
    for op, a in STAGES[0]["instructions"]:
        if op == "COPY":
            copied.update(x.rstrip("/") for x in a.split()[:-1])
    # a module folder is copied with it or with its top-level folder
    need = {m.replace("$(CP)", "controlplane").split("/")[0] for m in makefile_var("MODULES")}
    need |= {"Makefile", "api", "mk"}
    check(need <= copied, "not copied: %s" % sorted(need - copied))
    # docker build fails on a COPY whose source is missing
    for src in copied:
        check(os.path.exists(os.path.join(TOP, src)), "COPY %s: not in the checkout" % src)
    ignore = open(os.path.join(TOP, "deploy", "Dockerfile.dockerignore")).read().split()
    for x in ("build", ".git"):
        check(x in ignore, "%s not ignored" % x)
    check(not (copied & set(ignore)), "a copied path is ignored")


def case_make_target_builds_binary():
    runs = [a for op, a in STAGES[0]["instructions"]
            if op == "RUN" and re.match(r"make\s", a)]
    check_eq(len(runs), 1)
    target = re.search(r"make\s+(?:-j\S+\s+)?(\S+)", runs[0]).group(1)
    check_eq(target, "build/bin/coxswain")
    # a dry run of exactly that target in the checkout: it is a real rule
    # that links the binary and does not run the deps step (which would
    # install the test tools into the image)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "BUILD", "SANITIZE")}
    p = subprocess.run(["make", "-n", "-W", "controlplane/cli/main.c", target], cwd=TOP,
                       capture_output=True, text=True, env=env)
    check_eq(p.returncode, 0, p.stderr)
    check("-o build/bin/coxswain" in p.stdout, p.stdout[-500:])
    check("deps.sh" not in p.stdout)


t.case("two stages, both debian:bookworm-slim", case_two_stages_on_bookworm_slim)
t.case("every package named exists in Debian bookworm", case_packages_exist_in_bookworm)
t.case("build stage installs mk/deps.sh's build group", case_build_stage_has_deps_build_group)
t.case("runtime libraries = the packages make image derives from the binary",
       case_runtime_libs_match_the_image)
t.case("runtime stage provides every library ldd finds", case_runtime_covers_ldd)
t.case("non-root USER 65532 (the chart's runAsUser), coxswain run", case_runtime_user_entrypoint)
t.case("build stage copies every module the Makefile compiles", case_build_stage_copies_every_module)
t.case("the make target is real and skips the deps step", case_make_target_builds_binary)
t.done()
