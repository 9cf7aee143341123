/*
 * ks_re2: see ks_re2.h. RE2 with its default options (UTF-8, Perl
 * classes), as Go's regexp parses patterns; unanchored, as MatchString.
 * Compiled patterns are kept (a CRD's few, at most KEEP of them) so that
 * an object with many patterned values costs one compilation each.
 */
#include "ks_re2.h"

#include <re2/re2.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>

namespace
{
constexpr size_t KEEP = 256;
std::unordered_map<std::string, std::unique_ptr<RE2>> compiled;
} // namespace

extern "C" int ks_re2_search(const char *re, const char *s, size_t slen, char *err, size_t errlen)
{
    size_t relen = std::strlen(re);
    if (relen > KS_RE2_MAX_LEN) {
        std::snprintf(err, errlen, "pattern longer than %d bytes", KS_RE2_MAX_LEN);
        return -1;
    }
    try {
        std::string key(re, relen);
        auto it = compiled.find(key);
        if (it == compiled.end()) {
            RE2::Options o;
            o.set_log_errors(false);
            o.set_max_mem(1 << 20);
            auto r = std::make_unique<RE2>(re2::StringPiece(re, relen), o);
            if (!r->ok()) {
                std::snprintf(err, errlen, "%s", r->error().c_str());
                return -1;
            }
            if (compiled.size() >= KEEP)
                compiled.clear();
            it = compiled.emplace(std::move(key), std::move(r)).first;
        }
        return RE2::PartialMatch(re2::StringPiece(s, slen), *it->second) ? 1 : 0;
    } catch (const std::bad_alloc &) {
        std::snprintf(err, errlen, "out of memory");
        return -1;
    }
}
