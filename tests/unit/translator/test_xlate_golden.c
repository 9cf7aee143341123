/*
 * Golden cases: tests/data/translator/<case>/input.yaml translated must give
 * exactly <case>/xds.json (the snapshot, resources as proto3 JSON) and
 * <case>/reports.json. For every case the test also checks determinism
 * (shuffled input order, fresh context: identical bytes and versions) and
 * that a second pass over the same input reuses every resource, and that the
 * same objects decoded into records (xlate_record_new, their JSON freed at
 * once, as the daemon holds them) give the same bytes.
 *
 * Every case is translated at the same evaluation time, GOLDEN_NOW
 * (2025-01-01T00:00:00Z): certificate validity Warnings are reproducible.
 *
 * COXSWAIN_GOLDEN_UPDATE=1 rewrites the expected files (review the diff!).
 */
#include "cx_buf.h"
#include "cx_yaml.h"
#include "cxtest.h"
#include "xlate.h"
#include "xlate_render.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define GOLDEN_NOW INT64_C(1735689600)

struct loaded {
    cJSON *docs;
    struct xlate_object *objs;
    size_t n;
};

static int load(const char *dir, struct loaded *l)
{
    char path[1200];
    snprintf(path, sizeof(path), "%s/input.yaml", dir);
    size_t len;
    char *data = cxt_read_file(path, &len);
    if (!data)
        return -1;
    char err[256];
    l->docs = cx_yaml_parse(data, len, err, sizeof(err));
    free(data);
    if (!l->docs) {
        fprintf(stderr, "# %s: %s\n", path, err);
        return -1;
    }
    l->n = (size_t)cJSON_GetArraySize(l->docs);
    l->objs = calloc(l->n ? l->n : 1, sizeof(*l->objs));
    size_t i = 0;
    cJSON *d;
    cJSON_ArrayForEach(d, l->docs)
    {
        l->objs[i++] = (struct xlate_object){.kind = XLATE_KIND_UNKNOWN, .obj = d};
    }
    return 0;
}

static char *render_groups(const struct xlate_snapshot *s)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    if (xlate_render_groups(s, 0, &b) != 0 || cx_buf_puts(&b, "\n") != 0) {
        cx_buf_free(&b);
        return NULL;
    }
    return cx_buf_steal(&b, NULL);
}

static char *render_reports(const struct xlate_snapshot *s)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    if (xlate_render_reports(s, 0, &b) != 0 || cx_buf_puts(&b, "\n") != 0) {
        cx_buf_free(&b);
        return NULL;
    }
    return cx_buf_steal(&b, NULL);
}

static void compare(const char *dir, const char *file, const char *got)
{
    char path[1200];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    const char *upd = getenv("COXSWAIN_GOLDEN_UPDATE");
    if (upd && strcmp(upd, "1") == 0) {
        FILE *f = fopen(path, "w");
        REQUIRE(f);
        fputs(got, f);
        fclose(f);
        return;
    }
    char *want = cxt_read_file(path, NULL);
    if (!want) {
        cxt_fail(__FILE__, __LINE__, 0, "%s missing (COXSWAIN_GOLDEN_UPDATE=1 writes it)", path);
        return;
    }
    if (strcmp(want, got) != 0) {
        /* show the first differing line */
        const char *a = want, *b = got;
        int line = 1;
        while (*a && *a == *b) {
            if (*a == '\n')
                line++;
            a++;
            b++;
        }
        cxt_fail(__FILE__, __LINE__, 0, "%s differs at line %d: want \"%.80s\" got \"%.80s\"", path,
                 line, a, b);
    }
    free(want);
}

/* xorshift: a fixed, portable shuffle */
static uint64_t rng_state = 88172645463325252ULL;
static uint64_t rnd(void)
{
    return cxt_xorshift(&rng_state);
}

static int run_case(const char *dir)
{
    struct loaded l = {0};
    int failures_before = 0;
    if (load(dir, &l) != 0) {
        cxt_fail(__FILE__, __LINE__, 0, "%s: cannot load input.yaml", dir);
        return -1;
    }
    struct xlate_ctx *ctx = xlate_ctx_new();
    struct xlate_snapshot *s1 = NULL, *s2 = NULL;
    struct xlate_stats st;
    REQUIRE(ctx);
    REQUIRE_INT_EQ(xlate_run(ctx, &(struct xlate_input){l.objs, l.n, GOLDEN_NOW}, &s1, &st), 0);
    char *groups = render_groups(s1);
    char *reports = render_reports(s1);
    REQUIRE(groups && reports);
    compare(dir, "xds.json", groups);
    compare(dir, "reports.json", reports);

    /* the same input again: nothing is rebuilt, every resource is shared */
    REQUIRE_INT_EQ(xlate_run(ctx, &(struct xlate_input){l.objs, l.n, GOLDEN_NOW}, &s2, &st), 0);
    CHECK_INT_EQ(st.parsed, 0);
    CHECK_INT_EQ(st.vhosts_built, 0);
    CHECK_INT_EQ(st.resources_built, 0);
    CHECK_STR_EQ(s1->version, s2->version);
    CHECK_INT_EQ(s1->ngroups, s2->ngroups);
    for (size_t g = 0; g < s1->ngroups && g < s2->ngroups; g++)
        for (int t = 0; t < XDS_TYPE_COUNT; t++) {
            CHECK_INT_EQ(s1->groups[g].types[t].n, s2->groups[g].types[t].n);
            for (size_t i = 0; i < s1->groups[g].types[t].n && i < s2->groups[g].types[t].n; i++)
                CHECK(s1->groups[g].types[t].items[i] == s2->groups[g].types[t].items[i]);
        }
    xlate_snapshot_unref(s2);

    /* shuffled input, fresh context: byte-identical output */
    for (int round = 0; round < 3; round++) {
        for (size_t i = l.n; i > 1; i--) {
            size_t j = rnd() % i;
            struct xlate_object t = l.objs[i - 1];
            l.objs[i - 1] = l.objs[j];
            l.objs[j] = t;
        }
        struct xlate_ctx *c2 = xlate_ctx_new();
        struct xlate_snapshot *s3 = NULL;
        REQUIRE_INT_EQ(xlate_run(c2, &(struct xlate_input){l.objs, l.n, GOLDEN_NOW}, &s3, NULL), 0);
        char *g3 = render_groups(s3);
        char *r3 = render_reports(s3);
        CHECK_STR_EQ(s3->version, s1->version);
        CHECK(g3 && strcmp(g3, groups) == 0);
        CHECK(r3 && strcmp(r3, reports) == 0);
        free(g3);
        free(r3);
        xlate_snapshot_unref(s3);
        xlate_ctx_free(c2);
    }
    /* the objects as records, decoded from a copy of the JSON that is
     * freed before the translation: the same bytes, versions and reports */
    {
        cJSON *copy = cJSON_Duplicate(l.docs, 1);
        REQUIRE(copy);
        struct xlate_object *robjs = calloc(l.n ? l.n : 1, sizeof(*robjs));
        REQUIRE(robjs);
        size_t nr = 0, hint[XLATE_KIND_COUNT] = {0};
        cJSON *d;
        cJSON_ArrayForEach(d, copy)
        {
            enum xlate_kind k = xlate_kind_of(d);
            struct xlate_record *r =
                xlate_record_new(XLATE_KIND_UNKNOWN, d, 0, NULL, k >= 0 ? &hint[k] : NULL);
            if (!r) {
                /* not a kind the translator reads: it gives no report either way */
                CHECK_INT_EQ(k, XLATE_KIND_UNKNOWN);
                continue;
            }
            CHECK_INT_EQ(xlate_record_kind(r), k);
            CHECK(xlate_record_digest(r) == xlate_digest(d));
            robjs[nr++] = (struct xlate_object){.rec = r};
        }
        cJSON_Delete(copy);
        struct xlate_ctx *c4 = xlate_ctx_new();
        struct xlate_snapshot *s4 = NULL;
        REQUIRE_INT_EQ(xlate_run(c4, &(struct xlate_input){robjs, nr, GOLDEN_NOW}, &s4, NULL), 0);
        /* the translator holds its own references */
        for (size_t i = 0; i < nr; i++)
            xlate_record_unref(robjs[i].rec);
        char *g4 = render_groups(s4);
        char *r4 = render_reports(s4);
        CHECK_STR_EQ(s4->version, s1->version);
        CHECK(g4 && strcmp(g4, groups) == 0);
        CHECK(r4 && strcmp(r4, reports) == 0);
        free(g4);
        free(r4);
        xlate_snapshot_unref(s4);
        xlate_ctx_free(c4);
        free(robjs);
    }
    (void)failures_before;
    free(groups);
    free(reports);
    xlate_snapshot_unref(s1);
    xlate_ctx_free(ctx);
    free(l.objs);
    cJSON_Delete(l.docs);
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_golden_cases(void)
{
    const char *root = cxt_data_path("translator");
    DIR *d = opendir(root);
    REQUIRE(d);
    char *names[256];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && n < 256)
        if (de->d_name[0] != '.')
            names[n++] = strdup(de->d_name);
    closedir(d);
    qsort(names, n, sizeof(*names), name_cmp);
    size_t cases = 0;
    for (size_t i = 0; i < n; i++) {
        char dir[1024];
        struct stat st;
        snprintf(dir, sizeof(dir), "%s/%s", root, names[i]);
        if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
            run_case(dir);
            cases++;
        }
        free(names[i]);
    }
    printf("# %zu golden cases\n", cases);
    CHECK_INT_GE(cases, 30);
}

static const struct cxt_case cases[] = {
    CXT(test_golden_cases),
};
CXT_MAIN(cases)
