/*
 * ks_proto: decodes the Kubernetes protobuf encoding of a few kinds into
 * JSON, because kubectl's typed generators (`kubectl create namespace |
 * configmap | secret | serviceaccount | role | rolebinding ...`) send
 * `application/vnd.kubernetes.protobuf` bodies and do not fall back to JSON,
 * and client-go's typed clients (Helm) send DELETE bodies (DeleteOptions)
 * that way.
 *
 * Wire format: "k8s\0" + runtime.Unknown {typeMeta=1 {apiVersion=1, kind=2},
 * raw=2, contentEncoding=3, contentType=4}; |raw| is the object's message.
 * Field numbers are those of the kinds' generated.proto. Zero values
 * (empty strings, 0, false, empty maps/lists) are omitted, as the JSON
 * encoding's omitempty does. Pure; any thread.
 */
#include "ks_proto.h"

#include <openssl/evp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cx_time.h"

enum pt {
    PT_STRING = 1,
    PT_BYTES, /* base64 in JSON */
    PT_INT,
    PT_BOOL,
    PT_MSG,
    PT_MAP_SS, /* map<string,string> */
    PT_MAP_SB, /* map<string,bytes> */
    PT_TIME,   /* metav1.Time {seconds=1, nanos=2} */
};

struct pmsg;
struct pfield {
    int num;
    const char *name;
    enum pt type;
    bool repeated;
    const struct pmsg *msg;
};
struct pmsg {
    const struct pfield *f;
    int n;
};

#define MSG(name, ...)                                     \
    static const struct pfield name##_f[] = {__VA_ARGS__}; \
    static const struct pmsg name = {name##_f, (int)(sizeof(name##_f) / sizeof(name##_f[0]))}

MSG(owner_ref, {1, "kind", PT_STRING, false, NULL}, {3, "name", PT_STRING, false, NULL},
    {4, "uid", PT_STRING, false, NULL}, {5, "apiVersion", PT_STRING, false, NULL},
    {6, "controller", PT_BOOL, false, NULL}, {7, "blockOwnerDeletion", PT_BOOL, false, NULL});
MSG(object_meta, {1, "name", PT_STRING, false, NULL}, {2, "generateName", PT_STRING, false, NULL},
    {3, "namespace", PT_STRING, false, NULL}, {5, "uid", PT_STRING, false, NULL},
    {6, "resourceVersion", PT_STRING, false, NULL}, {7, "generation", PT_INT, false, NULL},
    {8, "creationTimestamp", PT_TIME, false, NULL}, {9, "deletionTimestamp", PT_TIME, false, NULL},
    {10, "deletionGracePeriodSeconds", PT_INT, false, NULL}, {11, "labels", PT_MAP_SS, false, NULL},
    {12, "annotations", PT_MAP_SS, false, NULL}, {13, "ownerReferences", PT_MSG, true, &owner_ref},
    {14, "finalizers", PT_STRING, true, NULL});
MSG(ns_spec, {1, "finalizers", PT_STRING, true, NULL});
MSG(ns_status, {1, "phase", PT_STRING, false, NULL});
MSG(namespace_m, {1, "metadata", PT_MSG, false, &object_meta}, {2, "spec", PT_MSG, false, &ns_spec},
    {3, "status", PT_MSG, false, &ns_status});
MSG(configmap_m, {1, "metadata", PT_MSG, false, &object_meta}, {2, "data", PT_MAP_SS, false, NULL},
    {3, "binaryData", PT_MAP_SB, false, NULL}, {4, "immutable", PT_BOOL, false, NULL});
MSG(secret_m, {1, "metadata", PT_MSG, false, &object_meta}, {2, "data", PT_MAP_SB, false, NULL},
    {3, "type", PT_STRING, false, NULL}, {4, "stringData", PT_MAP_SS, false, NULL},
    {5, "immutable", PT_BOOL, false, NULL});
MSG(object_ref, {1, "kind", PT_STRING, false, NULL}, {2, "namespace", PT_STRING, false, NULL},
    {3, "name", PT_STRING, false, NULL}, {4, "uid", PT_STRING, false, NULL},
    {5, "apiVersion", PT_STRING, false, NULL}, {6, "resourceVersion", PT_STRING, false, NULL},
    {7, "fieldPath", PT_STRING, false, NULL});
MSG(local_ref, {1, "name", PT_STRING, false, NULL});
MSG(sa_m, {1, "metadata", PT_MSG, false, &object_meta}, {2, "secrets", PT_MSG, true, &object_ref},
    {3, "imagePullSecrets", PT_MSG, true, &local_ref},
    {4, "automountServiceAccountToken", PT_BOOL, false, NULL});
MSG(policy_rule, {1, "verbs", PT_STRING, true, NULL}, {2, "apiGroups", PT_STRING, true, NULL},
    {3, "resources", PT_STRING, true, NULL}, {4, "resourceNames", PT_STRING, true, NULL},
    {5, "nonResourceURLs", PT_STRING, true, NULL});
MSG(role_m, {1, "metadata", PT_MSG, false, &object_meta}, {2, "rules", PT_MSG, true, &policy_rule});
MSG(subject_m, {1, "kind", PT_STRING, false, NULL}, {2, "apiGroup", PT_STRING, false, NULL},
    {3, "name", PT_STRING, false, NULL}, {4, "namespace", PT_STRING, false, NULL});
MSG(role_ref, {1, "apiGroup", PT_STRING, false, NULL}, {2, "kind", PT_STRING, false, NULL},
    {3, "name", PT_STRING, false, NULL});
MSG(binding_m, {1, "metadata", PT_MSG, false, &object_meta},
    {2, "subjects", PT_MSG, true, &subject_m}, {3, "roleRef", PT_MSG, false, &role_ref});
/* scheduling/v1 PriorityClass: `kubectl create priorityclass`. */
MSG(priorityclass_m, {1, "metadata", PT_MSG, false, &object_meta},
    {2, "value", PT_INT, false, NULL}, {3, "globalDefault", PT_BOOL, false, NULL},
    {4, "description", PT_STRING, false, NULL}, {5, "preemptionPolicy", PT_STRING, false, NULL});
/* metav1.DeleteOptions: client-go's typed clients (Helm's release storage)
 * send it as the body of a DELETE. */
MSG(preconditions_m, {1, "uid", PT_STRING, false, NULL},
    {2, "resourceVersion", PT_STRING, false, NULL});
MSG(delete_opts_m, {1, "gracePeriodSeconds", PT_INT, false, NULL},
    {2, "preconditions", PT_MSG, false, &preconditions_m},
    {3, "orphanDependents", PT_BOOL, false, NULL}, {4, "propagationPolicy", PT_STRING, false, NULL},
    {5, "dryRun", PT_STRING, true, NULL});
/* authorization.k8s.io/v1 and authentication.k8s.io/v1 review requests
 * (kubectl auth can-i and whoami send them as protobuf). */
MSG(res_attrs, {1, "namespace", PT_STRING, false, NULL}, {2, "verb", PT_STRING, false, NULL},
    {3, "group", PT_STRING, false, NULL}, {4, "version", PT_STRING, false, NULL},
    {5, "resource", PT_STRING, false, NULL}, {6, "subresource", PT_STRING, false, NULL},
    {7, "name", PT_STRING, false, NULL});
MSG(nonres_attrs, {1, "path", PT_STRING, false, NULL}, {2, "verb", PT_STRING, false, NULL});
MSG(sar_spec, {1, "resourceAttributes", PT_MSG, false, &res_attrs},
    {2, "nonResourceAttributes", PT_MSG, false, &nonres_attrs}, {3, "user", PT_STRING, false, NULL},
    {4, "groups", PT_STRING, true, NULL}, {6, "uid", PT_STRING, false, NULL});
MSG(sar_m, {1, "metadata", PT_MSG, false, &object_meta}, {2, "spec", PT_MSG, false, &sar_spec});
MSG(ssrr_spec, {1, "namespace", PT_STRING, false, NULL});
MSG(ssrr_m, {1, "metadata", PT_MSG, false, &object_meta}, {2, "spec", PT_MSG, false, &ssrr_spec});
MSG(tr_spec, {1, "token", PT_STRING, false, NULL}, {2, "audiences", PT_STRING, true, NULL});
MSG(tr_m, {1, "metadata", PT_MSG, false, &object_meta}, {2, "spec", PT_MSG, false, &tr_spec});
MSG(ssr_m, {1, "metadata", PT_MSG, false, &object_meta});
MSG(type_meta, {1, "apiVersion", PT_STRING, false, NULL}, {2, "kind", PT_STRING, false, NULL});
MSG(unknown_m, {1, "typeMeta", PT_MSG, false, &type_meta}, {2, "raw", PT_BYTES, false, NULL},
    {3, "contentEncoding", PT_STRING, false, NULL}, {4, "contentType", PT_STRING, false, NULL});

static const struct {
    const char *kind;
    const struct pmsg *m;
} kinds[] = {
    {"Namespace", &namespace_m},
    {"ConfigMap", &configmap_m},
    {"Secret", &secret_m},
    {"ServiceAccount", &sa_m},
    {"Role", &role_m},
    {"ClusterRole", &role_m},
    {"RoleBinding", &binding_m},
    {"ClusterRoleBinding", &binding_m},
    {"DeleteOptions", &delete_opts_m},
    {"PriorityClass", &priorityclass_m},
    {"SubjectAccessReview", &sar_m},
    {"SelfSubjectAccessReview", &sar_m},
    {"LocalSubjectAccessReview", &sar_m},
    {"SelfSubjectRulesReview", &ssrr_m},
    {"TokenReview", &tr_m},
    {"SelfSubjectReview", &ssr_m},
};

struct rd {
    const uint8_t *p, *end;
};

static int varint(struct rd *r, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end)
            return -1;
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

static char *b64(const uint8_t *p, size_t n)
{
    char *o = malloc(4 * ((n + 2) / 3) + 1);
    if (o)
        EVP_EncodeBlock((unsigned char *)o, p, (int)n);
    return o;
}

static cJSON *decode_msg(const uint8_t *p, size_t n, const struct pmsg *m, int depth);

/* Decodes a map entry {key=1, value=2} into |obj|. */
static int map_entry(cJSON *obj, const uint8_t *p, size_t n, bool bytes)
{
    struct rd r = {p, p + n};
    char *key = NULL, *val = NULL;
    while (r.p < r.end) {
        uint64_t tag, len;
        if (varint(&r, &tag) || (tag & 7) != 2 || varint(&r, &len) || len > (uint64_t)(r.end - r.p))
            goto fail;
        char *s = (tag >> 3) == 2 && bytes ? b64(r.p, len) : strndup((const char *)r.p, len);
        if (!s)
            goto fail;
        if ((tag >> 3) == 1) {
            free(key);
            key = s;
        } else {
            free(val);
            val = s;
        }
        r.p += len;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(obj, key ? key : "");
    cJSON_AddStringToObject(obj, key ? key : "", val ? val : "");
    free(key);
    free(val);
    return 0;
fail:
    free(key);
    free(val);
    return -1;
}

static cJSON *time_json(const uint8_t *p, size_t n)
{
    struct rd r = {p, p + n};
    int64_t secs = 0;
    while (r.p < r.end) {
        uint64_t tag, v;
        if (varint(&r, &tag) || (tag & 7) != 0 || varint(&r, &v))
            return NULL;
        if ((tag >> 3) == 1)
            secs = (int64_t)v;
    }
    if (secs == 0)
        return NULL; /* the zero time: omitted */
    char ts[CX_TIME_RFC3339_LEN];
    cx_time_format_rfc3339(secs * CX_NS_PER_S, ts, sizeof(ts));
    return cJSON_CreateString(ts);
}

static const struct pfield *field(const struct pmsg *m, int num)
{
    for (int i = 0; i < m->n; i++)
        if (m->f[i].num == num)
            return &m->f[i];
    return NULL;
}

static cJSON *decode_msg(const uint8_t *p, size_t n, const struct pmsg *m, int depth)
{
    if (depth > 16)
        return NULL;
    cJSON *obj = cJSON_CreateObject();
    struct rd r = {p, p + n};
    while (obj && r.p < r.end) {
        uint64_t tag, v = 0, len = 0;
        if (varint(&r, &tag))
            goto fail;
        int wt = (int)(tag & 7);
        const uint8_t *data = NULL;
        switch (wt) {
        case 0:
            if (varint(&r, &v))
                goto fail;
            break;
        case 1:
            if (r.end - r.p < 8)
                goto fail;
            r.p += 8;
            continue;
        case 5:
            if (r.end - r.p < 4)
                goto fail;
            r.p += 4;
            continue;
        case 2:
            if (varint(&r, &len) || len > (uint64_t)(r.end - r.p))
                goto fail;
            data = r.p;
            r.p += len;
            break;
        default:
            goto fail;
        }
        const struct pfield *f = field(m, (int)(tag >> 3));
        if (!f)
            continue;
        cJSON *val = NULL;
        switch (f->type) {
        case PT_STRING:
            if (wt != 2)
                goto fail;
            if (len == 0 && !f->repeated)
                continue;
            val = cJSON_CreateString("");
            if (val) {
                char *s = strndup((const char *)data, len);
                if (!s) {
                    cJSON_Delete(val);
                    goto fail;
                }
                cJSON_SetValuestring(val, s);
                free(s);
            }
            break;
        case PT_BYTES: {
            if (wt != 2)
                goto fail;
            char *s = b64(data, len);
            val = s ? cJSON_CreateString(s) : NULL;
            free(s);
            break;
        }
        case PT_INT:
            if (wt != 0)
                goto fail;
            if (v == 0)
                continue;
            val = cJSON_CreateNumber((double)(int64_t)v);
            break;
        case PT_BOOL:
            if (wt != 0)
                goto fail;
            if (!v)
                continue;
            val = cJSON_CreateTrue();
            break;
        case PT_MSG:
            if (wt != 2)
                goto fail;
            val = decode_msg(data, len, f->msg, depth + 1);
            if (!val)
                goto fail;
            break;
        case PT_TIME:
            if (wt != 2)
                goto fail;
            val = time_json(data, len);
            if (!val)
                continue;
            break;
        case PT_MAP_SS:
        case PT_MAP_SB: {
            if (wt != 2)
                goto fail;
            cJSON *mo = cJSON_GetObjectItemCaseSensitive(obj, f->name);
            if (!mo)
                mo = cJSON_AddObjectToObject(obj, f->name);
            if (!mo || map_entry(mo, data, len, f->type == PT_MAP_SB) != 0)
                goto fail;
            continue;
        }
        }
        if (!val)
            goto fail;
        if (f->repeated) {
            cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, f->name);
            if (!arr)
                arr = cJSON_AddArrayToObject(obj, f->name);
            if (!arr) {
                cJSON_Delete(val);
                goto fail;
            }
            cJSON_AddItemToArray(arr, val);
        } else {
            cJSON_DeleteItemFromObjectCaseSensitive(obj, f->name);
            cJSON_AddItemToObject(obj, f->name, val);
        }
    }
    return obj;
fail:
    cJSON_Delete(obj);
    return NULL;
}

cJSON *ks_proto_decode(const void *body, size_t len, char *err, size_t errlen)
{
    const uint8_t *p = body;
    if (len < 4 || memcmp(p, "k8s\0", 4) != 0) {
        snprintf(err, errlen,
                 "provided data does not appear to be a protobuf message, expected prefix [107 56 "
                 "115 0]");
        return NULL;
    }
    cJSON *u = decode_msg(p + 4, len - 4, &unknown_m, 0);
    const char *kind = u ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                               cJSON_GetObjectItemCaseSensitive(u, "typeMeta"), "kind"))
                         : NULL;
    const char *av = u ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                             cJSON_GetObjectItemCaseSensitive(u, "typeMeta"), "apiVersion"))
                       : NULL;
    const char *raw = u ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(u, "raw")) : NULL;
    const struct pmsg *m = NULL;
    for (size_t i = 0; kind && i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (strcmp(kinds[i].kind, kind) == 0)
            m = kinds[i].m;
    cJSON *out = NULL;
    if (!u) {
        snprintf(err, errlen, "malformed protobuf envelope");
    } else if (!m) {
        snprintf(err, errlen, "kubesim does not decode protobuf for kind %s", kind ? kind : "?");
    } else {
        /* |raw| was base64-encoded by the generic decoder: undo it. */
        size_t rl = raw ? strlen(raw) : 0;
        unsigned char *bin = malloc(rl / 4 * 3 + 3);
        int bl = bin && rl ? EVP_DecodeBlock(bin, (const unsigned char *)raw, (int)rl) : 0;
        if (bl >= 0 && bin) {
            while (bl > 0 && rl >= 1 && raw[rl - 1] == '=') {
                bl--;
                rl--;
            }
            out = decode_msg(bin, (size_t)bl, m, 0);
        }
        free(bin);
        if (out) {
            cJSON_AddStringToObject(out, "kind", kind);
            if (av)
                cJSON_AddStringToObject(out, "apiVersion", av);
        } else {
            snprintf(err, errlen, "malformed protobuf %s", kind);
        }
    }
    cJSON_Delete(u);
    return out;
}
