"""`coxswain run` as an operator meets it before anything happens: every
metric the docs name is on a fresh replica's /metrics with HELP and TYPE
(and promtool accepts the exposition), `run --help` documents the exit
statuses, and the statuses hold: 2 for every bad flag (the lease rules, a
lease that is not a whole number of seconds, a selector, a namespace name),
1 when start-up fails (a port that cannot be listened on, with the reason),
0 after SIGTERM."""
import os
import re
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib"))
import objects as O  # noqa: E402
import replicas as R  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

DOC_METRIC = re.compile(r"\b((?:coxswain|leader_election)_[a-z0-9_]*[a-z0-9])\b")
HIST_PARTS = ("_bucket", "_sum", "_count")


def documented_metrics():
    """Every metric name in docs/*.md and README.md."""
    names = set()
    files = [os.path.join(R.TOP, "README.md")]
    ddir = os.path.join(R.TOP, "docs")
    files += [os.path.join(ddir, f) for f in sorted(os.listdir(ddir)) if f.endswith(".md")]
    for path in files:
        with open(path, errors="replace") as f:
            text = f.read()
        names.update(m.group(1) for m in DOC_METRIC.finditer(text))
    return names


def family_of(name, families):
    """|name|'s family: itself, or the histogram a _bucket/_sum/_count
    sample belongs to."""
    if name in families:
        return name
    for suf in HIST_PARTS:
        if name.endswith(suf) and name[:-len(suf)] in families:
            return name[:-len(suf)]
    return None


def run(args, timeout=20, env=None):
    e = dict(os.environ)
    e.pop("POD_NAMESPACE", None)
    if env:
        e.update(env)
    return subprocess.run([R.coxswain()] + args, capture_output=True, text=True,
                          timeout=timeout, env=e, stdin=subprocess.DEVNULL)


def case_documented_metrics_present(ks):
    rep = R.Replica(ks, "fresh")
    try:
        # At once, before any sync, snapshot, NACK, stepdown or certificate.
        text = rep.metrics_text()
        families = set(re.findall(r"^# TYPE (\S+) ", text, re.M))
        helps = set(re.findall(r"^# HELP (\S+) ", text, re.M))
        docs = documented_metrics()
        check(len(docs) > 40, "found only %d documented metrics" % len(docs))
        missing = sorted(n for n in docs if family_of(n, families) is None or
                         family_of(n, helps) is None)
        check(not missing, "documented but not on a fresh replica's /metrics: %s" % missing)
        for n in ("coxswain_xds_nacks_total", "coxswain_leader_election_stepdowns_total",
                  "coxswain_tls_certificate_expiry_timestamp_seconds",
                  "coxswain_kube_request_errors_total", "coxswain_kube_client_throttle_seconds"):
            check(n in families, n)
        r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                           text=True, timeout=30)
        # promtool lints too (exit 3 for lint findings only); problems with
        # the format itself are exit 1.
        check(r.returncode in (0, 3), "promtool: %s%s" % (r.stdout, r.stderr))
    finally:
        rep.stop()


def case_help_documents_exit_status():
    r = run(["run", "--help"])
    check_eq(r.returncode, 0)
    m = re.search(r"Exit status: (.*?)(\n\n|\Z)", r.stdout, re.S)
    check(m, "no exit status in run --help:\n" + r.stdout[:800])
    text = " ".join(m.group(1).split())
    for want in ("0 after a clean shutdown", "1 when start-up fails", "2 for a bad flag"):
        check(want in text, "%r not in %r" % (want, text))


def case_flag_errors_exit_2(ks):
    base = ["run", "--kubeconfig", ks.kubeconfig, "--xds-listen", "127.0.0.1:0",
            "--admin-listen", "127.0.0.1:0"]
    cases = [
        (["--no-such-flag"], "no-such-flag"),
        (["--debounce", "soon"], "debounce"),
        (["--leader-elect-lease-duration", "5s", "--leader-elect-renew-deadline", "5s"],
         "leaseDuration must be greater than renewDeadline"),
        (["--leader-elect-renew-deadline", "2s", "--leader-elect-retry-period", "2s"],
         "renewDeadline must be greater than 1.2 x retryPeriod"),
        (["--leader-elect-lease-duration", "15500ms"], "not a whole number of seconds"),
        (["--virtualservice-label-selector", "a b c"], "--virtualservice-label-selector"),
        (["--namespace", "Not_A_Namespace"], "Not_A_Namespace"),
        (["--kube-api-qps", "0"], "kube-api-qps"),
    ]
    for extra, msg in cases:
        r = run(base + extra)
        check_eq(r.returncode, 2, "%s: %s" % (extra, r.stderr))
        check(msg in r.stderr, "%s: %r not in %r" % (extra, msg, r.stderr))


def case_startup_failures_exit_1(ks):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    busy = s.getsockname()[1]
    try:
        r = run(["run", "--kubeconfig", ks.kubeconfig, "--xds-listen", "127.0.0.1:0",
                 "--admin-listen", "127.0.0.1:%d" % busy, "--leader-elect=false"])
        check_eq(r.returncode, 1, r.stderr)
        check("cannot listen on 127.0.0.1:%d for the admin server: Address already in use"
              % busy in r.stderr, r.stderr)
        r = run(["run", "--kubeconfig", ks.kubeconfig, "--xds-listen", "127.0.0.1:0",
                 "--admin-listen", "192.0.2.1:0", "--leader-elect=false"])
        check_eq(r.returncode, 1, r.stderr)
        check("cannot listen on 192.0.2.1:0 for the admin server: Cannot assign requested "
              "address" in r.stderr, r.stderr)
        r = run(["run", "--kubeconfig", "/nonexistent/kubeconfig"])
        check_eq(r.returncode, 1, r.stderr)
    finally:
        s.close()


def case_sigterm_exit_0(ks):
    rep = R.Replica(ks, "term")
    R.wait_for(rep.ready, 20, what="ready")
    rc, took = rep.stop()
    check_eq(rc, 0, rep.log()[-2000:])


def main():
    t = Tap()
    ks = O.start_kubesim(**O.AS_1_28)
    try:
        api = O.Api(ks)
        O.namespace(api, "coxswain-system")
        t.case("every documented metric is on a fresh replica's /metrics (HELP, TYPE)",
               case_documented_metrics_present, ks)
        t.case("run --help documents the exit statuses", case_help_documents_exit_status)
        t.case("bad flags, lease rules and selectors exit 2", case_flag_errors_exit_2, ks)
        t.case("start-up failures exit 1 with the reason", case_startup_failures_exit_1, ks)
        t.case("SIGTERM exits 0", case_sigterm_exit_0, ks)
    finally:
        ks.close()
    t.done()


if __name__ == "__main__":
    main()
