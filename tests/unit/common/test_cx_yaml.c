#include "cx_json.h"
#include "cx_yaml.h"
#include "cxtest.h"

#include <stdlib.h>
#include <string.h>

/* The documents of |yaml| as compact JSON (NULL on a parse error, message in
 * |err|). */
static char *conv(const char *yaml, char *err, size_t errlen)
{
    cJSON *d = cx_yaml_parse(yaml, strlen(yaml), err, errlen);
    if (!d)
        return NULL;
    char *s = cJSON_PrintUnformatted(d);
    cJSON_Delete(d);
    return s;
}

#define CHECK_CONV(yaml, want)                 \
    do {                                       \
        char e_[200];                          \
        char *s_ = conv(yaml, e_, sizeof(e_)); \
        CHECK_STR_EQ(s_ ? s_ : e_, want);      \
        free(s_);                              \
    } while (0)

static void test_scalars_yaml_1_2(void)
{
    CHECK_CONV("a: 1\nb: -2.5\nc: 0x1f\nd: 0o17\ne: 1e3\n",
               "[{\"a\":1,\"b\":-2.5,\"c\":31,\"d\":15,\"e\":1000}]");
    CHECK_CONV("t: true\nf: False\nn: ~\ne:\nnn: null\n",
               "[{\"t\":true,\"f\":false,\"n\":null,\"e\":null,\"nn\":null}]");
    /* YAML 1.1 booleans stay strings (kubectl would turn on: into true:) */
    CHECK_CONV("on: yes\noff: no\ny: Y\n", "[{\"on\":\"yes\",\"off\":\"no\",\"y\":\"Y\"}]");
    /* quoted and tagged scalars are strings */
    CHECK_CONV("a: \"1\"\nb: '1'\nc: !!str 12\nd: \"true\"\n",
               "[{\"a\":\"1\",\"b\":\"1\",\"c\":\"12\",\"d\":\"true\"}]");
    CHECK_CONV("ip: 10.0.0.1\nv: 1.2.3\nver: v1\ntime: 5s\n",
               "[{\"ip\":\"10.0.0.1\",\"v\":\"1.2.3\",\"ver\":\"v1\",\"time\":\"5s\"}]");
}

static void test_documents_anchors_and_json(void)
{
    CHECK_CONV("---\na: 1\n---\n---\n- x\n- y\n...\n", "[{\"a\":1},[\"x\",\"y\"]]");
    CHECK_CONV("base: &b {x: 1, y: [1, 2]}\ncopy: *b\n",
               "[{\"base\":{\"x\":1,\"y\":[1,2]},\"copy\":{\"x\":1,\"y\":[1,2]}}]");
    CHECK_CONV("{\"kind\": \"List\", \"items\": [{\"a\": [true, null, 1.5]}]}",
               "[{\"kind\":\"List\",\"items\":[{\"a\":[true,null,1.5]}]}]");
    CHECK_CONV("", "[]");
    /* an anchor on a key: the key's node is freed once its text is used;
     * an alias to it must not reach freed memory (found by fuzz_yaml) */
    char err[200];
    char *s = conv("a: &x []\nb: *x\n&k c: 1\nd: *k\n", err, sizeof(err));
    CHECK(s == NULL);
    CHECK_STR_CONTAINS(err, "unknown anchor k");
    free(s);
    CHECK_CONV("# only a comment\n", "[]");
}

static void test_errors(void)
{
    char err[200];
    CHECK(conv("a: [1, 2\n", err, sizeof(err)) == NULL);
    CHECK_STR_CONTAINS(err, "line ");
    CHECK(conv("a: 1\na: 2\n", err, sizeof(err)) == NULL);
    CHECK_STR_CONTAINS(err, "duplicate key \"a\"");
    CHECK(conv("a: *nope\n", err, sizeof(err)) == NULL);
    CHECK_STR_CONTAINS(err, "unknown anchor nope");
    CHECK(conv("? [a, b]\n: c\n", err, sizeof(err)) == NULL);
    CHECK_STR_CONTAINS(err, "a mapping key must be a scalar");
    /* an alias bomb stops at the node cap instead of eating memory */
    const char *bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                       "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                       "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                       "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                       "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                       "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
                       "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n";
    CHECK(conv(bomb, err, sizeof(err)) == NULL);
    CHECK_STR_CONTAINS(err, "too many nodes");
    /* nesting is capped */
    char deep[1000];
    memset(deep, '[', 300);
    deep[300] = '\0';
    CHECK(conv(deep, err, sizeof(err)) == NULL);
    CHECK_STR_CONTAINS(err, "nesting too deep");
}

static const struct cxt_case cases[] = {
    CXT(test_scalars_yaml_1_2),
    CXT(test_documents_anchors_and_json),
    CXT(test_errors),
};
CXT_MAIN(cases)
