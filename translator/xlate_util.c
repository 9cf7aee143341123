#include "xlate_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arena ---------------------------------------------------------------- */

/* Small first chunk (most objects parse into well under 1 KiB), growing by
 * half after: a parsed Service costs one small allocation, a big
 * VirtualService a few. */
#define XL_CHUNK_MIN      512
#define XL_CHUNK_SMALLEST 64

struct xl_chunk {
    struct xl_chunk *next;
    size_t size;
    _Alignas(16) unsigned char data[];
};

/* |n| bytes at the next multiple of |align| (a power of two) in the head
 * chunk, or in a new one; not zeroed. */
static unsigned char *arena_get(struct xl_arena *a, size_t n, size_t align)
{
    size_t at = a->head ? (a->used + align - 1) & ~(align - 1) : 0;
    if (!a->head || at + n > a->head->size) {
        /* growing by half: an arena sized by its hint that needs a little
         * more wastes little */
        size_t size = a->total ? a->total / 2 : a->hint ? a->hint : XL_CHUNK_MIN;
        if (size < XL_CHUNK_SMALLEST)
            size = XL_CHUNK_SMALLEST;
        if (size > 1 << 20)
            size = 1 << 20;
        if (n > size)
            size = n;
        struct xl_chunk *c = malloc(sizeof(*c) + size);
        if (!c)
            return NULL;
        c->next = a->head;
        c->size = size;
        a->head = c;
        a->used = 0;
        a->total += size;
        at = 0;
    }
    unsigned char *p = a->head->data + at;
    a->live += at + n - a->used;
    a->used = at + n;
    return p;
}

void *xlate_alloc(struct xl_arena *a, size_t n)
{
    unsigned char *p = arena_get(a, n ? n : 1, 16);
    if (p)
        memset(p, 0, n);
    return p;
}

/* Strings are packed byte after byte: no alignment, no zeroing. */
char *xlate_strndup(struct xl_arena *a, const char *s, size_t n)
{
    char *p = (char *)arena_get(a, n + 1, 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

char *xlate_strdup(struct xl_arena *a, const char *s)
{
    return s ? xlate_strndup(a, s, strlen(s)) : NULL;
}

char *xlate_printf(struct xl_arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *p = (char *)arena_get(a, (size_t)n + 1, 1);
    if (!p)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

void xlate_arena_free(struct xl_arena *a)
{
    struct xl_chunk *c = a->head;
    while (c) {
        struct xl_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->used = 0;
    /* the next use of this arena (a re-parse) starts with room for as much */
    if (a->live)
        a->hint = a->live;
    a->total = 0;
    a->live = 0;
}

void xlate_arena_reset(struct xl_arena *a)
{
    if (!a->head)
        return;
    struct xl_chunk *c = a->head->next;
    while (c) {
        struct xl_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head->next = NULL;
    a->used = 0;
    a->total = a->head->size;
    a->live = 0;
}

/* ---- bounded strings ------------------------------------------------------- */

char *xlate_cat(char *p, const char *end, const char *s)
{
    size_t room = (size_t)(end - p) - 1, n = strlen(s);
    if (n > room)
        n = room;
    memcpy(p, s, n);
    p[n] = '\0';
    return p + n;
}

char *xlate_cat_u(char *p, const char *end, uint64_t v)
{
    char d[24];
    size_t k = sizeof(d);
    d[--k] = '\0';
    do {
        d[--k] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return xlate_cat(p, end, d + k);
}

/* ---- map ------------------------------------------------------------------ */

#define TOMB ((void *)&tomb_marker)
static const char tomb_marker = 0;

/* Eight bytes at a time, then splitmix64's finaliser: keys are short names
 * and 16-byte (digest, pointer) pairs, looked up several times per object,
 * and byte-at-a-time FNV showed. In-process only: nothing depends on the
 * values (nor on the order they give a map's iteration). */
uint64_t xlate_hash(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint64_t h = UINT64_C(0x9e3779b97f4a7c15) ^ len, w;
    for (; len >= 8; p += 8, len -= 8) {
        memcpy(&w, p, 8);
        h = (h ^ w) * UINT64_C(0xbf58476d1ce4e5b9);
        h ^= h >> 31;
    }
    w = 0;
    memcpy(&w, p, len);
    h = (h ^ w) * UINT64_C(0x94d049bb133111eb);
    h ^= h >> 30;
    h *= UINT64_C(0xbf58476d1ce4e5b9);
    h ^= h >> 27;
    h *= UINT64_C(0x94d049bb133111eb);
    h ^= h >> 31;
    return h ? h : 1;
}

static struct xl_map_slot *find(const struct xl_map *m, uint64_t h, const void *key, size_t klen)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        struct xl_map_slot *s = &m->slots[i];
        if (s->hash == 0)
            return NULL;
        if (s->hash == h && s->key != TOMB && s->klen == klen && memcmp(s->key, key, klen) == 0)
            return s;
    }
}

void *xlate_map_get(const struct xl_map *m, const void *key, size_t klen)
{
    struct xl_map_slot *s = find(m, xlate_hash(key, klen), key, klen);
    return s ? s->val : NULL;
}

static int rehash(struct xl_map *m, size_t ncap)
{
    struct xl_map_slot *ns = calloc(ncap, sizeof(*ns));
    if (!ns)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        struct xl_map_slot *s = &m->slots[i];
        if (s->hash == 0 || s->key == TOMB)
            continue;
        size_t j = s->hash & (ncap - 1);
        while (ns[j].hash)
            j = (j + 1) & (ncap - 1);
        ns[j] = *s;
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    m->tombs = 0;
    return 0;
}

static int grow(struct xl_map *m)
{
    size_t ncap = m->cap ? m->cap : 16;
    while ((m->n + 1) * 4 >= ncap * 3)
        ncap *= 2;
    return rehash(m, ncap);
}

int xlate_map_reserve(struct xl_map *m, size_t n)
{
    size_t ncap = m->cap ? m->cap : 16;
    while ((n + 1) * 4 >= ncap * 3)
        ncap *= 2;
    return ncap > m->cap ? rehash(m, ncap) : 0;
}

int xlate_map_put(struct xl_map *m, const void *key, size_t klen, void *val)
{
    uint64_t h = xlate_hash(key, klen);
    struct xl_map_slot *s = find(m, h, key, klen);
    if (s) {
        s->val = val;
        return 0;
    }
    if ((m->n + m->tombs + 1) * 4 >= m->cap * 3 && grow(m) != 0)
        return -1;
    size_t mask = m->cap - 1;
    size_t i = h & mask;
    while (m->slots[i].hash && m->slots[i].key != TOMB)
        i = (i + 1) & mask;
    if (m->slots[i].key == TOMB)
        m->tombs--;
    m->slots[i] = (struct xl_map_slot){.hash = h, .key = key, .klen = klen, .val = val};
    m->n++;
    return 0;
}

void *xlate_map_del(struct xl_map *m, const void *key, size_t klen)
{
    struct xl_map_slot *s = find(m, xlate_hash(key, klen), key, klen);
    if (!s)
        return NULL;
    void *v = s->val;
    s->key = TOMB;
    s->val = NULL;
    m->n--;
    m->tombs++;
    return v;
}

void xlate_map_free(struct xl_map *m)
{
    free(m->slots);
    memset(m, 0, sizeof(*m));
}

int xlate_map_next(const struct xl_map *m, size_t *i, const struct xl_map_slot **slot)
{
    while (*i < m->cap) {
        const struct xl_map_slot *s = &m->slots[(*i)++];
        if (s->hash && s->key != TOMB) {
            *slot = s;
            return 1;
        }
    }
    return 0;
}
