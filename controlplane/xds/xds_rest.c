#include "xds_rest.h"

#include "admin.h"
#include "cx_json.h"
#include "xlate_pbjson.h"
#include "xds_ads.h"
#include "xds_cache.h"
#include "xds_server.h"
#include "xlate_snapshot.h"

#include <event2/buffer.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const rest_paths[XDS_TYPE_COUNT] = {
    "/v3/discovery:listeners", "/v3/discovery:routes",  "/v3/discovery:clusters",
    "/v3/discovery:endpoints", "/v3/discovery:secrets",
};

/* proto3 JSON parsers accept both the proto name and the JSON name. */
static const cJSON *field(const cJSON *obj, const char *proto, const char *json)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, proto);
    return v ? v : cJSON_GetObjectItemCaseSensitive(obj, json);
}

static const char *group_of(const cJSON *node, const char *dflt)
{
    const cJSON *md = node ? cJSON_GetObjectItemCaseSensitive(node, "metadata") : NULL;
    const cJSON *gw = md ? cJSON_GetObjectItemCaseSensitive(md, XDS_NODE_GATEWAY_KEY) : NULL;
    if (cJSON_IsString(gw) && gw->valuestring[0])
        return gw->valuestring;
    const cJSON *cl = node ? cJSON_GetObjectItemCaseSensitive(node, "cluster") : NULL;
    if (cJSON_IsString(cl) && cl->valuestring[0])
        return cl->valuestring;
    return dflt ? dflt : "";
}

/* Index of |name| in the sorted |set|, or set->n. */
static size_t set_find(const struct xds_resource_set *set, const char *name)
{
    size_t lo = 0, hi = set->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(set->items[mid]->name, name);
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return set->n;
}

static int fail(struct cx_buf *out, int code, const char *msg)
{
    if (cx_buf_puts(out, msg) != 0)
        cx_buf_reset(out); /* the status still says what went wrong */
    return code;
}

int xds_rest_discovery(const struct xds_cache *cache, const char *default_group, enum xds_type type,
                       const char *body, size_t len, struct cx_buf *out)
{
    int code = 200;
    cJSON *req = NULL;
    uint8_t *wanted = NULL; /* per resource of the set: asked for */
    if (len > XDS_REST_MAX_BODY)
        return fail(out, 400, "request body too large\n");
    req = cx_json_parse(body ? body : "", len);
    if (!req || !cJSON_IsObject(req)) {
        code = fail(out, 400, "body is not a JSON DiscoveryRequest\n");
        goto out;
    }
    const cJSON *turl = field(req, "type_url", "typeUrl");
    if (turl && (!cJSON_IsString(turl) ||
                 (turl->valuestring[0] && strcmp(turl->valuestring, xlate_type_url(type)) != 0))) {
        code = fail(out, 400, "type_url does not match the endpoint\n");
        goto out;
    }
    const cJSON *ver = field(req, "version_info", "versionInfo");
    if (ver && !cJSON_IsString(ver)) {
        code = fail(out, 400, "version_info must be a string\n");
        goto out;
    }
    const cJSON *names = field(req, "resource_names", "resourceNames");
    if (names && !cJSON_IsArray(names)) {
        code = fail(out, 400, "resource_names must be an array of strings\n");
        goto out;
    }
    const cJSON *it;
    int nnames = cJSON_GetArraySize(names);
    if (nnames > XDS_ADS_MAX_NAMES) {
        code = fail(out, 400, "too many resource_names\n");
        goto out;
    }
    cJSON_ArrayForEach(it, names)
    {
        if (!cJSON_IsString(it)) {
            code = fail(out, 400, "resource_names must be an array of strings\n");
            goto out;
        }
    }
    const cJSON *node = field(req, "node", "node");
    if (node && !cJSON_IsObject(node)) {
        code = fail(out, 400, "node must be an object\n");
        goto out;
    }
    struct xds_ads_sets tmp;
    const struct xds_ads_sets *sets =
        xds_cache_sets_for(cache, group_of(node, default_group), &tmp);
    if (!sets) {
        code = fail(out, 503, "no snapshot yet\n");
        goto out;
    }
    const struct xds_resource_set *set = sets->t[type];
    if (ver && strcmp(ver->valuestring, set->version) == 0) {
        code = 304;
        goto out;
    }
    /* The wanted resources, each name looked up in the sorted set: a
     * request costs its names times log(resources), never the product. */
    if (nnames > 0 && set->n > 0) {
        wanted = calloc(set->n, 1);
        if (!wanted) {
            code = fail(out, 500, "out of memory\n");
            goto out;
        }
        cJSON_ArrayForEach(it, names)
        {
            size_t i = set_find(set, it->valuestring);
            if (i < set->n)
                wanted[i] = 1;
        }
    }
    const char *url = xlate_type_url(type);
    int rc = cx_buf_puts(out, "{\"version_info\":");
    rc |= cx_json_escape(out, set->version);
    rc |= cx_buf_puts(out, ",\"resources\":[");
    int first = 1;
    for (size_t i = 0; i < set->n && rc == 0; i++) {
        const struct xds_resource *r = set->items[i];
        if (nnames > 0 && (!wanted || !wanted[i]))
            continue;
        if (!first)
            rc |= cx_buf_puts(out, ",");
        first = 0;
        if (rc == 0 &&
            xlate_pbjson_render_any(url, r->bytes, r->len, XLATE_PBJSON_PROTO_NAMES, out) != 0) {
            cx_buf_reset(out);
            code = fail(out, 500, "cannot render a resource as JSON\n");
            goto out;
        }
    }
    rc |= cx_buf_puts(out, "],\"type_url\":");
    rc |= cx_json_escape(out, url);
    rc |= cx_buf_puts(out, "}\n");
    if (rc != 0) {
        cx_buf_reset(out);
        code = fail(out, 500, "response too large\n");
    }
out:
    free(wanted);
    cJSON_Delete(req);
    return code;
}

void xds_rest_handle(struct evhttp_request *req, void *arg)
{
    struct xds_server *srv = arg;
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    int type = -1;
    for (int t = 0; t < XDS_TYPE_COUNT && path; t++)
        if (strcmp(path, rest_paths[t]) == 0)
            type = t;
    if (type < 0) {
        admin_reply(req, 404, "text/plain", "not found\n", 10);
        return;
    }
    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "POST");
        admin_reply(req, 405, "text/plain", "use POST\n", 9);
        return;
    }
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    if (len > XDS_REST_MAX_BODY) {
        admin_reply(req, 413, "text/plain", "request body too large\n", 23);
        return;
    }
    const char *body = (const char *)evbuffer_pullup(in, -1);
    struct cx_buf out;
    cx_buf_init(&out, 0);
    int code = xds_rest_discovery(xds_server_cache(srv), xds_server_default_group(srv),
                                  (enum xds_type)type, body, len, &out);
    if (code == 304) {
        evhttp_send_reply(req, 304, "Not Modified", NULL);
    } else {
        admin_reply(req, code, code == 200 ? "application/json" : "text/plain",
                    out.data ? out.data : "", out.len);
    }
    cx_buf_free(&out);
}

int xds_rest_mount(struct admin_server *admin, struct xds_server *srv)
{
    for (int t = 0; t < XDS_TYPE_COUNT; t++)
        if (admin_handle(admin, rest_paths[t], xds_rest_handle, srv) != 0)
            return -1;
    return 0;
}
