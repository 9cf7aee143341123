#include "cx_map.h"

#include <stdlib.h>
#include <sys/random.h>

/* A secret per process, drawn before main() (so before any thread): the
 * hash's steps all invert, and keys whose hashes collide could be computed
 * offline from the constants alone (15-byte names at ~1 ms each; 27,644 in
 * one YAML mapping cost 2.8 s instead of 0.03 s). The seed enters the
 * first state, which every later step depends on. */
static uint64_t map_seed;
__attribute__((constructor)) static void map_seed_init(void)
{
    if (getrandom(&map_seed, sizeof(map_seed), 0) != (ssize_t)sizeof(map_seed))
        map_seed = UINT64_C(0x5bd1e9955bd1e995) ^ (uint64_t)(uintptr_t)&map_seed;
}

#define CX_MAP_MIN_CAP 16

/* A tombstone: a slot whose hash is kept (probes go on past it) and whose
 * key is this marker. */
static const char tomb_marker;
#define TOMB ((const void *)&tomb_marker)

/* Eight bytes at a time, then splitmix64's finaliser: keys are short names
 * and 16-byte (digest, pointer) pairs, and byte-at-a-time FNV showed in the
 * translator's profile. */
uint64_t cx_map_hash(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint64_t h = UINT64_C(0x9e3779b97f4a7c15) ^ map_seed ^ len, w;
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

/* What a slot keeps of the hash: its low half, never 0. Probes start at
 * it too, so a rehash needs nothing else (tables stay under 2^32 slots). */
static inline uint32_t slot_hash(const void *key, size_t klen)
{
    uint32_t h = (uint32_t)cx_map_hash(key, klen);
    return h ? h : 1;
}

/* An empty map answers without touching its table: reserved tables may be
 * large, and a lookup in one is otherwise a cache miss for nothing. */
static struct cx_map_slot *find(const struct cx_map *m, uint32_t h, const void *key, size_t klen)
{
    if (!m->len || klen > UINT32_MAX)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        struct cx_map_slot *s = &m->slots[i];
        if (s->hash == 0)
            return NULL;
        if (s->hash == h && s->key != TOMB && s->klen == klen && memcmp(s->key, key, klen) == 0)
            return s;
    }
}

void *cx_map_get(const struct cx_map *m, const void *key, size_t klen)
{
    struct cx_map_slot *s = find(m, slot_hash(key, klen), key, klen);
    return s ? s->val : NULL;
}

static int rehash(struct cx_map *m, size_t ncap)
{
    struct cx_map_slot *ns = calloc(ncap, sizeof(*ns));
    if (!ns)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        struct cx_map_slot *s = &m->slots[i];
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

/* The capacity for |n| live entries under the 3/4 load factor. */
static size_t cap_for(const struct cx_map *m, size_t n)
{
    size_t ncap = m->cap ? m->cap : CX_MAP_MIN_CAP;
    while ((n + 1) * 4 >= ncap * 3)
        ncap *= 2;
    return ncap;
}

int cx_map_reserve(struct cx_map *m, size_t n)
{
    size_t ncap = cap_for(m, n);
    return ncap > m->cap ? rehash(m, ncap) : 0;
}

int cx_map_put(struct cx_map *m, const void *key, size_t klen, void *val, void **old)
{
    if (klen > UINT32_MAX)
        return -1;
    uint32_t h = slot_hash(key, klen);
    struct cx_map_slot *s = find(m, h, key, klen);
    if (s) {
        if (old)
            *old = s->val;
        s->key = key;
        s->val = val;
        return 0;
    }
    /* Live entries and tombstones both lengthen probes: rebuild (at the
     * same size when most are tombstones) before they pass 3/4. */
    if ((m->len + m->tombs + 1) * 4 >= m->cap * 3 && rehash(m, cap_for(m, m->len)) != 0)
        return -1;
    size_t mask = m->cap - 1;
    size_t i = h & mask;
    while (m->slots[i].hash && m->slots[i].key != TOMB)
        i = (i + 1) & mask;
    if (m->slots[i].key == TOMB)
        m->tombs--;
    m->slots[i] = (struct cx_map_slot){.hash = h, .klen = (uint32_t)klen, .key = key, .val = val};
    m->len++;
    if (old)
        *old = NULL;
    return 0;
}

void *cx_map_del(struct cx_map *m, const void *key, size_t klen)
{
    struct cx_map_slot *s = find(m, slot_hash(key, klen), key, klen);
    if (!s)
        return NULL;
    void *v = s->val;
    s->key = TOMB;
    s->val = NULL;
    m->len--;
    m->tombs++;
    return v;
}

void cx_map_free(struct cx_map *m)
{
    free(m->slots);
    memset(m, 0, sizeof(*m));
}

int cx_map_next(const struct cx_map *m, size_t *i, const struct cx_map_slot **slot)
{
    while (*i < m->cap) {
        const struct cx_map_slot *s = &m->slots[(*i)++];
        if (s->hash && s->key != TOMB) {
            *slot = s;
            return 1;
        }
    }
    return 0;
}
