/*
 * kubesim: a Kubernetes API server for tests, benchmarks and `make run`.
 *
 * This header holds the types every kubesim file shares: refcounted byte
 * blobs, immutable object versions, the per-resource store (hash map by key
 * plus an ordered skip list), the per-resource event window, watchers and the
 * server. Everything runs on one libevent loop (one thread): no locking.
 *
 * Ownership in one sentence each: a ks_blob and a ks_ver are refcounted and
 * immutable once built; the store owns one reference to each object's
 * current version and the event window owns references to the versions its
 * events name; watch frames are ks_blobs handed to evbuffers by reference.
 */
#ifndef KS_H
#define KS_H

#include <cjson/cJSON.h>
#include <event2/event.h>
#include <event2/http.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include "cx_buf.h"

struct evbuffer;
struct ks_server;

/* ---- refcounted bytes ------------------------------------------------- */

struct ks_blob {
    uint32_t refs;
    size_t len;
    char data[];
};

struct ks_blob *ks_blob_new(const void *p, size_t n);
/* Takes the contents of |b| (which is left empty). */
struct ks_blob *ks_blob_from_buf(struct cx_buf *b);
void ks_blob_ref(struct ks_blob *b);
void ks_blob_unref(struct ks_blob *b);
/* Appends |b| to |out| by reference (no copy); |out| holds one ref. */
int ks_blob_add_ref(struct evbuffer *out, struct ks_blob *b);

/* ---- object versions ------------------------------------------------- */

/* The cached forms of an object on the wire: as stored, or as the
 * PartialObjectMetadata (meta.k8s.io/v1) that `Accept: ...;as=
 * PartialObjectMetadata[List]` asks for. Other forms (Table, v1beta1,
 * fault mutations) are built per request. */
enum ks_form {
    KS_FORM_FULL = 0,
    KS_FORM_PARTIAL = 1,
};
#define KS_NFORMS 2

/* One immutable version of one object: the parsed tree (for selectors and
 * patches) and its canonical JSON (for the wire). */
struct ks_ver {
    uint32_t refs;
    uint64_t rv;
    cJSON *obj;
    struct ks_blob *json;
    struct ks_blob *partial;                /* lazily built partial form */
    struct ks_blob *added_frame[KS_NFORMS]; /* lazily built ADDED frames */
};

/* Builds a version from |obj| (takes ownership); serialises it canonically.
 * NULL on allocation failure or an object larger than the store's cap. */
struct ks_ver *ks_ver_new(cJSON *obj, uint64_t rv);
void ks_ver_ref(struct ks_ver *v);
void ks_ver_unref(struct ks_ver *v);

/* Canonical JSON of |obj| into a fresh blob (NULL on failure). */
struct ks_blob *ks_json_blob(const cJSON *obj);
/* |obj| as a PartialObjectMetadata of meta.k8s.io/|version|: kind,
 * apiVersion and its metadata only. NULL on failure. */
struct ks_blob *ks_partial_blob(const cJSON *obj, const char *version);
/* |v| in form |f| (borrowed; the partial form is built on first use).
 * NULL when memory ran out. */
struct ks_blob *ks_ver_json(struct ks_ver *v, enum ks_form f);

/* ---- resource types --------------------------------------------------- */

enum ks_kind_id {
    KS_K_OTHER = 0,
    KS_K_NAMESPACE,
    KS_K_CONFIGMAP,
    KS_K_SECRET,
    KS_K_SERVICE,
    KS_K_EVENT,
    KS_K_LEASE,
    KS_K_ENDPOINTSLICE,
    KS_K_CRD,
    KS_K_CUSTOM,
    KS_K_SERVICEACCOUNT,
    KS_K_ROLE,
    KS_K_CLUSTERROLE,
    KS_K_ROLEBINDING,
    KS_K_CLUSTERROLEBINDING,
    KS_K_TOKENREVIEW,
    KS_K_SELFSUBJECTREVIEW,
    KS_K_SUBJECTACCESSREVIEW,
    KS_K_SELFSUBJECTACCESSREVIEW,
    KS_K_LOCALSUBJECTACCESSREVIEW,
    KS_K_SELFSUBJECTRULESREVIEW,
    KS_K_ENDPOINTS,
};

/* One stored object: an entry of the hash map and of the skip list. */
#define KS_SKIP_MAX 24
struct ks_obj {
    char *key; /* "ns/name" (namespaced) or "name" */
    size_t keylen;
    uint64_t hash;
    struct ks_ver *cur;
    struct ks_obj *hnext;
    int level;
    struct ks_obj *fwd[]; /* |level| forward pointers */
};

struct ks_index {
    struct ks_obj *head; /* sentinel with KS_SKIP_MAX levels, key "" */
    int level;
    struct ks_obj **buckets;
    size_t nbuckets;
    size_t count;
    uint64_t rng;
};

enum ks_evtype {
    KS_EV_ADDED = 0,
    KS_EV_MODIFIED = 1,
    KS_EV_DELETED = 2,
};

struct ks_event {
    uint64_t rv;
    int64_t mono_ms; /* when it was committed (the window's time bound) */
    enum ks_evtype type;
    char *key;
    struct ks_ver *obj;     /* the state after the event; for DELETED, the
                               last state carrying the deletion's RV */
    struct ks_ver *prev;    /* the state before; NULL for ADDED */
    struct ks_ver *prev_rv; /* |prev| re-stamped with |rv| (lazily, for
                               selector transitions to DELETED) */
    struct ks_blob *frame[KS_NFORMS][3];
};

struct ks_watch;
TAILQ_HEAD(ks_watch_list, ks_watch);

struct ks_rtype {
    char *group;       /* "" for the core group */
    char *version;     /* "v1" */
    char *api_version; /* "v1" or "group/version" */
    char *plural;
    char *singular;
    char *kind;
    char *list_kind;
    char *short_names[4];
    char *categories[2];
    enum ks_kind_id id;
    bool namespaced;
    bool has_status;        /* status subresource */
    bool sets_generation;   /* metadata.generation maintained */
    bool unconditional_ok;  /* PUT without resourceVersion allowed */
    bool create_on_update;  /* PUT on a missing object creates it */
    bool strategic_ok;      /* strategic merge patch accepted */
    bool served;            /* false once its CRD is deleted */
    bool review;            /* create-only, never stored (TokenReview, ...) */
    char *crd_name;         /* CRD object name for custom resources */
    cJSON *printer_columns; /* additionalPrinterColumns (CRs), owned */

    struct ks_index idx;
    /* Event window: a ring of the latest events of this resource. */
    struct ks_event **ring;
    size_t ring_cap, ring_head, ring_len;
    uint64_t window_start_rv; /* events with rv > this are all in the ring */
    uint64_t cache_rv;        /* the watch cache's lastProcessedResourceVersion:
                                 its latest event, or a progress notification */
    struct ks_watch_list watchers;
    size_t nwatchers;

    struct ks_rtype *next;
};

/* ---- selectors (ks_selector.c) --------------------------------------- */

struct ks_lsel;
struct ks_fsel;

/* ---- server ----------------------------------------------------------- */

struct ks_config {
    const char *listen;
    const char *port_file;
    const char *kubeconfig;
    const char *state_file;
    const char *state_dir;
    const char *audit_file;
    const char *tokens_file;
    const char *anonymous_user;
    bool allow_all;
    bool no_openapi;            /* 404 for /openapi/v3 too */
    const char *api_audiences;  /* comma list; NULL: the default issuer */
    int emulate_minor;          /* the kube-apiserver 1.N emulated (28..31) */
    bool watchlist;             /* the WatchList feature gate */
    bool bookmarks_periodic;    /* --bookmarks periodic: every interval, always */
    int64_t progress_notify_ms; /* etcd progress notifications (0: off) */
    int64_t window_time_ms;     /* the event window's time bound (0: count only) */
    bool tls;
    bool no_http2; /* --no-http2: ALPN offers http/1.1 only */
    size_t event_window;
    int64_t bookmark_interval_ms;
    int64_t too_new_wait_ms;
    size_t max_watch_buffer;
    int log_level;
};

struct ks_server {
    struct event_base *base;
    struct evhttp *http;
    struct evhttp_bound_socket *bound;
    int port;
    struct ks_config cfg;

    uint64_t rv; /* the global resourceVersion counter */
    struct ks_rtype *rtypes;
    uint64_t uid_seq;
    uint32_t svc_ip_next;

    struct ks_watch_list all_watches;
    TAILQ_HEAD(ks_req_list, ks_req) parked; /* hangs, partitions, too-new RVs */

    struct ks_admin *admin; /* faults, audit, counters (ks_admin.c) */
    struct ks_auth *auth;   /* tokens, RBAC (ks_auth.c) */

    struct event *sig_term, *sig_int, *sig_hup;
    struct event *progress_ev; /* --progress-notify-interval timer */
    bool stopping;
};

/* ks_store.c */
void ks_index_init(struct ks_index *ix);
void ks_index_free(struct ks_index *ix);
struct ks_obj *ks_index_get(const struct ks_index *ix, const char *key);
/* First object whose key is >= |key| (NULL at the end). */
struct ks_obj *ks_index_seek(const struct ks_index *ix, const char *key);
static inline struct ks_obj *ks_index_next(const struct ks_obj *o)
{
    return o->fwd[0];
}

struct ks_rtype *ks_rtype_add(struct ks_server *s, const char *group, const char *version,
                              const char *plural, const char *singular, const char *kind,
                              bool namespaced);
struct ks_rtype *ks_rtype_find(struct ks_server *s, const char *group, const char *version,
                               const char *plural);
void ks_rtypes_builtin(struct ks_server *s);
void ks_rtype_free(struct ks_rtype *rt);

/* Commits a new state of |key|: |obj| (ownership taken) replaces the current
 * object, or creates it; |obj| NULL deletes it. Bumps the global RV, stamps
 * metadata.resourceVersion, records and fans out the event. Returns the new
 * version (borrowed; for a delete, the deleted object stamped with the new
 * RV), or NULL if memory ran out (nothing changed). */
struct ks_ver *ks_store_commit(struct ks_server *s, struct ks_rtype *rt, const char *key,
                               cJSON *obj);
struct ks_obj *ks_store_get(struct ks_rtype *rt, const char *key);
/* Inserts |obj| (ownership taken) as stored at |rv|, without an event
 * (state loading). Returns 0 or -1. */
int ks_store_load_obj(struct ks_rtype *rt, const char *key, cJSON *obj, uint64_t rv);
/* Drops every event of every resource (compaction): older RVs get 410. */
void ks_store_compact(struct ks_server *s);
/* Builds "ns/name" or "name". Caller frees. */
char *ks_key(const struct ks_rtype *rt, const char *ns, const char *name);

/* The ADDED/MODIFIED/DELETED frame of |e| in form |f| for the watch wire
 * (borrowed; built once per event and form). */
struct ks_blob *ks_event_frame(struct ks_event *e, enum ks_evtype t, enum ks_form f);
/* The version |e| reports as type |t|: the object, or for an object that
 * stopped matching a selector, its previous state with the event's RV
 * (borrowed). NULL when memory ran out. */
struct ks_ver *ks_event_ver(struct ks_event *e, enum ks_evtype t);
struct ks_blob *ks_ver_added_frame(struct ks_ver *v, enum ks_form f);
/* {"type":"<type>","object":<obj>}\n for the watch wire. */
struct ks_blob *ks_make_frame(const char *type, const struct ks_blob *obj);

/* ks_watch.c */
void ks_watch_fanout(struct ks_server *s, struct ks_rtype *rt, struct ks_event *e);
void ks_watch_end_all(struct ks_server *s, const char *user, const char *resource);

/* Logging (stderr, through cx_log). */
#define KS_LOG "kubesim"

#endif
