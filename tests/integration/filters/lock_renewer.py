"""Renews two election locks every 2 s against an API server, the way real
peers do, for test_filter_lock_soak:

- a ConfigMap lock, held by the official Python client's leader elector
  (kubernetes.leaderelection, ConfigMapLock: the record lives in the
  control-plane.alpha.kubernetes.io/leader annotation), retry period 2 s;
- a coordination.k8s.io/v1 Lease, whose spec.renewTime we rewrite every
  2 s (this client version has no Lease lock).

usage: lock_renewer.py KUBECONFIG NAMESPACE CONFIGMAP LEASE COUNT_FILE

COUNT_FILE gets "configmap=N lease=M" after every successful renewal.
Runs until killed.
"""
import datetime
import logging
import os
import sys
import threading
import time

from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.configmaplock import ConfigMapLock

PERIOD = 2.0
counts = {"configmap": 0, "lease": 0}
lock = threading.Lock()


def publish(path):
    # both renewers publish: one at a time, so the rename never races
    with lock:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write("configmap=%d lease=%d\n" % (counts["configmap"], counts["lease"]))
        os.replace(tmp, path)


class CountingConfigMapLock(ConfigMapLock):
    def __init__(self, name, namespace, identity, path):
        super().__init__(name, namespace, identity)
        self.path = path

    def create(self, name, namespace, election_record):
        ok = super().create(name, namespace, election_record)
        if ok:
            self._count()
        return ok

    def update(self, name, namespace, updated_record):
        ok = super().update(name, namespace, updated_record)
        if ok:
            self._count()
        return ok

    def _count(self):
        with lock:
            counts["configmap"] += 1
        publish(self.path)


def micro_time():
    # Lease times are MicroTime: 6 fractional digits, UTC, "Z"
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease_loop(ns, name, path):
    api = client.CoordinationV1Api()
    acquired = micro_time()
    spec = {"holderIdentity": "py-renewer", "leaseDurationSeconds": 15,
            "acquireTime": acquired, "renewTime": acquired, "leaseTransitions": 0}
    try:
        api.create_namespaced_lease(ns, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                         "metadata": {"name": name}, "spec": spec})
        with lock:
            counts["lease"] += 1
        publish(path)
    except ApiException as e:
        if e.status != 409:
            raise
    while True:
        time.sleep(PERIOD)
        try:
            cur = api.read_namespaced_lease(name, ns)
            spec["renewTime"] = micro_time()
            api.replace_namespaced_lease(name, ns, {
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "namespace": ns,
                             "resourceVersion": cur.metadata.resource_version},
                "spec": spec})
            with lock:
                counts["lease"] += 1
            publish(path)
        except Exception as e:  # noqa: BLE001 - keep renewing whatever happened
            logging.warning("lease renewal failed: %s", e)


def main():
    kubeconfig, ns, cm_name, lease_name, path = sys.argv[1:6]
    # the elector module configures INFO logging on import: one line per renewal
    logging.getLogger().setLevel(logging.WARNING)
    config.load_kube_config(config_file=kubeconfig)
    publish(path)
    threading.Thread(target=lease_loop, args=(ns, lease_name, path), daemon=True).start()
    cm_lock = CountingConfigMapLock(cm_name, ns, "py-elector", path)
    cfg = electionconfig.Config(cm_lock, lease_duration=15, renew_deadline=10,
                                retry_period=int(PERIOD),
                                onstarted_leading=lambda: None,
                                onstopped_leading=lambda: None)
    while True:
        leaderelection.LeaderElection(cfg).run()
        time.sleep(PERIOD)


if __name__ == "__main__":
    main()
