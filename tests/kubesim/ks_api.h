/*
 * ks_api: the REST verbs on resources (get, list, create, update, patch,
 * delete, deletecollection) and the helpers the watch and admin code share:
 * list options, selectors, field values, historical views of a resource.
 * The verbs are split by concern: ks_read.c, ks_write.c, ks_delete.c,
 * ks_listopts.c; ks_api.c holds the dispatcher and the small helpers.
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
void ks_rv_str(uint64_t rv, char out[24]);

/* Continue tokens: base64url({"v":"meta.k8s.io/v1","rv":N,"start":"<key>\u0000"})
 * as the etcd3 store writes them; rv -1 means "continue at the latest
 * state". encode: caller frees (NULL on failure). decode: 0 with *rv and
 * *start (caller frees), or -1 with the message in |err|. */
char *ks_continue_encode(long long rv, const char *lastkey);
int ks_continue_decode(const char *tok, long long *rv, char **start, char *err, size_t errlen);

/* Small JSON helpers on objects. */
cJSON *ks_meta(cJSON *obj); /* metadata, created (as {}) if missing */
const char *ks_md_str(const cJSON *obj, const char *k);
void ks_set_str(cJSON *o, const char *k, const char *v);
void ks_set_item(cJSON *o, const char *k, cJSON *v); /* |v| taken; NULL removes */
void ks_new_uid(char out[40]);
void ks_commit_failed(struct ks_req *r); /* 500: out of memory */

/* Parses the request body (JSON, YAML or protobuf) as an object of |rt|'s
 * kind. Replies (400/415) and returns NULL on error. Caller frees. */
cJSON *ks_parse_body(struct ks_req *r, const struct ks_rtype *rt);

/* The review APIs (ks_review.c): create-only, nothing stored. */
void ks_review_dispatch(struct ks_req *r);

/* The verbs (ks_api_dispatch routes to them). */
void ks_api_get(struct ks_req *r);
void ks_api_list(struct ks_req *r);
void ks_api_create(struct ks_req *r);
void ks_api_update(struct ks_req *r);
void ks_api_patch(struct ks_req *r);
void ks_api_delete(struct ks_req *r);
void ks_api_deletecollection(struct ks_req *r);

/* Deletes every object of namespace |ns| (namespace deletion). */
void ks_api_delete_namespace_contents(struct ks_server *s, const char *ns);

/* Creates an object from an admin or seed path (no request): |obj| is
 * borrowed. Returns 0 or -1. */
int ks_api_seed(struct ks_server *s, const char *group, const char *plural, const cJSON *obj);

#endif
