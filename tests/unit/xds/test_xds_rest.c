/* REST-JSON xDS: the I/O-free core on a cache with a hand-built snapshot,
 * and the evhttp handler mounted on the admin server, asked over HTTP. */
#include "admin.h"
#include "cx_json.h"
#include "cxtest.h"
#include "xds_cache.h"
#include "xds_rest.h"
#include "xds_server.h"
#include "xdsb.h"
#include "xdsc.h"
#include "xlate_snapshot.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <stdio.h>
#include <string.h>

static struct xlate_snapshot *snap(void)
{
    struct xlate_snapshot *s = xdsc_snapshot_new();
    struct xdsb_route r = {.prefix = "/svc.A/", .cluster = "cA"};
    int port = 8080;
    if (xdsc_snapshot_add(s, "ns/gw", xdsb_api_listener("echo.test", "rc")) != 0 ||
        xdsc_snapshot_add(s, "ns/gw", xdsb_route_config("rc", "echo.test", &r, 1)) != 0 ||
        xdsc_snapshot_add(s, "ns/gw", xdsb_cluster("cA", 0, 1)) != 0 ||
        xdsc_snapshot_add(s, "ns/gw", xdsb_cluster("cB", 0, 1)) != 0 ||
        xdsc_snapshot_add(s, "ns/gw", xdsb_endpoints("cA", &port, 1)) != 0 ||
        xdsc_snapshot_add(s, "other", xdsb_cluster("cZ", 0, 1)) != 0 || xdsc_snapshot_seal(s) != 0)
        return NULL;
    return s;
}

static struct xds_cache *cache_with_snap(void)
{
    struct xds_cache *c = xds_cache_new();
    struct xlate_snapshot *s = snap();
    xds_cache_set_snapshot(c, s, NULL, NULL);
    xlate_snapshot_unref(s);
    return c;
}

static int ask(struct xds_cache *c, enum xds_type t, const char *body, struct cx_buf *out)
{
    cx_buf_reset(out);
    return xds_rest_discovery(c, "other", t, body, strlen(body), out);
}

static void test_clusters_all_and_named(void)
{
    struct xds_cache *c = cache_with_snap();
    struct cx_buf out;
    cx_buf_init(&out, 0);
    const char *req =
        "{\"node\":{\"id\":\"curl\",\"metadata\":{\"coxswain.dev/gateway\":\"ns/gw\"}}}";
    REQUIRE_INT_EQ(ask(c, XDS_CLUSTER, req, &out), 200);
    cJSON *j = cx_json_parse(out.data, out.len);
    REQUIRE(j != NULL);
    CHECK_STR_EQ(cx_json_str(j, "type_url"), XDS_TYPE_URL_CLUSTER);
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(j, "resources");
    REQUIRE_INT_EQ(cJSON_GetArraySize(res), 2);
    const cJSON *r0 = cJSON_GetArrayItem(res, 0);
    CHECK_STR_EQ(cx_json_str(r0, "@type"), XDS_TYPE_URL_CLUSTER);
    CHECK_STR_EQ(cx_json_str(r0, "name"), "cA");
    CHECK_STR_EQ(cx_json_str(r0, "type"), "EDS");
    const char *v = cx_json_str(j, "version_info");
    const struct xlate_group *g = xlate_snapshot_group(xds_cache_snapshot(c), "ns/gw");
    CHECK_STR_EQ(v, g->types[XDS_CLUSTER].version);
    cJSON_Delete(j);
    /* camelCase names and a name filter */
    REQUIRE_INT_EQ(ask(c, XDS_CLUSTER,
                       "{\"node\":{\"cluster\":\"ns/gw\"},\"resourceNames\":[\"cB\"],"
                       "\"typeUrl\":\"" XDS_TYPE_URL_CLUSTER "\"}",
                       &out),
                   200);
    j = cx_json_parse(out.data, out.len);
    REQUIRE(j != NULL);
    res = cJSON_GetObjectItemCaseSensitive(j, "resources");
    REQUIRE_INT_EQ(cJSON_GetArraySize(res), 1);
    CHECK_STR_EQ(cx_json_str(cJSON_GetArrayItem(res, 0), "name"), "cB");
    cJSON_Delete(j);
    /* no node: the default group */
    REQUIRE_INT_EQ(ask(c, XDS_CLUSTER, "{}", &out), 200);
    CHECK_STR_CONTAINS(out.data, "\"cZ\"");
    cx_buf_free(&out);
    xds_cache_free(c);
}

static void test_listener_json_shape(void)
{
    struct xds_cache *c = cache_with_snap();
    struct cx_buf out;
    cx_buf_init(&out, 0);
    REQUIRE_INT_EQ(ask(c, XDS_LISTENER, "{\"node\":{\"cluster\":\"ns/gw\"}}", &out), 200);
    /* the HCM inside the API listener is rendered through its Any too */
    CHECK_STR_CONTAINS(out.data, "\"route_config_name\":\"rc\"");
    CHECK_STR_CONTAINS(out.data, "envoy.extensions.filters.http.router.v3.Router");
    REQUIRE_INT_EQ(ask(c, XDS_ENDPOINT, "{\"node\":{\"cluster\":\"ns/gw\"}}", &out), 200);
    CHECK_STR_CONTAINS(out.data, "\"port_value\":8080");
    cx_buf_free(&out);
    xds_cache_free(c);
}

static void test_304_400_503(void)
{
    struct xds_cache *c = cache_with_snap();
    struct cx_buf out;
    cx_buf_init(&out, 0);
    const struct xlate_group *g = xlate_snapshot_group(xds_cache_snapshot(c), "ns/gw");
    char body[256];
    snprintf(body, sizeof(body), "{\"version_info\":\"%s\",\"node\":{\"cluster\":\"ns/gw\"}}",
             g->types[XDS_ROUTE].version);
    CHECK_INT_EQ(ask(c, XDS_ROUTE, body, &out), 304);
    CHECK_INT_EQ(out.len, 0);
    /* another group's version is not ours */
    snprintf(body, sizeof(body), "{\"version_info\":\"%s\"}", g->types[XDS_ROUTE].version);
    CHECK_INT_EQ(ask(c, XDS_ROUTE, body, &out), 200);
    CHECK_INT_EQ(ask(c, XDS_ROUTE, "not json", &out), 400);
    CHECK_INT_EQ(ask(c, XDS_ROUTE, "[1]", &out), 400);
    CHECK_INT_EQ(ask(c, XDS_ROUTE, "{\"resource_names\":\"rc\"}", &out), 400);
    CHECK_INT_EQ(ask(c, XDS_ROUTE, "{\"resource_names\":[1]}", &out), 400);
    CHECK_INT_EQ(ask(c, XDS_ROUTE, "{\"type_url\":\"" XDS_TYPE_URL_CLUSTER "\"}", &out), 400);
    CHECK_STR_CONTAINS(out.data, "type_url");
    cx_buf_free(&out);
    xds_cache_free(c);
    struct xds_cache *empty = xds_cache_new();
    cx_buf_init(&out, 0);
    CHECK_INT_EQ(ask(empty, XDS_ROUTE, "{}", &out), 503);
    cx_buf_free(&out);
    xds_cache_free(empty);
}

struct http_res {
    int done, code;
    char body[4096];
};

static void on_http(struct evhttp_request *req, void *arg)
{
    struct http_res *r = arg;
    r->done = 1;
    if (!req)
        return;
    r->code = evhttp_request_get_response_code(req);
    struct evbuffer *b = evhttp_request_get_input_buffer(req);
    size_t n = evbuffer_get_length(b);
    if (n >= sizeof(r->body))
        n = sizeof(r->body) - 1;
    evbuffer_remove(b, r->body, n);
    r->body[n] = '\0';
}

static int http_done(void *arg)
{
    return ((struct http_res *)arg)->done;
}

static void http(struct event_base *base, int port, enum evhttp_cmd_type cmd, const char *path,
                 const char *body, struct http_res *r)
{
    memset(r, 0, sizeof(*r));
    struct evhttp_connection *conn = evhttp_connection_base_new(base, NULL, "127.0.0.1", port);
    struct evhttp_request *req = evhttp_request_new(on_http, r);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Host", "127.0.0.1");
    if (body)
        evbuffer_add(evhttp_request_get_output_buffer(req), body, strlen(body));
    evhttp_make_request(conn, req, cmd, path);
    cxt_loop_until(base, http_done, r, 3000);
    evhttp_connection_free(conn);
}

static void test_http_mounted_on_admin(void)
{
    struct event_base *base = event_base_new();
    char err[256];
    struct admin_server *admin = admin_new(base, "127.0.0.1:0", err, sizeof(err));
    REQUIRE(admin != NULL);
    struct xds_server_config cfg = {
        .listen = "127.0.0.1:0", .default_group = "ns/gw", .auth = XDS_AUTH_NONE};
    struct xds_server *srv = xds_server_new(base, &cfg, err, sizeof(err));
    REQUIRE(srv != NULL);
    REQUIRE_INT_EQ(xds_rest_mount(admin, srv), 0);
    int port = admin_port(admin);
    struct http_res r;
    http(base, port, EVHTTP_REQ_POST, "/v3/discovery:clusters", "{}", &r);
    CHECK_INT_EQ(r.code, 503);
    struct xlate_snapshot *s = snap();
    xds_server_set_snapshot(srv, s);
    xlate_snapshot_unref(s);
    http(base, port, EVHTTP_REQ_POST, "/v3/discovery:clusters", "{}", &r);
    CHECK_INT_EQ(r.code, 200);
    CHECK_STR_CONTAINS(r.body, "\"name\":\"cB\"");
    http(base, port, EVHTTP_REQ_GET, "/v3/discovery:clusters", NULL, &r);
    CHECK_INT_EQ(r.code, 405);
    http(base, port, EVHTTP_REQ_POST, "/v3/discovery:routes", "{", &r);
    CHECK_INT_EQ(r.code, 400);
    xds_server_free(srv);
    admin_free(admin);
    event_base_free(base);
}

static const struct cxt_case cases[] = {
    CXT(test_clusters_all_and_named),
    CXT(test_listener_json_shape),
    CXT(test_304_400_503),
    CXT(test_http_mounted_on_admin),
};
CXT_MAIN(cases)
