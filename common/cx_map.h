/*
 * cx_map: the one hash map of the code base, from byte-string keys to
 * pointers. Open addressing with linear probing; a deleted entry leaves a
 * tombstone (the table is rebuilt when live entries plus tombstones pass
 * 3/4 of it), so an entry may be deleted while the map is being iterated.
 * The translator looks keys up several times per object, the store and the
 * informers' caches once per event: lookups hash 8 bytes at a time and
 * compare the stored hash before the key.
 *
 * The map does not own keys or values: a key's bytes must stay valid (and
 * unchanged) while its entry is in the map; callers point it into the value
 * they store. Replacing a value re-points the entry at the new key, so the
 * old value (and the key storage inside it) may go. Iteration order is that
 * of the table: stable while the map does not change, unrelated to the
 * order of insertion. Not thread-safe: one owner at a time.
 *
 * A zeroed struct cx_map is an empty map (no allocation until a put).
 */
#ifndef CX_MAP_H
#define CX_MAP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* 24 bytes: the daemon holds a few maps of every object (the informers'
 * caches, the store, the translator's indexes), 1.3-2.7 slots an entry. */
struct cx_map_slot {
    uint32_t hash; /* the low half of cx_map_hash (never 0); 0: never used */
    uint32_t klen; /* keys are names: cx_map_put refuses longer than 4 GiB */
    const void *key;
    void *val;
};

struct cx_map {
    struct cx_map_slot *slots;
    size_t cap; /* a power of two, or 0 */
    size_t len; /* live entries */
    size_t tombs;
};

/* The hash of |len| bytes at |key| (never 0), under a secret drawn at the
 * process's start, so that keys colliding in it cannot be computed ahead.
 * In-process only: nothing may depend on its values, nor on the order they
 * give an iteration. */
uint64_t cx_map_hash(const void *key, size_t len);

/* The value at |key|, or NULL. */
void *cx_map_get(const struct cx_map *m, const void *key, size_t klen);

/* Sets |key| to |val| (key borrowed, see above). When |old| is not NULL it
 * receives the value replaced, NULL if the key was new. Returns 0, or -1
 * when memory ran out or |klen| is over UINT32_MAX (the map unchanged). */
__attribute__((warn_unused_result)) int cx_map_put(struct cx_map *m, const void *key, size_t klen,
                                                   void *val, void **old);

/* Makes room for |n| entries in all, so that as many puts never rehash.
 * Returns 0, or -1 when memory ran out (the map unchanged). */
__attribute__((warn_unused_result)) int cx_map_reserve(struct cx_map *m, size_t n);

/* Removes |key|; returns its value, or NULL if absent. */
void *cx_map_del(struct cx_map *m, const void *key, size_t klen);

/* Frees the table (not the keys or values); the map is empty again. */
void cx_map_free(struct cx_map *m);

/* Iteration: for (size_t i = 0; cx_map_next(m, &i, &slot);) visits every
 * entry once. Entries may be deleted meanwhile, not added. */
int cx_map_next(const struct cx_map *m, size_t *i, const struct cx_map_slot **slot);

static inline size_t cx_map_len(const struct cx_map *m)
{
    return m->len;
}

/* The same with NUL-terminated string keys (the NUL not part of the key). */
static inline void *cx_map_gets(const struct cx_map *m, const char *key)
{
    return cx_map_get(m, key, strlen(key));
}

__attribute__((warn_unused_result)) static inline int cx_map_puts(struct cx_map *m, const char *key,
                                                                  void *val, void **old)
{
    return cx_map_put(m, key, strlen(key), val, old);
}

static inline void *cx_map_dels(struct cx_map *m, const char *key)
{
    return cx_map_del(m, key, strlen(key));
}

/* Asks for the slot where |key|'s probe starts: a lookup soon after finds
 * it in the cache. */
static inline void cx_map_prefetch(const struct cx_map *m, const void *key, size_t klen)
{
    if (m->cap)
        __builtin_prefetch(&m->slots[(uint32_t)cx_map_hash(key, klen) & (m->cap - 1)]);
}

/* A later step of the same: when the slot (asked for by cx_map_prefetch
 * earlier) holds an entry, asks for its key and value, which a lookup
 * reads to compare and return. The key is hashed again. */
static inline void cx_map_prefetch_entry(const struct cx_map *m, const void *key, size_t klen)
{
    if (!m->cap)
        return;
    const struct cx_map_slot *s = &m->slots[(uint32_t)cx_map_hash(key, klen) & (m->cap - 1)];
    if (s->hash) {
        __builtin_prefetch(s->key);
        __builtin_prefetch(s->val);
    }
    __asm__ volatile(""); /* a call made of loads and prefetches is kept (GCC) */
}

#endif
