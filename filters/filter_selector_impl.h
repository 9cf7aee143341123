/*
 * filter_selector_impl: the selector's representation and the field-error
 * aggregator, shared by the parser (filter_selector.c), the matcher
 * (filter_selector_match.c) and the aggregator (filter_selector_agg.c).
 */
#ifndef FILTER_SELECTOR_IMPL_H
#define FILTER_SELECTOR_IMPL_H

#include "cx_buf.h"
#include "filter_types.h"

#include <stddef.h>

struct filter_req {
    char *key;
    enum filter_op op;
    char **values; /* sorted, unique */
    size_t nvalues;
    long long num; /* gt/lt operand */
};

struct filter_selector {
    struct filter_req *reqs;
    size_t n;
    int nothing;
};

/* Collects the field errors of one requirement, then renders them like
 * utilerrors.NewAggregate: one error as is, several as "[a, b]", identical
 * messages once. */
struct agg {
    struct cx_buf msgs[8];
    size_t n;
    size_t first_off;
    int oom;
};

void filter_agg_init(struct agg *a);
void filter_agg_free(struct agg *a);
/* Adds "<path>: Invalid value: <bad>: <detail>" (field.Invalid's text);
 * |bad| is already rendered (Go-quoted string or JSON list). */
void filter_agg_add(struct agg *a, size_t off, const char *path, const char *quoted_bad,
                    const char *detail);
void filter_agg_render(const struct agg *a, struct filter_error *err, const char *prefix);
/* Quotes |s| Go-style into a fresh buffer; NULL on failure. */
char *filter_quoted(const char *s);
/* Adds "<path>: Invalid value: "<s>": <check's errors>" if |s| fails. */
void filter_agg_check(struct agg *a, size_t off, const char *path,
                      int (*check)(const char *, struct cx_buf *), const char *s);

#endif
