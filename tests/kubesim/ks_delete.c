/*
 * ks_delete: DELETE (finalizers, preconditions), DELETECOLLECTION and the
 * removal of a namespace's contents.
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

/* ---- DELETE ------------------------------------------------------------- */

static void delete_success(struct ks_req *r, const struct ks_rtype *rt, struct ks_ver *v)
{
    if (rt->id == KS_K_CUSTOM || rt->id == KS_K_CRD) {
        ks_reply_ver(r, 200, v);
        return;
    }
    struct ks_details d = {.name = ks_md_str(v->obj, "name"),
                           .group = rt->group,
                           .kind = rt->plural,
                           .uid = ks_md_str(v->obj, "uid")};
    ks_reply_status(r, 200, NULL, NULL, &d, NULL);
}

/* Deletes |o|: immediately, or marks it when finalizers remain. Returns the
 * version to report (a new reference: caller unrefs) or NULL on failure;
 * |*gone| says which. */
static struct ks_ver *delete_obj(struct ks_server *s, struct ks_rtype *rt, struct ks_obj *o,
                                 bool *gone)
{
    cJSON *fin = cx_json_path(o->cur->obj, "metadata", "finalizers", NULL);
    if (rt->id == KS_K_NAMESPACE) {
        const char *ns = ks_md_str(o->cur->obj, "name");
        char *nsd = ns ? strdup(ns) : NULL;
        if (nsd) {
            ks_api_delete_namespace_contents(s, nsd);
            free(nsd);
        }
    }
    if (cJSON_IsArray(fin) && cJSON_GetArraySize(fin) > 0) {
        *gone = false;
        if (cx_json_path(o->cur->obj, "metadata", "deletionTimestamp", NULL)) {
            ks_ver_ref(o->cur);
            return o->cur;
        }
        cJSON *n = cJSON_Duplicate(o->cur->obj, 1);
        if (!n)
            return NULL;
        char ts[CX_TIME_RFC3339_LEN];
        cx_time_format_rfc3339(cx_wall_ns(), ts, sizeof(ts));
        ks_set_str(ks_meta(n), "deletionTimestamp", ts);
        ks_set_item(ks_meta(n), "deletionGracePeriodSeconds", cJSON_CreateNumber(0));
        char *k = strdup(o->key);
        struct ks_ver *mv = k ? ks_store_commit(s, rt, k, n) : NULL;
        if (!k)
            cJSON_Delete(n);
        free(k);
        if (mv)
            ks_ver_ref(mv);
        return mv;
    }
    *gone = true;
    char *key = strdup(o->key);
    if (!key)
        return NULL;
    struct ks_ver *dv = ks_store_commit(s, rt, key, NULL);
    free(key);
    if (dv) {
        ks_ver_ref(dv);
        if (rt->id == KS_K_CRD)
            ks_crd_changed(s, dv->obj, true);
    }
    return dv;
}

void ks_api_delete_namespace_contents(struct ks_server *s, const char *ns)
{
    char prefix[320];
    snprintf(prefix, sizeof(prefix), "%s/", ns);
    size_t plen = strlen(prefix);
    for (struct ks_rtype *rt = s->rtypes; rt; rt = rt->next) {
        if (!rt->namespaced)
            continue;
        for (;;) {
            struct ks_obj *o = ks_index_seek(&rt->idx, prefix);
            if (!o || strncmp(o->key, prefix, plen) != 0)
                break;
            char *key = strdup(o->key);
            if (!key || !ks_store_commit(s, rt, key, NULL)) {
                free(key);
                break;
            }
            free(key);
        }
    }
}

/* The DeleteOptions body of a DELETE: JSON (kubectl) or protobuf (client-go's
 * typed clients, e.g. Helm's release storage). Returns NULL without a body;
 * replies 400 and returns NULL when it cannot be decoded. */
static cJSON *delete_options(struct ks_req *r)
{
    if (!r->body_len)
        return NULL;
    const char *ct = ks_req_header(r, "Content-Type");
    cJSON *opts;
    if (ct && strncasecmp(ct, "application/vnd.kubernetes.protobuf", 35) == 0) {
        char perr[512];
        opts = ks_proto_decode(r->body, r->body_len, perr, sizeof(perr));
        if (!opts) {
            ks_err_bad_request(r, "couldn't decode DeleteOptions: %s", perr);
            return NULL;
        }
    } else {
        opts = cx_json_parse(r->body, r->body_len);
        if (!opts)
            ks_err_bad_request(r, "couldn't get version/kind; json parse error: invalid JSON");
    }
    return opts;
}

void ks_api_delete(struct ks_req *r)
{
    struct ks_rtype *rt = r->rt;
    cJSON *opts = delete_options(r);
    if (r->body_len && !opts)
        return;
    char *key = ks_key(rt, r->ns ? r->ns : "", r->name);
    struct ks_obj *o = key ? ks_store_get(rt, key) : NULL;
    free(key);
    if (!o) {
        ks_err_not_found(r, rt, r->name);
        cJSON_Delete(opts);
        return;
    }
    const char *puid = cx_json_path_str(opts, "preconditions", "uid", NULL);
    const char *prv = cx_json_path_str(opts, "preconditions", "resourceVersion", NULL);
    const char *ouid = ks_md_str(o->cur->obj, "uid");
    const char *orv = ks_md_str(o->cur->obj, "resourceVersion");
    char why[512];
    if (puid && strcmp(puid, ouid ? ouid : "") != 0) {
        snprintf(why, sizeof(why),
                 "Precondition failed: UID in precondition: %s, UID in object meta: %s", puid,
                 ouid ? ouid : "");
        ks_err_conflict(r, rt, r->name, why);
        cJSON_Delete(opts);
        return;
    }
    if (prv && strcmp(prv, orv ? orv : "") != 0) {
        snprintf(why, sizeof(why),
                 "Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in "
                 "object meta: %s",
                 prv, orv ? orv : "");
        ks_err_conflict(r, rt, r->name, why);
        cJSON_Delete(opts);
        return;
    }
    cJSON_Delete(opts);
    if (r->dry_run) {
        ks_reply_ver(r, 200, o->cur);
        return;
    }
    bool gone = false;
    struct ks_ver *prev = o->cur;
    ks_ver_ref(prev);
    struct ks_ver *v = delete_obj(r->s, rt, o, &gone);
    if (!v) {
        ks_ver_unref(prev);
        ks_commit_failed(r);
        return;
    }
    r->result_rv = v->rv;
    if (!gone) {
        ks_reply_ver(r, 200, v);
    } else if (rt->id == KS_K_NAMESPACE) {
        /* The namespace as a real server shows it: Terminating. */
        cJSON *n = cJSON_Duplicate(prev->obj, 1);
        cJSON *st = n ? cJSON_GetObjectItemCaseSensitive(n, "status") : NULL;
        if (cJSON_IsObject(st))
            ks_set_str(st, "phase", "Terminating");
        char ts[CX_TIME_RFC3339_LEN];
        cx_time_format_rfc3339(cx_wall_ns(), ts, sizeof(ts));
        if (n)
            ks_set_str(ks_meta(n), "deletionTimestamp", ts);
        if (n)
            ks_reply_obj(r, 200, n);
        else
            ks_commit_failed(r);
        cJSON_Delete(n);
    } else {
        delete_success(r, rt, rt->id == KS_K_CUSTOM ? prev : v);
    }
    ks_ver_unref(v);
    ks_ver_unref(prev);
}

void ks_api_deletecollection(struct ks_req *r)
{
    struct ks_rtype *rt = r->rt;
    struct ks_listopts o;
    if (ks_listopts_parse(r, &o) != 0)
        return;
    char prefix[320] = "";
    if (rt->namespaced && r->ns)
        snprintf(prefix, sizeof(prefix), "%s/", r->ns);
    size_t plen = strlen(prefix);
    /* Collect keys first: deleting while iterating would skip entries. */
    char **keys = NULL;
    size_t n = 0;
    for (struct ks_obj *ob = ks_index_seek(&rt->idx, prefix);
         ob && strncmp(ob->key, prefix, plen) == 0; ob = ks_index_next(ob)) {
        if (!ks_obj_matches(rt, NULL, &o, ob->cur))
            continue;
        char **nk = realloc(keys, (n + 1) * sizeof(*nk));
        if (!nk)
            break;
        keys = nk;
        keys[n] = strdup(ob->key);
        if (keys[n])
            n++;
    }
    /* The reply lists what was deleted, as it was before. */
    struct ks_ver **gone_v = n ? calloc(n, sizeof(*gone_v)) : NULL;
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        struct ks_obj *ob = ks_store_get(rt, keys[i]);
        free(keys[i]);
        if (!ob)
            continue;
        struct ks_ver *prev = ob->cur;
        ks_ver_ref(prev);
        bool gone;
        struct ks_ver *v = r->dry_run ? prev : delete_obj(r->s, rt, ob, &gone);
        if (v) {
            r->result_rv = v->rv;
            if (!r->dry_run)
                ks_ver_unref(v);
        }
        if (v && gone_v)
            gone_v[count++] = prev;
        else
            ks_ver_unref(prev);
    }
    free(keys);
    if (n && !gone_v) {
        ks_commit_failed(r);
    } else {
        char rvs[24];
        ks_rv_str(r->s->rv, rvs);
        struct ks_listmeta lm = {.rv = rvs, .remaining = -1};
        ks_reply_list(r, &lm, gone_v, count);
    }
    for (size_t i = 0; i < count; i++)
        ks_ver_unref(gone_v[i]);
    free(gone_v);
    ks_listopts_free(&o);
}
