/*
 * ks_endpoints: core/v1 Endpoints of Services, as the endpoints controller
 * keeps them (pkg/controller/endpoint). kubesim runs no pods, so the
 * EndpointSlices labelled kubernetes.io/service-name stand in for the
 * pods: every Service with a selector has an Endpoints object of the same
 * name whose subsets are its slices' endpoints (ready ones in addresses,
 * the others in notReadyAddresses, grouped by port set, addresses sorted),
 * kept up to date in the commit that changed a Service or a slice, and
 * deleted with the Service. Endpoints of Services without a selector
 * belong to their clients, as on a real cluster. Event loop only.
 */
#include "ks_endpoints.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cx_json.h"
#include "cx_time.h"
#include "ks_api.h"

static bool has_selector(const cJSON *svc)
{
    const cJSON *sel = cx_json_path(svc, "spec", "selector", NULL);
    return cJSON_IsObject(sel) && sel->child;
}

static int addr_cmp(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    const char *p = cx_json_str(x, "ip"), *q = cx_json_str(y, "ip");
    return strcmp(p ? p : "", q ? q : "");
}

/* Sorts the array |key| of |subset| by IP (RepackSubsets). */
static void sort_addresses(cJSON *subset, const char *key)
{
    cJSON *arr = cJSON_GetObjectItemCaseSensitive(subset, key);
    int n = cJSON_GetArraySize(arr);
    if (n < 2)
        return;
    cJSON **v = calloc((size_t)n, sizeof(*v));
    if (!v)
        return;
    for (int i = n - 1; i >= 0; i--)
        v[i] = cJSON_DetachItemFromArray(arr, i);
    qsort(v, (size_t)n, sizeof(*v), addr_cmp);
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, v[i]);
    free(v);
}

/* The subset of |subsets| whose ports equal |ports|, created if needed. */
static cJSON *subset_for(cJSON *subsets, const cJSON *ports)
{
    cJSON *ss;
    cJSON_ArrayForEach(ss, subsets)
    {
        if (cJSON_Compare(cJSON_GetObjectItemCaseSensitive(ss, "ports"), ports, 1))
            return ss;
    }
    ss = cJSON_CreateObject();
    if (!ss)
        return NULL;
    cJSON_AddItemToObject(ss, "ports", cJSON_Duplicate(ports, 1));
    cJSON_AddItemToArray(subsets, ss);
    return ss;
}

/* EndpointSlice ports [{name,port,protocol,appProtocol}] as EndpointPorts. */
static cJSON *slice_ports(const cJSON *slice)
{
    cJSON *out = cJSON_CreateArray();
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(slice, "ports"))
    {
        cJSON *q = cJSON_CreateObject();
        const char *name = cx_json_str(p, "name");
        const cJSON *port = cJSON_GetObjectItemCaseSensitive(p, "port");
        const char *proto = cx_json_str(p, "protocol");
        const char *app = cx_json_str(p, "appProtocol");
        if (name && *name)
            cJSON_AddStringToObject(q, "name", name);
        if (cJSON_IsNumber(port))
            cJSON_AddNumberToObject(q, "port", port->valuedouble);
        cJSON_AddStringToObject(q, "protocol", proto ? proto : "TCP");
        if (app)
            cJSON_AddStringToObject(q, "appProtocol", app);
        cJSON_AddItemToArray(out, q);
    }
    return out;
}

/* The subsets of Service |name| in |ns| from its slices (NULL: none). */
static cJSON *subsets_of(struct ks_server *s, const char *ns, const char *name)
{
    struct ks_rtype *srt = ks_rtype_find(s, "discovery.k8s.io", "v1", "endpointslices");
    if (!srt)
        return NULL;
    cJSON *subsets = cJSON_CreateArray();
    char prefix[300];
    snprintf(prefix, sizeof(prefix), "%s/", ns);
    size_t plen = strlen(prefix);
    for (struct ks_obj *o = ks_index_seek(&srt->idx, prefix);
         subsets && o && strncmp(o->key, prefix, plen) == 0; o = ks_index_next(o)) {
        const cJSON *sl = o->cur->obj;
        const char *svc =
            cx_json_path_str(sl, "metadata", "labels", "kubernetes.io/service-name", NULL);
        if (!svc || strcmp(svc, name) != 0)
            continue;
        cJSON *ports = slice_ports(sl);
        cJSON *ss = ports ? subset_for(subsets, ports) : NULL;
        cJSON_Delete(ports);
        if (!ss)
            continue;
        const cJSON *ep;
        cJSON_ArrayForEach(ep, cJSON_GetObjectItemCaseSensitive(sl, "endpoints"))
        {
            /* A nil ready condition counts as ready (EndpointConditions). */
            const cJSON *ready = cx_json_path(ep, "conditions", "ready", NULL);
            const char *key = cJSON_IsFalse(ready) ? "notReadyAddresses" : "addresses";
            cJSON *arr = cJSON_GetObjectItemCaseSensitive(ss, key);
            if (!arr)
                arr = cJSON_AddArrayToObject(ss, key);
            const cJSON *ip;
            cJSON_ArrayForEach(ip, cJSON_GetObjectItemCaseSensitive(ep, "addresses"))
            {
                if (!cJSON_IsString(ip))
                    continue;
                cJSON *a = cJSON_CreateObject();
                cJSON_AddStringToObject(a, "ip", ip->valuestring);
                const char *host = cx_json_str(ep, "hostname");
                const char *node = cx_json_str(ep, "nodeName");
                const cJSON *tr = cJSON_GetObjectItemCaseSensitive(ep, "targetRef");
                if (host)
                    cJSON_AddStringToObject(a, "hostname", host);
                if (node)
                    cJSON_AddStringToObject(a, "nodeName", node);
                if (tr)
                    cJSON_AddItemToObject(a, "targetRef", cJSON_Duplicate(tr, 1));
                cJSON_AddItemToArray(arr, a);
            }
        }
    }
    /* Subsets without any address are dropped. */
    for (int i = cJSON_GetArraySize(subsets) - 1; i >= 0; i--) {
        cJSON *ss = cJSON_GetArrayItem(subsets, i);
        if (!cJSON_GetObjectItemCaseSensitive(ss, "addresses") &&
            !cJSON_GetObjectItemCaseSensitive(ss, "notReadyAddresses")) {
            cJSON_DeleteItemFromArray(subsets, i);
            continue;
        }
        sort_addresses(ss, "addresses");
        sort_addresses(ss, "notReadyAddresses");
    }
    if (cJSON_GetArraySize(subsets) == 0) {
        cJSON_Delete(subsets);
        return NULL;
    }
    return subsets;
}

/* Brings Endpoints |ns|/|name| in line with its Service and slices. */
static void sync(struct ks_server *s, const char *ns, const char *name)
{
    struct ks_rtype *svcrt = ks_rtype_find(s, "", "v1", "services");
    struct ks_rtype *ert = ks_rtype_find(s, "", "v1", "endpoints");
    if (!svcrt || !ert)
        return;
    char *key = ks_key(ert, ns, name);
    if (!key)
        return;
    struct ks_obj *svc = ks_store_get(svcrt, key);
    struct ks_obj *cur = ks_store_get(ert, key);
    if (!svc || !has_selector(svc->cur->obj)) {
        free(key);
        return;
    }
    cJSON *ep = cur ? cJSON_Duplicate(cur->cur->obj, 1) : cJSON_CreateObject();
    if (!ep) {
        free(key);
        return;
    }
    if (!cur) {
        char uid[40], ts[CX_TIME_RFC3339_LEN];
        ks_new_uid(uid);
        cx_time_format_rfc3339(cx_wall_ns(), ts, sizeof(ts));
        cJSON_AddStringToObject(ep, "apiVersion", "v1");
        cJSON_AddStringToObject(ep, "kind", "Endpoints");
        cJSON *m = ks_meta(ep);
        cJSON_AddStringToObject(m, "name", name);
        cJSON_AddStringToObject(m, "namespace", ns);
        cJSON_AddStringToObject(m, "uid", uid);
        cJSON_AddStringToObject(m, "creationTimestamp", ts);
    }
    /* The Service's labels, as the controller copies them. */
    const cJSON *labels = cx_json_path(svc->cur->obj, "metadata", "labels", NULL);
    ks_set_item(ks_meta(ep), "labels", labels ? cJSON_Duplicate(labels, 1) : NULL);
    ks_set_item(ep, "subsets", subsets_of(s, ns, name));
    struct ks_blob *nb = ks_json_blob(ep);
    bool same = cur && nb && nb->len == cur->cur->json->len &&
                memcmp(nb->data, cur->cur->json->data, nb->len) == 0;
    ks_blob_unref(nb);
    if (same)
        cJSON_Delete(ep);
    else
        (void)ks_store_commit(s, ert, key, ep);
    free(key);
}

void ks_endpoints_changed(struct ks_server *s, struct ks_rtype *rt, const struct ks_event *e)
{
    const cJSON *obj = e->obj->obj;
    const char *ns = cx_json_path_str(obj, "metadata", "namespace", NULL);
    if (!ns)
        return;
    if (rt->id == KS_K_SERVICE) {
        const char *name = cx_json_path_str(obj, "metadata", "name", NULL);
        if (!name)
            return;
        if (e->type == KS_EV_DELETED) {
            /* The controller deletes the Endpoints of a deleted Service. */
            struct ks_rtype *ert = ks_rtype_find(s, "", "v1", "endpoints");
            char *key = ert ? ks_key(ert, ns, name) : NULL;
            if (key && has_selector(e->prev->obj) && ks_store_get(ert, key))
                (void)ks_store_commit(s, ert, key, NULL);
            free(key);
            return;
        }
        sync(s, ns, name);
        return;
    }
    if (rt->id == KS_K_ENDPOINTSLICE) {
        /* A slice that moved between Services changes both. */
        const char *svc =
            cx_json_path_str(obj, "metadata", "labels", "kubernetes.io/service-name", NULL);
        const char *old = e->prev ? cx_json_path_str(e->prev->obj, "metadata", "labels",
                                                     "kubernetes.io/service-name", NULL)
                                  : NULL;
        char *oldcopy = old ? strdup(old) : NULL;
        char *nscopy = strdup(ns);
        if (svc && nscopy)
            sync(s, nscopy, svc);
        if (oldcopy && nscopy && (!svc || strcmp(oldcopy, svc) != 0))
            sync(s, nscopy, oldcopy);
        free(oldcopy);
        free(nscopy);
    }
}

/* ---- printing ------------------------------------------------------------- */

int ks_endpoints_format(const cJSON *ep, char *out, size_t n)
{
    const cJSON *subsets = cJSON_GetObjectItemCaseSensitive(ep, "subsets");
    if (cJSON_GetArraySize(subsets) == 0)
        return snprintf(out, n, "<none>") < 0 ? -1 : 0;
    size_t k = 0;
    int listed = 0, count = 0;
    const int max = 3;
    out[0] = 0;
    const cJSON *ss;
    cJSON_ArrayForEach(ss, subsets)
    {
        const cJSON *port;
        cJSON_ArrayForEach(port, cJSON_GetObjectItemCaseSensitive(ss, "ports"))
        {
            const cJSON *pn = cJSON_GetObjectItemCaseSensitive(port, "port");
            const cJSON *a;
            cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(ss, "addresses"))
            {
                count++;
                if (listed == max)
                    continue;
                const char *ip = cx_json_str(a, "ip");
                bool v6 = ip && strchr(ip, ':');
                int w = snprintf(out + k, n > k ? n - k : 0, "%s%s%s%s:%d", listed ? "," : "",
                                 v6 ? "[" : "", ip ? ip : "", v6 ? "]" : "",
                                 cJSON_IsNumber(pn) ? (int)pn->valuedouble : 0);
                if (w > 0)
                    k += (size_t)w;
                listed++;
            }
        }
    }
    if (count > max && k < n)
        snprintf(out + k, n - k, " + %d more...", count - max);
    return 0;
}
