/* The RE2 shim (translator/xlate_re2.cc) over Debian's libre2 20220601: its
 * verdicts, its messages, the exact program size Envoy compares with its
 * limit, and the literal prefix a delegating route is checked against.
 * The expected values are what that RE2 answers (Envoy's and gRPC's
 * engine); a shim that estimated, or passed the wrong field through, gets
 * them wrong. */
#include "cxtest.h"
#include "xlate_re2.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ok(const char *re)
{
    char err[256];
    struct xlate_re2_info info;
    int rc = xlate_re2_compile(re, strlen(re), &info, err, sizeof(err));
    if (rc != XLATE_RE2_OK)
        fprintf(stderr, "# unexpected rejection of %s: %s\n", re, err);
    return rc == XLATE_RE2_OK && info.program_size > 0;
}

static void expect_err(const char *re, const char *msg, int line)
{
    char err[256];
    int rc = xlate_re2_compile(re, strlen(re), NULL, err, sizeof(err));
    if (rc == XLATE_RE2_OK)
        cxt_fail(__FILE__, line, 0, "regex %s accepted, want error \"%s\"", re, msg);
    else if (rc != XLATE_RE2_INVALID || strcmp(err, msg) != 0)
        cxt_fail(__FILE__, line, 0, "regex %s: %d \"%s\", want \"%s\"", re, rc, err, msg);
}
#define BAD(re, msg) expect_err(re, msg, __LINE__)

static void test_accepts_re2_syntax(void)
{
    const char *good[] = {
        "/api/.*",
        "^/v[0-9]+/users/[^/]+$",
        "a|b|",
        "()",
        "(?i)/Foo",
        "(?i:abc)d",
        "(?-s:.)",
        "(?im-sU:x)",
        "(?P<id>[0-9]+)/(?P<rest>.*)",
        "[]a]",
        "[^]a]",
        "[a-]",
        "[[:alpha:][:^digit:]_]",
        "[\\d\\s\\w.]",
        "\\pL\\p{Greek}\\PN\\p{^Han}",
        "\\x41\\x{10FFFF}\\0\\012\\101",
        "\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\\\\\/\\-",
        "\\a\\f\\t\\n\\r\\v\\d\\D\\s\\S\\w\\W\\b\\B\\A\\z\\C",
        "\\Qa.b*c\\E+",
        "x{2}y{2,}z{2,5}w{0,1000}",
        "a*?b+?c??d{2,3}?",
        "a{,5}",
        "^*",
        "(a{10}){100}",
        "\xc3\xa9t\xc3\xa9",
        "/grpc.health.v1.Health/Check",
        "(?:abc)+",
        "\\_",
        "[\\d-z]",
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        CHECK(ok(good[i]));
}

static void test_refuses_with_re2s_message(void)
{
    /* backreferences */
    BAD("(a)\\1", "invalid escape sequence: \\1");
    BAD("(?P=name)", "invalid perl operator: (?P");
    /* lookaround and atomic groups */
    BAD("foo(?=bar)", "invalid perl operator: (?=");
    BAD("foo(?!bar)", "invalid perl operator: (?!");
    BAD("(?<=a)b", "invalid perl operator: (?<");
    BAD("(?>a+)b", "invalid perl operator: (?>");
    BAD("(?#comment)", "invalid perl operator: (?#");
    /* possessive and stacked quantifiers */
    BAD("a*+", "bad repetition operator: *+");
    BAD("a**", "bad repetition operator: **");
    BAD("a{2}{3}", "bad repetition operator: {2}{3}");
    /* missing operands */
    BAD("*a", "no argument for repetition operator: *");
    BAD("(+)", "no argument for repetition operator: +");
    /* repetition sizes, nested ones too */
    BAD("a{1001}", "invalid repetition size: {1001}");
    BAD("(a{100}){100}", "invalid repetition size: {100}");
    BAD("((a{10}){10}){11}", "invalid repetition size: {11}");
    /* escapes RE2 does not know */
    BAD("a\\Z", "invalid escape sequence: \\Z");
    BAD("\\Ga", "invalid escape sequence: \\G");
    BAD("\\x{110000}", "invalid escape sequence: \\x{110000");
    BAD("a\\", "trailing \\");
    BAD("[\\b]", "invalid escape sequence: \\b");
    /* classes and groups */
    BAD("[]", "missing ]: []");
    BAD("[z-a]", "invalid character class range: z-a");
    BAD("[[:foo:]]", "invalid character class range: [:foo:]");
    BAD("\\p{Klingon}", "invalid character class range: \\p{Klingon}");
    BAD("(abc", "missing ): (abc");
    BAD("abc)", "unexpected ): abc)");
    BAD("(?z)", "invalid perl operator: (?z");
    /* encoding, inside \Q...\E too */
    BAD("\xff", "invalid UTF-8");
    BAD("\\Qa\xff\\E", "invalid UTF-8");
    /* the shim's own: Envoy requires one byte */
    BAD("", "empty regex");
}

static void test_caps(void)
{
    char err[128];
    /* the length cap, before RE2 sees it */
    char *big = malloc(XLATE_RE2_MAX_LEN + 2);
    REQUIRE(big != NULL);
    memset(big, 'a', XLATE_RE2_MAX_LEN + 1);
    big[XLATE_RE2_MAX_LEN + 1] = '\0';
    CHECK_INT_EQ(xlate_re2_compile(big, XLATE_RE2_MAX_LEN + 1, NULL, err, sizeof(err)),
                 XLATE_RE2_INVALID);
    CHECK_STR_EQ(err, "regex longer than 1024 bytes");
    CHECK_INT_EQ(xlate_re2_compile(big, XLATE_RE2_MAX_LEN, NULL, err, sizeof(err)), XLATE_RE2_OK);
    free(big);
    /* nesting as deep as the length cap allows: RE2 walks it without
     * recursion (no stack overflow, also under ASan's larger frames) */
    static char deep[XLATE_RE2_MAX_LEN];
    size_t half = XLATE_RE2_MAX_LEN / 2;
    for (size_t i = 0; i < half - 1; i++) {
        deep[i] = '(';
        deep[half + i] = ')';
    }
    deep[half - 1] = 'a';
    deep[XLATE_RE2_MAX_LEN - 1] = 'b';
    struct xlate_re2_info info;
    CHECK_INT_EQ(xlate_re2_compile(deep, sizeof(deep), &info, err, sizeof(err)), XLATE_RE2_OK);
    CHECK_STR_EQ(info.prefix, "ab");
    /* |len| is honoured: a NUL inside is refused, the bytes after |len|
     * are not read */
    CHECK_INT_EQ(xlate_re2_compile("a\0b", 3, NULL, err, sizeof(err)), XLATE_RE2_INVALID);
    CHECK_STR_EQ(err, "regex contains a NUL byte");
    CHECK_INT_EQ(xlate_re2_compile("ab(", 2, NULL, err, sizeof(err)), XLATE_RE2_OK);
    /* a short error buffer gets the start of the message, terminated */
    char small[8];
    CHECK_INT_EQ(xlate_re2_compile("(?=x)", 5, NULL, small, sizeof(small)), XLATE_RE2_INVALID);
    CHECK_STR_EQ(small, "invalid");
    CHECK_INT_EQ(xlate_re2_compile("(?=x)", 5, NULL, NULL, 0), XLATE_RE2_INVALID);
}

/* What RE2 would take long over is refused before or by RE2, quickly. */
static void test_cost_guards(void)
{
    char err[200];
    /* the 17th Unicode class, counted on the text: an escaped backslash
     * followed by p is no class */
    char re[128] = "";
    size_t n = 0;
    for (int i = 0; i < 16; i++)
        n += (size_t)snprintf(re + n, sizeof(re) - n, "\\pN");
    CHECK_INT_EQ(xlate_re2_compile(re, strlen(re), NULL, err, sizeof(err)), XLATE_RE2_OK);
    n += (size_t)snprintf(re + n, sizeof(re) - n, "\\\\p");
    CHECK_INT_EQ(xlate_re2_compile(re, strlen(re), NULL, err, sizeof(err)), XLATE_RE2_OK);
    snprintf(re + n, sizeof(re) - n, "\\P{Greek}");
    CHECK_INT_EQ(xlate_re2_compile(re, strlen(re), NULL, err, sizeof(err)), XLATE_RE2_INVALID);
    CHECK_STR_EQ(err, "17 Unicode classes (\\p, \\P); at most 16 are checked in one regex");
    /* a program past RE2's memory: too large, not invalid */
    CHECK_INT_EQ(xlate_re2_compile("(\\pL|\\pN){1000}", 15, NULL, err, sizeof(err)),
                 XLATE_RE2_TOO_LARGE);
    CHECK_STR_EQ(err, "its RE2 program does not fit in 1024 KiB");
    CHECK_INT_EQ(xlate_re2_compile("a{1000}a{1000}", 14, NULL, err, sizeof(err)), XLATE_RE2_OK);
}

static void test_program_size_is_re2s(void)
{
    struct {
        const char *re;
        int size;
    } cases[] = {
        {"/api", 8},
        {"/asdf/.*", 18},
        {"/api/v1/.*", 20},
        {"[a-z]{30}", 34},
        {"/api/[a-z]{120}/.*", 138},
        {"x{2}y{2,}z{2,5}w{0,1000}", 2017},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct xlate_re2_info info;
        char err[128];
        REQUIRE_INT_EQ(xlate_re2_compile(cases[i].re, strlen(cases[i].re), &info, err, sizeof(err)),
                       XLATE_RE2_OK);
        CHECK_INT_EQ(info.program_size, cases[i].size);
    }
}

static void test_literal_prefix(void)
{
    struct {
        const char *re, *want;
    } cases[] = {
        {"/api/v1/.*", "/api/v1/"},
        {"/api.*", "/api"},
        {"^/api/[0-9]+", "/api/"},
        {"/api\\.v1/x", "/api.v1/x"},
        {"/ab?c", "/a"},
        {"/a|/b", "/"},
        {"(/a|/b)/c", "/"},
        {"(a|b)/c", ""},
        {"(?i)/api", "/"},
        {"/x\\d", "/x"},
        {".*", ""},
        {"\\Qa.b*c\\E+", "a.b*c"},
        {"/\xc3\xa9t\xc3\xa9/.*", "/\xc3\xa9t\xc3\xa9/"},
        /* a range that ends inside a UTF-8 sequence stops before it */
        {"/\xc3\xa9|/\xc3\xa8", "/"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct xlate_re2_info info;
        char err[128];
        REQUIRE_INT_EQ(xlate_re2_compile(cases[i].re, strlen(cases[i].re), &info, err, sizeof(err)),
                       XLATE_RE2_OK);
        CHECK_STR_EQ(info.prefix, cases[i].want);
    }
    /* a long literal is cut at XLATE_RE2_PREFIX_MAX */
    char lit[600];
    memset(lit, 'a', sizeof(lit) - 1);
    lit[0] = '/';
    lit[sizeof(lit) - 1] = '\0';
    struct xlate_re2_info info;
    REQUIRE_INT_EQ(xlate_re2_compile(lit, strlen(lit), &info, NULL, 0), XLATE_RE2_OK);
    CHECK_INT_EQ((long)strlen(info.prefix), XLATE_RE2_PREFIX_MAX);
    CHECK(strncmp(info.prefix, lit, XLATE_RE2_PREFIX_MAX) == 0);
}

static const struct cxt_case cases[] = {
    CXT(test_accepts_re2_syntax), CXT(test_refuses_with_re2s_message), CXT(test_caps),
    CXT(test_cost_guards),        CXT(test_program_size_is_re2s),      CXT(test_literal_prefix),
};
CXT_MAIN(cases)
