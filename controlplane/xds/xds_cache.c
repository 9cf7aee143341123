#include "xds_cache.h"

#include "xds_auth.h"
#include "xlate_snapshot.h"

#include <stdlib.h>
#include <string.h>

struct xds_cache_group {
    char *name;
    struct cx_list watches; /* of xds_cache_watch, newest first */
    size_t nwatches;
    struct xds_ads_sets sets;
    const struct xlate_access *access; /* the Gateway's spec.xdsAccess (NULL: no Gateway) */
    struct xds_nack_stat nack[XDS_TYPE_COUNT];
    uint8_t has_nacks;
    uint8_t known; /* the current snapshot has this group (a Gateway) */
};

struct xds_cache {
    struct xlate_snapshot *snap;
    struct xds_resource_set empty;   /* sealed, no items */
    struct xds_cache_group **groups; /* sorted by name */
    size_t ngroups, cap;
    size_t nunknown; /* groups the snapshot does not have */
};

struct xds_cache *xds_cache_new(void)
{
    struct xds_cache *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    if (xlate_resource_set_seal(&c->empty) != 0) {
        free(c);
        return NULL;
    }
    return c;
}

static void group_free(struct xds_cache_group *g)
{
    free(g->name);
    free(g);
}

void xds_cache_free(struct xds_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->ngroups; i++)
        group_free(c->groups[i]);
    free(c->groups);
    xlate_snapshot_unref(c->snap);
    free(c);
}

struct xlate_snapshot *xds_cache_snapshot(const struct xds_cache *c)
{
    return c->snap;
}

/* Index of |name| or of where it would go; *found says which. */
static size_t group_index(const struct xds_cache *c, const char *name, int *found)
{
    size_t lo = 0, hi = c->ngroups;
    *found = 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = strcmp(c->groups[mid]->name, name);
        if (r == 0) {
            *found = 1;
            return mid;
        }
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Points |g|'s sets into the current snapshot (and counts it as known or
 * not). */
static void group_bind(struct xds_cache *c, struct xds_cache_group *g)
{
    const struct xlate_group *sg = c->snap ? xlate_snapshot_group(c->snap, g->name) : NULL;
    for (int t = 0; t < XDS_TYPE_COUNT; t++)
        g->sets.t[t] = !c->snap ? NULL : sg ? &sg->types[t] : &c->empty;
    g->access = sg ? &sg->access : NULL;
    uint8_t known = sg != NULL;
    if (known && !g->known)
        c->nunknown--;
    else if (!known && g->known)
        c->nunknown++;
    g->known = known;
}

/* A group no stream holds is kept only for the NACK records of a Gateway
 * that exists: the status writer reads them. Any other one (a name a
 * client made up) goes at once, so junk groups cannot pile up. */
static int group_evictable(const struct xds_cache_group *g)
{
    return g->nwatches == 0 && (!g->has_nacks || !g->known);
}

static void group_remove_at(struct xds_cache *c, size_t i)
{
    if (!c->groups[i]->known)
        c->nunknown--;
    group_free(c->groups[i]);
    memmove(c->groups + i, c->groups + i + 1, (c->ngroups - i - 1) * sizeof(*c->groups));
    c->ngroups--;
}

void xds_cache_set_snapshot(struct xds_cache *c, struct xlate_snapshot *snap,
                            xds_cache_wake_fn wake, void *user)
{
    struct xlate_snapshot *old = c->snap;
    c->snap = xlate_snapshot_ref(snap);
    for (size_t i = 0; i < c->ngroups; i++) {
        struct xds_cache_group *g = c->groups[i];
        struct xds_ads_sets before = g->sets;
        const struct xlate_access *acc_before = g->access;
        group_bind(c, g);
        /* Who may receive it changed: the streams are checked again. */
        int changed = !xds_access_equal(acc_before, g->access);
        for (int t = 0; t < XDS_TYPE_COUNT && !changed; t++) {
            const struct xds_resource_set *a = before.t[t], *b = g->sets.t[t];
            changed = (!a) != (!b) || (a && b && strcmp(a->version, b->version) != 0);
        }
        if (!changed || !wake)
            continue;
        /* |wake| may not add or remove watches of this group. */
        struct cx_list *l;
        cx_list_for_each (l, &g->watches)
            wake(user, cx_list_entry(l, struct xds_cache_watch, link));
    }
    /* Gateways that went keep no NACK records once no stream holds them. */
    for (size_t i = c->ngroups; i-- > 0;)
        if (group_evictable(c->groups[i]))
            group_remove_at(c, i);
    /* Release the old snapshot only now: |before| pointed into it. */
    xlate_snapshot_unref(old);
}

int xds_cache_watch_add(struct xds_cache *c, struct xds_cache_watch *w, const char *group)
{
    int found;
    size_t i = group_index(c, group, &found);
    struct xds_cache_group *g;
    if (found) {
        g = c->groups[i];
    } else {
        int known = c->snap && xlate_snapshot_group(c->snap, group);
        /* Gateways are always admitted; names that no Gateway has are
         * capped, so that made-up groups cannot crowd real ones out. */
        if (c->ngroups >= XDS_CACHE_MAX_GROUPS ||
            (!known && c->nunknown >= XDS_CACHE_MAX_UNKNOWN_GROUPS))
            return -1;
        if (c->ngroups == c->cap) {
            size_t ncap = c->cap ? c->cap * 2 : 16;
            struct xds_cache_group **v = realloc(c->groups, ncap * sizeof(*v));
            if (!v)
                return -1;
            c->groups = v;
            c->cap = ncap;
        }
        g = calloc(1, sizeof(*g));
        if (!g || !(g->name = strdup(group))) {
            free(g);
            return -1;
        }
        cx_list_init(&g->watches);
        c->nunknown++; /* created unknown; group_bind corrects it */
        group_bind(c, g);
        memmove(c->groups + i + 1, c->groups + i, (c->ngroups - i) * sizeof(*c->groups));
        c->groups[i] = g;
        c->ngroups++;
    }
    w->group = g;
    cx_list_prepend(&g->watches, &w->link);
    g->nwatches++;
    return 0;
}

void xds_cache_watch_remove(struct xds_cache *c, struct xds_cache_watch *w)
{
    struct xds_cache_group *g = w->group;
    if (!g)
        return;
    cx_list_del(&w->link);
    w->group = NULL;
    g->nwatches--;
    if (group_evictable(g)) {
        int found;
        size_t i = group_index(c, g->name, &found);
        if (found)
            group_remove_at(c, i);
    }
}

const struct xds_ads_sets *xds_cache_sets(const struct xds_cache *c,
                                          const struct xds_cache_watch *w)
{
    if (!c->snap || !w->group)
        return NULL;
    return &w->group->sets;
}

const struct xds_ads_sets *xds_cache_sets_for(const struct xds_cache *c, const char *group,
                                              struct xds_ads_sets *tmp)
{
    if (!c->snap)
        return NULL;
    const struct xlate_group *sg = xlate_snapshot_group(c->snap, group);
    for (int t = 0; t < XDS_TYPE_COUNT; t++)
        tmp->t[t] = sg ? &sg->types[t] : &c->empty;
    return tmp;
}

struct xds_nack_stat *xds_cache_nack(struct xds_cache_watch *w, enum xds_type type)
{
    if (!w->group || (unsigned)type >= XDS_TYPE_COUNT)
        return NULL;
    w->group->has_nacks = 1;
    return &w->group->nack[type];
}

const char *xds_cache_group_name(const struct xds_cache_watch *w)
{
    return w->group ? w->group->name : "";
}

size_t xds_cache_group_watches(const struct xds_cache_watch *w)
{
    return w->group ? w->group->nwatches : 0;
}

const struct xds_nack_stat *xds_cache_nack_find(const struct xds_cache *c, const char *group,
                                                enum xds_type type)
{
    int found;
    size_t i = group_index(c, group, &found);
    if (!found || (unsigned)type >= XDS_TYPE_COUNT || !c->groups[i]->has_nacks)
        return NULL;
    return &c->groups[i]->nack[type];
}

void xds_cache_foreach_nack(const struct xds_cache *c,
                            void (*fn)(void *user, const char *group, enum xds_type type,
                                       const struct xds_nack_stat *st),
                            void *user)
{
    for (size_t i = 0; i < c->ngroups; i++) {
        const struct xds_cache_group *g = c->groups[i];
        for (int t = 0; t < XDS_TYPE_COUNT; t++)
            if (g->nack[t].total)
                fn(user, g->name, (enum xds_type)t, &g->nack[t]);
    }
}

size_t xds_cache_ngroups(const struct xds_cache *c)
{
    return c->ngroups;
}
