/*
 * xlate_re2: an RE2 syntax checker, so a regex Envoy or gRPC would refuse is
 * Rejected at translation time instead of NACKed by every proxy.
 *
 * Envoy and gRPC compile RegexMatcher.regex with Google RE2 (default options:
 * Perl classes, non-POSIX). This file follows RE2's parser (re2/parse.cc):
 * what it accepts and the error text it gives ("invalid escape sequence: \1",
 * "invalid perl operator: (?=", "bad repetition operator: **", ...). RE2
 * refuses what backtracking engines allow: backreferences, lookahead and
 * lookbehind, possessive quantifiers, atomic groups, \Z, \G, repetition
 * counts above 1000 (also nested: (a{100}){100}).
 *
 * It is checked against the real thing: tests/integration/translator/
 * test_re2_differential.sh compares verdicts with libre2 (the 2022 RE2 that
 * Debian's gRPC links) on a corpus and 200k random regexes. Deliberate
 * differences, both "refused by one of the RE2s a proxy may run": a capture
 * group name used twice (2022 accepts, newer RE2 refuses), and (?<name>re)
 * (newer RE2 accepts, 2022 refuses; (?P<name>re) works everywhere).
 *
 * Pure functions; thread-safe.
 */
#ifndef XLATE_RE2_H
#define XLATE_RE2_H

#include <stddef.h>

/* Longest regex accepted (bytes). Envoy's default program-size limit makes
 * anything near this useless anyway; the cap bounds our work. */
#define XLATE_RE2_MAX_LEN 4096

/* 0 if RE2 accepts |re| (|len| bytes), else -1 with RE2's message in |err|
 * (|errlen| bytes; may be NULL). The empty regex is refused (Envoy requires
 * at least one byte). */
int xlate_re2_check(const char *re, size_t len, char *err, size_t errlen);

/* The literal text every full match of |re| starts with ("/api/v1" for
 * "/api/v1/.*", "" for "(a|b)/x" or "(?i)/api"), written NUL-terminated into
 * |out| (|outlen| bytes; a longer prefix is cut, which only shortens it).
 * |re| must have passed xlate_re2_check. Returns the prefix length. */
size_t xlate_re2_literal_prefix(const char *re, size_t len, char *out, size_t outlen);

/* A rough RE2 program size (instructions), for the warning about Envoy's
 * default limit (runtime re2.max_program_size.error_level = 100). */
int xlate_re2_program_size(const char *re, size_t len);

#endif
