#include "xlate_api.h"

#include "cx_json.h"
#include "cx_time.h"
#include "filter_selector.h"
#include "xlate_re2.h"
#include "xlate_tls.h"

#include <openssl/crypto.h>

#include <arpa/inet.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Envoy's default runtime limit on a regex's RE2 program size. */
#define ENVOY_REGEX_PROGRAM_SIZE 100

static const char *const reason_names[XL_R_COUNT] = {
    [XL_R_NONE] = "Accepted",
    [XL_R_INVALID_SPEC] = "InvalidSpec",
    [XL_R_UNKNOWN_FIELD] = "UnknownField",
    [XL_R_INVALID_REGEX] = "InvalidRegex",
    [XL_R_INVALID_WEIGHTS] = "InvalidWeights",
    [XL_R_INVALID_PORT] = "InvalidPort",
    [XL_R_INVALID_DOMAIN] = "InvalidDomain",
    [XL_R_UNSUPPORTED_VERSION] = "UnsupportedVersion",
    [XL_R_DUPLICATE] = "DuplicateObject",
    [XL_R_DOMAIN_CONFLICT] = "DomainConflict",
    [XL_R_UPSTREAM_NOT_FOUND] = "UpstreamNotFound",
    [XL_R_UPSTREAM_REJECTED] = "UpstreamRejected",
    [XL_R_ROUTE_TABLE_NOT_FOUND] = "RouteTableNotFound",
    [XL_R_ROUTE_TABLE_REJECTED] = "RouteTableRejected",
    [XL_R_DELEGATION_CYCLE] = "DelegationCycle",
    [XL_R_PREFIX_VIOLATION] = "PrefixViolation",
    [XL_R_DELEGATION_DEPTH] = "DelegationTooDeep",
    [XL_R_NO_ROUTES] = "NoValidRoutes",
    [XL_R_NOT_SELECTED] = "NotSelected",
    [XL_R_SERVICE_NOT_FOUND] = "ServiceNotFound",
    [XL_R_PORT_NOT_FOUND] = "ServicePortNotFound",
    [XL_R_NO_ENDPOINTS] = "NoReadyEndpoints",
    [XL_R_UNSUPPORTED] = "UnsupportedByProxyless",
    [XL_R_REGEX_SIZE] = "RegexProgramSize",
    [XL_R_UNKNOWN_KIND] = "UnknownKind",
    [XL_R_SECRET_NOT_FOUND] = "SecretNotFound",
    [XL_R_CONFIG_MAP_NOT_FOUND] = "ConfigMapNotFound",
    [XL_R_REF_NOT_PERMITTED] = "RefNotPermitted",
    [XL_R_INVALID_CERTIFICATE] = "InvalidCertificate",
    [XL_R_CERT_EXPIRED] = "CertificateExpired",
    [XL_R_CERT_NOT_YET_VALID] = "CertificateNotYetValid",
    [XL_R_DOMAIN_NOT_COVERED] = "DomainNotCovered",
    [XL_R_CERT_UNUSED] = "CertificateUnused",
};

const char *xlate_reason_name(enum xl_reason r)
{
    return (unsigned)r < XL_R_COUNT && reason_names[r] ? reason_names[r] : "Unknown";
}

static const struct {
    const char *api_version, *kind;
} kinds[XLATE_KIND_COUNT] = {
    [XLATE_KIND_GATEWAY] = {XLATE_GROUP_VERSION, "Gateway"},
    [XLATE_KIND_VIRTUAL_SERVICE] = {XLATE_GROUP_VERSION, "VirtualService"},
    [XLATE_KIND_ROUTE_TABLE] = {XLATE_GROUP_VERSION, "RouteTable"},
    [XLATE_KIND_UPSTREAM] = {XLATE_GROUP_VERSION, "Upstream"},
    [XLATE_KIND_SERVICE] = {"v1", "Service"},
    [XLATE_KIND_ENDPOINT_SLICE] = {"discovery.k8s.io/v1", "EndpointSlice"},
    [XLATE_KIND_SECRET] = {"v1", "Secret"},
    [XLATE_KIND_CONFIG_MAP] = {"v1", "ConfigMap"},
};

enum xlate_kind xlate_kind_of(const cJSON *obj)
{
    const char *kind = cx_json_str(obj, "kind");
    const char *av = cx_json_str(obj, "apiVersion");
    if (!kind || !av)
        return XLATE_KIND_UNKNOWN;
    for (int k = 0; k < XLATE_KIND_COUNT; k++) {
        if (strcmp(kind, kinds[k].kind) != 0)
            continue;
        /* Our kinds in another version of our group are still ours: the
         * parse reports the version as unsupported. */
        const char *slash = strchr(kinds[k].api_version, '/');
        size_t glen = slash ? (size_t)(slash - kinds[k].api_version) : 0;
        if (strcmp(av, kinds[k].api_version) == 0 ||
            (glen && strncmp(av, kinds[k].api_version, glen + 1) == 0 && k <= XLATE_KIND_UPSTREAM))
            return (enum xlate_kind)k;
    }
    return XLATE_KIND_UNKNOWN;
}

const char *xlate_kind_name(enum xlate_kind k)
{
    return (k >= 0 && k < XLATE_KIND_COUNT) ? kinds[k].kind : "Unknown";
}

/* ---- errors -------------------------------------------------------------- */

int xlate_errors_add(struct xl_errors *e, struct xl_arena *a, enum xlate_state st, enum xl_reason r,
                     const char *fmt, ...)
{
    if (e->n >= XLATE_MAX_ERRORS) {
        e->dropped++;
        /* keep the worst state visible even when the list is full */
        if (st == XLATE_REJECTED) {
            for (size_t i = 0; i < e->n; i++)
                if (e->items[i].state == XLATE_REJECTED)
                    return 0;
            e->items[e->n - 1].state = XLATE_REJECTED;
            e->items[e->n - 1].reason = r;
        }
        return 0;
    }
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    char *m = xlate_strdup(a, buf);
    if (!e->items)
        e->items = xlate_alloc(a, XLATE_MAX_ERRORS * sizeof(*e->items));
    if (!m || !e->items)
        return -1;
    e->items[e->n++] = (struct xl_error){.reason = r, .state = st, .msg = m};
    return 0;
}

enum xlate_state xlate_errors_state(const struct xl_errors *e)
{
    enum xlate_state s = XLATE_ACCEPTED;
    for (size_t i = 0; i < e->n; i++)
        if (e->items[i].state > s)
            s = e->items[i].state;
    return s;
}

/* ---- parse context ---------------------------------------------------------- */

/* The field path ("spec.routes[2].match") is kept as a stack of segments
 * and written out only when an error needs it: parsing visits every field
 * of every object, errors are rare. */
struct pseg {
    const char *fmt;  /* "%s" and "%zu" only */
    const char *a[2]; /* the %s arguments, in order (valid while parsing) */
    size_t z;         /* the %zu argument */
};

#define PATH_DEPTH 48

struct pctx {
    struct xl_arena *a;
    struct xl_object *o;
    struct pseg seg[PATH_DEPTH];
    size_t depth;
    int oom;
};

/* Appends a segment: a literal one (push_lit) or one with arguments. Both
 * return what pop() takes to remove it. Deeper than PATH_DEPTH is not
 * recorded (no schema nests that deep). */
static inline size_t push_lit(struct pctx *p, const char *lit)
{
    size_t old = p->depth;
    if (old < PATH_DEPTH)
        p->seg[p->depth++] = (struct pseg){.fmt = lit};
    return old;
}

static size_t push(struct pctx *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static size_t push(struct pctx *p, const char *fmt, ...)
{
    size_t old = p->depth;
    if (old >= PATH_DEPTH)
        return old;
    struct pseg *g = &p->seg[p->depth++];
    *g = (struct pseg){.fmt = fmt};
    int na = 0;
    va_list ap;
    va_start(ap, fmt);
    for (const char *f = fmt; *f; f++) {
        if (f[0] == '%' && f[1] == 's') {
            const char *a = va_arg(ap, const char *);
            if (na < 2)
                g->a[na++] = a;
        } else if (f[0] == '%' && f[1] == 'z' && f[2] == 'u') {
            g->z = va_arg(ap, size_t);
        }
    }
    va_end(ap);
    return old;
}

static void pop(struct pctx *p, size_t old)
{
    p->depth = old;
}

/* The path written out (truncated to |cap|). A small formatter: only "%s"
 * and "%zu" occur in the segments. */
static void path_render(const struct pctx *p, char *out, size_t cap)
{
    size_t n = 0;
    cap--;
    for (size_t i = 0; i < p->depth; i++) {
        const struct pseg *g = &p->seg[i];
        int na = 0;
        for (const char *f = g->fmt; *f && n < cap; f++) {
            if (f[0] == '%' && f[1] == 's') {
                const char *a = na < 2 ? g->a[na++] : "";
                for (; a && *a && n < cap; a++)
                    out[n++] = *a;
                f++;
            } else if (f[0] == '%' && f[1] == 'z' && f[2] == 'u') {
                char d[24];
                int k = 0;
                size_t v = g->z;
                do {
                    d[k++] = (char)('0' + v % 10);
                    v /= 10;
                } while (v);
                while (k > 0 && n < cap)
                    out[n++] = d[--k];
                f += 2;
            } else {
                out[n++] = *f;
            }
        }
    }
    out[n] = '\0';
}

static void perr(struct pctx *p, enum xlate_state st, enum xl_reason r, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void perr(struct pctx *p, enum xlate_state st, enum xl_reason r, const char *fmt, ...)
{
    char buf[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    char path[512] = "";
    if (p->depth)
        path_render(p, path, sizeof(path));
    int rc = path[0] ? xlate_errors_add(&p->o->errors, p->a, st, r, "%s: %s", path, buf)
                     : xlate_errors_add(&p->o->errors, p->a, st, r, "%s", buf);
    if (rc != 0)
        p->oom = 1;
}

#define REJECT(p, r, ...) perr(p, XLATE_REJECTED, r, __VA_ARGS__)
#define WARN(p, r, ...)   perr(p, XLATE_WARNING, r, __VA_ARGS__)

/* Whether member name |a| is |b|: inline, as names are a few bytes and
 * compared a few times per field. */
static inline int keyeq(const char *a, const char *b)
{
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

static const char *jtype(const cJSON *v)
{
    if (cJSON_IsString(v))
        return "string";
    if (cJSON_IsNumber(v))
        return "number";
    if (cJSON_IsBool(v))
        return "boolean";
    if (cJSON_IsArray(v))
        return "array";
    if (cJSON_IsObject(v))
        return "object";
    if (cJSON_IsNull(v))
        return "null";
    return "invalid";
}

static char *dup(struct pctx *p, const char *s)
{
    char *r = xlate_strdup(p->a, s ? s : "");
    if (!r)
        p->oom = 1;
    return r;
}

static void *alloc(struct pctx *p, size_t n)
{
    void *r = xlate_alloc(p->a, n ? n : 1);
    if (!r)
        p->oom = 1;
    return r;
}

/* Reports member |c| of an object as unknown (its path is the current one
 * plus the member's name). */
static void unknown_field(struct pctx *p, const cJSON *c, const char *const *allowed)
{
    size_t o = push(p, "%s%s", p->depth ? "." : "", c->string ? c->string : "");
    int yaml11_on = 0;
    for (const char *const *k = allowed; *k; k++)
        yaml11_on |= strcmp(*k, "on") == 0;
    if (yaml11_on && c->string && strcmp(c->string, "true") == 0)
        REJECT(p, XL_R_UNKNOWN_FIELD,
               "unknown field (YAML 1.1, as kubectl reads it, turns an unquoted on: "
               "into true:; write \"on\":)");
    else
        REJECT(p, XL_R_UNKNOWN_FIELD, "unknown field");
    pop(p, o);
}

/* Index of member |c|'s name in |allowed| (NULL-terminated), or -1. */
static int allowed_index(const cJSON *c, const char *const *allowed)
{
    for (int k = 0; allowed[k]; k++)
        if (c->string && c->string[0] == allowed[k][0] && keyeq(c->string, allowed[k]))
            return k;
    return -1;
}

/* Reports every member of |obj| not in |allowed| (NULL-terminated). */
static void check_fields(struct pctx *p, const cJSON *obj, const char *const *allowed)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, obj)
    {
        if (allowed_index(c, allowed) < 0)
            unknown_field(p, c, allowed);
    }
}

/* check_fields, and the members it allows in one walk: f[i] is the first
 * member named allowed[i] (at most 32 names), NULL if none or JSON null
 * (as get() reads them). For the objects parsed many times per
 * VirtualService (routes, matches, headers, references): one walk instead
 * of one per field. */
static void fields(struct pctx *p, const cJSON *obj, const char *const *allowed, const cJSON **f)
{
    int n = 0;
    while (allowed[n])
        f[n++] = NULL;
    uint32_t seen = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, obj)
    {
        cx_json_prefetch(c);
        int k = allowed_index(c, allowed);
        if (k < 0) {
            unknown_field(p, c, allowed);
        } else if (!(seen & UINT32_C(1) << k)) {
            seen |= UINT32_C(1) << k;
            f[k] = cJSON_IsNull(c) ? NULL : c;
        }
    }
}

/* Child |key| of |obj|; NULL if absent or JSON null. */
static const cJSON *get(const cJSON *obj, const char *key)
{
    const cJSON *v = cx_json_member(obj, key);
    return (v && !cJSON_IsNull(v)) ? v : NULL;
}

/* Reports a problem with member |key| of the current path. */
#define REJECT_AT(p, key, r, ...)            \
    do {                                     \
        size_t o_ = push((p), ".%s", (key)); \
        REJECT((p), (r), __VA_ARGS__);       \
        pop((p), o_);                        \
    } while (0)

/* The readers below take member |key|'s value |v| (NULL: absent), as
 * fields() or get() found it; the get_* forms look it up. */

/* A string, borrowed from the JSON. Returns 1 if present and a string, 0
 * if absent (an error when |required|), -1 on a type error (reported). The
 * path is only built for a report: fields are read far more often than
 * they are wrong. */
static int str_ref_v(struct pctx *p, const cJSON *v, const char *key, int required,
                     const char **out)
{
    if (!v) {
        if (required)
            REJECT_AT(p, key, XL_R_INVALID_SPEC, "required");
        return 0;
    }
    if (!cJSON_IsString(v)) {
        REJECT_AT(p, key, XL_R_INVALID_SPEC, "must be a string, got %s", jtype(v));
        return -1;
    }
    if (required && !v->valuestring[0]) {
        REJECT_AT(p, key, XL_R_INVALID_SPEC, "must not be empty");
        return -1;
    }
    *out = v->valuestring;
    return 1;
}

/* A string copied into the arena; returns like str_ref_v. */
static int str_v(struct pctx *p, const cJSON *v, const char *key, int required, char **out)
{
    const char *s = NULL;
    int rc = str_ref_v(p, v, key, required, &s);
    if (rc == 1)
        *out = dup(p, s);
    return rc;
}

static int get_str(struct pctx *p, const cJSON *obj, const char *key, int required, char **out)
{
    return str_v(p, get(obj, key), key, required, out);
}

static int bool_v(struct pctx *p, const cJSON *v, const char *key, int *out)
{
    if (!v)
        return 0;
    if (!cJSON_IsBool(v)) {
        REJECT_AT(p, key, XL_R_INVALID_SPEC, "must be a boolean, got %s", jtype(v));
        return -1;
    }
    *out = cJSON_IsTrue(v);
    return 1;
}

static int get_bool(struct pctx *p, const cJSON *obj, const char *key, int *out)
{
    return bool_v(p, get(obj, key), key, out);
}

/* An integer in [lo, hi]. */
static int uint_v(struct pctx *p, const cJSON *v, const char *key, int required, uint64_t lo,
                  uint64_t hi, enum xl_reason range_reason, uint64_t *out)
{
    if (!v) {
        if (required)
            REJECT_AT(p, key, XL_R_INVALID_SPEC, "required");
        return 0;
    }
    if (!cJSON_IsNumber(v)) {
        REJECT_AT(p, key, XL_R_INVALID_SPEC, "must be an integer, got %s", jtype(v));
    } else if (v->valuedouble != floor(v->valuedouble) || isinf(v->valuedouble)) {
        REJECT_AT(p, key, XL_R_INVALID_SPEC, "must be an integer, got %g", v->valuedouble);
    } else if (v->valuedouble < (double)lo || v->valuedouble > (double)hi) {
        REJECT_AT(p, key, range_reason, "must be between %llu and %llu, got %.0f",
                  (unsigned long long)lo, (unsigned long long)hi, v->valuedouble);
    } else {
        *out = (uint64_t)v->valuedouble;
        return 1;
    }
    return -1;
}

static int get_uint(struct pctx *p, const cJSON *obj, const char *key, int required, uint64_t lo,
                    uint64_t hi, enum xl_reason range_reason, uint64_t *out)
{
    return uint_v(p, get(obj, key), key, required, lo, hi, range_reason, out);
}

static int duration_v(struct pctx *p, const cJSON *v, const char *key, int64_t *out)
{
    const char *s = NULL;
    int rc = str_ref_v(p, v, key, 0, &s);
    if (rc != 1)
        return rc;
    char err[200];
    if (cx_duration_parse(s, out, err, sizeof(err)) != 0) {
        REJECT_AT(p, key, XL_R_INVALID_SPEC, "%s", err);
        rc = -1;
    } else if (*out > INT64_C(315576000) * CX_NS_PER_S) { /* ten years */
        REJECT_AT(p, key, XL_R_INVALID_SPEC, "duration \"%s\" is too long", s);
        rc = -1;
    }
    return rc;
}

static int get_duration(struct pctx *p, const cJSON *obj, const char *key, int64_t *out)
{
    return duration_v(p, get(obj, key), key, out);
}

/* An object; reports a type error. */
static const cJSON *obj_v(struct pctx *p, const cJSON *v, const char *key, int required)
{
    if (!v) {
        if (required)
            REJECT_AT(p, key, XL_R_INVALID_SPEC, "required");
        return NULL;
    }
    if (!cJSON_IsObject(v)) {
        REJECT_AT(p, key, XL_R_INVALID_SPEC, "must be an object, got %s", jtype(v));
        return NULL;
    }
    return v;
}

static const cJSON *get_obj(struct pctx *p, const cJSON *obj, const char *key, int required)
{
    return obj_v(p, get(obj, key), key, required);
}

/* An array with at most |max| items (and at least one if required). */
static const cJSON *arr_v(struct pctx *p, const cJSON *v, const char *key, int required, int max)
{
    if (!v) {
        if (required)
            REJECT_AT(p, key, XL_R_INVALID_SPEC, "required");
        return NULL;
    }
    if (!cJSON_IsArray(v)) {
        REJECT_AT(p, key, XL_R_INVALID_SPEC, "must be an array, got %s", jtype(v));
        return NULL;
    }
    int n = (int)cx_json_count(v);
    if (required && n == 0) {
        REJECT_AT(p, key, XL_R_INVALID_SPEC, "must not be empty");
        return NULL;
    }
    if (n > max) {
        REJECT_AT(p, key, XL_R_INVALID_SPEC, "at most %d items allowed, got %d", max, n);
        return NULL;
    }
    return v;
}

static const cJSON *get_arr(struct pctx *p, const cJSON *obj, const char *key, int required,
                            int max)
{
    return arr_v(p, get(obj, key), key, required, max);
}

/* ---- shared checks ---------------------------------------------------------- */

/* Dotted-quad IPv4 as inet_pton(AF_INET) takes it: four decimal parts of
 * 0-255, no leading zeros, nothing else. Endpoint addresses are read by
 * the hundred thousand; this is several times cheaper than inet_pton. */
static int ipv4(const char *s)
{
    for (int part = 0; part < 4; part++) {
        if (part && *s++ != '.')
            return 0;
        if (*s < '0' || *s > '9')
            return 0;
        unsigned v = 0;
        int digits = 0;
        for (; *s >= '0' && *s <= '9'; s++, digits++) {
            if (digits && v == 0)
                return 0; /* leading zero */
            v = v * 10 + (unsigned)(*s - '0');
            if (v > 255)
                return 0;
        }
    }
    return *s == '\0';
}

int xlate_is_ip(const char *s)
{
    unsigned char buf[16];
    return s && (ipv4(s) || (strchr(s, ':') && inet_pton(AF_INET6, s, buf) == 1));
}

/* DNS-1123 label (namespace names). */
static int dns_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && !(c == '-' && i > 0 && i + 1 < n))
            return 0;
    }
    return 1;
}

/* DNS-1123 subdomain (object names). */
static int dns_subdomain(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && !((c == '-' || c == '.') && i > 0 && i + 1 < n))
            return 0;
    }
    return 1;
}

int xlate_domain_valid(const char *s, char *msg, size_t msglen)
{
    size_t n = strlen(s);
    if (n == 0) {
        snprintf(msg, msglen, "must not be empty");
        return -1;
    }
    if (n > 253 + 6) {
        snprintf(msg, msglen, "longer than 259 characters");
        return -1;
    }
    size_t stars = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '*') {
            stars++;
            continue;
        }
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.' || c == ':' || c == '_' || c == '[' || c == ']')) {
            snprintf(msg, msglen, "character '%c' is not allowed in a domain",
                     c >= 0x20 && c < 0x7f ? c : '?');
            return -1;
        }
    }
    if (stars > 1 || (stars == 1 && n > 1 && s[0] != '*' && s[n - 1] != '*')) {
        snprintf(msg, msglen,
                 "a wildcard must be the whole domain or its first or last character "
                 "(\"*\", \"*.example.com\", \"example.*\")");
        return -1;
    }
    return 0;
}

static int header_name_ok(const char *s)
{
    /* RFC 7230 token characters; HTTP/2 pseudo headers start with ':' */
    if (!*s)
        return 0;
    for (const char *c = (*s == ':') ? s + 1 : s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              strchr("!#$%&'*+-.^_`|~", *c)))
            return 0;
    return *s != ':' || s[1];
}

static int has_ctl(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 1;
    return 0;
}

static void check_regex(struct pctx *p, const char *re)
{
    char err[300];
    if (xlate_re2_check(re, strlen(re), err, sizeof(err)) != 0) {
        REJECT(p, XL_R_INVALID_REGEX, "invalid regex \"%s\": %s", re, err);
        return;
    }
    int size = xlate_re2_program_size(re, strlen(re));
    if (size > ENVOY_REGEX_PROGRAM_SIZE)
        WARN(p, XL_R_REGEX_SIZE,
             "regex \"%s\" has an RE2 program size of about %d; Envoy refuses more than %d "
             "unless re2.max_program_size.error_level is raised",
             re, size, ENVOY_REGEX_PROGRAM_SIZE);
}

static int label_cmp(const void *a, const void *b)
{
    return strcmp(((const struct xl_label *)a)->key, ((const struct xl_label *)b)->key);
}

const char *xlate_meta_label(const struct xl_meta *m, const char *key)
{
    size_t lo = 0, hi = m->nlabels;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(m->labels[mid].key, key);
        if (c == 0)
            return m->labels[mid].value;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static struct filter_selector *parse_selector(struct pctx *p, const cJSON *v)
{
    struct filter_selector *sel = NULL;
    struct filter_error ferr;
    if (!cJSON_IsObject(v)) {
        REJECT(p, XL_R_INVALID_SPEC, "must be a label selector object, got %s", jtype(v));
        return NULL;
    }
    static const char *const allowed[] = {"matchLabels", "matchExpressions", NULL};
    check_fields(p, v, allowed);
    int rc = filter_selector_from_json(v, &sel, &ferr);
    if (rc == FILTER_ENOMEM)
        p->oom = 1;
    else if (rc != FILTER_OK)
        REJECT(p, XL_R_INVALID_SPEC, "%s", ferr.msg);
    return rc == FILTER_OK ? sel : NULL;
}

/* ---- metadata ---------------------------------------------------------------- */

static void parse_meta(struct pctx *p, const cJSON *obj)
{
    struct xl_meta *m = &p->o->meta;
    const cJSON *md = cx_json_member(obj, "metadata");
    /* one walk over metadata's members (every object has one; most have a
     * few members more than these); the first of a name counts, as
     * cJSON_GetObjectItem finds it */
    const char *ns = NULL, *name = NULL, *uid = NULL, *creation = NULL;
    const cJSON *gen = NULL, *labels = NULL;
    int seen_ns = 0, seen_name = 0, seen_uid = 0, seen_creation = 0;
    const cJSON *c;
    for (c = cJSON_IsObject(md) ? md->child : NULL; c; c = c->next) {
        cx_json_prefetch(c);
        const char *k = c->string;
        if (!k)
            continue;
        const char *v = cJSON_IsString(c) ? c->valuestring : NULL;
        switch (k[0]) {
        case 'n':
            if (!seen_ns && strcmp(k, "namespace") == 0) {
                seen_ns = 1;
                ns = v;
            } else if (!seen_name && strcmp(k, "name") == 0) {
                seen_name = 1;
                name = v;
            }
            break;
        case 'u':
            if (!seen_uid && strcmp(k, "uid") == 0) {
                seen_uid = 1;
                uid = v;
            }
            break;
        case 'c':
            if (!seen_creation && strcmp(k, "creationTimestamp") == 0) {
                seen_creation = 1;
                creation = v;
            }
            break;
        case 'g':
            if (!gen && strcmp(k, "generation") == 0)
                gen = c;
            break;
        case 'l':
            if (!labels && strcmp(k, "labels") == 0)
                labels = c;
            break;
        default:
            break;
        }
    }
    m->ns = dup(p, ns && *ns ? ns : "default");
    m->name = dup(p, name ? name : "");
    m->uid = uid ? dup(p, uid) : NULL;
    m->creation = dup(p, creation);
    m->generation = cJSON_IsNumber(gen) ? (int64_t)gen->valuedouble : 0;
    size_t n = 0;
    const cJSON *l;
    cJSON_ArrayForEach(l, labels)
    {
        if (cJSON_IsString(l) && l->string)
            n++;
    }
    if (n) {
        m->labels = alloc(p, n * sizeof(*m->labels));
        if (!m->labels)
            return;
        cJSON_ArrayForEach(l, labels)
        {
            if (cJSON_IsString(l) && l->string) {
                m->labels[m->nlabels].key = dup(p, l->string);
                m->labels[m->nlabels].value = dup(p, l->valuestring);
                m->nlabels++;
            }
        }
        if (m->nlabels > 1)
            qsort(m->labels, m->nlabels, sizeof(*m->labels), label_cmp);
    }
    if (!md || !cJSON_IsObject(md))
        REJECT(p, XL_R_INVALID_SPEC, "metadata: required");
    else if (!name || !*name)
        REJECT(p, XL_R_INVALID_SPEC, "metadata.name: required");
}

/* ---- routes -------------------------------------------------------------- */

static void parse_ref(struct pctx *p, const cJSON *v, struct xl_ref *ref)
{
    static const char *const allowed[] = {"name", "namespace", NULL};
    const cJSON *f[2];
    fields(p, v, allowed, f);
    if (str_v(p, f[0], "name", 1, &ref->name) == 1 && !dns_subdomain(ref->name)) {
        size_t o = push_lit(p, ".name");
        REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not a valid object name", ref->name);
        pop(p, o);
    }
    if (str_v(p, f[1], "namespace", 0, &ref->ns) == 1 && !dns_label(ref->ns)) {
        size_t o = push_lit(p, ".namespace");
        REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not a valid namespace name", ref->ns);
        pop(p, o);
    }
    if (!ref->ns)
        ref->ns = p->o->meta.ns;
}

static void parse_match(struct pctx *p, const cJSON *v, struct xl_match *m)
{
    static const char *const allowed[] = {"prefix",  "path",          "regex",
                                          "headers", "caseSensitive", NULL};
    m->kind = XL_PATH_PREFIX;
    m->value = "/";
    m->case_sensitive = 1;
    if (!v)
        return;
    const cJSON *f[5];
    fields(p, v, allowed, f);
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
        check_regex(p, regex);
        pop(p, o);
    }
    if (m->value && has_ctl(m->value))
        REJECT(p, XL_R_INVALID_SPEC, "the path must not contain control characters");
    if (bool_v(p, f[4], "caseSensitive", &m->case_sensitive) == 1)
        m->has_case = 1;
    const cJSON *hs = arr_v(p, f[3], "headers", 0, XLATE_MAX_HEADERS);
    if (!hs)
        return;
    m->nheaders = cx_json_count(hs);
    m->headers = alloc(p, m->nheaders * sizeof(*m->headers));
    if (!m->headers)
        return;
    size_t i = 0;
    const cJSON *h;
    cJSON_ArrayForEach(h, hs)
    {
        struct xl_header *x = &m->headers[i];
        size_t o = push(p, ".headers[%zu]", i++);
        if (!cJSON_IsObject(h)) {
            REJECT(p, XL_R_INVALID_SPEC, "must be an object, got %s", jtype(h));
            pop(p, o);
            continue;
        }
        static const char *const hallowed[] = {"name",    "exact",  "prefix", "regex",
                                               "present", "invert", NULL};
        const cJSON *hf[6];
        fields(p, h, hallowed, hf);
        if (str_v(p, hf[0], "name", 1, &x->name) == 1 && !header_name_ok(x->name)) {
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
            check_regex(p, re);
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
        if (x->value && has_ctl(x->value))
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
    check_fields(p, v, allowed);
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

static void parse_route(struct pctx *p, const cJSON *v, struct xl_route *r)
{
    static const char *const allowed[] = {"match",   "upstream", "weighted",      "delegate",
                                          "timeout", "retries",  "prefixRewrite", NULL};
    if (!cJSON_IsObject(v)) {
        REJECT(p, XL_R_INVALID_SPEC, "must be an object, got %s", jtype(v));
        return;
    }
    enum { F_MATCH, F_UPSTREAM, F_WEIGHTED, F_DELEGATE, F_TIMEOUT, F_RETRIES, F_REWRITE };
    const cJSON *f[7];
    fields(p, v, allowed, f);
    const cJSON *m = obj_v(p, f[F_MATCH], "match", 0);
    size_t o = push_lit(p, ".match");
    parse_match(p, m, &r->match);
    pop(p, o);

    const cJSON *up = f[F_UPSTREAM], *w = f[F_WEIGHTED], *d = f[F_DELEGATE];
    int nact = !!up + !!w + !!d;
    if (nact == 0) {
        REJECT(p, XL_R_INVALID_SPEC, "one of upstream, weighted or delegate is required");
    } else if (nact > 1) {
        REJECT(p, XL_R_INVALID_SPEC, "upstream, weighted and delegate are mutually exclusive");
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
            r->weighted = alloc(p, r->nweighted * sizeof(*r->weighted));
            if (!r->weighted)
                return;
            size_t i = 0;
            const cJSON *e;
            cJSON_ArrayForEach(e, arr)
            {
                struct xl_weighted *x = &r->weighted[i];
                size_t o2 = push(p, ".weighted[%zu]", i++);
                if (!cJSON_IsObject(e)) {
                    REJECT(p, XL_R_INVALID_SPEC, "must be an object, got %s", jtype(e));
                    pop(p, o2);
                    continue;
                }
                static const char *const wallowed[] = {"upstream", "weight", NULL};
                const cJSON *wf[2];
                fields(p, e, wallowed, wf);
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
            check_fields(p, dobj, dallowed);
            int hn = get_str(p, dobj, "name", 0, &r->delegate.name) == 1;
            get_str(p, dobj, "namespace", 0, &r->delegate.ns);
            if (r->delegate.ns && !dns_label(r->delegate.ns)) {
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
                r->delegate.selector = parse_selector(p, sel);
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
    if (str_v(p, f[F_REWRITE], "prefixRewrite", 0, &r->prefix_rewrite) == 1) {
        o = push_lit(p, ".prefixRewrite");
        if (r->match.kind == XL_PATH_REGEX)
            REJECT(p, XL_R_INVALID_SPEC, "cannot be used with a regex match");
        else if (r->action == XL_ACT_DELEGATE)
            REJECT(p, XL_R_INVALID_SPEC, "cannot be used on a delegating route");
        else if (has_ctl(r->prefix_rewrite))
            REJECT(p, XL_R_INVALID_SPEC, "must not contain control characters");
        pop(p, o);
    }
}

/* spec.routes, |v| as fields() or get() found it. */
static void parse_routes(struct pctx *p, const cJSON *v, struct xl_route **out, size_t *nout)
{
    const cJSON *arr = arr_v(p, v, "routes", 1, XLATE_MAX_ROUTES);
    if (!arr)
        return;
    *nout = cx_json_count(arr);
    *out = alloc(p, *nout * sizeof(**out));
    if (!*out) {
        *nout = 0;
        return;
    }
    size_t i = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, arr)
    {
        size_t o = push(p, ".routes[%zu]", i);
        parse_route(p, r, &(*out)[i]);
        i++;
        pop(p, o);
    }
}

/* ---- TLS ------------------------------------------------------------------ */

/* A ConfigMap data key (Kubernetes: [-._a-zA-Z0-9]+, at most 253). */
static int cm_key_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '.' || s[i] == '_'))
            return 0;
    return strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

/* {name, namespace} of a Secret, or {name, namespace, key} of a ConfigMap
 * (|default_key| non-NULL). The namespace defaults to the object's own. */
static void parse_obj_ref(struct pctx *p, const cJSON *v, struct xl_obj_ref *ref,
                          const char *default_key)
{
    static const char *const sallowed[] = {"name", "namespace", NULL};
    static const char *const callowed[] = {"name", "namespace", "key", NULL};
    check_fields(p, v, default_key ? callowed : sallowed);
    if (get_str(p, v, "name", 1, &ref->name) == 1 && !dns_subdomain(ref->name)) {
        size_t o = push_lit(p, ".name");
        REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not a valid object name", ref->name);
        pop(p, o);
    }
    if (get_str(p, v, "namespace", 0, &ref->ns) == 1 && !dns_label(ref->ns)) {
        size_t o = push_lit(p, ".namespace");
        REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not a valid namespace name", ref->ns);
        pop(p, o);
    }
    if (!ref->ns)
        ref->ns = p->o->meta.ns;
    if (!default_key)
        return;
    if (get_str(p, v, "key", 0, &ref->key) == 1 && !cm_key_ok(ref->key)) {
        size_t o = push_lit(p, ".key");
        REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not a valid ConfigMap key", ref->key);
        pop(p, o);
    }
    if (!ref->key)
        ref->key = (char *)default_key;
}

static void parse_tls_version(struct pctx *p, const cJSON *v, const char *key,
                              enum xl_tls_version *out)
{
    static const char *const names[] = {"TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3"};
    const cJSON *x = get(v, key);
    if (!x)
        return;
    size_t o = push(p, ".%s", key);
    int found = -1;
    if (cJSON_IsString(x))
        for (int i = 0; i < 4; i++)
            if (strcmp(x->valuestring, names[i]) == 0)
                found = i;
    if (found < 0 && cJSON_IsNumber(x))
        REJECT(p, XL_R_INVALID_SPEC,
               "must be one of TLSv1.0, TLSv1.1, TLSv1.2, TLSv1.3; got the number %g",
               x->valuedouble);
    else if (found < 0)
        REJECT(p, XL_R_INVALID_SPEC,
               "must be one of TLSv1.0, TLSv1.1, TLSv1.2, TLSv1.3; got %s%s%s",
               cJSON_IsString(x) ? "\"" : "", cJSON_IsString(x) ? x->valuestring : jtype(x),
               cJSON_IsString(x) ? "\"" : "");
    else
        *out = (enum xl_tls_version)(XL_TLS_1_0 + found);
    pop(p, o);
}

static void parse_tls_versions(struct pctx *p, const cJSON *v, enum xl_tls_version *min,
                               enum xl_tls_version *max)
{
    parse_tls_version(p, v, "minVersion", min);
    parse_tls_version(p, v, "maxVersion", max);
    if (*min && *max && *min > *max)
        REJECT(p, XL_R_INVALID_SPEC, "minVersion is above maxVersion");
}

static void parse_gateway_tls(struct pctx *p, const cJSON *v, struct xl_gateway_tls *t)
{
    static const char *const allowed[] = {"certificates",  "minVersion",       "maxVersion",
                                          "alpnProtocols", "clientValidation", NULL};
    check_fields(p, v, allowed);
    t->enabled = 1;
    const cJSON *certs = get_arr(p, v, "certificates", 1, XLATE_MAX_CERTIFICATES);
    if (certs) {
        t->certs = alloc(p, cx_json_count(certs) * sizeof(*t->certs));
        if (!t->certs)
            return;
        size_t i = 0;
        const cJSON *c;
        cJSON_ArrayForEach(c, certs)
        {
            size_t o = push(p, ".certificates[%zu]", i++);
            if (!cJSON_IsObject(c)) {
                REJECT(p, XL_R_INVALID_SPEC, "must be an object, got %s", jtype(c));
                pop(p, o);
                continue;
            }
            static const char *const callowed[] = {"secretRef", NULL};
            check_fields(p, c, callowed);
            const cJSON *ref = get_obj(p, c, "secretRef", 1);
            struct xl_obj_ref *r = &t->certs[t->ncerts];
            size_t o2 = push_lit(p, ".secretRef");
            if (ref) {
                parse_obj_ref(p, ref, r, NULL);
                int dupl = -1;
                for (size_t k = 0; k < t->ncerts && r->name; k++)
                    if (t->certs[k].name && strcmp(t->certs[k].name, r->name) == 0 &&
                        strcmp(t->certs[k].ns, r->ns) == 0)
                        dupl = (int)k;
                if (dupl >= 0)
                    REJECT(p, XL_R_INVALID_SPEC,
                           "Secret %s/%s is listed twice (see certificates[%d])", r->ns, r->name,
                           dupl);
                else if (r->name)
                    t->ncerts++;
            }
            pop(p, o2);
            pop(p, o);
        }
    }
    t->min_version = XL_TLS_AUTO;
    t->max_version = XL_TLS_AUTO;
    parse_tls_versions(p, v, &t->min_version, &t->max_version);
    const cJSON *alpn = get_arr(p, v, "alpnProtocols", 0, 2);
    if (alpn) {
        t->alpn = alloc(p, 2 * sizeof(char *));
        if (!t->alpn)
            return;
        size_t i = 0;
        const cJSON *a;
        cJSON_ArrayForEach(a, alpn)
        {
            size_t o = push(p, ".alpnProtocols[%zu]", i++);
            if (!cJSON_IsString(a) ||
                (strcmp(a->valuestring, "h2") != 0 && strcmp(a->valuestring, "http/1.1") != 0))
                REJECT(p, XL_R_INVALID_SPEC, "must be \"h2\" or \"http/1.1\"");
            else if (t->nalpn == 1 && strcmp(t->alpn[0], a->valuestring) == 0)
                REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is listed twice", a->valuestring);
            else
                t->alpn[t->nalpn++] = dup(p, a->valuestring);
            pop(p, o);
        }
    } else {
        static char *const dflt[] = {"h2", "http/1.1"};
        t->alpn = (char **)dflt;
        t->nalpn = 2;
    }
    const cJSON *cv = get_obj(p, v, "clientValidation", 0);
    if (cv) {
        size_t o = push_lit(p, ".clientValidation");
        static const char *const vallowed[] = {"caConfigMapRef", "optional", NULL};
        check_fields(p, cv, vallowed);
        const cJSON *ref = get_obj(p, cv, "caConfigMapRef", 1);
        if (ref) {
            size_t o2 = push_lit(p, ".caConfigMapRef");
            parse_obj_ref(p, ref, &t->client_ca, "ca.crt");
            t->has_client_ca = t->client_ca.name != NULL;
            pop(p, o2);
        }
        get_bool(p, cv, "optional", &t->client_cert_optional);
        pop(p, o);
    }
}

/* A host name for SNI: DNS labels, no port, no wildcard. */
static int sni_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.'))
            return 0;
    }
    return s[0] != '.' && s[n - 1] != '.' && !strstr(s, "..");
}

static void parse_upstream_tls(struct pctx *p, const cJSON *v, struct xl_upstream_tls *t)
{
    static const char *const allowed[] = {"sni",
                                          "caConfigMapRef",
                                          "insecureSkipVerify",
                                          "subjectAltNames",
                                          "clientCertificate",
                                          "minVersion",
                                          "maxVersion",
                                          NULL};
    check_fields(p, v, allowed);
    t->enabled = 1;
    if (get_str(p, v, "sni", 0, &t->sni) == 1 && !sni_ok(t->sni)) {
        size_t o = push_lit(p, ".sni");
        REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not a host name (no port, no wildcard)", t->sni);
        pop(p, o);
    }
    const cJSON *ca = get_obj(p, v, "caConfigMapRef", 0);
    if (ca) {
        size_t o = push_lit(p, ".caConfigMapRef");
        parse_obj_ref(p, ca, &t->ca, "ca.crt");
        t->has_ca = t->ca.name != NULL;
        pop(p, o);
    }
    get_bool(p, v, "insecureSkipVerify", &t->insecure_skip_verify);
    if (ca && t->insecure_skip_verify)
        REJECT(p, XL_R_INVALID_SPEC,
               "caConfigMapRef and insecureSkipVerify are mutually exclusive");
    else if (!ca && !t->insecure_skip_verify)
        REJECT(p, XL_R_INVALID_SPEC,
               "set caConfigMapRef to verify the backend's certificate, or insecureSkipVerify: "
               "true to connect without verifying it");
    const cJSON *sans = get_arr(p, v, "subjectAltNames", 0, XLATE_MAX_SANS);
    if (sans) {
        size_t n = cx_json_count(sans);
        t->sans = alloc(p, (n ? n : 1) * sizeof(char *));
        if (!t->sans)
            return;
        size_t i = 0;
        const cJSON *a;
        cJSON_ArrayForEach(a, sans)
        {
            size_t o = push(p, ".subjectAltNames[%zu]", i++);
            if (!cJSON_IsString(a) || !a->valuestring[0] || has_ctl(a->valuestring))
                REJECT(p, XL_R_INVALID_SPEC, "must be a non-empty string");
            else
                t->sans[t->nsans++] = dup(p, a->valuestring);
            pop(p, o);
        }
        if (t->insecure_skip_verify) {
            size_t o = push_lit(p, ".subjectAltNames");
            REJECT(p, XL_R_INVALID_SPEC, "cannot be checked with insecureSkipVerify");
            pop(p, o);
        }
    } else if (t->sni) {
        t->sans = alloc(p, sizeof(char *));
        if (!t->sans)
            return;
        t->sans[0] = t->sni;
        t->nsans = 1;
    } else if (ca) {
        WARN(p, XL_R_INVALID_SPEC,
             "neither sni nor subjectAltNames is set: any certificate the CA signed is accepted, "
             "whatever name it carries");
    }
    const cJSON *cc = get_obj(p, v, "clientCertificate", 0);
    if (cc) {
        size_t o = push_lit(p, ".clientCertificate");
        static const char *const callowed[] = {"secretRef", NULL};
        check_fields(p, cc, callowed);
        const cJSON *ref = get_obj(p, cc, "secretRef", 1);
        if (ref) {
            size_t o2 = push_lit(p, ".secretRef");
            parse_obj_ref(p, ref, &t->client_cert, NULL);
            t->has_client_cert = t->client_cert.name != NULL;
            pop(p, o2);
        }
        pop(p, o);
    }
    parse_tls_versions(p, v, &t->min_version, &t->max_version);
}

/* ---- kinds -------------------------------------------------------------- */

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void parse_gateway(struct pctx *p, const cJSON *spec)
{
    struct xl_gateway *g = &p->o->u.gw;
    static const char *const allowed[] = {
        "mode", "bindAddress", "bindPort", "virtualServiceSelector", "virtualServiceNamespaces",
        "tls",  NULL};
    check_fields(p, spec, allowed);
    char *mode = NULL;
    g->mode = XLATE_MODE_ENVOY;
    if (get_str(p, spec, "mode", 0, &mode) == 1) {
        if (strcmp(mode, "proxyless") == 0) {
            g->mode = XLATE_MODE_PROXYLESS;
        } else if (strcmp(mode, "envoy") != 0) {
            size_t o = push_lit(p, ".mode");
            REJECT(p, XL_R_INVALID_SPEC, "must be \"envoy\" or \"proxyless\", got \"%s\"", mode);
            pop(p, o);
        }
    }
    g->bind_address = "0.0.0.0";
    int has_addr = get_str(p, spec, "bindAddress", 0, &g->bind_address) == 1;
    if (has_addr && !xlate_is_ip(g->bind_address)) {
        size_t o = push_lit(p, ".bindAddress");
        REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not an IP address", g->bind_address);
        pop(p, o);
    }
    uint64_t port = 8080;
    int has_port = get_uint(p, spec, "bindPort", 0, 1, 65535, XL_R_INVALID_PORT, &port) != 0;
    g->bind_port = (uint32_t)port;
    if (g->mode == XLATE_MODE_PROXYLESS && (has_addr || has_port)) {
        size_t o = push(p, ".%s", has_port ? "bindPort" : "bindAddress");
        WARN(p, XL_R_UNSUPPORTED, "ignored in proxyless mode (gRPC clients open no listener)");
        pop(p, o);
    }
    const cJSON *sel = get(spec, "virtualServiceSelector");
    if (sel) {
        size_t o = push_lit(p, ".virtualServiceSelector");
        g->vs_selector = parse_selector(p, sel);
        pop(p, o);
    }
    const cJSON *nss = get_arr(p, spec, "virtualServiceNamespaces", 0, XLATE_MAX_NAMESPACES);
    if (nss) {
        size_t n = cx_json_count(nss);
        g->vs_namespaces = alloc(p, n * sizeof(char *));
        if (!g->vs_namespaces)
            return;
        size_t i = 0;
        const cJSON *ns;
        cJSON_ArrayForEach(ns, nss)
        {
            size_t o = push(p, ".virtualServiceNamespaces[%zu]", i++);
            if (!cJSON_IsString(ns)) {
                REJECT(p, XL_R_INVALID_SPEC, "must be a string, got %s", jtype(ns));
            } else if (strcmp(ns->valuestring, "*") == 0) {
                g->all_namespaces = 1;
            } else if (!dns_label(ns->valuestring)) {
                REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not a valid namespace name (or \"*\")",
                       ns->valuestring);
            } else {
                g->vs_namespaces[g->n_vs_namespaces++] = dup(p, ns->valuestring);
            }
            pop(p, o);
        }
        qsort(g->vs_namespaces, g->n_vs_namespaces, sizeof(char *), str_cmp);
    }
    if (!nss || (!g->all_namespaces && g->n_vs_namespaces == 0)) {
        g->vs_namespaces = alloc(p, sizeof(char *));
        if (g->vs_namespaces) {
            g->vs_namespaces[0] = p->o->meta.ns;
            g->n_vs_namespaces = 1;
        }
    }
    const cJSON *tls = get_obj(p, spec, "tls", 0);
    if (tls) {
        size_t o = push_lit(p, ".tls");
        if ((g->tls = alloc(p, sizeof(*g->tls))))
            parse_gateway_tls(p, tls, g->tls);
        if (g->mode == XLATE_MODE_PROXYLESS)
            WARN(p, XL_R_UNSUPPORTED,
                 "ignored in proxyless mode: gRPC clients take their TLS settings from the "
                 "certificate providers of their xDS bootstrap, so these are not applied");
        pop(p, o);
    }
}

static void parse_virtual_service(struct pctx *p, const cJSON *spec)
{
    struct xl_virtual_service *vs = &p->o->u.vs;
    static const char *const allowed[] = {"domains", "routes", NULL};
    const cJSON *f[2];
    fields(p, spec, allowed, f);
    const cJSON *doms = arr_v(p, f[0], "domains", 1, XLATE_MAX_DOMAINS);
    if (doms) {
        vs->domains = alloc(p, cx_json_count(doms) * sizeof(char *));
        if (!vs->domains)
            return;
        size_t i = 0;
        const cJSON *d;
        cJSON_ArrayForEach(d, doms)
        {
            size_t o = push(p, ".domains[%zu]", i++);
            char msg[200];
            if (!cJSON_IsString(d)) {
                REJECT(p, XL_R_INVALID_SPEC, "must be a string, got %s", jtype(d));
            } else if (xlate_domain_valid(d->valuestring, msg, sizeof(msg)) != 0) {
                REJECT(p, XL_R_INVALID_DOMAIN, "invalid domain \"%.100s\": %s", d->valuestring,
                       msg);
            } else {
                int dupl = 0;
                for (size_t k = 0; k < vs->ndomains; k++)
                    if (strcasecmp(vs->domains[k], d->valuestring) == 0)
                        dupl = 1;
                if (dupl)
                    REJECT(p, XL_R_INVALID_DOMAIN, "duplicate domain \"%s\"", d->valuestring);
                else
                    vs->domains[vs->ndomains++] = dup(p, d->valuestring);
            }
            pop(p, o);
        }
    }
    parse_routes(p, f[1], &vs->routes, &vs->nroutes);
}

static void parse_upstream(struct pctx *p, const cJSON *spec)
{
    struct xl_upstream *u = &p->o->u.up;
    static const char *const allowed[] = {"kube",           "static", "lbPolicy",
                                          "connectTimeout", "tls",    NULL};
    check_fields(p, spec, allowed);
    const cJSON *kube = get(spec, "kube"), *st = get(spec, "static");
    if (kube && st) {
        REJECT(p, XL_R_INVALID_SPEC, "kube and static are mutually exclusive");
    } else if (!kube && !st) {
        REJECT(p, XL_R_INVALID_SPEC, "one of kube or static is required");
    } else if (kube) {
        u->is_kube = 1;
        const cJSON *k = get_obj(p, spec, "kube", 1);
        size_t o = push_lit(p, ".kube");
        if (k) {
            static const char *const kallowed[] = {"service", "namespace", "port", NULL};
            check_fields(p, k, kallowed);
            if (get_str(p, k, "service", 1, &u->kube_service) == 1 && !dns_label(u->kube_service)) {
                size_t o2 = push_lit(p, ".service");
                REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not a valid Service name", u->kube_service);
                pop(p, o2);
            }
            if (get_str(p, k, "namespace", 0, &u->kube_ns) == 1 && !dns_label(u->kube_ns)) {
                size_t o2 = push_lit(p, ".namespace");
                REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not a valid namespace name", u->kube_ns);
                pop(p, o2);
            }
            if (!u->kube_ns)
                u->kube_ns = p->o->meta.ns;
            const cJSON *port = get(k, "port");
            if (cJSON_IsString(port)) {
                size_t o2 = push_lit(p, ".port");
                if (!dns_label(port->valuestring) || strlen(port->valuestring) > 15)
                    REJECT(p, XL_R_INVALID_PORT, "\"%s\" is neither a port number nor a port name",
                           port->valuestring);
                else
                    u->kube_port_name = dup(p, port->valuestring);
                pop(p, o2);
            } else {
                uint64_t v = 0;
                if (get_uint(p, k, "port", 1, 1, 65535, XL_R_INVALID_PORT, &v) == 1)
                    u->kube_port = (uint32_t)v;
            }
        }
        pop(p, o);
    } else {
        const cJSON *s = get_obj(p, spec, "static", 1);
        size_t o = push_lit(p, ".static");
        if (s) {
            static const char *const sallowed[] = {"hosts", NULL};
            check_fields(p, s, sallowed);
            const cJSON *hosts = get_arr(p, s, "hosts", 1, XLATE_MAX_HOSTS);
            if (hosts) {
                u->nhosts = cx_json_count(hosts);
                u->hosts = alloc(p, u->nhosts * sizeof(*u->hosts));
                if (!u->hosts)
                    return;
                size_t i = 0;
                const cJSON *h;
                cJSON_ArrayForEach(h, hosts)
                {
                    struct xl_static_host *x = &u->hosts[i];
                    size_t o2 = push(p, ".hosts[%zu]", i++);
                    if (!cJSON_IsObject(h)) {
                        REJECT(p, XL_R_INVALID_SPEC, "must be an object, got %s", jtype(h));
                        pop(p, o2);
                        continue;
                    }
                    static const char *const hallowed[] = {"address", "port", "weight", NULL};
                    check_fields(p, h, hallowed);
                    if (get_str(p, h, "address", 1, &x->address) == 1 && !xlate_is_ip(x->address)) {
                        size_t o3 = push_lit(p, ".address");
                        REJECT(p, XL_R_INVALID_SPEC,
                               "\"%s\" is not an IP address (EDS endpoints must be IP literals)",
                               x->address);
                        pop(p, o3);
                    }
                    uint64_t v = 0;
                    get_uint(p, h, "port", 1, 1, 65535, XL_R_INVALID_PORT, &v);
                    x->port = (uint32_t)v;
                    uint64_t w = 1;
                    get_uint(p, h, "weight", 0, 1, 1000000, XL_R_INVALID_SPEC, &w);
                    x->weight = (uint32_t)w;
                    for (size_t k = 0; k + 1 < i && x->address; k++)
                        if (u->hosts[k].address && u->hosts[k].port == x->port &&
                            strcmp(u->hosts[k].address, x->address) == 0) {
                            REJECT(p, XL_R_INVALID_SPEC, "%s:%u is listed twice (see hosts[%zu])",
                                   x->address, x->port, k);
                            break;
                        }
                    pop(p, o2);
                }
            }
        }
        pop(p, o);
    }
    char *lb = NULL;
    if (get_str(p, spec, "lbPolicy", 0, &lb) == 1) {
        static const char *const names[] = {"RoundRobin", "LeastRequest", "RingHash", "Random"};
        int found = -1;
        for (int i = 0; i < 4; i++)
            if (strcmp(lb, names[i]) == 0)
                found = i;
        if (found < 0) {
            size_t o = push_lit(p, ".lbPolicy");
            REJECT(p, XL_R_INVALID_SPEC,
                   "must be one of RoundRobin, LeastRequest, RingHash, Random; got \"%s\"", lb);
            pop(p, o);
        } else {
            u->lb = (enum xl_lb_policy)found;
        }
    }
    if (get_duration(p, spec, "connectTimeout", &u->connect_timeout_ns) == 1) {
        u->has_connect_timeout = 1;
        if (u->connect_timeout_ns <= 0) {
            size_t o = push_lit(p, ".connectTimeout");
            REJECT(p, XL_R_INVALID_SPEC, "must be greater than 0");
            pop(p, o);
        }
    }
    const cJSON *tls = get_obj(p, spec, "tls", 0);
    if (tls) {
        size_t o = push_lit(p, ".tls");
        if ((u->tls = alloc(p, sizeof(*u->tls))))
            parse_upstream_tls(p, tls, u->tls);
        pop(p, o);
    }
}

/* Core kinds: lenient (they passed the API server's validation); entries we
 * cannot use are skipped, not reported. */
static void parse_ports(struct pctx *p, const cJSON *arr, struct xl_service_port **out, size_t *n)
{
    size_t cap = cx_json_count(arr);
    if (!cJSON_IsArray(arr) || cap == 0)
        return;
    *out = alloc(p, cap * sizeof(**out));
    if (!*out)
        return;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        const cJSON *port = cx_json_member(e, "port");
        if (!cJSON_IsNumber(port) || port->valuedouble < 1 || port->valuedouble > 65535)
            continue;
        const char *name = cx_json_str(e, "name");
        (*out)[*n].name = dup(p, name ? name : "");
        (*out)[*n].port = (uint32_t)port->valuedouble;
        (*n)++;
    }
}

static void parse_service(struct pctx *p, const cJSON *obj)
{
    const cJSON *spec = cx_json_member(obj, "spec");
    parse_ports(p, cx_json_member(spec, "ports"), &p->o->u.svc.ports, &p->o->u.svc.nports);
}

static void parse_endpoint_slice(struct pctx *p, const cJSON *obj)
{
    struct xl_endpoint_slice *s = &p->o->u.eps;
    const char *svc = xlate_meta_label(&p->o->meta, "kubernetes.io/service-name");
    s->service = svc ? dup(p, svc) : NULL;
    const char *at = cx_json_str(obj, "addressType");
    s->ip_family = at && strcmp(at, "IPv4") == 0 ? 4 : at && strcmp(at, "IPv6") == 0 ? 6 : 0;
    parse_ports(p, cx_json_member(obj, "ports"), &s->ports, &s->nports);
    /* An unnamed port with port null means "all ports": unusable for EDS. */
    const cJSON *eps = cx_json_member(obj, "endpoints");
    if (!cJSON_IsArray(eps) || !eps->child)
        return;
    /* Collected on the stack, then copied to the arena at their count:
     * counting first would follow the items' chain once more on its own,
     * one miss after another. A slice holds at most 1000 endpoints
     * (Kubernetes); past the stack's room they are counted. */
    struct xl_slice_endpoint local[64];
    struct xl_slice_endpoint *out = local;
    size_t cap = sizeof(local) / sizeof(local[0]);
    /* a slice's endpoints share a few zones: each is kept once */
    char *zones[8];
    size_t nzones = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, eps)
    {
        if (s->nendpoints == cap && out == local) {
            size_t all = cx_json_count(eps);
            out = alloc(p, all * sizeof(*out));
            if (!out)
                return;
            /* cppcheck-suppress uninitvar ; the 64 collected so far */
            memcpy(out, local, s->nendpoints * sizeof(*out));
            cap = all;
        }
        struct xl_slice_endpoint *x = &out[s->nendpoints];
        memset(x, 0, sizeof(*x));
        /* one walk over the endpoint's members (Kubernetes writes several
         * more: nodeName, targetRef, hints...); the first of a name counts */
        const cJSON *addrs = NULL, *conds = NULL, *zm = NULL, *c;
        for (c = cJSON_IsObject(e) ? e->child : NULL; c; c = c->next) {
            cx_json_prefetch(c);
            if (!c->string)
                continue;
            if (!addrs && c->string[0] == 'a' && keyeq(c->string, "addresses"))
                addrs = c;
            else if (!conds && c->string[0] == 'c' && keyeq(c->string, "conditions"))
                conds = c;
            else if (!zm && c->string[0] == 'z' && keyeq(c->string, "zone"))
                zm = c;
        }
        size_t na = cx_json_count(addrs);
        if (!cJSON_IsArray(addrs) || na == 0)
            continue;
        x->addresses = alloc(p, na * sizeof(char *));
        if (!x->addresses)
            return;
        const cJSON *a;
        cJSON_ArrayForEach(a, addrs)
        {
            if (cJSON_IsString(a) && xlate_is_ip(a->valuestring))
                x->addresses[x->naddresses++] = dup(p, a->valuestring);
        }
        const cJSON *ready = cx_json_member(conds, "ready");
        /* Kubernetes: a nil ready condition is to be read as ready. */
        x->ready = !cJSON_IsBool(ready) || cJSON_IsTrue(ready);
        const char *zone = cJSON_IsString(zm) ? zm->valuestring : "";
        x->zone = NULL;
        for (size_t z = 0; z < nzones && !x->zone; z++)
            if (strcmp(zones[z], zone) == 0)
                x->zone = zones[z];
        if (!x->zone && (x->zone = dup(p, zone)) && nzones < sizeof(zones) / sizeof(zones[0]))
            zones[nzones++] = x->zone;
        if (x->naddresses)
            s->nendpoints++;
    }
    if (out == local && s->nendpoints) {
        out = alloc(p, s->nendpoints * sizeof(*out));
        if (!out) {
            s->nendpoints = 0;
            return;
        }
        memcpy(out, local, s->nendpoints * sizeof(*out));
    }
    s->endpoints = s->nendpoints ? out : NULL;
}

/* metadata.annotations[|key|] as a string, or NULL. */
static const char *annotation(const cJSON *obj, const char *key)
{
    const cJSON *v =
        cx_json_member(cx_json_member(cx_json_member(obj, "metadata"), "annotations"), key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A Secret's value |key|: stringData (written by people, merged into data
 * by the API server) wins over data (base64). Returns 1 when found and
 * decoded, 0 when absent, -1 with |why| set when unusable. */
static int secret_value(struct pctx *p, const cJSON *obj, const char *key, uint8_t **out,
                        size_t *len, char *why, size_t whylen)
{
    const cJSON *sv = cx_json_member(cx_json_member(obj, "stringData"), key);
    const cJSON *dv = cx_json_member(cx_json_member(obj, "data"), key);
    if (cJSON_IsString(sv)) {
        size_t n = strlen(sv->valuestring);
        if (n > XL_TLS_MAX_PEM) {
            snprintf(why, whylen, "stringData.%s is larger than %u bytes", key, XL_TLS_MAX_PEM);
            return -1;
        }
        *out = alloc(p, n + 1);
        if (!*out)
            return -1;
        memcpy(*out, sv->valuestring, n);
        *len = n;
        return 1;
    }
    if (!dv || cJSON_IsNull(dv))
        return 0;
    if (!cJSON_IsString(dv)) {
        snprintf(why, whylen, "data.%s must be a base64 string, got %s", key, jtype(dv));
        return -1;
    }
    size_t n = strlen(dv->valuestring);
    if (n / 4 * 3 > XL_TLS_MAX_PEM) {
        snprintf(why, whylen, "data.%s is larger than %u bytes", key, XL_TLS_MAX_PEM);
        return -1;
    }
    *out = alloc(p, n / 4 * 3 + 1);
    if (!*out)
        return -1;
    long d = xlate_b64_decode(dv->valuestring, n, *out);
    if (d < 0) {
        snprintf(why, whylen, "data.%s is not valid base64", key);
        return -1;
    }
    *len = (size_t)d;
    return 1;
}

/* Secrets are core objects: nothing is refused here (the API server
 * validated them); what makes one unusable as a certificate is recorded
 * for the objects that reference it to report. */
static void parse_secret(struct pctx *p, const cJSON *obj)
{
    struct xl_secret *s = &p->o->u.secret;
    const char *type = cx_json_str(obj, "type");
    const char *allow = annotation(obj, XLATE_ALLOW_REFS_ANNOTATION);
    s->type = dup(p, type && *type ? type : "Opaque");
    s->allow_from = allow ? dup(p, allow) : NULL;
    char why[300] = "";
    if (strcmp(s->type, "kubernetes.io/tls") != 0) {
        snprintf(why, sizeof(why), "its type is %.100s, not kubernetes.io/tls", s->type);
        s->state = XL_SECRET_WRONG_TYPE;
        s->problem = dup(p, why);
        return;
    }
    int rc = secret_value(p, obj, "tls.crt", &s->crt, &s->crtlen, why, sizeof(why));
    if (rc >= 0 && secret_value(p, obj, "tls.key", &s->key, &s->keylen, why, sizeof(why)) < 0)
        rc = -1;
    if (p->oom)
        return;
    if (rc < 0) {
        s->state = XL_SECRET_BAD_PEM;
    } else if (!s->crt || !s->crtlen || !s->key || !s->keylen) {
        int no_crt = !s->crt || !s->crtlen, no_key = !s->key || !s->keylen;
        snprintf(why, sizeof(why), "%s",
                 no_crt && no_key ? "tls.crt and tls.key are missing or empty"
                 : no_crt         ? "tls.crt is missing or empty"
                                  : "tls.key is missing or empty");
        s->state = XL_SECRET_MISSING;
    } else {
        if (xlate_tls_check_pair(p->a, s) != 0)
            p->oom = 1;
        return;
    }
    s->problem = dup(p, why);
}

static void parse_config_map(struct pctx *p, const cJSON *obj)
{
    struct xl_config_map *c = &p->o->u.cm;
    const char *allow = annotation(obj, XLATE_ALLOW_REFS_ANNOTATION);
    c->allow_from = allow ? dup(p, allow) : NULL;
    const cJSON *data = cx_json_member(obj, "data");
    size_t n = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, data)
    {
        if (cJSON_IsString(d) && d->string)
            n++;
    }
    if (!n)
        return;
    c->data = alloc(p, n * sizeof(*c->data));
    if (!c->data)
        return;
    cJSON_ArrayForEach(d, data)
    {
        if (cJSON_IsString(d) && d->string) {
            c->data[c->ndata].key = dup(p, d->string);
            c->data[c->ndata].value = dup(p, d->valuestring);
            c->ndata++;
        }
    }
    qsort(c->data, c->ndata, sizeof(*c->data), label_cmp);
}

const char *xlate_config_map_get(const struct xl_config_map *c, const char *key)
{
    size_t lo = 0, hi = c->ndata;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = strcmp(c->data[mid].key, key);
        if (r == 0)
            return c->data[mid].value;
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const struct xl_gateway_tls *xlate_gateway_tls_of(const struct xl_gateway *g)
{
    static const struct xl_gateway_tls none;
    return g->tls ? g->tls : &none;
}

const struct xl_upstream_tls *xlate_upstream_tls_of(const struct xl_upstream *u)
{
    static const struct xl_upstream_tls none;
    return u->tls ? u->tls : &none;
}

void xlate_object_release(struct xl_object *o)
{
    struct xl_route *routes = NULL;
    size_t n = 0;
    if (o->kind == XLATE_KIND_SECRET && o->u.secret.key) {
        /* the arena is reused or freed: leave no key bytes behind */
        OPENSSL_cleanse(o->u.secret.key, o->u.secret.keylen);
        o->u.secret.key = NULL;
    } else if (o->kind == XLATE_KIND_GATEWAY) {
        filter_selector_free(o->u.gw.vs_selector);
        o->u.gw.vs_selector = NULL;
    } else if (o->kind == XLATE_KIND_VIRTUAL_SERVICE) {
        routes = o->u.vs.routes;
        n = o->u.vs.nroutes;
    } else if (o->kind == XLATE_KIND_ROUTE_TABLE) {
        routes = o->u.rt.routes;
        n = o->u.rt.nroutes;
    }
    for (size_t i = 0; routes && i < n; i++) {
        filter_selector_free(routes[i].delegate.selector);
        routes[i].delegate.selector = NULL;
    }
}

int xlate_api_parse(enum xlate_kind kind, const cJSON *obj, struct xl_arena *a,
                    struct xl_object *out)
{
    struct pctx p; /* the segments are written before they are read */
    p.a = a;
    p.o = out;
    p.depth = 0;
    p.oom = 0;
    memset(out, 0, sizeof(*out));
    out->kind = kind;
    parse_meta(&p, obj);
    if (p.oom)
        return -1;
    if (kind == XLATE_KIND_SERVICE) {
        parse_service(&p, obj);
        return p.oom ? -1 : 0;
    }
    if (kind == XLATE_KIND_ENDPOINT_SLICE) {
        parse_endpoint_slice(&p, obj);
        return p.oom ? -1 : 0;
    }
    if (kind == XLATE_KIND_SECRET || kind == XLATE_KIND_CONFIG_MAP) {
        if (kind == XLATE_KIND_SECRET)
            parse_secret(&p, obj);
        else
            parse_config_map(&p, obj);
        if (p.oom) {
            xlate_object_release(out);
            return -1;
        }
        return 0;
    }
    if (kind < 0 || kind >= XLATE_KIND_COUNT) {
        REJECT(&p, XL_R_UNKNOWN_KIND, "apiVersion %s, kind %s is not a kind coxswain reads",
               cx_json_str(obj, "apiVersion") ? cx_json_str(obj, "apiVersion") : "(none)",
               cx_json_str(obj, "kind") ? cx_json_str(obj, "kind") : "(none)");
        return p.oom ? -1 : 0;
    }
    const char *av = cx_json_str(obj, "apiVersion");
    if (!av || strcmp(av, XLATE_GROUP_VERSION) != 0) {
        REJECT(&p, XL_R_UNSUPPORTED_VERSION, "apiVersion %s is not served; use %s",
               av ? av : "(none)", XLATE_GROUP_VERSION);
        return p.oom ? -1 : 0;
    }
    static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", "status", NULL};
    const cJSON *f[5];
    fields(&p, obj, top, f);
    const cJSON *spec = f[3];
    push_lit(&p, "spec");
    if (!spec) {
        REJECT(&p, XL_R_INVALID_SPEC, "required");
    } else if (!cJSON_IsObject(spec)) {
        REJECT(&p, XL_R_INVALID_SPEC, "must be an object, got %s", jtype(spec));
    } else {
        switch (kind) {
        case XLATE_KIND_GATEWAY:
            parse_gateway(&p, spec);
            break;
        case XLATE_KIND_VIRTUAL_SERVICE:
            parse_virtual_service(&p, spec);
            break;
        case XLATE_KIND_ROUTE_TABLE: {
            static const char *const allowed[] = {"routes", NULL};
            check_fields(&p, spec, allowed);
            parse_routes(&p, get(spec, "routes"), &out->u.rt.routes, &out->u.rt.nroutes);
            break;
        }
        case XLATE_KIND_UPSTREAM:
            parse_upstream(&p, spec);
            break;
        default:
            break;
        }
    }
    if (p.oom) {
        xlate_object_release(out);
        return -1;
    }
    return 0;
}
