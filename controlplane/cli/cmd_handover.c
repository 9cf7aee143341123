/*
 * `coxswain handover`: a planned handover. Asks the current leader to hand
 * the lock over at its next renewal by setting the record's preferredHolder
 * (--to IDENTITY, or ELECTION_PREFERRED_ANY with --any), on either lock
 * kind, then waits until another replica leads and prints who.
 *
 * The command never writes the holder: it changes only preferredHolder,
 * with the resourceVersion it read as the precondition (a renewal racing it
 * turns into a 409 and a fresh read). The leader steps down at its next
 * renewal (its write guard closes first) and releases; the named replica
 * takes the released lock at once, the others only after the released
 * record's 1 s (docs/election.md). A named identity that is not a live
 * candidate does not come for the lock: someone else takes it after that
 * second, and the command says so and exits 1.
 *
 * A Lease's preferredHolder is only accepted with a strategy (the API
 * server's rule); the command sets "OldestEmulationVersion" when none is
 * set. An API server whose CoordinatedLeaderElection feature gate is off
 * drops both fields: the command notices (the answer lacks them) and says
 * so instead of waiting.
 */
#include "cli.h"
#include "cx_flags.h"
#include "cx_json.h"
#include "cx_time.h"
#include "election_config.h"
#include "election_record.h"
#include "kube_client.h"
#include "kube_config.h"

#include <event2/event.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POLL_MS      100
#define MAX_CONFLICT 10
#define LEASE_STRAT  "OldestEmulationVersion"

static const struct kube_resource res_leases = {"coordination.k8s.io", "v1", "leases", "Lease", 1};
static const struct kube_resource res_cms = {"", "v1", "configmaps", "ConfigMap", 1};

enum phase {
    PH_ASK = 0,  /* reading the lock, then setting preferredHolder */
    PH_WAIT = 1, /* polling until another replica leads */
};

struct ho {
    struct event_base *base;
    struct kube_client *kc;
    struct event *timer;
    const struct election_config *cfg;
    const struct kube_resource *res;
    const char *to; /* identity, or ELECTION_PREFERRED_ANY */
    enum phase phase;
    int conflicts;
    int64_t t0, deadline;
    char old[ELECTION_IDENTITY_MAX];
    bool released; /* the old leader let go (holder "" seen) */
    int rc;
};

static void finish(struct ho *h, int rc)
{
    h->rc = rc;
    event_base_loopbreak(h->base);
}

static void say_error(const struct ho *h, const char *verb, const struct kube_result *r)
{
    fprintf(stderr, "coxswain handover: %s %s %s/%s: HTTP %d: %s\n", verb, h->res->plural,
            h->cfg->ns, h->cfg->name, r->http_status,
            r->err.message[0] ? r->err.message : "no answer");
}

static void on_got(struct kube_result *r, void *arg);

static void get_lock(struct ho *h)
{
    struct kube_req_opts o = {.timeout_ms = 5000, .max_attempts = 1};
    if (!kube_get(h->kc, h->res, h->cfg->ns, h->cfg->name, &o, on_got, h)) {
        fprintf(stderr, "coxswain handover: cannot send a request\n");
        finish(h, 1);
    }
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    get_lock(arg);
}

static void poll_later(struct ho *h)
{
    if (cx_mono_ns() >= h->deadline) {
        fprintf(stderr,
                "coxswain handover: %s still leads %s %s/%s after the timeout: it has not "
                "renewed since (paused or cut off from the API?); its lease decides\n",
                h->old, h->res->kind, h->cfg->ns, h->cfg->name);
        finish(h, 1);
        return;
    }
    struct timeval tv = {0, POLL_MS * 1000};
    evtimer_add(h->timer, &tv);
}

static void on_put(struct kube_result *r, void *arg)
{
    struct ho *h = arg;
    if (r->err.code != KUBE_OK) {
        if (r->http_status == 409 && ++h->conflicts < MAX_CONFLICT) {
            get_lock(h); /* the leader renewed meanwhile: read and ask again */
            return;
        }
        say_error(h, "update", r);
        finish(h, 1);
        return;
    }
    struct election_observation ob;
    election_record_decode(h->cfg->lock, r->object, &ob);
    if (strcmp(ob.rec.preferred_holder, h->to) != 0) {
        fprintf(stderr,
                "coxswain handover: the API server dropped preferredHolder from %s %s/%s (for a "
                "Lease: the CoordinatedLeaderElection feature gate is off); use "
                "--leader-elect-resource-lock=configmaps, or SIGTERM the leader\n",
                h->res->kind, h->cfg->ns, h->cfg->name);
        finish(h, 1);
        return;
    }
    printf("handover: asked %s to hand %s %s/%s over to %s\n", h->old, h->res->kind, h->cfg->ns,
           h->cfg->name, strcmp(h->to, ELECTION_PREFERRED_ANY) == 0 ? "any standby" : h->to);
    fflush(stdout);
    h->phase = PH_WAIT;
    poll_later(h);
}

static void ask(struct ho *h, const cJSON *obj, const struct election_observation *ob)
{
    struct election_record rec = ob->rec;
    snprintf(rec.preferred_holder, sizeof(rec.preferred_holder), "%s", h->to);
    if (h->cfg->lock == ELECTION_LOCK_LEASES && !rec.strategy[0])
        snprintf(rec.strategy, sizeof(rec.strategy), "%s", LEASE_STRAT);
    cJSON *put =
        election_record_update_object(h->cfg->lock, obj, h->cfg->ns, h->cfg->name, ob->rv, &rec);
    struct kube_req_opts o = {.timeout_ms = 5000, .max_attempts = 1};
    if (!put || !kube_update(h->kc, h->res, h->cfg->ns, put, 0, &o, on_put, h)) {
        fprintf(stderr, "coxswain handover: cannot send the update\n");
        finish(h, 1);
    }
    cJSON_Delete(put);
}

static void on_got(struct kube_result *r, void *arg)
{
    struct ho *h = arg;
    if (r->err.code != KUBE_OK) {
        if (r->http_status == 404)
            fprintf(stderr, "coxswain handover: no lock %s %s/%s: nobody leads\n", h->res->kind,
                    h->cfg->ns, h->cfg->name);
        else
            say_error(h, "get", r);
        if (h->phase == PH_WAIT && r->http_status != 404) {
            poll_later(h); /* a failed poll is not the end */
            return;
        }
        finish(h, 1);
        return;
    }
    struct election_observation ob;
    election_record_decode(h->cfg->lock, r->object, &ob);
    const char *holder = ob.rec.holder_overflow ? "" : ob.rec.holder;
    if (h->phase == PH_ASK) {
        if (ob.rec.holder_overflow) {
            fprintf(stderr, "coxswain handover: %s %s/%s holds no record coxswain can read\n",
                    h->res->kind, h->cfg->ns, h->cfg->name);
            finish(h, 1);
            return;
        }
        if (!holder[0]) {
            fprintf(stderr, "coxswain handover: nobody leads %s %s/%s (released or never taken)\n",
                    h->res->kind, h->cfg->ns, h->cfg->name);
            finish(h, 1);
            return;
        }
        if (strcmp(holder, h->to) == 0) {
            printf("handover: %s leads already\n", holder);
            finish(h, 0);
            return;
        }
        if (h->conflicts == 0)
            snprintf(h->old, sizeof(h->old), "%s", holder);
        else if (strcmp(holder, h->old) != 0) {
            /* Leadership moved by itself between two tries. */
            printf("handover: %s leads (was %s) after %" PRId64 " ms\n", holder, h->old,
                   (cx_mono_ns() - h->t0) / 1000000);
            finish(h, 0);
            return;
        }
        ask(h, r->object, &ob);
        return;
    }
    if (!holder[0])
        h->released = true;
    /* After a release the old leader may take the lock back (a no-show
     * named, the released record's second over): that is an answer too. */
    if (!holder[0] || (strcmp(holder, h->old) == 0 && !h->released)) {
        poll_later(h);
        return;
    }
    int64_t ms = (cx_mono_ns() - h->t0) / 1000000;
    if (strcmp(h->to, ELECTION_PREFERRED_ANY) != 0 && strcmp(holder, h->to) != 0) {
        fprintf(stderr,
                "coxswain handover: %s did not come for the lock: not a live candidate (no "
                "replica runs with that identity; `kubectl logs` of a replica shows its "
                "identity); %s took it after %" PRId64 " ms (was %s)\n",
                h->to, holder, ms, h->old);
        finish(h, 1);
        return;
    }
    printf("handover: %s leads (was %s) after %" PRId64 " ms\n", holder, h->old, ms);
    finish(h, 0);
}

int cmd_handover(int argc, char **argv)
{
    char *kubeconfig = NULL, *context = NULL, *to = NULL;
    int any = 0;
    int64_t timeout = 0;
    struct election_flags ef;
    memset(&ef, 0, sizeof(ef));
    struct cx_flag flags[8 + ELECTION_FLAGS_MAX];
    size_t n = 0;
    flags[n++] = (struct cx_flag){
        .name = "kubeconfig",
        .type = CX_FLAG_STRING,
        .target = &kubeconfig,
        .def = "",
        .help = "kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)",
    };
    flags[n++] = (struct cx_flag){.name = "context",
                                  .type = CX_FLAG_STRING,
                                  .target = &context,
                                  .def = "",
                                  .help = "kubeconfig context (default: current)"};
    flags[n++] = (struct cx_flag){
        .name = "to",
        .type = CX_FLAG_STRING,
        .target = &to,
        .def = "",
        .help = "the identity that should lead next (a replica's identity, as in the lock's "
                "holderIdentity or its log's first line)",
    };
    flags[n++] = (struct cx_flag){
        .name = "any",
        .type = CX_FLAG_BOOL,
        .target = &any,
        .def = "false",
        .help = "hand over to whichever standby comes first",
    };
    flags[n++] = (struct cx_flag){
        .name = "timeout",
        .type = CX_FLAG_DURATION,
        .target = &timeout,
        .def = "30s",
        .help = "give up waiting for the new leader after this long",
    };
    n += election_flags_table(&ef, flags + n, ELECTION_FLAGS_MAX);
    char err[512];
    int rc = 2;
    struct kube_config kcfg;
    memset(&kcfg, 0, sizeof(kcfg));
    struct election_config cfg;
    election_config_defaults(&cfg);
    struct ho h;
    memset(&h, 0, sizeof(h));

    int pr = cx_flags_parse(flags, n, argc, argv, err, sizeof(err));
    if (pr == 1) {
        cx_flags_usage(stdout, "coxswain handover",
                       "asks the leader to hand the lock over (--to IDENTITY or --any) and waits "
                       "for the new leader; the lock flags are those of `coxswain run`",
                       flags, n);
        rc = 0;
        goto out;
    }
    if (pr != 0) {
        fprintf(stderr, "coxswain handover: %s\n", err);
        goto out;
    }
    if (election_apply_flags(&cfg, &ef, err, sizeof(err)) != 0) {
        fprintf(stderr, "coxswain handover: %s\n", err);
        goto out;
    }
    if ((to && *to) == (any != 0)) {
        fprintf(stderr, "coxswain handover: give exactly one of --to IDENTITY and --any\n");
        goto out;
    }
    if (to && *to &&
        (strcmp(to, ELECTION_PREFERRED_ANY) == 0 || strlen(to) >= ELECTION_IDENTITY_MAX)) {
        fprintf(stderr, "coxswain handover: --to \"%s\" is not an identity\n", to);
        goto out;
    }
    if (timeout <= 0) {
        fprintf(stderr, "coxswain handover: --timeout must be > 0\n");
        goto out;
    }
    if (kube_config_load_default(kubeconfig && *kubeconfig ? kubeconfig : NULL,
                                 context && *context ? context : NULL, &kcfg, err,
                                 sizeof(err)) != 0) {
        fprintf(stderr, "coxswain handover: %s\n", err);
        goto out;
    }
    rc = 1;
    signal(SIGPIPE, SIG_IGN);
    h.base = event_base_new();
    if (!h.base)
        goto out;
    struct kube_client_opts ko = {.component = "coxswain-handover", .max_attempts = 1};
    h.kc = kube_client_new(h.base, &kcfg, &ko, err, sizeof(err));
    h.timer = evtimer_new(h.base, on_timer, &h);
    if (!h.kc || !h.timer) {
        fprintf(stderr, "coxswain handover: %s\n", h.kc ? "no memory" : err);
        goto out;
    }
    h.cfg = &cfg;
    h.res = cfg.lock == ELECTION_LOCK_LEASES ? &res_leases : &res_cms;
    h.to = any ? ELECTION_PREFERRED_ANY : to;
    h.t0 = cx_mono_ns();
    h.deadline = h.t0 + timeout;
    h.rc = 1;
    get_lock(&h);
    event_base_dispatch(h.base);
    rc = h.rc;
out:
    if (h.timer)
        event_free(h.timer);
    if (h.kc)
        kube_client_free(h.kc);
    if (h.base)
        event_base_free(h.base);
    kube_config_free(&kcfg);
    cx_flags_free(flags, n);
    return rc;
}
