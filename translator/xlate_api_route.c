/*
 * Routes of VirtualServices and RouteTables: matches (path, headers),
 * actions (upstream, weighted, delegate), timeouts, retries, rewrites.
 */
#include "xlate_api_parse.h"

#include "filter_selector.h"
#include "xlate_route.h"

#include <string.h>

/* ---- routes -------------------------------------------------------------- */

static void parse_ref(struct pctx *p, const cJSON *v, struct xl_ref *ref)
{
    static const char *const allowed[] = {"name", "namespace", NULL};
    const cJSON *f[2];
    xlate_fields(p, v, allowed, f);
    if (str_v(p, f[0], "name", 1, &ref->name) == 1 && !cx_kname_is_subdomain(ref->name)) {
        size_t o = push_lit(p, ".name");
        REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not a valid object name", ref->name);
        pop(p, o);
    }
    if (str_v(p, f[1], "namespace", 0, &ref->ns) == 1 && !cx_kname_is_label(ref->ns)) {
        size_t o = push_lit(p, ".namespace");
        REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not a valid namespace name", ref->ns);
        pop(p, o);
    }
    if (!ref->ns)
        ref->ns = p->o->meta.ns;
    const struct xl_ref *last = p->last_ref;
    if (last && ref->name && last->name && strcmp(last->name, ref->name) == 0)
        ref->name = last->name;
    if (last && ref->ns && last->ns && strcmp(last->ns, ref->ns) == 0)
        ref->ns = last->ns;
    p->last_ref = ref;
}

static void parse_match(struct pctx *p, const cJSON *v, struct xl_route *r)
{
    static const char *const allowed[] = {"prefix",        "path",        "regex",   "headers",
                                          "caseSensitive", "queryParams", "methods", NULL};
    struct xl_match *m = &r->match;
    m->kind = XL_PATH_PREFIX;
    m->value = "/";
    m->case_sensitive = 1;
    if (!v)
        return;
    const cJSON *f[7];
    xlate_fields(p, v, allowed, f);
    xlate_parse_route_match_ext(p, f[5], f[6], r);
    char *prefix = NULL, *path = NULL, *regex = NULL;
    int np = str_v(p, f[0], "prefix", 0, &prefix) == 1;
    int nx = str_v(p, f[1], "path", 0, &path) == 1;
    int nr = str_v(p, f[2], "regex", 0, &regex) == 1;
    if (np + nx + nr > 1) {
        REJECT(p, XL_R_INVALID_SPEC, "prefix, path and regex are mutually exclusive");
    } else if (np) {
        m->value = prefix;
        if (prefix[0] != '/') {
            size_t o = push_lit(p, ".prefix");
            REJECT(p, XL_R_INVALID_SPEC, "must start with \"/\", got \"%s\"", prefix);
            pop(p, o);
        }
    } else if (nx) {
        m->kind = XL_PATH_EXACT;
        m->value = path;
        if (path[0] != '/') {
            size_t o = push_lit(p, ".path");
            REJECT(p, XL_R_INVALID_SPEC, "must start with \"/\", got \"%s\"", path);
            pop(p, o);
        }
    } else if (nr) {
        m->kind = XL_PATH_REGEX;
        m->value = regex;
        size_t o = push_lit(p, ".regex");
        m->regex_prefix = xlate_check_regex(p, regex);
        pop(p, o);
    }
    if (m->value && xlate_has_ctl(m->value))
        REJECT(p, XL_R_INVALID_SPEC, "the path must not contain control characters");
    if (bool_v(p, f[4], "caseSensitive", &m->case_sensitive) == 1)
        m->has_case = 1;
    const cJSON *hs = arr_v(p, f[3], "headers", 0, XLATE_MAX_HEADERS);
    if (!hs)
        return;
    m->nheaders = cx_json_count(hs);
    m->headers = palloc(p, m->nheaders * sizeof(*m->headers));
    if (!m->headers)
        return;
    size_t i = 0;
    const cJSON *h;
    cJSON_ArrayForEach(h, hs)
    {
        struct xl_header *x = &m->headers[i];
        size_t o = xlate_path_push(p, ".headers[%zu]", i++);
        if (!cJSON_IsObject(h)) {
            REJECT(p, XL_R_INVALID_SPEC, "must be an object, got %s", jtype(h));
            pop(p, o);
            continue;
        }
        static const char *const hallowed[] = {"name",    "exact",  "prefix", "regex",
                                               "present", "invert", NULL};
        const cJSON *hf[6];
        xlate_fields(p, h, hallowed, hf);
        if (str_v(p, hf[0], "name", 1, &x->name) == 1 && !xlate_header_name_ok(x->name)) {
            size_t o2 = push_lit(p, ".name");
            REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not a valid header name", x->name);
            pop(p, o2);
        }
        char *exact = NULL, *pre = NULL, *re = NULL;
        int present = 0;
        int ne = str_v(p, hf[1], "exact", 0, &exact) == 1;
        int npf = str_v(p, hf[2], "prefix", 0, &pre) == 1;
        int nre = str_v(p, hf[3], "regex", 0, &re) == 1;
        int npr = bool_v(p, hf[4], "present", &present) == 1;
        if (ne + npf + nre + npr > 1) {
            REJECT(p, XL_R_INVALID_SPEC, "exact, prefix, regex and present are mutually exclusive");
        } else if (ne) {
            x->kind = XL_HDR_EXACT;
            x->value = exact;
        } else if (npf) {
            x->kind = XL_HDR_PREFIX;
            x->value = pre;
            if (!pre[0]) {
                size_t o2 = push_lit(p, ".prefix");
                REJECT(p, XL_R_INVALID_SPEC, "must not be empty (use present: true)");
                pop(p, o2);
            }
        } else if (nre) {
            x->kind = XL_HDR_REGEX;
            x->value = re;
            size_t o2 = push_lit(p, ".regex");
            (void)xlate_check_regex(p, re);
            pop(p, o2);
        } else {
            x->kind = XL_HDR_PRESENT;
            if (npr && !present) {
                size_t o2 = push_lit(p, ".present");
                REJECT(p, XL_R_INVALID_SPEC,
                       "present: false matches nothing; use present: true with invert: true "
                       "to require the header to be absent");
                pop(p, o2);
            }
        }
        if (x->value && xlate_has_ctl(x->value))
            REJECT(p, XL_R_INVALID_SPEC, "the header value must not contain control characters");
        bool_v(p, hf[5], "invert", &x->invert);
        pop(p, o);
    }
}

/* Envoy's x-envoy-retry-on and x-envoy-retry-grpc-on conditions. */
static const char *const retry_conditions[] = {
    "5xx",
    "gateway-error",
    "reset",
    "reset-before-request",
    "connect-failure",
    "envoy-ratelimited",
    "retriable-4xx",
    "refused-stream",
    "retriable-status-codes",
    "retriable-headers",
    "http3-post-connect-failure",
    "cancelled",
    "deadline-exceeded",
    "internal",
    "resource-exhausted",
    "unavailable",
    NULL,
};

static void parse_retries(struct pctx *p, const cJSON *v, struct xl_route *r)
{
    static const char *const allowed[] = {"attempts", "on", NULL};
    xlate_check_fields(p, v, allowed);
    uint64_t attempts = 1;
    get_uint(p, v, "attempts", 0, 1, 100, XL_R_INVALID_SPEC, &attempts);
    r->retry_attempts = (uint32_t)attempts;
    r->has_retries = 1;
    char *on = NULL;
    if (get_str(p, v, "on", 0, &on) != 1) {
        r->retry_on = "5xx";
        return;
    }
    r->retry_on = on;
    size_t o = push_lit(p, ".on");
    /* a comma-separated list; every item must be a known condition */
    const char *s = on;
    if (!*s)
        REJECT(p, XL_R_INVALID_SPEC, "must name at least one condition");
    while (*s) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        int ok = 0;
        for (const char *const *c = retry_conditions; *c; c++)
            if (strlen(*c) == n && strncmp(*c, s, n) == 0)
                ok = 1;
        if (!ok) {
            REJECT(p, XL_R_INVALID_SPEC,
                   "unknown retry condition \"%.*s\" (known: 5xx, gateway-error, reset, "
                   "connect-failure, retriable-4xx, refused-stream, retriable-status-codes, "
                   "cancelled, deadline-exceeded, internal, resource-exhausted, unavailable, ...)",
                   (int)(n > 64 ? 64 : n), s);
            break;
        }
        s += n;
        if (*s == ',')
            s++;
    }
    pop(p, o);
}

/* One hashPolicy entry: exactly one of header, cookie, sourceIP (true) or
 * queryParameter, and terminal. Names are HTTP tokens (a header may be a
 * pseudo header such as :authority); a cookie's ttl is >= 0 (0: a session
 * cookie) and its path starts with "/". */
static void parse_hash(struct pctx *p, const cJSON *v, struct xl_hash_policy *h)
{
    static const char *const allowed[] = {"header",         "cookie",   "sourceIP",
                                          "queryParameter", "terminal", NULL};
    if (!cJSON_IsObject(v)) {
        REJECT(p, XL_R_INVALID_SPEC, "must be an object, got %s", jtype(v));
        return;
    }
    const cJSON *f[5];
    xlate_fields(p, v, allowed, f);
    bool_v(p, f[4], "terminal", &h->terminal);
    int n = !!f[0] + !!f[1] + !!f[2] + !!f[3];
    if (n != 1) {
        REJECT(p, XL_R_INVALID_SPEC,
               n ? "header, cookie, sourceIP and queryParameter are mutually exclusive"
                 : "one of header, cookie, sourceIP or queryParameter is required");
        return;
    }
    if (f[0]) {
        h->kind = XL_HASH_HEADER;
        if (str_v(p, f[0], "header", 1, &h->name) == 1) {
            if (!xlate_header_name_ok(h->name))
                REJECT_AT(p, "header", XL_R_INVALID_SPEC, "\"%s\" is not a valid header name",
                          h->name);
            /* header names are case-insensitive; gRPC metadata keys are
             * lower case and compared as they are */
            for (char *c = h->name; c && *c; c++)
                if (*c >= 'A' && *c <= 'Z')
                    *c = (char)(*c - 'A' + 'a');
        }
    } else if (f[2]) {
        h->kind = XL_HASH_SOURCE_IP;
        int on = 0;
        if (bool_v(p, f[2], "sourceIP", &on) == 1 && !on)
            REJECT_AT(p, "sourceIP", XL_R_INVALID_SPEC,
                      "false hashes nothing; leave the entry out");
    } else if (f[3]) {
        h->kind = XL_HASH_QUERY;
        if (str_v(p, f[3], "queryParameter", 1, &h->name) == 1 && xlate_has_ctl(h->name))
            REJECT_AT(p, "queryParameter", XL_R_INVALID_SPEC,
                      "must not contain control characters");
    } else {
        h->kind = XL_HASH_COOKIE;
        const cJSON *c = obj_v(p, f[1], "cookie", 1);
        if (!c)
            return;
        size_t o = push_lit(p, ".cookie");
        static const char *const callowed[] = {"name", "ttl", "path", NULL};
        xlate_check_fields(p, c, callowed);
        if (get_str(p, c, "name", 1, &h->name) == 1 &&
            (h->name[0] == ':' || !xlate_header_name_ok(h->name)))
            REJECT_AT(p, "name", XL_R_INVALID_SPEC, "\"%s\" is not a valid cookie name", h->name);
        if (get_duration(p, c, "ttl", &h->cookie_ttl_ns) == 1) {
            h->has_ttl = 1;
            if (h->cookie_ttl_ns < 0)
                REJECT_AT(p, "ttl", XL_R_INVALID_SPEC, "must not be negative");
        }
        if (get_str(p, c, "path", 0, &h->cookie_path) == 1 &&
            (h->cookie_path[0] != '/' || xlate_has_ctl(h->cookie_path) ||
             strchr(h->cookie_path, ';')))
            REJECT_AT(p, "path", XL_R_INVALID_SPEC,
                      "must start with \"/\" and hold no control character nor \";\"");
        pop(p, o);
    }
}

static void parse_hashes(struct pctx *p, const cJSON *v, struct xl_route *r)
{
    const cJSON *arr = arr_v(p, v, "hashPolicy", 0, XLATE_MAX_HASH);
    if (!arr)
        return;
    r->nhash = cx_json_count(arr);
    if (!r->nhash) {
        REJECT_AT(p, "hashPolicy", XL_R_INVALID_SPEC, "must not be empty");
        return;
    }
    r->hash = palloc(p, r->nhash * sizeof(*r->hash));
    if (!r->hash) {
        r->nhash = 0;
        return;
    }
    memset(r->hash, 0, r->nhash * sizeof(*r->hash));
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        size_t o = xlate_path_push(p, ".hashPolicy[%zu]", i);
        parse_hash(p, e, &r->hash[i++]);
        pop(p, o);
    }
}

static void parse_route(struct pctx *p, const cJSON *v, struct xl_route *r)
{
    static const char *const allowed[] = {
        "match",           "upstream",       "weighted",        "delegate",
        "timeout",         "retries",        "prefixRewrite",   "hashPolicy",
        "redirect",        "requestHeaders", "responseHeaders", "hostRewrite",
        "autoHostRewrite", "regexRewrite",   "rateLimit",       NULL};
    if (!cJSON_IsObject(v)) {
        REJECT(p, XL_R_INVALID_SPEC, "must be an object, got %s", jtype(v));
        return;
    }
    enum {
        F_MATCH,
        F_UPSTREAM,
        F_WEIGHTED,
        F_DELEGATE,
        F_TIMEOUT,
        F_RETRIES,
        F_REWRITE,
        F_HASH,
        F_REDIRECT,
        F_REQ,
        F_RESP,
        F_HOST,
        F_AUTO_HOST,
        F_REGEX_REWRITE,
        F_RATE_LIMIT,
    };
    const cJSON *f[15];
    xlate_fields(p, v, allowed, f);
    const cJSON *m = obj_v(p, f[F_MATCH], "match", 0);
    size_t o = push_lit(p, ".match");
    parse_match(p, m, r);
    pop(p, o);

    const cJSON *up = f[F_UPSTREAM], *w = f[F_WEIGHTED], *d = f[F_DELEGATE];
    int nact = !!up + !!w + !!d + !!f[F_REDIRECT];
    if (nact == 0) {
        REJECT(p, XL_R_INVALID_SPEC, "one of upstream, weighted, delegate or redirect is required");
    } else if (nact > 1) {
        REJECT(p, XL_R_INVALID_SPEC,
               "upstream, weighted, delegate and redirect are mutually exclusive");
    } else if (f[F_REDIRECT]) {
        r->action = XL_ACT_REDIRECT; /* parsed with the other extensions, below */
    } else if (up) {
        r->action = XL_ACT_UPSTREAM;
        const cJSON *uo = obj_v(p, up, "upstream", 1);
        o = push_lit(p, ".upstream");
        if (uo)
            parse_ref(p, uo, &r->upstream);
        pop(p, o);
    } else if (w) {
        r->action = XL_ACT_WEIGHTED;
        const cJSON *arr = arr_v(p, w, "weighted", 1, XLATE_MAX_WEIGHTED);
        if (arr) {
            r->nweighted = cx_json_count(arr);
            r->weighted = palloc(p, r->nweighted * sizeof(*r->weighted));
            if (!r->weighted)
                return;
            size_t i = 0;
            const cJSON *e;
            cJSON_ArrayForEach(e, arr)
            {
                struct xl_weighted *x = &r->weighted[i];
                size_t o2 = xlate_path_push(p, ".weighted[%zu]", i++);
                if (!cJSON_IsObject(e)) {
                    REJECT(p, XL_R_INVALID_SPEC, "must be an object, got %s", jtype(e));
                    pop(p, o2);
                    continue;
                }
                static const char *const wallowed[] = {"upstream", "weight", NULL};
                const cJSON *wf[2];
                xlate_fields(p, e, wallowed, wf);
                const cJSON *uo = obj_v(p, wf[0], "upstream", 1);
                size_t o3 = push_lit(p, ".upstream");
                if (uo)
                    parse_ref(p, uo, &x->upstream);
                pop(p, o3);
                uint64_t weight = 1;
                uint_v(p, wf[1], "weight", 0, 0, UINT32_MAX, XL_R_INVALID_WEIGHTS, &weight);
                x->weight = (uint32_t)weight;
                r->weight_sum += weight;
                for (size_t k = 0; k + 1 < i && x->upstream.name; k++)
                    if (r->weighted[k].upstream.name &&
                        strcmp(r->weighted[k].upstream.name, x->upstream.name) == 0 &&
                        strcmp(r->weighted[k].upstream.ns, x->upstream.ns) == 0) {
                        REJECT(p, XL_R_INVALID_SPEC,
                               "upstream %s/%s is listed twice (see weighted[%zu])", x->upstream.ns,
                               x->upstream.name, k);
                        break;
                    }
                pop(p, o2);
            }
            o = push_lit(p, ".weighted");
            if (r->weight_sum == 0)
                REJECT(p, XL_R_INVALID_WEIGHTS, "weights sum to 0: no traffic could be routed");
            else if (r->weight_sum > UINT32_MAX)
                REJECT(p, XL_R_INVALID_WEIGHTS, "weights sum to %llu, more than %u",
                       (unsigned long long)r->weight_sum, UINT32_MAX);
            pop(p, o);
        }
    } else {
        r->action = XL_ACT_DELEGATE;
        const cJSON *dobj = obj_v(p, d, "delegate", 1);
        o = push_lit(p, ".delegate");
        if (dobj) {
            static const char *const dallowed[] = {"name", "namespace", "selector", NULL};
            xlate_check_fields(p, dobj, dallowed);
            int hn = get_str(p, dobj, "name", 0, &r->delegate.name) == 1;
            get_str(p, dobj, "namespace", 0, &r->delegate.ns);
            if (r->delegate.ns && !cx_kname_is_label(r->delegate.ns)) {
                size_t o2 = push_lit(p, ".namespace");
                REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not a valid namespace name",
                       r->delegate.ns);
                pop(p, o2);
            }
            if (!r->delegate.ns)
                r->delegate.ns = p->o->meta.ns;
            const cJSON *sel = get(dobj, "selector");
            if (hn && sel) {
                REJECT(p, XL_R_INVALID_SPEC, "name and selector are mutually exclusive");
            } else if (sel) {
                size_t o2 = push_lit(p, ".selector");
                r->delegate.selector = xlate_parse_selector(p, sel);
                pop(p, o2);
            } else if (!hn) {
                REJECT(p, XL_R_INVALID_SPEC, "one of name or selector is required");
            }
        }
        pop(p, o);
        if (r->match.kind != XL_PATH_PREFIX) {
            o = push_lit(p, ".match");
            REJECT(p, XL_R_INVALID_SPEC, "a delegating route needs a prefix match");
            pop(p, o);
        }
    }
    if (duration_v(p, f[F_TIMEOUT], "timeout", &r->timeout_ns) == 1)
        r->has_timeout = 1;
    const cJSON *rt = obj_v(p, f[F_RETRIES], "retries", 0);
    if (rt) {
        o = push_lit(p, ".retries");
        parse_retries(p, rt, r);
        pop(p, o);
    }
    parse_hashes(p, f[F_HASH], r);
    if (str_v(p, f[F_REWRITE], "prefixRewrite", 0, &r->prefix_rewrite) == 1) {
        o = push_lit(p, ".prefixRewrite");
        if (r->match.kind == XL_PATH_REGEX)
            REJECT(p, XL_R_INVALID_SPEC, "cannot be used with a regex match");
        else if (r->action == XL_ACT_DELEGATE)
            REJECT(p, XL_R_INVALID_SPEC, "cannot be used on a delegating route");
        else if (xlate_has_ctl(r->prefix_rewrite))
            REJECT(p, XL_R_INVALID_SPEC, "must not contain control characters");
        pop(p, o);
    }
    const struct xl_route_members ext = {
        .redirect = f[F_REDIRECT],
        .req = f[F_REQ],
        .resp = f[F_RESP],
        .host_rewrite = f[F_HOST],
        .auto_host = f[F_AUTO_HOST],
        .regex_rewrite = f[F_REGEX_REWRITE],
        .rate_limit = f[F_RATE_LIMIT],
    };
    xlate_parse_route_ext(p, &ext, r);
    if (r->action == XL_ACT_DELEGATE && r->ext &&
        (r->ext->host_rewrite || r->ext->auto_host || r->ext->regex_pattern))
        REJECT(
            p, XL_R_INVALID_SPEC,
            "hostRewrite, autoHostRewrite and regexRewrite cannot be used on a delegating route");
}

/* spec.routes, |v| as xlate_fields() or get() found it. */
void xlate_parse_routes(struct pctx *p, const cJSON *v, struct xl_route **out, size_t *nout)
{
    const cJSON *arr = arr_v(p, v, "routes", 1, XLATE_MAX_ROUTES);
    if (!arr)
        return;
    *nout = cx_json_count(arr);
    *out = palloc(p, *nout * sizeof(**out));
    if (!*out) {
        *nout = 0;
        return;
    }
    size_t i = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, arr)
    {
        size_t o = xlate_path_push(p, ".routes[%zu]", i);
        parse_route(p, r, &(*out)[i]);
        i++;
        pop(p, o);
    }
}
