/*
 * ks_listopts: list and watch options (selectors, resourceVersion and its
 * match, limit and continue tokens, watch flags) and object matching.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cx_json.h"
#include "cx_log.h"
#include "cx_time.h"
#include "ks_admin.h"
#include "ks_api.h"
#include "ks_crd.h"
#include "ks_form.h"
#include "ks_patch.h"
#include "ks_proto.h"
#include "ks_validate.h"

/* ---- base64url (continue tokens) --------------------------------------- */

static const char b64u[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static char *b64url_encode(const char *in, size_t n)
{
    char *o = malloc(n * 4 / 3 + 4), *q = o;
    if (!o)
        return NULL;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)(unsigned char)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)(unsigned char)in[i + 1] << 8;
        if (i + 2 < n)
            v |= (unsigned char)in[i + 2];
        *q++ = b64u[(v >> 18) & 63];
        *q++ = b64u[(v >> 12) & 63];
        if (i + 1 < n)
            *q++ = b64u[(v >> 6) & 63];
        if (i + 2 < n)
            *q++ = b64u[v & 63];
    }
    *q = 0;
    return o;
}

static char *b64url_decode(const char *in, size_t *outlen)
{
    size_t n = strlen(in);
    char *o = malloc(n * 3 / 4 + 3);
    if (!o)
        return NULL;
    uint32_t acc = 0;
    int bits = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *p = strchr(b64u, in[i]);
        if (!p || !in[i]) {
            if (in[i] == '=')
                continue;
            free(o);
            return NULL;
        }
        acc = (acc << 6) | (uint32_t)(p - b64u);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            o[k++] = (char)((acc >> bits) & 0xff);
        }
    }
    o[k] = 0;
    *outlen = k;
    return o;
}

/* Token: base64url({"v":"meta.k8s.io/v1","rv":N,"start":"<key>\u0000"}), like
 * the etcd3 store's; rv -1 means "continue at the latest state". */
char *ks_continue_encode(long long rv, const char *lastkey)
{
    struct cx_buf b;
    cx_buf_init(&b, 1 << 16);
    int rc = cx_buf_printf(&b, "{\"v\":\"meta.k8s.io/v1\",\"rv\":%lld,\"start\":", rv);
    struct cx_buf k;
    cx_buf_init(&k, 1 << 16);
    rc |= cx_buf_puts(&k, lastkey);
    rc |= cx_buf_append(&k, "\x01", 1); /* placeholder for \u0000 */
    rc |= cx_json_escape(&b, k.data ? k.data : "");
    rc |= cx_buf_puts(&b, "}");
    cx_buf_free(&k);
    char *r = NULL;
    if (rc == 0) {
        char *p = strstr(b.data, "\\u0001");
        if (p)
            memcpy(p, "\\u0000", 6);
        r = b64url_encode(b.data, b.len);
    }
    cx_buf_free(&b);
    return r;
}

/* Returns 0 and sets *rv (-1 = latest) and *start (caller frees: the key
 * after which to continue), or -1 with a message. */
int ks_continue_decode(const char *tok, long long *rv, char **start, char *err, size_t errlen)
{
    size_t n;
    char *raw = b64url_decode(tok, &n);
    if (!raw) {
        snprintf(err, errlen, "continue key is not valid: illegal base64 data");
        return -1;
    }
    cJSON *j = cx_json_parse(raw, n);
    free(raw);
    const char *v = cx_json_str(j, "v");
    const cJSON *jrv = cJSON_GetObjectItemCaseSensitive(j, "rv");
    const char *st = cx_json_str(j, "start");
    if (!j || !v || strcmp(v, "meta.k8s.io/v1") != 0) {
        snprintf(err, errlen,
                 "continue key is not valid: server does not recognize this encoded key");
        cJSON_Delete(j);
        return -1;
    }
    if (!cJSON_IsNumber(jrv) || jrv->valuedouble == 0 || !st) {
        snprintf(err, errlen,
                 "continue key is not valid: incorrect encoded start resourceVersion (version "
                 "meta.k8s.io/v1)");
        cJSON_Delete(j);
        return -1;
    }
    *rv = (long long)jrv->valuedouble;
    size_t sl = strlen(st);
    /* cJSON stops at the embedded NUL, which is exactly the key. */
    *start = strndup(st, sl);
    cJSON_Delete(j);
    return *start ? 0 : -1;
}

/* ---- list options ------------------------------------------------------- */

static bool truthy(const char *v)
{
    return v && (strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0);
}

void ks_listopts_free(struct ks_listopts *o)
{
    ks_lsel_free(o->lsel);
    ks_fsel_free(o->fsel);
    o->lsel = NULL;
    o->fsel = NULL;
}

static const char *const default_fields[] = {"metadata.name", "metadata.namespace", NULL};
static const char *const secret_fields[] = {"metadata.name", "metadata.namespace", "type", NULL};
static const char *const ns_fields[] = {"metadata.name", "metadata.namespace", "status.phase",
                                        NULL};
static const char *const svc_fields[] = {"metadata.name", "metadata.namespace", "spec.clusterIP",
                                         "spec.type", NULL};
static const char *const event_fields[] = {"metadata.name",
                                           "metadata.namespace",
                                           "involvedObject.kind",
                                           "involvedObject.namespace",
                                           "involvedObject.name",
                                           "involvedObject.uid",
                                           "involvedObject.apiVersion",
                                           "involvedObject.resourceVersion",
                                           "involvedObject.fieldPath",
                                           "reason",
                                           "reportingComponent",
                                           "source",
                                           "type",
                                           NULL};

/* Checks the fields of |fs| against what |rt| can select on. */
static int check_fields(struct ks_req *r, const struct ks_rtype *rt, const struct ks_fsel *fs)
{
    const char *const *allowed = default_fields;
    bool custom_msg = true;
    switch (rt->id) {
    case KS_K_SECRET:
        allowed = secret_fields;
        break;
    case KS_K_NAMESPACE:
        allowed = ns_fields;
        break;
    case KS_K_SERVICE:
        allowed = svc_fields;
        break;
    case KS_K_EVENT:
        allowed = event_fields;
        break;
    case KS_K_CUSTOM:
        break;
    default:
        custom_msg = false;
    }
    for (size_t i = 0; i < ks_fsel_count(fs); i++) {
        const char *f = ks_fsel_field(fs, i);
        bool ok = false;
        for (const char *const *a = allowed; *a; a++)
            if (strcmp(*a, f) == 0)
                ok = true;
        if (rt->id == KS_K_CUSTOM && !rt->namespaced && strcmp(f, "metadata.namespace") == 0)
            ok = false;
        if (!ok) {
            if (custom_msg)
                ks_err_bad_request(r, "field label not supported: %s", f);
            else
                ks_err_bad_request(r,
                                   "\"%s\" is not a known field selector: only \"metadata.name\", "
                                   "\"metadata.namespace\"",
                                   f);
            return -1;
        }
    }
    return 0;
}

static void listopts_invalid(struct ks_req *r, struct ks_ferrs *fe)
{
    ks_err_invalid_kind(r, "meta.k8s.io", "ListOptions", "", fe);
}

int ks_listopts_parse(struct ks_req *r, struct ks_listopts *o)
{
    memset(o, 0, sizeof(*o));
    o->send_initial = -1;
    o->timeout_s = -1;
    char err[8192];
    const char *ls = ks_q(r, "labelSelector");
    const char *fs = ks_q(r, "fieldSelector");
    if (ls && *ls) {
        o->lsel = ks_lsel_parse(ls, err, sizeof(err));
        if (!o->lsel) {
            ks_err_bad_request(r, "%s", err);
            return -1;
        }
    }
    if (fs && *fs) {
        o->fsel = ks_fsel_parse(fs, err, sizeof(err));
        if (!o->fsel) {
            ks_err_bad_request(r, "%s", err);
            goto fail;
        }
        if (check_fields(r, r->rt, o->fsel) != 0)
            goto fail;
    }
    o->watch = r->verb == KS_V_WATCH;
    o->bookmarks = truthy(ks_q(r, "allowWatchBookmarks"));
    const char *si = ks_q(r, "sendInitialEvents");
    if (si)
        o->send_initial = truthy(si) ? 1 : 0;
    o->rv = ks_q(r, "resourceVersion");
    if (o->rv && !*o->rv)
        o->rv = NULL;
    o->rv_match = ks_q(r, "resourceVersionMatch");
    if (!o->rv_match)
        o->rv_match = "";
    o->cont = ks_q(r, "continue");
    if (o->cont && !*o->cont)
        o->cont = NULL;
    const char *lim = ks_q(r, "limit");
    if (lim && *lim) {
        char *end;
        errno = 0;
        long v = strtol(lim, &end, 10);
        if (errno || *end) {
            ks_err_bad_request(r, "strconv.ParseInt: parsing \"%s\": invalid syntax", lim);
            goto fail;
        }
        o->limit = v > 0 ? v : 0;
    }
    const char *to = ks_q(r, "timeoutSeconds");
    if (to && *to) {
        char *end;
        errno = 0;
        long v = strtol(to, &end, 10);
        if (errno || *end) {
            ks_err_bad_request(r, "strconv.ParseInt: parsing \"%s\": invalid syntax", to);
            goto fail;
        }
        o->timeout_s = v;
    }
    if (o->rv && strcmp(o->rv, "0") != 0 && ks_parse_rv(o->rv, &o->rv_num) != 0) {
        struct ks_details d = {0};
        char msg[512];
        snprintf(msg, sizeof(msg), "Invalid value: \"%s\": must be a valid integer", o->rv);
        (void)d;
        struct ks_ferrs fe = {.n = 0};
        ks_ferr_invalid_str(&fe, "resourceVersion", o->rv, "must be a valid integer");
        listopts_invalid(r, &fe);
        goto fail;
    }
    struct ks_ferrs fe = {.n = 0};
    const char *m = o->rv_match;
    if (o->watch) {
        if (o->send_initial >= 0) {
            if (strcmp(m, "NotOlderThan") != 0)
                ks_ferr_add(&fe, "FieldValueForbidden", "resourceVersionMatch",
                            "Forbidden: sendInitialEvents requires setting resourceVersionMatch "
                            "to NotOlderThan");
            /* validateWatchOptions (apimachinery/pkg/apis/meta/internalversion/
             * validation): off by default in 1.28-1.31. */
            if (!r->s->cfg.watchlist)
                ks_ferr_add(&fe, "FieldValueForbidden", "sendInitialEvents",
                            "Forbidden: sendInitialEvents is forbidden for watch unless the "
                            "WatchList feature gate is enabled");
            else if (o->send_initial == 1 && !o->bookmarks)
                ks_ferr_add(&fe, "FieldValueForbidden", "allowWatchBookmarks",
                            "Forbidden: allowWatchBookmarks must be set to true when "
                            "sendInitialEvents is set to true");
        } else if (*m) {
            ks_ferr_add(&fe, "FieldValueForbidden", "resourceVersionMatch",
                        "Forbidden: resourceVersionMatch is forbidden for watch unless "
                        "sendInitialEvents is provided");
        }
        if (*m && strcmp(m, "NotOlderThan") != 0)
            ks_ferr_add(&fe, "FieldValueNotSupported", "resourceVersionMatch",
                        "Unsupported value: \"%s\": supported values: \"NotOlderThan\"", m);
    } else {
        if (o->send_initial >= 0)
            ks_ferr_add(&fe, "FieldValueForbidden", "sendInitialEvents",
                        "Forbidden: sendInitialEvents is forbidden for list");
        if (*m) {
            if (strcmp(m, "Exact") != 0 && strcmp(m, "NotOlderThan") != 0) {
                ks_ferr_add(&fe, "FieldValueNotSupported", "resourceVersionMatch",
                            "Unsupported value: \"%s\": supported values: \"Exact\", "
                            "\"NotOlderThan\", \"\"",
                            m);
            } else {
                if (!o->rv)
                    ks_ferr_add(&fe, "FieldValueForbidden", "resourceVersionMatch",
                                "Forbidden: resourceVersionMatch is forbidden unless "
                                "resourceVersion is provided");
                if (o->cont)
                    ks_ferr_add(&fe, "FieldValueForbidden", "resourceVersionMatch",
                                "Forbidden: resourceVersionMatch is forbidden when continue is "
                                "provided");
                if (strcmp(m, "Exact") == 0 && o->rv && strcmp(o->rv, "0") == 0)
                    ks_ferr_add(&fe, "FieldValueForbidden", "resourceVersionMatch",
                                "Forbidden: resourceVersionMatch \"exact\" is forbidden for "
                                "resourceVersion \"0\"");
            }
        }
    }
    if (fe.n) {
        listopts_invalid(r, &fe);
        goto fail;
    }
    return 0;
fail:
    ks_listopts_free(o);
    return -1;
}

/* ---- matching ----------------------------------------------------------- */

const char *ks_field_value(const void *objp, const char *field)
{
    const cJSON *obj = objp;
    if (strcmp(field, "source") == 0)
        field = "source.component";
    char path[256];
    snprintf(path, sizeof(path), "%s", field);
    const cJSON *cur = obj;
    char *save = NULL;
    for (char *t = strtok_r(path, ".", &save); t && cur; t = strtok_r(NULL, ".", &save))
        cur = cJSON_IsObject(cur) ? cJSON_GetObjectItemCaseSensitive(cur, t) : NULL;
    if (cJSON_IsString(cur))
        return cur->valuestring;
    if (cJSON_IsBool(cur))
        return cJSON_IsTrue(cur) ? "true" : "false";
    if (cJSON_IsNumber(cur)) {
        static char num[32];
        snprintf(num, sizeof(num), "%lld", (long long)cur->valuedouble);
        return num;
    }
    return "";
}

bool ks_obj_matches(const struct ks_rtype *rt, const char *ns, const struct ks_listopts *o,
                    const struct ks_ver *v)
{
    if (ns && rt->namespaced) {
        const char *ons = ks_md_str(v->obj, "namespace");
        if (!ons || strcmp(ons, ns) != 0)
            return false;
    }
    if (o->lsel && !ks_lsel_match(o->lsel, cx_json_path(v->obj, "metadata", "labels", NULL)))
        return false;
    if (o->fsel && !ks_fsel_match(o->fsel, ks_field_value, v->obj))
        return false;
    return true;
}
