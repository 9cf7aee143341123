/*
 * ks_crd: CRDs, custom resources and their schemas; YAML to JSON.
 */
#include "ks_crd.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cx_json.h"
#include "cx_log.h"
#include "cx_time.h"
#include "ks_schema.h"
#include "ks_selector.h"

static struct ks_rtype *find_any(struct ks_server *s, const char *group, const char *version,
                                 const char *plural)
{
    for (struct ks_rtype *rt = s->rtypes; rt; rt = rt->next)
        if (strcmp(rt->group, group) == 0 && strcmp(rt->version, version) == 0 &&
            strcmp(rt->plural, plural) == 0)
            return rt;
    return NULL;
}

/* Stops serving |rt|: its objects are deleted (DELETED events), its
 * watches end. The rtype stays allocated (requests may point at it). */
static void unserve(struct ks_server *s, struct ks_rtype *rt)
{
    for (;;) {
        struct ks_obj *o = ks_index_seek(&rt->idx, "");
        if (!o)
            break;
        char *key = strdup(o->key);
        if (!key || !ks_store_commit(s, rt, key, NULL)) {
            free(key);
            break;
        }
        free(key);
    }
    ks_watch_end_all(s, NULL, rt->plural);
    rt->served = false;
}

static const cJSON *version_schema(const cJSON *crd, const char *version)
{
    const cJSON *v;
    cJSON_ArrayForEach(v, cx_json_path(crd, "spec", "versions", NULL))
    {
        const char *n = cx_json_str(v, "name");
        if (n && strcmp(n, version) == 0)
            return cx_json_path(v, "schema", "openAPIV3Schema", NULL);
    }
    return NULL;
}

static void fill_names(struct ks_rtype *rt, const cJSON *names)
{
    for (int i = 0; i < 4; i++) {
        free(rt->short_names[i]);
        rt->short_names[i] = NULL;
    }
    for (int i = 0; i < 2; i++) {
        free(rt->categories[i]);
        rt->categories[i] = NULL;
    }
    int i = 0;
    const cJSON *sn;
    cJSON_ArrayForEach(sn, cJSON_GetObjectItemCaseSensitive(names, "shortNames"))
    {
        if (i < 4 && cJSON_IsString(sn))
            rt->short_names[i++] = strdup(sn->valuestring);
    }
    i = 0;
    cJSON_ArrayForEach(sn, cJSON_GetObjectItemCaseSensitive(names, "categories"))
    {
        if (i < 2 && cJSON_IsString(sn))
            rt->categories[i++] = strdup(sn->valuestring);
    }
}

void ks_crd_changed(struct ks_server *s, const cJSON *crd, bool deleted)
{
    const char *group = cx_json_path_str(crd, "spec", "group", NULL);
    const cJSON *names = cx_json_path(crd, "spec", "names", NULL);
    const char *plural = cx_json_str(names, "plural");
    const char *kind = cx_json_str(names, "kind");
    const char *singular = cx_json_str(names, "singular");
    const char *scope = cx_json_path_str(crd, "spec", "scope", NULL);
    const char *crdname = cx_json_path_str(crd, "metadata", "name", NULL);
    if (!group || !plural || !kind || !crdname)
        return;
    char singular_buf[256];
    if (!singular || !*singular) {
        snprintf(singular_buf, sizeof(singular_buf), "%s", kind);
        for (char *p = singular_buf; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
        singular = singular_buf;
    }
    bool being_deleted = cx_json_path(crd, "metadata", "deletionTimestamp", NULL) != NULL;
    /* Stop serving versions no longer listed (or everything on delete). */
    for (struct ks_rtype *rt = s->rtypes; rt; rt = rt->next) {
        if (rt->id != KS_K_CUSTOM || !rt->served || !rt->crd_name ||
            strcmp(rt->crd_name, crdname) != 0)
            continue;
        bool keep = !deleted && !being_deleted;
        if (keep) {
            keep = false;
            const cJSON *v;
            cJSON_ArrayForEach(v, cx_json_path(crd, "spec", "versions", NULL))
            {
                const char *vn = cx_json_str(v, "name");
                if (vn && strcmp(vn, rt->version) == 0 &&
                    !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(v, "served")))
                    keep = true;
            }
            keep = keep && strcmp(rt->plural, plural) == 0 && strcmp(rt->group, group) == 0;
        }
        if (!keep)
            unserve(s, rt);
    }
    if (deleted || being_deleted)
        return;
    const char *storage = NULL;
    const cJSON *v;
    cJSON_ArrayForEach(v, cx_json_path(crd, "spec", "versions", NULL))
    {
        const char *vn = cx_json_str(v, "name");
        if (!vn)
            continue;
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "storage")))
            storage = vn;
        if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(v, "served")))
            continue;
        struct ks_rtype *rt = find_any(s, group, vn, plural);
        if (!rt) {
            rt = ks_rtype_add(s, group, vn, plural, singular, kind,
                              !scope || strcmp(scope, "Cluster") != 0);
            if (!rt)
                continue;
        } else {
            free(rt->kind);
            rt->kind = strdup(kind);
            free(rt->list_kind);
            size_t n = strlen(kind) + 5;
            rt->list_kind = malloc(n);
            if (rt->list_kind)
                snprintf(rt->list_kind, n, "%sList", kind);
            rt->namespaced = !scope || strcmp(scope, "Cluster") != 0;
        }
        rt->id = KS_K_CUSTOM;
        rt->served = true;
        rt->sets_generation = true;
        rt->unconditional_ok = false;
        rt->strategic_ok = false;
        rt->has_status = cx_json_path(v, "subresources", "status", NULL) != NULL;
        free(rt->crd_name);
        rt->crd_name = strdup(crdname);
        cJSON_Delete(rt->printer_columns);
        const cJSON *pc = cJSON_GetObjectItemCaseSensitive(v, "additionalPrinterColumns");
        rt->printer_columns = pc ? cJSON_Duplicate(pc, 1) : NULL;
        fill_names(rt, names);
    }
    /* Status as the apiextensions controllers write it, in a second write. */
    struct ks_rtype *crdrt =
        ks_rtype_find(s, "apiextensions.k8s.io", "v1", "customresourcedefinitions");
    struct ks_obj *o = crdrt ? ks_store_get(crdrt, crdname) : NULL;
    if (!o)
        return;
    cJSON *n = cJSON_Duplicate(o->cur->obj, 1);
    if (!n)
        return;
    cJSON *oldst = cJSON_GetObjectItemCaseSensitive(o->cur->obj, "status");
    char ts[CX_TIME_RFC3339_LEN];
    cx_time_format_rfc3339(cx_wall_ns(), ts, sizeof(ts));
    cJSON *st = cJSON_CreateObject();
    cJSON *an = names ? cJSON_Duplicate(names, 1) : cJSON_CreateObject();
    if (an && !cJSON_GetObjectItemCaseSensitive(an, "singular"))
        cJSON_AddStringToObject(an, "singular", singular);
    if (an && !cJSON_GetObjectItemCaseSensitive(an, "listKind")) {
        char lk[300];
        snprintf(lk, sizeof(lk), "%sList", kind);
        cJSON_AddStringToObject(an, "listKind", lk);
    }
    cJSON_AddItemToObject(st, "acceptedNames", an);
    cJSON *conds = cJSON_AddArrayToObject(st, "conditions");
    const char *types[] = {"NamesAccepted", "Established"};
    const char *reasons[] = {"NoConflicts", "InitialNamesAccepted"};
    const char *msgs[] = {"no conflicts found", "the initial names have been accepted"};
    for (int i = 0; i < 2; i++) {
        /* Keep the transition time of a condition that did not change. */
        const char *prev_ts = NULL;
        const cJSON *pc;
        cJSON_ArrayForEach(pc, cJSON_GetObjectItemCaseSensitive(oldst, "conditions"))
        {
            const char *t = cx_json_str(pc, "type");
            if (t && strcmp(t, types[i]) == 0)
                prev_ts = cx_json_str(pc, "lastTransitionTime");
        }
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "lastTransitionTime", prev_ts ? prev_ts : ts);
        cJSON_AddStringToObject(c, "message", msgs[i]);
        cJSON_AddStringToObject(c, "reason", reasons[i]);
        cJSON_AddStringToObject(c, "status", "True");
        cJSON_AddStringToObject(c, "type", types[i]);
        cJSON_AddItemToArray(conds, c);
    }
    cJSON *sv = cJSON_AddArrayToObject(st, "storedVersions");
    const cJSON *osv;
    cJSON_ArrayForEach(osv, cJSON_GetObjectItemCaseSensitive(oldst, "storedVersions"))
    {
        if (cJSON_IsString(osv) && (!storage || strcmp(osv->valuestring, storage) != 0))
            cJSON_AddItemToArray(sv, cJSON_CreateString(osv->valuestring));
    }
    if (storage)
        cJSON_AddItemToArray(sv, cJSON_CreateString(storage));
    cJSON_DeleteItemFromObjectCaseSensitive(n, "status");
    cJSON_AddItemToObject(n, "status", st);
    struct ks_blob *nb = ks_json_blob(n);
    bool same =
        nb && nb->len == o->cur->json->len && memcmp(nb->data, o->cur->json->data, nb->len) == 0;
    ks_blob_unref(nb);
    if (same) {
        cJSON_Delete(n);
        return;
    }
    char *key = strdup(o->key);
    if (key)
        (void)ks_store_commit(s, crdrt, key, n);
    else
        cJSON_Delete(n);
    free(key);
}

int ks_crd_validate(struct ks_server *s, cJSON *obj, const cJSON *old, struct ks_ferrs *fe,
                    char *err, size_t errlen)
{
    (void)s;
    (void)err;
    (void)errlen;
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
    const char *group = cx_json_str(spec, "group");
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(spec, "names");
    const char *plural = cx_json_str(names, "plural");
    const char *kind = cx_json_str(names, "kind");
    const char *scope = cx_json_str(spec, "scope");
    const char *name = cx_json_path_str(obj, "metadata", "name", NULL);
    char e[4096];
    if (!group || !*group)
        ks_ferr_add(fe, "FieldValueRequired", "spec.group", "Required value");
    else if (ks_valid_dns1123_subdomain(group, e, sizeof(e)) != 0)
        ks_ferr_invalid_str(fe, "spec.group", group, e);
    else if (!strchr(group, '.'))
        ks_ferr_invalid_str(fe, "spec.group", group, "should be a domain with at least one dot");
    if (!plural || !*plural)
        ks_ferr_add(fe, "FieldValueRequired", "spec.names.plural", "Required value");
    if (!kind || !*kind)
        ks_ferr_add(fe, "FieldValueRequired", "spec.names.kind", "Required value");
    if (!scope || (strcmp(scope, "Namespaced") != 0 && strcmp(scope, "Cluster") != 0))
        ks_ferr_add(fe, "FieldValueNotSupported", "spec.scope",
                    "Unsupported value: \"%s\": supported values: \"Cluster\", \"Namespaced\"",
                    scope ? scope : "");
    if (group && plural && name) {
        char want[600];
        snprintf(want, sizeof(want), "%s.%s", plural, group);
        if (strcmp(want, name) != 0)
            ks_ferr_invalid_str(fe, "metadata.name", name,
                                "must be spec.names.plural+\".\"+spec.group");
    }
    int nstorage = 0, nver = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(spec, "versions"))
    {
        char f[128];
        snprintf(f, sizeof(f), "spec.versions[%d].schema.openAPIV3Schema", nver);
        const cJSON *sch = cx_json_path(v, "schema", "openAPIV3Schema", NULL);
        if (!cJSON_IsObject(sch))
            ks_ferr_add(fe, "FieldValueRequired", f, "Required value: schemas are required");
        else
            ks_schema_structural(sch, f, fe);
        nver++;
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "storage")))
            nstorage++;
    }
    if (nver == 0)
        ks_ferr_add(
            fe, "FieldValueInvalid", "spec.versions",
            "Invalid value: \"null\": must have exactly one version marked as storage version");
    else if (nstorage != 1)
        ks_ferr_add(
            fe, "FieldValueInvalid", "spec.versions",
            "Invalid value: \"[...]\": must have exactly one version marked as storage version");
    if (old) {
        const char *og = cx_json_path_str(old, "spec", "group", NULL);
        if (og && group && strcmp(og, group) != 0)
            ks_ferr_invalid_str(fe, "spec.group", group, "field is immutable");
        const char *os = cx_json_path_str(old, "spec", "scope", NULL);
        if (os && scope && strcmp(os, scope) != 0)
            ks_ferr_invalid_str(fe, "spec.scope", scope, "field is immutable");
    }
    return 0;
}

int ks_cr_validate(struct ks_server *s, struct ks_rtype *rt, cJSON *obj, const cJSON *old,
                   struct ks_ferrs *fe, char *err, size_t errlen)
{
    (void)old;
    (void)err;
    (void)errlen;
    struct ks_rtype *crdrt =
        ks_rtype_find(s, "apiextensions.k8s.io", "v1", "customresourcedefinitions");
    struct ks_obj *o = crdrt && rt->crd_name ? ks_store_get(crdrt, rt->crd_name) : NULL;
    const cJSON *sch = o ? version_schema(o->cur->obj, rt->version) : NULL;
    if (!sch)
        return 0;
    /* metadata is validated by the API machinery, not the schema. */
    cJSON *md = cJSON_DetachItemFromObjectCaseSensitive(obj, "metadata");
    ks_schema_validate(obj, sch, fe);
    if (md)
        cJSON_AddItemToObject(obj, "metadata", md);
    return 0;
}
