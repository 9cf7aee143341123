/*
 * ks_auth: bearer tokens (a static token file, re-read on SIGHUP and by the
 * admin API, so rotation can be tested) and RBAC authorization from the
 * Role/ClusterRole/RoleBinding/ClusterRoleBinding objects in the store.
 */
#include <ctype.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cx_json.h"
#include "cx_log.h"
#include "ks_api.h"
#include "ks_http.h"
#include "ks_tls.h"

#define TOKENS_MAX 4096
#define GROUPS_MAX 16

struct token {
    char *token;
    char *user;
    char *groups[GROUPS_MAX];
    int ngroups;
};

struct ks_auth {
    struct token *t;
    size_t n;
};

static void tokens_clear(struct ks_auth *a)
{
    for (size_t i = 0; i < a->n; i++) {
        free(a->t[i].token);
        free(a->t[i].user);
        for (int g = 0; g < a->t[i].ngroups; g++)
            free(a->t[i].groups[g]);
    }
    free(a->t);
    a->t = NULL;
    a->n = 0;
}

static int token_add(struct ks_auth *a, const char *tok, const char *user, char **groups, int ng)
{
    if (a->n >= TOKENS_MAX)
        return -1;
    struct token *nt = realloc(a->t, (a->n + 1) * sizeof(*nt));
    if (!nt)
        return -1;
    a->t = nt;
    struct token *t = &a->t[a->n];
    memset(t, 0, sizeof(*t));
    t->token = strdup(tok);
    t->user = strdup(user);
    for (int i = 0; i < ng && i < GROUPS_MAX; i++)
        if ((t->groups[t->ngroups] = strdup(groups[i])) != NULL)
            t->ngroups++;
    if (!t->token || !t->user) {
        free(t->token);
        free(t->user);
        for (int g = 0; g < t->ngroups; g++)
            free(t->groups[g]);
        return -1;
    }
    a->n++;
    return 0;
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
 * may be one quoted comma list (kube-apiserver's format) or more columns. */
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
        char *groups[GROUPS_MAX];
        int ng = 0;
        for (int i = 3; i < n; i++) {
            char *save = NULL;
            for (char *g = strtok_r(fld[i], ",", &save); g && ng < GROUPS_MAX;
                 g = strtok_r(NULL, ",", &save))
                groups[ng++] = g;
        }
        if (token_add(a, fld[0], fld[1], groups, ng) != 0)
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

int ks_auth_token_user(struct ks_server *s, const char *token, struct ks_req *r)
{
    struct ks_auth *a = s->auth;
    for (size_t i = 0; a && i < a->n; i++) {
        if (strcmp(a->t[i].token, token) != 0)
            continue;
        snprintf(r->user, sizeof(r->user), "%s", a->t[i].user);
        for (int g = 0; g < a->t[i].ngroups; g++)
            add_group(r, a->t[i].groups[g]);
        if (strncmp(r->user, "system:serviceaccount:", 22) == 0) {
            add_group(r, "system:serviceaccounts");
            const char *ns = r->user + 22;
            const char *colon = strchr(ns, ':');
            if (colon) {
                char g[300];
                snprintf(g, sizeof(g), "system:serviceaccounts:%.*s", (int)(colon - ns), ns);
                add_group(r, g);
            }
        }
        add_group(r, "system:authenticated");
        return 0;
    }
    return -1;
}

/* ---- RBAC --------------------------------------------------------------- */

static bool list_has(const cJSON *arr, const char *v)
{
    const cJSON *it;
    cJSON_ArrayForEach(it,
                       arr) if (cJSON_IsString(it) && strcmp(it->valuestring, v) == 0) return true;
    return false;
}

struct attrs {
    const char *user;
    char **groups;
    size_t ngroups;
    const char *verb;
    const char *group;
    const char *resource; /* "plural" or "plural/sub" */
    const char *plural;
    const char *sub;
    const char *ns;   /* NULL for cluster scope */
    const char *name; /* may be NULL */
};

static bool rule_allows(const cJSON *rule, const struct attrs *at)
{
    const cJSON *verbs = cJSON_GetObjectItemCaseSensitive(rule, "verbs");
    if (!list_has(verbs, at->verb) && !list_has(verbs, "*"))
        return false;
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(rule, "apiGroups");
    if (!list_has(groups, at->group) && !list_has(groups, "*"))
        return false;
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(rule, "resources");
    bool rok = list_has(res, at->resource) || (!at->sub && list_has(res, "*"));
    if (!rok && at->sub) {
        char star[128];
        snprintf(star, sizeof(star), "*/%s", at->sub);
        rok = list_has(res, star) || list_has(res, "*");
    }
    if (!rok)
        return false;
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(rule, "resourceNames");
    if (cJSON_GetArraySize(names) > 0 && (!at->name || !list_has(names, at->name)))
        return false;
    return true;
}

static bool subject_matches(const cJSON *subj, const char *binding_ns, const struct attrs *at)
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

static bool role_allows(struct ks_server *s, const char *kind, const char *ns, const char *name,
                        const struct attrs *at)
{
    bool cluster = strcmp(kind, "ClusterRole") == 0;
    struct ks_rtype *rt =
        ks_rtype_find(s, "rbac.authorization.k8s.io", "v1", cluster ? "clusterroles" : "roles");
    if (!rt)
        return false;
    char *key = ks_key(rt, ns ? ns : "", name);
    struct ks_obj *o = key ? ks_store_get(rt, key) : NULL;
    free(key);
    if (!o)
        return false;
    const cJSON *rule;
    cJSON_ArrayForEach(rule, cJSON_GetObjectItemCaseSensitive(o->cur->obj, "rules"))
    {
        if (rule_allows(rule, at))
            return true;
    }
    return false;
}

static bool bindings_allow(struct ks_server *s, const char *plural, const char *ns,
                           const struct attrs *at)
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
        bool hit = false;
        const cJSON *subj;
        cJSON_ArrayForEach(subj, cJSON_GetObjectItemCaseSensitive(b, "subjects"))
        {
            if (subject_matches(subj, ns, at))
                hit = true;
        }
        if (!hit)
            continue;
        const cJSON *ref = cJSON_GetObjectItemCaseSensitive(b, "roleRef");
        const char *rk = cx_json_str(ref, "kind"), *rn = cx_json_str(ref, "name");
        if (!rk || !rn)
            continue;
        if (role_allows(s, rk, strcmp(rk, "Role") == 0 ? ns : NULL, rn, at))
            return true;
    }
    return false;
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

int ks_auth_authorize(struct ks_server *s, struct ks_req *r)
{
    if (s->cfg.allow_all || !r->rt)
        return 0;
    char resource[300];
    if (r->sub)
        snprintf(resource, sizeof(resource), "%s/%s", r->rt->plural, r->sub);
    else
        snprintf(resource, sizeof(resource), "%s", r->rt->plural);
    char *selname = NULL;
    if ((r->verb == KS_V_LIST || r->verb == KS_V_WATCH) && !r->name)
        selname = selector_name(r);
    struct attrs at = {
        .user = r->user,
        .groups = r->groups,
        .ngroups = r->ngroups,
        .verb = ks_verb_name(r->verb),
        .group = r->rt->group,
        .resource = resource,
        .plural = r->rt->plural,
        .sub = r->sub,
        .ns = r->rt->namespaced ? r->ns : NULL,
        .name = r->name ? r->name : selname,
    };
    bool ok = bindings_allow(s, "clusterrolebindings", NULL, &at) ||
              (at.ns && bindings_allow(s, "rolebindings", at.ns, &at));
    free(selname);
    if (ok)
        return 0;
    char qr[320];
    ks_qualified_resource(r->rt, qr, sizeof(qr));
    struct cx_buf b;
    cx_buf_init(&b, 1 << 16);
    int rc;
    if (r->name)
        rc = cx_buf_printf(&b, "%s \"%s\" is forbidden: ", qr, r->name);
    else
        rc = cx_buf_printf(&b, "%s is forbidden: ", qr);
    rc |= cx_buf_printf(&b, "User \"%s\" cannot %s resource \"%s\" in API group \"%s\"", r->user,
                        at.verb, resource, r->rt->group);
    if (r->rt->namespaced && r->ns)
        rc |= cx_buf_printf(&b, " in the namespace \"%s\"", r->ns);
    else
        rc |= cx_buf_puts(&b, " at the cluster scope");
    struct ks_details d = {.name = r->name, .group = r->rt->group, .kind = r->rt->plural};
    if (rc == 0)
        ks_reply_status(r, 403, "Forbidden", b.data, &d, NULL);
    else
        ks_err_internal(r, "out of memory");
    cx_buf_free(&b);
    return -1;
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
            char *groups[GROUPS_MAX];
            int ng = 0;
            const cJSON *g;
            cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(
                                      t, "groups")) if (ng < GROUPS_MAX && cJSON_IsString(g))
                groups[ng++] = g->valuestring;
            if (user)
                (void)token_add(s->auth, t->string, user, groups, ng);
        }
        cJSON_Delete(j);
        char buf[64];
        int n = snprintf(buf, sizeof(buf), "{\"tokens\":%zu}", s->auth->n);
        ks_reply_json(r, 200, buf, (size_t)n);
        return 0;
    }
    return -1;
}
