/*
 * Route features of translator/route: redirects, header changes, host and
 * regex rewrites, query-parameter and method matching.
 *
 * No Envoy binary exists here, so what the translator writes is checked
 * against Envoy's API: the field numbers, types and oneofs of our .proto
 * subset (api/proto) against envoyproxy/envoy's route_components.proto and
 * base.proto, the validation rules Envoy applies (RedirectAction's oneofs
 * and response_code enum, HeaderValue's name and 16384-byte value,
 * HeaderValueOption's append_action, the headers Envoy refuses to modify,
 * RE2 regex rewrites and their substitution groups, QueryParameterMatcher's
 * name and prefix bounds) as parse verdicts, and the bytes the back-to-front
 * encoder writes against what protobuf-c packs from the same messages.
 */
#include "cxtest.h"
#include "xlate_api.h"
#include "xlate_encode.h"
#include "xlate_route.h"

#include "envoy/config/accesslog/v3/accesslog.pb-c.h"
#include "envoy/config/listener/v3/listener.pb-c.h"
#include "envoy/config/route/v3/route.pb-c.h"
#include "envoy/extensions/access_loggers/file/v3/file.pb-c.h"
#include "envoy/extensions/filters/http/cors/v3/cors.pb-c.h"
#include "envoy/extensions/filters/http/local_ratelimit/v3/local_rate_limit.pb-c.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- our .proto subset against Envoy's ------------------------------------ */

struct field_want {
    const ProtobufCMessageDescriptor *d;
    const char *name;
    unsigned id;
    ProtobufCType type;
    int repeated;
    const char *oneof_with; /* another member of the same oneof, or NULL */
};

static void test_proto_fields_match_envoy(void)
{
    const ProtobufCMessageDescriptor *route = &envoy__config__route__v3__route__descriptor;
    const ProtobufCMessageDescriptor *redir =
        &envoy__config__route__v3__redirect_action__descriptor;
    const ProtobufCMessageDescriptor *act = &envoy__config__route__v3__route_action__descriptor;
    const ProtobufCMessageDescriptor *match = &envoy__config__route__v3__route_match__descriptor;
    const ProtobufCMessageDescriptor *qpm =
        &envoy__config__route__v3__query_parameter_matcher__descriptor;
    const ProtobufCMessageDescriptor *hvo =
        &envoy__config__core__v3__header_value_option__descriptor;
    const ProtobufCMessageDescriptor *hv = &envoy__config__core__v3__header_value__descriptor;
    const ProtobufCMessageDescriptor *sm = &envoy__type__matcher__v3__string_matcher__descriptor;
    const ProtobufCMessageDescriptor *rms =
        &envoy__type__matcher__v3__regex_match_and_substitute__descriptor;
    /* envoy/config/route/v3/route_components.proto, config/core/v3/base.proto,
     * type/matcher/v3/string.proto and regex.proto */
    const struct field_want want[] = {
        {route, "redirect", 3, PROTOBUF_C_TYPE_MESSAGE, 0, "route"},
        {route, "request_headers_to_add", 9, PROTOBUF_C_TYPE_MESSAGE, 1, NULL},
        {route, "response_headers_to_add", 10, PROTOBUF_C_TYPE_MESSAGE, 1, NULL},
        {route, "response_headers_to_remove", 11, PROTOBUF_C_TYPE_STRING, 1, NULL},
        {route, "request_headers_to_remove", 12, PROTOBUF_C_TYPE_STRING, 1, NULL},
        {redir, "host_redirect", 1, PROTOBUF_C_TYPE_STRING, 0, NULL},
        {redir, "path_redirect", 2, PROTOBUF_C_TYPE_STRING, 0, "prefix_rewrite"},
        {redir, "response_code", 3, PROTOBUF_C_TYPE_ENUM, 0, NULL},
        {redir, "https_redirect", 4, PROTOBUF_C_TYPE_BOOL, 0, "scheme_redirect"},
        {redir, "prefix_rewrite", 5, PROTOBUF_C_TYPE_STRING, 0, "regex_rewrite"},
        {redir, "strip_query", 6, PROTOBUF_C_TYPE_BOOL, 0, NULL},
        {redir, "scheme_redirect", 7, PROTOBUF_C_TYPE_STRING, 0, "https_redirect"},
        {redir, "port_redirect", 8, PROTOBUF_C_TYPE_UINT32, 0, NULL},
        {redir, "regex_rewrite", 9, PROTOBUF_C_TYPE_MESSAGE, 0, "path_redirect"},
        {act, "prefix_rewrite", 5, PROTOBUF_C_TYPE_STRING, 0, NULL},
        {act, "host_rewrite_literal", 6, PROTOBUF_C_TYPE_STRING, 0, "auto_host_rewrite"},
        {act, "auto_host_rewrite", 7, PROTOBUF_C_TYPE_MESSAGE, 0, "host_rewrite_literal"},
        {act, "regex_rewrite", 32, PROTOBUF_C_TYPE_MESSAGE, 0, NULL},
        {match, "headers", 6, PROTOBUF_C_TYPE_MESSAGE, 1, NULL},
        {match, "query_parameters", 7, PROTOBUF_C_TYPE_MESSAGE, 1, NULL},
        {qpm, "name", 1, PROTOBUF_C_TYPE_STRING, 0, NULL},
        {qpm, "string_match", 5, PROTOBUF_C_TYPE_MESSAGE, 0, "present_match"},
        {qpm, "present_match", 6, PROTOBUF_C_TYPE_BOOL, 0, "string_match"},
        {sm, "exact", 1, PROTOBUF_C_TYPE_STRING, 0, "prefix"},
        {sm, "prefix", 2, PROTOBUF_C_TYPE_STRING, 0, "safe_regex"},
        {sm, "safe_regex", 5, PROTOBUF_C_TYPE_MESSAGE, 0, "exact"},
        {sm, "ignore_case", 6, PROTOBUF_C_TYPE_BOOL, 0, NULL},
        {hvo, "header", 1, PROTOBUF_C_TYPE_MESSAGE, 0, NULL},
        {hvo, "append_action", 3, PROTOBUF_C_TYPE_ENUM, 0, NULL},
        {hvo, "keep_empty_value", 4, PROTOBUF_C_TYPE_BOOL, 0, NULL},
        {hv, "key", 1, PROTOBUF_C_TYPE_STRING, 0, NULL},
        {hv, "value", 2, PROTOBUF_C_TYPE_STRING, 0, NULL},
        {rms, "pattern", 1, PROTOBUF_C_TYPE_MESSAGE, 0, NULL},
        {rms, "substitution", 2, PROTOBUF_C_TYPE_STRING, 0, NULL},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const struct field_want *w = &want[i];
        const ProtobufCFieldDescriptor *f =
            protobuf_c_message_descriptor_get_field_by_name(w->d, w->name);
        if (!f) {
            cxt_fail(__FILE__, __LINE__, 0, "%s has no field %s", w->d->name, w->name);
            continue;
        }
        CHECK_INT_EQ(f->id, w->id);
        CHECK_INT_EQ(f->type, w->type);
        CHECK_INT_EQ(f->label == PROTOBUF_C_LABEL_REPEATED, w->repeated);
        if (w->oneof_with) {
            const ProtobufCFieldDescriptor *o =
                protobuf_c_message_descriptor_get_field_by_name(w->d, w->oneof_with);
            REQUIRE(o);
            /* members of one oneof share the case field */
            CHECK(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF);
            CHECK_INT_EQ(f->quantifier_offset, o->quantifier_offset);
        } else {
            CHECK(!(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF));
        }
    }
    /* RedirectAction.RedirectResponseCode and HeaderValueOption.HeaderAppendAction */
    const ProtobufCEnumDescriptor *rc =
        &envoy__config__route__v3__redirect_action__redirect_response_code__descriptor;
    const char *codes[] = {"MOVED_PERMANENTLY", "FOUND", "SEE_OTHER", "TEMPORARY_REDIRECT",
                           "PERMANENT_REDIRECT"};
    CHECK_INT_EQ(rc->n_values, 5);
    for (int i = 0; i < 5; i++) {
        const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value_by_name(rc, codes[i]);
        REQUIRE(v);
        CHECK_INT_EQ(v->value, i);
    }
    const ProtobufCEnumDescriptor *aa =
        &envoy__config__core__v3__header_value_option__header_append_action__descriptor;
    CHECK_INT_EQ(protobuf_c_enum_descriptor_get_value_by_name(aa, "APPEND_IF_EXISTS_OR_ADD")->value,
                 XL_APPEND_IF_EXISTS_OR_ADD);
    CHECK_INT_EQ(
        protobuf_c_enum_descriptor_get_value_by_name(aa, "OVERWRITE_IF_EXISTS_OR_ADD")->value,
        XL_OVERWRITE_IF_EXISTS_OR_ADD);
    CHECK_INT_EQ(protobuf_c_enum_descriptor_get_value_by_name(aa, "ADD_IF_ABSENT")->value, 1);
    CHECK_INT_EQ(protobuf_c_enum_descriptor_get_value_by_name(aa, "OVERWRITE_IF_EXISTS")->value, 3);
}

/* ---- parse ------------------------------------------------------------------- */

struct parsed {
    struct xl_arena a;
    struct xl_object o;
    cJSON *json;
};

#define VS(routes)                                                                              \
    "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"VirtualService\",\"metadata\":{\"name\":"   \
    "\"v\",\"namespace\":\"ns\"},\"spec\":{\"domains\":[\"a.example.com\"],\"routes\":[" routes \
    "]}}"

static void parse(struct parsed *p, const char *json)
{
    memset(p, 0, sizeof(*p));
    p->json = cJSON_Parse(json);
    if (!p->json)
        cxt_fail(__FILE__, __LINE__, 1, "bad test JSON: %s", json);
    if (xlate_api_parse(XLATE_KIND_VIRTUAL_SERVICE, p->json, NULL, &p->a, &p->o) != 0)
        cxt_fail(__FILE__, __LINE__, 1, "parse ran out of memory");
}

static void done(struct parsed *p)
{
    xlate_object_release(&p->o);
    xlate_arena_free(&p->a);
    cJSON_Delete(p->json);
}

static void dump_errors(const struct parsed *p)
{
    for (size_t i = 0; i < p->o.errors.n; i++)
        fprintf(stderr, "#   [%s] %s\n", xlate_reason_name(p->o.errors.items[i].reason),
                p->o.errors.items[i].msg);
}

static void test_parse_features(void)
{
    struct parsed p;
    parse(&p, VS("{\"match\":{\"prefix\":\"/a\",\"methods\":[\"PUT\",\"GET\"],"
                 "\"queryParams\":[{\"name\":\"v\",\"exact\":\"2\",\"ignoreCase\":true},"
                 "{\"name\":\"d\"},{\"name\":\"r\",\"regex\":\"[0-9]+\"}]},"
                 "\"upstream\":{\"name\":\"u\"},\"hostRewrite\":\"in.example\","
                 "\"regexRewrite\":{\"pattern\":\"^/a/(.*)$\",\"substitution\":\"/b/\\\\1\"},"
                 "\"requestHeaders\":{\"set\":[{\"name\":\"X-A\",\"value\":\"1\"}],"
                 "\"add\":[{\"name\":\"x-b\",\"value\":\"\"}],\"remove\":[\"X-C\"]}},"
                 "{\"match\":{\"path\":\"/r\"},\"redirect\":{\"scheme\":\"https\",\"port\":443,"
                 "\"statusCode\":307},\"responseHeaders\":{\"remove\":[\"server\"]}},"
                 "{\"upstream\":{\"name\":\"u\"},\"autoHostRewrite\":true}"));
    CHECK_INT_EQ(p.o.errors.n, 0);
    dump_errors(&p);
    REQUIRE_INT_EQ(p.o.u.vs.nroutes, 3);
    const struct xl_route *r = p.o.u.vs.routes;
    const struct xl_route_ext *x = r[0].ext;
    REQUIRE(x);
    CHECK_INT_EQ(x->methods, XL_M_PUT | XL_M_GET);
    /* Envoy routes on the method through a ":method" header matcher */
    CHECK_STR_EQ(x->method_header.name, ":method");
    CHECK_INT_EQ(x->method_header.kind, XL_HDR_REGEX);
    CHECK_STR_EQ(x->method_header.value, "GET|PUT");
    CHECK_INT_EQ(x->nquery, 3);
    CHECK_INT_EQ(x->query[0].kind, XL_QUERY_EXACT);
    CHECK(x->query[0].ignore_case);
    CHECK_INT_EQ(x->query[1].kind, XL_QUERY_PRESENT);
    CHECK_INT_EQ(x->query[2].kind, XL_QUERY_REGEX);
    CHECK_STR_EQ(x->host_rewrite, "in.example");
    CHECK_STR_EQ(x->regex_subst, "/b/\\1");
    CHECK_INT_EQ(x->req.nops, 2);
    CHECK_STR_EQ(x->req.ops[0].name, "x-a"); /* lower case, as HTTP/2 writes names */
    CHECK_INT_EQ(x->req.ops[0].action, XL_OVERWRITE_IF_EXISTS_OR_ADD);
    CHECK_INT_EQ(x->req.ops[1].action, XL_APPEND_IF_EXISTS_OR_ADD);
    CHECK_STR_EQ(x->req.remove[0], "x-c");
    CHECK_INT_EQ(r[1].action, XL_ACT_REDIRECT);
    REQUIRE(r[1].ext);
    CHECK_INT_EQ(r[1].ext->redirect.scheme, XL_SCHEME_HTTPS);
    CHECK_INT_EQ(r[1].ext->redirect.port, 443);
    CHECK_INT_EQ(r[1].ext->redirect.code, 3); /* TEMPORARY_REDIRECT */
    CHECK(r[1].ext->has_resp && !r[1].ext->has_req);
    REQUIRE(r[2].ext);
    CHECK(r[2].ext->auto_host);
    done(&p);

    /* every redirect status Envoy has, and only those */
    const int codes[] = {301, 302, 303, 307, 308};
    for (int i = 0; i < 5; i++) {
        char buf[300];
        snprintf(buf, sizeof(buf), VS("{\"redirect\":{\"path\":\"/x\",\"statusCode\":%d}}"),
                 codes[i]);
        parse(&p, buf);
        CHECK_INT_EQ(p.o.errors.n, 0);
        REQUIRE(p.o.u.vs.routes[0].ext);
        CHECK_INT_EQ(p.o.u.vs.routes[0].ext->redirect.code, i);
        done(&p);
    }
    /* a route without any of them carries no extension */
    parse(&p, VS("{\"upstream\":{\"name\":\"u\"},\"prefixRewrite\":\"/x\"}"));
    CHECK_INT_EQ(p.o.errors.n, 0);
    CHECK(p.o.u.vs.routes[0].ext == NULL);
    done(&p);
}

/* |route| is refused with |msg| (one of the object's errors, InvalidSpec
 * unless |reason| says otherwise). */
static void refused(int line, const char *route, enum xl_reason reason, const char *msg)
{
    char buf[20000];
    snprintf(buf, sizeof(buf), VS("%s"), route);
    struct parsed p;
    parse(&p, buf);
    int found = 0;
    for (size_t i = 0; i < p.o.errors.n; i++)
        if (p.o.errors.items[i].reason == reason && p.o.errors.items[i].state == XLATE_REJECTED &&
            strstr(p.o.errors.items[i].msg, msg))
            found = 1;
    if (!found) {
        cxt_fail(__FILE__, line, 0, "want [%s] ...%s...; have:", xlate_reason_name(reason), msg);
        dump_errors(&p);
    }
    done(&p);
}

#define REFUSED(route, msg)       refused(__LINE__, route, XL_R_INVALID_SPEC, msg)
#define REFUSED_AS(r, route, msg) refused(__LINE__, route, r, msg)

static void test_refused_like_envoy(void)
{
    /* RedirectAction: path_rewrite_specifier is a oneof */
    REFUSED("{\"redirect\":{\"path\":\"/a\",\"prefixRewrite\":\"/b\"}}",
            "spec.routes[0].redirect: path and prefixRewrite are mutually exclusive");
    /* response_code: defined values only */
    REFUSED("{\"redirect\":{\"path\":\"/a\",\"statusCode\":300}}",
            "spec.routes[0].redirect.statusCode: must be 301, 302, 303, 307 or 308");
    REFUSED("{\"redirect\":{\"scheme\":\"ftp\"}}",
            "redirect.scheme: must be \"http\" or \"https\"");
    REFUSED_AS(XL_R_INVALID_PORT, "{\"redirect\":{\"port\":0}}",
               "redirect.port: must be between 1 and 65535");
    REFUSED("{\"redirect\":{\"stripQuery\":true}}", "redirect: changes nothing");
    REFUSED("{\"redirect\":{\"host\":\"a.example.com/x\"}}", "is not a host name or IP address");
    REFUSED("{\"redirect\":{\"path\":\"x\"}}", "redirect.path: must start with \"/\"");
    REFUSED("{\"match\":{\"regex\":\"/a.*\"},\"redirect\":{\"prefixRewrite\":\"/b\"}}",
            "redirect.prefixRewrite: cannot be used with a regex match");
    REFUSED("{\"redirect\":{\"path\":\"/a\"},\"upstream\":{\"name\":\"u\"}}",
            "upstream, weighted, delegate and redirect are mutually exclusive");
    REFUSED("{\"redirect\":{\"path\":\"/a\"},\"timeout\":\"1s\"}",
            "timeout, retries and hashPolicy do not apply to a redirecting route");
    REFUSED("{\"redirect\":{\"path\":\"/a\"},\"requestHeaders\":{\"remove\":[\"x\"]}}",
            "requestHeaders: a redirecting route forwards nothing");
    /* HeaderValueOption: Envoy will not modify pseudo headers nor Host */
    REFUSED("{\"upstream\":{\"name\":\"u\"},\"requestHeaders\":{\"set\":[{\"name\":\":path\","
            "\"value\":\"/x\"}]}}",
            "requestHeaders.set[0].name: \":path\" is not a header name Envoy changes");
    REFUSED("{\"upstream\":{\"name\":\"u\"},\"requestHeaders\":{\"remove\":[\"Host\"]}}",
            "requestHeaders.remove[0]: \"Host\" is not a header name Envoy removes");
    REFUSED("{\"upstream\":{\"name\":\"u\"},\"responseHeaders\":{\"add\":[{\"name\":\"a b\","
            "\"value\":\"1\"}]}}",
            "\"a b\" is not a header name");
    REFUSED("{\"upstream\":{\"name\":\"u\"},\"responseHeaders\":{\"add\":[{\"name\":\"a\","
            "\"value\":\"x\\ny\"}]}}",
            "responseHeaders.add[0].value: must not contain CR or LF");
    REFUSED("{\"upstream\":{\"name\":\"u\"},\"responseHeaders\":{\"set\":[{\"name\":\"a\","
            "\"value\":\"100%\"}]}}",
            "a \"%\" must start a command operator");
    REFUSED("{\"upstream\":{\"name\":\"u\"},\"responseHeaders\":{\"set\":[{\"name\":\"a\","
            "\"value\":\"%REQ(x\"}]}}",
            "a command operator's \"(\" is not closed");
    REFUSED("{\"upstream\":{\"name\":\"u\"},\"responseHeaders\":{}}",
            "set, add or remove must list at least one header");
    REFUSED("{\"upstream\":{\"name\":\"u\"},\"responseHeaders\":{\"set\":[{\"name\":\"a\","
            "\"value\":\"1\"},{\"name\":\"A\",\"value\":\"2\"}]}}",
            "set lists header \"a\" twice");
    REFUSED("{\"upstream\":{\"name\":\"u\"},\"responseHeaders\":{\"set\":[{\"name\":\"a\","
            "\"value\":\"1\"}],\"remove\":[\"a\"]}}",
            "header \"a\" is both added and removed");
    REFUSED("{\"upstream\":{\"name\":\"u\"},\"requestHeaders\":{\"set\":[{\"name\":\"a\"}]}}",
            "requestHeaders.set[0].value: required");
    /* HeaderValue.value: max_bytes 16384 */
    {
        char *big = malloc(17000);
        char *route = malloc(17200);
        memset(big, 'v', 16385);
        big[16385] = '\0';
        snprintf(route, 17200,
                 "{\"upstream\":{\"name\":\"u\"},\"requestHeaders\":{\"set\":[{\"name\":\"a\","
                 "\"value\":\"%s\"}]}}",
                 big);
        REFUSED(route, "longer than 16384 bytes");
        free(big);
        free(route);
    }
    /* host_rewrite_specifier is a oneof */
    REFUSED("{\"upstream\":{\"name\":\"u\"},\"hostRewrite\":\"a\",\"autoHostRewrite\":true}",
            "hostRewrite and autoHostRewrite are mutually exclusive");
    REFUSED("{\"upstream\":{\"name\":\"u\"},\"autoHostRewrite\":false}",
            "autoHostRewrite: false changes nothing");
    REFUSED("{\"upstream\":{\"name\":\"u\"},\"hostRewrite\":\"a/b\"}", "is not a host");
    /* regex_rewrite: an RE2 pattern, groups the pattern has */
    REFUSED_AS(XL_R_INVALID_REGEX,
               "{\"upstream\":{\"name\":\"u\"},\"regexRewrite\":{\"pattern\":\"(?=x)\","
               "\"substitution\":\"/\"}}",
               "regexRewrite.pattern: invalid regex");
    REFUSED("{\"upstream\":{\"name\":\"u\"},\"regexRewrite\":{\"pattern\":\"^/(a)$\","
            "\"substitution\":\"/\\\\2\"}}",
            "regexRewrite.substitution: names group \\2 but the pattern has 1 capturing group");
    REFUSED("{\"upstream\":{\"name\":\"u\"},\"regexRewrite\":{\"pattern\":\"^/(a)$\","
            "\"substitution\":\"/\\\\x\"}}",
            "a \"\\\" must be followed by a digit");
    REFUSED("{\"upstream\":{\"name\":\"u\"},\"regexRewrite\":{\"pattern\":\"^/a$\"}}",
            "regexRewrite.substitution: required");
    REFUSED("{\"upstream\":{\"name\":\"u\"},\"prefixRewrite\":\"/x\",\"regexRewrite\":"
            "{\"pattern\":\"a\",\"substitution\":\"b\"}}",
            "prefixRewrite and regexRewrite are mutually exclusive");
    REFUSED("{\"delegate\":{\"name\":\"t\"},\"hostRewrite\":\"a\"}",
            "cannot be used on a delegating route");
    /* QueryParameterMatcher: name 1..1024 bytes, prefix min_len 1 */
    REFUSED("{\"match\":{\"queryParams\":[{\"name\":\"\"}]},\"upstream\":{\"name\":\"u\"}}",
            "queryParams[0].name: must not be empty");
    REFUSED("{\"match\":{\"queryParams\":[{\"name\":\"a\",\"prefix\":\"\"}]},"
            "\"upstream\":{\"name\":\"u\"}}",
            "queryParams[0].prefix: must not be empty");
    REFUSED("{\"match\":{\"queryParams\":[{\"name\":\"a\",\"exact\":\"1\",\"prefix\":\"1\"}]},"
            "\"upstream\":{\"name\":\"u\"}}",
            "exact, prefix, regex and present are mutually exclusive");
    REFUSED("{\"match\":{\"queryParams\":[{\"name\":\"a\",\"present\":false}]},"
            "\"upstream\":{\"name\":\"u\"}}",
            "present: false matches nothing");
    REFUSED("{\"match\":{\"queryParams\":[{\"name\":\"a\",\"regex\":\"x\",\"ignoreCase\":true}]},"
            "\"upstream\":{\"name\":\"u\"}}",
            "ignoreCase: applies to exact and prefix only");
    REFUSED_AS(XL_R_INVALID_REGEX,
               "{\"match\":{\"queryParams\":[{\"name\":\"a\",\"regex\":\"(\"}]},"
               "\"upstream\":{\"name\":\"u\"}}",
               "queryParams[0].regex: invalid regex");
    /* methods */
    REFUSED("{\"match\":{\"methods\":[\"get\"]},\"upstream\":{\"name\":\"u\"}}",
            "methods[0]: must be one of GET");
    REFUSED("{\"match\":{\"methods\":[\"GET\",\"GET\"]},\"upstream\":{\"name\":\"u\"}}",
            "methods[1]: GET is listed twice");
    REFUSED("{\"match\":{\"methods\":[]},\"upstream\":{\"name\":\"u\"}}",
            "methods: must not be empty");
}

static void test_format_strings(void)
{
    CHECK(xlate_format_problem("plain") == NULL);
    CHECK(xlate_format_problem("%REQ(x-id)% %START_TIME(%s)% %RESP(a):10%") == NULL);
    CHECK(xlate_format_problem("%DOWNSTREAM_REMOTE_ADDRESS%") == NULL);
    CHECK(xlate_format_problem("50%") != NULL);
    CHECK(xlate_format_problem("%%") != NULL);
    CHECK(xlate_format_problem("%req(x)%") != NULL);
    CHECK(xlate_format_problem("%REQ(x)") != NULL);
    CHECK(xlate_format_problem("%REQ(x):%") != NULL);
}

/* ---- encoding: protobuf-c's bytes ---------------------------------------------- */

typedef Envoy__Config__Route__V3__Route Route;
typedef Envoy__Config__Core__V3__HeaderValueOption Hvo;
typedef Envoy__Config__Core__V3__HeaderValue Hv;
typedef Envoy__Config__Route__V3__QueryParameterMatcher Qpm;
typedef Envoy__Type__Matcher__V3__StringMatcher StringMatcher;
typedef Envoy__Type__Matcher__V3__RegexMatcher RegexMatcher;
typedef Envoy__Type__Matcher__V3__RegexMatcher__GoogleRE2 GoogleRE2;

static RegexMatcher *regex(const char *re)
{
    static GoogleRE2 g[8];
    static RegexMatcher m[8];
    static int n;
    int i = n++ % 8;
    g[i] = (GoogleRE2)ENVOY__TYPE__MATCHER__V3__REGEX_MATCHER__GOOGLE_RE2__INIT;
    m[i] = (RegexMatcher)ENVOY__TYPE__MATCHER__V3__REGEX_MATCHER__INIT;
    m[i].engine_type_case = ENVOY__TYPE__MATCHER__V3__REGEX_MATCHER__ENGINE_TYPE_GOOGLE_RE2;
    m[i].google_re2 = &g[i];
    m[i].regex = (char *)re;
    return &m[i];
}

static void test_encoding_is_protobuf_c(void)
{
    /* what the translator hands the encoder */
    struct xl_header_op ops[] = {{"x-a", "1", XL_OVERWRITE_IF_EXISTS_OR_ADD},
                                 {"x-b", "", XL_APPEND_IF_EXISTS_OR_ADD}};
    char *rm[] = {"x-c", "x-d"};
    struct xl_header_ops req = {ops, 2, rm, 1}, resp = {ops + 1, 1, rm + 1, 1};
    struct xl_query q[] = {{"v", "2", XL_QUERY_EXACT, 1},
                           {"d", NULL, XL_QUERY_PRESENT, 0},
                           {"p", "ab", XL_QUERY_PREFIX, 0},
                           {"r", "[0-9]+", XL_QUERY_REGEX, 0},
                           {"e", "", XL_QUERY_EXACT, 0}};
    const struct xl_query *qp[] = {&q[0], &q[1], &q[2], &q[3], &q[4]};
    struct xl_redirect rd1 = {.scheme = XL_SCHEME_HTTPS,
                              .host = "b.example.com",
                              .port = 8443,
                              .prefix = "",
                              .code = 4,
                              .strip_query = 1};
    struct xl_redirect rd2 = {.scheme = XL_SCHEME_HTTP, .path = "/p"};
    struct xl_header mh = {.name = ":method", .value = "GET", .kind = XL_HDR_EXACT};
    const struct xl_header *mhp[] = {&mh};
    struct xl_rroute routes[] = {
        {.kind = XL_PATH_PREFIX,
         .path = "/a",
         .case_sensitive = 1,
         .cluster = "ns/u",
         .headers = mhp,
         .nheaders = 1,
         .query = qp,
         .nquery = 5,
         .req_headers = &req,
         .resp_headers = &resp,
         .host_rewrite = "in.example",
         .regex_pattern = "^/a/(.*)$",
         .regex_subst = "/\\1",
         .has_timeout = 1,
         .timeout_ns = 1000000000,
         .prefix_rewrite = NULL},
        {.kind = XL_PATH_EXACT,
         .path = "/r",
         .case_sensitive = 1,
         .redirect = &rd1,
         .resp_headers = &resp},
        {.kind = XL_PATH_PREFIX, .path = "/", .case_sensitive = 1, .redirect = &rd2},
        {.kind = XL_PATH_PREFIX,
         .path = "/h",
         .case_sensitive = 1,
         .cluster = "ns/u",
         .auto_host_rewrite = 1,
         .prefix_rewrite = "/x"},
    };
    char *domains[] = {"a.example.com"};
    uint8_t *b = NULL;
    size_t len = 0;
    REQUIRE_INT_EQ(xlate_encode_vhost("ns/v", domains, 1, routes, 4, XLATE_MODE_ENVOY, 0, &b, &len),
                   0);

    /* the same VirtualHost built with protobuf-c */
    Hv hv[2] = {ENVOY__CONFIG__CORE__V3__HEADER_VALUE__INIT,
                ENVOY__CONFIG__CORE__V3__HEADER_VALUE__INIT};
    Hvo hvo[2] = {ENVOY__CONFIG__CORE__V3__HEADER_VALUE_OPTION__INIT,
                  ENVOY__CONFIG__CORE__V3__HEADER_VALUE_OPTION__INIT};
    hv[0].key = "x-a";
    hv[0].value = "1";
    hv[1].key = "x-b";
    hvo[0].header = &hv[0];
    hvo[0].append_action =
        ENVOY__CONFIG__CORE__V3__HEADER_VALUE_OPTION__HEADER_APPEND_ACTION__OVERWRITE_IF_EXISTS_OR_ADD;
    hvo[1].header = &hv[1];
    hvo[1].keep_empty_value = 1;
    Hvo *req_add[] = {&hvo[0], &hvo[1]}, *resp_add[] = {&hvo[1]};
    char *req_rm[] = {"x-c"}, *resp_rm[] = {"x-d"};

    StringMatcher sm[4] = {ENVOY__TYPE__MATCHER__V3__STRING_MATCHER__INIT,
                           ENVOY__TYPE__MATCHER__V3__STRING_MATCHER__INIT,
                           ENVOY__TYPE__MATCHER__V3__STRING_MATCHER__INIT,
                           ENVOY__TYPE__MATCHER__V3__STRING_MATCHER__INIT};
    sm[0].match_pattern_case = ENVOY__TYPE__MATCHER__V3__STRING_MATCHER__MATCH_PATTERN_EXACT;
    sm[0].exact = "2";
    sm[0].ignore_case = 1;
    sm[1].match_pattern_case = ENVOY__TYPE__MATCHER__V3__STRING_MATCHER__MATCH_PATTERN_PREFIX;
    sm[1].prefix = "ab";
    sm[2].match_pattern_case = ENVOY__TYPE__MATCHER__V3__STRING_MATCHER__MATCH_PATTERN_SAFE_REGEX;
    sm[2].safe_regex = regex("[0-9]+");
    sm[3].match_pattern_case = ENVOY__TYPE__MATCHER__V3__STRING_MATCHER__MATCH_PATTERN_EXACT;
    sm[3].exact = "";
    Qpm qm[5];
    const char *qn[] = {"v", "d", "p", "r", "e"};
    for (int i = 0; i < 5; i++) {
        qm[i] = (Qpm)ENVOY__CONFIG__ROUTE__V3__QUERY_PARAMETER_MATCHER__INIT;
        qm[i].name = (char *)qn[i];
        if (i == 1) {
            qm[i].query_parameter_match_specifier_case =
                ENVOY__CONFIG__ROUTE__V3__QUERY_PARAMETER_MATCHER__QUERY_PARAMETER_MATCH_SPECIFIER_PRESENT_MATCH;
            qm[i].present_match = 1;
        } else {
            qm[i].query_parameter_match_specifier_case =
                ENVOY__CONFIG__ROUTE__V3__QUERY_PARAMETER_MATCHER__QUERY_PARAMETER_MATCH_SPECIFIER_STRING_MATCH;
            qm[i].string_match = &sm[i == 0 ? 0 : i - 1];
        }
    }
    Qpm *qms[] = {&qm[0], &qm[1], &qm[2], &qm[3], &qm[4]};
    Envoy__Config__Route__V3__HeaderMatcher hm = ENVOY__CONFIG__ROUTE__V3__HEADER_MATCHER__INIT;
    hm.name = ":method";
    hm.header_match_specifier_case =
        ENVOY__CONFIG__ROUTE__V3__HEADER_MATCHER__HEADER_MATCH_SPECIFIER_EXACT_MATCH;
    hm.exact_match = "GET";
    Envoy__Config__Route__V3__HeaderMatcher *hms[] = {&hm};

    Envoy__Config__Route__V3__RouteMatch m[4];
    for (int i = 0; i < 4; i++)
        m[i] = (Envoy__Config__Route__V3__RouteMatch)ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__INIT;
    m[0].path_specifier_case = ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__PATH_SPECIFIER_PREFIX;
    m[0].prefix = "/a";
    m[0].headers = hms;
    m[0].n_headers = 1;
    m[0].query_parameters = qms;
    m[0].n_query_parameters = 5;
    m[1].path_specifier_case = ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__PATH_SPECIFIER_PATH;
    m[1].path = "/r";
    m[2].path_specifier_case = ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__PATH_SPECIFIER_PREFIX;
    m[2].prefix = "/";
    m[3].path_specifier_case = ENVOY__CONFIG__ROUTE__V3__ROUTE_MATCH__PATH_SPECIFIER_PREFIX;
    m[3].prefix = "/h";

    Envoy__Type__Matcher__V3__RegexMatchAndSubstitute rms =
        ENVOY__TYPE__MATCHER__V3__REGEX_MATCH_AND_SUBSTITUTE__INIT;
    rms.pattern = regex("^/a/(.*)$");
    rms.substitution = "/\\1";
    Google__Protobuf__Duration to = GOOGLE__PROTOBUF__DURATION__INIT;
    to.seconds = 1;
    Envoy__Config__Route__V3__RouteAction a0 = ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__INIT,
                                          a3 = ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__INIT;
    a0.cluster_specifier_case = ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__CLUSTER_SPECIFIER_CLUSTER;
    a0.cluster = "ns/u";
    a0.host_rewrite_specifier_case =
        ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HOST_REWRITE_SPECIFIER_HOST_REWRITE_LITERAL;
    a0.host_rewrite_literal = "in.example";
    a0.regex_rewrite = &rms;
    a0.timeout = &to;
    Google__Protobuf__BoolValue yes = GOOGLE__PROTOBUF__BOOL_VALUE__INIT;
    yes.value = 1;
    a3.cluster_specifier_case = ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__CLUSTER_SPECIFIER_CLUSTER;
    a3.cluster = "ns/u";
    a3.prefix_rewrite = "/x";
    a3.host_rewrite_specifier_case =
        ENVOY__CONFIG__ROUTE__V3__ROUTE_ACTION__HOST_REWRITE_SPECIFIER_AUTO_HOST_REWRITE;
    a3.auto_host_rewrite = &yes;

    Envoy__Config__Route__V3__RedirectAction r1 = ENVOY__CONFIG__ROUTE__V3__REDIRECT_ACTION__INIT,
                                             r2 = ENVOY__CONFIG__ROUTE__V3__REDIRECT_ACTION__INIT;
    r1.scheme_rewrite_specifier_case =
        ENVOY__CONFIG__ROUTE__V3__REDIRECT_ACTION__SCHEME_REWRITE_SPECIFIER_HTTPS_REDIRECT;
    r1.https_redirect = 1;
    r1.host_redirect = "b.example.com";
    r1.port_redirect = 8443;
    r1.path_rewrite_specifier_case =
        ENVOY__CONFIG__ROUTE__V3__REDIRECT_ACTION__PATH_REWRITE_SPECIFIER_PREFIX_REWRITE;
    r1.prefix_rewrite = "";
    r1.response_code =
        ENVOY__CONFIG__ROUTE__V3__REDIRECT_ACTION__REDIRECT_RESPONSE_CODE__PERMANENT_REDIRECT;
    r1.strip_query = 1;
    r2.scheme_rewrite_specifier_case =
        ENVOY__CONFIG__ROUTE__V3__REDIRECT_ACTION__SCHEME_REWRITE_SPECIFIER_SCHEME_REDIRECT;
    r2.scheme_redirect = "http";
    r2.path_rewrite_specifier_case =
        ENVOY__CONFIG__ROUTE__V3__REDIRECT_ACTION__PATH_REWRITE_SPECIFIER_PATH_REDIRECT;
    r2.path_redirect = "/p";

    Route rt[4];
    for (int i = 0; i < 4; i++) {
        rt[i] = (Route)ENVOY__CONFIG__ROUTE__V3__ROUTE__INIT;
        rt[i].match = &m[i];
    }
    rt[0].action_case = ENVOY__CONFIG__ROUTE__V3__ROUTE__ACTION_ROUTE;
    rt[0].route = &a0;
    rt[0].request_headers_to_add = req_add;
    rt[0].n_request_headers_to_add = 2;
    rt[0].request_headers_to_remove = req_rm;
    rt[0].n_request_headers_to_remove = 1;
    rt[0].response_headers_to_add = resp_add;
    rt[0].n_response_headers_to_add = 1;
    rt[0].response_headers_to_remove = resp_rm;
    rt[0].n_response_headers_to_remove = 1;
    rt[1].action_case = ENVOY__CONFIG__ROUTE__V3__ROUTE__ACTION_REDIRECT;
    rt[1].redirect = &r1;
    rt[1].response_headers_to_add = resp_add;
    rt[1].n_response_headers_to_add = 1;
    rt[1].response_headers_to_remove = resp_rm;
    rt[1].n_response_headers_to_remove = 1;
    rt[2].action_case = ENVOY__CONFIG__ROUTE__V3__ROUTE__ACTION_REDIRECT;
    rt[2].redirect = &r2;
    rt[3].action_case = ENVOY__CONFIG__ROUTE__V3__ROUTE__ACTION_ROUTE;
    rt[3].route = &a3;
    Route *rts[] = {&rt[0], &rt[1], &rt[2], &rt[3]};
    Envoy__Config__Route__V3__VirtualHost vh = ENVOY__CONFIG__ROUTE__V3__VIRTUAL_HOST__INIT;
    vh.name = "ns/v";
    vh.domains = domains;
    vh.n_domains = 1;
    vh.routes = rts;
    vh.n_routes = 4;
    size_t n = protobuf_c_message_get_packed_size(&vh.base);
    uint8_t *want = malloc(n);
    protobuf_c_message_pack(&vh.base, want);
    CHECK_INT_EQ(len, n);
    CHECK(len == n && memcmp(b, want, n) == 0);
    free(want);

    /* and it reads back as those messages */
    Envoy__Config__Route__V3__VirtualHost *back =
        envoy__config__route__v3__virtual_host__unpack(NULL, len, b);
    REQUIRE(back);
    REQUIRE_INT_EQ(back->n_routes, 4);
    CHECK_INT_EQ(back->routes[1]->action_case, ENVOY__CONFIG__ROUTE__V3__ROUTE__ACTION_REDIRECT);
    CHECK_INT_EQ(back->routes[1]->redirect->port_redirect, 8443);
    CHECK_STR_EQ(back->routes[0]->route->regex_rewrite->pattern->regex, "^/a/(.*)$");
    CHECK_INT_EQ(back->routes[0]->match->n_query_parameters, 5);
    protobuf_c_message_free_unpacked(&back->base, NULL);
    free(b);
}

/* ---- CORS, local rate limit, access logs ---------------------------------- */

static void test_filter_proto_fields_match_envoy(void)
{
    const ProtobufCMessageDescriptor *vh = &envoy__config__route__v3__virtual_host__descriptor;
    const ProtobufCMessageDescriptor *route = &envoy__config__route__v3__route__descriptor;
    const ProtobufCMessageDescriptor *cp =
        &envoy__extensions__filters__http__cors__v3__cors_policy__descriptor;
    const ProtobufCMessageDescriptor *lrl =
        &envoy__extensions__filters__http__local_ratelimit__v3__local_rate_limit__descriptor;
    const ProtobufCMessageDescriptor *tb = &envoy__type__v3__token_bucket__descriptor;
    const ProtobufCMessageDescriptor *rfp =
        &envoy__config__core__v3__runtime_fractional_percent__descriptor;
    const ProtobufCMessageDescriptor *fp = &envoy__type__v3__fractional_percent__descriptor;
    const ProtobufCMessageDescriptor *hcm =
        &envoy__extensions__filters__network__http_connection_manager__v3__http_connection_manager__descriptor;
    const ProtobufCMessageDescriptor *al = &envoy__config__accesslog__v3__access_log__descriptor;
    const ProtobufCMessageDescriptor *fal =
        &envoy__extensions__access_loggers__file__v3__file_access_log__descriptor;
    const ProtobufCMessageDescriptor *sfs =
        &envoy__config__core__v3__substitution_format_string__descriptor;
    /* cors.proto, local_rate_limit.proto, token_bucket.proto, percent.proto,
     * base.proto, http_connection_manager.proto, accesslog.proto, file.proto,
     * substitution_format_string.proto, route_components.proto */
    const struct field_want want[] = {
        {vh, "require_tls", 4, PROTOBUF_C_TYPE_ENUM, 0, NULL},
        {vh, "typed_per_filter_config", 15, PROTOBUF_C_TYPE_MESSAGE, 1, NULL},
        {route, "typed_per_filter_config", 13, PROTOBUF_C_TYPE_MESSAGE, 1, NULL},
        {cp, "allow_origin_string_match", 1, PROTOBUF_C_TYPE_MESSAGE, 1, NULL},
        {cp, "allow_methods", 2, PROTOBUF_C_TYPE_STRING, 0, NULL},
        {cp, "allow_headers", 3, PROTOBUF_C_TYPE_STRING, 0, NULL},
        {cp, "expose_headers", 4, PROTOBUF_C_TYPE_STRING, 0, NULL},
        {cp, "max_age", 5, PROTOBUF_C_TYPE_STRING, 0, NULL},
        {cp, "allow_credentials", 6, PROTOBUF_C_TYPE_MESSAGE, 0, NULL},
        {lrl, "stat_prefix", 1, PROTOBUF_C_TYPE_STRING, 0, NULL},
        {lrl, "token_bucket", 3, PROTOBUF_C_TYPE_MESSAGE, 0, NULL},
        {lrl, "filter_enabled", 4, PROTOBUF_C_TYPE_MESSAGE, 0, NULL},
        {lrl, "filter_enforced", 5, PROTOBUF_C_TYPE_MESSAGE, 0, NULL},
        {tb, "max_tokens", 1, PROTOBUF_C_TYPE_UINT32, 0, NULL},
        {tb, "tokens_per_fill", 2, PROTOBUF_C_TYPE_MESSAGE, 0, NULL},
        {tb, "fill_interval", 3, PROTOBUF_C_TYPE_MESSAGE, 0, NULL},
        {rfp, "default_value", 1, PROTOBUF_C_TYPE_MESSAGE, 0, NULL},
        {rfp, "runtime_key", 2, PROTOBUF_C_TYPE_STRING, 0, NULL},
        {fp, "numerator", 1, PROTOBUF_C_TYPE_UINT32, 0, NULL},
        {fp, "denominator", 2, PROTOBUF_C_TYPE_ENUM, 0, NULL},
        {hcm, "http_filters", 5, PROTOBUF_C_TYPE_MESSAGE, 1, NULL},
        {hcm, "access_log", 13, PROTOBUF_C_TYPE_MESSAGE, 1, NULL},
        {al, "name", 1, PROTOBUF_C_TYPE_STRING, 0, NULL},
        {al, "typed_config", 4, PROTOBUF_C_TYPE_MESSAGE, 0, NULL},
        {fal, "path", 1, PROTOBUF_C_TYPE_STRING, 0, NULL},
        {fal, "log_format", 5, PROTOBUF_C_TYPE_MESSAGE, 0, NULL},
        {sfs, "json_format", 2, PROTOBUF_C_TYPE_MESSAGE, 0, "text_format_source"},
        {sfs, "text_format_source", 5, PROTOBUF_C_TYPE_MESSAGE, 0, "json_format"},
        {sfs, "omit_empty_values", 3, PROTOBUF_C_TYPE_BOOL, 0, NULL},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const struct field_want *w = &want[i];
        const ProtobufCFieldDescriptor *f =
            protobuf_c_message_descriptor_get_field_by_name(w->d, w->name);
        if (!f) {
            cxt_fail(__FILE__, __LINE__, 0, "%s has no field %s", w->d->name, w->name);
            continue;
        }
        CHECK_INT_EQ(f->id, w->id);
        CHECK_INT_EQ(f->type, w->type);
        CHECK_INT_EQ(f->label == PROTOBUF_C_LABEL_REPEATED, w->repeated);
        if (w->oneof_with) {
            const ProtobufCFieldDescriptor *o =
                protobuf_c_message_descriptor_get_field_by_name(w->d, w->oneof_with);
            REQUIRE(o);
            CHECK_INT_EQ(f->quantifier_offset, o->quantifier_offset);
        }
    }
    /* FractionalPercent.DenominatorType HUNDRED is 0: a left-out denominator is percent */
    CHECK_INT_EQ(protobuf_c_enum_descriptor_get_value_by_name(
                     &envoy__type__v3__fractional_percent__denominator_type__descriptor, "HUNDRED")
                     ->value,
                 0);
    /* VirtualHost.TlsRequirementType ALL is 2 */
    CHECK_INT_EQ(
        protobuf_c_enum_descriptor_get_value_by_name(
            &envoy__config__route__v3__virtual_host__tls_requirement_type__descriptor, "ALL")
            ->value,
        2);
}

static void test_filters_refused_like_envoy(void)
{
    /* TokenBucket: max_tokens > 0, tokens_per_fill > 0, fill_interval required
     * and > 0 (>= 50ms for the local rate limit) */
    REFUSED("{\"upstream\":{\"name\":\"u\"},\"rateLimit\":{\"requests\":0,\"per\":\"1s\"}}",
            "rateLimit.requests: must be between 1 and 4294967295");
    REFUSED("{\"upstream\":{\"name\":\"u\"},\"rateLimit\":{\"requests\":5}}",
            "rateLimit.per: required");
    REFUSED("{\"upstream\":{\"name\":\"u\"},\"rateLimit\":{\"requests\":5,\"per\":\"10ms\"}}",
            "rateLimit.per: must be at least 50ms");
    REFUSED("{\"upstream\":{\"name\":\"u\"},\"rateLimit\":{\"requests\":5,\"per\":\"1s\","
            "\"burst\":2}}",
            "rateLimit.burst: must be at least requests (5)");
}

/* The VirtualService |vs_spec| parsed, resolved by hand into one route and
 * encoded as a VirtualHost: what Envoy would be sent. */
static Envoy__Config__Route__V3__VirtualHost *vhost_of(const char *json)
{
    struct parsed p;
    parse(&p, json);
    if (p.o.errors.n) {
        dump_errors(&p);
        done(&p);
        return NULL;
    }
    const struct xl_route *r = &p.o.u.vs.routes[0];
    struct xl_rroute rr = {.kind = XL_PATH_PREFIX,
                           .path = "/",
                           .case_sensitive = 1,
                           .cluster = "ns/u",
                           .rate_limit = r->ext ? r->ext->rl : NULL};
    uint8_t *b = NULL;
    size_t len = 0;
    Envoy__Config__Route__V3__VirtualHost *vh = NULL;
    if (xlate_encode_vhost_ex("ns/v", p.o.u.vs.domains, p.o.u.vs.ndomains, &rr, 1, p.o.u.vs.ext,
                              XLATE_MODE_ENVOY, 0, &b, &len) == 0) {
        vh = envoy__config__route__v3__virtual_host__unpack(NULL, len, b);
        /* what protobuf-c packs from the decoded message: the same bytes */
        if (vh) {
            size_t n = protobuf_c_message_get_packed_size(&vh->base);
            uint8_t *again = malloc(n ? n : 1);
            protobuf_c_message_pack(&vh->base, again);
            CHECK(n == len && memcmp(again, b, n) == 0);
            free(again);
        }
    }
    free(b);
    done(&p);
    return vh;
}

static const Google__Protobuf__Any *
filter_config(Envoy__Config__Route__V3__VirtualHost__TypedPerFilterConfigEntry **e, size_t n,
              const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(e[i]->key, name) == 0)
            return e[i]->value;
    return NULL;
}

static void test_cors_and_rate_limit_encoding(void)
{
    Envoy__Config__Route__V3__VirtualHost *vh =
        vhost_of("{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"VirtualService\",\"metadata\":"
                 "{\"name\":\"v\",\"namespace\":\"ns\"},\"spec\":{\"domains\":[\"a.example.com\"],"
                 "\"requireTls\":true,\"cors\":{\"allowOrigins\":[\"https://a.example.com\",\"*\"],"
                 "\"allowOriginRegexes\":[\"https://[a-z]+\\\\.example\\\\.com\"],"
                 "\"allowMethods\":[\"GET\",\"POST\"],\"allowHeaders\":[\"content-type\"],"
                 "\"exposeHeaders\":[\"x-id\"],\"maxAge\":\"10m\",\"allowCredentials\":false},"
                 "\"rateLimit\":{\"requests\":100,\"per\":\"1s\",\"burst\":150},"
                 "\"routes\":[{\"upstream\":{\"name\":\"u\"},"
                 "\"rateLimit\":{\"requests\":5,\"per\":\"1m\"}}]}}");
    REQUIRE(vh);
    CHECK_INT_EQ(vh->require_tls,
                 ENVOY__CONFIG__ROUTE__V3__VIRTUAL_HOST__TLS_REQUIREMENT_TYPE__ALL);
    REQUIRE_INT_EQ(vh->n_typed_per_filter_config, 2);
    const Google__Protobuf__Any *ca = filter_config(
        vh->typed_per_filter_config, vh->n_typed_per_filter_config, XL_CORS_FILTER_NAME);
    REQUIRE(ca);
    CHECK_STR_EQ(ca->type_url, XL_TYPE_URL_CORS_POLICY);
    Envoy__Extensions__Filters__Http__Cors__V3__CorsPolicy *cp =
        envoy__extensions__filters__http__cors__v3__cors_policy__unpack(NULL, ca->value.len,
                                                                        ca->value.data);
    REQUIRE(cp);
    REQUIRE_INT_EQ(cp->n_allow_origin_string_match, 3);
    CHECK_STR_EQ(cp->allow_origin_string_match[0]->exact, "https://a.example.com");
    CHECK_STR_EQ(cp->allow_origin_string_match[1]->exact, "*");
    CHECK_STR_EQ(cp->allow_origin_string_match[2]->safe_regex->regex,
                 "https://[a-z]+\\.example\\.com");
    CHECK_STR_EQ(cp->allow_methods, "GET,POST");
    CHECK_STR_EQ(cp->allow_headers, "content-type");
    CHECK_STR_EQ(cp->expose_headers, "x-id");
    CHECK_STR_EQ(cp->max_age, "600"); /* seconds */
    REQUIRE(cp->allow_credentials);
    CHECK_INT_EQ(cp->allow_credentials->value, 0);
    protobuf_c_message_free_unpacked(&cp->base, NULL);

    const Google__Protobuf__Any *ra = filter_config(
        vh->typed_per_filter_config, vh->n_typed_per_filter_config, XL_LOCAL_RATELIMIT_FILTER_NAME);
    REQUIRE(ra);
    CHECK_STR_EQ(ra->type_url, XL_TYPE_URL_LOCAL_RATELIMIT);
    Envoy__Extensions__Filters__Http__LocalRatelimit__V3__LocalRateLimit *rl =
        envoy__extensions__filters__http__local_ratelimit__v3__local_rate_limit__unpack(
            NULL, ra->value.len, ra->value.data);
    REQUIRE(rl);
    /* Envoy: stat_prefix min_len 1; a per-route config needs token_bucket
     * (max_tokens > 0, fill_interval > 0); enabled and enforced default to 0% */
    CHECK(rl->stat_prefix && rl->stat_prefix[0]);
    REQUIRE(rl->token_bucket);
    CHECK_INT_EQ(rl->token_bucket->max_tokens, 150);
    REQUIRE(rl->token_bucket->tokens_per_fill);
    CHECK_INT_EQ(rl->token_bucket->tokens_per_fill->value, 100);
    REQUIRE(rl->token_bucket->fill_interval);
    CHECK_INT_EQ(rl->token_bucket->fill_interval->seconds, 1);
    REQUIRE(rl->filter_enabled && rl->filter_enabled->default_value);
    CHECK_INT_EQ(rl->filter_enabled->default_value->numerator, 100);
    CHECK_INT_EQ(rl->filter_enabled->default_value->denominator,
                 ENVOY__TYPE__V3__FRACTIONAL_PERCENT__DENOMINATOR_TYPE__HUNDRED);
    REQUIRE(rl->filter_enforced && rl->filter_enforced->default_value);
    CHECK_INT_EQ(rl->filter_enforced->default_value->numerator, 100);
    protobuf_c_message_free_unpacked(&rl->base, NULL);

    /* the route's own bucket */
    REQUIRE_INT_EQ(vh->n_routes, 1);
    REQUIRE_INT_EQ(vh->routes[0]->n_typed_per_filter_config, 1);
    CHECK_STR_EQ(vh->routes[0]->typed_per_filter_config[0]->key, XL_LOCAL_RATELIMIT_FILTER_NAME);
    const Google__Protobuf__Any *rra = vh->routes[0]->typed_per_filter_config[0]->value;
    rl = envoy__extensions__filters__http__local_ratelimit__v3__local_rate_limit__unpack(
        NULL, rra->value.len, rra->value.data);
    REQUIRE(rl && rl->token_bucket);
    CHECK_INT_EQ(rl->token_bucket->max_tokens, 5);
    CHECK_INT_EQ(rl->token_bucket->fill_interval->seconds, 60);
    protobuf_c_message_free_unpacked(&rl->base, NULL);
    protobuf_c_message_free_unpacked(&vh->base, NULL);
}

static void test_cors_refused(void)
{
    struct parsed p;
    parse(&p, "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"VirtualService\",\"metadata\":"
              "{\"name\":\"v\",\"namespace\":\"ns\"},\"spec\":{\"domains\":[\"a.example.com\"],"
              "\"cors\":{\"allowMethods\":[\"GE T\"],\"maxAge\":\"1.5s\"},"
              "\"rateLimit\":{\"requests\":1,\"per\":\"1s\",\"burst\":0},\"requireTls\":false,"
              "\"routes\":[{\"upstream\":{\"name\":\"u\"}}]}}");
    const char *want[] = {
        "spec.cors: allowOrigins or allowOriginRegexes must list at least one origin",
        "spec.cors.allowMethods[0]: must be an HTTP method",
        "spec.cors.maxAge: must be whole seconds",
        "spec.rateLimit.burst: must be between 1 and 4294967295",
        "spec.requireTls: false is the default",
    };
    for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
        int found = 0;
        for (size_t i = 0; i < p.o.errors.n; i++)
            found |= strstr(p.o.errors.items[i].msg, want[k]) != NULL;
        if (!found) {
            cxt_fail(__FILE__, __LINE__, 0, "want ...%s...; have:", want[k]);
            dump_errors(&p);
        }
    }
    done(&p);
}

static void test_access_logs_and_hcm_filters(void)
{
    struct xl_label json[] = {{"code", "%RESPONSE_CODE%"}, {"path", "%REQ(:path)%"}};
    struct xl_access_log logs[] = {
        {.path = "/dev/stdout", .text = "[%START_TIME%] %RESPONSE_CODE%\n"},
        {.path = "/var/log/a.json", .json = json, .njson = 2},
        {.path = "/var/log/default"},
    };
    const struct xl_hcm_opts o = {.envoy_filters = 1, .logs = logs, .nlogs = 3};
    uint8_t *b = NULL;
    size_t len = 0;
    REQUIRE_INT_EQ(xlate_encode_listener_envoy_ex("ns/gw/http", "0.0.0.0", 8080, "ns/gw",
                                                  "ns_gw_http", &o, &b, &len),
                   0);
    Envoy__Config__Listener__V3__Listener *l =
        envoy__config__listener__v3__listener__unpack(NULL, len, b);
    REQUIRE(l && l->n_filter_chains == 1 && l->filter_chains[0]->n_filters == 1);
    const Google__Protobuf__Any *any = l->filter_chains[0]->filters[0]->typed_config;
    Envoy__Extensions__Filters__Network__HttpConnectionManager__V3__HttpConnectionManager *h =
        envoy__extensions__filters__network__http_connection_manager__v3__http_connection_manager__unpack(
            NULL, any->value.len, any->value.data);
    REQUIRE(h);
    /* the CORS and local rate limit filters, the router last (Envoy requires
     * a terminal filter last) */
    REQUIRE_INT_EQ(h->n_http_filters, 3);
    CHECK_STR_EQ(h->http_filters[0]->name, XL_CORS_FILTER_NAME);
    CHECK_STR_EQ(h->http_filters[0]->typed_config->type_url, XL_TYPE_URL_CORS);
    CHECK_STR_EQ(h->http_filters[1]->name, XL_LOCAL_RATELIMIT_FILTER_NAME);
    CHECK_STR_EQ(h->http_filters[2]->name, XL_ROUTER_FILTER_NAME);
    Envoy__Extensions__Filters__Http__LocalRatelimit__V3__LocalRateLimit *rl =
        envoy__extensions__filters__http__local_ratelimit__v3__local_rate_limit__unpack(
            NULL, h->http_filters[1]->typed_config->value.len,
            h->http_filters[1]->typed_config->value.data);
    REQUIRE(rl);
    /* stat_prefix is required (min_len 1); no bucket at this level: a no-op
     * until a VirtualHost or Route configures one */
    CHECK(rl->stat_prefix && rl->stat_prefix[0]);
    CHECK(rl->token_bucket == NULL);
    protobuf_c_message_free_unpacked(&rl->base, NULL);
    REQUIRE_INT_EQ(h->n_access_log, 3);
    for (size_t i = 0; i < 3; i++) {
        CHECK_STR_EQ(h->access_log[i]->name, XL_FILE_ACCESS_LOG_NAME);
        CHECK_STR_EQ(h->access_log[i]->typed_config->type_url, XL_TYPE_URL_FILE_ACCESS_LOG);
        Envoy__Extensions__AccessLoggers__File__V3__FileAccessLog *f =
            envoy__extensions__access_loggers__file__v3__file_access_log__unpack(
                NULL, h->access_log[i]->typed_config->value.len,
                h->access_log[i]->typed_config->value.data);
        REQUIRE(f);
        CHECK_STR_EQ(f->path, logs[i].path);
        if (i == 0) {
            REQUIRE(f->log_format && f->log_format->text_format_source);
            CHECK_STR_EQ(f->log_format->text_format_source->inline_string, logs[0].text);
        } else if (i == 1) {
            REQUIRE(f->log_format && f->log_format->json_format);
            REQUIRE_INT_EQ(f->log_format->json_format->n_fields, 2);
            CHECK_STR_EQ(f->log_format->json_format->fields[1]->key, "path");
            CHECK_STR_EQ(f->log_format->json_format->fields[1]->value->string_value,
                         "%REQ(:path)%");
        } else {
            CHECK(f->log_format == NULL); /* Envoy's default format */
        }
        protobuf_c_message_free_unpacked(&f->base, NULL);
    }
    protobuf_c_message_free_unpacked(&h->base, NULL);
    protobuf_c_message_free_unpacked(&l->base, NULL);
    free(b);

    /* proxyless API listeners keep the router alone: gRPC NACKs HTTP filters
     * it does not know (gRFC A39) */
    REQUIRE_INT_EQ(xlate_encode_listener_api("greeter", "ns/mesh", "ns_mesh", &b, &len), 0);
    l = envoy__config__listener__v3__listener__unpack(NULL, len, b);
    REQUIRE(l && l->api_listener);
    h = envoy__extensions__filters__network__http_connection_manager__v3__http_connection_manager__unpack(
        NULL, l->api_listener->api_listener->value.len, l->api_listener->api_listener->value.data);
    REQUIRE(h);
    CHECK_INT_EQ(h->n_http_filters, 1);
    CHECK_INT_EQ(h->n_access_log, 0);
    protobuf_c_message_free_unpacked(&h->base, NULL);
    protobuf_c_message_free_unpacked(&l->base, NULL);
    free(b);
}

static void test_access_logs_refused(void)
{
    struct parsed p;
    memset(&p, 0, sizeof(p));
    p.json = cJSON_Parse(
        "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"Gateway\",\"metadata\":{\"name\":\"g\","
        "\"namespace\":\"ns\"},\"spec\":{\"accessLog\":[{\"path\":\"log.txt\"},"
        "{\"path\":\"/a\",\"format\":\"100%\"},{\"path\":\"/b\",\"format\":\"x\",\"json\":{}},"
        "{\"path\":\"/c\",\"json\":{\"a\":\"%REQ(x\"}}]}}");
    REQUIRE(p.json);
    REQUIRE_INT_EQ(xlate_api_parse(XLATE_KIND_GATEWAY, p.json, NULL, &p.a, &p.o), 0);
    const char *want[] = {
        "spec.accessLog[0].path: must be an absolute file path",
        "spec.accessLog[1].format: a \"%\" must start a command operator",
        "spec.accessLog[2]: format and json are mutually exclusive",
        "spec.accessLog[3].json.a: a command operator's \"(\" is not closed",
    };
    for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
        int found = 0;
        for (size_t i = 0; i < p.o.errors.n; i++)
            found |= strstr(p.o.errors.items[i].msg, want[k]) != NULL;
        if (!found) {
            cxt_fail(__FILE__, __LINE__, 0, "want ...%s...; have:", want[k]);
            dump_errors(&p);
        }
    }
    done(&p);
}

static const struct cxt_case cases[] = {
    CXT(test_proto_fields_match_envoy),
    CXT(test_parse_features),
    CXT(test_refused_like_envoy),
    CXT(test_format_strings),
    CXT(test_encoding_is_protobuf_c),
    CXT(test_filter_proto_fields_match_envoy),
    CXT(test_filters_refused_like_envoy),
    CXT(test_cors_and_rate_limit_encoding),
    CXT(test_cors_refused),
    CXT(test_access_logs_and_hcm_filters),
    CXT(test_access_logs_refused),
};
CXT_MAIN(cases)
