/*
 * ks_read: GET and LIST, and historical views of a resource rebuilt from
 * the event window (exact-RV lists and continue tokens).
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

void ks_api_get(struct ks_req *r)
{
    struct ks_rtype *rt = r->rt;
    char *key = ks_key(rt, r->ns ? r->ns : "", r->name);
    struct ks_obj *o = key ? ks_store_get(rt, key) : NULL;
    free(key);
    if (!o) {
        ks_err_not_found(r, rt, r->name);
        return;
    }
    ks_reply_ver(r, 200, o->cur);
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

/* A growable array of borrowed versions (the items of one reply). */
struct vers {
    struct ks_ver **v;
    size_t n, cap;
};

static int vers_push(struct vers *a, struct ks_ver *v)
{
    if (a->n == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 64;
        struct ks_ver **nv = realloc(a->v, nc * sizeof(*nv));
        if (!nv)
            return -1;
        a->v = nv;
        a->cap = nc;
    }
    a->v[a->n++] = v;
    return 0;
}

static bool ring_has_after(const struct ks_rtype *rt, uint64_t rv)
{
    if (!rt->ring_len)
        return false;
    const struct ks_event *last = rt->ring[(rt->ring_head + rt->ring_len - 1) % rt->ring_cap];
    return last->rv > rv;
}

void ks_api_list(struct ks_req *r)
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
        if (ks_continue_decode(o.cont, &trv, &start, err, sizeof(err)) != 0) {
            ks_err_bad_request(r, "invalid continue token: %s", err);
            goto out;
        }
        if (trv > 0) {
            at = (uint64_t)trv;
            exact = true;
            if (at < rt->window_start_rv) {
                char *fresh = ks_continue_encode(-1, start);
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
    char rvs[24];
    ks_rv_str(at, rvs);
    struct vers items = {0};
    const char *lastkey = NULL;
    bool more = false;
    long remaining = 0;
    bool count_remaining = !o.lsel && !o.fsel;
    size_t plen = strlen(prefix);
    struct ks_view vw = {0};
    bool use_view = exact && ring_has_after(rt, at);
    if (use_view) {
        int vrc = ks_view_at(rt, at, prefix, start, &vw);
        if (vrc != 0) {
            if (vrc == -1)
                list_expired(r, NULL);
            else
                ks_err_internal(r, "out of memory");
            goto out;
        }
    }
    size_t vi = 0;
    struct ks_obj *ob = use_view ? NULL : ks_index_seek(&rt->idx, start ? start : prefix);
    for (;;) {
        const char *key;
        struct ks_ver *v;
        if (use_view) {
            if (vi == vw.n)
                break;
            key = vw.keys[vi];
            v = vw.v[vi++];
        } else {
            if (!ob || strncmp(ob->key, prefix, plen) != 0)
                break;
            key = ob->key;
            v = ob->cur;
            ob = ks_index_next(ob);
        }
        if (start && strcmp(key, start) <= 0)
            continue;
        if (limit && (long)items.n == limit) {
            more = true;
            if (!count_remaining)
                break;
            remaining++;
            continue;
        }
        if (!ks_obj_matches(rt, NULL, &o, v))
            continue;
        if (vers_push(&items, v) != 0) {
            ks_err_internal(r, "out of memory");
            goto done;
        }
        lastkey = key;
    }
    struct ks_listmeta lm = {.rv = rvs, .remaining = -1};
    char *tok = NULL;
    if (more && lastkey) {
        tok = ks_continue_encode((long long)at, lastkey);
        lm.cont = tok;
        if (count_remaining)
            lm.remaining = remaining;
    }
    ks_reply_list(r, &lm, items.v, items.n);
    free(tok);
done:
    free(items.v);
    ks_view_free(&vw);
out:
    free(start);
    ks_listopts_free(&o);
}
