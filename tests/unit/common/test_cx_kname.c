/* cx_kname against Kubernetes' own definitions: the formats checked
 * against the regexes apimachinery compiles (POSIX ERE here, anchored) on
 * hand-picked edge cases and on random strings over the characters that
 * matter; the lengths at 63/64 and 253/254; the messages byte for byte. */
#include "cx_kname.h"
#include "cxtest.h"

#include <regex.h>
#include <stdio.h>
#include <string.h>

static regex_t re_label, re_sub;

static int oracle(regex_t *re, const char *s)
{
    return regexec(re, s, 0, NULL, 0) == 0;
}

static void compile(void)
{
    REQUIRE_INT_EQ(regcomp(&re_label, "^" CX_KNAME_LABEL_FMT "$", REG_EXTENDED | REG_NOSUB), 0);
    REQUIRE_INT_EQ(regcomp(&re_sub, "^" CX_KNAME_SUBDOMAIN_FMT "$", REG_EXTENDED | REG_NOSUB), 0);
}

static void release(void)
{
    regfree(&re_label);
    regfree(&re_sub);
}

static void test_edge_cases(void)
{
    compile();
    static const struct {
        const char *s;
        int label, sub;
    } rows[] = {
        {"a", 1, 1},        {"0", 1, 1},         {"a-b", 1, 1}, {"a--b", 1, 1},
        {"123-abc", 1, 1},  {"", 0, 0},          {"-a", 0, 0},  {"a-", 0, 0},
        {"A", 0, 0},        {"a_b", 0, 0},       {"a.b", 0, 1}, {"example.com", 0, 1},
        {"a..b", 0, 0},     {".a", 0, 0},        {"a.", 0, 0},  {"a.-b", 0, 0},
        {"a-.b", 0, 0},     {"a.b-", 0, 0},      {"a b", 0, 0}, {"a/b", 0, 0},
        {"\xc3\xa9", 0, 0}, {"a.0.b-c.d", 0, 1}, {"-", 0, 0},   {".", 0, 0},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const char *s = rows[i].s;
        size_t n = strlen(s);
        if (cx_kname_label(s, n) != rows[i].label || cx_kname_subdomain(s, n) != rows[i].sub)
            fprintf(stderr, "# \"%s\"\n", s);
        CHECK_INT_EQ(cx_kname_label(s, n), rows[i].label);
        CHECK_INT_EQ(cx_kname_subdomain(s, n), rows[i].sub);
        CHECK_INT_EQ(cx_kname_label_fmt(s, n), oracle(&re_label, s));
        CHECK_INT_EQ(cx_kname_subdomain_fmt(s, n), oracle(&re_sub, s));
        CHECK_INT_EQ(cx_kname_is_label(s), rows[i].label);
        CHECK_INT_EQ(cx_kname_is_subdomain(s), rows[i].sub);
    }
    CHECK_INT_EQ(cx_kname_is_label(NULL), 0);
    CHECK_INT_EQ(cx_kname_is_subdomain(NULL), 0);
    /* only |n| bytes are read: a valid prefix of an invalid string */
    CHECK_INT_EQ(cx_kname_label("ab-", 2), 1);
    CHECK_INT_EQ(cx_kname_subdomain("a.b.", 3), 1);
    CHECK_INT_EQ(cx_kname_label("ab", 0), 0);
    release();
}

static void test_random_strings_agree_with_the_regexes(void)
{
    compile();
    static const char alpha[] = "az09-.A_";
    uint32_t seed = 2026;
    int labels = 0, subs = 0;
    for (int i = 0; i < 200000; i++) {
        char s[12];
        seed = seed * 1103515245u + 12345u;
        int len = (int)((seed >> 16) % 11);
        for (int k = 0; k < len; k++) {
            seed = seed * 1103515245u + 12345u;
            /* mostly the characters of valid names */
            s[k] = alpha[(seed >> 16) % ((seed >> 8) % 8 ? 6 : sizeof(alpha) - 1)];
        }
        s[len] = '\0';
        int l = oracle(&re_label, s), d = oracle(&re_sub, s);
        labels += l;
        subs += d;
        if (cx_kname_label_fmt(s, (size_t)len) != l ||
            cx_kname_subdomain_fmt(s, (size_t)len) != d) {
            fprintf(stderr, "# \"%s\": label %d subdomain %d\n", s, l, d);
            CHECK_INT_EQ(cx_kname_label_fmt(s, (size_t)len), l);
            CHECK_INT_EQ(cx_kname_subdomain_fmt(s, (size_t)len), d);
            break;
        }
    }
    /* the strings reached both answers of both formats */
    CHECK_INT_GT(labels, 1000);
    CHECK_INT_GT(subs, labels);
    CHECK_INT_LT(subs, 190000);
    release();
}

static void test_lengths(void)
{
    char s[300];
    memset(s, 'a', sizeof(s));
    CHECK_INT_EQ(cx_kname_label(s, 63), 1);
    CHECK_INT_EQ(cx_kname_label(s, 64), 0);
    CHECK_INT_EQ(cx_kname_label_fmt(s, 64), 1);
    /* 253 = four labels of 63 and dots, one more character */
    for (int k = 63; k < 253; k += 64)
        s[k] = '.';
    CHECK_INT_EQ(cx_kname_subdomain(s, 253), 1);
    CHECK_INT_EQ(cx_kname_subdomain(s, 254), 0);
    CHECK_INT_EQ(cx_kname_subdomain_fmt(s, 254), 1);
}

static void test_messages(void)
{
    char msg[512];
    CHECK_INT_EQ(cx_kname_label_msg("ok-1", 4, msg, sizeof(msg)), 0);
    CHECK_STR_EQ(msg, "");
    CHECK_INT_EQ(cx_kname_label_msg("Prod", 4, msg, sizeof(msg)), -1);
    CHECK_STR_EQ(msg, "a lowercase RFC 1123 label must consist of lower case alphanumeric "
                      "characters or '-', and must start and end with an alphanumeric character "
                      "(e.g. 'my-name',  or '123-abc', regex used for validation is "
                      "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')");
    CHECK_INT_EQ(cx_kname_label_msg("a.b", 3, msg, sizeof(msg)), -1);
    CHECK_STR_EQ(msg, "must not contain dots");
    char s[300];
    memset(s, 'a', sizeof(s));
    CHECK_INT_EQ(cx_kname_label_msg(s, 64, msg, sizeof(msg)), -1);
    CHECK_STR_EQ(msg, "must be no more than 63 characters");
    s[0] = '-';
    CHECK_INT_EQ(cx_kname_label_msg(s, 64, msg, sizeof(msg)), -1);
    CHECK_STR_EQ(msg, "must be no more than 63 characters; a lowercase RFC 1123 label must "
                      "consist of lower case alphanumeric characters or '-', and must start and "
                      "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
                      "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')");
    CHECK_INT_EQ(cx_kname_subdomain_msg("a..b", 4, msg, sizeof(msg)), -1);
    CHECK_STR_EQ(msg, "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                      "characters, '-' or '.', and must start and end with an alphanumeric "
                      "character (e.g. 'example.com', regex used for validation is "
                      "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
    s[0] = 'a';
    CHECK_INT_EQ(cx_kname_subdomain_msg(s, 254, msg, sizeof(msg)), -1);
    CHECK_STR_EQ(msg, "must be no more than 253 characters");
    CHECK_INT_EQ(cx_kname_subdomain_msg("a.b", 3, msg, sizeof(msg)), 0);
    /* a short buffer is cut, NUL-terminated; none at all still answers */
    char small[8];
    CHECK_INT_EQ(cx_kname_label_msg("A", 1, small, sizeof(small)), -1);
    CHECK_STR_EQ(small, "a lower");
    CHECK_INT_EQ(cx_kname_label_msg("A", 1, NULL, 0), -1);
    CHECK_INT_EQ(cx_kname_label_msg("a", 1, NULL, 0), 0);
}

static const struct cxt_case cases[] = {
    CXT(test_edge_cases),
    CXT(test_random_strings_agree_with_the_regexes),
    CXT(test_lengths),
    CXT(test_messages),
};
CXT_MAIN(cases)
