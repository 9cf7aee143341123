/* Fuzz target: arbitrary bytes as the body of a REST discovery request
 * (POST /v3/discovery:*), answered by xds_rest_discovery from a small fixed
 * snapshot (group "ns/gw": clusters c0..c2 and listeners l0..l2, real
 * protobuf). The first byte picks the type. Checks: the status is one of
 * those documented (200, 304, 400, 500, 503); a 200 body is JSON that names
 * only resources of the group; never crashes, never leaks (ASan). */
#include "cx_buf.h"
#include "cx_json.h"
#include "xds_cache.h"
#include "xds_rest.h"
#include "xlate_snapshot.h"

#include "envoy/config/cluster/v3/cluster.pb-c.h"
#include "envoy/config/listener/v3/listener.pb-c.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct xds_cache *cache;

static struct xds_resource *cluster(const char *name)
{
    Envoy__Config__Cluster__V3__Cluster c = ENVOY__CONFIG__CLUSTER__V3__CLUSTER__INIT;
    c.name = (char *)name;
    size_t n = envoy__config__cluster__v3__cluster__get_packed_size(&c);
    uint8_t *b = malloc(n + 1);
    envoy__config__cluster__v3__cluster__pack(&c, b);
    return xlate_resource_new(XDS_CLUSTER, name, b, n);
}

static struct xds_resource *listener(const char *name)
{
    Envoy__Config__Listener__V3__Listener l = ENVOY__CONFIG__LISTENER__V3__LISTENER__INIT;
    l.name = (char *)name;
    size_t n = envoy__config__listener__v3__listener__get_packed_size(&l);
    uint8_t *b = malloc(n + 1);
    envoy__config__listener__v3__listener__pack(&l, b);
    return xlate_resource_new(XDS_LISTENER, name, b, n);
}

static void build(void)
{
    if (cache)
        return;
    struct xlate_snapshot *s = calloc(1, sizeof(*s));
    atomic_init(&s->refs, 1);
    s->groups = calloc(1, sizeof(*s->groups));
    s->ngroups = 1;
    struct xlate_group *g = &s->groups[0];
    g->name = strdup("ns/gw");
    for (int t = 0; t < XDS_TYPE_COUNT; t++)
        g->types[t].items = calloc(3, sizeof(struct xds_resource *));
    for (int i = 0; i < 3; i++) {
        char n[8];
        snprintf(n, sizeof(n), "c%d", i);
        g->types[XDS_CLUSTER].items[g->types[XDS_CLUSTER].n++] = cluster(n);
        snprintf(n, sizeof(n), "l%d", i);
        g->types[XDS_LISTENER].items[g->types[XDS_LISTENER].n++] = listener(n);
    }
    for (int t = 0; t < XDS_TYPE_COUNT; t++)
        if (xlate_resource_set_seal(&g->types[t]) != 0)
            abort();
    xlate_snapshot_seal(s);
    cache = xds_cache_new();
    xds_cache_set_snapshot(cache, s, NULL, NULL);
    xlate_snapshot_unref(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    build();
    if (size < 1)
        return 0;
    enum xds_type type = (enum xds_type)(data[0] % XDS_TYPE_COUNT);
    struct cx_buf out;
    cx_buf_init(&out, 0);
    int code = xds_rest_discovery(cache, "ns/gw", type, (const char *)data + 1, size - 1, &out);
    if (code != 200 && code != 304 && code != 400 && code != 500 && code != 503)
        abort();
    if (code == 200) {
        cJSON *doc = cx_json_parse(out.data, out.len);
        if (!doc)
            abort();
        const cJSON *res = cJSON_GetObjectItemCaseSensitive(doc, "resources");
        const cJSON *r;
        cJSON_ArrayForEach(r, res)
        {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(r, "name");
            if (name && cJSON_IsString(name) && name->valuestring[0] != 'c' &&
                name->valuestring[0] != 'l')
                abort();
        }
        cJSON_Delete(doc);
    }
    cx_buf_free(&out);
    return 0;
}
