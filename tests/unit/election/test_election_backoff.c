/* The elector never loops without backoff: whatever the server answers,
 * however fast, requests after failures in a row are spaced by a growing,
 * jittered wait (a standby: retryPeriod doubling up to 4 x retryPeriod; the
 * leader: never beyond its renew cadence, so transient errors still let it
 * renew before the deadline). Durations 3s / 2s / 500ms. */
#include "harness.h"

#define RETRY MS(500)
#define CAP   MS(2000) /* 4 x retryPeriod */

/* Gaps between consecutive SEND actions logged from |from| on. */
static int gaps(const struct h *h, int from, int64_t *out, int max)
{
    int n = 0;
    int64_t prev = -1;
    for (int i = from; i < h->n && n < max; i++) {
        if (h->log[i].kind != ELECTION_ACT_SEND)
            continue;
        if (prev >= 0)
            out[n++] = h->log_at[i] - prev;
        prev = h->log_at[i];
    }
    return n;
}

static int sends(const struct h *h, int from)
{
    return h_count(h, from, ELECTION_ACT_SEND);
}

/* `--namespace nosuchns`: the lock is missing and every CREATE answers 404
 * (its namespace does not exist). Before: a CREATE right after each 404,
 * thousands per second. */
static void test_missing_namespace_backs_off(void)
{
    struct h h;
    h_setup(&h, "me");
    h.mode = H_FIXED;
    h.fixed = ELECTION_NOT_FOUND;
    h.fixed_req = ELECTION_REQ_CREATE;
    h_start(&h);
    h_watch(&h, true);
    int from = h.n;
    h_run(&h, T0 + MS(60000));
    int n = sends(&h, from);
    CHECK_INT_EQ(h_count_sends(&h, from, ELECTION_REQ_CREATE) +
                     h_count_sends(&h, from, ELECTION_REQ_GET),
                 n);
    /* 0.5, 1, 2, 2, ... s (x [1, 1.2)): at most 60/2 + 3 in 60 s. */
    CHECK_INT_LE(n, 33);
    CHECK_INT_GE(n, 22); /* still trying, at the cap */
    int64_t g[64];
    int ng = gaps(&h, from, g, 64);
    REQUIRE(ng >= 5);
    CHECK_INT_GE(g[0], RETRY);
    CHECK_INT_LT(g[0], RETRY * 12 / 10);
    CHECK_INT_GE(g[1], 2 * RETRY);
    for (int i = 2; i < ng; i++) {
        CHECK_INT_GE(g[i], CAP);
        CHECK_INT_LT(g[i], CAP * 12 / 10);
    }
    /* Jittered: not every wait the same. */
    int same = 1;
    for (int i = 3; i < ng; i++)
        same &= g[i] == g[2];
    CHECK(!same);
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_STANDBY);
    h_free(&h);
}

/* Every UPDATE answers 409 while a GET keeps returning the same object (a
 * precondition the server keeps refusing): the first conflict is followed
 * by a GET at once, conflicts in a row back off. */
static void test_conflicts_in_a_row_back_off(void)
{
    struct h h;
    h_setup(&h, "me");
    fake_put(&h.lock, "", 1, 4); /* released: taken at once */
    h.mode = H_FIXED;
    h.fixed = ELECTION_CONFLICT;
    h.fixed_req = ELECTION_REQ_UPDATE;
    h_start(&h);
    h_watch(&h, true);
    int from = h.n;
    h_run(&h, T0 + MS(60000));
    int updates = h_count_sends(&h, from, ELECTION_REQ_UPDATE);
    int gets = h_count_sends(&h, from, ELECTION_REQ_GET);
    /* One UPDATE and one GET per step; steps 0, 0.5, 1, 2, 2, ... s. */
    CHECK_INT_LE(updates, 34);
    CHECK_INT_GE(updates, 25);
    CHECK_INT_LE(gets, 34);
    /* The first conflict: the GET right away (an answer, not a fault). */
    int u = -1;
    for (int i = from; i < h.n; i++)
        if (h.log[i].kind == ELECTION_ACT_SEND && h.log[i].req == ELECTION_REQ_UPDATE) {
            u = i;
            break;
        }
    REQUIRE(u >= 0);
    int gi = -1;
    for (int i = u + 1; i < h.n; i++)
        if (h.log[i].kind == ELECTION_ACT_SEND) {
            gi = i;
            break;
        }
    REQUIRE(gi > u);
    CHECK_INT_EQ(h.log[gi].req, ELECTION_REQ_GET);
    CHECK_INT_EQ(h.log_at[gi], h.log_at[u]);
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_STANDBY);
    h_free(&h);
}

/* A standby whose acquisitions fail (5xx, 403, 429...: FAILED) or time out
 * looks (GET) before each new try, and the tries back off to the cap. */
static void test_failed_and_timed_out_writes_back_off(void)
{
    static const enum election_outcome outs[] = {ELECTION_FAILED, ELECTION_TIMEOUT};
    for (size_t k = 0; k < 2; k++) {
        struct h h;
        h_setup(&h, "me");
        fake_put(&h.lock, "other", 3, 1);
        h.mode = H_FIXED;
        h.fixed = outs[k];
        h.fixed_req = ELECTION_REQ_UPDATE;
        h_start(&h);
        h_watch(&h, true);
        int from = h.n;
        h_run(&h, T0 + MS(63000)); /* the lease ran out after 3 s */
        int updates = h_count_sends(&h, from, ELECTION_REQ_UPDATE);
        CHECK_INT_LE(updates, 33);
        CHECK_INT_GE(updates, 22);
        CHECK_INT_LE(h_count_sends(&h, from, ELECTION_REQ_GET), 34);
        h_free(&h);
    }
}

/* The watch is down and every GET fails: polls back off too. */
static void test_failed_polls_back_off(void)
{
    struct h h;
    h_setup(&h, "me");
    fake_put(&h.lock, "other", 3, 1);
    h_start(&h);
    h_serve(&h); /* the first GET works, then the API fails every read */
    h.mode = H_FIXED;
    h.fixed = ELECTION_FAILED;
    h.fixed_req = 0;
    int from = h.n;
    h_run(&h, T0 + MS(60000));
    CHECK_INT_LE(sends(&h, from), 33);
    CHECK_INT_GE(sends(&h, from), 22);
    h_free(&h);
}

/* A no-op answer (the server kept the resourceVersion) proves nothing and
 * is no success either: it backs off. */
static void test_noop_answers_back_off(void)
{
    struct h h;
    h_setup(&h, "me");
    fake_put(&h.lock, "", 1, 0);
    h_start(&h);
    h_watch(&h, true);
    h.mode = H_MANUAL;
    int from = h.n;
    for (int i = 0; i < 200 && h.now.mono_ns < T0 + MS(30000); i++) {
        h_run(&h, T0 + MS(30000));
        if (!h.pending)
            break;
        struct election_observation o;
        fake_obs(&h.lock, &o);
        h_answer(&h, ELECTION_OK, &o); /* the same version: a no-op */
    }
    CHECK_INT_LE(sends(&h, from), 18);
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_STANDBY);
    h_free(&h);
}

/* The leader's renewals keep their cadence under errors (a failed renewal
 * is retried at the next slot, never later): two failures in a row and the
 * third renewal succeeds well before the deadline. */
static void test_leader_renews_on_cadence_through_transient_errors(void)
{
    struct h h;
    h_setup(&h, "me");
    h_make_leader(&h);
    int64_t t0 = h.now.mono_ns;
    h.mode = H_FAIL;
    int from = h.n;
    h_run(&h, t0 + MS(1200)); /* renewals at 500 and 1000 fail */
    CHECK_INT_EQ(h_count_sends(&h, from, ELECTION_REQ_UPDATE), 2);
    h.mode = H_SERVE;
    h_run(&h, t0 + MS(1600));
    CHECK_INT_EQ(h_count_sends(&h, from, ELECTION_REQ_UPDATE), 3);
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_LEADER);
    CHECK_INT_EQ(election_core_safe_deadline(h.c), t0 + MS(1500) + MS(2000));
    int64_t g[8];
    int ng = gaps(&h, from, g, 8);
    REQUIRE(ng >= 2);
    CHECK_INT_EQ(g[0], RETRY);
    CHECK_INT_EQ(g[1], RETRY);
    h_free(&h);
}

/* A renewal that times out late: the retry comes after the leader's backoff,
 * at most one retryPeriod later, and the leader still steps down exactly at
 * its deadline if nothing succeeds. */
static void test_leader_backoff_never_beyond_a_retry_period(void)
{
    struct h h;
    h_setup(&h, "me");
    h_make_leader(&h);
    int64_t last = h.now.mono_ns;
    h.mode = H_FIXED;
    h.fixed = ELECTION_CONFLICT; /* every renewal 409, every GET says we hold it */
    h.fixed_req = ELECTION_REQ_UPDATE;
    int from = h.n;
    h_run(&h, last + MS(1999));
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_LEADER);
    int64_t g[64];
    int ng = gaps(&h, from, g, 64);
    for (int i = 0; i < ng; i++)
        CHECK_INT_LE(g[i], RETRY);
    h_run(&h, last + MS(2000));
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_STANDBY);
    /* Bounded: 1.5 s of conflicts, GET + UPDATE per step. */
    CHECK_INT_LE(sends(&h, from), 12);
    h_free(&h);
}

/* Backoff at the cap, then the watch breaks and comes back (a fresh list
 * answered): the next try is made at once. */
static void test_watch_back_resets_the_backoff(void)
{
    struct h h;
    h_setup(&h, "me");
    h.mode = H_FIXED;
    h.fixed = ELECTION_NOT_FOUND;
    h.fixed_req = ELECTION_REQ_CREATE;
    h_start(&h);
    h_watch(&h, true);
    h_run(&h, T0 + MS(20000));
    int64_t w = election_core_next_wakeup(h.c);
    CHECK_INT_GT(w - h.now.mono_ns, MS(100));
    h_watch(&h, false);
    h_at(&h, h.now.mono_ns + MS(10));
    h.mode = H_SERVE; /* the namespace exists now */
    int from = h.n;
    h_watch(&h, true);
    REQUIRE(h.pending);
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_CREATE);
    CHECK_INT_EQ(h.log_at[h_first(&h, from, ELECTION_ACT_SEND)], h.now.mono_ns);
    h_serve(&h);
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_LEADER);
    h_free(&h);
}

/* A success ends the streak: the next failure waits the first step again. */
static void test_success_resets_the_backoff(void)
{
    struct h h;
    h_setup(&h, "me");
    h.mode = H_FIXED;
    h.fixed = ELECTION_NOT_FOUND;
    h.fixed_req = ELECTION_REQ_CREATE;
    h_start(&h);
    h_watch(&h, true);
    h_run(&h, T0 + MS(20000)); /* at the cap */
    h.mode = H_SERVE;
    h_run(&h, T0 + MS(23000));
    REQUIRE(election_core_role(h.c) == ELECTION_LEADER);
    /* Someone deletes the lock and then its namespace: the CREATE fails. */
    h.lock.found = false;
    h_event(&h);
    CHECK_INT_EQ(election_core_role(h.c), ELECTION_STANDBY);
    REQUIRE(h.pending); /* the CREATE, at once */
    CHECK_INT_EQ(h.req.req, ELECTION_REQ_CREATE);
    h.mode = H_FIXED;
    int from = h.n - 1;
    h_run(&h, h.now.mono_ns + MS(2000));
    int64_t g[8];
    int ng = gaps(&h, from, g, 8);
    REQUIRE(ng >= 1);
    CHECK_INT_GE(g[0], RETRY);
    CHECK_INT_LT(g[0], RETRY * 12 / 10);
    h_free(&h);
}

static const struct cxt_case cases[] = {
    CXT(test_missing_namespace_backs_off),
    CXT(test_conflicts_in_a_row_back_off),
    CXT(test_failed_and_timed_out_writes_back_off),
    CXT(test_failed_polls_back_off),
    CXT(test_noop_answers_back_off),
    CXT(test_leader_renews_on_cadence_through_transient_errors),
    CXT(test_leader_backoff_never_beyond_a_retry_period),
    CXT(test_watch_back_resets_the_backoff),
    CXT(test_success_resets_the_backoff),
};
CXT_MAIN(cases)
