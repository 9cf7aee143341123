/*
 * fake_lock: an in-memory lock object with Kubernetes write semantics, for
 * the election core's unit tests: GET / CREATE (AlreadyExists = conflict) /
 * UPDATE with a resourceVersion precondition (409 on mismatch); a write that
 * changes nothing keeps the resourceVersion (like the API server's no-op
 * detection). Header-only so each test program takes what it uses.
 */
#ifndef FAKE_LOCK_H
#define FAKE_LOCK_H

#include "election_types.h"

#include <stdio.h>
#include <string.h>

struct fake_lock {
    bool found;
    uint64_t rv;
    struct election_record rec;
    uint64_t gets, creates, updates, conflicts, noops;
};

static inline bool fake_rec_equal(const struct election_record *a, const struct election_record *b)
{
    return strcmp(a->holder, b->holder) == 0 && a->lease_duration_s == b->lease_duration_s &&
           a->acquire_wall_ns == b->acquire_wall_ns && a->renew_wall_ns == b->renew_wall_ns &&
           a->transitions == b->transitions &&
           strcmp(a->preferred_holder, b->preferred_holder) == 0 &&
           strcmp(a->strategy, b->strategy) == 0;
}

static inline uint64_t fake_fp(const struct election_record *r)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    const unsigned char *p = (const unsigned char *)r->holder;
    for (; *p; p++)
        h = (h ^ *p) * UINT64_C(0x100000001b3);
    h = (h ^ (uint64_t)r->lease_duration_s) * UINT64_C(0x100000001b3);
    h = (h ^ (uint64_t)r->acquire_wall_ns) * UINT64_C(0x100000001b3);
    h = (h ^ (uint64_t)r->renew_wall_ns) * UINT64_C(0x100000001b3);
    h = (h ^ (uint64_t)r->transitions) * UINT64_C(0x100000001b3);
    for (p = (const unsigned char *)r->preferred_holder; *p; p++)
        h = (h ^ *p) * UINT64_C(0x100000001b3);
    return h;
}

static inline void fake_obs(const struct fake_lock *s, struct election_observation *o)
{
    memset(o, 0, sizeof(*o));
    o->found = s->found;
    if (s->found) {
        snprintf(o->rv, sizeof(o->rv), "%llu", (unsigned long long)s->rv);
        o->rec = s->rec;
        o->fingerprint = fake_fp(&s->rec);
    }
}

/* Sets the record as another writer would (bumps the RV). */
static inline void fake_put(struct fake_lock *s, const char *holder, int lease_s, int transitions)
{
    if (!s->found && s->rv == 0)
        s->rv = 100;
    s->found = true;
    s->rv++;
    memset(&s->rec, 0, sizeof(s->rec));
    snprintf(s->rec.holder, sizeof(s->rec.holder), "%s", holder);
    s->rec.lease_duration_s = lease_s;
    s->rec.transitions = transitions;
    s->rec.renew_wall_ns = (int64_t)s->rv * 1000; /* any changing value */
}

/* Applies a SEND action; fills *out with the object for OK answers. */
static inline enum election_outcome fake_apply(struct fake_lock *s, const struct election_action *a,
                                               struct election_observation *out)
{
    memset(out, 0, sizeof(*out));
    char rv[32];
    snprintf(rv, sizeof(rv), "%llu", (unsigned long long)s->rv);
    switch (a->req) {
    case ELECTION_REQ_GET:
        s->gets++;
        if (!s->found)
            return ELECTION_NOT_FOUND;
        fake_obs(s, out);
        return ELECTION_OK;
    case ELECTION_REQ_CREATE:
        if (s->found) {
            s->conflicts++;
            return ELECTION_CONFLICT;
        }
        s->creates++;
        s->found = true;
        s->rv = s->rv < 100 ? 100 : s->rv + 1;
        s->rec = a->rec;
        fake_obs(s, out);
        return ELECTION_OK;
    case ELECTION_REQ_UPDATE:
        if (!s->found)
            return ELECTION_NOT_FOUND;
        if (strcmp(a->rv, rv) != 0) {
            s->conflicts++;
            return ELECTION_CONFLICT;
        }
        s->updates++;
        if (fake_rec_equal(&s->rec, &a->rec)) {
            s->noops++;
        } else {
            s->rv++;
            s->rec = a->rec;
        }
        fake_obs(s, out);
        return ELECTION_OK;
    }
    return ELECTION_FAILED;
}

#endif
