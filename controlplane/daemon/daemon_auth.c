/* Who may read what: TokenReview for the xDS server's proxies, and
 * TokenReview + SubjectAccessReview for the admin server's /debug/... and
 * /v3/discovery:* (the convention of kube-rbac-proxy: `get` on the
 * non-resource URL), both through the daemon's kube client. */
#include "daemon_auth.h"

#include "cx_log.h"
#include "kube_client.h"
#include "xds_auth.h"

#include <cjson/cJSON.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct kube_resource tokenreviews = {
    .group = "authentication.k8s.io",
    .version = "v1",
    .plural = "tokenreviews",
    .kind = "TokenReview",
    .namespaced = 0,
};

static const struct kube_resource subjectaccessreviews = {
    .group = "authorization.k8s.io",
    .version = "v1",
    .plural = "subjectaccessreviews",
    .kind = "SubjectAccessReview",
    .namespaced = 0,
};

/* A review under way: one TokenReview, then (admin) one SubjectAccessReview. */
struct review {
    struct kube_client *kc;
    struct kube_call *call;
    xds_review_done_fn done;
    void *arg;
    char *path; /* admin: the non-resource URL asked for (NULL: xDS) */
};

static const struct kube_req_opts review_opts = {
    .timeout_ms = 5000,
    .deadline_ms = 8000,
    .max_attempts = 2,
    .idempotent = 1, /* a review has no effect: repeating it is safe */
};

static void finish(struct review *r, enum xds_review_outcome o, const char *user, const char *msg)
{
    struct xds_review_result res = {.outcome = o};
    snprintf(res.username, sizeof(res.username), "%s", user ? user : "");
    snprintf(res.message, sizeof(res.message), "%s", msg ? msg : "");
    xds_review_done_fn done = r->done;
    void *arg = r->arg;
    free(r->path);
    free(r);
    done(arg, &res);
}

/* Why a review call failed, as the client is told. */
static void call_error(const struct kube_result *res, const char *what, char *out, size_t cap)
{
    if (res->err.http_status == 403)
        snprintf(out, cap,
                 "this replica may not create %s (403 from the API server: bind it to "
                 "system:auth-delegator)",
                 what);
    else if (res->err.http_status)
        snprintf(out, cap, "the API server answered %s with %d: %.200s", what, res->err.http_status,
                 res->err.message);
    else
        snprintf(out, cap, "%s: %.200s", what, res->err.message);
}

void daemon_auth_sar_answer(const cJSON *obj, const char *path, struct xds_review_result *out)
{
    memset(out, 0, sizeof(*out));
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(obj, "status");
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
    const cJSON *user_j = cJSON_GetObjectItemCaseSensitive(spec, "user");
    const char *uname = cJSON_IsString(user_j) ? user_j->valuestring : "";
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "allowed")) &&
        strlen(uname) < sizeof(out->username)) {
        out->outcome = XDS_REVIEW_OK;
        memcpy(out->username, uname, strlen(uname) + 1);
        return;
    }
    out->outcome = XDS_REVIEW_REJECTED;
    snprintf(out->message, sizeof(out->message),
             "User \"%.120s\" may not get %.100s (SubjectAccessReview)", uname, path ? path : "");
}

static void finish_with(struct review *r, const struct xds_review_result *res)
{
    finish(r, res->outcome, res->outcome == XDS_REVIEW_OK ? res->username : NULL, res->message);
}

static void sar_done(struct kube_result *res, void *user)
{
    struct review *r = user;
    r->call = NULL;
    char msg[300];
    if (res->err.code != KUBE_OK) {
        call_error(res, "SubjectAccessReviews", msg, sizeof(msg));
        finish(r, XDS_REVIEW_UNAVAILABLE, NULL, msg);
        return;
    }
    struct xds_review_result v;
    daemon_auth_sar_answer(res->object, r->path, &v);
    finish_with(r, &v);
}

/* The authenticated user of a TokenReview: asks the SubjectAccessReview. */
static void start_sar(struct review *r, const cJSON *user)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", "authorization.k8s.io/v1");
    cJSON_AddStringToObject(o, "kind", "SubjectAccessReview");
    cJSON *spec = cJSON_AddObjectToObject(o, "spec");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(user, "username");
    const cJSON *uid = cJSON_GetObjectItemCaseSensitive(user, "uid");
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(user, "groups");
    cJSON_AddStringToObject(spec, "user", cJSON_IsString(name) ? name->valuestring : "");
    if (cJSON_IsString(uid))
        cJSON_AddStringToObject(spec, "uid", uid->valuestring);
    if (cJSON_IsArray(groups))
        cJSON_AddItemToObject(spec, "groups", cJSON_Duplicate(groups, 1));
    cJSON *nra = cJSON_AddObjectToObject(spec, "nonResourceAttributes");
    cJSON_AddStringToObject(nra, "path", r->path);
    cJSON_AddStringToObject(nra, "verb", "get");
    r->call = kube_create(r->kc, &subjectaccessreviews, NULL, o, &review_opts, sar_done, r);
    cJSON_Delete(o);
    if (!r->call)
        finish(r, XDS_REVIEW_UNAVAILABLE, NULL, "cannot send a SubjectAccessReview");
}

const cJSON *daemon_auth_token_answer(const cJSON *obj, struct xds_review_result *out)
{
    memset(out, 0, sizeof(*out));
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(obj, "status");
    const cJSON *user_j = cJSON_GetObjectItemCaseSensitive(st, "user");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(user_j, "username");
    out->outcome = XDS_REVIEW_REJECTED;
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "authenticated")) ||
        !cJSON_IsString(name) || !*name->valuestring) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(st, "error");
        snprintf(out->message, sizeof(out->message), "%s",
                 cJSON_IsString(e) ? e->valuestring : "not authenticated");
        return NULL;
    }
    /* Cut, a name would be someone else's (a ServiceAccount's name is
     * read from its end): refused instead. */
    size_t n = strlen(name->valuestring);
    if (n >= sizeof(out->username)) {
        snprintf(out->message, sizeof(out->message),
                 "the TokenReview's username is over %zu bytes (%zu)", sizeof(out->username) - 1,
                 n);
        return NULL;
    }
    out->outcome = XDS_REVIEW_OK;
    memcpy(out->username, name->valuestring, n + 1);
    return user_j;
}

static void token_done(struct kube_result *res, void *user)
{
    struct review *r = user;
    r->call = NULL;
    char msg[300];
    if (res->err.code != KUBE_OK) {
        if (res->err.http_status == 400) { /* an empty or unusable token */
            finish(r, XDS_REVIEW_REJECTED, NULL, res->err.message);
            return;
        }
        call_error(res, "TokenReviews", msg, sizeof(msg));
        finish(r, XDS_REVIEW_UNAVAILABLE, NULL, msg);
        return;
    }
    struct xds_review_result v;
    const cJSON *user_j = daemon_auth_token_answer(res->object, &v);
    if (v.outcome == XDS_REVIEW_OK && r->path) {
        start_sar(r, user_j);
        return;
    }
    finish_with(r, &v);
}

static struct review *start_token_review(struct kube_client *kc, const char *token,
                                         const char *audience, xds_review_done_fn done, void *arg,
                                         const char *path)
{
    struct review *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->kc = kc;
    r->done = done;
    r->arg = arg;
    if (path && !(r->path = strdup(path))) {
        free(r);
        return NULL;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", "authentication.k8s.io/v1");
    cJSON_AddStringToObject(o, "kind", "TokenReview");
    cJSON *spec = cJSON_AddObjectToObject(o, "spec");
    cJSON_AddStringToObject(spec, "token", token);
    if (audience && *audience) {
        cJSON *auds = cJSON_AddArrayToObject(spec, "audiences");
        cJSON_AddItemToArray(auds, cJSON_CreateString(audience));
    }
    r->call = kube_create(kc, &tokenreviews, NULL, o, &review_opts, token_done, r);
    /* the token was in the body: cleared before the tree goes */
    const cJSON *tk = cJSON_GetObjectItemCaseSensitive(spec, "token");
    if (cJSON_IsString(tk))
        OPENSSL_cleanse(tk->valuestring, strlen(tk->valuestring));
    cJSON_Delete(o);
    if (!r->call) {
        free(r->path);
        free(r);
        return NULL;
    }
    return r;
}

static void *xds_review_start(void *user, const char *token, const char *audience,
                              xds_review_done_fn done, void *arg)
{
    return start_token_review(user, token, audience, done, arg, NULL);
}

static void review_cancel(void *user, void *handle)
{
    (void)user;
    struct review *r = handle;
    if (r->call)
        kube_call_cancel(r->call);
    free(r->path);
    free(r);
}

void daemon_auth_xds_reviewer(struct kube_client *kc, struct xds_token_reviewer *out)
{
    *out =
        (struct xds_token_reviewer){.start = xds_review_start, .cancel = review_cancel, .user = kc};
}

/* ---- the admin server ---------------------------------------------------------- */

/* The admin cache's "token" is "<path>\n<token>": one answer per user and
 * URL. */
static void *admin_review_start(void *user, const char *key, const char *audience,
                                xds_review_done_fn done, void *arg)
{
    (void)audience; /* the API server's own audiences, as kube-rbac-proxy asks */
    const char *nl = strchr(key, '\n');
    if (!nl)
        return NULL;
    char path[256];
    snprintf(path, sizeof(path), "%.*s", (int)(nl - key), key);
    return start_token_review(user, nl + 1, NULL, done, arg, path);
}

struct daemon_admin_auth {
    struct xds_tokens *cache;
};

struct admin_wait {
    struct xds_auth_waiter w;
    admin_authz_done_fn done;
    void *ticket;
};

static void admin_checked(void *arg, const struct xds_auth_verdict *v)
{
    struct admin_wait *aw = arg;
    aw->done(aw->ticket, v->status == 0, v->status == 0 ? NULL : v->message,
             v->status == XDS_GRPC_UNAVAILABLE);
    free(aw);
}

static int admin_authz(void *arg, const char *token, const char *path, admin_authz_done_fn done,
                       void *ticket)
{
    struct daemon_admin_auth *a = arg;
    size_t n = strlen(path) + 1 + strlen(token) + 1;
    char *key = malloc(n);
    struct admin_wait *aw = calloc(1, sizeof(*aw));
    if (!key || !aw) {
        free(key);
        free(aw);
        done(ticket, 0, "out of memory", 1);
        return 0;
    }
    snprintf(key, n, "%s\n%s", path, token);
    aw->done = done;
    aw->ticket = ticket;
    struct xds_auth_verdict v;
    int rc = xds_tokens_check(a->cache, key, &v, &aw->w, admin_checked, aw);
    OPENSSL_cleanse(key, n);
    free(key);
    if (rc == 0)
        return 0; /* admin_checked answers */
    free(aw);
    done(ticket, v.status == 0, v.status == 0 ? NULL : v.message, v.status == XDS_GRPC_UNAVAILABLE);
    return 0;
}

struct daemon_admin_auth *daemon_auth_admin_new(struct kube_client *kc, struct admin_server *admin,
                                                int trust_loopback)
{
    struct daemon_admin_auth *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    struct xds_token_reviewer rv = {
        .start = admin_review_start, .cancel = review_cancel, .user = kc};
    a->cache = xds_tokens_new(&rv, "", 1000, 16);
    if (!a->cache) {
        free(a);
        return NULL;
    }
    xds_tokens_any_user(a->cache);
    admin_protect(admin, admin_authz, a, trust_loopback);
    return a;
}

void daemon_auth_admin_free(struct daemon_admin_auth *a)
{
    if (!a)
        return;
    xds_tokens_free(a->cache);
    free(a);
}
