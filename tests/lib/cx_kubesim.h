/*
 * cx_kubesim: start and stop build/bin/kubesim from C tests.
 *
 *   struct cx_kubesim ks;
 *   const char *args[] = {"--event-window", "100", NULL};
 *   if (cx_kubesim_start(&ks, args) != 0) ...   // free port, temp dir, --allow-all
 *   ... ks.url ("http://127.0.0.1:PORT"), ks.kubeconfig ...
 *   long code; char *body = cx_kubesim_request(&ks, "GET", "/api/v1/namespaces", NULL, NULL,
 * &code); free(body); cx_kubesim_stop(&ks);                        // SIGTERM, waits, removes the
 * dir
 *
 * With "--tls" among the args, ks.url is https:// and cx_kubesim_request
 * does not verify kubesim's test certificate (the clients under test do,
 * through ks.kubeconfig).
 *
 * The binary is $COXSWAIN_BUILD/bin/kubesim (tests/run.sh sets it), else
 * build/bin/kubesim. Not thread-safe; one struct per server.
 */
#ifndef CX_KUBESIM_H
#define CX_KUBESIM_H

#include <sys/types.h>

struct cx_kubesim {
    pid_t pid;
    int port;
    char dir[256];        /* temp dir holding port, kubeconfig, log */
    char url[64];         /* http://127.0.0.1:PORT */
    char kubeconfig[300]; /* <dir>/kubeconfig */
    char log[300];        /* <dir>/kubesim.log */
    int keep_dir;         /* set to keep the dir after stop */
    int tls;              /* started with --tls: url is https (not verified) */
};

/* Starts kubesim with --allow-all plus |extra_args| (NULL-terminated, may be
 * NULL) and waits until it answers /readyz (10 s at most). Returns 0 or -1
 * (then nothing is left running). */
int cx_kubesim_start(struct cx_kubesim *ks, const char *const *extra_args);

/* Like cx_kubesim_start without --allow-all added. */
int cx_kubesim_start_raw(struct cx_kubesim *ks, const char *const *args);

/* Sends SIGTERM and waits (20 s, then SIGKILL). Returns kubesim's exit status
 * (0 for a clean shutdown) or -1; removes the temp dir unless keep_dir. */
int cx_kubesim_stop(struct cx_kubesim *ks);

/* Restarts the same server (same dir and flags, new port). Returns 0/-1. */
int cx_kubesim_restart(struct cx_kubesim *ks);

/* One HTTP request (libcurl). |body| and |content_type| may be NULL.
 * Returns the response body (caller frees) and sets *code; NULL on a
 * transport error (code 0). */
char *cx_kubesim_request(const struct cx_kubesim *ks, const char *method, const char *path,
                         const char *body, const char *content_type, long *code);

#endif
