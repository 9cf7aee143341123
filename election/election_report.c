#include "election_report.h"

#include <stdio.h>
#include <string.h>

static uint64_t fnv(uint64_t h, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++)
        h = (h ^ *p) * UINT64_C(0x100000001b3);
    return (h ^ 0xff) * UINT64_C(0x100000001b3); /* a separator */
}

static uint64_t key_of(const struct election_failure *f)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    h = fnv(h, f->verb);
    h = fnv(h, f->resource);
    h = fnv(h, f->ns);
    h = fnv(h, f->name);
    h = (h ^ (uint64_t)f->http_status) * UINT64_C(0x100000001b3);
    h = (h ^ (uint64_t)f->cls) * UINT64_C(0x100000001b3);
    h = fnv(h, f->message);
    return h ? h : 1;
}

void election_report_init(struct election_report *r)
{
    memset(r, 0, sizeof(*r));
}

static void describe(const struct election_failure *f, char *out, size_t cap)
{
    char status[32];
    if (f->http_status > 0)
        snprintf(status, sizeof(status), "HTTP %d", f->http_status);
    else
        snprintf(status, sizeof(status), "no answer");
    snprintf(out, cap, "%s %s %s/%s: %s (%s): %s", f->verb, f->resource, f->ns, f->name, status,
             election_err_class_name(f->cls),
             f->message && *f->message ? f->message : "(no message)");
}

enum election_report_say election_report_failure(struct election_report *r, int64_t now_ns,
                                                 const struct election_failure *f, char *line,
                                                 size_t cap)
{
    line[0] = '\0';
    describe(f, r->last, sizeof(r->last));
    r->last_http = f->http_status;
    r->last_cls = f->cls;
    uint64_t key = key_of(f);
    struct election_report_slot *s = NULL, *oldest = &r->slot[0];
    for (size_t i = 0; i < ELECTION_REPORT_SLOTS; i++) {
        if (r->slot[i].key == key) {
            s = &r->slot[i];
            break;
        }
        if (r->slot[i].key == 0 ||
            (oldest->key != 0 && r->slot[i].last_logged < oldest->last_logged))
            oldest = &r->slot[i];
    }
    const char *why = f->purpose ? f->purpose : "";
    if (!s) {
        /* News (or pushed out of the table long ago): say it now. */
        s = oldest;
        memset(s, 0, sizeof(*s));
        s->key = key;
        snprintf(s->verb, sizeof(s->verb), "%s", f->verb);
        s->last_logged = now_ns;
        s->total = 1;
        snprintf(line, cap, "%s%s%s; retrying with backoff", r->last,
                 *why ? "; while trying to " : "", why);
        return ELECTION_SAY_FIRST;
    }
    s->total++;
    s->since_logged++;
    if (now_ns - s->last_logged < ELECTION_REPORT_REPEAT_NS)
        return ELECTION_SAY_NOTHING;
    snprintf(line, cap, "%s; again, %llu times in the last %lld s (%llu in all)", r->last,
             (unsigned long long)s->since_logged,
             (long long)((now_ns - s->last_logged) / 1000000000), (unsigned long long)s->total);
    s->last_logged = now_ns;
    s->since_logged = 0;
    return ELECTION_SAY_AGAIN;
}

bool election_report_success(struct election_report *r, const char *verb, const char *resource,
                             char *line, size_t cap)
{
    line[0] = '\0';
    uint64_t n = 0;
    bool left = false;
    for (size_t i = 0; i < ELECTION_REPORT_SLOTS; i++) {
        struct election_report_slot *s = &r->slot[i];
        if (s->key == 0)
            continue;
        if (strcmp(s->verb, verb) == 0) {
            n += s->total;
            memset(s, 0, sizeof(*s));
        } else {
            left = true;
        }
    }
    if (n == 0)
        return false;
    snprintf(line, cap, "%s %s succeeded after %llu failed request%s (last: %s)", verb, resource,
             (unsigned long long)n, n == 1 ? "" : "s", r->last);
    if (!left) {
        r->last[0] = '\0';
        r->last_http = 0;
        r->last_cls = ELECTION_ERR_NONE;
    }
    return true;
}

const char *election_report_last(const struct election_report *r)
{
    return r->last;
}

const char *election_err_class_name(enum election_err_class cls)
{
    static const char *const names[ELECTION_ERR_COUNT] = {
        "ok",           "not_found", "conflict",  "already_exists", "expired", "bad_request",
        "unauthorized", "forbidden", "invalid",   "throttled",      "server",  "timeout",
        "transport",    "decode",    "cancelled", "other",
    };
    return (unsigned)cls < ELECTION_ERR_COUNT ? names[cls] : "other";
}
