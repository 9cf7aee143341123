/* kube_report: request paths read the way kube-apiserver reads them, and
 * the logging decisions (first of a distinct error, repeats once per
 * interval with their count, recovery, the per-client line budget) on a
 * fake clock. */
#include "cx_time.h"
#include "cxtest.h"
#include "kube_error.h"
#include "kube_report.h"

#include <stdio.h>
#include <string.h>

#define S CX_NS_PER_S

static void expect_info(const char *method, const char *path, const char *verb,
                        const char *resource, const char *ns, const char *name, const char *obj)
{
    struct kube_reqinfo ri;
    kube_reqinfo_parse(&ri, method, path);
    CHECK_STR_EQ(ri.verb, verb);
    CHECK_STR_EQ(ri.resource, resource);
    CHECK_STR_EQ(ri.ns, ns);
    CHECK_STR_EQ(ri.name, name);
    char o[300];
    CHECK_STR_EQ(kube_reqinfo_object(&ri, o, sizeof(o)), obj);
}

static void test_reqinfo(void)
{
    expect_info("GET", "/api/v1/namespaces/ns1/configmaps/foo", "get", "configmaps", "ns1", "foo",
                "ns1/foo");
    expect_info("GET", "/api/v1/namespaces/ns1/configmaps?limit=500", "list", "configmaps", "ns1",
                "", "in namespace ns1");
    expect_info("GET", "/apis/coxswain.dev/v1/gateways?watch=1&resourceVersion=5", "watch",
                "gateways", "", "", "in all namespaces");
    expect_info("GET",
                "/apis/coordination.k8s.io/v1/namespaces/sys/leases?watch=1&fieldSelector="
                "metadata.name%3Dlock&timeoutSeconds=60",
                "watch", "leases", "sys", "lock", "sys/lock");
    expect_info("GET", "/api/v1/namespaces/a/secrets?fieldSelector=metadata.name%3Dx%2Ctype%3Dy",
                "list", "secrets", "a", "", "in namespace a");
    expect_info("PATCH", "/apis/coxswain.dev/v1/namespaces/app/gateways/gw/status", "patch",
                "gateways/status", "app", "gw", "app/gw");
    expect_info("POST", "/apis/coordination.k8s.io/v1/namespaces/nosuchns/leases", "create",
                "leases", "nosuchns", "", "in namespace nosuchns");
    expect_info("PUT", "/apis/coxswain.dev/v1/namespaces/cx/proxysnapshots/a.b", "update",
                "proxysnapshots", "cx", "a.b", "cx/a.b");
    expect_info("DELETE", "/api/v1/namespaces/ns/events", "deletecollection", "events", "ns", "",
                "in namespace ns");
    expect_info("DELETE", "/api/v1/namespaces/ns/events/e%2E1", "delete", "events", "ns", "e.1",
                "ns/e.1");
    /* Namespaces are cluster-scoped: their own subresources name them. */
    expect_info("GET", "/api/v1/namespaces/team", "get", "namespaces", "", "team", "team");
    expect_info("PUT", "/api/v1/namespaces/team/status", "update", "namespaces/status", "", "team",
                "team");
    expect_info("GET", "/api/v1/namespaces?watch=true", "watch", "namespaces", "", "",
                "in all namespaces");
    /* Not a resource path: nothing invented. */
    expect_info("GET", "/version", "", "", "", "", "in all namespaces");
}

static struct kube_error http_err(int status, const char *reason, const char *msg)
{
    struct kube_error e;
    kube_error_clear(&e);
    e.http_status = status;
    e.code = kube_error_code_for(status, reason);
    snprintf(e.reason, sizeof(e.reason), "%s", reason);
    snprintf(e.message, sizeof(e.message), "%s", msg);
    return e;
}

static void test_first_repeat_recover(void)
{
    struct kube_report r;
    kube_report_init(&r, "coxswain", 0);
    struct kube_reqinfo ri;
    kube_reqinfo_parse(&ri, "POST", "/apis/coordination.k8s.io/v1/namespaces/x/leases");
    struct kube_error nf = http_err(404, "NotFound", "namespaces \"x\" not found");
    struct kube_report_line l = kube_report_note(&r, &ri, &nf, 1 * S);
    CHECK_INT_EQ(l.action, KUBE_REPORT_FIRST);
    CHECK_INT_EQ(l.repeats, 1);
    /* The same error again and again: silent until the interval passed. */
    for (int i = 0; i < 500; i++) {
        l = kube_report_note(&r, &ri, &nf, 2 * S + i * CX_NS_PER_MS);
        CHECK_INT_EQ(l.action, KUBE_REPORT_NONE);
    }
    l = kube_report_note(&r, &ri, &nf, 1 * S + KUBE_REPORT_REPEAT_NS);
    CHECK_INT_EQ(l.action, KUBE_REPORT_REPEAT);
    CHECK_INT_EQ(l.repeats, 501);
    /* Another message is another error: logged at once. */
    struct kube_error fb = http_err(403, "Forbidden", "leases is forbidden");
    l = kube_report_note(&r, &ri, &fb, 40 * S);
    CHECK_INT_EQ(l.action, KUBE_REPORT_FIRST);
    /* Transport errors carry timings in their text: the same failure. */
    struct kube_reqinfo rg;
    kube_reqinfo_parse(&rg, "GET", "/api/v1/namespaces/x/configmaps/c");
    struct kube_error t1, t2;
    kube_error_set(&t1, KUBE_E_TIMEOUT, "Operation timed out after 1001 milliseconds");
    kube_error_set(&t2, KUBE_E_TIMEOUT, "Operation timed out after 1003 milliseconds");
    CHECK_INT_EQ(kube_report_note(&r, &rg, &t1, 41 * S).action, KUBE_REPORT_FIRST);
    CHECK_INT_EQ(kube_report_note(&r, &rg, &t2, 42 * S).action, KUBE_REPORT_NONE);
    /* The create succeeds: one line, with the number of failures. */
    struct kube_error ok;
    kube_error_clear(&ok);
    l = kube_report_note(&r, &ri, &ok, 43 * S);
    CHECK_INT_EQ(l.action, KUBE_REPORT_RECOVERED);
    CHECK_INT_EQ(l.repeats, 503);
    CHECK_INT_EQ(kube_report_note(&r, &ri, &ok, 44 * S).action, KUBE_REPORT_NONE);
    /* ... and a new failure afterwards is news again. */
    CHECK_INT_EQ(kube_report_note(&r, &ri, &nf, 45 * S).action, KUBE_REPORT_FIRST);
    /* Successes of requests that never failed say nothing. */
    CHECK_INT_EQ(kube_report_note(&r, &rg, &ok, 46 * S).action, KUBE_REPORT_RECOVERED);
    struct kube_reqinfo other;
    kube_reqinfo_parse(&other, "GET", "/api/v1/namespaces/x/configmaps/d");
    CHECK_INT_EQ(kube_report_note(&r, &other, &ok, 47 * S).action, KUBE_REPORT_NONE);
}

static void test_line_budget_and_slots(void)
{
    struct kube_report r;
    kube_report_init(&r, "coxswain", 0);
    struct kube_error e = http_err(403, "Forbidden", "forbidden");
    int first = 0;
    /* 200 distinct objects failing at the same moment: the burst, then
     * nothing; what was held back is counted in the next line. */
    for (int i = 0; i < 200; i++) {
        char path[128];
        snprintf(path, sizeof(path), "/apis/coxswain.dev/v1/namespaces/a/gateways/g%d/status", i);
        struct kube_reqinfo ri;
        kube_reqinfo_parse(&ri, "PATCH", path);
        first += kube_report_note(&r, &ri, &e, 10 * S).action == KUBE_REPORT_FIRST;
    }
    CHECK_INT_EQ(first, (int)KUBE_REPORT_LINES_BURST);
    struct kube_reqinfo ri;
    kube_reqinfo_parse(&ri, "PATCH", "/apis/coxswain.dev/v1/namespaces/a/gateways/new/status");
    struct kube_report_line l = kube_report_note(&r, &ri, &e, 12 * S);
    CHECK_INT_EQ(l.action, KUBE_REPORT_FIRST);
    CHECK_INT_EQ(l.held_back, 200 - (int)KUBE_REPORT_LINES_BURST);
    /* The table stays bounded: slots are reused, oldest first. */
    CHECK_INT_LE(r.used, KUBE_REPORT_SLOTS);
}

static const struct cxt_case cases[] = {
    CXT(test_reqinfo),
    CXT(test_first_repeat_recover),
    CXT(test_line_budget_and_slots),
};
CXT_MAIN(cases)
