/*
 * ks_write: request bodies, CREATE, UPDATE (and PUT-creates) and PATCH.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cx_json.h"
#include "cx_log.h"
#include "cx_time.h"
#include "ks_admin.h"
#include "ks_api.h"
#include "ks_crd.h"
#include "ks_form.h"
#include "ks_patch.h"
#include "ks_proto.h"
#include "ks_validate.h"

/* ---- body decoding ------------------------------------------------------ */

static void decode_error(struct ks_req *r, const struct ks_rtype *rt, const char *detail)
{
    ks_err_bad_request(r, "%s in version \"%s\" cannot be handled as a %s: %s", rt->kind,
                       rt->version, rt->kind, detail);
}

/* Parses the body as an object of |rt|'s kind. Replies and returns NULL on
 * error. */
cJSON *ks_parse_body(struct ks_req *r, const struct ks_rtype *rt)
{
    const char *ct = ks_req_header(r, "Content-Type");
    cJSON *obj;
    if (ct && strncasecmp(ct, "application/vnd.kubernetes.protobuf", 35) == 0) {
        char perr[512];
        obj = ks_proto_decode(r->body, r->body_len, perr, sizeof(perr));
        if (!obj) {
            char msg[800];
            snprintf(msg, sizeof(msg),
                     "the body of the request was in an unknown format - accepted media types "
                     "include: application/json, application/yaml (%s)",
                     perr);
            ks_reply_status(r, 415, "UnsupportedMediaType", msg, NULL, NULL);
            return NULL;
        }
    } else if (ct && strncasecmp(ct, "application/json", 16) != 0 &&
               strncasecmp(ct, "application/yaml", 16) != 0 && strncasecmp(ct, "*/*", 3) != 0) {
        ks_reply_status(r, 415, "UnsupportedMediaType",
                        "the body of the request was in an unknown format - accepted media types "
                        "include: application/json, application/yaml",
                        NULL, NULL);
        return NULL;
    } else {
        obj = ct && strncasecmp(ct, "application/yaml", 16) == 0
                  ? ks_yaml_parse(r->body, r->body_len)
                  : cx_json_parse(r->body, r->body_len);
    }
    if (!obj) {
        if (r->body_len == 0)
            ks_err_bad_request(r, "the body of the request was empty");
        else
            decode_error(r, rt, "json: invalid character in JSON body");
        return NULL;
    }
    if (!cJSON_IsObject(obj)) {
        decode_error(r, rt, "json: cannot unmarshal non-object into Go value");
        cJSON_Delete(obj);
        return NULL;
    }
    const char *kind = cx_json_str(obj, "kind");
    const char *av = cx_json_str(obj, "apiVersion");
    if (rt->id == KS_K_CUSTOM && (!kind || !*kind)) {
        char *txt = cJSON_PrintUnformatted(obj);
        ks_err_bad_request(r, "Object 'Kind' is missing in '%s'", txt ? txt : "");
        free(txt);
        cJSON_Delete(obj);
        return NULL;
    }
    if ((kind && *kind && strcmp(kind, rt->kind) != 0) ||
        (av && *av && strcmp(av, rt->api_version) != 0)) {
        if (kind && *kind && strcmp(kind, rt->kind) != 0)
            ks_err_bad_request(
                r,
                "%s in version \"%s\" cannot be handled as a %s: no kind \"%s\" is registered for "
                "version \"%s\" in scheme \"k8s.io/apiserver/pkg/endpoints/handlers/create.go\"",
                kind, av && *av ? av : rt->api_version, rt->kind, kind,
                av && *av ? av : rt->api_version);
        else
            ks_err_bad_request(
                r, "the API version in the data (%s) does not match the expected API version (%s)",
                av, rt->api_version);
        cJSON_Delete(obj);
        return NULL;
    }
    ks_set_str(obj, "kind", rt->kind);
    ks_set_str(obj, "apiVersion", rt->api_version);
    if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(obj, "metadata")) &&
        cJSON_GetObjectItemCaseSensitive(obj, "metadata") &&
        !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(obj, "metadata"))) {
        decode_error(r, rt,
                     "json: cannot unmarshal into Go struct field .metadata of type v1.ObjectMeta");
        cJSON_Delete(obj);
        return NULL;
    }
    ks_meta(obj);
    return obj;
}

/* Namespace of the request vs the object's. 0 or replies 400. */
static int check_namespace(struct ks_req *r, cJSON *obj)
{
    if (!r->rt->namespaced) {
        cJSON_DeleteItemFromObjectCaseSensitive(ks_meta(obj), "namespace");
        return 0;
    }
    const char *ons = ks_md_str(obj, "namespace");
    if (ons && *ons && strcmp(ons, r->ns) != 0) {
        ks_err_bad_request(r, "the namespace of the provided object does not match the namespace "
                              "sent on the request");
        return -1;
    }
    ks_set_str(ks_meta(obj), "namespace", r->ns);
    return 0;
}

static bool namespace_exists(struct ks_server *s, const char *ns)
{
    struct ks_rtype *nsrt = ks_rtype_find(s, "", "v1", "namespaces");
    return nsrt && ks_store_get(nsrt, ns) != NULL;
}

static void ns_not_found(struct ks_req *r, const char *ns)
{
    char msg[512];
    snprintf(msg, sizeof(msg), "namespaces \"%s\" not found", ns);
    struct ks_details d = {.name = ns, .kind = "namespaces"};
    ks_reply_status(r, 404, "NotFound", msg, &d, NULL);
}

static void gen_name(const char *prefix, char *out, size_t n)
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    unsigned char rnd[5];
    if (RAND_bytes(rnd, sizeof(rnd)) != 1)
        memset(rnd, 7, sizeof(rnd));
    char suf[6];
    for (int i = 0; i < 5; i++)
        suf[i] = alphabet[rnd[i] % (sizeof(alphabet) - 1)];
    suf[5] = 0;
    snprintf(out, n, "%.*s%s", 58, prefix, suf);
}

/* Spec of an object: everything but metadata, and status when it is a
 * subresource (the generation: customresource strategy's PrepareForUpdate). */
static bool spec_equal(const struct ks_rtype *rt, const cJSON *a, const cJSON *b)
{
    cJSON *x = cJSON_Duplicate(a, 1), *y = cJSON_Duplicate(b, 1);
    bool eq = false;
    if (x && y) {
        cJSON_DeleteItemFromObjectCaseSensitive(x, "metadata");
        cJSON_DeleteItemFromObjectCaseSensitive(y, "metadata");
        if (rt->has_status) {
            cJSON_DeleteItemFromObjectCaseSensitive(x, "status");
            cJSON_DeleteItemFromObjectCaseSensitive(y, "status");
        }
        eq = cJSON_Compare(x, y, 1);
    }
    cJSON_Delete(x);
    cJSON_Delete(y);
    return eq;
}

static void reply_validation(struct ks_req *r, const struct ks_rtype *rt, const char *name, int vrc,
                             struct ks_ferrs *fe, const char *err)
{
    if (vrc == 400)
        decode_error(r, rt, err);
    else if (vrc == 422)
        ks_err_invalid(r, rt, name ? name : "", fe);
    else
        ks_err_internal(r, err);
}

static void after_commit(struct ks_req *r, struct ks_rtype *rt, struct ks_ver *v)
{
    r->result_rv = v->rv;
    if (rt->id == KS_K_CRD)
        ks_crd_changed(r->s, v->obj, false);
}

/* ---- CREATE ------------------------------------------------------------- */

/* Creates |obj| (owned) in |rt|; shared by POST and PUT-creates. */
static void do_create(struct ks_req *r, struct ks_rtype *rt, cJSON *obj)
{
    struct ks_server *s = r->s;
    cJSON *m = ks_meta(obj);
    char genbuf[300];
    const char *name = ks_md_str(obj, "name");
    const char *gen = ks_md_str(obj, "generateName");
    if ((!name || !*name) && gen && *gen) {
        gen_name(gen, genbuf, sizeof(genbuf));
        ks_set_str(m, "name", genbuf);
        name = ks_md_str(obj, "name");
    }
    const char *rvv = ks_md_str(obj, "resourceVersion");
    if (rvv && *rvv) {
        ks_reply_status(r, 500, NULL, "resourceVersion should not be set on objects to be created",
                        NULL, NULL);
        cJSON_Delete(obj);
        return;
    }
    if (rt->namespaced && !namespace_exists(s, r->ns)) {
        ns_not_found(r, r->ns);
        cJSON_Delete(obj);
        return;
    }
    /* System fields. */
    char uid[40], ts[CX_TIME_RFC3339_LEN];
    ks_new_uid(uid);
    cx_time_format_rfc3339(cx_wall_ns(), ts, sizeof(ts));
    ks_set_str(m, "uid", uid);
    ks_set_str(m, "creationTimestamp", ts);
    cJSON_DeleteItemFromObjectCaseSensitive(m, "deletionTimestamp");
    cJSON_DeleteItemFromObjectCaseSensitive(m, "deletionGracePeriodSeconds");
    cJSON_DeleteItemFromObjectCaseSensitive(m, "managedFields");
    cJSON_DeleteItemFromObjectCaseSensitive(m, "selfLink");
    cJSON_DeleteItemFromObjectCaseSensitive(m, "resourceVersion");
    if (rt->sets_generation)
        ks_set_item(m, "generation", cJSON_CreateNumber(1));
    else
        cJSON_DeleteItemFromObjectCaseSensitive(m, "generation");
    if (rt->has_status && (rt->id == KS_K_CUSTOM || rt->id == KS_K_CRD))
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
    if (rt->has_status && rt->id == KS_K_OTHER) {
        /* Built-in workloads start with an empty status (PrepareForCreate). */
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
        cJSON_AddObjectToObject(obj, "status");
    }
    struct ks_ferrs fe = {.n = 0};
    char err[4096] = "";
    int vrc = ks_validate(s, rt, obj, NULL, &fe, err, sizeof(err));
    name = ks_md_str(obj, "name");
    if (vrc != 0) {
        reply_validation(r, rt, name, vrc, &fe, err);
        cJSON_Delete(obj);
        return;
    }
    char *key = ks_key(rt, r->ns ? r->ns : "", name);
    if (!key) {
        cJSON_Delete(obj);
        ks_commit_failed(r);
        return;
    }
    if (ks_store_get(rt, key)) {
        ks_err_already_exists(r, rt, name);
        cJSON_Delete(obj);
        free(key);
        return;
    }
    if (r->dry_run) {
        ks_reply_obj(r, 201, obj);
        cJSON_Delete(obj);
        free(key);
        return;
    }
    struct ks_ver *v = ks_store_commit(s, rt, key, obj);
    free(key);
    if (!v) {
        ks_commit_failed(r);
        return;
    }
    if (!r->name) {
        /* POST: the audit log names what was created. */
        const char *cn = ks_md_str(v->obj, "name");
        r->name = cn ? strdup(cn) : NULL;
    }
    ks_ver_ref(v);
    after_commit(r, rt, v);
    ks_reply_ver(r, 201, v);
    ks_ver_unref(v);
}

void ks_api_create(struct ks_req *r)
{
    struct ks_rtype *rt = r->rt;
    cJSON *obj = ks_parse_body(r, rt);
    if (!obj)
        return;
    if (check_namespace(r, obj) != 0) {
        cJSON_Delete(obj);
        return;
    }
    do_create(r, rt, obj);
}

/* ---- UPDATE ------------------------------------------------------------- */

/* Finishes an update of |o| to |obj| (owned): RV precondition already
 * checked by the caller. |status_only|: the /status subresource. */
static void do_update(struct ks_req *r, struct ks_rtype *rt, struct ks_obj *o, cJSON *obj,
                      bool status_only)
{
    struct ks_server *s = r->s;
    const cJSON *old = o->cur->obj;
    cJSON *m;
    if (status_only) {
        cJSON *n = cJSON_Duplicate(old, 1);
        cJSON *st = cJSON_DetachItemFromObjectCaseSensitive(obj, "status");
        cJSON_Delete(obj);
        if (!n) {
            cJSON_Delete(st);
            ks_commit_failed(r);
            return;
        }
        ks_set_item(n, "status", st);
        obj = n;
        m = ks_meta(obj);
    } else {
        m = ks_meta(obj);
        const char *uid = ks_md_str(obj, "uid");
        const char *ouid = ks_md_str(old, "uid");
        if (uid && *uid && ouid && strcmp(uid, ouid) != 0) {
            struct ks_ferrs fe = {.n = 0};
            ks_ferr_invalid_str(&fe, "metadata.uid", uid, "field is immutable");
            ks_err_invalid(r, rt, r->name, &fe);
            cJSON_Delete(obj);
            return;
        }
        ks_set_str(m, "uid", ouid ? ouid : "");
        const char *ct = ks_md_str(old, "creationTimestamp");
        if (ct)
            ks_set_str(m, "creationTimestamp", ct);
        cJSON *gen = cx_json_path(old, "metadata", "generation", NULL);
        ks_set_item(m, "generation", gen ? cJSON_Duplicate(gen, 1) : NULL);
        cJSON *dts = cx_json_path(old, "metadata", "deletionTimestamp", NULL);
        ks_set_item(m, "deletionTimestamp", dts ? cJSON_Duplicate(dts, 1) : NULL);
        cJSON *dgp = cx_json_path(old, "metadata", "deletionGracePeriodSeconds", NULL);
        ks_set_item(m, "deletionGracePeriodSeconds", dgp ? cJSON_Duplicate(dgp, 1) : NULL);
        cJSON_DeleteItemFromObjectCaseSensitive(m, "managedFields");
        cJSON_DeleteItemFromObjectCaseSensitive(m, "selfLink");
        if (rt->has_status) {
            cJSON *st = cJSON_GetObjectItemCaseSensitive(old, "status");
            ks_set_item(obj, "status", st ? cJSON_Duplicate(st, 1) : NULL);
        }
    }
    /* The stored RV is what the new object compares against. */
    ks_set_str(m, "resourceVersion", ks_md_str(old, "resourceVersion"));
    struct ks_ferrs fe = {.n = 0};
    char err[4096] = "";
    int vrc = ks_validate(s, rt, obj, old, &fe, err, sizeof(err));
    if (vrc != 0) {
        reply_validation(r, rt, r->name, vrc, &fe, err);
        cJSON_Delete(obj);
        return;
    }
    /* After pruning and defaulting (the decoder does both before the
     * strategy compares): a change of unknown fields only is no change. */
    if (!status_only && rt->sets_generation && !spec_equal(rt, obj, old)) {
        const cJSON *gen = cx_json_path(old, "metadata", "generation", NULL);
        double g = gen && cJSON_IsNumber(gen) ? gen->valuedouble : 0;
        ks_set_item(m, "generation", cJSON_CreateNumber(g + 1));
    }
    struct ks_blob *nb = ks_json_blob(obj);
    if (!nb) {
        cJSON_Delete(obj);
        ks_commit_failed(r);
        return;
    }
    bool noop = nb->len == o->cur->json->len && memcmp(nb->data, o->cur->json->data, nb->len) == 0;
    if (noop || r->dry_run) {
        /* Identical bytes: no new RV, no event (etcd3 GuaranteedUpdate). */
        if (noop)
            ks_reply_ver(r, 200, o->cur);
        else
            ks_reply_obj(r, 200, obj);
        if (noop)
            r->result_rv = o->cur->rv;
        ks_blob_unref(nb);
        cJSON_Delete(obj);
        return;
    }
    ks_blob_unref(nb);
    /* Removing the last finalizer of an object being deleted deletes it. */
    cJSON *fin = cx_json_path(obj, "metadata", "finalizers", NULL);
    bool deleting = cx_json_path(obj, "metadata", "deletionTimestamp", NULL) != NULL;
    bool no_fin = !cJSON_IsArray(fin) || cJSON_GetArraySize(fin) == 0;
    char *key = strdup(o->key);
    if (!key) {
        cJSON_Delete(obj);
        ks_commit_failed(r);
        return;
    }
    if (deleting && no_fin) {
        struct ks_blob *body = ks_json_blob(obj);
        cJSON_Delete(obj);
        struct ks_ver *dv = ks_store_commit(s, rt, key, NULL);
        free(key);
        if (!dv || !body) {
            ks_blob_unref(body);
            ks_commit_failed(r);
            return;
        }
        ks_ver_ref(dv);
        r->result_rv = dv->rv;
        if (rt->id == KS_K_CRD)
            ks_crd_changed(s, dv->obj, true);
        ks_reply_ver(r, 200, dv);
        ks_ver_unref(dv);
        ks_blob_unref(body);
        return;
    }
    struct ks_ver *v = ks_store_commit(s, rt, key, obj);
    free(key);
    if (!v) {
        ks_commit_failed(r);
        return;
    }
    ks_ver_ref(v);
    after_commit(r, rt, v);
    ks_reply_ver(r, 200, v);
    ks_ver_unref(v);
}

/* Checks the RV precondition of an update body. 0, or replies and -1. */
static int check_update_rv(struct ks_req *r, const struct ks_rtype *rt, const struct ks_obj *o,
                           const cJSON *obj)
{
    const char *rv = ks_md_str(obj, "resourceVersion");
    if (!rv || !*rv) {
        if (rt->unconditional_ok)
            return 0;
        struct ks_ferrs fe = {.n = 0};
        ks_ferr_add(&fe, "FieldValueInvalid", "metadata.resourceVersion",
                    "Invalid value: 0x0: must be specified for an update");
        ks_err_invalid(r, rt, r->name, &fe);
        return -1;
    }
    uint64_t n;
    if (ks_parse_rv(rv, &n) != 0) {
        ks_err_bad_request(r, "invalid resourceVersion: %s", rv);
        return -1;
    }
    if (n != o->cur->rv) {
        ks_err_conflict(r, rt, r->name,
                        "the object has been modified; please apply your changes to the latest "
                        "version and try again");
        return -1;
    }
    return 0;
}

void ks_api_update(struct ks_req *r)
{
    struct ks_rtype *rt = r->rt;
    cJSON *obj = ks_parse_body(r, rt);
    if (!obj)
        return;
    const char *name = ks_md_str(obj, "name");
    if (!name || !*name) {
        ks_set_str(ks_meta(obj), "name", r->name);
    } else if (strcmp(name, r->name) != 0) {
        ks_err_bad_request(r, "the name of the object (%s) does not match the name on the URL (%s)",
                           name, r->name);
        cJSON_Delete(obj);
        return;
    }
    if (check_namespace(r, obj) != 0) {
        cJSON_Delete(obj);
        return;
    }
    char *key = ks_key(rt, r->ns ? r->ns : "", r->name);
    struct ks_obj *o = key ? ks_store_get(rt, key) : NULL;
    free(key);
    if (!o) {
        if (rt->create_on_update && !r->sub) {
            const char *rv = ks_md_str(obj, "resourceVersion");
            if (rv && *rv) {
                /* An update with a precondition on a missing object. */
                ks_err_not_found(r, rt, r->name);
                cJSON_Delete(obj);
                return;
            }
            do_create(r, rt, obj);
            return;
        }
        ks_err_not_found(r, rt, r->name);
        cJSON_Delete(obj);
        return;
    }
    if (check_update_rv(r, rt, o, obj) != 0) {
        cJSON_Delete(obj);
        return;
    }
    do_update(r, rt, o, obj, r->sub != NULL);
}

/* ---- PATCH -------------------------------------------------------------- */

static void unsupported_patch(struct ks_req *r, const struct ks_rtype *rt)
{
    char msg[512];
    snprintf(msg, sizeof(msg),
             "the body of the request was in an unknown format - accepted media types include: "
             "application/json-patch+json, application/merge-patch+json, "
             "application/apply-patch+yaml%s",
             rt->strategic_ok ? ", application/strategic-merge-patch+json" : "");
    ks_reply_status(r, 415, "UnsupportedMediaType", msg, NULL, NULL);
}

void ks_api_patch(struct ks_req *r)
{
    struct ks_rtype *rt = r->rt;
    const char *ct = ks_req_header(r, "Content-Type");
    char ctype[128] = "";
    if (ct) {
        snprintf(ctype, sizeof(ctype), "%s", ct);
        char *semi = strchr(ctype, ';');
        if (semi)
            *semi = 0;
        for (char *c = ctype; *c; c++)
            if (*c == ' ')
                *c = 0;
    }
    enum { P_MERGE, P_JSON, P_SMP, P_APPLY } kind;
    if (strcasecmp(ctype, "application/merge-patch+json") == 0)
        kind = P_MERGE;
    else if (strcasecmp(ctype, "application/json-patch+json") == 0)
        kind = P_JSON;
    else if (strcasecmp(ctype, "application/strategic-merge-patch+json") == 0 && rt->strategic_ok)
        kind = P_SMP;
    else if (strcasecmp(ctype, "application/apply-patch+yaml") == 0)
        kind = P_APPLY;
    else {
        unsupported_patch(r, rt);
        return;
    }
    cJSON *patch = NULL;
    if (kind == P_APPLY) {
        patch = ks_yaml_parse(r->body, r->body_len);
        if (!patch) {
            ks_err_bad_request(r, "error decoding YAML: invalid YAML");
            return;
        }
    } else {
        patch = cx_json_parse(r->body, r->body_len);
        if (!patch) {
            ks_err_bad_request(r, "error decoding patch: invalid JSON");
            return;
        }
    }
    char *key = ks_key(rt, r->ns ? r->ns : "", r->name);
    struct ks_obj *o = key ? ks_store_get(rt, key) : NULL;
    free(key);
    if (!o) {
        if (kind == P_APPLY && !r->sub && cJSON_IsObject(patch)) {
            /* Server-side apply creates a missing object. */
            cJSON *m = ks_meta(patch);
            if (!ks_md_str(patch, "name"))
                ks_set_str(m, "name", r->name);
            if (rt->namespaced)
                ks_set_str(m, "namespace", r->ns);
            const char *k = cx_json_str(patch, "kind");
            if (k && strcmp(k, rt->kind) != 0) {
                ks_err_bad_request(r, "invalid object type: %s", k);
                cJSON_Delete(patch);
                return;
            }
            ks_set_str(patch, "kind", rt->kind);
            ks_set_str(patch, "apiVersion", rt->api_version);
            do_create(r, rt, patch);
            return;
        }
        ks_err_not_found(r, rt, r->name);
        cJSON_Delete(patch);
        return;
    }
    cJSON *doc = cJSON_Duplicate(o->cur->obj, 1);
    if (!doc) {
        cJSON_Delete(patch);
        ks_commit_failed(r);
        return;
    }
    char err[2048] = "";
    int rc = 0;
    switch (kind) {
    case P_MERGE:
    case P_APPLY:
        if (!cJSON_IsObject(patch)) {
            rc = -1;
            snprintf(err, sizeof(err),
                     "json: cannot unmarshal array into Go value of type map[string]interface {}");
            break;
        }
        doc = ks_merge_patch(doc, patch);
        if (!doc)
            rc = -3;
        break;
    case P_JSON:
        rc = ks_json_patch(&doc, patch, err, sizeof(err));
        break;
    case P_SMP:
        rc = ks_strategic_patch(&doc, patch, rt->kind, err, sizeof(err));
        break;
    }
    cJSON_Delete(patch);
    if (rc == -1) {
        cJSON_Delete(doc);
        ks_err_bad_request(r, "%s", err);
        return;
    }
    if (rc == -2) {
        cJSON_Delete(doc);
        struct ks_cause c = {.reason = "UnexpectedServerResponse", .message = err};
        struct ks_details d = {.causes = &c, .ncauses = 1};
        ks_reply_status(r, 422, "Invalid",
                        "the server rejected our request due to an error in our request", &d, NULL);
        return;
    }
    if (rc != 0 || !cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        ks_err_internal(r, "patch produced no object");
        return;
    }
    /* The patched object must still be this object of this kind. */
    const char *k = cx_json_str(doc, "kind");
    const char *n = ks_md_str(doc, "name");
    if (!k || strcmp(k, rt->kind) != 0 || !n || strcmp(n, r->name) != 0) {
        cJSON_Delete(doc);
        if (n && strcmp(n, r->name) != 0)
            ks_err_bad_request(
                r, "the name of the object (%s) does not match the name on the URL (%s)", n,
                r->name);
        else
            ks_err_bad_request(r, "the kind of the patched object changed");
        return;
    }
    if (rt->namespaced) {
        const char *pns = ks_md_str(doc, "namespace");
        if (!pns || strcmp(pns, r->ns) != 0) {
            cJSON_Delete(doc);
            ks_err_bad_request(r, "the namespace of the provided object does not match the "
                                  "namespace sent on the request");
            return;
        }
    }
    /* A resourceVersion in the patch is a precondition. */
    const char *prv = ks_md_str(doc, "resourceVersion");
    uint64_t pn = 0;
    if (!prv || ks_parse_rv(prv, &pn) != 0 || pn != o->cur->rv) {
        cJSON_Delete(doc);
        ks_err_conflict(r, rt, r->name,
                        "the object has been modified; please apply your changes to the latest "
                        "version and try again");
        return;
    }
    do_update(r, rt, o, doc, r->sub != NULL);
}
