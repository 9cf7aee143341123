/*
 * Encoders of the route features of xlate_route.h, written into a
 * VirtualHost that xlate_encode.c writes back to front: every message's
 * fields last to first, as protobuf-c would pack them first to last (the
 * bytes are protobuf-c's: tests/unit/translator/test_xlate_route.c
 * compares the two). Field numbers are Envoy's (api/proto).
 */
#include "xlate_route.h"

/* envoy.config.core.v3.HeaderValueOption {header: {key, value},
 * append_action, keep_empty_value} as field |field|. */
static void enc_header_option(struct cx_wire *w, uint32_t field, const struct xl_header_op *op)
{
    size_t mark = cx_wire_mark(w);
    if (!op->value[0])
        cx_wire_uint(w, 4, 1); /* keep_empty_value: an empty value is meant */
    if (op->action)
        cx_wire_uint(w, 3, (uint64_t)op->action); /* append_action */
    size_t hv = cx_wire_mark(w);
    cx_wire_str3(w, 2, op->value); /* value */
    cx_wire_str3(w, 1, op->name);  /* key */
    cx_wire_close(w, 1, hv);       /* header */
    cx_wire_close(w, field, mark);
}

void xlate_enc_route_headers(struct cx_wire *w, const struct xl_rroute *r)
{
    enum {
        REQ_ADD = 9,
        RESP_ADD = 10,
        RESP_REMOVE = 11,
        REQ_REMOVE = 12,
    };
    const struct xl_header_ops *q = r->req_headers, *s = r->resp_headers;
    if (r->rate_limit)
        xlate_enc_filter_configs(w, 13, NULL, r->rate_limit); /* typed_per_filter_config */
    if (q)
        for (size_t i = q->nremove; i-- > 0;)
            cx_wire_str(w, REQ_REMOVE, q->remove[i]);
    if (s)
        for (size_t i = s->nremove; i-- > 0;)
            cx_wire_str(w, RESP_REMOVE, s->remove[i]);
    if (s)
        for (size_t i = s->nops; i-- > 0;)
            enc_header_option(w, RESP_ADD, &s->ops[i]);
    if (q)
        for (size_t i = q->nops; i-- > 0;)
            enc_header_option(w, REQ_ADD, &q->ops[i]);
}

void xlate_enc_redirect(struct cx_wire *w, const struct xl_redirect *rd)
{
    enum {
        HOST = 1,
        PATH = 2,
        CODE = 3,
        HTTPS = 4,
        PREFIX = 5,
        STRIP_QUERY = 6,
        SCHEME = 7,
        PORT = 8,
    };
    size_t mark = cx_wire_mark(w);
    if (rd->port)
        cx_wire_uint(w, PORT, rd->port);
    if (rd->scheme == XL_SCHEME_HTTP)
        cx_wire_str(w, SCHEME, "http");
    if (rd->strip_query)
        cx_wire_uint(w, STRIP_QUERY, 1);
    if (rd->prefix)
        cx_wire_str(w, PREFIX, rd->prefix); /* a oneof member: even when "" */
    if (rd->scheme == XL_SCHEME_HTTPS)
        cx_wire_uint(w, HTTPS, 1);
    if (rd->code)
        cx_wire_uint(w, CODE, (uint64_t)rd->code);
    if (rd->path)
        cx_wire_str(w, PATH, rd->path);
    cx_wire_str3(w, HOST, rd->host);
    cx_wire_close(w, 3, mark); /* Route.redirect */
}

/* envoy.type.matcher.v3.StringMatcher as QueryParameterMatcher.string_match. */
static void enc_string_match(struct cx_wire *w, const struct xl_query *q)
{
    size_t mark = cx_wire_mark(w);
    if (q->ignore_case)
        cx_wire_uint(w, 6, 1); /* ignore_case */
    switch (q->kind) {
    case XL_QUERY_REGEX:
        xlate_enc_regex(w, 5, q->value); /* safe_regex */
        break;
    case XL_QUERY_PREFIX:
        cx_wire_str(w, 2, q->value); /* prefix */
        break;
    case XL_QUERY_EXACT:
        cx_wire_str(w, 1, q->value); /* exact: a oneof member, even when "" */
        break;
    case XL_QUERY_PRESENT:
        break;
    }
    cx_wire_close(w, 5, mark); /* string_match */
}

void xlate_enc_query(struct cx_wire *w, const struct xl_rroute *r)
{
    for (size_t i = r->nquery; i-- > 0;) {
        const struct xl_query *q = r->query[i];
        size_t mark = cx_wire_mark(w);
        if (q->kind == XL_QUERY_PRESENT)
            cx_wire_uint(w, 6, 1); /* present_match */
        else
            enc_string_match(w, q);
        cx_wire_str3(w, 1, q->name);
        cx_wire_close(w, 7, mark); /* RouteMatch.query_parameters */
    }
}

void xlate_enc_regex_rewrite(struct cx_wire *w, const struct xl_rroute *r)
{
    if (!r->regex_pattern)
        return;
    size_t mark = cx_wire_mark(w);
    cx_wire_str3(w, 2, r->regex_subst);      /* substitution */
    xlate_enc_regex(w, 1, r->regex_pattern); /* pattern */
    cx_wire_close(w, 32, mark);              /* RouteAction.regex_rewrite */
}

void xlate_enc_host_rewrite(struct cx_wire *w, const struct xl_rroute *r)
{
    if (r->auto_host_rewrite)
        cx_wire_wrapped(w, 7, 1); /* auto_host_rewrite: BoolValue true */
    else if (r->host_rewrite)
        cx_wire_str(w, 6, r->host_rewrite); /* host_rewrite_literal */
}

void xlate_enc_vhost_ext(struct cx_wire *w, const struct xl_vs_ext *x)
{
    if (!x)
        return;
    xlate_enc_filter_configs(w, 15, x->cors, x->rl);
    if (x->require_tls)
        cx_wire_uint(w, 4, 2); /* require_tls: ALL */
}
