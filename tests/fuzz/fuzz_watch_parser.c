/* Fuzz target: arbitrary bytes as a watch stream, cut at a position taken
 * from the input. The parser must never crash, never deliver a non-object,
 * and must deliver the same events whether fed whole or in two pieces. */
#include "kube_watch.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct tally {
    uint64_t n;
    uint64_t hash;
};

static int on_event(void *ud, enum kube_event_type t, cJSON *obj)
{
    struct tally *tl = ud;
    if (!cJSON_IsObject(obj) || (unsigned)t >= KUBE_EV_COUNT)
        abort();
    tl->n++;
    tl->hash = tl->hash * 31 + (uint64_t)t + 1 + (uint64_t)cJSON_GetArraySize(obj);
    cJSON_Delete(obj);
    return 0;
}

static int run(const char *d, size_t n, size_t cut, size_t cap, struct tally *tl)
{
    struct kube_watch_parser p;
    kube_watch_parser_init(&p, cap, on_event, tl);
    int rc = kube_watch_parser_feed(&p, d, cut);
    if (rc == KUBE_WATCH_OK)
        rc = kube_watch_parser_feed(&p, d + cut, n - cut);
    int fin = kube_watch_parser_finish(&p);
    if (p.line.len > cap + 2)
        abort();
    kube_watch_parser_free(&p);
    return rc == KUBE_WATCH_OK ? fin : rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t cap = 64 + (size_t)data[0] * 64;
    const char *d = (const char *)data + 1;
    size_t n = size - 1;
    struct tally whole = {0}, split = {0};
    int a = run(d, n, 0, cap, &whole);
    int b = run(d, n, n / 2, cap, &split);
    if (a != b || whole.n != split.n || whole.hash != split.hash)
        abort();
    return 0;
}
