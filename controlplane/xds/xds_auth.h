/*
 * xds_auth: who a proxy is, and which Gateways it may receive.
 *
 * Authentication has two methods, both on unless the server runs with
 * --xds-auth none:
 *   - a ServiceAccount token in the call's `authorization: Bearer ...`
 *     header, checked with the TokenReview API (authentication.k8s.io/v1)
 *     for the configured audience through a reviewer the daemon supplies
 *     (its kube client). Results are cached by the token's SHA-256 until
 *     shortly before the token's expiry (its JWT `exp`, read without
 *     verification: the review verified it) and at most XDS_AUTH_TTL_MAX;
 *     the cache holds at most XDS_AUTH_CACHE_MAX tokens, and at most
 *     XDS_AUTH_INFLIGHT_MAX reviews run at once (more are refused with
 *     UNAVAILABLE). A review that fails (the API server unreachable, a
 *     5xx, our RBAC missing) fails the new stream closed with UNAVAILABLE;
 *     established streams are never touched.
 *   - a client certificate (verified by TLS against --xds-tls-client-ca-file)
 *     whose URI SAN is spiffe://<trust domain>/ns/<namespace>/sa/<name>.
 *
 * Authorization per Gateway (node group "namespace/name"): a ServiceAccount
 * may receive the Gateways of its own namespace, and those whose
 * spec.xdsAccess.serviceAccounts list it (a name "*" stands for every
 * ServiceAccount of that namespace); a Gateway with
 * spec.xdsAccess.allowUnauthenticated is served, without Secrets, to clients
 * that present no credentials (proxyless gRPC clients).
 *
 * Main loop only. No sockets or kube here: the reviewer is a callback.
 */
#ifndef XDS_AUTH_H
#define XDS_AUTH_H

#include "xds_types.h"
#include "xlate_snapshot_types.h"

#include <openssl/x509.h>
#include <stddef.h>
#include <stdint.h>

#define XDS_AUTH_CACHE_MAX        10000                       /* tokens remembered */
#define XDS_AUTH_INFLIGHT_MAX     64                          /* TokenReviews under way at once */
#define XDS_AUTH_TTL_MAX_NS       (INT64_C(600) * 1000000000) /* a positive review, at most */
#define XDS_AUTH_TTL_OPAQUE_NS    (INT64_C(120) * 1000000000) /* a token without a JWT exp */
#define XDS_AUTH_TTL_DENIED_NS    (INT64_C(10) * 1000000000)  /* a refused token */
#define XDS_AUTH_EXPIRY_MARGIN_NS (INT64_C(30) * 1000000000)  /* forgotten this long before exp */
#define XDS_AUTH_TOKEN_MAX        8192                        /* bytes of a bearer token */

#define XDS_SPIFFE_TRUST_DOMAIN_DEFAULT "cluster.local"
#define XDS_AUTH_AUDIENCE_DEFAULT       "coxswain"

enum xds_id_method {
    XDS_ID_NONE = 0,  /* no credentials */
    XDS_ID_TOKEN = 1, /* a ServiceAccount token, reviewed */
    XDS_ID_MTLS = 2,  /* a SPIFFE client certificate */
};

/* A proxy's identity: a ServiceAccount, or nobody. */
struct xds_identity {
    enum xds_id_method method;
    char ns[64];
    char name[254];
};

/* "ServiceAccount ns/name (token)", or "an unauthenticated client". */
const char *xds_identity_str(const struct xds_identity *id, char *buf, size_t cap);

/* Parses spiffe://<trust_domain>/ns/<ns>/sa/<name> (|len| bytes). Returns 0
 * with |out| filled (method XDS_ID_MTLS), or -1. */
int xds_spiffe_parse(const char *uri, size_t len, const char *trust_domain,
                     struct xds_identity *out);

/* The SPIFFE identity of a (verified) client certificate: the first URI
 * SAN of |trust_domain| that parses. Returns 0, or -1 with a reason in
 * |why| (no URI SAN, another trust domain, not a ServiceAccount path). */
int xds_spiffe_from_cert(X509 *cert, const char *trust_domain, struct xds_identity *out, char *why,
                         size_t whycap);

/* Parses a TokenReview username "system:serviceaccount:<ns>:<name>".
 * Returns 0 (method XDS_ID_TOKEN) or -1 (not a ServiceAccount). */
int xds_identity_from_username(const char *user, struct xds_identity *out);

/* The `exp` claim (Unix seconds) of a JWT-shaped token, read without
 * verifying anything; 0 if it has none. */
int64_t xds_jwt_exp(const char *token);

/* ---- authorization --------------------------------------------------------- */

enum xds_authz {
    XDS_AUTHZ_ALLOW = 0,            /* everything, Secrets included */
    XDS_AUTHZ_ALLOW_NO_SECRETS = 1, /* the Gateway opted in for clients without credentials */
    XDS_AUTHZ_DENY = 2,             /* authenticated, not allowed: PERMISSION_DENIED */
    XDS_AUTHZ_NO_CREDENTIALS = 3,   /* no credentials and no opt-in: UNAUTHENTICATED */
};

/* May |id| receive node group |group| ("namespace/name"), whose Gateway's
 * spec.xdsAccess is |access| (NULL: the snapshot has no such Gateway)?
 * Writes a message for a refusal into |msg| (naming who asked for what). */
enum xds_authz xds_authorize(const struct xds_identity *id, const char *group,
                             const struct xlate_access *access, char *msg, size_t msgcap);

/* 1 if two access lists say the same. */
int xds_access_equal(const struct xlate_access *a, const struct xlate_access *b);

/* ---- token reviews and their cache -------------------------------------------- */

enum xds_review_outcome {
    XDS_REVIEW_OK = 0,          /* authenticated, for the audience */
    XDS_REVIEW_REJECTED = 1,    /* the API server says no: unknown, expired, wrong audience */
    XDS_REVIEW_UNAVAILABLE = 2, /* no answer (transport, 5xx, 403 for our own RBAC...) */
};

struct xds_review_result {
    enum xds_review_outcome outcome;
    char username[320]; /* OK: status.user.username */
    char message[256];  /* REJECTED: status.error; UNAVAILABLE: why */
};

typedef void (*xds_review_done_fn)(void *arg, const struct xds_review_result *r);

/* What reviews tokens (the daemon: TokenReview through its kube client). */
struct xds_token_reviewer {
    /* Starts a review of |token| for |audience|; |done| runs once, later,
     * from the loop (never inside start), unless cancelled. Returns a
     * handle, or NULL when it cannot start (|done| never runs). */
    void *(*start)(void *user, const char *token, const char *audience, xds_review_done_fn done,
                   void *arg);
    void (*cancel)(void *user, void *handle);
    void *user;
};

/* What a stream learns about its credentials. */
struct xds_auth_verdict {
    int status; /* 0: |id| holds the identity; else the gRPC status to end the call with */
    struct xds_identity id;
    char message[400];
};

struct xds_tokens;
struct xds_token_entry;

/* A stream waiting for a review. Embedded in the stream; main loop only. */
struct xds_auth_waiter {
    struct xds_auth_waiter *prev, *next;
    struct xds_token_entry *entry;
    void (*cb)(void *arg, const struct xds_auth_verdict *v);
    void *arg;
};

struct xds_tokens_stats {
    uint64_t entries;  /* tokens cached now */
    uint64_t inflight; /* reviews under way */
    uint64_t hits, misses;
    uint64_t reviews[3]; /* by enum xds_review_outcome */
    uint64_t overloaded; /* refused: too many reviews under way */
};

/* |rv| is copied; |audience| too. |max_entries| 0: XDS_AUTH_CACHE_MAX;
 * |max_inflight| 0: XDS_AUTH_INFLIGHT_MAX. */
struct xds_tokens *xds_tokens_new(const struct xds_token_reviewer *rv, const char *audience,
                                  size_t max_entries, unsigned max_inflight);
/* Cancels the reviews under way (their waiters are never called). */
void xds_tokens_free(struct xds_tokens *t);

/* Accepts every user the reviewer authenticates (not only ServiceAccounts);
 * the verdict's id.name is then the username. The admin server's cache of
 * TokenReview + SubjectAccessReview answers uses this. */
void xds_tokens_any_user(struct xds_tokens *t);

/* Sets the clock (CLOCK_MONOTONIC ns, and the wall clock in Unix seconds)
 * used for expiry; tests move it. NULL: the real ones. */
void xds_tokens_set_clock(struct xds_tokens *t, int64_t (*mono_ns)(void), int64_t (*wall_s)(void));

/* Checks |token|. Returns 1 with |out| filled when the answer is known now
 * (cached, or refused at once: too long, too many reviews), or 0 when a
 * review runs: |w| is then linked and |cb| runs with the verdict later
 * (unless xds_tokens_cancel(w) first). */
int xds_tokens_check(struct xds_tokens *t, const char *token, struct xds_auth_verdict *out,
                     struct xds_auth_waiter *w,
                     void (*cb)(void *arg, const struct xds_auth_verdict *v), void *arg);

/* Unlinks a waiting stream (no-op if not waiting). */
void xds_tokens_cancel(struct xds_auth_waiter *w);

void xds_tokens_stats(const struct xds_tokens *t, struct xds_tokens_stats *out);

#endif
