#include "cx_flags.h"

#include "cx_buf.h"
#include "cx_json.h"
#include "cx_time.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

static const struct cx_flag *find_flag(const struct cx_flag *flags, size_t n, const char *name,
                                       size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(flags[i].name) == len && strncmp(flags[i].name, name, len) == 0)
            return &flags[i];
    return NULL;
}

static int parse_bool(const char *v, int *out)
{
    if (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "True") || !strcmp(v, "TRUE")) {
        *out = 1;
        return 0;
    }
    if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "False") || !strcmp(v, "FALSE")) {
        *out = 0;
        return 0;
    }
    return -1;
}

static int in_bounds(const struct cx_flag *f, double v)
{
    return !(f->min < f->max) || (v >= f->min && v <= f->max);
}

/* Sets |f| from text |v|; |origin| says where the value came from. */
static int set_flag(const struct cx_flag *f, const char *v, const char *origin, char *err,
                    size_t errlen)
{
    char derr[160];
    switch (f->type) {
    case CX_FLAG_BOOL: {
        int b;
        if (parse_bool(v, &b) != 0)
            goto bad;
        *(int *)f->target = b;
        return 0;
    }
    case CX_FLAG_STRING: {
        char *s = strdup(v);
        if (!s)
            goto bad;
        free(*(char **)f->target);
        *(char **)f->target = s;
        return 0;
    }
    case CX_FLAG_INT: {
        char *end;
        errno = 0;
        long x = strtol(v, &end, 10);
        if (errno || end == v || *end)
            goto bad;
        if (!in_bounds(f, (double)x)) {
            snprintf(err, errlen, "invalid value \"%s\" for --%s (%s): must be between %g and %g",
                     v, f->name, origin, f->min, f->max);
            return -1;
        }
        *(long *)f->target = x;
        return 0;
    }
    case CX_FLAG_DOUBLE: {
        char *end;
        errno = 0;
        double x = strtod(v, &end);
        if (errno || end == v || *end || !isfinite(x))
            goto bad;
        if (!in_bounds(f, x)) {
            snprintf(err, errlen, "invalid value \"%s\" for --%s (%s): must be between %g and %g",
                     v, f->name, origin, f->min, f->max);
            return -1;
        }
        *(double *)f->target = x;
        return 0;
    }
    case CX_FLAG_DURATION: {
        int64_t ns;
        if (cx_duration_parse(v, &ns, derr, sizeof(derr)) != 0) {
            snprintf(err, errlen, "invalid value \"%s\" for --%s (%s): %s", v, f->name, origin,
                     derr);
            return -1;
        }
        if (!in_bounds(f, (double)ns / 1e9)) {
            snprintf(err, errlen, "invalid value \"%s\" for --%s (%s): must be between %gs and %gs",
                     v, f->name, origin, f->min, f->max);
            return -1;
        }
        *(int64_t *)f->target = ns;
        return 0;
    }
    }
bad:
    snprintf(err, errlen, "invalid value \"%s\" for --%s (%s): expected %s", v, f->name, origin,
             f->type == CX_FLAG_BOOL  ? "true or false"
             : f->type == CX_FLAG_INT ? "an integer"
                                      : "a number");
    return -1;
}

/* Reads a YAML (or JSON, a subset of YAML) mapping of flag names to
 * scalars. */
static int apply_config_file(const struct cx_flag *flags, size_t n, const char *path, char *err,
                             size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot read config file %s: %s", path, strerror(errno));
        return -1;
    }
    yaml_parser_t p;
    yaml_event_t ev;
    int rc = -1, depth = 0, done = 0;
    char *key = NULL;
    char origin[512];
    snprintf(origin, sizeof(origin), "config file %s", path);
    yaml_parser_initialize(&p);
    yaml_parser_set_input_file(&p, f);
    while (!done) {
        if (!yaml_parser_parse(&p, &ev)) {
            snprintf(err, errlen, "config file %s: %s at line %zu", path,
                     p.problem ? p.problem : "syntax error", p.problem_mark.line + 1);
            goto out;
        }
        switch (ev.type) {
        case YAML_MAPPING_START_EVENT:
        case YAML_SEQUENCE_START_EVENT:
            depth++;
            if (depth > 1 || ev.type == YAML_SEQUENCE_START_EVENT) {
                snprintf(err, errlen,
                         "config file %s: line %zu: expected a flat mapping of flag names to "
                         "values",
                         path, ev.start_mark.line + 1);
                yaml_event_delete(&ev);
                goto out;
            }
            break;
        case YAML_MAPPING_END_EVENT:
            depth--;
            break;
        case YAML_SCALAR_EVENT: {
            const char *v = (const char *)ev.data.scalar.value;
            if (!key) {
                key = strdup(v);
                break;
            }
            const struct cx_flag *fl = find_flag(flags, n, key, strlen(key));
            if (!fl || strcmp(key, "config") == 0) {
                snprintf(err, errlen, "config file %s: line %zu: unknown flag \"%s\"", path,
                         ev.start_mark.line + 1, key);
                yaml_event_delete(&ev);
                goto out;
            }
            if (set_flag(fl, v, origin, err, errlen) != 0) {
                yaml_event_delete(&ev);
                goto out;
            }
            free(key);
            key = NULL;
            break;
        }
        case YAML_STREAM_END_EVENT:
            done = 1;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    rc = 0;
out:
    free(key);
    yaml_parser_delete(&p);
    fclose(f);
    return rc;
}

int cx_flags_parse(const struct cx_flag *flags, size_t n, int argc, char **argv, char *err,
                   size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        if (flags[i].type == CX_FLAG_STRING && *(char **)flags[i].target) {
            free(*(char **)flags[i].target);
            *(char **)flags[i].target = NULL;
        }
        const char *d = flags[i].def;
        if (!d)
            d = flags[i].type == CX_FLAG_BOOL     ? "false"
                : flags[i].type == CX_FLAG_STRING ? ""
                                                  : "0";
        if (set_flag(&flags[i], d, "default", err, errlen) != 0)
            return -1;
    }
    /* The config file path may come from argv or env: find it first. */
    const struct cx_flag *cfg = find_flag(flags, n, "config", 6);
    if (cfg && cfg->type == CX_FLAG_STRING) {
        const char *path = cfg->env ? getenv(cfg->env) : NULL;
        for (int i = 1; i < argc; i++) {
            if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
                path = argv[i + 1];
            else if (strncmp(argv[i], "--config=", 9) == 0)
                path = argv[i] + 9;
        }
        if (path && *path && apply_config_file(flags, n, path, err, errlen) != 0)
            return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const char *v = flags[i].env ? getenv(flags[i].env) : NULL;
        if (v && *v) {
            char origin[128];
            snprintf(origin, sizeof(origin), "environment variable %s", flags[i].env);
            if (set_flag(&flags[i], v, origin, err, errlen) != 0)
                return -1;
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            return 1;
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
            snprintf(err, errlen, "unexpected argument \"%s\" (flags look like --name=value)", a);
            return -1;
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const struct cx_flag *f = find_flag(flags, n, name, nlen);
        if (!f) {
            snprintf(err, errlen, "unknown flag --%.*s (see --help)", (int)nlen, name);
            return -1;
        }
        const char *v;
        if (eq) {
            v = eq + 1;
        } else if (f->type == CX_FLAG_BOOL) {
            v = "true";
        } else if (i + 1 < argc) {
            v = argv[++i];
        } else {
            snprintf(err, errlen, "flag --%s needs a value", f->name);
            return -1;
        }
        if (set_flag(f, v, "command line", err, errlen) != 0)
            return -1;
    }
    return 0;
}

void cx_flags_usage(FILE *out, const char *cmd, const char *summary, const struct cx_flag *flags,
                    size_t n)
{
    static const char *const tnames[] = {"", "string", "int", "duration", "number"};
    fprintf(out, "usage: %s [flags]\n\n", cmd);
    if (summary)
        fprintf(out, "%s\n\n", summary);
    fprintf(out, "flags:\n");
    for (size_t i = 0; i < n; i++) {
        const struct cx_flag *f = &flags[i];
        fprintf(out, "  --%s", f->name);
        if (f->type != CX_FLAG_BOOL)
            fprintf(out, " %s", tnames[f->type]);
        fprintf(out, "\n      %s", f->help ? f->help : "");
        if (f->def && *f->def)
            fprintf(out, " (default %s)", f->def);
        else if (f->type == CX_FLAG_BOOL)
            fprintf(out, " (default false)");
        if (f->env)
            fprintf(out, " [env %s]", f->env);
        fprintf(out, "\n");
    }
    fprintf(out, "  --help\n      print this help\n");
}

static int secret_name(const char *name)
{
    return strstr(name, "token") || strstr(name, "password") || strstr(name, "key");
}

char *cx_flags_json(const struct cx_flag *flags, size_t n)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    int rc = cx_buf_puts(&b, "{");
    for (size_t i = 0; i < n; i++) {
        const struct cx_flag *f = &flags[i];
        rc |= cx_buf_puts(&b, i ? "," : "");
        rc |= cx_json_escape(&b, f->name);
        rc |= cx_buf_puts(&b, ":");
        switch (f->type) {
        case CX_FLAG_BOOL:
            rc |= cx_buf_puts(&b, *(int *)f->target ? "true" : "false");
            break;
        case CX_FLAG_STRING: {
            const char *s = *(char **)f->target;
            if (s && *s && secret_name(f->name))
                s = "(redacted)";
            rc |= cx_json_escape(&b, s ? s : "");
            break;
        }
        case CX_FLAG_INT:
            rc |= cx_buf_printf(&b, "%ld", *(long *)f->target);
            break;
        case CX_FLAG_DOUBLE:
            rc |= cx_buf_printf(&b, "%.17g", *(double *)f->target);
            break;
        case CX_FLAG_DURATION: {
            char d[64];
            cx_duration_format(*(int64_t *)f->target, d, sizeof(d));
            rc |= cx_json_escape(&b, d);
            break;
        }
        }
    }
    rc |= cx_buf_puts(&b, "}");
    if (rc) {
        cx_buf_free(&b);
        return NULL;
    }
    return cx_buf_steal(&b, NULL);
}

void cx_flags_free(const struct cx_flag *flags, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (flags[i].type == CX_FLAG_STRING) {
            free(*(char **)flags[i].target);
            *(char **)flags[i].target = NULL;
        }
    }
}
