#include "cxtest.h"
#include "filter_selector.h"
#include "xlate_api.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct parsed {
    struct xl_arena a;
    struct xl_object o;
    cJSON *json;
};

static void parse(struct parsed *p, enum xlate_kind kind, const char *json)
{
    memset(p, 0, sizeof(*p));
    p->json = cJSON_Parse(json);
    if (!p->json)
        cxt_fail(__FILE__, __LINE__, 1, "bad test JSON: %s", json);
    if (xlate_api_parse(kind, p->json, NULL, &p->a, &p->o) != 0)
        cxt_fail(__FILE__, __LINE__, 1, "parse ran out of memory");
}

static void done(struct parsed *p)
{
    xlate_object_release(&p->o);
    xlate_arena_free(&p->a);
    cJSON_Delete(p->json);
}

/* 1 if some error of |p| has exactly |msg| (and |reason|). */
static int has(const struct parsed *p, enum xl_reason reason, const char *msg)
{
    for (size_t i = 0; i < p->o.errors.n; i++)
        if (p->o.errors.items[i].reason == reason && strcmp(p->o.errors.items[i].msg, msg) == 0)
            return 1;
    fprintf(stderr, "# want [%s] %s; have:\n", xlate_reason_name(reason), msg);
    for (size_t i = 0; i < p->o.errors.n; i++)
        fprintf(stderr, "#   [%s] %s\n", xlate_reason_name(p->o.errors.items[i].reason),
                p->o.errors.items[i].msg);
    return 0;
}

#define VS(spec)                                                                              \
    "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"VirtualService\",\"metadata\":{\"name\":" \
    "\"v\",\"namespace\":\"ns\"},\"spec\":" spec "}"

static void test_kind_of(void)
{
    cJSON *a = cJSON_Parse("{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Upstream\"}");
    cJSON *b = cJSON_Parse("{\"apiVersion\":\"coxswain.dev/v2\",\"kind\":\"Upstream\"}");
    cJSON *c = cJSON_Parse("{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\"}");
    cJSON *d = cJSON_Parse("{\"apiVersion\":\"apps/v1\",\"kind\":\"Service\"}");
    cJSON *e = cJSON_Parse("{\"kind\":\"Gateway\"}");
    CHECK_INT_EQ(xlate_kind_of(a), XLATE_KIND_UPSTREAM);
    CHECK_INT_EQ(xlate_kind_of(b), XLATE_KIND_UPSTREAM); /* ours, reported as unsupported */
    CHECK_INT_EQ(xlate_kind_of(c), XLATE_KIND_ENDPOINT_SLICE);
    CHECK_INT_EQ(xlate_kind_of(d), XLATE_KIND_UNKNOWN);
    CHECK_INT_EQ(xlate_kind_of(e), XLATE_KIND_UNKNOWN);
    CHECK_STR_EQ(xlate_kind_name(XLATE_KIND_ROUTE_TABLE), "RouteTable");
    cJSON_Delete(a);
    cJSON_Delete(b);
    cJSON_Delete(c);
    cJSON_Delete(d);
    cJSON_Delete(e);
}

static void test_gateway_defaults_and_errors(void)
{
    struct parsed p;
    parse(&p, XLATE_KIND_GATEWAY,
          "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Gateway\",\"metadata\":{\"name\":\"g\","
          "\"labels\":{\"z\":\"1\",\"a\":\"2\"},\"generation\":3,\"uid\":\"u1\"},\"spec\":{}}");
    CHECK_INT_EQ(p.o.errors.n, 0);
    CHECK_STR_EQ(p.o.meta.ns, "default"); /* no namespace in the manifest */
    CHECK_INT_EQ(p.o.meta.generation, 3);
    CHECK_STR_EQ(p.o.meta.uid, "u1");
    CHECK(p.o.meta.creation == NULL);          /* read for VirtualServices' claims only */
    CHECK_STR_EQ(p.o.meta.labels[0].key, "a"); /* sorted */
    CHECK_STR_EQ(xlate_meta_label(&p.o.meta, "z"), "1");
    CHECK(xlate_meta_label(&p.o.meta, "q") == NULL);
    CHECK_INT_EQ(p.o.u.gw.mode, XLATE_MODE_ENVOY);
    CHECK_STR_EQ(p.o.u.gw.bind_address, "0.0.0.0");
    CHECK_INT_EQ(p.o.u.gw.bind_port, 8080);
    CHECK(p.o.u.gw.vs_selector == NULL);
    CHECK_INT_EQ(p.o.u.gw.n_vs_namespaces, 1);
    CHECK_STR_EQ(p.o.u.gw.vs_namespaces[0], "default");
    done(&p);

    parse(&p, XLATE_KIND_GATEWAY,
          "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Gateway\",\"metadata\":{\"name\":\"g\"},"
          "\"spec\":{\"mode\":\"proxyless\",\"bindPort\":8081,\"virtualServiceNamespaces\":[\"b\","
          "\"a\",\"*\"],\"virtualServiceSelector\":{\"matchLabels\":{\"x\":\"y\"}}}}");
    CHECK_INT_EQ(p.o.u.gw.mode, XLATE_MODE_PROXYLESS);
    CHECK(p.o.u.gw.all_namespaces);
    CHECK_STR_EQ(p.o.u.gw.vs_namespaces[0], "a");
    CHECK(p.o.u.gw.vs_selector != NULL);
    CHECK_INT_EQ(xlate_errors_state(&p.o.errors), XLATE_WARNING);
    CHECK(has(&p, XL_R_UNSUPPORTED,
              "spec.bindPort: ignored in proxyless mode (gRPC clients open no listener)"));
    done(&p);

    parse(&p, XLATE_KIND_GATEWAY,
          "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Gateway\",\"metadata\":{\"name\":\"g\"},"
          "\"spec\":{\"bindPort\":\"80\",\"bindAddress\":\"::1\",\"extra\":1}}");
    CHECK_INT_EQ(xlate_errors_state(&p.o.errors), XLATE_REJECTED);
    CHECK(has(&p, XL_R_INVALID_SPEC, "spec.bindPort: must be an integer, got string"));
    CHECK(has(&p, XL_R_UNKNOWN_FIELD, "spec.extra: unknown field"));
    CHECK_STR_EQ(p.o.u.gw.bind_address, "::1");
    done(&p);
}

static void test_virtual_service_routes(void)
{
    struct parsed p;
    parse(&p, XLATE_KIND_VIRTUAL_SERVICE,
          VS("{\"domains\":[\"a.example.com\",\"*.b.com\"],\"routes\":["
             "{\"upstream\":{\"name\":\"u\"}},"
             "{\"match\":{\"path\":\"/x\",\"caseSensitive\":false,\"headers\":[{\"name\":\"h\"},"
             "{\"name\":\"i\",\"regex\":\"v[0-9]+\",\"invert\":true}]},\"weighted\":[{\"upstream\":"
             "{\"name\":\"a\",\"namespace\":\"other\"},\"weight\":3},{\"upstream\":{\"name\":\"b\"}"
             "}],"
             "\"timeout\":\"1.5s\",\"retries\":{\"attempts\":4,\"on\":\"reset,unavailable\"}},"
             "{\"match\":{\"prefix\":\"/api\"},\"delegate\":{\"selector\":{\"matchLabels\":{\"t\":"
             "\"s\"}}}}]}"));
    REQUIRE_INT_EQ(p.o.errors.n, 0);
    const struct xl_virtual_service *vs = &p.o.u.vs;
    CHECK_INT_EQ(vs->ndomains, 2);
    REQUIRE_INT_EQ(vs->nroutes, 3);
    /* defaults: prefix "/", case sensitive, namespace of the owner */
    CHECK_INT_EQ(vs->routes[0].match.kind, XL_PATH_PREFIX);
    CHECK_STR_EQ(vs->routes[0].match.value, "/");
    CHECK(vs->routes[0].match.case_sensitive);
    CHECK_STR_EQ(vs->routes[0].upstream.ns, "ns");
    const struct xl_route *r = &vs->routes[1];
    CHECK_INT_EQ(r->match.kind, XL_PATH_EXACT);
    CHECK(!r->match.case_sensitive);
    CHECK_INT_EQ(r->match.headers[0].kind, XL_HDR_PRESENT);
    CHECK_INT_EQ(r->match.headers[1].kind, XL_HDR_REGEX);
    CHECK(r->match.headers[1].invert);
    CHECK_INT_EQ(r->action, XL_ACT_WEIGHTED);
    CHECK_STR_EQ(r->weighted[0].upstream.ns, "other");
    CHECK_INT_EQ(r->weighted[1].weight, 1); /* default */
    CHECK_INT_EQ(r->weight_sum, 4);
    CHECK_INT_EQ(r->timeout_ns, 1500000000);
    CHECK_INT_EQ(r->retry_attempts, 4);
    CHECK_STR_EQ(r->retry_on, "reset,unavailable");
    CHECK_INT_EQ(vs->routes[2].action, XL_ACT_DELEGATE);
    CHECK(vs->routes[2].delegate.selector != NULL);
    CHECK_STR_EQ(vs->routes[2].delegate.ns, "ns");
    done(&p);
}

static void test_precise_errors(void)
{
    struct parsed p;
    parse(
        &p, XLATE_KIND_VIRTUAL_SERVICE,
        VS("{\"domains\":[\"a.com\",\"A.com\",\"x*y\",7],\"routes\":["
           "{\"match\":{\"prefix\":\"api\",\"regex\":\"(a\"},\"upstream\":{\"name\":\"u\"}},"
           "{\"match\":{\"regex\":\"/a\\\\1\"},\"upstream\":{\"name\":\"U_bad\"}},"
           "{\"weighted\":[{\"upstream\":{\"name\":\"a\"},\"weight\":0}],"
           "\"retries\":{\"attempts\":0,\"on\":\"5xx,never\"},\"timeout\":\"soon\"},"
           "{\"match\":{\"path\":\"/p\"},\"delegate\":{\"name\":\"t\"}},"
           "{\"upstream\":{\"name\":\"u\"},\"prefixRewrite\":\"/x\",\"match\":{\"regex\":\"/r\"}},"
           "\"oops\"]}"));
    CHECK_INT_EQ(xlate_errors_state(&p.o.errors), XLATE_REJECTED);
    CHECK(has(&p, XL_R_INVALID_DOMAIN, "spec.domains[1]: duplicate domain \"A.com\""));
    CHECK(has(&p, XL_R_INVALID_DOMAIN,
              "spec.domains[2]: invalid domain \"x*y\": a wildcard must be the whole domain or "
              "its first or last character (\"*\", \"*.example.com\", \"example.*\")"));
    CHECK(has(&p, XL_R_INVALID_SPEC, "spec.domains[3]: must be a string, got number"));
    CHECK(has(&p, XL_R_INVALID_SPEC,
              "spec.routes[0].match: prefix, path and regex are mutually exclusive"));
    CHECK(has(&p, XL_R_INVALID_REGEX,
              "spec.routes[1].match.regex: invalid regex \"/a\\1\": invalid escape sequence: \\1"));
    CHECK(has(&p, XL_R_INVALID_SPEC,
              "spec.routes[1].upstream.name: \"U_bad\" is not a valid object name"));
    CHECK(has(&p, XL_R_INVALID_WEIGHTS,
              "spec.routes[2].weighted: weights sum to 0: no traffic could be routed"));
    CHECK(has(&p, XL_R_INVALID_SPEC,
              "spec.routes[2].retries.attempts: must be between 1 and 100, got 0"));
    CHECK(p.o.errors.n == XLATE_MAX_ERRORS || p.o.errors.dropped == 0);
    done(&p);

    /* more problems than kept: counted, and the state stays Rejected */
    char routes[6000], doc[8192];
    size_t o = 0;
    for (int i = 0; i < 30; i++)
        o += (size_t)snprintf(routes + o, sizeof(routes) - o,
                              "%s{\"match\":{\"prefx\":\"/\"},\"upstream\":{\"name\":\"u\"}}",
                              i ? "," : "");
    snprintf(doc, sizeof(doc), VS("{\"domains\":[\"a.com\"],\"routes\":[%s]}"), routes);
    parse(&p, XLATE_KIND_VIRTUAL_SERVICE, doc);
    CHECK_INT_EQ(p.o.errors.n, XLATE_MAX_ERRORS);
    CHECK_INT_EQ(p.o.errors.dropped, 30 - XLATE_MAX_ERRORS);
    CHECK_INT_EQ(xlate_errors_state(&p.o.errors), XLATE_REJECTED);
    CHECK(has(&p, XL_R_UNKNOWN_FIELD, "spec.routes[15].match.prefx: unknown field"));
    done(&p);
}

static void test_upstream(void)
{
    struct parsed p;
    parse(&p, XLATE_KIND_UPSTREAM,
          "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Upstream\",\"metadata\":{\"name\":\"u\","
          "\"namespace\":\"n\"},\"spec\":{\"kube\":{\"service\":\"s\",\"port\":\"http\"},"
          "\"lbPolicy\":\"RingHash\",\"connectTimeout\":\"250ms\"}}");
    CHECK_INT_EQ(p.o.errors.n, 0);
    CHECK(p.o.u.up.is_kube);
    CHECK_STR_EQ(p.o.u.up.kube_ns, "n");
    CHECK_STR_EQ(p.o.u.up.kube_port_name, "http");
    CHECK_INT_EQ(p.o.u.up.lb, XL_LB_RING_HASH);
    CHECK_INT_EQ(p.o.u.up.connect_timeout_ns, 250000000);
    done(&p);
    parse(&p, XLATE_KIND_UPSTREAM,
          "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Upstream\",\"metadata\":{\"name\":\"u\"},"
          "\"spec\":{\"static\":{\"hosts\":[{\"address\":\"fd00::1\",\"port\":443,\"weight\":5},"
          "{\"address\":\"host.example.com\",\"port\":0}]}}}");
    CHECK_INT_EQ(p.o.u.up.hosts[0].weight, 5);
    CHECK(has(&p, XL_R_INVALID_SPEC,
              "spec.static.hosts[1].address: \"host.example.com\" is not an IP address (EDS "
              "endpoints must be IP literals)"));
    CHECK(has(&p, XL_R_INVALID_PORT,
              "spec.static.hosts[1].port: must be between 1 and 65535, got 0"));
    done(&p);
}

/* Object and namespace names are Kubernetes' DNS-1123 subdomains and
 * labels: every dot-separated label starts and ends alphanumeric. */
static void test_reference_names(void)
{
    static const struct {
        const char *name, *ns;
        int ok;
    } rows[] = {
        {"u", "n", 1},  {"u.v-1", "n-1", 1}, {"u..v", "n", 0}, {"u.-v", "n", 0}, {"u-.v", "n", 0},
        {".u", "n", 0}, {"u.", "n", 0},      {"U", "n", 0},    {"u", "n.m", 0},  {"u", "-n", 0},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char json[512];
        snprintf(json, sizeof(json),
                 VS("{\"domains\":[\"a.com\"],\"routes\":[{\"upstream\":{\"name\":\"%s\","
                    "\"namespace\":\"%s\"}}]}"),
                 rows[i].name, rows[i].ns);
        struct parsed p;
        parse(&p, XLATE_KIND_VIRTUAL_SERVICE, json);
        char name_msg[128], ns_msg[128];
        snprintf(name_msg, sizeof(name_msg),
                 "spec.routes[0].upstream.name: \"%s\" is not a valid object name", rows[i].name);
        snprintf(ns_msg, sizeof(ns_msg),
                 "spec.routes[0].upstream.namespace: \"%s\" is not a valid namespace name",
                 rows[i].ns);
        int refused = has(&p, XL_R_INVALID_SPEC, name_msg) || has(&p, XL_R_INVALID_SPEC, ns_msg);
        if (refused == rows[i].ok)
            fprintf(stderr, "# %s/%s\n", rows[i].ns, rows[i].name);
        CHECK_INT_EQ(refused, !rows[i].ok);
        CHECK_INT_EQ(xlate_errors_state(&p.o.errors), rows[i].ok ? XLATE_ACCEPTED : XLATE_REJECTED);
        done(&p);
    }
}

static void test_core_kinds_are_lenient(void)
{
    struct parsed p;
    parse(&p, XLATE_KIND_ENDPOINT_SLICE,
          "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{"
          "\"name\":\"s\",\"namespace\":\"n\",\"uid\":\"u9\",\"creationTimestamp\":"
          "\"2026-01-01T00:00:00Z\",\"labels\":{\"kubernetes.io/service-name\":\"svc\"}},"
          "\"addressType\":\"IPv6\",\"ports\":[{\"port\":80},{\"name\":\"x\",\"port\":null}],"
          "\"endpoints\":[{\"addresses\":[\"fd00::1\",\"nope\"],\"conditions\":{\"ready\":false}},"
          "{\"addresses\":[]},{\"addresses\":[\"fd00::2\"]}],\"whatever\":true}");
    CHECK_INT_EQ(p.o.errors.n, 0);
    /* no report, no domain claim reads them: not kept */
    CHECK(p.o.meta.uid == NULL && p.o.meta.creation == NULL);
    const struct xl_endpoint_slice *s = &p.o.u.eps;
    CHECK_STR_EQ(s->service, "svc");
    CHECK_INT_EQ(s->ip_family, 6);
    CHECK_INT_EQ(s->nports, 1); /* the null port is unusable */
    CHECK_STR_EQ(s->ports[0].name, "");
    CHECK_INT_EQ(s->nendpoints, 2);
    CHECK_INT_EQ(s->endpoints[0].naddresses, 1); /* "nope" is not an IP */
    CHECK(!s->endpoints[0].ready);
    CHECK(s->endpoints[1].ready); /* absent means ready */
    done(&p);
}

/* Slices of every size keep their usable endpoints in order: a few, and
 * more than the parser collects on its stack (64) before it counts. */
static void test_large_endpoint_slice(void)
{
    static const size_t sizes[] = {1, 63, 64, 65, 200, 1000};
    for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
        size_t n = sizes[z];
        struct cx_buf b;
        cx_buf_init(&b, 0);
        int rc = cx_buf_puts(&b, "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":"
                                 "\"EndpointSlice\",\"metadata\":{\"name\":\"s\",\"namespace\":"
                                 "\"n\"},\"addressType\":\"IPv4\",\"endpoints\":[");
        /* every 7th has no IP address (left out), every 5th is not ready */
        for (size_t i = 0; i < n; i++) {
            char addr[32];
            if (i % 7 == 3)
                snprintf(addr, sizeof(addr), "host-%zu", i);
            else
                snprintf(addr, sizeof(addr), "10.0.%zu.%zu", i / 250, i % 250);
            rc |= cx_buf_printf(&b,
                                "%s{\"addresses\":[\"%s\"],\"conditions\":{\"ready\":%s},"
                                "\"zone\":\"z%zu\"}",
                                i ? "," : "", addr, i % 5 == 0 ? "false" : "true", i % 3);
        }
        rc |= cx_buf_puts(&b, "]}");
        REQUIRE_INT_EQ(rc, 0);
        struct parsed p;
        parse(&p, XLATE_KIND_ENDPOINT_SLICE, b.data);
        cx_buf_free(&b);
        const struct xl_endpoint_slice *s = &p.o.u.eps;
        size_t want = 0;
        for (size_t i = 0; i < n; i++)
            want += i % 7 != 3;
        CHECK_INT_EQ(s->nendpoints, want);
        size_t k = 0;
        for (size_t i = 0; i < n && k < s->nendpoints; i++) {
            if (i % 7 == 3)
                continue;
            char addr[32];
            snprintf(addr, sizeof(addr), "10.0.%zu.%zu", i / 250, i % 250);
            const struct xl_slice_endpoint *x = &s->endpoints[k++];
            REQUIRE_INT_EQ(x->naddresses, 1);
            CHECK_STR_EQ(x->addresses[0], addr);
            CHECK_INT_EQ(x->ready, i % 5 != 0);
            char zone[8];
            snprintf(zone, sizeof(zone), "z%zu", i % 3);
            CHECK_STR_EQ(x->zone, zone);
        }
        done(&p);
    }
}

static void test_unsupported_version_and_missing_spec(void)
{
    struct parsed p;
    parse(&p, XLATE_KIND_ROUTE_TABLE,
          "{\"apiVersion\":\"coxswain.dev/"
          "v2\",\"kind\":\"RouteTable\",\"metadata\":{\"name\":\"r\"}}");
    CHECK(has(&p, XL_R_UNSUPPORTED_VERSION,
              "apiVersion coxswain.dev/v2 is not served; use coxswain.dev/v1"));
    done(&p);
    parse(&p, XLATE_KIND_ROUTE_TABLE,
          "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"RouteTable\",\"metadata\":{}}");
    CHECK(has(&p, XL_R_INVALID_SPEC, "metadata.name: required"));
    CHECK(has(&p, XL_R_INVALID_SPEC, "spec: required"));
    done(&p);
}

static void test_helpers(void)
{
    char msg[200];
    CHECK_INT_EQ(xlate_domain_valid("*", msg, sizeof(msg)), 0);
    CHECK_INT_EQ(xlate_domain_valid("example.*", msg, sizeof(msg)), 0);
    CHECK_INT_EQ(xlate_domain_valid("[::1]:8080", msg, sizeof(msg)), 0);
    CHECK_INT_EQ(xlate_domain_valid("a**", msg, sizeof(msg)), -1);
    CHECK_INT_EQ(xlate_domain_valid("", msg, sizeof(msg)), -1);
    CHECK_INT_EQ(xlate_domain_valid("a b", msg, sizeof(msg)), -1);
    CHECK(xlate_is_ip("10.0.0.1") && xlate_is_ip("fd00::1") && !xlate_is_ip("10.0.0") &&
          !xlate_is_ip(NULL));
    /* the IPv4 fast path agrees with inet_pton on edge cases and on random
     * strings over the characters that matter */
    static const char *const v4[] = {
        "0.0.0.0",  "255.255.255.255", "256.1.1.1", "01.2.3.4",   "1.2.3.04",  "1.2.3",
        "1.2.3.4.", ".1.2.3.4",        "1..2.3",    "1.2.3.4 ",   "",          "1.2.3.-4",
        "1.2.3.4x", "00.1.1.1",        "0.0.0.00",  "10.1.2.255", "1.2.3.999", "::ffff:1.2.3.4"};
    unsigned char ab[16];
    for (size_t i = 0; i < sizeof(v4) / sizeof(v4[0]); i++) {
        int want = inet_pton(AF_INET, v4[i], ab) == 1 || inet_pton(AF_INET6, v4[i], ab) == 1;
        if (xlate_is_ip(v4[i]) != want)
            fprintf(stderr, "xlate_is_ip(\"%s\") != %d\n", v4[i], want);
        CHECK_INT_EQ(xlate_is_ip(v4[i]), want);
    }
    uint32_t seed = 12345;
    for (int i = 0; i < 200000; i++) {
        static const char alpha[] = "0123456789....:: a";
        char str[20];
        seed = seed * 1103515245u + 12345u;
        int len = (int)(seed >> 16) % 18;
        for (int k = 0; k < len; k++) {
            seed = seed * 1103515245u + 12345u;
            str[k] = alpha[(seed >> 16) % (sizeof(alpha) - 1)];
        }
        str[len] = '\0';
        int want = inet_pton(AF_INET, str, ab) == 1 || inet_pton(AF_INET6, str, ab) == 1;
        if (xlate_is_ip(str) != want) {
            fprintf(stderr, "xlate_is_ip(\"%s\") != %d\n", str, want);
            CHECK_INT_EQ(xlate_is_ip(str), want);
            break;
        }
    }
    CHECK_STR_EQ(xlate_reason_name(XL_R_DELEGATION_CYCLE), "DelegationCycle");
    CHECK_STR_EQ(xlate_reason_name(XL_R_COUNT), "Unknown");
    struct xl_errors e = {0};
    struct xl_arena a = {0};
    CHECK_INT_EQ(xlate_errors_state(&e), XLATE_ACCEPTED);
    CHECK_INT_EQ(xlate_errors_add(&e, &a, XLATE_WARNING, XL_R_REGEX_SIZE, "w %d", 1), 0);
    CHECK_INT_EQ(xlate_errors_state(&e), XLATE_WARNING);
    CHECK_STR_EQ(e.items[0].msg, "w 1");
    xlate_arena_free(&a);
}

static const struct cxt_case cases[] = {
    CXT(test_kind_of),
    CXT(test_gateway_defaults_and_errors),
    CXT(test_virtual_service_routes),
    CXT(test_precise_errors),
    CXT(test_upstream),
    CXT(test_reference_names),
    CXT(test_core_kinds_are_lenient),
    CXT(test_large_endpoint_slice),
    CXT(test_unsupported_version_and_missing_spec),
    CXT(test_helpers),
};
CXT_MAIN(cases)
