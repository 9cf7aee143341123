#include "cx_wire.h"

#include <stdlib.h>

int cx_wire_init(struct cx_wire *w, size_t cap)
{
    return cx_wire_init_max(w, cap, 0);
}

/* The thread's scratch buffer: malloc's small sizes are served from
 * per-thread caches, but a buffer past ~1 KB is not, and each such malloc
 * then sorts the heap's free lists. */
static _Thread_local struct {
    int busy;
    uint8_t buf[CX_WIRE_SCRATCH];
} scratch;

static void scratch_release(struct cx_wire *w)
{
    if (w->scratch) {
        scratch.busy = 0;
        w->scratch = 0;
    } else {
        free(w->buf);
    }
}

int cx_wire_init_max(struct cx_wire *w, size_t cap, size_t max)
{
    w->cap = cap ? cap : 64;
    if (max && w->cap > max)
        w->cap = max;
    w->used = 0;
    w->max = max;
    w->oom = w->over = 0;
    w->scratch = 0;
    if (!scratch.busy && w->cap <= sizeof(scratch.buf)) {
        scratch.busy = 1;
        w->scratch = 1;
        w->buf = scratch.buf;
        w->cap = max && max < sizeof(scratch.buf) ? max : sizeof(scratch.buf);
        return 0;
    }
    w->buf = malloc(w->cap);
    if (!w->buf) {
        w->cap = 0;
        w->oom = 1;
        return -1;
    }
    return 0;
}

uint8_t *cx_wire_front_grow(struct cx_wire *w, size_t n)
{
    if (w->oom)
        return NULL;
    if (w->max && n > w->max - w->used) {
        w->oom = w->over = 1;
        return NULL;
    }
    if (w->cap - w->used < n) {
        size_t cap = w->cap * 2 > w->used + n ? w->cap * 2 : w->used + n + 256;
        if (w->max && cap > w->max)
            cap = w->max; /* room for used + n still: checked above */
        uint8_t *b = malloc(cap);
        if (!b) {
            w->oom = 1;
            return NULL;
        }
        if (w->used)
            memcpy(b + cap - w->used, w->buf + w->cap - w->used, w->used);
        scratch_release(w);
        w->buf = b;
        w->cap = cap;
    }
    w->used += n;
    return w->buf + w->cap - w->used;
}

/* The message is copied out at its size: encoded messages are kept, and the
 * writer's buffer, freed whole, is what the next one gets (shrinking it in
 * place would leave a hole per message). */
int cx_wire_finish(struct cx_wire *w, uint8_t **out, size_t *len)
{
    uint8_t *b = w->oom ? NULL : malloc(w->used ? w->used : 1);
    if (b && w->used)
        memcpy(b, w->buf + w->cap - w->used, w->used);
    scratch_release(w);
    w->buf = NULL;
    if (!b)
        return w->over ? -2 : -1;
    *out = b;
    *len = w->used;
    return 0;
}

void cx_wire_discard(struct cx_wire *w)
{
    scratch_release(w);
    w->buf = NULL;
    w->cap = w->used = 0;
}
