/*
 * The selector's field-error aggregator: NewRequirement's errors rendered
 * the way utilerrors.NewAggregate and field.Invalid print them.
 */
#include "filter_internal.h"
#include "filter_selector_impl.h"

#include <stdlib.h>
#include <string.h>

void filter_agg_init(struct agg *a)
{
    memset(a, 0, sizeof(*a));
}

void filter_agg_free(struct agg *a)
{
    for (size_t i = 0; i < a->n; i++)
        cx_buf_free(&a->msgs[i]);
}

/* Adds "<path>: Invalid value: <bad>: <detail>" (field.Invalid's text);
 * |bad| is already rendered (Go-quoted string or JSON list). */
void filter_agg_add(struct agg *a, size_t off, const char *path, const char *quoted_bad,
                    const char *detail)
{
    if (a->n == sizeof(a->msgs) / sizeof(a->msgs[0]))
        return; /* later ones are never shown: the first one is what counts */
    struct cx_buf *b = &a->msgs[a->n];
    cx_buf_init(b, FILTER_ERR_MAX * 4);
    if (cx_buf_printf(b, "%s: Invalid value: %s: %s", path, quoted_bad, detail) != 0) {
        a->oom = 1;
        cx_buf_free(b);
        return;
    }
    for (size_t i = 0; i < a->n; i++) {
        if (strcmp(a->msgs[i].data, b->data) == 0) {
            cx_buf_free(b);
            return;
        }
    }
    if (a->n == 0)
        a->first_off = off;
    a->n++;
}

void filter_agg_render(const struct agg *a, struct filter_error *err, const char *prefix)
{
    if (!err)
        return;
    struct cx_buf b;
    cx_buf_init(&b, FILTER_ERR_MAX * 8);
    int rc = cx_buf_puts(&b, prefix);
    if (a->n > 1)
        rc |= cx_buf_puts(&b, "[");
    for (size_t i = 0; i < a->n; i++) {
        if (i)
            rc |= cx_buf_puts(&b, ", ");
        rc |= cx_buf_puts(&b, a->msgs[i].data);
    }
    if (a->n > 1)
        rc |= cx_buf_puts(&b, "]");
    filter_err_set(err, a->first_off, "%s", rc == 0 && b.data ? b.data : "out of memory");
    cx_buf_free(&b);
}

/* Quotes |s| Go-style into a fresh buffer; NULL on failure. */
char *filter_quoted(const char *s)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    if (filter_go_quote(&b, s) != 0) {
        cx_buf_free(&b);
        return NULL;
    }
    return cx_buf_steal(&b, NULL);
}

/* Detail text of a key or value check into a fresh string; NULL on OOM. */
static char *check_detail(int (*check)(const char *, struct cx_buf *), const char *s, int *nerr)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    *nerr = check(s, &b);
    if (*nerr <= 0) {
        cx_buf_free(&b);
        return NULL;
    }
    return cx_buf_steal(&b, NULL);
}

/* Adds "<path>: Invalid value: "<s>": <check's errors>" if |s| fails. */
void filter_agg_check(struct agg *a, size_t off, const char *path,
                      int (*check)(const char *, struct cx_buf *), const char *s)
{
    int nerr = 0;
    char *detail = check_detail(check, s, &nerr);
    if (nerr < 0) {
        a->oom = 1;
        return;
    }
    if (nerr == 0)
        return;
    char *q = filter_quoted(s);
    if (!detail || !q)
        a->oom = 1;
    else
        filter_agg_add(a, off, path, q, detail);
    free(q);
    free(detail);
}
