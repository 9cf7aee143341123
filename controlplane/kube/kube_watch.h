/*
 * kube_watch: the I/O-free parser of a Kubernetes watch stream.
 *
 * A watch response is a sequence of JSON objects, one per line:
 *   {"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{...}}\n
 * The parser takes bytes as they arrive, in chunks cut anywhere (mid-line,
 * mid-UTF-8, between CR and LF), and calls back once per complete event.
 * Lines end with LF or CRLF; blank lines are skipped. One event may not
 * exceed a cap (default KUBE_WATCH_EVENT_MAX): a longer line, a line that is
 * not JSON, or JSON that is not a watch event makes the parser fail, and the
 * owner restarts the watch from the last resourceVersion it saw. Once failed
 * the parser stays failed until reset. It never touches a socket.
 *
 * Owned by one watch; not thread-safe.
 */
#ifndef KUBE_WATCH_H
#define KUBE_WATCH_H

#include "cx_buf.h"
#include "kube_types.h"

#include <cjson/cJSON.h>
#include <stdint.h>

/* Objects are limited to ~1.5 MiB in etcd; an event adds little. */
#define KUBE_WATCH_EVENT_MAX ((size_t)4 << 20)

/* Called once per event. |object| is the event's object; the callee takes
 * ownership of it (it must cJSON_Delete it eventually). Returning non-zero
 * stops the parser: kube_watch_parser_feed returns KUBE_WATCH_E_STOPPED and
 * the rest of the chunk is dropped. */
typedef int (*kube_watch_event_fn)(void *user_data, enum kube_event_type type, cJSON *object);

enum kube_watch_status {
    KUBE_WATCH_OK = 0,
    KUBE_WATCH_E_TOO_BIG = -1,   /* one event is longer than the cap */
    KUBE_WATCH_E_GARBAGE = -2,   /* a line that is not a watch event */
    KUBE_WATCH_E_STOPPED = -3,   /* the callback asked to stop */
    KUBE_WATCH_E_NOMEM = -4,     /* out of memory */
    KUBE_WATCH_E_TRUNCATED = -5, /* the stream ended inside an event */
};

struct kube_watch_parser {
    struct cx_buf line; /* the unfinished line carried between chunks */
    size_t max_event;   /* cap on one event, bytes */
    kube_watch_event_fn cb;
    void *user_data;
    int status;      /* sticky: KUBE_WATCH_OK or the first failure */
    uint64_t events; /* events delivered */
    uint64_t bytes;  /* bytes fed */
    char error[160]; /* what went wrong, for logs (no payload bytes) */
};

/* Prepares |p|; |max_event| 0 means KUBE_WATCH_EVENT_MAX. */
void kube_watch_parser_init(struct kube_watch_parser *p, size_t max_event, kube_watch_event_fn cb,
                            void *user_data);

/* Feeds |len| bytes. Returns KUBE_WATCH_OK, or one of the failures above
 * (the same one again on every later call until reset). */
__attribute__((warn_unused_result)) int kube_watch_parser_feed(struct kube_watch_parser *p,
                                                               const char *data, size_t len);

/* Tells the parser the stream ended. Returns KUBE_WATCH_OK if it ended on
 * an event boundary (a last event without its newline is delivered),
 * KUBE_WATCH_E_TRUNCATED if bytes of an unfinished event remain, or the
 * sticky failure. */
__attribute__((warn_unused_result)) int kube_watch_parser_finish(struct kube_watch_parser *p);

/* Forgets any partial line and failure (for the next watch request). */
void kube_watch_parser_reset(struct kube_watch_parser *p);

/* Frees the buffer; |p| may be initialised again. */
void kube_watch_parser_free(struct kube_watch_parser *p);

/* "ADDED" -> KUBE_EV_ADDED ...; returns -1 for anything else. */
int kube_event_type_parse(const char *s);
/* KUBE_EV_ADDED -> "ADDED". */
const char *kube_event_type_name(enum kube_event_type t);

#endif
