/*
 * Label selectors: matching, accessors and the canonical string (the
 * parser is filter_selector.c).
 */
#include "cx_json.h"
#include "filter_internal.h"
#include "filter_selector.h"
#include "filter_selector_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void filter_selector_free(struct filter_selector *sel)
{
    if (!sel)
        return;
    for (size_t i = 0; i < sel->n; i++) {
        for (size_t j = 0; j < sel->reqs[i].nvalues; j++)
            free(sel->reqs[i].values[j]);
        free(sel->reqs[i].values);
        free(sel->reqs[i].key);
    }
    free(sel->reqs);
    free(sel);
}

struct filter_selector *filter_selector_everything(void)
{
    return calloc(1, sizeof(struct filter_selector));
}
/* ---- matching ------------------------------------------------------------ */

static int has_value(const struct filter_req *r, const char *v)
{
    if (r->nvalues <= 8) {
        for (size_t i = 0; i < r->nvalues; i++)
            if (strcmp(r->values[i], v) == 0)
                return 1;
        return 0;
    }
    size_t lo = 0, hi = r->nvalues;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(r->values[mid], v);
        if (c == 0)
            return 1;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* Requirement.Matches; |v| is the label's value or NULL if absent. */
static int req_matches(const struct filter_req *r, const char *v)
{
    long long n;
    switch (r->op) {
    case FILTER_OP_IN:
    case FILTER_OP_EQUALS:
    case FILTER_OP_DOUBLE_EQUALS:
        return v && has_value(r, v);
    case FILTER_OP_NOT_IN:
    case FILTER_OP_NOT_EQUALS:
        return !v || !has_value(r, v);
    case FILTER_OP_EXISTS:
        return v != NULL;
    case FILTER_OP_NOT_EXISTS:
        return v == NULL;
    case FILTER_OP_GT:
        return v && filter_parse_int64(v, &n) == 0 && n > r->num;
    case FILTER_OP_LT:
        return v && filter_parse_int64(v, &n) == 0 && n < r->num;
    }
    return 0;
}

int filter_selector_matches(const struct filter_selector *sel, const cJSON *labels)
{
    if (!sel)
        return 1;
    if (sel->nothing)
        return 0;
    for (size_t i = 0; i < sel->n; i++) {
        const char *v = NULL;
        if (cJSON_IsObject(labels)) {
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(labels, sel->reqs[i].key);
            if (cJSON_IsString(c))
                v = c->valuestring;
        }
        if (!req_matches(&sel->reqs[i], v))
            return 0;
    }
    return 1;
}

int filter_selector_matches_fn(const struct filter_selector *sel, filter_label_get_fn get,
                               void *user_data)
{
    if (!sel)
        return 1;
    if (sel->nothing)
        return 0;
    for (size_t i = 0; i < sel->n; i++)
        if (!req_matches(&sel->reqs[i], get(user_data, sel->reqs[i].key)))
            return 0;
    return 1;
}

int filter_selector_is_everything(const struct filter_selector *sel)
{
    return !sel || (!sel->nothing && sel->n == 0);
}

int filter_selector_is_nothing(const struct filter_selector *sel)
{
    return sel && sel->nothing;
}

size_t filter_selector_count(const struct filter_selector *sel)
{
    return sel ? sel->n : 0;
}

int filter_selector_get(const struct filter_selector *sel, size_t i, const char **key,
                        enum filter_op *op, const char *const **values, size_t *nvalues)
{
    if (!sel || i >= sel->n)
        return -1;
    if (key)
        *key = sel->reqs[i].key;
    if (op)
        *op = sel->reqs[i].op;
    if (values)
        *values = (const char *const *)sel->reqs[i].values;
    if (nvalues)
        *nvalues = sel->reqs[i].nvalues;
    return 0;
}

/* ---- canonical string ----------------------------------------------------- */

static int req_string(const struct filter_req *r, struct cx_buf *b)
{
    int rc = 0;
    if (r->op == FILTER_OP_NOT_EXISTS)
        rc |= cx_buf_puts(b, "!");
    rc |= cx_buf_puts(b, r->key);
    switch (r->op) {
    case FILTER_OP_EXISTS:
    case FILTER_OP_NOT_EXISTS:
        return rc ? -1 : 0;
    case FILTER_OP_EQUALS:
    case FILTER_OP_DOUBLE_EQUALS:
        rc |= cx_buf_puts(b, "=");
        break;
    case FILTER_OP_NOT_EQUALS:
        rc |= cx_buf_puts(b, "!=");
        break;
    case FILTER_OP_GT:
        rc |= cx_buf_puts(b, ">");
        break;
    case FILTER_OP_LT:
        rc |= cx_buf_puts(b, "<");
        break;
    case FILTER_OP_IN:
        rc |= cx_buf_puts(b, " in (");
        break;
    case FILTER_OP_NOT_IN:
        rc |= cx_buf_puts(b, " notin (");
        break;
    }
    for (size_t i = 0; i < r->nvalues; i++) {
        if (i)
            rc |= cx_buf_puts(b, ",");
        rc |= cx_buf_puts(b, r->values[i]);
    }
    if (r->op == FILTER_OP_IN || r->op == FILTER_OP_NOT_IN)
        rc |= cx_buf_puts(b, ")");
    return rc ? -1 : 0;
}

struct rstr {
    const char *key;
    char *s;
};

static int rstr_cmp(const void *a, const void *b)
{
    const struct rstr *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : strcmp(x->s, y->s);
}

int filter_selector_string(const struct filter_selector *sel, struct cx_buf *out)
{
    if (!sel || sel->nothing || sel->n == 0)
        return cx_buf_append(out, "", 0);
    int rc = 0;
    struct rstr *v = calloc(sel->n, sizeof(*v));
    if (!v)
        return -1;
    for (size_t i = 0; i < sel->n && rc == 0; i++) {
        struct cx_buf b;
        cx_buf_init(&b, 0);
        rc = req_string(&sel->reqs[i], &b);
        v[i].key = sel->reqs[i].key;
        v[i].s = rc == 0 ? cx_buf_steal(&b, NULL) : NULL;
        if (!v[i].s)
            rc = -1;
        cx_buf_free(&b);
    }
    if (rc == 0) {
        qsort(v, sel->n, sizeof(*v), rstr_cmp);
        for (size_t i = 0; i < sel->n && rc == 0; i++) {
            if (i && strcmp(v[i].s, v[i - 1].s) == 0)
                continue;
            if (i)
                rc |= cx_buf_puts(out, ",");
            rc |= cx_buf_puts(out, v[i].s);
        }
    }
    for (size_t i = 0; i < sel->n; i++)
        free(v[i].s);
    free(v);
    return rc ? -1 : 0;
}
