/*
 * election_lock: the lock object (Lease or ConfigMap) behind one interface
 * for the elector's I/O side: which resource it is, the requests the core's
 * actions turn into, the list + watch of that one object, and the last
 * object seen (whose other fields a PUT keeps). Requests go through the
 * small Kubernetes interface (election_kube.h).
 *
 * Elector thread only (it uses that thread's connection).
 */
#ifndef ELECTION_LOCK_H
#define ELECTION_LOCK_H

#include "election_kube.h"
#include "election_types.h"

#include <cjson/cJSON.h>

#define ELECTION_UID_MAX 64

struct election_lock {
    enum election_lock_kind kind;
    enum election_kube_res res;
    const struct election_kube_ops *ops;
    struct election_kube_conn *conn; /* set by the elector once opened */
    char ns[ELECTION_NS_MAX];
    char name[ELECTION_NAME_MAX];
    char field_selector[ELECTION_NAME_MAX + 16]; /* metadata.name=<name> */
    cJSON *last;                                 /* last object seen, or NULL */
    char last_rv[ELECTION_RV_MAX];
    char uid[ELECTION_UID_MAX];
};

void election_lock_init(struct election_lock *l, const struct election_config *cfg,
                        const struct election_kube_ops *ops);
void election_lock_free(struct election_lock *l);

/* Decodes |obj| into |out| and, unless it is older than the object kept,
 * keeps it as the base of the next PUT. Takes ownership of |obj|. */
void election_lock_take(struct election_lock *l, cJSON *obj, struct election_observation *out);

/* The object is gone (404, DELETED): forget the kept one. */
void election_lock_forget(struct election_lock *l);

/* Turns a SEND action into a request with the action's timeout and a single
 * attempt (the core decides about retries). Returns the call, or NULL if it
 * could not be built (then no callback runs). */
struct election_kube_call *election_lock_send(struct election_lock *l,
                                              const struct election_action *a,
                                              election_kube_done_fn cb, void *user_data);

/* Lists the one object (fieldSelector metadata.name=<name>). */
struct election_kube_call *election_lock_list(struct election_lock *l, int64_t timeout_ns,
                                              election_kube_done_fn cb, void *user_data);

/* Watches the one object from |rv|. */
struct election_kube_watch *election_lock_watch(struct election_lock *l, const char *rv,
                                                int64_t stall_ms,
                                                const struct election_kube_watch_handlers *h,
                                                void *user_data);

/* Maps an error class to the core's outcome. */
enum election_outcome election_lock_outcome(enum election_err_class cls);

/* The verb a request kind is ("get", "create", "update"), for logs. */
const char *election_req_verb(enum election_req_kind k);

/* The resource's plural ("leases"). */
const char *election_kube_res_name(enum election_kube_res res);

#endif
