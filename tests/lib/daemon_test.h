/* Helpers for the daemon's unit tests that talk to a real kubesim (started
 * per test program): the coxswain.dev CRDs, objects created over HTTP, a
 * kube_client and informers on the test's event_base, and a loop runner.
 * Header-only (static functions) so each test program includes it. */
#ifndef DAEMON_TEST_H
#define DAEMON_TEST_H

#include "cx_json.h"
#include "cx_kubesim.h"
#include "cx_time.h"
#include "cx_yaml.h"
#include "cxt_loop.h"
#include "cxtest.h"
#include "store_kinds.h"
#include "kube_client.h"
#include "kube_informer.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((unused)) static const char *dt_top(void)
{
    const char *t = getenv("COXSWAIN_TOP");
    return t ? t : ".";
}

/* POSTs every CustomResourceDefinition of one YAML file. */
__attribute__((unused)) static int dt_apply_crd_file(struct cx_kubesim *ks, const char *path)
{
    size_t len = 0;
    char *text = cxt_read_file(path, &len);
    if (!text)
        return -1;
    char err[256];
    cJSON *docs = cx_yaml_parse(text, len, err, sizeof(err));
    free(text);
    if (!docs)
        return -1;
    int rc = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, docs)
    {
        const char *kind = cx_json_str(d, "kind");
        if (!kind || strcmp(kind, "CustomResourceDefinition") != 0)
            continue;
        char *body = cJSON_PrintUnformatted(d);
        long code = 0;
        char *resp = cx_kubesim_request(ks, "POST",
                                        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                        body, "application/json", &code);
        if (code != 201)
            rc = -1;
        free(resp);
        free(body);
    }
    cJSON_Delete(docs);
    return rc;
}

/* The coxswain.dev CRDs (every file of api/crds). */
__attribute__((unused)) static int dt_apply_crds(struct cx_kubesim *ks)
{
    static const char *const files[] = {"gateways", "virtualservices", "routetables", "upstreams",
                                        "proxysnapshots"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/api/crds/%s.yaml", dt_top(), files[i]);
        if (dt_apply_crd_file(ks, path) != 0)
            return -1;
    }
    return 0;
}

/* The path of |res| objects in |ns| (and |name|, |sub|). */
__attribute__((unused)) static void dt_path(char *out, size_t n, const struct kube_resource *res,
                                            const char *ns, const char *name, const char *sub)
{
    int w = res->group[0] ? snprintf(out, n, "/apis/%s/%s", res->group, res->version)
                          : snprintf(out, n, "/api/%s", res->version);
    if (ns)
        w += snprintf(out + w, n - (size_t)w, "/namespaces/%s", ns);
    w += snprintf(out + w, n - (size_t)w, "/%s", res->plural);
    if (name)
        w += snprintf(out + w, n - (size_t)w, "/%s", name);
    if (sub)
        snprintf(out + w, n - (size_t)w, "/%s", sub);
}

/* Creates an object from JSON text; returns the HTTP code. */
__attribute__((unused)) static long
dt_create(struct cx_kubesim *ks, const struct kube_resource *res, const char *ns, const char *json)
{
    char path[512];
    dt_path(path, sizeof(path), res, ns, NULL, NULL);
    long code = 0;
    free(cx_kubesim_request(ks, "POST", path, json, "application/json", &code));
    return code;
}

/* Merge-patches an object; returns the HTTP code. */
__attribute__((unused)) static long dt_patch(struct cx_kubesim *ks, const struct kube_resource *res,
                                             const char *ns, const char *name, const char *patch)
{
    char path[512];
    dt_path(path, sizeof(path), res, ns, name, NULL);
    long code = 0;
    free(cx_kubesim_request(ks, "PATCH", path, patch, "application/merge-patch+json", &code));
    return code;
}

/* GETs an object (caller frees), or NULL. */
__attribute__((unused)) static cJSON *dt_get(struct cx_kubesim *ks, const struct kube_resource *res,
                                             const char *ns, const char *name)
{
    char path[512];
    dt_path(path, sizeof(path), res, ns, name, NULL);
    long code = 0;
    char *body = cx_kubesim_request(ks, "GET", path, NULL, NULL, &code);
    cJSON *o = code == 200 && body ? cx_json_parse(body, strlen(body)) : NULL;
    free(body);
    return o;
}

/* Counts audit-log writes matching |verb|, |resource| and |subresource|
 * (NULL: any) since |since| (a seq). */
__attribute__((unused)) static int dt_audit_count(struct cx_kubesim *ks, const char *verb,
                                                  const char *resource, const char *subresource,
                                                  long since)
{
    char path[64];
    snprintf(path, sizeof(path), "/_sim/audit?since=%ld", since);
    long code = 0;
    char *body = cx_kubesim_request(ks, "GET", path, NULL, NULL, &code);
    int n = 0;
    char *save = NULL;
    for (char *line = body ? strtok_r(body, "\n", &save) : NULL; line;
         line = strtok_r(NULL, "\n", &save)) {
        cJSON *a = cx_json_parse(line, strlen(line));
        const char *v = cx_json_str(a, "verb"), *r = cx_json_str(a, "resource"),
                   *s = cx_json_str(a, "subresource");
        if ((!verb || (v && !strcmp(v, verb))) && (!resource || (r && !strcmp(r, resource))) &&
            (!subresource || (s && !strcmp(s, subresource))))
            n++;
        cJSON_Delete(a);
    }
    free(body);
    return n;
}

/* The last audit seq (to count from). */
__attribute__((unused)) static long dt_audit_seq(struct cx_kubesim *ks)
{
    long code = 0;
    char *body = cx_kubesim_request(ks, "GET", "/_sim/audit", NULL, NULL, &code);
    long seq = 0;
    char *p = body;
    while (p && (p = strstr(p, "\"seq\":")) != NULL) {
        seq = strtol(p + 6, NULL, 10);
        p += 6;
    }
    free(body);
    return seq;
}

__attribute__((unused)) static long dt_fault(struct cx_kubesim *ks, const char *rule)
{
    long code = 0;
    free(cx_kubesim_request(ks, "POST", "/_sim/faults", rule, "application/json", &code));
    return code;
}

__attribute__((unused)) static void dt_clear_faults(struct cx_kubesim *ks)
{
    long code = 0;
    free(cx_kubesim_request(ks, "DELETE", "/_sim/faults", NULL, NULL, &code));
}

/* A client for |ks| on |base|. */
__attribute__((unused)) static struct kube_client *
dt_client(struct event_base *base, struct cx_kubesim *ks, const char *identity)
{
    struct kube_config cfg;
    char err[256];
    if (kube_config_load_file(ks->kubeconfig, NULL, &cfg, err, sizeof(err)) != 0)
        return NULL;
    struct kube_client_opts o = {.identity = identity, .component = identity};
    struct kube_client *c = kube_client_new(base, &cfg, &o, err, sizeof(err));
    kube_config_free(&cfg);
    return c;
}

#endif
