/*
 * filter_internal: helpers shared by the files of the filters module and
 * by nobody else (not installed in any public header).
 */
#ifndef FILTER_INTERNAL_H
#define FILTER_INTERNAL_H

#include "cx_buf.h"
#include "filter_types.h"

#include <stdarg.h>

/* Sets |err| (may be NULL) to a formatted message at |offset|; truncates. */
__attribute__((format(printf, 3, 4))) void filter_err_set(struct filter_error *err, size_t offset,
                                                          const char *fmt, ...);

/* Appends |s| quoted the way Go's %q does (strconv.Quote) for the
 * characters that matter: ASCII printable as is, \" \\ \a \b \f \n \r \t \v,
 * other control bytes and invalid UTF-8 as \xNN, valid UTF-8 as is. */
__attribute__((warn_unused_result)) int filter_go_quote(struct cx_buf *b, const char *s);

/* Kubernetes' IsQualifiedName / IsValidLabelValue: appends the error
 * strings, joined with "; ", to |b| and returns how many there were (0 =
 * valid), or -1 if |b| could not grow. */
int filter_key_errors(const char *key, struct cx_buf *b);
int filter_value_errors(const char *value, struct cx_buf *b);

/* strconv.ParseInt(s, 10, 64): 0 and *out on success, -1 otherwise. */
int filter_parse_int64(const char *s, long long *out);

#endif
