/*
 * xlate_route: the route features beyond matching a path and forwarding to
 * Upstreams: redirects, request and response header changes, host and
 * regex rewrites, query-parameter and method matching. Their parsed form
 * hangs off struct xl_route (ext, NULL for the many routes that use none,
 * so a route's record stays small); the parse (xlate_route_parse.c) checks
 * them against what Envoy accepts, the encoders (xlate_route_enc.c) write
 * them into a VirtualHost being written back to front (common/cx_wire).
 *
 * Internal to the translator; pure; thread-safe.
 */
#ifndef XLATE_ROUTE_H
#define XLATE_ROUTE_H

#include "xlate_api_parse.h"
#include "xlate_encode.h"

#include "cx_wire.h"

#include <stdint.h>

#define XLATE_MAX_HEADER_OPS   32    /* set + add, and remove, each, per direction */
#define XLATE_MAX_QUERY        16    /* match.queryParams entries */
#define XLATE_MAX_HEADER_VALUE 16384 /* Envoy's HeaderValue max_bytes */

/* HeaderValueOption.append_action values (envoy.config.core.v3). */
enum xl_append_action {
    XL_APPEND_IF_EXISTS_OR_ADD = 0,    /* add: one more value */
    XL_OVERWRITE_IF_EXISTS_OR_ADD = 2, /* set: replaces every value */
};

struct xl_header_op {
    char *name;
    char *value;
    enum xl_append_action action;
};

/* requestHeaders / responseHeaders: set and add (in spec order: set first),
 * then remove. */
struct xl_header_ops {
    struct xl_header_op *ops;
    size_t nops;
    char **remove;
    size_t nremove;
};

enum xl_query_kind {
    XL_QUERY_PRESENT = 0,
    XL_QUERY_EXACT = 1,
    XL_QUERY_PREFIX = 2,
    XL_QUERY_REGEX = 3,
};

struct xl_query {
    char *name;
    char *value; /* NULL for present */
    enum xl_query_kind kind;
    int ignore_case;
};

/* RedirectAction; the response code is Envoy's RedirectResponseCode. */
enum xl_redirect_scheme {
    XL_SCHEME_KEEP = 0,
    XL_SCHEME_HTTPS = 1, /* https_redirect */
    XL_SCHEME_HTTP = 2,  /* scheme_redirect "http" */
};

struct xl_redirect {
    enum xl_redirect_scheme scheme;
    char *host;      /* or NULL */
    uint32_t port;   /* 0: kept */
    char *path;      /* path_redirect, or NULL */
    char *prefix;    /* prefix_rewrite, or NULL */
    int code;        /* RedirectResponseCode: 0 = 301, 1 = 302, 2 = 303, 3 = 307, 4 = 308 */
    int strip_query; /* strip_query */
};

/* HTTP methods a route may match (match.methods), as bits. */
enum {
    XL_M_GET = 1 << 0,
    XL_M_HEAD = 1 << 1,
    XL_M_POST = 1 << 2,
    XL_M_PUT = 1 << 3,
    XL_M_DELETE = 1 << 4,
    XL_M_CONNECT = 1 << 5,
    XL_M_OPTIONS = 1 << 6,
    XL_M_TRACE = 1 << 7,
    XL_M_PATCH = 1 << 8,
};

struct xl_route_ext {
    int has_redirect;
    struct xl_redirect redirect;
    int has_req, has_resp; /* requestHeaders / responseHeaders written */
    struct xl_header_ops req, resp;
    char *host_rewrite;                /* host_rewrite_literal, or NULL */
    int auto_host;                     /* auto_host_rewrite */
    char *regex_pattern, *regex_subst; /* regex_rewrite, or NULL */
    struct xl_rate_limit *rl;          /* rateLimit, or NULL */
    struct xl_query *query;
    size_t nquery;
    unsigned methods; /* XL_M_* bits; 0: any */
    /* the ":method" HeaderMatcher methods become (Envoy mode) */
    struct xl_header method_header;
};

#define XLATE_MAX_CORS 32 /* entries of each cors list */

/* An allowed CORS origin: exact ("*": any) or an RE2 regex. */
struct xl_origin {
    char *value;
    int regex;
};

/* CorsPolicy (envoy.extensions.filters.http.cors.v3). */
struct xl_cors {
    struct xl_origin *origins;
    size_t norigins;
    char *methods, *headers, *expose; /* comma-joined, or NULL */
    int64_t max_age_s;
    int has_max_age;
    int credentials; /* 0: unset, 1: true, 2: false */
};

/* A local rate limit: a token bucket of |burst| tokens refilled with
 * |requests| tokens every |per_ns|. */
struct xl_rate_limit {
    uint32_t requests, burst;
    int64_t per_ns;
};

/* What a VirtualService sets for its whole VirtualHost. */
struct xl_vs_ext {
    int require_tls; /* VirtualHost.require_tls ALL */
    struct xl_cors *cors;
    struct xl_rate_limit *rl;
    /* spec.listeners: the names of the Gateway listeners serving it (none:
     * every listener) */
    char **listeners;
    size_t nlisteners;
};

#define XL_CORS_FILTER_NAME            "envoy.filters.http.cors"
#define XL_LOCAL_RATELIMIT_FILTER_NAME "envoy.filters.http.local_ratelimit"
#define XL_LOCAL_RATELIMIT_STAT_PREFIX "http_local_rate_limiter"
#define XL_FILE_ACCESS_LOG_NAME        "envoy.access_loggers.file"
#define XL_TYPE_URL_CORS               "type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors"
#define XL_TYPE_URL_CORS_POLICY \
    "type.googleapis.com/envoy.extensions.filters.http.cors.v3.CorsPolicy"
#define XL_TYPE_URL_LOCAL_RATELIMIT \
    "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit"
#define XL_TYPE_URL_FILE_ACCESS_LOG \
    "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog"

/* ---- parse (xlate_route_parse.c) ---------------------------------------- */

/* r->ext, allocated (zeroed) on first use; NULL when memory ran out. */
struct xl_route_ext *xlate_route_ext(struct pctx *p, struct xl_route *r);

/* match.queryParams and match.methods (|q|, |m|: the members, or NULL). */
void xlate_parse_route_match_ext(struct pctx *p, const cJSON *q, const cJSON *m,
                                 struct xl_route *r);

/* The members of a route this module owns, as xlate_fields() found them. */
struct xl_route_members {
    const cJSON *redirect, *req, *resp, *host_rewrite, *auto_host, *regex_rewrite, *rate_limit;
};

/* Parses them into r->ext; refuses what Envoy would (a redirect that
 * changes nothing, header names Envoy will not touch, a substitution naming
 * a group the pattern lacks...) and what does not go together (a redirect
 * with forwarding settings, prefixRewrite with regexRewrite). Call after
 * the action and prefixRewrite are parsed. */
void xlate_parse_route_ext(struct pctx *p, const struct xl_route_members *m, struct xl_route *r);

/* Checks |s| as an Envoy substitution format string (header values and
 * access-log formats): every "%" opens a command operator
 * "%NAME%", "%NAME(args)%" or "%NAME(args):N%", NAME of A-Z, 0-9 and "_".
 * Returns NULL or why not (a static string). */
const char *xlate_format_problem(const char *s);

/* A VirtualService's requireTls, cors, rateLimit and listeners (the
 * members, or NULL) into vs->ext. */
void xlate_parse_vs_ext(struct pctx *p, const cJSON *require_tls, const cJSON *cors,
                        const cJSON *rate_limit, const cJSON *listeners,
                        struct xl_virtual_service *vs);

/* xlate_vhost_filters.c: a rateLimit object (|v|: the member, or NULL) in
 * the arena, or NULL; cors and rateLimit of a VirtualService into |x|;
 * a Gateway's accessLog. */
struct xl_rate_limit *xlate_parse_rate_limit(struct pctx *p, const cJSON *v);
void xlate_parse_vs_filters(struct pctx *p, const cJSON *cors, const cJSON *rate_limit,
                            struct xl_vs_ext *x);
void xlate_parse_access_logs(struct pctx *p, const cJSON *v, struct xl_gateway *g);

/* spec.listeners of a Gateway (xlate_listeners.c), after its mode,
 * bindAddress and tls are parsed; |has_port|: bindPort was written. */
void xlate_parse_gateway_listeners(struct pctx *p, const cJSON *v, struct xl_gateway *g,
                                   int has_port);

/* ---- encoding (xlate_route_enc.c): each writes its fields back to front - */

/* envoy.type.matcher.v3.RegexMatcher {google_re2: {}, regex: |re|} as
 * field |field| (xlate_encode.c). */
void xlate_enc_regex(struct cx_wire *w, uint32_t field, const char *re);
/* Route fields 13..9 (the rate limit's typed_per_filter_config,
 * request/response headers to add and remove). */
void xlate_enc_route_headers(struct cx_wire *w, const struct xl_rroute *r);
/* Route.redirect (3). */
void xlate_enc_redirect(struct cx_wire *w, const struct xl_redirect *rd);
/* RouteMatch.query_parameters (7). */
void xlate_enc_query(struct cx_wire *w, const struct xl_rroute *r);
/* RouteAction.regex_rewrite (32). */
void xlate_enc_regex_rewrite(struct cx_wire *w, const struct xl_rroute *r);
/* RouteAction.auto_host_rewrite (7) and host_rewrite_literal (6). */
void xlate_enc_host_rewrite(struct cx_wire *w, const struct xl_rroute *r);
/* typed_per_filter_config entries (field |field|: 15 of a VirtualHost, 13
 * of a Route) for |cors| and |rl| (either may be NULL). */
void xlate_enc_filter_configs(struct cx_wire *w, uint32_t field, const struct xl_cors *cors,
                              const struct xl_rate_limit *rl);
/* VirtualHost fields after routes (3): require_tls (4) and the
 * typed_per_filter_config (15) of |x| (NULL: none). */
void xlate_enc_vhost_ext(struct cx_wire *w, const struct xl_vs_ext *x);

#endif
