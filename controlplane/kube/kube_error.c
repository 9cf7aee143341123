#include "kube_error.h"

#include "cx_json.h"
#include "cx_time.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void copy_str(char *dst, size_t cap, const char *src, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

void kube_error_clear(struct kube_error *e)
{
    e->code = KUBE_OK;
    e->http_status = 0;
    e->retry_after_ms = -1;
    e->maybe_applied = 0;
    e->reason[0] = '\0';
    e->message[0] = '\0';
}

void kube_error_set(struct kube_error *e, enum kube_err_code code, const char *fmt, ...)
{
    kube_error_clear(e);
    e->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof(e->message), fmt, ap);
    va_end(ap);
}

enum kube_err_code kube_error_code_for(int http_status, const char *reason)
{
    if (http_status >= 200 && http_status < 300)
        return KUBE_OK;
    switch (http_status) {
    case 400:
        return KUBE_E_BAD_REQUEST;
    case 401:
        return KUBE_E_UNAUTHORIZED;
    case 403:
        return KUBE_E_FORBIDDEN;
    case 404:
        return KUBE_E_NOT_FOUND;
    case 405:
        return KUBE_E_METHOD;
    case 409:
        if (reason && strcmp(reason, "AlreadyExists") == 0)
            return KUBE_E_ALREADY_EXISTS;
        return KUBE_E_CONFLICT;
    case 410:
        return KUBE_E_EXPIRED;
    case 415:
        return KUBE_E_UNSUPPORTED;
    case 422:
        return KUBE_E_INVALID;
    case 429:
        return KUBE_E_TOO_MANY;
    case 500:
        return KUBE_E_INTERNAL;
    case 502:
    case 503:
        return KUBE_E_UNAVAILABLE;
    case 504:
        return KUBE_E_SERVER_TIMEOUT;
    default:
        break;
    }
    /* A Status without a usable code still names its reason. */
    if (reason) {
        static const struct {
            const char *reason;
            enum kube_err_code code;
        } by_reason[] = {
            {"Conflict", KUBE_E_CONFLICT},
            {"AlreadyExists", KUBE_E_ALREADY_EXISTS},
            {"NotFound", KUBE_E_NOT_FOUND},
            {"Expired", KUBE_E_EXPIRED},
            {"Gone", KUBE_E_EXPIRED},
            {"Invalid", KUBE_E_INVALID},
            {"Forbidden", KUBE_E_FORBIDDEN},
            {"Unauthorized", KUBE_E_UNAUTHORIZED},
            {"TooManyRequests", KUBE_E_TOO_MANY},
            {"BadRequest", KUBE_E_BAD_REQUEST},
            {"InternalError", KUBE_E_INTERNAL},
            {"ServiceUnavailable", KUBE_E_UNAVAILABLE},
            {"Timeout", KUBE_E_SERVER_TIMEOUT},
            {"MethodNotAllowed", KUBE_E_METHOD},
            {"UnsupportedMediaType", KUBE_E_UNSUPPORTED},
        };
        for (size_t i = 0; i < sizeof(by_reason) / sizeof(by_reason[0]); i++)
            if (strcmp(reason, by_reason[i].reason) == 0)
                return by_reason[i].code;
    }
    if (http_status >= 500)
        return KUBE_E_INTERNAL;
    return KUBE_E_OTHER;
}

const char *kube_error_name(enum kube_err_code code)
{
    static const char *const names[] = {
        "ok",
        "transport",
        "timeout",
        "cancelled",
        "decode",
        "bad_request",
        "unauthorized",
        "forbidden",
        "not_found",
        "method_not_allowed",
        "conflict",
        "already_exists",
        "expired",
        "unsupported_media_type",
        "invalid",
        "too_many_requests",
        "internal",
        "unavailable",
        "server_timeout",
        "other",
    };
    if ((unsigned)code < sizeof(names) / sizeof(names[0]))
        return names[code];
    return "other";
}

int64_t kube_retry_after_parse(const char *s)
{
    if (!s)
        return -1;
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno || v < 0)
        return -1;
    while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
        end++;
    if (*end != '\0')
        return -1;
    if (v > KUBE_RETRY_AFTER_MAX_S)
        v = KUBE_RETRY_AFTER_MAX_S;
    return (int64_t)v * 1000;
}

void kube_error_from_status(struct kube_error *e, const cJSON *status)
{
    kube_error_clear(e);
    const char *reason = cx_json_str(status, "reason");
    const char *message = cx_json_str(status, "message");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(status, "code");
    /* A number from the wire is cast only once in range (1e300: 999). */
    int http = (int)cx_json_int(code, 0, 999, 0);
    if (reason)
        copy_str(e->reason, sizeof(e->reason), reason, strlen(reason));
    if (message)
        copy_str(e->message, sizeof(e->message), message, strlen(message));
    e->http_status = http;
    e->code = kube_error_code_for(http, reason);
    if (e->code == KUBE_OK)
        e->code = KUBE_E_OTHER; /* a Status Failure with a 2xx code: still a failure */
    /* details.retryAfterSeconds is how a Status carries Retry-After;
     * capped at a day like the header. */
    const cJSON *ras = cx_json_path(status, "details", "retryAfterSeconds", NULL);
    int64_t ra_s = cx_json_int(ras, -1, KUBE_RETRY_AFTER_MAX_S, -1);
    if (ra_s >= 0)
        e->retry_after_ms = ra_s * 1000;
}

void kube_error_from_http(struct kube_error *e, int status, const char *body, size_t body_len,
                          const char *retry_after)
{
    cJSON *st = NULL;
    if (body && body_len > 0 && body_len < (1u << 20))
        st = cx_json_parse(body, body_len);
    const char *kind = st ? cx_json_str(st, "kind") : NULL;
    if (kind && strcmp(kind, "Status") == 0) {
        kube_error_from_status(e, st);
        /* The HTTP code is what the server really answered; a Status with
         * a different code (rare) keeps its reason. */
        e->http_status = status;
        enum kube_err_code c = kube_error_code_for(status, e->reason[0] ? e->reason : NULL);
        e->code = c == KUBE_OK ? KUBE_E_OTHER : c;
    } else {
        kube_error_clear(e);
        e->http_status = status;
        e->code = kube_error_code_for(status, NULL);
        if (body && body_len) {
            /* Plain text (429 from the priority-and-fairness filter): keep
             * its first line. */
            size_t n = 0;
            while (n < body_len && body[n] != '\n' && body[n] != '\0')
                n++;
            copy_str(e->message, sizeof(e->message), body, n);
        } else {
            snprintf(e->message, sizeof(e->message), "HTTP %d", status);
        }
    }
    int64_t ra = kube_retry_after_parse(retry_after);
    if (ra >= 0)
        e->retry_after_ms = ra;
    cJSON_Delete(st);
}

static uint64_t rng_next(uint64_t *s)
{
    if (*s == 0)
        *s = (uint64_t)cx_mono_ns() ^ ((uint64_t)(uintptr_t)s << 17) ^ UINT64_C(0x9e3779b97f4a7c15);
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    return x;
}

static double unit_random(struct kube_backoff *b)
{
    return (double)(rng_next(&b->rng) >> 11) / (double)(UINT64_C(1) << 53);
}

int64_t kube_backoff_next(struct kube_backoff *b)
{
    double base = b->base_ms > 0 ? (double)b->base_ms : 200.0;
    double max = b->max_ms > 0 ? (double)b->max_ms : 30000.0;
    double factor = b->factor > 1.0 ? b->factor : 2.0;
    double jitter = b->jitter < 0 ? 0.0 : (b->jitter == 0 ? 0.5 : b->jitter);
    if (jitter > 1.0)
        jitter = 1.0;
    double d = base;
    for (unsigned i = 0; i < b->attempt && d < max; i++)
        d *= factor;
    if (d > max)
        d = max;
    if (jitter > 0) {
        d -= d * jitter * unit_random(b);
    }
    if (b->attempt < 64)
        b->attempt++;
    return (int64_t)d < 1 ? 1 : (int64_t)d;
}

void kube_backoff_reset(struct kube_backoff *b)
{
    b->attempt = 0;
}

int64_t kube_backoff_nth_ns(int n, int64_t first_ns, int64_t max_ns, uint64_t *rng)
{
    struct kube_backoff b = {
        .base_ms = first_ns / 1000000 > 0 ? first_ns / 1000000 : 1,
        .max_ms = max_ns / 1000000 > 0 ? max_ns / 1000000 : 1,
        .jitter = 0.5,
        .attempt = n > 1 ? (unsigned)(n - 1 < 64 ? n - 1 : 64) : 0,
        .rng = *rng,
    };
    int64_t ms = kube_backoff_next(&b);
    *rng = b.rng;
    return ms * 1000000;
}

int kube_retry_decide(const struct kube_error *e, enum kube_verb_class verb, int idempotent,
                      struct kube_backoff *b, int64_t max_retry_after_ms, int64_t *delay_ms)
{
    int safe_to_repeat = verb == KUBE_VERB_READ || idempotent;
    int retry = 0;
    int use_retry_after = 0;
    switch (e->code) {
    case KUBE_E_TOO_MANY:
        retry = 1;
        use_retry_after = 1;
        break;
    case KUBE_E_INTERNAL:
    case KUBE_E_UNAVAILABLE:
    case KUBE_E_SERVER_TIMEOUT:
        if (e->retry_after_ms >= 0) {
            retry = 1;
            use_retry_after = 1;
        } else {
            retry = safe_to_repeat;
        }
        break;
    case KUBE_E_TRANSPORT:
    case KUBE_E_TIMEOUT:
        retry = safe_to_repeat || !e->maybe_applied;
        break;
    default:
        retry = 0;
        break;
    }
    if (!retry)
        return 0;
    int64_t backoff = kube_backoff_next(b);
    if (use_retry_after && e->retry_after_ms >= 0) {
        int64_t ra = e->retry_after_ms;
        if (max_retry_after_ms > 0 && ra > max_retry_after_ms)
            ra = max_retry_after_ms;
        /* Retry-After: 0 still deserves a pause so a burst of 429s does not
         * become a busy loop. */
        if (ra <= 0)
            ra = backoff < 50 ? backoff : 50;
        /* Clients told the same Retry-After at once would come back at
         * once: spread them over up to a quarter more. */
        if (b->jitter >= 0)
            ra += (int64_t)((double)ra * 0.25 * unit_random(b));
        /* A server that keeps answering "retry after 1 s" still gets the
         * growing backoff once it exceeds that. */
        *delay_ms = ra > backoff ? ra : backoff;
    } else {
        *delay_ms = backoff;
    }
    return 1;
}

int64_t kube_retry_next(const struct kube_error *e, const struct kube_retry_state *st,
                        struct kube_backoff *b)
{
    if (e->code == KUBE_OK || e->code == KUBE_E_DECODE || e->code == KUBE_E_CANCELLED)
        return -1;
    /* A 401 with a token file: the token may just have rotated; the
     * re-read token goes out once, at once. */
    if (e->code == KUBE_E_UNAUTHORIZED && st->auth_retry)
        return 0;
    int64_t delay = -1;
    if (st->attempts >= st->max_attempts ||
        !kube_retry_decide(e, st->verb, st->idempotent, b, st->max_retry_after_ms, &delay))
        return -1;
    if (st->deadline_ns && st->now_ns + delay * 1000000 >= st->deadline_ns)
        return -1; /* no time left for another try */
    return delay;
}
