#include "xlate_pbjson.h"

#include "cx_json.h"

#include "envoy/config/cluster/v3/cluster.pb-c.h"
#include "envoy/config/core/v3/address.pb-c.h"
#include "envoy/config/core/v3/base.pb-c.h"
#include "envoy/config/core/v3/config_source.pb-c.h"
#include "envoy/config/endpoint/v3/endpoint.pb-c.h"
#include "envoy/config/endpoint/v3/endpoint_components.pb-c.h"
#include "envoy/config/listener/v3/api_listener.pb-c.h"
#include "envoy/config/listener/v3/listener.pb-c.h"
#include "envoy/config/listener/v3/listener_components.pb-c.h"
#include "envoy/config/route/v3/route.pb-c.h"
#include "envoy/config/route/v3/route_components.pb-c.h"
#include "envoy/extensions/access_loggers/file/v3/file.pb-c.h"
#include "envoy/extensions/filters/http/cors/v3/cors.pb-c.h"
#include "envoy/extensions/filters/http/local_ratelimit/v3/local_rate_limit.pb-c.h"
#include "envoy/extensions/filters/http/router/v3/router.pb-c.h"
#include "envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector.pb-c.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb-c.h"
#include "envoy/extensions/transport_sockets/tls/v3/common.pb-c.h"
#include "envoy/extensions/transport_sockets/tls/v3/secret.pb-c.h"
#include "envoy/extensions/transport_sockets/tls/v3/tls.pb-c.h"
#include "envoy/extensions/upstreams/http/v3/http_protocol_options.pb-c.h"
#include "envoy/service/discovery/v3/discovery.pb-c.h"
#include "envoy/type/matcher/v3/regex.pb-c.h"
#include "envoy/type/matcher/v3/string.pb-c.h"
#include "envoy/type/v3/range.pb-c.h"
#include "google/protobuf/any.pb-c.h"
#include "google/protobuf/duration.pb-c.h"
#include "google/protobuf/struct.pb-c.h"
#include "google/protobuf/timestamp.pb-c.h"
#include "google/protobuf/wrappers.pb-c.h"
#include "google/rpc/status.pb-c.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Every top-level message coxswain compiles: what an Any may hold. */
static const ProtobufCMessageDescriptor *const known_types[] = {
    &envoy__config__cluster__v3__cluster__descriptor,
    &envoy__config__core__v3__address__descriptor,
    &envoy__config__core__v3__socket_address__descriptor,
    &envoy__config__core__v3__cidr_range__descriptor,
    &envoy__config__core__v3__locality__descriptor,
    &envoy__config__core__v3__node__descriptor,
    &envoy__config__core__v3__transport_socket__descriptor,
    &envoy__config__core__v3__data_source__descriptor,
    &envoy__config__core__v3__config_source__descriptor,
    &envoy__config__core__v3__aggregated_config_source__descriptor,
    &envoy__config__core__v3__self_config_source__descriptor,
    &envoy__config__endpoint__v3__cluster_load_assignment__descriptor,
    &envoy__config__endpoint__v3__endpoint__descriptor,
    &envoy__config__endpoint__v3__lb_endpoint__descriptor,
    &envoy__config__endpoint__v3__locality_lb_endpoints__descriptor,
    &envoy__config__listener__v3__api_listener__descriptor,
    &envoy__config__listener__v3__listener__descriptor,
    &envoy__config__listener__v3__filter__descriptor,
    &envoy__config__listener__v3__filter_chain__descriptor,
    &envoy__config__listener__v3__filter_chain_match__descriptor,
    &envoy__config__listener__v3__listener_filter__descriptor,
    &envoy__config__route__v3__route_configuration__descriptor,
    &envoy__config__route__v3__virtual_host__descriptor,
    &envoy__config__route__v3__route__descriptor,
    &envoy__config__route__v3__route_match__descriptor,
    &envoy__config__route__v3__route_action__descriptor,
    &envoy__config__route__v3__weighted_cluster__descriptor,
    &envoy__config__route__v3__retry_policy__descriptor,
    &envoy__config__route__v3__header_matcher__descriptor,
    &envoy__config__route__v3__query_parameter_matcher__descriptor,
    &envoy__config__route__v3__redirect_action__descriptor,
    &envoy__config__route__v3__direct_response_action__descriptor,
    &envoy__config__route__v3__non_forwarding_action__descriptor,
    &envoy__extensions__filters__http__router__v3__router__descriptor,
    &envoy__extensions__filters__http__cors__v3__cors__descriptor,
    &envoy__extensions__filters__http__cors__v3__cors_policy__descriptor,
    &envoy__extensions__filters__http__local_ratelimit__v3__local_rate_limit__descriptor,
    &envoy__extensions__access_loggers__file__v3__file_access_log__descriptor,
    &envoy__extensions__filters__listener__tls_inspector__v3__tls_inspector__descriptor,
    &envoy__extensions__filters__network__http_connection_manager__v3__http_connection_manager__descriptor,
    &envoy__extensions__filters__network__http_connection_manager__v3__rds__descriptor,
    &envoy__extensions__filters__network__http_connection_manager__v3__http_filter__descriptor,
    &envoy__extensions__transport_sockets__tls__v3__upstream_tls_context__descriptor,
    &envoy__extensions__transport_sockets__tls__v3__downstream_tls_context__descriptor,
    &envoy__extensions__transport_sockets__tls__v3__common_tls_context__descriptor,
    &envoy__extensions__transport_sockets__tls__v3__tls_parameters__descriptor,
    &envoy__extensions__transport_sockets__tls__v3__tls_certificate__descriptor,
    &envoy__extensions__transport_sockets__tls__v3__certificate_validation_context__descriptor,
    &envoy__extensions__transport_sockets__tls__v3__subject_alt_name_matcher__descriptor,
    &envoy__extensions__upstreams__http__v3__http_protocol_options__descriptor,
    &envoy__extensions__transport_sockets__tls__v3__secret__descriptor,
    &envoy__extensions__transport_sockets__tls__v3__sds_secret_config__descriptor,
    &envoy__service__discovery__v3__discovery_request__descriptor,
    &envoy__service__discovery__v3__discovery_response__descriptor,
    &envoy__service__discovery__v3__control_plane__descriptor,
    &envoy__type__matcher__v3__regex_matcher__descriptor,
    &envoy__type__matcher__v3__regex_match_and_substitute__descriptor,
    &envoy__type__matcher__v3__string_matcher__descriptor,
    &envoy__type__v3__int64_range__descriptor,
    &google__protobuf__any__descriptor,
    &google__protobuf__duration__descriptor,
    &google__protobuf__timestamp__descriptor,
    &google__protobuf__struct__descriptor,
    &google__protobuf__value__descriptor,
    &google__protobuf__list_value__descriptor,
    &google__protobuf__double_value__descriptor,
    &google__protobuf__float_value__descriptor,
    &google__protobuf__int64_value__descriptor,
    &google__protobuf__uint64_value__descriptor,
    &google__protobuf__int32_value__descriptor,
    &google__protobuf__uint32_value__descriptor,
    &google__protobuf__bool_value__descriptor,
    &google__protobuf__string_value__descriptor,
    &google__protobuf__bytes_value__descriptor,
    &google__rpc__status__descriptor,
};

/* Fields Envoy annotates (udpa.annotations.sensitive) among those we compile. */
static const struct {
    const char *msg, *field;
} sensitive_fields[] = {
    {"envoy.extensions.transport_sockets.tls.v3.TlsCertificate", "private_key"},
    {"envoy.extensions.transport_sockets.tls.v3.TlsCertificate", "password"},
};

int xlate_pbjson_sensitive(const char *msg_full_name, const char *field)
{
    for (size_t i = 0; i < sizeof(sensitive_fields) / sizeof(sensitive_fields[0]); i++)
        if (strcmp(sensitive_fields[i].msg, msg_full_name) == 0 &&
            strcmp(sensitive_fields[i].field, field) == 0)
            return 1;
    return 0;
}

const ProtobufCMessageDescriptor *xlate_pbjson_find_type(const char *type_url)
{
    if (!type_url)
        return NULL;
    const char *slash = strrchr(type_url, '/');
    const char *name = slash ? slash + 1 : type_url;
    for (size_t i = 0; i < sizeof(known_types) / sizeof(known_types[0]); i++)
        if (strcmp(known_types[i]->name, name) == 0)
            return known_types[i];
    return NULL;
}

void xlate_pbjson_json_name(const char *proto_name, char *out, size_t outlen)
{
    size_t o = 0;
    int upper = 0;
    if (outlen == 0)
        return;
    for (const char *p = proto_name; *p && o + 1 < outlen; p++) {
        if (*p == '_') {
            upper = 1;
            continue;
        }
        out[o++] = (upper && *p >= 'a' && *p <= 'z') ? (char)(*p - 'a' + 'A') : *p;
        upper = 0;
    }
    out[o] = '\0';
}

/* ---- writer ------------------------------------------------------------ */

struct w {
    struct cx_buf *b;
    unsigned flags;
    int rc;     /* first error, sticky */
    int redact; /* > 0 inside a sensitive field: strings and bytes are hidden */
};

static void put(struct w *w, const char *s, size_t n)
{
    if (w->rc == 0 && cx_buf_append(w->b, s, n) != 0)
        w->rc = XLATE_PBJSON_ENOMEM;
}

static void puts_(struct w *w, const char *s)
{
    put(w, s, strlen(s));
}

static void newline(struct w *w, int depth)
{
    static const char spaces[] = "                                ";
    if (!(w->flags & XLATE_PBJSON_PRETTY))
        return;
    put(w, "\n", 1);
    for (int i = 0; i < depth; i++)
        put(w, spaces, 2);
}

static void str(struct w *w, const char *s)
{
    if (w->rc == 0 && cx_json_escape(w->b, s ? s : "") != 0)
        w->rc = XLATE_PBJSON_ENOMEM;
}

/* Starts member |name| of an object at |depth| (the object's own depth). */
static void member(struct w *w, int *first, int depth, const char *name)
{
    if (!*first)
        put(w, ",", 1);
    *first = 0;
    newline(w, depth + 1);
    str(w, name);
    if (w->flags & XLATE_PBJSON_PRETTY)
        put(w, ": ", 2);
    else
        put(w, ":", 1);
}

static void close_(struct w *w, int first, int depth, char c)
{
    if (!first)
        newline(w, depth);
    put(w, &c, 1);
}

static void base64(struct w *w, const uint8_t *p, size_t n)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    put(w, "\"", 1);
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n)
            v |= p[i + 2];
        char q[4] = {tbl[(v >> 18) & 63], tbl[(v >> 12) & 63], i + 1 < n ? tbl[(v >> 6) & 63] : '=',
                     i + 2 < n ? tbl[v & 63] : '='};
        put(w, q, 4);
    }
    put(w, "\"", 1);
}

static void num_double(struct w *w, double d, int is_float)
{
    char tmp[40];
    if (isnan(d)) {
        puts_(w, "\"NaN\"");
        return;
    }
    if (isinf(d)) {
        puts_(w, d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
        return;
    }
    /* Shortest precision that reads back as the same value. */
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*g", prec, d);
        if (is_float ? (strtof(tmp, NULL) == (float)d) : (strtod(tmp, NULL) == d))
            break;
    }
    puts_(w, tmp);
}

/* ---- well-known types ---------------------------------------------------- */

static int render_msg(struct w *w, const ProtobufCMessage *m, int depth);

static int is_wrapper(const ProtobufCMessageDescriptor *d)
{
    static const char *const names[] = {
        "google.protobuf.DoubleValue", "google.protobuf.FloatValue",  "google.protobuf.Int64Value",
        "google.protobuf.UInt64Value", "google.protobuf.Int32Value",  "google.protobuf.UInt32Value",
        "google.protobuf.BoolValue",   "google.protobuf.StringValue", "google.protobuf.BytesValue",
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(d->name, names[i]) == 0)
            return 1;
    return 0;
}

/* Types whose JSON is not an object of their fields. */
static int is_special(const ProtobufCMessageDescriptor *d)
{
    return is_wrapper(d) || d == &google__protobuf__duration__descriptor ||
           d == &google__protobuf__timestamp__descriptor ||
           d == &google__protobuf__struct__descriptor ||
           d == &google__protobuf__value__descriptor ||
           d == &google__protobuf__list_value__descriptor;
}

static void render_duration(struct w *w, const Google__Protobuf__Duration *d)
{
    int64_t s = d->seconds;
    int32_t n = d->nanos;
    char tmp[64];
    if (s > INT64_C(315576000000) || s < -INT64_C(315576000000) || n >= 1000000000 ||
        n <= -1000000000 || (s > 0 && n < 0) || (s < 0 && n > 0)) {
        w->rc = XLATE_PBJSON_EDECODE;
        return;
    }
    const char *sign = (s < 0 || n < 0) ? "-" : "";
    uint64_t us = (uint64_t)(s < 0 ? -s : s);
    uint32_t un = (uint32_t)(n < 0 ? -n : n);
    if (un == 0)
        snprintf(tmp, sizeof(tmp), "\"%s%" PRIu64 "s\"", sign, us);
    else if (un % 1000000 == 0)
        snprintf(tmp, sizeof(tmp), "\"%s%" PRIu64 ".%03us\"", sign, us, un / 1000000);
    else if (un % 1000 == 0)
        snprintf(tmp, sizeof(tmp), "\"%s%" PRIu64 ".%06us\"", sign, us, un / 1000);
    else
        snprintf(tmp, sizeof(tmp), "\"%s%" PRIu64 ".%09us\"", sign, us, un);
    puts_(w, tmp);
}

static void render_timestamp(struct w *w, const Google__Protobuf__Timestamp *t)
{
    /* 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59.999999999Z */
    if (t->seconds < INT64_C(-62135596800) || t->seconds > INT64_C(253402300799) || t->nanos < 0 ||
        t->nanos >= 1000000000) {
        w->rc = XLATE_PBJSON_EDECODE;
        return;
    }
    time_t secs = (time_t)t->seconds;
    struct tm tm;
    char date[40], tmp[64];
    gmtime_r(&secs, &tm);
    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
    uint32_t n = (uint32_t)t->nanos;
    if (n == 0)
        snprintf(tmp, sizeof(tmp), "\"%sZ\"", date);
    else if (n % 1000000 == 0)
        snprintf(tmp, sizeof(tmp), "\"%s.%03uZ\"", date, n / 1000000);
    else if (n % 1000 == 0)
        snprintf(tmp, sizeof(tmp), "\"%s.%06uZ\"", date, n / 1000);
    else
        snprintf(tmp, sizeof(tmp), "\"%s.%09uZ\"", date, n);
    puts_(w, tmp);
}

static void render_value(struct w *w, const Google__Protobuf__Value *v, int depth);

static void render_list(struct w *w, const Google__Protobuf__ListValue *l, int depth)
{
    int first = 1;
    put(w, "[", 1);
    for (size_t i = 0; i < l->n_values; i++) {
        if (!first)
            put(w, ",", 1);
        first = 0;
        newline(w, depth + 1);
        render_value(w, l->values[i], depth + 1);
    }
    close_(w, first, depth, ']');
}

static void render_value(struct w *w, const Google__Protobuf__Value *v, int depth)
{
    if (depth > XLATE_PBJSON_MAX_DEPTH + (int)((w->flags >> 8) & 0xff)) {
        w->rc = XLATE_PBJSON_EDEPTH;
        return;
    }
    if (!v) {
        puts_(w, "null");
        return;
    }
    switch (v->kind_case) {
    case GOOGLE__PROTOBUF__VALUE__KIND_NUMBER_VALUE:
        num_double(w, v->number_value, 0);
        break;
    case GOOGLE__PROTOBUF__VALUE__KIND_STRING_VALUE:
        str(w, v->string_value);
        break;
    case GOOGLE__PROTOBUF__VALUE__KIND_BOOL_VALUE:
        puts_(w, v->bool_value ? "true" : "false");
        break;
    case GOOGLE__PROTOBUF__VALUE__KIND_STRUCT_VALUE:
        if (v->struct_value)
            w->rc = w->rc ? w->rc : render_msg(w, &v->struct_value->base, depth);
        else
            puts_(w, "{}");
        break;
    case GOOGLE__PROTOBUF__VALUE__KIND_LIST_VALUE:
        if (v->list_value)
            render_list(w, v->list_value, depth);
        else
            puts_(w, "[]");
        break;
    default:
        puts_(w, "null");
        break;
    }
}

/* ---- fields -------------------------------------------------------------- */

static void render_single(struct w *w, const ProtobufCFieldDescriptor *f, const void *p, int depth);

static void render_enum(struct w *w, const ProtobufCEnumDescriptor *ed, int v)
{
    const ProtobufCEnumValue *ev = ed ? protobuf_c_enum_descriptor_get_value(ed, v) : NULL;
    if (ev) {
        str(w, ev->name);
    } else {
        char tmp[16];
        snprintf(tmp, sizeof(tmp), "%d", v);
        puts_(w, tmp);
    }
}

static void render_any(struct w *w, const Google__Protobuf__Any *a, int depth);

static void render_single(struct w *w, const ProtobufCFieldDescriptor *f, const void *p, int depth)
{
    char tmp[32];
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        snprintf(tmp, sizeof(tmp), "%" PRId32, *(const int32_t *)p);
        puts_(w, tmp);
        break;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        snprintf(tmp, sizeof(tmp), "%" PRIu32, *(const uint32_t *)p);
        puts_(w, tmp);
        break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        snprintf(tmp, sizeof(tmp), "\"%" PRId64 "\"", *(const int64_t *)p);
        puts_(w, tmp);
        break;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        snprintf(tmp, sizeof(tmp), "\"%" PRIu64 "\"", *(const uint64_t *)p);
        puts_(w, tmp);
        break;
    case PROTOBUF_C_TYPE_FLOAT:
        num_double(w, *(const float *)p, 1);
        break;
    case PROTOBUF_C_TYPE_DOUBLE:
        num_double(w, *(const double *)p, 0);
        break;
    case PROTOBUF_C_TYPE_BOOL:
        puts_(w, *(const protobuf_c_boolean *)p ? "true" : "false");
        break;
    case PROTOBUF_C_TYPE_ENUM:
        render_enum(w, f->descriptor, *(const int *)p);
        break;
    case PROTOBUF_C_TYPE_STRING:
        str(w, w->redact ? XLATE_PBJSON_REDACTED : *(char *const *)p);
        break;
    case PROTOBUF_C_TYPE_BYTES: {
        const ProtobufCBinaryData *bd = p;
        if (w->redact)
            str(w, XLATE_PBJSON_REDACTED);
        else
            base64(w, bd->data, bd->len);
        break;
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *m = *(ProtobufCMessage *const *)p;
        if (!m) {
            puts_(w, "null");
            break;
        }
        int rc = render_msg(w, m, depth);
        if (rc && !w->rc)
            w->rc = rc;
        break;
    }
    }
}

static size_t elem_size(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        return 4;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return 8;
    case PROTOBUF_C_TYPE_FLOAT:
        return sizeof(float);
    case PROTOBUF_C_TYPE_DOUBLE:
        return sizeof(double);
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_ENUM:
        return sizeof(int);
    case PROTOBUF_C_TYPE_STRING:
        return sizeof(char *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(ProtobufCMessage *);
    }
    return 0;
}

/* A proto3 scalar holding its default is not shown. */
static int is_default(const ProtobufCFieldDescriptor *f, const void *p)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        return *(const uint32_t *)p == 0;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return *(const uint64_t *)p == 0;
    case PROTOBUF_C_TYPE_FLOAT:
        return *(const float *)p == 0 && !signbit(*(const float *)p);
    case PROTOBUF_C_TYPE_DOUBLE:
        return *(const double *)p == 0 && !signbit(*(const double *)p);
    case PROTOBUF_C_TYPE_BOOL:
        return !*(const protobuf_c_boolean *)p;
    case PROTOBUF_C_TYPE_ENUM:
        return *(const int *)p == 0;
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(char *const *)p;
        return !s || !*s;
    }
    case PROTOBUF_C_TYPE_BYTES:
        return ((const ProtobufCBinaryData *)p)->len == 0;
    case PROTOBUF_C_TYPE_MESSAGE:
        return *(ProtobufCMessage *const *)p == NULL;
    }
    return 1;
}

/* A repeated field of nested "<Name>Entry" {key = 1; value = 2} messages is a
 * map (protoc generates exactly that shape for map<K, V>). */
static int is_map_field(const ProtobufCFieldDescriptor *f)
{
    if (f->label != PROTOBUF_C_LABEL_REPEATED || f->type != PROTOBUF_C_TYPE_MESSAGE)
        return 0;
    const ProtobufCMessageDescriptor *d = f->descriptor;
    size_t sl = strlen(d->short_name);
    return d->n_fields == 2 && d->fields[0].id == 1 && d->fields[1].id == 2 &&
           strcmp(d->fields[0].name, "key") == 0 && strcmp(d->fields[1].name, "value") == 0 &&
           sl > 5 && strcmp(d->short_name + sl - 5, "Entry") == 0;
}

struct map_item {
    char *key;
    const ProtobufCMessage *entry;
};

static int map_item_cmp(const void *a, const void *b)
{
    return strcmp(((const struct map_item *)a)->key, ((const struct map_item *)b)->key);
}

static void map_key(const ProtobufCFieldDescriptor *kf, const void *p, char *out, size_t outlen)
{
    switch (kf->type) {
    case PROTOBUF_C_TYPE_STRING:
        out[0] = '\0';
        break; /* handled by the caller: strings are used as they are */
    case PROTOBUF_C_TYPE_BOOL:
        snprintf(out, outlen, "%s", *(const protobuf_c_boolean *)p ? "true" : "false");
        break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        snprintf(out, outlen, "%" PRId64, *(const int64_t *)p);
        break;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        snprintf(out, outlen, "%" PRIu64, *(const uint64_t *)p);
        break;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        snprintf(out, outlen, "%" PRIu32, *(const uint32_t *)p);
        break;
    default:
        snprintf(out, outlen, "%" PRId32, *(const int32_t *)p);
        break;
    }
}

static void render_map(struct w *w, const ProtobufCFieldDescriptor *f, size_t n,
                       ProtobufCMessage *const *entries, int depth)
{
    const ProtobufCMessageDescriptor *ed = f->descriptor;
    const ProtobufCFieldDescriptor *kf = &ed->fields[0];
    const ProtobufCFieldDescriptor *vf = &ed->fields[1];
    struct map_item *items = calloc(n ? n : 1, sizeof(*items));
    char(*keys)[24] = calloc(n ? n : 1, sizeof(*keys));
    if (!items || !keys) {
        w->rc = XLATE_PBJSON_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const char *base = (const char *)entries[i];
        items[i].entry = entries[i];
        if (kf->type == PROTOBUF_C_TYPE_STRING) {
            char *s = *(char *const *)(base + kf->offset);
            items[i].key = s ? s : (char *)"";
        } else {
            map_key(kf, base + kf->offset, keys[i], sizeof(keys[i]));
            items[i].key = keys[i];
        }
    }
    qsort(items, n, sizeof(*items), map_item_cmp);
    int first = 1;
    put(w, "{", 1);
    for (size_t i = 0; i < n; i++) {
        member(w, &first, depth, items[i].key);
        const char *base = (const char *)items[i].entry;
        if (vf->type == PROTOBUF_C_TYPE_MESSAGE &&
            !*(ProtobufCMessage *const *)(base + vf->offset) &&
            vf->descriptor == &google__protobuf__value__descriptor)
            puts_(w, "null");
        else if (vf->type == PROTOBUF_C_TYPE_MESSAGE &&
                 !*(ProtobufCMessage *const *)(base + vf->offset))
            puts_(w, "{}");
        else
            render_single(w, vf, base + vf->offset, depth + 1);
    }
    close_(w, first, depth, '}');
out:
    free(items);
    free(keys);
}

static void render_field(struct w *w, const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f,
                         int *first, int depth)
{
    const char *base = (const char *)m;
    const void *p = base + f->offset;
    const char *name = f->name;
    char jname[128];
    if (!(w->flags & XLATE_PBJSON_PROTO_NAMES)) {
        xlate_pbjson_json_name(f->name, jname, sizeof(jname));
        name = jname;
    }
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
        size_t n = *(const size_t *)(base + f->quantifier_offset);
        if (n == 0)
            return;
        const char *arr = *(char *const *)p;
        member(w, first, depth, name);
        if (is_map_field(f)) {
            render_map(w, f, n, (ProtobufCMessage *const *)arr, depth + 1);
            return;
        }
        size_t es = elem_size(f->type);
        int efirst = 1;
        put(w, "[", 1);
        for (size_t k = 0; k < n; k++) {
            if (!efirst)
                put(w, ",", 1);
            efirst = 0;
            newline(w, depth + 2);
            render_single(w, f, arr + k * es, depth + 2);
        }
        close_(w, efirst, depth + 1, ']');
        return;
    }
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
        if (*(const uint32_t *)(base + f->quantifier_offset) != f->id)
            return;
    } else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset &&
               f->type != PROTOBUF_C_TYPE_MESSAGE && f->type != PROTOBUF_C_TYPE_STRING) {
        if (!*(const protobuf_c_boolean *)(base + f->quantifier_offset))
            return;
    } else if (f->label == PROTOBUF_C_LABEL_OPTIONAL) {
        if ((f->type == PROTOBUF_C_TYPE_MESSAGE || f->type == PROTOBUF_C_TYPE_STRING) &&
            !*(void *const *)p)
            return;
    } else if (is_default(f, p)) {
        return;
    }
    member(w, first, depth, name);
    render_single(w, f, p, depth + 1);
}

static void render_fields(struct w *w, const ProtobufCMessage *m, int *first, int depth)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (unsigned i = 0; i < d->n_fields && w->rc == 0; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        /* a sensitive field: its strings and bytes, however deep (an Any
         * inside included), are hidden */
        int hide =
            !(w->flags & XLATE_PBJSON_SHOW_SECRETS) && xlate_pbjson_sensitive(d->name, f->name);
        w->redact += hide;
        render_field(w, m, f, first, depth);
        w->redact -= hide;
    }
}

static void render_any(struct w *w, const Google__Protobuf__Any *a, int depth)
{
    const ProtobufCMessageDescriptor *d = xlate_pbjson_find_type(a->type_url);
    if (!d) {
        w->rc = XLATE_PBJSON_EDECODE;
        return;
    }
    ProtobufCMessage *inner = protobuf_c_message_unpack(d, NULL, a->value.len, a->value.data);
    if (!inner) {
        w->rc = XLATE_PBJSON_EDECODE;
        return;
    }
    int first = 1;
    put(w, "{", 1);
    member(w, &first, depth, "@type");
    str(w, a->type_url);
    if (is_special(d) || d == &google__protobuf__any__descriptor) {
        member(w, &first, depth, "value");
        int rc = render_msg(w, inner, depth + 1);
        if (rc && !w->rc)
            w->rc = rc;
    } else {
        render_fields(w, inner, &first, depth);
    }
    close_(w, first, depth, '}');
    protobuf_c_message_free_unpacked(inner, NULL);
}

static int render_msg(struct w *w, const ProtobufCMessage *m, int depth)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    if (depth > XLATE_PBJSON_MAX_DEPTH + (int)((w->flags >> 8) & 0xff))
        return w->rc = XLATE_PBJSON_EDEPTH;
    if (w->rc)
        return w->rc;
    if (d == &google__protobuf__any__descriptor) {
        render_any(w, (const Google__Protobuf__Any *)m, depth);
    } else if (d == &google__protobuf__duration__descriptor) {
        render_duration(w, (const Google__Protobuf__Duration *)m);
    } else if (d == &google__protobuf__timestamp__descriptor) {
        render_timestamp(w, (const Google__Protobuf__Timestamp *)m);
    } else if (d == &google__protobuf__value__descriptor) {
        render_value(w, (const Google__Protobuf__Value *)m, depth);
    } else if (d == &google__protobuf__list_value__descriptor) {
        render_list(w, (const Google__Protobuf__ListValue *)m, depth);
    } else if (d == &google__protobuf__struct__descriptor) {
        const Google__Protobuf__Struct *s = (const Google__Protobuf__Struct *)m;
        render_map(w, &d->fields[0], s->n_fields, (ProtobufCMessage *const *)s->fields, depth);
    } else if (is_wrapper(d)) {
        render_single(w, &d->fields[0], (const char *)m + d->fields[0].offset, depth);
    } else {
        int first = 1;
        put(w, "{", 1);
        render_fields(w, m, &first, depth);
        close_(w, first, depth, '}');
    }
    return w->rc;
}

int xlate_pbjson_render(const ProtobufCMessage *msg, unsigned flags, struct cx_buf *out)
{
    struct w w = {.b = out, .flags = flags, .rc = 0};
    return render_msg(&w, msg, (int)((flags >> 8) & 0xff));
}

int xlate_pbjson_render_bytes(const ProtobufCMessageDescriptor *desc, const uint8_t *data,
                              size_t len, unsigned flags, struct cx_buf *out)
{
    ProtobufCMessage *m = protobuf_c_message_unpack(desc, NULL, len, data);
    if (!m)
        return XLATE_PBJSON_EDECODE;
    int rc = xlate_pbjson_render(m, flags, out);
    protobuf_c_message_free_unpacked(m, NULL);
    return rc;
}

int xlate_pbjson_render_any(const char *type_url, const uint8_t *data, size_t len, unsigned flags,
                            struct cx_buf *out)
{
    Google__Protobuf__Any a = GOOGLE__PROTOBUF__ANY__INIT;
    a.type_url = (char *)type_url;
    a.value.data = (uint8_t *)data;
    a.value.len = len;
    return xlate_pbjson_render(&a.base, flags, out);
}
