/*
 * Records (xlate_record_new): an object decoded once into the form the
 * translator reads, its JSON freed at once. The golden cases check that
 * records give the same bytes as the JSON (test_xlate_golden.c) and the
 * random walks that changes given as records do too (test_xlate_walk.c);
 * here: what a record says of itself, what is refused, that the translator keeps
 * its own references, and that a record carries the budget it was decoded
 * under.
 */
#include "cx_hash.h"
#include "cx_json.h"
#include "cx_yaml.h"
#include "cxtest.h"
#include "xlate.h"
#include "xlate_record.h"
#include "xlate_test.h"
#include "xlate_util.h"

#include <stdlib.h>
#include <string.h>

#define CASE "translator/regex_program_size/input.yaml"

/* The case's objects as records decoded under |lim|, the JSON freed. */
static size_t records(const struct xlate_limits *lim, struct xlate_object *out, size_t max)
{
    cJSON *docs = load_yaml(CASE);
    if (!docs)
        return 0;
    size_t n = 0, hint[XLATE_KIND_COUNT] = {0};
    const cJSON *d;
    cJSON_ArrayForEach(d, docs)
    {
        enum xlate_kind k = xlate_kind_of(d);
        struct xlate_record *r = xlate_record_new(k, d, 0, lim, k >= 0 ? &hint[k] : NULL);
        if (r && n < max)
            out[n++] = (struct xlate_object){.rec = r};
        else
            xlate_record_unref(r);
    }
    cJSON_Delete(docs);
    return n;
}

static void unref_all(struct xlate_object *in, size_t n)
{
    for (size_t i = 0; i < n; i++)
        xlate_record_unref(in[i].rec);
}

static const struct xlate_report *report_of(const struct xlate_snapshot *s, const char *kind,
                                            const char *name)
{
    for (size_t i = 0; s && i < s->nreports; i++)
        if (!strcmp(s->reports[i].kind, kind) && !strcmp(s->reports[i].name, name))
            return &s->reports[i];
    return NULL;
}

static void test_record_describes_itself(void)
{
    cJSON *o =
        cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":"
                    "\"s\",\"resourceVersion\":\"7\"},\"spec\":{\"ports\":[{\"port\":80}]}}");
    REQUIRE(o);
    struct xlate_record *r = xlate_record_new(XLATE_KIND_UNKNOWN, o, 0, NULL, NULL);
    REQUIRE(r);
    CHECK_INT_EQ(xlate_record_kind(r), XLATE_KIND_SERVICE);
    /* no namespace: "default", as the translator keys it */
    CHECK_STR_EQ(xlate_record_key(r), "default/s");
    /* the digest is computed during the decode, the filters' digest */
    CHECK(xlate_record_digest(r) == xlate_digest(o));
    CHECK(xlate_record_bytes(r) > 0);
    /* a digest given by the caller is kept as it is */
    struct xlate_record *r2 = xlate_record_new(XLATE_KIND_SERVICE, o, 42, NULL, NULL);
    REQUIRE(r2);
    CHECK(xlate_record_digest(r2) == 42);
    /* references: the last one frees (valgrind and ASan check that) */
    CHECK(xlate_record_ref(r) == r);
    xlate_record_unref(r);
    CHECK_INT_EQ(xlate_record_kind(r), XLATE_KIND_SERVICE);
    xlate_record_unref(r);
    xlate_record_unref(r2);
    xlate_record_unref(NULL);
    CHECK(xlate_record_ref(NULL) == NULL);
    cJSON_Delete(o);
}

static void test_record_refuses_what_is_not_an_object(void)
{
    cJSON *arr = cJSON_Parse("[1,2]");
    cJSON *other = cJSON_Parse("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
                               "\"metadata\":{\"name\":\"d\"}}");
    /* a name no Kubernetes object can have (253 characters at most) */
    char big[800];
    memset(big, 'a', 700);
    big[700] = '\0';
    cJSON *longname = cJSON_CreateObject();
    REQUIRE(arr && other && longname);
    cJSON_AddStringToObject(longname, "apiVersion", "v1");
    cJSON_AddStringToObject(longname, "kind", "Service");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(longname, "metadata"), "name", big);
    CHECK(xlate_record_new(XLATE_KIND_UNKNOWN, arr, 0, NULL, NULL) == NULL);
    CHECK(xlate_record_new(XLATE_KIND_SERVICE, arr, 0, NULL, NULL) == NULL);
    CHECK(xlate_record_new(XLATE_KIND_UNKNOWN, other, 0, NULL, NULL) == NULL);
    CHECK(xlate_record_new(XLATE_KIND_UNKNOWN, longname, 0, NULL, NULL) == NULL);
    CHECK(xlate_record_new(XLATE_KIND_UNKNOWN, NULL, 0, NULL, NULL) == NULL);
    cJSON_Delete(arr);
    cJSON_Delete(other);
    cJSON_Delete(longname);
}

/* The records are dropped by the caller right after each pass: the
 * translator's own references keep what it serves, across passes. */
static void test_translator_keeps_its_references(void)
{
    struct xlate_object in[8];
    size_t n = records(NULL, in, 8);
    REQUIRE_INT_EQ(n, 4);
    struct xlate_ctx *ctx = xlate_ctx_new();
    struct xlate_snapshot *s1 = NULL, *s2 = NULL, *s3 = NULL;
    struct xlate_stats st;
    REQUIRE_INT_EQ(xlate_run(ctx, &(struct xlate_input){in, n, 0}, &s1, &st), 0);
    CHECK_INT_EQ(st.parsed, 4);
    /* the very records again: nothing decoded, nothing rebuilt */
    REQUIRE_INT_EQ(xlate_run(ctx, &(struct xlate_input){in, n, 0}, &s2, &st), 0);
    CHECK_INT_EQ(st.parsed, 0);
    CHECK_INT_EQ(st.vhosts_built, 0);
    CHECK_STR_EQ(s1->version, s2->version);
    unref_all(in, n);
    /* the same objects decoded anew (other records, same digests): still
     * nothing rebuilt, and the old records' memory is gone (ASan) */
    size_t n2 = records(NULL, in, 8);
    REQUIRE_INT_EQ(n2, n);
    REQUIRE_INT_EQ(xlate_run(ctx, &(struct xlate_input){in, n2, 0}, &s3, &st), 0);
    CHECK_INT_EQ(st.vhosts_built, 0);
    CHECK_STR_EQ(s1->version, s3->version);
    unref_all(in, n2);
    /* deleting by name through a changes pass, after every caller
     * reference is gone */
    struct xlate_snapshot *s4 = NULL;
    struct xlate_change del = {
        .kind = XLATE_KIND_VIRTUAL_SERVICE, .namespace = "default", .name = "small"};
    REQUIRE_INT_EQ(xlate_run_changes(ctx, &del, 1, &s4, &st), 0);
    CHECK(report_of(s4, "VirtualService", "small") == NULL);
    CHECK(report_of(s4, "VirtualService", "big") != NULL);
    CHECK(strcmp(s4->version, s3->version) != 0);
    xlate_snapshot_unref(s1);
    xlate_snapshot_unref(s2);
    xlate_snapshot_unref(s3);
    xlate_snapshot_unref(s4);
    xlate_ctx_free(ctx);
}

/* The decode reads the regex budget: a record says which one it was
 * decoded under, and a context under another refuses it. */
static void test_record_carries_its_budget(void)
{
    struct xlate_limits dflt, wide;
    xlate_limits_default(&dflt);
    wide = dflt;
    wide.regex_program_size = 100000;
    struct xlate_object in[8];

    /* the defaults: "big"'s regex passes the program-size limit */
    size_t n = records(NULL, in, 8);
    REQUIRE_INT_EQ(n, 4);
    struct xlate_ctx *ctx = xlate_ctx_new();
    struct xlate_snapshot *s = NULL;
    REQUIRE_INT_EQ(xlate_run(ctx, &(struct xlate_input){in, n, 0}, &s, NULL), 0);
    const struct xlate_report *big = report_of(s, "VirtualService", "big");
    REQUIRE(big);
    CHECK_INT_EQ(big->state, XLATE_REJECTED);
    CHECK(strstr(big->message, "program size") != NULL);
    xlate_snapshot_unref(s);
    /* a context with a wider budget refuses records decoded under the
     * default one: translating them would apply the default */
    struct xlate_ctx *wctx = xlate_ctx_new_limits(&wide);
    REQUIRE(wctx);
    s = NULL;
    CHECK_INT_EQ(xlate_run(wctx, &(struct xlate_input){in, n, 0}, &s, NULL), -1);
    CHECK(s == NULL);
    xlate_ctx_free(wctx);
    unref_all(in, n);

    /* decoded under the wide budget, in a context with it: accepted */
    n = records(&wide, in, 8);
    REQUIRE_INT_EQ(n, 4);
    wctx = xlate_ctx_new_limits(&wide);
    REQUIRE(wctx);
    REQUIRE_INT_EQ(xlate_run(wctx, &(struct xlate_input){in, n, 0}, &s, NULL), 0);
    big = report_of(s, "VirtualService", "big");
    REQUIRE(big);
    CHECK_INT_EQ(big->state, XLATE_ACCEPTED);
    xlate_snapshot_unref(s);
    xlate_ctx_free(wctx);
    /* and the default context refuses those, through a changes pass too */
    struct xlate_change c = {.rec = in[1].rec};
    s = NULL;
    CHECK_INT_EQ(xlate_run_changes(ctx, &c, 1, &s, NULL), -1);
    CHECK(s == NULL);
    unref_all(in, n);
    xlate_ctx_free(ctx);
}

/* |json| decoded into a record, its JSON freed at once (as the daemon
 * does); NULL if it does not parse or decode. */
static struct xlate_record *decode(const char *json)
{
    cJSON *o = cJSON_Parse(json);
    struct xlate_record *r = o ? xlate_record_new(XLATE_KIND_UNKNOWN, o, 0, NULL, NULL) : NULL;
    cJSON_Delete(o);
    return r;
}

/* What the decode works out once for the translator: routes naming the
 * Upstream the route before them names share its strings (the resolution
 * compares pointers), a VirtualService's claim order and claim hash, and
 * the "namespace/service" keys of Upstreams and EndpointSlices. */
static void test_record_prepares_refs_and_claims(void)
{
    struct xlate_record *r;
    r = decode(
        "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"VirtualService\",\"metadata\":"
        "{\"name\":\"v\",\"namespace\":\"team\",\"creationTimestamp\":"
        "\"2024-01-02T03:04:05Z\"},\"spec\":{\"domains\":[\"a.example.com\",\"b.example.com\"],"
        "\"routes\":[{\"match\":{\"prefix\":\"/a\"},\"upstream\":{\"name\":\"up\"}},"
        "{\"match\":{\"prefix\":\"/b\"},\"upstream\":{\"name\":\"up\",\"namespace\":"
        "\"team\"}},{\"match\":{\"prefix\":\"/c\"},\"upstream\":{\"name\":\"other\"}},"
        "{\"match\":{\"prefix\":\"/d\"},\"upstream\":{\"name\":\"up\",\"namespace\":"
        "\"elsewhere\"}}]}}");
    REQUIRE(r);
    const struct xl_virtual_service *vs = &r->obj.u.vs;
    REQUIRE_INT_EQ(vs->nroutes, 4);
    const struct xl_ref *u0 = &vs->routes[0].upstream, *u1 = &vs->routes[1].upstream,
                        *u2 = &vs->routes[2].upstream, *u3 = &vs->routes[3].upstream;
    /* the same Upstream (a namespace left out is the object's): shared */
    CHECK(u1->name == u0->name);
    CHECK(u1->ns == u0->ns);
    CHECK_STR_EQ(u1->ns, "team");
    /* another one: its own strings, the namespace still shared */
    CHECK(u2->name != u0->name);
    CHECK_STR_EQ(u2->name, "other");
    CHECK(u2->ns == u0->ns);
    /* same name, another namespace: nothing of the namespace shared */
    CHECK_STR_EQ(u3->name, "up");
    CHECK_STR_EQ(u3->ns, "elsewhere");
    CHECK(strcmp(u3->ns, u2->ns) != 0);
    /* the claim order: the creation time in Unix seconds */
    CHECK_INT_EQ(vs->has_created, 1);
    CHECK(vs->created == 1704164645);
    uint64_t h = xlate_fnv_str(
        xlate_fnv_str(xlate_fnv_str(CX_FNV64_INIT, "2024-01-02T03:04:05Z"), "a.example.com"),
        "b.example.com");
    CHECK(vs->claim_hash == h);
    xlate_record_unref(r);

    /* no creation time (a manifest not yet applied): no claim order */
    r = decode("{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"VirtualService\","
               "\"metadata\":{\"name\":\"w\"},\"spec\":{\"domains\":[\"a.example.com\"],"
               "\"routes\":[{\"match\":{\"prefix\":\"/\"},\"upstream\":{\"name\":\"up\"}}]}}");
    REQUIRE(r);
    CHECK_INT_EQ(r->obj.u.vs.has_created, 0);
    CHECK(r->obj.u.vs.created == 0);
    CHECK(r->obj.u.vs.claim_hash ==
          xlate_fnv_str(xlate_fnv_str(CX_FNV64_INIT, NULL), "a.example.com"));
    xlate_record_unref(r);

    /* the key an Upstream looks its Service up by, and the one a slice is
     * indexed under: "namespace/service" */
    r = decode("{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Upstream\",\"metadata\":"
               "{\"name\":\"u\",\"namespace\":\"team\"},\"spec\":{\"kube\":{\"service\":"
               "\"web\",\"port\":80}}}");
    REQUIRE(r);
    CHECK_STR_EQ(r->obj.u.up.kube_key, "team/web");
    xlate_record_unref(r);
    r = decode("{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Upstream\",\"metadata\":"
               "{\"name\":\"u\",\"namespace\":\"team\"},\"spec\":{\"kube\":{\"service\":"
               "\"web\",\"namespace\":\"shared\",\"port\":80}}}");
    REQUIRE(r);
    CHECK_STR_EQ(r->obj.u.up.kube_key, "shared/web");
    xlate_record_unref(r);
    r = decode("{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\","
               "\"metadata\":{\"name\":\"web-x\",\"namespace\":\"team\",\"labels\":{"
               "\"kubernetes.io/service-name\":\"web\"}},\"addressType\":\"IPv4\"}");
    REQUIRE(r);
    CHECK_STR_EQ(r->obj.u.eps.svc_key, "team/web");
    xlate_record_unref(r);
    /* a slice of no Service is indexed under nothing */
    r = decode("{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\","
               "\"metadata\":{\"name\":\"lone\",\"namespace\":\"team\"},"
               "\"addressType\":\"IPv4\"}");
    REQUIRE(r);
    CHECK(r->obj.u.eps.svc_key == NULL);
    xlate_record_unref(r);
}

static const struct cxt_case cases[] = {
    CXT(test_record_describes_itself),         CXT(test_record_refuses_what_is_not_an_object),
    CXT(test_translator_keeps_its_references), CXT(test_record_carries_its_budget),
    CXT(test_record_prepares_refs_and_claims),
};
CXT_MAIN(cases)
