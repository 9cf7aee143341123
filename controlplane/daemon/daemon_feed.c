/*
 * daemon_feed: the informers and what they feed — every watch event of a
 * translator input goes through filter_decide() and, when it passes,
 * changes the store and pokes the translation worker. Status-carrying
 * objects also tell the status writer (level-triggered), whatever the
 * verdict. Namespace label changes re-run the decisions of the objects of
 * that namespace; ProxySnapshot events go to the publisher.
 *
 * Secrets and ConfigMaps are listed and watched as metadata only; the ones
 * a stored Gateway or Upstream names (daemon_refs) are read whole by
 * daemon_fetch, whose copies go through the filters (which drop the rest as
 * "unreferenced") and into the store. The first translation waits for the
 * reads the first references started.
 */
#include "cx_base64.h"
#include "cx_json.h"
#include "cx_log.h"
#include "cx_metrics.h"
#include "xlate_tls.h"
#include "daemon_internal.h"
#include "store_kinds.h"
#include "store_obj.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const input_kinds[XLATE_KIND_COUNT] = {
    "Gateway", "VirtualService", "RouteTable", "Upstream",
    "Service", "EndpointSlice",  "Secret",     "ConfigMap",
};

/* The informers' watch timeoutSeconds (--kube-api-watch-timeout). */
static int feed_watch_timeout_s(const struct daemon *d)
{
    return (int)(d->cfg->kube_api_watch_timeout_ns / 1000000000);
}

static int tls_kind(enum xlate_kind k)
{
    return k == XLATE_KIND_SECRET || k == XLATE_KIND_CONFIG_MAP;
}

/* ---- lookups ---------------------------------------------------------------------- */

/* The informer that holds |kind| objects of namespace |ns|: the one of
 * that namespace, else the one of every namespace (which, when a lock of
 * this kind exists, leaves the lock's namespace to its own informer). */
static struct daemon_inf *input_for(struct daemon *d, enum xlate_kind kind, const char *ns,
                                    size_t nslen)
{
    struct daemon_inf *all = NULL;
    for (size_t i = 0; i < d->ninputs; i++) {
        struct daemon_inf *di = &d->inputs[i];
        if (di->kind != kind)
            continue;
        if (!di->ns[0])
            all = di;
        else if (strlen(di->ns) == nslen && strncmp(di->ns, ns, nslen) == 0)
            return di;
    }
    return all;
}

/* What the informer of |kind| holds for |key|: for Secrets and ConfigMaps,
 * metadata only. */
static struct kube_obj *informer_lookup(struct daemon *d, enum xlate_kind kind, const char *key)
{
    const char *slash = strchr(key, '/');
    size_t nslen = slash ? (size_t)(slash - key) : 0;
    struct daemon_inf *di = input_for(d, kind, key, nslen);
    return di && di->inf ? kube_cache_get(kube_informer_cache(di->inf), key) : NULL;
}

struct kube_obj *daemon_lookup(struct daemon *d, enum xlate_kind kind, const char *key)
{
    if (tls_kind(kind))
        return d->fetch ? daemon_fetch_get(d->fetch, kind, key) : NULL;
    return informer_lookup(d, kind, key);
}

struct kube_obj *daemon_lookup_snapshot(struct daemon *d, const char *name)
{
    char key[400];
    if (!d->snap_inf.inf || kube_obj_key(d->ns, name, key, sizeof(key)) != 0)
        return NULL;
    return kube_cache_get(kube_informer_cache(d->snap_inf.inf), key);
}

void daemon_foreach_snapshot(struct daemon *d, int (*fn)(void *ctx, struct kube_obj *o), void *ctx)
{
    if (d->snap_inf.inf)
        kube_cache_foreach(kube_informer_cache(d->snap_inf.inf), fn, ctx);
}

static const cJSON *ns_labels(void *user, const char *ns, int *known)
{
    struct daemon *d = user;
    struct kube_obj *o =
        d->ns_inf.inf ? kube_cache_get(kube_informer_cache(d->ns_inf.inf), ns) : NULL;
    *known = o != NULL;
    return o ? cx_json_path(o->json, "metadata", "labels", NULL) : NULL;
}

/* ---- input events ---------------------------------------------------------------- */

static int referenced(void *user, const char *kind, const char *ns, const char *name)
{
    struct daemon *d = user;
    enum xlate_kind k = strcmp(kind, "Secret") == 0 ? XLATE_KIND_SECRET : XLATE_KIND_CONFIG_MAP;
    return name && daemon_refs_has(d->refs, k, ns, name);
}

static void feed(struct daemon *d, enum xlate_kind kind, enum filter_event_type type,
                 struct kube_obj *obj);

/* A Secret or ConfigMap became referenced (read it whole, if it exists)
 * or stopped being (its whole copy goes). */
static void ref_changed(void *user, enum xlate_kind kind, const char *key, int now_referenced)
{
    struct daemon *d = user;
    int present = informer_lookup(d, kind, key) != NULL;
    if (cx_log_enabled(CX_LOG_DEBUG))
        cx_debug("refs", "%s %s %s%s", input_kinds[kind], key,
                 now_referenced ? "referenced" : "no longer referenced",
                 present ? "" : " (not in the informer cache)");
    daemon_fetch_ref(d->fetch, kind, key, now_referenced, present);
}

/* The references of Gateway/Upstream |key| are now those of |obj| (NULL:
 * it left the store): listed when it was decoded, or read from its JSON. */
static void track_refs(struct daemon *d, enum xlate_kind kind, const char *key,
                       const struct kube_obj *obj)
{
    if (kind != XLATE_KIND_GATEWAY && kind != XLATE_KIND_UPSTREAM)
        return;
    const struct store_obj *so = store_obj_of(obj);
    int rc;
    if (so && so->nrefs) {
        struct daemon_ref refs[DAEMON_REFS_MAX];
        size_t n = 0;
        for (size_t i = 0; i < so->nrefs && n < DAEMON_REFS_MAX; i++) {
            const char *r = so->refs[i];
            refs[n].kind = r[0] == 'S' ? XLATE_KIND_SECRET : XLATE_KIND_CONFIG_MAP;
            snprintf(refs[n].key, sizeof(refs[n].key), "%s", r + 2);
            n++;
        }
        rc = daemon_refs_set_list(d->refs, kind, key, refs, n, ref_changed, d);
    } else {
        rc = daemon_refs_set(d->refs, kind, key, obj && !so ? obj->json : NULL, ref_changed, d);
    }
    if (rc != 0)
        cx_error("refs", "out of memory tracking the TLS references of %s %s", input_kinds[kind],
                 key);
}

/* coxswain_tls_certificate_expiry_timestamp_seconds{secret}: the notAfter
 * of a stored (so referenced) Secret's certificate, for alerts before the
 * reports' CertificateExpired; hidden when it leaves the store. */
static void note_certificate(struct daemon *d, struct kube_obj *obj, int stored)
{
    if (!d->m.cert_expiry)
        return;
    struct cx_series *s = cx_metric_with(d->m.cert_expiry, obj->key);
    const char *crt = stored ? cx_json_path_str(obj->json, "data", "tls.crt", NULL) : NULL;
    size_t n = crt ? strlen(crt) : 0;
    uint8_t *pem = n ? malloc(CX_B64_DECODED_MAX(n) + 1) : NULL;
    long len = pem ? cx_b64_decode(crt, n, pem, CX_B64_STD) : -1;
    int64_t not_after = 0;
    if (len > 0 && xlate_tls_pem_not_after(pem, (size_t)len, &not_after) == 0)
        cx_series_set(s, (double)not_after);
    else if (s)
        cx_series_hide(s);
    free(pem);
}

static const char *kept_label(const void *so, const char *key)
{
    return store_obj_label(so, key);
}

static void feed(struct daemon *d, enum xlate_kind kind, enum filter_event_type type,
                 struct kube_obj *obj)
{
    const struct store_entry *st = store_get(d->store, kind, obj->key);
    const struct store_obj *so = store_obj_of(obj);
    struct filter_object fo;
    if (so)
        fo = (struct filter_object){.ns = obj->ns,
                                    .name = obj->name,
                                    .label = kept_label,
                                    .label_user_data = so,
                                    .digest = so->digest};
    struct filter_event ev = {
        .type = type,
        .kind = input_kinds[kind],
        .obj = obj->json,
        .fobj = so ? &fo : NULL,
        .old = st ? st->obj->json : NULL,
        .old_digest = st ? &st->digest : NULL,
        .ns_labels = d->ns_selector ? ns_labels : NULL,
        .ns_user_data = d,
        .referenced = tls_kind(kind) ? referenced : NULL,
        .ref_user_data = d,
    };
    struct filter_decision dec;
    if (filter_decide(d->filter, &ev, &dec) != FILTER_OK) {
        /* The digest could not be computed: a pass, with the translator's
         * own digest standing in. */
        dec.verdict = FILTER_PASS;
        dec.action = type == FILTER_EV_DELETED ? FILTER_STORE_DELETE
                     : st                      ? FILTER_STORE_UPDATE
                                               : FILTER_STORE_ADD;
        dec.digest = so ? so->digest : xlate_digest(obj->json);
    }
    switch (dec.action) {
    case FILTER_STORE_ADD:
    case FILTER_STORE_UPDATE:
        if (store_put(d->store, kind, kube_obj_ref(obj), dec.digest) != 0) {
            kube_obj_unref(obj);
            cx_error("store", "out of memory storing %s %s", input_kinds[kind], obj->key);
            break;
        }
        daemon_worker_poke(d->worker);
        track_refs(d, kind, obj->key, obj);
        if (kind == XLATE_KIND_SECRET)
            note_certificate(d, obj, 1);
        break;
    case FILTER_STORE_DELETE:
        if (store_remove(d->store, kind, obj->key))
            daemon_worker_poke(d->worker);
        track_refs(d, kind, obj->key, NULL);
        if (kind == XLATE_KIND_SECRET)
            note_certificate(d, obj, 0);
        break;
    case FILTER_STORE_NONE:
        break;
    }
    if (cx_log_enabled(CX_LOG_DEBUG))
        cx_debug("filter", "%s %s: %s (%s)", input_kinds[kind], obj->key,
                 filter_verdict_name(dec.verdict), filter_reason_name(dec.reason));
    if (store_kind_has_status(kind))
        status_writer_object_changed(d->sw, kind, obj->key);
}

/* Secrets and ConfigMaps arrive as metadata: a change of a referenced one
 * is read whole (daemon_fetch), and only the whole copy is fed; the rest
 * are counted as the filters' "unreferenced" drops. */
static void meta_event(struct daemon_inf *di, struct kube_obj *obj, int gone)
{
    struct daemon *d = di->d;
    if (daemon_refs_has(d->refs, di->kind, obj->ns, obj->name))
        daemon_fetch_changed(d->fetch, di->kind, obj->key, gone);
    else
        filter_note(d->filter, input_kinds[di->kind], FILTER_R_UNREFERENCED);
}

/* The informers' decode (kube_informer_opts.decode): every arriving
 * object of a translator kind becomes its record, digest, status and TLS
 * references (store_obj.h), and its JSON goes. */
static void *decode_input(void *ud, const struct kube_obj *o, const cJSON *json,
                          const struct kube_rec_ops **ops)
{
    (void)o;
    struct daemon_inf *di = ud;
    struct daemon_ref refs[DAEMON_REFS_MAX];
    const char *keys[DAEMON_REFS_MAX];
    char buf[DAEMON_REFS_MAX][DAEMON_REFS_KEY_MAX + 2];
    size_t n = daemon_refs_of(di->kind, json, refs, DAEMON_REFS_MAX);
    for (size_t i = 0; i < n; i++) {
        snprintf(buf[i], sizeof(buf[i]), "%c/%s", refs[i].kind == XLATE_KIND_SECRET ? 'S' : 'C',
                 refs[i].key);
        keys[i] = buf[i];
    }
    *ops = &store_obj_ops;
    return store_obj_decode(&di->d->decoder, di->kind, json, keys, n);
}

static void on_input_add(void *ud, struct kube_obj *obj)
{
    struct daemon_inf *di = ud;
    if (tls_kind(di->kind))
        meta_event(di, obj, 0);
    else
        feed(di->d, di->kind, FILTER_EV_ADDED, obj);
}

static void on_input_update(void *ud, struct kube_obj *old, struct kube_obj *obj)
{
    (void)old;
    struct daemon_inf *di = ud;
    if (tls_kind(di->kind))
        meta_event(di, obj, 0);
    else
        feed(di->d, di->kind, FILTER_EV_MODIFIED, obj);
}

static void on_input_delete(void *ud, struct kube_obj *old)
{
    struct daemon_inf *di = ud;
    if (tls_kind(di->kind))
        meta_event(di, old, 1);
    else
        feed(di->d, di->kind, FILTER_EV_DELETED, old);
}

/* Every input informer (and the Namespaces one) synced: translation
 * starts once the whole copies the first references asked for are read,
 * so the first snapshot does not report referenced Secrets missing. */
static void maybe_all_synced(struct daemon *d)
{
    if (d->all_synced || d->inputs_synced < d->ninputs || (d->ns_selector && !d->ns_inf.synced))
        return;
    if (d->fetch && daemon_fetch_pending(d->fetch) > 0) {
        d->sync_waits_for_reads = 1;
        return;
    }
    d->sync_waits_for_reads = 0;
    d->all_synced = 1;
    daemon_on_synced(d);
}

static void on_reads_done(void *user)
{
    struct daemon *d = user;
    if (d->sync_waits_for_reads)
        maybe_all_synced(d);
}

static void fetch_feed(void *user, enum xlate_kind kind, enum filter_event_type type,
                       struct kube_obj *obj)
{
    feed(user, kind, type, obj);
}

static void on_input_synced(void *ud)
{
    struct daemon_inf *di = ud;
    struct daemon *d = di->d;
    di->synced = 1;
    d->inputs_synced++;
    cx_info("informer", "%s synced (%zu objects)", di->name,
            kube_cache_len(kube_informer_cache(di->inf)));
    maybe_all_synced(d);
}

/* ---- namespaces --------------------------------------------------------------------- */

struct rescan_ctx {
    struct daemon *d;
    enum xlate_kind kind;
};

static int rescan_one(void *user, struct kube_obj *o)
{
    struct rescan_ctx *c = user;
    feed(c->d, c->kind, FILTER_EV_MODIFIED, o);
    return 0;
}

static void rescan_full(void *user, struct kube_obj *o)
{
    (void)rescan_one(user, o);
}

/* Namespace |ns| appeared, changed labels or went away: decide again for
 * every object of it (objects that left scope become deletes, those that
 * entered become adds). */
static void rescan_namespace(struct daemon *d, const char *ns)
{
    for (size_t i = 0; i < d->ninputs; i++) {
        struct daemon_inf *di = &d->inputs[i];
        if (!di->inf || !di->synced || (di->ns[0] && strcmp(di->ns, ns) != 0))
            continue;
        struct rescan_ctx c = {d, di->kind};
        if (tls_kind(di->kind))
            daemon_fetch_foreach_ns(d->fetch, di->kind, ns, rescan_full, &c);
        else
            kube_cache_foreach_ns(kube_informer_cache(di->inf), ns, rescan_one, &c);
    }
}

static void on_ns_add(void *ud, struct kube_obj *obj)
{
    struct daemon_inf *di = ud;
    rescan_namespace(di->d, obj->name);
}

static void on_ns_update(void *ud, struct kube_obj *old, struct kube_obj *obj)
{
    struct daemon_inf *di = ud;
    const cJSON *a = cx_json_path(old->json, "metadata", "labels", NULL);
    const cJSON *b = cx_json_path(obj->json, "metadata", "labels", NULL);
    if (a && b ? !cJSON_Compare(a, b, 1) : a != b)
        rescan_namespace(di->d, obj->name);
}

static void on_ns_delete(void *ud, struct kube_obj *old)
{
    struct daemon_inf *di = ud;
    rescan_namespace(di->d, old->name);
}

static void start_inputs(struct daemon *d);

static void on_ns_synced(void *ud)
{
    struct daemon_inf *di = ud;
    di->synced = 1;
    cx_info("informer", "namespaces synced (%zu)", kube_cache_len(kube_informer_cache(di->inf)));
    /* Objects are judged by their namespace's labels: only now. */
    start_inputs(di->d);
}

/* ---- ProxySnapshots ---------------------------------------------------------------- */

static void on_snap_add(void *ud, struct kube_obj *obj)
{
    struct daemon_inf *di = ud;
    publish_object_changed(di->d->pub, obj->name);
}

static void on_snap_update(void *ud, struct kube_obj *old, struct kube_obj *obj)
{
    (void)old;
    on_snap_add(ud, obj);
}

static void on_snap_synced(void *ud)
{
    struct daemon_inf *di = ud;
    di->synced = 1;
    cx_info("informer", "proxysnapshots synced (%zu)",
            kube_cache_len(kube_informer_cache(di->inf)));
    daemon_on_snapshots_synced(di->d);
}

/* ---- setup ------------------------------------------------------------------------- */

static int add_input(struct daemon *d, enum xlate_kind kind, const struct filter_watch *w,
                     char *err, size_t errlen)
{
    struct daemon_inf *nd = realloc(d->inputs, (d->ninputs + 1) * sizeof(*nd));
    if (!nd) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    d->inputs = nd;
    struct daemon_inf *di = &d->inputs[d->ninputs];
    memset(di, 0, sizeof(*di));
    di->d = d;
    di->role = DAEMON_INF_INPUT;
    di->kind = kind;
    snprintf(di->ns, sizeof(di->ns), "%s", w->namespace);
    const struct kube_resource *res = store_kind_resource(kind);
    if (di->ns[0])
        snprintf(di->name, sizeof(di->name), "%s/%s", res->plural, di->ns);
    else
        snprintf(di->name, sizeof(di->name), "%s", res->plural);
    d->ninputs++;
    di->fields = strdup(w->field_selector);
    if (!di->fields) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

int daemon_feed_setup(struct daemon *d, char *err, size_t errlen)
{
    /* Which informers: the filter's watches of each kind (one per watched
     * namespace when a namespace list is set, as RBAC may grant only
     * those; else every namespace, with the lock's namespace apart so that
     * the lock object never leaves the API server). */
    store_decoder_init(&d->decoder, &d->cfg->limits);
    if (!(d->refs = daemon_refs_new()) ||
        !(d->fetch = daemon_fetch_new(d->kc, fetch_feed, on_reads_done, d))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    d->m.cert_expiry = cx_gauge("coxswain_tls_certificate_expiry_timestamp_seconds",
                                "notAfter (Unix seconds) of the certificate in each TLS Secret a "
                                "Gateway or Upstream uses.",
                                "secret");
    for (int k = 0; k < XLATE_KIND_COUNT; k++) {
        if (tls_kind((enum xlate_kind)k) && !d->cfg->tls_inputs)
            continue;
        struct filter_pushdown pd;
        if (filter_pushdown(d->filter, input_kinds[k], &pd) != FILTER_OK) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        for (size_t i = 0; i < pd.nwatches; i++)
            if (add_input(d, (enum xlate_kind)k, &pd.watches[i], err, errlen) != 0)
                return -1;
    }
    static const struct kube_informer_handlers in_h = {
        .on_add = on_input_add,
        .on_update = on_input_update,
        .on_delete = on_input_delete,
        .on_synced = on_input_synced,
    };
    for (size_t i = 0; i < d->ninputs; i++) {
        struct daemon_inf *di = &d->inputs[i];
        struct filter_pushdown pd;
        if (filter_pushdown(d->filter, input_kinds[di->kind], &pd) != FILTER_OK) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        struct kube_informer_opts o = {
            .res = store_kind_resource(di->kind),
            .ns = di->ns,
            .label_selector = pd.label_selector,
            .field_selector = di->fields,
            .name = di->name,
            .trim = 1,
            .watch_timeout_s = feed_watch_timeout_s(d),
            /* Secrets and ConfigMaps: metadata; daemon_fetch reads the
             * referenced ones whole. */
            .metadata_only = tls_kind(di->kind),
            .decode = tls_kind(di->kind) ? NULL : decode_input,
        };
        di->inf = kube_informer_new(d->kc, &o, &in_h, di);
        if (!di->inf) {
            snprintf(err, errlen, "cannot create the %s informer", di->name);
            return -1;
        }
    }
    if (d->ns_selector) {
        static const struct kube_informer_handlers ns_h = {
            .on_add = on_ns_add,
            .on_update = on_ns_update,
            .on_delete = on_ns_delete,
            .on_synced = on_ns_synced,
        };
        d->ns_inf = (struct daemon_inf){.d = d, .role = DAEMON_INF_NAMESPACE};
        snprintf(d->ns_inf.name, sizeof(d->ns_inf.name), "namespaces");
        struct kube_informer_opts o = {.res = &store_res_namespaces,
                                       .name = "namespaces",
                                       .trim = 1,
                                       .watch_timeout_s = feed_watch_timeout_s(d)};
        d->ns_inf.inf = kube_informer_new(d->kc, &o, &ns_h, &d->ns_inf);
        if (!d->ns_inf.inf) {
            snprintf(err, errlen, "cannot create the namespaces informer");
            return -1;
        }
    }
    static const struct kube_informer_handlers snap_h = {
        .on_add = on_snap_add,
        .on_update = on_snap_update,
        .on_delete = on_snap_add,
        .on_synced = on_snap_synced,
    };
    d->snap_inf = (struct daemon_inf){.d = d, .role = DAEMON_INF_SNAPSHOT};
    snprintf(d->snap_inf.name, sizeof(d->snap_inf.name), "proxysnapshots");
    struct kube_informer_opts so = {
        .res = &store_res_proxysnapshots,
        .ns = d->ns,
        .label_selector = PUBLISH_LABEL_KEY "=" PUBLISH_LABEL_VALUE,
        .name = "proxysnapshots",
        .watch_timeout_s = feed_watch_timeout_s(d),
    };
    d->snap_inf.inf = kube_informer_new(d->kc, &so, &snap_h, &d->snap_inf);
    if (!d->snap_inf.inf) {
        snprintf(err, errlen, "cannot create the proxysnapshots informer");
        return -1;
    }
    return 0;
}

static void start_inputs(struct daemon *d)
{
    for (size_t i = 0; i < d->ninputs; i++) {
        struct daemon_inf *di = &d->inputs[i];
        if (!di->started && kube_informer_start(di->inf) == 0)
            di->started = 1;
    }
    /* Rescan namespaces the informers might have raced with. */
}

void daemon_feed_start(struct daemon *d)
{
    if (d->ns_selector) {
        if (kube_informer_start(d->ns_inf.inf) == 0)
            d->ns_inf.started = 1;
    } else {
        start_inputs(d);
    }
    if (kube_informer_start(d->snap_inf.inf) == 0)
        d->snap_inf.started = 1;
}

void daemon_feed_free(struct daemon *d)
{
    for (size_t i = 0; i < d->ninputs; i++) {
        kube_informer_free(d->inputs[i].inf);
        free(d->inputs[i].fields);
    }
    free(d->inputs);
    d->inputs = NULL;
    d->ninputs = 0;
    kube_informer_free(d->ns_inf.inf);
    d->ns_inf.inf = NULL;
    kube_informer_free(d->snap_inf.inf);
    d->snap_inf.inf = NULL;
    daemon_fetch_free(d->fetch);
    d->fetch = NULL;
    daemon_refs_free(d->refs);
    d->refs = NULL;
    store_decoder_free(&d->decoder);
}
