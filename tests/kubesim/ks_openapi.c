/*
 * ks_openapi: /openapi/v3, the index and one document per group-version.
 *
 * Every document carries each resource's PATCH operation with its
 * group-version-kind and the fieldValidation parameter: that tells kubectl
 * that the server validates fields itself (kubectl apply and create refuse
 * to run without OpenAPI). Documents of custom resources also carry
 * components.schemas as kube-apiserver publishes them
 * (apiextensions-apiserver/pkg/controller/openapi/builder): the CRD
 * version's openAPIV3Schema named "<reversed group>.<version>.<Kind>" with
 * x-kubernetes-group-version-kind, apiVersion and kind described, metadata
 * a reference to ObjectMeta, and the list kind; that is what kubectl
 * explain reads. Built-in kinds have no schemas. Event loop only.
 */
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cx_buf.h"
#include "cx_hash.h"
#include "cx_json.h"
#include "ks.h"
#include "ks_http.h"
#include "ks_profile.h"

#define DOC_MAX ((size_t)64 << 20)
#define META    "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1."

static const char desc_api_version[] =
    "APIVersion defines the versioned schema of this representation of an object. Servers "
    "should convert recognized schemas to the latest internal value, and may reject "
    "unrecognized values. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#resources";
static const char desc_kind[] =
    "Kind is a string value representing the REST resource this object represents. Servers may "
    "infer this from the endpoint the client submits requests to. Cannot be updated. In "
    "CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#types-kinds";
static const char desc_metadata[] =
    "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#metadata";
static const char desc_list_metadata[] =
    "Standard list metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#types-kinds";

/* The meta.k8s.io/v1 schemas the custom resources refer to, reduced to the
 * fields clients read. */
static const char meta_schemas[] =
    "\"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta\":{\"description\":\"ObjectMeta is "
    "metadata that all persisted resources must have, which includes all objects users must "
    "create.\",\"type\":\"object\",\"properties\":{"
    "\"annotations\":{\"description\":\"Annotations is an unstructured key value map stored "
    "with a resource that may be set by external tools to store and retrieve arbitrary "
    "metadata. They are not queryable and should be preserved when modifying objects.\","
    "\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\",\"default\":\"\"}},"
    "\"creationTimestamp\":{\"description\":\"CreationTimestamp is a timestamp representing the "
    "server time when this object was created.\",\"type\":\"string\",\"format\":\"date-time\"},"
    "\"deletionTimestamp\":{\"description\":\"DeletionTimestamp is RFC 3339 date and time at "
    "which this resource will be deleted.\",\"type\":\"string\",\"format\":\"date-time\"},"
    "\"finalizers\":{\"description\":\"Must be empty before the object is deleted from the "
    "registry.\",\"type\":\"array\",\"items\":{\"type\":\"string\",\"default\":\"\"},"
    "\"x-kubernetes-list-type\":\"set\"},"
    "\"generateName\":{\"description\":\"GenerateName is an optional prefix, used by the server, "
    "to generate a unique name ONLY IF the Name field has not been provided.\",\"type\":"
    "\"string\"},"
    "\"generation\":{\"description\":\"A sequence number representing a specific generation of "
    "the desired state. Populated by the system. Read-only.\",\"type\":\"integer\",\"format\":"
    "\"int64\"},"
    "\"labels\":{\"description\":\"Map of string keys and values that can be used to organize "
    "and categorize (scope and select) objects.\",\"type\":\"object\",\"additionalProperties\":"
    "{\"type\":\"string\",\"default\":\"\"}},"
    "\"name\":{\"description\":\"Name must be unique within a namespace.\",\"type\":\"string\"},"
    "\"namespace\":{\"description\":\"Namespace defines the space within which each name must be "
    "unique.\",\"type\":\"string\"},"
    "\"ownerReferences\":{\"description\":\"List of objects depended by this object.\",\"type\":"
    "\"array\",\"items\":{\"type\":\"object\",\"required\":[\"apiVersion\",\"kind\",\"name\","
    "\"uid\"],\"properties\":{\"apiVersion\":{\"type\":\"string\"},\"blockOwnerDeletion\":"
    "{\"type\":\"boolean\"},\"controller\":{\"type\":\"boolean\"},\"kind\":{\"type\":"
    "\"string\"},\"name\":{\"type\":\"string\"},\"uid\":{\"type\":\"string\"}}}},"
    "\"resourceVersion\":{\"description\":\"An opaque value that represents the internal version "
    "of this object.\",\"type\":\"string\"},"
    "\"uid\":{\"description\":\"UID is the unique in time and space value for this object.\","
    "\"type\":\"string\"}}},"
    "\"io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta\":{\"description\":\"ListMeta describes "
    "metadata that synthetic resources must have, including lists and various status "
    "objects.\",\"type\":\"object\",\"properties\":{\"continue\":{\"type\":\"string\"},"
    "\"remainingItemCount\":{\"type\":\"integer\",\"format\":\"int64\"},\"resourceVersion\":"
    "{\"type\":\"string\"}}}";

/* "coxswain.dev/v1alpha1/Kind" -> "dev.coxswain.v1alpha1.Kind"
 * (util.ToRESTFriendlyName). */
static void schema_name(const struct ks_rtype *rt, const char *kind, char *out, size_t n)
{
    const char *parts[16];
    size_t lens[16], np = 0;
    for (const char *p = rt->group; *p && np < 16;) {
        size_t l = strcspn(p, ".");
        parts[np] = p;
        lens[np++] = l;
        p += l;
        if (*p == '.')
            p++;
    }
    size_t k = 0;
    out[0] = 0;
    for (size_t i = np; i > 0 && k < n; i--) {
        int w = snprintf(out + k, n - k, "%s%.*s", k ? "." : "", (int)lens[i - 1], parts[i - 1]);
        if (w < 0)
            return;
        k += (size_t)w;
    }
    if (k < n)
        snprintf(out + k, n - k, "%s%s.%s", k ? "." : "", rt->version, kind);
}

static const cJSON *crd_schema(struct ks_server *s, const struct ks_rtype *rt)
{
    struct ks_rtype *crdrt =
        ks_rtype_find(s, "apiextensions.k8s.io", "v1", "customresourcedefinitions");
    struct ks_obj *o = crdrt && rt->crd_name ? ks_store_get(crdrt, rt->crd_name) : NULL;
    if (!o)
        return NULL;
    const cJSON *v;
    cJSON_ArrayForEach(v, cx_json_path(o->cur->obj, "spec", "versions", NULL))
    {
        const char *n = cx_json_str(v, "name");
        if (n && strcmp(n, rt->version) == 0)
            return cx_json_path(v, "schema", "openAPIV3Schema", NULL);
    }
    return NULL;
}

static cJSON *gvk(const struct ks_rtype *rt, const char *kind)
{
    cJSON *a = cJSON_CreateArray();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "group", rt->group);
    cJSON_AddStringToObject(o, "kind", kind);
    cJSON_AddStringToObject(o, "version", rt->version);
    cJSON_AddItemToArray(a, o);
    return a;
}

static cJSON *described(const char *type, const char *desc)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "description", desc);
    if (type)
        cJSON_AddStringToObject(o, "type", type);
    return o;
}

static cJSON *meta_ref(const char *which, const char *desc)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *all = cJSON_AddArrayToObject(o, "allOf");
    cJSON *ref = cJSON_CreateObject();
    char r[200];
    snprintf(r, sizeof(r), META "%s", which);
    cJSON_AddStringToObject(ref, "$ref", r);
    cJSON_AddItemToArray(all, ref);
    cJSON_AddItemToObject(o, "default", cJSON_CreateObject());
    cJSON_AddStringToObject(o, "description", desc);
    return o;
}

static void set(cJSON *o, const char *k, cJSON *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(o, k);
    cJSON_AddItemToObject(o, k, v);
}

/* Adds the schemas of |rt| (a custom resource with a schema) to |schemas|. */
static void add_cr_schemas(struct ks_server *s, const struct ks_rtype *rt, cJSON *schemas)
{
    const cJSON *src = crd_schema(s, rt);
    if (!src)
        return;
    cJSON *sch = cJSON_Duplicate(src, 1);
    if (!sch)
        return;
    cJSON *props = cJSON_GetObjectItemCaseSensitive(sch, "properties");
    if (!cJSON_IsObject(props)) {
        props = cJSON_CreateObject();
        set(sch, "properties", props);
    }
    set(props, "apiVersion", described("string", desc_api_version));
    set(props, "kind", described("string", desc_kind));
    set(props, "metadata", meta_ref("ObjectMeta", desc_metadata));
    set(sch, "x-kubernetes-group-version-kind", gvk(rt, rt->kind));
    char name[512], list[512];
    schema_name(rt, rt->kind, name, sizeof(name));
    schema_name(rt, rt->list_kind, list, sizeof(list));
    cJSON_AddItemToObject(schemas, name, sch);

    cJSON *l = cJSON_CreateObject();
    char d[600];
    snprintf(d, sizeof(d), "%s is a list of %s", rt->list_kind, rt->kind);
    cJSON_AddStringToObject(l, "description", d);
    cJSON *lp = cJSON_AddObjectToObject(l, "properties");
    cJSON_AddItemToObject(lp, "apiVersion", described("string", desc_api_version));
    snprintf(d, sizeof(d),
             "List of %s. More info: "
             "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md",
             rt->plural);
    cJSON *items = described("array", d);
    cJSON *ir = cJSON_AddObjectToObject(items, "items");
    char ref[600];
    snprintf(ref, sizeof(ref), "#/components/schemas/%s", name);
    cJSON_AddStringToObject(ir, "$ref", ref);
    cJSON_AddItemToObject(lp, "items", items);
    cJSON_AddItemToObject(lp, "kind", described("string", desc_kind));
    cJSON_AddItemToObject(lp, "metadata", meta_ref("ListMeta", desc_list_metadata));
    cJSON *req = cJSON_AddArrayToObject(l, "required");
    cJSON_AddItemToArray(req, cJSON_CreateString("items"));
    cJSON_AddStringToObject(l, "type", "object");
    cJSON_AddItemToObject(l, "x-kubernetes-group-version-kind", gvk(rt, rt->list_kind));
    cJSON_AddItemToObject(schemas, list, l);
}

/* The document of "api/v1" or "apis/<group>/<version>" into |b|. Returns
 * 1 if something is served there, 0 if not, -1 on memory. */
static int gv_document(struct ks_server *s, const char *gvpath, struct cx_buf *b)
{
    bool core = strncmp(gvpath, "api/", 4) == 0;
    size_t skip = core ? 4 : strncmp(gvpath, "apis/", 5) == 0 ? 5 : strlen(gvpath);
    const char *gv = &gvpath[skip];
    bool found = false;
    cJSON *schemas = cJSON_CreateObject();
    if (!schemas)
        return -1;
    const struct ks_profile *pf = ks_profile_find(s->cfg.emulate_minor);
    int rc = cx_buf_printf(b,
                           "{\"openapi\":\"3.0.0\",\"info\":{\"title\":\"Kubernetes\","
                           "\"version\":\"%s\"},\"paths\":{",
                           pf->git_version);
    for (struct ks_rtype *rt = s->rtypes; rt; rt = rt->next) {
        if (!rt->served || strcmp(rt->api_version, gv) != 0 || (core != (*rt->group == 0)))
            continue;
        rc |= cx_buf_printf(
            b,
            "%s\"/%s/%s%s/%s/{name}\":{\"patch\":{\"x-kubernetes-group-version-kind\":"
            "{\"group\":\"%s\",\"version\":\"%s\",\"kind\":\"%s\"},"
            "\"parameters\":[{\"name\":\"fieldValidation\",\"in\":\"query\","
            "\"schema\":{\"type\":\"string\",\"uniqueItems\":true}}],"
            "\"responses\":{\"200\":{\"description\":\"OK\"}}}}",
            found ? "," : "", core ? "api" : "apis", gv,
            rt->namespaced ? "/namespaces/{namespace}" : "", rt->plural, rt->group, rt->version,
            rt->kind);
        found = true;
        if (rt->id == KS_K_CUSTOM)
            add_cr_schemas(s, rt, schemas);
    }
    rc |= cx_buf_puts(b, "},\"components\":{\"schemas\":{");
    bool any = false;
    for (const cJSON *c = schemas->child; c; c = c->next) {
        rc |= cx_buf_puts(b, any ? "," : "");
        rc |= cx_json_escape(b, c->string);
        rc |= cx_buf_puts(b, ":");
        rc |= cx_json_canonical(c, b);
        any = true;
    }
    if (any)
        rc |= cx_buf_printf(b, ",%s", meta_schemas);
    rc |= cx_buf_puts(b, "}}}");
    cJSON_Delete(schemas);
    if (rc)
        return -1;
    return found ? 1 : 0;
}

/* The document's hash, for the index's serverRelativeURL (clients cache by
 * it, so it changes when a CRD's schema does). */
static int doc_hash(struct ks_server *s, const char *gvpath, char out[33])
{
    struct cx_buf d;
    cx_buf_init(&d, DOC_MAX);
    int rc = gv_document(s, gvpath, &d);
    if (rc >= 0)
        cx_sha256_hex(d.data ? d.data : "", d.len, out, 32);
    cx_buf_free(&d);
    return rc < 0 ? -1 : 0;
}

void ks_openapi_v2(struct ks_req *r)
{
    /* The gnostic openapi_v2.Document protobuf kubectl 1.28 asks for
     * (Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf)
     * before validating client-side: just swagger = "2.0" (field 1). With no
     * definitions kubectl validates nothing itself and leaves it to the
     * server; with no paths it does not send fieldValidation. */
    static const char doc[] = {0x0a, 0x03, '2', '.', '0'};
    struct evbuffer *b = evbuffer_new();
    if (!b || evbuffer_add(b, doc, sizeof(doc)) != 0) {
        if (b)
            evbuffer_free(b);
        ks_err_internal(r, "out of memory");
        return;
    }
    ks_reply_evbuf(r, 200, b, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf");
    evbuffer_free(b);
}

void ks_openapi_v3(struct ks_req *r, const char *gvpath)
{
    struct ks_server *s = r->s;
    struct cx_buf b;
    cx_buf_init(&b, DOC_MAX);
    int rc = 0;
    if (!*gvpath) {
        char h[33];
        rc |= doc_hash(s, "api/v1", h);
        rc |= cx_buf_printf(
            &b, "{\"paths\":{\"api/v1\":{\"serverRelativeURL\":\"/openapi/v3/api/v1?hash=%s\"}", h);
        const char *seen[64];
        int ns = 0;
        for (struct ks_rtype *rt = s->rtypes; rt && rc == 0; rt = rt->next) {
            if (!rt->served || !*rt->group)
                continue;
            bool dup = false;
            for (int i = 0; i < ns; i++)
                if (strcmp(seen[i], rt->api_version) == 0)
                    dup = true;
            if (dup || ns == 64)
                continue;
            seen[ns++] = rt->api_version;
            char path[300];
            snprintf(path, sizeof(path), "apis/%s", rt->api_version);
            rc |= doc_hash(s, path, h);
            rc |= cx_buf_printf(
                &b, ",\"apis/%s\":{\"serverRelativeURL\":\"/openapi/v3/apis/%s?hash=%s\"}",
                rt->api_version, rt->api_version, h);
        }
        rc |= cx_buf_puts(&b, "}}");
    } else {
        int found = gv_document(s, gvpath, &b);
        if (found == 0) {
            cx_buf_free(&b);
            ks_err_generic_not_found(r);
            return;
        }
        rc |= found < 0;
    }
    if (rc == 0)
        ks_reply_json(r, 200, b.data, b.len);
    else
        ks_err_internal(r, "out of memory");
    cx_buf_free(&b);
}
