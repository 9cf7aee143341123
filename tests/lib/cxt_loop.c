#include "cxt_loop.h"

struct run_state {
    struct event_base *base;
    int (*pred)(void *);
    void *arg;
    int hit;
};

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct run_state *rs = arg;
    if (rs->pred && rs->pred(rs->arg)) {
        rs->hit = 1;
        event_base_loopbreak(rs->base);
    }
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    event_base_loopbreak(arg);
}

int cxt_loop_until(struct event_base *base, int (*pred)(void *), void *arg, int timeout_ms)
{
    struct run_state rs = {base, pred, arg, 0};
    if (pred && pred(arg))
        return 1;
    struct event *tick = event_new(base, -1, EV_PERSIST, on_tick, &rs);
    struct event *dl = evtimer_new(base, on_deadline, base);
    struct timeval t1 = {0, 1000}, tdl = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    event_add(tick, &t1);
    event_add(dl, &tdl);
    event_base_loop(base, 0);
    event_free(tick);
    event_free(dl);
    if (!rs.hit && pred && pred(arg))
        rs.hit = 1;
    return rs.hit;
}

static int flag_set(void *arg)
{
    return *(const int *)arg != 0;
}

int cxt_loop_until_flag(struct event_base *base, const int *flag, int timeout_ms)
{
    cxt_loop_until(base, flag_set, (void *)flag, timeout_ms);
    return *flag;
}

void cxt_loop_for(struct event_base *base, int ms)
{
    cxt_loop_until(base, NULL, NULL, ms);
}
