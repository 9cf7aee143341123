/*
 * ks_api: the shared helpers of the REST verbs, the dispatcher and seeding.
 * The verbs live in ks_read.c (get, list), ks_write.c (create, update,
 * patch) and ks_delete.c (delete, deletecollection).
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

/* ---- small JSON helpers ------------------------------------------------- */

cJSON *ks_meta(cJSON *obj)
{
    cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    if (!cJSON_IsObject(m)) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "metadata");
        m = cJSON_AddObjectToObject(obj, "metadata");
    }
    return m;
}

const char *ks_md_str(const cJSON *obj, const char *k)
{
    return cx_json_path_str(obj, "metadata", k, NULL);
}

void ks_set_str(cJSON *o, const char *k, const char *v)
{
    cJSON *old = cJSON_GetObjectItemCaseSensitive(o, k);
    if (old)
        cJSON_ReplaceItemInObjectCaseSensitive(o, k, cJSON_CreateString(v));
    else
        cJSON_AddStringToObject(o, k, v);
}

void ks_set_item(cJSON *o, const char *k, cJSON *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(o, k);
    if (v)
        cJSON_AddItemToObject(o, k, v);
}

void ks_new_uid(char out[40])
{
    unsigned char u[16];
    if (RAND_bytes(u, sizeof(u)) != 1)
        memset(u, 0x5a, sizeof(u));
    u[6] = (u[6] & 0x0f) | 0x40;
    u[8] = (u[8] & 0x3f) | 0x80;
    snprintf(out, 40, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
             u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
}

int ks_parse_rv(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

void ks_rv_str(uint64_t rv, char out[24])
{
    snprintf(out, 24, "%llu", (unsigned long long)rv);
}

void ks_commit_failed(struct ks_req *r)
{
    ks_err_internal(r, "out of memory");
}

/* ---- dispatch ----------------------------------------------------------- */

void ks_api_dispatch(struct ks_req *r)
{
    const char *dr = ks_q(r, "dryRun");
    if (dr && *dr) {
        if (strcmp(dr, "All") != 0) {
            ks_err_bad_request(r, "Invalid dryRun value: %s. Supported values: All", dr);
            return;
        }
        r->dry_run = true;
    }
    if (ks_form_negotiate(r) != 0)
        return;
    if (r->rt->review) {
        ks_review_dispatch(r);
        return;
    }
    switch (r->verb) {
    case KS_V_GET:
        ks_api_get(r);
        break;
    case KS_V_LIST:
        ks_api_list(r);
        break;
    case KS_V_WATCH:
        ks_watch_start(r);
        break;
    case KS_V_CREATE:
        ks_api_create(r);
        break;
    case KS_V_UPDATE:
        ks_api_update(r);
        break;
    case KS_V_PATCH:
        ks_api_patch(r);
        break;
    case KS_V_DELETE:
        ks_api_delete(r);
        break;
    case KS_V_DELETECOLLECTION:
        ks_api_deletecollection(r);
        break;
    default:
        ks_err_method(r);
    }
}

int ks_api_seed(struct ks_server *s, const char *group, const char *plural, const cJSON *obj)
{
    struct ks_rtype *rt = ks_rtype_find(s, group, NULL, plural);
    if (!rt)
        return -1;
    cJSON *o = cJSON_Duplicate(obj, 1);
    if (!o)
        return -1;
    cJSON *m = ks_meta(o);
    char uid[40], ts[CX_TIME_RFC3339_LEN];
    ks_new_uid(uid);
    cx_time_format_rfc3339(cx_wall_ns(), ts, sizeof(ts));
    ks_set_str(m, "uid", uid);
    ks_set_str(m, "creationTimestamp", ts);
    ks_set_str(o, "kind", rt->kind);
    ks_set_str(o, "apiVersion", rt->api_version);
    struct ks_ferrs fe = {.n = 0};
    char err[1024];
    if (ks_validate(s, rt, o, NULL, &fe, err, sizeof(err)) != 0) {
        ks_ferrs_free(&fe);
        cJSON_Delete(o);
        return -1;
    }
    const char *ns = ks_md_str(o, "namespace");
    char *key = ks_key(rt, ns ? ns : "", ks_md_str(o, "name"));
    struct ks_ver *v = key ? ks_store_commit(s, rt, key, o) : NULL;
    if (!key)
        cJSON_Delete(o);
    free(key);
    return v ? 0 : -1;
}
