"""Moved: the processes to tests/lib/replicas.py, the proxy to
tests/lib/tcpproxy.py, the audit helpers to tests/lib/audit.py. These names
stay importable from here (with their old stop() and send()) while tests
move over."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))), "tests", "lib"))

import replicas  # noqa: E402
from audit import acquisitions, lease_holder, user_agent, writes_by, writes_issued  # noqa: E402,F401
from replicas import (TOP, build_dir, coxswain, mono, parse_line, sanitized,  # noqa: E402,F401
                      write_kubeconfig)
from tcpproxy import Proxy  # noqa: E402,F401


class _Old:
    def stop(self, sig=replicas.signal.SIGTERM, timeout=10):
        return super().stop(sig, timeout)[0]

    def send(self, sig):
        self.send_signal(sig)

    def logtext(self):
        return self.log()

    def http(self, path):
        st, body = super().http(path, timeout=5)
        return st, body.decode(errors="replace")


class Elector(_Old, replicas.Elector):
    pass


class PyElector(_Old, replicas.PyElector):
    pass
