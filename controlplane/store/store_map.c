#include "store_map.h"

#include "cx_hash.h"

#include <stdlib.h>
#include <string.h>

#define STORE_MAP_MIN_CAP 16

static uint64_t hash_key(const char *key)
{
    uint64_t h = cx_fnv64(CX_FNV64_INIT, key, strlen(key));
    return h ? h : 1;
}

void store_map_init(struct store_map *m)
{
    m->slots = NULL;
    m->cap = 0;
    m->len = 0;
}

void store_map_free(struct store_map *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = 0;
    m->len = 0;
}

/* Index of |key|'s slot, or of the empty slot where it would go. */
static size_t find(const struct store_map *m, const char *key, uint64_t h)
{
    size_t mask = m->cap - 1, i = (size_t)h & mask;
    while (m->slots[i].key) {
        if (m->slots[i].hash == h && strcmp(m->slots[i].key, key) == 0)
            return i;
        i = (i + 1) & mask;
    }
    return i;
}

static int grow(struct store_map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : STORE_MAP_MIN_CAP;
    struct store_map_slot *ns = calloc(ncap, sizeof(*ns));
    if (!ns)
        return -1;
    struct store_map_slot *old = m->slots;
    size_t ocap = m->cap;
    m->slots = ns;
    m->cap = ncap;
    for (size_t i = 0; i < ocap; i++) {
        if (!old[i].key)
            continue;
        size_t j = find(m, old[i].key, old[i].hash);
        m->slots[j] = old[i];
    }
    free(old);
    return 0;
}

void *store_map_get(const struct store_map *m, const char *key)
{
    if (!m->len)
        return NULL;
    size_t i = find(m, key, hash_key(key));
    return m->slots[i].key ? m->slots[i].value : NULL;
}

void *store_map_put(struct store_map *m, const char *key, void *value, int *err)
{
    *err = 0;
    /* Keep the load factor under 3/4 so probes stay short. */
    if ((m->len + 1) * 4 > m->cap * 3 && grow(m) != 0) {
        *err = -1;
        return NULL;
    }
    uint64_t h = hash_key(key);
    size_t i = find(m, key, h);
    if (m->slots[i].key) {
        void *old = m->slots[i].value;
        m->slots[i].key = key;
        m->slots[i].value = value;
        return old;
    }
    m->slots[i] = (struct store_map_slot){.key = key, .hash = h, .value = value};
    m->len++;
    return NULL;
}

void *store_map_remove(struct store_map *m, const char *key)
{
    if (!m->len)
        return NULL;
    size_t mask = m->cap - 1, i = find(m, key, hash_key(key));
    if (!m->slots[i].key)
        return NULL;
    void *v = m->slots[i].value;
    /* Backward-shift deletion: move later entries of the probe run into
     * the hole when their home slot allows it, so no tombstones remain. */
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!m->slots[j].key)
            break;
        size_t home = (size_t)m->slots[j].hash & mask;
        /* Move j to i if home is not cyclically within (i, j]. */
        int in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!in_range) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i] = (struct store_map_slot){0};
    m->len--;
    return v;
}

void store_map_foreach(const struct store_map *m, int (*fn)(void *user, const char *key, void *v),
                       void *user)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key && fn(user, m->slots[i].key, m->slots[i].value))
            return;
}
