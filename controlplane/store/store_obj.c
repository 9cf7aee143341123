#include "store_obj.h"

#include "cx_json.h"
#include "filter.h"
#include "store_kinds.h"
#include "xlate.h"
#include "xlate_api.h"
#include "xlate_record.h"

#include "cx_map.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A record's first chunk is sized by the previous record of its kind (the
 * informer of a kind delivers objects alike), with a sixteenth more (the
 * room left unused in every record: an eighth cost 4.6 MB of a 10k world's
 * 40 MB of records); one object far larger than the rest does not size the
 * others. */
#define HINT_MAX 8192

void store_decoder_init(struct store_decoder *d, const struct xlate_limits *lim)
{
    memset(d, 0, sizeof(*d));
    if (lim)
        d->lim = *lim;
    else
        xlate_limits_default(&d->lim);
    cx_buf_init(&d->scratch, 0);
}

void store_decoder_free(struct store_decoder *d)
{
    cx_buf_free(&d->scratch);
}

/* ---- statuses, shared ------------------------------------------------------ *
 * The leader writes the statuses, so objects accepted together carry the
 * same text (state, reason, message, transition time, generation): kept
 * once, counted. A 10k world's 20k statuses (~250 bytes each) are a handful
 * of texts; a text held by one object costs its map slot more than a copy.
 * Records are decoded on the informers' thread and freed on whichever
 * drops the last reference (a view on the translator's): a lock. */

struct st_text {
    size_t refs; /* under st_mu */
    size_t len;
    char text[];
};

static pthread_mutex_t st_mu = PTHREAD_MUTEX_INITIALIZER;
static struct cx_map st_map; /* text -> struct st_text */

static const char *status_intern(const char *text)
{
    size_t len = strlen(text);
    pthread_mutex_lock(&st_mu);
    struct st_text *t = cx_map_get(&st_map, text, len);
    if (t) {
        t->refs++;
    } else if ((t = malloc(sizeof(*t) + len + 1))) {
        t->refs = 1;
        t->len = len;
        memcpy(t->text, text, len + 1);
        if (cx_map_put(&st_map, t->text, len, t, NULL) != 0) {
            free(t);
            t = NULL;
        }
    }
    pthread_mutex_unlock(&st_mu);
    return t ? t->text : NULL;
}

static void status_release(const char *text)
{
    if (!text)
        return;
    struct st_text *t = (struct st_text *)(text - offsetof(struct st_text, text));
    pthread_mutex_lock(&st_mu);
    if (--t->refs == 0) {
        cx_map_del(&st_map, t->text, t->len);
        if (cx_map_len(&st_map) == 0)
            cx_map_free(&st_map); /* nothing left behind at exit */
        free(t);
    }
    pthread_mutex_unlock(&st_mu);
}

size_t store_status_texts(void)
{
    pthread_mutex_lock(&st_mu);
    size_t n = cx_map_len(&st_map);
    pthread_mutex_unlock(&st_mu);
    return n;
}

static void so_free(void *p)
{
    store_obj_free(p);
}

static const char *so_label(const void *p, const char *key)
{
    return store_obj_label(p, key);
}

const struct kube_rec_ops store_obj_ops = {.free = so_free, .label = so_label};

struct store_obj *store_obj_decode(struct store_decoder *d, enum xlate_kind kind, const cJSON *json,
                                   const char *const *refs, size_t nrefs)
{
    if (kind < 0 || kind >= XLATE_KIND_COUNT)
        return NULL;
    uint64_t digest = 0;
    if (filter_digest(json, &d->scratch, &digest) != 0)
        return NULL;
    if (!digest)
        digest = 1; /* 0 means "compute one" to the translator */
    size_t hint = d->hint[kind];
    struct xlate_record *rec = xlate_record_new(kind, json, digest, &d->lim, &hint);
    if (!rec)
        return NULL;
    size_t live = rec->live;
    live = (live + live / 16 + 7) & ~(size_t)7;
    if (live <= HINT_MAX)
        d->hint[kind] = live;
    /* the references share the object's allocation; the status is shared */
    const char *status = NULL;
    const cJSON *st = store_kind_has_status(kind) ? cx_json_member(json, "status") : NULL;
    if (st) {
        char *text = cJSON_PrintUnformatted(st);
        status = text ? status_intern(text) : NULL;
        free(text);
        if (!status) {
            xlate_record_unref(rec);
            return NULL;
        }
    }
    size_t rl = 0;
    for (size_t i = 0; i < nrefs; i++)
        rl += strlen(refs[i]) + 1;
    struct store_obj *so = malloc(sizeof(*so) + nrefs * sizeof(char *) + rl);
    if (!so) {
        status_release(status);
        xlate_record_unref(rec);
        return NULL;
    }
    so->rec = rec;
    so->digest = digest;
    so->nrefs = nrefs;
    so->refs = nrefs ? (char **)(so + 1) : NULL;
    char *p = (char *)(so + 1) + nrefs * sizeof(char *);
    so->status = status;
    for (size_t i = 0; i < nrefs; i++) {
        size_t n = strlen(refs[i]) + 1;
        so->refs[i] = memcpy(p, refs[i], n);
        p += n;
    }
    return so;
}

void store_obj_free(struct store_obj *so)
{
    if (!so)
        return;
    xlate_record_unref(so->rec);
    status_release(so->status);
    free(so);
}

const char *store_obj_label(const struct store_obj *so, const char *key)
{
    return xlate_meta_label(&so->rec->obj.meta, key);
}

int64_t store_obj_generation(const struct store_obj *so)
{
    return so->rec->obj.meta.generation;
}

cJSON *store_obj_status(const struct kube_obj *o)
{
    const struct store_obj *so = store_obj_of(o);
    if (so)
        return so->status ? cJSON_Parse(so->status) : NULL;
    const cJSON *st = o && o->json ? cx_json_member(o->json, "status") : NULL;
    return st ? cJSON_Duplicate(st, 1) : NULL;
}

int64_t store_kube_generation(const struct kube_obj *o)
{
    const struct store_obj *so = store_obj_of(o);
    if (so)
        return store_obj_generation(so);
    const cJSON *gen = o && o->json ? cx_json_path(o->json, "metadata", "generation", NULL) : NULL;
    return cx_json_int(gen, 0, INT64_MAX, 0);
}
