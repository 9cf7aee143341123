/*
 * ks_auth: bearer tokens and RBAC (see ks_auth.h).
 */
#include <ctype.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cx_json.h"
#include "cx_log.h"
#include "cx_time.h"
#include "ks_api.h"
#include "ks_http.h"
#include "ks_auth.h"
#include "ks_tls.h"

#define TOKENS_MAX 4096

struct ks_auth {
    struct ks_token *t;
    size_t n;
};

static void token_free(struct ks_token *t)
{
    free(t->token);
    free(t->user);
    free(t->uid);
    for (int g = 0; g < t->ngroups; g++)
        free(t->groups[g]);
    for (int g = 0; g < t->nauds; g++)
        free(t->auds[g]);
    memset(t, 0, sizeof(*t));
}

static void tokens_clear(struct ks_auth *a)
{
    for (size_t i = 0; i < a->n; i++)
        token_free(&a->t[i]);
    free(a->t);
    a->t = NULL;
    a->n = 0;
}

/* Adds a token; |spec| gives the optional uid, groups, audiences and expiry
 * (its strings are copied). */
static int token_add(struct ks_auth *a, const char *tok, const char *user,
                     const struct ks_token *spec)
{
    if (a->n >= TOKENS_MAX)
        return -1;
    struct ks_token *nt = realloc(a->t, (a->n + 1) * sizeof(*nt));
    if (!nt)
        return -1;
    a->t = nt;
    struct ks_token *t = &a->t[a->n];
    memset(t, 0, sizeof(*t));
    t->token = strdup(tok);
    t->user = strdup(user);
    t->uid = spec && spec->uid && *spec->uid ? strdup(spec->uid) : NULL;
    for (int i = 0; spec && i < spec->ngroups && i < KS_TOKEN_GROUPS_MAX; i++)
        if ((t->groups[t->ngroups] = strdup(spec->groups[i])) != NULL)
            t->ngroups++;
    for (int i = 0; spec && i < spec->nauds && i < KS_TOKEN_AUDS_MAX; i++)
        if ((t->auds[t->nauds] = strdup(spec->auds[i])) != NULL)
            t->nauds++;
    t->expires_ns = spec ? spec->expires_ns : 0;
    if (!t->token || !t->user) {
        token_free(t);
        return -1;
    }
    a->n++;
    return 0;
}

/* An expiry: RFC 3339, or Unix seconds. Returns 0 or -1. */
static int parse_expiry(const char *v, int64_t *ns)
{
    char *end;
    long long secs = strtoll(v, &end, 10);
    if (*v && !*end) {
        *ns = (int64_t)secs * CX_NS_PER_S;
        return 0;
    }
    return cx_time_parse_rfc3339(v, ns);
}

/* Splits one CSV line (with "quoted, fields"). Returns the field count. */
static int csv_split(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;
    while (*p && n < max) {
        while (*p == ' ')
            p++;
        if (*p == '"') {
            p++;
            f[n++] = p;
            while (*p && *p != '"')
                p++;
            if (*p)
                *p++ = 0;
            while (*p && *p != ',')
                p++;
        } else {
            f[n++] = p;
            while (*p && *p != ',')
                p++;
        }
        if (*p == ',')
            *p++ = 0;
    }
    return n;
}

/* Loads the token file: lines "token,user[,uid[,groups...]]" where groups
 * may be one quoted comma list (kube-apiserver's format) or more columns.
 * kubesim's extension: a column "aud=a,b" (quoted when it has commas)
 * binds the token to those audiences, "exp=<RFC 3339 or Unix seconds>"
 * makes it expire, as projected ServiceAccount tokens do. */
static int tokens_load(struct ks_server *s)
{
    struct ks_auth *a = s->auth;
    FILE *f = fopen(s->cfg.tokens_file, "r");
    if (!f) {
        cx_error(KS_LOG, "cannot read the token file %s", s->cfg.tokens_file);
        return -1;
    }
    tokens_clear(a);
    char line[4096];
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || line[0] == '#')
            continue;
        char *fld[32];
        int n = csv_split(line, fld, 32);
        if (n < 2)
            continue;
        struct ks_token spec = {.uid = n > 2 ? fld[2] : NULL};
        bool bad = false;
        for (int i = 3; i < n; i++) {
            char *save = NULL;
            if (strncmp(fld[i], "aud=", 4) == 0) {
                for (char *g = strtok_r(fld[i] + 4, ",", &save);
                     g && spec.nauds < KS_TOKEN_AUDS_MAX; g = strtok_r(NULL, ",", &save))
                    spec.auds[spec.nauds++] = g;
                continue;
            }
            if (strncmp(fld[i], "exp=", 4) == 0) {
                if (parse_expiry(fld[i] + 4, &spec.expires_ns) != 0) {
                    cx_warn(KS_LOG, "token file: bad expiry %s", fld[i] + 4);
                    bad = true;
                }
                continue;
            }
            for (char *g = strtok_r(fld[i], ",", &save); g && spec.ngroups < KS_TOKEN_GROUPS_MAX;
                 g = strtok_r(NULL, ",", &save))
                spec.groups[spec.ngroups++] = g;
        }
        if (bad)
            continue;
        if (token_add(a, fld[0], fld[1], &spec) != 0)
            break;
    }
    fclose(f);
    cx_info(KS_LOG, "loaded %zu tokens from %s", a->n, s->cfg.tokens_file);
    return 0;
}

int ks_auth_init(struct ks_server *s)
{
    s->auth = calloc(1, sizeof(struct ks_auth));
    if (!s->auth)
        return -1;
    if (s->cfg.tokens_file && tokens_load(s) != 0)
        return -1;
    return 0;
}

void ks_auth_free(struct ks_server *s)
{
    if (!s->auth)
        return;
    tokens_clear(s->auth);
    free(s->auth);
    s->auth = NULL;
}

bool ks_auth_has_tokens(struct ks_server *s)
{
    return s->auth && (s->auth->n > 0 || s->cfg.tokens_file);
}

void ks_tokens_reload(struct ks_server *s)
{
    if (s->cfg.tokens_file)
        (void)tokens_load(s);
}

static void add_group(struct ks_req *r, const char *g)
{
    char **ng = realloc(r->groups, (r->ngroups + 1) * sizeof(*ng));
    if (!ng)
        return;
    r->groups = ng;
    if ((r->groups[r->ngroups] = strdup(g)) != NULL)
        r->ngroups++;
}

const struct ks_token *ks_auth_token_find(struct ks_server *s, const char *token)
{
    struct ks_auth *a = s->auth;
    for (size_t i = 0; a && i < a->n; i++)
        if (strcmp(a->t[i].token, token) == 0)
            return &a->t[i];
    return NULL;
}

/* The groups every authenticated |user| of |t| has, in kube-apiserver's
 * order: the token's, then a ServiceAccount's, then system:authenticated. */
static void token_groups(const struct ks_token *t, void (*add)(void *, const char *), void *arg)
{
    for (int g = 0; g < t->ngroups; g++)
        add(arg, t->groups[g]);
    if (strncmp(t->user, "system:serviceaccount:", 22) == 0) {
        add(arg, "system:serviceaccounts");
        const char *ns = t->user + 22;
        const char *colon = strchr(ns, ':');
        if (colon) {
            char g[300];
            snprintf(g, sizeof(g), "system:serviceaccounts:%.*s", (int)(colon - ns), ns);
            add(arg, g);
        }
    }
    add(arg, "system:authenticated");
}

static void req_add_group(void *arg, const char *g)
{
    add_group(arg, g);
}

int ks_auth_check_token(struct ks_server *s, const struct ks_token *t, const char *const *auds,
                        size_t nauds, char *err, size_t errlen, const char **matched,
                        size_t *nmatched)
{
    *nmatched = 0;
    if (t->expires_ns && cx_wall_ns() >= t->expires_ns) {
        snprintf(err, errlen, "[invalid bearer token, service account token has expired]");
        return -1;
    }
    if (t->nauds == 0) {
        /* Audience-agnostic (a static token): it serves any audience. */
        for (size_t i = 0; i < nauds && i < KS_TOKEN_AUDS_MAX; i++)
            matched[(*nmatched)++] = auds[i];
        return 0;
    }
    for (int i = 0; i < t->nauds; i++)
        for (size_t j = 0; j < nauds; j++)
            if (strcmp(t->auds[i], auds[j]) == 0 && *nmatched < KS_TOKEN_AUDS_MAX)
                matched[(*nmatched)++] = t->auds[i];
    if (*nmatched)
        return 0;
    /* Go's %q of a []string: ["a" "b"]. */
    struct cx_buf b;
    cx_buf_init(&b, 1 << 16);
    int rc = cx_buf_puts(&b, "[invalid bearer token, token audiences [");
    for (int i = 0; i < t->nauds; i++) {
        rc |= i ? cx_buf_puts(&b, " ") : 0;
        rc |= cx_json_escape(&b, t->auds[i]);
    }
    rc |= cx_buf_puts(&b, "] is invalid for the target audiences [");
    for (size_t j = 0; j < nauds; j++) {
        rc |= j ? cx_buf_puts(&b, " ") : 0;
        rc |= cx_json_escape(&b, auds[j]);
    }
    rc |= cx_buf_puts(&b, "]]");
    snprintf(err, errlen, "%s", rc == 0 && b.data ? b.data : "invalid bearer token");
    cx_buf_free(&b);
    (void)s;
    return -1;
}

void ks_auth_token_groups(const struct ks_token *t, void (*add)(void *, const char *), void *arg)
{
    token_groups(t, add, arg);
}

int ks_auth_token_user(struct ks_server *s, const char *token, struct ks_req *r)
{
    const struct ks_token *t = ks_auth_token_find(s, token);
    if (!t)
        return -1;
    /* A bearer token on the API must be valid for the API's audiences. */
    const char *auds[KS_TOKEN_AUDS_MAX], *matched[KS_TOKEN_AUDS_MAX];
    size_t nauds = ks_auth_api_audiences(s, auds, KS_TOKEN_AUDS_MAX), nm;
    char err[512];
    if (ks_auth_check_token(s, t, auds, nauds, err, sizeof(err), matched, &nm) != 0) {
        cx_debug(KS_LOG, "bearer token of %s refused: %s", t->user, err);
        return -1;
    }
    snprintf(r->user, sizeof(r->user), "%s", t->user);
    snprintf(r->uid, sizeof(r->uid), "%s", t->uid ? t->uid : "");
    token_groups(t, req_add_group, r);
    return 0;
}

size_t ks_auth_api_audiences(struct ks_server *s, const char **out, size_t max)
{
    static char buf[1024];
    static char *parts[KS_TOKEN_AUDS_MAX];
    static size_t nparts;
    static const char *built_from;
    const char *src = s->cfg.api_audiences ? s->cfg.api_audiences
                                           : "https://kubernetes.default.svc.cluster.local";
    if (built_from != src) {
        snprintf(buf, sizeof(buf), "%s", src);
        nparts = 0;
        char *save = NULL;
        for (char *p = strtok_r(buf, ",", &save); p && nparts < KS_TOKEN_AUDS_MAX;
             p = strtok_r(NULL, ",", &save))
            parts[nparts++] = p;
        built_from = src;
    }
    size_t n = 0;
    for (; n < nparts && n < max; n++)
        out[n] = parts[n];
    return n;
}

/* ---- RBAC --------------------------------------------------------------- */

static bool list_has(const cJSON *arr, const char *v)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        if (cJSON_IsString(it) && strcmp(it->valuestring, v) == 0)
            return true;
    }
    return false;
}

/* rbac/v1 helpers: NonResourceURLMatches ("*", exact, or "prefix*"). */
static bool url_matches(const cJSON *urls, const char *path)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, urls)
    {
        if (!cJSON_IsString(it))
            continue;
        const char *u = it->valuestring;
        size_t n = strlen(u);
        if (strcmp(u, "*") == 0 || strcmp(u, path) == 0)
            return true;
        if (n && u[n - 1] == '*' && strncmp(path, u, n - 1) == 0)
            return true;
    }
    return false;
}

/* RuleAllows of the RBAC authorizer (plugin/pkg/auth/authorizer/rbac). */
static bool rule_allows(const cJSON *rule, const struct ks_authz *at)
{
    const cJSON *verbs = cJSON_GetObjectItemCaseSensitive(rule, "verbs");
    if (!list_has(verbs, at->verb) && !list_has(verbs, "*"))
        return false;
    if (!at->resource_request)
        return url_matches(cJSON_GetObjectItemCaseSensitive(rule, "nonResourceURLs"), at->path);
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(rule, "apiGroups");
    if (!list_has(groups, at->group) && !list_has(groups, "*"))
        return false;
    char combined[300];
    if (at->sub && *at->sub)
        snprintf(combined, sizeof(combined), "%s/%s", at->resource, at->sub);
    else
        snprintf(combined, sizeof(combined), "%s", at->resource);
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(rule, "resources");
    bool rok = list_has(res, combined) || list_has(res, "*");
    if (!rok && at->sub && *at->sub) {
        char star[128];
        snprintf(star, sizeof(star), "*/%s", at->sub);
        rok = list_has(res, star);
    }
    if (!rok)
        return false;
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(rule, "resourceNames");
    if (cJSON_GetArraySize(names) > 0 && (!at->name || !*at->name || !list_has(names, at->name)))
        return false;
    return true;
}

/* Does |subj| of a binding in |binding_ns| name the requester? */
static bool subject_matches(const cJSON *subj, const char *binding_ns, const struct ks_authz *at)
{
    const char *kind = cx_json_str(subj, "kind");
    const char *name = cx_json_str(subj, "name");
    if (!kind || !name)
        return false;
    if (strcmp(kind, "User") == 0)
        return strcmp(name, at->user) == 0;
    if (strcmp(kind, "Group") == 0) {
        for (size_t i = 0; i < at->ngroups; i++)
            if (strcmp(at->groups[i], name) == 0)
                return true;
        return false;
    }
    if (strcmp(kind, "ServiceAccount") == 0) {
        const char *ns = cx_json_str(subj, "namespace");
        if (!ns || !*ns)
            ns = binding_ns;
        char u[600];
        snprintf(u, sizeof(u), "system:serviceaccount:%s:%s", ns ? ns : "", name);
        return strcmp(u, at->user) == 0;
    }
    return false;
}

static const cJSON *role_rules(struct ks_server *s, const char *kind, const char *ns,
                               const char *name)
{
    bool cluster = strcmp(kind, "ClusterRole") == 0;
    struct ks_rtype *rt =
        ks_rtype_find(s, "rbac.authorization.k8s.io", "v1", cluster ? "clusterroles" : "roles");
    if (!rt)
        return NULL;
    char *key = ks_key(rt, cluster ? "" : (ns ? ns : ""), name);
    struct ks_obj *o = key ? ks_store_get(rt, key) : NULL;
    free(key);
    return o ? cJSON_GetObjectItemCaseSensitive(o->cur->obj, "rules") : NULL;
}

/* describeSubject: `User "u"`, `ServiceAccount "name/ns"`. */
static void describe_subject(const cJSON *subj, const char *binding_ns, char *out, size_t n)
{
    const char *kind = cx_json_str(subj, "kind");
    const char *name = cx_json_str(subj, "name");
    if (kind && strcmp(kind, "ServiceAccount") == 0) {
        const char *ns = cx_json_str(subj, "namespace");
        snprintf(out, n, "%s \"%s/%s\"", kind, name ? name : "",
                 ns && *ns ? ns : (binding_ns ? binding_ns : ""));
    } else {
        snprintf(out, n, "%s \"%s\"", kind ? kind : "", name ? name : "");
    }
}

/* Visits the bindings of |plural| (in |ns|, or cluster-wide) that name the
 * requester, and each rule of their roles, until |visit| returns true.
 * Returns whether it did. */
typedef bool (*rule_visitor)(const cJSON *binding, const char *binding_ns, const cJSON *subject,
                             const cJSON *rule, void *arg);

static bool visit_bindings(struct ks_server *s, const char *plural, const char *ns,
                           const struct ks_authz *at, rule_visitor visit, void *arg)
{
    struct ks_rtype *rt = ks_rtype_find(s, "rbac.authorization.k8s.io", "v1", plural);
    if (!rt)
        return false;
    char prefix[300] = "";
    if (ns)
        snprintf(prefix, sizeof(prefix), "%s/", ns);
    size_t plen = strlen(prefix);
    for (struct ks_obj *o = ks_index_seek(&rt->idx, prefix);
         o && strncmp(o->key, prefix, plen) == 0; o = ks_index_next(o)) {
        const cJSON *b = o->cur->obj;
        const cJSON *hit = NULL, *subj;
        cJSON_ArrayForEach(subj, cJSON_GetObjectItemCaseSensitive(b, "subjects"))
        {
            if (!hit && subject_matches(subj, ns, at))
                hit = subj;
        }
        if (!hit)
            continue;
        const cJSON *ref = cJSON_GetObjectItemCaseSensitive(b, "roleRef");
        const char *rk = cx_json_str(ref, "kind"), *rn = cx_json_str(ref, "name");
        if (!rk || !rn)
            continue;
        const cJSON *rule;
        cJSON_ArrayForEach(rule, role_rules(s, rk, ns, rn))
        {
            if (visit(b, ns, hit, rule, arg))
                return true;
        }
    }
    return false;
}

struct allow_ctx {
    const struct ks_authz *at;
    char *reason;
    size_t n;
};

static bool allow_visit(const cJSON *b, const char *ns, const cJSON *subj, const cJSON *rule,
                        void *arg)
{
    struct allow_ctx *c = arg;
    if (!rule_allows(rule, c->at))
        return false;
    if (c->reason) {
        char who[600];
        describe_subject(subj, ns, who, sizeof(who));
        const cJSON *ref = cJSON_GetObjectItemCaseSensitive(b, "roleRef");
        const char *bn = cx_json_path_str(b, "metadata", "name", NULL);
        if (ns)
            snprintf(c->reason, c->n, "RBAC: allowed by RoleBinding \"%s/%s\" of %s \"%s\" to %s",
                     bn ? bn : "", ns, cx_json_str(ref, "kind"), cx_json_str(ref, "name"), who);
        else
            snprintf(c->reason, c->n,
                     "RBAC: allowed by ClusterRoleBinding \"%s\" of %s \"%s\" to %s", bn ? bn : "",
                     cx_json_str(ref, "kind"), cx_json_str(ref, "name"), who);
    }
    return true;
}

bool ks_rbac_allows(struct ks_server *s, const struct ks_authz *at, char *reason, size_t n)
{
    if (reason && n)
        reason[0] = 0;
    struct allow_ctx c = {.at = at, .reason = reason, .n = n};
    if (visit_bindings(s, "clusterrolebindings", NULL, at, allow_visit, &c))
        return true;
    return at->resource_request && at->ns && *at->ns &&
           visit_bindings(s, "rolebindings", at->ns, at, allow_visit, &c);
}

bool ks_authz_decide(struct ks_server *s, const struct ks_authz *at, char *reason, size_t n)
{
    if (reason && n)
        reason[0] = 0;
    if (s->cfg.allow_all)
        return true;
    /* The privileged-group authorizer comes first and gives no reason. */
    for (size_t i = 0; i < at->ngroups; i++)
        if (strcmp(at->groups[i], "system:masters") == 0)
            return true;
    return ks_rbac_allows(s, at, reason, n);
}

struct rules_ctx {
    void (*emit)(const cJSON *rule, void *arg);
    void *arg;
};

static bool rules_visit(const cJSON *b, const char *ns, const cJSON *subj, const cJSON *rule,
                        void *arg)
{
    (void)b;
    (void)ns;
    (void)subj;
    struct rules_ctx *c = arg;
    c->emit(rule, c->arg);
    return false;
}

void ks_rbac_rules_for(struct ks_server *s, const struct ks_authz *at, const char *ns,
                       void (*emit)(const cJSON *rule, void *arg), void *arg)
{
    struct rules_ctx c = {.emit = emit, .arg = arg};
    (void)visit_bindings(s, "clusterrolebindings", NULL, at, rules_visit, &c);
    if (ns && *ns)
        (void)visit_bindings(s, "rolebindings", ns, at, rules_visit, &c);
}

/* metadata.name=X in a list/watch field selector names the object (RBAC's
 * resourceNames then apply, as for single-object watches). */
static char *selector_name(struct ks_req *r)
{
    const char *fs = ks_q(r, "fieldSelector");
    if (!fs)
        return NULL;
    const char *p = strstr(fs, "metadata.name=");
    if (!p || (p != fs && p[-1] != ','))
        return NULL;
    p += 14;
    if (*p == '=')
        p++;
    size_t n = strcspn(p, ",");
    return strndup(p, n);
}

void ks_auth_forbidden(struct ks_req *r, const char *verb, const char *group, const char *resource,
                       const char *qualified, const char *name, const char *ns)
{
    struct cx_buf b;
    cx_buf_init(&b, 1 << 16);
    int rc;
    if (name && *name)
        rc = cx_buf_printf(&b, "%s \"%s\" is forbidden: ", qualified, name);
    else
        rc = cx_buf_printf(&b, "%s is forbidden: ", qualified);
    rc |= cx_buf_printf(&b, "User \"%s\" cannot %s resource \"%s\" in API group \"%s\"", r->user,
                        verb, resource, group);
    if (ns && *ns)
        rc |= cx_buf_printf(&b, " in the namespace \"%s\"", ns);
    else
        rc |= cx_buf_puts(&b, " at the cluster scope");
    char plural[256];
    snprintf(plural, sizeof(plural), "%.*s", (int)strcspn(resource, "/"), resource);
    struct ks_details d = {.name = name, .group = group, .kind = plural};
    if (rc == 0)
        ks_reply_status(r, 403, "Forbidden", b.data, &d, NULL);
    else
        ks_err_internal(r, "out of memory");
    cx_buf_free(&b);
}

int ks_auth_authorize(struct ks_server *s, struct ks_req *r)
{
    if (s->cfg.allow_all || !r->rt)
        return 0;
    char *selname = NULL;
    if ((r->verb == KS_V_LIST || r->verb == KS_V_WATCH) && !r->name)
        selname = selector_name(r);
    struct ks_authz at = {
        .user = r->user,
        .groups = r->groups,
        .ngroups = r->ngroups,
        .verb = ks_verb_name(r->verb),
        .resource_request = true,
        .group = r->rt->group,
        .resource = r->rt->plural,
        .sub = r->sub,
        .ns = r->rt->namespaced ? r->ns : NULL,
        .name = r->name ? r->name : selname,
    };
    bool ok = ks_authz_decide(s, &at, NULL, 0);
    free(selname);
    if (ok)
        return 0;
    char resource[300], qr[320];
    if (r->sub)
        snprintf(resource, sizeof(resource), "%s/%s", r->rt->plural, r->sub);
    else
        snprintf(resource, sizeof(resource), "%s", r->rt->plural);
    ks_qualified_resource(r->rt, qr, sizeof(qr));
    ks_auth_forbidden(r, at.verb, r->rt->group, resource, qr, r->name,
                      r->rt->namespaced ? r->ns : NULL);
    return -1;
}

/* ---- impersonation ------------------------------------------------------- */

#define IMP_MAX 32

/* One thing asked to be impersonated (buildImpersonationRequests). */
struct imp {
    const char *resource; /* users, serviceaccounts, groups, userextras, uids */
    const char *group;    /* "" or authentication.k8s.io */
    char name[256];
    char ns[256];
    char sub[128]; /* userextras: the extra's key */
};

static void forbid_impersonation(struct ks_req *r, const struct imp *im)
{
    char qr[300];
    if (*im->group)
        snprintf(qr, sizeof(qr), "%s.%s", im->resource, im->group);
    else
        snprintf(qr, sizeof(qr), "%s", im->resource);
    char res[300];
    if (im->sub[0])
        snprintf(res, sizeof(res), "%s/%s", im->resource, im->sub);
    else
        snprintf(res, sizeof(res), "%s", im->resource);
    ks_auth_forbidden(r, "impersonate", im->group, res, qr, im->name, im->ns[0] ? im->ns : NULL);
}

int ks_auth_impersonate(struct ks_server *s, struct ks_req *r)
{
    struct evkeyvalq *h = ks_req_in_headers(r);
    if (!h)
        return 0;
    struct imp ims[IMP_MAX];
    size_t n = 0;
    bool has_user = false, has_groups = false;
    const char *user_hdr = evhttp_find_header(h, "Impersonate-User");
    if (user_hdr && *user_hdr) {
        struct imp *im = &ims[n++];
        memset(im, 0, sizeof(*im));
        im->group = "";
        has_user = true;
        const char *sa =
            strncmp(user_hdr, "system:serviceaccount:", 22) == 0 ? user_hdr + 22 : NULL;
        const char *colon = sa ? strchr(sa, ':') : NULL;
        if (colon && colon > sa && colon[1] && !strchr(colon + 1, ':')) {
            im->resource = "serviceaccounts";
            snprintf(im->ns, sizeof(im->ns), "%.*s", (int)(colon - sa), sa);
            snprintf(im->name, sizeof(im->name), "%s", colon + 1);
        } else {
            im->resource = "users";
            snprintf(im->name, sizeof(im->name), "%s", user_hdr);
        }
    }
    struct evkeyval *kv;
    TAILQ_FOREACH(kv, h, next)
    {
        if (n == IMP_MAX)
            break;
        struct imp *im = &ims[n];
        memset(im, 0, sizeof(*im));
        if (strcasecmp(kv->key, "Impersonate-Group") == 0) {
            im->resource = "groups";
            im->group = "";
            snprintf(im->name, sizeof(im->name), "%s", kv->value);
            has_groups = true;
        } else if (strcasecmp(kv->key, "Impersonate-Uid") == 0) {
            im->resource = "uids";
            im->group = "authentication.k8s.io";
            snprintf(im->name, sizeof(im->name), "%s", kv->value);
        } else if (strncasecmp(kv->key, "Impersonate-Extra-", 18) == 0) {
            im->resource = "userextras";
            im->group = "authentication.k8s.io";
            char *key = evhttp_uridecode(kv->key + 18, 0, NULL);
            snprintf(im->sub, sizeof(im->sub), "%s", key ? key : "");
            free(key);
            for (char *c = im->sub; *c; c++)
                if (*c >= 'A' && *c <= 'Z')
                    *c = (char)(*c - 'A' + 'a');
            snprintf(im->name, sizeof(im->name), "%s", kv->value);
        } else {
            continue;
        }
        n++;
    }
    if (n == 0)
        return 0;
    if (!has_user) {
        ks_reply_text(r, 500, "text/plain; charset=utf-8",
                      "Internal Server Error: requested impersonation without impersonating a "
                      "user");
        return -1;
    }
    /* Each thing impersonated must be allowed to the requester. */
    for (size_t i = 0; i < n; i++) {
        struct ks_authz at = {.user = r->user,
                              .groups = r->groups,
                              .ngroups = r->ngroups,
                              .verb = "impersonate",
                              .resource_request = true,
                              .group = ims[i].group,
                              .resource = ims[i].resource,
                              .sub = ims[i].sub[0] ? ims[i].sub : NULL,
                              .ns = ims[i].ns[0] ? ims[i].ns : NULL,
                              .name = ims[i].name};
        if (!ks_authz_decide(s, &at, NULL, 0)) {
            forbid_impersonation(r, &ims[i]);
            return -1;
        }
    }
    /* The impersonated identity replaces the requester's. */
    for (size_t i = 0; i < r->ngroups; i++)
        free(r->groups[i]);
    free(r->groups);
    r->groups = NULL;
    r->ngroups = 0;
    r->uid[0] = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(ims[i].resource, "serviceaccounts") == 0) {
            snprintf(r->user, sizeof(r->user), "system:serviceaccount:%s:%s", ims[i].ns,
                     ims[i].name);
            if (!has_groups) {
                char g[300];
                add_group(r, "system:serviceaccounts");
                snprintf(g, sizeof(g), "system:serviceaccounts:%s", ims[i].ns);
                add_group(r, g);
            }
        } else if (strcmp(ims[i].resource, "users") == 0) {
            snprintf(r->user, sizeof(r->user), "%s", ims[i].name);
        } else if (strcmp(ims[i].resource, "groups") == 0) {
            add_group(r, ims[i].name);
        } else if (strcmp(ims[i].resource, "uids") == 0) {
            snprintf(r->uid, sizeof(r->uid), "%s", ims[i].name);
        }
    }
    bool anon = strcmp(r->user, "system:anonymous") == 0;
    bool have = false;
    for (size_t i = 0; i < r->ngroups; i++)
        if (strcmp(r->groups[i], "system:unauthenticated") == 0 ||
            (!anon && strcmp(r->groups[i], "system:authenticated") == 0))
            have = true;
    if (!have)
        add_group(r, anon ? "system:unauthenticated" : "system:authenticated");
    return 0;
}

/* ---- admin ---------------------------------------------------------------- */

int ks_auth_admin(struct ks_req *r, const char *path)
{
    struct ks_server *s = r->s;
    if (strcmp(path, "/tokens/reload") == 0 && r->method == EVHTTP_REQ_POST) {
        if (!s->cfg.tokens_file) {
            ks_err_bad_request(r, "no --tokens file");
            return 0;
        }
        if (tokens_load(s) != 0) {
            ks_err_internal(r, "cannot read the token file");
            return 0;
        }
        char buf[64];
        int n = snprintf(buf, sizeof(buf), "{\"tokens\":%zu}", s->auth->n);
        ks_reply_json(r, 200, buf, (size_t)n);
        return 0;
    }
    if (strcmp(path, "/tokens") == 0 && r->method == EVHTTP_REQ_POST) {
        /* {"tokens":{"tok":"user"|{"user":"u","groups":["g"]}}} replaces the set. */
        cJSON *j = cx_json_parse(r->body, r->body_len);
        const cJSON *toks = cJSON_GetObjectItemCaseSensitive(j, "tokens");
        if (!cJSON_IsObject(toks)) {
            cJSON_Delete(j);
            ks_err_bad_request(r, "expected {\"tokens\":{...}}");
            return 0;
        }
        tokens_clear(s->auth);
        for (const cJSON *t = toks->child; t; t = t->next) {
            const char *user = cJSON_IsString(t) ? t->valuestring : cx_json_str(t, "user");
            struct ks_token spec = {.uid = (char *)cx_json_str(t, "uid")};
            const cJSON *g;
            cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(t, "groups"))
            {
                if (spec.ngroups < KS_TOKEN_GROUPS_MAX && cJSON_IsString(g))
                    spec.groups[spec.ngroups++] = g->valuestring;
            }
            cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(t, "audiences"))
            {
                if (spec.nauds < KS_TOKEN_AUDS_MAX && cJSON_IsString(g))
                    spec.auds[spec.nauds++] = g->valuestring;
            }
            const cJSON *exp = cJSON_GetObjectItemCaseSensitive(t, "expires");
            if (cJSON_IsNumber(exp))
                spec.expires_ns = (int64_t)exp->valuedouble * CX_NS_PER_S;
            else if (cJSON_IsString(exp) && parse_expiry(exp->valuestring, &spec.expires_ns) != 0)
                continue;
            if (user)
                (void)token_add(s->auth, t->string, user, &spec);
        }
        cJSON_Delete(j);
        char buf[64];
        int n = snprintf(buf, sizeof(buf), "{\"tokens\":%zu}", s->auth->n);
        ks_reply_json(r, 200, buf, (size_t)n);
        return 0;
    }
    return -1;
}
