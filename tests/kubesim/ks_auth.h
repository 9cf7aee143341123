/*
 * ks_auth: who a request is (bearer tokens from a static token file,
 * re-read on SIGHUP and by the admin API, with kubesim's audience and
 * expiry extension) and what it may do (RBAC from the Role, ClusterRole,
 * RoleBinding and ClusterRoleBinding objects in the store, as the RBAC
 * authorizer in plugin/pkg/auth/authorizer/rbac evaluates them). The review
 * APIs (ks_review.c) ask the same questions. Event loop only.
 */
#ifndef KS_AUTH_H
#define KS_AUTH_H

#include "ks.h"

struct ks_req;

#define KS_TOKEN_GROUPS_MAX 16
#define KS_TOKEN_AUDS_MAX   8

/* One bearer token of the token set. */
struct ks_token {
    char *token;
    char *user;
    char *uid; /* may be NULL */
    char *groups[KS_TOKEN_GROUPS_MAX];
    int ngroups;
    char *auds[KS_TOKEN_AUDS_MAX]; /* none: audience-agnostic */
    int nauds;
    int64_t expires_ns; /* wall clock; 0: never */
};

int ks_auth_init(struct ks_server *s);
void ks_auth_free(struct ks_server *s);
void ks_tokens_reload(struct ks_server *s);
bool ks_auth_has_tokens(struct ks_server *s);

/* The token |token| of the set, or NULL. Borrowed until the next reload. */
const struct ks_token *ks_auth_token_find(struct ks_server *s, const char *token);

/* Is |t| valid now for one of |auds|? Returns 0 with the audiences it is
 * valid for in |matched| (borrowed), or -1 with kube-apiserver's
 * authentication error in |err| (expired, wrong audience). */
int ks_auth_check_token(struct ks_server *s, const struct ks_token *t, const char *const *auds,
                        size_t nauds, char *err, size_t errlen, const char **matched,
                        size_t *nmatched);

/* Calls |add| with each group a user authenticated by |t| has. */
void ks_auth_token_groups(const struct ks_token *t, void (*add)(void *, const char *), void *arg);

/* --api-audiences (default https://kubernetes.default.svc.cluster.local):
 * what a bearer token must be valid for to call the API. Fills |out|
 * (borrowed) and returns the count. */
size_t ks_auth_api_audiences(struct ks_server *s, const char **out, size_t max);

/* Maps a bearer token to its user and groups (sets r->user, r->uid,
 * r->groups). Returns 0, or -1 if the token is unknown, expired or not
 * valid for the API's audiences. */
int ks_auth_token_user(struct ks_server *s, const char *token, struct ks_req *r);

/* The attributes of one authorization question (authorizer.Attributes). */
struct ks_authz {
    const char *user;
    char *const *groups;
    size_t ngroups;
    const char *verb;
    bool resource_request;
    /* resource requests */
    const char *group, *resource, *sub, *ns, *name;
    /* non-resource requests */
    const char *path;
};

/* RBAC alone: true when a binding grants |at|; |reason| (may be NULL) then
 * names it: `RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "r" to
 * User "u"`. */
bool ks_rbac_allows(struct ks_server *s, const struct ks_authz *at, char *reason, size_t n);

/* The server's decision: --allow-all, then the system:masters group, then
 * RBAC. */
bool ks_authz_decide(struct ks_server *s, const struct ks_authz *at, char *reason, size_t n);

/* Calls |emit| with every rule that RBAC gives |at|'s subject cluster-wide
 * and in namespace |ns| (may be NULL). */
void ks_rbac_rules_for(struct ks_server *s, const struct ks_authz *at, const char *ns,
                       void (*emit)(const cJSON *rule, void *arg), void *arg);

/* Authorizes a routed request against RBAC (unless --allow-all). Returns 0,
 * or replies 403 and returns -1. */
int ks_auth_authorize(struct ks_server *s, struct ks_req *r);

/* Replies 403 with kube-apiserver's message: `<qualified> "<name>" is
 * forbidden: User "u" cannot <verb> resource "<resource>" in API group "g"
 * in the namespace "ns"` (or "at the cluster scope"). */
void ks_auth_forbidden(struct ks_req *r, const char *verb, const char *group, const char *resource,
                       const char *qualified, const char *name, const char *ns);

/* Applies Impersonate-User/-Group/-Uid/-Extra-* (the impersonation filter,
 * apiserver/pkg/endpoints/filters/impersonation.go): each needs the verb
 * impersonate on users, serviceaccounts, groups, uids or userextras, then
 * the request runs as that identity. Returns 0, or replies (403, 500) and
 * returns -1. */
int ks_auth_impersonate(struct ks_server *s, struct ks_req *r);

/* /_sim/tokens endpoints. Returns 0 if answered, -1 if not its path. */
int ks_auth_admin(struct ks_req *r, const char *path);

#endif
