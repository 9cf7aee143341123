/*
 * ks_api: the REST verbs on resources (get, list, create, update, patch,
 * delete, deletecollection) and the helpers the watch and admin code share:
 * list options, selectors, field values, historical views of a resource.
 * Event loop only.
 */
#ifndef KS_API_H
#define KS_API_H

#include "ks_http.h"
#include "ks_selector.h"

/* Parsed and validated list/watch options. */
struct ks_listopts {
    struct ks_lsel *lsel;
    struct ks_fsel *fsel;
    const char *rv;       /* resourceVersion as given, or NULL */
    uint64_t rv_num;      /* parsed rv (0 when unset or "0") */
    const char *rv_match; /* "", "Exact", "NotOlderThan" */
    long limit;           /* 0 = none */
    const char *cont;     /* continue token */
    bool watch;
    bool bookmarks;
    int send_initial; /* -1 unset, 0 false, 1 true */
    long timeout_s;   /* -1 unset */
};

/* Parses the query of |r| into |o|. Replies with the error (400/422) and
 * returns -1 on a bad option. Caller frees with ks_listopts_free. */
int ks_listopts_parse(struct ks_req *r, struct ks_listopts *o);
void ks_listopts_free(struct ks_listopts *o);

/* Does version |v| match the request's namespace and selectors? */
bool ks_obj_matches(const struct ks_rtype *rt, const char *ns, const struct ks_listopts *o,
                    const struct ks_ver *v);

/* Value of a selectable field of |obj| ("" if absent). */
const char *ks_field_value(const void *obj, const char *field);

/* A view of a resource as of |at_rv| built from the current index and the
 * event window: an array of versions in key order (borrowed references,
 * valid until the next commit). Returns 0, or -1 if |at_rv| is older than
 * the window (the caller answers 410). */
struct ks_view {
    struct ks_ver **v;
    char **keys;
    size_t n;
};
int ks_view_at(struct ks_rtype *rt, uint64_t at_rv, const char *prefix, const char *start,
               struct ks_view *out);
void ks_view_free(struct ks_view *vw);

/* Parses a decimal resourceVersion. Returns 0 or -1. */
int ks_parse_rv(const char *s, uint64_t *out);

/* Deletes every object of namespace |ns| (namespace deletion). */
void ks_api_delete_namespace_contents(struct ks_server *s, const char *ns);

/* Creates an object from an admin or seed path (no request): |obj| is
 * borrowed. Returns 0 or -1. */
int ks_api_seed(struct ks_server *s, const char *group, const char *plural, const cJSON *obj);

#endif
