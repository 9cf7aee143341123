/*
 * Route resolution: a VirtualService's routes after delegation to
 * RouteTables and lookup of the Upstreams they send to, encoded as one
 * VirtualHost per gateway mode. Problems are attributed to the object that
 * holds them (the VirtualService or a RouteTable) as xl_msg entries.
 */
#include "xlate_internal.h"

#include "cx_hash.h"
#include "filter_selector.h"
#include "xlate_route.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Routes that gRPC clients honour in retry_on. */
static const char *const grpc_retry_conditions[] = {
    "cancelled", "deadline-exceeded", "internal", "resource-exhausted", "unavailable", NULL};

struct rvec {
    struct xl_rroute *items;
    size_t n, cap;
};

struct hdrs {
    const struct xl_header *const *items;
    size_t n;
};

struct queries {
    const struct xl_query *const *items;
    size_t n;
};

struct rctx {
    struct xlate_ctx *ctx;
    struct xl_entry *vs;
    enum xlate_gateway_mode mode;
    struct xl_vs_res *res;
    struct rvec routes;
    struct xl_entry *chain[XLATE_MAX_DELEGATION + 1]; /* RouteTables being expanded */
    size_t depth;
    size_t capmsgs, capups;
    int oom;
    struct xl_arena scratch; /* what only the encoding reads: header lists, weights */
    /* the last Upstream found: a VirtualService's routes mostly send to one */
    const struct xl_ref *last_ref;
    struct xl_entry *last_up;
    /* a cycle found below: unwind to this RouteTable, dropping its routes */
    struct xl_entry *cycle_at;
    /* budgets (ctx->limits): RouteTable expansions so far; set when one
     * is passed, with the message: everything unwinds, nothing is served */
    size_t ndeleg;
    int over;
    char over_msg[700];
};

void xlate_res_clear(struct xl_vs_res *r)
{
    free(r->vh);
    xlate_arena_free(&r->arena);
    free(r->ups);
    free(r->msgs);
    size_t hint = r->arena.hint;
    memset(r, 0, sizeof(*r));
    r->arena.hint = hint;
}

static void msg(struct rctx *rc, struct xl_entry *target, enum xlate_state st, enum xl_reason r,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void msg(struct rctx *rc, struct xl_entry *target, enum xlate_state st, enum xl_reason r,
                const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    struct xl_vs_res *res = rc->res;
    /* the same problem reached twice (two routes into one RouteTable) */
    for (size_t i = 0; i < res->nmsgs; i++)
        if (res->msgs[i].target == target && strcmp(res->msgs[i].text, buf) == 0)
            return;
    if (res->nmsgs == rc->capmsgs) {
        size_t cap = rc->capmsgs ? rc->capmsgs * 2 : 4;
        struct xl_msg *m = realloc(res->msgs, cap * sizeof(*m));
        if (!m) {
            rc->oom = 1;
            return;
        }
        res->msgs = m;
        rc->capmsgs = cap;
    }
    char *t = xlate_strdup(&res->arena, buf);
    if (!t) {
        rc->oom = 1;
        return;
    }
    res->msgs[res->nmsgs++] =
        (struct xl_msg){.target = target, .state = st, .reason = r, .text = t};
}

static int register_dep(struct xlate_ctx *ctx, const char *key, size_t klen, struct xl_entry *e,
                        int mode, uint32_t serial);

/* Dependency key "<c>/<a>[/<b>]" in |buf|: its length, 0 when it does not
 * fit (no Kubernetes name is that long). */
static size_t dep_key(char *buf, size_t cap, char c, const char *a, const char *b)
{
    size_t al = strlen(a), bl = b ? strlen(b) : 0;
    if (al + bl + 4 > cap)
        return 0;
    size_t n = 0;
    buf[n++] = c;
    buf[n++] = '/';
    memcpy(buf + n, a, al);
    n += al;
    if (b) {
        buf[n++] = '/';
        memcpy(buf + n, b, bl);
        n += bl;
    }
    buf[n] = '\0';
    return n;
}

/* Records dependency |key| of this resolution in ctx->deps (once: a
 * resolution's registrations are the last of their lists). */
static void dep_put(struct rctx *rc, const char *key, size_t n)
{
    if (register_dep(rc->ctx, key, n, rc->vs, rc->mode, rc->res->serial) != 0)
        rc->oom = 1;
}

static void dep(struct rctx *rc, char c, const char *a, const char *b)
{
    char buf[600];
    size_t n = dep_key(buf, sizeof(buf), c, a, b);
    if (n)
        dep_put(rc, buf, n);
}

static void use_upstream(struct rctx *rc, struct xl_entry *up)
{
    struct xl_vs_res *res = rc->res;
    for (size_t i = 0; i < res->nups; i++)
        if (res->ups[i] == up)
            return;
    if (res->nups == rc->capups) {
        size_t cap = rc->capups ? rc->capups * 2 : 4;
        struct xl_entry **u = realloc(res->ups, cap * sizeof(*u));
        if (!u) {
            rc->oom = 1;
            return;
        }
        res->ups = u;
        rc->capups = cap;
    }
    res->ups[res->nups++] = up;
}

static struct xl_rroute *push_route(struct rctx *rc)
{
    if (rc->routes.n == rc->routes.cap) {
        size_t cap = rc->routes.cap ? rc->routes.cap * 2 : 8;
        struct xl_rroute *r = realloc(rc->routes.items, cap * sizeof(*r));
        if (!r) {
            rc->oom = 1;
            return NULL;
        }
        rc->routes.items = r;
        rc->routes.cap = cap;
    }
    struct xl_rroute *r = &rc->routes.items[rc->routes.n++];
    memset(r, 0, sizeof(*r));
    return r;
}

static const char *kind_short(const struct xl_entry *e)
{
    return e->kind == XLATE_KIND_ROUTE_TABLE ? "RouteTable" : "VirtualService";
}

/* A budget was passed at |owner|'s route |path|: the resolution unwinds
 * and keeps no route (rc->over); the message goes to the VirtualService. */
static void over_budget(struct rctx *rc, const char *what, long limit, const char *flag,
                        const struct xl_entry *owner, const char *path, const char *how)
{
    if (rc->over)
        return;
    rc->over = 1;
    snprintf(rc->over_msg, sizeof(rc->over_msg),
             "more than %ld %s (%s %ld): %zu routes made through %zu RouteTable expansions "
             "when %s %s %s %s; the expansion stopped and nothing of this VirtualService is "
             "served",
             limit, what, flag, limit, rc->routes.n,
             rc->ndeleg > (size_t)limit ? (size_t)limit : rc->ndeleg, kind_short(owner), owner->key,
             path, how);
}

/* What a route inherits from the route that delegated to its table. */
struct inherit {
    const char *prefix; /* NULL at the top */
    int case_sensitive;
    struct hdrs headers;
    const struct xl_route *timeout_from; /* nearest delegating route with a timeout */
    const struct xl_route *retries_from; /* ... with retries */
    const struct xl_route *hash_from;    /* ... with a hashPolicy */
    const struct xl_route *req_from;     /* ... with requestHeaders */
    const struct xl_route *resp_from;    /* ... with responseHeaders */
    const struct xl_route *rl_from;      /* ... with a rateLimit */
    struct queries query;                /* query matchers: the parents' first */
    /* a delegating route's methods leave out POST: no gRPC call matches */
    int no_rpc;
};

/* Upstream |ref| as seen from |owner|: the entry, or NULL (a message says
 * why the route is left out). */
static struct xl_entry *lookup_upstream(struct rctx *rc, struct xl_entry *owner, const char *path,
                                        const struct xl_ref *ref)
{
    const struct xl_ref *last = rc->last_ref;
    /* routes naming one Upstream share its strings (the decode's parse_ref) */
    if (last && (last->name == ref->name || strcmp(last->name, ref->name) == 0) &&
        (last->ns == ref->ns || strcmp(last->ns, ref->ns) == 0))
        return rc->last_up; /* found and usable, its dependency recorded */
    /* "U/ns/name": the dependency, and after "U/" the Upstream's key */
    char key[600];
    size_t n = dep_key(key, sizeof(key), 'U', ref->ns, ref->name);
    struct xl_entry *up = NULL;
    if (n) {
        dep_put(rc, key, n);
        up = cx_map_get(&rc->ctx->by_key[XLATE_KIND_UPSTREAM], key + 2, n - 2);
    }
    if (!up) {
        msg(rc, owner, XLATE_WARNING, XL_R_UPSTREAM_NOT_FOUND,
            "%s: Upstream %s/%s not found; route left out", path, ref->ns, ref->name);
        return NULL;
    }
    if (!xlate_upstream_usable(up)) {
        msg(rc, owner, XLATE_WARNING, XL_R_UPSTREAM_REJECTED,
            "%s: Upstream %s/%s is rejected; route left out", path, ref->ns, ref->name);
        return NULL;
    }
    rc->last_ref = ref;
    rc->last_up = up;
    return up;
}

static int has_prefix(const char *s, const char *prefix, int case_sensitive)
{
    size_t n = strlen(prefix);
    return case_sensitive ? strncmp(s, prefix, n) == 0 : strncasecmp(s, prefix, n) == 0;
}

static void expand_routes(struct rctx *rc, struct xl_entry *owner, const struct xl_route *routes,
                          size_t n, const struct inherit *in);

/* The header and query matchers of route |r| under inherited |h| and |q|:
 * the parents' first, then r's headers and (Envoy mode) the ":method"
 * matcher of its methods. Proxyless Gateways get no method matcher: every
 * gRPC call is a POST (routes whose methods leave POST out are left out
 * instead). Returns 0 or -1 (memory). */
static int route_matchers(struct rctx *rc, const struct hdrs *h, const struct queries *q,
                          const struct xl_route *r, struct hdrs *oh, struct queries *oq)
{
    const struct xl_route_ext *x = r->ext;
    int meth = x && x->methods && rc->mode != XLATE_MODE_PROXYLESS;
    size_t nh = h->n + r->match.nheaders + (size_t)meth;
    size_t nq = q->n + (x ? x->nquery : 0);
    *oh = *h;
    *oq = *q;
    if (nh != h->n) {
        const struct xl_header **hv = xlate_alloc(&rc->scratch, nh * sizeof(*hv));
        if (!hv) {
            rc->oom = 1;
            return -1;
        }
        for (size_t i = 0; i < h->n; i++)
            hv[i] = h->items[i];
        for (size_t i = 0; i < r->match.nheaders; i++)
            hv[h->n + i] = &r->match.headers[i];
        if (meth)
            hv[nh - 1] = &x->method_header;
        *oh = (struct hdrs){hv, nh};
    }
    if (nq != q->n) {
        const struct xl_query **qv = xlate_alloc(&rc->scratch, nq * sizeof(*qv));
        if (!qv) {
            rc->oom = 1;
            return -1;
        }
        for (size_t i = 0; i < q->n; i++)
            qv[i] = q->items[i];
        for (size_t i = 0; i < x->nquery; i++)
            qv[q->n + i] = &x->query[i];
        *oq = (struct queries){qv, nq};
    }
    return 0;
}

/* Proxyless: whether gRPC clients can be given route |r| (under |in|) at
 * all; warns about what they cannot use. A route they could never match
 * (methods without POST, query matchers: RPCs have no query string; gRFC
 * A28 makes clients skip such routes) or act on (a redirect: clients do
 * not follow them, and some NACK a route whose action is not a
 * RouteAction) is left out; header changes and host and regex rewrites
 * are ignored by clients, and left out of the route. */
static int grpc_route(struct rctx *rc, struct xl_entry *owner, const char *path,
                      const struct xl_route *r, const struct inherit *in)
{
    const struct xl_route_ext *x = r->ext;
    if (rc->mode != XLATE_MODE_PROXYLESS)
        return 1;
    if (in->no_rpc || (x && x->methods && !(x->methods & XL_M_POST))) {
        msg(rc, owner, XLATE_WARNING, XL_R_UNSUPPORTED,
            "%s.match.methods: gRPC calls are POSTs, so no RPC matches this route; left out of "
            "proxyless Gateways",
            path);
        return 0;
    }
    if (in->query.n || (x && x->nquery)) {
        msg(rc, owner, XLATE_WARNING, XL_R_UNSUPPORTED,
            "%s.match.queryParams: RPCs carry no query string, so gRPC clients skip this route; "
            "left out of proxyless Gateways",
            path);
        return 0;
    }
    if (r->action == XL_ACT_REDIRECT) {
        msg(rc, owner, XLATE_WARNING, XL_R_UNSUPPORTED,
            "%s.redirect: gRPC clients do not follow redirects; the route is left out of "
            "proxyless Gateways, so its RPCs go on to the next routes",
            path);
        return 0;
    }
    if (x && (x->has_req || x->has_resp))
        msg(rc, owner, XLATE_WARNING, XL_R_UNSUPPORTED,
            "%s: requestHeaders and responseHeaders are ignored by proxyless gRPC clients; left "
            "out",
            path);
    if (x && x->rl)
        msg(rc, owner, XLATE_WARNING, XL_R_UNSUPPORTED,
            "%s.rateLimit: proxyless gRPC clients have no local rate limit filter; left out", path);
    if (x && (x->host_rewrite || x->auto_host || x->regex_pattern))
        msg(rc, owner, XLATE_WARNING, XL_R_UNSUPPORTED,
            "%s: hostRewrite, autoHostRewrite and regexRewrite are ignored by proxyless gRPC "
            "clients; left out",
            path);
    return 1;
}

/* Expands RouteTable |rt| under the delegating route. Returns 0 if its
 * routes were added, -1 if it was left out. */
static int expand_table(struct rctx *rc, struct xl_entry *owner, const char *path,
                        struct xl_entry *rt, const struct xl_route *parent,
                        const struct inherit *in)
{
    const char *prefix = parent->match.value;
    int cs = parent->match.case_sensitive && in->case_sensitive;
    dep(rc, 'R', rt->key, NULL);
    long max_deleg = rc->ctx->limits.delegations_per_vs;
    if (++rc->ndeleg > (size_t)max_deleg) {
        char how[300];
        snprintf(how, sizeof(how), "delegated to RouteTable %s once more", rt->key);
        over_budget(rc, "RouteTable expansions", max_deleg, "--max-delegations-per-virtual-service",
                    owner, path, how);
        return -1;
    }
    if (rt->parse_state == XLATE_REJECTED) {
        msg(rc, owner, XLATE_WARNING, XL_R_ROUTE_TABLE_REJECTED,
            "%s: RouteTable %s is rejected; its routes are left out", path, rt->key);
        return -1;
    }
    /* a RouteTable already being expanded: a cycle; every table on it is
     * rejected and left out */
    for (size_t i = 0; i < rc->depth; i++) {
        if (rc->chain[i] != rt)
            continue;
        char cyc[700];
        size_t o = 0;
        for (size_t k = i; k < rc->depth && o < sizeof(cyc) - 1; k++) {
            int w = snprintf(cyc + o, sizeof(cyc) - o, "%s -> ", rc->chain[k]->key);
            o += w > 0 ? (size_t)w : 0;
        }
        if (o < sizeof(cyc))
            snprintf(cyc + o, sizeof(cyc) - o, "%s", rt->key);
        for (size_t k = i; k < rc->depth; k++)
            msg(rc, rc->chain[k], XLATE_REJECTED, XL_R_DELEGATION_CYCLE,
                "delegation cycle: RouteTable %s (reached from %s/%s)", cyc, rc->vs->obj->meta.ns,
                rc->vs->obj->meta.name);
        rc->cycle_at = rt;
        return -1;
    }
    if (rc->depth >= XLATE_MAX_DELEGATION) {
        msg(rc, rt, XLATE_REJECTED, XL_R_DELEGATION_DEPTH,
            "delegated to through more than %d RouteTables (from VirtualService %s)",
            XLATE_MAX_DELEGATION, rc->vs->key);
        msg(rc, owner, XLATE_WARNING, XL_R_DELEGATION_DEPTH,
            "%s: RouteTable %s is nested too deeply; its routes are left out", path, rt->key);
        return -1;
    }
    /* every route must stay under the delegating prefix */
    const struct xl_route_table *t = &rt->obj->u.rt;
    int violation = 0;
    for (size_t i = 0; i < t->nroutes; i++) {
        const struct xl_match *m = &t->routes[i].match;
        const char *what = m->kind == XL_PATH_PREFIX  ? "prefix"
                           : m->kind == XL_PATH_EXACT ? "path"
                                                      : "regex";
        const char *subject = m->value;
        if (m->kind == XL_PATH_REGEX)
            subject = m->regex_prefix ? m->regex_prefix : "";
        if (!has_prefix(subject, prefix, cs)) {
            msg(rc, rt, XLATE_REJECTED, XL_R_PREFIX_VIOLATION,
                "spec.routes[%zu].match.%s \"%s\" is not under \"%s\", the prefix of %s %s %s "
                "that delegates to it",
                i, what, m->value, prefix, kind_short(owner), owner->key, path);
            violation = 1;
        }
    }
    if (violation) {
        msg(rc, owner, XLATE_WARNING, XL_R_PREFIX_VIOLATION,
            "%s: RouteTable %s has routes outside \"%s\"; its routes are left out", path, rt->key,
            prefix);
        return -1;
    }
    /* headers and query matchers: the delegating route's come first */
    struct hdrs hs;
    struct queries qs;
    if (route_matchers(rc, &in->headers, &in->query, parent, &hs, &qs) != 0)
        return -1;
    const struct xl_route_ext *px = parent->ext;
    struct inherit child = {
        .prefix = prefix,
        .case_sensitive = cs,
        .headers = hs,
        .query = qs,
        .timeout_from = parent->has_timeout ? parent : in->timeout_from,
        .retries_from = parent->has_retries ? parent : in->retries_from,
        .hash_from = parent->nhash ? parent : in->hash_from,
        .req_from = px && px->has_req ? parent : in->req_from,
        .resp_from = px && px->has_resp ? parent : in->resp_from,
        .rl_from = px && px->rl ? parent : in->rl_from,
        .no_rpc = in->no_rpc || (px && px->methods && !(px->methods & XL_M_POST)),
    };
    size_t mark = rc->routes.n;
    rc->chain[rc->depth++] = rt;
    expand_routes(rc, rt, t->routes, t->nroutes, &child);
    rc->depth--;
    if (rc->over)
        return -1;
    if (rc->cycle_at) {
        rc->routes.n = mark; /* drop what this table added */
        if (rc->cycle_at == rt) {
            rc->cycle_at = NULL;
            msg(rc, owner, XLATE_WARNING, XL_R_DELEGATION_CYCLE,
                "%s: RouteTable %s is part of a delegation cycle; its routes are left out", path,
                rt->key);
        }
        return -1;
    }
    return 0;
}

static void delegate(struct rctx *rc, struct xl_entry *owner, const char *path,
                     const struct xl_route *r, const struct inherit *in)
{
    const struct xl_delegate *d = &r->delegate;
    if (d->name) {
        struct xl_entry *rt = xlate_find(rc->ctx, XLATE_KIND_ROUTE_TABLE, d->ns, d->name);
        if (!rt) {
            dep(rc, 'R', d->ns, d->name);
            msg(rc, owner, XLATE_WARNING, XL_R_ROUTE_TABLE_NOT_FOUND,
                "%s: RouteTable %s/%s not found; route left out", path, d->ns, d->name);
            return;
        }
        expand_table(rc, owner, path, rt, r, in);
        return;
    }
    /* by selector: every RouteTable of the namespace whose labels match,
     * in name order */
    dep(rc, 'N', d->ns, NULL);
    struct xl_entry_list *l = cx_map_gets(&rc->ctx->rt_by_ns, d->ns);
    size_t found = 0;
    for (size_t i = 0; l && i < l->n && !rc->oom; i++) {
        if (!xlate_selector_matches(d->selector, l->items[i]))
            continue;
        found++;
        expand_table(rc, owner, path, l->items[i], r, in);
        if (rc->cycle_at || rc->over)
            return;
    }
    if (!found)
        msg(rc, owner, XLATE_WARNING, XL_R_ROUTE_TABLE_NOT_FOUND,
            "%s: no RouteTable in namespace %s matches the delegate selector; route left out", path,
            d->ns);
}

static int grpc_condition(const char *s, size_t n)
{
    for (const char *const *c = grpc_retry_conditions; *c; c++)
        if (strlen(*c) == n && strncmp(*c, s, n) == 0)
            return 1;
    return 0;
}

static const char *const hash_kind_name[] = {
    [XL_HASH_HEADER] = "header",
    [XL_HASH_COOKIE] = "cookie",
    [XL_HASH_SOURCE_IP] = "sourceIP",
    [XL_HASH_QUERY] = "queryParameter",
};

/* gRPC clients hash on request headers only (gRFC A42: other policy types
 * are skipped) and never on binary (-bin) headers. */
static int grpc_hashes(const struct xl_hash_policy *h)
{
    if (h->kind != XL_HASH_HEADER)
        return 0;
    size_t n = strlen(h->name);
    return n < 4 || strcasecmp(h->name + n - 4, "-bin") != 0;
}

/* Proxyless: warns about |owner|'s route |path| hash policies that gRPC
 * clients skip (they are left out of what those Gateways get). */
static void hash_warnings(struct rctx *rc, struct xl_entry *owner, const char *path,
                          const struct xl_route *r)
{
    if (rc->mode != XLATE_MODE_PROXYLESS)
        return;
    for (size_t i = 0; i < r->nhash; i++) {
        const struct xl_hash_policy *h = &r->hash[i];
        if (grpc_hashes(h))
            continue;
        if (h->kind == XL_HASH_HEADER)
            msg(rc, owner, XLATE_WARNING, XL_R_UNSUPPORTED,
                "%s.hashPolicy[%zu].header: proxyless gRPC clients do not hash on binary (-bin) "
                "headers; left out",
                path, i);
        else
            msg(rc, owner, XLATE_WARNING, XL_R_UNSUPPORTED,
                "%s.hashPolicy[%zu].%s: proxyless gRPC clients hash on headers only; left out",
                path, i, hash_kind_name[h->kind]);
    }
}

/* The hash policies route |out| is written with (|from|'s, filtered for
 * proxyless clients), and a Warning on |owner| when one of the Upstreams
 * it sends to (|ups|, |nups|) does not balance by hash. */
static void set_hashes(struct rctx *rc, struct xl_entry *owner, const char *path,
                       const struct xl_route *from, struct xl_entry *const *ups, size_t nups,
                       struct xl_rroute *out)
{
    const struct xl_hash_policy **h = xlate_alloc(&rc->scratch, from->nhash * sizeof(*h));
    if (!h) {
        rc->oom = 1;
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < from->nhash; i++)
        if (rc->mode != XLATE_MODE_PROXYLESS || grpc_hashes(&from->hash[i]))
            h[n++] = &from->hash[i];
    out->hash = h;
    out->nhash = n;
    static const char *const lb_name[] = {[XL_LB_ROUND_ROBIN] = "RoundRobin",
                                          [XL_LB_LEAST_REQUEST] = "LeastRequest",
                                          [XL_LB_RANDOM] = "Random"};
    for (size_t i = 0; i < nups; i++) {
        const struct xl_upstream *u = &ups[i]->obj->u.up;
        if (!xlate_upstream_hashing(u))
            msg(rc, owner, XLATE_WARNING, XL_R_HASH_IGNORED,
                "%s: Upstream %s balances with %s, so the hashPolicy has no effect on it "
                "(hashing needs lbPolicy RingHash or Maglev)",
                path, ups[i]->key, lb_name[u->lb]);
    }
}

/* What route |r| (under |in|) writes beyond matching and forwarding:
 * its redirect, its header changes (else the nearest delegating route's)
 * and rewrites; proxyless Gateways get none of them but the redirect's
 * absence (grpc_route). */
static void set_route_ext(struct rctx *rc, const struct xl_route *r, const struct inherit *in,
                          struct xl_rroute *out)
{
    const struct xl_route_ext *x = r->ext;
    if (x && x->has_redirect)
        out->redirect = &x->redirect;
    if (rc->mode == XLATE_MODE_PROXYLESS)
        return;
    /* a redirect forwards no request: no request header changes */
    const struct xl_route *req = x && x->has_redirect ? NULL : x && x->has_req ? r : in->req_from;
    const struct xl_route *resp = x && x->has_resp ? r : in->resp_from;
    out->req_headers = req ? &req->ext->req : NULL;
    out->resp_headers = resp ? &resp->ext->resp : NULL;
    const struct xl_route *rl = x && x->rl ? r : in->rl_from;
    out->rate_limit = rl ? rl->ext->rl : NULL;
    if (x) {
        out->host_rewrite = x->host_rewrite;
        out->auto_host_rewrite = x->auto_host;
        out->regex_pattern = x->regex_pattern;
        out->regex_subst = x->regex_subst;
    }
}

static void expand_routes(struct rctx *rc, struct xl_entry *owner, const struct xl_route *routes,
                          size_t n, const struct inherit *in)
{
    for (size_t i = 0; i < n && !rc->oom && !rc->cycle_at && !rc->over; i++) {
        const struct xl_route *r = &routes[i];
        char path[64];
        xlate_cat(xlate_cat_u(xlate_cat(path, path + sizeof(path), "spec.routes["),
                              path + sizeof(path), i),
                  path + sizeof(path), "]");
        hash_warnings(rc, owner, path, r);
        if (!grpc_route(rc, owner, path, r, in))
            continue;
        if (r->action == XL_ACT_DELEGATE) {
            delegate(rc, owner, path, r, in);
            continue;
        }
        const char *cluster = NULL;
        struct xl_entry *single = NULL;
        struct xl_cluster_weight *wc = NULL;
        size_t nwc = 0;
        uint64_t total = 0;
        if (r->action == XL_ACT_REDIRECT) {
            /* answered by the proxy: no Upstream */
        } else if (r->action == XL_ACT_UPSTREAM) {
            struct xl_entry *up = lookup_upstream(rc, owner, path, &r->upstream);
            if (!up)
                continue;
            use_upstream(rc, up);
            cluster = up->key;
            single = up;
        } else {
            wc = xlate_alloc(&rc->scratch, r->nweighted * sizeof(*wc));
            if (!wc) {
                rc->oom = 1;
                return;
            }
            int missing = 0;
            for (size_t k = 0; k < r->nweighted; k++) {
                char wpath[96];
                snprintf(wpath, sizeof(wpath), "%s.weighted[%zu]", path, k);
                struct xl_entry *up = lookup_upstream(rc, owner, wpath, &r->weighted[k].upstream);
                if (!up) {
                    missing = 1;
                    continue;
                }
                if (r->weighted[k].weight == 0)
                    continue; /* no traffic: not written */
                wc[nwc].cluster = up->key;
                wc[nwc].weight = r->weighted[k].weight;
                total += r->weighted[k].weight;
                nwc++;
            }
            if (missing)
                continue;
            for (size_t k = 0; k < r->nweighted; k++) {
                struct xl_entry *up =
                    xlate_find(rc->ctx, XLATE_KIND_UPSTREAM, r->weighted[k].upstream.ns,
                               r->weighted[k].upstream.name);
                if (up && r->weighted[k].weight)
                    use_upstream(rc, up);
            }
        }
        if (rc->mode == XLATE_MODE_PROXYLESS && r->prefix_rewrite)
            msg(rc, owner, XLATE_WARNING, XL_R_UNSUPPORTED,
                "%s.prefixRewrite: ignored by proxyless gRPC clients", path);
        /* timeout and retries: the route's own, else the nearest delegating
         * route's */
        const struct xl_route *tfrom = r->has_timeout ? r : in->timeout_from;
        const struct xl_route *rfrom = r->has_retries ? r : in->retries_from;
        if (rc->mode == XLATE_MODE_PROXYLESS && r->has_retries) {
            const char *s = rfrom->retry_on;
            int any = 0;
            while (*s) {
                const char *comma = strchr(s, ',');
                size_t len = comma ? (size_t)(comma - s) : strlen(s);
                if (grpc_condition(s, len))
                    any = 1;
                s += len;
                if (*s)
                    s++;
            }
            if (!any)
                msg(rc, owner, XLATE_WARNING, XL_R_UNSUPPORTED,
                    "%s.retries.on: proxyless gRPC clients only retry on cancelled, "
                    "deadline-exceeded, internal, resource-exhausted and unavailable",
                    path);
        }
        long max_routes = rc->ctx->limits.routes_per_vs;
        if (rc->routes.n >= (size_t)max_routes) {
            over_budget(rc, "routes after delegation", max_routes,
                        "--max-routes-per-virtual-service", owner, path, "added one more");
            return;
        }
        struct xl_rroute *out = push_route(rc);
        if (!out)
            return;
        out->kind = r->match.kind;
        out->path = r->match.value;
        out->case_sensitive = r->match.case_sensitive && (in->prefix ? in->case_sensitive : 1);
        struct hdrs hs;
        struct queries qs;
        if (route_matchers(rc, &in->headers, &in->query, r, &hs, &qs) != 0)
            return;
        out->headers = hs.items;
        out->nheaders = hs.n;
        out->query = qs.items;
        out->nquery = qs.n;
        set_route_ext(rc, r, in, out);
        out->cluster = cluster;
        out->wc = wc;
        out->nwc = nwc;
        out->total_weight = (uint32_t)total;
        if (tfrom) {
            out->has_timeout = 1;
            out->timeout_ns = tfrom->timeout_ns;
        }
        if (rfrom) {
            out->has_retries = 1;
            out->retry_attempts = rfrom->retry_attempts;
            out->retry_on = rfrom->retry_on;
        }
        out->prefix_rewrite = r->prefix_rewrite;
        const struct xl_route *hfrom = r->nhash ? r : in->hash_from;
        if (hfrom) {
            struct xl_entry **ups = single ? &single : NULL;
            size_t nups = single ? 1 : 0;
            if (!single && nwc) {
                ups = xlate_alloc(&rc->scratch, r->nweighted * sizeof(*ups));
                if (!ups) {
                    rc->oom = 1;
                    return;
                }
                for (size_t k = 0; k < r->nweighted; k++)
                    if (r->weighted[k].weight)
                        ups[nups++] =
                            xlate_find(rc->ctx, XLATE_KIND_UPSTREAM, r->weighted[k].upstream.ns,
                                       r->weighted[k].upstream.name);
            }
            set_hashes(rc, owner, path, hfrom, ups, nups, out);
        }
    }
}

/* Records that VirtualService |e| (mode |mode|, resolution |serial|) read
 * dependency |key|; a second read by the same resolution adds nothing. */
/* Drops the registrations of resolutions that are gone (their VirtualService
 * was re-resolved, dropped or deleted since). A list is otherwise only freed
 * when its key changes, so a VirtualService re-resolved again and again
 * would grow the lists of everything it reads without bound. Registrations
 * of the resolution in progress (|serial|) stay. */
static void dep_list_compact(struct xlate_ctx *ctx, struct xl_dep_list *l, uint32_t serial)
{
    size_t w = 0;
    for (size_t i = 0; i < l->n; i++) {
        struct xl_dep_item *it = &l->items[i];
        int live = it->serial == serial;
        if (!live) {
            const struct xl_entry *v = xlate_find_key(ctx, XLATE_KIND_VIRTUAL_SERVICE, it->vskey);
            live = v && v->res[it->mode].valid && v->res[it->mode].serial == it->serial;
        }
        if (live)
            l->items[w++] = *it;
        else if (it->vskey != l->vskey0)
            free(it->vskey);
    }
    l->n = w;
}

static int register_dep(struct xlate_ctx *ctx, const char *key, size_t klen, struct xl_entry *e,
                        int mode, uint32_t serial)
{
    struct xl_dep_list *l = cx_map_get(&ctx->deps, key, klen);
    if (!l) {
        /* the list, its key, and its first item with that VirtualService's
         * key: one block */
        l = malloc(sizeof(*l) + klen + 1 + e->keylen + 1);
        if (!l)
            return -1;
        char *k = (char *)(l + 1), *vk = k + klen + 1;
        memcpy(k, key, klen + 1);
        memcpy(vk, e->key, e->keylen + 1);
        l->vskey0 = vk;
        l->first = (struct xl_dep_item){.vskey = vk, .serial = serial, .mode = mode};
        l->items = &l->first;
        l->n = l->cap = 1;
        if (cx_map_put(&ctx->deps, k, klen, l, NULL) != 0) {
            free(l);
            return -1;
        }
        return 0;
    }
    if (l->n && l->items[l->n - 1].serial == serial)
        return 0;
    if (l->n == l->cap)
        dep_list_compact(ctx, l, serial);
    if (l->n == l->cap || (l->cap > 1 && l->n > l->cap / 2)) {
        size_t cap = l->cap ? l->cap * 2 : 1;
        struct xl_dep_item *it;
        if (l->items == &l->first) {
            if ((it = malloc(cap * sizeof(*it))) != NULL)
                memcpy(it, l->items, l->n * sizeof(*it));
        } else {
            it = realloc(l->items, cap * sizeof(*it));
        }
        if (!it)
            return -1;
        l->items = it;
        l->cap = cap;
    }
    char *vk = l->vskey0 && strcmp(l->vskey0, e->key) == 0 ? (char *)l->vskey0 : strdup(e->key);
    if (!vk)
        return -1;
    l->items[l->n++] = (struct xl_dep_item){.vskey = vk, .serial = serial, .mode = mode};
    return 0;
}

static int has_msgs_for(const struct xl_vs_res *r, const struct xl_entry *target)
{
    if (!r->valid)
        return 0;
    for (size_t i = 0; i < r->nmsgs; i++)
        if (r->msgs[i].target == target)
            return 1;
    return 0;
}

void xlate_res_drop(struct xlate_ctx *ctx, struct xl_entry *e, int mode)
{
    struct xl_vs_res *r = &e->res[mode];
    if (!r->valid && !r->vh && !r->nmsgs) {
        xlate_res_clear(r);
        return;
    }
    /* problems this resolution found about RouteTables leave with it */
    for (size_t i = 0; i < r->nmsgs; i++) {
        struct xl_entry *t = r->msgs[i].target;
        if (t == e)
            continue;
        r->valid = 0;
        if (!has_msgs_for(&e->res[!mode], t))
            xlate_list_remove(&t->contrib, e);
        (void)xlate_rep_dirty(ctx, t);
    }
    xlate_res_clear(r);
}

/* The first route's Upstream of item |j| of |l| (NULL past the end, or
 * when the route names none: a delegation or a redirect). */
static const struct xl_ref *first_ref(const struct xl_entry_list *l, size_t j)
{
    if (j >= l->n)
        return NULL;
    const struct xl_virtual_service *vs = &l->items[j]->obj->u.vs;
    const struct xl_ref *r = vs->nroutes ? &vs->routes[0].upstream : NULL;
    return r && r->name && r->ns ? r : NULL;
}

void xlate_resolve_prefetch(struct xlate_ctx *ctx, const struct xl_entry_list *l, size_t i)
{
    const struct xl_virtual_service *vs;
    const struct xl_ref *r;
    char key[600];
    size_t n;
    if (i + 12 < l->n && (vs = &l->items[i + 12]->obj->u.vs)->nroutes)
        __builtin_prefetch(&vs->routes[0].upstream);
    if ((r = first_ref(l, i + 8))) {
        __builtin_prefetch(r->name);
        __builtin_prefetch(r->ns);
    }
    /* "U/ns/name": the dependency, and after "U/" the Upstream's key */
    if ((r = first_ref(l, i + 4)) && (n = dep_key(key, sizeof(key), 'U', r->ns, r->name))) {
        cx_map_prefetch(&ctx->deps, key, n);
        cx_map_prefetch(&ctx->by_key[XLATE_KIND_UPSTREAM], key + 2, n - 2);
    }
    if ((r = first_ref(l, i + 2)) && (n = dep_key(key, sizeof(key), 'U', r->ns, r->name))) {
        cx_map_prefetch_entry(&ctx->deps, key, n);
        cx_map_prefetch_entry(&ctx->by_key[XLATE_KIND_UPSTREAM], key + 2, n - 2);
    }
}

int xlate_resolve_vs(struct xlate_ctx *ctx, struct xl_entry *e, enum xlate_gateway_mode mode)
{
    struct xl_vs_res *res = &e->res[mode];
    xlate_res_drop(ctx, e, mode);
    /* the serial first: dependencies are registered under it as they are read */
    res->serial = ++ctx->res_serial;
    struct rctx rc = {.ctx = ctx,
                      .vs = e,
                      .mode = mode,
                      .res = res,
                      .routes = {ctx->rroutes, 0, ctx->caprroutes},
                      .scratch = ctx->rscratch};
    const struct xl_virtual_service *vs = &e->obj->u.vs;
    struct inherit top = {.case_sensitive = 1};
    expand_routes(&rc, e, vs->routes, vs->nroutes, &top);
    if (mode == XLATE_MODE_PROXYLESS && vs->ext) {
        const struct xl_vs_ext *x = vs->ext;
        const char *what[3];
        size_t nw = 0;
        if (x->require_tls)
            what[nw++] = "spec.requireTls";
        if (x->cors)
            what[nw++] = "spec.cors";
        if (x->rl)
            what[nw++] = "spec.rateLimit";
        if (nw)
            msg(&rc, e, XLATE_WARNING, XL_R_UNSUPPORTED,
                "%s%s%s%s%s: left out for proxyless gRPC clients (they ignore require_tls and "
                "have no CORS nor local rate limit filter)",
                what[0], nw > 1 ? ", " : "", nw > 1 ? what[1] : "", nw > 2 ? ", " : "",
                nw > 2 ? what[2] : "");
    }
    if (mode == XLATE_MODE_PROXYLESS && vs->ext && vs->ext->nlisteners)
        msg(&rc, e, XLATE_WARNING, XL_R_UNSUPPORTED,
            "spec.listeners: ignored for proxyless gRPC clients (they open no listener: every "
            "proxyless Gateway selecting it serves it)");
    if (mode == XLATE_MODE_PROXYLESS)
        for (size_t i = 0; i < vs->ndomains; i++)
            if (strchr(vs->domains[i], '*'))
                msg(&rc, e, XLATE_WARNING, XL_R_UNSUPPORTED,
                    "spec.domains[%zu]: \"%s\" is a wildcard; proxyless gRPC clients dial exact "
                    "names, so no Listener is created for it",
                    i, vs->domains[i]);
    int rcode = -1;
    if (rc.oom)
        goto out;
    if (!rc.over && rc.routes.n) {
        long max_bytes = ctx->limits.resource_bytes;
        /* proxyless clients get none of the host-wide settings (ignored,
         * or NACKed for filters they lack) */
        const struct xl_vs_ext *x = mode == XLATE_MODE_PROXYLESS ? NULL : vs->ext;
        int er =
            xlate_encode_vhost_ex(e->key, vs->domains, vs->ndomains, rc.routes.items, rc.routes.n,
                                  x, mode, (size_t)max_bytes, &res->vh, &res->vhlen);
        if (er == -2) {
            rc.over = 1;
            snprintf(rc.over_msg, sizeof(rc.over_msg),
                     "its VirtualHost encodes to more than %ld bytes (--max-resource-bytes %ld) "
                     "with %zu routes; nothing of this VirtualService is served",
                     max_bytes, max_bytes, rc.routes.n);
        } else if (er != 0) {
            goto out;
        }
    }
    if (rc.over) {
        /* a budget Rejects the VirtualService: no route of it is kept */
        rc.routes.n = 0;
        res->over_budget = 1;
        msg(&rc, e, XLATE_REJECTED, XL_R_BUDGET, "%s", rc.over_msg);
        if (rc.oom)
            goto out;
    }
    res->nroutes = rc.routes.n;
    if (rc.routes.n) {
        uint8_t h[CX_SHA256_LEN];
        cx_sha256_with(ctx->sha, res->vh, res->vhlen, h);
        memcpy(res->vh_hash, h, sizeof(res->vh_hash));
        ctx->stats.vhosts_built++;
    }
    res->valid = 1;
    int served = res->nroutes > 0;
    uint64_t ck = xlate_fnv(vs->claim_hash, &served, sizeof(served));
    /* the listeners it names decide which Gateways take its claims */
    for (size_t i = 0; vs->ext && i < vs->ext->nlisteners; i++)
        ck = xlate_fnv_str(ck, vs->ext->listeners[i]);
    if (ck != e->claim_key[mode]) {
        e->claim_key[mode] = ck;
        e->claim_changed[mode] = ctx->pass;
    }
    for (size_t i = 0; i < res->nmsgs; i++) {
        struct xl_entry *t = res->msgs[i].target;
        if (t == e)
            continue;
        int found = 0;
        for (size_t k = 0; k < t->contrib.n; k++)
            found |= t->contrib.items[k] == e;
        if ((!found && xlate_list_push(&t->contrib, e) != 0) || xlate_rep_dirty(ctx, t) != 0)
            goto out;
    }
    rcode = 0;
out:
    /* the route list and the scratch arena serve the next resolution */
    ctx->rroutes = rc.routes.items;
    ctx->caprroutes = rc.routes.cap;
    xlate_arena_reset(&rc.scratch);
    ctx->rscratch = rc.scratch;
    if (rcode != 0)
        xlate_res_drop(ctx, e, mode);
    return rcode;
}
