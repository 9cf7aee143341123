/*
 * TLS settings of Gateways and Upstreams (spec.tls), and the Secrets and
 * ConfigMaps they reference.
 */
#include "cx_base64.h"
#include "xlate_api_parse.h"

#include "xlate_tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- TLS ------------------------------------------------------------------ */

/* A ConfigMap data key (Kubernetes: [-._a-zA-Z0-9]+, at most 253). */
static int cm_key_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '.' || s[i] == '_'))
            return 0;
    return strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

/* {name, namespace} of a Secret, or {name, namespace, key} of a ConfigMap
 * (|default_key| non-NULL). The namespace defaults to the object's own. */
static void parse_obj_ref(struct pctx *p, const cJSON *v, struct xl_obj_ref *ref,
                          const char *default_key)
{
    static const char *const sallowed[] = {"name", "namespace", NULL};
    static const char *const callowed[] = {"name", "namespace", "key", NULL};
    xlate_check_fields(p, v, default_key ? callowed : sallowed);
    if (get_str(p, v, "name", 1, &ref->name) == 1 && !cx_kname_is_subdomain(ref->name)) {
        size_t o = push_lit(p, ".name");
        REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not a valid object name", ref->name);
        pop(p, o);
    }
    if (get_str(p, v, "namespace", 0, &ref->ns) == 1 && !cx_kname_is_label(ref->ns)) {
        size_t o = push_lit(p, ".namespace");
        REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not a valid namespace name", ref->ns);
        pop(p, o);
    }
    if (!ref->ns)
        ref->ns = p->o->meta.ns;
    if (!default_key)
        return;
    if (get_str(p, v, "key", 0, &ref->key) == 1 && !cm_key_ok(ref->key)) {
        size_t o = push_lit(p, ".key");
        REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not a valid ConfigMap key", ref->key);
        pop(p, o);
    }
    if (!ref->key)
        ref->key = (char *)default_key;
}

static void parse_tls_version(struct pctx *p, const cJSON *v, const char *key,
                              enum xl_tls_version *out)
{
    static const char *const names[] = {"TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3"};
    const cJSON *x = get(v, key);
    if (!x)
        return;
    size_t o = xlate_path_push(p, ".%s", key);
    int found = -1;
    if (cJSON_IsString(x))
        for (int i = 0; i < 4; i++)
            if (strcmp(x->valuestring, names[i]) == 0)
                found = i;
    if (found < 0 && cJSON_IsNumber(x))
        REJECT(p, XL_R_INVALID_SPEC,
               "must be one of TLSv1.0, TLSv1.1, TLSv1.2, TLSv1.3; got the number %g",
               x->valuedouble);
    else if (found < 0)
        REJECT(p, XL_R_INVALID_SPEC,
               "must be one of TLSv1.0, TLSv1.1, TLSv1.2, TLSv1.3; got %s%s%s",
               cJSON_IsString(x) ? "\"" : "", cJSON_IsString(x) ? x->valuestring : jtype(x),
               cJSON_IsString(x) ? "\"" : "");
    else
        *out = (enum xl_tls_version)(XL_TLS_1_0 + found);
    pop(p, o);
}

static void parse_tls_versions(struct pctx *p, const cJSON *v, enum xl_tls_version *min,
                               enum xl_tls_version *max)
{
    parse_tls_version(p, v, "minVersion", min);
    parse_tls_version(p, v, "maxVersion", max);
    if (*min && *max && *min > *max)
        REJECT(p, XL_R_INVALID_SPEC, "minVersion is above maxVersion");
}

void xlate_parse_gateway_tls(struct pctx *p, const cJSON *v, struct xl_gateway_tls *t)
{
    static const char *const allowed[] = {"certificates",  "minVersion",       "maxVersion",
                                          "alpnProtocols", "clientValidation", NULL};
    xlate_check_fields(p, v, allowed);
    t->enabled = 1;
    const cJSON *certs = get_arr(p, v, "certificates", 1, XLATE_MAX_CERTIFICATES);
    if (certs) {
        t->certs = palloc(p, cx_json_count(certs) * sizeof(*t->certs));
        if (!t->certs)
            return;
        size_t i = 0;
        const cJSON *c;
        cJSON_ArrayForEach(c, certs)
        {
            size_t o = xlate_path_push(p, ".certificates[%zu]", i++);
            if (!cJSON_IsObject(c)) {
                REJECT(p, XL_R_INVALID_SPEC, "must be an object, got %s", jtype(c));
                pop(p, o);
                continue;
            }
            static const char *const callowed[] = {"secretRef", NULL};
            xlate_check_fields(p, c, callowed);
            const cJSON *ref = get_obj(p, c, "secretRef", 1);
            struct xl_obj_ref *r = &t->certs[t->ncerts];
            size_t o2 = push_lit(p, ".secretRef");
            if (ref) {
                parse_obj_ref(p, ref, r, NULL);
                int dupl = -1;
                for (size_t k = 0; k < t->ncerts && r->name; k++)
                    if (t->certs[k].name && strcmp(t->certs[k].name, r->name) == 0 &&
                        strcmp(t->certs[k].ns, r->ns) == 0)
                        dupl = (int)k;
                if (dupl >= 0)
                    REJECT(p, XL_R_INVALID_SPEC,
                           "Secret %s/%s is listed twice (see certificates[%d])", r->ns, r->name,
                           dupl);
                else if (r->name)
                    t->ncerts++;
            }
            pop(p, o2);
            pop(p, o);
        }
    }
    t->min_version = XL_TLS_AUTO;
    t->max_version = XL_TLS_AUTO;
    parse_tls_versions(p, v, &t->min_version, &t->max_version);
    const cJSON *alpn = get_arr(p, v, "alpnProtocols", 0, 2);
    if (alpn) {
        t->alpn = palloc(p, 2 * sizeof(char *));
        if (!t->alpn)
            return;
        size_t i = 0;
        const cJSON *a;
        cJSON_ArrayForEach(a, alpn)
        {
            size_t o = xlate_path_push(p, ".alpnProtocols[%zu]", i++);
            if (!cJSON_IsString(a) ||
                (strcmp(a->valuestring, "h2") != 0 && strcmp(a->valuestring, "http/1.1") != 0))
                REJECT(p, XL_R_INVALID_SPEC, "must be \"h2\" or \"http/1.1\"");
            else if (t->nalpn == 1 && strcmp(t->alpn[0], a->valuestring) == 0)
                REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is listed twice", a->valuestring);
            else
                t->alpn[t->nalpn++] = pstrdup(p, a->valuestring);
            pop(p, o);
        }
    } else {
        static char *const dflt[] = {"h2", "http/1.1"};
        t->alpn = (char **)dflt;
        t->nalpn = 2;
    }
    const cJSON *cv = get_obj(p, v, "clientValidation", 0);
    if (cv) {
        size_t o = push_lit(p, ".clientValidation");
        static const char *const vallowed[] = {"caConfigMapRef", "optional", NULL};
        xlate_check_fields(p, cv, vallowed);
        const cJSON *ref = get_obj(p, cv, "caConfigMapRef", 1);
        if (ref) {
            size_t o2 = push_lit(p, ".caConfigMapRef");
            parse_obj_ref(p, ref, &t->client_ca, "ca.crt");
            t->has_client_ca = t->client_ca.name != NULL;
            pop(p, o2);
        }
        get_bool(p, cv, "optional", &t->client_cert_optional);
        pop(p, o);
    }
}

/* A host name for SNI: DNS labels, no port, no wildcard. */
static int sni_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.'))
            return 0;
    }
    return s[0] != '.' && s[n - 1] != '.' && !strstr(s, "..");
}

void xlate_parse_upstream_tls(struct pctx *p, const cJSON *v, struct xl_upstream_tls *t)
{
    static const char *const allowed[] = {"sni",
                                          "caConfigMapRef",
                                          "insecureSkipVerify",
                                          "subjectAltNames",
                                          "clientCertificate",
                                          "minVersion",
                                          "maxVersion",
                                          NULL};
    xlate_check_fields(p, v, allowed);
    t->enabled = 1;
    if (get_str(p, v, "sni", 0, &t->sni) == 1 && !sni_ok(t->sni)) {
        size_t o = push_lit(p, ".sni");
        REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not a host name (no port, no wildcard)", t->sni);
        pop(p, o);
    }
    const cJSON *ca = get_obj(p, v, "caConfigMapRef", 0);
    if (ca) {
        size_t o = push_lit(p, ".caConfigMapRef");
        parse_obj_ref(p, ca, &t->ca, "ca.crt");
        t->has_ca = t->ca.name != NULL;
        pop(p, o);
    }
    get_bool(p, v, "insecureSkipVerify", &t->insecure_skip_verify);
    if (ca && t->insecure_skip_verify)
        REJECT(p, XL_R_INVALID_SPEC,
               "caConfigMapRef and insecureSkipVerify are mutually exclusive");
    else if (!ca && !t->insecure_skip_verify)
        REJECT(p, XL_R_INVALID_SPEC,
               "set caConfigMapRef to verify the backend's certificate, or insecureSkipVerify: "
               "true to connect without verifying it");
    const cJSON *sans = get_arr(p, v, "subjectAltNames", 0, XLATE_MAX_SANS);
    if (sans) {
        size_t n = cx_json_count(sans);
        t->sans = palloc(p, (n ? n : 1) * sizeof(char *));
        if (!t->sans)
            return;
        size_t i = 0;
        const cJSON *a;
        cJSON_ArrayForEach(a, sans)
        {
            size_t o = xlate_path_push(p, ".subjectAltNames[%zu]", i++);
            if (!cJSON_IsString(a) || !a->valuestring[0] || xlate_has_ctl(a->valuestring))
                REJECT(p, XL_R_INVALID_SPEC, "must be a non-empty string");
            else
                t->sans[t->nsans++] = pstrdup(p, a->valuestring);
            pop(p, o);
        }
        if (t->insecure_skip_verify) {
            size_t o = push_lit(p, ".subjectAltNames");
            REJECT(p, XL_R_INVALID_SPEC, "cannot be checked with insecureSkipVerify");
            pop(p, o);
        }
    } else if (t->sni) {
        t->sans = palloc(p, sizeof(char *));
        if (!t->sans)
            return;
        t->sans[0] = t->sni;
        t->nsans = 1;
    } else if (ca) {
        WARN(p, XL_R_INVALID_SPEC,
             "neither sni nor subjectAltNames is set: any certificate the CA signed is accepted, "
             "whatever name it carries");
    }
    const cJSON *cc = get_obj(p, v, "clientCertificate", 0);
    if (cc) {
        size_t o = push_lit(p, ".clientCertificate");
        static const char *const callowed[] = {"secretRef", NULL};
        xlate_check_fields(p, cc, callowed);
        const cJSON *ref = get_obj(p, cc, "secretRef", 1);
        if (ref) {
            size_t o2 = push_lit(p, ".secretRef");
            parse_obj_ref(p, ref, &t->client_cert, NULL);
            t->has_client_cert = t->client_cert.name != NULL;
            pop(p, o2);
        }
        pop(p, o);
    }
    parse_tls_versions(p, v, &t->min_version, &t->max_version);
}

/* metadata.annotations[|key|] as a string, or NULL. */
static const char *annotation(const cJSON *obj, const char *key)
{
    const cJSON *v =
        cx_json_member(cx_json_member(cx_json_member(obj, "metadata"), "annotations"), key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A Secret's value |key|: stringData (written by people, merged into data
 * by the API server) wins over data (base64). Returns 1 when found and
 * decoded, 0 when absent, -1 with |why| set when unusable. */
static int secret_value(struct pctx *p, const cJSON *obj, const char *key, uint8_t **out,
                        size_t *len, char *why, size_t whylen)
{
    const cJSON *sv = cx_json_member(cx_json_member(obj, "stringData"), key);
    const cJSON *dv = cx_json_member(cx_json_member(obj, "data"), key);
    if (cJSON_IsString(sv)) {
        size_t n = strlen(sv->valuestring);
        if (n > XL_TLS_MAX_PEM) {
            snprintf(why, whylen, "stringData.%s is larger than %u bytes", key, XL_TLS_MAX_PEM);
            return -1;
        }
        *out = palloc(p, n + 1);
        if (!*out)
            return -1;
        memcpy(*out, sv->valuestring, n);
        *len = n;
        return 1;
    }
    if (!dv || cJSON_IsNull(dv))
        return 0;
    if (!cJSON_IsString(dv)) {
        snprintf(why, whylen, "data.%s must be a base64 string, got %s", key, jtype(dv));
        return -1;
    }
    size_t n = strlen(dv->valuestring);
    if (n / 4 * 3 > XL_TLS_MAX_PEM) {
        snprintf(why, whylen, "data.%s is larger than %u bytes", key, XL_TLS_MAX_PEM);
        return -1;
    }
    *out = palloc(p, CX_B64_DECODED_MAX(n) + 1);
    if (!*out)
        return -1;
    long d = cx_b64_decode(dv->valuestring, n, *out, CX_B64_STD);
    if (d < 0) {
        snprintf(why, whylen, "data.%s is not valid base64", key);
        return -1;
    }
    *len = (size_t)d;
    return 1;
}

/* Secrets are core objects: nothing is refused here (the API server
 * validated them); what makes one unusable as a certificate is recorded
 * for the objects that reference it to report. */
void xlate_parse_secret(struct pctx *p, const cJSON *obj)
{
    struct xl_secret *s = &p->o->u.secret;
    const char *type = cx_json_str(obj, "type");
    const char *allow = annotation(obj, XLATE_ALLOW_REFS_ANNOTATION);
    s->type = pstrdup(p, type && *type ? type : "Opaque");
    s->allow_from = allow ? pstrdup(p, allow) : NULL;
    char why[300] = "";
    if (strcmp(s->type, "kubernetes.io/tls") != 0) {
        snprintf(why, sizeof(why), "its type is %.100s, not kubernetes.io/tls", s->type);
        s->state = XL_SECRET_WRONG_TYPE;
        s->problem = pstrdup(p, why);
        return;
    }
    int rc = secret_value(p, obj, "tls.crt", &s->crt, &s->crtlen, why, sizeof(why));
    if (rc >= 0 && secret_value(p, obj, "tls.key", &s->key, &s->keylen, why, sizeof(why)) < 0)
        rc = -1;
    if (p->oom)
        return;
    if (rc < 0) {
        s->state = XL_SECRET_BAD_PEM;
    } else if (!s->crt || !s->crtlen || !s->key || !s->keylen) {
        int no_crt = !s->crt || !s->crtlen, no_key = !s->key || !s->keylen;
        snprintf(why, sizeof(why), "%s",
                 no_crt && no_key ? "tls.crt and tls.key are missing or empty"
                 : no_crt         ? "tls.crt is missing or empty"
                                  : "tls.key is missing or empty");
        s->state = XL_SECRET_MISSING;
    } else {
        if (xlate_tls_check_pair(p->a, s) != 0)
            p->oom = 1;
        return;
    }
    s->problem = pstrdup(p, why);
}

void xlate_parse_config_map(struct pctx *p, const cJSON *obj)
{
    struct xl_config_map *c = &p->o->u.cm;
    const char *allow = annotation(obj, XLATE_ALLOW_REFS_ANNOTATION);
    c->allow_from = allow ? pstrdup(p, allow) : NULL;
    const cJSON *data = cx_json_member(obj, "data");
    size_t n = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, data)
    {
        if (cJSON_IsString(d) && d->string)
            n++;
    }
    if (!n)
        return;
    c->data = palloc(p, n * sizeof(*c->data));
    if (!c->data)
        return;
    cJSON_ArrayForEach(d, data)
    {
        if (cJSON_IsString(d) && d->string) {
            c->data[c->ndata].key = pstrdup(p, d->string);
            c->data[c->ndata].value = pstrdup(p, d->valuestring);
            c->ndata++;
        }
    }
    qsort(c->data, c->ndata, sizeof(*c->data), xlate_label_cmp);
}

const char *xlate_config_map_get(const struct xl_config_map *c, const char *key)
{
    size_t lo = 0, hi = c->ndata;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = strcmp(c->data[mid].key, key);
        if (r == 0)
            return c->data[mid].value;
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const struct xl_upstream_tls *xlate_upstream_tls_of(const struct xl_upstream *u)
{
    static const struct xl_upstream_tls none;
    return u->tls ? u->tls : &none;
}
