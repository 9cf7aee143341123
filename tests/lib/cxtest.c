#include "cxtest.h"

#include <openssl/evp.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef CXT_DATA_DIR
#define CXT_DATA_DIR "tests/data"
#endif

static jmp_buf case_jmp;
static int case_failed;
static const char *case_skip;

void cxt_fail(const char *file, int line, int fatal, const char *fmt, ...)
{
    va_list ap;
    fprintf(stdout, "# %s:%d: check failed: ", file, line);
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
    case_failed = 1;
    if (fatal)
        longjmp(case_jmp, 1);
}

void cxt_skip(const char *reason)
{
    case_skip = reason;
    longjmp(case_jmp, 1);
}

const char *cxt_data_path(const char *rel)
{
    static char path[4096];
    const char *dir = getenv("CXT_DATA_DIR");
    snprintf(path, sizeof(path), "%s/%s", dir ? dir : CXT_DATA_DIR, rel);
    return path;
}

int cxt_slowdown(void)
{
    const char *s = getenv("COXSWAIN_SANITIZE");
    if (!s || !*s || strcmp(s, "0") == 0)
        return 1;
    if (strcmp(s, "valgrind") == 0)
        return 25;
    return 3;
}

uint64_t cxt_xorshift(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

char *cxt_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *p = malloc(cap + 1);
    size_t r;
    while (p && (r = fread(p + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            char *q = realloc(p, cap * 2 + 1);
            if (!q) {
                free(p);
                p = NULL;
                break;
            }
            p = q;
            cap *= 2;
        }
    }
    fclose(f);
    if (!p)
        return NULL;
    p[n] = '\0';
    if (len)
        *len = n;
    return p;
}

int cxt_main(int argc, char **argv, const struct cxt_case *cases, size_t n)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    size_t selected = 0;
    for (size_t i = 0; i < n; i++)
        if (!only || strstr(cases[i].name, only))
            selected++;
    printf("1..%zu\n", selected);
    int failed = 0;
    size_t num = 0;
    for (size_t i = 0; i < n; i++) {
        if (only && !strstr(cases[i].name, only))
            continue;
        num++;
        case_failed = 0;
        case_skip = NULL;
        fflush(stdout);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (setjmp(case_jmp) == 0)
            cases[i].fn();
        clock_gettime(CLOCK_MONOTONIC, &t1);
        /* slow cases say so (what a valgrind run's time is spent on) */
        double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        if (secs >= 1.0)
            printf("# %s took %.1f s\n", cases[i].name, secs);
        if (case_skip)
            printf("ok %zu - %s # SKIP %s\n", num, cases[i].name, case_skip);
        else if (case_failed)
            printf("not ok %zu - %s\n", num, cases[i].name);
        else
            printf("ok %zu - %s\n", num, cases[i].name);
        fflush(stdout);
        failed |= case_failed;
    }
    return failed ? 1 : 0;
}

char *cxt_read_file_b64(const char *path)
{
    size_t len;
    char *d = cxt_read_file(path, &len);
    if (!d)
        return NULL;
    char *out = malloc(4 * (len / 3 + 1) + 1);
    if (out)
        EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)d, (int)len);
    free(d);
    return out;
}
