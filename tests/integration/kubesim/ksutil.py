"""Shared helpers of kubesim's own tests (not a test program)."""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))

from kubesim import KubeSim, KubeSimError, kubectl_binary  # noqa: E402,F401
from tap import Tap, check, check_eq  # noqa: E402,F401

DATA = os.path.join(os.environ.get("CXT_DATA_DIR", os.path.join(TOP, "tests", "data")), "kubesim")

_UID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}')
_TS = re.compile(r'"(creationTimestamp|deletionTimestamp|lastTransitionTime)":"[0-9TZ:-]+"')


def normalize(text):
    """Masks the values that differ between runs (uids, timestamps)."""
    text = _UID.sub('<uid>', text)
    return _TS.sub(lambda m: '"%s":"<time>"' % m.group(1), text)


def golden(name, actual_text):
    """Compares |actual_text| (normalized) with tests/data/kubesim/<name>.
    KUBESIM_UPDATE_GOLDEN=1 rewrites the file instead."""
    path = os.path.join(DATA, name)
    got = normalize(actual_text)
    if os.environ.get("KUBESIM_UPDATE_GOLDEN") == "1":
        with open(path, "w") as f:
            f.write(got if got.endswith("\n") else got + "\n")
        return
    with open(path) as f:
        want = f.read()
    if got.rstrip("\n") != want.rstrip("\n"):
        raise AssertionError("golden %s differs:\n--- want\n%s\n--- got\n%s" % (name, want, got))


def raw(ks, method, path, body=None, ctype=None, headers=None):
    """(status, body text) without JSON parsing."""
    st, b = ks.request(method, path, body, ctype=ctype, headers=headers, raw=True)
    return st, b.decode()


def cm(name, data=None, labels=None, ns="default"):
    o = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}}
    if labels:
        o["metadata"]["labels"] = labels
    if data is not None:
        o["data"] = data
    return o


def lease(name, duration=15, holder="a", ns="default", **spec):
    s = {"holderIdentity": holder, "leaseDurationSeconds": duration}
    s.update(spec)
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": ns}, "spec": s}


def compact(obj):
    return json.dumps(obj, separators=(",", ":"), sort_keys=True)
