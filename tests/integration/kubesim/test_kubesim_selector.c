/*
 * kubesim's own label/field selector implementation (the oracle the
 * client-side matcher in filters/ is property-tested against): grammar,
 * matching semantics and apimachinery's error messages.
 */
#include "../../kubesim/ks_selector.c"

#include "cxtest.h"

static cJSON *labels(const char *json)
{
    return cJSON_Parse(json);
}

static int match(const char *sel, const char *lbl)
{
    char err[8192];
    struct ks_lsel *s = ks_lsel_parse(sel, err, sizeof(err));
    if (!s) {
        printf("# parse error for '%s': %s\n", sel, err);
        return -1;
    }
    cJSON *l = labels(lbl);
    int m = ks_lsel_match(s, l);
    cJSON_Delete(l);
    ks_lsel_free(s);
    return m;
}

static const char *parse_err(const char *sel)
{
    static char err[8192];
    struct ks_lsel *s = ks_lsel_parse(sel, err, sizeof(err));
    if (s) {
        ks_lsel_free(s);
        return "(parsed)";
    }
    return err;
}

static void test_label_match(void)
{
    CHECK_INT_EQ(match("", "{}"), 1);
    CHECK_INT_EQ(match("a=b", "{\"a\":\"b\"}"), 1);
    CHECK_INT_EQ(match("a==b", "{\"a\":\"b\"}"), 1);
    CHECK_INT_EQ(match("a=b", "{\"a\":\"c\"}"), 0);
    CHECK_INT_EQ(match("a=b", "{}"), 0);
    CHECK_INT_EQ(match("a!=b", "{}"), 1);
    CHECK_INT_EQ(match("a!=b", "{\"a\":\"b\"}"), 0);
    CHECK_INT_EQ(match("a in (x,y)", "{\"a\":\"y\"}"), 1);
    CHECK_INT_EQ(match("a in (x,y)", "{}"), 0);
    CHECK_INT_EQ(match("a notin (x,y)", "{}"), 1);
    CHECK_INT_EQ(match("a notin (x,y)", "{\"a\":\"x\"}"), 0);
    CHECK_INT_EQ(match("a", "{\"a\":\"\"}"), 1);
    CHECK_INT_EQ(match("!a", "{\"a\":\"\"}"), 0);
    CHECK_INT_EQ(match("!a", "{\"b\":\"\"}"), 1);
    CHECK_INT_EQ(match("a=", "{\"a\":\"\"}"), 1);
    CHECK_INT_EQ(match("a in ()", "{\"a\":\"\"}"), 1);
    CHECK_INT_EQ(match("a in (x,,y)", "{\"a\":\"\"}"), 1);
    CHECK_INT_EQ(match("a,b=c", "{\"a\":\"1\",\"b\":\"c\"}"), 1);
    CHECK_INT_EQ(match("a,b=c", "{\"b\":\"c\"}"), 0);
    CHECK_INT_EQ(match("  a  =  b  ,  c  ", "{\"a\":\"b\",\"c\":\"\"}"), 1);
    CHECK_INT_EQ(match("x in (in,notin)", "{\"x\":\"notin\"}"), 1);
    CHECK_INT_EQ(match("example.com/app=web", "{\"example.com/app\":\"web\"}"), 1);
    CHECK_INT_EQ(match("n>5", "{\"n\":\"6\"}"), 1);
    CHECK_INT_EQ(match("n>5", "{\"n\":\"5\"}"), 0);
    CHECK_INT_EQ(match("n<5", "{\"n\":\"x\"}"), 0);
    CHECK_INT_EQ(match("n<5", "{}"), 0);
}

static void test_label_errors(void)
{
    CHECK_STR_EQ(parse_err("a in (x"),
                 "unable to parse requirement: found '', expected: ',' or ')'");
    CHECK_STR_EQ(parse_err("a in x"), "unable to parse requirement: found 'x' expected: '('");
    CHECK_STR_EQ(parse_err("a b"),
                 "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt");
    CHECK_STR_EQ(parse_err("a,"), "found '', expected: identifier after ','");
    CHECK_STR_EQ(parse_err(",a"), "found ',', expected: !, identifier, or 'end of string'");
    CHECK_STR_EQ(parse_err("!a=b"), "found '=', expected: ',' or 'end of string'");
    CHECK_STR_EQ(parse_err("a=!b"), "unable to parse requirement: found '!', expected: identifier");
    CHECK_STR_EQ(parse_err("a=>"), "unable to parse requirement: found '>', expected: identifier");
    CHECK_STR_EQ(parse_err("a=b=c"), "found '=', expected: ',' or 'end of string'");
    CHECK_STR_CONTAINS(parse_err("a$=b"),
                       "unable to parse requirement: <nil>: Invalid value: \"a$\": name part must "
                       "consist of alphanumeric characters");
    CHECK_STR_CONTAINS(parse_err("a=b$"),
                       "unable to parse requirement: values[0][a]: Invalid value: \"b$\": a valid "
                       "label must be an empty string or consist of alphanumeric characters");
    CHECK_STR_CONTAINS(parse_err("a/b/c"), "a qualified name must consist of");
    CHECK_STR_CONTAINS(parse_err("/a"), "prefix part must be non-empty");
    CHECK_STR_CONTAINS(parse_err("n>x"), "for 'Gt', 'Lt' operators, the value must be an integer");
    char long_key[80];
    memset(long_key, 'k', 64);
    long_key[64] = 0;
    CHECK_STR_CONTAINS(parse_err(long_key), "name part must be no more than 63 characters");
}

/* Field getter for the tests: every field of the "object" is the string. */
static const char *getf(const void *obj, const char *f)
{
    (void)f;
    return obj;
}

static void test_field_selectors(void)
{
    char err[1024];
    struct ks_fsel *s = ks_fsel_parse("metadata.name=a,metadata.namespace!=b", err, sizeof(err));
    REQUIRE(s != NULL);
    CHECK_INT_EQ(ks_fsel_count(s), 2);
    ks_fsel_free(s);
    CHECK(ks_fsel_parse("metadata.name", err, sizeof(err)) == NULL);
    CHECK_STR_EQ(err, "invalid selector: 'metadata.name'; can't understand 'metadata.name'");
    s = ks_fsel_parse("a==b\\,c", err, sizeof(err));
    REQUIRE(s != NULL);
    CHECK_INT_EQ(ks_fsel_match(s, getf, "b,c"), 1);
    CHECK_INT_EQ(ks_fsel_match(s, getf, "b"), 0);
    ks_fsel_free(s);
    CHECK(ks_fsel_parse("a=b\\x", err, sizeof(err)) == NULL);
    s = ks_fsel_parse("", err, sizeof(err));
    REQUIRE(s != NULL);
    CHECK_INT_EQ(ks_fsel_count(s), 0);
    ks_fsel_free(s);
}

static void test_validators(void)
{
    char err[4096];
    CHECK_INT_EQ(ks_valid_dns1123_subdomain("a.b-c", err, sizeof(err)), 0);
    CHECK_INT_EQ(ks_valid_dns1123_subdomain("A", err, sizeof(err)), -1);
    CHECK_INT_EQ(ks_valid_dns1123_label("a.b", err, sizeof(err)), -1);
    CHECK_STR_EQ(err, "must not contain dots");
    CHECK_INT_EQ(ks_valid_dns1035_label("1abc", err, sizeof(err)), -1);
    CHECK_INT_EQ(ks_valid_configmap_key("..x", err, sizeof(err)), -1);
    CHECK_STR_CONTAINS(err, "must not start with '..'");
    CHECK_INT_EQ(ks_valid_label_value("", err, sizeof(err)), 0);
}

static const struct cxt_case cases[] = {
    CXT(test_label_match),
    CXT(test_label_errors),
    CXT(test_field_selectors),
    CXT(test_validators),
};
CXT_MAIN(cases)
