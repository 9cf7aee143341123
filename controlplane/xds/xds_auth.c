#include "xds_auth.h"

#include "cx_base64.h"
#include "cx_map.h"
#include "cx_time.h"
#include "xds_types.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <openssl/evp.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- identities ------------------------------------------------------------ */

const char *xds_identity_str(const struct xds_identity *id, char *buf, size_t cap)
{
    if (id->method == XDS_ID_NONE)
        snprintf(buf, cap, "an unauthenticated client");
    else
        snprintf(buf, cap, "ServiceAccount %s/%s (%s)", id->ns, id->name,
                 id->method == XDS_ID_TOKEN ? "token" : "client certificate");
    return buf;
}

/* A namespace: a DNS-1123 label. */
static int ns_ok(const char *s, size_t n)
{
    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-'))
            return 0;
    return 1;
}

/* A ServiceAccount name: a DNS-1123 subdomain. */
static int sa_ok(const char *s, size_t n)
{
    if (n == 0 || n > 253 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-' ||
              s[i] == '.'))
            return 0;
    return 1;
}

static int set_identity(struct xds_identity *out, enum xds_id_method m, const char *ns, size_t nl,
                        const char *name, size_t nm)
{
    if (!ns_ok(ns, nl) || !sa_ok(name, nm))
        return -1;
    memset(out, 0, sizeof(*out));
    out->method = m;
    memcpy(out->ns, ns, nl);
    memcpy(out->name, name, nm);
    return 0;
}

int xds_spiffe_parse(const char *uri, size_t len, const char *trust_domain,
                     struct xds_identity *out)
{
    static const char scheme[] = "spiffe://";
    size_t tl = strlen(trust_domain);
    if (len < sizeof(scheme) - 1 + tl || strncasecmp(uri, scheme, sizeof(scheme) - 1) != 0)
        return -1;
    const char *p = uri + sizeof(scheme) - 1, *end = uri + len;
    if (tl == 0 || strncmp(p, trust_domain, tl) != 0)
        return -1;
    p += tl;
    if (end - p < 4 || memcmp(p, "/ns/", 4) != 0)
        return -1;
    const char *ns = p + 4;
    const char *sa = memchr(ns, '/', (size_t)(end - ns));
    if (!sa || end - sa < 4 || memcmp(sa, "/sa/", 4) != 0)
        return -1;
    const char *name = sa + 4;
    if (memchr(name, '/', (size_t)(end - name)))
        return -1;
    return set_identity(out, XDS_ID_MTLS, ns, (size_t)(sa - ns), name, (size_t)(end - name));
}

int xds_spiffe_from_cert(X509 *cert, const char *trust_domain, struct xds_identity *out, char *why,
                         size_t whycap)
{
    GENERAL_NAMES *sans = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
    int rc = -1, uris = 0;
    char first[128] = "";
    for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans) && rc != 0; i++) {
        const GENERAL_NAME *gn = sk_GENERAL_NAME_value(sans, i);
        if (gn->type != GEN_URI)
            continue;
        const char *u = (const char *)ASN1_STRING_get0_data(gn->d.uniformResourceIdentifier);
        int ul = ASN1_STRING_length(gn->d.uniformResourceIdentifier);
        if (!u || ul <= 0)
            continue;
        if (uris++ == 0) {
            size_t k = 0;
            for (int j = 0; j < ul && k + 1 < sizeof(first); j++)
                first[k++] = isprint((unsigned char)u[j]) ? u[j] : '?';
            first[k] = '\0';
        }
        if (xds_spiffe_parse(u, (size_t)ul, trust_domain, out) == 0)
            rc = 0;
    }
    GENERAL_NAMES_free(sans);
    if (rc != 0) {
        if (uris == 0)
            snprintf(why, whycap,
                     "the client certificate has no URI SAN (a SPIFFE ID "
                     "spiffe://%s/ns/<namespace>/sa/<name>)",
                     trust_domain);
        else
            snprintf(why, whycap,
                     "the client certificate's URI SAN \"%s\" is not a SPIFFE ID "
                     "spiffe://%s/ns/<namespace>/sa/<name>",
                     first, trust_domain);
    }
    return rc;
}

int xds_identity_from_username(const char *user, struct xds_identity *out)
{
    static const char pfx[] = "system:serviceaccount:";
    if (strncmp(user, pfx, sizeof(pfx) - 1) != 0)
        return -1;
    const char *ns = user + sizeof(pfx) - 1;
    const char *colon = strchr(ns, ':');
    if (!colon)
        return -1;
    return set_identity(out, XDS_ID_TOKEN, ns, (size_t)(colon - ns), colon + 1, strlen(colon + 1));
}

int64_t xds_jwt_exp(const char *token)
{
    const char *d1 = strchr(token, '.');
    const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    if (!d1 || !d2 || strchr(d2 + 1, '.'))
        return 0;
    size_t n = (size_t)(d2 - d1 - 1);
    if (n == 0 || n > XDS_AUTH_TOKEN_MAX)
        return 0;
    unsigned char *raw = malloc(CX_B64_DECODED_MAX(n));
    int64_t exp = 0;
    long len = raw ? cx_b64_decode(d1 + 1, n, raw, CX_B64_URL) : -1;
    if (len <= 0)
        goto out;
    cJSON *j = cJSON_ParseWithLength((const char *)raw, (size_t)len);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "exp");
    /* Before year 2286: (exp - now) in nanoseconds stays far inside int64
     * (a token's bytes are read before anyone vouched for them). */
    if (cJSON_IsNumber(e) && e->valuedouble > 0 && e->valuedouble < 1e10)
        exp = (int64_t)e->valuedouble;
    cJSON_Delete(j);
out:
    free(raw);
    return exp;
}

/* ---- authorization ------------------------------------------------------------ */

enum xds_authz xds_authorize(const struct xds_identity *id, const char *group,
                             const struct xlate_access *access, char *msg, size_t msgcap)
{
    const char *slash = strchr(group, '/');
    size_t gnl = slash ? (size_t)(slash - group) : 0;
    char who[400];
    if (id->method != XDS_ID_NONE) {
        if (slash && strlen(id->ns) == gnl && memcmp(id->ns, group, gnl) == 0)
            return XDS_AUTHZ_ALLOW;
        for (size_t i = 0; access && i < access->n; i++) {
            const struct xlate_sa_ref *r = &access->sas[i];
            if (strcmp(r->ns, id->ns) == 0 &&
                (strcmp(r->name, "*") == 0 || strcmp(r->name, id->name) == 0))
                return XDS_AUTHZ_ALLOW;
        }
        if (access && access->unauthenticated)
            return XDS_AUTHZ_ALLOW_NO_SECRETS;
        snprintf(msg, msgcap,
                 "%s may not receive the configuration of Gateway \"%s\": a ServiceAccount "
                 "receives the Gateways of its own namespace and those whose "
                 "spec.xdsAccess.serviceAccounts list it",
                 xds_identity_str(id, who, sizeof(who)), group);
        return XDS_AUTHZ_DENY;
    }
    if (access && access->unauthenticated)
        return XDS_AUTHZ_ALLOW_NO_SECRETS;
    snprintf(msg, msgcap,
             "an unauthenticated client asked for the configuration of Gateway \"%s\": present "
             "a ServiceAccount token (authorization: Bearer) or a SPIFFE client certificate, or "
             "set the Gateway's spec.xdsAccess.allowUnauthenticated",
             group);
    return XDS_AUTHZ_NO_CREDENTIALS;
}

int xds_access_equal(const struct xlate_access *a, const struct xlate_access *b)
{
    static const struct xlate_access none;
    if (!a)
        a = &none;
    if (!b)
        b = &none;
    if (a->n != b->n || a->unauthenticated != b->unauthenticated)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->sas[i].ns, b->sas[i].ns) != 0 || strcmp(a->sas[i].name, b->sas[i].name) != 0)
            return 0;
    return 1;
}

/* ---- the token cache ------------------------------------------------------------ */

struct xds_token_entry {
    uint8_t key[32]; /* SHA-256 of the token: the token itself is never kept */
    struct xds_tokens *t;
    struct xds_token_entry *older, *newer;
    uint8_t pending;
    void *handle;
    struct xds_auth_waiter *waiters;
    struct xds_auth_verdict verdict;
    int64_t expires_ns;
    int64_t exp_wall; /* the token's JWT exp (Unix s), 0: none */
};

struct xds_tokens {
    struct xds_token_reviewer rv;
    char *audience;
    struct cx_map map;
    struct xds_token_entry *oldest, *newest;
    size_t max_entries;
    unsigned max_inflight;
    int64_t (*mono_ns)(void);
    int64_t (*wall_s)(void);
    int any_user; /* any authenticated user, not only ServiceAccounts */
    struct xds_tokens_stats st;
};

static int64_t real_wall_s(void)
{
    return cx_wall_ns() / CX_NS_PER_S;
}

struct xds_tokens *xds_tokens_new(const struct xds_token_reviewer *rv, const char *audience,
                                  size_t max_entries, unsigned max_inflight)
{
    struct xds_tokens *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->rv = *rv;
    t->audience = strdup(audience ? audience : "");
    if (!t->audience) {
        free(t);
        return NULL;
    }
    t->max_entries = max_entries ? max_entries : XDS_AUTH_CACHE_MAX;
    t->max_inflight = max_inflight ? max_inflight : XDS_AUTH_INFLIGHT_MAX;
    t->mono_ns = cx_mono_ns;
    t->wall_s = real_wall_s;
    return t;
}

void xds_tokens_any_user(struct xds_tokens *t)
{
    t->any_user = 1;
}

void xds_tokens_set_clock(struct xds_tokens *t, int64_t (*mono_ns)(void), int64_t (*wall_s)(void))
{
    t->mono_ns = mono_ns ? mono_ns : cx_mono_ns;
    t->wall_s = wall_s ? wall_s : real_wall_s;
}

static void list_unlink(struct xds_tokens *t, struct xds_token_entry *e)
{
    if (e->older)
        e->older->newer = e->newer;
    else
        t->oldest = e->newer;
    if (e->newer)
        e->newer->older = e->older;
    else
        t->newest = e->older;
    e->older = e->newer = NULL;
}

static void list_push(struct xds_tokens *t, struct xds_token_entry *e)
{
    e->older = t->newest;
    e->newer = NULL;
    if (t->newest)
        t->newest->newer = e;
    else
        t->oldest = e;
    t->newest = e;
}

/* Removes a finished entry (no waiters). */
static void entry_drop(struct xds_tokens *t, struct xds_token_entry *e)
{
    cx_map_del(&t->map, e->key, sizeof(e->key));
    list_unlink(t, e);
    t->st.entries--;
    OPENSSL_cleanse(e, sizeof(*e));
    free(e);
}

void xds_tokens_free(struct xds_tokens *t)
{
    if (!t)
        return;
    struct xds_token_entry *e = t->oldest;
    while (e) {
        struct xds_token_entry *next = e->newer;
        if (e->pending && t->rv.cancel)
            t->rv.cancel(t->rv.user, e->handle);
        for (struct xds_auth_waiter *w = e->waiters; w; w = w->next)
            w->entry = NULL;
        free(e);
        e = next;
    }
    cx_map_free(&t->map);
    free(t->audience);
    free(t);
}

void xds_tokens_cancel(struct xds_auth_waiter *w)
{
    struct xds_token_entry *e = w->entry;
    if (!e)
        return;
    if (w->prev)
        w->prev->next = w->next;
    else
        e->waiters = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->prev = w->next = NULL;
    w->entry = NULL;
}

static void review_done(void *arg, const struct xds_review_result *r)
{
    struct xds_token_entry *e = arg;
    struct xds_tokens *t = e->t;
    int64_t now = t->mono_ns();
    e->pending = 0;
    e->handle = NULL;
    t->st.inflight--;
    if ((unsigned)r->outcome <= XDS_REVIEW_UNAVAILABLE)
        t->st.reviews[r->outcome]++;
    struct xds_auth_verdict *v = &e->verdict;
    memset(v, 0, sizeof(*v));
    int64_t ttl = 0;
    switch (r->outcome) {
    case XDS_REVIEW_OK:
        if (t->any_user) {
            v->id.method = XDS_ID_TOKEN;
            snprintf(v->id.name, sizeof(v->id.name), "%.253s", r->username);
        } else if (xds_identity_from_username(r->username, &v->id) != 0) {
            v->status = XDS_GRPC_UNAUTHENTICATED;
            snprintf(v->message, sizeof(v->message),
                     "the token belongs to \"%.200s\", not to a ServiceAccount", r->username);
            ttl = XDS_AUTH_TTL_DENIED_NS;
            break;
        }
        ttl = XDS_AUTH_TTL_OPAQUE_NS;
        if (e->exp_wall) {
            int64_t left = (e->exp_wall - t->wall_s()) * CX_NS_PER_S - XDS_AUTH_EXPIRY_MARGIN_NS;
            ttl = left < XDS_AUTH_TTL_MAX_NS ? left : XDS_AUTH_TTL_MAX_NS;
        }
        break;
    case XDS_REVIEW_REJECTED:
        v->status = XDS_GRPC_UNAUTHENTICATED;
        snprintf(v->message, sizeof(v->message), "the token was refused by TokenReview: %.300s",
                 r->message[0] ? r->message : "not authenticated");
        ttl = XDS_AUTH_TTL_DENIED_NS;
        break;
    default:
        v->status = XDS_GRPC_UNAVAILABLE;
        snprintf(v->message, sizeof(v->message),
                 "cannot check the token now (TokenReview: %.300s); retry later",
                 r->message[0] ? r->message : "no answer");
        break;
    }
    e->expires_ns = now + (ttl > 0 ? ttl : 0);
    struct xds_auth_verdict copy = *v;
    struct xds_auth_waiter *list = e->waiters;
    e->waiters = NULL;
    if (ttl <= 0)
        entry_drop(t, e); /* not remembered: the next stream asks again */
    /* Callbacks may cancel other waiters of the list or start new checks. */
    while (list) {
        struct xds_auth_waiter *w = list;
        list = w->next;
        if (list)
            list->prev = NULL;
        w->prev = w->next = NULL;
        w->entry = NULL;
        w->cb(w->arg, &copy);
        /* |w|'s owner may be gone; |list| was detached before. A
         * waiter cancelled during a callback has entry NULL already. */
    }
    OPENSSL_cleanse(&copy, sizeof(copy));
}

static void refuse(struct xds_auth_verdict *out, int status, const char *msg)
{
    memset(out, 0, sizeof(*out));
    out->status = status;
    snprintf(out->message, sizeof(out->message), "%s", msg);
}

int xds_tokens_check(struct xds_tokens *t, const char *token, struct xds_auth_verdict *out,
                     struct xds_auth_waiter *w,
                     void (*cb)(void *arg, const struct xds_auth_verdict *v), void *arg)
{
    size_t tl = strlen(token);
    if (tl == 0 || tl > XDS_AUTH_TOKEN_MAX) {
        refuse(out, XDS_GRPC_UNAUTHENTICATED,
               tl ? "the bearer token is longer than 8192 bytes" : "the bearer token is empty");
        return 1;
    }
    uint8_t key[32];
    unsigned kl = sizeof(key);
    if (EVP_Digest(token, tl, key, &kl, EVP_sha256(), NULL) != 1) {
        refuse(out, XDS_GRPC_INTERNAL, "cannot hash the token");
        return 1;
    }
    int64_t now = t->mono_ns();
    struct xds_token_entry *e = cx_map_get(&t->map, key, sizeof(key));
    if (e && !e->pending && e->expires_ns <= now) {
        entry_drop(t, e);
        e = NULL;
    }
    if (e && !e->pending) {
        t->st.hits++;
        *out = e->verdict;
        list_unlink(t, e);
        list_push(t, e);
        return 1;
    }
    t->st.misses++;
    if (!e) {
        if (t->st.inflight >= t->max_inflight) {
            t->st.overloaded++;
            refuse(out, XDS_GRPC_UNAVAILABLE,
                   "too many token reviews under way at once; retry later");
            return 1;
        }
        /* Room: the least recently used finished entries go. */
        for (struct xds_token_entry *o = t->oldest; o && t->st.entries >= t->max_entries;) {
            struct xds_token_entry *next = o->newer;
            if (!o->pending)
                entry_drop(t, o);
            o = next;
        }
        e = calloc(1, sizeof(*e));
        if (!e) {
            refuse(out, XDS_GRPC_RESOURCE_EXHAUSTED, "out of memory");
            return 1;
        }
        memcpy(e->key, key, sizeof(key));
        e->t = t;
        e->pending = 1;
        e->exp_wall = xds_jwt_exp(token);
        if (cx_map_put(&t->map, e->key, sizeof(e->key), e, NULL) != 0) {
            free(e);
            refuse(out, XDS_GRPC_RESOURCE_EXHAUSTED, "out of memory");
            return 1;
        }
        list_push(t, e);
        t->st.entries++;
        t->st.inflight++;
        e->handle =
            t->rv.start ? t->rv.start(t->rv.user, token, t->audience, review_done, e) : NULL;
        if (!e->handle) {
            t->st.inflight--;
            e->pending = 0;
            entry_drop(t, e);
            refuse(out, XDS_GRPC_UNAVAILABLE, "cannot start a TokenReview; retry later");
            return 1;
        }
    }
    w->entry = e;
    w->cb = cb;
    w->arg = arg;
    w->prev = NULL;
    w->next = e->waiters;
    if (e->waiters)
        e->waiters->prev = w;
    e->waiters = w;
    return 0;
}

void xds_tokens_stats(const struct xds_tokens *t, struct xds_tokens_stats *out)
{
    *out = t->st;
}
