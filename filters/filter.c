/*
 * The filter: per-kind scopes, lock exclusion, the ignore label, the
 * decision function and its counters. See filter.h.
 */
#include "filter.h"

#include "cx_flags.h"
#include "cx_json.h"
#include "cx_kname.h"
#include "cx_metrics.h"
#include "filter_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define METRIC_NAME "coxswain_filter_events_total"
#define METRIC_HELP                                                                            \
    "Watch events seen by the filter layer, by kind, verdict (pass: the store changes; drop: " \
    "nothing happens downstream) and reason."

/* A namespace scope: a list and/or a label selector over namespace labels.
 * The *_set flags say whether this level configured them (a kind's own
 * scope overrides the global one field by field). */
struct nsscope {
    char **names;
    size_t n;
    int names_set;
    struct filter_selector *sel;
    int sel_set;
};

struct fkind {
    char *name; /* as first configured or seen */
    struct nsscope ns;
    struct filter_selector *labels;
    struct filter_field_selector *fields;
    uint64_t counts[FILTER_REASON_COUNT];
    struct cx_series *series[FILTER_REASON_COUNT];
    /* push-down strings of the last filter_pushdown call */
    char *pd_labels, *pd_fields;
    struct filter_watch *pd_watches; /* and their field selectors, owned */
    size_t pd_nwatches;
};

struct flock {
    char *kind, *ns, *name;
};

struct filter {
    struct nsscope ns; /* for kinds without their own */
    struct fkind **kinds;
    size_t nkinds;
    struct flock *locks;
    size_t nlocks;
    struct cx_buf scratch;
    struct cx_metric *metric;
};

static const char *const reason_names[FILTER_REASON_COUNT] = {
    [FILTER_R_ADDED] = "added",
    [FILTER_R_CHANGED] = "changed",
    [FILTER_R_DELETED] = "deleted",
    [FILTER_R_STARTED_MATCHING] = "started-matching",
    [FILTER_R_STOPPED_MATCHING] = "stopped-matching",
    [FILTER_R_EXCLUDED_LOCK] = "excluded-lock",
    [FILTER_R_IGNORED_LABEL] = "ignored-label",
    [FILTER_R_OUT_OF_SCOPE_NAMESPACE] = "out-of-scope-namespace",
    [FILTER_R_SELECTOR_MISMATCH] = "selector-mismatch",
    [FILTER_R_FIELD_MISMATCH] = "field-selector-mismatch",
    [FILTER_R_INSIGNIFICANT] = "insignificant",
    [FILTER_R_NOT_STORED] = "not-stored",
    [FILTER_R_MALFORMED] = "malformed",
    [FILTER_R_UNREFERENCED] = "unreferenced",
};

const char *filter_reason_name(enum filter_reason r)
{
    return (unsigned)r < FILTER_REASON_COUNT ? reason_names[r] : "unknown";
}

enum filter_verdict filter_reason_verdict(enum filter_reason r)
{
    return r <= FILTER_R_STOPPED_MATCHING ? FILTER_PASS : FILTER_DROP;
}

const char *filter_verdict_name(enum filter_verdict v)
{
    return v == FILTER_PASS ? "pass" : "drop";
}

/* ---- lifecycle -------------------------------------------------------------- */

static void nsscope_free(struct nsscope *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->names[i]);
    free(s->names);
    s->names = NULL;
    s->n = 0;
    filter_selector_free(s->sel);
    s->sel = NULL;
}

static void watches_free(struct fkind *k)
{
    for (size_t i = 0; i < k->pd_nwatches; i++)
        free((char *)k->pd_watches[i].field_selector);
    free(k->pd_watches);
    k->pd_watches = NULL;
    k->pd_nwatches = 0;
}

static void kind_free(struct fkind *k)
{
    if (!k)
        return;
    free(k->name);
    nsscope_free(&k->ns);
    filter_selector_free(k->labels);
    filter_field_selector_free(k->fields);
    free(k->pd_labels);
    free(k->pd_fields);
    watches_free(k);
    free(k);
}

struct filter *filter_new(void)
{
    struct filter *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    cx_buf_init(&f->scratch, 0);
    /* NULL only on a programming error (name clash); then we count locally */
    f->metric = cx_counter(METRIC_NAME, METRIC_HELP, "kind,verdict,reason");
    return f;
}

void filter_free(struct filter *f)
{
    if (!f)
        return;
    nsscope_free(&f->ns);
    for (size_t i = 0; i < f->nkinds; i++)
        kind_free(f->kinds[i]);
    free(f->kinds);
    for (size_t i = 0; i < f->nlocks; i++) {
        free(f->locks[i].kind);
        free(f->locks[i].ns);
        free(f->locks[i].name);
    }
    free(f->locks);
    cx_buf_free(&f->scratch);
    free(f);
}

static struct fkind *kind_find(const struct filter *f, const char *kind)
{
    for (size_t i = 0; i < f->nkinds; i++)
        if (strcasecmp(f->kinds[i]->name, kind) == 0)
            return f->kinds[i];
    return NULL;
}

/* The kind's entry, created on first use; NULL if memory ran out. */
static struct fkind *kind_get(struct filter *f, const char *kind)
{
    struct fkind *k = kind_find(f, kind);
    if (k)
        return k;
    k = calloc(1, sizeof(*k));
    struct fkind **nk = realloc(f->kinds, (f->nkinds + 1) * sizeof(*nk));
    if (!k || !nk) {
        free(k);
        if (nk)
            f->kinds = nk;
        return NULL;
    }
    f->kinds = nk;
    k->name = strdup(kind);
    if (!k->name) {
        free(k);
        return NULL;
    }
    f->kinds[f->nkinds++] = k;
    return k;
}

/* ---- configuration ------------------------------------------------------------ */

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

int filter_set_namespaces(struct filter *f, const char *kind, const char *list,
                          struct filter_error *err)
{
    char **names = NULL;
    size_t n = 0;
    if (!list)
        list = "";
    if (strlen(list) > FILTER_SELECTOR_MAX_BYTES) {
        filter_err_set(err, 0, "namespace list is longer than %d bytes", FILTER_SELECTOR_MAX_BYTES);
        return FILTER_EINVAL;
    }
    const char *p = list;
    while (*p) {
        const char *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        const char *a = p, *b = end;
        while (a < b && is_blank(*a))
            a++;
        while (b > a && is_blank(b[-1]))
            b--;
        if (b > a) {
            char why[FILTER_ERR_MAX];
            if (cx_kname_label_msg(a, (size_t)(b - a), why, sizeof(why)) != 0) {
                filter_err_set(err, (size_t)(a - list), "namespace \"%.*s\": %s", (int)(b - a), a,
                               why);
                goto fail;
            }
            int dup = 0;
            for (size_t i = 0; i < n; i++)
                if (strlen(names[i]) == (size_t)(b - a) && memcmp(names[i], a, b - a) == 0)
                    dup = 1;
            if (!dup) {
                char **nn = realloc(names, (n + 1) * sizeof(*nn));
                if (!nn)
                    goto oom;
                names = nn;
                names[n] = strndup(a, (size_t)(b - a));
                if (!names[n])
                    goto oom;
                n++;
            }
        }
        p = comma ? comma + 1 : end;
    }
    struct nsscope *s = &f->ns;
    if (kind) {
        struct fkind *k = kind_get(f, kind);
        if (!k)
            goto oom;
        s = &k->ns;
    }
    for (size_t i = 0; i < s->n; i++)
        free(s->names[i]);
    free(s->names);
    s->names = names;
    s->n = n;
    s->names_set = 1;
    return FILTER_OK;
oom:
    filter_err_set(err, 0, "out of memory");
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return FILTER_ENOMEM;
fail:
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return FILTER_EINVAL;
}

int filter_set_namespace_selector(struct filter *f, const char *kind, const char *selector,
                                  struct filter_error *err)
{
    struct filter_selector *sel = NULL;
    int rc = filter_selector_parse(selector ? selector : "", &sel, err);
    if (rc != FILTER_OK)
        return rc;
    struct nsscope *s = &f->ns;
    if (kind) {
        struct fkind *k = kind_get(f, kind);
        if (!k) {
            filter_selector_free(sel);
            filter_err_set(err, 0, "out of memory");
            return FILTER_ENOMEM;
        }
        s = &k->ns;
    }
    filter_selector_free(s->sel);
    s->sel = NULL;
    if (filter_selector_is_everything(sel)) {
        filter_selector_free(sel);
        sel = NULL;
    }
    s->sel = sel;
    s->sel_set = 1;
    return FILTER_OK;
}

int filter_set_label_selector(struct filter *f, const char *kind, const char *selector,
                              struct filter_error *err)
{
    struct filter_selector *sel = NULL;
    if (!kind) {
        filter_err_set(err, 0, "a label selector needs a kind");
        return FILTER_EINVAL;
    }
    int rc = filter_selector_parse(selector ? selector : "", &sel, err);
    if (rc != FILTER_OK)
        return rc;
    struct fkind *k = kind_get(f, kind);
    if (!k) {
        filter_selector_free(sel);
        filter_err_set(err, 0, "out of memory");
        return FILTER_ENOMEM;
    }
    filter_selector_free(k->labels);
    k->labels = sel;
    return FILTER_OK;
}

/* Our custom resources (group coxswain.dev) and Gateway API's. */
static const char *const custom_kinds[] = {"Gateway",  "VirtualService", "RouteTable",
                                           "Upstream", "ProxySnapshot",  NULL};

static const char *const *allowed_fields(const char *kind)
{
    if (strcasecmp(kind, "Secret") == 0)
        return filter_fields_secret;
    for (const char *const *c = custom_kinds; *c; c++)
        if (strcasecmp(kind, *c) == 0)
            return filter_fields_custom;
    return filter_fields_default;
}

int filter_set_field_selector(struct filter *f, const char *kind, const char *selector,
                              struct filter_error *err)
{
    struct filter_field_selector *fs = NULL;
    if (!kind) {
        filter_err_set(err, 0, "a field selector needs a kind");
        return FILTER_EINVAL;
    }
    int rc = filter_field_selector_parse(selector ? selector : "", allowed_fields(kind), &fs, err);
    if (rc != FILTER_OK)
        return rc;
    struct fkind *k = kind_get(f, kind);
    if (!k) {
        filter_field_selector_free(fs);
        filter_err_set(err, 0, "out of memory");
        return FILTER_ENOMEM;
    }
    filter_field_selector_free(k->fields);
    k->fields = fs;
    return FILTER_OK;
}

int filter_add_lock(struct filter *f, const char *kind, const char *ns, const char *name)
{
    if (!kind || !name || !*kind || !*name)
        return FILTER_EINVAL;
    struct flock *nl = realloc(f->locks, (f->nlocks + 1) * sizeof(*nl));
    if (!nl)
        return FILTER_ENOMEM;
    f->locks = nl;
    struct flock *l = &f->locks[f->nlocks];
    l->kind = strdup(kind);
    l->ns = strdup(ns ? ns : "");
    l->name = strdup(name);
    if (!l->kind || !l->ns || !l->name) {
        free(l->kind);
        free(l->ns);
        free(l->name);
        return FILTER_ENOMEM;
    }
    f->nlocks++;
    return FILTER_OK;
}

/* ---- scope -------------------------------------------------------------------- */

static const struct nsscope *ns_names_of(const struct filter *f, const struct fkind *k)
{
    return k && k->ns.names_set ? &k->ns : &f->ns;
}

static const struct filter_selector *ns_sel_of(const struct filter *f, const struct fkind *k)
{
    return k && k->ns.sel_set ? k->ns.sel : f->ns.sel;
}

static int ns_listed(const struct nsscope *s, const char *ns)
{
    if (s->n == 0)
        return 1;
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->names[i], ns) == 0)
            return 1;
    return 0;
}

static int is_lock(const struct filter *f, const char *kind, const char *ns, const char *name)
{
    for (size_t i = 0; i < f->nlocks; i++)
        if (strcasecmp(f->locks[i].kind, kind) == 0 && strcmp(f->locks[i].ns, ns) == 0 &&
            strcmp(f->locks[i].name, name) == 0)
            return 1;
    return 0;
}

/* What scope_check reads of an object, from its JSON or its decoded form. */
struct sobj {
    const char *ns, *name;
    const char *(*label)(const void *user, const char *key);
    const void *label_user;
    const cJSON *json; /* NULL for a decoded object */
};

static const char *json_label(const void *labels, const char *key)
{
    return cx_json_str(labels, key);
}

static const char *sobj_label(void *user, const char *key)
{
    const struct sobj *o = user;
    return o->label(o->label_user, key);
}

static int sobj_of(const cJSON *json, const struct filter_object *fo, struct sobj *out)
{
    if (!json && fo) {
        *out = (struct sobj){fo->ns ? fo->ns : "", fo->name, fo->label, fo->label_user_data, NULL};
        return 0;
    }
    const cJSON *md =
        cJSON_IsObject(json) ? cJSON_GetObjectItemCaseSensitive(json, "metadata") : NULL;
    const char *ns = cx_json_str(md, "namespace");
    *out = (struct sobj){ns ? ns : "", cx_json_str(md, "name"), json_label,
                         cJSON_GetObjectItemCaseSensitive(md, "labels"), json};
    return 0;
}

/* metadata.name and metadata.namespace of a decoded object, for the field
 * selector ("" for any other field, as for an absent one). */
static const char *sobj_field(void *user, const char *field)
{
    const struct sobj *o = user;
    if (strcmp(field, "metadata.name") == 0)
        return o->name;
    if (strcmp(field, "metadata.namespace") == 0)
        return o->ns;
    return "";
}

static int scope_check(const struct filter *f, const struct fkind *k, const char *kind,
                       const struct sobj *o, filter_ns_labels_fn ns_labels, void *ud,
                       enum filter_reason *why)
{
    const char *name = o->name;
    if (!name || !*name) {
        *why = FILTER_R_MALFORMED;
        return 0;
    }
    const char *ns = o->ns;
    if (is_lock(f, kind, ns, name)) {
        *why = FILTER_R_EXCLUDED_LOCK;
        return 0;
    }
    const char *ign = o->label(o->label_user, FILTER_IGNORE_LABEL);
    if (ign && strcmp(ign, FILTER_IGNORE_LABEL_VALUE) == 0) {
        *why = FILTER_R_IGNORED_LABEL;
        return 0;
    }
    if (*ns) {
        if (!ns_listed(ns_names_of(f, k), ns)) {
            *why = FILTER_R_OUT_OF_SCOPE_NAMESPACE;
            return 0;
        }
        const struct filter_selector *nsel = ns_sel_of(f, k);
        if (nsel) {
            int known = 0;
            const cJSON *nl = ns_labels ? ns_labels(ud, ns, &known) : NULL;
            if (!known || !filter_selector_matches(nsel, nl)) {
                *why = FILTER_R_OUT_OF_SCOPE_NAMESPACE;
                return 0;
            }
        }
    }
    if (k && k->labels && !filter_selector_matches_fn(k->labels, sobj_label, (void *)o)) {
        *why = FILTER_R_SELECTOR_MISMATCH;
        return 0;
    }
    if (k && k->fields &&
        !(o->json ? filter_field_selector_matches(k->fields, o->json)
                  : filter_field_selector_matches_fn(k->fields, sobj_field, (void *)o))) {
        *why = FILTER_R_FIELD_MISMATCH;
        return 0;
    }
    return 1;
}

int filter_scope_check(struct filter *f, const char *kind, const cJSON *obj,
                       filter_ns_labels_fn ns_labels, void *ns_user_data, enum filter_reason *why)
{
    enum filter_reason r = FILTER_R_ADDED;
    struct sobj o;
    (void)sobj_of(obj, NULL, &o);
    int in = scope_check(f, kind_find(f, kind), kind, &o, ns_labels, ns_user_data, &r);
    if (why)
        *why = r;
    return in;
}

int filter_namespace_in_scope(struct filter *f, const char *kind, const char *ns,
                              const cJSON *ns_labels)
{
    const struct fkind *k = kind_find(f, kind);
    if (!ns_listed(ns_names_of(f, k), ns))
        return 0;
    const struct filter_selector *nsel = ns_sel_of(f, k);
    return !nsel || filter_selector_matches(nsel, ns_labels);
}

/* ---- decisions ---------------------------------------------------------------- */

static void count(struct filter *f, struct fkind *k, const char *kind, enum filter_reason r)
{
    if (k) {
        k->counts[r]++;
        if (!k->series[r] && f->metric)
            k->series[r] =
                cx_metric_with(f->metric, k->name, filter_verdict_name(filter_reason_verdict(r)),
                               filter_reason_name(r));
        if (k->series[r])
            cx_series_inc(k->series[r]);
    } else if (f->metric) {
        /* no entry (out of memory): still export the event */
        cx_metric_inc(f->metric, kind, filter_verdict_name(filter_reason_verdict(r)),
                      filter_reason_name(r));
    }
}

void filter_note(struct filter *f, const char *kind, enum filter_reason reason)
{
    if ((unsigned)reason < FILTER_REASON_COUNT)
        count(f, kind_get(f, kind), kind, reason);
}

static void verdict(struct filter_decision *out, enum filter_reason r, enum filter_store_action a)
{
    out->reason = r;
    out->verdict = filter_reason_verdict(r);
    out->action = a;
}

int filter_decide(struct filter *f, const struct filter_event *ev, struct filter_decision *out)
{
    int rc = FILTER_OK;
    memset(out, 0, sizeof(*out));
    const char *kind = ev->kind ? ev->kind : "";
    struct fkind *k = kind_get(f, kind);
    enum filter_reason why = FILTER_R_ADDED;
    struct sobj o;
    (void)sobj_of(ev->obj, ev->fobj, &o);
    int in = scope_check(f, k, kind, &o, ev->ns_labels, ev->ns_user_data, &why);
    /* kinds watched for their referrers (Secrets, ConfigMaps): in scope
     * only while something in the store names them */
    if (in && ev->referenced && !ev->referenced(ev->ref_user_data, kind, o.ns, o.name)) {
        in = 0;
        why = FILTER_R_UNREFERENCED;
    }
    int had = ev->old || ev->old_digest;

    if (ev->type == FILTER_EV_DELETED) {
        if (why == FILTER_R_MALFORMED)
            verdict(out, FILTER_R_MALFORMED, FILTER_STORE_NONE);
        else if (had)
            verdict(out, FILTER_R_DELETED, FILTER_STORE_DELETE);
        else
            verdict(out, in ? FILTER_R_NOT_STORED : why, FILTER_STORE_NONE);
        goto out;
    }
    if (!in) {
        if (had && why != FILTER_R_MALFORMED)
            verdict(out, FILTER_R_STOPPED_MATCHING, FILTER_STORE_DELETE);
        else
            verdict(out, why, FILTER_STORE_NONE);
        goto out;
    }
    if (!ev->obj && ev->fobj) {
        out->digest = ev->fobj->digest; /* computed when it was decoded */
    } else if (filter_digest(ev->obj, &f->scratch, &out->digest) != 0) {
        rc = FILTER_ENOMEM;
        /* cannot tell: let it through (a spurious translation is safe) */
        verdict(out, had ? FILTER_R_CHANGED : FILTER_R_ADDED,
                had ? FILTER_STORE_UPDATE : FILTER_STORE_ADD);
        goto out;
    }
    out->has_digest = 1;
    if (!had) {
        verdict(out, ev->type == FILTER_EV_ADDED ? FILTER_R_ADDED : FILTER_R_STARTED_MATCHING,
                FILTER_STORE_ADD);
        goto out;
    }
    uint64_t od = 0;
    if (ev->old_digest) {
        od = *ev->old_digest;
    } else if (filter_digest(ev->old, &f->scratch, &od) != 0) {
        rc = FILTER_ENOMEM;
        verdict(out, FILTER_R_CHANGED, FILTER_STORE_UPDATE);
        goto out;
    }
    if (od == out->digest)
        verdict(out, FILTER_R_INSIGNIFICANT, FILTER_STORE_NONE);
    else
        verdict(out, FILTER_R_CHANGED, FILTER_STORE_UPDATE);
out:
    count(f, k, kind, out->reason);
    return rc;
}

/* ---- counters ---------------------------------------------------------------- */

uint64_t filter_count(const struct filter *f, const char *kind, enum filter_reason reason)
{
    uint64_t n = 0;
    if ((unsigned)reason >= FILTER_REASON_COUNT)
        return 0;
    for (size_t i = 0; i < f->nkinds; i++)
        if (!kind || strcasecmp(f->kinds[i]->name, kind) == 0)
            n += f->kinds[i]->counts[reason];
    return n;
}

uint64_t filter_count_passed(const struct filter *f, const char *kind)
{
    uint64_t n = 0;
    for (int r = 0; r < FILTER_REASON_COUNT; r++)
        if (filter_reason_verdict((enum filter_reason)r) == FILTER_PASS)
            n += filter_count(f, kind, (enum filter_reason)r);
    return n;
}

/* ---- push-down ------------------------------------------------------------------- */

/* Whether lock |i| is the first of |kind|'s locks in its namespace (so
 * each lock namespace is named once). */
static int first_lock_ns(const struct filter *f, const char *kind, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (strcasecmp(f->locks[j].kind, kind) == 0 && strcmp(f->locks[j].ns, f->locks[i].ns) == 0)
            return 0;
    return 1;
}

/* Adds a watch of |ns| whose field selector is the kind's own, AND
 * metadata.name!=<lock> for each of |kind|'s locks in |ns| (|names_in|),
 * or AND metadata.namespace!=<lock ns> for each lock namespace
 * (|!names_in|, the every-namespace watch). Returns 0 or -1. */
static int add_watch(struct filter *f, struct fkind *k, const char *kind, const char *ns,
                     int names_in)
{
    struct filter_watch *nw = realloc(k->pd_watches, (k->pd_nwatches + 1) * sizeof(*nw));
    if (!nw)
        return -1;
    k->pd_watches = nw;
    struct cx_buf b;
    cx_buf_init(&b, 0);
    int rc = cx_buf_append(&b, "", 0);
    if (k->fields && !filter_field_selector_is_everything(k->fields))
        rc |= filter_field_selector_string(k->fields, &b);
    for (size_t i = 0; i < f->nlocks; i++) {
        const struct flock *l = &f->locks[i];
        if (strcasecmp(l->kind, kind) != 0)
            continue;
        if (names_in ? strcmp(l->ns, ns) != 0 : !first_lock_ns(f, kind, i))
            continue;
        if (b.len)
            rc |= cx_buf_puts(&b, ",");
        rc |= cx_buf_puts(&b, names_in ? "metadata.name!=" : "metadata.namespace!=");
        rc |= filter_field_escape(&b, names_in ? l->name : l->ns);
    }
    rc |= cx_buf_append(&b, "", 0);
    char *fs = rc ? NULL : cx_buf_steal(&b, NULL);
    cx_buf_free(&b);
    if (!fs)
        return -1;
    k->pd_watches[k->pd_nwatches++] = (struct filter_watch){.namespace = ns, .field_selector = fs};
    return 0;
}

static int make_watches(struct filter *f, struct fkind *k, const char *kind,
                        const struct nsscope *names)
{
    watches_free(k);
    if (names->n) {
        for (size_t i = 0; i < names->n; i++)
            if (add_watch(f, k, kind, names->names[i], 1) != 0)
                return -1;
        return 0;
    }
    /* Every namespace (or a namespace selector, which the server cannot
     * apply): all but the lock namespaces, then each of those without its
     * locks. */
    if (add_watch(f, k, kind, "", 0) != 0)
        return -1;
    for (size_t i = 0; i < f->nlocks; i++)
        if (strcasecmp(f->locks[i].kind, kind) == 0 && first_lock_ns(f, kind, i) &&
            add_watch(f, k, kind, f->locks[i].ns, 1) != 0)
            return -1;
    return 0;
}

int filter_pushdown(struct filter *f, const char *kind, struct filter_pushdown *out)
{
    memset(out, 0, sizeof(*out));
    struct fkind *k = kind_get(f, kind);
    if (!k)
        return FILTER_ENOMEM;
    const struct nsscope *names = ns_names_of(f, k);
    out->namespaces = (const char *const *)names->names;
    out->nnamespaces = names->n;
    if (names->n == 1)
        out->namespace = names->names[0];

    struct cx_buf lb, fb;
    cx_buf_init(&lb, 0);
    cx_buf_init(&fb, 0);
    int rc = 0;
    /* labels: the kind's selector AND the ignore label's absence */
    if (k->labels && !filter_selector_is_everything(k->labels)) {
        rc |= filter_selector_string(k->labels, &lb);
        rc |= cx_buf_puts(&lb, ",");
    }
    rc |= cx_buf_puts(&lb, FILTER_IGNORE_LABEL "!=" FILTER_IGNORE_LABEL_VALUE);
    /* fields: the kind's selector AND, when the lock of this kind lives in
     * the one watched namespace, its name excluded (exact there; with
     * several namespaces it would also hide same-named objects elsewhere) */
    if (k->fields && !filter_field_selector_is_everything(k->fields))
        rc |= filter_field_selector_string(k->fields, &fb);
    for (size_t i = 0; i < f->nlocks && out->namespace; i++) {
        const struct flock *l = &f->locks[i];
        if (strcasecmp(l->kind, kind) != 0 || strcmp(l->ns, out->namespace) != 0)
            continue;
        if (fb.len)
            rc |= cx_buf_puts(&fb, ",");
        rc |= cx_buf_puts(&fb, "metadata.name!=");
        rc |= filter_field_escape(&fb, l->name);
    }
    rc |= cx_buf_append(&fb, "", 0);
    if (rc) {
        cx_buf_free(&lb);
        cx_buf_free(&fb);
        return FILTER_ENOMEM;
    }
    free(k->pd_labels);
    free(k->pd_fields);
    k->pd_labels = cx_buf_steal(&lb, NULL);
    k->pd_fields = cx_buf_steal(&fb, NULL);
    cx_buf_free(&lb);
    cx_buf_free(&fb);
    if (!k->pd_labels || !k->pd_fields)
        return FILTER_ENOMEM;
    out->label_selector = k->pd_labels;
    out->field_selector = k->pd_fields;
    if (make_watches(f, k, kind, names) != 0)
        return FILTER_ENOMEM;
    out->watches = k->pd_watches;
    out->nwatches = k->pd_nwatches;
    return FILTER_OK;
}

static int url_encode(struct cx_buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    int rc = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && rc == 0; p++) {
        unsigned char c = *p;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~') {
            rc = cx_buf_append(b, p, 1);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            rc = cx_buf_append(b, e, 3);
        }
    }
    return rc;
}

int filter_pushdown_query(const struct filter_pushdown *pd, struct cx_buf *out)
{
    int rc = cx_buf_append(out, "", 0);
    int first = 1;
    if (pd->label_selector && *pd->label_selector) {
        rc |= cx_buf_puts(out, "labelSelector=");
        rc |= url_encode(out, pd->label_selector);
        first = 0;
    }
    if (pd->field_selector && *pd->field_selector) {
        rc |= cx_buf_puts(out, first ? "fieldSelector=" : "&fieldSelector=");
        rc |= url_encode(out, pd->field_selector);
    }
    return rc ? -1 : 0;
}

/* ---- flags --------------------------------------------------------------------- */

const char *const filter_default_kinds[] = {
    "Gateway",       "VirtualService", "RouteTable", "Upstream", "Service",
    "EndpointSlice", "Secret",         "ConfigMap",  NULL,
};

static const char *const flag_suffix[FILTER_FLAGS_PER_KIND] = {"namespaces", "namespace-selector",
                                                               "label-selector", "field-selector"};

size_t filter_flags_table(struct filter_flags *ff, const char *const *kinds, struct cx_flag *out,
                          size_t max)
{
    if (!kinds)
        kinds = filter_default_kinds;
    size_t nk = 0;
    while (kinds[nk])
        nk++;
    if (nk > FILTER_MAX_KINDS || 2 + FILTER_FLAGS_PER_KIND * nk > max)
        return 0;
    size_t n = 0;
    out[n++] = (struct cx_flag){
        .name = "watch-namespaces",
        .type = CX_FLAG_STRING,
        .target = &ff->watch_namespaces,
        .def = "",
        .env = "COXSWAIN_WATCH_NAMESPACES",
        .help = "comma-separated namespaces to watch (empty: all); a kind's own "
                "--<kind>-namespaces overrides it",
    };
    out[n++] = (struct cx_flag){
        .name = "watch-namespace-selector",
        .type = CX_FLAG_STRING,
        .target = &ff->watch_namespace_selector,
        .def = "",
        .env = "COXSWAIN_WATCH_NAMESPACE_SELECTOR",
        .help = "label selector over Namespace labels: watch only matching namespaces",
    };
    ff->nkinds = nk;
    for (size_t i = 0; i < nk; i++) {
        size_t len = strlen(kinds[i]);
        if (len == 0 || len >= FILTER_KIND_NAME_MAX)
            return 0;
        char lower[FILTER_KIND_NAME_MAX];
        for (size_t j = 0; j <= len; j++) {
            char c = kinds[i][j];
            if (c && !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
                return 0;
            lower[j] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
        }
        snprintf(ff->kinds[i].kind, sizeof(ff->kinds[i].kind), "%s", kinds[i]);
        for (int j = 0; j < FILTER_FLAGS_PER_KIND; j++) {
            snprintf(ff->kinds[i].names[j], sizeof(ff->kinds[i].names[j]), "%s-%s", lower,
                     flag_suffix[j]);
            char *h = ff->kinds[i].help[j];
            size_t hl = sizeof(ff->kinds[i].help[j]);
            switch (j) {
            case 0:
                snprintf(h, hl,
                         "comma-separated namespaces to watch for %s (overrides "
                         "--watch-namespaces)",
                         kinds[i]);
                break;
            case 1:
                snprintf(h, hl,
                         "label selector over Namespace labels for %s (overrides "
                         "--watch-namespace-selector)",
                         kinds[i]);
                break;
            case 2:
                snprintf(h, hl, "label selector for %s objects", kinds[i]);
                break;
            default:
                snprintf(h, hl,
                         "field selector for %s objects (metadata.name, "
                         "metadata.namespace%s)",
                         kinds[i], strcasecmp(kinds[i], "Secret") == 0 ? ", type" : "");
                break;
            }
            out[n++] = (struct cx_flag){
                .name = ff->kinds[i].names[j],
                .type = CX_FLAG_STRING,
                .target = &ff->kinds[i].values[j],
                .def = "",
                .help = ff->kinds[i].help[j],
            };
        }
    }
    return n;
}

/* Prefixes |err|'s message with "--<flag>: ". */
static void flag_err(struct filter_error *err, const char *flag)
{
    if (!err)
        return;
    char tmp[FILTER_ERR_MAX];
    memcpy(tmp, err->msg, sizeof(tmp));
    tmp[sizeof(tmp) - 1] = '\0';
    int n = snprintf(err->msg, sizeof(err->msg), "--%s: ", flag);
    if (n > 0 && (size_t)n < sizeof(err->msg))
        snprintf(err->msg + n, sizeof(err->msg) - (size_t)n, "%s", tmp);
}

int filter_apply_flags(struct filter *f, const struct filter_flags *ff, struct filter_error *err)
{
    int rc;
    if (ff->watch_namespaces && *ff->watch_namespaces &&
        (rc = filter_set_namespaces(f, NULL, ff->watch_namespaces, err)) != FILTER_OK) {
        flag_err(err, "watch-namespaces");
        return rc;
    }
    if (ff->watch_namespace_selector && *ff->watch_namespace_selector &&
        (rc = filter_set_namespace_selector(f, NULL, ff->watch_namespace_selector, err)) !=
            FILTER_OK) {
        flag_err(err, "watch-namespace-selector");
        return rc;
    }
    for (size_t i = 0; i < ff->nkinds && i < FILTER_MAX_KINDS; i++) {
        const char *kind = ff->kinds[i].kind;
        for (int j = 0; j < FILTER_FLAGS_PER_KIND; j++) {
            const char *v = ff->kinds[i].values[j];
            if (!v || !*v)
                continue;
            switch (j) {
            case 0:
                rc = filter_set_namespaces(f, kind, v, err);
                break;
            case 1:
                rc = filter_set_namespace_selector(f, kind, v, err);
                break;
            case 2:
                rc = filter_set_label_selector(f, kind, v, err);
                break;
            default:
                rc = filter_set_field_selector(f, kind, v, err);
                break;
            }
            if (rc != FILTER_OK) {
                flag_err(err, ff->kinds[i].names[j]);
                return rc;
            }
        }
    }
    return FILTER_OK;
}
