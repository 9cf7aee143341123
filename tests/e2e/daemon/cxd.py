"""Moved: the processes to tests/lib/replicas.py, the objects to
tests/lib/objects.py, the audit analysis to tests/lib/audit.py. These names
stay importable from here while tests move over."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))), "tests", "lib"))

from audit import (configmap_lock_timeline, holder_at, identity_of,  # noqa: E402,F401
                   leader_only_writes, lease_timeline)
from objects import (GROUP, PLURAL, Api, crd_files, endpoint_slice, gateway,  # noqa: E402,F401
                     namespace, obj_path, route, service, start_kubesim, status_converged,
                     upstream_kube, upstream_static, virtual_service, yaml_docs)
from replicas import (TOP, Replica, build_dir, coxswain, leaders, mono,  # noqa: E402,F401
                      parse_metrics, sanitized, wait_for, wait_leader, wait_ready, writers_idle)
