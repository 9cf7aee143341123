#include "cx_log.h"
#include "cxtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_escape_controls(void)
{
    char out[256];
    cx_log_escape("a\nb\rc\td\x01\x1b[31m\x7f", out, sizeof(out));
    CHECK_STR_EQ(out, "a\\nb\\rc\\td\\x01\\x1b[31m\\x7f");
    /* C1 controls and line separators in UTF-8; other UTF-8 stays */
    cx_log_escape("x\xc2\x85y\xe2\x80\xa8z\xc3\xa9", out, sizeof(out));
    CHECK_STR_EQ(out, "x\\u0085y\\u2028z\xc3\xa9");
    cx_log_escape(NULL, out, sizeof(out));
    CHECK_STR_EQ(out, "");
}

static void test_escape_cut(void)
{
    char out[6];
    /* "ab" + "\n" would need 5 bytes with the NUL: fits; the next escape does not */
    size_t n = cx_log_escape("ab\n\n", out, sizeof(out));
    CHECK_STR_EQ(out, "ab\\n");
    CHECK_INT_EQ(n, 4);
    char tiny[1];
    CHECK_INT_EQ(cx_log_escape("abc", tiny, sizeof(tiny)), 0);
    CHECK_STR_EQ(tiny, "");
}

/* Runs one log call with stderr on a temp file and returns what was written. */
static char *capture(enum cx_log_format fmt, const char *msg)
{
    FILE *f = tmpfile();
    if (!f)
        return NULL;
    int saved = dup(STDERR_FILENO);
    dup2(fileno(f), STDERR_FILENO);
    cx_log_setup(fmt, CX_LOG_INFO, "id");
    cx_warn("test", "peer said: %s", msg);
    dup2(saved, STDERR_FILENO);
    close(saved);
    long n = ftell(f);
    if (n < 0)
        n = lseek(fileno(f), 0, SEEK_END);
    char *buf = calloc(1, (size_t)n + 1);
    if (buf) {
        lseek(fileno(f), 0, SEEK_SET);
        if (read(fileno(f), buf, (size_t)n) != n)
            buf[0] = '\0';
    }
    fclose(f);
    return buf;
}

static void test_text_line_cannot_be_forged(void)
{
    char *out = capture(CX_LOG_TEXT, "bye\n2026-01-01T00:00:00.000000Z info  xds: forged\x1b[2J");
    REQUIRE(out != NULL);
    /* one line: the only newline is the last byte */
    char *nl = strchr(out, '\n');
    REQUIRE(nl != NULL);
    CHECK(nl[1] == '\0');
    CHECK_STR_CONTAINS(out, "warn  test: peer said: bye\\n2026-01-01T00:00:00.000000Z info  xds: "
                            "forged\\x1b[2J\n");
    CHECK(strchr(out, 0x1b) == NULL);
    free(out);
    /* JSON lines were already escaped by the JSON encoder */
    out = capture(CX_LOG_JSON, "a\nb");
    REQUIRE(out != NULL);
    CHECK_STR_CONTAINS(out, "\"msg\":\"peer said: a\\nb\"}\n");
    free(out);
    cx_log_setup(CX_LOG_TEXT, CX_LOG_INFO, NULL);
}

static const struct cxt_case cases[] = {
    CXT(test_escape_controls),
    CXT(test_escape_cut),
    CXT(test_text_line_cannot_be_forged),
};
CXT_MAIN(cases)
