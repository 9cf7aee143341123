/*
 * ks_hostile: huge, deep and verbatim response bodies for fault rules.
 */
#include "ks_hostile.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cx_buf.h"
#include "cx_json.h"
#include "cx_time.h"
#include "ks_api.h"

#define BLOCK 65536
static char pad_block[BLOCK];
static char open_block[BLOCK];
static char close_block[BLOCK];

static void blocks_init(void)
{
    if (pad_block[0])
        return;
    memset(pad_block, 'x', sizeof(pad_block));
    memset(open_block, '[', sizeof(open_block));
    memset(close_block, ']', sizeof(close_block));
}

/* Appends |n| bytes of |block| by reference (no copy). */
static int add_repeated(struct evbuffer *out, const char *block, uint64_t n)
{
    while (n) {
        size_t k = n > BLOCK ? BLOCK : (size_t)n;
        if (evbuffer_add_reference(out, block, k, NULL, NULL) != 0)
            return -1;
        n -= k;
    }
    return 0;
}

/* The object's opening, up to where the hostile part goes, and its end. */
static int object_parts(struct ks_req *r, enum ks_hostile_kind kind, struct cx_buf *head,
                        struct cx_buf *tail)
{
    const struct ks_rtype *rt = r->rt;
    char rvs[24], ts[CX_TIME_RFC3339_LEN];
    ks_rv_str(r->s->rv, rvs);
    cx_time_format_rfc3339(cx_wall_ns(), ts, sizeof(ts));
    int rc = cx_buf_printf(head, "{\"apiVersion\":\"%s\",\"kind\":\"%s\",\"metadata\":{",
                           rt->api_version, rt->kind);
    if (kind == KS_HOSTILE_HUGE)
        rc |= cx_buf_puts(head, "\"annotations\":{\"kubesim.dev/pad\":\"");
    rc |= cx_buf_printf(tail, "%s\"creationTimestamp\":\"%s\",\"name\":",
                        kind == KS_HOSTILE_HUGE ? "\"}," : "", ts);
    rc |= cx_json_escape(tail, r->name ? r->name : "kubesim-hostile");
    if (rt->namespaced) {
        rc |= cx_buf_puts(tail, ",\"namespace\":");
        rc |= cx_json_escape(tail, r->ns ? r->ns : "default");
    }
    rc |= cx_buf_printf(tail,
                        ",\"resourceVersion\":\"%s\",\"uid\":\"00000000-0000-4000-8000-"
                        "000000000bad\"}",
                        rvs);
    if (kind == KS_HOSTILE_DEEP) {
        /* The nesting goes after metadata: a parser must get through it. */
        rc |= cx_buf_puts(tail, ",\"kubesimDeep\":");
    } else {
        rc |= cx_buf_puts(tail, "}");
    }
    return rc;
}

int ks_hostile_body(struct ks_req *r, enum ks_hostile_kind kind, uint64_t size,
                    struct evbuffer *out)
{
    blocks_init();
    struct cx_buf pre, head, tail, post;
    cx_buf_init(&pre, 1 << 16);
    cx_buf_init(&head, 1 << 16);
    cx_buf_init(&tail, 1 << 16);
    cx_buf_init(&post, 1 << 16);
    int rc = 0;
    if (r->verb == KS_V_WATCH) {
        rc |= cx_buf_puts(&pre, "{\"type\":\"ADDED\",\"object\":");
        rc |= cx_buf_puts(&post, "}\n");
    } else if (r->verb == KS_V_LIST || r->verb == KS_V_DELETECOLLECTION) {
        char rvs[24];
        ks_rv_str(r->s->rv, rvs);
        rc |= cx_buf_printf(&pre,
                            "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":{"
                            "\"resourceVersion\":\"%s\"},\"items\":[",
                            r->rt->list_kind, r->rt->api_version, rvs);
        rc |= cx_buf_puts(&post, "]}");
    }
    rc |= object_parts(r, kind, &head, &tail);
    if (rc != 0)
        goto out;
    rc |= evbuffer_add(out, pre.data ? pre.data : "", pre.len);
    rc |= evbuffer_add(out, head.data, head.len);
    if (kind == KS_HOSTILE_HUGE) {
        uint64_t fixed = pre.len + head.len + tail.len + post.len;
        rc |= add_repeated(out, pad_block, size > fixed ? size - fixed : 0);
        rc |= evbuffer_add(out, tail.data, tail.len);
    } else {
        rc |= evbuffer_add(out, tail.data, tail.len);
        rc |= add_repeated(out, open_block, size);
        rc |= add_repeated(out, close_block, size);
        rc |= evbuffer_add(out, "}", 1);
    }
    rc |= evbuffer_add(out, post.data ? post.data : "", post.len);
out:
    cx_buf_free(&pre);
    cx_buf_free(&head);
    cx_buf_free(&tail);
    cx_buf_free(&post);
    return rc ? -1 : 0;
}

/* A watch carries the hostile bytes as the start of its stream. */
static void inject_into_watch(struct ks_req *r, struct evbuffer *b, bool end)
{
    r->inject = b;
    r->inject_end = end;
    ks_watch_start(r);
}

void ks_hostile_reply(struct ks_req *r, enum ks_hostile_kind kind, uint64_t size)
{
    struct evbuffer *b = evbuffer_new();
    if (!b || ks_hostile_body(r, kind, size, b) != 0) {
        if (b)
            evbuffer_free(b);
        ks_commit_failed(r);
        return;
    }
    if (r->verb == KS_V_WATCH) {
        inject_into_watch(r, b, false);
        return;
    }
    ks_reply_evbuf(r, r->verb == KS_V_CREATE ? 201 : 200, b, "application/json");
    evbuffer_free(b);
}

void ks_hostile_respond(struct ks_req *r, int code, const char *ctype, const char *body, bool end)
{
    struct evbuffer *b = evbuffer_new();
    if (!b || evbuffer_add(b, body ? body : "", body ? strlen(body) : 0) != 0) {
        if (b)
            evbuffer_free(b);
        ks_commit_failed(r);
        return;
    }
    if (r->verb == KS_V_WATCH && code == 200) {
        inject_into_watch(r, b, end);
        return;
    }
    ks_reply_evbuf(r, code, b, ctype && *ctype ? ctype : "application/json");
    evbuffer_free(b);
}
