/*
 * ks_review: the review APIs, create-only questions answered from the token
 * set and RBAC, nothing stored:
 * - TokenReview (authentication.k8s.io/v1): pkg/registry/authentication/
 *   tokenreview/storage.go;
 * - SelfSubjectReview (authentication.k8s.io/v1, kubectl auth whoami);
 * - SubjectAccessReview, SelfSubjectAccessReview, LocalSubjectAccessReview
 *   (authorization.k8s.io/v1): pkg/registry/authorization/..., validated as
 *   pkg/apis/authorization/validation/validation.go does;
 * - SelfSubjectRulesReview (kubectl auth can-i --list).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cx_json.h"
#include "ks_api.h"
#include "ks_auth.h"
#include "ks_form.h"

#define REASON_MAX 1024

/* The reply object: the request, with metadata.creationTimestamp null as
 * Go encodes the zero time of an object nobody stored, and |status|. */
static void reply_review(struct ks_req *r, cJSON *obj, cJSON *status)
{
    cJSON *md = ks_meta(obj);
    if (!cJSON_GetObjectItemCaseSensitive(md, "creationTimestamp"))
        cJSON_AddNullToObject(md, "creationTimestamp");
    ks_set_item(obj, "status", status);
    ks_reply_obj(r, 201, obj);
}

static cJSON *string_array(const char *const *v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
    return a;
}

/* ---- TokenReview ---------------------------------------------------------- */

static void add_json_group(void *arg, const char *g)
{
    cJSON_AddItemToArray(arg, cJSON_CreateString(g));
}

static void token_review(struct ks_req *r, cJSON *obj)
{
    const char *tok = cx_json_path_str(obj, "spec", "token", NULL);
    if (!tok || !*tok) {
        ks_err_bad_request(r, "token is required for TokenReview in authentication");
        return;
    }
    /* No audiences asked: the API server's own. */
    const char *auds[KS_TOKEN_AUDS_MAX];
    size_t nauds = 0;
    const cJSON *a;
    cJSON_ArrayForEach(a, cx_json_path(obj, "spec", "audiences", NULL))
    {
        if (cJSON_IsString(a) && nauds < KS_TOKEN_AUDS_MAX)
            auds[nauds++] = a->valuestring;
    }
    if (nauds == 0)
        nauds = ks_auth_api_audiences(r->s, auds, KS_TOKEN_AUDS_MAX);
    cJSON *st = cJSON_CreateObject();
    cJSON *user = cJSON_AddObjectToObject(st, "user");
    const struct ks_token *t = ks_auth_token_find(r->s, tok);
    const char *matched[KS_TOKEN_AUDS_MAX];
    size_t nm = 0;
    char err[1024];
    if (!t) {
        /* Every authenticator passed on it: the bearer authenticator's own
         * error. */
        cJSON_AddStringToObject(st, "error", "invalid bearer token");
    } else if (ks_auth_check_token(r->s, t, auds, nauds, err, sizeof(err), matched, &nm) != 0) {
        cJSON_AddStringToObject(st, "error", err);
    } else {
        cJSON_AddTrueToObject(st, "authenticated");
        cJSON_AddStringToObject(user, "username", t->user);
        if (t->uid && *t->uid)
            cJSON_AddStringToObject(user, "uid", t->uid);
        cJSON *groups = cJSON_AddArrayToObject(user, "groups");
        if (groups)
            ks_auth_token_groups(t, add_json_group, groups);
        cJSON_AddItemToObject(st, "audiences", string_array(matched, nm));
    }
    reply_review(r, obj, st);
}

/* ---- SelfSubjectReview ---------------------------------------------------- */

static cJSON *requester_info(const struct ks_req *r)
{
    cJSON *ui = cJSON_CreateObject();
    cJSON_AddStringToObject(ui, "username", r->user);
    if (r->uid[0])
        cJSON_AddStringToObject(ui, "uid", r->uid);
    if (r->ngroups)
        cJSON_AddItemToObject(ui, "groups",
                              string_array((const char *const *)r->groups, r->ngroups));
    return ui;
}

static void self_subject_review(struct ks_req *r, cJSON *obj)
{
    cJSON *st = cJSON_CreateObject();
    cJSON_AddItemToObject(st, "userInfo", requester_info(r));
    reply_review(r, obj, st);
}

/* ---- access reviews ------------------------------------------------------- */

/* %#v of a Go struct value, as field.Invalid prints a non-nil pointer. */
static void go_struct(const char *type, const cJSON *o, const char *const *fields,
                      const char *const *keys, char *out, size_t n)
{
    size_t k = (size_t)snprintf(out, n, "%s{", type);
    for (size_t i = 0; fields[i] && k < n; i++) {
        const char *v = cx_json_str(o, keys[i]);
        k += (size_t)snprintf(out + k, n - k, "%s%s:\"%s\"", i ? ", " : "", fields[i], v ? v : "");
    }
    if (k < n)
        snprintf(out + k, n - k, "}");
}

static void nonresource_value(const cJSON *nra, char *out, size_t n)
{
    static const char *const fields[] = {"Path", "Verb", NULL};
    static const char *const keys[] = {"path", "verb", NULL};
    go_struct("authorization.NonResourceAttributes", nra, fields, keys, out, n);
}

/* ValidateSubjectAccessReviewSpec and friends (1.28-1.31 messages). */
static void validate_spec(const cJSON *spec, enum ks_kind_id kind, struct ks_ferrs *fe)
{
    const cJSON *ra = cJSON_GetObjectItemCaseSensitive(spec, "resourceAttributes");
    const cJSON *nra = cJSON_GetObjectItemCaseSensitive(spec, "nonResourceAttributes");
    bool has_ra = cJSON_IsObject(ra), has_nra = cJSON_IsObject(nra);
    char v[600];
    if (has_ra && has_nra) {
        nonresource_value(nra, v, sizeof(v));
        ks_ferr_add(fe, "FieldValueInvalid", "spec.nonResourceAttributes",
                    "Invalid value: %s: cannot be specified in combination with "
                    "resourceAttributes",
                    v);
    }
    if (!has_ra && !has_nra)
        ks_ferr_add(fe, "FieldValueInvalid", "spec.resourceAttributes",
                    "Invalid value: \"null\": exactly one of nonResourceAttributes or "
                    "resourceAttributes must be specified");
    if (kind == KS_K_SUBJECTACCESSREVIEW || kind == KS_K_LOCALSUBJECTACCESSREVIEW) {
        const char *user = cx_json_str(spec, "user");
        if ((!user || !*user) &&
            cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(spec, "groups")) == 0)
            ks_ferr_add(fe, "FieldValueInvalid", "spec.user",
                        "Invalid value: \"%s\": at least one of user or group must be specified",
                        user ? user : "");
    }
    if (kind == KS_K_LOCALSUBJECTACCESSREVIEW && has_nra) {
        nonresource_value(nra, v, sizeof(v));
        ks_ferr_add(fe, "FieldValueInvalid", "spec.nonResourceAttributes",
                    "Invalid value: %s: disallowed on this kind of request", v);
    }
}

/* Fills |at| from the spec's attributes (AuthorizationAttributesFrom). */
static void attrs_from(const cJSON *spec, struct ks_authz *at)
{
    const cJSON *ra = cJSON_GetObjectItemCaseSensitive(spec, "resourceAttributes");
    if (cJSON_IsObject(ra)) {
        at->resource_request = true;
        at->verb = cx_json_str(ra, "verb");
        at->group = cx_json_str(ra, "group");
        at->resource = cx_json_str(ra, "resource");
        at->sub = cx_json_str(ra, "subresource");
        at->ns = cx_json_str(ra, "namespace");
        at->name = cx_json_str(ra, "name");
    } else {
        const cJSON *nra = cJSON_GetObjectItemCaseSensitive(spec, "nonResourceAttributes");
        at->resource_request = false;
        at->verb = cx_json_str(nra, "verb");
        at->path = cx_json_str(nra, "path");
    }
    if (!at->verb)
        at->verb = "";
    if (!at->group)
        at->group = "";
    if (!at->resource)
        at->resource = "";
    if (!at->path)
        at->path = "";
}

static void access_review(struct ks_req *r, cJSON *obj)
{
    enum ks_kind_id kind = r->rt->id;
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
    struct ks_ferrs fe = {.n = 0};
    validate_spec(spec, kind, &fe);
    if (fe.n) {
        /* The internal object's Kind is empty: ".authorization.k8s.io". */
        ks_err_invalid_kind(r, "authorization.k8s.io", "", "", &fe);
        return;
    }
    struct ks_authz at = {0};
    attrs_from(spec, &at);
    if (kind == KS_K_LOCALSUBJECTACCESSREVIEW && strcmp(at.ns ? at.ns : "", r->ns) != 0) {
        ks_err_bad_request(r, "spec.resourceAttributes.namespace must match namespace: %s", r->ns);
        return;
    }
    char *groups[64];
    size_t ng = 0;
    if (kind == KS_K_SELFSUBJECTACCESSREVIEW) {
        at.user = r->user;
        at.groups = r->groups;
        at.ngroups = r->ngroups;
    } else {
        const char *u = cx_json_str(spec, "user");
        at.user = u ? u : "";
        const cJSON *g;
        cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(spec, "groups"))
        {
            if (cJSON_IsString(g) && ng < 64)
                groups[ng++] = g->valuestring;
        }
        at.groups = groups;
        at.ngroups = ng;
    }
    char reason[REASON_MAX];
    bool ok = ks_authz_decide(r->s, &at, reason, sizeof(reason));
    cJSON *st = cJSON_CreateObject();
    cJSON_AddBoolToObject(st, "allowed", ok);
    if (reason[0])
        cJSON_AddStringToObject(st, "reason", reason);
    reply_review(r, obj, st);
}

/* ---- SelfSubjectRulesReview ----------------------------------------------- */

struct rules_out {
    cJSON *res, *nonres;
};

static void copy_list(cJSON *dst, const char *key, const cJSON *rule)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(rule, key);
    if (cJSON_GetArraySize(v) > 0)
        cJSON_AddItemToObject(dst, key, cJSON_Duplicate(v, 1));
}

static void emit_rule(const cJSON *rule, void *arg)
{
    struct rules_out *o = arg;
    cJSON *x = cJSON_CreateObject();
    if (!x)
        return;
    cJSON *verbs = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(rule, "verbs"), 1);
    cJSON_AddItemToObject(x, "verbs", verbs ? verbs : cJSON_CreateArray());
    if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(rule, "nonResourceURLs")) > 0) {
        copy_list(x, "nonResourceURLs", rule);
        cJSON_AddItemToArray(o->nonres, x);
    } else {
        copy_list(x, "apiGroups", rule);
        copy_list(x, "resources", rule);
        copy_list(x, "resourceNames", rule);
        cJSON_AddItemToArray(o->res, x);
    }
}

static void rules_review(struct ks_req *r, cJSON *obj)
{
    const char *ns = cx_json_path_str(obj, "spec", "namespace", NULL);
    cJSON *st = cJSON_CreateObject();
    struct rules_out o = {.res = cJSON_AddArrayToObject(st, "resourceRules"),
                          .nonres = cJSON_AddArrayToObject(st, "nonResourceRules")};
    bool everything = r->s->cfg.allow_all;
    for (size_t i = 0; i < r->ngroups; i++)
        if (strcmp(r->groups[i], "system:masters") == 0)
            everything = true;
    if (everything) {
        /* AlwaysAllow and the privileged-group authorizer: everything. */
        cJSON *all = cJSON_Parse("{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"]}");
        cJSON *allnr = cJSON_Parse("{\"verbs\":[\"*\"],\"nonResourceURLs\":[\"*\"]}");
        cJSON_AddItemToArray(o.res, all);
        cJSON_AddItemToArray(o.nonres, allnr);
    }
    struct ks_authz at = {.user = r->user, .groups = r->groups, .ngroups = r->ngroups};
    ks_rbac_rules_for(r->s, &at, ns, emit_rule, &o);
    cJSON_AddFalseToObject(st, "incomplete");
    reply_review(r, obj, st);
}

/* ---- dispatch --------------------------------------------------------------- */

void ks_review_dispatch(struct ks_req *r)
{
    if (r->verb != KS_V_CREATE) {
        ks_err_method(r);
        return;
    }
    cJSON *obj = ks_parse_body(r, r->rt);
    if (!obj)
        return;
    if (r->rt->namespaced) {
        const char *ons = ks_md_str(obj, "namespace");
        if (ons && *ons && strcmp(ons, r->ns) != 0) {
            ks_err_bad_request(r, "the namespace of the provided object does not match the "
                                  "namespace sent on the request");
            cJSON_Delete(obj);
            return;
        }
        ks_set_str(ks_meta(obj), "namespace", r->ns);
    }
    switch (r->rt->id) {
    case KS_K_TOKENREVIEW:
        token_review(r, obj);
        break;
    case KS_K_SELFSUBJECTREVIEW:
        self_subject_review(r, obj);
        break;
    case KS_K_SUBJECTACCESSREVIEW:
    case KS_K_SELFSUBJECTACCESSREVIEW:
    case KS_K_LOCALSUBJECTACCESSREVIEW:
        access_review(r, obj);
        break;
    case KS_K_SELFSUBJECTRULESREVIEW:
        rules_review(r, obj);
        break;
    default:
        ks_err_method(r);
    }
    cJSON_Delete(obj);
}
