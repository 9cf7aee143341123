"""kubesim against the official Python client (Debian's python3-kubernetes),
unmodified: create, list, watch from a resourceVersion, replace with a stale
resourceVersion (ApiException 409), leases, and its leaderelection module
electing a leader on a ConfigMap lock, with failover when the leader dies.
"""
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

from ksutil import KubeSim, Tap, check, check_eq

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

t = Tap()
ks = KubeSim()
config.load_kube_config(config_file=ks.kubeconfig)
core = client.CoreV1Api()
coord = client.CoordinationV1Api()


def body(name, data):
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels={"src": "py"}), data=data)


def create_list_read():
    o = core.create_namespaced_config_map("default", body("py-1", {"a": "1"}))
    check_eq(o.metadata.name, "py-1")
    check(o.metadata.uid and o.metadata.resource_version)
    lst = core.list_namespaced_config_map("default", label_selector="src=py")
    check_eq([i.metadata.name for i in lst.items], ["py-1"])
    check(int(lst.metadata.resource_version) >= int(o.metadata.resource_version))
    lst = core.list_config_map_for_all_namespaces(field_selector="metadata.name=py-1")
    check_eq(len(lst.items), 1)
    empty = core.list_namespaced_config_map("kube-public")
    check_eq(empty.items, [])
    r = core.read_namespaced_config_map("py-1", "default")
    check_eq(r.data, {"a": "1"})
    try:
        core.read_namespaced_config_map("missing", "default")
        check(False, "expected 404")
    except ApiException as e:
        check_eq(e.status, 404)
        check_eq(json.loads(e.body)["reason"], "NotFound")


def replace_stale_is_409():
    cur = core.read_namespaced_config_map("py-1", "default")
    stale = core.read_namespaced_config_map("py-1", "default")
    cur.data = {"a": "2"}
    core.replace_namespaced_config_map("py-1", "default", cur)
    stale.data = {"a": "stale"}
    try:
        core.replace_namespaced_config_map("py-1", "default", stale)
        check(False, "expected a conflict")
    except ApiException as e:
        check_eq(e.status, 409)
        check_eq(json.loads(e.body)["reason"], "Conflict")
    check_eq(core.read_namespaced_config_map("py-1", "default").data, {"a": "2"})


def watch_from_rv():
    start = core.read_namespaced_config_map("py-1", "default").metadata.resource_version
    w = watch.Watch()
    seen = []

    def writer():
        time.sleep(0.3)
        for v in ("3", "4"):
            cur = core.read_namespaced_config_map("py-1", "default")
            cur.data = {"a": v}
            core.replace_namespaced_config_map("py-1", "default", cur)
        core.delete_namespaced_config_map("py-1", "default")
    th = threading.Thread(target=writer)
    th.start()
    for ev in w.stream(core.list_namespaced_config_map, "default", resource_version=start,
                       timeout_seconds=5):
        seen.append((ev["type"], ev["object"].metadata.name, (ev["object"].data or {}).get("a")))
        if ev["type"] == "DELETED":
            w.stop()
    th.join()
    check_eq(seen, [("MODIFIED", "py-1", "3"), ("MODIFIED", "py-1", "4"), ("DELETED", "py-1", "4")])


def leases():
    spec = client.V1LeaseSpec(holder_identity="me", lease_duration_seconds=10)
    lease = client.V1Lease(metadata=client.V1ObjectMeta(name="py-lease"), spec=spec)
    o = coord.create_namespaced_lease("default", lease)
    check_eq(o.spec.holder_identity, "me")
    o.spec.holder_identity = "you"
    o2 = coord.replace_namespaced_lease("py-lease", "default", o)
    check_eq(o2.spec.holder_identity, "you")
    check(int(o2.metadata.resource_version) > int(o.metadata.resource_version))


CANDIDATE = textwrap.dedent("""
    import sys, time, logging
    logging.disable(logging.CRITICAL)
    from kubernetes import config
    from kubernetes.leaderelection import leaderelection, electionconfig
    from kubernetes.leaderelection.resourcelock.configmaplock import ConfigMapLock
    config.load_kube_config(config_file=sys.argv[1])
    ident = sys.argv[2]
    def started():
        print("LEADING " + ident, flush=True)
    def stopped():
        print("STOPPED " + ident, flush=True)
    cfg = electionconfig.Config(ConfigMapLock("py-leader", "default", ident), lease_duration=3,
                                renew_deadline=2, retry_period=1, onstarted_leading=started,
                                onstopped_leading=stopped)
    leaderelection.LeaderElection(cfg).run()
""")


def wait_line(proc, prefix, timeout):
    """Reads proc's stdout until a line starting with prefix (or timeout)."""
    deadline = time.monotonic() + timeout
    result = {}

    def reader():
        for line in proc.stdout:
            if line.startswith(prefix):
                result["line"] = line.strip()
                return
    th = threading.Thread(target=reader, daemon=True)
    th.start()
    th.join(max(0, deadline - time.monotonic()))
    return result.get("line")


def holder():
    cm = core.read_namespaced_config_map("py-leader", "default")
    rec = json.loads(cm.metadata.annotations["control-plane.alpha.kubernetes.io/leader"])
    return rec


def leader_election_configmap_lock():
    procs = []
    try:
        a = subprocess.Popen([sys.executable, "-c", CANDIDATE, ks.kubeconfig, "cand-a"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(a)
        check(wait_line(a, "LEADING", 15) == "LEADING cand-a", "first candidate leads")
        b = subprocess.Popen([sys.executable, "-c", CANDIDATE, ks.kubeconfig, "cand-b"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(b)
        rec = holder()
        check_eq(rec["holderIdentity"], "cand-a")
        check_eq(rec["leaseDurationSeconds"], "3", "the Python client writes a string")
        rv1 = core.read_namespaced_config_map("py-leader", "default").metadata.resource_version
        time.sleep(2.2)
        rv2 = core.read_namespaced_config_map("py-leader", "default").metadata.resource_version
        check(int(rv2) > int(rv1), "the leader renews (new RVs)")
        check_eq(holder()["holderIdentity"], "cand-a", "the follower does not steal a live lease")
        a.send_signal(signal.SIGKILL)
        a.wait()
        t0 = time.monotonic()
        line = wait_line(b, "LEADING", 15)
        took = time.monotonic() - t0
        check_eq(line, "LEADING cand-b")
        check(took < 10, "failover within lease duration + polling: %.1fs" % took)
        check_eq(holder()["holderIdentity"], "cand-b")
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait()
            p.stdout.close()


try:
    for c in [create_list_read, replace_stale_is_409, watch_from_rv, leases,
              leader_election_configmap_lock]:
        t.case(c.__name__, c)
finally:
    rc = ks.close()
t.case("clean shutdown", lambda: check_eq(rc, 0))
t.done()
