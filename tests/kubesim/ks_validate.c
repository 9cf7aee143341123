/*
 * ks_validate: defaulting and validation per kind.
 */
#include "ks_validate.h"

#include <ctype.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cx_buf.h"
#include "cx_json.h"
#include "cx_time.h"
#include "ks_crd.h"
#include "ks_selector.h"

#define MAX_DATA_SIZE        (1 << 20) /* ConfigMap/Secret total, MaxSecretSize */
#define MAX_ANNOTATIONS_SIZE (256 << 10)

static void set_str(cJSON *o, const char *k, const char *v)
{
    cJSON *old = cJSON_GetObjectItemCaseSensitive(o, k);
    if (old)
        cJSON_ReplaceItemInObjectCaseSensitive(o, k, cJSON_CreateString(v));
    else
        cJSON_AddStringToObject(o, k, v);
}

static const char *jtype(const cJSON *v)
{
    if (cJSON_IsString(v))
        return "string";
    if (cJSON_IsNumber(v))
        return "number";
    if (cJSON_IsBool(v))
        return "bool";
    if (cJSON_IsArray(v))
        return "array";
    if (cJSON_IsObject(v))
        return "object";
    return "null";
}

/* A map of strings, or absent/null. Returns 0 or writes a decode error. */
static int string_map(const cJSON *m, const char *gofield, char *err, size_t errlen)
{
    if (!m || cJSON_IsNull(m))
        return 0;
    if (!cJSON_IsObject(m)) {
        snprintf(err, errlen,
                 "json: cannot unmarshal %s into Go struct field %s of type map[string]string",
                 jtype(m), gofield);
        return -1;
    }
    for (const cJSON *c = m->child; c; c = c->next)
        if (!cJSON_IsString(c) && !cJSON_IsNull(c)) {
            snprintf(err, errlen,
                     "json: cannot unmarshal %s into Go struct field %s of type string", jtype(c),
                     gofield);
            return -1;
        }
    return 0;
}

static int check_int(const cJSON *v, const char *gofield, const char *gotype, char *err,
                     size_t errlen)
{
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble)) {
        snprintf(err, errlen, "json: cannot unmarshal %s into Go struct field %s of type %s",
                 cJSON_IsNumber(v) ? "number" : jtype(v), gofield, gotype);
        return -1;
    }
    return 0;
}

/* ---- metadata (ValidateObjectMeta) -------------------------------------- */

enum name_rule { NAME_SUBDOMAIN, NAME_LABEL, NAME_DNS1035, NAME_PATHSEG };

static void validate_name(struct ks_ferrs *fe, const char *name, enum name_rule rule)
{
    char err[4096];
    int rc = 0;
    switch (rule) {
    case NAME_SUBDOMAIN:
        rc = ks_valid_dns1123_subdomain(name, err, sizeof(err));
        break;
    case NAME_LABEL:
        rc = ks_valid_dns1123_label(name, err, sizeof(err));
        break;
    case NAME_DNS1035:
        rc = ks_valid_dns1035_label(name, err, sizeof(err));
        break;
    case NAME_PATHSEG:
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
            snprintf(err, sizeof(err), "may not be '%s'", name);
            rc = -1;
        } else if (strchr(name, '/') || strchr(name, '%')) {
            snprintf(err, sizeof(err), "may not contain '%s'", strchr(name, '/') ? "/" : "%");
            rc = -1;
        }
        break;
    }
    if (rc)
        ks_ferr_invalid_str(fe, "metadata.name", name, err);
}

static int validate_meta(cJSON *obj, struct ks_ferrs *fe, enum name_rule rule, char *err,
                         size_t errlen, const char *kind)
{
    cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    char gf[128];
    snprintf(gf, sizeof(gf), "%s.metadata.labels", kind);
    if (string_map(cJSON_GetObjectItemCaseSensitive(m, "labels"), gf, err, errlen) != 0)
        return 400;
    snprintf(gf, sizeof(gf), "%s.metadata.annotations", kind);
    if (string_map(cJSON_GetObjectItemCaseSensitive(m, "annotations"), gf, err, errlen) != 0)
        return 400;
    const char *name = cx_json_str(m, "name");
    if (!name || !*name)
        ks_ferr_add(fe, "FieldValueRequired", "metadata.name",
                    "Required value: name or generateName is required");
    else
        validate_name(fe, name, rule);
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(m, "labels");
    for (const cJSON *c = cJSON_IsObject(labels) ? labels->child : NULL; c; c = c->next) {
        char e[8192];
        if (ks_valid_qualified_name(c->string, e, sizeof(e)) != 0)
            ks_ferr_invalid_str(fe, "metadata.labels", c->string, e);
        if (cJSON_IsString(c) && ks_valid_label_value(c->valuestring, e, sizeof(e)) != 0)
            ks_ferr_invalid_str(fe, "metadata.labels", c->valuestring, e);
    }
    const cJSON *ann = cJSON_GetObjectItemCaseSensitive(m, "annotations");
    size_t total = 0;
    for (const cJSON *c = cJSON_IsObject(ann) ? ann->child : NULL; c; c = c->next) {
        char e[8192];
        char lower[512];
        snprintf(lower, sizeof(lower), "%s", c->string);
        for (char *p = lower; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        if (ks_valid_qualified_name(lower, e, sizeof(e)) != 0)
            ks_ferr_invalid_str(fe, "metadata.annotations", c->string, e);
        total += strlen(c->string) + (cJSON_IsString(c) ? strlen(c->valuestring) : 0);
    }
    if (total > MAX_ANNOTATIONS_SIZE)
        ks_ferr_add(fe, "FieldValueTooLong", "metadata.annotations",
                    "Too long: must have at most %d bytes", MAX_ANNOTATIONS_SIZE);
    const cJSON *fin = cJSON_GetObjectItemCaseSensitive(m, "finalizers");
    if (fin && !cJSON_IsNull(fin) && !cJSON_IsArray(fin)) {
        snprintf(err, errlen,
                 "json: cannot unmarshal %s into Go struct field ObjectMeta.metadata.finalizers of "
                 "type []string",
                 jtype(fin));
        return 400;
    }
    int i = 0;
    const cJSON *f;
    cJSON_ArrayForEach(f, fin)
    {
        char e[8192], field[64];
        snprintf(field, sizeof(field), "metadata.finalizers[%d]", i++);
        if (!cJSON_IsString(f)) {
            snprintf(err, errlen,
                     "json: cannot unmarshal %s into Go struct field "
                     "ObjectMeta.metadata.finalizers of type string",
                     jtype(f));
            return 400;
        }
        if (ks_valid_qualified_name(f->valuestring, e, sizeof(e)) != 0)
            ks_ferr_invalid_str(fe, field, f->valuestring, e);
    }
    return 0;
}

/* ---- MicroTime --------------------------------------------------------- */

static bool digits(const char *s, int n)
{
    for (int i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

int ks_parse_microtime(const char *s, int64_t *wall_ns, char *err, size_t errlen)
{
    static const char layout[] = "2006-01-02T15:04:05.000000Z07:00";
    /* Walk Go's layout elements; on mismatch report what was left. */
    static const struct {
        const char *elem;
        int ndig; /* 0: literal */
    } el[] = {{"2006", 4}, {"-", 0}, {"01", 2}, {"-", 0}, {"02", 2}, {"T", 0},
              {"15", 2},   {":", 0}, {"04", 2}, {":", 0}, {"05", 2}};
    const char *p = s;
    for (size_t i = 0; i < sizeof(el) / sizeof(el[0]); i++) {
        size_t len = strlen(p);
        bool ok = el[i].ndig ? (len >= (size_t)el[i].ndig && digits(p, el[i].ndig))
                             : strncmp(p, el[i].elem, strlen(el[i].elem)) == 0;
        if (!ok) {
            snprintf(err, errlen, "parsing time \"%s\" as \"%s\": cannot parse \"%s\" as \"%s\"", s,
                     layout, p, el[i].elem);
            return -1;
        }
        p += el[i].ndig ? el[i].ndig : (int)strlen(el[i].elem);
    }
    if (strlen(p) < 7 || p[0] != '.' || !digits(p + 1, 6)) {
        snprintf(err, errlen, "parsing time \"%s\" as \"%s\": cannot parse \"%s\" as \".000000\"",
                 s, layout, p);
        return -1;
    }
    const char *tz = p + 7;
    bool tzok = strcmp(tz, "Z") == 0 || ((tz[0] == '+' || tz[0] == '-') && strlen(tz) == 6 &&
                                         digits(tz + 1, 2) && tz[3] == ':' && digits(tz + 4, 2));
    if (!tzok) {
        snprintf(err, errlen, "parsing time \"%s\" as \"%s\": cannot parse \"%s\" as \"Z07:00\"", s,
                 layout, tz);
        return -1;
    }
    int mon = (s[5] - '0') * 10 + (s[6] - '0');
    int day = (s[8] - '0') * 10 + (s[9] - '0');
    int hh = (s[11] - '0') * 10 + (s[12] - '0');
    int mm = (s[14] - '0') * 10 + (s[15] - '0');
    int ss = (s[17] - '0') * 10 + (s[18] - '0');
    const char *range = NULL;
    if (mon < 1 || mon > 12)
        range = "month";
    else if (day < 1 || day > 31)
        range = "day";
    else if (hh > 23)
        range = "hour";
    else if (mm > 59)
        range = "minute";
    else if (ss > 59)
        range = "second";
    if (range) {
        snprintf(err, errlen, "parsing time \"%s\": %s out of range", s, range);
        return -1;
    }
    if (cx_time_parse_rfc3339(s, wall_ns) != 0) {
        snprintf(err, errlen, "parsing time \"%s\": day out of range", s);
        return -1;
    }
    return 0;
}

static int normalize_microtime(cJSON *spec, const char *field, const char *kind, char *err,
                               size_t errlen)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(spec, field);
    if (!v || cJSON_IsNull(v))
        return 0;
    char perr[1024];
    int64_t ns;
    if (!cJSON_IsString(v)) {
        snprintf(err, errlen,
                 "json: cannot unmarshal %s into Go struct field %sSpec.spec.%s of type string",
                 jtype(v), kind, field);
        return 400;
    }
    if (ks_parse_microtime(v->valuestring, &ns, perr, sizeof(perr)) != 0) {
        snprintf(err, errlen, "%s", perr);
        return 400;
    }
    char out[CX_TIME_MICRO_LEN];
    cx_time_format_micro(ns, out, sizeof(out));
    set_str(spec, field, out);
    return 0;
}

/* ---- kinds ------------------------------------------------------------- */

static int v_lease(cJSON *obj, struct ks_ferrs *fe, char *err, size_t errlen)
{
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
    if (!spec || cJSON_IsNull(spec))
        return 0;
    if (!cJSON_IsObject(spec)) {
        snprintf(err, errlen,
                 "json: cannot unmarshal %s into Go struct field Lease.spec of type v1.LeaseSpec",
                 jtype(spec));
        return 400;
    }
    const cJSON *ld = cJSON_GetObjectItemCaseSensitive(spec, "leaseDurationSeconds");
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(spec, "leaseTransitions");
    const cJSON *hi = cJSON_GetObjectItemCaseSensitive(spec, "holderIdentity");
    if (check_int(ld, "LeaseSpec.spec.leaseDurationSeconds", "int32", err, errlen) ||
        check_int(lt, "LeaseSpec.spec.leaseTransitions", "int32", err, errlen))
        return 400;
    if (hi && !cJSON_IsNull(hi) && !cJSON_IsString(hi)) {
        snprintf(err, errlen,
                 "json: cannot unmarshal %s into Go struct field LeaseSpec.spec.holderIdentity of "
                 "type string",
                 jtype(hi));
        return 400;
    }
    int rc = normalize_microtime(spec, "acquireTime", "Lease", err, errlen);
    if (!rc)
        rc = normalize_microtime(spec, "renewTime", "Lease", err, errlen);
    if (rc)
        return rc;
    if (cJSON_IsNumber(ld) && ld->valuedouble <= 0)
        ks_ferr_add(fe, "FieldValueInvalid", "spec.leaseDurationSeconds",
                    "Invalid value: %lld: must be greater than 0", (long long)ld->valuedouble);
    if (cJSON_IsNumber(lt) && lt->valuedouble < 0)
        ks_ferr_add(fe, "FieldValueInvalid", "spec.leaseTransitions",
                    "Invalid value: %lld: must be greater than or equal to 0",
                    (long long)lt->valuedouble);
    const char *ph = cx_json_str(spec, "preferredHolder");
    const char *st = cx_json_str(spec, "strategy");
    if (ph && *ph && (!st || !*st))
        ks_ferr_add(fe, "FieldValueForbidden", "spec.preferredHolder",
                    "Forbidden: preferredHolder can only be set when strategy is set");
    if (st && *st && strcmp(st, "OldestEmulationVersion") != 0)
        ks_ferr_add(fe, "FieldValueNotSupported", "spec.strategy",
                    "Unsupported value: \"%s\": supported values: \"OldestEmulationVersion\"", st);
    return 0;
}

static size_t b64_decoded_len(const char *s, bool *ok)
{
    size_t n = strlen(s);
    *ok = n % 4 == 0;
    for (size_t i = 0; i < n && *ok; i++) {
        char c = s[i];
        if (!(isalnum((unsigned char)c) || c == '+' || c == '/' || (c == '=' && i >= n - 2)))
            *ok = false;
    }
    size_t pad = (n >= 1 && s[n - 1] == '=') + (n >= 2 && s[n - 2] == '=');
    return *ok ? n / 4 * 3 - pad : 0;
}

static int v_data_map(cJSON *obj, const char *field, bool base64, const char *kind,
                      struct ks_ferrs *fe, size_t *total, char *err, size_t errlen)
{
    cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, field);
    char gf[96];
    snprintf(gf, sizeof(gf), "%s.%s", kind, field);
    if (string_map(m, gf, err, errlen) != 0)
        return 400;
    for (const cJSON *c = cJSON_IsObject(m) ? m->child : NULL; c; c = c->next) {
        char e[2048], f[512];
        snprintf(f, sizeof(f), "%s[%s]", field, c->string);
        if (ks_valid_configmap_key(c->string, e, sizeof(e)) != 0)
            ks_ferr_invalid_str(fe, f, c->string, e);
        if (!cJSON_IsString(c))
            continue;
        if (base64) {
            bool ok;
            size_t dl = b64_decoded_len(c->valuestring, &ok);
            if (!ok) {
                snprintf(err, errlen, "illegal base64 data at input byte %zu",
                         strlen(c->valuestring) / 4 * 4);
                return 400;
            }
            *total += dl;
        } else {
            *total += strlen(c->valuestring);
        }
    }
    return 0;
}

static int v_configmap(cJSON *obj, const cJSON *old, struct ks_ferrs *fe, char *err, size_t errlen)
{
    size_t total = 0;
    int rc = v_data_map(obj, "data", false, "ConfigMap", fe, &total, err, errlen);
    if (!rc)
        rc = v_data_map(obj, "binaryData", true, "ConfigMap", fe, &total, err, errlen);
    if (rc)
        return rc;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(obj, "data");
    const cJSON *bd = cJSON_GetObjectItemCaseSensitive(obj, "binaryData");
    for (const cJSON *c = cJSON_IsObject(bd) ? bd->child : NULL; c; c = c->next)
        if (cJSON_GetObjectItemCaseSensitive(d, c->string)) {
            char f[512];
            snprintf(f, sizeof(f), "data[%s]", c->string);
            ks_ferr_invalid_str(fe, f, c->string, "duplicate of key present in binaryData");
        }
    if (total > MAX_DATA_SIZE)
        ks_ferr_add(fe, "FieldValueTooLong", "", "Too long: must have at most %d bytes",
                    MAX_DATA_SIZE);
    const cJSON *imm = cJSON_GetObjectItemCaseSensitive(obj, "immutable");
    if (imm && !cJSON_IsNull(imm) && !cJSON_IsBool(imm)) {
        snprintf(err, errlen,
                 "json: cannot unmarshal %s into Go struct field ConfigMap.immutable of type bool",
                 jtype(imm));
        return 400;
    }
    if (old && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(old, "immutable"))) {
        if (!cJSON_IsTrue(imm))
            ks_ferr_add(fe, "FieldValueForbidden", "immutable",
                        "Forbidden: field is immutable when `immutable` is set");
        const cJSON *od = cJSON_GetObjectItemCaseSensitive(old, "data");
        const cJSON *obd = cJSON_GetObjectItemCaseSensitive(old, "binaryData");
        bool deq = (!od && !d) || (od && d && cJSON_Compare(od, d, 1));
        bool beq = (!obd && !bd) || (obd && bd && cJSON_Compare(obd, bd, 1));
        if (!deq)
            ks_ferr_add(fe, "FieldValueForbidden", "data",
                        "Forbidden: field is immutable when `immutable` is set");
        if (!beq)
            ks_ferr_add(fe, "FieldValueForbidden", "binaryData",
                        "Forbidden: field is immutable when `immutable` is set");
    }
    return 0;
}

static char *b64_encode(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    if (out)
        EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
    return out;
}

static int v_secret(cJSON *obj, const cJSON *old, struct ks_ferrs *fe, char *err, size_t errlen)
{
    /* stringData is write-only: merged into data, base64-encoded. */
    cJSON *sd = cJSON_DetachItemFromObjectCaseSensitive(obj, "stringData");
    if (sd && string_map(sd, "Secret.stringData", err, errlen) != 0) {
        cJSON_Delete(sd);
        return 400;
    }
    if (cJSON_IsObject(sd) && sd->child) {
        cJSON *d = cJSON_GetObjectItemCaseSensitive(obj, "data");
        if (!cJSON_IsObject(d)) {
            cJSON_DeleteItemFromObjectCaseSensitive(obj, "data");
            d = cJSON_AddObjectToObject(obj, "data");
        }
        for (const cJSON *c = sd->child; c; c = c->next) {
            char *enc = b64_encode(cJSON_IsString(c) ? c->valuestring : "");
            if (enc) {
                set_str(d, c->string, enc);
                free(enc);
            }
        }
    }
    cJSON_Delete(sd);
    size_t total = 0;
    int rc = v_data_map(obj, "data", true, "Secret", fe, &total, err, errlen);
    if (rc)
        return rc;
    if (total > MAX_DATA_SIZE)
        ks_ferr_add(fe, "FieldValueTooLong", "data", "Too long: must have at most %d bytes",
                    MAX_DATA_SIZE);
    const char *type = cx_json_str(obj, "type");
    if (!type || !*type)
        set_str(obj, "type", "Opaque");
    type = cx_json_str(obj, "type");
    if (old) {
        const char *ot = cx_json_str(old, "type");
        if (ot && strcmp(ot, type) != 0)
            ks_ferr_invalid_str(fe, "type", type, "field is immutable");
    }
    return 0;
}

static int v_namespace(cJSON *obj, const cJSON *old)
{
    cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const char *name = cx_json_str(m, "name");
    cJSON *labels = cJSON_GetObjectItemCaseSensitive(m, "labels");
    if (!cJSON_IsObject(labels)) {
        cJSON_DeleteItemFromObjectCaseSensitive(m, "labels");
        labels = cJSON_AddObjectToObject(m, "labels");
    }
    if (name)
        set_str(labels, "kubernetes.io/metadata.name", name);
    if (!old) {
        cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
        if (!cJSON_IsObject(spec)) {
            cJSON_DeleteItemFromObjectCaseSensitive(obj, "spec");
            spec = cJSON_AddObjectToObject(obj, "spec");
        }
        if (!cJSON_GetObjectItemCaseSensitive(spec, "finalizers")) {
            cJSON *f = cJSON_AddArrayToObject(spec, "finalizers");
            cJSON_AddItemToArray(f, cJSON_CreateString("kubernetes"));
        }
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
        cJSON *st = cJSON_AddObjectToObject(obj, "status");
        cJSON_AddStringToObject(st, "phase", "Active");
    }
    return 0;
}

static int v_service(struct ks_server *s, cJSON *obj, const cJSON *old, struct ks_ferrs *fe,
                     char *err, size_t errlen)
{
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
    if (!cJSON_IsObject(spec)) {
        if (spec && !cJSON_IsNull(spec)) {
            snprintf(err, errlen,
                     "json: cannot unmarshal %s into Go struct field Service.spec of type "
                     "v1.ServiceSpec",
                     jtype(spec));
            return 400;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "spec");
        spec = cJSON_AddObjectToObject(obj, "spec");
    }
    const char *type = cx_json_str(spec, "type");
    if (!type) {
        set_str(spec, "type", "ClusterIP");
        type = "ClusterIP";
    }
    if (!cx_json_str(spec, "sessionAffinity"))
        set_str(spec, "sessionAffinity", "None");
    if (!cx_json_str(spec, "internalTrafficPolicy") && strcmp(type, "ExternalName") != 0)
        set_str(spec, "internalTrafficPolicy", "Cluster");
    const char *cip = cx_json_str(spec, "clusterIP");
    const char *ocip = old ? cx_json_path_str(old, "spec", "clusterIP", NULL) : NULL;
    if ((!cip || !*cip) && ocip)
        set_str(spec, "clusterIP", ocip);
    else if ((!cip || !*cip) && strcmp(type, "ExternalName") != 0) {
        char ip[32];
        uint32_t n = ++s->svc_ip_next;
        snprintf(ip, sizeof(ip), "10.96.%u.%u", (n >> 8) & 0xff, n & 0xff);
        set_str(spec, "clusterIP", ip);
    } else if (ocip && cip && strcmp(cip, ocip) != 0) {
        ks_ferr_invalid_str(fe, "spec.clusterIPs[0]", cip, "may not change once set");
    }
    cip = cx_json_str(spec, "clusterIP");
    if (cip && !cJSON_GetObjectItemCaseSensitive(spec, "clusterIPs")) {
        cJSON *a = cJSON_AddArrayToObject(spec, "clusterIPs");
        cJSON_AddItemToArray(a, cJSON_CreateString(cip));
    }
    if (strcmp(type, "ExternalName") != 0) {
        if (!cJSON_GetObjectItemCaseSensitive(spec, "ipFamilies")) {
            cJSON *a = cJSON_AddArrayToObject(spec, "ipFamilies");
            cJSON_AddItemToArray(a, cJSON_CreateString("IPv4"));
        }
        if (!cx_json_str(spec, "ipFamilyPolicy"))
            set_str(spec, "ipFamilyPolicy", "SingleStack");
    }
    cJSON *ports = cJSON_GetObjectItemCaseSensitive(spec, "ports");
    if (ports && !cJSON_IsNull(ports) && !cJSON_IsArray(ports)) {
        snprintf(err, errlen,
                 "json: cannot unmarshal %s into Go struct field ServiceSpec.spec.ports of type "
                 "[]v1.ServicePort",
                 jtype(ports));
        return 400;
    }
    bool headless = cip && strcmp(cip, "None") == 0;
    if (cJSON_GetArraySize(ports) == 0 && !headless && strcmp(type, "ExternalName") != 0)
        ks_ferr_add(fe, "FieldValueRequired", "spec.ports", "Required value");
    int i = 0;
    cJSON *p;
    cJSON_ArrayForEach(p, ports)
    {
        char f[64];
        cJSON *port = cJSON_GetObjectItemCaseSensitive(p, "port");
        if (check_int(port, "ServicePort.spec.ports.port", "int32", err, errlen))
            return 400;
        snprintf(f, sizeof(f), "spec.ports[%d].port", i);
        if (!cJSON_IsNumber(port) || port->valuedouble < 1 || port->valuedouble > 65535)
            ks_ferr_add(fe, "FieldValueInvalid", f,
                        "Invalid value: %lld: must be between 1 and 65535, inclusive",
                        cJSON_IsNumber(port) ? (long long)port->valuedouble : 0LL);
        if (!cx_json_str(p, "protocol"))
            set_str(p, "protocol", "TCP");
        if (!cJSON_GetObjectItemCaseSensitive(p, "targetPort") && cJSON_IsNumber(port))
            cJSON_AddNumberToObject(p, "targetPort", port->valuedouble);
        if (cJSON_GetArraySize(ports) > 1 && !cx_json_str(p, "name")) {
            snprintf(f, sizeof(f), "spec.ports[%d].name", i);
            ks_ferr_add(fe, "FieldValueRequired", f, "Required value");
        }
        i++;
    }
    if (!old) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
        cJSON *st = cJSON_AddObjectToObject(obj, "status");
        cJSON_AddObjectToObject(st, "loadBalancer");
    }
    return 0;
}

static int v_endpointslice(cJSON *obj, struct ks_ferrs *fe, char *err, size_t errlen)
{
    const char *at = cx_json_str(obj, "addressType");
    if (!at || !*at)
        ks_ferr_add(fe, "FieldValueRequired", "addressType", "Required value");
    else if (strcmp(at, "IPv4") != 0 && strcmp(at, "IPv6") != 0 && strcmp(at, "FQDN") != 0)
        ks_ferr_add(fe, "FieldValueNotSupported", "addressType",
                    "Unsupported value: \"%s\": supported values: \"IPv4\", \"IPv6\", \"FQDN\"",
                    at);
    cJSON *eps = cJSON_GetObjectItemCaseSensitive(obj, "endpoints");
    if (eps && !cJSON_IsNull(eps) && !cJSON_IsArray(eps)) {
        snprintf(err, errlen,
                 "json: cannot unmarshal %s into Go struct field EndpointSlice.endpoints of type "
                 "[]v1.Endpoint",
                 jtype(eps));
        return 400;
    }
    if (!eps) {
        /* endpoints is required in the schema; Go decodes a missing one as
         * null, which validation accepts. Keep the wire shape of a server. */
        cJSON_AddNullToObject(obj, "endpoints");
    }
    int i = 0;
    const cJSON *ep;
    const cJSON *eparr = cJSON_IsArray(eps) ? eps : NULL;
    cJSON_ArrayForEach(ep, eparr)
    {
        int na = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(ep, "addresses"));
        char f[64];
        snprintf(f, sizeof(f), "endpoints[%d].addresses", i);
        if (na < 1 || na > 100)
            ks_ferr_add(fe, "FieldValueRequired", f,
                        "Required value: must contain at least 1 address");
        i++;
    }
    return 0;
}

static int v_rbac(enum ks_kind_id id, cJSON *obj, const cJSON *old, struct ks_ferrs *fe)
{
    if (id == KS_K_ROLE || id == KS_K_CLUSTERROLE) {
        int i = 0;
        const cJSON *rule;
        cJSON_ArrayForEach(rule, cJSON_GetObjectItemCaseSensitive(obj, "rules"))
        {
            char f[64];
            snprintf(f, sizeof(f), "rules[%d].verbs", i);
            if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(rule, "verbs")) == 0)
                ks_ferr_add(fe, "FieldValueRequired", f,
                            "Required value: verbs must contain at least one value");
            i++;
        }
        return 0;
    }
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(obj, "roleRef");
    const char *rk = cx_json_str(ref, "kind");
    if (!rk || (strcmp(rk, "Role") != 0 && strcmp(rk, "ClusterRole") != 0))
        ks_ferr_add(fe, "FieldValueNotSupported", "roleRef.kind",
                    "Unsupported value: \"%s\": supported values: \"Role\", \"ClusterRole\"",
                    rk ? rk : "");
    else if (id == KS_K_CLUSTERROLEBINDING && strcmp(rk, "ClusterRole") != 0)
        ks_ferr_add(fe, "FieldValueNotSupported", "roleRef.kind",
                    "Unsupported value: \"%s\": supported values: \"ClusterRole\"", rk);
    const char *rn = cx_json_str(ref, "name");
    if (!rn || !*rn)
        ks_ferr_add(fe, "FieldValueRequired", "roleRef.name", "Required value");
    if (old) {
        const cJSON *oref = cJSON_GetObjectItemCaseSensitive(old, "roleRef");
        if (oref && ref && !cJSON_Compare(oref, ref, 1))
            ks_ferr_add(fe, "FieldValueInvalid", "roleRef",
                        "Invalid value: %s: cannot change roleRef", "{...}");
    }
    return 0;
}

int ks_validate(struct ks_server *s, struct ks_rtype *rt, cJSON *obj, const cJSON *old,
                struct ks_ferrs *fe, char *err, size_t errlen)
{
    enum name_rule rule = NAME_SUBDOMAIN;
    switch (rt->id) {
    case KS_K_NAMESPACE:
        rule = NAME_LABEL;
        break;
    case KS_K_SERVICE:
        rule = NAME_DNS1035;
        break;
    case KS_K_CUSTOM:
    case KS_K_ROLE:
    case KS_K_CLUSTERROLE:
    case KS_K_ROLEBINDING:
    case KS_K_CLUSTERROLEBINDING:
        rule = NAME_PATHSEG;
        break;
    default:
        break;
    }
    int rc = validate_meta(obj, fe, rule, err, errlen, rt->kind);
    if (rc)
        return rc;
    switch (rt->id) {
    case KS_K_LEASE:
        rc = v_lease(obj, fe, err, errlen);
        break;
    case KS_K_CONFIGMAP:
        rc = v_configmap(obj, old, fe, err, errlen);
        break;
    case KS_K_SECRET:
        rc = v_secret(obj, old, fe, err, errlen);
        break;
    case KS_K_NAMESPACE:
        rc = v_namespace(obj, old);
        break;
    case KS_K_SERVICE:
        rc = v_service(s, obj, old, fe, err, errlen);
        break;
    case KS_K_ENDPOINTSLICE:
        rc = v_endpointslice(obj, fe, err, errlen);
        break;
    case KS_K_ROLE:
    case KS_K_CLUSTERROLE:
    case KS_K_ROLEBINDING:
    case KS_K_CLUSTERROLEBINDING:
        rc = v_rbac(rt->id, obj, old, fe);
        break;
    case KS_K_CRD:
        rc = ks_crd_validate(s, obj, old, fe, err, errlen);
        break;
    case KS_K_CUSTOM:
        rc = ks_cr_validate(s, rt, obj, old, fe, err, errlen);
        break;
    default:
        break;
    }
    if (rc)
        return rc;
    return fe->n ? 422 : 0;
}
