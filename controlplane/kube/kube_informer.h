/*
 * kube_informer: keeps a local cache of one resource type identical to the
 * API server's, and reports every change exactly once, in order per object.
 *
 * List (paged) then watch from the list's resourceVersion with bookmarks, or
 * a streaming list (watch with sendInitialEvents) when the server supports
 * it. A watch that ends (timeout, EOF, stall, garbage, 5xx) resumes from the
 * last resourceVersion seen (events and bookmarks) without re-listing; every
 * failure, and any watch that ends within seconds of its start, waits for a
 * backoff with jitter first (growing until a watch stays up). A 410
 * Expired re-lists and diffs the result against the cache, so only real
 * changes reach the handlers: a re-list when nothing changed emits nothing.
 *
 * Runs on its client's event_base; handlers run there too. Objects passed to
 * handlers are borrowed for the call (kube_obj_ref to keep them). The cache
 * may be read from that thread at any time; other threads take an immutable
 * view with kube_cache_list.
 */
#ifndef KUBE_INFORMER_H
#define KUBE_INFORMER_H

#include "kube_cache.h"
#include "kube_client.h"
#include "kube_types.h"

#include <stdint.h>

struct kube_informer;

#define KUBE_INFORMER_PAGE_MAX ((size_t)32 << 20)

enum kube_streaming {
    KUBE_STREAMING_AUTO = 0, /* try a streaming list, fall back to list on refusal */
    KUBE_STREAMING_OFF = 1,
    KUBE_STREAMING_ON = 2,
};

struct kube_informer_opts {
    const struct kube_resource *res;
    const char *ns;             /* NULL/"" : every namespace */
    const char *label_selector; /* passed through (the filter layer decides) */
    const char *field_selector;
    const char *name;    /* metrics label; default res->plural */
    long page_size;      /* list page, default 500; < 0: no paging */
    int watch_timeout_s; /* timeoutSeconds per watch, default 300 */
    int64_t stall_ms;    /* no bytes for this long = stalled, default 90000 */
    enum kube_streaming streaming;
    const char *const *label_indexes; /* NULL-terminated label keys to index */
    int64_t backoff_base_ms;          /* after failures, default 100 */
    int64_t backoff_max_ms;           /* default 5000 */
    int64_t request_timeout_ms;       /* per list page, default 60000 */
    /* Drop the API server's bookkeeping from every object on arrival:
     * metadata.managedFields and the kubectl.kubernetes.io/last-applied-
     * configuration annotation (a second copy of the whole object when it
     * was created with kubectl apply). Neither is input; together they are
     * often most of an object's bytes. Off: the cache mirrors the server. */
    int trim;
    /* Keep only what a PartialObjectMetadata carries (kind, apiVersion,
     * metadata): the list and watch ask the server for that form, as
     * client-go's metadata informers do, and whatever comes whole anyway is
     * cut down on arrival. A Secret or ConfigMap then costs a few hundred
     * bytes however large its data. */
    int metadata_only;
    /* Cap on one object (kube_json_size); 0: KUBE_OBJECT_MAX. A larger
     * object is treated as absent (a cached copy is deleted), counted in
     * coxswain_informer_objects_refused_total and said in the log; a
     * watch event over it ends the watch and a list gets past it. */
    size_t max_object;
    /* Cap on one list page's response; 0: KUBE_INFORMER_PAGE_MAX. A page
     * over it halves the page size (down to one object). */
    size_t max_page_bytes;
    /* Optional: decodes every object the cache is to keep, once, when it
     * arrives (after trimming), into the owner's form. Returns that form
     * (the object keeps it with *ops and its JSON is freed at once:
     * kube_obj_keep_rec), or NULL to keep the JSON. |user_data| is the
     * handlers'. Final states of deletions are not decoded. */
    void *(*decode)(void *user_data, const struct kube_obj *o, const cJSON *json,
                    const struct kube_rec_ops **ops);
};

struct kube_informer_handlers {
    void (*on_add)(void *user_data, struct kube_obj *obj);
    void (*on_update)(void *user_data, struct kube_obj *old_obj, struct kube_obj *new_obj);
    void (*on_delete)(void *user_data, struct kube_obj *old_obj);
    /* Once, when the cache first holds the server's state. */
    void (*on_synced)(void *user_data);
};

struct kube_informer_stats {
    uint64_t events[KUBE_EV_COUNT];  /* watch events received, by type */
    uint64_t adds, updates, deletes; /* handler calls */
    uint64_t lists;                  /* list (or streaming list) passes started */
    uint64_t relists;                /* of which after the first sync (410, restart) */
    uint64_t pages;                  /* list pages received */
    uint64_t watch_restarts;         /* watches started after the first */
    uint64_t watch_errors;           /* watches that ended in an error */
    uint64_t duplicates;             /* events dropped because the object had that RV */
    uint64_t refused;                /* objects over the cap on one object */
    int64_t last_event_wall_ns;
    int streaming_used; /* the last initial sync was a streaming list */
};

/* Creates an informer (not started). |o->res| must outlive it; strings are
 * copied. Returns NULL on bad options or memory. */
struct kube_informer *kube_informer_new(struct kube_client *c, const struct kube_informer_opts *o,
                                        const struct kube_informer_handlers *h, void *user_data);

/* Starts listing and watching. Returns 0 or -1 (already started). */
int kube_informer_start(struct kube_informer *inf);

/* Stops everything (no callbacks afterwards) and frees the cache. Not from
 * inside one of its own handlers. */
void kube_informer_free(struct kube_informer *inf);

int kube_informer_synced(const struct kube_informer *inf);
struct kube_cache *kube_informer_cache(const struct kube_informer *inf);
/* The resourceVersion the next watch would resume from ("" before sync). */
const char *kube_informer_resource_version(const struct kube_informer *inf);
void kube_informer_stats(const struct kube_informer *inf, struct kube_informer_stats *out);

/* The informer's last failure (a list or watch error, until a list
 * succeeds), with the verb that failed ("list", "watch") in *verb; NULL
 * when there is none. For /readyz: why an informer is not synced. Valid
 * until the informer's next step. */
const struct kube_error *kube_informer_last_error(const struct kube_informer *inf,
                                                  const char **verb);

#endif
