/* The election decision core against a fake clock and a fake lock: every
 * row of the algorithm, conflicts, release races and clock jumps. */
#include "harness.h"

/* ---- acquiring ----------------------------------------------------------- */

static void test_creates_missing_lock(void)
{
    struct h h;
    h_setup(&h, "me");
    h_start(&h);
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_GET);
    CHECK_INT_EQ(h.req.purpose, ELECTION_FOR_OBSERVE);
    CHECK(!h_guard(&h));
    h_serve(&h);
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_CREATE);
    CHECK_STR_EQ(h.req.rec.holder, "me");
    CHECK_INT_EQ(h.req.rec.lease_duration_s, 3);
    CHECK_INT_EQ(h.req.rec.transitions, 0);
    CHECK_INT_EQ(h.req.rec.acquire_wall_ns, h.now.wall_ns);
    CHECK_INT_EQ(h.req.rec.renew_wall_ns, h.now.wall_ns);
    int from = h.n;
    h_serve(&h);
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_LEADER);
    CHECK_INT_EQ(election_core_term(h.c), 1);
    int nl = h_first(&h, from, ELECTION_ACT_NEW_LEADER);
    int st = h_first(&h, from, ELECTION_ACT_STARTED_LEADING);
    REQUIRE(nl >= 0 && st >= 0);
    CHECK_STR_EQ(h.log[nl].leader, "me");
    CHECK_INT_EQ(h.log[st].term, 1);
    int64_t timeout = 0;
    uint64_t term = 0;
    CHECK(election_guard_check(&h.guard, h.now.mono_ns, &timeout, &term));
    CHECK_INT_EQ(timeout, MS(2000));
    CHECK_INT_EQ(term, 1);
    CHECK_INT_EQ(election_core_safe_deadline(h.c), h.now.mono_ns + MS(2000));
    h_free(&h);
}

/* Expiry is judged on our monotonic clock from when we observed the record,
 * whatever the record's renewTime says (remote clocks may be skewed). */
static void test_takeover_on_local_expiry_not_renew_time(void)
{
    static const int64_t skew[] = {-INT64_C(3600) * 1000000000, 0, INT64_C(3600) * 1000000000};
    for (size_t k = 0; k < sizeof(skew) / sizeof(skew[0]); k++) {
        struct h h;
        h_setup(&h, "me");
        fake_put(&h.lock, "other", 3, 2);
        h.lock.rec.renew_wall_ns = WALL0 + skew[k];
        h_start(&h);
        h_watch(&h, true);
        h_serve(&h);
        int64_t seen = h.now.mono_ns;
        CHECK(!h.pending);
        CHECK_INT_EQ(election_core_observed_time(h.c), seen);
        CHECK_INT_EQ(election_core_next_wakeup(h.c), seen + MS(500)); /* heartbeat first */
        h_run(&h, seen + MS(2999));
        CHECK(!h.pending);
        CHECK_INT_EQ(h.lock.updates, 0);
        h.mode = H_MANUAL;
        h_run(&h, seen + MS(3000));
        REQUIRE(h.pending);
        CHECK_INT_EQ(h.req_at, seen + MS(3000));
        CHECK_INT_EQ(h.req.req, ELECTION_REQ_UPDATE);
        CHECK_INT_EQ(h.req.purpose, ELECTION_FOR_ACQUIRE);
        CHECK_STR_EQ(h.req.rv, "101");
        CHECK_STR_EQ(h.req.rec.holder, "me");
        CHECK_INT_EQ(h.req.rec.transitions, 3);
        CHECK_INT_EQ(h.req.rec.acquire_wall_ns, h.now.wall_ns);
        h_serve(&h);
        CHECK_INT_EQ(election_core_role(h.c), ELECTION_LEADER);
        CHECK_STR_EQ(h.lock.rec.holder, "me");
        h_free(&h);
    }
}

static void test_uses_record_lease_duration(void)
{
    static const struct {
        int rec_s;
        int64_t expect;
    } rows[] = {{10, MS(10000)}, {1, MS(1000)}, {0, MS(3000)}};
    for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
        struct h h;
        h_setup(&h, "me");
        fake_put(&h.lock, "other", rows[k].rec_s, 0);
        h_start(&h);
        h_watch(&h, true);
        h_serve(&h);
        int64_t seen = h.now.mono_ns;
        h.mode = H_MANUAL;
        h_run(&h, seen + rows[k].expect - MS(1));
        CHECK(!h.pending);
        h_run(&h, seen + rows[k].expect);
        CHECK(h.pending);
        CHECK_INT_EQ(h.req.req, ELECTION_REQ_UPDATE);
        h_free(&h);
    }
}

static void test_empty_holder_taken_at_once(void)
{
    struct h h;
    h_setup(&h, "me");
    fake_put(&h.lock, "", 1, 7);
    h_start(&h);
    h_serve(&h);
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_UPDATE);
    CHECK_INT_EQ(h.req.purpose, ELECTION_FOR_ACQUIRE);
    CHECK_INT_EQ(h.req.rec.transitions, 8); /* "" -> me is a holder change */
    CHECK_INT_EQ(h.req.rec.lease_duration_s, 3);
    h_serve(&h);
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_LEADER);
    CHECK_INT_EQ(h.lock.rec.transitions, 8);
    h_free(&h);
}

static void test_own_identity_reacquired_keeping_record(void)
{
    struct h h;
    h_setup(&h, "me");
    fake_put(&h.lock, "me", 3, 4);
    h.lock.rec.acquire_wall_ns = WALL0 - MS(60000);
    h_start(&h);
    h_serve(&h);
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_UPDATE);
    CHECK_INT_EQ(h.req.rec.transitions, 4);
    CHECK_INT_EQ(h.req.rec.acquire_wall_ns, WALL0 - MS(60000));
    CHECK_INT_EQ(h.req.rec.renew_wall_ns, h.now.wall_ns);
    h_serve(&h);
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_LEADER);
    h_free(&h);
}

static void test_renewal_observed_resets_expiry(void)
{
    struct h h;
    h_setup(&h, "me");
    fake_put(&h.lock, "other", 3, 0);
    h_start(&h);
    h_watch(&h, true);
    h_serve(&h);
    int64_t seen = h.now.mono_ns;
    h.mode = H_MANUAL;
    h_run(&h, seen + MS(2000));
    fake_put(&h.lock, "other", 3, 0); /* the holder renews */
    h_event(&h);
    CHECK_INT_EQ(election_core_observed_time(h.c), seen + MS(2000));
    h_run(&h, seen + MS(4999));
    CHECK(!h.pending);
    h_run(&h, seen + MS(5000));
    CHECK(h.pending);
    h_free(&h);
}

/* A new resourceVersion with the same record counts as a change: some
 * servers bump it on identical writes, and waiting longer is always safe. */
static void test_new_rv_same_record_resets_expiry(void)
{
    struct h h;
    h_setup(&h, "me");
    fake_put(&h.lock, "other", 3, 0);
    h_start(&h);
    h_watch(&h, true);
    h_serve(&h);
    int64_t seen = h.now.mono_ns;
    h.mode = H_MANUAL;
    h_run(&h, seen + MS(1000));
    h.lock.rv++;
    h_event(&h);
    CHECK_INT_EQ(election_core_observed_time(h.c), seen + MS(1000));
    h_run(&h, seen + MS(3500));
    CHECK(!h.pending);
    /* The very same version delivered again changes nothing. */
    h_event(&h);
    CHECK_INT_EQ(election_core_observed_time(h.c), seen + MS(1000));
    h_free(&h);
}

static void test_stale_observation_ignored(void)
{
    struct h h;
    h_setup(&h, "me");
    fake_put(&h.lock, "other", 3, 0);
    h.lock.rv = 205;
    h_start(&h);
    h_watch(&h, true);
    h_serve(&h);
    /* A late answer for an older version, where the lock looked free. */
    struct election_observation o;
    fake_obs(&h.lock, &o);
    snprintf(o.rv, sizeof(o.rv), "204");
    o.rec.holder[0] = '\0';
    o.fingerprint ^= 1;
    election_core_observe(h.c, h.now, &o);
    h_drain(&h);
    CHECK(!h.pending);
    CHECK_STR_EQ(election_core_holder(h.c), "other");
    CHECK_STR_EQ(election_core_observed(h.c)->rv, "205");
    h_free(&h);
}

/* The watch's initial list said "not found" as of an older version than the
 * object our CREATE produced: that answer is late, not a deletion. */
static void test_stale_not_found_ignored(void)
{
    struct h h;
    h_setup(&h, "me");
    h_make_leader(&h);
    CHECK_STR_EQ(election_core_observed(h.c)->rv, "100");
    int from = h.n;
    struct election_observation o;
    memset(&o, 0, sizeof(o));
    o.found = false;
    snprintf(o.rv, sizeof(o.rv), "99");
    election_core_observe(h.c, h.now, &o);
    h_drain(&h);
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_LEADER);
    CHECK_INT_EQ(h_count(&h, from, ELECTION_ACT_STOPPED_LEADING), 0);
    CHECK(!h.pending);
    /* A real deletion comes with a newer version. */
    snprintf(o.rv, sizeof(o.rv), "101");
    election_core_observe(h.c, h.now, &o);
    h_drain(&h);
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_STANDBY);
    h_free(&h);
}

static void test_transitions_count_holder_changes(void)
{
    struct h h;
    h_setup(&h, "me");
    fake_put(&h.lock, "other", 3, 5);
    h_start(&h);
    h_watch(&h, true);
    h_serve(&h);
    h_run(&h, h.now.mono_ns + MS(3100));
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_LEADER);
    CHECK_INT_EQ(h.lock.rec.transitions, 6);
    h_run(&h, h.now.mono_ns + MS(2000)); /* renewals keep it */
    CHECK_INT_EQ(h.lock.rec.transitions, 6);
    CHECK_INT_GE(h.lock.updates, 4);
    h_free(&h);
}

/* ---- leading ------------------------------------------------------------- */

static void test_leader_renews_every_retry_period(void)
{
    struct h h;
    h_setup(&h, "me");
    h_make_leader(&h);
    int from = h.n;
    int64_t start = h.now.mono_ns;
    h_run(&h, start + MS(3000));
    int64_t prev = start;
    int renews = 0;
    for (int i = from; i < h.n; i++) {
        if (h.log[i].kind != ELECTION_ACT_SEND)
            continue;
        CHECK_INT_EQ(h.log[i].req, ELECTION_REQ_UPDATE);
        CHECK_INT_EQ(h.log[i].purpose, ELECTION_FOR_RENEW);
        CHECK_INT_EQ(h.log_at[i] - prev, MS(500));
        prev = h.log_at[i];
        renews++;
    }
    CHECK_INT_EQ(renews, 6);
    CHECK_INT_EQ(election_core_stats(h.c)->renew_ok, 6);
    CHECK_INT_EQ(h_count(&h, from, ELECTION_ACT_STOPPED_LEADING), 0);
    CHECK_INT_EQ(election_core_safe_deadline(h.c), prev + MS(2000));
    CHECK(h_guard(&h));
    CHECK_INT_LE(h.max_gap, MS(500));
    h_free(&h);
}

/* The safe deadline counts from when the renewal was sent, not from when
 * the answer came back. */
static void test_safe_deadline_from_send_time(void)
{
    struct h h;
    h_setup(&h, "me");
    h_make_leader(&h);
    h.mode = H_MANUAL;
    h_run(&h, h.now.mono_ns + MS(500));
    REQUIRE(h.pending);
    int64_t sent = h.req_at;
    CHECK_INT_EQ(h.req.purpose, ELECTION_FOR_RENEW);
    /* Renewal timeout: max(retry, renew/2), bounded by the safe time left. */
    CHECK_INT_EQ(h.req.timeout_ns, MS(1000));
    h_at(&h, sent + MS(700));
    h_serve(&h);
    CHECK_INT_EQ(election_core_safe_deadline(h.c), sent + MS(2000));
    int64_t to = 0;
    CHECK(election_guard_check(&h.guard, h.now.mono_ns, &to, NULL));
    CHECK_INT_EQ(to, MS(1300));
    h_free(&h);
}

static void test_steps_down_at_deadline_and_rejoins(void)
{
    struct h h;
    h_setup(&h, "me");
    h_make_leader(&h);
    int64_t last = h.now.mono_ns; /* the CREATE was the last good write */
    h.mode = H_FAIL;
    int from = h.n;
    h_run(&h, last + MS(1799));
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_LEADER);
    int64_t to = 0;
    CHECK(election_guard_check(&h.guard, last + MS(1799), &to, NULL));
    CHECK_INT_EQ(to, MS(201));
    /* Less than the margin (renew/10 = 200ms) left: refused already. */
    CHECK(!election_guard_check(&h.guard, last + MS(1801), NULL, NULL));
    h_run(&h, last + MS(1999));
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_LEADER);
    h_run(&h, last + MS(2000));
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_STANDBY);
    int sd = h_first(&h, from, ELECTION_ACT_STOPPED_LEADING);
    REQUIRE(sd >= 0);
    CHECK_INT_EQ(h.log_at[sd], last + MS(2000));
    CHECK_INT_EQ(h.log[sd].reason, ELECTION_STOP_DEADLINE);
    CHECK(!h_guard(&h));
    CHECK(!election_core_done(h.c));
    CHECK_INT_GE(election_core_stats(h.c)->renew_failed, 3);
    /* The server comes back: the record still names us, so we take it back. */
    h.mode = H_SERVE;
    h_run(&h, h.now.mono_ns + MS(1500));
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_LEADER);
    CHECK_INT_EQ(election_core_term(h.c), 2);
    CHECK(h_guard(&h));
    h_free(&h);
}

static void test_hanging_renewals_step_down_on_time(void)
{
    struct h h;
    h_setup(&h, "me");
    h_make_leader(&h);
    int64_t last = h.now.mono_ns;
    h.mode = H_TIMEOUT;
    h_run(&h, last + MS(1999));
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_LEADER);
    h_run(&h, last + MS(2000));
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_STANDBY);
    CHECK(!h_guard(&h));
    h_free(&h);
}

static void test_noop_renewal_does_not_extend(void)
{
    struct h h;
    h_setup(&h, "me");
    h_make_leader(&h);
    int64_t deadline = election_core_safe_deadline(h.c);
    h.mode = H_MANUAL;
    h_run(&h, h.now.mono_ns + MS(500));
    REQUIRE(h.pending);
    struct election_observation o;
    fake_obs(&h.lock, &o); /* same RV as sent: the server wrote nothing */
    CHECK_STR_EQ(o.rv, h.req.rv);
    h_answer(&h, ELECTION_OK, &o);
    CHECK_INT_EQ(election_core_safe_deadline(h.c), deadline);
    CHECK_INT_EQ(election_core_stats(h.c)->renew_ok, 0);
    CHECK_INT_EQ(election_core_stats(h.c)->renew_failed, 1);
    h_free(&h);
}

static void test_renew_conflict_refetches_and_renews(void)
{
    struct h h;
    h_setup(&h, "me");
    h_make_leader(&h);
    h.lock.rv += 3; /* someone labelled the lock; no event reached us */
    h.mode = H_MANUAL;
    int from = h.n;
    h_run(&h, h.now.mono_ns + MS(500));
    CHECK_INT_EQ(h_serve(&h), ELECTION_CONFLICT);
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_GET);
    h_serve(&h);
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_UPDATE);
    CHECK_INT_EQ(h.req.purpose, ELECTION_FOR_RENEW);
    CHECK_INT_EQ(h_serve(&h), ELECTION_OK);
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_LEADER);
    CHECK_INT_EQ(election_core_term(h.c), 1);
    CHECK_INT_EQ(h_count(&h, from, ELECTION_ACT_STOPPED_LEADING), 0);
    CHECK_INT_EQ(election_core_stats(h.c)->conflicts, 1);
    /* client-go's slow path: a renewal that needed a GET first */
    CHECK_INT_EQ(election_core_stats(h.c)->slowpath, 1);
    h_free(&h);
}

static void test_renew_conflict_with_new_holder_steps_down(void)
{
    struct h h;
    h_setup(&h, "me");
    h_make_leader(&h);
    fake_put(&h.lock, "other", 3, 1);
    h.mode = H_MANUAL;
    int from = h.n;
    h_run(&h, h.now.mono_ns + MS(500));
    CHECK_INT_EQ(h_serve(&h), ELECTION_CONFLICT);
    CHECK(h_guard(&h)); /* nothing says we lost yet */
    h_serve(&h);        /* GET */
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_STANDBY);
    int sd = h_first(&h, from, ELECTION_ACT_STOPPED_LEADING);
    REQUIRE(sd >= 0);
    CHECK_INT_EQ(h.log[sd].reason, ELECTION_STOP_LOST);
    int nl = h_last(&h, from, ELECTION_ACT_NEW_LEADER);
    REQUIRE(nl >= 0);
    CHECK_STR_EQ(h.log[nl].leader, "other");
    CHECK(!h_guard(&h));
    CHECK(!h.pending);
    h_free(&h);
}

static void test_watch_showing_other_holder_steps_down_at_once(void)
{
    struct h h;
    h_setup(&h, "me");
    h_make_leader(&h);
    int from = h.n;
    fake_put(&h.lock, "other", 3, 1);
    h_event(&h);
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_STANDBY);
    CHECK(!h_guard(&h));
    int sd = h_first(&h, from, ELECTION_ACT_STOPPED_LEADING);
    REQUIRE(sd >= 0);
    CHECK_INT_EQ(h.log[sd].reason, ELECTION_STOP_LOST);
    CHECK(!h.pending);
    h_free(&h);
}

static void test_lock_deleted_while_leading(void)
{
    struct h h;
    h_setup(&h, "me");
    h_make_leader(&h);
    int from = h.n;
    h.lock.found = false;
    h_event(&h);
    int sd = h_first(&h, from, ELECTION_ACT_STOPPED_LEADING);
    REQUIRE(sd >= 0);
    CHECK_INT_EQ(h.log[sd].reason, ELECTION_STOP_DELETED);
    CHECK(!h_guard(&h));
    /* It was ours: nobody else can be leading, re-create at once. */
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_CREATE);
    h_serve(&h);
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_LEADER);
    CHECK_INT_EQ(election_core_term(h.c), 2);
    h_free(&h);
}

static void test_lock_deleted_under_other_holder_waits(void)
{
    struct h h;
    h_setup(&h, "me");
    fake_put(&h.lock, "other", 3, 0);
    h_start(&h);
    h_watch(&h, true);
    h_serve(&h);
    int64_t seen = h.now.mono_ns;
    h.mode = H_MANUAL;
    h_run(&h, seen + MS(1000));
    h.lock.found = false;
    h_event(&h);
    CHECK(!h.pending);
    h_run(&h, seen + MS(2999));
    CHECK(!h.pending);
    h_run(&h, seen + MS(3000));
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_CREATE);
    h_free(&h);
}

/* ---- standby conflicts and failures ------------------------------------- */

static void test_acquire_conflict_refetches(void)
{
    struct h h;
    h_setup(&h, "me");
    fake_put(&h.lock, "", 1, 0);
    h_start(&h);
    h_watch(&h, true);
    h_serve(&h);
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_UPDATE);
    fake_put(&h.lock, "other", 3, 1); /* someone was faster */
    CHECK_INT_EQ(h_serve(&h), ELECTION_CONFLICT);
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_GET);
    h_serve(&h);
    CHECK(!h.pending);
    CHECK_STR_EQ(election_core_holder(h.c), "other");
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_STANDBY);
    int64_t seen = h.now.mono_ns;
    h.mode = H_MANUAL;
    h_run(&h, seen + MS(2999));
    CHECK(!h.pending);
    h_free(&h);
}

static void test_create_conflict_refetches(void)
{
    struct h h;
    h_setup(&h, "me");
    h_start(&h);
    h_serve(&h); /* not found */
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_CREATE);
    fake_put(&h.lock, "other", 3, 0);
    CHECK_INT_EQ(h_serve(&h), ELECTION_CONFLICT); /* AlreadyExists */
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_GET);
    h_serve(&h);
    CHECK(!h.pending);
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_STANDBY);
    h_free(&h);
}

static void test_acquire_failure_looks_before_retrying(void)
{
    static const enum election_outcome outs[] = {ELECTION_FAILED, ELECTION_TIMEOUT};
    for (size_t k = 0; k < 2; k++) {
        struct h h;
        h_setup(&h, "me");
        fake_put(&h.lock, "", 1, 0);
        h_start(&h);
        h_watch(&h, true);
        h_serve(&h);
        REQUIRE(h.pending);
        int64_t failed_at = h.now.mono_ns;
        h_answer(&h, outs[k], NULL);
        CHECK(!h.pending);
        h.mode = H_MANUAL;
        h_run(&h, failed_at + MS(499));
        CHECK(!h.pending);
        h_run(&h, failed_at + MS(600));
        REQUIRE(h.pending);
        CHECK_INT_EQ(h.req.req, ELECTION_REQ_GET);
        h_free(&h);
    }
}

static void test_acquire_answer_too_late_is_not_leadership(void)
{
    struct h h;
    h_setup(&h, "me");
    fake_put(&h.lock, "", 1, 0);
    h_start(&h);
    h_serve(&h);
    REQUIRE(h.pending);
    int from = h.n;
    /* The server applied it at once but the answer took 1.9 s: only 100 ms
     * of the 2 s window left, under the 200 ms margin. */
    h_at(&h, h.now.mono_ns + MS(1900));
    CHECK_INT_EQ(h_serve(&h), ELECTION_OK);
    CHECK_INT_EQ(h_count(&h, from, ELECTION_ACT_STARTED_LEADING), 0);
    /* The record names us: the next write re-acquires with a fresh window. */
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_UPDATE);
    h_serve(&h);
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_LEADER);
    CHECK_INT_EQ(election_core_term(h.c), 1);
    CHECK_INT_EQ(election_core_safe_deadline(h.c), h.now.mono_ns + MS(2000));
    h_free(&h);
}

static void test_unanswered_request_is_abandoned(void)
{
    struct h h;
    h_setup(&h, "me");
    h_start(&h);
    REQUIRE(h.pending);
    uint64_t first = h.req.req_id;
    int64_t sent = h.now.mono_ns;
    h.mode = H_HANG;
    int from = h.n;
    /* GET timeout is renewDeadline; one retry period of grace after it. */
    h_run(&h, sent + MS(2499));
    CHECK_INT_EQ(h_count(&h, from, ELECTION_ACT_CANCEL), 0);
    h_run(&h, sent + MS(2500));
    int cx = h_first(&h, from, ELECTION_ACT_CANCEL);
    REQUIRE(cx >= 0);
    CHECK_INT_EQ(h.log[cx].req_id, first);
    h.mode = H_MANUAL;
    h_run(&h, h.now.mono_ns + MS(700));
    REQUIRE(h.pending);
    CHECK(h.req.req_id != first);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_GET);
    h_free(&h);
}

/* ---- standbys: watching, not polling ------------------------------------ */

static void test_standby_silent_while_watching_polls_when_broken(void)
{
    struct h h;
    h_setup(&h, "me");
    fake_put(&h.lock, "other", 3, 0);
    h_start(&h);
    h_watch(&h, true);
    h_serve(&h);
    int from = h.n;
    int64_t t = h.now.mono_ns;
    for (int i = 0; i < 120; i++) { /* the leader renews for 60 s */
        t += MS(500);
        h_run(&h, t);
        fake_put(&h.lock, "other", 3, 0);
        h_event(&h);
    }
    CHECK_INT_EQ(h_count(&h, from, ELECTION_ACT_SEND), 0);
    CHECK_INT_EQ(h.lock.gets, 1);
    CHECK_INT_LE(h.max_gap, MS(500));
    /* The watch breaks: poll at retryPeriod, jittered up to 1.2x. */
    h_watch(&h, false);
    from = h.n;
    int64_t broke = h.now.mono_ns;
    for (int i = 0; i < 20; i++) {
        t += MS(500);
        h_run(&h, t);
        fake_put(&h.lock, "other", 3, 0); /* still renewing: no takeover */
    }
    int gets = h_count_sends(&h, from, ELECTION_REQ_GET);
    CHECK_INT_GE(gets, 16);
    CHECK_INT_LE(gets, 20);
    CHECK_INT_EQ(h_count_sends(&h, from, ELECTION_REQ_UPDATE), 0);
    int64_t prev = broke;
    for (int i = from; i < h.n; i++) {
        if (h.log[i].kind != ELECTION_ACT_SEND)
            continue;
        CHECK_INT_GE(h.log_at[i] - prev, MS(500));
        CHECK_INT_LE(h.log_at[i] - prev, MS(600));
        prev = h.log_at[i];
    }
    /* Back up: silent again. */
    h_watch(&h, true);
    from = h.n;
    h_run(&h, t + MS(2000));
    CHECK_INT_EQ(h_count(&h, from, ELECTION_ACT_SEND), 0);
    h_free(&h);
}

/* ---- shutdown and release ------------------------------------------------ */

static void test_release_on_shutdown(void)
{
    struct h h;
    h_setup(&h, "me");
    h_make_leader(&h);
    h_run(&h, h.now.mono_ns + MS(1200));
    h.lock.rec.transitions = 3; /* as if earlier terms happened */
    h.lock.rv++;
    h_event(&h);
    int from = h.n;
    h.mode = H_MANUAL;
    election_core_shutdown(h.c, h.now);
    h_drain(&h);
    /* Stopped first, before anything is sent: writes end now. */
    int sd = h_first(&h, from, ELECTION_ACT_STOPPED_LEADING);
    int send = h_first(&h, from, ELECTION_ACT_SEND);
    REQUIRE(sd >= 0 && send >= 0);
    CHECK_INT_LT(sd, send);
    CHECK_INT_EQ(h.log[sd].reason, ELECTION_STOP_SHUTDOWN);
    CHECK(!h_guard(&h));
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_GET);
    CHECK_INT_EQ(h.req.purpose, ELECTION_FOR_RELEASE);
    h_serve(&h);
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_UPDATE);
    CHECK_STR_EQ(h.req.rec.holder, "");
    CHECK_INT_EQ(h.req.rec.lease_duration_s, 1);
    CHECK_INT_EQ(h.req.rec.transitions, 3);
    h_serve(&h);
    int done = h_last(&h, from, ELECTION_ACT_DONE);
    REQUIRE(done >= 0);
    CHECK(h.log[done].released);
    CHECK(election_core_done(h.c));
    CHECK_STR_EQ(h.lock.rec.holder, "");
    CHECK_INT_EQ(h.lock.rec.transitions, 3);
    CHECK_INT_EQ(election_core_next_wakeup(h.c), INT64_MAX);
    h_free(&h);
}

/* client-go's ReleaseOnCancel trusts its cached record and can clear a lock
 * someone else just took. We compare the freshly fetched holder. */
static void test_release_does_not_clear_someone_elses_lock(void)
{
    struct h h;
    h_setup(&h, "me");
    h_make_leader(&h);
    fake_put(&h.lock, "other", 3, 1); /* no event reached us yet */
    uint64_t rv = h.lock.rv;
    int from = h.n;
    election_core_shutdown(h.c, h.now);
    h_drain(&h);
    h_serve(&h); /* the GET */
    CHECK_INT_EQ(h_count_sends(&h, from, ELECTION_REQ_UPDATE), 0);
    int done = h_last(&h, from, ELECTION_ACT_DONE);
    REQUIRE(done >= 0);
    CHECK(!h.log[done].released);
    CHECK_STR_EQ(h.lock.rec.holder, "other");
    CHECK_INT_EQ(h.lock.rv, rv);
    h_free(&h);
}

static void test_release_retries_conflict_with_fresh_get(void)
{
    struct h h;
    h_setup(&h, "me");
    h_make_leader(&h);
    election_core_shutdown(h.c, h.now);
    h_drain(&h);
    h_serve(&h); /* GET */
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_UPDATE);
    h.lock.rv++; /* a late renewal landed in between */
    CHECK_INT_EQ(h_serve(&h), ELECTION_CONFLICT);
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_GET);
    h_serve(&h);
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_UPDATE);
    h_serve(&h);
    CHECK(election_core_done(h.c));
    CHECK_STR_EQ(h.lock.rec.holder, "");
    h_free(&h);
}

static void test_release_bounded_by_renew_deadline(void)
{
    static const enum h_mode modes[] = {H_HANG, H_FAIL, H_TIMEOUT};
    for (size_t k = 0; k < 3; k++) {
        struct h h;
        h_setup(&h, "me");
        h_make_leader(&h);
        int64_t t = h.now.mono_ns;
        h.mode = modes[k];
        int from = h.n;
        election_core_shutdown(h.c, h.now);
        h_drain(&h);
        h_run(&h, t + MS(1999));
        CHECK(!election_core_done(h.c));
        h_run(&h, t + MS(2000));
        CHECK(election_core_done(h.c));
        int done = h_last(&h, from, ELECTION_ACT_DONE);
        REQUIRE(done >= 0);
        CHECK(!h.log[done].released);
        CHECK_INT_LE(h.log_at[done], t + MS(2000));
        if (modes[k] == H_FAIL)
            CHECK_INT_GE(h_count(&h, from, ELECTION_ACT_SEND), 4); /* kept trying */
        h_free(&h);
    }
}

static void test_shutdown_as_standby_is_immediate(void)
{
    struct h h;
    h_setup(&h, "me");
    fake_put(&h.lock, "other", 3, 0);
    h_start(&h);
    h_watch(&h, true);
    h_serve(&h);
    int from = h.n;
    election_core_shutdown(h.c, h.now);
    h_drain(&h);
    CHECK(election_core_done(h.c));
    CHECK_INT_EQ(h_count(&h, from, ELECTION_ACT_SEND), 0);
    CHECK_INT_EQ(h_count(&h, from, ELECTION_ACT_STOPPED_LEADING), 0);
    h_free(&h);
}

static void test_shutdown_during_acquire_releases_what_landed(void)
{
    struct h h;
    h_setup(&h, "me");
    fake_put(&h.lock, "", 1, 0);
    h_start(&h);
    h_serve(&h);
    REQUIRE(h.pending);
    struct election_action acq = h.req;
    int from = h.n;
    election_core_shutdown(h.c, h.now);
    h_drain(&h);
    int cx = h_first(&h, from, ELECTION_ACT_CANCEL);
    REQUIRE(cx >= 0);
    CHECK_INT_EQ(h.log[cx].req_id, acq.req_id);
    /* The cancelled write had reached the server anyway. */
    struct election_observation o;
    CHECK_INT_EQ(fake_apply(&h.lock, &acq, &o), ELECTION_OK);
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_GET);
    h_serve(&h);
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_UPDATE);
    h_serve(&h);
    CHECK(election_core_done(h.c));
    CHECK_STR_EQ(h.lock.rec.holder, "");
    CHECK_INT_EQ(h_count(&h, 0, ELECTION_ACT_STARTED_LEADING), 0);
    h_free(&h);
}

static void test_shutdown_cancels_inflight_renewal(void)
{
    struct h h;
    h_setup(&h, "me");
    h_make_leader(&h);
    h.mode = H_MANUAL;
    h_run(&h, h.now.mono_ns + MS(500));
    REQUIRE(h.pending);
    uint64_t renew = h.req.req_id;
    int from = h.n;
    election_core_shutdown(h.c, h.now);
    h_drain(&h);
    int cx = h_first(&h, from, ELECTION_ACT_CANCEL);
    REQUIRE(cx >= 0);
    CHECK_INT_EQ(h.log[cx].req_id, renew);
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_GET);
    /* A late answer of the cancelled renewal changes nothing. */
    struct election_observation o;
    fake_obs(&h.lock, &o);
    election_core_result(h.c, h.now, renew, ELECTION_OK, &o);
    h_drain(&h);
    CHECK_INT_EQ(election_core_stats(h.c)->stale_results, 1);
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_STANDBY);
    h_free(&h);
}

/* ---- clock jumps --------------------------------------------------------- */

static void test_negative_jump_stops_acting(void)
{
    struct h h;
    h_setup(&h, "me");
    h_make_leader(&h);
    h.mode = H_MANUAL;
    int from = h.n;
    h_at(&h, h.now.mono_ns - MS(1000));
    h_tick(&h);
    int sd = h_first(&h, from, ELECTION_ACT_STOPPED_LEADING);
    REQUIRE(sd >= 0);
    CHECK_INT_EQ(h.log[sd].reason, ELECTION_STOP_CLOCK_JUMP);
    CHECK(!h_guard(&h));
    CHECK_INT_EQ(election_core_stats(h.c)->clock_jumps, 1);
    /* Only a GET until it has answered: no writes in between. */
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_GET);
    h_serve(&h);
    /* The record still names us: take it back with a fresh window. */
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_UPDATE);
    h_serve(&h);
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_LEADER);
    CHECK_INT_EQ(election_core_term(h.c), 2);
    h_free(&h);
}

/* A paused standby (SIGSTOP) wakes up long after the lease "expired" on its
 * stale observation; it must look again and wait a full lease from now. */
static void test_forward_jump_restarts_expiry(void)
{
    struct h h;
    h_setup(&h, "me");
    fake_put(&h.lock, "other", 3, 0);
    h_start(&h);
    h_watch(&h, true);
    h_serve(&h);
    int64_t seen = h.now.mono_ns;
    h.mode = H_MANUAL;
    h_at(&h, seen + MS(10000)); /* no ticks for 10 s */
    h_tick(&h);
    CHECK_INT_EQ(election_core_stats(h.c)->clock_jumps, 1);
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_GET);
    int64_t woke = h.now.mono_ns;
    h_serve(&h); /* unchanged record */
    CHECK(!h.pending);
    h_run(&h, woke + MS(2999));
    CHECK(!h.pending);
    h_run(&h, woke + MS(3000));
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_UPDATE);
    h_free(&h);
}

static void test_forward_jump_paused_leader(void)
{
    struct h h;
    h_setup(&h, "me");
    h_make_leader(&h);
    h.mode = H_MANUAL;
    h_run(&h, h.now.mono_ns + MS(500));
    REQUIRE(h.pending); /* a renewal in flight when the process stops */
    uint64_t renew = h.req.req_id;
    int from = h.n;
    h_at(&h, h.now.mono_ns + MS(5000));
    /* Writers wake up before the elector does: the guard alone says no. */
    CHECK(!h_guard(&h));
    h_tick(&h);
    int sd = h_first(&h, from, ELECTION_ACT_STOPPED_LEADING);
    REQUIRE(sd >= 0);
    CHECK_INT_EQ(h.log[sd].reason, ELECTION_STOP_CLOCK_JUMP);
    int cx = h_first(&h, from, ELECTION_ACT_CANCEL);
    REQUIRE(cx >= 0);
    CHECK_INT_EQ(h.log[cx].req_id, renew);
    /* Meanwhile another replica took over. */
    fake_put(&h.lock, "other", 3, 1);
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_GET);
    h_serve(&h);
    CHECK(!h.pending);
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_STANDBY);
    CHECK(!election_core_done(h.c));
    CHECK_STR_EQ(election_core_holder(h.c), "other");
    h_free(&h);
}

static void test_heartbeat_bounds_wakeups(void)
{
    struct h h;
    h_setup(&h, "me");
    fake_put(&h.lock, "other", 600, 0); /* a 10-minute lease */
    h_start(&h);
    h_watch(&h, true);
    h_serve(&h);
    CHECK_INT_EQ(election_core_next_wakeup(h.c) - h.now.mono_ns, MS(500));
    h_run(&h, h.now.mono_ns + MS(60000));
    CHECK_INT_LE(h.max_gap, MS(500));
    CHECK_INT_EQ(election_core_stats(h.c)->clock_jumps, 0);
    h_free(&h);
}

/* ---- planned handover ---------------------------------------------------- */

static void test_planned_handover_releases_at_next_renewal(void)
{
    struct h h;
    h_setup(&h, "me");
    h_make_leader(&h);
    h_run(&h, h.now.mono_ns + MS(100));
    snprintf(h.lock.rec.preferred_holder, sizeof(h.lock.rec.preferred_holder), "b");
    snprintf(h.lock.rec.strategy, sizeof(h.lock.rec.strategy), "OldestEmulationVersion");
    h.lock.rv++;
    h_event(&h);
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_LEADER); /* not before the renewal */
    h.mode = H_MANUAL;
    int from = h.n;
    h_run(&h, h.now.mono_ns + MS(400));
    int sd = h_first(&h, from, ELECTION_ACT_STOPPED_LEADING);
    REQUIRE(sd >= 0);
    CHECK_INT_EQ(h.log[sd].reason, ELECTION_STOP_HANDOVER);
    CHECK(!h_guard(&h));
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_UPDATE);
    CHECK_INT_EQ(h.req.purpose, ELECTION_FOR_RELEASE);
    CHECK_STR_EQ(h.req.rec.holder, "");
    CHECK_INT_EQ(h.req.rec.lease_duration_s, 1);
    CHECK_STR_EQ(h.req.rec.preferred_holder, "b");
    CHECK_STR_EQ(h.req.rec.strategy, "OldestEmulationVersion");
    h_serve(&h);
    int64_t released = h.now.mono_ns;
    CHECK(!election_core_done(h.c));
    /* "b" does not come: after the released record's 1 s we take it back,
     * and do not hand over to the no-show again. */
    h_run(&h, released + MS(999));
    CHECK(!h.pending);
    h_run(&h, released + MS(1000));
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.purpose, ELECTION_FOR_ACQUIRE);
    h.mode = H_SERVE;
    from = h.n;
    h_run(&h, h.now.mono_ns + MS(3000));
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_LEADER);
    CHECK_INT_EQ(h_count(&h, from, ELECTION_ACT_STOPPED_LEADING), 0);
    CHECK_STR_EQ(h.lock.rec.preferred_holder, "b");
    h_free(&h);
}

static void test_preferred_standby_takes_released_lock_at_once(void)
{
    struct h b, c;
    h_setup(&b, "b");
    h_setup(&c, "c");
    struct h *hs[2] = {&b, &c};
    for (int i = 0; i < 2; i++) {
        fake_put(&hs[i]->lock, "", 1, 4);
        snprintf(hs[i]->lock.rec.preferred_holder, ELECTION_IDENTITY_MAX, "b");
        h_start(hs[i]);
        h_watch(hs[i], true);
        hs[i]->mode = H_MANUAL;
        h_serve(hs[i]);
    }
    REQUIRE(b.pending);
    CHECK_INT_EQ(b.req.purpose, ELECTION_FOR_ACQUIRE);
    CHECK(!c.pending);
    int64_t seen = c.now.mono_ns;
    h_run(&c, seen + MS(999));
    CHECK(!c.pending);
    h_run(&c, seen + MS(1000));
    CHECK(c.pending);
    h_free(&b);
    h_free(&c);
}

/* preferredHolder "*" (`coxswain handover --any`): the leader hands over;
 * a standby takes the released lock at once, the replica that released it
 * only after the released record's second; the taker's record drops the
 * request, so a second "any" is seen again. */
static void test_handover_to_any(void)
{
    struct h h;
    h_setup(&h, "me");
    h_make_leader(&h);
    h_run(&h, h.now.mono_ns + MS(100));
    snprintf(h.lock.rec.preferred_holder, sizeof(h.lock.rec.preferred_holder), "%s",
             ELECTION_PREFERRED_ANY);
    h.lock.rv++;
    h_event(&h);
    h.mode = H_MANUAL;
    int from = h.n;
    h_run(&h, h.now.mono_ns + MS(400));
    int sd = h_first(&h, from, ELECTION_ACT_STOPPED_LEADING);
    REQUIRE(sd >= 0);
    CHECK_INT_EQ(h.log[sd].reason, ELECTION_STOP_HANDOVER);
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.purpose, ELECTION_FOR_RELEASE);
    CHECK_STR_EQ(h.req.rec.preferred_holder, ELECTION_PREFERRED_ANY);
    h_serve(&h);
    int64_t released = h.now.mono_ns;
    /* we released it: "any" is the others, for the released record's 1 s */
    h_run(&h, released + MS(999));
    CHECK(!h.pending);
    h_run(&h, released + MS(1000));
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.purpose, ELECTION_FOR_ACQUIRE);
    CHECK_STR_EQ(h.req.rec.preferred_holder, ""); /* the request is consumed */
    h.mode = H_SERVE;
    h_run(&h, h.now.mono_ns + MS(1000));
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_LEADER);
    CHECK_STR_EQ(h.lock.rec.preferred_holder, "");
    /* a second "any" is not ignored */
    snprintf(h.lock.rec.preferred_holder, sizeof(h.lock.rec.preferred_holder), "%s",
             ELECTION_PREFERRED_ANY);
    h.lock.rv++;
    h_event(&h);
    from = h.n;
    h.mode = H_MANUAL;
    h_run(&h, h.now.mono_ns + MS(600));
    CHECK_INT_EQ(h_count(&h, from, ELECTION_ACT_STOPPED_LEADING), 1);
    h_free(&h);

    /* a standby that did not release takes it at once */
    struct h s;
    h_setup(&s, "s");
    fake_put(&s.lock, "", 1, 4);
    snprintf(s.lock.rec.preferred_holder, ELECTION_IDENTITY_MAX, "%s", ELECTION_PREFERRED_ANY);
    h_start(&s);
    h_watch(&s, true);
    s.mode = H_MANUAL;
    h_serve(&s);
    REQUIRE(s.pending);
    CHECK_INT_EQ(s.req.purpose, ELECTION_FOR_ACQUIRE);
    CHECK_STR_EQ(s.req.rec.preferred_holder, "");
    h_free(&s);
}

/* Proof of death (election_core_holder_dead): a proof for the record the
 * core holds takes the lock at once (cause proof-of-death, precondition
 * that record's version); a proof for an older version, for another
 * holder, or voided by a newer version (a late renewal) changes nothing:
 * the lease decides. */
static void test_proof_of_death(void)
{
    struct h h;
    h_setup(&h, "me");
    fake_put(&h.lock, "old", 15, 2);
    h_start(&h);
    h_watch(&h, true);
    h.mode = H_MANUAL;
    h_serve(&h); /* the GET */
    CHECK(!h.pending);
    char rv[32], stale[32];
    snprintf(rv, sizeof(rv), "%llu", (unsigned long long)h.lock.rv);
    snprintf(stale, sizeof(stale), "%llu", (unsigned long long)h.lock.rv - 1);
    election_core_holder_dead(h.c, h.now, "old", stale);
    h_drain(&h);
    CHECK(!h.pending);
    election_core_holder_dead(h.c, h.now, "other", rv);
    h_drain(&h);
    CHECK(!h.pending);
    /* a newer version (a renewal that landed after the connection ended)
     * voids a proof about the older one */
    fake_put(&h.lock, "old", 15, 2);
    h_event(&h);
    election_core_holder_dead(h.c, h.now, "old", rv);
    h_drain(&h);
    CHECK(!h.pending);
    snprintf(rv, sizeof(rv), "%llu", (unsigned long long)h.lock.rv);
    h_run(&h, h.now.mono_ns + MS(100));
    election_core_holder_dead(h.c, h.now, "old", rv);
    h_drain(&h);
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_UPDATE);
    CHECK_INT_EQ(h.req.purpose, ELECTION_FOR_ACQUIRE);
    CHECK_STR_EQ(h.req.rv, rv);
    CHECK_INT_EQ(h.req.rec.transitions, 3);
    int from = h.n;
    h_serve(&h);
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_LEADER);
    int st = h_first(&h, from, ELECTION_ACT_STARTED_LEADING);
    REQUIRE(st >= 0);
    CHECK_INT_EQ(h.log[st].took, ELECTION_TAKE_DEAD);
    CHECK_INT_EQ(election_core_stats(h.c)->proofs, 1);
    CHECK_STR_EQ(election_takeover_name(ELECTION_TAKE_DEAD), "proof-of-death");
    h_free(&h);

    /* a proof while a conflicting renewal lands: the 409 wins, the fresh
     * record voids the proof, the lease decides again */
    h_setup(&h, "me");
    fake_put(&h.lock, "old", 15, 2);
    h_start(&h);
    h_watch(&h, true);
    h.mode = H_MANUAL;
    h_serve(&h);
    snprintf(rv, sizeof(rv), "%llu", (unsigned long long)h.lock.rv);
    fake_put(&h.lock, "old", 15, 2); /* renewed; no event reached us yet */
    election_core_holder_dead(h.c, h.now, "old", rv);
    h_drain(&h);
    REQUIRE(h.pending);
    CHECK_INT_EQ(h_serve(&h), ELECTION_CONFLICT);
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_GET);
    h_serve(&h);
    CHECK(!h.pending); /* the renewed record: its lease runs */
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_STANDBY);
    h_free(&h);
}

static void test_lease_seconds_rounded_up(void)
{
    struct h h;
    h_setup_cfg(&h, "me", MS(2500), MS(1500), MS(500));
    h_start(&h);
    h_serve(&h);
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.rec.lease_duration_s, 3);
    h_free(&h);
}

static void test_long_foreign_identity_never_matches_ours(void)
{
    struct h h;
    h_setup(&h, "me");
    fake_put(&h.lock, "me", 3, 0);
    h.lock.rec.holder_overflow = true; /* "me" + more than the cap */
    h_start(&h);
    h_watch(&h, true);
    h.mode = H_MANUAL;
    h_serve(&h);
    CHECK(!h.pending); /* not ours: wait for expiry */
    h_run(&h, h.now.mono_ns + MS(3000));
    CHECK(h.pending);
    h_free(&h);
}

static const struct cxt_case cases[] = {
    CXT(test_creates_missing_lock),
    CXT(test_takeover_on_local_expiry_not_renew_time),
    CXT(test_uses_record_lease_duration),
    CXT(test_empty_holder_taken_at_once),
    CXT(test_own_identity_reacquired_keeping_record),
    CXT(test_renewal_observed_resets_expiry),
    CXT(test_new_rv_same_record_resets_expiry),
    CXT(test_stale_observation_ignored),
    CXT(test_stale_not_found_ignored),
    CXT(test_transitions_count_holder_changes),
    CXT(test_leader_renews_every_retry_period),
    CXT(test_safe_deadline_from_send_time),
    CXT(test_steps_down_at_deadline_and_rejoins),
    CXT(test_hanging_renewals_step_down_on_time),
    CXT(test_noop_renewal_does_not_extend),
    CXT(test_renew_conflict_refetches_and_renews),
    CXT(test_renew_conflict_with_new_holder_steps_down),
    CXT(test_watch_showing_other_holder_steps_down_at_once),
    CXT(test_lock_deleted_while_leading),
    CXT(test_lock_deleted_under_other_holder_waits),
    CXT(test_acquire_conflict_refetches),
    CXT(test_create_conflict_refetches),
    CXT(test_acquire_failure_looks_before_retrying),
    CXT(test_acquire_answer_too_late_is_not_leadership),
    CXT(test_unanswered_request_is_abandoned),
    CXT(test_standby_silent_while_watching_polls_when_broken),
    CXT(test_release_on_shutdown),
    CXT(test_release_does_not_clear_someone_elses_lock),
    CXT(test_release_retries_conflict_with_fresh_get),
    CXT(test_release_bounded_by_renew_deadline),
    CXT(test_shutdown_as_standby_is_immediate),
    CXT(test_shutdown_during_acquire_releases_what_landed),
    CXT(test_shutdown_cancels_inflight_renewal),
    CXT(test_negative_jump_stops_acting),
    CXT(test_forward_jump_restarts_expiry),
    CXT(test_forward_jump_paused_leader),
    CXT(test_heartbeat_bounds_wakeups),
    CXT(test_planned_handover_releases_at_next_renewal),
    CXT(test_preferred_standby_takes_released_lock_at_once),
    CXT(test_handover_to_any),
    CXT(test_proof_of_death),
    CXT(test_lease_seconds_rounded_up),
    CXT(test_long_foreign_identity_never_matches_ours),
};
CXT_MAIN(cases)
