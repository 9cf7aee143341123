/*
 * `coxswain translate -f PATH`: translates manifests offline, for operators'
 * CI. PATH is a YAML/JSON file (several documents allowed, kind List
 * expanded) or a directory searched for *.yaml, *.yml and *.json. Prints the
 * reports and the xDS snapshot as JSON on stdout; exits 1 if any object is
 * Rejected, 2 on usage or read errors, 0 otherwise.
 *
 * Private keys (from kubernetes.io/tls Secrets) are printed as
 * "[redacted]" unless --show-secrets asks for them. Certificates are judged
 * at the current time, or at --now (RFC 3339) for reproducible output.
 */
#include "cli.h"
#include "cx_buf.h"
#include "xlate_pbjson.h"
#include "cx_time.h"
#include "cx_yaml.h"
#include "xlate.h"
#include "xlate_render.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TRANSLATE_MAX_FILE  ((size_t)64 << 20) /* bytes per manifest file */
#define TRANSLATE_MAX_DEPTH 16                 /* directory nesting */

int cmd_translate(int argc, char **argv);

struct objs {
    cJSON *docs; /* array owning every document */
    size_t files;
};

static int has_ext(const char *name)
{
    size_t n = strlen(name);
    return (n > 5 && strcmp(name + n - 5, ".yaml") == 0) ||
           (n > 4 && strcmp(name + n - 4, ".yml") == 0) ||
           (n > 5 && strcmp(name + n - 5, ".json") == 0);
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct cx_buf b;
    cx_buf_init(&b, TRANSLATE_MAX_FILE);
    char chunk[65536];
    size_t n;
    int rc = 0;
    while (rc == 0 && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        rc = cx_buf_append(&b, chunk, n);
    int bad = ferror(f) || rc != 0;
    fclose(f);
    if (bad) {
        cx_buf_free(&b);
        errno = rc ? EFBIG : EIO;
        return NULL;
    }
    return cx_buf_steal(&b, len);
}

static int load_file(struct objs *o, const char *path)
{
    size_t len = 0;
    char *data = read_file(path, &len);
    if (!data) {
        fprintf(stderr, "translate: %s: %s\n", path, strerror(errno));
        return -1;
    }
    char err[300];
    cJSON *docs = cx_yaml_parse(data, len, err, sizeof(err));
    free(data);
    if (!docs) {
        fprintf(stderr, "translate: %s: %s\n", path, err);
        return -1;
    }
    o->files++;
    cJSON *d;
    while ((d = cJSON_DetachItemFromArray(docs, 0)) != NULL) {
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(d, "kind");
        const cJSON *items = cJSON_GetObjectItemCaseSensitive(d, "items");
        if (cJSON_IsString(kind) && strcmp(kind->valuestring, "List") == 0 &&
            cJSON_IsArray(items)) {
            cJSON *it;
            while ((it = cJSON_DetachItemFromArray((cJSON *)items, 0)) != NULL)
                cJSON_AddItemToArray(o->docs, it);
            cJSON_Delete(d);
        } else {
            cJSON_AddItemToArray(o->docs, d);
        }
    }
    cJSON_Delete(docs);
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int load_path(struct objs *o, const char *path, int depth)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "translate: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return load_file(o, path);
    if (depth >= TRANSLATE_MAX_DEPTH) {
        fprintf(stderr, "translate: %s: directories nest too deeply\n", path);
        return -1;
    }
    DIR *dir = opendir(path);
    if (!dir) {
        fprintf(stderr, "translate: %s: %s\n", path, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL && rc == 0) {
        if (de->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **nn = realloc(names, cap * sizeof(*nn));
            if (!nn) {
                rc = -1;
                break;
            }
            names = nn;
        }
        if (!(names[n] = strdup(de->d_name)))
            rc = -1;
        else
            n++;
    }
    closedir(dir);
    qsort(names, n, sizeof(*names), name_cmp); /* a stable order for messages */
    for (size_t i = 0; i < n && rc == 0; i++) {
        struct cx_buf p;
        cx_buf_init(&p, 4096);
        if (cx_buf_printf(&p, "%s/%s", path, names[i]) != 0) {
            rc = -1;
        } else if (stat(p.data, &st) == 0 && S_ISDIR(st.st_mode)) {
            rc = load_path(o, p.data, depth + 1);
        } else if (has_ext(names[i])) {
            rc = load_file(o, p.data);
        }
        cx_buf_free(&p);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: coxswain translate -f PATH [-f PATH...] [--reports-only]\n"
                 "                          [--show-secrets] [--now RFC3339] [--max-...=N]\n"
                 "\n"
                 "Translates Gateways, VirtualServices, RouteTables, Upstreams, Services,\n"
                 "EndpointSlices, Secrets and ConfigMaps from manifests (YAML or JSON files, or\n"
                 "directories of them) and prints {\"reports\": [...], \"snapshot\": {...}}\n"
                 "as JSON. Private keys are shown as \"[redacted]\" unless --show-secrets;\n"
                 "certificates are judged valid or expired now, or at --now.\n"
                 "The translator's budgets are those of `coxswain run` (same flags, same\n"
                 "environment variables, same defaults):\n"
                 "\n");
    struct xlate_limits lim;
    struct cx_flag flags[XLATE_LIMITS_FLAGS];
    size_t n = xlate_limits_flags(&lim, flags, XLATE_LIMITS_FLAGS);
    for (size_t i = 0; i < n; i++)
        fprintf(out, "  --%s=N (default %s, $%s)\n      %s\n", flags[i].name, flags[i].def,
                flags[i].env, flags[i].help);
    fprintf(out, "\nExit status: 0 all accepted (warnings allowed), 1 something was Rejected,\n"
                 "2 usage or read error.\n");
}

int cmd_translate(int argc, char **argv)
{
    struct objs o = {.docs = cJSON_CreateArray()};
    int status = 2, reports_only = 0, npaths = 0, show_secrets = 0;
    int64_t now_ns = cx_wall_ns();
    struct xlate_ctx *ctx = NULL;
    struct xlate_snapshot *snap = NULL;
    struct xlate_object *in = NULL;
    struct cx_buf out;
    cx_buf_init(&out, 0);
    /* the budget flags go to cx_flags with the table `coxswain run` uses */
    struct xlate_limits lim;
    struct cx_flag lflags[XLATE_LIMITS_FLAGS];
    size_t nlflags = xlate_limits_flags(&lim, lflags, XLATE_LIMITS_FLAGS);
    char **largv = calloc((size_t)argc + 1, sizeof(*largv));
    int largc = 1;
    if (!o.docs || !largv)
        goto done;
    largv[0] = argv[0];
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--max-", 6) == 0) {
            largv[largc++] = argv[i];
            if (!strchr(argv[i], '=') && i + 1 < argc)
                largv[largc++] = argv[++i];
            continue;
        }
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            status = 0;
            goto done;
        } else if (strcmp(argv[i], "--reports-only") == 0) {
            reports_only = 1;
        } else if (strcmp(argv[i], "--show-secrets") == 0) {
            show_secrets = 1;
        } else if ((strcmp(argv[i], "--now") == 0 && i + 1 < argc) ||
                   strncmp(argv[i], "--now=", 6) == 0) {
            const char *v = argv[i][5] == '=' ? argv[i] + 6 : argv[++i];
            if (cx_time_parse_rfc3339(v, &now_ns) != 0) {
                fprintf(stderr, "translate: --now: \"%s\" is not an RFC 3339 time\n", v);
                goto done;
            }
        } else if ((strcmp(argv[i], "-f") == 0 || strcmp(argv[i], "--filename") == 0) &&
                   i + 1 < argc) {
            if (load_path(&o, argv[++i], 0) != 0)
                goto done;
            npaths++;
        } else if (strncmp(argv[i], "--filename=", 11) == 0) {
            if (load_path(&o, argv[i] + 11, 0) != 0)
                goto done;
            npaths++;
        } else {
            fprintf(stderr, "translate: unknown argument \"%s\"\n\n", argv[i]);
            usage(stderr);
            goto done;
        }
    }
    if (npaths == 0) {
        usage(stderr);
        goto done;
    }
    char ferr[300];
    if (cx_flags_parse(lflags, nlflags, largc, largv, ferr, sizeof(ferr)) != 0) {
        fprintf(stderr, "translate: %s\n", ferr);
        goto done;
    }
    size_t n = (size_t)cJSON_GetArraySize(o.docs), used = 0;
    in = calloc(n ? n : 1, sizeof(*in));
    ctx = xlate_ctx_new_limits(&lim);
    if (!in || !ctx) {
        fprintf(stderr, "translate: out of memory\n");
        goto done;
    }
    cJSON *d;
    size_t ignored = 0;
    cJSON_ArrayForEach(d, o.docs)
    {
        enum xlate_kind k = xlate_kind_of(d);
        if (k == XLATE_KIND_UNKNOWN) {
            ignored++;
            continue;
        }
        in[used++] = (struct xlate_object){.kind = k, .obj = d};
    }
    struct xlate_input input = {.objects = in, .n = used, .now = now_ns / CX_NS_PER_S};
    if (xlate_run(ctx, &input, &snap, NULL) != 0) {
        fprintf(stderr, "translate: out of memory\n");
        goto done;
    }
    int rc = cx_buf_puts(&out, "{\n  \"reports\": ");
    rc |= xlate_render_reports(snap, 1, &out);
    if (!reports_only) {
        rc |= cx_buf_puts(&out, ",\n  \"snapshot\": ");
        int r =
            xlate_render_groups_flags(snap, 1, show_secrets ? XLATE_PBJSON_SHOW_SECRETS : 0, &out);
        rc |= r;
    }
    rc |= cx_buf_puts(&out, "\n}\n");
    if (rc != 0) {
        fprintf(stderr, "translate: the output does not fit in memory\n");
        goto done;
    }
    fwrite(out.data, 1, out.len, stdout);
    size_t acc, warn, rej;
    xlate_report_counts(snap, &acc, &warn, &rej);
    fprintf(stderr,
            "translate: %zu objects from %zu files: %zu accepted, %zu warning, %zu rejected", used,
            o.files, acc, warn, rej);
    if (ignored)
        fprintf(stderr, "; %zu objects of other kinds ignored", ignored);
    fprintf(stderr, "\n");
    status = rej ? 1 : 0;
done:
    free(largv);
    cx_buf_free(&out);
    xlate_snapshot_unref(snap);
    xlate_ctx_free(ctx);
    free(in);
    cJSON_Delete(o.docs);
    return status;
}
