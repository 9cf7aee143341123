/*
 * ks_store: blobs, object versions, the per-resource index (hash map plus
 * skip list ordered like etcd keys), the event window and the commit path.
 */
#include "ks.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cx_hash.h"
#include "cx_json.h"
#include "cx_time.h"
#include "ks_admin.h"
#include "ks_endpoints.h"

/* Objects in etcd are limited to about 1.5 MiB; we allow a little more so
 * that the API layer, not the store, produces the error. */
#define KS_OBJ_MAX ((size_t)4 << 20)

/* ---- blobs ------------------------------------------------------------ */

struct ks_blob *ks_blob_new(const void *p, size_t n)
{
    struct ks_blob *b = malloc(sizeof(*b) + n + 1);
    if (!b)
        return NULL;
    b->refs = 1;
    b->len = n;
    if (n)
        memcpy(b->data, p, n);
    b->data[n] = '\0';
    return b;
}

struct ks_blob *ks_blob_from_buf(struct cx_buf *buf)
{
    struct ks_blob *b = ks_blob_new(buf->data ? buf->data : "", buf->len);
    cx_buf_reset(buf);
    return b;
}

void ks_blob_ref(struct ks_blob *b)
{
    b->refs++;
}

void ks_blob_unref(struct ks_blob *b)
{
    if (b && --b->refs == 0)
        free(b);
}

static void blob_cleanup(const void *data, size_t len, void *arg)
{
    (void)data;
    (void)len;
    ks_blob_unref(arg);
}

int ks_blob_add_ref(struct evbuffer *out, struct ks_blob *b)
{
    b->refs++;
    if (evbuffer_add_reference(out, b->data, b->len, blob_cleanup, b) != 0) {
        b->refs--;
        return -1;
    }
    return 0;
}

/* ---- versions --------------------------------------------------------- */

struct ks_blob *ks_json_blob(const cJSON *obj)
{
    struct cx_buf b;
    cx_buf_init(&b, KS_OBJ_MAX);
    if (cx_json_canonical(obj, &b) != 0) {
        cx_buf_free(&b);
        return NULL;
    }
    struct ks_blob *r = ks_blob_from_buf(&b);
    cx_buf_free(&b);
    return r;
}

struct ks_ver *ks_ver_new(cJSON *obj, uint64_t rv)
{
    struct ks_ver *v = calloc(1, sizeof(*v));
    if (!v) {
        cJSON_Delete(obj);
        return NULL;
    }
    v->refs = 1;
    v->rv = rv;
    v->obj = obj;
    v->json = ks_json_blob(obj);
    if (!v->json) {
        cJSON_Delete(obj);
        free(v);
        return NULL;
    }
    return v;
}

void ks_ver_ref(struct ks_ver *v)
{
    v->refs++;
}

void ks_ver_unref(struct ks_ver *v)
{
    if (!v || --v->refs > 0)
        return;
    cJSON_Delete(v->obj);
    ks_blob_unref(v->json);
    ks_blob_unref(v->partial);
    for (int f = 0; f < KS_NFORMS; f++)
        ks_blob_unref(v->added_frame[f]);
    free(v);
}

struct ks_blob *ks_partial_blob(const cJSON *obj, const char *version)
{
    struct cx_buf b;
    cx_buf_init(&b, KS_OBJ_MAX);
    /* Keys in canonical (sorted) order, like every kubesim object. */
    int rc = cx_buf_printf(&b,
                           "{\"apiVersion\":\"meta.k8s.io/%s\",\"kind\":\"PartialObjectMetadata\","
                           "\"metadata\":",
                           version);
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    if (cJSON_IsObject(md))
        rc |= cx_json_canonical(md, &b);
    else
        rc |= cx_buf_puts(&b, "{}");
    rc |= cx_buf_puts(&b, "}");
    struct ks_blob *r = rc == 0 ? ks_blob_from_buf(&b) : NULL;
    cx_buf_free(&b);
    return r;
}

struct ks_blob *ks_ver_json(struct ks_ver *v, enum ks_form f)
{
    if (f == KS_FORM_FULL)
        return v->json;
    if (!v->partial)
        v->partial = ks_partial_blob(v->obj, "v1");
    return v->partial;
}

struct ks_blob *ks_make_frame(const char *type, const struct ks_blob *obj)
{
    struct cx_buf b;
    cx_buf_init(&b, KS_OBJ_MAX * 2);
    if (cx_buf_printf(&b, "{\"type\":\"%s\",\"object\":", type) != 0 ||
        cx_buf_append(&b, obj->data, obj->len) != 0 || cx_buf_puts(&b, "}\n") != 0) {
        cx_buf_free(&b);
        return NULL;
    }
    struct ks_blob *r = ks_blob_from_buf(&b);
    cx_buf_free(&b);
    return r;
}

struct ks_blob *ks_ver_added_frame(struct ks_ver *v, enum ks_form f)
{
    if (!v->added_frame[f]) {
        struct ks_blob *j = ks_ver_json(v, f);
        v->added_frame[f] = j ? ks_make_frame("ADDED", j) : NULL;
    }
    return v->added_frame[f];
}

/* Copy of |v| with metadata.resourceVersion = |rv|. */
static struct ks_ver *ver_restamp(const struct ks_ver *v, uint64_t rv)
{
    cJSON *o = cJSON_Duplicate(v->obj, 1);
    if (!o)
        return NULL;
    cJSON *md = cJSON_GetObjectItemCaseSensitive(o, "metadata");
    if (cJSON_IsObject(md)) {
        char rvs[24];
        snprintf(rvs, sizeof(rvs), "%llu", (unsigned long long)rv);
        cJSON_DeleteItemFromObjectCaseSensitive(md, "resourceVersion");
        cJSON_AddStringToObject(md, "resourceVersion", rvs);
    }
    return ks_ver_new(o, rv);
}

struct ks_ver *ks_event_ver(struct ks_event *e, enum ks_evtype t)
{
    if (t == KS_EV_DELETED && e->type != KS_EV_DELETED) {
        /* An object that stopped matching: its previous content with the
         * event's RV, as the watch cache does. */
        if (!e->prev_rv)
            e->prev_rv = ver_restamp(e->prev, e->rv);
        return e->prev_rv;
    }
    return e->obj;
}

struct ks_blob *ks_event_frame(struct ks_event *e, enum ks_evtype t, enum ks_form f)
{
    static const char *names[] = {"ADDED", "MODIFIED", "DELETED"};
    if (e->frame[f][t])
        return e->frame[f][t];
    struct ks_ver *src = ks_event_ver(e, t);
    struct ks_blob *j = src ? ks_ver_json(src, f) : NULL;
    if (!j)
        return NULL;
    e->frame[f][t] = ks_make_frame(names[t], j);
    return e->frame[f][t];
}

static void ks_event_free(struct ks_event *e)
{
    if (!e)
        return;
    free(e->key);
    ks_ver_unref(e->obj);
    ks_ver_unref(e->prev);
    ks_ver_unref(e->prev_rv);
    for (int f = 0; f < KS_NFORMS; f++)
        for (int i = 0; i < 3; i++)
            ks_blob_unref(e->frame[f][i]);
    free(e);
}

/* ---- index: hash map + skip list -------------------------------------- */

static uint64_t key_hash(const char *k, size_t n)
{
    return cx_fnv64(CX_FNV64_INIT, k, n);
}

void ks_index_init(struct ks_index *ix)
{
    memset(ix, 0, sizeof(*ix));
    ix->head = calloc(1, sizeof(struct ks_obj) + KS_SKIP_MAX * sizeof(struct ks_obj *));
    if (ix->head) {
        ix->head->level = KS_SKIP_MAX;
        ix->head->key = NULL;
    }
    ix->level = 1;
    ix->nbuckets = 64;
    ix->buckets = calloc(ix->nbuckets, sizeof(*ix->buckets));
    ix->rng = UINT64_C(0x9e3779b97f4a7c15);
}

void ks_index_free(struct ks_index *ix)
{
    if (!ix->head)
        return;
    struct ks_obj *o = ix->head->fwd[0];
    while (o) {
        struct ks_obj *n = o->fwd[0];
        ks_ver_unref(o->cur);
        free(o->key);
        free(o);
        o = n;
    }
    free(ix->head);
    ix->head = NULL;
    free(ix->buckets);
    ix->buckets = NULL;
}

struct ks_obj *ks_index_get(const struct ks_index *ix, const char *key)
{
    if (!ix->buckets)
        return NULL;
    size_t n = strlen(key);
    uint64_t h = key_hash(key, n);
    for (struct ks_obj *o = ix->buckets[h & (ix->nbuckets - 1)]; o; o = o->hnext)
        if (o->hash == h && o->keylen == n && memcmp(o->key, key, n) == 0)
            return o;
    return NULL;
}

struct ks_obj *ks_index_seek(const struct ks_index *ix, const char *key)
{
    struct ks_obj *x = ix->head;
    for (int i = ix->level - 1; i >= 0; i--)
        while (x->fwd[i] && strcmp(x->fwd[i]->key, key) < 0)
            x = x->fwd[i];
    return x->fwd[0];
}

static int random_level(struct ks_index *ix)
{
    /* xorshift64 */
    uint64_t x = ix->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    ix->rng = x;
    int lvl = 1;
    while (lvl < KS_SKIP_MAX && (x & 3) == 0) {
        lvl++;
        x >>= 2;
    }
    return lvl;
}

static int hash_grow(struct ks_index *ix)
{
    size_t nb = ix->nbuckets * 2;
    struct ks_obj **b = calloc(nb, sizeof(*b));
    if (!b)
        return -1;
    for (size_t i = 0; i < ix->nbuckets; i++) {
        struct ks_obj *o = ix->buckets[i];
        while (o) {
            struct ks_obj *n = o->hnext;
            o->hnext = b[o->hash & (nb - 1)];
            b[o->hash & (nb - 1)] = o;
            o = n;
        }
    }
    free(ix->buckets);
    ix->buckets = b;
    ix->nbuckets = nb;
    return 0;
}

/* Inserts a new entry for |key| (which must not exist). */
static struct ks_obj *index_insert(struct ks_index *ix, const char *key)
{
    if (ix->count + 1 > ix->nbuckets && hash_grow(ix) != 0)
        return NULL;
    struct ks_obj *update[KS_SKIP_MAX];
    struct ks_obj *x = ix->head;
    for (int i = ix->level - 1; i >= 0; i--) {
        while (x->fwd[i] && strcmp(x->fwd[i]->key, key) < 0)
            x = x->fwd[i];
        update[i] = x;
    }
    int lvl = random_level(ix);
    struct ks_obj *o = calloc(1, sizeof(*o) + (size_t)lvl * sizeof(struct ks_obj *));
    if (!o)
        return NULL;
    o->key = strdup(key);
    if (!o->key) {
        free(o);
        return NULL;
    }
    o->keylen = strlen(key);
    o->hash = key_hash(key, o->keylen);
    o->level = lvl;
    if (lvl > ix->level) {
        for (int i = ix->level; i < lvl; i++)
            update[i] = ix->head;
        ix->level = lvl;
    }
    for (int i = 0; i < lvl; i++) {
        o->fwd[i] = update[i]->fwd[i];
        update[i]->fwd[i] = o;
    }
    size_t bi = o->hash & (ix->nbuckets - 1);
    o->hnext = ix->buckets[bi];
    ix->buckets[bi] = o;
    ix->count++;
    return o;
}

/* Unlinks |o| from both structures (caller frees it). */
static void index_remove(struct ks_index *ix, struct ks_obj *o)
{
    struct ks_obj *x = ix->head;
    for (int i = ix->level - 1; i >= 0; i--) {
        while (x->fwd[i] && x->fwd[i] != o && strcmp(x->fwd[i]->key, o->key) < 0)
            x = x->fwd[i];
        if (x->fwd[i] == o)
            x->fwd[i] = o->fwd[i];
    }
    while (ix->level > 1 && !ix->head->fwd[ix->level - 1])
        ix->level--;
    struct ks_obj **pp = &ix->buckets[o->hash & (ix->nbuckets - 1)];
    while (*pp && *pp != o)
        pp = &(*pp)->hnext;
    if (*pp)
        *pp = o->hnext;
    ix->count--;
}

/* ---- resource types --------------------------------------------------- */

static char *xstrdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

struct ks_rtype *ks_rtype_add(struct ks_server *s, const char *group, const char *version,
                              const char *plural, const char *singular, const char *kind,
                              bool namespaced)
{
    struct ks_rtype *rt = calloc(1, sizeof(*rt));
    if (!rt)
        return NULL;
    rt->group = xstrdup(group);
    rt->version = xstrdup(version);
    rt->plural = xstrdup(plural);
    rt->singular = xstrdup(singular);
    rt->kind = xstrdup(kind);
    size_t kl = strlen(kind) + 5;
    rt->list_kind = malloc(kl);
    if (rt->list_kind)
        snprintf(rt->list_kind, kl, "%sList", kind);
    size_t al = strlen(group) + strlen(version) + 2;
    rt->api_version = malloc(al);
    if (rt->api_version) {
        if (*group)
            snprintf(rt->api_version, al, "%s/%s", group, version);
        else
            snprintf(rt->api_version, al, "%s", version);
    }
    rt->namespaced = namespaced;
    rt->served = true;
    rt->unconditional_ok = true;
    rt->strategic_ok = true;
    ks_index_init(&rt->idx);
    rt->ring_cap = s->cfg.event_window ? s->cfg.event_window : 10000;
    rt->ring = calloc(rt->ring_cap, sizeof(*rt->ring));
    rt->window_start_rv = s->rv;
    rt->cache_rv = s->rv;
    TAILQ_INIT(&rt->watchers);
    if (!rt->group || !rt->version || !rt->plural || !rt->singular || !rt->kind || !rt->list_kind ||
        !rt->api_version || !rt->ring || !rt->idx.head || !rt->idx.buckets) {
        ks_rtype_free(rt);
        return NULL;
    }
    /* Append, so discovery lists resources in registration order. */
    struct ks_rtype **pp = &s->rtypes;
    while (*pp)
        pp = &(*pp)->next;
    *pp = rt;
    return rt;
}

void ks_rtype_free(struct ks_rtype *rt)
{
    if (!rt)
        return;
    ks_index_free(&rt->idx);
    if (rt->ring) {
        for (size_t i = 0; i < rt->ring_len; i++)
            ks_event_free(rt->ring[(rt->ring_head + i) % rt->ring_cap]);
        free(rt->ring);
    }
    free(rt->group);
    free(rt->version);
    free(rt->api_version);
    free(rt->plural);
    free(rt->singular);
    free(rt->kind);
    free(rt->list_kind);
    for (int i = 0; i < 4; i++)
        free(rt->short_names[i]);
    for (int i = 0; i < 2; i++)
        free(rt->categories[i]);
    free(rt->crd_name);
    cJSON_Delete(rt->printer_columns);
    free(rt);
}

struct ks_rtype *ks_rtype_find(struct ks_server *s, const char *group, const char *version,
                               const char *plural)
{
    for (struct ks_rtype *rt = s->rtypes; rt; rt = rt->next)
        if (rt->served && strcmp(rt->group, group) == 0 &&
            (!version || strcmp(rt->version, version) == 0) && strcmp(rt->plural, plural) == 0)
            return rt;
    return NULL;
}

static struct ks_rtype *builtin(struct ks_server *s, const char *group, const char *plural,
                                const char *singular, const char *kind, bool namespaced,
                                enum ks_kind_id id, const char *shortname)
{
    const char *version = "v1";
    struct ks_rtype *rt = ks_rtype_add(s, group, version, plural, singular, kind, namespaced);
    if (!rt)
        return NULL;
    rt->id = id;
    if (shortname)
        rt->short_names[0] = strdup(shortname);
    return rt;
}

void ks_rtypes_builtin(struct ks_server *s)
{
    struct ks_rtype *rt;
    rt = builtin(s, "", "namespaces", "namespace", "Namespace", false, KS_K_NAMESPACE, "ns");
    if (rt)
        rt->has_status = true;
    builtin(s, "", "configmaps", "configmap", "ConfigMap", true, KS_K_CONFIGMAP, "cm");
    builtin(s, "", "secrets", "secret", "Secret", true, KS_K_SECRET, NULL);
    rt = builtin(s, "", "services", "service", "Service", true, KS_K_SERVICE, "svc");
    if (rt) {
        rt->has_status = true;
        rt->categories[0] = strdup("all");
    }
    rt = builtin(s, "", "events", "event", "Event", true, KS_K_EVENT, "ev");
    if (rt)
        rt->create_on_update = true;
    builtin(s, "", "serviceaccounts", "serviceaccount", "ServiceAccount", true, KS_K_SERVICEACCOUNT,
            "sa");
    rt = builtin(s, "coordination.k8s.io", "leases", "lease", "Lease", true, KS_K_LEASE, NULL);
    if (rt) {
        rt->unconditional_ok = false;
        rt->create_on_update = true;
    }
    builtin(s, "", "endpoints", "endpoints", "Endpoints", true, KS_K_ENDPOINTS, "ep");
    builtin(s, "discovery.k8s.io", "endpointslices", "endpointslice", "EndpointSlice", true,
            KS_K_ENDPOINTSLICE, NULL);
    /* Stored only (nothing runs them): what the Helm chart deploys. */
    builtin(s, "apps", "deployments", "deployment", "Deployment", true, KS_K_OTHER, "deploy");
    builtin(s, "policy", "poddisruptionbudgets", "poddisruptionbudget", "PodDisruptionBudget", true,
            KS_K_OTHER, "pdb");
    /* The PriorityClass a Deployment names (the chart's HA profile). */
    builtin(s, "scheduling.k8s.io", "priorityclasses", "priorityclass", "PriorityClass", false,
            KS_K_OTHER, "pc");
    rt = builtin(s, "apiextensions.k8s.io", "customresourcedefinitions", "customresourcedefinition",
                 "CustomResourceDefinition", false, KS_K_CRD, "crd");
    if (rt) {
        rt->has_status = true;
        rt->sets_generation = true;
        rt->unconditional_ok = false;
        rt->strategic_ok = false;
        rt->short_names[1] = strdup("crds");
    }
    builtin(s, "rbac.authorization.k8s.io", "roles", "role", "Role", true, KS_K_ROLE, NULL);
    builtin(s, "rbac.authorization.k8s.io", "clusterroles", "clusterrole", "ClusterRole", false,
            KS_K_CLUSTERROLE, NULL);
    builtin(s, "rbac.authorization.k8s.io", "rolebindings", "rolebinding", "RoleBinding", true,
            KS_K_ROLEBINDING, NULL);
    builtin(s, "rbac.authorization.k8s.io", "clusterrolebindings", "clusterrolebinding",
            "ClusterRoleBinding", false, KS_K_CLUSTERROLEBINDING, NULL);
    /* The review APIs: create-only questions, nothing stored. */
    static const struct {
        const char *group, *plural, *singular, *kind;
        bool namespaced;
        enum ks_kind_id id;
    } reviews[] = {
        {"authentication.k8s.io", "tokenreviews", "tokenreview", "TokenReview", false,
         KS_K_TOKENREVIEW},
        {"authentication.k8s.io", "selfsubjectreviews", "selfsubjectreview", "SelfSubjectReview",
         false, KS_K_SELFSUBJECTREVIEW},
        {"authorization.k8s.io", "subjectaccessreviews", "subjectaccessreview",
         "SubjectAccessReview", false, KS_K_SUBJECTACCESSREVIEW},
        {"authorization.k8s.io", "selfsubjectaccessreviews", "selfsubjectaccessreview",
         "SelfSubjectAccessReview", false, KS_K_SELFSUBJECTACCESSREVIEW},
        {"authorization.k8s.io", "localsubjectaccessreviews", "localsubjectaccessreview",
         "LocalSubjectAccessReview", true, KS_K_LOCALSUBJECTACCESSREVIEW},
        {"authorization.k8s.io", "selfsubjectrulesreviews", "selfsubjectrulesreview",
         "SelfSubjectRulesReview", false, KS_K_SELFSUBJECTRULESREVIEW},
    };
    for (size_t i = 0; i < sizeof(reviews) / sizeof(reviews[0]); i++) {
        rt = builtin(s, reviews[i].group, reviews[i].plural, reviews[i].singular, reviews[i].kind,
                     reviews[i].namespaced, reviews[i].id, NULL);
        if (rt)
            rt->review = true;
    }
}

char *ks_key(const struct ks_rtype *rt, const char *ns, const char *name)
{
    size_t n = strlen(name) + (rt->namespaced ? strlen(ns) + 2 : 1);
    char *k = malloc(n);
    if (!k)
        return NULL;
    if (rt->namespaced)
        snprintf(k, n, "%s/%s", ns, name);
    else
        snprintf(k, n, "%s", name);
    return k;
}

struct ks_obj *ks_store_get(struct ks_rtype *rt, const char *key)
{
    return ks_index_get(&rt->idx, key);
}

/* ---- commit ------------------------------------------------------------ */

/* The watch cache keeps at least this many events however old they are
 * (watchCache's lowerBoundCapacity). */
#define KS_WINDOW_MIN_EVENTS 100

static void ring_evict(struct ks_rtype *rt)
{
    struct ks_event *old = rt->ring[rt->ring_head];
    rt->window_start_rv = old->rv;
    ks_event_free(old);
    rt->ring[rt->ring_head] = NULL;
    rt->ring_head = (rt->ring_head + 1) % rt->ring_cap;
    rt->ring_len--;
}

/* Appends |e|. The window drops its oldest events when it is full, and
 * (with a time bound) those older than it while more than
 * KS_WINDOW_MIN_EVENTS remain: watchCache grows while its events are younger
 * than eventFreshDuration (75 s) and shrinks towards 100 when they are
 * older; like it, an idle window keeps everything. */
static void ring_push(struct ks_server *s, struct ks_rtype *rt, struct ks_event *e)
{
    if (rt->ring_len == rt->ring_cap)
        ring_evict(rt);
    while (s->cfg.window_time_ms > 0 && rt->ring_len >= KS_WINDOW_MIN_EVENTS &&
           rt->ring[rt->ring_head]->mono_ms < e->mono_ms - s->cfg.window_time_ms)
        ring_evict(rt);
    rt->ring[(rt->ring_head + rt->ring_len) % rt->ring_cap] = e;
    rt->ring_len++;
}

static void stamp_rv(cJSON *obj, uint64_t rv)
{
    cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    if (!cJSON_IsObject(md))
        return;
    char rvs[24];
    snprintf(rvs, sizeof(rvs), "%llu", (unsigned long long)rv);
    cJSON *old = cJSON_GetObjectItemCaseSensitive(md, "resourceVersion");
    if (old)
        cJSON_ReplaceItemInObjectCaseSensitive(md, "resourceVersion", cJSON_CreateString(rvs));
    else
        cJSON_AddStringToObject(md, "resourceVersion", rvs);
}

struct ks_ver *ks_store_commit(struct ks_server *s, struct ks_rtype *rt, const char *key,
                               cJSON *obj)
{
    struct ks_obj *o = ks_index_get(&rt->idx, key);
    uint64_t rv = s->rv + 1;
    struct ks_ver *nv = NULL;
    struct ks_event *e = calloc(1, sizeof(*e));
    if (!e)
        goto fail;
    e->key = strdup(key);
    if (!e->key)
        goto fail;
    e->rv = rv;
    e->mono_ms = cx_mono_ms();
    if (obj) {
        stamp_rv(obj, rv);
        nv = ks_ver_new(obj, rv);
        obj = NULL;
        if (!nv)
            goto fail;
        if (!o) {
            o = index_insert(&rt->idx, key);
            if (!o)
                goto fail;
            e->type = KS_EV_ADDED;
        } else {
            e->type = KS_EV_MODIFIED;
            e->prev = o->cur;
        }
        o->cur = nv;
        ks_ver_ref(nv);
        e->obj = nv;
    } else {
        if (!o)
            goto fail;
        nv = ver_restamp(o->cur, rv);
        if (!nv)
            goto fail;
        e->type = KS_EV_DELETED;
        e->prev = o->cur;
        e->obj = nv;
        index_remove(&rt->idx, o);
        free(o->key);
        free(o);
    }
    s->rv = rv;
    rt->cache_rv = rv;
    ring_push(s, rt, e);
    ks_watch_fanout(s, rt, e);
    ks_admin_on_commit(s);
    if (rt->id == KS_K_SERVICE || rt->id == KS_K_ENDPOINTSLICE)
        ks_endpoints_changed(s, rt, e);
    return nv;
fail:
    cJSON_Delete(obj);
    if (e) {
        free(e->key);
        free(e);
    }
    ks_ver_unref(nv);
    return NULL;
}

void ks_store_compact(struct ks_server *s)
{
    for (struct ks_rtype *rt = s->rtypes; rt; rt = rt->next) {
        for (size_t i = 0; i < rt->ring_len; i++) {
            size_t j = (rt->ring_head + i) % rt->ring_cap;
            ks_event_free(rt->ring[j]);
            rt->ring[j] = NULL;
        }
        rt->ring_head = 0;
        rt->ring_len = 0;
        rt->window_start_rv = s->rv;
    }
}

int ks_store_load_obj(struct ks_rtype *rt, const char *key, cJSON *obj, uint64_t rv)
{
    if (ks_index_get(&rt->idx, key)) {
        cJSON_Delete(obj);
        return -1;
    }
    struct ks_ver *v = ks_ver_new(obj, rv);
    if (!v)
        return -1;
    struct ks_obj *o = index_insert(&rt->idx, key);
    if (!o) {
        ks_ver_unref(v);
        return -1;
    }
    o->cur = v;
    return 0;
}
