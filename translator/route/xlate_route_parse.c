/*
 * Route features beyond forwarding (xlate_route.h): redirect,
 * requestHeaders / responseHeaders, hostRewrite / autoHostRewrite,
 * regexRewrite, match.queryParams and match.methods. Each is checked
 * against the validation rules of Envoy's API (route_components.proto,
 * base.proto), so what would be NACKed is Rejected here instead, with the
 * field path.
 */
#include "xlate_route.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

struct xl_route_ext *xlate_route_ext(struct pctx *p, struct xl_route *r)
{
    if (!r->ext) {
        r->ext = palloc(p, sizeof(*r->ext));
        if (r->ext)
            memset(r->ext, 0, sizeof(*r->ext));
    }
    return r->ext;
}

/* ---- substitution format strings ----------------------------------------- */

const char *xlate_format_problem(const char *s)
{
    for (const char *c = s; *c; c++) {
        if (*c != '%')
            continue;
        const char *n = ++c;
        while ((*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_')
            c++;
        if (c == n)
            return "a \"%\" must start a command operator such as %REQ(x-id)% or "
                   "%DOWNSTREAM_REMOTE_ADDRESS% (Envoy has no escape for a lone \"%\")";
        if (*c == '(') {
            while (*c && *c != ')')
                c++;
            if (!*c)
                return "a command operator's \"(\" is not closed";
            c++;
        }
        if (*c == ':') {
            const char *d = ++c;
            while (*c >= '0' && *c <= '9')
                c++;
            if (c == d)
                return "a command operator's \":\" must be followed by a length";
        }
        if (*c != '%')
            return "a command operator is not closed by \"%\"";
    }
    return NULL;
}

/* ---- header changes --------------------------------------------------------- */

/* Envoy refuses to add, set or remove pseudo headers and Host
 * ("':-prefixed' or 'host' headers may not be modified"). */
static int header_modifiable(const char *name)
{
    return name[0] != ':' && strcasecmp(name, "host") != 0;
}

static void lower(char *s)
{
    for (; s && *s; s++)
        if (*s >= 'A' && *s <= 'Z')
            *s = (char)(*s - 'A' + 'a');
}

/* A header name to change: a token, not a pseudo header nor Host; lower
 * case (HTTP/2 names are). Returns 1 when usable. */
static int op_name(struct pctx *p, const cJSON *v, const char *key, char **out)
{
    if (str_v(p, v, key, 1, out) != 1)
        return 0;
    if (!xlate_header_name_ok(*out) || !header_modifiable(*out)) {
        REJECT_AT(p, key, XL_R_INVALID_SPEC,
                  "\"%s\" is not a header name Envoy changes (a token; not a \":\" pseudo "
                  "header nor host)",
                  *out);
        return 0;
    }
    lower(*out);
    return 1;
}

static void parse_op_list(struct pctx *p, const cJSON *arr, const char *key,
                          enum xl_append_action action, struct xl_header_ops *h)
{
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        size_t o = xlate_path_push(p, ".%s", key);
        size_t o2 = xlate_path_push(p, "[%zu]", i++);
        if (!cJSON_IsObject(e)) {
            REJECT(p, XL_R_INVALID_SPEC, "must be an object, got %s", jtype(e));
            pop(p, o);
            continue;
        }
        static const char *const allowed[] = {"name", "value", NULL};
        const cJSON *f[2];
        xlate_fields(p, e, allowed, f);
        struct xl_header_op *op = &h->ops[h->nops++];
        op->action = action;
        op_name(p, f[0], "name", &op->name);
        if (!f[1])
            REJECT_AT(p, "value", XL_R_INVALID_SPEC, "required (it may be \"\")");
        if (str_v(p, f[1], "value", 0, &op->value) == 1) {
            const char *why = NULL;
            if (strlen(op->value) > XLATE_MAX_HEADER_VALUE)
                why = "longer than 16384 bytes (Envoy's HeaderValue limit)";
            else if (strchr(op->value, '\r') || strchr(op->value, '\n'))
                why = "must not contain CR or LF";
            else if (xlate_has_ctl(op->value))
                why = "must not contain control characters";
            else
                why = xlate_format_problem(op->value);
            if (why)
                REJECT_AT(p, "value", XL_R_INVALID_SPEC, "%s", why);
        }
        (void)o2;
        pop(p, o);
    }
}

/* {set: [{name, value}], add: [{name, value}], remove: [name]} */
static void parse_header_ops(struct pctx *p, const cJSON *v, struct xl_header_ops *h)
{
    static const char *const allowed[] = {"set", "add", "remove", NULL};
    const cJSON *f[3];
    xlate_fields(p, v, allowed, f);
    const cJSON *set = arr_v(p, f[0], "set", 0, XLATE_MAX_HEADER_OPS);
    const cJSON *add = arr_v(p, f[1], "add", 0, XLATE_MAX_HEADER_OPS);
    const cJSON *rm = arr_v(p, f[2], "remove", 0, XLATE_MAX_HEADER_OPS);
    size_t nset = set ? cx_json_count(set) : 0, nadd = add ? cx_json_count(add) : 0;
    size_t nrm = rm ? cx_json_count(rm) : 0;
    if (!nset && !nadd && !nrm) {
        REJECT(p, XL_R_INVALID_SPEC, "set, add or remove must list at least one header");
        return;
    }
    if (nset + nadd) {
        h->ops = palloc(p, (nset + nadd) * sizeof(*h->ops));
        if (!h->ops)
            return;
        memset(h->ops, 0, (nset + nadd) * sizeof(*h->ops));
        if (set)
            parse_op_list(p, set, "set", XL_OVERWRITE_IF_EXISTS_OR_ADD, h);
        if (add)
            parse_op_list(p, add, "add", XL_APPEND_IF_EXISTS_OR_ADD, h);
        /* a header set twice: which value wins is the order Envoy applies
         * them, not what anyone meant */
        for (size_t i = 0; i < nset; i++)
            for (size_t k = 0; k < i; k++)
                if (h->ops[i].name && h->ops[k].name && strcmp(h->ops[i].name, h->ops[k].name) == 0)
                    REJECT(p, XL_R_INVALID_SPEC, "set lists header \"%s\" twice", h->ops[i].name);
    }
    if (nrm) {
        h->remove = palloc(p, nrm * sizeof(*h->remove));
        if (!h->remove)
            return;
        const cJSON *e;
        size_t i = 0;
        cJSON_ArrayForEach(e, rm)
        {
            size_t o = xlate_path_push(p, ".remove[%zu]", i);
            h->remove[i] = NULL;
            if (!cJSON_IsString(e)) {
                REJECT(p, XL_R_INVALID_SPEC, "must be a string, got %s", jtype(e));
            } else if (!xlate_header_name_ok(e->valuestring) ||
                       !header_modifiable(e->valuestring)) {
                REJECT(p, XL_R_INVALID_SPEC,
                       "\"%s\" is not a header name Envoy removes (a token; not a \":\" pseudo "
                       "header nor host)",
                       e->valuestring);
            } else {
                h->remove[i] = pstrdup(p, e->valuestring);
                lower(h->remove[i]);
                for (size_t k = 0; k < h->nops; k++)
                    if (h->ops[k].name && h->remove[i] && strcmp(h->ops[k].name, h->remove[i]) == 0)
                        REJECT(p, XL_R_INVALID_SPEC,
                               "header \"%s\" is both added and removed (Envoy removes first, "
                               "then adds)",
                               h->remove[i]);
            }
            i++;
            pop(p, o);
        }
        h->nremove = i;
    }
}

/* ---- redirect ------------------------------------------------------------------ */

static int redirect_code(uint64_t status)
{
    switch (status) {
    case 301:
        return 0; /* MOVED_PERMANENTLY */
    case 302:
        return 1; /* FOUND */
    case 303:
        return 2; /* SEE_OTHER */
    case 307:
        return 3; /* TEMPORARY_REDIRECT */
    case 308:
        return 4; /* PERMANENT_REDIRECT */
    default:
        return -1;
    }
}

/* A host for a Location header: a DNS name or an IP literal ([v6]), no
 * port (that is |port|), path, userinfo or whitespace. */
static int host_ok(const char *h)
{
    if (!*h || strlen(h) > 253)
        return 0;
    if (h[0] == '[') {
        size_t n = strlen(h);
        if (n < 3 || h[n - 1] != ']')
            return 0;
        for (size_t i = 1; i + 1 < n; i++)
            if (!strchr("0123456789abcdefABCDEF:.", h[i]))
                return 0;
        return 1;
    }
    for (const char *c = h; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '-' || *c == '.'))
            return 0;
    return 1;
}

static void parse_redirect(struct pctx *p, const cJSON *v, struct xl_route *r,
                           struct xl_redirect *rd)
{
    static const char *const allowed[] = {"scheme",        "host",       "port",       "path",
                                          "prefixRewrite", "statusCode", "stripQuery", NULL};
    enum { F_SCHEME, F_HOST, F_PORT, F_PATH, F_PREFIX, F_CODE, F_STRIP };
    const cJSON *f[7];
    xlate_fields(p, v, allowed, f);
    const char *scheme = NULL;
    if (str_ref_v(p, f[F_SCHEME], "scheme", 0, &scheme) == 1) {
        if (strcmp(scheme, "https") == 0)
            rd->scheme = XL_SCHEME_HTTPS;
        else if (strcmp(scheme, "http") == 0)
            rd->scheme = XL_SCHEME_HTTP;
        else
            REJECT_AT(p, "scheme", XL_R_INVALID_SPEC, "must be \"http\" or \"https\", got \"%s\"",
                      scheme);
    }
    if (f[F_HOST] && str_v(p, f[F_HOST], "host", 1 /* not empty */, &rd->host) == 1 &&
        !host_ok(rd->host))
        REJECT_AT(p, "host", XL_R_INVALID_SPEC,
                  "\"%s\" is not a host name or IP address (the port goes in port)", rd->host);
    uint64_t port = 0;
    if (uint_v(p, f[F_PORT], "port", 0, 1, 65535, XL_R_INVALID_PORT, &port) == 1)
        rd->port = (uint32_t)port;
    int np = f[F_PATH] && str_v(p, f[F_PATH], "path", 1, &rd->path) == 1;
    int nx = str_v(p, f[F_PREFIX], "prefixRewrite", 0, &rd->prefix) == 1;
    if (np && nx)
        REJECT(p, XL_R_INVALID_SPEC, "path and prefixRewrite are mutually exclusive");
    if (np && (rd->path[0] != '/' || xlate_has_ctl(rd->path)))
        REJECT_AT(p, "path", XL_R_INVALID_SPEC,
                  "must start with \"/\" and hold no control characters");
    if (nx) {
        if (r->match.kind == XL_PATH_REGEX)
            REJECT_AT(p, "prefixRewrite", XL_R_INVALID_SPEC, "cannot be used with a regex match");
        else if (xlate_has_ctl(rd->prefix))
            REJECT_AT(p, "prefixRewrite", XL_R_INVALID_SPEC, "must not contain control characters");
    }
    uint64_t status = 301;
    if (uint_v(p, f[F_CODE], "statusCode", 0, 0, 999, XL_R_INVALID_SPEC, &status) == 1 &&
        redirect_code(status) < 0)
        REJECT_AT(p, "statusCode", XL_R_INVALID_SPEC,
                  "must be 301, 302, 303, 307 or 308 (Envoy's RedirectResponseCode), got %llu",
                  (unsigned long long)status);
    rd->code = redirect_code(status) < 0 ? 0 : redirect_code(status);
    bool_v(p, f[F_STRIP], "stripQuery", &rd->strip_query);
    /* Envoy answers a redirect to where the request already is: a loop */
    if (!rd->scheme && !f[F_HOST] && !rd->port && !f[F_PATH] && !f[F_PREFIX])
        REJECT(p, XL_R_INVALID_SPEC,
               "changes nothing: set at least one of scheme, host, port, path or prefixRewrite");
}

/* ---- rewrites -------------------------------------------------------------------- */

/* RE2's rewrite string rules (RE2::CheckRewriteString): "\\" is a
 * backslash, "\N" group N (0: the whole match), which the pattern must
 * have; nothing else may follow a backslash. */
static const char *subst_problem(const char *s, int groups, char *buf, size_t n)
{
    for (const char *c = s; *c; c++) {
        if (*c != '\\')
            continue;
        c++;
        if (*c == '\\')
            continue;
        if (*c < '0' || *c > '9')
            return "a \"\\\" must be followed by a digit (a group) or another \"\\\"";
        if (*c - '0' > groups) {
            snprintf(buf, n, "names group \\%c but the pattern has %d capturing group%s", *c,
                     groups, groups == 1 ? "" : "s");
            return buf;
        }
    }
    return NULL;
}

static void parse_regex_rewrite(struct pctx *p, const cJSON *v, struct xl_route_ext *x)
{
    static const char *const allowed[] = {"pattern", "substitution", NULL};
    const cJSON *f[2];
    xlate_fields(p, v, allowed, f);
    int groups = -1;
    if (str_v(p, f[0], "pattern", 1, &x->regex_pattern) == 1) {
        size_t o = push_lit(p, ".pattern");
        (void)xlate_check_regex_groups(p, x->regex_pattern, &groups);
        pop(p, o);
    }
    if (str_v(p, f[1], "substitution", 0, &x->regex_subst) == 0)
        REJECT_AT(p, "substitution", XL_R_INVALID_SPEC, "required (it may be \"\")");
    if (x->regex_subst && groups >= 0) {
        char buf[120];
        const char *why = subst_problem(x->regex_subst, groups, buf, sizeof(buf));
        if (!why && xlate_has_ctl(x->regex_subst))
            why = "must not contain control characters";
        if (why)
            REJECT_AT(p, "substitution", XL_R_INVALID_SPEC, "%s", why);
    }
}

void xlate_parse_route_ext(struct pctx *p, const struct xl_route_members *m, struct xl_route *r)
{
    if (!m->redirect && !m->req && !m->resp && !m->host_rewrite && !m->auto_host &&
        !m->regex_rewrite && !m->rate_limit)
        return;
    struct xl_route_ext *x = xlate_route_ext(p, r);
    if (!x)
        return;
    x->rl = xlate_parse_rate_limit(p, m->rate_limit);
    if (m->redirect) {
        const cJSON *rv = obj_v(p, m->redirect, "redirect", 1);
        size_t o = push_lit(p, ".redirect");
        if (rv) {
            x->has_redirect = 1;
            parse_redirect(p, rv, r, &x->redirect);
        }
        pop(p, o);
    }
    const struct {
        const cJSON *v;
        const char *key;
        struct xl_header_ops *h;
        int *has;
    } ops[] = {{m->req, "requestHeaders", &x->req, &x->has_req},
               {m->resp, "responseHeaders", &x->resp, &x->has_resp}};
    for (size_t i = 0; i < 2; i++) {
        const cJSON *hv = obj_v(p, ops[i].v, ops[i].key, 0);
        if (!hv)
            continue;
        size_t o = xlate_path_push(p, ".%s", ops[i].key);
        *ops[i].has = 1;
        parse_header_ops(p, hv, ops[i].h);
        pop(p, o);
    }
    if (m->host_rewrite && str_v(p, m->host_rewrite, "hostRewrite", 1, &x->host_rewrite) == 1 &&
        (xlate_has_ctl(x->host_rewrite) || strchr(x->host_rewrite, ' ') ||
         strchr(x->host_rewrite, '/')))
        REJECT_AT(p, "hostRewrite", XL_R_INVALID_SPEC,
                  "\"%s\" is not a host (no spaces, \"/\" or control characters)", x->host_rewrite);
    if (bool_v(p, m->auto_host, "autoHostRewrite", &x->auto_host) == 1 && !x->auto_host)
        REJECT_AT(p, "autoHostRewrite", XL_R_INVALID_SPEC, "false changes nothing; leave it out");
    if (x->host_rewrite && x->auto_host)
        REJECT(p, XL_R_INVALID_SPEC,
               "hostRewrite and autoHostRewrite are mutually exclusive (RouteAction's "
               "host_rewrite_specifier)");
    const cJSON *rr = obj_v(p, m->regex_rewrite, "regexRewrite", 0);
    if (rr) {
        size_t o = push_lit(p, ".regexRewrite");
        parse_regex_rewrite(p, rr, x);
        pop(p, o);
        if (r->prefix_rewrite)
            REJECT(p, XL_R_INVALID_SPEC,
                   "prefixRewrite and regexRewrite are mutually exclusive (Envoy takes one path "
                   "rewrite)");
    }
    if (x->has_redirect) {
        /* a redirect answers the request itself: nothing is forwarded */
        static const char *const fwd[] = {"hostRewrite", "autoHostRewrite", "regexRewrite",
                                          "requestHeaders"};
        const cJSON *const fv[] = {m->host_rewrite, m->auto_host, m->regex_rewrite, m->req};
        for (size_t i = 0; i < 4; i++)
            if (fv[i])
                REJECT(p, XL_R_INVALID_SPEC,
                       "%s: a redirecting route forwards nothing; only responseHeaders apply "
                       "to it",
                       fwd[i]);
        if (r->prefix_rewrite)
            REJECT(p, XL_R_INVALID_SPEC,
                   "prefixRewrite: a redirecting route forwards nothing (use "
                   "redirect.prefixRewrite)");
        if (r->has_timeout || r->has_retries || r->nhash)
            REJECT(p, XL_R_INVALID_SPEC,
                   "timeout, retries and hashPolicy do not apply to a redirecting route");
    }
}

/* ---- match.queryParams and match.methods ------------------------------------ */

static const struct {
    const char *name;
    unsigned bit;
} methods[] = {
    {"GET", XL_M_GET},         {"HEAD", XL_M_HEAD},     {"POST", XL_M_POST},
    {"PUT", XL_M_PUT},         {"DELETE", XL_M_DELETE}, {"CONNECT", XL_M_CONNECT},
    {"OPTIONS", XL_M_OPTIONS}, {"TRACE", XL_M_TRACE},   {"PATCH", XL_M_PATCH},
};
#define NMETHODS (sizeof(methods) / sizeof(methods[0]))

/* The ":method" matcher |bits| becomes: exact for one method, else an RE2
 * alternation (a full match, as Envoy's safe_regex_match is). */
static void method_header(struct pctx *p, struct xl_route_ext *x)
{
    char buf[80];
    size_t n = 0, count = 0;
    for (size_t i = 0; i < NMETHODS; i++)
        if (x->methods & methods[i].bit) {
            size_t l = strlen(methods[i].name);
            if (count++)
                buf[n++] = '|';
            memcpy(buf + n, methods[i].name, l);
            n += l;
        }
    buf[n] = '\0';
    x->method_header.name = ":method";
    x->method_header.kind = count == 1 ? XL_HDR_EXACT : XL_HDR_REGEX;
    x->method_header.value = pstrdup(p, buf);
}

static void parse_query(struct pctx *p, const cJSON *e, struct xl_query *q)
{
    if (!cJSON_IsObject(e)) {
        REJECT(p, XL_R_INVALID_SPEC, "must be an object, got %s", jtype(e));
        return;
    }
    static const char *const allowed[] = {"name",    "exact",      "prefix", "regex",
                                          "present", "ignoreCase", NULL};
    const cJSON *f[6];
    xlate_fields(p, e, allowed, f);
    if (str_v(p, f[0], "name", 1, &q->name) == 1 &&
        (strlen(q->name) > 1024 || xlate_has_ctl(q->name)))
        REJECT_AT(p, "name", XL_R_INVALID_SPEC,
                  "must be at most 1024 bytes without control characters");
    int present = 0;
    int ne = str_v(p, f[1], "exact", 0, &q->value) == 1;
    int npf = !ne && str_v(p, f[2], "prefix", 0, &q->value) == 1;
    int nre = !ne && !npf && str_v(p, f[3], "regex", 0, &q->value) == 1;
    int npr = bool_v(p, f[4], "present", &present) == 1;
    if (!!f[1] + !!f[2] + !!f[3] + !!f[4] > 1) {
        REJECT(p, XL_R_INVALID_SPEC, "exact, prefix, regex and present are mutually exclusive");
        return;
    }
    bool_v(p, f[5], "ignoreCase", &q->ignore_case);
    if (ne) {
        q->kind = XL_QUERY_EXACT;
    } else if (npf) {
        q->kind = XL_QUERY_PREFIX;
        if (!q->value[0])
            REJECT_AT(p, "prefix", XL_R_INVALID_SPEC, "must not be empty (use present: true)");
    } else if (nre) {
        q->kind = XL_QUERY_REGEX;
        size_t o = push_lit(p, ".regex");
        (void)xlate_check_regex(p, q->value);
        pop(p, o);
    } else {
        q->kind = XL_QUERY_PRESENT;
        if (npr && !present)
            REJECT_AT(p, "present", XL_R_INVALID_SPEC,
                      "false matches nothing (Envoy has no absent match for query parameters)");
    }
    if (q->value && xlate_has_ctl(q->value))
        REJECT(p, XL_R_INVALID_SPEC, "the value must not contain control characters");
    if (q->ignore_case && (q->kind == XL_QUERY_PRESENT || q->kind == XL_QUERY_REGEX))
        REJECT_AT(p, "ignoreCase", XL_R_INVALID_SPEC,
                  "applies to exact and prefix only (use (?i) in a regex)");
}

void xlate_parse_route_match_ext(struct pctx *p, const cJSON *q, const cJSON *m, struct xl_route *r)
{
    const cJSON *qa = arr_v(p, q, "queryParams", 0, XLATE_MAX_QUERY);
    const cJSON *ma = arr_v(p, m, "methods", 0, (int)NMETHODS);
    if (!qa && !ma)
        return;
    struct xl_route_ext *x = xlate_route_ext(p, r);
    if (!x)
        return;
    if (qa && cx_json_count(qa)) {
        x->nquery = cx_json_count(qa);
        x->query = palloc(p, x->nquery * sizeof(*x->query));
        if (!x->query) {
            x->nquery = 0;
            return;
        }
        memset(x->query, 0, x->nquery * sizeof(*x->query));
        size_t i = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, qa)
        {
            size_t o = xlate_path_push(p, ".queryParams[%zu]", i);
            parse_query(p, e, &x->query[i++]);
            pop(p, o);
        }
    }
    if (!ma)
        return;
    if (!cx_json_count(ma))
        REJECT_AT(p, "methods", XL_R_INVALID_SPEC, "must not be empty (leave it out for any)");
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, ma)
    {
        size_t o = xlate_path_push(p, ".methods[%zu]", i++);
        unsigned bit = 0;
        for (size_t k = 0; cJSON_IsString(e) && k < NMETHODS; k++)
            if (strcmp(e->valuestring, methods[k].name) == 0)
                bit = methods[k].bit;
        if (!bit)
            REJECT(p, XL_R_INVALID_SPEC,
                   "must be one of GET, HEAD, POST, PUT, DELETE, CONNECT, OPTIONS, TRACE, PATCH "
                   "(upper case)");
        else if (x->methods & bit)
            REJECT(p, XL_R_INVALID_SPEC, "%s is listed twice", e->valuestring);
        x->methods |= bit;
        pop(p, o);
    }
    if (x->methods)
        method_header(p, x);
}

/* ---- VirtualService: listeners ---------------------------------------------- */

/* spec.listeners: the names of the Gateway listeners that serve it (DNS
 * labels, unique, at most XLATE_MAX_LISTENERS). */
static void parse_vs_listeners(struct pctx *p, const cJSON *v, struct xl_vs_ext *x)
{
    const cJSON *arr = arr_v(p, v, "listeners", 0, XLATE_MAX_LISTENERS);
    if (!arr)
        return;
    size_t n = cx_json_count(arr);
    if (!n) {
        REJECT_AT(p, "listeners", XL_R_INVALID_SPEC,
                  "must not be empty (leave it out to be served on every listener)");
        return;
    }
    if (!(x->listeners = palloc(p, n * sizeof(*x->listeners))))
        return;
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        size_t o = xlate_path_push(p, ".listeners[%zu]", i++);
        if (!cJSON_IsString(e)) {
            REJECT(p, XL_R_INVALID_SPEC, "must be a string, got %s", jtype(e));
        } else if (!cx_kname_is_label(e->valuestring)) {
            REJECT(p, XL_R_INVALID_SPEC, "\"%.64s\" is not a listener name (a DNS label: %s)",
                   e->valuestring, CX_KNAME_LABEL_ERR);
        } else {
            int dup = 0;
            for (size_t k = 0; k < x->nlisteners && !dup; k++)
                dup = strcmp(x->listeners[k], e->valuestring) == 0;
            if (dup)
                REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is listed twice", e->valuestring);
            else
                x->listeners[x->nlisteners++] = pstrdup(p, e->valuestring);
        }
        pop(p, o);
    }
}

/* ---- VirtualService: requireTls -------------------------------------------- */

void xlate_parse_vs_ext(struct pctx *p, const cJSON *require_tls, const cJSON *cors,
                        const cJSON *rate_limit, const cJSON *listeners,
                        struct xl_virtual_service *vs)
{
    if (!require_tls && !cors && !rate_limit && !listeners)
        return;
    if (!(vs->ext = palloc(p, sizeof(*vs->ext))))
        return;
    memset(vs->ext, 0, sizeof(*vs->ext));
    if (bool_v(p, require_tls, "requireTls", &vs->ext->require_tls) == 1 && !vs->ext->require_tls)
        REJECT_AT(p, "requireTls", XL_R_INVALID_SPEC, "false is the default; leave it out");
    xlate_parse_vs_filters(p, cors, rate_limit, vs->ext);
    parse_vs_listeners(p, listeners, vs->ext);
}
