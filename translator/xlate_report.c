/*
 * Reports: one per Gateway, RouteTable, Upstream and VirtualService of the
 * input (Services and EndpointSlices are not ours to report on). A report's
 * state is the worst of its problems, its reason the first problem with that
 * state, its message every problem joined by "; " (or what the object does,
 * when it has none). Each entry keeps its last report and reuses it while
 * the inputs of the report are unchanged.
 */
#include "xlate_internal.h"

#include "cx_buf.h"
#include "cx_hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest report message; Kubernetes allows 32 KiB in a condition. */
#define XL_REPORT_MSG_MAX 8192

struct problem {
    enum xlate_state state;
    enum xl_reason reason;
    const char *text;
};

struct plist {
    struct problem items[64];
    size_t n, dropped;
};

static void add(struct plist *l, enum xlate_state st, enum xl_reason r, const char *text)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i].text, text) == 0)
            return;
    if (l->n < sizeof(l->items) / sizeof(l->items[0]))
        l->items[l->n++] = (struct problem){st, r, text};
    else
        l->dropped++;
}

static void add_errors(struct plist *l, const struct xl_errors *e)
{
    for (size_t i = 0; i < e->n; i++)
        add(l, e->items[i].state, e->items[i].reason, e->items[i].msg);
    l->dropped += e->dropped;
}

/* Sets the entry's report from |l| (or |ok_msg| when empty). */
static int finish(struct xl_entry *e, const struct plist *l, const char *ok_msg)
{
    struct cx_buf b;
    cx_buf_init(&b, XL_REPORT_MSG_MAX);
    enum xlate_state st = XLATE_ACCEPTED;
    enum xl_reason reason = XL_R_NONE;
    for (size_t i = 0; i < l->n; i++)
        if (l->items[i].state > st) {
            st = l->items[i].state;
            reason = l->items[i].reason;
        }
    if (l->n == 0) {
        if (cx_buf_puts(&b, ok_msg) != 0)
            goto oom;
    }
    for (size_t i = 0; i < l->n; i++) {
        if (cx_buf_printf(&b, "%s%s", i ? "; " : "", l->items[i].text) != 0) {
            /* too long: end with a count of what is left out */
            cx_buf_free(&b);
            cx_buf_init(&b, XL_REPORT_MSG_MAX + 64);
            for (size_t k = 0; k < i; k++)
                if (b.len + strlen(l->items[k].text) + 64 < XL_REPORT_MSG_MAX &&
                    cx_buf_printf(&b, "%s%s", k ? "; " : "", l->items[k].text) != 0)
                    goto oom;
            if (cx_buf_printf(&b, "; and %zu more problems", l->n - i + l->dropped) != 0)
                goto oom;
            break;
        }
        if (i + 1 == l->n && l->dropped &&
            cx_buf_printf(&b, "; and %zu more problems", l->dropped) != 0)
            goto oom;
    }
    free(e->rep_msg);
    e->rep_msg = cx_buf_steal(&b, NULL);
    if (!e->rep_msg)
        goto oom;
    e->rep_state = st;
    e->rep_reason = xl_reason_name(reason);
    return 0;
oom:
    cx_buf_free(&b);
    e->rep_key = 0;
    return -1;
}

static uint64_t key_start(const struct xl_entry *e)
{
    uint64_t h = xl_fnv(CX_FNV64_INIT, &e->digest, sizeof(e->digest));
    return xl_fnv(h, &e->duplicate, sizeof(e->duplicate));
}

static void dup_problem(struct plist *l, const struct xl_entry *e, char *buf, size_t cap)
{
    if (!e->duplicate)
        return;
    snprintf(buf, cap,
             "the input held more than one %s named %s; the one with the smallest digest was used",
             xlate_kind_name(e->kind), e->key);
    add(l, XLATE_WARNING, XL_R_DUPLICATE, buf);
}

static int report_gateway(struct xlate_ctx *ctx, struct xl_entry *e)
{
    struct xl_gw_memo *m = xl_map_get(&ctx->gw_memo, e->key, e->keylen);
    uint64_t k = key_start(e);
    size_t conflicts = 0;
    if (m) {
        for (size_t i = 0; m->conflict_msgs && i < m->nselected; i++)
            conflicts += m->conflict_msgs[i] != NULL;
        k = xl_fnv(k, &m->nvhosts, sizeof(m->nvhosts));
        k = xl_fnv(k, &m->nclusters, sizeof(m->nclusters));
        k = xl_fnv(k, &m->nselected, sizeof(m->nselected));
        k = xl_fnv(k, &conflicts, sizeof(conflicts));
        k = xl_fnv(k, &m->sets[XDS_LISTENER].n, sizeof(size_t));
    }
    if (k == e->rep_key && e->rep_msg)
        return 0;
    struct plist l = {0};
    char dbuf[700], ok[400];
    add_errors(&l, &e->obj.errors);
    dup_problem(&l, e, dbuf, sizeof(dbuf));
    ok[0] = '\0';
    if (m)
        snprintf(ok, sizeof(ok),
                 "%s mode: %zu listener%s, %zu virtual host%s from %zu selected VirtualService%s "
                 "(%zu lost a domain conflict), %zu cluster%s",
                 e->obj.u.gw.mode == XLATE_MODE_PROXYLESS ? "proxyless" : "envoy",
                 m->sets[XDS_LISTENER].n, m->sets[XDS_LISTENER].n == 1 ? "" : "s", m->nvhosts,
                 m->nvhosts == 1 ? "" : "s", m->nselected, m->nselected == 1 ? "" : "s", conflicts,
                 m->nclusters, m->nclusters == 1 ? "" : "s");
    int rc = finish(e, &l, ok);
    e->rep_key = rc == 0 ? k : 0;
    return rc;
}

static int report_virtual_service(struct xlate_ctx *ctx, struct xl_entry *e)
{
    int used = e->use_pass == ctx->pass;
    uint64_t k = key_start(e);
    k = xl_fnv(k, &used, sizeof(used));
    if (used) {
        for (size_t i = 0; i < e->nuses; i++) {
            k = xl_fnv_str(k, e->uses[i].gw->key);
            k = xl_fnv_str(k, e->uses[i].conflict);
        }
        for (int mo = 0; mo < XL_MODES; mo++)
            if (e->used_modes & (1 << mo))
                k = xl_fnv(k, &e->res[mo].serial, sizeof(e->res[mo].serial));
    }
    if (k == e->rep_key && e->rep_msg)
        return 0;
    struct plist l = {0};
    char dbuf[700], ok[1200], nbuf[300];
    add_errors(&l, &e->obj.errors);
    dup_problem(&l, e, dbuf, sizeof(dbuf));
    ok[0] = '\0';
    if (e->parse_state != XLATE_REJECTED) {
        if (!used) {
            add(&l, XLATE_WARNING, XL_R_NOT_SELECTED,
                "not selected by any Gateway (see the Gateways' virtualServiceSelector and "
                "virtualServiceNamespaces)");
        } else {
            size_t nroutes = 0;
            for (int mo = 0; mo < XL_MODES; mo++) {
                if (!(e->used_modes & (1 << mo)))
                    continue;
                const struct xl_vs_res *r = &e->res[mo];
                for (size_t i = 0; i < r->nmsgs; i++)
                    if (r->msgs[i].target == e)
                        add(&l, r->msgs[i].state, r->msgs[i].reason, r->msgs[i].text);
                if (r->nroutes == 0) {
                    snprintf(nbuf, sizeof(nbuf), "no route is left to serve%s",
                             mo == XLATE_MODE_PROXYLESS ? " (proxyless)" : "");
                    add(&l, XLATE_REJECTED, XL_R_NO_ROUTES, nbuf);
                }
                if (r->nroutes > nroutes)
                    nroutes = r->nroutes;
            }
            for (size_t i = 0; i < e->nuses; i++)
                if (e->uses[i].conflict)
                    add(&l, XLATE_REJECTED, XL_R_DOMAIN_CONFLICT, e->uses[i].conflict);
            size_t o =
                (size_t)snprintf(ok, sizeof(ok), "served by Gateway%s ", e->nuses == 1 ? "" : "s");
            for (size_t i = 0; i < e->nuses && o < sizeof(ok); i++)
                o += (size_t)snprintf(ok + o, sizeof(ok) - o, "%s%s", i ? ", " : "",
                                      e->uses[i].gw->key);
            if (o < sizeof(ok))
                snprintf(ok + o, sizeof(ok) - o, " with %zu route%s", nroutes,
                         nroutes == 1 ? "" : "s");
        }
    }
    int rc = finish(e, &l, ok);
    e->rep_key = rc == 0 ? k : 0;
    return rc;
}

static int report_route_table(struct xlate_ctx *ctx, struct xl_entry *e)
{
    int used = e->use_pass == ctx->pass;
    uint64_t k = key_start(e);
    if (used)
        for (size_t i = 0; i < e->nrmsgs; i++) {
            k = xl_fnv_str(k, e->rmsgs[i]->text);
            k = xl_fnv(k, &e->rmsgs[i]->state, sizeof(e->rmsgs[i]->state));
        }
    if (k == e->rep_key && e->rep_msg)
        return 0;
    struct plist l = {0};
    char dbuf[700];
    add_errors(&l, &e->obj.errors);
    dup_problem(&l, e, dbuf, sizeof(dbuf));
    if (e->parse_state != XLATE_REJECTED && used)
        for (size_t i = 0; i < e->nrmsgs; i++)
            add(&l, e->rmsgs[i]->state, e->rmsgs[i]->reason, e->rmsgs[i]->text);
    int rc = finish(e, &l, "Accepted");
    e->rep_key = rc == 0 ? k : 0;
    return rc;
}

static int report_upstream(struct xlate_ctx *ctx, struct xl_entry *e)
{
    const struct xl_upstream *u = &e->obj.u.up;
    int modes = e->use_pass == ctx->pass ? e->used_modes : 0;
    uint64_t k = key_start(e);
    if (e->up) {
        k = xl_fnv(k, &e->up->ep_digest, sizeof(e->up->ep_digest));
        k = xl_fnv(k, &e->up->nendpoints, sizeof(e->up->nendpoints));
    }
    k = xl_fnv(k, &modes, sizeof(modes));
    if (k == e->rep_key && e->rep_msg)
        return 0;
    struct plist l = {0};
    char dbuf[700], ok[200], lbbuf[300];
    add_errors(&l, &e->obj.errors);
    dup_problem(&l, e, dbuf, sizeof(dbuf));
    ok[0] = '\0';
    if (e->parse_state != XLATE_REJECTED && e->up) {
        add_errors(&l, &e->up->ep_errors);
        if ((modes & (1 << XLATE_MODE_PROXYLESS)) &&
            (u->lb == XL_LB_LEAST_REQUEST || u->lb == XL_LB_RANDOM)) {
            snprintf(lbbuf, sizeof(lbbuf),
                     "spec.lbPolicy: %s is not supported by proxyless gRPC clients; their "
                     "Gateways get RoundRobin",
                     u->lb == XL_LB_RANDOM ? "Random" : "LeastRequest");
            add(&l, XLATE_WARNING, XL_R_UNSUPPORTED, lbbuf);
        }
        snprintf(ok, sizeof(ok), "%zu endpoint%s", e->up->nendpoints,
                 e->up->nendpoints == 1 ? "" : "s");
    }
    int rc = finish(e, &l, ok);
    e->rep_key = rc == 0 ? k : 0;
    return rc;
}

static int push_rmsg(struct xl_entry *t, const struct xl_msg *m)
{
    if (t->nrmsgs == t->caprmsgs) {
        size_t cap = t->caprmsgs ? t->caprmsgs * 2 : 4;
        const struct xl_msg **n = realloc(t->rmsgs, cap * sizeof(*n));
        if (!n)
            return -1;
        t->rmsgs = n;
        t->caprmsgs = cap;
    }
    t->rmsgs[t->nrmsgs++] = m;
    return 0;
}

/* Report order: kinds by name (Gateway, RouteTable, Upstream,
 * VirtualService), then namespace, then name. */
static const enum xlate_kind report_kinds[] = {XLATE_KIND_GATEWAY, XLATE_KIND_ROUTE_TABLE,
                                               XLATE_KIND_UPSTREAM, XLATE_KIND_VIRTUAL_SERVICE};

int xl_reports_build(struct xlate_ctx *ctx, struct xlate_snapshot *snap)
{
    /* problems found by resolutions belong to the RouteTables they name */
    for (size_t i = 0; i < ctx->nlist[XLATE_KIND_VIRTUAL_SERVICE]; i++) {
        struct xl_entry *v = ctx->list[XLATE_KIND_VIRTUAL_SERVICE][i];
        if (v->use_pass != ctx->pass)
            continue;
        for (int mo = 0; mo < XL_MODES; mo++) {
            if (!(v->used_modes & (1 << mo)))
                continue;
            for (size_t k = 0; k < v->res[mo].nmsgs; k++) {
                const struct xl_msg *m = &v->res[mo].msgs[k];
                if (m->target == v)
                    continue;
                xl_touch(ctx, m->target);
                if (push_rmsg(m->target, m) != 0)
                    return -1;
            }
        }
    }
    size_t n = 0, bytes = 0;
    for (size_t ki = 0; ki < sizeof(report_kinds) / sizeof(report_kinds[0]); ki++) {
        enum xlate_kind kind = report_kinds[ki];
        for (size_t i = 0; i < ctx->nlist[kind]; i++) {
            struct xl_entry *e = ctx->list[kind][i];
            int rc = 0;
            switch (kind) {
            case XLATE_KIND_GATEWAY:
                rc = report_gateway(ctx, e);
                break;
            case XLATE_KIND_ROUTE_TABLE:
                rc = report_route_table(ctx, e);
                break;
            case XLATE_KIND_UPSTREAM:
                rc = report_upstream(ctx, e);
                break;
            default:
                rc = report_virtual_service(ctx, e);
                break;
            }
            if (rc != 0)
                return -1;
            n++;
            bytes += strlen(xlate_kind_name(kind)) + strlen(e->obj.meta.ns) +
                     strlen(e->obj.meta.name) + (e->obj.meta.uid ? strlen(e->obj.meta.uid) : 0) +
                     strlen(e->rep_reason) + strlen(e->rep_msg) + 6;
        }
    }
    snap->reports = calloc(n ? n : 1, sizeof(*snap->reports));
    snap->report_strings = malloc(bytes ? bytes : 1);
    if (!snap->reports || !snap->report_strings)
        return -1;
    char *p = snap->report_strings;
#define COPY(dst, src)               \
    do {                             \
        size_t l_ = strlen(src) + 1; \
        memcpy(p, (src), l_);        \
        (dst) = p;                   \
        p += l_;                     \
    } while (0)
    for (size_t ki = 0; ki < sizeof(report_kinds) / sizeof(report_kinds[0]); ki++) {
        enum xlate_kind kind = report_kinds[ki];
        for (size_t i = 0; i < ctx->nlist[kind]; i++) {
            struct xl_entry *e = ctx->list[kind][i];
            struct xlate_report *r = &snap->reports[snap->nreports++];
            COPY(r->kind, xlate_kind_name(kind));
            COPY(r->namespace, e->obj.meta.ns);
            COPY(r->name, e->obj.meta.name);
            if (e->obj.meta.uid)
                COPY(r->uid, e->obj.meta.uid);
            r->generation = e->obj.meta.generation;
            r->state = e->rep_state;
            COPY(r->reason, e->rep_reason);
            COPY(r->message, e->rep_msg);
        }
    }
#undef COPY
    return 0;
}
