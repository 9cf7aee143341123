/*
 * ks_api: REST verbs on resources.
 */
#include "ks_api.h"

#include <errno.h>
#include <event2/buffer.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cx_json.h"
#include "cx_log.h"
#include "cx_time.h"
#include "ks_admin.h"
#include "ks_crd.h"
#include "ks_patch.h"
#include "ks_proto.h"
#include "ks_validate.h"

/* ---- small JSON helpers ------------------------------------------------- */

static cJSON *meta(cJSON *obj)
{
    cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    if (!cJSON_IsObject(m)) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "metadata");
        m = cJSON_AddObjectToObject(obj, "metadata");
    }
    return m;
}

static const char *md_str(const cJSON *obj, const char *k)
{
    return cx_json_path_str(obj, "metadata", k, NULL);
}

static void set_str(cJSON *o, const char *k, const char *v)
{
    cJSON *old = cJSON_GetObjectItemCaseSensitive(o, k);
    if (old)
        cJSON_ReplaceItemInObjectCaseSensitive(o, k, cJSON_CreateString(v));
    else
        cJSON_AddStringToObject(o, k, v);
}

static void set_item(cJSON *o, const char *k, cJSON *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(o, k);
    if (v)
        cJSON_AddItemToObject(o, k, v);
}

static void new_uid(char out[40])
{
    unsigned char u[16];
    if (RAND_bytes(u, sizeof(u)) != 1)
        memset(u, 0x5a, sizeof(u));
    u[6] = (u[6] & 0x0f) | 0x40;
    u[8] = (u[8] & 0x3f) | 0x80;
    snprintf(out, 40, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
             u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
}

int ks_parse_rv(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

static void rv_str(uint64_t rv, char out[24])
{
    snprintf(out, 24, "%llu", (unsigned long long)rv);
}

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
static char *encode_continue(long long rv, const char *lastkey)
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
static int decode_continue(const char *tok, long long *rv, char **start, char *err, size_t errlen)
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
            if (o->send_initial == 1 && !o->bookmarks)
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
        const char *ons = md_str(v->obj, "namespace");
        if (!ons || strcmp(ons, ns) != 0)
            return false;
    }
    if (o->lsel && !ks_lsel_match(o->lsel, cx_json_path(v->obj, "metadata", "labels", NULL)))
        return false;
    if (o->fsel && !ks_fsel_match(o->fsel, ks_field_value, v->obj))
        return false;
    return true;
}

/* ---- historical views --------------------------------------------------- */

struct ovr {
    const char *key;
    struct ks_ver *ver;
    uint64_t rv;
};

static int ovr_cmp(const void *a, const void *b)
{
    const struct ovr *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    return x->rv < y->rv ? -1 : x->rv > y->rv;
}

static int view_push(struct ks_view *vw, size_t *cap, const char *key, struct ks_ver *v)
{
    if (vw->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        struct ks_ver **nv = realloc(vw->v, nc * sizeof(*nv));
        if (!nv)
            return -1;
        vw->v = nv;
        char **nk = realloc(vw->keys, nc * sizeof(*nk));
        if (!nk)
            return -1;
        vw->keys = nk;
        *cap = nc;
    }
    vw->v[vw->n] = v;
    vw->keys[vw->n] = (char *)key;
    vw->n++;
    return 0;
}

void ks_view_free(struct ks_view *vw)
{
    free(vw->v);
    free(vw->keys);
    memset(vw, 0, sizeof(*vw));
}

int ks_view_at(struct ks_rtype *rt, uint64_t at_rv, const char *prefix, const char *start,
               struct ks_view *out)
{
    memset(out, 0, sizeof(*out));
    if (at_rv < rt->window_start_rv)
        return -1;
    size_t plen = strlen(prefix);
    /* Earliest event after at_rv per key: its |prev| is the state at at_rv. */
    size_t cnt = 0;
    for (size_t i = 0; i < rt->ring_len; i++)
        if (rt->ring[(rt->ring_head + i) % rt->ring_cap]->rv > at_rv)
            cnt++;
    struct ovr *ov = cnt ? malloc(cnt * sizeof(*ov)) : NULL;
    if (cnt && !ov)
        return -2;
    size_t k = 0;
    for (size_t i = 0; i < rt->ring_len; i++) {
        struct ks_event *e = rt->ring[(rt->ring_head + i) % rt->ring_cap];
        if (e->rv > at_rv)
            ov[k++] = (struct ovr){e->key, e->prev, e->rv};
    }
    if (k > 1)
        qsort(ov, k, sizeof(*ov), ovr_cmp);
    size_t m = 0;
    for (size_t i = 0; i < k; i++)
        if (i == 0 || strcmp(ov[i].key, ov[i - 1].key) != 0)
            ov[m++] = ov[i];
    size_t cap = 0;
    struct ks_obj *o = ks_index_seek(&rt->idx, start && *start ? start : prefix);
    size_t oi = 0;
    while (oi < m &&
           (strncmp(ov[oi].key, prefix, plen) != 0 || (start && strcmp(ov[oi].key, start) < 0)))
        oi++;
    for (;;) {
        while (o && strncmp(o->key, prefix, plen) == 0) {
            /* skip current objects overridden by history */
            bool overridden = false;
            size_t lo = 0, hi = m;
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                int c = strcmp(ov[mid].key, o->key);
                if (c == 0) {
                    overridden = true;
                    break;
                }
                if (c < 0)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (!overridden)
                break;
            o = ks_index_next(o);
        }
        bool have_o = o && strncmp(o->key, prefix, plen) == 0;
        while (oi < m && !ov[oi].ver)
            oi++;
        bool have_v = oi < m && strncmp(ov[oi].key, prefix, plen) == 0;
        if (!have_o && !have_v)
            break;
        if (have_o && (!have_v || strcmp(o->key, ov[oi].key) < 0)) {
            if (view_push(out, &cap, o->key, o->cur) != 0)
                goto oom;
            o = ks_index_next(o);
        } else {
            if (view_push(out, &cap, ov[oi].key, ov[oi].ver) != 0)
                goto oom;
            oi++;
        }
    }
    free(ov);
    return 0;
oom:
    free(ov);
    ks_view_free(out);
    return -2;
}

/* ---- GET ---------------------------------------------------------------- */

static void reply_ver(struct ks_req *r, int code, const struct ks_ver *v)
{
    ks_reply_json(r, code, v->json->data, v->json->len);
}

static void api_get(struct ks_req *r)
{
    struct ks_rtype *rt = r->rt;
    char *key = ks_key(rt, r->ns ? r->ns : "", r->name);
    struct ks_obj *o = key ? ks_store_get(rt, key) : NULL;
    free(key);
    if (!o) {
        ks_err_not_found(r, rt, r->name);
        return;
    }
    reply_ver(r, 200, o->cur);
}

/* ---- LIST --------------------------------------------------------------- */

static void too_new(struct ks_req *r, uint64_t want)
{
    char msg[256];
    snprintf(msg, sizeof(msg), "Too large resource version: %llu, current: %llu",
             (unsigned long long)want, (unsigned long long)r->s->rv);
    struct ks_cause c = {.reason = "ResourceVersionTooLarge",
                         .message = "Too large resource version"};
    struct ks_details d = {.causes = &c, .ncauses = 1, .retry_after = 1};
    char full[300];
    snprintf(full, sizeof(full), "Timeout: %s", msg);
    ks_reply_status(r, 504, "Timeout", full, &d, NULL);
}

static void list_expired(struct ks_req *r, const char *fresh_token)
{
    if (fresh_token)
        ks_reply_status(
            r, 410, "Expired",
            "The provided continue parameter is too old to display a consistent list result. You "
            "can start a new list without the continue parameter, or use the continue token in "
            "this response to retrieve the remainder of the results. Continuing with the provided "
            "token results in an inconsistent list - objects that were created, modified, or "
            "deleted between the time the first chunk was returned and now may show up in the "
            "list.",
            NULL, fresh_token);
    else
        ks_reply_status(r, 410, "Expired", "The resourceVersion for the provided list is too old.",
                        NULL, NULL);
}

static bool ring_has_after(const struct ks_rtype *rt, uint64_t rv)
{
    if (!rt->ring_len)
        return false;
    const struct ks_event *last = rt->ring[(rt->ring_head + rt->ring_len - 1) % rt->ring_cap];
    return last->rv > rv;
}

void ks_api_list_parked_retry(struct ks_req *r);

static void api_list(struct ks_req *r)
{
    struct ks_server *s = r->s;
    struct ks_rtype *rt = r->rt;
    struct ks_listopts o;
    if (ks_listopts_parse(r, &o) != 0)
        return;
    char prefix[320] = "";
    if (rt->namespaced && r->ns)
        snprintf(prefix, sizeof(prefix), "%s/", r->ns);
    uint64_t at = s->rv;
    char *start = NULL; /* continue after this key */
    long limit = o.limit;
    bool exact = false;
    if (o.cont) {
        if (o.rv && strcmp(o.rv, "0") != 0) {
            ks_err_bad_request(r, "specifying resource version is not allowed when using continue");
            goto out;
        }
        long long trv;
        char err[512];
        if (decode_continue(o.cont, &trv, &start, err, sizeof(err)) != 0) {
            ks_err_bad_request(r, "invalid continue token: %s", err);
            goto out;
        }
        if (trv > 0) {
            at = (uint64_t)trv;
            exact = true;
            if (at < rt->window_start_rv) {
                char *fresh = encode_continue(-1, start);
                list_expired(r, fresh ? fresh : "");
                free(fresh);
                goto out;
            }
        }
    } else if (o.rv) {
        if (strcmp(o.rv, "0") == 0) {
            limit = 0; /* served from the watch cache: limit not honoured */
        } else {
            if (o.rv_num > s->rv) {
                if (ks_admin_park_too_new(s, r, o.rv_num))
                    goto out;
                too_new(r, o.rv_num);
                goto out;
            }
            if (strcmp(o.rv_match, "Exact") == 0 || (!*o.rv_match && limit > 0)) {
                at = o.rv_num;
                exact = true;
                if (at < rt->window_start_rv) {
                    list_expired(r, NULL);
                    goto out;
                }
            }
        }
    }
    struct evbuffer *buf = evbuffer_new();
    if (!buf) {
        ks_err_internal(r, "out of memory");
        goto out;
    }
    char rvs[24];
    rv_str(at, rvs);
    long count = 0;
    const char *lastkey = NULL;
    bool more = false;
    long remaining = 0;
    bool count_remaining = !o.lsel && !o.fsel;
    evbuffer_add_printf(buf, "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":{", rt->list_kind,
                        rt->api_version);
    struct evbuffer *items = evbuffer_new();
    if (!items) {
        evbuffer_free(buf);
        ks_err_internal(r, "out of memory");
        goto out;
    }
    size_t plen = strlen(prefix);
    if (exact && ring_has_after(rt, at)) {
        struct ks_view vw;
        int vrc = ks_view_at(rt, at, prefix, start, &vw);
        if (vrc != 0) {
            evbuffer_free(items);
            evbuffer_free(buf);
            if (vrc == -1)
                list_expired(r, NULL);
            else
                ks_err_internal(r, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < vw.n; i++) {
            if (start && strcmp(vw.keys[i], start) <= 0)
                continue;
            if (limit && count == limit) {
                more = true;
                if (!count_remaining)
                    break;
                remaining++;
                continue;
            }
            if (!ks_obj_matches(rt, NULL, &o, vw.v[i]))
                continue;
            if (count)
                evbuffer_add(items, ",", 1);
            evbuffer_add(items, vw.v[i]->json->data, vw.v[i]->json->len);
            count++;
            lastkey = vw.keys[i];
        }
        if (more && lastkey) {
            char *tok = encode_continue((long long)at, lastkey);
            if (tok)
                evbuffer_add_printf(buf, "\"resourceVersion\":\"%s\",\"continue\":\"%s\"", rvs,
                                    tok);
            free(tok);
            if (count_remaining)
                evbuffer_add_printf(buf, ",\"remainingItemCount\":%ld", remaining);
        } else {
            evbuffer_add_printf(buf, "\"resourceVersion\":\"%s\"", rvs);
        }
        ks_view_free(&vw);
    } else {
        struct ks_obj *ob = ks_index_seek(&rt->idx, start ? start : prefix);
        for (; ob && strncmp(ob->key, prefix, plen) == 0; ob = ks_index_next(ob)) {
            if (start && strcmp(ob->key, start) <= 0)
                continue;
            if (limit && count == limit) {
                more = true;
                if (!count_remaining)
                    break;
                remaining++;
                continue;
            }
            if (!ks_obj_matches(rt, NULL, &o, ob->cur))
                continue;
            if (count)
                evbuffer_add(items, ",", 1);
            evbuffer_add(items, ob->cur->json->data, ob->cur->json->len);
            count++;
            lastkey = ob->key;
        }
        if (more && lastkey) {
            char *tok = encode_continue((long long)at, lastkey);
            if (tok)
                evbuffer_add_printf(buf, "\"resourceVersion\":\"%s\",\"continue\":\"%s\"", rvs,
                                    tok);
            free(tok);
            if (count_remaining)
                evbuffer_add_printf(buf, ",\"remainingItemCount\":%ld", remaining);
        } else {
            evbuffer_add_printf(buf, "\"resourceVersion\":\"%s\"", rvs);
        }
    }
    evbuffer_add(buf, "},\"items\":[", 11);
    evbuffer_add_buffer(buf, items);
    evbuffer_add(buf, "]}", 2);
    evbuffer_free(items);
    ks_reply_evbuf(r, 200, buf, "application/json");
    evbuffer_free(buf);
out:
    free(start);
    ks_listopts_free(&o);
}

/* ---- body decoding ------------------------------------------------------ */

static void decode_error(struct ks_req *r, const struct ks_rtype *rt, const char *detail)
{
    ks_err_bad_request(r, "%s in version \"%s\" cannot be handled as a %s: %s", rt->kind,
                       rt->version, rt->kind, detail);
}

/* Parses the body as an object of |rt|'s kind. Replies and returns NULL on
 * error. */
static cJSON *parse_body(struct ks_req *r, const struct ks_rtype *rt)
{
    const char *ct = evhttp_find_header(evhttp_request_get_input_headers(r->req), "Content-Type");
    cJSON *obj;
    if (ct && strncasecmp(ct, "application/vnd.kubernetes.protobuf", 35) == 0) {
        char perr[512];
        obj = ks_proto_decode(r->body, r->body_len, perr, sizeof(perr));
        if (!obj) {
            char msg[800];
            snprintf(msg, sizeof(msg),
                     "the body of the request was in an unknown format - accepted media types "
                     "include: application/json, application/yaml (%s)",
                     perr);
            ks_reply_status(r, 415, "UnsupportedMediaType", msg, NULL, NULL);
            return NULL;
        }
    } else if (ct && strncasecmp(ct, "application/json", 16) != 0 &&
               strncasecmp(ct, "application/yaml", 16) != 0 && strncasecmp(ct, "*/*", 3) != 0) {
        ks_reply_status(r, 415, "UnsupportedMediaType",
                        "the body of the request was in an unknown format - accepted media types "
                        "include: application/json, application/yaml",
                        NULL, NULL);
        return NULL;
    } else {
        obj = ct && strncasecmp(ct, "application/yaml", 16) == 0
                  ? ks_yaml_parse(r->body, r->body_len)
                  : cx_json_parse(r->body, r->body_len);
    }
    if (!obj) {
        if (r->body_len == 0)
            ks_err_bad_request(r, "the body of the request was empty");
        else
            decode_error(r, rt, "json: invalid character in JSON body");
        return NULL;
    }
    if (!cJSON_IsObject(obj)) {
        decode_error(r, rt, "json: cannot unmarshal non-object into Go value");
        cJSON_Delete(obj);
        return NULL;
    }
    const char *kind = cx_json_str(obj, "kind");
    const char *av = cx_json_str(obj, "apiVersion");
    if (rt->id == KS_K_CUSTOM && (!kind || !*kind)) {
        char *txt = cJSON_PrintUnformatted(obj);
        ks_err_bad_request(r, "Object 'Kind' is missing in '%s'", txt ? txt : "");
        free(txt);
        cJSON_Delete(obj);
        return NULL;
    }
    if ((kind && *kind && strcmp(kind, rt->kind) != 0) ||
        (av && *av && strcmp(av, rt->api_version) != 0)) {
        if (kind && *kind && strcmp(kind, rt->kind) != 0)
            ks_err_bad_request(
                r,
                "%s in version \"%s\" cannot be handled as a %s: no kind \"%s\" is registered for "
                "version \"%s\" in scheme \"k8s.io/apiserver/pkg/endpoints/handlers/create.go\"",
                kind, av && *av ? av : rt->api_version, rt->kind, kind,
                av && *av ? av : rt->api_version);
        else
            ks_err_bad_request(
                r, "the API version in the data (%s) does not match the expected API version (%s)",
                av, rt->api_version);
        cJSON_Delete(obj);
        return NULL;
    }
    set_str(obj, "kind", rt->kind);
    set_str(obj, "apiVersion", rt->api_version);
    if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(obj, "metadata")) &&
        cJSON_GetObjectItemCaseSensitive(obj, "metadata") &&
        !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(obj, "metadata"))) {
        decode_error(r, rt,
                     "json: cannot unmarshal into Go struct field .metadata of type v1.ObjectMeta");
        cJSON_Delete(obj);
        return NULL;
    }
    meta(obj);
    return obj;
}

/* Namespace of the request vs the object's. 0 or replies 400. */
static int check_namespace(struct ks_req *r, cJSON *obj)
{
    if (!r->rt->namespaced) {
        cJSON_DeleteItemFromObjectCaseSensitive(meta(obj), "namespace");
        return 0;
    }
    const char *ons = md_str(obj, "namespace");
    if (ons && *ons && strcmp(ons, r->ns) != 0) {
        ks_err_bad_request(r, "the namespace of the provided object does not match the namespace "
                              "sent on the request");
        return -1;
    }
    set_str(meta(obj), "namespace", r->ns);
    return 0;
}

static bool namespace_exists(struct ks_server *s, const char *ns)
{
    struct ks_rtype *nsrt = ks_rtype_find(s, "", "v1", "namespaces");
    return nsrt && ks_store_get(nsrt, ns) != NULL;
}

static void ns_not_found(struct ks_req *r, const char *ns)
{
    char msg[512];
    snprintf(msg, sizeof(msg), "namespaces \"%s\" not found", ns);
    struct ks_details d = {.name = ns, .kind = "namespaces"};
    ks_reply_status(r, 404, "NotFound", msg, &d, NULL);
}

static void gen_name(const char *prefix, char *out, size_t n)
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    unsigned char rnd[5];
    if (RAND_bytes(rnd, sizeof(rnd)) != 1)
        memset(rnd, 7, sizeof(rnd));
    char suf[6];
    for (int i = 0; i < 5; i++)
        suf[i] = alphabet[rnd[i] % (sizeof(alphabet) - 1)];
    suf[5] = 0;
    snprintf(out, n, "%.*s%s", 58, prefix, suf);
}

/* Spec of an object: everything but metadata and status (generation). */
static bool spec_equal(const cJSON *a, const cJSON *b)
{
    cJSON *x = cJSON_Duplicate(a, 1), *y = cJSON_Duplicate(b, 1);
    bool eq = false;
    if (x && y) {
        cJSON_DeleteItemFromObjectCaseSensitive(x, "metadata");
        cJSON_DeleteItemFromObjectCaseSensitive(y, "metadata");
        cJSON_DeleteItemFromObjectCaseSensitive(x, "status");
        cJSON_DeleteItemFromObjectCaseSensitive(y, "status");
        eq = cJSON_Compare(x, y, 1);
    }
    cJSON_Delete(x);
    cJSON_Delete(y);
    return eq;
}

static void reply_validation(struct ks_req *r, const struct ks_rtype *rt, const char *name, int vrc,
                             struct ks_ferrs *fe, const char *err)
{
    if (vrc == 400)
        decode_error(r, rt, err);
    else if (vrc == 422)
        ks_err_invalid(r, rt, name ? name : "", fe);
    else
        ks_err_internal(r, err);
}

static void commit_failed(struct ks_req *r)
{
    ks_err_internal(r, "out of memory");
}

static void after_commit(struct ks_req *r, struct ks_rtype *rt, const struct ks_ver *v)
{
    r->result_rv = v->rv;
    if (rt->id == KS_K_CRD)
        ks_crd_changed(r->s, v->obj, false);
}

/* ---- CREATE ------------------------------------------------------------- */

/* Creates |obj| (owned) in |rt|; shared by POST and PUT-creates. */
static void do_create(struct ks_req *r, struct ks_rtype *rt, cJSON *obj)
{
    struct ks_server *s = r->s;
    cJSON *m = meta(obj);
    char genbuf[300];
    const char *name = md_str(obj, "name");
    const char *gen = md_str(obj, "generateName");
    if ((!name || !*name) && gen && *gen) {
        gen_name(gen, genbuf, sizeof(genbuf));
        set_str(m, "name", genbuf);
        name = md_str(obj, "name");
    }
    const char *rvv = md_str(obj, "resourceVersion");
    if (rvv && *rvv) {
        ks_reply_status(r, 500, NULL, "resourceVersion should not be set on objects to be created",
                        NULL, NULL);
        cJSON_Delete(obj);
        return;
    }
    if (rt->namespaced && !namespace_exists(s, r->ns)) {
        ns_not_found(r, r->ns);
        cJSON_Delete(obj);
        return;
    }
    /* System fields. */
    char uid[40], ts[CX_TIME_RFC3339_LEN];
    new_uid(uid);
    cx_time_format_rfc3339(cx_wall_ns(), ts, sizeof(ts));
    set_str(m, "uid", uid);
    set_str(m, "creationTimestamp", ts);
    cJSON_DeleteItemFromObjectCaseSensitive(m, "deletionTimestamp");
    cJSON_DeleteItemFromObjectCaseSensitive(m, "deletionGracePeriodSeconds");
    cJSON_DeleteItemFromObjectCaseSensitive(m, "managedFields");
    cJSON_DeleteItemFromObjectCaseSensitive(m, "selfLink");
    cJSON_DeleteItemFromObjectCaseSensitive(m, "resourceVersion");
    if (rt->sets_generation)
        set_item(m, "generation", cJSON_CreateNumber(1));
    else
        cJSON_DeleteItemFromObjectCaseSensitive(m, "generation");
    if (rt->has_status && (rt->id == KS_K_CUSTOM || rt->id == KS_K_CRD))
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
    if (rt->has_status && rt->id == KS_K_OTHER) {
        /* Built-in workloads start with an empty status (PrepareForCreate). */
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
        cJSON_AddObjectToObject(obj, "status");
    }
    struct ks_ferrs fe = {.n = 0};
    char err[4096] = "";
    int vrc = ks_validate(s, rt, obj, NULL, &fe, err, sizeof(err));
    name = md_str(obj, "name");
    if (vrc != 0) {
        reply_validation(r, rt, name, vrc, &fe, err);
        cJSON_Delete(obj);
        return;
    }
    char *key = ks_key(rt, r->ns ? r->ns : "", name);
    if (!key) {
        cJSON_Delete(obj);
        commit_failed(r);
        return;
    }
    if (ks_store_get(rt, key)) {
        ks_err_already_exists(r, rt, name);
        cJSON_Delete(obj);
        free(key);
        return;
    }
    if (r->dry_run) {
        struct ks_blob *b = ks_json_blob(obj);
        if (b)
            ks_reply_json(r, 201, b->data, b->len);
        else
            commit_failed(r);
        ks_blob_unref(b);
        cJSON_Delete(obj);
        free(key);
        return;
    }
    struct ks_ver *v = ks_store_commit(s, rt, key, obj);
    free(key);
    if (!v) {
        commit_failed(r);
        return;
    }
    if (!r->name) {
        /* POST: the audit log names what was created. */
        const char *cn = md_str(v->obj, "name");
        r->name = cn ? strdup(cn) : NULL;
    }
    ks_ver_ref(v);
    after_commit(r, rt, v);
    reply_ver(r, 201, v);
    ks_ver_unref(v);
}

static void api_create(struct ks_req *r)
{
    struct ks_rtype *rt = r->rt;
    cJSON *obj = parse_body(r, rt);
    if (!obj)
        return;
    if (check_namespace(r, obj) != 0) {
        cJSON_Delete(obj);
        return;
    }
    do_create(r, rt, obj);
}

/* ---- UPDATE ------------------------------------------------------------- */

/* Finishes an update of |o| to |obj| (owned): RV precondition already
 * checked by the caller. |status_only|: the /status subresource. */
static void do_update(struct ks_req *r, struct ks_rtype *rt, struct ks_obj *o, cJSON *obj,
                      bool status_only)
{
    struct ks_server *s = r->s;
    const cJSON *old = o->cur->obj;
    cJSON *m;
    if (status_only) {
        cJSON *n = cJSON_Duplicate(old, 1);
        cJSON *st = cJSON_DetachItemFromObjectCaseSensitive(obj, "status");
        cJSON_Delete(obj);
        if (!n) {
            cJSON_Delete(st);
            commit_failed(r);
            return;
        }
        set_item(n, "status", st);
        obj = n;
        m = meta(obj);
    } else {
        m = meta(obj);
        const char *uid = md_str(obj, "uid");
        const char *ouid = md_str(old, "uid");
        if (uid && *uid && ouid && strcmp(uid, ouid) != 0) {
            struct ks_ferrs fe = {.n = 0};
            ks_ferr_invalid_str(&fe, "metadata.uid", uid, "field is immutable");
            ks_err_invalid(r, rt, r->name, &fe);
            cJSON_Delete(obj);
            return;
        }
        set_str(m, "uid", ouid ? ouid : "");
        const char *ct = md_str(old, "creationTimestamp");
        if (ct)
            set_str(m, "creationTimestamp", ct);
        cJSON *gen = cx_json_path(old, "metadata", "generation", NULL);
        set_item(m, "generation", gen ? cJSON_Duplicate(gen, 1) : NULL);
        cJSON *dts = cx_json_path(old, "metadata", "deletionTimestamp", NULL);
        set_item(m, "deletionTimestamp", dts ? cJSON_Duplicate(dts, 1) : NULL);
        cJSON *dgp = cx_json_path(old, "metadata", "deletionGracePeriodSeconds", NULL);
        set_item(m, "deletionGracePeriodSeconds", dgp ? cJSON_Duplicate(dgp, 1) : NULL);
        cJSON_DeleteItemFromObjectCaseSensitive(m, "managedFields");
        cJSON_DeleteItemFromObjectCaseSensitive(m, "selfLink");
        if (rt->has_status) {
            cJSON *st = cJSON_GetObjectItemCaseSensitive(old, "status");
            set_item(obj, "status", st ? cJSON_Duplicate(st, 1) : NULL);
        }
        if (rt->sets_generation && !spec_equal(obj, old)) {
            double g = gen && cJSON_IsNumber(gen) ? gen->valuedouble : 0;
            set_item(m, "generation", cJSON_CreateNumber(g + 1));
        }
    }
    /* The stored RV is what the new object compares against. */
    set_str(m, "resourceVersion", md_str(old, "resourceVersion"));
    struct ks_ferrs fe = {.n = 0};
    char err[4096] = "";
    int vrc = ks_validate(s, rt, obj, old, &fe, err, sizeof(err));
    if (vrc != 0) {
        reply_validation(r, rt, r->name, vrc, &fe, err);
        cJSON_Delete(obj);
        return;
    }
    struct ks_blob *nb = ks_json_blob(obj);
    if (!nb) {
        cJSON_Delete(obj);
        commit_failed(r);
        return;
    }
    bool noop = nb->len == o->cur->json->len && memcmp(nb->data, o->cur->json->data, nb->len) == 0;
    if (noop || r->dry_run) {
        /* Identical bytes: no new RV, no event (etcd3 GuaranteedUpdate). */
        ks_reply_json(r, 200, nb->data, nb->len);
        if (noop)
            r->result_rv = o->cur->rv;
        ks_blob_unref(nb);
        cJSON_Delete(obj);
        return;
    }
    ks_blob_unref(nb);
    /* Removing the last finalizer of an object being deleted deletes it. */
    cJSON *fin = cx_json_path(obj, "metadata", "finalizers", NULL);
    bool deleting = cx_json_path(obj, "metadata", "deletionTimestamp", NULL) != NULL;
    bool no_fin = !cJSON_IsArray(fin) || cJSON_GetArraySize(fin) == 0;
    char *key = strdup(o->key);
    if (!key) {
        cJSON_Delete(obj);
        commit_failed(r);
        return;
    }
    if (deleting && no_fin) {
        struct ks_blob *body = ks_json_blob(obj);
        cJSON_Delete(obj);
        struct ks_ver *dv = ks_store_commit(s, rt, key, NULL);
        free(key);
        if (!dv || !body) {
            ks_blob_unref(body);
            commit_failed(r);
            return;
        }
        ks_ver_ref(dv);
        r->result_rv = dv->rv;
        if (rt->id == KS_K_CRD)
            ks_crd_changed(s, dv->obj, true);
        reply_ver(r, 200, dv);
        ks_ver_unref(dv);
        ks_blob_unref(body);
        return;
    }
    struct ks_ver *v = ks_store_commit(s, rt, key, obj);
    free(key);
    if (!v) {
        commit_failed(r);
        return;
    }
    ks_ver_ref(v);
    after_commit(r, rt, v);
    reply_ver(r, 200, v);
    ks_ver_unref(v);
}

/* Checks the RV precondition of an update body. 0, or replies and -1. */
static int check_update_rv(struct ks_req *r, const struct ks_rtype *rt, const struct ks_obj *o,
                           const cJSON *obj)
{
    const char *rv = md_str(obj, "resourceVersion");
    if (!rv || !*rv) {
        if (rt->unconditional_ok)
            return 0;
        struct ks_ferrs fe = {.n = 0};
        ks_ferr_add(&fe, "FieldValueInvalid", "metadata.resourceVersion",
                    "Invalid value: 0x0: must be specified for an update");
        ks_err_invalid(r, rt, r->name, &fe);
        return -1;
    }
    uint64_t n;
    if (ks_parse_rv(rv, &n) != 0) {
        ks_err_bad_request(r, "invalid resourceVersion: %s", rv);
        return -1;
    }
    if (n != o->cur->rv) {
        ks_err_conflict(r, rt, r->name,
                        "the object has been modified; please apply your changes to the latest "
                        "version and try again");
        return -1;
    }
    return 0;
}

static void api_update(struct ks_req *r)
{
    struct ks_rtype *rt = r->rt;
    cJSON *obj = parse_body(r, rt);
    if (!obj)
        return;
    const char *name = md_str(obj, "name");
    if (!name || !*name) {
        set_str(meta(obj), "name", r->name);
    } else if (strcmp(name, r->name) != 0) {
        ks_err_bad_request(r, "the name of the object (%s) does not match the name on the URL (%s)",
                           name, r->name);
        cJSON_Delete(obj);
        return;
    }
    if (check_namespace(r, obj) != 0) {
        cJSON_Delete(obj);
        return;
    }
    char *key = ks_key(rt, r->ns ? r->ns : "", r->name);
    struct ks_obj *o = key ? ks_store_get(rt, key) : NULL;
    free(key);
    if (!o) {
        if (rt->create_on_update && !r->sub) {
            const char *rv = md_str(obj, "resourceVersion");
            if (rv && *rv) {
                /* An update with a precondition on a missing object. */
                ks_err_not_found(r, rt, r->name);
                cJSON_Delete(obj);
                return;
            }
            do_create(r, rt, obj);
            return;
        }
        ks_err_not_found(r, rt, r->name);
        cJSON_Delete(obj);
        return;
    }
    if (check_update_rv(r, rt, o, obj) != 0) {
        cJSON_Delete(obj);
        return;
    }
    do_update(r, rt, o, obj, r->sub != NULL);
}

/* ---- PATCH -------------------------------------------------------------- */

static void unsupported_patch(struct ks_req *r, const struct ks_rtype *rt)
{
    char msg[512];
    snprintf(msg, sizeof(msg),
             "the body of the request was in an unknown format - accepted media types include: "
             "application/json-patch+json, application/merge-patch+json, "
             "application/apply-patch+yaml%s",
             rt->strategic_ok ? ", application/strategic-merge-patch+json" : "");
    ks_reply_status(r, 415, "UnsupportedMediaType", msg, NULL, NULL);
}

static void api_patch(struct ks_req *r)
{
    struct ks_rtype *rt = r->rt;
    const char *ct = evhttp_find_header(evhttp_request_get_input_headers(r->req), "Content-Type");
    char ctype[128] = "";
    if (ct) {
        snprintf(ctype, sizeof(ctype), "%s", ct);
        char *semi = strchr(ctype, ';');
        if (semi)
            *semi = 0;
        for (char *c = ctype; *c; c++)
            if (*c == ' ')
                *c = 0;
    }
    enum { P_MERGE, P_JSON, P_SMP, P_APPLY } kind;
    if (strcasecmp(ctype, "application/merge-patch+json") == 0)
        kind = P_MERGE;
    else if (strcasecmp(ctype, "application/json-patch+json") == 0)
        kind = P_JSON;
    else if (strcasecmp(ctype, "application/strategic-merge-patch+json") == 0 && rt->strategic_ok)
        kind = P_SMP;
    else if (strcasecmp(ctype, "application/apply-patch+yaml") == 0)
        kind = P_APPLY;
    else {
        unsupported_patch(r, rt);
        return;
    }
    cJSON *patch = NULL;
    if (kind == P_APPLY) {
        patch = ks_yaml_parse(r->body, r->body_len);
        if (!patch) {
            ks_err_bad_request(r, "error decoding YAML: invalid YAML");
            return;
        }
    } else {
        patch = cx_json_parse(r->body, r->body_len);
        if (!patch) {
            ks_err_bad_request(r, "error decoding patch: invalid JSON");
            return;
        }
    }
    char *key = ks_key(rt, r->ns ? r->ns : "", r->name);
    struct ks_obj *o = key ? ks_store_get(rt, key) : NULL;
    free(key);
    if (!o) {
        if (kind == P_APPLY && !r->sub && cJSON_IsObject(patch)) {
            /* Server-side apply creates a missing object. */
            cJSON *m = meta(patch);
            if (!md_str(patch, "name"))
                set_str(m, "name", r->name);
            if (rt->namespaced)
                set_str(m, "namespace", r->ns);
            const char *k = cx_json_str(patch, "kind");
            if (k && strcmp(k, rt->kind) != 0) {
                ks_err_bad_request(r, "invalid object type: %s", k);
                cJSON_Delete(patch);
                return;
            }
            set_str(patch, "kind", rt->kind);
            set_str(patch, "apiVersion", rt->api_version);
            do_create(r, rt, patch);
            return;
        }
        ks_err_not_found(r, rt, r->name);
        cJSON_Delete(patch);
        return;
    }
    cJSON *doc = cJSON_Duplicate(o->cur->obj, 1);
    if (!doc) {
        cJSON_Delete(patch);
        commit_failed(r);
        return;
    }
    char err[2048] = "";
    int rc = 0;
    switch (kind) {
    case P_MERGE:
    case P_APPLY:
        if (!cJSON_IsObject(patch)) {
            rc = -1;
            snprintf(err, sizeof(err),
                     "json: cannot unmarshal array into Go value of type map[string]interface {}");
            break;
        }
        doc = ks_merge_patch(doc, patch);
        if (!doc)
            rc = -3;
        break;
    case P_JSON:
        rc = ks_json_patch(&doc, patch, err, sizeof(err));
        break;
    case P_SMP:
        rc = ks_strategic_patch(&doc, patch, rt->kind, err, sizeof(err));
        break;
    }
    cJSON_Delete(patch);
    if (rc == -1) {
        cJSON_Delete(doc);
        ks_err_bad_request(r, "%s", err);
        return;
    }
    if (rc == -2) {
        cJSON_Delete(doc);
        struct ks_cause c = {.reason = "UnexpectedServerResponse", .message = err};
        struct ks_details d = {.causes = &c, .ncauses = 1};
        ks_reply_status(r, 422, "Invalid",
                        "the server rejected our request due to an error in our request", &d, NULL);
        return;
    }
    if (rc != 0 || !cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        ks_err_internal(r, "patch produced no object");
        return;
    }
    /* The patched object must still be this object of this kind. */
    const char *k = cx_json_str(doc, "kind");
    const char *n = md_str(doc, "name");
    if (!k || strcmp(k, rt->kind) != 0 || !n || strcmp(n, r->name) != 0) {
        cJSON_Delete(doc);
        if (n && strcmp(n, r->name) != 0)
            ks_err_bad_request(
                r, "the name of the object (%s) does not match the name on the URL (%s)", n,
                r->name);
        else
            ks_err_bad_request(r, "the kind of the patched object changed");
        return;
    }
    if (rt->namespaced) {
        const char *pns = md_str(doc, "namespace");
        if (!pns || strcmp(pns, r->ns) != 0) {
            cJSON_Delete(doc);
            ks_err_bad_request(r, "the namespace of the provided object does not match the "
                                  "namespace sent on the request");
            return;
        }
    }
    /* A resourceVersion in the patch is a precondition. */
    const char *prv = md_str(doc, "resourceVersion");
    uint64_t pn = 0;
    if (!prv || ks_parse_rv(prv, &pn) != 0 || pn != o->cur->rv) {
        cJSON_Delete(doc);
        ks_err_conflict(r, rt, r->name,
                        "the object has been modified; please apply your changes to the latest "
                        "version and try again");
        return;
    }
    do_update(r, rt, o, doc, r->sub != NULL);
}

/* ---- DELETE ------------------------------------------------------------- */

static void delete_success(struct ks_req *r, const struct ks_rtype *rt, const struct ks_ver *v)
{
    if (rt->id == KS_K_CUSTOM || rt->id == KS_K_CRD) {
        reply_ver(r, 200, v);
        return;
    }
    struct ks_details d = {.name = md_str(v->obj, "name"),
                           .group = rt->group,
                           .kind = rt->plural,
                           .uid = md_str(v->obj, "uid")};
    ks_reply_status(r, 200, NULL, NULL, &d, NULL);
}

/* Deletes |o|: immediately, or marks it when finalizers remain. Returns the
 * version to report (a new reference: caller unrefs) or NULL on failure;
 * |*gone| says which. */
static struct ks_ver *delete_obj(struct ks_server *s, struct ks_rtype *rt, struct ks_obj *o,
                                 bool *gone)
{
    cJSON *fin = cx_json_path(o->cur->obj, "metadata", "finalizers", NULL);
    if (rt->id == KS_K_NAMESPACE) {
        const char *ns = md_str(o->cur->obj, "name");
        char *nsd = ns ? strdup(ns) : NULL;
        if (nsd) {
            ks_api_delete_namespace_contents(s, nsd);
            free(nsd);
        }
    }
    if (cJSON_IsArray(fin) && cJSON_GetArraySize(fin) > 0) {
        *gone = false;
        if (cx_json_path(o->cur->obj, "metadata", "deletionTimestamp", NULL)) {
            ks_ver_ref(o->cur);
            return o->cur;
        }
        cJSON *n = cJSON_Duplicate(o->cur->obj, 1);
        if (!n)
            return NULL;
        char ts[CX_TIME_RFC3339_LEN];
        cx_time_format_rfc3339(cx_wall_ns(), ts, sizeof(ts));
        set_str(meta(n), "deletionTimestamp", ts);
        set_item(meta(n), "deletionGracePeriodSeconds", cJSON_CreateNumber(0));
        char *k = strdup(o->key);
        struct ks_ver *mv = k ? ks_store_commit(s, rt, k, n) : NULL;
        if (!k)
            cJSON_Delete(n);
        free(k);
        if (mv)
            ks_ver_ref(mv);
        return mv;
    }
    *gone = true;
    char *key = strdup(o->key);
    if (!key)
        return NULL;
    struct ks_ver *dv = ks_store_commit(s, rt, key, NULL);
    free(key);
    if (dv) {
        ks_ver_ref(dv);
        if (rt->id == KS_K_CRD)
            ks_crd_changed(s, dv->obj, true);
    }
    return dv;
}

void ks_api_delete_namespace_contents(struct ks_server *s, const char *ns)
{
    char prefix[320];
    snprintf(prefix, sizeof(prefix), "%s/", ns);
    size_t plen = strlen(prefix);
    for (struct ks_rtype *rt = s->rtypes; rt; rt = rt->next) {
        if (!rt->namespaced)
            continue;
        for (;;) {
            struct ks_obj *o = ks_index_seek(&rt->idx, prefix);
            if (!o || strncmp(o->key, prefix, plen) != 0)
                break;
            char *key = strdup(o->key);
            if (!key || !ks_store_commit(s, rt, key, NULL)) {
                free(key);
                break;
            }
            free(key);
        }
    }
}

static void api_delete(struct ks_req *r)
{
    struct ks_rtype *rt = r->rt;
    cJSON *opts = r->body_len ? cx_json_parse(r->body, r->body_len) : NULL;
    if (r->body_len && !opts) {
        ks_err_bad_request(r, "couldn't get version/kind; json parse error: invalid JSON");
        return;
    }
    char *key = ks_key(rt, r->ns ? r->ns : "", r->name);
    struct ks_obj *o = key ? ks_store_get(rt, key) : NULL;
    free(key);
    if (!o) {
        ks_err_not_found(r, rt, r->name);
        cJSON_Delete(opts);
        return;
    }
    const char *puid = cx_json_path_str(opts, "preconditions", "uid", NULL);
    const char *prv = cx_json_path_str(opts, "preconditions", "resourceVersion", NULL);
    const char *ouid = md_str(o->cur->obj, "uid");
    const char *orv = md_str(o->cur->obj, "resourceVersion");
    char why[512];
    if (puid && strcmp(puid, ouid ? ouid : "") != 0) {
        snprintf(why, sizeof(why),
                 "Precondition failed: UID in precondition: %s, UID in object meta: %s", puid,
                 ouid ? ouid : "");
        ks_err_conflict(r, rt, r->name, why);
        cJSON_Delete(opts);
        return;
    }
    if (prv && strcmp(prv, orv ? orv : "") != 0) {
        snprintf(why, sizeof(why),
                 "Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in "
                 "object meta: %s",
                 prv, orv ? orv : "");
        ks_err_conflict(r, rt, r->name, why);
        cJSON_Delete(opts);
        return;
    }
    cJSON_Delete(opts);
    if (r->dry_run) {
        reply_ver(r, 200, o->cur);
        return;
    }
    bool gone = false;
    struct ks_ver *prev = o->cur;
    ks_ver_ref(prev);
    struct ks_ver *v = delete_obj(r->s, rt, o, &gone);
    if (!v) {
        ks_ver_unref(prev);
        commit_failed(r);
        return;
    }
    r->result_rv = v->rv;
    if (!gone) {
        reply_ver(r, 200, v);
    } else if (rt->id == KS_K_NAMESPACE) {
        /* The namespace as a real server shows it: Terminating. */
        cJSON *n = cJSON_Duplicate(prev->obj, 1);
        cJSON *st = n ? cJSON_GetObjectItemCaseSensitive(n, "status") : NULL;
        if (cJSON_IsObject(st))
            set_str(st, "phase", "Terminating");
        char ts[CX_TIME_RFC3339_LEN];
        cx_time_format_rfc3339(cx_wall_ns(), ts, sizeof(ts));
        if (n)
            set_str(meta(n), "deletionTimestamp", ts);
        struct ks_blob *b = n ? ks_json_blob(n) : NULL;
        if (b)
            ks_reply_json(r, 200, b->data, b->len);
        else
            commit_failed(r);
        ks_blob_unref(b);
        cJSON_Delete(n);
    } else {
        delete_success(r, rt, rt->id == KS_K_CUSTOM ? prev : v);
    }
    ks_ver_unref(v);
    ks_ver_unref(prev);
}

static void api_deletecollection(struct ks_req *r)
{
    struct ks_rtype *rt = r->rt;
    struct ks_listopts o;
    if (ks_listopts_parse(r, &o) != 0)
        return;
    char prefix[320] = "";
    if (rt->namespaced && r->ns)
        snprintf(prefix, sizeof(prefix), "%s/", r->ns);
    size_t plen = strlen(prefix);
    /* Collect keys first: deleting while iterating would skip entries. */
    char **keys = NULL;
    size_t n = 0;
    for (struct ks_obj *ob = ks_index_seek(&rt->idx, prefix);
         ob && strncmp(ob->key, prefix, plen) == 0; ob = ks_index_next(ob)) {
        if (!ks_obj_matches(rt, NULL, &o, ob->cur))
            continue;
        char **nk = realloc(keys, (n + 1) * sizeof(*nk));
        if (!nk)
            break;
        keys = nk;
        keys[n] = strdup(ob->key);
        if (keys[n])
            n++;
    }
    struct evbuffer *buf = evbuffer_new();
    struct evbuffer *items = evbuffer_new();
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        struct ks_obj *ob = ks_store_get(rt, keys[i]);
        free(keys[i]);
        if (!ob)
            continue;
        struct ks_ver *prev = ob->cur;
        ks_ver_ref(prev);
        bool gone;
        struct ks_ver *v = r->dry_run ? prev : delete_obj(r->s, rt, ob, &gone);
        if (v) {
            if (items) {
                if (count++)
                    evbuffer_add(items, ",", 1);
                evbuffer_add(items, prev->json->data, prev->json->len);
            }
            r->result_rv = v->rv;
            if (!r->dry_run)
                ks_ver_unref(v);
        }
        ks_ver_unref(prev);
    }
    free(keys);
    if (!buf || !items) {
        if (buf)
            evbuffer_free(buf);
        if (items)
            evbuffer_free(items);
        commit_failed(r);
        ks_listopts_free(&o);
        return;
    }
    char rvs[24];
    rv_str(r->s->rv, rvs);
    evbuffer_add_printf(buf,
                        "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":{\"resourceVersion\":"
                        "\"%s\"},\"items\":[",
                        rt->list_kind, rt->api_version, rvs);
    evbuffer_add_buffer(buf, items);
    evbuffer_add(buf, "]}", 2);
    ks_reply_evbuf(r, 200, buf, "application/json");
    evbuffer_free(buf);
    evbuffer_free(items);
    ks_listopts_free(&o);
}

/* ---- dispatch ----------------------------------------------------------- */

void ks_api_dispatch(struct ks_req *r)
{
    const char *dr = ks_q(r, "dryRun");
    if (dr && *dr) {
        if (strcmp(dr, "All") != 0) {
            ks_err_bad_request(r, "Invalid dryRun value: %s. Supported values: All", dr);
            return;
        }
        r->dry_run = true;
    }
    switch (r->verb) {
    case KS_V_GET:
        api_get(r);
        break;
    case KS_V_LIST:
        api_list(r);
        break;
    case KS_V_WATCH:
        ks_watch_start(r);
        break;
    case KS_V_CREATE:
        api_create(r);
        break;
    case KS_V_UPDATE:
        api_update(r);
        break;
    case KS_V_PATCH:
        api_patch(r);
        break;
    case KS_V_DELETE:
        api_delete(r);
        break;
    case KS_V_DELETECOLLECTION:
        api_deletecollection(r);
        break;
    default:
        ks_err_method(r);
    }
}

int ks_api_seed(struct ks_server *s, const char *group, const char *plural, const cJSON *obj)
{
    struct ks_rtype *rt = ks_rtype_find(s, group, NULL, plural);
    if (!rt)
        return -1;
    cJSON *o = cJSON_Duplicate(obj, 1);
    if (!o)
        return -1;
    cJSON *m = meta(o);
    char uid[40], ts[CX_TIME_RFC3339_LEN];
    new_uid(uid);
    cx_time_format_rfc3339(cx_wall_ns(), ts, sizeof(ts));
    set_str(m, "uid", uid);
    set_str(m, "creationTimestamp", ts);
    set_str(o, "kind", rt->kind);
    set_str(o, "apiVersion", rt->api_version);
    struct ks_ferrs fe = {.n = 0};
    char err[1024];
    if (ks_validate(s, rt, o, NULL, &fe, err, sizeof(err)) != 0) {
        ks_ferrs_free(&fe);
        cJSON_Delete(o);
        return -1;
    }
    const char *ns = md_str(o, "namespace");
    char *key = ks_key(rt, ns ? ns : "", md_str(o, "name"));
    struct ks_ver *v = key ? ks_store_commit(s, rt, key, o) : NULL;
    if (!key)
        cJSON_Delete(o);
    free(key);
    return v ? 0 : -1;
}
