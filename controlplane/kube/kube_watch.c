#include "kube_watch.h"

#include "cx_json.h"

#include <stdio.h>
#include <string.h>

static const char *const event_names[KUBE_EV_COUNT] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK",
                                                       "ERROR"};

int kube_event_type_parse(const char *s)
{
    if (!s)
        return -1;
    for (int i = 0; i < KUBE_EV_COUNT; i++)
        if (strcmp(s, event_names[i]) == 0)
            return i;
    return -1;
}

const char *kube_event_type_name(enum kube_event_type t)
{
    if ((unsigned)t < KUBE_EV_COUNT)
        return event_names[t];
    return "UNKNOWN";
}

void kube_watch_parser_init(struct kube_watch_parser *p, size_t max_event, kube_watch_event_fn cb,
                            void *user_data)
{
    memset(p, 0, sizeof(*p));
    p->max_event = max_event ? max_event : KUBE_WATCH_EVENT_MAX;
    /* +2 so a line of exactly max_event bytes fits with its CRLF. */
    cx_buf_init(&p->line, p->max_event + 2);
    p->cb = cb;
    p->user_data = user_data;
}

void kube_watch_parser_reset(struct kube_watch_parser *p)
{
    cx_buf_reset(&p->line);
    p->status = KUBE_WATCH_OK;
    p->error[0] = '\0';
}

void kube_watch_parser_free(struct kube_watch_parser *p)
{
    cx_buf_free(&p->line);
}

static int fail(struct kube_watch_parser *p, int status, const char *msg)
{
    p->status = status;
    snprintf(p->error, sizeof(p->error), "%s", msg);
    cx_buf_reset(&p->line);
    return status;
}

static int is_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return 0;
    return 1;
}

/* Decodes one complete line (without its LF) and delivers it. */
static int handle_line(struct kube_watch_parser *p, const char *s, size_t n)
{
    if (n > 0 && s[n - 1] == '\r')
        n--;
    /* The cap applies to every line, blank or not, so that the verdict
     * never depends on how the bytes were chunked. */
    if (n > p->max_event)
        return fail(p, KUBE_WATCH_E_TOO_BIG, "watch event larger than the cap");
    if (n == 0 || is_blank(s, n))
        return KUBE_WATCH_OK;
    cJSON *ev = cx_json_parse(s, n);
    if (!ev)
        return fail(p, KUBE_WATCH_E_GARBAGE, "watch line is not JSON");
    int type = -1;
    cJSON *obj = NULL;
    if (cJSON_IsObject(ev)) {
        type = kube_event_type_parse(cx_json_str(ev, "type"));
        obj = cJSON_GetObjectItemCaseSensitive(ev, "object");
    }
    if (type < 0 || !cJSON_IsObject(obj)) {
        cJSON_Delete(ev);
        return fail(p, KUBE_WATCH_E_GARBAGE, "watch line is not a watch event");
    }
    cJSON_DetachItemViaPointer(ev, obj);
    cJSON_Delete(ev);
    p->events++;
    if (p->cb(p->user_data, (enum kube_event_type)type, obj) != 0)
        return fail(p, KUBE_WATCH_E_STOPPED, "stopped by the event handler");
    return KUBE_WATCH_OK;
}

int kube_watch_parser_feed(struct kube_watch_parser *p, const char *data, size_t len)
{
    if (p->status != KUBE_WATCH_OK)
        return p->status;
    p->bytes += len;
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        if (!nl) {
            /* No end of line yet: keep the partial line, bounded. */
            if (p->line.len + len > p->max_event + 1)
                return fail(p, KUBE_WATCH_E_TOO_BIG, "watch event larger than the cap");
            if (cx_buf_append(&p->line, data, len) != 0)
                return fail(p, KUBE_WATCH_E_NOMEM, "out of memory buffering a watch event");
            return KUBE_WATCH_OK;
        }
        size_t n = (size_t)(nl - data);
        int rc;
        if (p->line.len == 0) {
            /* Fast path: the whole line is inside this chunk, no copy. */
            rc = handle_line(p, data, n);
        } else {
            if (p->line.len + n > p->max_event + 1)
                return fail(p, KUBE_WATCH_E_TOO_BIG, "watch event larger than the cap");
            if (cx_buf_append(&p->line, data, n) != 0)
                return fail(p, KUBE_WATCH_E_NOMEM, "out of memory buffering a watch event");
            rc = handle_line(p, p->line.data, p->line.len);
            cx_buf_reset(&p->line);
        }
        if (rc != KUBE_WATCH_OK)
            return rc;
        data = nl + 1;
        len -= n + 1;
    }
    return KUBE_WATCH_OK;
}

int kube_watch_parser_finish(struct kube_watch_parser *p)
{
    if (p->status != KUBE_WATCH_OK)
        return p->status;
    if (p->line.len == 0 || is_blank(p->line.data, p->line.len))
        return KUBE_WATCH_OK;
    /* A last event without its newline is still a whole event; anything
     * else is a stream cut inside an event. */
    cJSON *probe = cx_json_parse(p->line.data, p->line.len);
    if (!probe)
        return fail(p, KUBE_WATCH_E_TRUNCATED, "watch stream ended inside an event");
    cJSON_Delete(probe);
    int rc = handle_line(p, p->line.data, p->line.len);
    cx_buf_reset(&p->line);
    return rc;
}
