"""Helpers for the chart tests: build the Helm-compatible renderer, render
the chart, and look objects up in the output.

    import helmlib as h
    r = h.render(values=["ha.yaml"], sets={"replicaCount": 5})
    r.ok, r.err, r.docs, r.get("Deployment", "coxswain")
"""
import json
import os
import subprocess
import tempfile

import yaml

TOP = os.environ.get("COXSWAIN_TOP") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("COXSWAIN_BUILD") or os.path.join(TOP, "build")
CHART = os.path.join(TOP, "deploy", "helm", "coxswain")
HA_VALUES = os.path.join(CHART, "ci", "ha-values.yaml")
RELEASE = "coxswain"
NAMESPACE = "coxswain-system"

_renderer = None


def renderer():
    """Builds tests/helm/render once per process (Go's cache keeps later
    builds under a second) and returns its path."""
    global _renderer
    if _renderer is None:
        out = subprocess.run([os.path.join(TOP, "tests", "helm", "build-render.sh")],
                             capture_output=True, text=True, timeout=300)
        if out.returncode != 0:
            raise RuntimeError("building the renderer failed:\n" + out.stderr)
        _renderer = out.stdout.strip()
    return _renderer


class Rendered:
    def __init__(self, proc):
        self.rc = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr
        self.ok = proc.returncode == 0
        self.docs = []
        if self.ok:
            self.docs = [d for d in yaml.safe_load_all(self.out) if d is not None]

    def kinds(self):
        return sorted(d["kind"] for d in self.docs)

    def all(self, kind):
        return [d for d in self.docs if d["kind"] == kind]

    def get(self, kind, name, namespace=None):
        for d in self.docs:
            md = d.get("metadata", {})
            if d["kind"] == kind and md.get("name") == name and \
                    (namespace is None or md.get("namespace") == namespace):
                return d
        raise KeyError("%s %s not rendered (have: %s)" % (kind, name, self.names()))

    def names(self):
        return ["%s/%s" % (d["kind"], d["metadata"]["name"]) for d in self.docs]

    def deployment(self):
        deps = self.all("Deployment")
        assert len(deps) == 1, "want one Deployment, got %d" % len(deps)
        return deps[0]

    def container(self):
        return self.deployment()["spec"]["template"]["spec"]["containers"][0]

    def args(self):
        """The container's flags as a dict (flag -> value); bare flags -> True."""
        out = {}
        for a in self.container()["args"][1:]:
            k, eq, v = a.partition("=")
            out[k] = v if eq else True
        return out


def render(values=(), sets=None, name=RELEASE, namespace=NAMESPACE, extra=(), chart=CHART,
           values_text=None):
    """Renders the chart. values: files; sets: {dotted.path: python value}
    (passed as --set-json); values_text: YAML written to a temporary
    values file."""
    cmd = [renderer(), "--name", name, "--namespace", namespace]
    tmp = None
    for v in values:
        cmd += ["--values", v]
    if values_text is not None:
        tmp = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        tmp.write(values_text)
        tmp.close()
        cmd += ["--values", tmp.name]
    for k, v in (sets or {}).items():
        cmd += ["--set-json", "%s=%s" % (k, json.dumps(v))]
    cmd += list(extra) + [chart]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    finally:
        if tmp is not None:
            os.unlink(tmp.name)
    return Rendered(proc)


def load_yaml_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]
