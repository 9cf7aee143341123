/* Status decoding into typed errors, Retry-After, backoff math and the
 * retry policy. */
#include "cxtest.h"
#include "kube_error.h"

#include <stdio.h>
#include <string.h>

static void http(struct kube_error *e, int code, const char *body, const char *ra)
{
    kube_error_from_http(e, code, body, body ? strlen(body) : 0, ra);
}

static void test_status_shapes(void)
{
    struct kube_error e;
    http(&e, 409,
         "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
         "\"message\":\"Operation cannot be fulfilled on configmaps \\\"foo\\\": the object has "
         "been modified\",\"reason\":\"Conflict\",\"details\":{\"name\":\"foo\",\"kind\":"
         "\"configmaps\"},\"code\":409}",
         NULL);
    CHECK_INT_EQ(e.code, KUBE_E_CONFLICT);
    CHECK_INT_EQ(e.http_status, 409);
    CHECK_STR_EQ(e.reason, "Conflict");
    CHECK_STR_CONTAINS(e.message, "the object has been modified");
    CHECK_INT_EQ(e.retry_after_ms, -1);

    http(&e, 409,
         "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"configmaps \\\"foo\\\" "
         "already exists\",\"reason\":\"AlreadyExists\",\"code\":409}",
         NULL);
    CHECK_INT_EQ(e.code, KUBE_E_ALREADY_EXISTS);

    const struct {
        int http;
        const char *reason;
        enum kube_err_code want;
    } rows[] = {
        {404, "NotFound", KUBE_E_NOT_FOUND},
        {410, "Expired", KUBE_E_EXPIRED},
        {410, "Gone", KUBE_E_EXPIRED},
        {422, "Invalid", KUBE_E_INVALID},
        {401, "Unauthorized", KUBE_E_UNAUTHORIZED},
        {403, "Forbidden", KUBE_E_FORBIDDEN},
        {429, "TooManyRequests", KUBE_E_TOO_MANY},
        {500, "InternalError", KUBE_E_INTERNAL},
        {503, "ServiceUnavailable", KUBE_E_UNAVAILABLE},
        {504, "Timeout", KUBE_E_SERVER_TIMEOUT},
        {400, "BadRequest", KUBE_E_BAD_REQUEST},
        {415, "UnsupportedMediaType", KUBE_E_UNSUPPORTED},
        {405, "MethodNotAllowed", KUBE_E_METHOD},
        {418, "Teapot", KUBE_E_OTHER},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char body[256];
        snprintf(body, sizeof(body),
                 "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"m%zu\",\"reason\":"
                 "\"%s\",\"code\":%d}",
                 i, rows[i].reason, rows[i].http);
        http(&e, rows[i].http, body, NULL);
        CHECK_INT_EQ(e.code, rows[i].want);
        CHECK_STR_EQ(e.reason, rows[i].reason);
        char m[8];
        snprintf(m, sizeof(m), "m%zu", i);
        CHECK_STR_EQ(e.message, m);
    }
}

static void test_plain_text_and_retry_after(void)
{
    struct kube_error e;
    http(&e, 429, "Too many requests, please try again later.\n", "1");
    CHECK_INT_EQ(e.code, KUBE_E_TOO_MANY);
    CHECK_INT_EQ(e.retry_after_ms, 1000);
    CHECK_STR_EQ(e.message, "Too many requests, please try again later.");
    http(&e, 503, NULL, " 7 ");
    CHECK_INT_EQ(e.code, KUBE_E_UNAVAILABLE);
    CHECK_INT_EQ(e.retry_after_ms, 7000);
    CHECK_STR_EQ(e.message, "HTTP 503");
    http(&e, 500, "<html>", "Wed, 21 Oct 2015 07:28:00 GMT");
    CHECK_INT_EQ(e.retry_after_ms, -1);
    CHECK_INT_EQ(kube_retry_after_parse("-1"), -1);
    CHECK_INT_EQ(kube_retry_after_parse("1x"), -1);
    CHECK_INT_EQ(kube_retry_after_parse("0"), 0);
    CHECK_INT_EQ(kube_retry_after_parse("999999999"), 86400 * 1000LL);
    /* Status body with details.retryAfterSeconds, header absent. */
    http(&e, 504,
         "{\"kind\":\"Status\",\"reason\":\"Timeout\",\"message\":\"Too large resource version\","
         "\"details\":{\"retryAfterSeconds\":1},\"code\":504}",
         NULL);
    CHECK_INT_EQ(e.code, KUBE_E_SERVER_TIMEOUT);
    CHECK_INT_EQ(e.retry_after_ms, 1000);
    /* A non-Status JSON body is not mistaken for a Status. */
    http(&e, 404, "{\"kind\":\"ConfigMap\",\"reason\":\"Conflict\"}", NULL);
    CHECK_INT_EQ(e.code, KUBE_E_NOT_FOUND);
    CHECK_STR_EQ(e.reason, "");
}

static void test_error_names(void)
{
    CHECK_STR_EQ(kube_error_name(KUBE_E_CONFLICT), "conflict");
    CHECK_STR_EQ(kube_error_name(KUBE_E_OTHER), "other");
    CHECK_STR_EQ(kube_error_name(KUBE_E_SERVER_TIMEOUT), "server_timeout");
    CHECK_STR_EQ(kube_error_name((enum kube_err_code)99), "other");
}

static void test_backoff_growth_and_cap(void)
{
    struct kube_backoff b = {.base_ms = 100, .max_ms = 1000, .factor = 2, .jitter = -1};
    int64_t want[] = {100, 200, 400, 800, 1000, 1000, 1000};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        CHECK_INT_EQ(kube_backoff_next(&b), want[i]);
    kube_backoff_reset(&b);
    CHECK_INT_EQ(kube_backoff_next(&b), 100);
}

static void test_backoff_jitter_spread(void)
{
    /* Jitter 0.5: every delay in [d/2, d], and two replicas seeded
     * differently do not walk in lockstep. */
    struct kube_backoff a = {.base_ms = 1000, .max_ms = 1000, .jitter = 0.5, .rng = 1};
    struct kube_backoff c = {.base_ms = 1000, .max_ms = 1000, .jitter = 0.5, .rng = 2};
    int same = 0;
    int64_t lo = 1000, hi = 0;
    for (int i = 0; i < 200; i++) {
        int64_t x = kube_backoff_next(&a), y = kube_backoff_next(&c);
        CHECK_INT_GE(x, 500);
        CHECK_INT_LE(x, 1000);
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
        same += x == y;
    }
    CHECK_INT_LT(same, 20);
    CHECK_INT_LT(lo, 600);
    CHECK_INT_GT(hi, 900);
    /* Defaults: 200 ms base, jitter 0.5. */
    struct kube_backoff d = {0};
    int64_t v = kube_backoff_next(&d);
    CHECK_INT_GE(v, 100);
    CHECK_INT_LE(v, 200);
}

static void test_retry_policy(void)
{
    struct kube_error e;
    struct kube_backoff b = {.base_ms = 100, .jitter = -1};
    int64_t d = -1;

    /* 429 with Retry-After: every verb, after Retry-After (capped). */
    http(&e, 429, "x", "3");
    CHECK_INT_EQ(kube_retry_decide(&e, KUBE_VERB_WRITE, 0, &b, 10000, &d), 1);
    CHECK_INT_EQ(d, 3000);
    CHECK_INT_EQ(kube_retry_decide(&e, KUBE_VERB_WRITE, 0, &b, 2000, &d), 1);
    CHECK_INT_EQ(d, 2000);
    /* 429 without Retry-After: backoff. */
    kube_backoff_reset(&b);
    http(&e, 429, "x", NULL);
    CHECK_INT_EQ(kube_retry_decide(&e, KUBE_VERB_READ, 0, &b, 0, &d), 1);
    CHECK_INT_EQ(d, 100);
    /* Retry-After: 0 does not busy-loop. */
    http(&e, 429, "x", "0");
    CHECK_INT_EQ(kube_retry_decide(&e, KUBE_VERB_READ, 0, &b, 0, &d), 1);
    CHECK_INT_GT(d, 0);

    /* 500 without Retry-After: reads and idempotent writes only. */
    kube_backoff_reset(&b);
    http(&e, 500, "boom", NULL);
    CHECK_INT_EQ(kube_retry_decide(&e, KUBE_VERB_READ, 0, &b, 0, &d), 1);
    CHECK_INT_EQ(d, 100);
    CHECK_INT_EQ(kube_retry_decide(&e, KUBE_VERB_WRITE, 0, &b, 0, &d), 0);
    CHECK_INT_EQ(kube_retry_decide(&e, KUBE_VERB_WRITE, 1, &b, 0, &d), 1);
    /* 503 with Retry-After: the server did not process it, writes too. */
    http(&e, 503, "busy", "1");
    CHECK_INT_EQ(kube_retry_decide(&e, KUBE_VERB_WRITE, 0, &b, 0, &d), 1);
    CHECK_INT_EQ(d, 1000);

    /* Transport: a write that may have been applied is not repeated
     * unless idempotent; one that never left is. */
    kube_error_set(&e, KUBE_E_TRANSPORT, "reset");
    e.maybe_applied = 1;
    CHECK_INT_EQ(kube_retry_decide(&e, KUBE_VERB_WRITE, 0, &b, 0, &d), 0);
    CHECK_INT_EQ(kube_retry_decide(&e, KUBE_VERB_WRITE, 1, &b, 0, &d), 1);
    CHECK_INT_EQ(kube_retry_decide(&e, KUBE_VERB_READ, 0, &b, 0, &d), 1);
    e.maybe_applied = 0;
    CHECK_INT_EQ(kube_retry_decide(&e, KUBE_VERB_WRITE, 0, &b, 0, &d), 1);
    kube_error_set(&e, KUBE_E_TIMEOUT, "slow");
    e.maybe_applied = 1;
    CHECK_INT_EQ(kube_retry_decide(&e, KUBE_VERB_WRITE, 0, &b, 0, &d), 0);

    /* 4xx: never. */
    const int never[] = {400, 401, 403, 404, 409, 410, 422};
    for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
        http(&e, never[i], "x", "1");
        CHECK_INT_EQ(kube_retry_decide(&e, KUBE_VERB_READ, 1, &b, 0, &d), 0);
    }
}

/* Numbers from the wire that no integer holds (found by fuzz_kube_error:
 * casting them was undefined behaviour, and a retryAfterSeconds of 1e13
 * overflowed the milliseconds): clamped like the header is. */
static void test_status_numbers_out_of_range(void)
{
    struct kube_error e;
    http(&e, 500,
         "{\"kind\":\"Status\",\"reason\":\"InternalError\",\"code\":1e20,"
         "\"details\":{\"retryAfterSeconds\":1e300}}",
         NULL);
    CHECK_INT_EQ(e.code, KUBE_E_INTERNAL);
    CHECK_INT_EQ(e.http_status, 500);
    CHECK_INT_EQ(e.retry_after_ms, (int64_t)KUBE_RETRY_AFTER_MAX_S * 1000);

    cJSON *st = cJSON_Parse("{\"kind\":\"Status\",\"code\":-1e300,\"reason\":\"Expired\","
                            "\"details\":{\"retryAfterSeconds\":-5}}");
    REQUIRE(st != NULL);
    kube_error_from_status(&e, st);
    CHECK_INT_EQ(e.http_status, 0);
    CHECK_INT_EQ(e.code, KUBE_E_EXPIRED);
    CHECK_INT_EQ(e.retry_after_ms, -1);
    cJSON_Delete(st);

    st = cJSON_Parse("{\"kind\":\"Status\",\"code\":429,\"details\":{\"retryAfterSeconds\":7}}");
    REQUIRE(st != NULL);
    kube_error_from_status(&e, st);
    CHECK_INT_EQ(e.http_status, 429);
    CHECK_INT_EQ(e.code, KUBE_E_TOO_MANY);
    CHECK_INT_EQ(e.retry_after_ms, 7000);
    cJSON_Delete(st);
    /* the header: a day at most */
    CHECK_INT_EQ(kube_retry_after_parse("999999"), (int64_t)KUBE_RETRY_AFTER_MAX_S * 1000);
}

static const struct cxt_case cases[] = {
    CXT(test_status_shapes),
    CXT(test_plain_text_and_retry_after),
    CXT(test_error_names),
    CXT(test_backoff_growth_and_cap),
    CXT(test_backoff_jitter_spread),
    CXT(test_retry_policy),
    CXT(test_status_numbers_out_of_range),
};
CXT_MAIN(cases)
