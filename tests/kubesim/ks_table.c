/*
 * ks_table: Table responses (kubectl get) for custom resources and CRDs.
 */
#include "ks_table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cx_buf.h"
#include "cx_json.h"
#include "cx_time.h"
#include "ks_api.h"
#include "ks_endpoints.h"
#include "ks_jsonpath.h"

/* metav1.ObjectMeta{}.SwaggerDoc() of name and creationTimestamp (1.28-1.31). */
static const char desc_name[] =
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
static const char desc_created[] =
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

static const char desc_subsets[] =
    "The set of all endpoints is the union of all subsets. Addresses are placed into subsets "
    "according to the IPs they share. A single address with multiple ports, some of which are "
    "ready and some of which are not (because they come from different containers) will result "
    "in the address being displayed in different subsets for the different ports. No address "
    "will appear in both Addresses and NotReadyAddresses in the same subset. Sets of addresses "
    "and ports that comprise a service.";

bool ks_table_supported(const struct ks_rtype *rt)
{
    return rt->id == KS_K_CUSTOM || rt->id == KS_K_CRD || rt->id == KS_K_ENDPOINTS;
}

/* metatable.ConvertToHumanReadableDateType of an RFC 3339 string. */
static void age_of(const char *ts, char *out, size_t n)
{
    int64_t t;
    if (!ts || !*ts) {
        snprintf(out, n, "<unknown>");
        return;
    }
    if (cx_time_parse_rfc3339(ts, &t) != 0) {
        snprintf(out, n, "<invalid>");
        return;
    }
    ks_human_duration(cx_wall_ns() - t, out, n);
}

/* ---- columns and cells ---------------------------------------------------- */

static int put_column(struct cx_buf *b, bool first, const char *name, const char *type,
                      const char *format, const char *desc, long priority)
{
    int rc = cx_buf_puts(b, first ? "{\"name\":" : ",{\"name\":");
    rc |= cx_json_escape(b, name);
    rc |= cx_buf_puts(b, ",\"type\":");
    rc |= cx_json_escape(b, type);
    rc |= cx_buf_puts(b, ",\"format\":");
    rc |= cx_json_escape(b, format);
    rc |= cx_buf_puts(b, ",\"description\":");
    rc |= cx_json_escape(b, desc);
    rc |= cx_buf_printf(b, ",\"priority\":%ld}", priority);
    return rc;
}

static int put_columns(struct cx_buf *b, const struct ks_rtype *rt)
{
    int rc = cx_buf_puts(b, "[");
    if (rt->id == KS_K_CRD) {
        rc |= put_column(b, true, "Name", "string", "name", desc_name, 0);
        rc |= put_column(b, false, "Created At", "date", "", desc_created, 0);
        return rc | cx_buf_puts(b, "]");
    }
    if (rt->id == KS_K_ENDPOINTS) {
        /* pkg/printers/internalversion/printers.go: Name, Endpoints, Age. */
        rc |= put_column(b, true, "Name", "string", "name", desc_name, 0);
        rc |= put_column(b, false, "Endpoints", "string", "", desc_subsets, 0);
        rc |= put_column(b, false, "Age", "string", "", desc_created, 0);
        return rc | cx_buf_puts(b, "]");
    }
    rc |= put_column(b, true, "Name", "string", "name", desc_name, 0);
    if (cJSON_GetArraySize(rt->printer_columns) == 0) {
        rc |= put_column(b, false, "Age", "date", "", desc_created, 0);
        return rc | cx_buf_puts(b, "]");
    }
    const cJSON *c;
    cJSON_ArrayForEach(c, rt->printer_columns)
    {
        const char *jp = cx_json_str(c, "jsonPath");
        const char *d = cx_json_str(c, "description");
        char defdesc[600];
        if (!d || !*d) {
            snprintf(defdesc, sizeof(defdesc),
                     "Custom resource definition column (in JSONPath format): %s", jp ? jp : "");
            d = defdesc;
        }
        const cJSON *pr = cJSON_GetObjectItemCaseSensitive(c, "priority");
        const char *fmt = cx_json_str(c, "format");
        const char *name = cx_json_str(c, "name");
        const char *type = cx_json_str(c, "type");
        rc |= put_column(b, false, name ? name : "", type ? type : "", fmt ? fmt : "", d,
                         cJSON_IsNumber(pr) ? (long)pr->valuedouble : 0);
    }
    return rc | cx_buf_puts(b, "]");
}

/* A JSON number as Go's encoding/json writes an int64 or a float64. */
static int put_number(struct cx_buf *b, double d, bool integer)
{
    if (integer || (d == floor(d) && fabs(d) < 1e15))
        return cx_buf_printf(b, "%lld", (long long)d);
    return cx_buf_printf(b, "%.17g", d);
}

/* One cell of a printer column (tableconvertor's cellForJSONValue, and
 * PrintResults for string columns). */
static int put_cell(struct cx_buf *b, const char *type, const cJSON *v)
{
    if (!v || cJSON_IsNull(v))
        return cx_buf_puts(b, "null");
    if (strcmp(type, "string") == 0) {
        if (cJSON_IsString(v))
            return cx_json_escape(b, v->valuestring);
        /* jsonpath prints scalars with fmt and containers as JSON. */
        struct cx_buf t;
        cx_buf_init(&t, 1 << 20);
        int rc = 0;
        if (cJSON_IsBool(v))
            rc = cx_buf_puts(&t, cJSON_IsTrue(v) ? "true" : "false");
        else if (cJSON_IsNumber(v))
            rc = put_number(&t, v->valuedouble, false);
        else
            rc = cx_json_canonical(v, &t);
        rc |= cx_json_escape(b, rc == 0 && t.data ? t.data : "");
        cx_buf_free(&t);
        return rc;
    }
    if (strcmp(type, "integer") == 0)
        return cJSON_IsNumber(v) ? put_number(b, v->valuedouble, true) : cx_buf_puts(b, "null");
    if (strcmp(type, "number") == 0)
        return cJSON_IsNumber(v) ? put_number(b, v->valuedouble, false) : cx_buf_puts(b, "null");
    if (strcmp(type, "boolean") == 0)
        return cJSON_IsBool(v) ? cx_buf_puts(b, cJSON_IsTrue(v) ? "true" : "false")
                               : cx_buf_puts(b, "null");
    if (strcmp(type, "date") == 0) {
        if (!cJSON_IsString(v))
            return cx_buf_puts(b, "null");
        char age[32];
        age_of(v->valuestring, age, sizeof(age));
        return cx_json_escape(b, age);
    }
    return cx_buf_puts(b, "null");
}

static int put_cells(struct cx_buf *b, const struct ks_rtype *rt, const cJSON *obj)
{
    const char *name = cx_json_path_str(obj, "metadata", "name", NULL);
    const char *created = cx_json_path_str(obj, "metadata", "creationTimestamp", NULL);
    int rc = cx_buf_puts(b, "[");
    rc |= cx_json_escape(b, name ? name : "");
    if (rt->id == KS_K_ENDPOINTS) {
        char eps[512], age[32];
        if (ks_endpoints_format(obj, eps, sizeof(eps)) != 0)
            return -1;
        age_of(created, age, sizeof(age));
        rc |= cx_buf_puts(b, ",");
        rc |= cx_json_escape(b, eps);
        rc |= cx_buf_puts(b, ",");
        rc |= cx_json_escape(b, age);
        return rc | cx_buf_puts(b, "]");
    }
    if (rt->id == KS_K_CRD) {
        /* rest.defaultTableConvertor: RFC 3339 in UTC. */
        rc |= cx_buf_puts(b, ",");
        rc |= cx_json_escape(b, created ? created : "0001-01-01T00:00:00Z");
        return rc | cx_buf_puts(b, "]");
    }
    if (cJSON_GetArraySize(rt->printer_columns) == 0) {
        char age[32];
        age_of(created, age, sizeof(age));
        rc |= cx_buf_puts(b, ",");
        rc |= cx_json_escape(b, age);
        return rc | cx_buf_puts(b, "]");
    }
    const cJSON *c;
    cJSON_ArrayForEach(c, rt->printer_columns)
    {
        const char *type = cx_json_str(c, "type");
        rc |= cx_buf_puts(b, ",");
        rc |= put_cell(b, type ? type : "", ks_jsonpath_first(obj, cx_json_str(c, "jsonPath")));
    }
    return rc | cx_buf_puts(b, "]");
}

/* The row's object as includeObject asks (asTable in handlers/response.go). */
static int put_row_object(struct cx_buf *b, struct ks_req *r, const struct ks_table_row *row)
{
    if (strcmp(r->include_object, "None") == 0)
        return cx_buf_puts(b, "null");
    struct ks_blob *o = NULL;
    if (strcmp(r->include_object, "Object") == 0) {
        if (row->v) {
            o = row->v->json;
            ks_blob_ref(o);
        } else {
            o = ks_json_blob(row->obj);
        }
    } else if (row->v && strcmp(r->as_version, "v1") == 0) {
        o = ks_ver_json(row->v, KS_FORM_PARTIAL);
        if (o)
            ks_blob_ref(o);
    } else {
        o = ks_partial_blob(row->obj, r->as_version);
    }
    if (!o)
        return -1;
    int rc = cx_buf_append(b, o->data, o->len);
    ks_blob_unref(o);
    return rc;
}

/* The Table document; |headers| false writes "columnDefinitions":null
 * (TableOptions.NoHeaders). */
static int put_table(struct cx_buf *b, struct ks_req *r, const struct ks_listmeta *lm,
                     const char *obj_rv, const struct ks_table_row *rows, size_t n, bool list,
                     bool headers)
{
    const struct ks_rtype *rt = r->rt;
    int rc = cx_buf_printf(
        b, "{\"kind\":\"Table\",\"apiVersion\":\"meta.k8s.io/%s\",\"metadata\":{", r->as_version);
    const char *rv = lm ? lm->rv : obj_rv;
    if (rv && *rv)
        rc |= cx_buf_printf(b, "\"resourceVersion\":\"%s\"", rv);
    if (lm && lm->cont)
        rc |= cx_buf_printf(b, ",\"continue\":\"%s\"", lm->cont);
    if (lm && lm->remaining >= 0)
        rc |= cx_buf_printf(b, ",\"remainingItemCount\":%ld", lm->remaining);
    rc |= cx_buf_puts(b, "},\"columnDefinitions\":");
    if (headers)
        rc |= put_columns(b, rt);
    else
        rc |= cx_buf_puts(b, "null");
    /* The generic convertor appends to a nil slice; MetaToTableRow starts
     * from an empty one. */
    if (n == 0 && (rt->id == KS_K_CRD || !list))
        return rc | cx_buf_puts(b, ",\"rows\":null}");
    rc |= cx_buf_puts(b, ",\"rows\":[");
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc |= cx_buf_puts(b, i ? ",{\"cells\":" : "{\"cells\":");
        rc |= put_cells(b, rt, rows[i].obj);
        rc |= cx_buf_puts(b, ",\"object\":");
        rc |= put_row_object(b, r, &rows[i]);
        rc |= cx_buf_puts(b, "}");
    }
    return rc | cx_buf_puts(b, "]}");
}

void ks_table_reply(struct ks_req *r, int code, const struct ks_listmeta *lm,
                    const struct ks_table_row *rows, size_t n, bool list)
{
    struct cx_buf b;
    cx_buf_init(&b, (size_t)1 << 30);
    const char *orv =
        !list && n ? cx_json_path_str(rows[0].obj, "metadata", "resourceVersion", NULL) : NULL;
    if (put_table(&b, r, list ? lm : NULL, orv, rows, n, list, true) == 0)
        ks_reply_json(r, code, b.data, b.len);
    else
        ks_commit_failed(r);
    cx_buf_free(&b);
}

struct ks_blob *ks_table_event_object(struct ks_req *r, struct ks_ver *v)
{
    struct cx_buf b;
    cx_buf_init(&b, (size_t)64 << 20);
    struct ks_table_row row = {.v = v, .obj = v->obj};
    const char *orv = cx_json_path_str(v->obj, "metadata", "resourceVersion", NULL);
    struct ks_blob *out = NULL;
    if (put_table(&b, r, NULL, orv, &row, 1, false, !r->table_headers_sent) == 0) {
        r->table_headers_sent = true;
        out = ks_blob_from_buf(&b);
    }
    cx_buf_free(&b);
    return out;
}
