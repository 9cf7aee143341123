/*
 * The parse context (xlate_api_parse.h): errors, the field path, unknown
 * fields, and the checks several kinds share (names, headers, regexes,
 * label selectors).
 */
#include "xlate_api_parse.h"

#include "filter_selector.h"
#include "xlate_re2.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

size_t xlate_path_push(struct pctx *p, const char *fmt, ...)
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

void xlate_path_error(struct pctx *p, enum xlate_state st, enum xl_reason r, const char *fmt, ...)
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

/* Reports member |c| of an object as unknown (its path is the current one
 * plus the member's name). */
static void unknown_field(struct pctx *p, const cJSON *c, const char *const *allowed)
{
    size_t o = xlate_path_push(p, "%s%s", p->depth ? "." : "", c->string ? c->string : "");
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
void xlate_check_fields(struct pctx *p, const cJSON *obj, const char *const *allowed)
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
void xlate_fields(struct pctx *p, const cJSON *obj, const char *const *allowed, const cJSON **f)
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

int xlate_header_name_ok(const char *s)
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

int xlate_has_ctl(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 1;
    return 0;
}

const char *xlate_check_regex(struct pctx *p, const char *re)
{
    return xlate_check_regex_groups(p, re, NULL);
}

const char *xlate_check_regex_groups(struct pctx *p, const char *re, int *groups)
{
    if (groups)
        *groups = -1;
    if (p->regex_total > XLATE_MAX_REGEX_PROGRAM)
        return NULL; /* over the object's budget: said once, not compiled */
    char err[300];
    struct xlate_re2_info info;
    int rc = xlate_re2_compile(re, strlen(re), &info, err, sizeof(err));
    if (rc == XLATE_RE2_NOMEM) {
        p->oom = 1;
        return NULL;
    }
    if (rc == XLATE_RE2_INVALID) {
        REJECT(p, XL_R_INVALID_REGEX, "invalid regex \"%s\": %s", re, err);
        return NULL;
    }
    long limit = p->lim->regex_program_size;
    if (rc == XLATE_RE2_TOO_LARGE) {
        REJECT(p, XL_R_REGEX_SIZE,
               "regex \"%s\": %s, far over the program-size limit of %ld "
               "(--max-regex-program-size; Envoy's re2.max_program_size.error_level)",
               re, err, limit);
        p->regex_total = XLATE_MAX_REGEX_PROGRAM + 1; /* it cost the whole budget */
    } else {
        p->regex_total += info.program_size;
        if (info.program_size > limit)
            REJECT(p, XL_R_REGEX_SIZE,
                   "regex \"%s\" has an RE2 program size of %d, over the limit of %ld "
                   "(--max-regex-program-size; Envoy refuses more than its runtime "
                   "re2.max_program_size.error_level, 100 by default)",
                   re, info.program_size, limit);
    }
    if (p->regex_total > XLATE_MAX_REGEX_PROGRAM) {
        size_t depth = p->depth;
        p->depth = 0; /* about the whole object, not this field */
        REJECT(p, XL_R_REGEX_SIZE,
               "the regexes of this object add up to an RE2 program size over %d; the "
               "rest are not checked",
               XLATE_MAX_REGEX_PROGRAM);
        p->depth = depth;
        return NULL;
    }
    if (rc == XLATE_RE2_OK && groups)
        *groups = info.groups;
    return rc == XLATE_RE2_OK ? pstrdup(p, info.prefix) : NULL;
}

int xlate_label_cmp(const void *a, const void *b)
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

struct filter_selector *xlate_parse_selector(struct pctx *p, const cJSON *v)
{
    struct filter_selector *sel = NULL;
    struct filter_error ferr;
    if (!cJSON_IsObject(v)) {
        REJECT(p, XL_R_INVALID_SPEC, "must be a label selector object, got %s", jtype(v));
        return NULL;
    }
    static const char *const allowed[] = {"matchLabels", "matchExpressions", NULL};
    xlate_check_fields(p, v, allowed);
    int rc = filter_selector_from_json(v, &sel, &ferr);
    if (rc == FILTER_ENOMEM)
        p->oom = 1;
    else if (rc != FILTER_OK)
        REJECT(p, XL_R_INVALID_SPEC, "%s", ferr.msg);
    return rc == FILTER_OK ? sel : NULL;
}
