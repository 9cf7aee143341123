#include "cx_json.h"
#include "cx_yaml.h"
#include "cxtest.h"

#include <stdio.h>
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
    /* an anchor on a key: the mapping keeps only the key's text, the
     * anchor keeps its node for the aliases to it (an alias once reached
     * the freed node: found by fuzz_yaml) */
    CHECK_CONV("a: &x []\nb: *x\n&k c: 1\nd: *k\n", "[{\"a\":[],\"b\":[],\"c\":1,\"d\":\"c\"}]");
    CHECK_CONV("&k c: *k\n", "[{\"c\":\"c\"}]");
    /* the value redefines the key's anchor: the key stays alive until its
     * text is used (ASan and valgrind watch this one) */
    CHECK_CONV("&k c: &k [1]\nd: *k\n", "[{\"c\":[1],\"d\":[1]}]");
    /* the latest definition wins; anchors do not cross documents */
    CHECK_CONV("a: &x 1\nb: &x 2\nc: *x\n", "[{\"a\":1,\"b\":2,\"c\":2}]");
    char err[200];
    CHECK(conv("a: &x 1\n---\nb: *x\n", err, sizeof(err)) == NULL);
    CHECK_STR_CONTAINS(err, "unknown anchor x");
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
    /* nesting is capped: 128 levels parse, 129 do not */
    char deep[1000];
    memset(deep, '[', 128);
    memset(deep + 128, ']', 128);
    deep[256] = '\0';
    char *s = conv(deep, err, sizeof(err));
    CHECK(s != NULL);
    free(s);
    memset(deep, '[', 129);
    memset(deep + 129, ']', 129);
    deep[258] = '\0';
    CHECK(conv(deep, err, sizeof(err)) == NULL);
    CHECK_STR_CONTAINS(err, "line 1 column 129: nesting too deep: over the limit of 128 levels");
}

/* cJSON's allocations while a hook counts them: the work a parse did. */
static size_t allocs;

static void *counting_malloc(size_t n)
{
    allocs++;
    return malloc(n);
}

/* Parses |yaml|, which must be refused with |want| in the error, and
 * returns how many cJSON allocations the refusal cost. */
static size_t refused(const char *yaml, const char *want)
{
    char err[300];
    cJSON_Hooks hooks = {.malloc_fn = counting_malloc, .free_fn = free};
    allocs = 0;
    cJSON_InitHooks(&hooks);
    cJSON *d = cx_yaml_parse(yaml, strlen(yaml), err, sizeof(err));
    cJSON_InitHooks(NULL);
    CHECK(d == NULL);
    cJSON_Delete(d);
    CHECK_STR_CONTAINS(err, want);
    return allocs;
}

/* |levels| anchors, each a sequence of |fan| aliases to the one before,
 * over a sequence of |fan| strings "lol": fan^levels strings if expanded. */
static char *laughs(int levels, int fan)
{
    size_t cap = (size_t)(levels + 1) * ((size_t)fan * 8 + 32);
    char *s = malloc(cap);
    size_t n = (size_t)snprintf(s, cap, "l0: &l0 [");
    for (int i = 0; i < fan; i++)
        n += (size_t)snprintf(s + n, cap - n, "%slol", i ? ", " : "");
    n += (size_t)snprintf(s + n, cap - n, "]\n");
    for (int l = 1; l <= levels; l++) {
        n += (size_t)snprintf(s + n, cap - n, "l%d: &l%d [", l, l);
        for (int i = 0; i < fan; i++)
            n += (size_t)snprintf(s + n, cap - n, "%s*l%d", i ? ", " : "", l - 1);
        n += (size_t)snprintf(s + n, cap - n, "]\n");
    }
    return s;
}

static void test_alias_bombs(void)
{
    /* the bombs stop at the limit on what aliases copy, judged before
     * copying (copying up to the 4,000,000-node cap before refusing cost
     * 6.9 million allocations and 2 to 7 s of CPU) */
    const size_t budget = 3 * (size_t)CX_YAML_MAX_ALIAS_NODES;
    char *bomb = laughs(6, 10); /* 10^7 strings */
    CHECK_INT_LE(refused(bomb, "line 5 column 45: aliases expand too much: alias *l3 would bring "
                               "the nodes copied by aliases to 101218, over the limit of 100000"),
                 budget);
    free(bomb);
    bomb = laughs(9, 9); /* billion laughs: 9^9 */
    CHECK_INT_LE(refused(bomb, "over the limit of 100000"), budget);
    free(bomb);
    /* mappings as well as sequences */
    const char *maps = "a: &a {k0: v, k1: v, k2: v, k3: v, k4: v, k5: v, k6: v, k7: v}\n"
                       "b: &b {k0: *a, k1: *a, k2: *a, k3: *a, k4: *a, k5: *a, k6: *a, k7: *a}\n"
                       "c: &c {k0: *b, k1: *b, k2: *b, k3: *b, k4: *b, k5: *b, k6: *b, k7: *b}\n"
                       "d: &d {k0: *c, k1: *c, k2: *c, k3: *c, k4: *c, k5: *c, k6: *c, k7: *c}\n"
                       "e: &e {k0: *d, k1: *d, k2: *d, k3: *d, k4: *d, k5: *d, k6: *d, k7: *d}\n"
                       "f: &f {k0: *e, k1: *e, k2: *e, k3: *e, k4: *e, k5: *e, k6: *e, k7: *e}\n"
                       "g: &g {k0: *f, k1: *f, k2: *f, k3: *f, k4: *f, k5: *f, k6: *f, k7: *f}\n";
    CHECK_INT_LE(refused(maps, "aliases expand too much"), budget);
    /* under the limit, aliases expand in full */
    bomb = laughs(3, 10);
    char err[300];
    cJSON *d = cx_yaml_parse(bomb, strlen(bomb), err, sizeof(err));
    REQUIRE(d != NULL);
    const cJSON *l3 = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(d, 0), "l3");
    CHECK_INT_EQ(cJSON_GetArraySize(l3), 10);
    const cJSON *leaf = l3;
    for (int i = 0; i < 4; i++)
        leaf = cJSON_GetArrayItem(leaf, 9);
    CHECK_STR_EQ(cJSON_IsString(leaf) ? leaf->valuestring : NULL, "lol");
    cJSON_Delete(d);
    free(bomb);
}

static void test_alias_chains(void)
{
    /* each anchor one level deeper than the one it aliases: the copies
     * nest past the limit although the text nests two levels (the output
     * once reached 2000 levels, more than cJSON re-parses: found by
     * fuzz_yaml's re-parse check) */
    char *chain = malloc(200 * 40);
    size_t n = (size_t)snprintf(chain, 40, "a0: &a0 x\n");
    for (int i = 1; i < 200; i++) {
        n += (size_t)snprintf(chain + n, 40, "a%d: &a%d [*a%d]\n", i, i, i - 1);
        if (i == 126) {
            /* a126 reaches 128 levels in the document: the limit */
            char err[300];
            cJSON *d = cx_yaml_parse(chain, n, err, sizeof(err));
            REQUIRE(d != NULL);
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(d, 0), "a126");
            int levels = 1; /* the document's mapping */
            for (; cJSON_IsArray(c); c = cJSON_GetArrayItem(c, 0))
                levels++;
            CHECK_INT_EQ(levels + 1, 128); /* + the string */
            CHECK_STR_EQ(c->valuestring, "x");
            cJSON_Delete(d);
        }
    }
    CHECK_INT_LE(refused(chain, "line 128 column 14: nesting too deep: alias *a126 would reach "
                                "129 levels, over the limit of 128"),
                 4 * 128 * 128);
    free(chain);
    /* a chain of pairs doubles at each level: stopped by the first limit
     * it meets */
    chain = malloc(200 * 40);
    n = (size_t)snprintf(chain, 40, "a0: &a0 x\n");
    for (int i = 1; i < 200; i++)
        n += (size_t)snprintf(chain + n, 40, "a%d: &a%d [*a%d, *a%d]\n", i, i, i - 1, i - 1);
    CHECK_INT_LE(refused(chain, "aliases expand too much"), 3 * (size_t)CX_YAML_MAX_ALIAS_NODES);
    free(chain);
}

/* A mapping of |n| keys k0..k(n-1) with |dup| added at the end if not NULL. */
static char *wide(int n, const char *dup)
{
    size_t cap = (size_t)n * 16 + 64;
    char *s = malloc(cap);
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(s + len, cap - len, "k%d: %d\n", i, i);
    if (dup)
        snprintf(s + len, cap - len, "%s: dup\n", dup);
    return s;
}

static void test_wide_mappings_and_many_anchors(void)
{
    /* duplicates are found in a mapping of any width (a scan while it is
     * small, a map after: the scan alone was quadratic, 80,000 keys took
     * 8.6 s) */
    char err[300];
    char *s = wide(20000, NULL);
    cJSON *d = cx_yaml_parse(s, strlen(s), err, sizeof(err));
    REQUIRE(d != NULL);
    const cJSON *m = cJSON_GetArrayItem(d, 0);
    CHECK_INT_EQ(cJSON_GetArraySize(m), 20000);
    CHECK_INT_EQ(cJSON_GetObjectItemCaseSensitive(m, "k19999")->valueint, 19999);
    cJSON_Delete(d);
    free(s);
    for (int n = 1; n <= 9; n++) { /* around the switch to a map */
        s = wide(n, "k0");
        char want[64];
        snprintf(want, sizeof(want), "line %d column 1: duplicate key \"k0\"", n + 1);
        CHECK(conv(s, err, sizeof(err)) == NULL);
        CHECK_STR_CONTAINS(err, want);
        free(s);
        s = wide(n, "\"k0\"");
        CHECK(conv(s, err, sizeof(err)) == NULL);
        CHECK_STR_CONTAINS(err, "duplicate key \"k0\"");
        free(s);
    }
    s = wide(20000, "k7777");
    CHECK(conv(s, err, sizeof(err)) == NULL);
    CHECK_STR_CONTAINS(err, "line 20001 column 1: duplicate key \"k7777\"");
    free(s);
    /* a number key and its text are the same key */
    CHECK(conv("1: a\n\"1\": b\n", err, sizeof(err)) == NULL);
    CHECK_STR_CONTAINS(err, "duplicate key \"1\"");
    /* many anchors, each alias found by name (the scan over all anchors was
     * quadratic: 40,000 anchors and as many aliases took 4.4 s) */
    const int nanchors = 20000;
    size_t cap = (size_t)nanchors * 24 + 64;
    s = malloc(cap);
    size_t len = (size_t)snprintf(s, cap, "a: [");
    for (int i = 0; i < nanchors; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s&a%d %d", i ? ", " : "", i, i);
    len += (size_t)snprintf(s + len, cap - len, "]\nb: [");
    for (int i = 0; i < nanchors; i += 7)
        len += (size_t)snprintf(s + len, cap - len, "%s*a%d", i ? ", " : "", i);
    snprintf(s + len, cap - len, "]\n");
    d = cx_yaml_parse(s, strlen(s), err, sizeof(err));
    REQUIRE(d != NULL);
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(d, 0), "b");
    CHECK_INT_EQ(cJSON_GetArraySize(b), (nanchors + 6) / 7);
    CHECK_INT_EQ(cJSON_GetArrayItem(b, 1000)->valueint, 7000);
    CHECK_INT_EQ(cJSON_GetArrayItem(b, 2856)->valueint, 19992);
    cJSON_Delete(d);
    free(s);
}

static const struct cxt_case cases[] = {
    CXT(test_scalars_yaml_1_2), CXT(test_documents_anchors_and_json),
    CXT(test_errors),           CXT(test_alias_bombs),
    CXT(test_alias_chains),     CXT(test_wide_mappings_and_many_anchors),
};
CXT_MAIN(cases)
