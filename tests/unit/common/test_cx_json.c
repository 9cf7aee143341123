#include "cx_hash.h"
#include "cx_json.h"
#include "cxtest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static char *canon(const char *json)
{
    cJSON *v = cJSON_Parse(json);
    if (!v)
        return NULL;
    struct cx_buf b;
    cx_buf_init(&b, 0);
    int rc = cx_json_canonical(v, &b);
    cJSON_Delete(v);
    if (rc) {
        cx_buf_free(&b);
        return NULL;
    }
    return cx_buf_steal(&b, NULL);
}

static void test_canonical_sorts_keys(void)
{
    char *a = canon("{\"b\":1,\"a\":{\"z\":[3,2,{\"y\":null,\"x\":true}],\"c\":\"s\"}}");
    char *b = canon("{ \"a\" : { \"c\":\"s\", \"z\":[3,2,{\"x\":true,\"y\":null}]}, \"b\":1 }");
    CHECK_STR_EQ(a, "{\"a\":{\"c\":\"s\",\"z\":[3,2,{\"x\":true,\"y\":null}]},\"b\":1}");
    CHECK_STR_EQ(a, b);
    free(a);
    free(b);
}

static void test_canonical_numbers_and_strings(void)
{
    char *a = canon("[1, -2, 1.5, 1e3, 12345678901234, \"q\\\"\\n\\u0001\\u00e9\"]");
    CHECK_STR_EQ(a, "[1,-2,1.5,1000,12345678901234,\"q\\\"\\n\\u0001\xc3\xa9\"]");
    free(a);
    a = canon("[0, -0, 10, -999999999999999, 999999999999999, 1e15, -7.0]");
    CHECK_STR_EQ(a, "[0,0,10,-999999999999999,999999999999999,1000000000000000,-7]");
    free(a);
    /* objects above and below the insertion-sort size sort alike */
    for (int n = 5; n <= 45; n += 40) {
        char in[1024], want[1024];
        size_t il = 0, wl = 0;
        il += (size_t)snprintf(in + il, sizeof(in) - il, "{");
        wl += (size_t)snprintf(want + wl, sizeof(want) - wl, "{");
        for (int i = n - 1; i >= 0; i--)
            il += (size_t)snprintf(in + il, sizeof(in) - il, "%s\"k%02d\":%d", i < n - 1 ? "," : "",
                                   i, i);
        for (int i = 0; i < n; i++)
            wl += (size_t)snprintf(want + wl, sizeof(want) - wl, "%s\"k%02d\":%d", i ? "," : "", i,
                                   i);
        snprintf(in + il, sizeof(in) - il, "}");
        snprintf(want + wl, sizeof(want) - wl, "}");
        a = canon(in);
        CHECK_STR_EQ(a, want);
        free(a);
    }
    /* array order is significant */
    char *x = canon("[1,2]"), *y = canon("[2,1]");
    CHECK(strcmp(x, y) != 0);
    free(x);
    free(y);
}

static void test_canonical_cap(void)
{
    cJSON *v = cJSON_Parse("{\"key\":\"a long enough value\"}");
    struct cx_buf b;
    cx_buf_init(&b, 10);
    CHECK_INT_EQ(cx_json_canonical(v, &b), -1);
    cx_buf_free(&b);
    cJSON_Delete(v);
}

static void test_path(void)
{
    cJSON *v = cJSON_Parse("{\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":\"b\"},\"x\":1}}");
    CHECK_STR_EQ(cx_json_path_str(v, "metadata", "name", NULL), "n");
    CHECK_STR_EQ(cx_json_path_str(v, "metadata", "labels", "a", NULL), "b");
    CHECK(cx_json_path_str(v, "metadata", "x", NULL) == NULL);
    CHECK(cx_json_path(v, "metadata", "name", "deeper", NULL) == NULL);
    CHECK(cx_json_path(v, "spec", NULL) == NULL);
    CHECK(cJSON_IsObject(cx_json_path(v, "metadata", "labels", NULL)));
    CHECK(cx_json_str(v, "metadata") == NULL);
    cJSON_Delete(v);
}

static void test_hashes(void)
{
    char hex[CX_SHA256_HEX_LEN];
    cx_sha256_hex("abc", 3, hex, 64);
    CHECK_STR_EQ(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    cx_sha256_hex("abc", 3, hex, 16);
    CHECK_STR_EQ(hex, "ba7816bf8f01cfea");
    /* FNV-1a 64 test vectors */
    CHECK(cx_fnv64(CX_FNV64_INIT, "", 0) == UINT64_C(0xcbf29ce484222325));
    CHECK(cx_fnv64(CX_FNV64_INIT, "a", 1) == UINT64_C(0xaf63dc4c8601ec8c));
    CHECK(cx_fnv64(CX_FNV64_INIT, "foobar", 6) == UINT64_C(0x85944171f73967e8));
}

/* Numbers from the wire into integers: in range, or clamped; never a cast
 * of 1e300, inf or NaN (undefined behaviour). */
static void test_int_clamped(void)
{
    const struct {
        const char *json;
        int64_t lo, hi, otherwise, want;
    } rows[] = {
        {"42", 0, 100, -1, 42},
        {"42.9", 0, 100, -1, 42},
        {"-3.5", -10, 10, 0, -3},
        {"1e300", 0, INT64_MAX, -1, INT64_MAX},
        {"1e999", 0, INT64_MAX, -1, INT64_MAX}, /* inf */
        {"-1e999", -5, 5, 0, -5},
        {"9223372036854775807", 0, INT64_MAX, -1, INT64_MAX},
        {"-9223372036854775808", INT64_MIN, 0, 1, INT64_MIN},
        {"1e20", 0, 999, 0, 999},
        {"-7", 0, 999, 0, 0},
        {"\"12\"", 0, 100, -1, -1}, /* not a number */
        {"null", 0, 100, -2, -2},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        cJSON *j = cJSON_Parse(rows[i].json);
        REQUIRE(j != NULL);
        CHECK_INT_EQ(cx_json_int(j, rows[i].lo, rows[i].hi, rows[i].otherwise), rows[i].want);
        cJSON_Delete(j);
    }
    CHECK_INT_EQ(cx_json_int(NULL, 0, 1, 9), 9);
    cJSON *nan = cJSON_CreateNumber(NAN);
    CHECK_INT_EQ(cx_json_int(nan, 0, 1, 9), 9);
    cJSON_Delete(nan);
}

static const struct cxt_case cases[] = {
    CXT(test_canonical_sorts_keys),
    CXT(test_canonical_numbers_and_strings),
    CXT(test_canonical_cap),
    CXT(test_path),
    CXT(test_hashes),
    CXT(test_int_clamped),
};
CXT_MAIN(cases)
