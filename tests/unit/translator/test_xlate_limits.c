/*
 * The translator's budgets (struct xlate_limits, xlate_limits.c and where
 * each is counted: resolution, Gateway acceptance, regexes): an object
 * that would pass one is Rejected with the limit and the numbers, its
 * expansion stops, and every other object on the same Gateway is served
 * as if it were absent; the incremental path counts them as a full view.
 */
#include "cx_buf.h"
#include "cxtest.h"
#include "xlate.h"
#include "xlate_render.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- objects ------------------------------------------------------------- */

#define MAX_OBJS 64

struct world {
    cJSON *objs[MAX_OBJS];
    size_t n;
};

__attribute__((format(printf, 2, 3))) static cJSON *add(struct world *w, const char *fmt, ...)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    va_list ap;
    va_start(ap, fmt);
    int rc = cx_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    cJSON *o = rc == 0 ? cJSON_Parse(b.data) : NULL;
    cx_buf_free(&b);
    if (o && w->n < MAX_OBJS)
        w->objs[w->n++] = o;
    return o;
}

static void world_free(struct world *w)
{
    for (size_t i = 0; i < w->n; i++)
        cJSON_Delete(w->objs[i]);
    w->n = 0;
}

static void gateway(struct world *w, const char *mode)
{
    add(w,
        "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Gateway\",\"metadata\":{\"name\":\"gw\","
        "\"namespace\":\"default\"},\"spec\":{\"mode\":\"%s\"}}",
        mode);
}

static void upstream(struct world *w, const char *name)
{
    add(w,
        "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Upstream\",\"metadata\":{\"name\":\"%s\","
        "\"namespace\":\"default\"},\"spec\":{\"static\":{\"hosts\":[{\"address\":\"10.0.0.1\","
        "\"port\":80}]}}}",
        name);
}

/* |nroutes| routes "/<name>/<i>" to |up|, or |nroutes| delegating routes
 * on "/" to RouteTable |table|. */
static void routes_json(struct cx_buf *b, size_t nroutes, const char *up, const char *table,
                        size_t pathlen)
{
    char *pad = calloc(1, pathlen + 1);
    int brc = 0;
    memset(pad, 'p', pathlen);
    for (size_t i = 0; i < nroutes; i++) {
        if (i)
            brc |= cx_buf_puts(b, ",");
        if (table)
            brc |= cx_buf_printf(b, "{\"match\":{\"prefix\":\"/\"},\"delegate\":{\"name\":\"%s\"}}",
                                 table);
        else
            brc |= cx_buf_printf(
                b, "{\"match\":{\"prefix\":\"/%s%zu\"},\"upstream\":{\"name\":\"%s\"}}", pad, i,
                up);
    }
    free(pad);
    if (brc)
        abort();
}

static void vs(struct world *w, const char *name, const char *created, size_t nroutes,
               const char *up, const char *table, size_t pathlen)
{
    struct cx_buf r;
    cx_buf_init(&r, 0);
    routes_json(&r, nroutes, up, table, pathlen);
    add(w,
        "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"VirtualService\",\"metadata\":{\"name\":"
        "\"%s\",\"namespace\":\"default\",\"creationTimestamp\":\"%s\"},\"spec\":{\"domains\":"
        "[\"%s.example.com\"],\"routes\":[%s]}}",
        name, created, name, r.data ? r.data : "");
    cx_buf_free(&r);
}

static void route_table(struct world *w, const char *name, size_t nroutes, const char *up,
                        const char *table)
{
    struct cx_buf r;
    cx_buf_init(&r, 0);
    routes_json(&r, nroutes, up, table, 0);
    add(w,
        "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"RouteTable\",\"metadata\":{\"name\":"
        "\"%s\",\"namespace\":\"default\"},\"spec\":{\"routes\":[%s]}}",
        name, r.data ? r.data : "");
    cx_buf_free(&r);
}

/* ---- translation --------------------------------------------------------- */

static struct xlate_snapshot *run(struct xlate_ctx *ctx, struct world *w)
{
    struct xlate_object in[MAX_OBJS];
    for (size_t i = 0; i < w->n; i++)
        in[i] = (struct xlate_object){.kind = XLATE_KIND_UNKNOWN, .obj = w->objs[i]};
    struct xlate_snapshot *s = NULL;
    if (xlate_run(ctx, &(struct xlate_input){in, w->n, 0}, &s, NULL) != 0)
        return NULL;
    return s;
}

static struct xlate_snapshot *translate(const struct xlate_limits *lim, struct world *w)
{
    struct xlate_ctx *ctx = xlate_ctx_new_limits(lim);
    struct xlate_snapshot *s = ctx ? run(ctx, w) : NULL;
    xlate_ctx_free(ctx);
    return s;
}

static const struct xlate_report *report(const struct xlate_snapshot *s, const char *kind,
                                         const char *name)
{
    for (size_t i = 0; s && i < s->nreports; i++)
        if (strcmp(s->reports[i].kind, kind) == 0 && strcmp(s->reports[i].name, name) == 0)
            return &s->reports[i];
    return NULL;
}

/* "Rejected" with |reason| and every needle in the message. */
static int rejected(const struct xlate_snapshot *s, const char *name, const char *reason,
                    const char *const *needles)
{
    const struct xlate_report *r = report(s, "VirtualService", name);
    if (!r || r->state != XLATE_REJECTED || strcmp(r->reason, reason) != 0) {
        fprintf(stderr, "# %s: %s %s: %s\n", name, r ? xlate_state_name(r->state) : "no report",
                r ? r->reason : "", r ? r->message : "");
        return 0;
    }
    for (const char *const *n = needles; n && *n; n++)
        if (!strstr(r->message, *n)) {
            fprintf(stderr, "# %s: \"%s\" not in: %s\n", name, *n, r->message);
            return 0;
        }
    return 1;
}

static int accepted(const struct xlate_snapshot *s, const char *name)
{
    const struct xlate_report *r = report(s, "VirtualService", name);
    if (!r || r->state != XLATE_ACCEPTED)
        fprintf(stderr, "# %s: %s\n", name, r ? r->message : "no report");
    return r && r->state == XLATE_ACCEPTED;
}

/* The Gateway's RouteConfiguration holds VirtualHost "default/<name>". */
static int served(const struct xlate_snapshot *s, const char *name)
{
    const struct xlate_group *g = s ? xlate_snapshot_group(s, "default/gw") : NULL;
    const struct xds_resource *rc =
        g ? xlate_resource_set_find(&g->types[XDS_ROUTE], "default/gw") : NULL;
    char key[128];
    snprintf(key, sizeof(key), "default/%s", name);
    return rc && memmem(rc->bytes, rc->len, key, strlen(key)) != NULL;
}

static size_t nres(const struct xlate_snapshot *s, enum xds_type t)
{
    const struct xlate_group *g = xlate_snapshot_group(s, "default/gw");
    return g ? g->types[t].n : 0;
}

/* ---- cases --------------------------------------------------------------- */

/* The four objects: 64 routes into rt0, rt0 -> rt1 -> rt2 with 64
 * routes each, rt2's to an Upstream: 64^4 = 16.7 million routes. */
static void test_delegation_bomb(void)
{
    struct world w = {0};
    gateway(&w, "envoy");
    upstream(&w, "up");
    vs(&w, "bomb", "2024-01-02T00:00:00Z", 64, NULL, "rt0", 0);
    route_table(&w, "rt0", 64, NULL, "rt1");
    route_table(&w, "rt1", 64, NULL, "rt2");
    route_table(&w, "rt2", 64, "up", NULL);
    vs(&w, "fine", "2024-01-03T00:00:00Z", 3, "up", NULL, 0);
    struct xlate_snapshot *s = translate(NULL, &w);
    REQUIRE(s != NULL);
    /* the numbers say the expansion stopped at the budget: 68 tables
     * expanded, not 266,305 */
    const char *want[] = {"more than 4096 routes after delegation",
                          "--max-routes-per-virtual-service 4096",
                          "4096 routes made through 68 RouteTable expansions",
                          "RouteTable default/rt2 spec.routes[0] added one more",
                          "nothing of this VirtualService is served",
                          NULL};
    CHECK(rejected(s, "bomb", "BudgetExceeded", want));
    CHECK(!served(s, "bomb"));
    CHECK(accepted(s, "fine"));
    CHECK(served(s, "fine"));
    /* the RouteTables themselves are fine */
    const struct xlate_report *rt = report(s, "RouteTable", "rt2");
    CHECK(rt && rt->state != XLATE_REJECTED);
    xlate_snapshot_unref(s);

    /* a raised budget lets a smaller bomb through in full: 8^3 * 8 */
    world_free(&w);
    gateway(&w, "envoy");
    upstream(&w, "up");
    vs(&w, "bomb", "2024-01-02T00:00:00Z", 8, NULL, "rt0", 0);
    route_table(&w, "rt0", 8, NULL, "rt1");
    route_table(&w, "rt1", 8, NULL, "rt2");
    route_table(&w, "rt2", 8, "up", NULL);
    struct xlate_limits lim;
    xlate_limits_default(&lim);
    s = translate(&lim, &w);
    CHECK(accepted(s, "bomb"));
    xlate_snapshot_unref(s);
    lim.routes_per_vs = 4095;
    s = translate(&lim, &w);
    const char *want2[] = {"more than 4095 routes", NULL};
    CHECK(rejected(s, "bomb", "BudgetExceeded", want2));
    xlate_snapshot_unref(s);
    world_free(&w);
}

/* Expansions that add no route (the leaves send to a missing Upstream)
 * are counted all the same. */
static void test_delegation_fanout(void)
{
    struct world w = {0};
    gateway(&w, "envoy");
    upstream(&w, "up");
    vs(&w, "fan", "2024-01-02T00:00:00Z", 64, NULL, "rt0", 0);
    route_table(&w, "rt0", 64, NULL, "rt1");
    route_table(&w, "rt1", 64, "missing", NULL);
    vs(&w, "fine", "2024-01-03T00:00:00Z", 1, "up", NULL, 0);
    struct xlate_snapshot *s = translate(NULL, &w);
    const char *want[] = {"more than 1024 RouteTable expansions",
                          "--max-delegations-per-virtual-service 1024",
                          "0 routes made through 1024 RouteTable expansions",
                          "delegated to RouteTable default/rt1 once more", NULL};
    CHECK(rejected(s, "fan", "BudgetExceeded", want));
    CHECK(accepted(s, "fine"));
    xlate_snapshot_unref(s);
    /* 1 + 64 expansions fit a budget of 65, with the usual warnings */
    struct xlate_limits lim;
    xlate_limits_default(&lim);
    lim.delegations_per_vs = 65;
    world_free(&w);
    gateway(&w, "envoy");
    upstream(&w, "up");
    vs(&w, "fan", "2024-01-02T00:00:00Z", 1, NULL, "rt0", 0);
    route_table(&w, "rt0", 64, NULL, "rt1");
    route_table(&w, "rt1", 2, "up", NULL);
    s = translate(&lim, &w);
    CHECK(accepted(s, "fan"));
    xlate_snapshot_unref(s);
    lim.delegations_per_vs = 64;
    s = translate(&lim, &w);
    const char *want2[] = {"more than 64 RouteTable expansions", "126 routes made", NULL};
    CHECK(rejected(s, "fan", "BudgetExceeded", want2));
    xlate_snapshot_unref(s);
    world_free(&w);
}

/* The Gateway's routes, oldest VirtualService first, full and
 * incremental. */
static void test_gateway_routes(void)
{
    struct xlate_limits lim;
    xlate_limits_default(&lim);
    lim.routes_per_gateway = 5;
    struct world w = {0};
    gateway(&w, "envoy");
    upstream(&w, "up");
    vs(&w, "a", "2024-01-01T00:00:00Z", 3, "up", NULL, 0);
    vs(&w, "b", "2024-01-02T00:00:00Z", 3, "up", NULL, 0);
    vs(&w, "c", "2024-01-03T00:00:00Z", 2, "up", NULL, 0);
    struct xlate_ctx *ctx = xlate_ctx_new_limits(&lim);
    struct xlate_snapshot *s = run(ctx, &w);
    REQUIRE(s != NULL);
    const char *want[] = {"Gateway default/gw serves 3 routes of older VirtualServices",
                          "this one's 3 more would pass the limit of 5 (--max-routes-per-gateway)",
                          NULL};
    CHECK(accepted(s, "a") && served(s, "a"));
    CHECK(rejected(s, "b", "BudgetExceeded", want));
    CHECK(!served(s, "b"));
    CHECK(accepted(s, "c") && served(s, "c"));
    const struct xlate_report *g = report(s, "Gateway", "gw");
    CHECK(g && strstr(g->message, "(0 lost a domain conflict, 1 over a budget)"));
    xlate_snapshot_unref(s);

    /* a grows to 4 routes (the patch path): now only a fits, oldest first */
    cJSON *a4 = NULL;
    {
        struct world t = {0};
        vs(&t, "a", "2024-01-01T00:00:00Z", 4, "up", NULL, 0);
        a4 = t.objs[0];
    }
    struct xlate_change ch = {.kind = XLATE_KIND_VIRTUAL_SERVICE, .obj = a4};
    REQUIRE_INT_EQ(xlate_run_changes(ctx, &ch, 1, &s, NULL), 0);
    CHECK(accepted(s, "a") && served(s, "a"));
    const char *want_b[] = {"serves 4 routes", "3 more", NULL};
    const char *want_c[] = {"serves 4 routes", "2 more", NULL};
    CHECK(rejected(s, "b", "BudgetExceeded", want_b));
    CHECK(rejected(s, "c", "BudgetExceeded", want_c));
    xlate_snapshot_unref(s);

    /* a goes: b and c fit again */
    struct xlate_change del = {
        .kind = XLATE_KIND_VIRTUAL_SERVICE, .namespace = "default", .name = "a"};
    REQUIRE_INT_EQ(xlate_run_changes(ctx, &del, 1, &s, NULL), 0);
    CHECK(accepted(s, "b") && served(s, "b"));
    CHECK(accepted(s, "c") && served(s, "c"));
    /* the same world in a fresh context gives the same snapshot */
    for (size_t i = 0; i < w.n; i++)
        if (strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(w.objs[i], "metadata"), "name")
                       ->valuestring,
                   "a") == 0) {
            cJSON_Delete(w.objs[i]);
            w.objs[i] = w.objs[--w.n];
            break;
        }
    struct xlate_snapshot *f = translate(&lim, &w);
    CHECK(f && strcmp(f->version, s->version) == 0);
    xlate_snapshot_unref(f);
    xlate_snapshot_unref(s);
    xlate_ctx_free(ctx);
    cJSON_Delete(a4);
    world_free(&w);
}

/* Resources: a listener and the route configuration, then a cluster and
 * endpoints per Upstream first used. */
static void test_gateway_resources(void)
{
    struct xlate_limits lim;
    xlate_limits_default(&lim);
    lim.resources_per_gateway = 4;
    struct world w = {0};
    gateway(&w, "envoy");
    upstream(&w, "u1");
    upstream(&w, "u2");
    vs(&w, "a", "2024-01-01T00:00:00Z", 1, "u1", NULL, 0);
    vs(&w, "b", "2024-01-02T00:00:00Z", 1, "u2", NULL, 0);
    vs(&w, "c", "2024-01-03T00:00:00Z", 1, "u1", NULL, 0);
    struct xlate_snapshot *s = translate(&lim, &w);
    REQUIRE(s != NULL);
    const char *want[] = {"holds 4 xDS resources", "this one's 2 more",
                          "the limit of 4 (--max-resources-per-gateway)", NULL};
    CHECK(accepted(s, "a"));
    CHECK(rejected(s, "b", "BudgetExceeded", want));
    CHECK(accepted(s, "c")); /* its Upstream is counted already */
    CHECK_INT_EQ(nres(s, XDS_CLUSTER), 1);
    CHECK_INT_EQ(nres(s, XDS_LISTENER) + nres(s, XDS_ROUTE) + nres(s, XDS_CLUSTER) +
                     nres(s, XDS_ENDPOINT),
                 4);
    xlate_snapshot_unref(s);
    world_free(&w);
}

/* Bytes: a VirtualHost over the limit, and a RouteConfiguration that two
 * would pass. */
static void test_resource_bytes(void)
{
    struct xlate_limits lim;
    xlate_limits_default(&lim);
    lim.resource_bytes = 2048;
    struct world w = {0};
    gateway(&w, "envoy");
    upstream(&w, "up");
    vs(&w, "fat", "2024-01-01T00:00:00Z", 10, "up", NULL, 300);
    vs(&w, "a", "2024-01-02T00:00:00Z", 5, "up", NULL, 200);
    vs(&w, "b", "2024-01-03T00:00:00Z", 5, "up", NULL, 200);
    struct xlate_snapshot *s = translate(&lim, &w);
    REQUIRE(s != NULL);
    const char *want_fat[] = {"its VirtualHost encodes to more than 2048 bytes",
                              "(--max-resource-bytes 2048) with 10 routes", NULL};
    const char *want_b[] = {"Gateway default/gw's RouteConfiguration holds",
                            "would pass the limit of 2048 (--max-resource-bytes)", NULL};
    CHECK(rejected(s, "fat", "BudgetExceeded", want_fat));
    CHECK(accepted(s, "a") && served(s, "a"));
    CHECK(rejected(s, "b", "BudgetExceeded", want_b));
    const struct xlate_group *g = xlate_snapshot_group(s, "default/gw");
    REQUIRE(g && g->types[XDS_ROUTE].n == 1);
    CHECK(g->types[XDS_ROUTE].items[0]->len <= 2048);
    xlate_snapshot_unref(s);
    world_free(&w);
}

static void regex_vs(struct world *w, const char *name, const char *regex, size_t n, size_t headers)
{
    struct cx_buf r;
    int brc = 0;
    cx_buf_init(&r, 0);
    for (size_t i = 0; i < n; i++) {
        brc |= cx_buf_printf(&r, "%s{\"match\":{\"regex\":\"%s%zu\"", i ? "," : "", regex, i);
        if (headers) {
            brc |= cx_buf_puts(&r, ",\"headers\":[");
            for (size_t k = 0; k < headers; k++)
                brc |= cx_buf_printf(&r, "%s{\"name\":\"x-%zu\",\"regex\":\"%s%zu\"}", k ? "," : "",
                                     k, regex, i);
            brc |= cx_buf_puts(&r, "]");
        }
        brc |= cx_buf_puts(&r, "},\"upstream\":{\"name\":\"up\"}}");
    }
    if (brc)
        abort();
    add(w,
        "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"VirtualService\",\"metadata\":{\"name\":"
        "\"%s\",\"namespace\":\"default\",\"creationTimestamp\":\"2024-01-01T00:00:00Z\"},"
        "\"spec\":{\"domains\":[\"%s.example.com\"],\"routes\":[%s]}}",
        name, name, r.data);
    cx_buf_free(&r);
}

static void test_regex_budgets(void)
{
    struct world w = {0};
    gateway(&w, "envoy");
    upstream(&w, "up");
    regex_vs(&w, "over", "/[a-z]{60}/[0-9]{60}", 1, 0);
    regex_vs(&w, "huge", "(\\\\pL|\\\\pN){1000}", 1, 0);
    /* 1000 routes x 3 regexes of ~45 instructions each: past 100000 in all */
    regex_vs(&w, "many", "/[a-z]{40}", 1000, 2);
    regex_vs(&w, "fine", "/api/[0-9]+/", 3, 0);
    struct xlate_snapshot *s = translate(NULL, &w);
    REQUIRE(s != NULL);
    const char *want_over[] = {"program size of 127, over the limit of 100",
                               "--max-regex-program-size", NULL};
    const char *want_huge[] = {"does not fit in 1024 KiB", "far over the program-size limit of 100",
                               NULL};
    const char *want_many[] = {"the regexes of this object add up to an RE2 program size over "
                               "100000; the rest are not checked",
                               NULL};
    CHECK(rejected(s, "over", "RegexProgramSize", want_over));
    CHECK(rejected(s, "huge", "RegexProgramSize", want_huge));
    CHECK(rejected(s, "many", "RegexProgramSize", want_many));
    CHECK(accepted(s, "fine") && served(s, "fine"));
    xlate_snapshot_unref(s);
    /* the flag raises the limit (for operators who raise Envoy's) */
    struct xlate_limits lim;
    xlate_limits_default(&lim);
    lim.regex_program_size = 200;
    s = translate(&lim, &w);
    CHECK(accepted(s, "over"));
    xlate_snapshot_unref(s);
    world_free(&w);
}

static void test_flags(void)
{
    struct xlate_limits lim;
    memset(&lim, 0, sizeof(lim));
    struct cx_flag flags[XLATE_LIMITS_FLAGS];
    CHECK_INT_EQ(xlate_limits_flags(&lim, flags, XLATE_LIMITS_FLAGS - 1), 0);
    REQUIRE_INT_EQ(xlate_limits_flags(&lim, flags, XLATE_LIMITS_FLAGS), XLATE_LIMITS_FLAGS);
    char err[200];
    char *argv[] = {"translate", "--max-routes-per-gateway=7", "--max-regex-program-size", "250"};
    REQUIRE_INT_EQ(cx_flags_parse(flags, XLATE_LIMITS_FLAGS, 4, argv, err, sizeof(err)), 0);
    CHECK_INT_EQ(lim.routes_per_gateway, 7);
    CHECK_INT_EQ(lim.regex_program_size, 250);
    /* the others are their defaults */
    struct xlate_limits d;
    xlate_limits_default(&d);
    CHECK_INT_EQ(lim.routes_per_vs, d.routes_per_vs);
    CHECK_INT_EQ(lim.delegations_per_vs, d.delegations_per_vs);
    CHECK_INT_EQ(lim.resources_per_gateway, d.resources_per_gateway);
    CHECK_INT_EQ(lim.resource_bytes, d.resource_bytes);
    /* out of range: refused, naming the flag */
    char *bad[] = {"translate", "--max-regex-program-size=100000"};
    CHECK_INT_EQ(cx_flags_parse(flags, XLATE_LIMITS_FLAGS, 2, bad, err, sizeof(err)), -1);
    CHECK_STR_CONTAINS(err, "max-regex-program-size");
}

static const struct cxt_case cases[] = {
    CXT(test_delegation_bomb), CXT(test_delegation_fanout),
    CXT(test_gateway_routes),  CXT(test_gateway_resources),
    CXT(test_resource_bytes),  CXT(test_regex_budgets),
    CXT(test_flags),
};
CXT_MAIN(cases)
