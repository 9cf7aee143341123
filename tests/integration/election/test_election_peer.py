"""Proof of death (the peer liveness channel) with real `coxswain elect`
processes on kubesim at a 15 s lease (renew 10 s, retry 2 s): the leader
advertises its peer endpoint in the Lease; kill -9 of the leader gives a
new leader within about a second (cause proof-of-death), and every standby
finds the proof; SIGSTOP of the leader gives no takeover before its lease
(its connections stay open); a partition between the replicas only (a
middlebox that closes the peer connections and resets new ones, or one
that goes silent) gives no takeover while the leader renews; a leader
restarted on the same address is proven dead by the new process's other
identity; an advertised endpoint nobody answers (the port blocked) falls
back to the lease; a replica with no address to advertise opens no
listener, says so once (log, /debug/leader, metric), still proves an
advertising leader's death, and is replaced by lease expiry. Guarded writes: none of an old leader after the new
one's first lock write.
"""
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))), "tests", "lib"))
import replicas  # noqa: E402
from audit import lease_holder, writes_by  # noqa: E402
from kubesim import KubeSim  # noqa: E402
from replicas import Elector  # noqa: E402
from tcpproxy import Proxy  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

SLACK = 3 if replicas.sanitized() else 1
LEASE = ("15s", "10s", "2s")
PEER = ["--leader-elect-peer-listen", "127.0.0.1:0"]


def note(fmt, *args):
    print("# " + (fmt % args), flush=True)


def leader_of(electors, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        leading = [e for e in electors if e.alive() and e.leading()]
        if len(leading) == 1:
            return leading[0]
        time.sleep(0.02)
    raise AssertionError("no single leader: %s" % [(e.name, e.leading()) for e in electors])


def elector(ks, name, extra=PEER):
    # POD_IP never comes from the test's own environment
    return Elector(ks, name, lease=LEASE[0], renew=LEASE[1], retry=LEASE[2], admin=True,
                   extra=list(extra), env={"POD_IP": ""})


def peer(e):
    """The elector's peer channel as /debug/leader shows it."""
    return json.loads(e.debug("leader"))["peer"]


def wait_for(pred, what, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.02)
    raise AssertionError("not within %.0f s: %s" % (timeout, what))


def renewed(ks, timeout=5.0):
    """Waits for the next renewal of the Lease (its renewTime changes)."""
    first = lease_holder(ks)[1]["spec"].get("renewTime")
    wait_for(lambda: lease_holder(ks)[1]["spec"].get("renewTime") != first, "a renewal",
             timeout)


def takeovers(e, cause):
    for line in e.http("/metrics")[1].decode().splitlines():
        if line.startswith("coxswain_leader_election_takeovers_total{") and \
                'cause="%s"' % cause in line:
            return float(line.rsplit(" ", 1)[1])
    return None


def gauge(e, name):
    for line in e.http("/metrics")[1].decode().splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return None


def listening_ports(pid):
    """The TCP ports process |pid| listens on (its sockets in LISTEN)."""
    inodes = set()
    fd_dir = "/proc/%d/fd" % pid
    for fd in os.listdir(fd_dir):
        try:
            link = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if cols[3] == "0A" and cols[9] in inodes:
                    ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    return ports


def no_overlap(ks, old, new, after_ns):
    audit = ks.audit()
    acq = None
    for a in audit:
        if a.get("resource") == "leases" and a.get("verb") in ("create", "update") and \
                200 <= a.get("code", 0) < 300 and a["mono_ns"] >= after_ns and \
                a.get("user", "").endswith("replica/" + new.name):
            acq = a["mono_ns"]
            break
    check(acq is not None, "no lock write by %s" % new.name)
    late = [a for a in writes_by(audit, old.name) if a["mono_ns"] >= acq]
    check(not late, "%s wrote after %s acquired: %s" % (old.name, new.name, late[:2]))


def lease_waited(ks, old, new, got):
    """Seconds from |old|'s last committed lock write (kubesim's audit log)
    to |new|'s start of leading at |got|, checked to be a whole lease: a
    standby's expiry clock starts when it sees a renewal, never before the
    write. The time from the kill or stop alone says less, as the leader
    renews every 2-2.4 s (jittered) and under load later still."""
    last = [a["mono_ns"] for a in writes_by(ks.audit(), old.name, product="coxswain-election",
                                            resource="leases") if a["mono_ns"] < got["mono"]]
    check(last, "no lock write of %s before %s led" % (old.name, new.name))
    s = (got["mono"] - max(last)) / 1e9
    check(s >= 14.95, "%s led %.2f s after %s's last renewal (lease 15 s)"
          % (new.name, s, old.name))
    return s


def run(t, ks):
    electors = [elector(ks, "p%d" % i) for i in range(3)]

    def advertised():
        lead = leader_of(electors)
        time.sleep(2.5)  # a renewal
        holder, obj = lease_holder(ks)
        check_eq(holder, lead.name, "holder")
        peer = (obj["metadata"].get("annotations") or {}).get("coxswain.dev/peer", "")
        check(peer.startswith("127.0.0.1:") and peer != "127.0.0.1:0", "advertised %r" % peer)
        # a standby's view: the leader's endpoint answers with its identity
        import socket
        host, port = peer.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=2) as s:
            s.settimeout(2)
            line = s.recv(512).decode()
        check(line.startswith("coxswain-peer/1 leader ") and line.strip().endswith(lead.name),
              line)
    t.case("the leader advertises its peer endpoint in the Lease and greets with its identity",
           advertised)

    def kill9():
        times = []
        for round_ in range(3):
            old = leader_of(electors)
            others = [e for e in electors if e is not old and e.alive()]
            # the standbys hold their connections (to the first leader, the
            # first case's own connection came first)
            want = len(others) + (1 if round_ == 0 else 0)
            wait_for(lambda: peer(old)["accepted"] >= want, "standbys' connections")
            time.sleep(1.0)
            t0 = time.monotonic_ns()
            old.send_signal(signal.SIGKILL)
            electors.remove(old)
            new = leader_of(others, timeout=20)
            got = new.wait("started-leading", after=t0, timeout=20)
            ms = (got["mono"] - t0) / 1e6
            times.append(ms)
            note("kill -9 of %s at a 15 s lease: %s leads after %.0f ms", old.name, new.name, ms)
            check(ms < 1000 * SLACK, "takeover took %.0f ms" % ms)
            check_eq(takeovers(new, "proof-of-death"), 1.0, "takeovers by proof of death")
            check("%s is dead: its connection" % old.name in new.log(), new.log_tail(8))
            # no standby gave up on the proof (a new connection reset by the
            # dying kernel is tried again, not taken for "no proof"); one
            # that saw the new holder first has nothing to prove
            for e in others:
                check("(%s) ended, but" % old.name not in e.log(),
                      "%s gave up on a proof:\n%s" % (e.name, e.log_tail(8)))
            no_overlap(ks, old, new, t0)
            old.stop()
            electors.append(elector(ks, "p%d-r%d" % (len(electors) + 1, round_)))
        note("kill -9 takeovers: %s ms", ["%.0f" % x for x in times])
    t.case("kill -9 of the leader at a 15 s lease: new leader within 1 s (proof of death)",
           kill9)

    def sigstop():
        old = leader_of(electors)
        time.sleep(2.5)
        t0 = time.monotonic_ns()
        old.send_signal(signal.SIGSTOP)
        try:
            others = [e for e in electors if e is not old]
            # the leader renews every 2-2.4 s: nobody may take over within
            # 12.6 s of the stop (lease_waited checks the exact bound)
            time.sleep(11.0)
            early = [e.name for e in others if e.alive() and e.leading()]
            check(not early, "taken over before the lease: %s" % early)
            new = leader_of(others, timeout=8)
            got = new.wait("started-leading", after=t0, timeout=8)
            s = (got["mono"] - t0) / 1e9
            note("SIGSTOP of %s: %s leads after %.1f s (%.2f s after the last renewal)",
                 old.name, new.name, s, lease_waited(ks, old, new, got))
            check_eq(takeovers(new, "lease-expiry"), 1.0, "takeovers by lease expiry")
        finally:
            old.send_signal(signal.SIGCONT)
        old.wait("stopped-leading", after=t0, timeout=15)
        no_overlap(ks, old, new, t0)
        check_eq(sum(1 for e in electors if e.leading()), 1, "leaders")
    t.case("SIGSTOP of the leader: no takeover before its lease, though its peer is silent",
           sigstop)

    def partition():
        # Only the replicas are cut from each other (the API server stays
        # reachable): the leader renews, so nobody may take over, whatever
        # the middlebox does to the peer connections.
        for e in electors:
            e.stop()
        electors.clear()
        px = Proxy(1)  # its upstream is the leader's port, known once bound
        try:
            lead = elector(ks, "pl", extra=["--leader-elect-peer-listen", "127.0.0.1:0",
                                             "--leader-elect-peer-advertise",
                                             "127.0.0.1:%d" % px.port])
            electors.append(lead)
            leader_of(electors)
            px.set_mode("pass", peer(lead)["port"])
            sb = elector(ks, "ps")
            electors.append(sb)
            wait_for(lambda: peer(lead)["accepted"] >= 1, "the standby's connection")
            renewed(ks)
            accepted = peer(lead)["accepted"]
            t0 = time.monotonic_ns()
            # a middlebox that ends the held connection and resets every
            # new one (as a restarting proxy would): a FIN, then no answer
            px.set_mode("refuse")
            # its verdict: no proof (every new connection reset, or on a
            # loaded machine the proxy too slow to reset it: no greeting)
            wait_for(lambda: "(pl) ended, but" in sb.log(), "the standby's verdict")
            # silence: connections hang, nothing ends
            time.sleep(1.0)
            px.set_mode("blackhole")
            time.sleep(5.0)  # two renewals, each a reason to connect again
            px.set_mode("pass")
            # healed: the standby holds a connection to the leader again
            wait_for(lambda: peer(lead)["accepted"] > accepted, "the standby back", 8)
            check(lead.leading(), "the leader lost the lock")
            check(not sb.leading(), "the standby took over across a partition")
            check_eq(sb.count("started-leading"), 0, "standby terms")
            check_eq(lead.count("stopped-leading"), 0, "leader step-downs")
            check("is dead" not in sb.log(), "a proof across a partition:\n%s" % sb.log_tail(8))
            check_eq(takeovers(sb, "proof-of-death"), 0.0, "takeovers by proof of death")
            check(peer(sb)["noProofs"] >= 1, "no connection end seen: %s" % peer(sb))
            note("partition between replicas: %d connections of the standby, %d ended, "
                 "no proof, the leader led throughout (%.1f s)", peer(sb)["connects"],
                 peer(sb)["ended"], (time.monotonic_ns() - t0) / 1e9)
        finally:
            px.close()
    t.case("partition between the replicas only: no takeover while the leader renews",
           partition)

    def restarted():
        # The leader's process dies and a new one starts on the same
        # address before the standby looks: its other identity is the
        # proof. (The standby is stopped meanwhile so that it looks only
        # once the new process serves.)
        for e in electors:
            e.stop()
        electors.clear()
        old = elector(ks, "ra")
        electors.append(old)
        leader_of(electors)
        port = peer(old)["port"]
        sb = elector(ks, "rs")
        electors.append(sb)
        wait_for(lambda: peer(old)["accepted"] >= 1, "the standby's connection")
        renewed(ks)
        time.sleep(0.2)
        sb.send_signal(signal.SIGSTOP)
        try:
            old.send_signal(signal.SIGKILL)
            old.stop()
            electors.remove(old)
            new_proc = elector(ks, "rb", extra=["--leader-elect-peer-listen",
                                                "127.0.0.1:%d" % port])
            electors.append(new_proc)
            check_eq(peer(new_proc)["port"], port, "the restarted process's port")
        finally:
            t0 = time.monotonic_ns()
            sb.send_signal(signal.SIGCONT)
        got = sb.wait("started-leading", after=t0, timeout=20)
        ms = (got["mono"] - t0) / 1e6
        note("leader restarted on the same address: %s leads %.0f ms after it looked", sb.name,
             ms)
        check(ms < 1000 * SLACK, "takeover took %.0f ms" % ms)
        check("a new connection reached rb" in sb.log(),
              "no identity proof:\n%s" % sb.log_tail(8))
        check_eq(takeovers(sb, "proof-of-death"), 1.0, "takeovers by proof of death")
        check(not new_proc.leading(), "the restarted process leads")
    t.case("leader restarted on the same address: the other identity is the proof", restarted)

    def blocked():
        # a leader whose advertised endpoint nobody answers (a blocked
        # port): its death proves nothing, the lease decides
        for e in electors:
            e.stop()
        electors.clear()
        lone = elector(ks, "blk", extra=["--leader-elect-peer-listen", "127.0.0.1:0",
                                         "--leader-elect-peer-advertise", "192.0.2.1:9"])
        electors.append(lone)
        leader_of(electors)
        electors.append(elector(ks, "blk-s"))
        time.sleep(3.0)
        t0 = time.monotonic_ns()
        lone.send_signal(signal.SIGKILL)
        new = leader_of([electors[1]], timeout=25)
        got = new.wait("started-leading", after=t0, timeout=25)
        s = (got["mono"] - t0) / 1e9
        note("kill -9 with the peer port blocked: %s leads after %.1f s (%.2f s after the last "
             "renewal)", new.name, s, lease_waited(ks, lone, new, got))
        check_eq(takeovers(new, "lease-expiry"), 1.0, "takeovers by lease expiry")
    t.case("peer endpoint blocked: kill -9 falls back to the lease", blocked)

    def unadvertised():
        # No address to advertise (no POD_IP, a wildcard listen address, no
        # --leader-elect-peer-advertise): nobody could reach the listener,
        # so there is none; said once, shown in /debug/leader and a metric.
        # The replica still follows a leader that advertises itself, and
        # while it leads itself the lease decides.
        for e in electors:
            e.stop()
        electors.clear()
        adv = elector(ks, "ua")
        electors.append(adv)
        leader_of(electors)
        un = elector(ks, "ub", extra=["--leader-elect-peer-listen", "0.0.0.0:0"])
        electors.append(un)
        p = peer(un)
        check_eq((p["listening"], p["port"], p.get("notListening")),
                 (False, 0, "no address to advertise"), "/debug/leader peer: %r" % p)
        check_eq(peer(adv)["listening"], True, "the advertising replica listens")
        check_eq(gauge(un, "coxswain_leader_election_peer_listening"), 0.0, "metric (ub)")
        check_eq(gauge(adv, "coxswain_leader_election_peer_listening"), 1.0, "metric (ua)")
        check_eq(listening_ports(un.pid), {un.admin_port},
                 "listening sockets of ub (only its admin port)")
        # the standby still holds its connection to the leader...
        wait_for(lambda: peer(adv)["accepted"] >= 1, "ub's connection to ua")
        renewed(ks)
        time.sleep(0.2)
        t0 = time.monotonic_ns()
        adv.send_signal(signal.SIGKILL)
        # ...so it proves the leader's death
        got = un.wait("started-leading", after=t0, timeout=20)
        ms = (got["mono"] - t0) / 1e6
        note("kill -9 of an advertising leader: the unadvertised standby leads after %.0f ms", ms)
        check(ms < 1000 * SLACK, "takeover took %.0f ms" % ms)
        check_eq(takeovers(un, "proof-of-death"), 1.0, "takeovers by proof of death")
        adv.stop()
        electors.remove(adv)
        renewed(ks)
        holder, obj = lease_holder(ks)
        check_eq(holder, un.name, "holder")
        check_eq((obj["metadata"].get("annotations") or {}).get("coxswain.dev/peer"), None,
                 "a peer endpoint advertised by a replica with none")
        sb = elector(ks, "uc")
        electors.append(sb)
        time.sleep(3.0)
        check_eq(peer(sb)["connects"], 0, "connections to a leader with no endpoint")
        t0 = time.monotonic_ns()
        un.send_signal(signal.SIGKILL)
        got = sb.wait("started-leading", after=t0, timeout=25)
        s = (got["mono"] - t0) / 1e9
        note("kill -9 of the unadvertised leader: %s leads after %.1f s (%.2f s after the last "
             "renewal)", sb.name, s, lease_waited(ks, un, sb, got))
        check_eq(takeovers(sb, "lease-expiry"), 1.0, "takeovers by lease expiry")
        warned = [ln for ln in un.log().splitlines() if "peer channel: not listening" in ln]
        check_eq(len(warned), 1, "the warning, once: %r" % warned)
        check("set POD_IP or --leader-elect-peer-advertise" in warned[0], warned[0])
    t.case("no address to advertise: no peer listener (said once, /debug/leader, metric); it "
           "still proves a leader's death; while it leads, the lease decides", unadvertised)

    for e in electors:
        e.stop()


def main():
    t = Tap()
    ks = KubeSim()
    try:
        run(t, ks)
    finally:
        ks.close()
    t.done()


if __name__ == "__main__":
    main()
