#include "xlate_snapshot.h"

#include "cx_buf.h"
#include "cx_hash.h"
#include "xlate_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const type_urls[XDS_TYPE_COUNT] = {
    XDS_TYPE_URL_LISTENER, XDS_TYPE_URL_ROUTE,  XDS_TYPE_URL_CLUSTER,
    XDS_TYPE_URL_ENDPOINT, XDS_TYPE_URL_SECRET,
};
static const char *const type_short[XDS_TYPE_COUNT] = {"LDS", "RDS", "CDS", "EDS", "SDS"};

const char *xlate_type_url(enum xds_type t)
{
    return (unsigned)t < XDS_TYPE_COUNT ? type_urls[t] : "";
}

const char *xlate_type_short(enum xds_type t)
{
    return (unsigned)t < XDS_TYPE_COUNT ? type_short[t] : "?";
}

int xlate_type_from_url(const char *url)
{
    for (int i = 0; i < XDS_TYPE_COUNT; i++)
        if (url && strcmp(url, type_urls[i]) == 0)
            return i;
    return -1;
}

/* The resource and its name in one block (a translation makes tens of
 * thousands): the name is not freed on its own. */
static void bytes_free(uint8_t *bytes, int big)
{
    if (big)
        xlate_big_free(bytes);
    else
        free(bytes);
}

static struct xds_resource *resource_alloc(enum xds_type type, const char *name, uint8_t *bytes,
                                           size_t len, int big)
{
    size_t nl = strlen(name) + 1;
    struct xds_resource *r = malloc(sizeof(*r) + nl);
    if (!r) {
        bytes_free(bytes, big);
        return NULL;
    }
    memset(r, 0, sizeof(*r));
    atomic_init(&r->refs, 1);
    r->type = type;
    r->name = memcpy((char *)(r + 1), name, nl);
    r->bytes = bytes;
    r->len = len;
    r->bytes_big = (unsigned char)!!big;
    return r;
}

struct xds_resource *xlate_resource_new(enum xds_type type, const char *name, uint8_t *bytes,
                                        size_t len)
{
    struct xds_resource *r = resource_alloc(type, name, bytes, len, 0);
    if (r)
        cx_sha256_hex(bytes ? (const void *)bytes : (const void *)"", len, r->version,
                      XDS_VERSION_LEN);
    return r;
}

static struct xds_resource *with_version(enum xds_type type, const char *name, uint8_t *bytes,
                                         size_t len, const char *version, int big)
{
    struct xds_resource *r = resource_alloc(type, name, bytes, len, big);
    if (!r)
        return NULL;
    size_t vl = strnlen(version, XDS_VERSION_LEN);
    memcpy(r->version, version, vl);
    r->version[vl] = '\0';
    return r;
}

struct xds_resource *xlate_resource_new_versioned(enum xds_type type, const char *name,
                                                  uint8_t *bytes, size_t len, const char *version)
{
    return with_version(type, name, bytes, len, version, 0);
}

struct xds_resource *xlate_resource_new_big(enum xds_type type, const char *name, uint8_t *bytes,
                                            size_t len, const char *version)
{
    return with_version(type, name, bytes, len, version, 1);
}

struct xds_resource *xlate_resource_ref(struct xds_resource *r)
{
    if (r)
        atomic_fetch_add(&r->refs, 1);
    return r;
}

void xlate_resource_unref(struct xds_resource *r)
{
    if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    bytes_free(r->bytes, r->bytes_big);
    free(r); /* and its name */
}

static int res_cmp(const void *a, const void *b)
{
    const struct xds_resource *x = *(struct xds_resource *const *)a;
    const struct xds_resource *y = *(struct xds_resource *const *)b;
    return strcmp(x->name, y->name);
}

int xlate_resource_set_seal(struct xds_resource_set *set)
{
    if (set->n > 1)
        qsort(set->items, set->n, sizeof(set->items[0]), res_cmp);
    struct cx_buf b;
    cx_buf_init(&b, 0);
    int rc = 0;
    for (size_t i = 0; i < set->n && rc == 0; i++) {
        if (i > 0 && strcmp(set->items[i - 1]->name, set->items[i]->name) == 0)
            rc = -1;
        else
            rc = cx_buf_printf(&b, "%s\n%s\n", set->items[i]->name, set->items[i]->version);
    }
    if (rc == 0)
        cx_sha256_hex(b.data ? b.data : "", b.len, set->version, XDS_VERSION_LEN);
    cx_buf_free(&b);
    return rc;
}

struct xds_resource *xlate_resource_set_find(const struct xds_resource_set *set, const char *name)
{
    size_t lo = 0, hi = set->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(set->items[mid]->name, name);
        if (c == 0)
            return set->items[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

struct xlate_snapshot *xlate_snapshot_ref(struct xlate_snapshot *s)
{
    if (s)
        atomic_fetch_add(&s->refs, 1);
    return s;
}

void xlate_snapshot_unref(struct xlate_snapshot *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    for (size_t g = 0; g < s->ngroups; g++) {
        struct xlate_group *grp = &s->groups[g];
        for (int t = 0; t < XDS_TYPE_COUNT; t++) {
            for (size_t i = 0; i < grp->types[t].n; i++)
                xlate_resource_unref(grp->types[t].items[i]);
            free(grp->types[t].items);
        }
        free(grp->name);
        free(grp->access.sas);
    }
    free(s->groups);
    if (s->report_block) {
        xlate_report_block_unref(s->report_block);
        free(s);
        return;
    }
    for (size_t i = 0; i < s->nreports; i++) {
        struct xlate_report *r = &s->reports[i];
        free(r->kind);
        free(r->namespace);
        free(r->name);
        free(r->uid);
        free(r->reason);
        free(r->message);
    }
    free(s->reports);
    free(s);
}

struct xlate_report_block *xlate_report_block_ref(struct xlate_report_block *b)
{
    if (b) {
        atomic_fetch_add(&b->users, 1);
        atomic_fetch_add(&b->refs, 1);
    }
    return b;
}

/* A newer block's reference to |b| (xlate_report_block_base) is for its
 * strings only. */
static void block_release(struct xlate_report_block *b)
{
    if (!b || atomic_fetch_sub(&b->refs, 1) != 1)
        return;
    xlate_big_free(b->reports);
    xlate_big_free(b->strings);
    block_release(b->base);
    free(b);
}

struct xlate_report_block *xlate_report_block_base(struct xlate_report_block *b)
{
    if (b)
        atomic_fetch_add(&b->refs, 1);
    return b;
}

void xlate_report_block_unref(struct xlate_report_block *b)
{
    if (!b)
        return;
    if (atomic_fetch_sub(&b->users, 1) == 1) {
        /* nobody reads the array any more (a patched block copied it);
         * newer blocks may still point into the strings */
        xlate_big_free(b->reports);
        b->reports = NULL;
    }
    block_release(b);
}

const struct xlate_group *xlate_snapshot_group(const struct xlate_snapshot *s, const char *name)
{
    size_t lo = 0, hi = s->ngroups;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(s->groups[mid].name, name);
        if (c == 0)
            return &s->groups[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

void xlate_snapshot_seal(struct xlate_snapshot *s)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    int rc = 0;
    for (size_t g = 0; g < s->ngroups; g++) {
        rc |= cx_buf_printf(&b, "%s\n", s->groups[g].name);
        for (int t = 0; t < XDS_TYPE_COUNT; t++)
            if (xlate_group_type_shown(&s->groups[g], t))
                rc |= cx_buf_printf(&b, "%s\n", s->groups[g].types[t].version);
    }
    if (rc == 0)
        cx_sha256_hex(b.data ? b.data : "", b.len, s->version, XDS_VERSION_LEN);
    cx_buf_free(&b);
}

const char *xlate_state_name(enum xlate_state st)
{
    switch (st) {
    case XLATE_ACCEPTED:
        return "Accepted";
    case XLATE_WARNING:
        return "Warning";
    case XLATE_REJECTED:
        return "Rejected";
    }
    return "Unknown";
}
