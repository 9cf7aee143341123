/*
 * store_map: a string-keyed hash map (open addressing, linear probing,
 * backward-shift deletion) used by the daemon's store, status writer and
 * publisher to find entries by "namespace/name" in O(1).
 *
 * The map does not own keys or values: each entry's key must stay valid
 * (and unchanged) while the entry is in the map — callers point it into the
 * value they store (a kube_obj's key, a queue item's string). Not
 * thread-safe: one owner (the main loop).
 */
#ifndef STORE_MAP_H
#define STORE_MAP_H

#include <stddef.h>
#include <stdint.h>

struct store_map_slot {
    const char *key; /* NULL: empty */
    uint64_t hash;
    void *value;
};

struct store_map {
    struct store_map_slot *slots;
    size_t cap; /* power of two, or 0 before the first insert */
    size_t len;
};

/* An empty map (no allocation until the first insert). */
void store_map_init(struct store_map *m);
/* Frees the table (not the keys or values). */
void store_map_free(struct store_map *m);

/* The value at |key|, or NULL. */
void *store_map_get(const struct store_map *m, const char *key);

/* Sets |key| to |value| (key borrowed, see above). Returns the value it
 * replaced (and then the entry now points to the new |key|), NULL if the
 * key was new. Sets *err to -1 if memory ran out (map unchanged), else 0. */
void *store_map_put(struct store_map *m, const char *key, void *value, int *err);

/* Removes |key|; returns its value, or NULL if absent. */
void *store_map_remove(struct store_map *m, const char *key);

/* Calls |fn| for every entry; stops when it returns non-zero. The map must
 * not change meanwhile. */
void store_map_foreach(const struct store_map *m, int (*fn)(void *user, const char *key, void *v),
                       void *user);

static inline size_t store_map_len(const struct store_map *m)
{
    return m->len;
}

#endif
