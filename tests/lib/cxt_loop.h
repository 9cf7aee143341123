/*
 * cxt_loop: the tests' one way to run an event loop until something
 * happens. The condition is checked every millisecond (and once before
 * and after), the loop stops at the deadline. Callers with nothing to
 * wait for run it for a while (cxt_loop_for).
 */
#ifndef CXT_LOOP_H
#define CXT_LOOP_H

#include <event2/event.h>

/* Runs |base| until pred(arg) is true or |timeout_ms| passed. Returns 1 if
 * the predicate became true, 0 on timeout. A NULL |pred| is never true. */
int cxt_loop_until(struct event_base *base, int (*pred)(void *), void *arg, int timeout_ms);
/* The same until *flag is non-zero. Returns *flag. */
int cxt_loop_until_flag(struct event_base *base, const int *flag, int timeout_ms);
/* Runs |base| for |ms|. */
void cxt_loop_for(struct event_base *base, int ms);

#endif
