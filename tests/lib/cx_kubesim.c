#include "cx_kubesim.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cx_buf.h"

#define KS_MAX_ARGS 64

static char *saved_args[KS_MAX_ARGS];
static int saved_nargs;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void binary_path(char *out, size_t n)
{
    const char *b = getenv("COXSWAIN_BUILD");
    if (b && *b)
        snprintf(out, n, "%s/bin/kubesim", b);
    else
        snprintf(out, n, "build/bin/kubesim");
}

static int spawn(struct cx_kubesim *ks)
{
    char bin[512], portfile[320];
    binary_path(bin, sizeof(bin));
    snprintf(portfile, sizeof(portfile), "%s/port", ks->dir);
    unlink(portfile);
    const char *argv[KS_MAX_ARGS + 16];
    int n = 0;
    argv[n++] = bin;
    argv[n++] = "--listen";
    argv[n++] = "127.0.0.1:0";
    argv[n++] = "--port-file";
    argv[n++] = portfile;
    argv[n++] = "--kubeconfig";
    argv[n++] = ks->kubeconfig;
    argv[n++] = "--state-dir";
    argv[n++] = ks->dir;
    for (int i = 0; i < saved_nargs; i++)
        argv[n++] = saved_args[i];
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(ks->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0) {
            dup2(nul, 0);
            close(nul);
        }
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    ks->pid = pid;
    double deadline = now_s() + 10.0;
    while (now_s() < deadline) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            ks->pid = 0;
            return -1;
        }
        FILE *f = fopen(portfile, "r");
        if (f) {
            int p = 0;
            int ok = fscanf(f, "%d", &p) == 1;
            fclose(f);
            if (ok && p > 0) {
                ks->port = p;
                snprintf(ks->url, sizeof(ks->url), "%s://127.0.0.1:%d", ks->tls ? "https" : "http",
                         p);
                break;
            }
        }
        sleep_ms(10);
    }
    while (ks->port && now_s() < deadline) {
        long code = 0;
        char *b = cx_kubesim_request(ks, "GET", "/readyz", NULL, NULL, &code);
        free(b);
        if (code == 200)
            return 0;
        sleep_ms(10);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    ks->pid = 0;
    return -1;
}

static void free_args(void)
{
    for (int i = 0; i < saved_nargs; i++)
        free(saved_args[i]);
    saved_nargs = 0;
}

static int start(struct cx_kubesim *ks, int allow_all, const char *const *args)
{
    memset(ks, 0, sizeof(*ks));
    const char *tmp = getenv("TMPDIR");
    snprintf(ks->dir, sizeof(ks->dir), "%s/kubesim-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(ks->dir))
        return -1;
    snprintf(ks->kubeconfig, sizeof(ks->kubeconfig), "%s/kubeconfig", ks->dir);
    snprintf(ks->log, sizeof(ks->log), "%s/kubesim.log", ks->dir);
    free_args();
    if (allow_all)
        saved_args[saved_nargs++] = strdup("--allow-all");
    bool profile = false;
    for (int i = 0; args && args[i] && saved_nargs < KS_MAX_ARGS; i++) {
        saved_args[saved_nargs++] = strdup(args[i]);
        if (strcmp(args[i], "--emulate") == 0)
            profile = true;
        if (strcmp(args[i], "--tls") == 0)
            ks->tls = 1;
    }
    /* Without --emulate, kubesim as the suites were written for: the
     * WatchList gate on, a bookmark every interval, a window by count. A
     * suite moves to a release's behaviour by passing --emulate 1.28. */
    static const char *const compat[] = {"--feature-gates", "WatchList=true",      "--bookmarks",
                                         "periodic",        "--event-window-time", "0"};
    for (size_t i = 0;
         !profile && i < sizeof(compat) / sizeof(compat[0]) && saved_nargs < KS_MAX_ARGS; i++)
        saved_args[saved_nargs++] = strdup(compat[i]);
    if (spawn(ks) != 0) {
        char cmd[1024];
        snprintf(cmd, sizeof(cmd), "cat %s >&2; rm -rf %s", ks->log, ks->dir);
        if (system(cmd) != 0) {
            /* nothing more to do */
        }
        free_args();
        return -1;
    }
    return 0;
}

int cx_kubesim_start(struct cx_kubesim *ks, const char *const *extra_args)
{
    return start(ks, 1, extra_args);
}

int cx_kubesim_start_raw(struct cx_kubesim *ks, const char *const *args)
{
    return start(ks, 0, args);
}

static int stop_process(struct cx_kubesim *ks)
{
    if (!ks->pid)
        return -1;
    kill(ks->pid, SIGTERM);
    double deadline = now_s() + 20.0;
    int st = 0;
    for (;;) {
        pid_t r = waitpid(ks->pid, &st, WNOHANG);
        if (r == ks->pid)
            break;
        if (r < 0 && errno != EINTR)
            break;
        if (now_s() > deadline) {
            kill(ks->pid, SIGKILL);
            waitpid(ks->pid, &st, 0);
            ks->pid = 0;
            return -1;
        }
        sleep_ms(5);
    }
    ks->pid = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int cx_kubesim_stop(struct cx_kubesim *ks)
{
    int rc = stop_process(ks);
    if (!ks->keep_dir && ks->dir[0]) {
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", ks->dir);
        if (system(cmd) != 0) {
            /* best effort */
        }
        ks->dir[0] = 0;
    }
    free_args();
    return rc;
}

int cx_kubesim_restart(struct cx_kubesim *ks)
{
    if (stop_process(ks) != 0)
        return -1;
    ks->port = 0;
    return spawn(ks);
}

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
    struct cx_buf *b = ud;
    if (cx_buf_append(b, p, sz * n) != 0)
        return 0;
    return sz * n;
}

char *cx_kubesim_request(const struct cx_kubesim *ks, const char *method, const char *path,
                         const char *body, const char *content_type, long *code)
{
    *code = 0;
    CURL *c = curl_easy_init();
    if (!c)
        return NULL;
    char url[2048];
    snprintf(url, sizeof(url), "%s%s", ks->url, path);
    struct cx_buf b;
    cx_buf_init(&b, 0);
    struct curl_slist *h = NULL;
    char ct[256];
    if (body) {
        snprintf(ct, sizeof(ct), "Content-Type: %s",
                 content_type ? content_type : "application/json");
        h = curl_slist_append(h, ct);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (ks->tls) {
        /* kubesim's own test CA on loopback: the harness checks kubesim,
         * not its certificate (the clients under test verify it). */
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, code);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    if (rc != CURLE_OK) {
        cx_buf_free(&b);
        return NULL;
    }
    char *out = cx_buf_steal(&b, NULL);
    cx_buf_free(&b);
    return out;
}
