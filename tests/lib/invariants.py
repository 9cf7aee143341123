"""Invariant checks for replicated coxswain runs, from kubesim's audit log.

Used by the chaos driver (tests/chaos/chaos.py) and by any e2e test that
wants the same proof. Pure: no processes, no sockets; feed it data.

    from invariants import LockSpec, LockHistory, LeadershipChecker
    lock = LockSpec("leases", "default", "coxswain")
    hist = LockHistory(lock)
    hist.add_object(lease_obj)            # every version seen (watch events)
    chk = LeadershipChecker(lock, hist, guarded=guarded_elect_writes("coxswain-elect-test"))
    chk.feed(audit_entries)               # in audit order; may be called repeatedly
    chk.finish(now_ns)
    chk.violations                        # [Violation]; empty means proven safe
    chk.terms                             # [Term]

What is proven (all times are CLOCK_MONOTONIC nanoseconds: kubesim's
`mono_ns`, the order is the audit log's, i.e. the order in which kubesim
committed):

- write-outside-term: a guarded write (2xx) whose writer was not the lock's
  holder when it landed -- the lock had been taken by another replica, was
  released, or never held. Two replicas performing guarded writes in
  overlapping leadership terms always produce one of these.
- write-after-expiry: a guarded write by the holder that landed later than
  its last successful lock write + the record's leaseDurationSeconds: every
  standby was entitled to take over by then.
- premature-takeover: the lock changed holder while the previous holder's
  lease was still running (and it had not released it), and its process
  was alive. A takeover after the caller killed that process (dead_at:
  identity -> mono ns the SIGKILL was sent, or None) is a takeover on
  proof of death (the peer channel, docs/election.md): counted in
  `dead_takeovers`, not a violation.
- foreign-lock-write: a replica wrote the lock naming someone else as
  holder (electors only write themselves or "").

When the caller knows when a write was *sent* (sent_of(entry) -> mono ns,
e.g. `coxswain elect` puts its send time into the ConfigMap it patches),
the check is sharper:

- sent-outside-term: sent while another replica held the lock, or while
  nobody did -- the write guard let it through. Always a violation.
- guard-breach: sent later than the writer's last successful lock write +
  renewDeadline (renew_ns). The guard closes at (send time of the last
  successful renewal) + renewDeadline, never later. Always a violation.
- late-delivery: sent inside the writer's term, landed outside it. The
  network or the server held the request (kubesim's partitions deliver
  held requests when healed, as TCP does; delay faults hold them). No
  lease-based scheme can stop this without a fencing token the server
  checks, and Kubernetes has none (docs/election.md, Limits). Recorded in
  `late` (not `violations`) with how late it was; a caller that wants
  them fatal (CHAOS_STRICT) says so.

Without a send time, a write that landed outside its term is a violation,
unless excuse(entry) names why the request may have been held (the chaos
driver knows when it partitioned or delayed that user); it is then a
late-delivery whose send time is not proven.

Holders come from the lock's contents (LockHistory: resourceVersion ->
record), which the caller collects by watching the lock. A lock write whose
resourceVersion the history lacks is attributed to its writer (an elector
only ever writes itself as holder, or "" when releasing); such writes are
counted as `inferred` and never produce a violation on their own, so a gap
in the history can hide a release but never invent a violation (a takeover
right after an inferred write of the holder is not called premature: that
write may have been the release).

Writers are identified from the audit line's `user`: by default the text
after "replica/" in a User-Agent ("coxswain/0.1 (linux) replica/r1"), else
the user itself (a bearer token's user). Pass writer_of= to change that.
"""
import bisect
import json
import re

NS_PER_S = 1000000000
LEADER_ANNOTATION = "control-plane.alpha.kubernetes.io/leader"
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")


class LockSpec:
    """The lock object: resource "leases" or "configmaps", namespace, name."""

    def __init__(self, resource, namespace, name):
        if resource not in ("leases", "configmaps"):
            raise ValueError("lock resource must be leases or configmaps")
        self.resource, self.namespace, self.name = resource, namespace, name

    def matches(self, a):
        return (a.get("resource") == self.resource and a.get("namespace") == self.namespace
                and a.get("name") == self.name and not a.get("subresource"))

    def __repr__(self):
        return "%s %s/%s" % (self.resource, self.namespace, self.name)


def default_writer_of(user):
    """The replica identity of an audit user, or None for an empty user."""
    if not user:
        return None
    m = re.search(r"replica/(\S+)", user)
    return m.group(1) if m else user


def record_of(lock, obj):
    """(holder, lease_duration_ns or None) of a lock object, or None when the
    object carries no record (a ConfigMap without the annotation)."""
    if obj is None:
        return None
    if lock.resource == "leases":
        spec = obj.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        dur = spec.get("leaseDurationSeconds")
    else:
        ann = ((obj.get("metadata") or {}).get("annotations") or {}).get(LEADER_ANNOTATION)
        if not ann:
            return ("", None)
        try:
            rec = json.loads(ann)
        except ValueError:
            return None
        holder = rec.get("holderIdentity") or ""
        dur = rec.get("leaseDurationSeconds")
    try:
        dur_ns = int(float(dur) * NS_PER_S) if dur is not None else None
    except (TypeError, ValueError):
        dur_ns = None
    return (holder, dur_ns)


class LockHistory:
    """resourceVersion -> (holder, lease_duration_ns) of every lock version
    seen. Thread-safe enough for one writer thread and readers (dict ops)."""

    def __init__(self, lock):
        self.lock = lock
        self.by_rv = {}

    def add_object(self, obj):
        rv = ((obj or {}).get("metadata") or {}).get("resourceVersion")
        rec = record_of(self.lock, obj)
        if rv and rec is not None:
            self.by_rv[str(rv)] = rec

    def add_event(self, ev):
        """A watch event ({"type", "object"}); ERROR and BOOKMARK are ignored."""
        if ev.get("type") in ("ADDED", "MODIFIED", "DELETED"):
            obj = ev.get("object") or {}
            if ev["type"] != "DELETED":
                self.add_object(obj)

    def get(self, rv):
        return self.by_rv.get(str(rv)) if rv else None

    def __len__(self):
        return len(self.by_rv)


class Violation:
    def __init__(self, kind, mono_ns, detail, entry=None):
        self.kind, self.mono_ns, self.detail, self.entry = kind, mono_ns, detail, entry

    def as_dict(self):
        d = {"kind": self.kind, "mono_ns": self.mono_ns, "detail": self.detail}
        if self.entry is not None:
            d["audit"] = self.entry
        return d

    def __repr__(self):
        return "%s at %d: %s" % (self.kind, self.mono_ns, self.detail)


class Term:
    """One leadership term as the API server saw it."""

    def __init__(self, holder, start_ns, duration_ns, inferred):
        self.holder = holder
        self.start_ns = start_ns
        self.last_write_ns = start_ns   # the last successful lock write
        self.write_times = [start_ns]   # every successful lock write, in order
        self.duration_ns = duration_ns
        self.lock_writes = 1
        self.guarded_writes = 0
        self.end_ns = None
        self.end_reason = None          # taken-over, released, expired, deleted, open
        self.inferred = inferred        # its first lock write's holder was inferred
        self.last_inferred = inferred   # its latest one's: it may have been a release

    @property
    def expires_ns(self):
        return self.last_write_ns + self.duration_ns

    def last_write_before(self, t):
        """The last successful lock write at or before |t| (None if before
        the term)."""
        i = bisect.bisect_right(self.write_times, t)
        return self.write_times[i - 1] if i else None

    def contains(self, t):
        return self.start_ns <= t and (self.end_ns is None or t < self.end_ns)

    def as_dict(self):
        return {"holder": self.holder, "start_ns": self.start_ns, "end_ns": self.end_ns,
                "end_reason": self.end_reason, "lock_writes": self.lock_writes,
                "guarded_writes": self.guarded_writes, "lease_ns": self.duration_ns}


def guarded_elect_writes(configmap, namespace=None):
    """The guarded test writes of `coxswain elect --test-write-interval`:
    writes of that ConfigMap."""
    def pred(a):
        return (a.get("resource") == "configmaps" and a.get("name") == configmap
                and (namespace is None or a.get("namespace") == namespace))
    return pred


DAEMON_STATUS_KINDS = ("gateways", "virtualservices", "routetables", "upstreams")


def guarded_daemon_writes(status_kinds=DAEMON_STATUS_KINDS, snapshots="proxysnapshots"):
    """The daemon's leader-only writes: /status of the coxswain kinds and
    every write of ProxySnapshots."""
    def pred(a):
        r = a.get("resource")
        if r == snapshots:
            return True
        return r in status_kinds and a.get("subresource") == "status"
    return pred


class LeadershipChecker:
    """Streams audit entries; accumulates terms, counts and violations.

    lease_ns: the lease duration to assume when the record's is unknown.
    guarded: predicate over an audit entry (the leader-only writes).
    writer_of: audit user -> replica identity (None: not a replica; its
    writes are counted but not checked).
    """

    def __init__(self, lock, history=None, guarded=None, lease_ns=15 * NS_PER_S,
                 writer_of=default_writer_of, renew_ns=None, sent_of=None, excuse=None,
                 dead_at=None):
        self.lock = lock
        self.history = history if history is not None else LockHistory(lock)
        self.guarded = guarded or (lambda a: False)
        self.lease_ns = lease_ns
        self.renew_ns = renew_ns
        self.writer_of = writer_of
        self.sent_of = sent_of
        self.excuse = excuse
        self.dead_at = dead_at
        self.terms = []
        self.cur = None          # the open Term, or None (no holder)
        self.violations = []
        self.late = []           # late deliveries (see the module's doc)
        self.max_late_ns = 0
        self.counts = {"audit": 0, "lock_writes": 0, "lock_writes_inferred": 0,
                       "lock_write_failures": 0, "guarded_writes": 0,
                       "guarded_write_failures": 0, "guarded_unattributed": 0,
                       "releases": 0, "other_writes": 0, "guarded_sent_known": 0,
                       "dead_takeovers": 0}
        self.max_write_age_ns = 0   # max (guarded write - its writer's last lock write)
        self.last_ns = 0

    # -- feeding -------------------------------------------------------------
    def feed(self, entries):
        for a in entries:
            self.feed_one(a)

    def feed_one(self, a):
        self.counts["audit"] += 1
        t = int(a.get("mono_ns", 0))
        self.last_ns = max(self.last_ns, t)
        ok = 200 <= int(a.get("code", 0) or 0) < 300
        if self.lock.matches(a) and a.get("verb") in WRITE_VERBS:
            if not ok:
                self.counts["lock_write_failures"] += 1
                return
            self._lock_write(a, t)
        elif self.guarded(a):
            if not ok:
                self.counts["guarded_write_failures"] += 1
                return
            self._guarded_write(a, t)
        elif ok:
            self.counts["other_writes"] += 1

    def _violate(self, kind, t, detail, a):
        self.violations.append(Violation(kind, t, detail, a))

    def _close(self, t, reason):
        if self.cur is None:
            return
        cur = self.cur
        if reason == "taken-over" and t > cur.expires_ns:
            reason = "expired"
            t = cur.expires_ns
        cur.end_ns, cur.end_reason = t, reason
        self.cur = None

    def _lock_write(self, a, t):
        self.counts["lock_writes"] += 1
        writer = self.writer_of(a.get("user"))
        if a.get("verb") in ("delete", "deletecollection"):
            self._close(t, "deleted")
            return
        rec = self.history.get(a.get("resourceVersion"))
        inferred = rec is None
        if inferred:
            self.counts["lock_writes_inferred"] += 1
            if writer is None:
                return  # not a replica and no record: nothing to learn
            holder, dur = writer, None
        else:
            holder, dur = rec
        dur = dur or self.lease_ns
        foreign = not inferred and writer is not None and holder not in ("", writer)
        if foreign:
            self._violate("foreign-lock-write", t,
                          "%s wrote the lock naming %s as holder" % (writer, holder), a)
        cur = self.cur
        if holder == "":
            self.counts["releases"] += 1
            self._close(t, "released")
            return
        if cur is not None and cur.holder == holder:
            if t > cur.expires_ns:
                # The holder wrote its own lock after its lease ran out: a
                # standby could have taken it meanwhile; a new term (same
                # holder) starts here.
                self._close(cur.expires_ns, "expired")
                self.terms.append(Term(holder, t, dur, inferred))
                self.cur = self.terms[-1]
                return
            cur.last_write_ns = t
            cur.write_times.append(t)
            cur.duration_ns = dur
            cur.lock_writes += 1
            cur.last_inferred = inferred
            return
        # A takeover right after an unseen lock write of the holder proves
        # nothing: that write may have been its release.
        dead = self.dead_at(cur.holder) if self.dead_at and cur is not None else None
        if cur is not None and t < cur.expires_ns and dead is not None and dead <= t:
            self.counts["dead_takeovers"] += 1
        elif cur is not None and t < cur.expires_ns and not (inferred or cur.last_inferred or
                                                             foreign):
            self._violate("premature-takeover", t,
                          "%s took the lock from %s %.3f s before that lease expired" % (
                              holder, cur.holder, (cur.expires_ns - t) / 1e9), a)
        self._close(t, "taken-over")
        self.terms.append(Term(holder, t, dur, inferred))
        self.cur = self.terms[-1]

    def _guarded_write(self, a, t):
        self.counts["guarded_writes"] += 1
        writer = self.writer_of(a.get("user"))
        if writer is None:
            self.counts["guarded_unattributed"] += 1
            return
        what = "%s %s/%s" % (a.get("resource"), a.get("namespace"), a.get("name"))
        cur = self.cur
        landed_ok = cur is not None and cur.holder == writer and t <= cur.expires_ns
        if landed_ok:
            self.max_write_age_ns = max(self.max_write_age_ns, t - cur.last_write_ns)
        sent = self.sent_of(a) if self.sent_of else None
        if sent is not None:
            self.counts["guarded_sent_known"] += 1
            if not self._check_sent(a, writer, what, sent):
                return
            if not landed_ok:
                self._late(a, t, writer, what, "sent %.3f s before it landed, inside the term" %
                           ((t - sent) / 1e9), cur)
                return
            cur.guarded_writes += 1
            return
        if landed_ok:
            cur.guarded_writes += 1
            return
        why = self.excuse(a) if self.excuse else None
        if why:
            self._late(a, t, writer, what, why + " (send time unknown)", cur)
            return
        if cur is None or cur.holder != writer:
            last = self._last_term_of(writer)
            if last is None:
                ended = "it never held the lock"
            else:
                ended = "its term ended %.3f s earlier (%s)" % (
                    (t - last.end_ns) / 1e9 if last.end_ns is not None else 0.0,
                    last.end_reason)
            self._violate("write-outside-term", t, "%s wrote %s while %s held the lock; %s" % (
                writer, what, cur.holder if cur else "nobody", ended), a)
            return
        self._violate("write-after-expiry", t,
                      "%s wrote %s %.3f s after its lease expired (last lock write %.3f s "
                      "earlier, lease %.1f s)" % (
                          writer, what, (t - cur.expires_ns) / 1e9,
                          (t - cur.last_write_ns) / 1e9, cur.duration_ns / 1e9), a)

    def _check_sent(self, a, writer, what, sent):
        """The write guard's own property at send time; False on a violation."""
        term = self._term_at(sent)
        if term is None or term.holder != writer:
            self._violate("sent-outside-term", sent,
                          "%s sent a write of %s while %s held the lock" % (
                              writer, what, term.holder if term else "nobody"), a)
            return False
        last = term.last_write_before(sent)
        bound = self.renew_ns if self.renew_ns is not None else term.duration_ns
        if last is None or sent > last + bound:
            self._violate("guard-breach", sent,
                          "%s sent a write of %s %.3f s after its last successful lock write "
                          "(the guard closes after %.3f s)" % (
                              writer, what, (sent - (last or term.start_ns)) / 1e9, bound / 1e9),
                          a)
            return False
        return True

    def _term_at(self, t):
        for term in reversed(self.terms):
            if term.contains(t):
                return term
            if term.start_ns <= t:
                return None   # after that term's end, before the next one
        return None

    def _late(self, a, t, writer, what, why, cur):
        mine = self._last_term_of(writer)
        end = None
        if mine is not None:
            end = mine.end_ns if mine.end_ns is not None and mine is not cur else mine.expires_ns
        late_ns = max(0, t - end) if end is not None else 0
        self.max_late_ns = max(self.max_late_ns, late_ns)
        v = Violation("late-delivery", t, "%s's write of %s landed %.3f s after its term ended "
                      "(%s), while %s held the lock: %s" % (
                          writer, what, late_ns / 1e9,
                          mine.end_reason if mine is not None else "no term",
                          cur.holder if cur else "nobody", why), a)
        # After a release the next leader may start at once: no margin at all.
        v.after = mine.end_reason if mine is not None and mine is not cur else "expired"
        self.late.append(v)

    def _last_term_of(self, holder):
        for term in reversed(self.terms):
            if term.holder == holder:
                return term
        return None

    def finish(self, now_ns=None):
        """Marks the open term (if any) as open at |now_ns|; idempotent."""
        if self.cur is not None and self.cur.end_reason is None:
            self.cur.end_reason = "open"
        return self

    # -- results -------------------------------------------------------------
    def holder_at_end(self):
        return self.cur.holder if self.cur is not None else None

    def leaderless_gaps(self):
        """[(from_ns, to_ns)] between consecutive terms (no valid holder)."""
        out = []
        for prev, nxt in zip(self.terms, self.terms[1:]):
            end = prev.end_ns if prev.end_ns is not None else prev.expires_ns
            if nxt.start_ns > end:
                out.append((end, nxt.start_ns))
        return out

    def failovers(self):
        """[(holder before, holder after, ns)]: from the old holder's last
        successful lock write to the new holder's first, for every change
        of holder that was not a release (crash, pause, partition)."""
        out = []
        for prev, nxt in zip(self.terms, self.terms[1:]):
            if prev.end_reason != "released" and prev.holder != nxt.holder:
                out.append((prev.holder, nxt.holder, nxt.start_ns - prev.last_write_ns))
        return out

    def summary(self):
        gaps = [b - a for a, b in self.leaderless_gaps()]
        fo = [ns for _, _, ns in self.failovers()]
        by_kind = {}
        for v in self.violations:
            by_kind[v.kind] = by_kind.get(v.kind, 0) + 1
        after = {}
        for v in self.late:
            after[v.after] = after.get(v.after, 0) + 1
        return {"terms": len(self.terms),
                "late_deliveries": len(self.late),
                "late_after": after,
                "max_late_ms": round(self.max_late_ns / 1e6, 1),
                "holders": sorted({t.holder for t in self.terms}),
                "counts": dict(self.counts),
                "max_guarded_write_age_ms": round(self.max_write_age_ns / 1e6, 1),
                "failovers": len(fo),
                "max_failover_ms": round(max(fo) / 1e6, 1) if fo else 0.0,
                "leaderless_gaps": len(gaps),
                "max_leaderless_ms": round(max(gaps) / 1e6, 1) if gaps else 0.0,
                "violations": by_kind}


def check_audit(audit, lock, history=None, guarded=None, lease_ns=15 * NS_PER_S,
                writer_of=default_writer_of, **kw):
    """One-shot: returns the finished LeadershipChecker."""
    c = LeadershipChecker(lock, history, guarded, lease_ns, writer_of, **kw)
    c.feed(audit)
    return c.finish()


# ---- other invariants ---------------------------------------------------------------

def rss_verdict(samples, warmup_s=10.0, min_life_s=120.0, max_kb_per_min=32.0,
                cap_kb=None):
    """samples: [(mono_ns, rss_kb)] of one process, in time order.

    Returns (ok, detail). Not ok when any sample exceeds |cap_kb|, or when
    RSS still grows in the second half of the process's life (after
    |warmup_s|): the least-squares slope of those samples above
    |max_kb_per_min|. A process whose caches warm up and then stay flat
    passes; a leak of a few KB per request keeps climbing and does not.
    Growth is not judged (ok) for lives shorter than |min_life_s| after
    the warm-up.
    """
    if not samples:
        return True, "no samples"
    peak = max(kb for _, kb in samples)
    if cap_kb is not None and peak > cap_kb:
        return False, "RSS %d KB exceeds the cap %d KB" % (peak, cap_kb)
    t0 = samples[0][0]
    s = [(t, kb) for t, kb in samples if t - t0 >= warmup_s * NS_PER_S]
    if len(s) < 10 or (s[-1][0] - s[0][0]) < min_life_s * NS_PER_S:
        return True, "lived too short to judge (peak %d KB)" % peak
    half = s[len(s) // 2:]
    n = len(half)
    mx = sum(t for t, _ in half) / n
    my = sum(kb for _, kb in half) / n
    var = sum((t - mx) ** 2 for t, _ in half)
    slope = sum((t - mx) * (kb - my) for t, kb in half) / var if var else 0.0   # KB per ns
    per_min = slope * 60 * NS_PER_S
    detail = "RSS %d KB -> %d KB over %.0f s (peak %d KB); second half %+.0f KB/min (limit %.0f)" % (
        s[0][1], s[-1][1], (s[-1][0] - s[0][0]) / 1e9, peak, per_min, max_kb_per_min)
    return per_min <= max_kb_per_min, detail


def statuses_converged(objects):
    """objects: custom resources as listed. Returns the names (kind/ns/name)
    whose status.observedGeneration differs from metadata.generation."""
    stuck = []
    for o in objects:
        md = o.get("metadata") or {}
        st = o.get("status") or {}
        if st.get("observedGeneration") != md.get("generation"):
            stuck.append("%s %s/%s: generation %s, observedGeneration %s" % (
                o.get("kind"), md.get("namespace"), md.get("name"), md.get("generation"),
                st.get("observedGeneration")))
    return stuck


def snapshot_mismatches(leader_versions, standby_versions):
    """Each argument: {gateway or node group: version}. Returns
    [(replica, key, theirs, leader's)] for every standby that serves
    something other than the leader's version."""
    out = []
    for name, versions in standby_versions.items():
        for key, v in leader_versions.items():
            if versions.get(key) != v:
                out.append((name, key, versions.get(key), v))
    return out
