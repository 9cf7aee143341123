/*
 * ks_form: Accept negotiation and the forms of responses (full objects,
 * PartialObjectMetadata, Tables) for objects, lists and watch frames.
 */
#include "ks_form.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cx_json.h"
#include "ks_accept.h"
#include "ks_api.h"
#include "ks_table.h"

/* ---- negotiation ------------------------------------------------------ */

int ks_form_negotiate(struct ks_req *r)
{
    r->as = KS_AS_NONE;
    snprintf(r->as_version, sizeof(r->as_version), "v1");
    const char *accept = ks_req_header(r, "Accept");
    if (!accept || !*accept || !r->rt)
        return 0;
    bool v1beta1;
    ks_accept_negotiate(accept, r->rt->id == KS_K_CUSTOM, ks_table_supported(r->rt), &r->as,
                        &v1beta1);
    if (v1beta1)
        snprintf(r->as_version, sizeof(r->as_version), "v1beta1");
    if (r->as == KS_AS_TABLE) {
        const char *io = ks_q(r, "includeObject");
        if (io && *io && strcmp(io, "Metadata") != 0 && strcmp(io, "None") != 0 &&
            strcmp(io, "Object") != 0) {
            ks_err_bad_request(r,
                               "Unable to convert to Table as requested: includeObject: "
                               "Unsupported value: \"%s\": supported values: \"Metadata\", "
                               "\"None\", \"Object\"",
                               io);
            return -1;
        }
        snprintf(r->include_object, sizeof(r->include_object), "%s", io && *io ? io : "Metadata");
    }
    return 0;
}

/* ---- Go type names ------------------------------------------------------ */

void ks_form_go_type(const struct ks_rtype *rt, bool list, char *out, size_t n)
{
    if (rt->id == KS_K_CUSTOM) {
        snprintf(out, n, "*unstructured.Unstructured%s", list ? "List" : "");
        return;
    }
    /* The internal API package of the group (storage returns internal
     * types): "" is core, "coordination.k8s.io" is coordination, ... */
    char pkg[64];
    if (!*rt->group)
        snprintf(pkg, sizeof(pkg), "core");
    else
        snprintf(pkg, sizeof(pkg), "%.*s", (int)strcspn(rt->group, "."), rt->group);
    snprintf(out, n, "*%s.%s%s", pkg, rt->kind, list ? "List" : "");
}

static void not_acceptable(struct ks_req *r, bool want_list)
{
    char ty[256], msg[512];
    ks_form_go_type(r->rt, !want_list, ty, sizeof(ty));
    if (want_list)
        snprintf(msg, sizeof(msg),
                 "you requested PartialObjectMetadataList, but the requested object is not a list "
                 "(%s)",
                 ty);
    else
        snprintf(msg, sizeof(msg),
                 "you requested PartialObjectMetadata, but the requested object is a list (%s)",
                 ty);
    ks_reply_status(r, 406, "NotAcceptable", msg, NULL, NULL);
}

/* ---- mutations ------------------------------------------------------------ */

void ks_form_mutate(cJSON *obj, const cJSON *mutation)
{
    const char *path = cx_json_str(mutation, "path");
    const cJSON *val = cJSON_GetObjectItemCaseSensitive(mutation, "value");
    bool del = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(mutation, "delete"));
    if (!path || !*path || (!val && !del))
        return;
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", path);
    cJSON *cur = obj;
    char *save = NULL;
    char *seg = strtok_r(buf, ".", &save);
    while (seg && cur) {
        char *next = strtok_r(NULL, ".", &save);
        char *end;
        long idx = strtol(seg, &end, 10);
        bool is_idx = *seg && !*end && idx >= 0;
        if (!next) {
            if (cJSON_IsArray(cur) && is_idx) {
                if (del)
                    cJSON_DeleteItemFromArray(cur, (int)idx);
                else if (idx < cJSON_GetArraySize(cur))
                    cJSON_ReplaceItemInArray(cur, (int)idx, cJSON_Duplicate(val, 1));
            } else if (cJSON_IsObject(cur)) {
                cJSON_DeleteItemFromObjectCaseSensitive(cur, seg);
                if (!del)
                    cJSON_AddItemToObject(cur, seg, cJSON_Duplicate(val, 1));
            }
            return;
        }
        cJSON *child = NULL;
        if (cJSON_IsArray(cur) && is_idx)
            child = cJSON_GetArrayItem(cur, (int)idx);
        else if (cJSON_IsObject(cur)) {
            child = cJSON_GetObjectItemCaseSensitive(cur, seg);
            if (!child && !del)
                child = cJSON_AddObjectToObject(cur, seg);
        }
        cur = child;
        seg = next;
    }
}

/* ---- single objects -------------------------------------------------------- */

static bool partial(const struct ks_req *r)
{
    return r->as == KS_AS_PARTIAL || r->as == KS_AS_PARTIAL_LIST;
}

/* |obj| (with |v|'s cached forms when given) as one item of what |r|
 * asked for, with the fault mutation applied. New reference or NULL. */
static struct ks_blob *item_blob(struct ks_req *r, struct ks_ver *v, const cJSON *obj)
{
    struct ks_blob *b = NULL;
    if (r->mutate) {
        cJSON *m = cJSON_Duplicate(obj, 1);
        if (!m)
            return NULL;
        ks_form_mutate(m, r->mutate);
        b = partial(r) ? ks_partial_blob(m, r->as_version) : ks_json_blob(m);
        cJSON_Delete(m);
        return b;
    }
    if (partial(r) && strcmp(r->as_version, "v1") != 0)
        return ks_partial_blob(obj, r->as_version);
    if (v) {
        b = ks_ver_json(v, partial(r) ? KS_FORM_PARTIAL : KS_FORM_FULL);
        if (b)
            ks_blob_ref(b);
        return b;
    }
    return partial(r) ? ks_partial_blob(obj, "v1") : ks_json_blob(obj);
}

static void reply_one(struct ks_req *r, int code, struct ks_ver *v, const cJSON *obj)
{
    if (r->as == KS_AS_PARTIAL_LIST) {
        not_acceptable(r, true);
        return;
    }
    if (r->as == KS_AS_TABLE) {
        struct ks_table_row row = {.v = v, .obj = obj};
        ks_table_reply(r, code, NULL, &row, 1, false);
        return;
    }
    struct ks_blob *b = item_blob(r, v, obj);
    if (!b) {
        ks_commit_failed(r);
        return;
    }
    ks_reply_json(r, code, b->data, b->len);
    ks_blob_unref(b);
}

void ks_reply_ver(struct ks_req *r, int code, struct ks_ver *v)
{
    reply_one(r, code, v, v->obj);
}

void ks_reply_obj(struct ks_req *r, int code, const cJSON *obj)
{
    reply_one(r, code, NULL, obj);
}

/* ---- lists -------------------------------------------------------------------- */

void ks_reply_list(struct ks_req *r, const struct ks_listmeta *lm, struct ks_ver *const *items,
                   size_t n)
{
    if (r->as == KS_AS_PARTIAL) {
        not_acceptable(r, false);
        return;
    }
    if (r->as == KS_AS_TABLE) {
        struct ks_table_row *rows = n ? calloc(n, sizeof(*rows)) : NULL;
        if (n && !rows) {
            ks_commit_failed(r);
            return;
        }
        for (size_t i = 0; i < n; i++) {
            rows[i].v = items[i];
            rows[i].obj = items[i]->obj;
        }
        ks_table_reply(r, 200, lm, rows, n, true);
        free(rows);
        return;
    }
    struct evbuffer *buf = evbuffer_new();
    if (!buf) {
        ks_commit_failed(r);
        return;
    }
    const struct ks_rtype *rt = r->rt;
    int rc;
    if (partial(r))
        rc =
            evbuffer_add_printf(buf,
                                "{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":\"meta.k8s."
                                "io/%s\",\"metadata\":{\"resourceVersion\":\"%s\"",
                                r->as_version, lm->rv);
    else
        rc = evbuffer_add_printf(buf,
                                 "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":{"
                                 "\"resourceVersion\":\"%s\"",
                                 rt->list_kind, rt->api_version, lm->rv);
    if (lm->cont)
        rc |= evbuffer_add_printf(buf, ",\"continue\":\"%s\"", lm->cont) < 0;
    if (lm->remaining >= 0)
        rc |= evbuffer_add_printf(buf, ",\"remainingItemCount\":%ld", lm->remaining) < 0;
    bool failed = rc < 0;
    /* A PartialObjectMetadataList is built afresh from the items
     * (asPartialObjectMetadataList): with none, its items are null. */
    if (partial(r) && n == 0) {
        failed |= evbuffer_add(buf, "},\"items\":null}", 15) != 0;
    } else {
        failed |= evbuffer_add(buf, "},\"items\":[", 11) != 0;
        for (size_t i = 0; i < n && !failed; i++) {
            struct ks_blob *b = item_blob(r, items[i], items[i]->obj);
            if (!b) {
                failed = true;
                break;
            }
            if (i)
                failed |= evbuffer_add(buf, ",", 1) != 0;
            failed |= ks_blob_add_ref(buf, b) != 0;
            ks_blob_unref(b);
        }
        failed |= evbuffer_add(buf, "]}", 2) != 0;
    }
    if (failed)
        ks_commit_failed(r);
    else
        ks_reply_evbuf(r, 200, buf, "application/json");
    evbuffer_free(buf);
}

/* ---- watch frames --------------------------------------------------------------- */

static const char *const ev_names[] = {"ADDED", "MODIFIED", "DELETED"};

/* Forms that are built per watch: Tables, v1beta1 partials, mutations. */
static bool per_watch(const struct ks_req *r)
{
    return r->mutate || r->as == KS_AS_TABLE ||
           (r->as == KS_AS_PARTIAL && strcmp(r->as_version, "v1") != 0);
}

/* A watch asking PartialObjectMetadataList gets each object untransformed:
 * the conversion of one object to a list fails and the watch encoder logs
 * it and sends the object as is (handlers/response.go doEncode). */
static enum ks_form watch_form(const struct ks_req *r)
{
    return r->as == KS_AS_PARTIAL ? KS_FORM_PARTIAL : KS_FORM_FULL;
}

static struct ks_blob *built_frame(struct ks_req *r, const char *type, struct ks_ver *v)
{
    struct ks_blob *obj;
    if (r->as == KS_AS_TABLE) {
        obj = ks_table_event_object(r, v);
    } else {
        enum ks_as saved = r->as;
        if (r->as == KS_AS_PARTIAL_LIST)
            r->as = KS_AS_NONE;
        obj = item_blob(r, v, v->obj);
        r->as = saved;
    }
    if (!obj)
        return NULL;
    struct ks_blob *f = ks_make_frame(type, obj);
    ks_blob_unref(obj);
    return f;
}

struct ks_blob *ks_form_event_frame(struct ks_req *r, struct ks_event *e, enum ks_evtype t)
{
    if (per_watch(r)) {
        struct ks_ver *v = ks_event_ver(e, t);
        return v ? built_frame(r, ev_names[t], v) : NULL;
    }
    struct ks_blob *b = ks_event_frame(e, t, watch_form(r));
    if (b)
        ks_blob_ref(b);
    return b;
}

struct ks_blob *ks_form_added_frame(struct ks_req *r, struct ks_ver *v)
{
    if (per_watch(r))
        return built_frame(r, "ADDED", v);
    struct ks_blob *b = ks_ver_added_frame(v, watch_form(r));
    if (b)
        ks_blob_ref(b);
    return b;
}

struct ks_blob *ks_form_bookmark(struct ks_req *r, uint64_t rv, bool initial_end)
{
    /* The watch cache's bookmark is the type's empty object with only a
     * resourceVersion. Built-in types are Go structs, so their zero
     * creationTimestamp is encoded as null; custom resources are
     * unstructured and carry only what was set. */
    const struct ks_rtype *rt = r->rt;
    bool part = r->as == KS_AS_PARTIAL;
    char buf[512];
    snprintf(buf, sizeof(buf),
             "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"%s\",\"apiVersion\":\"%s%s\","
             "\"metadata\":{\"resourceVersion\":\"%llu\"%s%s}}}\n",
             part ? "PartialObjectMetadata" : rt->kind, part ? "meta.k8s.io/" : "",
             part ? r->as_version : rt->api_version, (unsigned long long)rv,
             part || rt->id != KS_K_CUSTOM ? ",\"creationTimestamp\":null" : "",
             initial_end ? ",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}" : "");
    return ks_blob_new(buf, strlen(buf));
}
