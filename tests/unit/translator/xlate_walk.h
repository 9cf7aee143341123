/*
 * The random walk of the translator's tests test_xlate_walk*.c: for a
 * golden input (tests/data/translator/CASE/input.yaml), random changes
 * applied through xlate_run_changes (objects and records) and through full
 * views must give exactly what a fresh full translation of the same
 * objects gives, and every snapshot must stay valid after the context
 * moves on or is freed. walk_cases() walks each of a list of cases, 60
 * steps (25 under the sanitizer and valgrind runs; XLATE_WALK_STEPS sets
 * it). The cases are split over two programs so that each stays well
 * under the runner's time limit under valgrind.
 */
#ifndef XLATE_WALK_H
#define XLATE_WALK_H

#include "cx_json.h"
#include "cx_yaml.h"
#include "cxtest.h"
#include "xlate.h"
#include "xlate_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sets sorted by name, names unique, versions as seal computes them. */
static int sets_sane(const struct xlate_snapshot *s)
{
    for (size_t g = 0; g < s->ngroups; g++)
        for (int t = 0; t < XDS_TYPE_COUNT; t++) {
            const struct xds_resource_set *set = &s->groups[g].types[t];
            for (size_t i = 1; i < set->n; i++)
                if (strcmp(set->items[i - 1]->name, set->items[i]->name) >= 0)
                    return 0;
            struct xds_resource_set copy = {.n = set->n,
                                            .items = malloc((set->n + 1) * sizeof(void *))};
            memcpy(copy.items, set->items, set->n * sizeof(void *));
            int ok = xlate_resource_set_seal(&copy) == 0 && strcmp(copy.version, set->version) == 0;
            free(copy.items);
            if (!ok)
                return 0;
        }
    return 1;
}

static const char *obj_name(const cJSON *o)
{
    return cx_json_path_str(o, "metadata", "name", NULL);
}

static const char *obj_ns(const cJSON *o)
{
    const char *ns = cx_json_path_str(o, "metadata", "namespace", NULL);
    return ns ? ns : "default";
}

/* Fresh full translation of |objs| rendered. */
static char *fresh(cJSON **objs, size_t n, int64_t now)
{
    struct xlate_object *in = calloc(n ? n : 1, sizeof(*in));
    for (size_t i = 0; i < n; i++)
        in[i] = (struct xlate_object){.kind = XLATE_KIND_UNKNOWN, .obj = objs[i]};
    struct xlate_ctx *ctx = xlate_ctx_new();
    struct xlate_snapshot *s = NULL;
    char *r = NULL;
    if (xlate_run(ctx, &(struct xlate_input){in, n, now}, &s, NULL) == 0)
        r = render(s);
    xlate_snapshot_unref(s);
    xlate_ctx_free(ctx);
    free(in);
    return r;
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
    return cxt_xorshift(&rng);
}

/* Test material (tests/data/tls), base64 or as it is; kept for the run. */
static const char *b64_file(const char *rel)
{
    static struct {
        const char *rel;
        char *val;
    } cache[8];
    for (int i = 0; i < 8; i++) {
        if (cache[i].rel && strcmp(cache[i].rel, rel) == 0)
            return cache[i].val;
        if (!cache[i].rel) {
            char *out = cxt_read_file_b64(cxt_data_path(rel));
            REQUIRE(out);
            cache[i].rel = rel;
            cache[i].val = out;
            return out;
        }
    }
    return "";
}

static const char *pem_file(const char *rel)
{
    static char *chain;
    if (!chain)
        chain = cxt_read_file(cxt_data_path(rel), NULL);
    return chain ? chain : "";
}

/* A variant of |o| (same kind and name) with a mutation that matters:
 * labels, domains, prefixes, weights, ports, endpoint readiness... */
static cJSON *mutate(const cJSON *o, int how)
{
    cJSON *c = cJSON_Duplicate(o, 1);
    cJSON *md = cJSON_GetObjectItem(c, "metadata");
    const char *kind = cx_json_str(c, "kind");
    switch (how % 4) {
    case 0: { /* labels: selection may change */
        cJSON *labels = cJSON_GetObjectItem(md, "labels");
        if (!labels)
            labels = cJSON_AddObjectToObject(md, "labels");
        if (cJSON_GetObjectItem(labels, "gateway"))
            cJSON_DeleteItemFromObject(labels, "gateway");
        else
            cJSON_AddStringToObject(labels, "gateway", "gw");
        if (cJSON_GetObjectItem(labels, "team"))
            cJSON_DeleteItemFromObject(labels, "team");
        else
            cJSON_AddStringToObject(labels, "team", "shop");
        break;
    }
    case 1: /* creation time: domain claims may change hands */
        cJSON_DeleteItemFromObject(md, "creationTimestamp");
        cJSON_AddStringToObject(md, "creationTimestamp",
                                how & 4 ? "2020-01-01T00:00:00Z" : "2030-01-01T00:00:00Z");
        break;
    default: {
        cJSON *spec = cJSON_GetObjectItem(c, "spec");
        if (kind && strcmp(kind, "VirtualService") == 0 && spec) {
            cJSON *doms = cJSON_GetObjectItem(spec, "domains");
            if (doms && how % 4 == 2) {
                cJSON_AddItemToArray(doms, cJSON_CreateString("shared.example.com"));
            } else {
                cJSON *routes = cJSON_GetObjectItem(spec, "routes");
                cJSON *r0 = cJSON_GetArrayItem(routes, 0);
                if (r0) {
                    cJSON_DeleteItemFromObject(r0, "timeout");
                    cJSON_AddStringToObject(r0, "timeout", how & 8 ? "3s" : "4s");
                }
            }
        } else if (kind && strcmp(kind, "Upstream") == 0 && spec) {
            cJSON_DeleteItemFromObject(spec, "lbPolicy");
            cJSON_AddStringToObject(spec, "lbPolicy", how & 4 ? "Random" : "RingHash");
            if (how & 8) { /* break it: references start failing */
                cJSON_DeleteItemFromObject(spec, "connectTimeout");
                cJSON_AddStringToObject(spec, "connectTimeout", "-1s");
            }
        } else if (kind && strcmp(kind, "EndpointSlice") == 0) {
            cJSON *eps = cJSON_GetObjectItem(c, "endpoints");
            cJSON *e0 = cJSON_GetArrayItem(eps, 0);
            if (e0) {
                cJSON_DeleteItemFromObject(e0, "conditions");
                cJSON *cond = cJSON_AddObjectToObject(e0, "conditions");
                cJSON_AddBoolToObject(cond, "ready", how & 4);
            }
        } else if (kind && strcmp(kind, "RouteTable") == 0 && spec) {
            cJSON *routes = cJSON_GetObjectItem(spec, "routes");
            cJSON *r0 = cJSON_GetArrayItem(routes, 0);
            cJSON *m = cJSON_GetObjectItem(r0, "match");
            if (m) {
                cJSON_DeleteItemFromObject(m, "prefix");
                cJSON_AddStringToObject(m, "prefix", how & 4 ? "/elsewhere" : "/a/b");
            }
        } else if (kind && strcmp(kind, "Gateway") == 0 && spec &&
                   cJSON_GetObjectItem(spec, "tls") && (how & 8)) {
            /* TLS: the certificate list turns around (the default changes) */
            cJSON *certs = cx_json_path(spec, "tls", "certificates", NULL);
            cJSON *first = cJSON_DetachItemFromArray(certs, 0);
            if (first)
                cJSON_AddItemToArray(certs, first);
        } else if (kind && strcmp(kind, "Gateway") == 0 && spec &&
                   cJSON_GetObjectItem(spec, "listeners") && (how & 8)) {
            /* a listener's own certificates: the list turns around, or
             * (how & 4) the listener's tls goes (spec.tls, if any, then
             * serves it) */
            cJSON *l;
            cJSON_ArrayForEach(l, cJSON_GetObjectItem(spec, "listeners"))
            {
                cJSON *certs = cx_json_path(l, "tls", "certificates", NULL);
                if (!cJSON_IsArray(certs))
                    continue;
                if (how & 4) {
                    cJSON_DeleteItemFromObject(l, "tls");
                } else {
                    cJSON *first = cJSON_DetachItemFromArray(certs, 0);
                    if (first)
                        cJSON_AddItemToArray(certs, first);
                }
                break;
            }
        } else if (kind && strcmp(kind, "Gateway") == 0 && spec) {
            cJSON_DeleteItemFromObject(spec, "bindPort");
            cJSON_AddNumberToObject(spec, "bindPort", how & 4 ? 9090 : 8080);
        } else if (kind && strcmp(kind, "Secret") == 0) {
            /* rotated to another valid pair, or broken (a key that does
             * not match) */
            cJSON *data = cJSON_GetObjectItem(c, "data");
            if (!data)
                data = cJSON_AddObjectToObject(c, "data");
            cJSON_DeleteItemFromObject(data, "tls.crt");
            cJSON_DeleteItemFromObject(data, "tls.key");
            cJSON_DeleteItemFromObject(c, "stringData");
            cJSON_AddStringToObject(data, "tls.crt",
                                    how & 4 ? b64_file("tls/www-rotated.crt")
                                            : b64_file("tls/expired.crt"));
            cJSON_AddStringToObject(data, "tls.key",
                                    how & 4 ? b64_file("tls/www-rotated.key")
                                            : b64_file("tls/other.key"));
        } else if (kind && strcmp(kind, "ConfigMap") == 0) {
            cJSON *data = cJSON_GetObjectItem(c, "data");
            cJSON *first = data ? data->child : NULL;
            if (first && first->string) {
                char *k = strdup(first->string);
                cJSON_DeleteItemFromObject(data, k);
                cJSON_AddStringToObject(data, k,
                                        how & 4 ? "not a bundle" : pem_file("tls/chain.crt"));
                free(k);
            }
        } else if (spec) {
            cJSON_AddStringToObject(spec, "x-unknown", "field");
        }
    }
    }
    return c;
}

/* The universe: every golden input, names made unique per case by
 * namespace-preserving suffixes is not needed: cases are loaded one at a
 * time. For each case, a random walk of changes. */
static void walk(const char *case_name, int steps)
{
    char rel[256];
    snprintf(rel, sizeof(rel), "translator/%s/input.yaml", case_name);
    cJSON *docs = load_yaml(rel);
    REQUIRE(docs);
    size_t n = (size_t)cJSON_GetArraySize(docs);
    cJSON **pool = calloc(n, sizeof(*pool)); /* originals */
    cJSON **cur = calloc(n, sizeof(*cur));   /* current version, NULL = absent */
    cJSON **owned = calloc(n * (size_t)(steps + 2), sizeof(*owned));
    size_t nowned = 0;
    for (size_t i = 0; i < n; i++)
        pool[i] = cJSON_GetArrayItem(docs, (int)i);
    struct xlate_ctx *inc = xlate_ctx_new();
    struct xlate_ctx *view = xlate_ctx_new();
    /* the same changes as records (the daemon's form), each dropped by the
     * caller right after the pass: the translator's references keep them */
    struct xlate_ctx *recs = xlate_ctx_new();
    size_t hint[XLATE_KIND_COUNT] = {0};
    struct xlate_snapshot *prev = NULL;
    for (int step = 0; step < steps; step++) {
        struct xlate_change ch[8];
        size_t nch = 0;
        size_t k = 1 + rnd() % 4;
        for (size_t j = 0; j < k && nch < 8; j++) {
            size_t i = rnd() % n;
            if (!cur[i] || rnd() % 3 == 0) { /* add (original) or delete */
                if (cur[i]) {
                    ch[nch++] = (struct xlate_change){.kind = xlate_kind_of(cur[i]),
                                                      .namespace = obj_ns(cur[i]),
                                                      .name = obj_name(cur[i])};
                    cur[i] = NULL;
                } else {
                    cur[i] = pool[i];
                    ch[nch++] = (struct xlate_change){.kind = XLATE_KIND_UNKNOWN, .obj = cur[i]};
                }
            } else { /* modify */
                cJSON *m = mutate(cur[i], (int)(rnd() % 16));
                owned[nowned++] = m;
                cur[i] = m;
                ch[nch++] = (struct xlate_change){.kind = XLATE_KIND_UNKNOWN, .obj = m};
            }
        }
        /* a key touched twice in one batch: only the last change counts in
         * |cur|, and the batch must agree: keep batches single-touch */
        struct xlate_snapshot *s1 = NULL, *s2 = NULL;
        if (getenv("XLATE_WALK_DEBUG"))
            for (size_t j = 0; j < nch; j++)
                fprintf(stderr, "# step %d: %s %s %s\n", step, ch[j].obj ? "upsert" : "delete",
                        ch[j].obj ? cx_json_str(ch[j].obj, "kind") : "?",
                        ch[j].obj ? obj_name(ch[j].obj) : ch[j].name);
        /* the evaluation time moves too: certificates expire and become
         * valid (2000, 2025, 2300) */
        static const int64_t nows[] = {946684800 + 86400, 1735689600, 10413792000};
        int64_t now = nows[(step / 3) % 3];
        REQUIRE_INT_EQ(xlate_run_changes_at(inc, ch, nch, now, &s1, NULL), 0);
        struct xlate_change rch[8];
        for (size_t j = 0; j < nch; j++) {
            rch[j] = ch[j];
            if (ch[j].obj) {
                enum xlate_kind kk = xlate_kind_of(ch[j].obj);
                rch[j].rec = xlate_record_new(kk, ch[j].obj, 0, NULL, kk >= 0 ? &hint[kk] : NULL);
                rch[j].obj = NULL;
                REQUIRE(rch[j].rec || kk == XLATE_KIND_UNKNOWN);
                if (!rch[j].rec) /* not the translator's: a no-op either way */
                    rch[j].obj = ch[j].obj;
            }
        }
        struct xlate_snapshot *s3 = NULL;
        REQUIRE_INT_EQ(xlate_run_changes_at(recs, rch, nch, now, &s3, NULL), 0);
        for (size_t j = 0; j < nch; j++)
            xlate_record_unref(rch[j].rec);
        char *got3 = render(s3);
        cJSON **live = calloc(n, sizeof(*live));
        size_t nl = 0;
        for (size_t i = 0; i < n; i++)
            if (cur[i])
                live[nl++] = cur[i];
        struct xlate_object *in = calloc(nl ? nl : 1, sizeof(*in));
        for (size_t i = 0; i < nl; i++)
            in[i] = (struct xlate_object){.kind = XLATE_KIND_UNKNOWN, .obj = live[i]};
        REQUIRE_INT_EQ(xlate_run(view, &(struct xlate_input){in, nl, now}, &s2, NULL), 0);
        char *want = fresh(live, nl, now);
        char *got1 = render(s1), *got2 = render(s2);
        REQUIRE(want && got1 && got2);
        if (strcmp(want, got1) != 0 || strcmp(want, got2) != 0) {
            FILE *f = fopen("/tmp/xlate_walk_want.json", "w");
            if (f) {
                fputs(want, f);
                fclose(f);
            }
            f = fopen("/tmp/xlate_walk_got.json", "w");
            if (f) {
                fputs(strcmp(want, got1) != 0 ? got1 : got2, f);
                fclose(f);
            }
            cxt_fail(__FILE__, __LINE__, 1,
                     "%s step %d: %s pass differs from a fresh translation (see "
                     "/tmp/xlate_walk_*.json)",
                     case_name, step, strcmp(want, got1) != 0 ? "incremental" : "full-view");
        }
        CHECK(s1 && s2 && strcmp(s1->version, s2->version) == 0);
        CHECK(got3 && strcmp(want, got3) == 0);
        CHECK(s3 && strcmp(s1->version, s3->version) == 0);
        free(got3);
        xlate_snapshot_unref(s3);
        CHECK(sets_sane(s1));
        /* the previous snapshot is still intact (immutable, refcounted) */
        if (prev) {
            char *old = render(prev);
            CHECK(old != NULL);
            free(old);
        }
        xlate_snapshot_unref(prev);
        prev = s1;
        xlate_snapshot_unref(s2);
        free(want);
        free(got1);
        free(got2);
        free(in);
        free(live);
    }
    xlate_ctx_free(inc);
    xlate_ctx_free(recs);
    /* a snapshot outlives its context */
    char *after = render(prev);
    CHECK(after != NULL);
    free(after);
    xlate_snapshot_unref(prev);
    xlate_ctx_free(view);
    for (size_t i = 0; i < nowned; i++)
        cJSON_Delete(owned[i]);
    free(owned);
    free(pool);
    free(cur);
    cJSON_Delete(docs);
}

static void walk_cases(const char *const *cases, size_t n)
{
    int steps = getenv("COXSWAIN_SANITIZE") && strcmp(getenv("COXSWAIN_SANITIZE"), "0") ? 25 : 60;
    if (getenv("XLATE_WALK_STEPS"))
        steps = (int)strtol(getenv("XLATE_WALK_STEPS"), NULL, 10);
    for (size_t i = 0; i < n; i++)
        walk(cases[i], steps);
}

#endif
