/*
 * ks_accept: Accept header negotiation, as kube-apiserver's
 * handlers/negotiation/negotiate.go does it with goautoneg.
 */
#include "ks_accept.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One clause of an Accept header, as bitbucket.org/ww/goautoneg parses it. */
struct clause {
    char type[64], subtype[64];
    double q;
    char as[64], g[64], v[64], stream[64], sv[64];
    bool has_convert, has_stream, has_sv;
};

#define CLAUSES_MAX 16

static void trim_copy(char *out, size_t n, const char *s, size_t len)
{
    while (len && (*s == ' ' || *s == '\t')) {
        s++;
        len--;
    }
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        len--;
    snprintf(out, n, "%.*s", (int)len, s);
}

/* Parses one "type/subtype;k=v;..." clause. Returns false to skip it (a
 * media range that is neither type/subtype nor a bare "*"). */
static bool parse_clause(const char *s, size_t len, struct clause *c)
{
    memset(c, 0, sizeof(*c));
    c->q = 1.0;
    const char *semi = memchr(s, ';', len);
    size_t mlen = semi ? (size_t)(semi - s) : len;
    const char *slash = memchr(s, '/', mlen);
    if (slash) {
        if (memchr(slash + 1, '/', mlen - (size_t)(slash + 1 - s)))
            return false;
        trim_copy(c->type, sizeof(c->type), s, (size_t)(slash - s));
        trim_copy(c->subtype, sizeof(c->subtype), slash + 1, mlen - (size_t)(slash + 1 - s));
    } else {
        trim_copy(c->type, sizeof(c->type), s, mlen);
        if (strcmp(c->type, "*") != 0)
            return false;
        snprintf(c->subtype, sizeof(c->subtype), "*");
    }
    const char *p = semi ? semi + 1 : NULL;
    const char *end = s + len;
    while (p && p < end) {
        const char *next = memchr(p, ';', (size_t)(end - p));
        size_t plen = next ? (size_t)(next - p) : (size_t)(end - p);
        const char *eq = memchr(p, '=', plen);
        if (eq) {
            char k[32], v[64];
            trim_copy(k, sizeof(k), p, (size_t)(eq - p));
            trim_copy(v, sizeof(v), eq + 1, plen - (size_t)(eq + 1 - p));
            if (strcmp(k, "q") == 0) {
                c->q = strtod(v, NULL);
            } else if (strcmp(k, "as") == 0) {
                snprintf(c->as, sizeof(c->as), "%s", v);
                c->has_convert = true;
            } else if (strcmp(k, "g") == 0) {
                snprintf(c->g, sizeof(c->g), "%s", v);
                c->has_convert = true;
            } else if (strcmp(k, "v") == 0) {
                snprintf(c->v, sizeof(c->v), "%s", v);
                c->has_convert = true;
            } else if (strcmp(k, "stream") == 0) {
                snprintf(c->stream, sizeof(c->stream), "%s", v);
                c->has_stream = true;
            } else if (strcmp(k, "sv") == 0) {
                snprintf(c->sv, sizeof(c->sv), "%s", v);
                c->has_sv = true;
            }
        }
        p = next ? next + 1 : NULL;
    }
    return true;
}

/* goautoneg's order: higher q first, then concrete types before wildcards;
 * Go sorts short slices by insertion, so equal clauses keep their order. */
static bool clause_less(const struct clause *a, const struct clause *b)
{
    if (a->q > b->q)
        return true;
    if (strcmp(a->type, "*") != 0 && strcmp(b->type, "*") == 0)
        return true;
    if (strcmp(a->subtype, "*") != 0 && strcmp(b->subtype, "*") == 0)
        return true;
    return false;
}

/* The media types a resource endpoint serves, in the serializer's order:
 * JSON, YAML, and protobuf for built-in kinds (custom resources have no
 * protobuf). kubesim writes JSON whatever was chosen. */
struct mtype {
    const char *type, *subtype;
    bool stream; /* has a stream serializer (watch framing) */
};

static const struct mtype builtin_types[] = {{"application", "json", true},
                                             {"application", "yaml", false},
                                             {"application", "vnd.kubernetes.protobuf", true}};

/* acceptMediaTypeOptions with the RequestScope's restrictions
 * (AllowsConversion, AllowsServerVersion, AllowsStreamSchema). */
static bool clause_ok(const struct clause *c, const struct mtype *m, bool table_ok, enum ks_as *as,
                      char *ver)
{
    if (c->has_stream && c->stream[0] && (!m->stream || strcmp(c->stream, "watch") != 0))
        return false;
    if (c->has_sv && c->sv[0] && strcmp(c->sv, "v1") != 0)
        return false;
    *as = KS_AS_NONE;
    if (!c->has_convert)
        return true;
    if (strcmp(c->g, "meta.k8s.io") != 0 ||
        (strcmp(c->v, "v1") != 0 && strcmp(c->v, "v1beta1") != 0))
        return false;
    if (strcmp(c->as, "PartialObjectMetadata") == 0)
        *as = KS_AS_PARTIAL;
    else if (strcmp(c->as, "PartialObjectMetadataList") == 0)
        *as = KS_AS_PARTIAL_LIST;
    else if (strcmp(c->as, "Table") == 0 && strcmp(m->type, "application") == 0 &&
             (strcmp(m->subtype, "json") == 0 || strcmp(m->subtype, "yaml") == 0) && table_ok)
        *as = KS_AS_TABLE;
    else
        return false;
    snprintf(ver, 64, "%s", c->v);
    return true;
}

void ks_accept_negotiate(const char *accept, bool custom, bool table_ok, enum ks_as *as,
                         bool *v1beta1)
{
    *as = KS_AS_NONE;
    *v1beta1 = false;
    if (!accept || !*accept)
        return;
    struct clause cl[CLAUSES_MAX];
    size_t n = 0;
    const char *p = accept;
    while (*p && n < CLAUSES_MAX) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (parse_clause(p, len, &cl[n])) {
            /* stable insertion */
            size_t j = n;
            struct clause tmp = cl[n];
            while (j > 0 && clause_less(&tmp, &cl[j - 1])) {
                cl[j] = cl[j - 1];
                j--;
            }
            cl[j] = tmp;
            n++;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    size_t ntypes = custom ? 2 : 3;
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < ntypes; k++) {
            const struct mtype *m = &builtin_types[k];
            bool match =
                (strcmp(cl[i].type, m->type) == 0 &&
                 (strcmp(cl[i].subtype, m->subtype) == 0 || strcmp(cl[i].subtype, "*") == 0)) ||
                (strcmp(cl[i].type, "*") == 0 && strcmp(cl[i].subtype, "*") == 0);
            char ver[64];
            if (match && clause_ok(&cl[i], m, table_ok, as, ver)) {
                *v1beta1 = *as != KS_AS_NONE && strcmp(ver, "v1beta1") == 0;
                return;
            }
        }
    }
    /* Nothing acceptable: the server's first media type, untransformed. */
    *as = KS_AS_NONE;
}
