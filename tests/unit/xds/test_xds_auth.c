/* xds_auth: identities (SPIFFE IDs, TokenReview usernames, JWT expiry),
 * the authorization rules per Gateway, and the token cache against a
 * reviewer the test answers by hand, on a clock the test moves. */
#include "cxtest.h"
#include "xds_auth.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_spiffe_parse(void)
{
    struct xds_identity id;
    const char *ok = "spiffe://cluster.local/ns/team-a/sa/edge-proxy";
    REQUIRE_INT_EQ(xds_spiffe_parse(ok, strlen(ok), "cluster.local", &id), 0);
    CHECK_INT_EQ(id.method, XDS_ID_MTLS);
    CHECK_STR_EQ(id.ns, "team-a");
    CHECK_STR_EQ(id.name, "edge-proxy");
    static const char *const bad[] = {
        "spiffe://other.domain/ns/team-a/sa/edge",       /* another trust domain */
        "spiffe://cluster.local.evil/ns/team-a/sa/edge", /* a longer one */
        "spiffe://cluster.local/ns/team-a/sa/edge/x",    /* more path */
        "spiffe://cluster.local/ns/team-a/edge",         /* no /sa/ */
        "spiffe://cluster.local/ns//sa/edge",            /* empty namespace */
        "spiffe://cluster.local/ns/Team-A/sa/edge",      /* not a namespace name */
        "spiffe://cluster.local/ns/team-a/sa/",          /* empty name */
        "https://cluster.local/ns/team-a/sa/edge",       /* another scheme */
        "spiffe://cluster.local",                        /* nothing */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK_INT_EQ(xds_spiffe_parse(bad[i], strlen(bad[i]), "cluster.local", &id), -1);
    /* the length is the URI's, not the C string's: a SAN is not terminated */
    char buf[80];
    snprintf(buf, sizeof(buf), "%sGARBAGE", ok);
    REQUIRE_INT_EQ(xds_spiffe_parse(buf, strlen(ok), "cluster.local", &id), 0);
    CHECK_STR_EQ(id.name, "edge-proxy");
}

static void test_username(void)
{
    struct xds_identity id;
    REQUIRE_INT_EQ(xds_identity_from_username("system:serviceaccount:ns1:sa.one", &id), 0);
    CHECK_INT_EQ(id.method, XDS_ID_TOKEN);
    CHECK_STR_EQ(id.ns, "ns1");
    CHECK_STR_EQ(id.name, "sa.one");
    CHECK_INT_EQ(xds_identity_from_username("alice", &id), -1);
    CHECK_INT_EQ(xds_identity_from_username("system:serviceaccount:ns1", &id), -1);
    CHECK_INT_EQ(xds_identity_from_username("system:serviceaccount::x", &id), -1);
    CHECK_INT_EQ(xds_identity_from_username("system:node:worker-1", &id), -1);
}

/* base64url without padding */
static void b64url(const char *in, char *out, size_t cap)
{
    unsigned char tmp[512];
    int n = EVP_EncodeBlock(tmp, (const unsigned char *)in, (int)strlen(in));
    size_t k = 0;
    for (int i = 0; i < n && k + 1 < cap; i++) {
        char c = (char)tmp[i];
        if (c == '=')
            break;
        out[k++] = c == '+' ? '-' : c == '/' ? '_' : c;
    }
    out[k] = '\0';
}

static void jwt(const char *payload, char *out, size_t cap)
{
    char h[128], p[512];
    b64url("{\"alg\":\"RS256\"}", h, sizeof(h));
    b64url(payload, p, sizeof(p));
    snprintf(out, cap, "%s.%s.c2lnbmF0dXJl", h, p);
}

static void test_jwt_exp(void)
{
    char t[1024];
    /* payload lengths 0..2 mod 3: every padding case */
    jwt("{\"exp\":1900000000}", t, sizeof(t));
    CHECK_INT_EQ(xds_jwt_exp(t), 1900000000);
    jwt("{\"exp\":1900000000, }", t, sizeof(t));
    CHECK_INT_EQ(xds_jwt_exp(t), 0); /* not JSON */
    jwt("{\"aud\":[\"x\"],\"exp\":1700000001}", t, sizeof(t));
    CHECK_INT_EQ(xds_jwt_exp(t), 1700000001);
    jwt("{\"a\":1,\"exp\":1700000002}", t, sizeof(t));
    CHECK_INT_EQ(xds_jwt_exp(t), 1700000002);
    jwt("{\"sub\":\"x\"}", t, sizeof(t));
    CHECK_INT_EQ(xds_jwt_exp(t), 0);
    CHECK_INT_EQ(xds_jwt_exp("opaque-token"), 0);
    CHECK_INT_EQ(xds_jwt_exp("a.b"), 0);
    CHECK_INT_EQ(xds_jwt_exp("a.!!!.c"), 0);
    CHECK_INT_EQ(xds_jwt_exp("a..c"), 0);
    /* Read before anyone vouched for the token: an exp past year 2286 is
     * no exp (the cache's (exp - now) in ns would overflow; fuzz_review). */
    jwt("{\"exp\":9999999999}", t, sizeof(t));
    CHECK_INT_EQ(xds_jwt_exp(t), 9999999999);
    jwt("{\"exp\":10000000000}", t, sizeof(t));
    CHECK_INT_EQ(xds_jwt_exp(t), 0);
    jwt("{\"exp\":999999999999999}", t, sizeof(t));
    CHECK_INT_EQ(xds_jwt_exp(t), 0);
    jwt("{\"exp\":1e999}", t, sizeof(t));
    CHECK_INT_EQ(xds_jwt_exp(t), 0);
}

static void test_authorize(void)
{
    struct xds_identity a = {.method = XDS_ID_TOKEN, .ns = "team-a", .name = "edge"};
    struct xds_identity b = {.method = XDS_ID_MTLS, .ns = "team-b", .name = "edge"};
    struct xds_identity nobody = {.method = XDS_ID_NONE};
    char msg[600] = "";
    /* own namespace, with or without a Gateway in the snapshot */
    CHECK_INT_EQ(xds_authorize(&a, "team-a/gw", NULL, msg, sizeof(msg)), XDS_AUTHZ_ALLOW);
    struct xlate_access none = {0};
    CHECK_INT_EQ(xds_authorize(&a, "team-a/gw", &none, msg, sizeof(msg)), XDS_AUTHZ_ALLOW);
    /* another namespace: denied, with a message naming who and what */
    CHECK_INT_EQ(xds_authorize(&b, "team-a/gw", &none, msg, sizeof(msg)), XDS_AUTHZ_DENY);
    CHECK_STR_CONTAINS(msg, "ServiceAccount team-b/edge (client certificate)");
    CHECK_STR_CONTAINS(msg, "Gateway \"team-a/gw\"");
    /* a namespace prefix is not the namespace */
    struct xds_identity pre = {.method = XDS_ID_TOKEN, .ns = "team", .name = "edge"};
    CHECK_INT_EQ(xds_authorize(&pre, "team-a/gw", &none, msg, sizeof(msg)), XDS_AUTHZ_DENY);
    /* a group without a namespace matches nobody's */
    CHECK_INT_EQ(xds_authorize(&a, "team-a", &none, msg, sizeof(msg)), XDS_AUTHZ_DENY);
    /* listed by name, by "*", and not listed */
    struct xlate_sa_ref sas[] = {{"team-b", "edge"}, {"team-c", "*"}};
    struct xlate_access acc = {.n = 2, .sas = sas};
    CHECK_INT_EQ(xds_authorize(&b, "team-a/gw", &acc, msg, sizeof(msg)), XDS_AUTHZ_ALLOW);
    struct xds_identity c = {.method = XDS_ID_TOKEN, .ns = "team-c", .name = "anyone"};
    CHECK_INT_EQ(xds_authorize(&c, "team-a/gw", &acc, msg, sizeof(msg)), XDS_AUTHZ_ALLOW);
    struct xds_identity b2 = {.method = XDS_ID_TOKEN, .ns = "team-b", .name = "other"};
    CHECK_INT_EQ(xds_authorize(&b2, "team-a/gw", &acc, msg, sizeof(msg)), XDS_AUTHZ_DENY);
    /* nobody: UNAUTHENTICATED, unless the Gateway opts in (then no Secrets,
     * for anyone it does not list either) */
    msg[0] = '\0';
    CHECK_INT_EQ(xds_authorize(&nobody, "team-a/gw", &acc, msg, sizeof(msg)),
                 XDS_AUTHZ_NO_CREDENTIALS);
    CHECK_STR_CONTAINS(msg, "unauthenticated client");
    CHECK_STR_CONTAINS(msg, "allowUnauthenticated");
    CHECK_INT_EQ(xds_authorize(&nobody, "team-a/gw", NULL, msg, sizeof(msg)),
                 XDS_AUTHZ_NO_CREDENTIALS);
    acc.unauthenticated = 1;
    CHECK_INT_EQ(xds_authorize(&nobody, "team-a/gw", &acc, msg, sizeof(msg)),
                 XDS_AUTHZ_ALLOW_NO_SECRETS);
    CHECK_INT_EQ(xds_authorize(&b2, "team-a/gw", &acc, msg, sizeof(msg)),
                 XDS_AUTHZ_ALLOW_NO_SECRETS);
    CHECK_INT_EQ(xds_authorize(&a, "team-a/gw", &acc, msg, sizeof(msg)), XDS_AUTHZ_ALLOW);
    /* equality of access lists */
    struct xlate_sa_ref sas2[] = {{"team-b", "edge"}, {"team-c", "*"}};
    struct xlate_access acc2 = {.n = 2, .sas = sas2, .unauthenticated = 1};
    CHECK(xds_access_equal(&acc, &acc2));
    acc2.unauthenticated = 0;
    CHECK(!xds_access_equal(&acc, &acc2));
    CHECK(xds_access_equal(NULL, &none));
    CHECK(!xds_access_equal(NULL, &acc));
    sas2[1].name = "x";
    acc2.unauthenticated = 1;
    CHECK(!xds_access_equal(&acc, &acc2));
}

/* ---- the token cache --------------------------------------------------------- */

struct fake_review {
    char token[256];
    char audience[64];
    xds_review_done_fn done;
    void *arg;
    int cancelled;
    int answered;
};

static struct fake_review reviews[128];
static int nreviews;
static int refuse_start;
static int64_t now_mono = 1000000000, now_wall = 1800000000;

static int64_t fake_mono(void)
{
    return now_mono;
}

static int64_t fake_wall(void)
{
    return now_wall;
}

static void *fake_start(void *user, const char *token, const char *audience,
                        xds_review_done_fn done, void *arg)
{
    (void)user;
    if (refuse_start || nreviews == (int)(sizeof(reviews) / sizeof(reviews[0])))
        return NULL;
    struct fake_review *r = &reviews[nreviews++];
    memset(r, 0, sizeof(*r));
    snprintf(r->token, sizeof(r->token), "%s", token);
    snprintf(r->audience, sizeof(r->audience), "%s", audience);
    r->done = done;
    r->arg = arg;
    return r;
}

static void fake_cancel(void *user, void *handle)
{
    (void)user;
    ((struct fake_review *)handle)->cancelled = 1;
}

static void answer(int i, enum xds_review_outcome o, const char *user, const char *msg)
{
    struct xds_review_result r = {.outcome = o};
    snprintf(r.username, sizeof(r.username), "%s", user ? user : "");
    snprintf(r.message, sizeof(r.message), "%s", msg ? msg : "");
    reviews[i].answered = 1;
    reviews[i].done(reviews[i].arg, &r);
}

struct got {
    int calls;
    struct xds_auth_verdict v;
};

static void got_cb(void *arg, const struct xds_auth_verdict *v)
{
    struct got *g = arg;
    g->calls++;
    g->v = *v;
}

static struct xds_tokens *tokens(size_t max, unsigned inflight)
{
    nreviews = 0;
    refuse_start = 0;
    struct xds_token_reviewer rv = {.start = fake_start, .cancel = fake_cancel};
    struct xds_tokens *t = xds_tokens_new(&rv, "coxswain", max, inflight);
    REQUIRE(t != NULL);
    xds_tokens_set_clock(t, fake_mono, fake_wall);
    return t;
}

static void test_tokens_review_and_cache(void)
{
    struct xds_tokens *t = tokens(0, 0);
    struct xds_auth_waiter w1 = {0}, w2 = {0};
    struct got g1 = {0}, g2 = {0};
    struct xds_auth_verdict v;
    /* two streams with one token: one review, both answered */
    CHECK_INT_EQ(xds_tokens_check(t, "tok-a", &v, &w1, got_cb, &g1), 0);
    CHECK_INT_EQ(xds_tokens_check(t, "tok-a", &v, &w2, got_cb, &g2), 0);
    REQUIRE_INT_EQ(nreviews, 1);
    CHECK_STR_EQ(reviews[0].token, "tok-a");
    CHECK_STR_EQ(reviews[0].audience, "coxswain");
    answer(0, XDS_REVIEW_OK, "system:serviceaccount:team-a:edge", NULL);
    CHECK_INT_EQ(g1.calls, 1);
    CHECK_INT_EQ(g2.calls, 1);
    CHECK_INT_EQ(g1.v.status, 0);
    CHECK_STR_EQ(g2.v.id.ns, "team-a");
    CHECK_STR_EQ(g2.v.id.name, "edge");
    /* the next stream: from the cache, no review */
    CHECK_INT_EQ(xds_tokens_check(t, "tok-a", &v, &w1, got_cb, &g1), 1);
    CHECK_INT_EQ(v.status, 0);
    CHECK_STR_EQ(v.id.name, "edge");
    CHECK_INT_EQ(nreviews, 1);
    /* an opaque token is remembered XDS_AUTH_TTL_OPAQUE_NS */
    now_mono += XDS_AUTH_TTL_OPAQUE_NS - 1;
    CHECK_INT_EQ(xds_tokens_check(t, "tok-a", &v, &w1, got_cb, &g1), 1);
    now_mono += 1;
    CHECK_INT_EQ(xds_tokens_check(t, "tok-a", &v, &w1, got_cb, &g1), 0);
    CHECK_INT_EQ(nreviews, 2);
    struct xds_tokens_stats st;
    xds_tokens_stats(t, &st);
    CHECK_INT_EQ(st.hits, 2);
    CHECK_INT_EQ(st.inflight, 1);
    xds_tokens_free(t); /* cancels the review under way */
    CHECK(reviews[1].cancelled);
}

static void test_tokens_jwt_expiry(void)
{
    struct xds_tokens *t = tokens(0, 0);
    struct xds_auth_waiter w = {0};
    struct got g = {0};
    struct xds_auth_verdict v;
    char tok[1024], payload[64];
    /* expires in 100 s: remembered until 30 s before */
    snprintf(payload, sizeof(payload), "{\"exp\":%lld}", (long long)(now_wall + 100));
    jwt(payload, tok, sizeof(tok));
    CHECK_INT_EQ(xds_tokens_check(t, tok, &v, &w, got_cb, &g), 0);
    answer(0, XDS_REVIEW_OK, "system:serviceaccount:ns:sa", NULL);
    int64_t start = now_mono;
    now_mono = start + INT64_C(69) * 1000000000;
    CHECK_INT_EQ(xds_tokens_check(t, tok, &v, &w, got_cb, &g), 1);
    now_mono = start + INT64_C(70) * 1000000000;
    CHECK_INT_EQ(xds_tokens_check(t, tok, &v, &w, got_cb, &g), 0);
    /* a token with less than the margin left is not remembered at all */
    now_wall += 80;
    answer(1, XDS_REVIEW_OK, "system:serviceaccount:ns:sa", NULL);
    CHECK_INT_EQ(g.calls, 2);
    CHECK_INT_EQ(g.v.status, 0); /* this stream was admitted: the review said so */
    CHECK_INT_EQ(xds_tokens_check(t, tok, &v, &w, got_cb, &g), 0);
    CHECK_INT_EQ(nreviews, 3);
    /* a far expiry is capped at XDS_AUTH_TTL_MAX_NS */
    snprintf(payload, sizeof(payload), "{\"exp\":%lld}", (long long)(now_wall + 86400));
    jwt(payload, tok, sizeof(tok));
    struct xds_auth_waiter w2 = {0};
    CHECK_INT_EQ(xds_tokens_check(t, tok, &v, &w2, got_cb, &g), 0);
    answer(3, XDS_REVIEW_OK, "system:serviceaccount:ns:sa", NULL);
    now_mono += XDS_AUTH_TTL_MAX_NS - 1;
    CHECK_INT_EQ(xds_tokens_check(t, tok, &v, &w2, got_cb, &g), 1);
    now_mono += 1;
    CHECK_INT_EQ(xds_tokens_check(t, tok, &v, &w2, got_cb, &g), 0);
    xds_tokens_free(t);
}

static void test_tokens_refusals(void)
{
    struct xds_tokens *t = tokens(0, 2);
    struct xds_auth_waiter w[4] = {{0}};
    struct got g[4] = {{0}};
    struct xds_auth_verdict v;
    /* rejected: UNAUTHENTICATED with the API server's words, remembered briefly */
    CHECK_INT_EQ(xds_tokens_check(t, "bad", &v, &w[0], got_cb, &g[0]), 0);
    answer(0, XDS_REVIEW_REJECTED, NULL,
           "[invalid bearer token, service account token has expired]");
    CHECK_INT_EQ(g[0].v.status, XDS_GRPC_UNAUTHENTICATED);
    CHECK_STR_CONTAINS(g[0].v.message, "has expired");
    CHECK_INT_EQ(xds_tokens_check(t, "bad", &v, &w[0], got_cb, &g[0]), 1);
    CHECK_INT_EQ(v.status, XDS_GRPC_UNAUTHENTICATED);
    now_mono += XDS_AUTH_TTL_DENIED_NS;
    CHECK_INT_EQ(xds_tokens_check(t, "bad", &v, &w[0], got_cb, &g[0]), 0);
    answer(1, XDS_REVIEW_REJECTED, NULL, "invalid bearer token");
    /* a user that is not a ServiceAccount */
    CHECK_INT_EQ(xds_tokens_check(t, "alice", &v, &w[1], got_cb, &g[1]), 0);
    answer(2, XDS_REVIEW_OK, "alice", NULL);
    CHECK_INT_EQ(g[1].v.status, XDS_GRPC_UNAUTHENTICATED);
    CHECK_STR_CONTAINS(g[1].v.message, "not to a ServiceAccount");
    /* unavailable: UNAVAILABLE, never remembered */
    CHECK_INT_EQ(xds_tokens_check(t, "good", &v, &w[2], got_cb, &g[2]), 0);
    answer(3, XDS_REVIEW_UNAVAILABLE, NULL, "connection refused");
    CHECK_INT_EQ(g[2].v.status, XDS_GRPC_UNAVAILABLE);
    CHECK_STR_CONTAINS(g[2].v.message, "connection refused");
    CHECK_INT_EQ(xds_tokens_check(t, "good", &v, &w[2], got_cb, &g[2]), 0);
    CHECK_INT_EQ(nreviews, 5);
    /* two under way (the bound): a third token is refused at once */
    CHECK_INT_EQ(xds_tokens_check(t, "third", &v, &w[3], got_cb, &g[3]), 0);
    CHECK_INT_EQ(xds_tokens_check(t, "fourth", &v, &w[0], got_cb, &g[0]), 1);
    CHECK_INT_EQ(v.status, XDS_GRPC_UNAVAILABLE);
    CHECK_STR_CONTAINS(v.message, "too many token reviews");
    /* but a stream with a token under review joins it */
    struct xds_auth_waiter wj = {0};
    struct got gj = {0};
    CHECK_INT_EQ(xds_tokens_check(t, "third", &v, &wj, got_cb, &gj), 0);
    /* a cancelled waiter is not called; the others are */
    xds_tokens_cancel(&w[3]);
    answer(5, XDS_REVIEW_OK, "system:serviceaccount:a:b", NULL);
    CHECK_INT_EQ(g[3].calls, 0);
    CHECK_INT_EQ(gj.calls, 1);
    /* a reviewer that cannot start: UNAVAILABLE at once, nothing kept */
    answer(4, XDS_REVIEW_OK, "system:serviceaccount:a:b", NULL);
    refuse_start = 1;
    CHECK_INT_EQ(xds_tokens_check(t, "fifth", &v, &w[0], got_cb, &g[0]), 1);
    CHECK_INT_EQ(v.status, XDS_GRPC_UNAVAILABLE);
    /* empty and oversized tokens never reach the reviewer */
    refuse_start = 0;
    int before = nreviews;
    CHECK_INT_EQ(xds_tokens_check(t, "", &v, &w[0], got_cb, &g[0]), 1);
    CHECK_INT_EQ(v.status, XDS_GRPC_UNAUTHENTICATED);
    char *big = malloc(XDS_AUTH_TOKEN_MAX + 2);
    REQUIRE(big != NULL);
    memset(big, 'x', XDS_AUTH_TOKEN_MAX + 1);
    big[XDS_AUTH_TOKEN_MAX + 1] = '\0';
    CHECK_INT_EQ(xds_tokens_check(t, big, &v, &w[0], got_cb, &g[0]), 1);
    CHECK_STR_CONTAINS(v.message, "longer than 8192");
    free(big);
    CHECK_INT_EQ(nreviews, before);
    xds_tokens_free(t);
}

static void test_tokens_bounded(void)
{
    struct xds_tokens *t = tokens(4, 0);
    struct xds_auth_waiter w = {0};
    struct got g = {0};
    struct xds_auth_verdict v;
    char tok[32];
    for (int i = 0; i < 10; i++) {
        snprintf(tok, sizeof(tok), "tok-%d", i);
        CHECK_INT_EQ(xds_tokens_check(t, tok, &v, &w, got_cb, &g), 0);
        answer(i, XDS_REVIEW_OK, "system:serviceaccount:a:b", NULL);
        /* the least recently used stays unless pushed out: tok-0 is used again */
        CHECK_INT_EQ(xds_tokens_check(t, "tok-0", &v, &w, got_cb, &g), 1);
    }
    struct xds_tokens_stats st;
    xds_tokens_stats(t, &st);
    CHECK_INT_EQ(st.entries, 4);
    CHECK_INT_EQ(xds_tokens_check(t, "tok-9", &v, &w, got_cb, &g), 1);
    CHECK_INT_EQ(xds_tokens_check(t, "tok-1", &v, &w, got_cb, &g), 0); /* pushed out */
    xds_tokens_free(t);
}

static const struct cxt_case cases[] = {
    CXT(test_spiffe_parse),
    CXT(test_username),
    CXT(test_jwt_exp),
    CXT(test_authorize),
    CXT(test_tokens_review_and_cache),
    CXT(test_tokens_jwt_expiry),
    CXT(test_tokens_refusals),
    CXT(test_tokens_bounded),
};
CXT_MAIN(cases)
