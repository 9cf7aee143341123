/*
 * ks_hostile: the bodies of the hostile-response fault actions, what a
 * compromised or broken API server (or a man in the middle) could send:
 * a valid-looking object padded to a huge size, JSON nested deeper than any
 * parser's stack, or bytes given verbatim. Padding and nesting are added by
 * reference to static blocks, so kubesim's memory does not grow with the
 * size it claims. Event loop only.
 */
#ifndef KS_HOSTILE_H
#define KS_HOSTILE_H

#include "ks_http.h"

struct evbuffer;

enum ks_hostile_kind {
    KS_HOSTILE_HUGE = 1, /* |size| bytes in all, an annotation holds the padding */
    KS_HOSTILE_DEEP = 2, /* a field nesting |size| arrays */
};

/* Writes into |out| what |r| (get, list, watch or a write) would answer,
 * shaped as |kind| of |size|: one object, a list holding it, or one
 * watch event line. Returns 0 or -1 (memory). */
int ks_hostile_body(struct ks_req *r, enum ks_hostile_kind kind, uint64_t size,
                    struct evbuffer *out);

/* Answers |r| with |kind|/|size| (a watch: starts the stream with it as
 * the first event, then serves the watch as usual). */
void ks_hostile_reply(struct ks_req *r, enum ks_hostile_kind kind, uint64_t size);

/* Answers |r| with |body| verbatim (status |code|, Content-Type |ctype|).
 * A watch answered 200 gets |body| as the start of its stream, and the
 * stream then goes on (or ends at once when |end|). */
void ks_hostile_respond(struct ks_req *r, int code, const char *ctype, const char *body, bool end);

#endif
