/* cx_list: FIFO and LIFO order, removal from the middle, both ends and the
 * only element, deleting twice or an element never added, iteration that
 * deletes, and the entry of a link. */
#include "cx_list.h"
#include "cxtest.h"

#include <string.h>

struct item {
    int id;
    struct cx_list link;
};

/* The ids in |head|, front to back, as a string ("" when empty); checks
 * the back links on the way. */
static const char *ids(const struct cx_list *head)
{
    static char out[64];
    size_t n = 0;
    const struct cx_list *l, *prev = head;
    for (l = head->next; l != head && n + 1 < sizeof(out); l = l->next) {
        if (l->prev != prev)
            return "broken back link";
        out[n++] = (char)('0' + cx_list_entry(l, const struct item, link)->id);
        prev = l;
    }
    if (head->prev != prev)
        return "broken tail";
    out[n] = '\0';
    return out;
}

static void test_append_prepend_pop(void)
{
    struct cx_list head;
    cx_list_init(&head);
    CHECK(cx_list_empty(&head));
    CHECK(cx_list_first(&head) == NULL);
    CHECK(cx_list_pop(&head) == NULL);
    struct item it[5];
    memset(it, 0, sizeof(it));
    for (int i = 0; i < 5; i++) {
        it[i].id = i;
        CHECK(!cx_list_linked(&it[i].link));
    }
    cx_list_append(&head, &it[1].link);
    cx_list_append(&head, &it[2].link);
    cx_list_prepend(&head, &it[0].link);
    cx_list_append(&head, &it[3].link);
    CHECK_STR_EQ(ids(&head), "0123");
    CHECK(cx_list_linked(&it[2].link));
    CHECK(cx_list_entry(cx_list_first(&head), struct item, link) == &it[0]);
    /* FIFO */
    struct cx_list *l = cx_list_pop(&head);
    CHECK(cx_list_entry(l, struct item, link) == &it[0]);
    CHECK(!cx_list_linked(l));
    CHECK_STR_EQ(ids(&head), "123");
}

static void test_delete_anywhere(void)
{
    struct cx_list head;
    cx_list_init(&head);
    struct item it[5];
    memset(it, 0, sizeof(it));
    for (int i = 0; i < 5; i++) {
        it[i].id = i;
        cx_list_append(&head, &it[i].link);
    }
    cx_list_del(&it[2].link); /* middle */
    CHECK_STR_EQ(ids(&head), "0134");
    cx_list_del(&it[0].link); /* front */
    cx_list_del(&it[4].link); /* back */
    CHECK_STR_EQ(ids(&head), "13");
    cx_list_del(&it[4].link); /* again: nothing happens */
    CHECK_STR_EQ(ids(&head), "13");
    struct item never = {.id = 9};
    cx_list_del(&never.link); /* zeroed, in no list */
    CHECK(!cx_list_linked(&never.link));
    cx_list_del(&it[1].link);
    cx_list_del(&it[3].link); /* the last one */
    CHECK(cx_list_empty(&head));
    CHECK_STR_EQ(ids(&head), "");
    /* a deleted element can go into a list again */
    cx_list_append(&head, &it[2].link);
    CHECK_STR_EQ(ids(&head), "2");
}

static void test_iterate_and_delete(void)
{
    struct cx_list head;
    cx_list_init(&head);
    struct item it[6];
    memset(it, 0, sizeof(it));
    for (int i = 0; i < 6; i++) {
        it[i].id = i;
        cx_list_append(&head, &it[i].link);
    }
    struct cx_list *l, *tmp;
    int seen = 0;
    cx_list_for_each_safe (l, tmp, &head) {
        struct item *x = cx_list_entry(l, struct item, link);
        seen++;
        if (x->id % 2 == 0)
            cx_list_del(l);
    }
    CHECK_INT_EQ(seen, 6);
    CHECK_STR_EQ(ids(&head), "135");
    int sum = 0;
    cx_list_for_each (l, &head)
        sum += cx_list_entry(l, struct item, link)->id;
    CHECK_INT_EQ(sum, 9);
}

static void test_take_all(void)
{
    struct cx_list src, dst;
    cx_list_init(&src);
    cx_list_take_all(&dst, &src);
    CHECK(cx_list_empty(&dst) && cx_list_empty(&src));
    struct item it[3];
    memset(it, 0, sizeof(it));
    for (int i = 0; i < 3; i++) {
        it[i].id = i;
        cx_list_append(&src, &it[i].link);
    }
    cx_list_take_all(&dst, &src);
    CHECK(cx_list_empty(&src));
    CHECK_STR_EQ(ids(&dst), "012");
    struct cx_list *l = cx_list_pop(&dst);
    CHECK(l == &it[0].link);
    cx_list_append(&src, l);
    CHECK_STR_EQ(ids(&src), "0");
    CHECK_STR_EQ(ids(&dst), "12");
}

static const struct cxt_case cases[] = {
    CXT(test_append_prepend_pop),
    CXT(test_delete_anywhere),
    CXT(test_iterate_and_delete),
    CXT(test_take_all),
};
CXT_MAIN(cases)
