/*
 * ks_admin: who is asking (identity), the audit log and request counters,
 * fault injection, partitions, parked requests, and the /_sim/ admin API
 * (loopback only). Event loop only.
 */
#ifndef KS_ADMIN_H
#define KS_ADMIN_H

#include "ks_http.h"

int ks_admin_init(struct ks_server *s);
void ks_admin_free(struct ks_server *s);

/* Sets r->user (token, User-Agent or the anonymous default). Replies 401
 * and returns -1 on a bad token. */
int ks_admin_identify(struct ks_server *s, struct ks_req *r);

/* After routing: counts the request, applies authorization, partitions and
 * fault rules. Returns 0 to go on, or -1 when the request was answered or
 * parked. */
int ks_admin_intercept(struct ks_server *s, struct ks_req *r);

/* Records a finished request (audit of writes). */
void ks_admin_record(struct ks_server *s, struct ks_req *r);

/* /_sim/ requests. */
void ks_admin_dispatch(struct ks_req *r);

/* Parks a list/watch whose resourceVersion is newer than the store until
 * it exists or --too-new-wait passes (then 504). True if parked. */
bool ks_admin_park_too_new(struct ks_server *s, struct ks_req *r, uint64_t want);

/* Called after every commit (wakes parked too-new requests). */
void ks_admin_on_commit(struct ks_server *s);

/* Called when a watch stream started. */
void ks_admin_watch_started(struct ks_server *s, struct ks_req *r);

/* Shutdown: answers every parked request with 503. */
void ks_admin_release_all(struct ks_server *s);

size_t ks_watch_count(struct ks_server *s);

#endif
