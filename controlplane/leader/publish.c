#include "publish.h"

#include "cx_buf.h"
#include "cx_hash.h"
#include "cx_json.h"
#include "cx_log.h"
#include "cx_metrics.h"
#include "cx_ratelimit.h"
#include "cx_time.h"
#include "leader_queue.h"
#include "store_kinds.h"
#include "cx_map.h"
#include "xlate_snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A ProxySnapshot name: "<namespace>.<name>" (63 + 1 + 253 at most). */
#define PUB_NAME_MAX         PUBLISH_NAME_MAX
#define PUB_CONFLICT_WAIT_NS (2 * CX_NS_PER_S)
#define PUB_RETRY_FIRST_NS   (500 * CX_NS_PER_MS)
#define PUB_RETRY_MAX_NS     (30 * CX_NS_PER_S)
#define PUB_REFUSED_WAIT_NS  (100 * CX_NS_PER_MS)
#define PUB_MAX_INFLIGHT     4

/* The record's versions and counts (its schema's keys); Secrets count in
 * the group's version and show in the snapshot JSON. */
static const char *const type_keys[XDS_TYPE_COUNT] = {"listeners", "routes", "clusters",
                                                      "endpoints", NULL};

/* ---- pure helpers --------------------------------------------------------------- */

int publish_name(const char *group, char *out, size_t n)
{
    const char *slash = group ? strchr(group, '/') : NULL;
    if (!slash || slash == group || !slash[1] || strchr(slash + 1, '/'))
        return -1;
    int w = snprintf(out, n, "%.*s.%s", (int)(slash - group), group, slash + 1);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

/* ---- the publisher ------------------------------------------------------------------ */

struct pub_item {
    struct leader_item li; /* key: name */
    struct publish *p;
    struct kube_call *call;
    struct leader_guard_presend presend; /* the last-moment guard check */
    unsigned encoding : 1;               /* waits for the encoder thread */
    unsigned backing_off : 1;            /* parked after a failure */
    int fails;
    /* In flight: what the write will make true. */
    int sending_op;                            /* 0 create, 1 update, 2 delete */
    char sending_version[XDS_VERSION_LEN + 1]; /* "" for a delete */
    char *sending_rv_before;
    /* Our last successful write, until the informer shows it. */
    int w_valid;
    int w_deleted;
    char w_version[XDS_VERSION_LEN + 1];
    char *w_rv_before; /* informer RV the write was based on ("" = absent) */
    char *w_rv_after;
    char name[];
};

struct pub_group {
    const struct xlate_group *g;
    char version[XDS_VERSION_LEN + 1];
    struct cx_series *consistent;
    char name[]; /* ProxySnapshot name */
};

struct publish {
    struct event_base *base;
    struct publish_opts o;
    char *ns;
    struct cx_ratelimit rl;
    struct leader_queue q; /* of struct pub_item */
    int leading;
    uint64_t term;
    struct xlate_snapshot *snap;
    struct cx_map groups; /* PS name -> struct pub_group * (current snapshot) */
    struct pub_group **glist;
    size_t nglist;
    struct publish_encoder *enc;
    struct cx_map blobs; /* PS name -> struct publish_blob * (latest encoded) */
    size_t nencoding;
    struct publish_stats st;
    uint64_t rng; /* jitter of retry delays */
    struct {
        struct cx_metric *consistent;
        struct cx_metric *writes;
    } m;
};

/* The item that embeds |l|. */
static inline struct pub_item *item_of(const struct leader_item *l)
{
    return cx_container_of(l, struct pub_item, li);
}

static struct pub_item *item_get(struct publish *p, const char *name)
{
    struct leader_item *l = leader_queue_find(&p->q, name);
    if (l)
        return item_of(l);
    size_t n = strlen(name);
    struct pub_item *it = calloc(1, sizeof(*it) + n + 1);
    if (!it)
        return NULL;
    it->p = p;
    memcpy(it->name, name, n + 1);
    it->li.key = it->name;
    if (leader_queue_add(&p->q, &it->li) != 0) {
        free(it);
        return NULL;
    }
    return it;
}

static void clear_written(struct pub_item *it)
{
    it->w_valid = 0;
    it->w_deleted = 0;
    it->w_version[0] = '\0';
    free(it->w_rv_before);
    free(it->w_rv_after);
    it->w_rv_before = it->w_rv_after = NULL;
}

static void item_destroy(struct pub_item *it)
{
    if (it->call)
        kube_call_cancel(it->call);
    free(it->sending_rv_before);
    clear_written(it);
    free(it);
}

static void enqueue(struct publish *p, struct pub_item *it)
{
    /* Waiting out a failure's backoff: the retry at due time reconciles
     * afresh, so a failing server is not hammered by every snapshot. */
    if (it->li.parked && it->backing_off && it->li.due_ns > cx_mono_ns())
        return;
    it->backing_off = 0;
    leader_queue_push(&p->q, &it->li);
}

static void want(struct publish *p, const char *name)
{
    if (!p->leading)
        return;
    struct pub_item *it = item_get(p, name);
    if (!it) {
        cx_error("publish", "out of memory queueing ProxySnapshot %s", name);
        return;
    }
    enqueue(p, it);
    leader_queue_schedule(&p->q, 0);
}

static void park(struct publish *p, struct pub_item *it, int64_t delay_ns)
{
    it->backing_off = 0;
    leader_queue_park(&p->q, &it->li, delay_ns);
}

int publish_obj_is_ours(const struct kube_obj *o)
{
    const char *v = cx_json_path_str(o->json, "metadata", "labels", PUBLISH_LABEL_KEY, NULL);
    return v && strcmp(v, PUBLISH_LABEL_VALUE) == 0;
}

const char *publish_obj_version(const struct kube_obj *o)
{
    const char *v = o ? cx_json_path_str(o->json, "spec", "version", NULL) : NULL;
    return v ? v : "";
}

/* ---- consistency ---------------------------------------------------------------- */

static void update_consistency(struct publish *p, struct pub_group *pg)
{
    struct kube_obj *o = p->o.lookup(p->o.user, pg->name);
    int ok = o && strcmp(publish_obj_version(o), pg->version) == 0;
    if (pg->consistent)
        cx_series_set(pg->consistent, ok ? 1 : 0);
}

static void recount(struct publish *p)
{
    size_t c = 0;
    for (size_t i = 0; i < p->nglist; i++) {
        struct kube_obj *o = p->o.lookup(p->o.user, p->glist[i]->name);
        c += o && strcmp(publish_obj_version(o), p->glist[i]->version) == 0;
    }
    p->st.groups = p->nglist;
    p->st.consistent = c;
}

/* ---- writes ------------------------------------------------------------------------ */

static cJSON *build_object(struct publish *p, const struct pub_group *pg, const char *rv,
                           const struct publish_blob *blob)
{
    const struct xlate_group *g = pg->g;
    const char *b64 = blob->b64;
    size_t json_bytes = blob->json_bytes;
    int trunc = blob->truncated;
    int *truncated = &trunc;
    cJSON *o = cJSON_CreateObject();
    cJSON *md = cJSON_AddObjectToObject(o, "metadata");
    cJSON *labels = md ? cJSON_AddObjectToObject(md, "labels") : NULL;
    cJSON *spec = cJSON_AddObjectToObject(o, "spec");
    cJSON *versions = spec ? cJSON_AddObjectToObject(spec, "versions") : NULL;
    cJSON *counts = spec ? cJSON_AddObjectToObject(spec, "counts") : NULL;
    int ok = o && md && labels && spec && versions && counts &&
             cJSON_AddStringToObject(o, "apiVersion", STORE_GROUP "/v1") &&
             cJSON_AddStringToObject(o, "kind", "ProxySnapshot") &&
             cJSON_AddStringToObject(md, "name", pg->name) &&
             cJSON_AddStringToObject(md, "namespace", p->ns) &&
             (!rv || cJSON_AddStringToObject(md, "resourceVersion", rv)) &&
             cJSON_AddStringToObject(labels, PUBLISH_LABEL_KEY, PUBLISH_LABEL_VALUE) &&
             cJSON_AddStringToObject(spec, "gateway", g->name) &&
             cJSON_AddStringToObject(spec, "mode",
                                     g->mode == XLATE_MODE_PROXYLESS ? "proxyless" : "envoy") &&
             cJSON_AddStringToObject(spec, "version", pg->version);
    for (int t = 0; ok && t < XDS_TYPE_COUNT; t++)
        ok = !type_keys[t] ||
             (cJSON_AddStringToObject(versions, type_keys[t], g->types[t].version) &&
              cJSON_AddNumberToObject(counts, type_keys[t], (double)g->types[t].n));
    ok = ok && (!b64 || cJSON_AddStringToObject(spec, "snapshot", b64)) &&
         cJSON_AddNumberToObject(spec, "snapshotBytes", (double)json_bytes) &&
         cJSON_AddBoolToObject(spec, "truncated", *truncated);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static void count(struct publish *p, const char *op, const char *result)
{
    if (p->m.writes)
        cx_metric_inc(p->m.writes, op, result);
}

static void on_written(struct kube_result *r, void *arg)
{
    struct pub_item *it = arg;
    struct publish *p = it->p;
    it->call = NULL;
    int del = it->sending_op == 2;
    const char *op = del ? "delete" : it->sending_op == 1 ? "update" : "create";
    if (r->err.code == KUBE_OK || (del && r->err.code == KUBE_E_NOT_FOUND)) {
        count(p, op, "ok");
        it->fails = 0;
        if (del)
            p->st.deletes++;
        else if (it->sending_op == 1)
            p->st.updates++;
        else
            p->st.creates++;
        clear_written(it);
        const char *rv = cx_json_path_str(r->object, "metadata", "resourceVersion", NULL);
        it->w_valid = 1;
        it->w_deleted = del;
        snprintf(it->w_version, sizeof(it->w_version), "%s", it->sending_version);
        it->w_rv_before = it->sending_rv_before;
        it->sending_rv_before = NULL;
        it->w_rv_after = strdup(rv ? rv : "");
        if (!it->w_rv_after)
            clear_written(it);
        cx_info("publish", "%s ProxySnapshot %s/%s%s%s", del ? "deleted" : op, p->ns, it->name,
                del ? "" : " version ", it->sending_version);
    } else if (r->err.code == KUBE_E_CONFLICT || r->err.code == KUBE_E_ALREADY_EXISTS ||
               (r->err.code == KUBE_E_NOT_FOUND && it->sending_op != 0)) {
        /* Our cache is behind the server: the informer brings the news;
         * check again after a while (longer after repeated conflicts). */
        count(p, op, "conflict");
        p->st.conflicts++;
        it->fails++;
        park(p, it,
             kube_backoff_nth_ns(it->fails, PUB_CONFLICT_WAIT_NS, PUB_RETRY_MAX_NS, &p->rng));
    } else if (r->err.code == KUBE_E_CANCELLED && strcmp(r->err.reason, "RefusedBeforeSend") == 0) {
        /* the guard said no at the last moment: nothing was sent */
        count(p, op, "refused");
        p->st.refused++;
        if (p->leading)
            park(p, it, PUB_REFUSED_WAIT_NS);
    } else {
        /* Includes a create answered 404: the namespace (or the CRD) is
         * missing, which no informer event will announce. */
        count(p, op, "error");
        p->st.failures++;
        it->fails++;
        int64_t d = kube_backoff_nth_ns(it->fails, PUB_RETRY_FIRST_NS, PUB_RETRY_MAX_NS, &p->rng);
        if (r->err.retry_after_ms > 0 && r->err.retry_after_ms * CX_NS_PER_MS > d)
            d = (r->err.retry_after_ms < 30000 ? r->err.retry_after_ms : 30000) * CX_NS_PER_MS;
        cx_warn("publish", "%s of ProxySnapshot %s/%s failed (%d %s); retrying in %lld ms", op,
                p->ns, it->name, r->err.http_status, r->err.message, (long long)(d / 1000000));
        if (p->leading) {
            park(p, it, d);
            it->backing_off = 1;
        }
    }
    free(it->sending_rv_before);
    it->sending_rv_before = NULL;
    leader_queue_write_done(&p->q, &it->li);
}

/* The queue's check: compares |it| with the published object and writes
 * the difference. */
static enum leader_check reconcile(void *user, struct leader_item *l, int64_t *wait_ns)
{
    struct publish *p = user;
    struct pub_item *it = item_of(l);
    struct pub_group *pg = cx_map_gets(&p->groups, it->name);
    struct kube_obj *pub = p->o.lookup(p->o.user, it->name);
    const char *pub_rv = pub ? pub->rv : "";
    int exists = pub != NULL;
    const char *version = publish_obj_version(pub);
    if (it->w_valid) {
        if (it->w_rv_before && strcmp(pub_rv, it->w_rv_before) == 0) {
            exists = !it->w_deleted; /* the informer has not shown our write yet */
            version = it->w_version;
            pub_rv = it->w_rv_after;
        } else {
            clear_written(it);
        }
    }
    int del = 0;
    const struct publish_blob *blob = NULL;
    if (pg) {
        if (exists && strcmp(version, pg->version) == 0)
            return LEADER_CHECK_DONE;
        /* The snapshot is encoded off the main loop; come back with it. */
        blob = cx_map_gets(&p->blobs, it->name);
        if (!blob || strcmp(blob->version, pg->version) != 0) {
            if (publish_encoder_submit(p->enc, p->snap, pg->g->name, it->name, pg->version) != 0) {
                park(p, it, PUB_RETRY_FIRST_NS);
                return LEADER_CHECK_DONE;
            }
            if (!it->encoding)
                p->nencoding++;
            it->encoding = 1;
            return LEADER_CHECK_DONE;
        }
    } else {
        if (!exists || (pub && !publish_obj_is_ours(pub)))
            return LEADER_CHECK_DONE;
        del = 1;
    }
    int64_t w = cx_ratelimit_take(&p->rl, cx_mono_ns());
    if (w > 0) {
        *wait_ns = w;
        return LEADER_CHECK_LATER;
    }
    int64_t timeout_ns = 0;
    uint64_t term = 0;
    if (!p->o.guard.allow || !p->o.guard.allow(p->o.guard.arg, &timeout_ns, &term) ||
        term != p->term) {
        p->st.refused++;
        count(p, del ? "delete" : exists ? "update" : "create", "refused");
        *wait_ns = PUB_REFUSED_WAIT_NS;
        return LEADER_CHECK_LATER;
    }
    int64_t ms = leader_guard_timeout_ms(timeout_ns);
    it->presend = (struct leader_guard_presend){.g = &p->o.guard, .term = term};
    struct kube_req_opts ro = {.timeout_ms = ms,
                               .deadline_ms = ms,
                               /* One attempt: this writer owns the retry
                                * (backoff with jitter, Retry-After), and two
                                * nested retry loops multiply requests. */
                               .max_attempts = 1,
                               .presend = leader_guard_presend,
                               .presend_end = leader_guard_presend_end,
                               .presend_arg = &it->presend};
    it->sending_rv_before = strdup(pub ? pub->rv : "");
    if (!it->sending_rv_before)
        goto fail;
    it->sending_op = del ? 2 : exists ? 1 : 0;
    if (del) {
        it->sending_version[0] = '\0';
        it->call = kube_delete(p->o.kc, &store_res_proxysnapshots, p->ns, it->name, NULL, pub_rv,
                               &ro, on_written, it);
    } else {
        cJSON *obj = build_object(p, pg, exists ? pub_rv : NULL, blob);
        if (!obj)
            goto fail;
        p->st.truncated += blob->truncated;
        snprintf(it->sending_version, sizeof(it->sending_version), "%s", pg->version);
        if (exists)
            it->call =
                kube_update(p->o.kc, &store_res_proxysnapshots, p->ns, obj, 0, &ro, on_written, it);
        else
            it->call =
                kube_create(p->o.kc, &store_res_proxysnapshots, p->ns, obj, &ro, on_written, it);
        cJSON_Delete(obj);
    }
    if (!it->call)
        goto fail;
    leader_queue_sent(&p->q, &it->li);
    return LEADER_CHECK_DONE;
fail:
    free(it->sending_rv_before);
    it->sending_rv_before = NULL;
    park(p, it, PUB_RETRY_FIRST_NS);
    return LEADER_CHECK_DONE;
}

/* ---- public --------------------------------------------------------------------- */

/* An encoded snapshot is back from the encoder thread. */
static void on_encoded(void *user, struct publish_blob *blob)
{
    struct publish *p = user;
    if (blob->failed)
        cx_warn("publish", "could not encode the snapshot of %s (memory): published without it",
                blob->name);
    struct publish_blob *old = NULL;
    if (cx_map_puts(&p->blobs, blob->name, blob, (void **)&old) != 0) {
        publish_blob_free(blob);
        return;
    }
    publish_blob_free(old);
    struct leader_item *l = leader_queue_find(&p->q, blob->name);
    struct pub_item *it = l ? item_of(l) : NULL;
    if (it && it->encoding) {
        it->encoding = 0;
        p->nencoding--;
        enqueue(p, it);
        leader_queue_schedule(&p->q, 0);
    }
}

static int q_ready(void *user)
{
    struct publish *p = user;
    return p->leading && p->snap;
}

static int q_busy(void *user, const struct leader_item *l)
{
    (void)user;
    const struct pub_item *it = item_of(l);
    return it->w_valid || it->encoding;
}

static void q_destroy(void *user, struct leader_item *l)
{
    (void)user;
    item_destroy(item_of(l));
}

static const struct leader_queue_ops queue_ops = {
    .ready = q_ready,
    .check = reconcile,
    .busy = q_busy,
    .destroy = q_destroy,
};

struct publish *publish_new(struct event_base *base, const struct publish_opts *o)
{
    struct publish *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    int qrc = leader_queue_init(&p->q, base, &queue_ops, p, PUB_MAX_INFLIGHT, 0);
    p->base = base;
    p->o = *o;
    if (!p->o.max_bytes)
        p->o.max_bytes = PUBLISH_MAX_BYTES_DEFAULT;
    p->ns = strdup(o->namespace ? o->namespace : "default");
    p->enc = publish_encoder_new(base, p->o.max_bytes, on_encoded, p);
    cx_ratelimit_init(&p->rl, o->qps, o->burst < 1 ? 1 : o->burst, cx_mono_ns());
    if (qrc != 0 || !p->ns || !p->enc) {
        publish_free(p);
        return NULL;
    }
    p->m.consistent = cx_gauge("coxswain_snapshot_consistent",
                               "1 when this replica's snapshot of the Gateway has the version "
                               "the leader published in its ProxySnapshot.",
                               "gateway");
    p->m.writes = cx_counter("coxswain_snapshot_publishes_total",
                             "ProxySnapshot writes by operation and result.", "op,result");
    return p;
}

static void groups_clear(struct publish *p, int hide)
{
    for (size_t i = 0; i < p->nglist; i++) {
        if (hide && p->glist[i]->consistent)
            cx_series_hide(p->glist[i]->consistent);
        free(p->glist[i]);
    }
    free(p->glist);
    p->glist = NULL;
    p->nglist = 0;
    cx_map_free(&p->groups);
}

void publish_free(struct publish *p)
{
    if (!p)
        return;
    publish_encoder_free(p->enc); /* joins its thread: no result comes later */
    p->enc = NULL;
    const struct cx_map_slot *s;
    for (size_t i = 0; cx_map_next(&p->blobs, &i, &s);)
        publish_blob_free(s->val);
    cx_map_free(&p->blobs);
    leader_queue_free(&p->q);
    groups_clear(p, 0);
    xlate_snapshot_unref(p->snap);
    free(p->ns);
    free(p);
}

struct stale_ctx {
    struct publish *p;
};

static int want_stale(void *user, struct kube_obj *o)
{
    struct stale_ctx *c = user;
    if (publish_obj_is_ours(o) && !cx_map_gets(&c->p->groups, o->name))
        want(c->p, o->name);
    return 0;
}

void publish_set_snapshot(struct publish *p, struct xlate_snapshot *snap)
{
    /* Remember the old versions to queue only what changed. */
    struct cx_map old = {0};
    struct pub_group **oldlist = p->glist;
    size_t nold = p->nglist;
    int oom = 0;
    for (size_t i = 0; i < nold; i++) {
        oom |= cx_map_puts(&old, oldlist[i]->name, oldlist[i], NULL) != 0;
    }
    p->glist = NULL;
    p->nglist = 0;
    cx_map_free(&p->groups);
    xlate_snapshot_unref(p->snap);
    p->snap = xlate_snapshot_ref(snap);
    p->glist = calloc(snap->ngroups ? snap->ngroups : 1, sizeof(*p->glist));
    for (size_t i = 0; p->glist && i < snap->ngroups; i++) {
        const struct xlate_group *g = &snap->groups[i];
        char name[PUB_NAME_MAX];
        if (publish_name(g->name, name, sizeof(name)) != 0)
            continue;
        size_t nl = strlen(name);
        struct pub_group *pg = calloc(1, sizeof(*pg) + nl + 1);
        if (!pg) {
            oom = 1;
            continue;
        }
        memcpy(pg->name, name, nl + 1);
        pg->g = g;
        publish_group_version(g, pg->version);
        struct pub_group *prev = cx_map_gets(&old, name);
        pg->consistent = prev ? prev->consistent
                              : (p->m.consistent ? cx_metric_with(p->m.consistent, g->name) : NULL);
        if (prev)
            prev->consistent = NULL; /* moved */
        if (cx_map_puts(&p->groups, pg->name, pg, NULL) != 0) {
            free(pg);
            oom = 1;
            continue;
        }
        p->glist[p->nglist++] = pg;
        update_consistency(p, pg);
        if (!prev || strcmp(prev->version, pg->version) != 0)
            want(p, pg->name);
    }
    /* Gateways that left: hide their gauge, delete their ProxySnapshot. */
    for (size_t i = 0; i < nold; i++) {
        if (oldlist[i]->consistent)
            cx_series_hide(oldlist[i]->consistent);
        if (!cx_map_gets(&p->groups, oldlist[i]->name))
            want(p, oldlist[i]->name);
        free(oldlist[i]);
    }
    free(oldlist);
    cx_map_free(&old);
    if (oom && p->leading) {
        struct stale_ctx c = {p};
        p->o.foreach(p->o.user, want_stale, &c);
    }
    recount(p);
}

void publish_start(struct publish *p, uint64_t term)
{
    p->leading = 1;
    p->term = term;
    for (size_t i = 0; i < p->nglist; i++)
        want(p, p->glist[i]->name);
    struct stale_ctx c = {p};
    p->o.foreach(p->o.user, want_stale, &c);
    leader_queue_schedule(&p->q, 0);
}

static void drop_item(void *user, struct leader_item *l)
{
    struct publish *p = user;
    struct pub_item *it = item_of(l);
    if (it->call)
        count(p, "any", "cancelled");
    item_destroy(it);
}

void publish_stop(struct publish *p)
{
    p->leading = 0;
    leader_queue_clear(&p->q, drop_item);
    p->nencoding = 0;
}

void publish_object_changed(struct publish *p, const char *name)
{
    struct pub_group *pg = cx_map_gets(&p->groups, name);
    if (pg)
        update_consistency(p, pg);
    recount(p);
    want(p, name);
}

void publish_stats(const struct publish *p, struct publish_stats *out)
{
    *out = p->st;
    out->queued = p->q.nqueued + p->q.nparked + p->nencoding;
    out->inflight = p->q.ninflight;
    out->leading = p->leading;
}

int publish_idle(const struct publish *p)
{
    return p->leading && p->snap && !p->q.nqueued && !p->q.ninflight && !p->q.nparked &&
           !p->nencoding;
}
