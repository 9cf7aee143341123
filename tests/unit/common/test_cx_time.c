#include "cx_time.h"
#include "cxtest.h"

#include <stdio.h>

static int64_t dur(const char *s)
{
    int64_t ns = -42;
    char err[256];
    if (cx_duration_parse(s, &ns, err, sizeof(err)) != 0)
        return -1;
    return ns;
}

static void test_duration_units(void)
{
    CHECK_INT_EQ(dur("15s"), 15 * CX_NS_PER_S);
    CHECK_INT_EQ(dur("500ms"), 500 * CX_NS_PER_MS);
    CHECK_INT_EQ(dur("1m30s"), 90 * CX_NS_PER_S);
    CHECK_INT_EQ(dur("1.5h"), 5400 * CX_NS_PER_S);
    CHECK_INT_EQ(dur("2h45m"), (2 * 3600 + 45 * 60) * CX_NS_PER_S);
    CHECK_INT_EQ(dur("10us"), 10000);
    CHECK_INT_EQ(dur("10\xc2\xb5s"), 10000);
    CHECK_INT_EQ(dur("7ns"), 7);
    CHECK_INT_EQ(dur("0"), 0);
    CHECK_INT_EQ(dur("0s"), 0);
    CHECK_INT_EQ(dur("1.25s"), 1250 * CX_NS_PER_MS);
    CHECK_INT_EQ(dur("+3s"), 3 * CX_NS_PER_S);
}

static void test_duration_errors(void)
{
    static const struct {
        const char *in, *msg;
    } bad[] = {
        {"", "empty"},
        {"15", "missing unit"},
        {"-1s", "must not be negative"},
        {"5x", "unknown unit at \"x\""},
        {"s", "expected a number"},
        {"1s2", "missing unit"},
        {"99999999999999999999h", "too large"},
        {"3000000h", "too large"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t ns;
        char err[256] = "";
        CHECK_INT_EQ(cx_duration_parse(bad[i].in, &ns, err, sizeof(err)), -1);
        CHECK_STR_CONTAINS(err, bad[i].msg);
    }
}

static void test_duration_format(void)
{
    char b[64];
    cx_duration_format(15 * CX_NS_PER_S, b, sizeof(b));
    CHECK_STR_EQ(b, "15s");
    cx_duration_format(500 * CX_NS_PER_MS, b, sizeof(b));
    CHECK_STR_EQ(b, "500ms");
    cx_duration_format(90 * CX_NS_PER_S, b, sizeof(b));
    CHECK_STR_EQ(b, "1m30s");
    cx_duration_format(3600 * CX_NS_PER_S + 1500 * CX_NS_PER_MS, b, sizeof(b));
    CHECK_STR_EQ(b, "1h0m1.5s");
    cx_duration_format(0, b, sizeof(b));
    CHECK_STR_EQ(b, "0s");
    /* format then parse is the identity */
    int64_t v[] = {1, 999, CX_NS_PER_MS, 2500 * CX_NS_PER_MS, 7261 * CX_NS_PER_S};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        cx_duration_format(v[i], b, sizeof(b));
        CHECK_INT_EQ(dur(b), v[i]);
    }
}

static void test_time_format(void)
{
    /* 2006-01-02T15:04:05.123456789Z */
    int64_t t = INT64_C(1136214245) * CX_NS_PER_S + 123456789;
    char b[64];
    cx_time_format_rfc3339(t, b, sizeof(b));
    CHECK_STR_EQ(b, "2006-01-02T15:04:05Z");
    CHECK_INT_EQ(strlen(b) + 1, CX_TIME_RFC3339_LEN);
    cx_time_format_micro(t, b, sizeof(b));
    CHECK_STR_EQ(b, "2006-01-02T15:04:05.123456Z");
    CHECK_INT_EQ(strlen(b) + 1, CX_TIME_MICRO_LEN);
    cx_time_format_micro(INT64_C(1136214245) * CX_NS_PER_S, b, sizeof(b));
    CHECK_STR_EQ(b, "2006-01-02T15:04:05.000000Z");
}

static void test_time_parse(void)
{
    int64_t t = 0;
    REQUIRE_INT_EQ(cx_time_parse_rfc3339("2006-01-02T15:04:05Z", &t), 0);
    CHECK_INT_EQ(t, INT64_C(1136214245) * CX_NS_PER_S);
    REQUIRE_INT_EQ(cx_time_parse_rfc3339("2006-01-02T15:04:05.123456Z", &t), 0);
    CHECK_INT_EQ(t, INT64_C(1136214245) * CX_NS_PER_S + 123456000);
    REQUIRE_INT_EQ(cx_time_parse_rfc3339("2006-01-02T16:04:05+01:00", &t), 0);
    CHECK_INT_EQ(t, INT64_C(1136214245) * CX_NS_PER_S);
    REQUIRE_INT_EQ(cx_time_parse_rfc3339("2024-02-29T00:00:00Z", &t), 0);
    static const char *bad[] = {
        "2006-01-02 15:04:05",             /* Python str(datetime): no T */
        "2006-01-02T15:04:05",             /* no zone */
        "2006-13-02T15:04:05Z",            /* month */
        "2023-02-29T00:00:00Z",            /* not a leap year */
        "2006-01-02T15:04:05.Z",           /* empty fraction */
        "2006-01-02T15:04:05.1234567890Z", /* 10 digits */
        "2006-01-02T15:04:05Zjunk",
        "",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK_INT_EQ(cx_time_parse_rfc3339(bad[i], &t), -1);
}

static void test_clocks(void)
{
    int64_t a = cx_mono_ns();
    int64_t b = cx_mono_ns();
    CHECK_INT_GE(b, a);
    /* wall clock is after 2020 */
    CHECK_INT_GT(cx_wall_ns(), INT64_C(1577836800) * CX_NS_PER_S);
}

static const struct cxt_case cases[] = {
    CXT(test_duration_units), CXT(test_duration_errors), CXT(test_duration_format),
    CXT(test_time_format),    CXT(test_time_parse),      CXT(test_clocks),
};
CXT_MAIN(cases)
