"""Generated files stay in step with their sources: deploy/manifests with a
fresh render of the chart, and the chart's crds/ with api/crds."""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

TOP = os.environ.get("COXSWAIN_TOP", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
sys.path.insert(0, os.path.join(TOP, "tests", "helm"))

import helmlib as h  # noqa: E402
from tap import SkipCase, Tap, check, check_eq  # noqa: E402

t = Tap()
GEN = os.path.join(TOP, "deploy", "gen-manifests.sh")
SYNC = os.path.join(TOP, "deploy", "sync-crds.sh")
MANIFESTS = os.path.join(TOP, "deploy", "manifests")
API_CRDS = os.path.join(TOP, "api", "crds")
CHART_CRDS = os.path.join(h.CHART, "crds")


def run(cmd, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=120)


def case_manifests_match_fresh_render():
    p = run([GEN, "--check"])
    check_eq(p.returncode, 0, "deploy/manifests is stale:\n" + p.stderr)


def case_manifests_content():
    docs = h.load_yaml_docs(os.path.join(MANIFESTS, "coxswain.yaml"))
    check_eq((docs[0]["kind"], docs[0]["metadata"]["name"]), ("Namespace", h.NAMESPACE))
    fresh = h.render()
    check(fresh.ok, fresh.err)
    check_eq(docs[1:], fresh.docs)
    crds = h.load_yaml_docs(os.path.join(MANIFESTS, "crds.yaml"))
    chart_crds = [d for f in sorted(glob.glob(os.path.join(CHART_CRDS, "*.yaml")))
                  for d in h.load_yaml_docs(f)]
    check_eq(crds, chart_crds)


def case_check_detects_tampering():
    with tempfile.TemporaryDirectory() as tmp:
        for f in ("crds.yaml", "coxswain.yaml"):
            shutil.copy(os.path.join(MANIFESTS, f), tmp)
        with open(os.path.join(tmp, "coxswain.yaml")) as f:
            text = f.read()
        with open(os.path.join(tmp, "coxswain.yaml"), "w") as f:
            f.write(text.replace("replicas: 3", "replicas: 2"))
        p = run([GEN, "--check"], {"MANIFESTS_DIR": tmp})
        check(p.returncode != 0, "a hand-edited manifest passed the check")
        check("coxswain.yaml is not what the chart renders now" in p.stderr, p.stderr)
        check("-  replicas: 2" in p.stderr and "+  replicas: 3" in p.stderr, p.stderr)
        # regenerating repairs it
        p = run([GEN], {"MANIFESTS_DIR": tmp})
        check_eq(p.returncode, 0, p.stderr)
        check_eq(run([GEN, "--check"], {"MANIFESTS_DIR": tmp}).returncode, 0)


def case_chart_crds_equal_api_crds():
    if not os.path.isdir(API_CRDS):
        raise SkipCase("api/crds has not landed yet (the translator's CRDs); "
                       "deploy/sync-crds.sh --check runs once it has")
    p = run([SYNC, "--check"])
    check_eq(p.returncode, 0, p.stderr)
    kinds = set()
    for f in glob.glob(os.path.join(CHART_CRDS, "*.yaml")):
        for d in h.load_yaml_docs(f):
            check_eq(d["kind"], "CustomResourceDefinition")
            check_eq(d["spec"]["group"], "coxswain.dev")
            kinds.add(d["spec"]["names"]["kind"])
    check(kinds >= {"Gateway", "VirtualService", "RouteTable", "Upstream", "ProxySnapshot"},
          "CRDs in the chart: %s" % sorted(kinds))


def case_sync_script_detects_and_repairs_drift():
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "src"), os.path.join(tmp, "dst")
        os.makedirs(src)
        os.makedirs(dst)
        env = {"CRDS_SRC": src, "CRDS_DST": dst}
        for n in ("a.yaml", "b.yaml"):
            with open(os.path.join(src, n), "w") as f:
                f.write("kind: CustomResourceDefinition\nmetadata: {name: %s}\n" % n)
        p = run([SYNC, "--check"], env)
        check(p.returncode != 0 and "a.yaml" in p.stderr and "b.yaml" in p.stderr, p.stderr)
        check_eq(run([SYNC], env).returncode, 0)
        check_eq(run([SYNC, "--check"], env).returncode, 0)
        # one byte changed in the source
        with open(os.path.join(src, "b.yaml"), "a") as f:
            f.write("# changed\n")
        p = run([SYNC, "--check"], env)
        check(p.returncode != 0 and "b.yaml" in p.stderr and "a.yaml" not in p.stderr, p.stderr)
        # a CRD removed from the source is removed from the chart too
        os.unlink(os.path.join(src, "a.yaml"))
        p = run([SYNC, "--check"], env)
        check(p.returncode != 0 and "a.yaml (not in" in p.stderr, p.stderr)
        check_eq(run([SYNC], env).returncode, 0)
        check_eq(sorted(os.listdir(dst)), ["b.yaml"])
        check_eq(run([SYNC, "--check"], env).returncode, 0)
        p = run([SYNC], {"CRDS_SRC": os.path.join(tmp, "none"), "CRDS_DST": dst})
        check(p.returncode != 0 and "does not exist" in p.stderr, p.stderr)


t.case("deploy/manifests equals a fresh render (gen-manifests --check)",
       case_manifests_match_fresh_render)
t.case("manifests: Namespace, then the chart's objects; CRDs from the chart",
       case_manifests_content)
t.case("gen-manifests --check fails on a hand-edited manifest, regenerating repairs",
       case_check_detects_tampering)
t.case("chart crds/ identical to api/crds (sync-crds --check)", case_chart_crds_equal_api_crds)
t.case("sync-crds finds changed, missing and extra CRDs and repairs them",
       case_sync_script_detects_and_repairs_drift)
t.done()
