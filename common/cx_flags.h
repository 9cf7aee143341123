/*
 * cx_flags: command-line flags in the style of Kubernetes components
 * (`--name=value`, `--name value`, bare `--bool`), with environment
 * variables and an optional YAML/JSON config file.
 *
 * Precedence, lowest first: the flag's default, the config file, the
 * environment variable, the command line. Every flag documents its default;
 * `cx_flags_usage` prints them all. Not thread-safe (start-up only).
 */
#ifndef CX_FLAGS_H
#define CX_FLAGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum cx_flag_type {
    CX_FLAG_BOOL = 0,     /* int *: 0/1; "true/false/1/0" */
    CX_FLAG_STRING = 1,   /* char **: malloc'ed copy (free with cx_flags_free) */
    CX_FLAG_INT = 2,      /* long *: decimal, range-checked by min/max */
    CX_FLAG_DURATION = 3, /* int64_t *: nanoseconds, Go syntax ("15s", "500ms") */
    CX_FLAG_DOUBLE = 4,   /* double * */
};

struct cx_flag {
    const char *name; /* without dashes: "leader-elect-lease-duration" */
    enum cx_flag_type type;
    void *target;
    const char *def; /* default as text (NULL: empty / false / 0) */
    const char *env; /* environment variable that sets it, or NULL */
    const char *help;
    double min, max; /* INT/DOUBLE/DURATION(seconds) bounds when min < max */
};

/* Sets every flag to its default, then applies the config file named by
 * the flag "config" if the table has one and it is set (YAML or JSON
 * mapping of flag names to scalar values), then environment variables,
 * then argv[1..]. Positional arguments are refused. `--help`/`-h` makes it
 * return 1 (caller prints usage, exits 0). STRING targets must start NULL
 * or hold a malloc'ed string (they are replaced). Returns 0 on success, 1 for
 * help, -1 with a message in |err| naming the flag and what is wrong. */
int cx_flags_parse(const struct cx_flag *flags, size_t n, int argc, char **argv, char *err,
                   size_t errlen);

/* Prints "usage: <cmd> [flags]" and every flag with its type, default and
 * environment variable. */
void cx_flags_usage(FILE *out, const char *cmd, const char *summary, const struct cx_flag *flags,
                    size_t n);

/* Writes every flag's current value as a JSON object (for /debug/config);
 * flags whose name contains "token", "password" or "key" are redacted.
 * Caller frees. */
char *cx_flags_json(const struct cx_flag *flags, size_t n);

/* Frees the strings CX_FLAG_STRING targets hold. */
void cx_flags_free(const struct cx_flag *flags, size_t n);

#endif
