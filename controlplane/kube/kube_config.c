#include "kube_config.h"

#include "cx_base64.h"
#include "cx_json.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* A YAML document may use aliases to blow up; bound the converted nodes. */
#define YAML_NODES_MAX 200000
#define YAML_DEPTH_MAX 64

static char *xstrdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

static char *read_file(const char *path, size_t max, size_t *len_out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(max + 1);
    size_t n = 0;
    if (buf) {
        n = fread(buf, 1, max + 1, f);
        if (ferror(f) || n > max) {
            free(buf);
            buf = NULL;
        } else {
            buf[n] = '\0';
        }
    }
    fclose(f);
    if (buf && len_out)
        *len_out = n;
    return buf;
}

/* A bearer token goes into an Authorization header line: a control byte
 * (CR, LF, NUL...) would end the line or cut the token there. */
static int token_ok(const char *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)t[i] < 0x20 || t[i] == 0x7f)
            return 0;
    return 1;
}

char *kube_config_read_token(const char *path)
{
    size_t n = 0;
    char *t = read_file(path, KUBE_TOKEN_FILE_MAX, &n);
    if (!t)
        return NULL;
    size_t start = 0;
    while (start < n &&
           (t[start] == ' ' || t[start] == '\n' || t[start] == '\r' || t[start] == '\t'))
        start++;
    while (n > start &&
           (t[n - 1] == ' ' || t[n - 1] == '\n' || t[n - 1] == '\r' || t[n - 1] == '\t'))
        n--;
    if (n == start || !token_ok(t + start, n - start)) {
        free(t);
        return NULL;
    }
    memmove(t, t + start, n - start);
    t[n - start] = '\0';
    return t;
}

/* ---- YAML to cJSON (every scalar becomes a string) ---------------------- */

struct yconv {
    yaml_document_t *doc;
    size_t nodes;
};

static cJSON *yaml_node_to_json(struct yconv *c, yaml_node_t *n, int depth)
{
    if (!n || depth > YAML_DEPTH_MAX || ++c->nodes > YAML_NODES_MAX)
        return NULL;
    switch (n->type) {
    case YAML_SCALAR_NODE: {
        char *s = strndup((const char *)n->data.scalar.value, n->data.scalar.length);
        if (!s)
            return NULL;
        cJSON *v = cJSON_CreateString(s);
        free(s);
        return v;
    }
    case YAML_SEQUENCE_NODE: {
        cJSON *arr = cJSON_CreateArray();
        for (yaml_node_item_t *it = n->data.sequence.items.start;
             arr && it < n->data.sequence.items.top; it++) {
            cJSON *v = yaml_node_to_json(c, yaml_document_get_node(c->doc, *it), depth + 1);
            if (!v) {
                cJSON_Delete(arr);
                return NULL;
            }
            cJSON_AddItemToArray(arr, v);
        }
        return arr;
    }
    case YAML_MAPPING_NODE: {
        cJSON *obj = cJSON_CreateObject();
        for (yaml_node_pair_t *pr = n->data.mapping.pairs.start;
             obj && pr < n->data.mapping.pairs.top; pr++) {
            yaml_node_t *k = yaml_document_get_node(c->doc, pr->key);
            if (!k || k->type != YAML_SCALAR_NODE) {
                cJSON_Delete(obj);
                return NULL;
            }
            cJSON *v = yaml_node_to_json(c, yaml_document_get_node(c->doc, pr->value), depth + 1);
            char *key = strndup((const char *)k->data.scalar.value, k->data.scalar.length);
            if (!v || !key) {
                free(key);
                cJSON_Delete(v);
                cJSON_Delete(obj);
                return NULL;
            }
            cJSON_AddItemToObject(obj, key, v);
            free(key);
        }
        return obj;
    }
    default:
        return NULL;
    }
}

/* Parses the first YAML document of |text|. NULL with |err| on failure. */
static cJSON *yaml_to_json(const char *text, size_t len, char *err, size_t errlen)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    cJSON *out = NULL;
    if (!yaml_parser_initialize(&parser)) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        snprintf(err, errlen, "invalid YAML at line %lu: %s",
                 (unsigned long)parser.problem_mark.line + 1,
                 parser.problem ? parser.problem : "parse error");
        yaml_parser_delete(&parser);
        return NULL;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) {
        snprintf(err, errlen, "empty kubeconfig");
    } else {
        struct yconv c = {.doc = &doc, .nodes = 0};
        out = yaml_node_to_json(&c, root, 0);
        if (!out)
            snprintf(err, errlen, "kubeconfig too large, too deep or not a mapping");
    }
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return out;
}

/* ---- helpers -------------------------------------------------------------- */

/* Decodes a kubeconfig *-data field (whitespace and missing padding
 * allowed, as kubectl accepts). Returns a NUL-terminated buffer the caller
 * frees, or NULL if |s| is not base64. */
static char *b64_decode(const char *s, size_t *out_len)
{
    size_t n = strlen(s);
    char *out = malloc(CX_B64_DECODED_MAX(n) + 1);
    long d = out ? cx_b64_decode(s, n, (uint8_t *)out, CX_B64_LENIENT) : -1;
    if (d < 0) {
        free(out);
        return NULL;
    }
    out[d] = '\0';
    *out_len = (size_t)d;
    return out;
}

static int yaml_true(const char *s)
{
    return s && (strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "TRUE") == 0 ||
                 strcmp(s, "yes") == 0 || strcmp(s, "on") == 0);
}

/* Finds {name: |name|, <field>: {...}} in the list |key| of |root|. */
static const cJSON *named_entry(const cJSON *root, const char *key, const char *name,
                                const char *field)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, key);
    const cJSON *it;
    cJSON_ArrayForEach(it, list)
    {
        const char *n = cx_json_str(it, "name");
        if (n && strcmp(n, name) == 0) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(it, field);
            return cJSON_IsObject(v) ? v : NULL;
        }
    }
    return NULL;
}

static char *resolve_path(const char *base_dir, const char *p)
{
    if (!p || !*p)
        return NULL;
    if (p[0] == '/' || !base_dir || !*base_dir)
        return strdup(p);
    size_t n = strlen(base_dir) + strlen(p) + 2;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%s/%s", base_dir, p);
    return out;
}

static char *dup_trim_slash(const char *s)
{
    char *r = strdup(s);
    if (r) {
        size_t n = strlen(r);
        while (n > 0 && r[n - 1] == '/')
            r[--n] = '\0';
    }
    return r;
}

void kube_config_wipe_secrets(struct kube_config *c)
{
    if (c->client_key_data)
        explicit_bzero(c->client_key_data, c->client_key_data_len);
    if (c->token)
        explicit_bzero(c->token, strlen(c->token));
}

void kube_config_free(struct kube_config *c)
{
    kube_config_wipe_secrets(c);
    free(c->server);
    free(c->ca_file);
    free(c->ca_data);
    free(c->client_cert_file);
    free(c->client_key_file);
    free(c->client_cert_data);
    free(c->client_key_data);
    free(c->token);
    free(c->token_file);
    free(c->tls_server_name);
    free(c->namespace);
    free(c->context);
    free(c->source);
    kube_limit_unref(c->limit);
    memset(c, 0, sizeof(*c));
}

static char *dup_bytes(const char *p, size_t n)
{
    if (!p)
        return NULL;
    char *r = malloc(n + 1);
    if (r) {
        memcpy(r, p, n);
        r[n] = '\0';
    }
    return r;
}

int kube_config_copy(struct kube_config *dst, const struct kube_config *src)
{
    memset(dst, 0, sizeof(*dst));
#define COPY_STR(f)                               \
    do {                                          \
        if (src->f && !(dst->f = strdup(src->f))) \
            goto fail;                            \
    } while (0)
#define COPY_BYTES(f, l)                                     \
    do {                                                     \
        dst->l = src->l;                                     \
        if (src->f && !(dst->f = dup_bytes(src->f, src->l))) \
            goto fail;                                       \
    } while (0)
    COPY_STR(server);
    COPY_STR(ca_file);
    COPY_BYTES(ca_data, ca_data_len);
    COPY_STR(client_cert_file);
    COPY_STR(client_key_file);
    COPY_BYTES(client_cert_data, client_cert_data_len);
    COPY_BYTES(client_key_data, client_key_data_len);
    COPY_STR(token);
    COPY_STR(token_file);
    COPY_STR(tls_server_name);
    COPY_STR(namespace);
    COPY_STR(context);
    COPY_STR(source);
#undef COPY_STR
#undef COPY_BYTES
    dst->insecure_skip_tls_verify = src->insecure_skip_tls_verify;
    dst->read_idle_ms = src->read_idle_ms;
    dst->ping_timeout_ms = src->ping_timeout_ms;
    dst->limit = kube_limit_ref(src->limit);
    return 0;
fail:
    kube_config_free(dst);
    return -1;
}

/* Decodes the base64 field |key| of |obj| into *data and *len. 0 if absent or
 * decoded, -1 if present but not base64. */
static int take_b64(const cJSON *obj, const char *key, char **data, size_t *len)
{
    const char *v = cx_json_str(obj, key);
    if (!v || !*v)
        return 0;
    *data = b64_decode(v, len);
    return *data ? 0 : -1;
}

int kube_config_parse(const char *text, size_t len, const char *base_dir, const char *context,
                      struct kube_config *out, char *err, size_t errlen)
{
    int rc = -1;
    memset(out, 0, sizeof(*out));
    cJSON *root = yaml_to_json(text, len, err, errlen);
    if (!root)
        goto out;
    if (!cJSON_IsObject(root)) {
        snprintf(err, errlen, "kubeconfig is not a mapping");
        goto out;
    }
    const char *ctx_name = context && *context ? context : cx_json_str(root, "current-context");
    if (!ctx_name || !*ctx_name) {
        snprintf(err, errlen, "kubeconfig has no current-context and none was given");
        goto out;
    }
    const cJSON *ctx = named_entry(root, "contexts", ctx_name, "context");
    if (!ctx) {
        snprintf(err, errlen, "context \"%s\" not found in kubeconfig", ctx_name);
        goto out;
    }
    const char *cluster_name = cx_json_str(ctx, "cluster");
    const char *user_name = cx_json_str(ctx, "user");
    const cJSON *cluster =
        cluster_name ? named_entry(root, "clusters", cluster_name, "cluster") : NULL;
    if (!cluster) {
        snprintf(err, errlen, "cluster \"%s\" of context \"%s\" not found",
                 cluster_name ? cluster_name : "", ctx_name);
        goto out;
    }
    const cJSON *user = NULL;
    if (user_name && *user_name) {
        user = named_entry(root, "users", user_name, "user");
        if (!user) {
            snprintf(err, errlen, "user \"%s\" of context \"%s\" not found", user_name, ctx_name);
            goto out;
        }
    }
    const char *server = cx_json_str(cluster, "server");
    if (!server || (strncmp(server, "https://", 8) != 0 && strncmp(server, "http://", 7) != 0)) {
        snprintf(err, errlen, "cluster \"%s\" has no http(s) server URL", cluster_name);
        goto out;
    }
    out->server = dup_trim_slash(server);
    out->insecure_skip_tls_verify = yaml_true(cx_json_str(cluster, "insecure-skip-tls-verify"));
    out->tls_server_name = xstrdup(cx_json_str(cluster, "tls-server-name"));
    out->ca_file = resolve_path(base_dir, cx_json_str(cluster, "certificate-authority"));
    if (take_b64(cluster, "certificate-authority-data", &out->ca_data, &out->ca_data_len) != 0) {
        snprintf(err, errlen, "certificate-authority-data of cluster \"%s\" is not base64",
                 cluster_name);
        goto out;
    }
    if (user) {
        const char *tok = cx_json_str(user, "token");
        if (tok && !token_ok(tok, strlen(tok))) {
            snprintf(err, errlen, "the token of user \"%s\" holds a control character", user_name);
            goto out;
        }
        out->token = xstrdup(tok);
        out->token_file = resolve_path(base_dir, cx_json_str(user, "tokenFile"));
        out->client_cert_file = resolve_path(base_dir, cx_json_str(user, "client-certificate"));
        out->client_key_file = resolve_path(base_dir, cx_json_str(user, "client-key"));
        if (take_b64(user, "client-certificate-data", &out->client_cert_data,
                     &out->client_cert_data_len) != 0 ||
            take_b64(user, "client-key-data", &out->client_key_data, &out->client_key_data_len) !=
                0) {
            snprintf(err, errlen, "client certificate or key data of user \"%s\" is not base64",
                     user_name);
            goto out;
        }
        if (cJSON_GetObjectItemCaseSensitive(user, "exec") ||
            cJSON_GetObjectItemCaseSensitive(user, "auth-provider")) {
            if (!out->token && !out->token_file && !out->client_cert_file &&
                !out->client_cert_data) {
                snprintf(err, errlen,
                         "user \"%s\" uses exec/auth-provider credentials, which "
                         "coxswain does not run; use a token or certificate",
                         user_name);
                goto out;
            }
        }
    }
    const char *ns = cx_json_str(ctx, "namespace");
    out->namespace = strdup(ns && *ns ? ns : "default");
    out->context = strdup(ctx_name);
    if (!out->server || !out->namespace || !out->context) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    rc = 0;
out:
    if (rc != 0)
        kube_config_free(out);
    cJSON_Delete(root);
    return rc;
}

int kube_config_load_file(const char *path, const char *context, struct kube_config *out, char *err,
                          size_t errlen)
{
    memset(out, 0, sizeof(*out));
    size_t n = 0;
    char *text = read_file(path, KUBE_CONFIG_FILE_MAX, &n);
    if (!text) {
        snprintf(err, errlen, "cannot read kubeconfig %s: %s", path,
                 errno ? strerror(errno) : "too large");
        return -1;
    }
    char *dir = strdup(path);
    if (!dir) {
        free(text);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        dir[0] = '\0';
    int rc =
        kube_config_parse(text, n, slash ? (dir[0] ? dir : "/") : NULL, context, out, err, errlen);
    if (rc == 0 && !(out->source = strdup(path))) {
        kube_config_free(out);
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    free(dir);
    free(text);
    return rc;
}

int kube_config_in_cluster(const char *sa_dir, const char *host, const char *port,
                           struct kube_config *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (!sa_dir)
        sa_dir = KUBE_SA_DIR;
    if (!host)
        host = getenv("KUBERNETES_SERVICE_HOST");
    if (!port)
        port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !*host || !port || !*port) {
        snprintf(err, errlen, "not in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set");
        return -1;
    }
    char path[4096];
    char url[600];
    /* An IPv6 service address needs brackets in a URL. */
    if (strchr(host, ':') && host[0] != '[')
        snprintf(url, sizeof(url), "https://[%s]:%s", host, port);
    else
        snprintf(url, sizeof(url), "https://%s:%s", host, port);
    snprintf(path, sizeof(path), "%s/token", sa_dir);
    char *tok = kube_config_read_token(path);
    if (!tok) {
        snprintf(err, errlen, "cannot read the service-account token %s", path);
        return -1;
    }
    free(tok); /* read again by the client; here only proven readable */
    out->server = strdup(url);
    out->token_file = strdup(path);
    snprintf(path, sizeof(path), "%s/ca.crt", sa_dir);
    out->ca_file = strdup(path);
    snprintf(path, sizeof(path), "%s/namespace", sa_dir);
    char *ns = kube_config_read_token(path);
    out->namespace = ns ? ns : strdup("default");
    out->context = strdup("");
    out->source = strdup("in-cluster");
    if (!out->server || !out->token_file || !out->ca_file || !out->namespace || !out->context ||
        !out->source) {
        kube_config_free(out);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

int kube_config_load_default(const char *kubeconfig, const char *context, struct kube_config *out,
                             char *err, size_t errlen)
{
    if (kubeconfig && *kubeconfig)
        return kube_config_load_file(kubeconfig, context, out, err, errlen);
    const char *env = getenv("KUBECONFIG");
    if (env && *env) {
        char *list = strdup(env);
        if (!list) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        char *save = NULL;
        for (char *p = strtok_r(list, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
            FILE *f = fopen(p, "rb");
            if (!f)
                continue;
            fclose(f);
            int rc = kube_config_load_file(p, context, out, err, errlen);
            free(list);
            return rc;
        }
        free(list);
    }
    if (getenv("KUBERNETES_SERVICE_HOST"))
        return kube_config_in_cluster(NULL, NULL, NULL, out, err, errlen);
    const char *home = getenv("HOME");
    if (home && *home) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/.kube/config", home);
        return kube_config_load_file(path, context, out, err, errlen);
    }
    snprintf(err, errlen, "no kubeconfig: set --kubeconfig or KUBECONFIG, or run in a cluster");
    return -1;
}
