/* Helpers for the filters integration tests: start kubesim (through
 * tests/lib/cx_kubesim: a free port, a temp dir), build a kube_client for
 * it, and make blocking calls on the test's event_base. Header-only
 * (static functions) so each test program includes it. */
#ifndef FX_H
#define FX_H

#include "cx_kubesim.h"
#include "cx_time.h"
#include "cxt_loop.h"
#include "cxtest.h"
#include "kube_client.h"
#include "kube_config.h"

#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

struct fx {
    struct cx_kubesim ks;
    char dir[256]; /* the server's temp dir (scratch files go there) */
    char kubeconfig[300];
    int stop_status; /* kubesim's exit status after fx_stop */
    struct kube_config cfg;
    struct event_base *base;
    struct kube_client *c;
};

__attribute__((unused)) static long long fx_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* 1 under the sanitizer or valgrind runs (long soaks shorten there). */
__attribute__((unused)) static int fx_sanitized(void)
{
    const char *s = getenv("COXSWAIN_SANITIZE");
    return s && *s && strcmp(s, "0") != 0;
}

/* Starts kubesim (tests/lib/cx_kubesim) and a client on a new event_base.
 * Returns 0 or -1 (message printed). */
__attribute__((unused)) static int fx_start(struct fx *f)
{
    memset(f, 0, sizeof(*f));
    if (cx_kubesim_start(&f->ks, NULL) != 0) {
        printf("# kubesim did not start\n");
        return -1;
    }
    snprintf(f->dir, sizeof(f->dir), "%s", f->ks.dir);
    snprintf(f->kubeconfig, sizeof(f->kubeconfig), "%s", f->ks.kubeconfig);
    char err[256];
    if (kube_config_load_file(f->kubeconfig, NULL, &f->cfg, err, sizeof(err)) != 0) {
        printf("# kubeconfig: %s\n", err);
        return -1;
    }
    f->base = event_base_new();
    struct kube_client_opts o = {.identity = "filters-it", .max_attempts = 3};
    f->c = f->base ? kube_client_new(f->base, &f->cfg, &o, err, sizeof(err)) : NULL;
    if (!f->c) {
        printf("# client: %s\n", err);
        return -1;
    }
    return 0;
}

/* Frees the client and stops kubesim; f->stop_status is its exit status
 * (0: a clean shutdown). */
__attribute__((unused)) static void fx_stop(struct fx *f)
{
    if (f->c)
        kube_client_free(f->c);
    f->c = NULL;
    if (f->base)
        event_base_free(f->base);
    f->base = NULL;
    kube_config_free(&f->cfg);
    f->stop_status = f->ks.pid > 0 ? cx_kubesim_stop(&f->ks) : -1;
}

/* ---- blocking calls ------------------------------------------------------- */

struct fx_res {
    int done;
    enum kube_err_code code;
    int http;
    char msg[KUBE_ERR_MESSAGE_MAX];
    cJSON *obj; /* owned */
};

static void fx_on_res(struct kube_result *r, void *ud)
{
    struct fx_res *s = ud;
    s->done = 1;
    s->code = r->err.code;
    s->http = r->http_status;
    snprintf(s->msg, sizeof(s->msg), "%s", r->err.message);
    s->obj = r->object;
    r->object = NULL;
}

/* Runs the loop until *flag is set or |ms| pass. Returns 0 if set. */
__attribute__((unused)) static int fx_run_until(struct fx *f, const int *flag, long long ms)
{
    return cxt_loop_until_flag(f->base, flag, (int)ms) ? 0 : -1;
}

/* Runs the loop for |ms| (handlers fire meanwhile). */
__attribute__((unused)) static void fx_run_for(struct fx *f, long long ms)
{
    cxt_loop_for(f->base, (int)ms);
}

/* Waits for a call started with fx_on_res / |s|. Returns s->code. */
__attribute__((unused)) static enum kube_err_code fx_wait(struct fx *f, struct kube_call *call,
                                                          struct fx_res *s)
{
    if (!call) {
        s->code = KUBE_E_OTHER;
        snprintf(s->msg, sizeof(s->msg), "request not built");
        return s->code;
    }
    if (fx_run_until(f, &s->done, 20000) != 0) {
        kube_call_cancel(call);
        s->code = KUBE_E_TIMEOUT;
        snprintf(s->msg, sizeof(s->msg), "test timeout");
    }
    return s->code;
}

/* POSTs |json| to |path| (raw, for namespaces and CRDs). */
__attribute__((unused)) static enum kube_err_code fx_post(struct fx *f, const char *path,
                                                          const char *json)
{
    struct fx_res s = {0};
    struct kube_raw_req r = {.method = "POST",
                             .path_query = path,
                             .body = json,
                             .body_len = strlen(json),
                             .content_type = "application/json",
                             .verb = KUBE_VERB_WRITE};
    fx_wait(f, kube_request(f->c, &r, fx_on_res, &s), &s);
    if (s.code != KUBE_OK)
        printf("# POST %s: %s\n", path, s.msg);
    cJSON_Delete(s.obj);
    return s.code;
}

#endif
