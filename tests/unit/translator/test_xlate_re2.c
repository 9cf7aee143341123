#include "cxtest.h"
#include "xlate_re2.h"

#include <stdio.h>
#include <string.h>

static int ok(const char *re)
{
    char err[256];
    int rc = xlate_re2_check(re, strlen(re), err, sizeof(err));
    if (rc != 0)
        fprintf(stderr, "# unexpected rejection of %s: %s\n", re, err);
    return rc == 0;
}

static void expect_err(const char *re, const char *msg, int line)
{
    char err[256];
    int rc = xlate_re2_check(re, strlen(re), err, sizeof(err));
    if (rc == 0)
        cxt_fail(__FILE__, line, 0, "regex %s accepted, want error \"%s\"", re, msg);
    else if (strcmp(err, msg) != 0)
        cxt_fail(__FILE__, line, 0, "regex %s: error \"%s\", want \"%s\"", re, err, msg);
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
        "[-a]",
        "[a-b-c]",
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
        "a{x}",
        "a{",
        "^*",
        "(a{10}){100}",
        "\xc3\xa9t\xc3\xa9",
        "/grpc.health.v1.Health/Check",
        /* what libre2 (2022, gRPC's) accepts and a first version of this
         * checker did not (found by test_re2_differential.sh) */
        "(?:abc)+",
        "(?)",
        "\\_",
        "[\\d-z]",
        "a(?i)*",
        "/\\Q\\E?",
        "\xed\xa0\x80",
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        CHECK(ok(good[i]));
}

static void test_refuses_what_re2_refuses(void)
{
    /* backreferences */
    BAD("(a)\\1", "invalid escape sequence: \\1");
    BAD("\\9", "invalid escape sequence: \\9");
    BAD("(?P=name)", "invalid named capture group: (?P=");
    /* lookaround and atomic groups */
    BAD("foo(?=bar)", "invalid perl operator: (?=");
    BAD("foo(?!bar)", "invalid perl operator: (?!");
    BAD("(?<=a)b", "invalid perl operator: (?<=");
    BAD("(?<!a)b", "invalid perl operator: (?<!");
    BAD("(?>a+)b", "invalid perl operator: (?>");
    BAD("(?<name>a)", "invalid perl operator: (?<");
    BAD("(?#comment)", "invalid perl operator: (?#");
    /* possessive and stacked quantifiers */
    BAD("a*+", "bad repetition operator: *+");
    BAD("a++", "bad repetition operator: ++");
    BAD("a?+", "bad repetition operator: ?+");
    BAD("a**", "bad repetition operator: **");
    BAD("a{2}{3}", "bad repetition operator: {2}{3}");
    BAD("a{2}+", "bad repetition operator: {2}+");
    BAD("a*?+", "bad repetition operator: *?+");
    /* missing operands */
    BAD("*a", "no argument for repetition operator: *");
    BAD("a|*", "no argument for repetition operator: *");
    BAD("(+)", "no argument for repetition operator: +");
    BAD("{2}", "no argument for repetition operator: {2}");
    BAD("(?i)*", "no argument for repetition operator: *");
    /* repetition sizes */
    BAD("a{1001}", "invalid repetition size: {1001}");
    BAD("a{5,2}", "invalid repetition size: {5,2}");
    BAD("(a{100}){100}", "invalid repetition size: {100}");
    BAD("((a{10}){10}){11}", "invalid repetition size: {11}");
    /* escapes RE2 does not know */
    BAD("a\\Z", "invalid escape sequence: \\Z");
    BAD("\\Ga", "invalid escape sequence: \\G");
    BAD("\\e", "invalid escape sequence: \\e");
    BAD("\\k<n>", "invalid escape sequence: \\k");
    BAD("\\xZZ", "invalid escape sequence: \\xZZ");
    BAD("\\x{110000}", "invalid escape sequence: \\x{110000");
    BAD("a\\", "trailing \\");
    BAD("[\\b]", "invalid escape sequence: \\b");
    /* classes */
    BAD("[a-z", "missing ]: [a-z");
    BAD("[]", "missing ]: []");
    BAD("[z-a]", "invalid character class range: z-a");
    BAD("[a-\\d]", "invalid character class range: a-\\d");
    BAD("[[:foo:]]", "invalid character class range: [:foo:]");
    BAD("\\p{Klingon}", "invalid character class range: \\p{Klingon}");
    BAD("\\pX", "invalid character class range: \\pX");
    /* groups */
    BAD("(abc", "missing ): (abc");
    BAD("abc)", "unexpected ): abc)");
    BAD("(?P<>a)", "invalid named capture group: (?P<>");
    BAD("(?P<a-b>x)", "invalid named capture group: (?P<a-b>");
    BAD("(?P<n>a)(?P<n>b)", "duplicate capture group name: (?P<n>");
    BAD("(?z)", "invalid perl operator: (?z");
    BAD("(?-)", "invalid perl operator: (?-)");
    BAD("(?i-)", "invalid perl operator: (?i-)");
    /* encoding */
    BAD("\xff", "invalid UTF-8");
    BAD("\\Qa\xff\\E", "invalid UTF-8"); /* inside \Q...\E too */
    BAD("", "empty regex");
}

static void test_nesting_and_length_caps(void)
{
    char big[XLATE_RE2_MAX_LEN + 2];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    char err[128];
    CHECK_INT_EQ(xlate_re2_check(big, strlen(big), err, sizeof(err)), -1);
    CHECK_STR_CONTAINS(err, "longer than");
    /* deep nesting ends with an error, not a stack overflow */
    static char deep[4001];
    for (int i = 0; i < 2000; i++) {
        deep[i] = '(';
        deep[2000 + i] = ')';
    }
    CHECK_INT_EQ(xlate_re2_check(deep, 4000, err, sizeof(err)), -1);
    CHECK_STR_EQ(err, "expression nests too deeply");
    /* embedded NUL is refused */
    CHECK_INT_EQ(xlate_re2_check("a\0b", 3, err, sizeof(err)), -1);
}

static void test_literal_prefix(void)
{
    char out[64];
    struct {
        const char *re, *want;
    } cases[] = {
        {"/api/v1/.*", "/api/v1/"},
        {"^/api/[0-9]+", "/api/"},
        {"/api\\.v1/x", "/api.v1/x"},
        {"/ab?c", "/a"},
        {"/a|/b", ""},
        {"(/a|/b)/c", ""},
        {"[|]/x", ""},
        {"(?i)/api", ""},
        {"/x\\d", "/x"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        xlate_re2_literal_prefix(cases[i].re, strlen(cases[i].re), out, sizeof(out));
        CHECK_STR_EQ(out, cases[i].want);
    }
    CHECK_INT_EQ(xlate_re2_literal_prefix("/abcdef", 7, out, 4), 3);
    CHECK_STR_EQ(out, "/ab");
}

static void test_program_size_estimate(void)
{
    int small = xlate_re2_program_size("/api", 4);
    int big = xlate_re2_program_size("/api/[a-z]{120}/.*", 18);
    CHECK_INT_GT(small, 0);
    CHECK_INT_LT(small, 20);
    CHECK_INT_GT(big, 100);
    CHECK_INT_EQ(xlate_re2_program_size("(a", 2), -1);
}

static const struct cxt_case cases[] = {
    CXT(test_accepts_re2_syntax),      CXT(test_refuses_what_re2_refuses),
    CXT(test_nesting_and_length_caps), CXT(test_literal_prefix),
    CXT(test_program_size_estimate),
};
CXT_MAIN(cases)
