// The C shim over libre2 (see xlate_re2.h). C++ only here: the rest of the
// translator is C and sees extern "C" functions that never throw.
#include "xlate_re2.h"

#include <re2/re2.h>

#include <cstdio>
#include <cstring>
#include <new>
#include <string>

namespace
{

void set_err(char *err, size_t errlen, const char *msg)
{
    if (err && errlen)
        std::snprintf(err, errlen, "%s", msg);
}

// The longest common prefix of |a| and |b|, without an incomplete UTF-8
// sequence at its end (a prefix is compared with path prefixes and written
// in messages; cutting only shortens it).
size_t common_prefix(const std::string &a, const std::string &b)
{
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n])
        n++;
    size_t k = n; // the start of the last sequence
    while (k > 0 && (static_cast<unsigned char>(a[k - 1]) & 0xc0) == 0x80)
        k--;
    if (k == 0)
        return 0;
    unsigned char lead = static_cast<unsigned char>(a[k - 1]);
    if (lead < 0x80)
        return k; // ASCII: complete (stray continuation bytes dropped)
    size_t want = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
    return n - (k - 1) >= want ? k - 1 + want : k - 1;
}

// Unicode classes in |re|: \p and \P escapes (a backslash escaping a
// backslash does not start one). Counted on the text: RE2 builds each
// before anything could stop it.
size_t unicode_classes(const char *re, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i + 1 < len; i++) {
        if (re[i] != '\\')
            continue;
        if (re[i + 1] == 'p' || re[i + 1] == 'P')
            n++;
        i++; // the escaped byte
    }
    return n;
}

int compile(const char *re, size_t len, struct xlate_re2_info *info, char *err, size_t errlen)
{
    if (len == 0) {
        set_err(err, errlen, "empty regex");
        return XLATE_RE2_INVALID;
    }
    if (len > XLATE_RE2_MAX_LEN) {
        char m[64];
        std::snprintf(m, sizeof(m), "regex longer than %d bytes", XLATE_RE2_MAX_LEN);
        set_err(err, errlen, m);
        return XLATE_RE2_INVALID;
    }
    if (std::memchr(re, '\0', len)) {
        set_err(err, errlen, "regex contains a NUL byte");
        return XLATE_RE2_INVALID;
    }
    size_t classes = unicode_classes(re, len);
    if (classes > XLATE_RE2_MAX_UNICODE_CLASSES) {
        char m[160];
        std::snprintf(m, sizeof(m),
                      "%zu Unicode classes (\\p, \\P); at most %d are checked in one regex",
                      classes, XLATE_RE2_MAX_UNICODE_CLASSES);
        set_err(err, errlen, m);
        return XLATE_RE2_INVALID;
    }
    // Envoy: re2::RE2(regex, re2::RE2::Quiet), the default options without
    // logging; gRPC: the default options. Only max_mem differs: it bounds
    // the program (a larger one is refused here as too large, Envoy's
    // limit being far below) and the DFA PossibleMatchRange walks.
    RE2::Options opt(RE2::Quiet);
    opt.set_max_mem(XLATE_RE2_MAX_MEM);
    RE2 compiled(re2::StringPiece(re, len), opt);
    if (compiled.error_code() == RE2::ErrorPatternTooLarge) {
        char m[120];
        std::snprintf(m, sizeof(m), "its RE2 program does not fit in %d KiB",
                      XLATE_RE2_MAX_MEM >> 10);
        set_err(err, errlen, m);
        return XLATE_RE2_TOO_LARGE;
    }
    if (!compiled.ok()) {
        set_err(err, errlen, compiled.error().c_str());
        return XLATE_RE2_INVALID;
    }
    if (!info)
        return XLATE_RE2_OK;
    info->program_size = compiled.ProgramSize();
    info->groups = compiled.NumberOfCapturingGroups();
    // Every anchored match s satisfies min <= s <= max, so every match
    // starts with their common prefix. PossibleMatchRange fails when any
    // string may match (".*"): no prefix then.
    std::string min, max;
    size_t n = 0;
    if (compiled.PossibleMatchRange(&min, &max, XLATE_RE2_PREFIX_MAX + 1))
        n = common_prefix(min, max);
    if (n > XLATE_RE2_PREFIX_MAX)
        n = XLATE_RE2_PREFIX_MAX;
    std::memcpy(info->prefix, min.data(), n);
    info->prefix[n] = '\0';
    return XLATE_RE2_OK;
}

} // namespace

extern "C" int xlate_re2_compile(const char *re, size_t len, struct xlate_re2_info *info, char *err,
                                 size_t errlen)
{
    try {
        return compile(re, len, info, err, errlen);
    } catch (const std::bad_alloc &) {
        set_err(err, errlen, "out of memory compiling the regex");
        return XLATE_RE2_NOMEM;
    } catch (...) {
        set_err(err, errlen, "RE2 failed to compile the regex");
        return XLATE_RE2_INVALID;
    }
}
