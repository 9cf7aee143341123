/*
 * ks_state: save/load the store as one JSON document:
 *   {"kind":"KubesimState","resourceVersion":"N",
 *    "objects":[{"group":"","version":"v1","resource":"configmaps","object":{...}},...]}
 * CRDs come first so their resources are served before their objects load.
 */
#include "ks_state.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cx_json.h"
#include "cx_log.h"
#include "ks_api.h"
#include "ks_crd.h"

#define STATE_MAX ((size_t)2 << 30)

static int emit_rtype(FILE *f, struct ks_rtype *rt, bool *first)
{
    for (struct ks_obj *o = ks_index_seek(&rt->idx, ""); o; o = ks_index_next(o)) {
        if (fprintf(f, "%s{\"group\":\"%s\",\"version\":\"%s\",\"resource\":\"%s\",\"object\":",
                    *first ? "" : ",\n", rt->group, rt->version, rt->plural) < 0)
            return -1;
        if (fwrite(o->cur->json->data, 1, o->cur->json->len, f) != o->cur->json->len)
            return -1;
        if (fputc('}', f) == EOF)
            return -1;
        *first = false;
    }
    return 0;
}

int ks_state_save(struct ks_server *s)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", s->cfg.state_file, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    int rc = fprintf(f, "{\"kind\":\"KubesimState\",\"resourceVersion\":\"%llu\",\"objects\":[\n",
                     (unsigned long long)s->rv) < 0
                 ? -1
                 : 0;
    bool first = true;
    for (struct ks_rtype *rt = s->rtypes; rt && rc == 0; rt = rt->next)
        if (rt->id == KS_K_CRD)
            rc = emit_rtype(f, rt, &first);
    for (struct ks_rtype *rt = s->rtypes; rt && rc == 0; rt = rt->next)
        if (rt->id != KS_K_CRD && rt->served)
            rc = emit_rtype(f, rt, &first);
    if (rc == 0 && fputs("\n]}\n", f) == EOF)
        rc = -1;
    if (fclose(f) != 0)
        rc = -1;
    if (rc == 0 && rename(tmp, s->cfg.state_file) != 0)
        rc = -1;
    if (rc != 0)
        unlink(tmp);
    else
        cx_info(KS_LOG, "state saved to %s (rv %llu)", s->cfg.state_file,
                (unsigned long long)s->rv);
    return rc;
}

int ks_state_load(struct ks_server *s)
{
    FILE *f = fopen(s->cfg.state_file, "r");
    if (!f)
        return errno == ENOENT ? 0 : -1;
    struct cx_buf b;
    cx_buf_init(&b, STATE_MAX);
    char chunk[65536];
    size_t n;
    int rc = 0;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        if (cx_buf_append(&b, chunk, n) != 0) {
            rc = -1;
            break;
        }
    fclose(f);
    cJSON *doc = rc == 0 ? cx_json_parse(b.data ? b.data : "", b.len) : NULL;
    cx_buf_free(&b);
    uint64_t rv = 0;
    if (!doc || ks_parse_rv(cx_json_str(doc, "resourceVersion"), &rv) != 0) {
        cx_error(KS_LOG, "%s: not a kubesim state file", s->cfg.state_file);
        cJSON_Delete(doc);
        return -1;
    }
    size_t count = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(doc, "objects"))
    {
        const char *g = cx_json_str(it, "group"), *v = cx_json_str(it, "version"),
                   *p = cx_json_str(it, "resource");
        cJSON *obj = cJSON_GetObjectItemCaseSensitive(it, "object");
        struct ks_rtype *rt = g && v && p ? ks_rtype_find(s, g, v, p) : NULL;
        const char *name = cx_json_path_str(obj, "metadata", "name", NULL);
        const char *ns = cx_json_path_str(obj, "metadata", "namespace", NULL);
        uint64_t orv = 0;
        if (!rt || !name ||
            ks_parse_rv(cx_json_path_str(obj, "metadata", "resourceVersion", NULL), &orv) != 0) {
            cx_warn(KS_LOG, "state: skipping an object of %s/%s", g ? g : "?", p ? p : "?");
            continue;
        }
        char *key = ks_key(rt, ns ? ns : "", name);
        cJSON *copy = cJSON_Duplicate(obj, 1);
        if (!key || !copy || ks_store_load_obj(rt, key, copy, orv) != 0) {
            free(key);
            continue;
        }
        free(key);
        count++;
        if (rt->id == KS_K_CRD)
            ks_crd_changed(s, obj, false);
    }
    cJSON_Delete(doc);
    s->rv = rv;
    for (struct ks_rtype *rt = s->rtypes; rt; rt = rt->next) {
        rt->window_start_rv = rv;
        rt->cache_rv = rv;
    }
    cx_info(KS_LOG, "state loaded from %s: %zu objects, rv %llu", s->cfg.state_file, count,
            (unsigned long long)rv);
    return 0;
}
