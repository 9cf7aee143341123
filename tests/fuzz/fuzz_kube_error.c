/* Fuzz target: the API server's error answers as the kube client reads
 * them. Input: two bytes of HTTP status, one byte of Retry-After length,
 * that many bytes of Retry-After header value, then the body (a Status
 * object, plain text, or anything). The decoded error must be bounded
 * (reason and message terminated inside their buffers, a known code,
 * Retry-After -1 or within a day), the same body decoded as a watch ERROR
 * event's Status too, and every retry decision made from it must give a
 * delay that is positive and capped. */
#include "cx_json.h"
#include "kube_error.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RA_MAX_MS   (86400LL * 1000)
#define CAP_MS      30000LL
#define BACKOFF_MAX 30000LL

static void check_error(const struct kube_error *e)
{
    if (strnlen(e->reason, sizeof(e->reason)) >= sizeof(e->reason) ||
        strnlen(e->message, sizeof(e->message)) >= sizeof(e->message))
        abort();
    if ((unsigned)e->code > KUBE_E_OTHER || e->code == KUBE_OK)
        abort();
    if (e->retry_after_ms != -1 && (e->retry_after_ms < 0 || e->retry_after_ms > RA_MAX_MS))
        abort();
    if (!kube_error_name(e->code))
        abort();
}

static void check_retry(const struct kube_error *e)
{
    for (int verb = 0; verb < 2; verb++) {
        struct kube_backoff b = {.base_ms = 100, .max_ms = BACKOFF_MAX, .rng = 42};
        for (int i = 0; i < 3; i++) {
            int64_t d = -1;
            if (!kube_retry_decide(e, (enum kube_verb_class)verb, i & 1, &b, CAP_MS, &d))
                break;
            /* Retry-After (capped, plus a quarter) or the backoff. */
            if (d < 1 || d > CAP_MS + CAP_MS / 4 + 1)
                abort();
        }
        struct kube_retry_state st = {.verb = (enum kube_verb_class)verb,
                                      .attempts = 1,
                                      .max_attempts = 5,
                                      .auth_retry = verb,
                                      .now_ns = 1000000000LL,
                                      .deadline_ns = 1000000000LL + 20000LL * 1000000,
                                      .max_retry_after_ms = CAP_MS};
        int64_t d = kube_retry_next(e, &st, &b);
        if (d < -1 || d > 20000)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    int status = (int)(((unsigned)data[0] << 8 | data[1]) % 1000);
    size_t ralen = data[2];
    data += 3;
    size -= 3;
    if (ralen > size)
        ralen = size;
    char ra[256];
    memcpy(ra, data, ralen);
    ra[ralen] = '\0';
    const char *body = (const char *)data + ralen;
    size_t body_len = size - ralen;

    int64_t ms = kube_retry_after_parse(ra);
    if (ms != -1 && (ms < 0 || ms > RA_MAX_MS))
        abort();

    struct kube_error e;
    kube_error_from_http(&e, status < 200 || status >= 300 ? status : 500, body, body_len,
                         ralen ? ra : NULL);
    check_error(&e);
    check_retry(&e);

    /* The same bytes as the object of a watch ERROR event. */
    cJSON *st = cx_json_parse(body, body_len);
    if (st) {
        kube_error_from_status(&e, st);
        check_error(&e);
        check_retry(&e);
        cJSON_Delete(st);
    }
    return 0;
}
