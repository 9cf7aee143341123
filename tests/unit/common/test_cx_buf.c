#include "cx_buf.h"
#include "cxtest.h"

#include <stdlib.h>

static void test_append_and_cap(void)
{
    struct cx_buf b;
    cx_buf_init(&b, 8);
    CHECK_INT_EQ(cx_buf_puts(&b, "abcd"), 0);
    CHECK_INT_EQ(cx_buf_append(&b, "efgh", 4), 0);
    CHECK_INT_EQ(b.len, 8);
    CHECK_STR_EQ(b.data, "abcdefgh");
    /* one byte over the cap is refused and leaves the buffer unchanged */
    CHECK_INT_EQ(cx_buf_append(&b, "i", 1), -1);
    CHECK_INT_EQ(b.len, 8);
    CHECK_STR_EQ(b.data, "abcdefgh");
    CHECK_INT_EQ(cx_buf_printf(&b, "%d", 1), -1);
    cx_buf_consume(&b, 3);
    CHECK_STR_EQ(b.data, "defgh");
    CHECK_INT_EQ(cx_buf_printf(&b, "%03d", 7), 0);
    CHECK_STR_EQ(b.data, "defgh007");
    cx_buf_consume(&b, 100);
    CHECK_INT_EQ(b.len, 0);
    CHECK_STR_EQ(b.data, "");
    cx_buf_free(&b);
    CHECK(b.data == NULL);
}

static void test_growth_and_steal(void)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    for (int i = 0; i < 10000; i++)
        REQUIRE_INT_EQ(cx_buf_printf(&b, "%d,", i % 10), 0);
    CHECK_INT_EQ(b.len, 20000);
    CHECK(b.data[19998] == '9');
    size_t len = 0;
    char *p = cx_buf_steal(&b, &len);
    CHECK_INT_EQ(len, 20000);
    CHECK(b.data == NULL && b.len == 0);
    free(p);
    p = cx_buf_steal(&b, &len);
    CHECK_STR_EQ(p, "");
    CHECK_INT_EQ(len, 0);
    free(p);
}

static const struct cxt_case cases[] = {
    CXT(test_append_and_cap),
    CXT(test_growth_and_steal),
};
CXT_MAIN(cases)
