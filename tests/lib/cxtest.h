/*
 * cxtest: the unit-test harness. Each test binary lists its cases and calls
 * CXT_MAIN; the binary prints TAP ("ok N - name" / "not ok N - name"), which
 * tests/run.sh tallies into the suite's one summary line.
 *
 * CHECK* record a failure and go on; REQUIRE* end the case at once. Every
 * failure prints the file, line, the expression and the values compared.
 *
 *   static void test_parse(void) { CHECK_INT_EQ(parse("1"), 1); }
 *   static const struct cxt_case cases[] = { CXT(test_parse) };
 *   CXT_MAIN(cases)
 *
 * Run one case: ./test_x name_substring
 * A case that takes 1 s or more prints "# NAME took N s" before its result.
 */
#ifndef CXTEST_H
#define CXTEST_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct cxt_case {
    const char *name;
    void (*fn)(void);
};

#define CXT(fn) \
    {           \
#fn, fn \
    }

int cxt_main(int argc, char **argv, const struct cxt_case *cases, size_t n);

#define CXT_MAIN(cases)                                                       \
    int main(int argc, char **argv)                                           \
    {                                                                         \
        return cxt_main(argc, argv, cases, sizeof(cases) / sizeof(cases[0])); \
    }

/* Failure reporting; |fatal| ends the current case. */
void cxt_fail(const char *file, int line, int fatal, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Skips the rest of the current case with a reason (reported as SKIP). */
void cxt_skip(const char *reason);
/* Path of a file under tests/data (CXT_DATA_DIR is set by the Makefile). */
const char *cxt_data_path(const char *rel);
/* How much slower than a plain build this run is: 1 normally, 3 under
 * ASan+UBSan, 25 under valgrind (from COXSWAIN_SANITIZE). Timing bounds in
 * tests are multiplied by it; timing is not what those runs check. */
int cxt_slowdown(void);
/* xorshift64: a fixed, portable pseudo-random sequence from |*state|
 * (non-zero), so that a shuffled or random-walk case is the same on every
 * machine and run. */
uint64_t cxt_xorshift(uint64_t *state);
/* Reads a whole file; caller frees. NULL if unreadable. */
char *cxt_read_file(const char *path, size_t *len);
/* A whole file in base64 (as Kubernetes holds Secret data); caller frees.
 * NULL if unreadable. */
char *cxt_read_file_b64(const char *path);

#define CXT_CHECK_(fatal, cond)                               \
    do {                                                      \
        if (!(cond))                                          \
            cxt_fail(__FILE__, __LINE__, fatal, "%s", #cond); \
    } while (0)

#define CXT_INT_(fatal, a, op, b)                                                               \
    do {                                                                                        \
        long long cxt_a_ = (long long)(a), cxt_b_ = (long long)(b);                             \
        if (!(cxt_a_ op cxt_b_))                                                                \
            cxt_fail(__FILE__, __LINE__, fatal, "%s %s %s (%lld vs %lld)", #a, #op, #b, cxt_a_, \
                     cxt_b_);                                                                   \
    } while (0)

#define CXT_STR_(fatal, a, b)                                                          \
    do {                                                                               \
        const char *cxt_a_ = (a), *cxt_b_ = (b);                                       \
        if (!cxt_a_ || !cxt_b_ || strcmp(cxt_a_, cxt_b_) != 0)                         \
            cxt_fail(__FILE__, __LINE__, fatal, "%s == %s (\"%s\" vs \"%s\")", #a, #b, \
                     cxt_a_ ? cxt_a_ : "(null)", cxt_b_ ? cxt_b_ : "(null)");          \
    } while (0)

#define CHECK(c)             CXT_CHECK_(0, c)
#define REQUIRE(c)           CXT_CHECK_(1, c)
#define CHECK_INT_EQ(a, b)   CXT_INT_(0, a, ==, b)
#define CHECK_INT_NE(a, b)   CXT_INT_(0, a, !=, b)
#define CHECK_INT_LT(a, b)   CXT_INT_(0, a, <, b)
#define CHECK_INT_LE(a, b)   CXT_INT_(0, a, <=, b)
#define CHECK_INT_GT(a, b)   CXT_INT_(0, a, >, b)
#define CHECK_INT_GE(a, b)   CXT_INT_(0, a, >=, b)
#define REQUIRE_INT_EQ(a, b) CXT_INT_(1, a, ==, b)
#define CHECK_STR_EQ(a, b)   CXT_STR_(0, a, b)
#define REQUIRE_STR_EQ(a, b) CXT_STR_(1, a, b)
#define CHECK_STR_CONTAINS(hay, needle)                                                      \
    do {                                                                                     \
        const char *cxt_h_ = (hay), *cxt_n_ = (needle);                                      \
        if (!cxt_h_ || !strstr(cxt_h_, cxt_n_))                                              \
            cxt_fail(__FILE__, __LINE__, 0, "%s contains \"%s\" (got \"%s\")", #hay, cxt_n_, \
                     cxt_h_ ? cxt_h_ : "(null)");                                            \
    } while (0)

#endif
