/*
 * ks_re2: CRD `pattern` matching with Google RE2, the syntax and semantics
 * of Go's regexp that kube-apiserver uses (a C shim over Debian's libre2,
 * ks_re2.cc). Event loop only (it keeps compiled patterns).
 */
#ifndef KS_RE2_H
#define KS_RE2_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Longest pattern compiled (bytes); a longer one is refused. */
#define KS_RE2_MAX_LEN 4096

/* regexp.MatchString(re, s): 1 when |re| matches somewhere in |s| (|slen|
 * bytes), 0 when not, -1 when |re| does not compile (RE2's message in
 * |err|, |errlen| bytes, NUL-terminated) or memory runs out. */
int ks_re2_search(const char *re, const char *s, size_t slen, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
