/*
 * filter: the layer between the informers and the store.
 *
 * One `struct filter` holds, per watched kind, its scope (namespaces or a
 * namespace label selector, a label selector, a field selector), the
 * election's lock objects to exclude, and the verdict counters. For every
 * watch event filter_decide() says whether the translator must hear about
 * it and what the store must do, with a reason; it does no I/O and calls
 * no clock. Lock renewals (excluded by identity) and status writes (the
 * change-significance digest ignores status, resourceVersion,
 * managedFields, generation and the leader annotation) cost zero
 * translations.
 *
 * Threads: configure at start-up, then call filter_decide /
 * filter_pushdown from one thread (the main loop): they use a scratch
 * buffer inside the filter. The counters are also exported through the
 * process-wide cx_metrics registry as coxswain_filter_events_total
 * {kind,verdict,reason}, which any thread may render.
 */
#ifndef FILTER_H
#define FILTER_H

#include "cx_buf.h"
#include "filter_selector.h"
#include "filter_types.h"

#include <cjson/cJSON.h>
#include <stdint.h>

struct filter;
struct cx_flag;

/* An empty filter: every kind in scope everywhere, no lock excluded. NULL
 * if memory ran out. */
struct filter *filter_new(void);
void filter_free(struct filter *f);

/* ---- configuration (start-up, before the first decision) ----------------
 * |kind| is the object kind ("VirtualService"), compared case-insensitively;
 * NULL in the namespace setters means "every kind without its own". Each
 * returns FILTER_OK, FILTER_EINVAL (|err| says why, in Kubernetes' words
 * for selectors) or FILTER_ENOMEM; on error the filter is unchanged. */

/* Comma-separated namespace names ("" = all namespaces). */
__attribute__((warn_unused_result)) int filter_set_namespaces(struct filter *f, const char *kind,
                                                              const char *list,
                                                              struct filter_error *err);
/* Only namespaces whose labels match (needs the namespace lookup given to
 * filter_decide). "" removes it. */
__attribute__((warn_unused_result)) int filter_set_namespace_selector(struct filter *f,
                                                                      const char *kind,
                                                                      const char *selector,
                                                                      struct filter_error *err);
__attribute__((warn_unused_result)) int filter_set_label_selector(struct filter *f,
                                                                  const char *kind,
                                                                  const char *selector,
                                                                  struct filter_error *err);
/* Fields allowed: metadata.name, metadata.namespace; for Secret also type. */
__attribute__((warn_unused_result)) int filter_set_field_selector(struct filter *f,
                                                                  const char *kind,
                                                                  const char *selector,
                                                                  struct filter_error *err);

/* Excludes the election's lock object (kind "Lease" or "ConfigMap", or any
 * kind). Several locks may be added (a migration between lock types). */
__attribute__((warn_unused_result)) int filter_add_lock(struct filter *f, const char *kind,
                                                        const char *ns, const char *name);

/* ---- flags (see docs/filters.md) --------------------------------------- */

#define FILTER_MAX_KINDS      16
#define FILTER_KIND_NAME_MAX  40
#define FILTER_FLAGS_PER_KIND 4
/* Flags filter_flags_table writes: the two global ones plus four per kind. */
#define FILTER_FLAGS_MAX (2 + FILTER_FLAGS_PER_KIND * FILTER_MAX_KINDS)

/* The kinds coxswain watches, for filter_flags_table. */
extern const char *const filter_default_kinds[];

/* Storage behind the generated flags: names, help texts and the values
 * cx_flags_parse writes. Zero it before use; the values are malloc'ed
 * strings the daemon's cx_flags_free releases. */
struct filter_flags {
    char *watch_namespaces;
    char *watch_namespace_selector;
    size_t nkinds;
    struct {
        char kind[FILTER_KIND_NAME_MAX];
        char names[FILTER_FLAGS_PER_KIND][FILTER_KIND_NAME_MAX + 24];
        char help[FILTER_FLAGS_PER_KIND][FILTER_KIND_NAME_MAX + 96];
        char *values[FILTER_FLAGS_PER_KIND]; /* namespaces, ns selector, labels, fields */
    } kinds[FILTER_MAX_KINDS];
};

/* Writes the flag table for |kinds| (NULL-terminated; NULL means
 * filter_default_kinds) into |out| (room for |max| entries): --watch-
 * namespaces, --watch-namespace-selector, and per kind --<kind>-namespaces,
 * --<kind>-namespace-selector, --<kind>-label-selector,
 * --<kind>-field-selector (<kind> lower-cased). The daemon appends them to
 * its own table for cx_flags_parse. Returns the number written, or 0 if
 * they do not fit or a kind name is too long or not alphanumeric. */
size_t filter_flags_table(struct filter_flags *ff, const char *const *kinds, struct cx_flag *out,
                          size_t max);

/* Applies the parsed values to |f|. Returns as the setters; |err| names the
 * flag ("--virtualservice-label-selector: ..."). */
__attribute__((warn_unused_result)) int
filter_apply_flags(struct filter *f, const struct filter_flags *ff, struct filter_error *err);

/* ---- push-down ------------------------------------------------------------ */

/* One list + watch an informer of a kind runs: a namespace ("" for every
 * namespace) and its field selector. */
struct filter_watch {
    const char *namespace;
    const char *field_selector; /* "" for none */
};

/* What the informer of |kind| should ask the API server for. Everything is
 * re-checked by filter_decide anyway. Strings belong to |f| and stay valid
 * until the next call for the same kind or a configuration change. */
struct filter_pushdown {
    /* Non-NULL when exactly one namespace is watched: list and watch
     * /api(s)/.../namespaces/<ns>/<resource> instead of all namespaces. */
    const char *namespace;
    /* The namespace list (NULL/0: all namespaces; with a namespace
     * selector the informer must watch all namespaces). */
    const char *const *namespaces;
    size_t nnamespaces;
    /* labelSelector: the kind's label selector plus
     * "coxswain.dev/ignore!=true"; never empty. */
    const char *label_selector;
    /* fieldSelector ("" for none): the kind's field selector, plus
     * "metadata.name!=<lock>" when the lock of this kind lives in the one
     * watched namespace. */
    const char *field_selector;
    /* The watches that together cover the kind's scope and never carry a
     * lock object, whatever the scope (lock exclusion at the API server):
     * - a namespace list (or one namespace): one watch per namespace, the
     *   lock's namespace with "metadata.name!=<lock>" added;
     * - every namespace, or a namespace selector: when a lock of this kind
     *   exists, one watch of every namespace with
     *   "metadata.namespace!=<lock namespace>" added and one of each lock
     *   namespace with "metadata.name!=<lock>" added; else one watch of
     *   every namespace.
     * Each field selector is the kind's own AND those exclusions. */
    const struct filter_watch *watches;
    size_t nwatches;
};

__attribute__((warn_unused_result)) int filter_pushdown(struct filter *f, const char *kind,
                                                        struct filter_pushdown *out);

/* Appends "labelSelector=...&fieldSelector=..." (URL-encoded, empty
 * parameters left out) for |pd|. Returns 0 or -1. */
__attribute__((warn_unused_result)) int filter_pushdown_query(const struct filter_pushdown *pd,
                                                              struct cx_buf *out);

/* ---- decisions -------------------------------------------------------------- */

/* Labels (a JSON object, or NULL for none) of namespace |ns|; *known = 0 if
 * the Namespace informer has not seen it (then it is out of scope). */
typedef const cJSON *(*filter_ns_labels_fn)(void *user_data, const char *ns, int *known);

/* An object kept decoded rather than as JSON (the daemon's informers keep
 * records): what the filters read of it. */
struct filter_object {
    const char *ns; /* "" for cluster-scoped objects */
    const char *name;
    /* metadata.labels[key] or NULL (string values only) */
    const char *(*label)(const void *user_data, const char *key);
    const void *label_user_data;
    uint64_t digest; /* its filter_digest, computed when it was decoded */
};

struct filter_event {
    enum filter_event_type type;
    const char *kind;
    /* The event's object (for DELETED, its last state); or, when |obj| is
     * NULL, |fobj|. */
    const cJSON *obj;
    const struct filter_object *fobj;
    /* The store's copy of the same object, NULL if the store does not hold
     * it; and the digest the store kept with it (NULL: computed from old).
     * A stored object kept decoded: |old| NULL and |old_digest| set. */
    const cJSON *old;
    const uint64_t *old_digest;
    /* Namespace labels, needed only with a namespace selector. */
    filter_ns_labels_fn ns_labels;
    void *ns_user_data;
    /* Kinds read only where something refers to them (Secrets and
     * ConfigMaps the daemon keeps for Gateways and Upstreams): returns 1 if
     * |ns|/|name| is referenced. An in-scope object that is not is dropped
     * ("unreferenced"), or deleted from the store if it is there
     * ("stopped-matching"). NULL: every object is wanted. */
    int (*referenced)(void *user_data, const char *kind, const char *ns, const char *name);
    void *ref_user_data;
};

/* Decides |ev| and counts the verdict. Returns FILTER_OK (|out| filled) or
 * FILTER_ENOMEM (the digest could not be computed: treat as a pass). */
__attribute__((warn_unused_result)) int
filter_decide(struct filter *f, const struct filter_event *ev, struct filter_decision *out);

/* 1 if |obj| is in |kind|'s scope, else 0 and the drop reason in *why
 * (malformed, excluded-lock, ignored-label, out-of-scope-namespace,
 * selector-mismatch, field-selector-mismatch). Counts nothing; references
 * are not checked. */
int filter_scope_check(struct filter *f, const char *kind, const cJSON *obj,
                       filter_ns_labels_fn ns_labels, void *ns_user_data, enum filter_reason *why);
/* 1 if namespace |ns| with labels |ns_labels| is in |kind|'s scope. When a
 * Namespace's labels change, the daemon re-checks each kind with this and
 * turns the stored objects of a namespace that left scope into deletes
 * (and re-adds those of one that entered it from the informer cache). */
int filter_namespace_in_scope(struct filter *f, const char *kind, const char *ns,
                              const cJSON *ns_labels);

/* The change-significance digest of |obj| (FNV-1a 64 of the canonical JSON
 * of the object minus status, metadata.resourceVersion,
 * metadata.managedFields, metadata.generation and the leader annotation).
 * Returns 0 or -1 (memory). |scratch| is reused between calls. */
__attribute__((warn_unused_result)) int filter_digest(const cJSON *obj, struct cx_buf *scratch,
                                                      uint64_t *out);
/* The bytes the digest covers (for tests and debugging). Returns 0 or -1. */
__attribute__((warn_unused_result)) int filter_digest_input(const cJSON *obj, struct cx_buf *out);

/* ---- counters ----------------------------------------------------------------- */

/* Counts an event of |kind| the caller dropped itself for |reason|, as if
 * filter_decide had (the daemon's Secret and ConfigMap metadata events
 * that nothing references never reach filter_decide). */
void filter_note(struct filter *f, const char *kind, enum filter_reason reason);

/* Events this filter counted for |kind| (NULL: all kinds) with |reason|. */
uint64_t filter_count(const struct filter *f, const char *kind, enum filter_reason reason);
/* Events this filter passed (any pass reason) for |kind| (NULL: all). */
uint64_t filter_count_passed(const struct filter *f, const char *kind);

/* "added", "excluded-lock", ... and "pass"/"drop". */
const char *filter_reason_name(enum filter_reason r);
enum filter_verdict filter_reason_verdict(enum filter_reason r);
const char *filter_verdict_name(enum filter_verdict v);

#endif
