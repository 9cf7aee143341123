#!/usr/bin/env python3
"""The chaos test: three replicas on kubesim under a randomised fault
schedule while a writer keeps changing VirtualServices; invariants checked
all along from kubesim's audit log. See docs/chaos.md.

usage: chaos.py [--seconds N] [--seed N] [--mode auto|elect|run] [--out DIR]
                [--json FILE] [--bench-json FILE]

Environment: CHAOS_SECONDS (default 600), CHAOS_SEED (default: random,
printed), CHAOS_MODE, COXSWAIN_BUILD, COXSWAIN_SANITIZE.
Exit status: 0 no violation, 1 violations, 2 the harness itself failed.
"""
import argparse
import collections
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))

import chaoslib  # noqa: E402
import replicas  # noqa: E402
from audit import AuditTail  # noqa: E402
from chaoslib import Cluster, LockObserver, SendTimes, Writer, start_replica  # noqa: E402
from chaos_report import bench_json, print_summary  # noqa: E402
from objects import GROUP  # noqa: E402
from replicas import mono  # noqa: E402
from invariants import (DAEMON_STATUS_KINDS, LeadershipChecker, LockSpec,  # noqa: E402
                        guarded_daemon_writes,
                        guarded_elect_writes, rss_verdict, snapshot_mismatches,
                        statuses_converged)

FAULTS = ("kill", "term", "stop", "partition", "storm500", "storm429", "latency",
          "apirestart", "watchdrop", "compact", "killwrite")
REPLICA_FAULTS = ("kill", "term", "stop", "partition", "killwrite")
# Every replica serves the peer liveness channel on loopback (a standby
# takes over on proof of the leader's death); CHAOS_PEER=0: lease only.
PEER = os.environ.get("CHAOS_PEER", "1") not in ("", "0")
IDENT = re.compile(r"^(r\d+)-(\d+)$")
TEST_CM = "coxswain-elect-test"
SURVIVOR = "r0"


def writer_of(user):
    """Replica identities are their kubesim users ("r1-3"); anything else
    (the writer, the observer, the driver) is not a replica."""
    return user if user and IDENT.match(user) else None


def slot_of(identity):
    m = IDENT.match(identity or "")
    return m.group(1) if m else None


class Chaos:
    def __init__(self, opts):
        self.opts = opts
        self.seed = opts.seed
        self.rng = random.Random(self.seed)
        self.mode = opts.mode
        san = replicas.sanitized()
        self.timings = ("3s", "2s", "500ms")
        self.lease_ns = chaoslib.parse_duration_ns(self.timings[0])
        self.renew_ns = chaoslib.parse_duration_ns(self.timings[1])
        self.strict = os.environ.get("CHAOS_STRICT", "0") not in ("", "0")
        self.holds = []             # (user or None, from_ns, until_ns or None, why)
        self.killed = {}            # identity -> mono ns its SIGKILL was sent
        self.killwrite_held = 0     # guarded writes held in kubesim at a killwrite
        self.sendtimes = None
        self.lease_s = self.lease_ns / 1e9
        self.out = opts.out
        self.lock = LockSpec("leases", "default", "coxswain")
        self.cluster = None
        self.observer = None
        self.writer = None
        self.slots = {}
        self.incarnation = collections.Counter()
        self.replicas = []          # every incarnation ever started
        self.busy = set()           # slots under a replica-level fault
        self.episodes = []          # {"kind", "slot", "target", "gen", "start_ns", "wake"}
        self.api_restarting = False
        self.faults = collections.Counter()
        self.timeline = []          # {"kind","target","start_ns","end_ns"}
        self.violations = []        # beyond the checker's: exits, RSS, convergence
        self.unexpected_exits = 0
        self.clean_shutdowns = 0
        self.shutdowns = 0
        self.audit_buf = []
        self.tail = None
        self.checker = None
        self.reported = 0
        self.reported_late = 0
        self.canary_caught = None
        self.canary_rv = None
        self.canary_user = None
        self.canary_note = "not run"   # why there is no canary_caught
        self.checker_args = None
        self.final_new = 0          # violations only the final pass found
        self.converge_s = None
        self.started = None
        self.faults_end = None
        self.converged_detail = None
        self.max_active = 2
        self.san = san

    # -- output --------------------------------------------------------------
    def say(self, fmt, *args):
        if self.started is None:
            prefix = "chaos:"
        else:
            prefix = "chaos: [%6.1fs]" % ((mono() - self.started) / 1e9)
        print(prefix + " " + (fmt % args if args else fmt), flush=True)

    def violate(self, kind, detail):
        self.violations.append({"kind": kind, "mono_ns": mono(), "detail": detail})
        self.say("VIOLATION %s: %s", kind, detail)

    # -- replicas ------------------------------------------------------------
    def spawn(self, slot):
        self.incarnation[slot] += 1
        r = start_replica(self.cluster, slot, self.incarnation[slot], self.mode, self.timings,
                          self.out,
                          extra=["--leader-elect-peer-listen", "127.0.0.1:0"] if PEER else [])
        self.replicas.append(r)
        self.slots[slot] = r
        if not r.wait_started(30 if self.san else 15):
            r.poll()
            if not r.expected_exit and r.exit_code is not None:
                self.unexpected_exits += 1
                self.violate("unexpected-exit", "%s exited with %s while starting:\n%s" % (
                    r.identity, r.exit_code, r.log_tail()))
        return r

    def check_exits(self):
        for slot, r in list(self.slots.items()):
            rc = r.poll()
            if rc is None or r.expected_exit:
                continue
            r.expected_exit = True  # reported once
            self.unexpected_exits += 1
            self.violate("unexpected-exit", "%s exited with status %s:\n%s" % (
                r.identity, rc, r.log_tail()))
            if slot not in self.busy:
                self.spawn(slot)

    def lease_spec(self):
        """The lock's spec right now, per kubesim (None on error)."""
        try:
            st, obj = self.cluster.request(
                "GET", "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s" % (
                    self.lock.namespace, self.lock.name), timeout=3)
        except OSError:
            return None
        return (obj.get("spec") or {}) if st == 200 else None

    def holder(self):
        """The lock's holder right now, per kubesim (None on error)."""
        spec = self.lease_spec()
        return None if spec is None else spec.get("holderIdentity") or ""

    def pick_slot(self, kind):
        """A slot not under another replica fault; the leader 60% of the
        time. Slot r0 is never killed or terminated: its one process lives
        through the whole run (paused, partitioned, stormed, leading now and
        then), so its RSS is judged over all of it."""
        free = [s for s in sorted(self.slots) if s not in self.busy and
                not (s == SURVIVOR and kind in ("kill", "term", "killwrite"))]
        if not free:
            return None
        lead = slot_of(self.holder())
        if kind == "killwrite":  # the leader or nobody
            return lead if lead in free else None
        if lead in free and self.rng.random() < 0.6:
            return lead
        return self.rng.choice(free)

    def live_identities(self):
        return [r.identity for r in self.slots.values() if r.alive()]

    # -- fault episodes (generators yielding seconds to wait) -----------------
    def ep_kill(self, slot):
        r = self.slots[slot]
        self.killed[r.identity] = mono()
        r.kill()
        try:
            yield self.rng.uniform(0.3, 3.0)
        finally:
            self.spawn(slot)

    def ep_killwrite(self, slot):
        """kill -9 of the leader while guarded writes of its are in flight:
        delay rules on its user hold them in kubesim (its lock requests
        pass), the kill comes once one is held, and they land after the
        process died -- maybe after a standby took over on proof of death:
        late deliveries (sent inside the term), never a violation."""
        r = self.slots[slot]
        delay_ms = self.rng.randrange(300, 1200)
        res = ["configmaps"] if self.mode == "elect" else \
            [k + "/status" for k in DAEMON_STATUS_KINDS] + ["proxysnapshots"]
        inc, ids = self.cluster.incarnation, []
        for rs in res:
            st, out = self.cluster.admin("POST", "/faults", {
                "action": "delay", "delay_ms": delay_ms, "probability": 1.0,
                "user": r.identity, "resource": rs})
            if st in (200, 201) and isinstance(out, dict) and "id" in out:
                ids.append(out["id"])
        hold = [r.identity, mono(), None, "held %d ms by a killwrite fault" % delay_ms]
        self.holds.append(hold)
        killed = False
        try:
            t0 = time.monotonic()
            while time.monotonic() - t0 < 3.0 and not self._hits(ids):
                yield 0.05
            self.killwrite_held += self._hits(ids)
            self.killed[r.identity] = mono()
            r.kill()
            killed = True
            yield self.rng.uniform(0.3, 3.0)
        finally:
            self._unrule(inc, ids, [hold], delay_ms * 10 ** 6)
            if killed:
                self.spawn(slot)

    def start_handover_killwrite(self):
        """killwrite while r0 (never killed) leads: hand the lock to any
        other replica first (preferredHolder "*", as `coxswain handover
        --any`), then kill that one with writes in flight."""
        if slot_of(self.holder()) != SURVIVOR or SURVIVOR in self.busy or \
                not [s for s in self.slots if s != SURVIVOR and s not in self.busy]:
            return False
        ep = {"kind": "killwrite", "slot": None, "target": None, "start_ns": mono(), "wake": 0.0}
        ep["gen"] = self.ep_handover_killwrite(ep)
        self.faults["killwrite"] += 1
        self.say("fault killwrite: handing the lock from r0 to any other replica first")
        self.episodes.append(ep)
        self.advance(ep)
        return True

    def ep_handover_killwrite(self, ep):
        self.cluster.request(
            "PATCH", "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s" % (
                self.lock.namespace, self.lock.name),
            {"spec": {"strategy": "OldestEmulationVersion", "preferredHolder": "*"}},
            ctype="application/merge-patch+json")
        t0 = time.monotonic()
        while time.monotonic() - t0 < 5.0:
            lead = slot_of(self.holder())
            if lead and lead != SURVIVOR and lead not in self.busy:
                self.busy.add(lead)
                ep["slot"], ep["target"] = lead, self.slots[lead].identity
                self.say("fault killwrite on %s", ep["target"])
                yield from self.ep_killwrite(lead)
                return
            yield 0.1

    def _hits(self, ids):
        st, out = self.cluster.admin("GET", "/faults")
        rules = out.get("faults", []) if isinstance(out, dict) else []
        return sum(int(x.get("hits", 0)) for x in rules
                   if isinstance(x, dict) and x.get("id") in ids)

    def ep_term(self, slot):
        r = self.slots[slot]
        r.send_term()
        t0 = time.monotonic()
        self.shutdowns += 1
        try:
            while r.alive() and time.monotonic() - t0 < 5.0:
                yield 0.05
            self.shutdown_verdict(r, t0)
            yield self.rng.uniform(0.2, 2.0)
        finally:
            if r.alive():
                self.shutdown_verdict(r, t0)
            self.spawn(slot)

    def shutdown_verdict(self, r, t0):
        if r.alive():
            code, took = r.stop(timeout=max(0.1, 5.0 - (time.monotonic() - t0)))
        else:
            r.poll()
            code, took = r.exit_code, time.monotonic() - t0
        if code == 0:
            self.clean_shutdowns += 1
        else:
            self.violate("unclean-shutdown", "%s on SIGTERM: %s after %.1f s:\n%s" % (
                r.identity, "killed, still running" if code is None else "status %s" % code,
                took, r.log_tail(15)))

    def ep_stop(self, slot):
        r = self.slots[slot]
        r.sigstop()
        try:
            yield self.rng.uniform(0.3, 2.5) * self.lease_s
        finally:
            r.sigcont()

    def ep_partition(self, slot):
        user = self.slots[slot].identity
        inc = self.cluster.incarnation
        hold = [user, mono(), None, "held by the partition of %s" % user]
        self.holds.append(hold)
        self.cluster.admin("POST", "/partitions", {"user": user})
        try:
            yield self.rng.uniform(0.5, 2.5) * self.lease_s
        finally:
            if self.cluster.incarnation == inc:  # a restart already healed it
                self.cluster.admin("DELETE", "/partitions?user=" + user)
            hold[2] = mono() + 500 * 10 ** 6

    def _rules(self, rule):
        """Adds |rule| for every live replica user; returns (incarnation, ids,
        holds). A delay rule holds requests: recorded for excuse()."""
        inc = self.cluster.incarnation
        ids, holds = [], []
        for user in self.live_identities():
            st, out = self.cluster.admin("POST", "/faults", dict(rule, user=user))
            if st in (200, 201) and isinstance(out, dict) and "id" in out:
                ids.append(out["id"])
                if rule["action"] == "delay":
                    h = [user, mono(), None, "delayed %d ms by a latency fault" %
                         rule["delay_ms"]]
                    self.holds.append(h)
                    holds.append(h)
        return inc, ids, holds

    def _unrule(self, inc, ids, holds, extra_ns=0):
        if self.cluster.incarnation == inc:  # else the restart dropped them
            for i in ids:
                self.cluster.admin("DELETE", "/faults/%s" % i)
        for h in holds:
            h[2] = mono() + extra_ns + 500 * 10 ** 6

    def excuse(self, a):
        """Why a write landing outside its writer's term may have been sent
        inside it: the request was held by a fault this driver injected."""
        t = a.get("mono_ns", 0)
        for user, t0, t1, why in self.holds:
            if user == a.get("user") and t0 <= t and (t1 is None or t <= t1):
                return why
        return None

    def ep_storm(self, code):
        rule = {"action": "fail", "code": code,
                "probability": round(self.rng.uniform(0.3, 0.9), 2)}
        if code == 429:
            rule["retry_after"] = 1
        verb = self.rng.choice([None, None, "update", "get", "watch", "patch"])
        if verb:
            rule["verb"] = verb
        inc, ids, holds = self._rules(rule)
        try:
            yield self.rng.uniform(2.0, 6.0)
        finally:
            self._unrule(inc, ids, holds)

    def ep_latency(self):
        rule = {"action": "delay", "delay_ms": self.rng.randrange(100, 1500),
                "probability": round(self.rng.uniform(0.3, 0.8), 2)}
        inc, ids, holds = self._rules(rule)
        try:
            yield self.rng.uniform(2.0, 6.0)
        finally:
            self._unrule(inc, ids, holds, rule["delay_ms"] * 10 ** 6)

    def ep_apirestart(self):
        self.api_restarting = True
        rc = self.cluster.stop()
        if rc != 0:
            self.violate("kubesim", "kubesim exited with %s on SIGTERM" % rc)
        try:
            yield self.rng.uniform(0.0, 3.0)   # the API is down meanwhile
        finally:
            self.cluster.start()
            self.api_restarting = False

    def ep_watchdrop(self):
        body = {}
        if self.rng.random() < 0.5 and self.live_identities():
            body["user"] = self.rng.choice(self.live_identities())
        self.cluster.admin("POST", "/end-watches", body)
        return
        yield  # a generator that ends at once

    def ep_compact(self):
        self.cluster.admin("POST", "/compact")
        # Watchers reconnect from their last resourceVersion, now too old.
        self.cluster.admin("POST", "/end-watches", {})
        return
        yield

    def start_episode(self, kind):
        target = None
        if kind == "killwrite" and self.pick_slot(kind) is None:
            return self.start_handover_killwrite()
        if kind in REPLICA_FAULTS:
            target = self.pick_slot(kind)
            if target is None:
                return False
            self.busy.add(target)
            target_id = self.slots[target].identity
        else:
            if kind == "apirestart" and self.api_restarting:
                return False
            target_id = None
        gen = {"kill": lambda: self.ep_kill(target), "term": lambda: self.ep_term(target),
               "killwrite": lambda: self.ep_killwrite(target),
               "stop": lambda: self.ep_stop(target),
               "partition": lambda: self.ep_partition(target),
               "storm500": lambda: self.ep_storm(500), "storm429": lambda: self.ep_storm(429),
               "latency": self.ep_latency, "apirestart": self.ep_apirestart,
               "watchdrop": self.ep_watchdrop, "compact": self.ep_compact}[kind]()
        ep = {"kind": kind, "slot": target, "target": target_id, "gen": gen,
              "start_ns": mono(), "wake": 0.0}
        self.faults[kind] += 1
        self.say("fault %s%s", kind, " on " + target_id if target_id else "")
        self.episodes.append(ep)
        self.advance(ep)
        return True

    def advance(self, ep):
        try:
            delay = next(ep["gen"])
            ep["wake"] = time.monotonic() + delay
        except StopIteration:
            self.finish_episode(ep)

    def finish_episode(self, ep):
        if ep in self.episodes:
            self.episodes.remove(ep)
        if ep["slot"]:
            self.busy.discard(ep["slot"])
        self.timeline.append({"kind": ep["kind"], "target": ep["target"],
                              "start_ns": ep["start_ns"], "end_ns": mono()})

    def end_all_episodes(self):
        # The API server first: the others' undoing (respawns, heals) needs it.
        for ep in sorted(self.episodes, key=lambda e: e["kind"] != "apirestart"):
            ep["gen"].close()   # runs its finally: heal, continue, respawn
            self.finish_episode(ep)

    # -- the audit log --------------------------------------------------------
    def pump_audit(self, lag_ns):
        """Feeds the checker every audit line older than |lag_ns| (so the
        lock observer has seen the versions they produced)."""
        self.audit_buf += self.tail.read()
        cut = mono() - lag_ns
        n = 0
        while n < len(self.audit_buf) and self.audit_buf[n].get("mono_ns", 0) <= cut:
            n += 1
        ready, self.audit_buf = self.audit_buf[:n], self.audit_buf[n:]
        self.checker.feed(ready)
        while self.reported < len(self.checker.violations):
            v = self.checker.violations[self.reported]
            self.reported += 1
            if self.canary_rv and v.entry and v.entry.get("resourceVersion") == self.canary_rv:
                continue   # canary() reports it
            active = ", ".join("%s(%s)" % (e["kind"], e["target"] or "api")
                               for e in self.episodes) or "none"
            self.say("VIOLATION %s: %s [active faults: %s]", v.kind, v.detail, active)
        while self.reported_late < len(self.checker.late):
            v = self.checker.late[self.reported_late]
            self.reported_late += 1
            self.say("%s %s", "VIOLATION (strict)" if self.strict else "note:", v.detail)

    def sample(self):
        for r in self.slots.values():
            if r.alive():
                r.sample_rss()

    # -- phases ---------------------------------------------------------------
    def setup(self):
        os.makedirs(self.out, exist_ok=True)
        self.cluster = Cluster(self.out)
        self.tail = AuditTail(self.cluster.audit_path)
        self.observer = LockObserver(self.cluster, self.lock)
        self.observer.start()
        sent_of = None
        if self.mode == "elect":
            guarded = guarded_elect_writes(TEST_CM)
            self.sendtimes = SendTimes(self.cluster, self.lock.namespace, TEST_CM)
            self.sendtimes.start()
            sent_of = self.sendtimes.sent_of(writer_of)
        else:
            guarded = guarded_daemon_writes()
        self.checker_args = ((self.lock, self.observer.history, guarded, self.lease_ns,
                              writer_of),
                             dict(renew_ns=self.renew_ns, sent_of=sent_of, excuse=self.excuse,
                                  dead_at=self.killed.get))
        self.checker = LeadershipChecker(*self.checker_args[0], **self.checker_args[1])
        self.writer = Writer(self.cluster, random.Random(self.seed + 1))
        self.writer.setup()
        for i in range(self.opts.replicas):
            self.spawn("r%d" % i)
        self.writer.start()

    def run_faults(self, seconds):
        self.started = mono()
        end = time.monotonic() + seconds
        deck = []
        next_fault = time.monotonic() + min(3.0, seconds / 10)
        last_sample = last_progress = 0.0
        while time.monotonic() < end:
            now = time.monotonic()
            for ep in list(self.episodes):
                if ep["wake"] <= now:
                    self.advance(ep)
            if now >= next_fault and len(self.episodes) < self.max_active:
                if not deck:
                    deck = list(FAULTS)
                    self.rng.shuffle(deck)
                kind = deck[-1]
                if self.start_episode(kind):
                    deck.pop()
                elif kind == "killwrite" and len(deck) > 1:
                    deck[-1], deck[-2] = deck[-2], deck[-1]  # the leader is r0: later
                next_fault = time.monotonic() + self.rng.uniform(1.0, 3.0)
            if now - last_sample >= 1.0:
                last_sample = now
                self.sample()
                self.check_exits()
                self.pump_audit(2 * 10 ** 9)
            if now - last_progress >= 10.0:
                last_progress = now
                self.say("progress: %d faults, %d terms, %d guarded writes, %d VirtualService "
                         "changes, %d violations", sum(self.faults.values()),
                         len(self.checker.terms), self.checker.counts["guarded_writes"],
                         self.writer.ok, len(self.checker.violations) + len(self.violations))
            time.sleep(0.05)
        self.end_all_episodes()
        self.faults_end = time.monotonic()
        self.say("faults stopped; waiting for convergence")

    @staticmethod
    def election_view(info):
        """(role, holder, watch) from /debug/leader: `coxswain elect` serves
        the elector's status itself, the daemon nests it under "election"."""
        e = info.get("election") if isinstance(info.get("election"), dict) else info
        return e.get("role"), e.get("holder"), e.get("watch")

    def converged_elect(self):
        spec = self.lease_spec() or {}
        h = spec.get("holderIdentity")
        if not h:
            return False, "no holder"
        # a handover asked for (a killwrite's, the schedule's last fault)
        # moves the lock once the leader next renews: not settled yet
        if spec.get("preferredHolder"):
            return False, "a handover to %s is pending" % spec["preferredHolder"]
        leaders, wrong = [], []
        for r in self.slots.values():
            if not r.alive():
                return False, "%s not running" % r.identity
            info = r.try_leader_info()
            if info is None:
                return False, "%s: no /debug/leader" % r.identity
            role, holder, watch = self.election_view(info)
            if role == "leader":
                leaders.append(r.identity)
            elif holder != h or watch != "up":
                wrong.append("%s sees %s (watch %s)" % (r.identity, holder, watch))
        if leaders != [h]:
            return False, "lock held by %s, leading: %s" % (h, leaders)
        if wrong:
            return False, "; ".join(wrong)
        return True, h

    def converged(self):
        if self.mode == "elect":
            return self.converged_elect()
        return self.converged_daemon()

    def converged_daemon(self):
        """The election as above; every status at its object's generation;
        every replica serving the same snapshot, each standby's per-Gateway
        versions equal to the leader's and its consistency gauge 1."""
        ok, h = self.converged_elect()
        if not ok:
            return ok, h
        stuck, nobj = [], 0
        for plural in ("gateways", "virtualservices", "upstreams"):
            try:
                st, out = self.cluster.request("GET", "%s/namespaces/%s/%s" % (
                    GROUP, self.writer.ns, plural))
            except OSError as e:
                return False, "list %s: %s" % (plural, e)
            if st != 200:
                return False, "list %s: %s" % (plural, st)
            stuck += statuses_converged(out.get("items", []))
            nobj += len(out.get("items", []))
        if stuck:
            return False, "%d statuses behind: %s" % (len(stuck), stuck[:3])
        versions, served = {}, {}
        for r in self.slots.values():
            info = r.try_leader_info() or {}
            served[r.identity] = info.get("snapshot")
            st, body = r.try_http("/metrics")
            if st != 200:
                return False, "%s: /metrics %s" % (r.identity, st)
            m = replicas.parse_metrics(body.decode(errors="replace"))
            versions[r.identity] = {dict(lab).get("gateway"): dict(lab).get("version")
                                    for (n, lab), v in m.items()
                                    if n == "coxswain_snapshot_version_info" and v == 1}
            if r.identity != h:
                bad = [dict(lab).get("gateway") for (n, lab), v in m.items()
                       if n == "coxswain_snapshot_consistent" and v != 1]
                if bad:
                    return False, "%s: coxswain_snapshot_consistent 0 for %s" % (r.identity, bad)
        if not served.get(h) or len(set(served.values())) != 1:
            return False, "snapshot versions differ: %s" % served
        if not versions.get(h):
            return False, "the leader exports no coxswain_snapshot_version_info"
        diff = snapshot_mismatches(versions[h], {k: v for k, v in versions.items() if k != h})
        if diff:
            return False, "standbys serve other versions: %s" % diff[:3]
        self.converged_detail = ("%d statuses at their generation; snapshot %s served by all %d "
                                 "replicas; %d Gateway versions equal on every standby" % (
                                     nobj, served[h], len(served), len(versions[h])))
        return True, h

    def settle(self):
        # The writer stops with the faults: statuses converge to a fixed target.
        if self.writer:
            self.writer.stop()
            self.writer.join(10)
        t0 = time.monotonic()
        timeout = (4 * self.lease_s + 20) * (2 if self.san else 1)
        if self.mode == "run":
            timeout += 30
        why = None
        while time.monotonic() - t0 < timeout:
            self.sample()
            self.check_exits()
            for slot, r in list(self.slots.items()):
                if not r.alive():
                    self.spawn(slot)
            ok, why = self.converged()
            if ok:
                self.converge_s = time.monotonic() - t0
                self.say("converged in %.1f s: %s leads, every replica agrees%s",
                         self.converge_s, why,
                         "; " + self.converged_detail if self.converged_detail else "")
                break
            time.sleep(0.2)
        else:
            self.violate("no-convergence", "not converged %.0f s after the faults stopped: %s"
                         % (timeout, why))
            self.canary_note = "not run: no convergence"
            return
        # A quiet window: the leader keeps writing, nobody else does. It
        # starts once requests that delay rules still hold have landed.
        leader = why
        time.sleep(max(0.0, self.faults_end + 2.0 - time.monotonic()))
        since = mono()
        time.sleep(max(3.0, 4 * 0.5))
        self.sample()
        self.pump_audit(0)
        if self.checker.holder_at_end() != leader:
            self.violate("no-convergence", "the audit log ends with holder %s, replicas say %s"
                         % (self.checker.holder_at_end(), leader))
        elif self.mode == "elect":
            recent = self.guarded_since(since)
            if not recent or any(w != leader for w in recent):
                self.violate("no-convergence", "guarded writes after convergence: %s" % (
                    collections.Counter(recent)))
        if self.opts.canary:
            self.canary(leader)

    def canary(self, leader):
        """Proves the whole chain (audit file, observers, checker) live: a
        standby's identity performs one guarded write behind the guard's
        back; the checker must report exactly that write."""
        rogue = next((r for r in self.slots.values() if r.identity != leader and r.alive()),
                     None)
        if rogue is None:
            self.canary_note = "no standby to impersonate"
            self.violate("canary", self.canary_note)
            return
        if self.mode == "elect":
            path = "/api/v1/namespaces/%s/configmaps/%s" % (self.lock.namespace, TEST_CM)
            body = {"data": {"writer": rogue.identity, "mono": str(mono()), "seq": "canary"}}
        else:
            # an object that exists now (the writer deletes and re-creates)
            st, out = self.cluster.request("GET", chaoslib.vs_path(self.writer.ns))
            names = [o["metadata"]["name"] for o in (out.get("items", []) if st == 200 else [])]
            if not names:
                self.canary_note = "no VirtualService to write: %s" % st
                self.violate("canary", self.canary_note)
                return
            path = chaoslib.vs_path(self.writer.ns, names[0], "status")
            # a value the CRD's enum accepts (an invalid one is refused
            # with 422 and proves nothing); the leader puts it back
            body = {"status": {"observedGeneration": 1, "state": "Warning"}}
        st, out = self.cluster.ks.request("PATCH", path, body, token=rogue.token,
                                          ctype="application/merge-patch+json")
        if st != 200:
            self.canary_note = "the rogue write failed: %s %s" % (st, out)
            self.violate("canary", self.canary_note)
            return
        rv = out["metadata"]["resourceVersion"]
        self.canary_rv = rv
        self.canary_user = rogue.identity
        time.sleep(0.3)
        self.pump_audit(0)
        hit = [v for v in self.checker.violations
               if v.entry and v.entry.get("resourceVersion") == rv]
        if len(hit) != 1:
            self.canary_note = "the rogue write of %s (rv %s) was not reported (%d matches)" % (
                rogue.identity, rv, len(hit))
            self.violate("canary", self.canary_note)
            return
        self.checker.violations.remove(hit[0])
        self.reported -= 1
        self.canary_caught = "%s: %s" % (hit[0].kind, hit[0].detail)
        self.say("canary caught: %s", self.canary_caught)

    def guarded_since(self, since_ns):
        out = []
        with open(self.cluster.audit_path) as f:
            for line in f:
                try:
                    a = json.loads(line)
                except ValueError:
                    continue
                if a.get("mono_ns", 0) >= since_ns and self.checker.guarded(a) and \
                        200 <= a.get("code", 0) < 300:
                    out.append(writer_of(a.get("user")))
        return out

    def shutdown(self):
        if self.writer:
            self.writer.stop()
        for slot, r in sorted(self.slots.items()):
            if r.alive():
                self.shutdowns += 1
                t0 = time.monotonic()
                r.send_term()
                self.shutdown_verdict(r, t0)
        if self.writer:
            self.writer.join(5)
        if self.cluster and self.cluster.alive():
            for o in (self.observer, self.sendtimes):
                if o:
                    o.replay_window()
            time.sleep(0.3)
        for o in (self.observer, self.sendtimes):
            if o:
                o.stop()
        if self.tail:
            self.pump_audit(-10 ** 12)
            self.checker.finish()
            if self.checker_args:
                self.final_pass()

    def final_pass(self):
        """The whole audit log once more, now that the observers hold every
        lock version they will ever see (kubesim's event window replayed):
        the verdict. The live pass judged each write 2 s after it landed,
        with the versions seen by then; versions seen later can only turn
        inferred holders into known ones (an unseen release), so this pass
        finds whatever the live one found, and perhaps more."""
        fin = LeadershipChecker(*self.checker_args[0], **self.checker_args[1])
        fin.feed(AuditTail(self.cluster.audit_path).read())
        fin.finish()
        if self.canary_rv:   # caught or not, canary() has reported it
            canary = [v for v in fin.violations if v.entry and
                      v.entry.get("resourceVersion") == self.canary_rv and
                      v.entry.get("user") == self.canary_user]
            for v in canary:
                fin.violations.remove(v)
        live = {(v.kind, (v.entry or {}).get("seq"), v.mono_ns) for v in self.checker.violations}
        for v in fin.violations:
            if (v.kind, (v.entry or {}).get("seq"), v.mono_ns) not in live:
                self.final_new += 1
                self.say("VIOLATION %s (found by the final pass over the whole log): %s",
                         v.kind, v.detail)
        self.say("final pass over %d audit lines: %d violations (%d not seen live), %d lock "
                 "writes with an inferred holder (live: %d)", fin.counts["audit"],
                 len(fin.violations), self.final_new, fin.counts["lock_writes_inferred"],
                 self.checker.counts["lock_writes_inferred"])
        self.checker = fin

    def rss_verdicts(self):
        cap = (1536 if self.san else 256) * 1024
        # A growth rate needs 120 s of life after the warm-up: short runs
        # (the one in `make test`) check the cap only.
        min_life = 120.0
        out = {}
        for r in self.replicas:
            if not r.rss:
                continue
            if self.san:
                # ASan's quarantine grows RSS by design: only the cap.
                ok, detail = rss_verdict(r.rss, min_life_s=1e9, cap_kb=cap)
            else:
                ok, detail = rss_verdict(r.rss, min_life_s=min_life, cap_kb=cap)
            out[r.identity] = {"max_kb": max(kb for _, kb in r.rss), "ok": ok, "detail": detail}
            if not ok:
                self.violate("rss", "%s: %s" % (r.identity, detail))
        return out

    # -- the summary ------------------------------------------------------------
    def summary(self, seconds, wall):
        rss = self.rss_verdicts()
        chk = self.checker.summary()
        violations = [v.as_dict() for v in self.checker.violations] + self.violations
        late = [v.as_dict() for v in self.checker.late]
        if self.strict:
            violations += late
        kinds = collections.Counter(v["kind"] for v in violations)
        return {
            "seed": self.seed, "mode": self.mode, "seconds": seconds,
            "wall_s": round(wall, 1), "replicas": self.opts.replicas,
            "timings": dict(zip(("lease", "renew", "retry"), self.timings)),
            "faults": dict(self.faults), "faults_total": sum(self.faults.values()),
            "peer": PEER, "killwrite_held": self.killwrite_held,
            "leadership": chk,
            "terms": [t.as_dict() for t in self.checker.terms],
            "writes": {"guarded": self.checker.counts["guarded_writes"],
                       "guarded_failed": self.checker.counts["guarded_write_failures"],
                       "lock": self.checker.counts["lock_writes"],
                       "lock_inferred": self.checker.counts["lock_writes_inferred"],
                       "virtualservice_changes": self.writer.ok if self.writer else 0,
                       "virtualservice_failed": self.writer.failed if self.writer else 0},
            "processes": {"started": len(self.replicas),
                          "unexpected_exits": self.unexpected_exits,
                          "shutdowns": self.shutdowns, "clean_shutdowns": self.clean_shutdowns},
            "kubesim_restarts": self.cluster.restarts if self.cluster else 0,
            "observer": {"versions": len(self.observer.history) if self.observer else 0,
                         "resyncs": self.observer.resyncs if self.observer else 0},
            "converge_s": round(self.converge_s, 2) if self.converge_s is not None else None,
            "rss": rss,
            "rss_series": {r.identity: [[round((t - (self.started or t)) / 1e9, 1), kb]
                                        for t, kb in r.rss[::max(1, len(r.rss) // 300)]]
                           for r in self.replicas if r.slot == SURVIVOR and r.rss},
            "strict": self.strict,
            "canary": self.canary_caught,
            "canary_note": None if self.canary_caught else self.canary_note,
            "final_pass_new": self.final_new,
            "late_deliveries": len(late), "late_list": late[:50],
            "violations": dict(kinds), "violations_total": len(violations),
            "violation_list": violations[:50],
            "fault_timeline": self.timeline,
            "started_ns": self.started,
            "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }


class Tee:
    """Our output on the terminal and in <out>/driver.log."""

    def __init__(self, stream, path):
        self.stream = stream
        self.file = open(path, "a")

    def write(self, text):
        self.stream.write(text)
        self.file.write(text)

    def flush(self):
        self.stream.flush()
        self.file.flush()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=float(os.environ.get("CHAOS_SECONDS", 600)))
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--mode", default=os.environ.get("CHAOS_MODE", "auto"),
                    choices=("auto", "elect", "run"))
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--no-canary", dest="canary", action="store_false",
                    help="skip the rogue write that proves the checker live")
    ap.add_argument("--out", default=None, help="artifacts (default: a temp dir, kept on "
                    "failure)")
    ap.add_argument("--json", default=None, help="write the summary there")
    ap.add_argument("--bench-json", default=None, help="write the run in bench/run.sh format")
    opts = ap.parse_args(argv)
    if opts.seed is None:
        env = os.environ.get("CHAOS_SEED", "")
        opts.seed = int(env) if env else random.SystemRandom().randrange(1, 2 ** 31)
    if opts.mode == "auto":
        opts.mode = "run" if replicas.has_subcommand("run") else "elect"
    keep = opts.out is not None
    if opts.out is None:
        opts.out = tempfile.mkdtemp(prefix="chaos-%d-" % opts.seed)
    os.makedirs(opts.out, exist_ok=True)
    sys.stdout = Tee(sys.stdout, os.path.join(opts.out, "driver.log"))
    print("chaos: seed=%d seconds=%g mode=%s replicas=%d out=%s (CHAOS_SEED=%d reproduces the "
          "schedule)" % (opts.seed, opts.seconds, opts.mode, opts.replicas, opts.out, opts.seed),
          flush=True)
    c = Chaos(opts)
    t0 = time.monotonic()
    rc = 0
    try:
        c.setup()
        c.run_faults(opts.seconds)
        c.settle()
    except Exception:
        traceback.print_exc(file=sys.stdout)
        rc = 2
    finally:
        try:
            c.shutdown()
        except Exception:
            traceback.print_exc(file=sys.stdout)
            rc = 2
    s = c.summary(opts.seconds, time.monotonic() - t0)
    if c.cluster:
        c.cluster.close()
    print_summary(s)
    for path, doc in ((opts.json, s), (opts.bench_json, bench_json(s) if s["terms"] else None)):
        if path and doc:
            with open(path, "w") as f:
                json.dump(doc, f, indent=1)
    if rc == 0 and s["violations_total"]:
        rc = 1
    if rc == 0 and not keep:
        shutil.rmtree(opts.out, ignore_errors=True)
    elif rc != 0:
        print("chaos: artifacts kept in %s" % opts.out, flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
