/* store_obj: what the daemon keeps of an object instead of its JSON — the
 * translator's record, the filter digest computed during the decode, the
 * status and the TLS references — and the store's views of kept objects,
 * which must translate to exactly what the JSON translates to (every
 * golden case of tests/data/translator, through store views both ways). */
#include "cx_json.h"
#include "cx_yaml.h"
#include "cxtest.h"
#include "filter.h"
#include "store.h"
#include "store_kinds.h"
#include "store_obj.h"
#include "xlate.h"
#include "xlate_render.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define VS_JSON                                                                                \
    "{\"apiVersion\":\"coxswain.dev/v1\",\"kind\":\"VirtualService\",\"metadata\":{"           \
    "\"name\":\"web\",\"namespace\":\"shop\",\"uid\":\"u1\",\"generation\":3,"                 \
    "\"resourceVersion\":\"77\",\"labels\":{\"team\":\"edge\",\"tier\":\"1\"}},"               \
    "\"spec\":{\"domains\":[\"a.example.com\"],\"routes\":[{\"upstream\":{\"name\":\"u\"}}]}," \
    "\"status\":{\"state\":\"Accepted\",\"observedGeneration\":3,\"conditions\":[{\"type\":"   \
    "\"Accepted\",\"status\":\"True\",\"reason\":\"Accepted\",\"message\":\"ok \\\"q\\\"\","   \
    "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}"

static void test_decode_keeps_what_readers_need(void)
{
    cJSON *j = cx_json_parse(VS_JSON, strlen(VS_JSON));
    REQUIRE(j != NULL);
    struct store_decoder d;
    store_decoder_init(&d, NULL);
    const char *refs[] = {"S/shop/cert", "C/shop/ca"};
    struct store_obj *so = store_obj_decode(&d, XLATE_KIND_VIRTUAL_SERVICE, j, refs, 2);
    REQUIRE(so != NULL);
    /* the filter digest, computed during the decode, is the record's too */
    struct cx_buf scratch;
    cx_buf_init(&scratch, 0);
    uint64_t want = 0;
    REQUIRE_INT_EQ(filter_digest(j, &scratch, &want), 0);
    cx_buf_free(&scratch);
    CHECK(so->digest == want);
    CHECK(xlate_record_digest(so->rec) == want);
    CHECK_INT_EQ(xlate_record_kind(so->rec), XLATE_KIND_VIRTUAL_SERVICE);
    CHECK_STR_EQ(xlate_record_key(so->rec), "shop/web");
    CHECK_STR_EQ(store_obj_label(so, "team"), "edge");
    CHECK_STR_EQ(store_obj_label(so, "tier"), "1");
    CHECK(store_obj_label(so, "nope") == NULL);
    CHECK_INT_EQ(store_obj_generation(so), 3);
    CHECK_INT_EQ(so->nrefs, 2);
    CHECK_STR_EQ(so->refs[0], "S/shop/cert");
    CHECK_STR_EQ(so->refs[1], "C/shop/ca");
    /* a kube_obj holding it: the JSON goes, status and generation stay */
    struct kube_obj *o = kube_obj_new(cJSON_Duplicate(j, 1));
    REQUIRE(o != NULL);
    kube_obj_keep_rec(o, so, &store_obj_ops);
    CHECK(o->json == NULL);
    CHECK(store_obj_of(o) == so);
    CHECK_STR_EQ(o->rv, "77");
    CHECK_STR_EQ(kube_obj_label(o, "team"), "edge");
    CHECK_INT_EQ(store_kube_generation(o), 3);
    cJSON *st = store_obj_status(o);
    REQUIRE(st != NULL);
    CHECK(cJSON_Compare(st, cJSON_GetObjectItemCaseSensitive(j, "status"), 1));
    cJSON_Delete(st);
    kube_obj_unref(o);
    /* the JSON form answers the same */
    struct kube_obj *oj = kube_obj_new(cJSON_Duplicate(j, 1));
    REQUIRE(oj != NULL);
    CHECK(store_obj_of(oj) == NULL);
    CHECK_INT_EQ(store_kube_generation(oj), 3);
    st = store_obj_status(oj);
    CHECK(st && cJSON_Compare(st, cJSON_GetObjectItemCaseSensitive(j, "status"), 1));
    cJSON_Delete(st);
    kube_obj_unref(oj);
    /* kinds whose status coxswain does not write keep none */
    cJSON_ReplaceItemInObjectCaseSensitive(j, "kind", cJSON_CreateString("Service"));
    cJSON_ReplaceItemInObjectCaseSensitive(j, "apiVersion", cJSON_CreateString("v1"));
    so = store_obj_decode(&d, XLATE_KIND_SERVICE, j, NULL, 0);
    REQUIRE(so != NULL);
    CHECK(so->status == NULL && so->nrefs == 0);
    store_obj_free(so);
    /* a name no object can have: not a record (the JSON is kept) */
    char big[700];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "metadata"), "name",
                                           cJSON_CreateString(big));
    CHECK(store_obj_decode(&d, XLATE_KIND_SERVICE, j, NULL, 0) == NULL);
    store_decoder_free(&d);
    cJSON_Delete(j);
}

/* Objects whose statuses are the same text hold one copy of it, counted:
 * it outlives the first holder, goes with the last, and a different text
 * is a copy of its own. Each object still reads back its own status. */
static void test_equal_statuses_are_shared(void)
{
    size_t before = store_status_texts();
    cJSON *j = cx_json_parse(VS_JSON, strlen(VS_JSON));
    REQUIRE(j != NULL);
    struct store_decoder d;
    store_decoder_init(&d, NULL);
    struct store_obj *a = store_obj_decode(&d, XLATE_KIND_VIRTUAL_SERVICE, j, NULL, 0);
    cJSON *md = cJSON_GetObjectItemCaseSensitive(j, "metadata");
    cJSON_ReplaceItemInObjectCaseSensitive(md, "name", cJSON_CreateString("other"));
    struct store_obj *b = store_obj_decode(&d, XLATE_KIND_VIRTUAL_SERVICE, j, NULL, 0);
    REQUIRE(a && b && a->status && b->status);
    CHECK(a->status == b->status); /* one copy */
    CHECK_INT_EQ(store_status_texts(), before + 1);
    /* another status: its own text */
    cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "status");
    cJSON_ReplaceItemInObjectCaseSensitive(st, "state", cJSON_CreateString("Rejected"));
    struct store_obj *c = store_obj_decode(&d, XLATE_KIND_VIRTUAL_SERVICE, j, NULL, 0);
    REQUIRE(c && c->status);
    CHECK(c->status != a->status);
    CHECK(strstr(c->status, "\"Rejected\"") != NULL);
    CHECK(strstr(a->status, "\"Accepted\"") != NULL);
    CHECK_INT_EQ(store_status_texts(), before + 2);
    /* the first holder goes: the second still reads the text */
    store_obj_free(a);
    CHECK_INT_EQ(store_status_texts(), before + 2);
    cJSON *orig = cx_json_parse(VS_JSON, strlen(VS_JSON));
    REQUIRE(orig != NULL);
    char *want = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(orig, "status"));
    REQUIRE(want != NULL);
    CHECK_STR_EQ(b->status, want);
    free(want);
    cJSON_Delete(orig);
    store_obj_free(b);
    CHECK_INT_EQ(store_status_texts(), before + 1);
    store_obj_free(c);
    CHECK_INT_EQ(store_status_texts(), before);
    store_decoder_free(&d);
    cJSON_Delete(j);
}

/* ---- kept objects translate as their JSON does --------------------------------- */

static char *render(const struct xlate_snapshot *s)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    if (xlate_render_groups(s, 0, &b) != 0 || xlate_render_reports(s, 0, &b) != 0) {
        cx_buf_free(&b);
        return NULL;
    }
    return cx_buf_steal(&b, NULL);
}

/* Both stores hold the case's objects, one as JSON, one kept decoded;
 * full and incremental passes from their views must agree byte for byte. */
static void run_case(const char *dir, struct store_decoder *d)
{
    char path[1200];
    snprintf(path, sizeof(path), "%s/input.yaml", dir);
    size_t len;
    char *data = cxt_read_file(path, &len);
    REQUIRE(data != NULL);
    char err[256];
    cJSON *docs = cx_yaml_parse(data, len, err, sizeof(err));
    free(data);
    REQUIRE(docs != NULL);
    struct store *sj = store_new(), *sr = store_new();
    REQUIRE(sj && sr);
    struct cx_buf scratch;
    cx_buf_init(&scratch, 0);
    size_t kept = 0;
    const cJSON *doc;
    cJSON_ArrayForEach(doc, docs)
    {
        enum xlate_kind k = xlate_kind_of(doc);
        uint64_t dg = 0;
        if (k == XLATE_KIND_UNKNOWN || filter_digest(doc, &scratch, &dg) != 0)
            continue;
        struct kube_obj *oj = kube_obj_new(cJSON_Duplicate(doc, 1));
        struct kube_obj * or = kube_obj_new(cJSON_Duplicate(doc, 1));
        if (!oj || ! or) { /* no name: the informer never makes one */
            kube_obj_unref(oj);
            kube_obj_unref(or);
            continue;
        }
        struct store_obj *so = store_obj_decode(d, k, or->json, NULL, 0);
        if (so) {
            kube_obj_keep_rec(or, so, &store_obj_ops);
            kept++;
            CHECK(so->digest == (dg ? dg : 1));
        }
        if (store_put(sj, k, oj, dg) != 0)
            kube_obj_unref(oj);
        if (store_put(sr, k, or, so ? so->digest : dg) != 0)
            kube_obj_unref(or);
    }
    cx_buf_free(&scratch);
    CHECK_INT_GE(kept, 1);
    struct store_view *vj = store_view_new(sj), *vr = store_view_new(sr);
    REQUIRE(vj && vr);
    CHECK_INT_EQ(vj->n, vr->n);
    size_t recs = 0;
    for (size_t i = 0; i < vr->n; i++) {
        const struct store_obj *so = store_obj_of(vr->objs[i]);
        CHECK(vr->objects[i].rec == (so ? so->rec : NULL));
        CHECK((vr->objects[i].obj == NULL) == (so != NULL));
        recs += so != NULL;
    }
    CHECK_INT_GE(recs, 1);
    struct xlate_ctx *cj = xlate_ctx_new(), *cr = xlate_ctx_new();
    REQUIRE(cj && cr);
    struct xlate_snapshot *a = NULL, *b = NULL;
    struct xlate_input ij = store_view_input(vj), ir = store_view_input(vr);
    ij.now = ir.now = INT64_C(1735689600);
    REQUIRE_INT_EQ(xlate_run(cj, &ij, &a, NULL), 0);
    REQUIRE_INT_EQ(xlate_run(cr, &ir, &b, NULL), 0);
    CHECK_STR_EQ(a->version, b->version);
    char *ra = render(a), *rb = render(b);
    REQUIRE(ra && rb);
    if (strcmp(ra, rb) != 0)
        cxt_fail(__FILE__, __LINE__, 0, "%s: records and JSON translate differently", dir);
    free(ra);
    free(rb);
    xlate_snapshot_unref(a);
    xlate_snapshot_unref(b);
    store_view_unref(vj);
    store_view_unref(vr);
    xlate_ctx_free(cj);
    xlate_ctx_free(cr);
    store_free(sj);
    store_free(sr);
    cJSON_Delete(docs);
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_kept_objects_translate_as_their_json(void)
{
    const char *root = cxt_data_path("translator");
    DIR *dd = opendir(root);
    REQUIRE(dd);
    char *names[256];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(dd)) != NULL && n < 256)
        if (de->d_name[0] != '.')
            names[n++] = strdup(de->d_name);
    closedir(dd);
    qsort(names, n, sizeof(*names), name_cmp);
    struct store_decoder d;
    store_decoder_init(&d, NULL);
    size_t cases = 0;
    for (size_t i = 0; i < n; i++) {
        char dir[1024];
        struct stat st;
        snprintf(dir, sizeof(dir), "%s/%s", root, names[i]);
        if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
            run_case(dir, &d);
            cases++;
        }
        free(names[i]);
    }
    store_decoder_free(&d);
    printf("# %zu golden cases through store views\n", cases);
    CHECK_INT_GE(cases, 30);
}

static const struct cxt_case cases[] = {
    CXT(test_decode_keeps_what_readers_need),
    CXT(test_equal_statuses_are_shared),
    CXT(test_kept_objects_translate_as_their_json),
};
CXT_MAIN(cases)
