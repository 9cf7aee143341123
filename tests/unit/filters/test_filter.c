/* The filter: decisions (verdict, reason, store action), scopes, lock
 * exclusion, the ignore label, push-down, flags and counters. */
#include "cx_flags.h"
#include "cx_json.h"
#include "cx_metrics.h"
#include "cxtest.h"
#include "filter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static cJSON *obj(const char *kind, const char *ns, const char *name, const char *labels_json,
                  const char *extra_json)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kind", kind);
    cJSON *m = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(m, "name", name);
    if (ns)
        cJSON_AddStringToObject(m, "namespace", ns);
    cJSON_AddStringToObject(m, "resourceVersion", "1");
    if (labels_json)
        cJSON_AddItemToObject(m, "labels", cJSON_Parse(labels_json));
    if (extra_json) {
        cJSON *x = cJSON_Parse(extra_json);
        for (cJSON *c = x ? x->child : NULL; c;) {
            cJSON *next = c->next;
            cJSON_AddItemToObject(o, c->string, cJSON_DetachItemViaPointer(x, c));
            c = next;
        }
        cJSON_Delete(x);
    }
    return o;
}

static void set_rv(cJSON *o, const char *rv)
{
    cJSON_ReplaceItemInObject(cJSON_GetObjectItemCaseSensitive(o, "metadata"), "resourceVersion",
                              cJSON_CreateString(rv));
}

static struct filter_decision decide(struct filter *f, enum filter_event_type t, const char *kind,
                                     const cJSON *o, const cJSON *old)
{
    struct filter_event ev = {.type = t, .kind = kind, .obj = o, .old = old};
    struct filter_decision d;
    if (filter_decide(f, &ev, &d) != FILTER_OK)
        d.reason = FILTER_REASON_COUNT;
    return d;
}

/* |d| is evaluated once (it is often a decide() call, which counts) */
#define CHECK_DECISION(d, verd, why, act)                                     \
    do {                                                                      \
        struct filter_decision d_ = (d);                                      \
        CHECK_STR_EQ(filter_reason_name(d_.reason), filter_reason_name(why)); \
        CHECK_INT_EQ(d_.verdict, verd);                                       \
        CHECK_INT_EQ(d_.action, act);                                         \
    } while (0)

static void test_add_modify_delete_cycle(void)
{
    struct filter *f = filter_new();
    REQUIRE(f);
    cJSON *v1 = obj("VirtualService", "app", "web", "{\"team\":\"a\"}",
                    "{\"spec\":{\"domains\":[\"a\"]},\"status\":{\"s\":1}}");
    struct filter_decision d = decide(f, FILTER_EV_ADDED, "VirtualService", v1, NULL);
    CHECK_DECISION(d, FILTER_PASS, FILTER_R_ADDED, FILTER_STORE_ADD);
    CHECK_INT_EQ(d.has_digest, 1);
    uint64_t stored = d.digest;

    /* same content, new resourceVersion and status: dropped */
    cJSON *v2 = cJSON_Duplicate(v1, 1);
    set_rv(v2, "2");
    cJSON_ReplaceItemInObject(v2, "status", cJSON_Parse("{\"s\":2}"));
    struct filter_event ev = {.type = FILTER_EV_MODIFIED,
                              .kind = "VirtualService",
                              .obj = v2,
                              .old = v1,
                              .old_digest = &stored};
    REQUIRE_INT_EQ(filter_decide(f, &ev, &d), FILTER_OK);
    CHECK_DECISION(d, FILTER_DROP, FILTER_R_INSIGNIFICANT, FILTER_STORE_NONE);
    CHECK(d.digest == stored);

    /* also when the store's digest is not handed over */
    d = decide(f, FILTER_EV_MODIFIED, "VirtualService", v2, v1);
    CHECK_DECISION(d, FILTER_DROP, FILTER_R_INSIGNIFICANT, FILTER_STORE_NONE);

    /* a spec change passes as an update */
    cJSON *v3 = cJSON_Duplicate(v2, 1);
    cJSON_ReplaceItemInObject(v3, "spec", cJSON_Parse("{\"domains\":[\"b\"]}"));
    d = decide(f, FILTER_EV_MODIFIED, "VirtualService", v3, v2);
    CHECK_DECISION(d, FILTER_PASS, FILTER_R_CHANGED, FILTER_STORE_UPDATE);
    CHECK(d.digest != stored);

    /* a stale stored digest makes even identical objects an update */
    uint64_t wrong = stored ^ 1;
    ev.old_digest = &wrong;
    REQUIRE_INT_EQ(filter_decide(f, &ev, &d), FILTER_OK);
    CHECK_DECISION(d, FILTER_PASS, FILTER_R_CHANGED, FILTER_STORE_UPDATE);

    /* a re-list's ADDED for a stored, unchanged object is insignificant */
    d = decide(f, FILTER_EV_ADDED, "VirtualService", v2, v1);
    CHECK_DECISION(d, FILTER_DROP, FILTER_R_INSIGNIFICANT, FILTER_STORE_NONE);

    d = decide(f, FILTER_EV_DELETED, "VirtualService", v3, v3);
    CHECK_DECISION(d, FILTER_PASS, FILTER_R_DELETED, FILTER_STORE_DELETE);
    d = decide(f, FILTER_EV_DELETED, "VirtualService", v3, NULL);
    CHECK_DECISION(d, FILTER_DROP, FILTER_R_NOT_STORED, FILTER_STORE_NONE);

    CHECK_INT_EQ(filter_count(f, "VirtualService", FILTER_R_INSIGNIFICANT), 3);
    CHECK_INT_EQ(filter_count(f, "virtualservice", FILTER_R_CHANGED), 2);
    CHECK_INT_EQ(filter_count_passed(f, "VirtualService"), 4);
    CHECK_INT_EQ(filter_count_passed(f, NULL), 4);
    CHECK_INT_EQ(filter_count(f, "Gateway", FILTER_R_ADDED), 0);
    cJSON_Delete(v1);
    cJSON_Delete(v2);
    cJSON_Delete(v3);
    filter_free(f);
}

static void test_lock_exclusion(void)
{
    struct filter *f = filter_new();
    REQUIRE(f);
    REQUIRE_INT_EQ(filter_add_lock(f, "ConfigMap", "sys", "coxswain-leader"), FILTER_OK);
    REQUIRE_INT_EQ(filter_add_lock(f, "Lease", "sys", "coxswain"), FILTER_OK);
    CHECK_INT_EQ(filter_add_lock(f, "Lease", "sys", ""), FILTER_EINVAL);

    /* a ConfigMap lock as client-go's elector writes it */
    cJSON *lock =
        cJSON_Parse("{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"coxswain-leader\","
                    "\"namespace\":\"sys\",\"resourceVersion\":\"5\",\"annotations\":{"
                    "\"control-plane.alpha.kubernetes.io/leader\":\"{\\\"renewTime\\\":1}\"}}}");
    REQUIRE(lock);
    for (int i = 0; i < 30; i++) {
        struct filter_decision d = decide(f, FILTER_EV_MODIFIED, "ConfigMap", lock, NULL);
        CHECK_DECISION(d, FILTER_DROP, FILTER_R_EXCLUDED_LOCK, FILTER_STORE_NONE);
    }
    struct filter_decision d = decide(f, FILTER_EV_ADDED, "ConfigMap", lock, NULL);
    CHECK_DECISION(d, FILTER_DROP, FILTER_R_EXCLUDED_LOCK, FILTER_STORE_NONE);
    d = decide(f, FILTER_EV_DELETED, "ConfigMap", lock, NULL);
    CHECK_DECISION(d, FILTER_DROP, FILTER_R_EXCLUDED_LOCK, FILTER_STORE_NONE);

    /* same name elsewhere, or another kind with that name: not the lock */
    cJSON *other_ns = obj("ConfigMap", "app", "coxswain-leader", NULL, NULL);
    d = decide(f, FILTER_EV_ADDED, "ConfigMap", other_ns, NULL);
    CHECK_DECISION(d, FILTER_PASS, FILTER_R_ADDED, FILTER_STORE_ADD);
    cJSON *secret = obj("Secret", "sys", "coxswain-leader", NULL, NULL);
    d = decide(f, FILTER_EV_ADDED, "Secret", secret, NULL);
    CHECK_DECISION(d, FILTER_PASS, FILTER_R_ADDED, FILTER_STORE_ADD);

    cJSON *lease = obj("Lease", "sys", "coxswain", NULL, "{\"spec\":{\"holderIdentity\":\"a\"}}");
    d = decide(f, FILTER_EV_MODIFIED, "Lease", lease, NULL);
    CHECK_DECISION(d, FILTER_DROP, FILTER_R_EXCLUDED_LOCK, FILTER_STORE_NONE);

    CHECK_INT_EQ(filter_count(f, "ConfigMap", FILTER_R_EXCLUDED_LOCK), 32);
    CHECK_INT_EQ(filter_count(f, "Lease", FILTER_R_EXCLUDED_LOCK), 1);
    CHECK_INT_EQ(filter_count(f, NULL, FILTER_R_EXCLUDED_LOCK), 33);

    /* the same counts reach the shared Prometheus registry */
    struct cx_metric *m = cx_counter("coxswain_filter_events_total", "", "kind,verdict,reason");
    REQUIRE(m);
    CHECK(cx_metric_get(m, "ConfigMap", "drop", "excluded-lock") >= 32);
    CHECK(cx_metric_get(m, "Lease", "drop", "excluded-lock") >= 1);
    struct cx_buf out;
    cx_buf_init(&out, 0);
    REQUIRE_INT_EQ(cx_metrics_render(&out), 0);
    CHECK_STR_CONTAINS(out.data, "coxswain_filter_events_total{kind=\"ConfigMap\",verdict=\"drop\","
                                 "reason=\"excluded-lock\"}");
    cx_buf_free(&out);

    cJSON_Delete(lock);
    cJSON_Delete(other_ns);
    cJSON_Delete(secret);
    cJSON_Delete(lease);
    filter_free(f);
}

static void test_ignore_label(void)
{
    struct filter *f = filter_new();
    REQUIRE(f);
    cJSON *plain = obj("Upstream", "app", "u", "{\"a\":\"b\"}", "{\"spec\":{}}");
    cJSON *ignored =
        obj("Upstream", "app", "u", "{\"coxswain.dev/ignore\":\"true\"}", "{\"spec\":{}}");
    cJSON *not_true = obj("Upstream", "app", "u", "{\"coxswain.dev/ignore\":\"True\"}", NULL);
    struct filter_decision d = decide(f, FILTER_EV_ADDED, "Upstream", ignored, NULL);
    CHECK_DECISION(d, FILTER_DROP, FILTER_R_IGNORED_LABEL, FILTER_STORE_NONE);
    d = decide(f, FILTER_EV_ADDED, "Upstream", not_true, NULL);
    CHECK_DECISION(d, FILTER_PASS, FILTER_R_ADDED, FILTER_STORE_ADD);
    /* labelling a stored object ignored removes it from the store */
    d = decide(f, FILTER_EV_MODIFIED, "Upstream", ignored, plain);
    CHECK_DECISION(d, FILTER_PASS, FILTER_R_STOPPED_MATCHING, FILTER_STORE_DELETE);
    /* and removing the label brings it back */
    d = decide(f, FILTER_EV_MODIFIED, "Upstream", plain, NULL);
    CHECK_DECISION(d, FILTER_PASS, FILTER_R_STARTED_MATCHING, FILTER_STORE_ADD);
    d = decide(f, FILTER_EV_DELETED, "Upstream", ignored, NULL);
    CHECK_DECISION(d, FILTER_DROP, FILTER_R_IGNORED_LABEL, FILTER_STORE_NONE);
    cJSON_Delete(plain);
    cJSON_Delete(ignored);
    cJSON_Delete(not_true);
    filter_free(f);
}

static void test_namespace_list(void)
{
    struct filter *f = filter_new();
    struct filter_error err;
    REQUIRE(f);
    REQUIRE_INT_EQ(filter_set_namespaces(f, NULL, " a, b ,,a", &err), FILTER_OK);
    REQUIRE_INT_EQ(filter_set_namespaces(f, "Secret", "certs", &err), FILTER_OK);
    cJSON *in_a = obj("Service", "a", "s", NULL, NULL);
    cJSON *in_c = obj("Service", "c", "s", NULL, NULL);
    cJSON *cluster = obj("Service", NULL, "s", NULL, NULL);
    cJSON *secret_a = obj("Secret", "a", "t", NULL, NULL);
    cJSON *secret_certs = obj("Secret", "certs", "t", NULL, NULL);
    CHECK_DECISION(decide(f, FILTER_EV_ADDED, "Service", in_a, NULL), FILTER_PASS, FILTER_R_ADDED,
                   FILTER_STORE_ADD);
    CHECK_DECISION(decide(f, FILTER_EV_ADDED, "Service", in_c, NULL), FILTER_DROP,
                   FILTER_R_OUT_OF_SCOPE_NAMESPACE, FILTER_STORE_NONE);
    /* cluster-scoped objects have no namespace to check */
    CHECK_DECISION(decide(f, FILTER_EV_ADDED, "Service", cluster, NULL), FILTER_PASS,
                   FILTER_R_ADDED, FILTER_STORE_ADD);
    /* a kind's own list overrides the global one */
    CHECK_DECISION(decide(f, FILTER_EV_ADDED, "Secret", secret_a, NULL), FILTER_DROP,
                   FILTER_R_OUT_OF_SCOPE_NAMESPACE, FILTER_STORE_NONE);
    CHECK_DECISION(decide(f, FILTER_EV_ADDED, "Secret", secret_certs, NULL), FILTER_PASS,
                   FILTER_R_ADDED, FILTER_STORE_ADD);
    CHECK_INT_EQ(filter_namespace_in_scope(f, "Service", "b", NULL), 1);
    CHECK_INT_EQ(filter_namespace_in_scope(f, "Service", "certs", NULL), 0);
    CHECK_INT_EQ(filter_namespace_in_scope(f, "secret", "certs", NULL), 1);

    static const struct {
        const char *list, *msg;
    } bad[] = {
        {"Prod",
         "namespace \"Prod\": a lowercase RFC 1123 label must consist of lower case alphanumeric "
         "characters or '-', and must start and end with an alphanumeric character (e.g. "
         "'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"},
        {"ok,-x", NULL},
        {"a.b", "namespace \"a.b\": must not contain dots"},
        {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
         "namespace \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\": must be "
         "no more than 63 characters"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_INT_EQ(filter_set_namespaces(f, NULL, bad[i].list, &err), FILTER_EINVAL);
        if (bad[i].msg)
            CHECK_STR_EQ(err.msg, bad[i].msg);
    }
    CHECK_INT_EQ(err.offset, 0);
    CHECK_INT_EQ(filter_set_namespaces(f, NULL, "ok,-x", &err), FILTER_EINVAL);
    CHECK_INT_EQ(err.offset, 3);
    /* a refused list leaves the old one in place */
    CHECK_DECISION(decide(f, FILTER_EV_ADDED, "Service", in_c, NULL), FILTER_DROP,
                   FILTER_R_OUT_OF_SCOPE_NAMESPACE, FILTER_STORE_NONE);
    /* "" means all namespaces again */
    REQUIRE_INT_EQ(filter_set_namespaces(f, NULL, "", &err), FILTER_OK);
    CHECK_DECISION(decide(f, FILTER_EV_MODIFIED, "Service", in_c, NULL), FILTER_PASS,
                   FILTER_R_STARTED_MATCHING, FILTER_STORE_ADD);
    cJSON_Delete(in_a);
    cJSON_Delete(in_c);
    cJSON_Delete(cluster);
    cJSON_Delete(secret_a);
    cJSON_Delete(secret_certs);
    filter_free(f);
}

struct nsdb {
    const char *ns[4];
    const char *labels[4];
    cJSON *parsed[4];
};

static const cJSON *ns_lookup(void *ud, const char *ns, int *known)
{
    struct nsdb *db = ud;
    for (int i = 0; i < 4 && db->ns[i]; i++) {
        if (strcmp(db->ns[i], ns) == 0) {
            *known = 1;
            if (!db->parsed[i] && db->labels[i])
                db->parsed[i] = cJSON_Parse(db->labels[i]);
            return db->parsed[i];
        }
    }
    *known = 0;
    return NULL;
}

static void test_namespace_selector(void)
{
    struct filter *f = filter_new();
    struct filter_error err;
    REQUIRE(f);
    REQUIRE_INT_EQ(filter_set_namespace_selector(f, NULL, "env in (prod,staging),!legacy", &err),
                   FILTER_OK);
    struct nsdb db = {
        {"prod1", "dev1", "old", "bare"},
        {"{\"env\":\"prod\"}", "{\"env\":\"dev\"}", "{\"env\":\"prod\",\"legacy\":\"\"}", NULL},
        {NULL}};
    const char *nss[] = {"prod1", "dev1", "old", "bare", "unknown"};
    const int want[] = {1, 0, 0, 0, 0};
    for (int i = 0; i < 5; i++) {
        cJSON *o = obj("Gateway", nss[i], "g", NULL, NULL);
        struct filter_event ev = {.type = FILTER_EV_ADDED,
                                  .kind = "Gateway",
                                  .obj = o,
                                  .ns_labels = ns_lookup,
                                  .ns_user_data = &db};
        struct filter_decision d;
        REQUIRE_INT_EQ(filter_decide(f, &ev, &d), FILTER_OK);
        if (want[i])
            CHECK_DECISION(d, FILTER_PASS, FILTER_R_ADDED, FILTER_STORE_ADD);
        else
            CHECK_DECISION(d, FILTER_DROP, FILTER_R_OUT_OF_SCOPE_NAMESPACE, FILTER_STORE_NONE);
        /* without a lookup nothing namespaced is in scope */
        struct filter_event ev2 = {.type = FILTER_EV_ADDED, .kind = "Gateway", .obj = o};
        REQUIRE_INT_EQ(filter_decide(f, &ev2, &d), FILTER_OK);
        CHECK_INT_EQ(d.reason, FILTER_R_OUT_OF_SCOPE_NAMESPACE);
        cJSON_Delete(o);
    }
    cJSON *prod = cJSON_Parse("{\"env\":\"staging\"}");
    CHECK_INT_EQ(filter_namespace_in_scope(f, "Gateway", "x", prod), 1);
    CHECK_INT_EQ(filter_namespace_in_scope(f, "Gateway", "x", NULL), 0);
    /* a kind may switch the selector off for itself */
    REQUIRE_INT_EQ(filter_set_namespace_selector(f, "Service", "", &err), FILTER_OK);
    CHECK_INT_EQ(filter_namespace_in_scope(f, "Service", "x", NULL), 1);
    CHECK_INT_EQ(filter_set_namespace_selector(f, NULL, "env in (", &err), FILTER_EINVAL);
    CHECK_STR_EQ(err.msg,
                 "unable to parse requirement: found '', expected: ',', ')' or identifier");
    cJSON_Delete(prod);
    for (int i = 0; i < 4; i++)
        cJSON_Delete(db.parsed[i]);
    filter_free(f);
}

static void test_label_and_field_selectors(void)
{
    struct filter *f = filter_new();
    struct filter_error err;
    REQUIRE(f);
    REQUIRE_INT_EQ(filter_set_label_selector(f, "VirtualService", "team=a", &err), FILTER_OK);
    REQUIRE_INT_EQ(filter_set_field_selector(f, "Secret", "type=kubernetes.io/tls", &err),
                   FILTER_OK);
    CHECK_INT_EQ(filter_set_field_selector(f, "ConfigMap", "type=x", &err), FILTER_EINVAL);
    CHECK_STR_EQ(err.msg, "\"type\" is not a known field selector: only \"metadata.name\", "
                          "\"metadata.namespace\"");
    CHECK_INT_EQ(filter_set_field_selector(f, "VirtualService", "spec.x=1", &err), FILTER_EINVAL);
    CHECK_STR_EQ(err.msg, "field label not supported: spec.x");
    CHECK_INT_EQ(filter_set_label_selector(f, NULL, "a", &err), FILTER_EINVAL);

    cJSON *a = obj("VirtualService", "n", "v", "{\"team\":\"a\"}", NULL);
    cJSON *b = obj("VirtualService", "n", "v", "{\"team\":\"b\"}", NULL);
    CHECK_DECISION(decide(f, FILTER_EV_ADDED, "VirtualService", b, NULL), FILTER_DROP,
                   FILTER_R_SELECTOR_MISMATCH, FILTER_STORE_NONE);
    /* relabelled into the selector: an add; out of it: a delete */
    CHECK_DECISION(decide(f, FILTER_EV_MODIFIED, "VirtualService", a, NULL), FILTER_PASS,
                   FILTER_R_STARTED_MATCHING, FILTER_STORE_ADD);
    CHECK_DECISION(decide(f, FILTER_EV_MODIFIED, "VirtualService", b, a), FILTER_PASS,
                   FILTER_R_STOPPED_MATCHING, FILTER_STORE_DELETE);
    /* other kinds are not affected by VirtualService's selector */
    cJSON *gw = obj("Gateway", "n", "g", "{\"team\":\"b\"}", NULL);
    CHECK_DECISION(decide(f, FILTER_EV_ADDED, "Gateway", gw, NULL), FILTER_PASS, FILTER_R_ADDED,
                   FILTER_STORE_ADD);

    cJSON *tls = obj("Secret", "n", "c", NULL, "{\"type\":\"kubernetes.io/tls\"}");
    cJSON *opaque = obj("Secret", "n", "o", NULL, "{\"type\":\"Opaque\"}");
    CHECK_DECISION(decide(f, FILTER_EV_ADDED, "Secret", tls, NULL), FILTER_PASS, FILTER_R_ADDED,
                   FILTER_STORE_ADD);
    CHECK_DECISION(decide(f, FILTER_EV_ADDED, "Secret", opaque, NULL), FILTER_DROP,
                   FILTER_R_FIELD_MISMATCH, FILTER_STORE_NONE);

    enum filter_reason why;
    CHECK_INT_EQ(filter_scope_check(f, "Secret", opaque, NULL, NULL, &why), 0);
    CHECK_INT_EQ(why, FILTER_R_FIELD_MISMATCH);
    CHECK_INT_EQ(filter_scope_check(f, "Secret", tls, NULL, NULL, &why), 1);
    /* scope checks count nothing */
    CHECK_INT_EQ(filter_count(f, "Secret", FILTER_R_FIELD_MISMATCH), 1);

    cJSON_Delete(a);
    cJSON_Delete(b);
    cJSON_Delete(gw);
    cJSON_Delete(tls);
    cJSON_Delete(opaque);
    filter_free(f);
}

static void test_malformed(void)
{
    struct filter *f = filter_new();
    REQUIRE(f);
    cJSON *noname = cJSON_Parse("{\"metadata\":{\"namespace\":\"a\"}}");
    cJSON *arr = cJSON_Parse("[]");
    CHECK_DECISION(decide(f, FILTER_EV_ADDED, "Service", noname, NULL), FILTER_DROP,
                   FILTER_R_MALFORMED, FILTER_STORE_NONE);
    CHECK_DECISION(decide(f, FILTER_EV_MODIFIED, "Service", arr, noname), FILTER_DROP,
                   FILTER_R_MALFORMED, FILTER_STORE_NONE);
    CHECK_DECISION(decide(f, FILTER_EV_DELETED, "Service", NULL, noname), FILTER_DROP,
                   FILTER_R_MALFORMED, FILTER_STORE_NONE);
    CHECK_INT_EQ(filter_count(f, "Service", FILTER_R_MALFORMED), 3);
    cJSON_Delete(noname);
    cJSON_Delete(arr);
    filter_free(f);
}

static void test_pushdown(void)
{
    struct filter *f = filter_new();
    struct filter_error err;
    struct filter_pushdown pd;
    struct cx_buf q;
    REQUIRE(f);
    REQUIRE_INT_EQ(filter_pushdown(f, "VirtualService", &pd), FILTER_OK);
    CHECK(pd.namespace == NULL);
    CHECK_INT_EQ(pd.nnamespaces, 0);
    CHECK_STR_EQ(pd.label_selector, "coxswain.dev/ignore!=true");
    CHECK_STR_EQ(pd.field_selector, "");

    REQUIRE_INT_EQ(filter_set_namespaces(f, NULL, "sys", &err), FILTER_OK);
    REQUIRE_INT_EQ(filter_set_label_selector(f, "ConfigMap", "app==web, tier notin (db)", &err),
                   FILTER_OK);
    REQUIRE_INT_EQ(filter_add_lock(f, "ConfigMap", "sys", "lock,1"), FILTER_OK);
    REQUIRE_INT_EQ(filter_add_lock(f, "ConfigMap", "other", "lock2"), FILTER_OK);
    REQUIRE_INT_EQ(filter_pushdown(f, "ConfigMap", &pd), FILTER_OK);
    CHECK_STR_EQ(pd.namespace, "sys");
    CHECK_INT_EQ(pd.nnamespaces, 1);
    CHECK_STR_EQ(pd.label_selector, "app=web,tier notin (db),coxswain.dev/ignore!=true");
    CHECK_STR_EQ(pd.field_selector, "metadata.name!=lock\\,1");
    cx_buf_init(&q, 0);
    REQUIRE_INT_EQ(filter_pushdown_query(&pd, &q), 0);
    CHECK_STR_EQ(q.data, "labelSelector=app%3Dweb%2Ctier%20notin%20%28db%29%2Ccoxswain.dev%2F"
                         "ignore%21%3Dtrue&fieldSelector=metadata.name%21%3Dlock%5C%2C1");
    cx_buf_free(&q);

    /* the pushed-down selectors are valid and mean what the filter means */
    struct filter_selector *sel = NULL;
    struct filter_field_selector *fs = NULL;
    REQUIRE_INT_EQ(filter_selector_parse(pd.label_selector, &sel, &err), FILTER_OK);
    REQUIRE_INT_EQ(filter_field_selector_parse(pd.field_selector, NULL, &fs, &err), FILTER_OK);
    const char *objs[] = {"{\"metadata\":{\"name\":\"lock,1\",\"namespace\":\"sys\","
                          "\"labels\":{\"app\":\"web\"}}}",
                          "{\"metadata\":{\"name\":\"c\",\"namespace\":\"sys\","
                          "\"labels\":{\"app\":\"web\"}}}",
                          "{\"metadata\":{\"name\":\"c\",\"namespace\":\"sys\","
                          "\"labels\":{\"app\":\"web\",\"coxswain.dev/ignore\":\"true\"}}}",
                          "{\"metadata\":{\"name\":\"c\",\"namespace\":\"sys\","
                          "\"labels\":{\"app\":\"web\",\"tier\":\"db\"}}}"};
    for (size_t i = 0; i < 4; i++) {
        cJSON *o = cJSON_Parse(objs[i]);
        int server = filter_selector_matches(sel, cx_json_path(o, "metadata", "labels", NULL)) &&
                     filter_field_selector_matches(fs, o);
        int client = filter_scope_check(f, "ConfigMap", o, NULL, NULL, NULL);
        CHECK_INT_EQ(server, client);
        cJSON_Delete(o);
    }
    filter_selector_free(sel);
    filter_field_selector_free(fs);

    /* several namespaces: no namespaced path, no lock name exclusion */
    REQUIRE_INT_EQ(filter_set_namespaces(f, NULL, "sys,app", &err), FILTER_OK);
    REQUIRE_INT_EQ(filter_pushdown(f, "ConfigMap", &pd), FILTER_OK);
    CHECK(pd.namespace == NULL);
    REQUIRE_INT_EQ(pd.nnamespaces, 2);
    CHECK_STR_EQ(pd.namespaces[0], "sys");
    CHECK_STR_EQ(pd.namespaces[1], "app");
    CHECK_STR_EQ(pd.field_selector, "");

    /* a kind's own namespace and field selector */
    REQUIRE_INT_EQ(filter_set_namespaces(f, "Secret", "certs", &err), FILTER_OK);
    REQUIRE_INT_EQ(filter_set_field_selector(f, "Secret", "type=kubernetes.io/tls", &err),
                   FILTER_OK);
    REQUIRE_INT_EQ(filter_pushdown(f, "Secret", &pd), FILTER_OK);
    CHECK_STR_EQ(pd.namespace, "certs");
    CHECK_STR_EQ(pd.field_selector, "type=kubernetes.io/tls");
    cx_buf_init(&q, 0);
    REQUIRE_INT_EQ(filter_pushdown_query(&pd, &q), 0);
    CHECK_STR_EQ(q.data, "labelSelector=coxswain.dev%2Fignore%21%3Dtrue&fieldSelector=type%3D"
                         "kubernetes.io%2Ftls");
    cx_buf_free(&q);
    filter_free(f);
}

static void test_flags_and_config_file(void)
{
    struct filter_flags ff;
    memset(&ff, 0, sizeof(ff));
    struct cx_flag table[FILTER_FLAGS_MAX + 1];
    char *config = NULL;
    size_t n = filter_flags_table(&ff, NULL, table, FILTER_FLAGS_MAX);
    REQUIRE_INT_EQ(n, 2 + 4 * 8);
    CHECK_STR_EQ(table[0].name, "watch-namespaces");
    CHECK_STR_EQ(table[1].name, "watch-namespace-selector");
    CHECK_STR_EQ(table[2].name, "gateway-namespaces");
    CHECK_STR_EQ(table[7].name, "virtualservice-namespace-selector");
    CHECK_STR_EQ(table[8].name, "virtualservice-label-selector");
    CHECK_STR_EQ(table[29].name, "secret-field-selector");
    CHECK_STR_CONTAINS(table[29].help, "type");
    table[n++] = (struct cx_flag){
        .name = "config", .type = CX_FLAG_STRING, .target = &config, .help = "config file"};

    /* config file (YAML) < environment < command line */
    char path[] = "/tmp/cx-filter-test-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    const char *yaml = "watch-namespaces: from-file\n"
                       "virtualservice-label-selector: \"team in (a, b)\"\n"
                       "secret-field-selector: type=kubernetes.io/tls\n";
    REQUIRE_INT_EQ(write(fd, yaml, strlen(yaml)), (long long)strlen(yaml));
    close(fd);
    setenv("COXSWAIN_WATCH_NAMESPACES", "from-env,other", 1);
    char cfgflag[64];
    snprintf(cfgflag, sizeof(cfgflag), "--config=%s", path);
    char *argv[] = {
        "daemon", cfgflag, "--configmap-namespaces", "sys", "--gateway-label-selector=!legacy",
        NULL};
    char msg[256];
    int prc = cx_flags_parse(table, n, 5, argv, msg, sizeof(msg));
    if (prc != 0)
        printf("# %s\n", msg);
    REQUIRE_INT_EQ(prc, 0);
    unsetenv("COXSWAIN_WATCH_NAMESPACES");
    unlink(path);

    struct filter *f = filter_new();
    struct filter_error err;
    REQUIRE(f);
    REQUIRE_INT_EQ(filter_apply_flags(f, &ff, &err), FILTER_OK);
    struct filter_pushdown pd;
    REQUIRE_INT_EQ(filter_pushdown(f, "VirtualService", &pd), FILTER_OK);
    REQUIRE_INT_EQ(pd.nnamespaces, 2);
    CHECK_STR_EQ(pd.namespaces[0], "from-env");
    CHECK_STR_EQ(pd.label_selector, "team in (a,b),coxswain.dev/ignore!=true");
    REQUIRE_INT_EQ(filter_pushdown(f, "ConfigMap", &pd), FILTER_OK);
    CHECK_STR_EQ(pd.namespace, "sys");
    REQUIRE_INT_EQ(filter_pushdown(f, "Secret", &pd), FILTER_OK);
    CHECK_STR_EQ(pd.field_selector, "type=kubernetes.io/tls");
    REQUIRE_INT_EQ(filter_pushdown(f, "Gateway", &pd), FILTER_OK);
    CHECK_STR_EQ(pd.label_selector, "!legacy,coxswain.dev/ignore!=true");
    filter_free(f);
    cx_flags_free(table, n);

    /* a bad value names its flag */
    memset(&ff, 0, sizeof(ff));
    n = filter_flags_table(&ff, NULL, table, FILTER_FLAGS_MAX);
    char *argv2[] = {"daemon", "--routetable-label-selector=a in b", NULL};
    REQUIRE_INT_EQ(cx_flags_parse(table, n, 2, argv2, msg, sizeof(msg)), 0);
    f = filter_new();
    CHECK_INT_EQ(filter_apply_flags(f, &ff, &err), FILTER_EINVAL);
    CHECK_STR_EQ(err.msg, "--routetable-label-selector: unable to parse requirement: found 'b' "
                          "expected: '('");
    filter_free(f);
    cx_flags_free(table, n);

    /* kind names must be alphanumeric and fit */
    const char *bad_kinds[] = {"Bad-Kind", NULL};
    CHECK_INT_EQ(filter_flags_table(&ff, bad_kinds, table, FILTER_FLAGS_MAX), 0);
    CHECK_INT_EQ(filter_flags_table(&ff, NULL, table, 5), 0);
}

static void test_names(void)
{
    for (int r = 0; r < FILTER_REASON_COUNT; r++) {
        CHECK(strcmp(filter_reason_name((enum filter_reason)r), "unknown") != 0);
        CHECK_INT_EQ(filter_reason_verdict((enum filter_reason)r),
                     r <= FILTER_R_STOPPED_MATCHING ? FILTER_PASS : FILTER_DROP);
    }
    CHECK_STR_EQ(filter_reason_name(FILTER_R_OUT_OF_SCOPE_NAMESPACE), "out-of-scope-namespace");
    CHECK_STR_EQ(filter_reason_name(FILTER_REASON_COUNT), "unknown");
    CHECK_STR_EQ(filter_verdict_name(FILTER_DROP), "drop");
}

/* Secrets and ConfigMaps are in scope only while referenced: the lock is
 * excluded before that question is asked, unreferenced objects are dropped,
 * a stored one that loses its last reference is deleted. */
static int refs_state; /* 1: "ca" and "www" are referenced */

static int is_referenced(void *user, const char *kind, const char *ns, const char *name)
{
    (void)user;
    (void)ns;
    return refs_state &&
           (strcmp(kind, "ConfigMap") == 0 ? strcmp(name, "ca") == 0 : strcmp(name, "www") == 0);
}

static struct filter_decision decide_ref(struct filter *f, enum filter_event_type t,
                                         const char *kind, const cJSON *o, const cJSON *old)
{
    struct filter_event ev = {.type = t,
                              .kind = kind,
                              .obj = o,
                              .old = old,
                              .referenced = is_referenced,
                              .ref_user_data = NULL};
    struct filter_decision d;
    if (filter_decide(f, &ev, &d) != FILTER_OK)
        d.reason = FILTER_REASON_COUNT;
    return d;
}

static void test_referenced_only(void)
{
    struct filter *f = filter_new();
    REQUIRE(f);
    REQUIRE_INT_EQ(filter_add_lock(f, "ConfigMap", "sys", "ca"), FILTER_OK);
    cJSON *ca = obj("ConfigMap", "app", "ca", NULL, "{\"data\":{\"ca.crt\":\"x\"}}");
    cJSON *lock = obj("ConfigMap", "sys", "ca", NULL, NULL);
    cJSON *other = obj("ConfigMap", "app", "other", NULL, NULL);
    cJSON *www = obj("Secret", "app", "www", NULL, "{\"type\":\"kubernetes.io/tls\"}");
    refs_state = 0;
    CHECK_DECISION(decide_ref(f, FILTER_EV_ADDED, "ConfigMap", ca, NULL), FILTER_DROP,
                   FILTER_R_UNREFERENCED, FILTER_STORE_NONE);
    CHECK_DECISION(decide_ref(f, FILTER_EV_ADDED, "Secret", www, NULL), FILTER_DROP,
                   FILTER_R_UNREFERENCED, FILTER_STORE_NONE);
    refs_state = 1;
    /* the lock is excluded as the lock, even with the name of a reference */
    CHECK_DECISION(decide_ref(f, FILTER_EV_MODIFIED, "ConfigMap", lock, NULL), FILTER_DROP,
                   FILTER_R_EXCLUDED_LOCK, FILTER_STORE_NONE);
    CHECK_DECISION(decide_ref(f, FILTER_EV_MODIFIED, "ConfigMap", ca, NULL), FILTER_PASS,
                   FILTER_R_STARTED_MATCHING, FILTER_STORE_ADD);
    CHECK_DECISION(decide_ref(f, FILTER_EV_MODIFIED, "ConfigMap", other, NULL), FILTER_DROP,
                   FILTER_R_UNREFERENCED, FILTER_STORE_NONE);
    CHECK_DECISION(decide_ref(f, FILTER_EV_ADDED, "Secret", www, NULL), FILTER_PASS, FILTER_R_ADDED,
                   FILTER_STORE_ADD);
    /* the last reference goes: the stored copy is deleted */
    refs_state = 0;
    CHECK_DECISION(decide_ref(f, FILTER_EV_MODIFIED, "ConfigMap", ca, ca), FILTER_PASS,
                   FILTER_R_STOPPED_MATCHING, FILTER_STORE_DELETE);
    /* a deletion of a stored object is a deletion, referenced or not */
    CHECK_DECISION(decide_ref(f, FILTER_EV_DELETED, "Secret", www, www), FILTER_PASS,
                   FILTER_R_DELETED, FILTER_STORE_DELETE);
    CHECK_INT_EQ(filter_count(f, "ConfigMap", FILTER_R_UNREFERENCED), 2);
    CHECK_INT_EQ(filter_count(f, "Secret", FILTER_R_UNREFERENCED), 1);
    CHECK_STR_EQ(filter_reason_name(FILTER_R_UNREFERENCED), "unreferenced");
    cJSON_Delete(ca);
    cJSON_Delete(lock);
    cJSON_Delete(other);
    cJSON_Delete(www);
    filter_free(f);
}

/* Which of |pd|'s watches select |o| server-side (namespace path + field
 * selector; labels aside): a bit per watch. */
static unsigned watches_selecting(const struct filter_pushdown *pd, const cJSON *o)
{
    unsigned bits = 0;
    const char *ns = cx_json_path_str(o, "metadata", "namespace", (char *)NULL);
    for (size_t i = 0; i < pd->nwatches; i++) {
        const struct filter_watch *w = &pd->watches[i];
        if (w->namespace[0] && strcmp(w->namespace, ns) != 0)
            continue;
        struct filter_field_selector *fs = NULL;
        struct filter_error err;
        if (filter_field_selector_parse(w->field_selector, NULL, &fs, &err) != FILTER_OK) {
            cxt_fail(__FILE__, __LINE__, 0, "bad field selector %s: %s", w->field_selector,
                     err.msg);
            continue;
        }
        if (filter_field_selector_matches(fs, o))
            bits |= 1u << i;
        filter_field_selector_free(fs);
    }
    return bits;
}

/* The watches of every scope never carry a lock, cover the scope once, and
 * agree with the client-side check (a namespace selector aside, which the
 * server cannot apply: there they cover every namespace). */
static void check_watches_cover(struct filter *f, const char *kind, int selector)
{
    struct filter_pushdown pd;
    REQUIRE_INT_EQ(filter_pushdown(f, kind, &pd), FILTER_OK);
    REQUIRE(pd.nwatches >= 1 && pd.nwatches < 8);
    static const char *const nss[] = {"sys", "other", "app", "x"};
    static const char *const names[] = {"lock,1", "lock2", "c", "lock"};
    for (size_t i = 0; i < 4; i++)
        for (size_t j = 0; j < 4; j++) {
            char buf[256];
            snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"}}",
                     names[j], nss[i]);
            cJSON *o = cJSON_Parse(buf);
            REQUIRE(o);
            unsigned bits = watches_selecting(&pd, o);
            enum filter_reason why = FILTER_R_ADDED;
            int client = filter_scope_check(f, kind, o, NULL, NULL, &why);
            if (why == FILTER_R_EXCLUDED_LOCK && bits)
                cxt_fail(__FILE__, __LINE__, 0, "%s: lock %s/%s carried by watch bits %x", kind,
                         nss[i], names[j], bits);
            if (bits & (bits - 1))
                cxt_fail(__FILE__, __LINE__, 0, "%s: %s/%s carried twice (%x)", kind, nss[i],
                         names[j], bits);
            int server = bits != 0;
            if (selector ? (why != FILTER_R_EXCLUDED_LOCK) != server : client != server)
                cxt_fail(__FILE__, __LINE__, 0, "%s: %s/%s server %d client %d (%s)", kind, nss[i],
                         names[j], server, client, filter_reason_name(why));
            cJSON_Delete(o);
        }
}

static void test_pushdown_watches(void)
{
    struct filter *f = filter_new();
    struct filter_error err;
    struct filter_pushdown pd;
    REQUIRE(f);
    REQUIRE_INT_EQ(filter_add_lock(f, "ConfigMap", "sys", "lock,1"), FILTER_OK);
    REQUIRE_INT_EQ(filter_add_lock(f, "ConfigMap", "other", "lock2"), FILTER_OK);
    REQUIRE_INT_EQ(filter_add_lock(f, "ConfigMap", "sys", "lock"), FILTER_OK);
    REQUIRE_INT_EQ(filter_add_lock(f, "Lease", "app", "c"), FILTER_OK);

    /* every namespace: all but the lock namespaces, then each of those */
    REQUIRE_INT_EQ(filter_pushdown(f, "ConfigMap", &pd), FILTER_OK);
    REQUIRE_INT_EQ(pd.nwatches, 3);
    CHECK_STR_EQ(pd.watches[0].namespace, "");
    CHECK_STR_EQ(pd.watches[0].field_selector, "metadata.namespace!=sys,metadata.namespace!=other");
    CHECK_STR_EQ(pd.watches[1].namespace, "sys");
    CHECK_STR_EQ(pd.watches[1].field_selector, "metadata.name!=lock\\,1,metadata.name!=lock");
    CHECK_STR_EQ(pd.watches[2].namespace, "other");
    CHECK_STR_EQ(pd.watches[2].field_selector, "metadata.name!=lock2");
    check_watches_cover(f, "ConfigMap", 0);
    /* a kind without a lock: one watch, nothing added */
    REQUIRE_INT_EQ(filter_pushdown(f, "Secret", &pd), FILTER_OK);
    REQUIRE_INT_EQ(pd.nwatches, 1);
    CHECK_STR_EQ(pd.watches[0].namespace, "");
    CHECK_STR_EQ(pd.watches[0].field_selector, "");
    REQUIRE_INT_EQ(filter_pushdown(f, "Lease", &pd), FILTER_OK);
    REQUIRE_INT_EQ(pd.nwatches, 2);
    CHECK_STR_EQ(pd.watches[0].field_selector, "metadata.namespace!=app");
    CHECK_STR_EQ(pd.watches[1].field_selector, "metadata.name!=c");
    check_watches_cover(f, "Lease", 0);

    /* the kind's own field selector is ANDed to each */
    REQUIRE_INT_EQ(filter_set_field_selector(f, "ConfigMap", "metadata.name!=skip", &err),
                   FILTER_OK);
    REQUIRE_INT_EQ(filter_pushdown(f, "ConfigMap", &pd), FILTER_OK);
    REQUIRE_INT_EQ(pd.nwatches, 3);
    CHECK_STR_EQ(pd.watches[0].field_selector,
                 "metadata.name!=skip,metadata.namespace!=sys,metadata.namespace!=other");
    CHECK_STR_EQ(pd.watches[2].field_selector, "metadata.name!=skip,metadata.name!=lock2");
    check_watches_cover(f, "ConfigMap", 0);
    REQUIRE_INT_EQ(filter_set_field_selector(f, "ConfigMap", "", &err), FILTER_OK);

    /* a namespace selector: the server cannot apply it, same watches */
    REQUIRE_INT_EQ(filter_set_namespace_selector(f, NULL, "team=gw", &err), FILTER_OK);
    REQUIRE_INT_EQ(filter_pushdown(f, "ConfigMap", &pd), FILTER_OK);
    REQUIRE_INT_EQ(pd.nwatches, 3);
    CHECK_STR_EQ(pd.watches[0].namespace, "");
    check_watches_cover(f, "ConfigMap", 1);
    REQUIRE_INT_EQ(filter_set_namespace_selector(f, NULL, "", &err), FILTER_OK);

    /* a namespace list: one watch each, the locks' names where they live */
    REQUIRE_INT_EQ(filter_set_namespaces(f, NULL, "app,sys,x", &err), FILTER_OK);
    REQUIRE_INT_EQ(filter_pushdown(f, "ConfigMap", &pd), FILTER_OK);
    REQUIRE_INT_EQ(pd.nwatches, 3);
    CHECK_STR_EQ(pd.watches[0].namespace, "app");
    CHECK_STR_EQ(pd.watches[0].field_selector, "");
    CHECK_STR_EQ(pd.watches[1].namespace, "sys");
    CHECK_STR_EQ(pd.watches[1].field_selector, "metadata.name!=lock\\,1,metadata.name!=lock");
    CHECK_STR_EQ(pd.watches[2].namespace, "x");
    check_watches_cover(f, "ConfigMap", 0);
    /* one namespace */
    REQUIRE_INT_EQ(filter_set_namespaces(f, NULL, "other", &err), FILTER_OK);
    REQUIRE_INT_EQ(filter_pushdown(f, "ConfigMap", &pd), FILTER_OK);
    REQUIRE_INT_EQ(pd.nwatches, 1);
    CHECK_STR_EQ(pd.watches[0].namespace, "other");
    CHECK_STR_EQ(pd.watches[0].field_selector, pd.field_selector);
    check_watches_cover(f, "ConfigMap", 0);
    filter_free(f);
}

/* ---- objects kept decoded (struct filter_object) ------------------------------ */

static const char *labels_of(const void *labels, const char *key)
{
    return cx_json_str(labels, key);
}

/* The same event decided from |o|'s JSON and from its decoded form (a
 * stored copy |old| given as JSON, or as its digest alone): same verdict. */
static void check_both_ways(struct filter *f, enum filter_event_type t, const char *kind,
                            const cJSON *o, const cJSON *old)
{
    struct filter_decision dj, dr;
    struct filter_event ej = {.type = t, .kind = kind, .obj = o, .old = old};
    REQUIRE_INT_EQ(filter_decide(f, &ej, &dj), FILTER_OK);
    struct cx_buf b;
    cx_buf_init(&b, 0);
    uint64_t dg = 0, odg = 0;
    REQUIRE_INT_EQ(filter_digest(o, &b, &dg), 0);
    if (old)
        REQUIRE_INT_EQ(filter_digest(old, &b, &odg), 0);
    cx_buf_free(&b);
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(o, "metadata");
    const char *ns = cx_json_str(md, "namespace");
    struct filter_object fo = {.ns = ns ? ns : "",
                               .name = cx_json_str(md, "name"),
                               .label = labels_of,
                               .label_user_data = cJSON_GetObjectItemCaseSensitive(md, "labels"),
                               .digest = dg};
    struct filter_event er = {
        .type = t, .kind = kind, .fobj = &fo, .old_digest = old ? &odg : NULL};
    REQUIRE_INT_EQ(filter_decide(f, &er, &dr), FILTER_OK);
    CHECK_STR_EQ(filter_reason_name(dr.reason), filter_reason_name(dj.reason));
    CHECK_INT_EQ(dr.verdict, dj.verdict);
    CHECK_INT_EQ(dr.action, dj.action);
    CHECK_INT_EQ(dr.has_digest, dj.has_digest);
    if (dj.has_digest)
        CHECK(dr.digest == dj.digest);
}

static void test_decoded_objects_decide_as_their_json(void)
{
    struct filter *f = filter_new();
    struct filter_error err;
    REQUIRE(f);
    REQUIRE_INT_EQ(filter_set_label_selector(f, "VirtualService", "team in (a,b)", &err),
                   FILTER_OK);
    REQUIRE_INT_EQ(filter_set_field_selector(f, "VirtualService", "metadata.name!=skip", &err),
                   FILTER_OK);
    REQUIRE_INT_EQ(filter_set_field_selector(f, "Upstream", "metadata.namespace=n", &err),
                   FILTER_OK);
    REQUIRE_INT_EQ(filter_add_lock(f, "VirtualService", "n", "lock"), FILTER_OK);
    cJSON *a = obj("VirtualService", "n", "v", "{\"team\":\"a\"}", "{\"spec\":{\"x\":1}}");
    cJSON *a2 = obj("VirtualService", "n", "v", "{\"team\":\"a\"}", "{\"spec\":{\"x\":2}}");
    cJSON *a_rv = obj("VirtualService", "n", "v", "{\"team\":\"a\"}", "{\"spec\":{\"x\":1}}");
    set_rv(a_rv, "9");
    cJSON *c = obj("VirtualService", "n", "v", "{\"team\":\"c\"}", NULL);
    cJSON *skip = obj("VirtualService", "n", "skip", "{\"team\":\"a\"}", NULL);
    cJSON *lock = obj("VirtualService", "n", "lock", "{\"team\":\"a\"}", NULL);
    cJSON *ign =
        obj("VirtualService", "n", "i", "{\"team\":\"a\",\"coxswain.dev/ignore\":\"true\"}", NULL);
    cJSON *up = obj("Upstream", "n", "u", NULL, NULL);
    cJSON *up_m = obj("Upstream", "m", "u", NULL, NULL);
    check_both_ways(f, FILTER_EV_ADDED, "VirtualService", a, NULL);
    check_both_ways(f, FILTER_EV_MODIFIED, "VirtualService", a_rv, a); /* insignificant */
    check_both_ways(f, FILTER_EV_MODIFIED, "VirtualService", a2, a);   /* changed */
    check_both_ways(f, FILTER_EV_MODIFIED, "VirtualService", c, a);    /* stopped matching */
    check_both_ways(f, FILTER_EV_MODIFIED, "VirtualService", a, NULL); /* started matching */
    check_both_ways(f, FILTER_EV_ADDED, "VirtualService", c, NULL);
    check_both_ways(f, FILTER_EV_ADDED, "VirtualService", skip, NULL);
    check_both_ways(f, FILTER_EV_ADDED, "VirtualService", lock, NULL);
    check_both_ways(f, FILTER_EV_ADDED, "VirtualService", ign, NULL);
    check_both_ways(f, FILTER_EV_DELETED, "VirtualService", a, a);
    check_both_ways(f, FILTER_EV_DELETED, "VirtualService", a, NULL);
    check_both_ways(f, FILTER_EV_ADDED, "Upstream", up, NULL);
    check_both_ways(f, FILTER_EV_ADDED, "Upstream", up_m, NULL);
    /* what the two ways decided, counted twice each */
    CHECK_INT_EQ(filter_count(f, "VirtualService", FILTER_R_INSIGNIFICANT), 2);
    CHECK_INT_EQ(filter_count(f, "VirtualService", FILTER_R_FIELD_MISMATCH), 2);
    CHECK_INT_EQ(filter_count(f, "VirtualService", FILTER_R_EXCLUDED_LOCK), 2);
    CHECK_INT_EQ(filter_count(f, "VirtualService", FILTER_R_IGNORED_LABEL), 2);
    CHECK_INT_EQ(filter_count(f, "Upstream", FILTER_R_FIELD_MISMATCH), 2);
    cJSON *all[] = {a, a2, a_rv, c, skip, lock, ign, up, up_m};
    for (size_t i = 0; i < sizeof(all) / sizeof(*all); i++)
        cJSON_Delete(all[i]);
    filter_free(f);
}

static const struct cxt_case cases[] = {
    CXT(test_decoded_objects_decide_as_their_json),
    CXT(test_add_modify_delete_cycle),
    CXT(test_lock_exclusion),
    CXT(test_ignore_label),
    CXT(test_namespace_list),
    CXT(test_namespace_selector),
    CXT(test_label_and_field_selectors),
    CXT(test_malformed),
    CXT(test_pushdown),
    CXT(test_pushdown_watches),
    CXT(test_flags_and_config_file),
    CXT(test_names),
    CXT(test_referenced_only),
};
CXT_MAIN(cases)
