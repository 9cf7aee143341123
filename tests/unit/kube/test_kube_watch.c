/* The watch-stream parser against recorded streams, cut into every chunk
 * size, with LF and CRLF, caps, garbage and truncation. */
#include "cx_json.h"
#include "cxtest.h"
#include "kube_error.h"
#include "kube_watch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_EVENTS 64

struct rec {
    int n;
    int types[MAX_EVENTS];
    char rv[MAX_EVENTS][32];
    char name[MAX_EVENTS][32];
    int stop_after; /* stop (non-zero return) after this many; 0 = never */
};

static int on_event(void *ud, enum kube_event_type t, cJSON *obj)
{
    struct rec *r = ud;
    if (r->n < MAX_EVENTS) {
        r->types[r->n] = t;
        const char *rv = cx_json_path_str(obj, "metadata", "resourceVersion", NULL);
        const char *name = cx_json_path_str(obj, "metadata", "name", NULL);
        snprintf(r->rv[r->n], sizeof(r->rv[0]), "%s", rv ? rv : "");
        snprintf(r->name[r->n], sizeof(r->name[0]), "%s", name ? name : "");
    }
    r->n++;
    cJSON_Delete(obj);
    return r->stop_after && r->n >= r->stop_after;
}

/* Feeds |data| in chunks of |chunk| bytes; returns the first non-OK
 * status of feed, or finish's status. */
static int feed_chunks(const char *data, size_t len, size_t chunk, struct rec *r, size_t cap,
                       int *finish_rc)
{
    struct kube_watch_parser p;
    kube_watch_parser_init(&p, cap, on_event, r);
    int rc = KUBE_WATCH_OK;
    for (size_t off = 0; off < len && rc == KUBE_WATCH_OK; off += chunk) {
        size_t n = len - off < chunk ? len - off : chunk;
        /* Copy into an exact-size heap block so ASan sees over-reads. */
        char *c = malloc(n);
        memcpy(c, data + off, n);
        rc = kube_watch_parser_feed(&p, c, n);
        free(c);
    }
    *finish_rc = kube_watch_parser_finish(&p);
    kube_watch_parser_free(&p);
    return rc;
}

static char *load(const char *name, size_t *len)
{
    char rel[128];
    snprintf(rel, sizeof(rel), "watch/%s", name);
    char *d = cxt_read_file(cxt_data_path(rel), len);
    if (!d)
        cxt_fail(__FILE__, __LINE__, 1, "cannot read %s", rel);
    return d;
}

static const int basic_types[] = {KUBE_EV_ADDED, KUBE_EV_ADDED, KUBE_EV_MODIFIED, KUBE_EV_BOOKMARK,
                                  KUBE_EV_DELETED};
static const char *const basic_rvs[] = {"101", "102", "103", "110", "111"};

static void check_basic(const struct rec *r)
{
    REQUIRE_INT_EQ(r->n, 5);
    for (int i = 0; i < 5; i++) {
        CHECK_INT_EQ(r->types[i], basic_types[i]);
        CHECK_STR_EQ(r->rv[i], basic_rvs[i]);
    }
    CHECK_STR_EQ(r->name[0], "a");
    CHECK_STR_EQ(r->name[4], "b");
}

static void every_split(const char *file)
{
    size_t len;
    char *d = load(file, &len);
    for (size_t chunk = 1; chunk <= len; chunk = chunk < 16 ? chunk + 1 : chunk * 2 + 1) {
        struct rec r = {0};
        int fin;
        int rc = feed_chunks(d, len, chunk, &r, 0, &fin);
        CHECK_INT_EQ(rc, KUBE_WATCH_OK);
        CHECK_INT_EQ(fin, KUBE_WATCH_OK);
        check_basic(&r);
    }
    free(d);
}

static void test_lf_every_chunk_size(void)
{
    every_split("basic.jsonl");
}

static void test_crlf_every_chunk_size(void)
{
    every_split("crlf.jsonl");
}

static void test_blank_lines_skipped(void)
{
    every_split("blank_lines.jsonl");
}

static void test_whole_stream_one_chunk_with_unicode(void)
{
    size_t len;
    char *d = load("basic.jsonl", &len);
    struct rec r = {0};
    struct kube_watch_parser p;
    kube_watch_parser_init(&p, 0, on_event, &r);
    REQUIRE_INT_EQ(kube_watch_parser_feed(&p, d, len), KUBE_WATCH_OK);
    CHECK_INT_EQ(p.events, 5);
    CHECK_INT_EQ(p.bytes, len);
    check_basic(&r);
    kube_watch_parser_free(&p);
    free(d);
}

static int keep_second(void *ud, enum kube_event_type t, cJSON *obj)
{
    cJSON **slot = ud;
    (void)t;
    if (!*slot && cJSON_GetObjectItemCaseSensitive(obj, "data") &&
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "data"), "unicode"))
        *slot = obj; /* ownership kept past the parser's lifetime */
    else
        cJSON_Delete(obj);
    return 0;
}

static void test_object_ownership_passes_to_callback(void)
{
    size_t len;
    char *d = load("basic.jsonl", &len);
    cJSON *kept = NULL;
    struct kube_watch_parser p;
    kube_watch_parser_init(&p, 0, keep_second, &kept);
    REQUIRE_INT_EQ(kube_watch_parser_feed(&p, d, len), KUBE_WATCH_OK);
    kube_watch_parser_free(&p);
    free(d);
    REQUIRE(kept != NULL);
    CHECK_STR_EQ(cx_json_path_str(kept, "data", "unicode", NULL), "h\xc3\xa9llo \xe2\x98\x83");
    CHECK_STR_EQ(cx_json_path_str(kept, "data", "nl", NULL), "line1\nline2");
    cJSON_Delete(kept);
}

struct err_rec {
    int n;
    struct kube_error err;
    int saw_error;
};

static int on_err_event(void *ud, enum kube_event_type t, cJSON *obj)
{
    struct err_rec *r = ud;
    r->n++;
    if (t == KUBE_EV_ERROR) {
        kube_error_from_status(&r->err, obj);
        r->saw_error = 1;
    }
    cJSON_Delete(obj);
    return 0;
}

static void test_expired_error_event_decodes(void)
{
    const char *files[] = {"expired.jsonl", "gone.jsonl"};
    const char *reasons[] = {"Expired", "Gone"};
    for (int i = 0; i < 2; i++) {
        size_t len;
        char *d = load(files[i], &len);
        struct err_rec r = {0};
        struct kube_watch_parser p;
        kube_watch_parser_init(&p, 0, on_err_event, &r);
        CHECK_INT_EQ(kube_watch_parser_feed(&p, d, len), KUBE_WATCH_OK);
        CHECK(r.saw_error);
        CHECK_INT_EQ(r.err.code, KUBE_E_EXPIRED);
        CHECK_INT_EQ(r.err.http_status, 410);
        CHECK_STR_EQ(r.err.reason, reasons[i]);
        CHECK_STR_CONTAINS(r.err.message, "too old resource version");
        kube_watch_parser_free(&p);
        free(d);
    }
}

static void test_initial_events_end_bookmark(void)
{
    size_t len;
    char *d = load("initial_events.jsonl", &len);
    struct rec r = {0};
    int fin;
    CHECK_INT_EQ(feed_chunks(d, len, 7, &r, 0, &fin), KUBE_WATCH_OK);
    REQUIRE_INT_EQ(r.n, 5);
    CHECK_INT_EQ(r.types[3], KUBE_EV_BOOKMARK);
    CHECK_STR_EQ(r.rv[3], "205");
    CHECK_INT_EQ(r.types[4], KUBE_EV_MODIFIED);
    free(d);
}

static void test_garbage_line_fails_after_good_events(void)
{
    const char *files[] = {"garbage.jsonl", "html.jsonl"};
    const int good[] = {2, 1};
    for (int i = 0; i < 2; i++) {
        size_t len;
        char *d = load(files[i], &len);
        for (size_t chunk = 1; chunk < 64; chunk += 5) {
            struct rec r = {0};
            int fin;
            int rc = feed_chunks(d, len, chunk, &r, 0, &fin);
            CHECK_INT_EQ(rc, KUBE_WATCH_E_GARBAGE);
            CHECK_INT_EQ(fin, KUBE_WATCH_E_GARBAGE); /* sticky */
            CHECK_INT_EQ(r.n, good[i]);              /* nothing after the garbage */
        }
        free(d);
    }
}

static void test_truncated_stream(void)
{
    size_t len;
    char *d = load("truncated.jsonl", &len);
    struct rec r = {0};
    int fin;
    CHECK_INT_EQ(feed_chunks(d, len, 13, &r, 0, &fin), KUBE_WATCH_OK);
    CHECK_INT_EQ(fin, KUBE_WATCH_E_TRUNCATED);
    check_basic(&r);
    free(d);
}

static void test_last_event_without_newline_delivered(void)
{
    const char *s = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"7\"}}}";
    struct rec r = {0};
    int fin;
    CHECK_INT_EQ(feed_chunks(s, strlen(s), 3, &r, 0, &fin), KUBE_WATCH_OK);
    CHECK_INT_EQ(fin, KUBE_WATCH_OK);
    REQUIRE_INT_EQ(r.n, 1);
    CHECK_STR_EQ(r.rv[0], "7");
}

static void test_event_cap(void)
{
    size_t len;
    char *d = load("custom_resource.jsonl", &len);
    /* Lines are ~3.9 KB: a 1 KiB cap refuses them whatever the chunking; a
     * cap of exactly the longest line's length accepts both. */
    const char *nl = memchr(d, '\n', len);
    size_t l1 = (size_t)(nl - d), l2 = len - l1 - 2;
    size_t line1 = l1 > l2 ? l1 : l2;
    for (size_t chunk = 1; chunk < 5000; chunk = chunk * 3 + 1) {
        struct rec r = {0};
        int fin;
        CHECK_INT_EQ(feed_chunks(d, len, chunk, &r, 1024, &fin), KUBE_WATCH_E_TOO_BIG);
        CHECK_INT_EQ(r.n, 0);
        struct rec r2 = {0};
        CHECK_INT_EQ(feed_chunks(d, len, chunk, &r2, line1, &fin), KUBE_WATCH_OK);
        CHECK_INT_EQ(r2.n, 2);
        struct rec r3 = {0};
        CHECK_INT_EQ(feed_chunks(d, len, chunk, &r3, line1 - 1, &fin), KUBE_WATCH_E_TOO_BIG);
    }
    free(d);
}

static void test_endless_line_memory_bounded(void)
{
    /* A peer that never sends a newline: the buffer stops at the cap. */
    struct rec r = {0};
    struct kube_watch_parser p;
    kube_watch_parser_init(&p, 4096, on_event, &r);
    char junk[1000];
    memset(junk, 'x', sizeof(junk));
    int rc = KUBE_WATCH_OK;
    int i;
    for (i = 0; i < 100 && rc == KUBE_WATCH_OK; i++)
        rc = kube_watch_parser_feed(&p, junk, sizeof(junk));
    CHECK_INT_EQ(rc, KUBE_WATCH_E_TOO_BIG);
    CHECK_INT_LE(i, 5);
    CHECK_INT_LE(p.line.cap, 8192 + 16);
    kube_watch_parser_free(&p);
}

static void test_not_an_event(void)
{
    const char *bad[] = {
        "[1,2]\n",
        "{\"type\":\"ADDED\"}\n",
        "{\"type\":\"ADDED\",\"object\":\"str\"}\n",
        "{\"type\":\"UPSERTED\",\"object\":{}}\n",
        "{\"type\":1,\"object\":{}}\n",
        "{\"object\":{}}\n",
        "nul\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct rec r = {0};
        int fin;
        CHECK_INT_EQ(feed_chunks(bad[i], strlen(bad[i]), 2, &r, 0, &fin), KUBE_WATCH_E_GARBAGE);
        CHECK_INT_EQ(r.n, 0);
    }
}

static void test_stop_from_callback_and_reset(void)
{
    size_t len;
    char *d = load("basic.jsonl", &len);
    struct rec r = {.stop_after = 2};
    struct kube_watch_parser p;
    kube_watch_parser_init(&p, 0, on_event, &r);
    CHECK_INT_EQ(kube_watch_parser_feed(&p, d, len), KUBE_WATCH_E_STOPPED);
    CHECK_INT_EQ(r.n, 2);
    CHECK_INT_EQ(kube_watch_parser_feed(&p, d, len), KUBE_WATCH_E_STOPPED);
    CHECK_INT_EQ(r.n, 2);
    kube_watch_parser_reset(&p);
    r.stop_after = 0;
    r.n = 0;
    CHECK_INT_EQ(kube_watch_parser_feed(&p, d, len), KUBE_WATCH_OK);
    check_basic(&r);
    kube_watch_parser_free(&p);
    free(d);
}

static void test_blank_line_over_cap_same_verdict(void)
{
    /* Found by the fuzzer: a run of CRs longer than the cap was accepted
     * when it arrived whole and refused when split. Now refused both ways. */
    char line[200];
    memset(line, '\r', sizeof(line));
    line[sizeof(line) - 1] = '\n';
    for (size_t chunk = 1; chunk <= sizeof(line); chunk = chunk * 2 + 1) {
        struct rec r = {0};
        int fin;
        CHECK_INT_EQ(feed_chunks(line, sizeof(line), chunk, &r, 64, &fin), KUBE_WATCH_E_TOO_BIG);
    }
    struct rec r = {0};
    int fin;
    CHECK_INT_EQ(feed_chunks(line, sizeof(line), sizeof(line), &r, 0, &fin), KUBE_WATCH_OK);
    CHECK_INT_EQ(r.n, 0);
}

static void test_event_type_names(void)
{
    for (int t = 0; t < KUBE_EV_COUNT; t++)
        CHECK_INT_EQ(kube_event_type_parse(kube_event_type_name((enum kube_event_type)t)), t);
    CHECK_INT_EQ(kube_event_type_parse("added"), -1);
    CHECK_INT_EQ(kube_event_type_parse(NULL), -1);
}

static const struct cxt_case cases[] = {
    CXT(test_lf_every_chunk_size),
    CXT(test_crlf_every_chunk_size),
    CXT(test_blank_lines_skipped),
    CXT(test_whole_stream_one_chunk_with_unicode),
    CXT(test_object_ownership_passes_to_callback),
    CXT(test_expired_error_event_decodes),
    CXT(test_initial_events_end_bookmark),
    CXT(test_garbage_line_fails_after_good_events),
    CXT(test_truncated_stream),
    CXT(test_last_event_without_newline_delivered),
    CXT(test_event_cap),
    CXT(test_endless_line_memory_bounded),
    CXT(test_not_an_event),
    CXT(test_stop_from_callback_and_reset),
    CXT(test_blank_line_over_cap_same_verdict),
    CXT(test_event_type_names),
};
CXT_MAIN(cases)
