/*
 * xlate_re2: what Google RE2 itself makes of a regex, so that a regex Envoy
 * or gRPC would refuse is Rejected at translation time instead of NACKed by
 * every proxy of a Gateway.
 *
 * Envoy and gRPC compile RegexMatcher.regex with RE2 (default options:
 * UTF-8, Perl classes, non-POSIX). This is a small C shim over Debian's
 * libre2 (xlate_re2.cc, compiled as C++): RE2's own verdict and error
 * message, the exact program size that Envoy compares with
 * re2.max_program_size.error_level (RE2::ProgramSize), and the literal
 * text every match starts with (from RE2::PossibleMatchRange). RE2 refuses
 * what backtracking engines allow: backreferences, lookaround, possessive
 * quantifiers, atomic groups, \Z, \G, repetition counts above 1000.
 *
 * Pure: no I/O, no globals; thread-safe. Memory: RE2 bounds one
 * compilation by its max_mem (8 MiB); the length cap below bounds the work.
 */
#ifndef XLATE_RE2_H
#define XLATE_RE2_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Longest regex accepted (bytes): far above any real route's, and with
 * Envoy's default program-size limit anything near it is refused anyway. */
#define XLATE_RE2_MAX_LEN 4096

/* Longest literal prefix reported (bytes, without the NUL); a longer one is
 * cut, which only shortens it. */
#define XLATE_RE2_PREFIX_MAX 255

/* What RE2 makes of an accepted regex. */
struct xlate_re2_info {
    int program_size; /* RE2::ProgramSize(): instructions of the compiled program */
    /* The literal text every full match starts with ("/api/v1/" for
     * "/api/v1/.*", "" for "(a|b)/x"), NUL-terminated. */
    char prefix[XLATE_RE2_PREFIX_MAX + 1];
};

enum {
    XLATE_RE2_OK = 0,
    XLATE_RE2_INVALID = -1, /* refused: |err| holds why */
    XLATE_RE2_NOMEM = -2,   /* memory ran out (|err| says so too) */
};

/* Compiles |re| (|len| bytes, not NUL-terminated necessarily) as Envoy does.
 * Returns XLATE_RE2_OK and fills |info| (may be NULL), or XLATE_RE2_INVALID
 * with RE2's message ("invalid perl operator: (?=") in |err| (|errlen|
 * bytes, NUL-terminated, may be NULL): also for the empty regex (Envoy
 * requires one byte), one longer than XLATE_RE2_MAX_LEN and one holding a
 * NUL byte; or XLATE_RE2_NOMEM. */
__attribute__((warn_unused_result)) int xlate_re2_compile(const char *re, size_t len,
                                                          struct xlate_re2_info *info, char *err,
                                                          size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
