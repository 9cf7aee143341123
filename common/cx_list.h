/*
 * cx_list: the one linked list of the code base, intrusive and circular,
 * doubly linked (HAProxy's list.h, Linux's list.h). An element embeds a
 * struct cx_list; a list is a struct cx_list head whose element links point
 * back to it when empty. Insertion and removal are O(1) and never
 * allocate; cx_list_entry finds the element that embeds a link.
 *
 *   struct call { ...; struct cx_list link; };
 *   struct cx_list calls;                      cx_list_init(&calls);
 *   cx_list_append(&calls, &c->link);          (FIFO: append, then pop)
 *   cx_list_del(&c->link);                     (safe twice, and when never added)
 *   cx_list_for_each_safe(l, tmp, &calls)      (the body may delete l)
 *       free(cx_list_entry(l, struct call, link));
 *
 * A zeroed struct cx_list is "not in any list" (cx_list_del and
 * cx_list_linked accept it); a head must be cx_list_init'ed before use.
 * Not thread-safe: the owner of the list serialises access.
 */
#ifndef CX_LIST_H
#define CX_LIST_H

#include <stddef.h>

struct cx_list {
    struct cx_list *next, *prev;
};

/* The struct |type| whose member |member| is at |ptr|. */
#define cx_container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))
#define cx_list_entry(ptr, type, member)   cx_container_of(ptr, type, member)

/* An empty list (or an element in none). */
static inline void cx_list_init(struct cx_list *l)
{
    l->next = l->prev = l;
}

static inline int cx_list_empty(const struct cx_list *head)
{
    return head->next == head;
}

/* 1 while element |e| is in a list. */
static inline int cx_list_linked(const struct cx_list *e)
{
    return e->next != NULL && e->next != e;
}

static inline void cx_list_insert_between(struct cx_list *e, struct cx_list *prev,
                                          struct cx_list *next)
{
    e->prev = prev;
    e->next = next;
    prev->next = e;
    next->prev = e;
}

/* Adds |e| (in no list) at the tail of |head|. */
static inline void cx_list_append(struct cx_list *head, struct cx_list *e)
{
    cx_list_insert_between(e, head->prev, head);
}

/* Adds |e| (in no list) at the front of |head|. */
static inline void cx_list_prepend(struct cx_list *head, struct cx_list *e)
{
    cx_list_insert_between(e, head, head->next);
}

/* Takes |e| out of its list, if it is in one; it is then in none. */
static inline void cx_list_del(struct cx_list *e)
{
    if (cx_list_linked(e)) {
        e->prev->next = e->next;
        e->next->prev = e->prev;
    }
    cx_list_init(e);
}

/* The first element's link, or NULL when empty. */
static inline struct cx_list *cx_list_first(const struct cx_list *head)
{
    return cx_list_empty(head) ? NULL : head->next;
}

/* Takes the first element out and returns its link, or NULL when empty. */
static inline struct cx_list *cx_list_pop(struct cx_list *head)
{
    struct cx_list *e = cx_list_first(head);
    if (e)
        cx_list_del(e);
    return e;
}

/* Moves every element of |src| to |dst| (whose elements, if any, are
 * forgotten: pass an unused head), in order; |src| is empty after. */
static inline void cx_list_take_all(struct cx_list *dst, struct cx_list *src)
{
    if (cx_list_empty(src)) {
        cx_list_init(dst);
        return;
    }
    dst->next = src->next;
    dst->prev = src->prev;
    dst->next->prev = dst;
    dst->prev->next = dst;
    cx_list_init(src);
}

/* Iteration over the links; the _safe form allows deleting |pos|. */
#define cx_list_for_each(pos, head) for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)
#define cx_list_for_each_safe(pos, tmp, head)                        \
    for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); \
         (pos) = (tmp), (tmp) = (pos)->next)

#endif
