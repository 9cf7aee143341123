/*
 * xlate_api_parse: the parse context shared by the files that parse
 * coxswain's resources (xlate_api.c: metadata and kinds; xlate_api_route.c:
 * routes; xlate_api_tls.c: TLS settings, Secrets and ConfigMaps;
 * xlate_api_read.c: the context itself, errors and shared checks).
 *
 * A parse walks one object's JSON with a |struct pctx|: the arena results
 * go to, the object being filled, the current field path (for messages)
 * and an out-of-memory flag. The readers below take member |key|'s value
 * |v| (NULL: absent) as xlate_fields() or get() found it; the get_* forms
 * look it up. They are small and called for every field, hence inline.
 *
 * Internal to the translator's parser; pure; one parse per thread at a
 * time.
 */
#ifndef XLATE_API_PARSE_H
#define XLATE_API_PARSE_H

#include "xlate_api.h"

#include "cx_json.h"
#include "cx_kname.h"
#include "cx_time.h"

#include <math.h>
#include <stdint.h>

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
    const struct xlate_limits *lim;
    long regex_total; /* RE2 program sizes of the object's regexes so far */
    struct pseg seg[PATH_DEPTH];
    size_t depth;
    int oom;
    /* the object's last Upstream reference: a route naming the same one
     * shares its strings, which lets the translator compare pointers */
    const struct xl_ref *last_ref;
};

/* Appends a segment: a literal one (push_lit) or one with arguments
 * (xlate_path_push: "%s" and "%zu" only). Both return what pop() takes to
 * remove it. Deeper than PATH_DEPTH is not recorded (no schema nests that
 * deep). */
static inline size_t push_lit(struct pctx *p, const char *lit)
{
    size_t old = p->depth;
    if (old < PATH_DEPTH)
        p->seg[p->depth++] = (struct pseg){.fmt = lit};
    return old;
}

__attribute__((format(printf, 2, 3))) size_t xlate_path_push(struct pctx *p, const char *fmt, ...);

static inline void pop(struct pctx *p, size_t old)
{
    p->depth = old;
}

/* Records a problem at the current path (sets p->oom when memory ran
 * out). */
__attribute__((format(printf, 4, 5))) void xlate_path_error(struct pctx *p, enum xlate_state st,
                                                            enum xl_reason r, const char *fmt, ...);

#define REJECT(p, r, ...) xlate_path_error(p, XLATE_REJECTED, r, __VA_ARGS__)
#define WARN(p, r, ...)   xlate_path_error(p, XLATE_WARNING, r, __VA_ARGS__)

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

static inline const char *jtype(const cJSON *v)
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

static inline char *pstrdup(struct pctx *p, const char *s)
{
    char *r = xlate_strdup(p->a, s ? s : "");
    if (!r)
        p->oom = 1;
    return r;
}

static inline void *palloc(struct pctx *p, size_t n)
{
    void *r = xlate_alloc(p->a, n ? n : 1);
    if (!r)
        p->oom = 1;
    return r;
}

/* Reports every member of |obj| not in |allowed| (NULL-terminated). */
void xlate_check_fields(struct pctx *p, const cJSON *obj, const char *const *allowed);
/* xlate_check_fields, and the members it allows in one walk: f[i] is the
 * first member named allowed[i] (at most 32 names), NULL if none or JSON
 * null (as get() reads them). */
void xlate_fields(struct pctx *p, const cJSON *obj, const char *const *allowed, const cJSON **f);

/* Child |key| of |obj|; NULL if absent or JSON null. */
static inline const cJSON *get(const cJSON *obj, const char *key)
{
    const cJSON *v = cx_json_member(obj, key);
    return (v && !cJSON_IsNull(v)) ? v : NULL;
}

/* Reports a problem with member |key| of the current path. */
#define REJECT_AT(p, key, r, ...)                       \
    do {                                                \
        size_t o_ = xlate_path_push((p), ".%s", (key)); \
        REJECT((p), (r), __VA_ARGS__);                  \
        pop((p), o_);                                   \
    } while (0)

/* A string, borrowed from the JSON. Returns 1 if present and a string, 0
 * if absent (an error when |required|), -1 on a type error (reported). The
 * path is only built for a report: fields are read far more often than
 * they are wrong. */
static inline int str_ref_v(struct pctx *p, const cJSON *v, const char *key, int required,
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
static inline int str_v(struct pctx *p, const cJSON *v, const char *key, int required, char **out)
{
    const char *s = NULL;
    int rc = str_ref_v(p, v, key, required, &s);
    if (rc == 1)
        *out = pstrdup(p, s);
    return rc;
}

static inline int get_str(struct pctx *p, const cJSON *obj, const char *key, int required,
                          char **out)
{
    return str_v(p, get(obj, key), key, required, out);
}

static inline int bool_v(struct pctx *p, const cJSON *v, const char *key, int *out)
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

static inline int get_bool(struct pctx *p, const cJSON *obj, const char *key, int *out)
{
    return bool_v(p, get(obj, key), key, out);
}

/* An integer in [lo, hi]. */
static inline int uint_v(struct pctx *p, const cJSON *v, const char *key, int required, uint64_t lo,
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

static inline int get_uint(struct pctx *p, const cJSON *obj, const char *key, int required,
                           uint64_t lo, uint64_t hi, enum xl_reason range_reason, uint64_t *out)
{
    return uint_v(p, get(obj, key), key, required, lo, hi, range_reason, out);
}

static inline int duration_v(struct pctx *p, const cJSON *v, const char *key, int64_t *out)
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

static inline int get_duration(struct pctx *p, const cJSON *obj, const char *key, int64_t *out)
{
    return duration_v(p, get(obj, key), key, out);
}

/* An object; reports a type error. */
static inline const cJSON *obj_v(struct pctx *p, const cJSON *v, const char *key, int required)
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

static inline const cJSON *get_obj(struct pctx *p, const cJSON *obj, const char *key, int required)
{
    return obj_v(p, get(obj, key), key, required);
}

/* An array with at most |max| items (and at least one if required). */
static inline const cJSON *arr_v(struct pctx *p, const cJSON *v, const char *key, int required,
                                 int max)
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

static inline const cJSON *get_arr(struct pctx *p, const cJSON *obj, const char *key, int required,
                                   int max)
{
    return arr_v(p, get(obj, key), key, required, max);
}

/* Shared checks (xlate_api_read.c). */
int xlate_header_name_ok(const char *s);
int xlate_has_ctl(const char *s); /* 1 if |s| holds a control character */
/* Rejects an invalid regex (RE2's message), one whose RE2 program is
 * larger than p->lim->regex_program_size, and every regex of an object
 * once their programs add up to more than XLATE_MAX_REGEX_PROGRAM (those
 * are not compiled). Returns the literal text every match of a valid one
 * starts with (in the arena), or NULL. */
const char *xlate_check_regex(struct pctx *p, const char *re);
/* xlate_check_regex, and the regex's capturing groups in |groups| (-1 when
 * it was refused or not compiled). */
const char *xlate_check_regex_groups(struct pctx *p, const char *re, int *groups);
int xlate_label_cmp(const void *a, const void *b); /* struct xl_label by key */
struct filter_selector *xlate_parse_selector(struct pctx *p, const cJSON *v);

/* The parts (xlate_api_route.c, xlate_api_tls.c). */
void xlate_parse_routes(struct pctx *p, const cJSON *v, struct xl_route **out, size_t *nout);
void xlate_parse_gateway_tls(struct pctx *p, const cJSON *v, struct xl_gateway_tls *t);
void xlate_parse_upstream_tls(struct pctx *p, const cJSON *v, struct xl_upstream_tls *t);
void xlate_parse_secret(struct pctx *p, const cJSON *obj);
void xlate_parse_config_map(struct pctx *p, const cJSON *obj);

#endif
