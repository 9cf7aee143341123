/* Fuzz target: one page of a list response as the informers take it. Input:
 * one flags byte (which kind the page is of, metadata-only or trimmed, a
 * small or the real cap on one object), then the page's JSON. Each item
 * goes through what the informer does to it (kube_obj_admit, kube_obj_new,
 * the daemon's decode into a store_obj with its Secret/ConfigMap
 * references, a fresh cache), the fresh cache is compared with a cache of
 * the first half of the items as the informer does after a list, and the
 * continue token and resourceVersion go into the next request's URL. Never
 * crashes or leaks; what is kept is bounded and consistent (keys, sizes,
 * the status and generation read back), and the URL carries the token
 * escaped (nothing an API server would split a request line on). */
#include "cx_buf.h"
#include "cx_json.h"
#include "daemon_refs.h"
#include "kube_cache.h"
#include "kube_client_internal.h"
#include "store_kinds.h"
#include "store_obj.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const enum xlate_kind kinds[] = {
    XLATE_KIND_GATEWAY, XLATE_KIND_VIRTUAL_SERVICE, XLATE_KIND_ROUTE_TABLE, XLATE_KIND_UPSTREAM,
    XLATE_KIND_SERVICE, XLATE_KIND_ENDPOINT_SLICE,  XLATE_KIND_SECRET,      XLATE_KIND_CONFIG_MAP,
};

static struct store_decoder decoder;

static void keep(struct kube_obj *o, enum xlate_kind kind, const cJSON *json, int decode)
{
    if (!decode)
        return;
    struct daemon_ref refs[DAEMON_REFS_MAX];
    const char *keys[DAEMON_REFS_MAX];
    char buf[DAEMON_REFS_MAX][DAEMON_REFS_KEY_MAX + 2];
    size_t n = daemon_refs_of(kind, json, refs, DAEMON_REFS_MAX);
    if (n > DAEMON_REFS_MAX)
        abort();
    for (size_t i = 0; i < n; i++) {
        if (strnlen(refs[i].key, sizeof(refs[i].key)) >= sizeof(refs[i].key))
            abort();
        snprintf(buf[i], sizeof(buf[i]), "%c/%s", refs[i].kind == XLATE_KIND_SECRET ? 'S' : 'C',
                 refs[i].key);
        keys[i] = buf[i];
    }
    struct store_obj *so = store_obj_decode(&decoder, kind, json, keys, n);
    if (!so)
        return;
    if (so->nrefs != n)
        abort();
    kube_obj_keep_rec(o, so, &store_obj_ops);
}

/* What the readers of a kept object read back: status and generation. */
static void read_back(const struct kube_obj *o)
{
    cJSON *st = store_obj_status(o);
    if (st && o->rec && !cJSON_IsObject(st) && !cJSON_IsArray(st) && !cJSON_IsString(st) &&
        !cJSON_IsNumber(st) && !cJSON_IsBool(st) && !cJSON_IsNull(st))
        abort();
    cJSON_Delete(st);
    (void)store_kube_generation(o);
    (void)kube_obj_label(o, "app");
}

static struct kube_cache *take_items(const cJSON *items, size_t from, size_t to,
                                     enum xlate_kind kind, int metadata_only, size_t max_object,
                                     int decode)
{
    struct kube_cache *c = kube_cache_new();
    if (!c)
        abort();
    const struct kube_resource *res = store_kind_resource(kind);
    size_t i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, items)
    {
        if (i++ < from)
            continue;
        if (i > to)
            break;
        cJSON *json = cJSON_Duplicate(it, 1);
        if (!json)
            continue;
        size_t sz = 0;
        if (kube_obj_admit(json, metadata_only, !metadata_only, max_object, res->kind, "v1", &sz) !=
            0) {
            if (sz <= max_object)
                abort();
            cJSON_Delete(json);
            continue;
        }
        if (sz > max_object)
            abort();
        struct kube_obj *o = kube_obj_new(json);
        if (!o) {
            cJSON_Delete(json);
            continue;
        }
        char key[600];
        if (kube_obj_key(*o->ns ? o->ns : NULL, o->name, key, sizeof(key)) != 0 ||
            strcmp(key, o->key) != 0)
            abort();
        if (metadata_only && cJSON_GetObjectItemCaseSensitive(json, "spec"))
            abort();
        keep(o, kind, json, decode && !metadata_only);
        read_back(o);
        struct kube_obj *old = kube_cache_put(c, o);
        kube_obj_unref(old); /* replaced, or |o| itself when memory ran out */
    }
    return c;
}

/* apply_fresh's comparison: deletions, then changes, in key order. */
static void diff(const struct kube_cache *cache, const struct kube_cache *fresh)
{
    size_t nf = 0, nc = 0;
    struct kube_obj **fl = kube_cache_list(fresh, &nf);
    struct kube_obj **cl = kube_cache_list(cache, &nc);
    if (nf != kube_cache_len(fresh) || nc != kube_cache_len(cache))
        abort();
    for (size_t i = 1; i < nf; i++)
        if (strcmp(fl[i - 1]->key, fl[i]->key) >= 0)
            abort();
    size_t gone = 0, same = 0;
    for (size_t i = 0; i < nc; i++)
        gone += kube_cache_get(fresh, cl[i]->key) == NULL;
    for (size_t i = 0; i < nf; i++) {
        struct kube_obj *cur = kube_cache_get(cache, fl[i]->key);
        same += cur && *cur->rv && strcmp(cur->rv, fl[i]->rv) == 0;
    }
    if (gone > nc || same > nf)
        abort();
    kube_cache_list_free(fl, nf);
    kube_cache_list_free(cl, nc);
}

static void next_request(const struct kube_resource *res, const char *cont, const char *rv)
{
    struct cx_buf p;
    cx_buf_init(&p, KUBE_URL_MAX);
    int first = 1;
    int rc = kube_path(&p, res, "ns", NULL, NULL);
    rc |= kube_query_add(&p, &first, "limit", "500");
    rc |= kube_query_add(&p, &first, "continue", cont);
    if (!cont || !*cont)
        rc |= kube_query_add(&p, &first, "resourceVersion", rv);
    if (rc == 0) {
        if (p.len > KUBE_URL_MAX)
            abort();
        for (size_t i = 0; i < p.len; i++) {
            unsigned char ch = (unsigned char)p.data[i];
            if (ch <= ' ' || ch >= 0x7f || ch == '#')
                abort();
        }
    }
    cx_buf_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static int inited;
    if (!inited) {
        store_decoder_init(&decoder, NULL);
        inited = 1;
    }
    uint8_t flags = data[0];
    enum xlate_kind kind = kinds[flags & 7];
    int metadata_only = (flags >> 3) & 1;
    size_t max_object = (flags >> 4) & 1 ? 256 : KUBE_OBJECT_MAX;
    int decode = !((flags >> 5) & 1);
    cJSON *page = cx_json_parse((const char *)data + 1, size - 1);
    if (!page)
        return 0;
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(page, "items");
    size_t n = cJSON_IsArray(items) ? (size_t)cJSON_GetArraySize(items) : 0;
    struct kube_cache *fresh = take_items(items, 0, n, kind, metadata_only, max_object, decode);
    struct kube_cache *cache = take_items(items, 0, n / 2, kind, metadata_only, max_object, decode);
    if (kube_cache_len(fresh) > n || kube_cache_len(cache) > kube_cache_len(fresh))
        abort();
    diff(cache, fresh);
    kube_cache_free(cache);
    kube_cache_free(fresh);
    next_request(store_kind_resource(kind), cx_json_path_str(page, "metadata", "continue", NULL),
                 cx_json_path_str(page, "metadata", "resourceVersion", NULL));
    cJSON_Delete(page);
    return 0;
}
