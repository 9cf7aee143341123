/*
 * Reports: one per Gateway, RouteTable, Upstream and VirtualService of the
 * input (Services and EndpointSlices are not ours to report on). A report's
 * state is the worst of its problems, its reason the first problem with that
 * state, its message every problem joined by "; " (or what the object does,
 * when it has none). Only reports of objects the pass touched are
 * recomputed; when none changed, the snapshot shares the previous report
 * block.
 */
#include "xlate_internal.h"
#include "xlate_cluster.h"

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

/* Stores report (|st|, |rname|, |msg|) on the entry; flags the pass's
 * reports as changed when it differs from the previous one. The message is
 * kept at its exact size (a report per object adds up). */
static int store(struct xlate_ctx *ctx, struct xl_entry *e, enum xlate_state st, const char *rname,
                 const char *msg, size_t len)
{
    if (e->rep_msg && e->rep_state == st && e->rep_reason == rname &&
        strncmp(e->rep_msg, msg, len) == 0 && e->rep_msg[len] == '\0')
        return 0;
    char *m = malloc(len + 1);
    if (!m)
        return -1;
    memcpy(m, msg, len);
    m[len] = '\0';
    free(e->rep_msg);
    e->rep_msg = m;
    e->rep_state = st;
    e->rep_reason = rname;
    ctx->reports_changed = 1;
    return 0;
}

/* Sets the entry's report from |l| (or |ok_msg| when empty). */
static int finish(struct xlate_ctx *ctx, struct xl_entry *e, const struct plist *l,
                  const char *ok_msg)
{
    enum xlate_state st = XLATE_ACCEPTED;
    enum xl_reason reason = XL_R_NONE;
    for (size_t i = 0; i < l->n; i++)
        if (l->items[i].state > st) {
            st = l->items[i].state;
            reason = l->items[i].reason;
        }
    const char *rname = xlate_reason_name(reason);
    /* most objects have no problem, or one */
    if (l->n == 0)
        return store(ctx, e, st, rname, ok_msg, strlen(ok_msg));
    if (l->n == 1 && !l->dropped && strlen(l->items[0].text) < XL_REPORT_MSG_MAX)
        return store(ctx, e, st, rname, l->items[0].text, strlen(l->items[0].text));
    struct cx_buf b;
    cx_buf_init(&b, XL_REPORT_MSG_MAX);
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
    int rc = store(ctx, e, st, rname, b.data ? b.data : "", b.len);
    cx_buf_free(&b);
    return rc;
oom:
    cx_buf_free(&b);
    return -1;
}

/* The Gateways (with memos) that select VirtualService |v|, in name
 * order; and the modes they use. */
static size_t uses_of(struct xlate_ctx *ctx, const struct xl_entry *v, struct xl_entry **gws,
                      struct xl_gw_memo **memos, size_t cap, int *modes)
{
    size_t n = 0;
    *modes = 0;
    for (size_t i = 0; i < ctx->nlist[XLATE_KIND_GATEWAY]; i++) {
        struct xl_entry *g = ctx->list[XLATE_KIND_GATEWAY][i];
        struct xl_gw_memo *m = cx_map_get(&ctx->gw_memo, g->key, g->keylen);
        if (!m || !xlate_gw_is_sel(m, v))
            continue;
        *modes |= 1 << m->mode;
        if (n < cap) {
            gws[n] = g;
            memos[n] = m;
            n++;
        }
    }
    return n;
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
    struct xl_gw_memo *m = cx_map_get(&ctx->gw_memo, e->key, e->keylen);
    struct plist l = {0};
    char dbuf[700], ok[400];
    add_errors(&l, &e->obj->errors);
    dup_problem(&l, e, dbuf, sizeof(dbuf));
    if (e->gtls)
        add_errors(&l, &e->gtls->errors);
    for (size_t i = 0; m && i < m->ncert_notes; i++)
        add(&l, XLATE_WARNING, XL_R_CERT_UNUSED, m->cert_notes[i]);
    ok[0] = '\0';
    if (m) {
        size_t conflicts = cx_map_len(&m->conflicts) - m->nbudget - m->nnolistener;
        size_t nl = m->sets[XDS_LISTENER].n, nc = m->sets[XDS_CLUSTER].n;
        char budget[64] = "";
        if (m->nbudget)
            snprintf(budget, sizeof(budget), ", %zu over a budget", m->nbudget);
        snprintf(ok, sizeof(ok),
                 "%s mode: %zu listener%s, %zu virtual host%s from %zu selected VirtualService%s "
                 "(%zu lost a domain conflict%s), %zu cluster%s",
                 m->mode == XLATE_MODE_PROXYLESS ? "proxyless" : "envoy", nl, nl == 1 ? "" : "s",
                 m->nacc, m->nacc == 1 ? "" : "s", m->nsel, m->nsel == 1 ? "" : "s", conflicts,
                 budget, nc, nc == 1 ? "" : "s");
    }
    return finish(ctx, e, &l, ok);
}

static int report_virtual_service(struct xlate_ctx *ctx, struct xl_entry *e)
{
    struct plist l = {0};
    char dbuf[700], ok[1200], nbuf[300];
    add_errors(&l, &e->obj->errors);
    dup_problem(&l, e, dbuf, sizeof(dbuf));
    ok[0] = '\0';
    if (e->parse_state != XLATE_REJECTED) {
        struct xl_entry *gws[16];
        struct xl_gw_memo *memos[16];
        int modes;
        size_t nuses = uses_of(ctx, e, gws, memos, 16, &modes);
        if (!modes) {
            add(&l, XLATE_WARNING, XL_R_NOT_SELECTED,
                "not selected by any Gateway (see the Gateways' virtualServiceSelector and "
                "virtualServiceNamespaces)");
        } else {
            size_t nroutes = 0;
            for (int mo = 0; mo < XL_MODES; mo++) {
                if (!(modes & (1 << mo)))
                    continue;
                const struct xl_vs_res *r = &e->res[mo];
                for (size_t i = 0; i < r->nmsgs; i++)
                    if (r->msgs[i].target == e)
                        add(&l, r->msgs[i].state, r->msgs[i].reason, r->msgs[i].text);
                if (r->valid && r->nroutes == 0 && !r->over_budget) {
                    snprintf(nbuf, sizeof(nbuf), "no route is left to serve%s",
                             mo == XLATE_MODE_PROXYLESS ? " (proxyless)" : "");
                    add(&l, XLATE_REJECTED, XL_R_NO_ROUTES, nbuf);
                }
                if (r->nroutes > nroutes)
                    nroutes = r->nroutes;
            }
            for (size_t i = 0; i < nuses; i++) {
                const struct xl_refusal *c = cx_map_get(&memos[i]->conflicts, e->key, e->keylen);
                if (c) /* no listener of that Gateway: others may serve it */
                    add(&l, c->reason == XL_R_LISTENER_NOT_FOUND ? XLATE_WARNING : XLATE_REJECTED,
                        c->reason, c->msg);
                const char *u = cx_map_get(&memos[i]->uncovered, e->key, e->keylen);
                if (u)
                    add(&l, XLATE_WARNING, XL_R_DOMAIN_NOT_COVERED, u);
            }
            /* "served by Gateway(s) a, b with N route(s)", truncated to |ok| */
            const char *end = ok + sizeof(ok);
            char *o = xlate_cat(ok, end, nuses == 1 ? "served by Gateway " : "served by Gateways ");
            for (size_t i = 0; i < nuses; i++)
                o = xlate_cat(xlate_cat(o, end, i ? ", " : ""), end, gws[i]->key);
            if (o + 1 < end) {
                o = xlate_cat_u(xlate_cat(o, end, " with "), end, nroutes);
                xlate_cat(o, end, nroutes == 1 ? " route" : " routes");
            }
        }
    }
    return finish(ctx, e, &l, ok);
}

static int entry_ptr_cmp(const void *a, const void *b)
{
    return xlate_entry_cmp(*(struct xl_entry *const *)a, *(struct xl_entry *const *)b);
}

static int report_route_table(struct xlate_ctx *ctx, struct xl_entry *e)
{
    struct plist l = {0};
    char dbuf[700];
    add_errors(&l, &e->obj->errors);
    dup_problem(&l, e, dbuf, sizeof(dbuf));
    if (e->parse_state != XLATE_REJECTED) {
        /* problems found by the resolutions of the VirtualServices that
         * reach it, in their name order: the list holds them in the order
         * they were last resolved, which depends on the history */
        struct xl_entry *stack[16], **by_name = stack;
        if (e->contrib.n > sizeof(stack) / sizeof(stack[0]) &&
            !(by_name = malloc(e->contrib.n * sizeof(*by_name))))
            return -1;
        if (e->contrib.n) { /* (no list yet: no items array) */
            memcpy(by_name, e->contrib.items, e->contrib.n * sizeof(*by_name));
            qsort(by_name, e->contrib.n, sizeof(*by_name), entry_ptr_cmp);
        }
        for (size_t c = 0; c < e->contrib.n; c++) {
            struct xl_entry *v = by_name[c];
            struct xl_entry *gws[16];
            struct xl_gw_memo *memos[16];
            int modes;
            uses_of(ctx, v, gws, memos, 16, &modes);
            for (int mo = 0; mo < XL_MODES; mo++) {
                if (!(modes & (1 << mo)) || !v->res[mo].valid)
                    continue;
                for (size_t i = 0; i < v->res[mo].nmsgs; i++)
                    if (v->res[mo].msgs[i].target == e)
                        add(&l, v->res[mo].msgs[i].state, v->res[mo].msgs[i].reason,
                            v->res[mo].msgs[i].text);
            }
        }
        if (by_name != stack)
            free(by_name);
    }
    return finish(ctx, e, &l, "Accepted");
}

static int report_upstream(struct xlate_ctx *ctx, struct xl_entry *e)
{
    const struct xl_upstream *u = &e->obj->u.up;
    int modes = 0;
    for (size_t i = 0; i < ctx->nlist[XLATE_KIND_GATEWAY]; i++) {
        struct xl_entry *g = ctx->list[XLATE_KIND_GATEWAY][i];
        struct xl_gw_memo *m = cx_map_get(&ctx->gw_memo, g->key, g->keylen);
        if (m && xlate_gw_ucount(m, e))
            modes |= 1 << m->mode;
    }
    struct plist l = {0};
    char dbuf[700], ok[200], lbbuf[300], pbuf[400];
    add_errors(&l, &e->obj->errors);
    dup_problem(&l, e, dbuf, sizeof(dbuf));
    ok[0] = '\0';
    if (e->parse_state != XLATE_REJECTED && e->up)
        add_errors(&l, &e->up->tls_errors);
    if (e->parse_state != XLATE_REJECTED && e->up && !e->up->tls_bad) {
        add_errors(&l, &e->up->ep_errors);
        if ((modes & (1 << XLATE_MODE_PROXYLESS)) && xlate_upstream_tls_of(u)->enabled)
            add(&l, XLATE_WARNING, XL_R_UNSUPPORTED,
                "spec.tls: not applied for proxyless Gateways: gRPC clients take their TLS "
                "settings from the certificate providers of their xDS bootstrap");
        if ((modes & (1 << XLATE_MODE_PROXYLESS)) &&
            (u->lb == XL_LB_LEAST_REQUEST || u->lb == XL_LB_RANDOM)) {
            snprintf(lbbuf, sizeof(lbbuf),
                     "spec.lbPolicy: %s is not supported by proxyless gRPC clients; their "
                     "Gateways get RoundRobin",
                     u->lb == XL_LB_RANDOM ? "Random" : "LeastRequest");
            add(&l, XLATE_WARNING, XL_R_UNSUPPORTED, lbbuf);
        }
        if ((modes & (1 << XLATE_MODE_PROXYLESS)) && u->lb == XL_LB_MAGLEV)
            add(&l, XLATE_WARNING, XL_R_UNSUPPORTED,
                "spec.lbPolicy: Maglev is not supported by proxyless gRPC clients; their "
                "Gateways get RingHash (also a consistent hash: hash policies keep working)");
        if ((modes & (1 << XLATE_MODE_PROXYLESS)) &&
            xlate_cluster_proxyless_ignored(xlate_cluster_opts_of(u), pbuf, sizeof(pbuf)))
            add(&l, XLATE_WARNING, XL_R_UNSUPPORTED, pbuf);
        xlate_cat(xlate_cat_u(ok, ok + sizeof(ok), e->up->nendpoints), ok + sizeof(ok),
                  e->up->nendpoints == 1 ? " endpoint" : " endpoints");
    }
    return finish(ctx, e, &l, ok);
}

/* Report order: kinds by name (Gateway, RouteTable, Upstream,
 * VirtualService), then namespace, then name. */
static const enum xlate_kind report_kinds[] = {XLATE_KIND_GATEWAY, XLATE_KIND_ROUTE_TABLE,
                                               XLATE_KIND_UPSTREAM, XLATE_KIND_VIRTUAL_SERVICE};

/* The report block's strings while they are collected: sized for about
 * 96 bytes a report, grown by doubling. */
struct strbuf {
    char *data;
    size_t cap, used;
};

/* Appends |src| with its NUL; *field gets its offset, NULL (offset 0) for
 * a NULL |src|. Returns 0, or -1 when memory ran out. */
static int put_str(struct strbuf *sb, const char *src, char **field)
{
    *field = NULL;
    if (!src)
        return 0;
    size_t l = strlen(src) + 1;
    if (sb->cap - sb->used < l) {
        size_t cap = sb->cap * 2 > sb->used + l ? sb->cap * 2 : sb->used + l;
        char *g = xlate_big_realloc(sb->data, cap);
        if (!g)
            return -1;
        sb->data = g;
        sb->cap = cap;
    }
    memcpy(sb->data + sb->used, src, l);
    *field = (char *)(uintptr_t)sb->used;
    sb->used += l;
    return 0;
}

/* The last string put for one field: neighbours in name order mostly share
 * their namespace and their message ("served by Gateway ... with 5
 * routes", "10 endpoints"), which the block then holds once. */
struct strlast {
    const char *src;
    char *off;
};

static int put_shared(struct strbuf *sb, const char *src, char **field, struct strlast *last)
{
    if (src && last->src && (src == last->src || strcmp(src, last->src) == 0)) {
        *field = last->off;
        return 0;
    }
    int rc = put_str(sb, src, field);
    if (rc == 0 && src)
        *last = (struct strlast){src, *field};
    return rc;
}

static struct xlate_report_block *build_block(struct xlate_ctx *ctx)
{
    size_t n = 0;
    for (size_t ki = 0; ki < sizeof(report_kinds) / sizeof(report_kinds[0]); ki++)
        n += ctx->nlist[report_kinds[ki]];
    struct xlate_report_block *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    atomic_init(&b->refs, 1);
    atomic_init(&b->users, 1);
    /* the block is megabytes at 10k objects, new each full pass */
    b->reports = xlate_big_alloc((n ? n : 1) * sizeof(*b->reports), XL_BIG_ZERO | XL_BIG_MAP);
    if (!b->reports) {
        xlate_report_block_unref(b);
        return NULL;
    }
    /* one visit per entry (they are scattered): its strings are appended to
     * the block as they are met, the reports hold offsets until the block
     * has its final address */
    struct strbuf sb = {xlate_big_alloc(n * 96 + 64, XL_BIG_MAP), n * 96 + 64, 1};
    if (!sb.data) {
        xlate_report_block_unref(b);
        return NULL;
    }
    sb.data[0] = '\0'; /* offset 0 means NULL */
    int rc = 0;
    struct strlast last_ns = {0}, last_msg = {0};
    for (size_t ki = 0; ki < sizeof(report_kinds) / sizeof(report_kinds[0]); ki++) {
        enum xlate_kind kind = report_kinds[ki];
        const struct xl_entry_list l = {ctx->list[kind], ctx->nlist[kind], ctx->nlist[kind]};
        for (size_t i = 0; i < l.n; i++) {
            const struct xl_entry *e = l.items[i];
            xlate_list_prefetch(&l, i);
            struct xlate_report *r = &b->reports[b->n++];
            r->kind = (char *)xlate_kind_name(kind); /* static: not copied */
            r->generation = e->obj->meta.generation;
            r->state = e->rep_state;
            r->reason = (char *)e->rep_reason; /* static: not copied */
            rc |= put_shared(&sb, e->obj->meta.ns, &r->namespace, &last_ns);
            rc |= put_str(&sb, e->obj->meta.name, &r->name);
            rc |= put_str(&sb, e->obj->meta.uid, &r->uid);
            rc |= put_shared(&sb, e->rep_msg, &r->message, &last_msg);
        }
    }
    if (rc) {
        xlate_big_free(sb.data);
        xlate_report_block_unref(b);
        return NULL;
    }
    char *str = sb.data;
    b->strings = str;
    for (size_t i = 0; i < b->n; i++) {
        struct xlate_report *r = &b->reports[i];
        r->namespace = str + (uintptr_t)r->namespace;
        r->name = str + (uintptr_t)r->name;
        if (r->uid)
            r->uid = str + (uintptr_t)r->uid;
        r->message = str + (uintptr_t)r->message;
    }
    return b;
}

static int report_cmp(const struct xlate_report *r, const struct xl_entry *e)
{
    int c = strcmp(r->kind, xlate_kind_name(e->kind));
    if (c)
        return c;
    c = strcmp(r->namespace, e->obj->meta.ns);
    return c ? c : strcmp(r->name, e->obj->meta.name);
}

/* A block patched from the previous one: the reports array is copied
 * (sequential), the changed reports rewritten with strings of their own,
 * the others keep pointing into the older blocks' strings. NULL when a full
 * build is better (or memory ran out). */
static struct xlate_report_block *patch_block(struct xlate_ctx *ctx)
{
    struct xlate_report_block *old = ctx->reports;
    size_t nchanged = 0, bytes = 0;
    if (!old || old->depth >= 8)
        return NULL;
    for (size_t i = 0; i < ctx->rep_list.n; i++) {
        const struct xl_entry *e = ctx->rep_list.items[i];
        if (e->deleted || e->rep_changed != ctx->pass)
            continue;
        if (++nchanged > old->n / 8 + 16)
            return NULL; /* a full build is better */
        bytes += strlen(xlate_kind_name(e->kind)) + strlen(e->obj->meta.ns) +
                 strlen(e->obj->meta.name) + (e->obj->meta.uid ? strlen(e->obj->meta.uid) : 0) +
                 strlen(e->rep_reason) + strlen(e->rep_msg) + 6;
    }
    struct xlate_report_block *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    atomic_init(&b->refs, 1);
    atomic_init(&b->users, 1);
    b->n = old->n;
    b->reports = xlate_big_alloc((old->n ? old->n : 1) * sizeof(*b->reports), XL_BIG_MAP);
    b->strings = xlate_big_alloc(bytes ? bytes : 1, XL_BIG_MAP);
    if (!b->reports || !b->strings) {
        xlate_report_block_unref(b);
        return NULL;
    }
    memcpy(b->reports, old->reports, old->n * sizeof(*b->reports));
    b->base = xlate_report_block_base(old);
    b->depth = old->depth + 1;
    char *p = b->strings;
#define COPY(dst, src)               \
    do {                             \
        size_t l_ = strlen(src) + 1; \
        memcpy(p, (src), l_);        \
        (dst) = p;                   \
        p += l_;                     \
    } while (0)
    for (size_t i = 0; i < ctx->rep_list.n; i++) {
        const struct xl_entry *e = ctx->rep_list.items[i];
        if (e->deleted || e->rep_changed != ctx->pass)
            continue;
        size_t lo = 0, hi = b->n;
        struct xlate_report *r = NULL;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            int c = report_cmp(&b->reports[mid], e);
            if (c == 0) {
                r = &b->reports[mid];
                break;
            }
            if (c < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (!r) { /* not there: membership changed after all */
            xlate_report_block_unref(b);
            return NULL;
        }
        COPY(r->kind, xlate_kind_name(e->kind));
        COPY(r->namespace, e->obj->meta.ns);
        COPY(r->name, e->obj->meta.name);
        r->uid = NULL;
        if (e->obj->meta.uid)
            COPY(r->uid, e->obj->meta.uid);
        r->generation = e->obj->meta.generation;
        r->state = e->rep_state;
        COPY(r->reason, e->rep_reason);
        COPY(r->message, e->rep_msg);
    }
#undef COPY
    return b;
}

int xlate_reports_build(struct xlate_ctx *ctx, struct xlate_snapshot *snap)
{
    int any = 0;
    for (size_t i = 0; i < ctx->rep_list.n; i++) {
        struct xl_entry *e = ctx->rep_list.items[i];
        xlate_list_prefetch(&ctx->rep_list, i);
        if (e->deleted)
            continue;
        int before = ctx->reports_changed;
        ctx->reports_changed = 0;
        int rc;
        switch (e->kind) {
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
        /* a re-parsed object's generation or uid may have changed with an
         * identical message: its report is rewritten too */
        if (ctx->reports_changed || e->changed == ctx->pass) {
            e->rep_changed = ctx->pass;
            any = 1;
        }
        ctx->reports_changed = before;
    }
    /* ctx->reports_changed is set when the membership changed (deletions);
     * additions show as a missing report in patch_block */
    if (!ctx->reports || ctx->reports_changed || any) {
        struct xlate_report_block *b = ctx->reports_changed ? NULL : patch_block(ctx);
        if (!b)
            b = build_block(ctx);
        if (!b)
            return -1;
        xlate_report_block_unref(ctx->reports);
        ctx->reports = b;
    }
    snap->report_block = xlate_report_block_ref(ctx->reports);
    snap->reports = ctx->reports->reports;
    snap->nreports = ctx->reports->n;
    return 0;
}
