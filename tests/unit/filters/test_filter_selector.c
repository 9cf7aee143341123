/* Label and field selectors: every grammar element, canonical forms,
 * matching (including the "!=/notin match objects without the key" rule),
 * and invalid selectors with Kubernetes' exact messages. */
#include "cxtest.h"
#include "filter_selector.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Kubernetes' validation messages (apimachinery v1.20-v1.33). */
#define QN                                                                                      \
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an " \
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "      \
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
#define LV                                                                                   \
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' " \
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "    \
    "'my_value',  or '12345', regex used for validation is "                                 \
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
#define DNS                                                                                   \
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' " \
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "     \
    "regex used for validation is "                                                           \
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
#define URP "unable to parse requirement: "

static char *canon(const char *s)
{
    struct filter_selector *sel = NULL;
    struct filter_error err;
    if (filter_selector_parse(s, &sel, &err) != FILTER_OK) {
        printf("# parse(%s): %s\n", s, err.msg);
        return NULL;
    }
    struct cx_buf b;
    cx_buf_init(&b, 0);
    char *r = NULL;
    if (filter_selector_string(sel, &b) == 0)
        r = cx_buf_steal(&b, NULL);
    cx_buf_free(&b);
    filter_selector_free(sel);
    return r;
}

static void test_valid_canonical(void)
{
    static const struct {
        const char *in, *canon;
        size_t nreq;
    } t[] = {
        {"", "", 0},
        {"   \t ", "", 0},
        {"x", "x", 1},
        {"!x", "!x", 1},
        {"x=a", "x=a", 1},
        {"x==a", "x=a", 1},
        {"x!=a", "x!=a", 1},
        {"x=", "x=", 1},
        {"x!=", "x!=", 1},
        {"x in (b,a)", "x in (a,b)", 1},
        {"x notin (a)", "x notin (a)", 1},
        {"x in ()", "x in ()", 1},
        {"x in (,a)", "x in (,a)", 1},
        {"x in (a,)", "x in (,a)", 1},
        {"x in (a,,b)", "x in (,a,b)", 1},
        {"x in (b,a,b)", "x in (a,b)", 1},
        {"x>5", "x>5", 1},
        {"x<10", "x<10", 1},
        {"x > 007", "x>007", 1},
        {" y = b , x in ( a ) ", "x in (a),y=b", 2},
        {"x\t=\na", "x=a", 1},
        {"in in (in)", "in in (in)", 1},
        {"notin notin (notin,in)", "notin notin (in,notin)", 1},
        {"x=in", "x=in", 1},
        {"x=a,x=a", "x=a", 2},
        {"x==a,x=a", "x=a", 2},
        {"example.com/x=a,a.b/c", "a.b/c,example.com/x=a", 2},
        {"y,!x", "!x,y", 2},
        {"x=a,!y,z notin (q)", "x=a,!y,z notin (q)", 3},
        {"x!=a,x", "x,x!=a", 2},
        {"A.b-c_d=E.f-g_h", "A.b-c_d=E.f-g_h", 1},
        {"a1", "a1", 1},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        if (!t[i].canon)
            continue;
        char *c = canon(t[i].in);
        CHECK_STR_EQ(c, t[i].canon);
        /* canonical form is a fixed point */
        char *c2 = c ? canon(c) : NULL;
        CHECK_STR_EQ(c2, t[i].canon);
        struct filter_selector *sel = NULL;
        REQUIRE_INT_EQ(filter_selector_parse(t[i].in, &sel, NULL), FILTER_OK);
        CHECK_INT_EQ(filter_selector_count(sel), t[i].nreq);
        CHECK_INT_EQ(filter_selector_is_everything(sel), t[i].nreq == 0);
        filter_selector_free(sel);
        free(c);
        free(c2);
    }
}

static void test_operators_introspection(void)
{
    struct filter_selector *sel = NULL;
    REQUIRE_INT_EQ(
        filter_selector_parse("k in (b,a),!n,e,q==1,r!=2,g>3,l<4,s=5,t notin (x)", &sel, NULL),
        FILTER_OK);
    REQUIRE_INT_EQ(filter_selector_count(sel), 9);
    /* sorted by key: e g k l n q r s t */
    static const struct {
        const char *key;
        enum filter_op op;
        size_t nv;
    } want[] = {
        {"e", FILTER_OP_EXISTS, 0},     {"g", FILTER_OP_GT, 1},
        {"k", FILTER_OP_IN, 2},         {"l", FILTER_OP_LT, 1},
        {"n", FILTER_OP_NOT_EXISTS, 0}, {"q", FILTER_OP_DOUBLE_EQUALS, 1},
        {"r", FILTER_OP_NOT_EQUALS, 1}, {"s", FILTER_OP_EQUALS, 1},
        {"t", FILTER_OP_NOT_IN, 1},
    };
    for (size_t i = 0; i < 9; i++) {
        const char *key;
        enum filter_op op;
        const char *const *vals;
        size_t nv;
        REQUIRE_INT_EQ(filter_selector_get(sel, i, &key, &op, &vals, &nv), 0);
        CHECK_STR_EQ(key, want[i].key);
        CHECK_INT_EQ(op, want[i].op);
        CHECK_INT_EQ(nv, want[i].nv);
        if (want[i].op == FILTER_OP_IN) {
            CHECK_STR_EQ(vals[0], "a");
            CHECK_STR_EQ(vals[1], "b");
        }
    }
    CHECK_INT_EQ(filter_selector_get(sel, 9, NULL, NULL, NULL, NULL), -1);
    filter_selector_free(sel);
}

static int matches(const char *sel_s, const char *labels_json)
{
    struct filter_selector *sel = NULL;
    struct filter_error err;
    if (filter_selector_parse(sel_s, &sel, &err) != FILTER_OK) {
        printf("# parse(%s): %s\n", sel_s, err.msg);
        return -1;
    }
    cJSON *labels = labels_json ? cJSON_Parse(labels_json) : NULL;
    int m = filter_selector_matches(sel, labels);
    cJSON_Delete(labels);
    filter_selector_free(sel);
    return m;
}

static void test_matching(void)
{
    static const struct {
        const char *sel, *labels;
        int want;
    } t[] = {
        {"", NULL, 1},
        {"", "{\"a\":\"b\"}", 1},
        /* exists / does not exist */
        {"a", "{\"a\":\"\"}", 1},
        {"a", "{\"b\":\"x\"}", 0},
        {"a", NULL, 0},
        {"!a", NULL, 1},
        {"!a", "{\"a\":\"x\"}", 0},
        {"!a", "{\"ab\":\"x\"}", 1},
        /* equality */
        {"a=b", "{\"a\":\"b\"}", 1},
        {"a==b", "{\"a\":\"b\"}", 1},
        {"a=b", "{\"a\":\"B\"}", 0},
        {"a=b", "{\"a\":\"bb\"}", 0},
        {"a=b", NULL, 0},
        {"a=", "{\"a\":\"\"}", 1},
        {"a=", NULL, 0},
        /* != matches objects without the key */
        {"a!=b", NULL, 1},
        {"a!=b", "{\"a\":\"c\"}", 1},
        {"a!=b", "{\"a\":\"b\"}", 0},
        {"a!=", "{\"a\":\"\"}", 0},
        /* in / notin */
        {"a in (x,y)", "{\"a\":\"y\"}", 1},
        {"a in (x,y)", "{\"a\":\"z\"}", 0},
        {"a in (x,y)", NULL, 0},
        {"a in ()", "{\"a\":\"\"}", 1},
        {"a in (,x)", "{\"a\":\"\"}", 1},
        {"a notin (x,y)", NULL, 1},
        {"a notin (x,y)", "{\"a\":\"z\"}", 1},
        {"a notin (x,y)", "{\"a\":\"x\"}", 0},
        {"a in (v1,v2,v3,v4,v5,v6,v7,v8,v9,v10,v11)", "{\"a\":\"v9\"}", 1},
        {"a in (v1,v2,v3,v4,v5,v6,v7,v8,v9,v10,v11)", "{\"a\":\"v12\"}", 0},
        {"a notin (v1,v2,v3,v4,v5,v6,v7,v8,v9,v10,v11)", "{\"a\":\"v10\"}", 0},
        /* gt / lt: integers only, missing key never matches */
        {"n>5", "{\"n\":\"6\"}", 1},
        {"n>5", "{\"n\":\"5\"}", 0},
        {"n>5", "{\"n\":\"x\"}", 0},
        {"n>5", NULL, 0},
        {"n<5", "{\"n\":\"-7\"}", 1},
        {"n<5", "{\"n\":\"10\"}", 0},
        {"n>-1", NULL, -1}, /* invalid: "-1" is not a label value */
        /* comma = AND */
        {"a=b,c", "{\"a\":\"b\",\"c\":\"\"}", 1},
        {"a=b,c", "{\"a\":\"b\"}", 0},
        {"a=b,!c", "{\"a\":\"b\"}", 1},
        {"a=b,a!=b", "{\"a\":\"b\"}", 0},
        /* non-string label values count as absent */
        {"a", "{\"a\":1}", 0},
        {"a!=1", "{\"a\":1}", 1},
        /* prefixed keys */
        {"app.kubernetes.io/name=web", "{\"app.kubernetes.io/name\":\"web\"}", 1},
        {"app.kubernetes.io/name=web", "{\"name\":\"web\"}", 0},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        int m = matches(t[i].sel, t[i].labels);
        if (m != t[i].want)
            printf("# case %zu: %s on %s\n", i, t[i].sel, t[i].labels ? t[i].labels : "none");
        CHECK_INT_EQ(m, t[i].want);
    }
}

static const char *kv_get(void *ud, const char *key)
{
    const char *const *kv = ud;
    for (; kv[0]; kv += 2)
        if (strcmp(kv[0], key) == 0)
            return kv[1];
    return NULL;
}

static void test_matching_callback_and_nulls(void)
{
    struct filter_selector *sel = NULL;
    REQUIRE_INT_EQ(filter_selector_parse("a=b,c notin (d)", &sel, NULL), FILTER_OK);
    const char *yes[] = {"a", "b", "c", "e", NULL};
    const char *no[] = {"a", "b", "c", "d", NULL};
    CHECK_INT_EQ(filter_selector_matches_fn(sel, kv_get, yes), 1);
    CHECK_INT_EQ(filter_selector_matches_fn(sel, kv_get, no), 0);
    filter_selector_free(sel);
    /* a NULL selector matches everything */
    CHECK_INT_EQ(filter_selector_matches(NULL, NULL), 1);
    CHECK_INT_EQ(filter_selector_is_everything(NULL), 1);
}

struct bad {
    const char *in;
    const char *msg;
    size_t off;
};

static void check_bad(const struct bad *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct filter_selector *sel = (struct filter_selector *)1;
        struct filter_error err;
        memset(&err, 0, sizeof(err));
        int rc = filter_selector_parse(t[i].in, &sel, &err);
        CHECK_INT_EQ(rc, FILTER_EINVAL);
        CHECK(sel == NULL);
        if (strcmp(err.msg, t[i].msg) != 0)
            printf("# selector %zu: %s\n", i, t[i].in);
        CHECK_STR_EQ(err.msg, t[i].msg);
        if (t[i].off != (size_t)-1)
            CHECK_INT_EQ(err.offset, t[i].off);
        if (rc == FILTER_OK)
            filter_selector_free(sel);
    }
}

#define ANY ((size_t)-1)

static void test_invalid_syntax(void)
{
    static const struct bad t[] = {
        {"x=a,", "found '', expected: identifier after ','", 4},
        {",x", "found ',', expected: !, identifier, or 'end of string'", 0},
        {"(x)", "found '(', expected: !, identifier, or 'end of string'", 0},
        {"!=a", "found '!=', expected: !, identifier, or 'end of string'", 0},
        {"x=a,,y", "found ',', expected: identifier after ','", 4},
        {"x in (a),", "found '', expected: identifier after ','", 9},
        {"x=a b", "found 'b', expected: ',' or 'end of string'", 4},
        {"x==a=b", "found '=', expected: ',' or 'end of string'", 4},
        {"!x=a", "found '=', expected: ',' or 'end of string'", 2},
        {"x in (a)(", "found '(', expected: ',' or 'end of string'", 8},
        {"x y", URP "found 'y', expected: in, notin, =, ==, !=, gt, lt", 2},
        {"x!", URP "found '!', expected: in, notin, =, ==, !=, gt, lt", 1},
        {"x (", URP "found '(', expected: in, notin, =, ==, !=, gt, lt", 2},
        {"x in", URP "found '' expected: '('", 4},
        {"x notin", URP "found '' expected: '('", 7},
        {"x in a", URP "found 'a' expected: '('", 5},
        {"x in (a", URP "found '', expected: ',' or ')'", 7},
        {"x in (a,b", URP "found '', expected: ',' or ')'", 9},
        {"x in (a b)", URP "found 'b', expected: ',' or ')'", 8},
        {"x in (=)", URP "found '=', expected: ',', ')' or identifier", 6},
        {"x in (a,=)", URP "found '=', expected: ',', or identifier", 8},
        {"x=(", URP "found '(', expected: identifier", 2},
        {"x===a", URP "found '=', expected: identifier", 3},
        {"!", URP "found '', expected: identifier", 1},
        {"!!x", URP "found '!', expected: identifier", 1},
        {"x=a,!", URP "found '', expected: identifier", 5},
        {"!,", URP "found ',', expected: identifier", 1},
    };
    check_bad(t, sizeof(t) / sizeof(t[0]));
}

static void test_invalid_keys_and_values(void)
{
    char long_name[80], long_prefix[300], long_val[100], bad_long[80];
    memset(long_name, 'a', 64);
    long_name[64] = '\0';
    memset(long_prefix, 'a', 254);
    memcpy(long_prefix + 254, "/x", 3);
    snprintf(long_val, sizeof(long_val), "x=%s", long_name);
    char msg_long_name[200], msg_long_prefix[600], msg_long_val[300];
    snprintf(msg_long_name, sizeof(msg_long_name),
             URP "<nil>: Invalid value: \"%s\": name part must be no more than 63 characters",
             long_name);
    snprintf(msg_long_prefix, sizeof(msg_long_prefix),
             URP "<nil>: Invalid value: \"%s\": prefix part must be no more than 253 characters",
             long_prefix);
    snprintf(msg_long_val, sizeof(msg_long_val),
             URP "values[0][x]: Invalid value: \"%s\": must be no more than 63 characters",
             long_name);
    /* both errors of a too long, badly formed value, joined with "; " */
    memset(bad_long, 'b', 70);
    bad_long[70] = '\0';
    char bad_long_sel[120], msg_bad_long[1200];
    snprintf(bad_long_sel, sizeof(bad_long_sel), "x=%s-", bad_long);
    snprintf(msg_bad_long, sizeof(msg_bad_long),
             URP "values[0][x]: Invalid value: \"%s-\": must be no more than 63 characters; " LV,
             bad_long);

    const struct bad t[] = {
        {"a/b/c",
         URP "<nil>: Invalid value: \"a/b/c\": a qualified name " QN
             " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
         0},
        {"/x", URP "<nil>: Invalid value: \"/x\": prefix part must be non-empty", 0},
        {"x/", URP "<nil>: Invalid value: \"x/\": name part must be non-empty; name part " QN, 0},
        {"Ex.com/x", URP "<nil>: Invalid value: \"Ex.com/x\": prefix part " DNS, 0},
        {"a..b/x", URP "<nil>: Invalid value: \"a..b/x\": prefix part " DNS, 0},
        {"-x", URP "<nil>: Invalid value: \"-x\": name part " QN, 0},
        {"x_", URP "<nil>: Invalid value: \"x_\": name part " QN, 0},
        {"y=1,x_=1", URP "<nil>: Invalid value: \"x_\": name part " QN, 4},
        {"k\xc3\xa9", URP "<nil>: Invalid value: \"k\xc3\xa9\": name part " QN, 0},
        {"k\x01", URP "<nil>: Invalid value: \"k\\x01\": name part " QN, 0},
        {long_name, msg_long_name, 0},
        {long_prefix, msg_long_prefix, 0},
        {"x=a$", URP "values[0][x]: Invalid value: \"a$\": " LV, 2},
        {"x=\"a\"", URP "values[0][x]: Invalid value: \"\\\"a\\\"\": " LV, 2},
        {"x=a\\b", URP "values[0][x]: Invalid value: \"a\\\\b\": " LV, 2},
        {long_val, msg_long_val, 2},
        {bad_long_sel, msg_bad_long, 2},
        {"x in (b$,a$)",
         URP "[values[0][x]: Invalid value: \"a$\": " LV
             ", values[1][x]: Invalid value: \"b$\": " LV "]",
         9},
        {"x notin (ok,-bad)", URP "values[0][x]: Invalid value: \"-bad\": " LV, 12},
        {"x>a",
         URP "values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an "
             "integer",
         2},
        {"x<",
         URP "values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an "
             "integer",
         2},
        {"x>1.5",
         URP "values[0]: Invalid value: \"1.5\": for 'Gt', 'Lt' operators, the value must "
             "be an integer",
         2},
        {"x>99999999999999999999",
         URP "values[0]: Invalid value: \"99999999999999999999\": for 'Gt', 'Lt' operators, the "
             "value must be an integer",
         2},
        {"x>-1", URP "values[0][x]: Invalid value: \"-1\": " LV, 2},
        {"x>a_",
         URP "[values[0]: Invalid value: \"a_\": for 'Gt', 'Lt' operators, the value must be an "
             "integer, values[0][x]: Invalid value: \"a_\": " LV "]",
         2},
    };
    check_bad(t, sizeof(t) / sizeof(t[0]));
}

static void test_too_long(void)
{
    size_t n = FILTER_SELECTOR_MAX_BYTES + 10;
    char *s = malloc(n + 1);
    REQUIRE(s);
    memset(s, 'a', n);
    s[n] = '\0';
    struct filter_selector *sel = NULL;
    struct filter_error err;
    CHECK_INT_EQ(filter_selector_parse(s, &sel, &err), FILTER_EINVAL);
    CHECK_STR_EQ(err.msg, "selector is longer than 65536 bytes");
    /* a huge but acceptable list of values parses, and its key error
     * message is truncated safely */
    free(s);
}

static char *json_err(const char *json, int want_rc)
{
    cJSON *j = cJSON_Parse(json);
    if (!j && strcmp(json, "null") != 0)
        return strdup("bad test json");
    struct filter_selector *sel = NULL;
    struct filter_error err;
    memset(&err, 0, sizeof(err));
    int rc = filter_selector_from_json(j, &sel, &err);
    cJSON_Delete(j);
    if (rc != want_rc) {
        filter_selector_free(sel);
        return strdup("unexpected rc");
    }
    if (rc == FILTER_OK) {
        struct cx_buf b;
        cx_buf_init(&b, 0);
        char *r = filter_selector_string(sel, &b) == 0 ? cx_buf_steal(&b, NULL) : NULL;
        cx_buf_free(&b);
        filter_selector_free(sel);
        return r;
    }
    return strdup(err.msg);
}

static void test_json_selector(void)
{
    static const struct {
        const char *json;
        int rc;
        const char *want; /* canonical form or error */
    } t[] = {
        {"{}", FILTER_OK, ""},
        {"{\"matchLabels\":{\"b\":\"2\",\"a\":\"1\"}}", FILTER_OK, "a=1,b=2"},
        {"{\"matchLabels\":null,\"matchExpressions\":null}", FILTER_OK, ""},
        {"{\"matchExpressions\":[{\"key\":\"t\",\"operator\":\"In\",\"values\":[\"y\",\"x\"]},"
         "{\"key\":\"u\",\"operator\":\"NotIn\",\"values\":[\"z\"]},"
         "{\"key\":\"e\",\"operator\":\"Exists\"},{\"key\":\"d\",\"operator\":\"DoesNotExist\","
         "\"values\":[]}],\"matchLabels\":{\"a\":\"\"}}",
         FILTER_OK, "a=,!d,e,t in (x,y),u notin (z)"},
        {"{\"matchExpressions\":[{\"key\":\"x\",\"operator\":\"In\"}]}", FILTER_EINVAL,
         "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"},
        {"{\"matchExpressions\":[{\"key\":\"x\",\"operator\":\"NotIn\",\"values\":[]}]}",
         FILTER_EINVAL,
         "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"},
        {"{\"matchExpressions\":[{\"key\":\"x\",\"operator\":\"Exists\",\"values\":[\"a\"]}]}",
         FILTER_EINVAL,
         "values: Invalid value: [\"a\"]: values set must be empty for exists and does not exist"},
        {"{\"matchExpressions\":[{\"key\":\"x\",\"operator\":\"Foo\"}]}", FILTER_EINVAL,
         "\"Foo\" is not a valid label selector operator"},
        {"{\"matchExpressions\":[{\"key\":\"x\",\"operator\":\"in\",\"values\":[\"a\"]}]}",
         FILTER_EINVAL, "\"in\" is not a valid label selector operator"},
        {"{\"matchLabels\":{\"a/b/c\":\"x\"}}", FILTER_EINVAL,
         "key: Invalid value: \"a/b/c\": a qualified name " QN
         " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"},
        {"{\"matchLabels\":{\"x\":\"a b\"}}", FILTER_EINVAL,
         "values[0][x]: Invalid value: \"a b\": " LV},
        {"{\"matchLabels\":{\"-x\":\"-\"}}", FILTER_EINVAL,
         "[key: Invalid value: \"-x\": name part " QN ", values[0][-x]: Invalid value: \"-\": " LV
         "]"},
        {"{\"matchExpressions\":[{\"key\":\"x\",\"operator\":\"In\",\"values\":[\"ok\",\"b c\"]}]}",
         FILTER_EINVAL, "values[1][x]: Invalid value: \"b c\": " LV},
        {"{\"matchLabels\":{\"x\":1}}", FILTER_EINVAL, "matchLabels[x]: must be a string"},
        {"{\"matchLabels\":[]}", FILTER_EINVAL, "matchLabels: must be an object of strings"},
        {"{\"matchExpressions\":{}}", FILTER_EINVAL, "matchExpressions: must be an array"},
        {"{\"matchExpressions\":[1]}", FILTER_EINVAL, "matchExpressions[0]: must be an object"},
        {"{\"matchExpressions\":[{\"operator\":\"Exists\"}]}", FILTER_EINVAL,
         "matchExpressions[0].key: must be a string"},
        {"{\"matchExpressions\":[{\"key\":\"x\"}]}", FILTER_EINVAL,
         "matchExpressions[0].operator: must be a string"},
        {"{\"matchExpressions\":[{\"key\":\"x\",\"operator\":\"In\",\"values\":[1]}]}",
         FILTER_EINVAL, "matchExpressions[0].values: must be an array of strings"},
        {"[]", FILTER_EINVAL, "label selector: must be an object"},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        char *got = json_err(t[i].json, t[i].rc);
        if (!got || strcmp(got, t[i].want) != 0)
            printf("# json case %zu\n", i);
        CHECK_STR_EQ(got, t[i].want);
        free(got);
    }
}

static void test_json_nothing_and_everything(void)
{
    struct filter_selector *sel = NULL;
    REQUIRE_INT_EQ(filter_selector_from_json(NULL, &sel, NULL), FILTER_OK);
    CHECK_INT_EQ(filter_selector_is_nothing(sel), 1);
    CHECK_INT_EQ(filter_selector_is_everything(sel), 0);
    CHECK_INT_EQ(filter_selector_matches(sel, NULL), 0);
    filter_selector_free(sel);

    cJSON *j = cJSON_Parse("{}");
    REQUIRE_INT_EQ(filter_selector_from_json(j, &sel, NULL), FILTER_OK);
    CHECK_INT_EQ(filter_selector_is_nothing(sel), 0);
    CHECK_INT_EQ(filter_selector_is_everything(sel), 1);
    CHECK_INT_EQ(filter_selector_matches(sel, NULL), 1);
    filter_selector_free(sel);
    cJSON_Delete(j);

    /* a JSON selector and the equivalent string select the same objects */
    j = cJSON_Parse("{\"matchLabels\":{\"app\":\"web\"},\"matchExpressions\":[{\"key\":\"tier\","
                    "\"operator\":\"NotIn\",\"values\":[\"db\"]}]}");
    struct filter_selector *s2 = NULL;
    REQUIRE_INT_EQ(filter_selector_from_json(j, &sel, NULL), FILTER_OK);
    REQUIRE_INT_EQ(filter_selector_parse("app=web,tier notin (db)", &s2, NULL), FILTER_OK);
    const char *objs[] = {"{\"app\":\"web\"}", "{\"app\":\"web\",\"tier\":\"db\"}",
                          "{\"app\":\"web\",\"tier\":\"fe\"}", "{\"tier\":\"fe\"}", "{}"};
    for (size_t i = 0; i < 5; i++) {
        cJSON *l = cJSON_Parse(objs[i]);
        CHECK_INT_EQ(filter_selector_matches(sel, l), filter_selector_matches(s2, l));
        cJSON_Delete(l);
    }
    CHECK_INT_EQ(filter_selector_matches(sel, cJSON_GetArrayItem(NULL, 0)), 0);
    filter_selector_free(sel);
    filter_selector_free(s2);
    cJSON_Delete(j);
}

static void test_key_value_validators(void)
{
    char msg[1024];
    CHECK_INT_EQ(filter_label_key_valid("app.kubernetes.io/name", msg, sizeof(msg)), 0);
    CHECK_INT_EQ(filter_label_key_valid("a", NULL, 0), 0);
    CHECK_INT_EQ(filter_label_key_valid("", msg, sizeof(msg)), -1);
    CHECK_STR_EQ(msg, "name part must be non-empty; name part " QN);
    CHECK_INT_EQ(filter_label_value_valid("", msg, sizeof(msg)), 0);
    CHECK_INT_EQ(filter_label_value_valid("a.b_c-d", msg, sizeof(msg)), 0);
    CHECK_INT_EQ(filter_label_value_valid("a.", msg, sizeof(msg)), -1);
    CHECK_STR_EQ(msg, LV);
    /* 253 characters of prefix are fine, 254 are not */
    char k[300];
    memset(k, 'a', 253);
    memcpy(k + 253, "/n", 3);
    CHECK_INT_EQ(filter_label_key_valid(k, NULL, 0), 0);
    memset(k, 'a', 63);
    k[63] = '\0';
    CHECK_INT_EQ(filter_label_key_valid(k, NULL, 0), 0);
    CHECK_INT_EQ(filter_label_value_valid(k, NULL, 0), 0);
}

/* ---- field selectors ------------------------------------------------------ */

static char *fcanon(const char *s, const char *const *allowed, char *errbuf, size_t errlen)
{
    struct filter_field_selector *fs = NULL;
    struct filter_error err;
    memset(&err, 0, sizeof(err));
    if (filter_field_selector_parse(s, allowed, &fs, &err) != FILTER_OK) {
        snprintf(errbuf, errlen, "%s", err.msg);
        return NULL;
    }
    struct cx_buf b;
    cx_buf_init(&b, 0);
    char *r = filter_field_selector_string(fs, &b) == 0 ? cx_buf_steal(&b, NULL) : NULL;
    cx_buf_free(&b);
    filter_field_selector_free(fs);
    return r;
}

static void test_field_selectors(void)
{
    static const struct {
        const char *in, *canon;
    } ok[] = {
        {"", ""},
        {"metadata.name=foo", "metadata.name=foo"},
        {"metadata.name==foo", "metadata.name=foo"},
        {"metadata.name!=foo", "metadata.name!=foo"},
        {"metadata.namespace=ns,metadata.name=a", "metadata.name=a,metadata.namespace=ns"},
        {"metadata.name=a,,metadata.name=a", "metadata.name=a"},
        {"metadata.name=", "metadata.name="},
        {"metadata.name=a\\,b\\=c\\\\d", "metadata.name=a\\,b\\=c\\\\d"},
        {"metadata.name=x y", "metadata.name=x y"},
    };
    char e[FILTER_ERR_MAX];
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        char *c = fcanon(ok[i].in, NULL, e, sizeof(e));
        if (!c)
            printf("# %s: %s\n", ok[i].in, e);
        CHECK_STR_EQ(c, ok[i].canon);
        free(c);
    }
    char *c = fcanon("type=kubernetes.io/tls", filter_fields_secret, e, sizeof(e));
    CHECK_STR_EQ(c, "type=kubernetes.io/tls");
    free(c);

    static const struct {
        const char *in, *msg;
    } bad[] = {
        {"metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"},
        {"metadata.name=a,x", "invalid selector: 'metadata.name=a,x'; can't understand 'x'"},
        {"spec.x=1", "\"spec.x\" is not a known field selector: only \"metadata.name\", "
                     "\"metadata.namespace\""},
        {"=a",
         "\"\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""},
        {"metadata.name =a", "\"metadata.name \" is not a known field selector: only "
                             "\"metadata.name\", \"metadata.namespace\""},
        {"type=kubernetes.io/tls",
         "\"type\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""},
        {"metadata.name=a=b", "invalid field selector: unescaped character in value: 61"},
        {"metadata.name=a\\,b,z",
         "invalid selector: 'metadata.name=a\\,b,z'; can't understand 'z'"},
        {"metadata.name=a\\x", "invalid field selector: invalid escape sequence: \\x"},
        {"metadata.name=a\\", "invalid field selector: invalid escape sequence: \\"},
        {"metadata.name=a\\\xc3\xa9",
         "invalid field selector: invalid escape sequence: \\\xc3\xa9"},
        /* terms are checked in sorted order, parse errors before field names */
        {"z=1,metadata.name=a=b", "invalid field selector: unescaped character in value: 61"},
        {"spec.a=1,metadata.name", "invalid selector: 'spec.a=1,metadata.name'; can't understand "
                                   "'metadata.name'"},
        {"spec.b=1,spec.a=1", "\"spec.a\" is not a known field selector: only \"metadata.name\", "
                              "\"metadata.namespace\""},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        e[0] = '\0';
        char *r = fcanon(bad[i].in, NULL, e, sizeof(e));
        CHECK(r == NULL);
        free(r);
        CHECK_STR_EQ(e, bad[i].msg);
    }
    /* custom resources and Secrets word it differently */
    char *r = fcanon("spec.x=1", filter_fields_custom, e, sizeof(e));
    CHECK(r == NULL);
    CHECK_STR_EQ(e, "field label not supported: spec.x");
    free(r);
    r = fcanon("metadata.uid=1,type=a", filter_fields_secret, e, sizeof(e));
    CHECK(r == NULL);
    CHECK_STR_EQ(e, "field label not supported: metadata.uid");
    free(r);
    r = fcanon("metadata.namespace=a", filter_fields_custom, e, sizeof(e));
    CHECK_STR_EQ(r, "metadata.namespace=a");
    free(r);
}

static int fmatch(const char *sel, const char *obj_json)
{
    struct filter_field_selector *fs = NULL;
    if (filter_field_selector_parse(sel, filter_fields_secret, &fs, NULL) != FILTER_OK)
        return -1;
    cJSON *o = cJSON_Parse(obj_json);
    int m = filter_field_selector_matches(fs, o);
    cJSON_Delete(o);
    filter_field_selector_free(fs);
    return m;
}

static void test_field_matching(void)
{
    const char *cm = "{\"metadata\":{\"name\":\"lock\",\"namespace\":\"sys\"}}";
    CHECK_INT_EQ(fmatch("", cm), 1);
    CHECK_INT_EQ(fmatch("metadata.name=lock", cm), 1);
    CHECK_INT_EQ(fmatch("metadata.name==lock", cm), 1);
    CHECK_INT_EQ(fmatch("metadata.name=other", cm), 0);
    CHECK_INT_EQ(fmatch("metadata.name!=lock", cm), 0);
    CHECK_INT_EQ(fmatch("metadata.name!=other", cm), 1);
    CHECK_INT_EQ(fmatch("metadata.name=lock,metadata.namespace=sys", cm), 1);
    CHECK_INT_EQ(fmatch("metadata.name=lock,metadata.namespace=app", cm), 0);
    /* a missing field is "" */
    CHECK_INT_EQ(fmatch("type=", cm), 1);
    CHECK_INT_EQ(fmatch("type!=kubernetes.io/tls", cm), 1);
    CHECK_INT_EQ(fmatch("type=kubernetes.io/tls",
                        "{\"type\":\"kubernetes.io/tls\",\"metadata\":{\"name\":\"c\"}}"),
                 1);
    CHECK_INT_EQ(fmatch("metadata.name=a\\,b", "{\"metadata\":{\"name\":\"a,b\"}}"), 1);
    /* metadata.namespace of a cluster-scoped object is "" */
    CHECK_INT_EQ(fmatch("metadata.namespace=", "{\"metadata\":{\"name\":\"n\"}}"), 1);
    CHECK_INT_EQ(filter_field_selector_matches(NULL, NULL), 1);
}

static void test_field_escape(void)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    REQUIRE_INT_EQ(filter_field_escape(&b, "a\\b,c=d"), 0);
    CHECK_STR_EQ(b.data, "a\\\\b\\,c\\=d");
    cx_buf_free(&b);
}

static const struct cxt_case cases[] = {
    CXT(test_valid_canonical),
    CXT(test_operators_introspection),
    CXT(test_matching),
    CXT(test_matching_callback_and_nulls),
    CXT(test_invalid_syntax),
    CXT(test_invalid_keys_and_values),
    CXT(test_too_long),
    CXT(test_json_selector),
    CXT(test_json_nothing_and_everything),
    CXT(test_key_value_validators),
    CXT(test_field_selectors),
    CXT(test_field_matching),
    CXT(test_field_escape),
};
CXT_MAIN(cases)
