// Differential check of translator/xlate_re2.c against the real RE2 (the
// libre2 gRPC links on Debian): the same verdict for every regex of a
// corpus (stdin, one per line, \xNN escapes allowed) and for random regexes
// built from RE2's syntax pieces. Built and run by test_re2_differential.sh.
#include <re2/re2.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

extern "C" {
#include "xlate_re2.h"
}

static int checked = 0, mismatches = 0;

static std::string show(const std::string &s)
{
    std::string o;
    for (unsigned char c : s) {
        if (c < 0x20 || c >= 0x7f) {
            char b[8];
            snprintf(b, sizeof(b), "\\x%02x", c);
            o += b;
        } else {
            o += (char)c;
        }
    }
    return o;
}

static void compare(const std::string &re)
{
    if (re.empty() || re.size() > XLATE_RE2_MAX_LEN || re.find('\0') != std::string::npos)
        return; // refused on purpose (Envoy needs a byte; our caps)
    RE2::Options opt;
    opt.set_log_errors(false);
    RE2 r(re, opt);
    // a program too large to compile is not a syntax matter
    if (r.error_code() == RE2::ErrorPatternTooLarge)
        return;
    char err[256];
    int ours = xlate_re2_check(re.data(), re.size(), err, sizeof(err)) == 0;
    int theirs = r.ok();
    checked++;
    // Deliberate: we refuse a capture group name used twice, which RE2 2022
    // (gRPC's) accepts and newer RE2 (Envoy's) refuses: a regex one of the
    // two refuses must not reach either.
    if (!ours && theirs && std::strstr(err, "duplicate capture group name"))
        return;
    if (ours != theirs) {
        mismatches++;
        if (mismatches <= 30)
            std::printf("# MISMATCH %s: ours %s (%s), RE2 %s (%s)\n", show(re).c_str(),
                        ours ? "accepts" : "refuses", ours ? "" : err,
                        theirs ? "accepts" : "refuses", r.error().c_str());
    }
}

static std::string unescape(const std::string &line)
{
    std::string o;
    for (size_t i = 0; i < line.size(); i++) {
        if (line[i] == '\\' && i + 3 < line.size() + 0 && line[i + 1] == 'x' && isxdigit(line[i + 2]) &&
            isxdigit(line[i + 3])) {
            o += (char)std::stoi(line.substr(i + 2, 2), nullptr, 16);
            i += 3;
        } else {
            o += line[i];
        }
    }
    return o;
}

int main(int argc, char **argv)
{
    std::string line;
    while (std::getline(std::cin, line))
        if (!line.empty() && line[0] != '#')
            compare(unescape(line));
    static const char *const pieces[] = {
        "a", "b", "/", ".", "*", "+", "?", "*?", "+?", "??", "{2}", "{1,3}", "{2,}", "{,2}",
        "{1001}", "{3,1}", "{", "}", "(", ")", "(?:", "(?i)", "(?i:", "(?-s)", "(?U)", "(?P<n>",
        "(?P<m>", "(?P=n)", "(?=", "(?!", "(?<=", "(?<", "(?>", "(?#", "[", "]", "[^", "-", "^",
        "$", "|", "\\", "\\d", "\\D", "\\w", "\\s", "\\b", "\\B", "\\A", "\\z", "\\Z", "\\G",
        "\\C", "\\pL", "\\p{Greek}", "\\p{^Han}", "\\PN", "\\pZ", "\\p{Foo}", "\\x41",
        "\\x{10FFFF}", "\\x{110000}", "\\xZ", "\\0", "\\1", "\\12", "\\8", "\\Q", "\\E", "\\.",
        "\\_", "\\e", "\\k", "[[:alpha:]]", "[[:foo:]]", "[:digit:]", "[a-z]", "[z-a]", "[\\d-z]",
        "é", "\xe2\x82\xac", "\xff", "(?i)(?P<x>a|b)", "a{100}", "(a{100}){10}", "x{0}", ":",
        "=", "!", "<", ">", "#", ",", "0", "9",
    };
    const size_t np = sizeof(pieces) / sizeof(pieces[0]);
    uint64_t s = 0x9e3779b97f4a7c15ULL;
    long n = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 200000;
    for (long i = 0; i < n; i++) {
        std::string re;
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        int len = 1 + (int)(s % 7);
        for (int k = 0; k < len; k++) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            re += pieces[s % np];
        }
        compare(re);
    }
    std::printf("# %d regexes compared, %d mismatches\n", checked, mismatches);
    return mismatches ? 1 : 0;
}
