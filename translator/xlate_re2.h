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
 * Work is bounded before RE2 starts: RE2 parses and expands a regex in full
 * before its memory limit applies, so a few bytes can cost it a second
 * ("\pL{1000}": every Unicode letter range, a thousand times). Hence the
 * length cap, the cap on Unicode classes (each builds a table of up to
 * ~1,200 instructions) and RE2's max_mem of 1 MiB per compilation (a
 * program of at most ~87,000 instructions, far above any limit an Envoy is
 * run with): the worst regex costs tens of milliseconds, and a larger
 * program is refused as too large. Callers bound the regexes per object.
 *
 * Pure: no I/O, no globals; thread-safe.
 */
#ifndef XLATE_RE2_H
#define XLATE_RE2_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Longest regex accepted (bytes): far above any real route's; with Envoy's
 * default program-size limit (100) a tenth of it is refused anyway. */
#define XLATE_RE2_MAX_LEN 1024

/* Unicode classes (\p{...}, \P{...}, \pL...) accepted in one regex. */
#define XLATE_RE2_MAX_UNICODE_CLASSES 16

/* RE2's memory for one compilation (its max_mem): the program gets two
 * thirds, ~87,000 instructions. */
#define XLATE_RE2_MAX_MEM (1 << 20)

/* Longest literal prefix reported (bytes, without the NUL); a longer one is
 * cut, which only shortens it. */
#define XLATE_RE2_PREFIX_MAX 255

/* What RE2 makes of an accepted regex. */
struct xlate_re2_info {
    int program_size; /* RE2::ProgramSize(): instructions of the compiled program */
    int groups;       /* RE2::NumberOfCapturingGroups(): what \1..\9 may name */
    /* The literal text every full match starts with ("/api/v1/" for
     * "/api/v1/.*", "" for "(a|b)/x"), NUL-terminated. */
    char prefix[XLATE_RE2_PREFIX_MAX + 1];
};

enum {
    XLATE_RE2_OK = 0,
    XLATE_RE2_INVALID = -1,   /* refused: |err| holds why */
    XLATE_RE2_NOMEM = -2,     /* memory ran out (|err| says so too) */
    XLATE_RE2_TOO_LARGE = -3, /* its program does not fit in XLATE_RE2_MAX_MEM */
};

/* Compiles |re| (|len| bytes, not NUL-terminated necessarily) as Envoy does.
 * Returns XLATE_RE2_OK and fills |info| (may be NULL), or XLATE_RE2_INVALID
 * with RE2's message ("invalid perl operator: (?=") in |err| (|errlen|
 * bytes, NUL-terminated, may be NULL): also for the empty regex (Envoy
 * requires one byte), one longer than XLATE_RE2_MAX_LEN, one with more
 * than XLATE_RE2_MAX_UNICODE_CLASSES Unicode classes and one holding a NUL
 * byte; or XLATE_RE2_TOO_LARGE (|err| says so), or XLATE_RE2_NOMEM. */
__attribute__((warn_unused_result)) int xlate_re2_compile(const char *re, size_t len,
                                                          struct xlate_re2_info *info, char *err,
                                                          size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
