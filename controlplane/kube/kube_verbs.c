/*
 * Paths and the typed requests: what each verb sends, and which writes are
 * idempotent by precondition. Everything goes through kube_request.
 */
#include "kube_client_internal.h"

#include "cx_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int append_escaped(struct cx_buf *b, const char *s)
{
    char *e = curl_easy_escape(NULL, s, 0);
    if (!e)
        return -1;
    int rc = cx_buf_puts(b, e);
    curl_free(e);
    return rc;
}

int kube_path(struct cx_buf *b, const struct kube_resource *res, const char *ns, const char *name,
              const char *subresource)
{
    int rc;
    if (!res->group || !*res->group)
        rc = cx_buf_printf(b, "/api/%s", res->version);
    else
        rc = cx_buf_printf(b, "/apis/%s/%s", res->group, res->version);
    if (res->namespaced && ns && *ns) {
        rc |= cx_buf_puts(b, "/namespaces/");
        rc |= append_escaped(b, ns);
    }
    rc |= cx_buf_printf(b, "/%s", res->plural);
    if (name) {
        rc |= cx_buf_puts(b, "/");
        rc |= append_escaped(b, name);
    }
    if (subresource)
        rc |= cx_buf_printf(b, "/%s", subresource);
    return rc ? -1 : 0;
}

int kube_query_add(struct cx_buf *b, int *first, const char *k, const char *v)
{
    if (!v || !*v)
        return 0;
    int rc = cx_buf_printf(b, "%c%s=", *first ? '?' : '&', k);
    *first = 0;
    rc |= append_escaped(b, v);
    return rc;
}

static struct kube_call *simple(struct kube_client *c, const char *method, struct cx_buf *path,
                                const char *body, size_t body_len, const char *ctype,
                                enum kube_verb_class verb, int idempotent,
                                const struct kube_req_opts *opts, kube_result_fn cb, void *ud)
{
    struct kube_raw_req r = {
        .method = method,
        .path_query = path->data,
        .body = body,
        .body_len = body_len,
        .content_type = ctype,
        .verb = verb,
    };
    if (opts)
        r.opts = *opts;
    if (idempotent)
        r.opts.idempotent = 1;
    return kube_request(c, &r, cb, ud);
}

static int needs_ns(const struct kube_resource *res, const char *ns)
{
    return res->namespaced && (!ns || !*ns);
}

struct kube_call *kube_get(struct kube_client *c, const struct kube_resource *res, const char *ns,
                           const char *name, const struct kube_req_opts *opts, kube_result_fn cb,
                           void *user_data)
{
    if (!name || !*name || needs_ns(res, ns))
        return NULL;
    struct cx_buf p;
    cx_buf_init(&p, KUBE_URL_MAX);
    struct kube_call *call = NULL;
    if (kube_path(&p, res, ns, name, NULL) == 0)
        call = simple(c, "GET", &p, NULL, 0, NULL, KUBE_VERB_READ, 0, opts, cb, user_data);
    cx_buf_free(&p);
    return call;
}

struct kube_call *kube_list(struct kube_client *c, const struct kube_resource *res, const char *ns,
                            const struct kube_list_opts *lo, const struct kube_req_opts *opts,
                            kube_result_fn cb, void *user_data)
{
    static const struct kube_list_opts none = {0};
    if (!lo)
        lo = &none;
    struct cx_buf p;
    cx_buf_init(&p, KUBE_URL_MAX);
    struct kube_call *call = NULL;
    int first = 1;
    int rc = kube_path(&p, res, ns, NULL, NULL);
    rc |= kube_query_add(&p, &first, "labelSelector", lo->label_selector);
    rc |= kube_query_add(&p, &first, "fieldSelector", lo->field_selector);
    if (lo->limit > 0) {
        char lim[32];
        snprintf(lim, sizeof(lim), "%ld", lo->limit);
        rc |= kube_query_add(&p, &first, "limit", lim);
    }
    rc |= kube_query_add(&p, &first, "continue", lo->continue_token);
    /* RV together with continue is a 400: the token pins the RV. */
    if (!lo->continue_token || !*lo->continue_token) {
        rc |= kube_query_add(&p, &first, "resourceVersion", lo->resource_version);
        if (lo->resource_version && *lo->resource_version)
            rc |= kube_query_add(&p, &first, "resourceVersionMatch", lo->resource_version_match);
    }
    if (rc == 0)
        call = simple(c, "GET", &p, NULL, 0, NULL, KUBE_VERB_READ, 0, opts, cb, user_data);
    cx_buf_free(&p);
    return call;
}

static char *print_obj(const cJSON *obj)
{
    return obj ? cJSON_PrintUnformatted(obj) : NULL;
}

struct kube_call *kube_create(struct kube_client *c, const struct kube_resource *res,
                              const char *ns, const cJSON *obj, const struct kube_req_opts *opts,
                              kube_result_fn cb, void *user_data)
{
    if (needs_ns(res, ns))
        return NULL;
    char *body = print_obj(obj);
    if (!body)
        return NULL;
    struct cx_buf p;
    cx_buf_init(&p, KUBE_URL_MAX);
    struct kube_call *call = NULL;
    if (kube_path(&p, res, ns, NULL, NULL) == 0)
        call = simple(c, "POST", &p, body, strlen(body), "application/json", KUBE_VERB_WRITE, 0,
                      opts, cb, user_data);
    /* The path of a create names no object; its log lines should. */
    const char *name = cx_json_path_str(obj, "metadata", "name", NULL);
    if (call && name)
        snprintf(call->h.info.name, sizeof(call->h.info.name), "%s", name);
    cx_buf_free(&p);
    free(body);
    return call;
}

struct kube_call *kube_update(struct kube_client *c, const struct kube_resource *res,
                              const char *ns, const cJSON *obj, int status,
                              const struct kube_req_opts *opts, kube_result_fn cb, void *user_data)
{
    const char *name = cx_json_path_str(obj, "metadata", "name", NULL);
    if (!name || !*name || needs_ns(res, ns))
        return NULL;
    const char *rv = cx_json_path_str(obj, "metadata", "resourceVersion", NULL);
    char *body = print_obj(obj);
    if (!body)
        return NULL;
    struct cx_buf p;
    cx_buf_init(&p, KUBE_URL_MAX);
    struct kube_call *call = NULL;
    if (kube_path(&p, res, ns, name, status ? "status" : NULL) == 0)
        call = simple(c, "PUT", &p, body, strlen(body), "application/json", KUBE_VERB_WRITE,
                      rv && *rv, opts, cb, user_data);
    cx_buf_free(&p);
    free(body);
    return call;
}

/* True if a patch pins the resourceVersion, so that repeating it after an
 * unknown outcome cannot apply it twice. */
static int patch_pins_rv(enum kube_patch_type type, const char *patch)
{
    cJSON *p = cx_json_parse(patch, strlen(patch));
    int pinned = 0;
    if (type == KUBE_PATCH_JSON && cJSON_IsArray(p)) {
        const cJSON *op;
        cJSON_ArrayForEach(op, p)
        {
            const char *o = cx_json_str(op, "op");
            const char *path = cx_json_str(op, "path");
            if (o && path && strcmp(o, "test") == 0 &&
                strcmp(path, "/metadata/resourceVersion") == 0)
                pinned = 1;
        }
    } else if (cJSON_IsObject(p)) {
        const char *rv = cx_json_path_str(p, "metadata", "resourceVersion", NULL);
        pinned = rv && *rv;
    }
    cJSON_Delete(p);
    return pinned;
}

struct kube_call *kube_patch(struct kube_client *c, const struct kube_resource *res, const char *ns,
                             const char *name, enum kube_patch_type type, const char *patch,
                             int status, const struct kube_req_opts *opts, kube_result_fn cb,
                             void *user_data)
{
    static const char *const ctypes[] = {"application/merge-patch+json",
                                         "application/json-patch+json",
                                         "application/strategic-merge-patch+json"};
    if (!name || !*name || !patch || needs_ns(res, ns) || (unsigned)type > KUBE_PATCH_STRATEGIC)
        return NULL;
    struct cx_buf p;
    cx_buf_init(&p, KUBE_URL_MAX);
    struct kube_call *call = NULL;
    if (kube_path(&p, res, ns, name, status ? "status" : NULL) == 0)
        call = simple(c, "PATCH", &p, patch, strlen(patch), ctypes[type], KUBE_VERB_WRITE,
                      patch_pins_rv(type, patch), opts, cb, user_data);
    cx_buf_free(&p);
    return call;
}

struct kube_call *kube_delete(struct kube_client *c, const struct kube_resource *res,
                              const char *ns, const char *name, const char *uid, const char *rv,
                              const struct kube_req_opts *opts, kube_result_fn cb, void *user_data)
{
    if (!name || !*name || needs_ns(res, ns))
        return NULL;
    struct cx_buf body;
    cx_buf_init(&body, 4096);
    int rc = cx_buf_puts(&body, "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\"");
    int pre = (uid && *uid) || (rv && *rv);
    if (pre) {
        rc |= cx_buf_puts(&body, ",\"preconditions\":{");
        if (uid && *uid) {
            rc |= cx_buf_puts(&body, "\"uid\":");
            rc |= cx_json_escape(&body, uid);
        }
        if (rv && *rv) {
            rc |= cx_buf_puts(&body,
                              (uid && *uid) ? ",\"resourceVersion\":" : "\"resourceVersion\":");
            rc |= cx_json_escape(&body, rv);
        }
        rc |= cx_buf_puts(&body, "}");
    }
    rc |= cx_buf_puts(&body, "}");
    struct cx_buf p;
    cx_buf_init(&p, KUBE_URL_MAX);
    struct kube_call *call = NULL;
    if (rc == 0 && kube_path(&p, res, ns, name, NULL) == 0)
        call = simple(c, "DELETE", &p, body.data, body.len, "application/json", KUBE_VERB_WRITE,
                      pre, opts, cb, user_data);
    cx_buf_free(&p);
    cx_buf_free(&body);
    return call;
}
