#include "cli.h"

#include "cx_buf.h"
#include "cx_json.h"
#include "cx_time.h"
#include "kube_client.h"
#include "kube_config.h"
#include "kube_informer.h"

#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define STDIN_LINE_MAX 256
/* Output lines are best effort: a line cut by its cap is still valid
 * enough for a human; tests compare whole dumps. */
#define IGN(x)   \
    do {         \
        if (x) { \
        }        \
    } while (0)

struct watch_cmd {
    struct event_base *base;
    struct kube_informer *inf;
    struct kube_client *client;
    struct cx_buf in;
    int quiet;        /* no per-event lines */
    int exit_on_sync; /* print the sync line and exit (benchmarks) */
    int64_t start_ns;
    uint64_t changes; /* add + update + delete */
    uint64_t every;   /* --progress N: a line every N changes */
};

static void emit(struct cx_buf *b)
{
    if (cx_buf_puts(b, "\n") == 0)
        fwrite(b->data, 1, b->len, stdout);
    fflush(stdout);
    cx_buf_free(b);
}

static void line_start(struct cx_buf *b, const char *event)
{
    cx_buf_init(b, 1 << 20);
    IGN(cx_buf_printf(b, "{\"event\":\"%s\"", event));
}

static void field(struct cx_buf *b, const char *k, const char *v)
{
    IGN(cx_buf_printf(b, ",\"%s\":", k));
    IGN(cx_json_escape(b, v));
}

static void progress(struct watch_cmd *w)
{
    if (!kube_informer_synced(w->inf))
        return;
    w->changes++;
    if (w->every && w->changes % w->every == 0) {
        struct cx_buf b;
        line_start(&b, "progress");
        IGN(cx_buf_printf(&b, ",\"changes\":%llu,\"elapsed_ms\":%.3f",
                          (unsigned long long)w->changes,
                          (double)(cx_mono_ns() - w->start_ns) / 1e6));
        IGN(cx_buf_puts(&b, "}"));
        emit(&b);
    }
}

static void on_add(void *ud, struct kube_obj *o)
{
    struct watch_cmd *w = ud;
    progress(w);
    if (w->quiet)
        return;
    struct cx_buf b;
    line_start(&b, "add");
    field(&b, "key", o->key);
    field(&b, "rv", o->rv);
    IGN(cx_buf_puts(&b, "}"));
    emit(&b);
}

static void on_update(void *ud, struct kube_obj *old, struct kube_obj *o)
{
    struct watch_cmd *w = ud;
    progress(w);
    if (w->quiet)
        return;
    struct cx_buf b;
    line_start(&b, "update");
    field(&b, "key", o->key);
    field(&b, "old_rv", old->rv);
    field(&b, "rv", o->rv);
    IGN(cx_buf_puts(&b, "}"));
    emit(&b);
}

static void on_delete(void *ud, struct kube_obj *o)
{
    struct watch_cmd *w = ud;
    progress(w);
    if (w->quiet)
        return;
    struct cx_buf b;
    line_start(&b, "delete");
    field(&b, "key", o->key);
    field(&b, "rv", o->rv);
    IGN(cx_buf_puts(&b, "}"));
    emit(&b);
}

static long max_rss_kb(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}

static void on_synced(void *ud)
{
    struct watch_cmd *w = ud;
    struct cx_buf b;
    line_start(&b, "synced");
    struct kube_informer_stats st;
    kube_informer_stats(w->inf, &st);
    IGN(cx_buf_printf(&b,
                      ",\"objects\":%zu,\"elapsed_ms\":%.3f,\"max_rss_kb\":%ld,"
                      "\"streaming\":%s,\"pages\":%llu}",
                      kube_cache_len(kube_informer_cache(w->inf)),
                      (double)(cx_mono_ns() - w->start_ns) / 1e6, max_rss_kb(),
                      st.streaming_used ? "true" : "false", (unsigned long long)st.pages));
    emit(&b);
    w->changes = 0; /* --progress counts changes after the initial sync */
    w->start_ns = cx_mono_ns();
    if (w->exit_on_sync)
        event_base_loopbreak(w->base);
}

static int dump_one(void *ud, struct kube_obj *o)
{
    struct cx_buf *b = ud;
    IGN(cx_json_escape(b, o->key));
    IGN(cx_buf_puts(b, ":"));
    IGN(cx_json_escape(b, o->rv));
    IGN(cx_buf_puts(b, ","));
    return 0;
}

static void dump(struct watch_cmd *w)
{
    struct cx_buf b;
    cx_buf_init(&b, (size_t)256 << 20);
    struct kube_informer_stats st;
    kube_informer_stats(w->inf, &st);
    struct kube_client_stats cs;
    kube_client_stats(w->client, &cs);
    IGN(cx_buf_puts(&b, "{\"event\":\"dump\",\"objects\":{"));
    kube_cache_foreach(kube_informer_cache(w->inf), dump_one, &b);
    if (b.data[b.len - 1] == ',')
        b.len--;
    IGN(cx_buf_printf(&b,
                      "},\"synced\":%s,\"rv\":", kube_informer_synced(w->inf) ? "true" : "false"));
    /* The resourceVersion is the server's string: escaped like any other. */
    IGN(cx_json_escape(&b, kube_informer_resource_version(w->inf)));
    IGN(cx_buf_printf(
        &b,
        ",\"stats\":{\"lists\":%llu,\"relists\":%llu,"
        "\"watch_restarts\":%llu,\"watch_errors\":%llu,\"duplicates\":%llu,\"adds\":%llu,"
        "\"updates\":%llu,\"deletes\":%llu,\"bookmarks\":%llu,\"streaming\":%s,"
        "\"requests\":%llu,\"retries\":%llu,\"token_reads\":%llu,\"unauthorized\":%llu,"
        "\"probes\":%llu,\"conns_abandoned\":%llu}}",
        (unsigned long long)st.lists, (unsigned long long)st.relists,
        (unsigned long long)st.watch_restarts, (unsigned long long)st.watch_errors,
        (unsigned long long)st.duplicates, (unsigned long long)st.adds,
        (unsigned long long)st.updates, (unsigned long long)st.deletes,
        (unsigned long long)st.events[KUBE_EV_BOOKMARK], st.streaming_used ? "true" : "false",
        (unsigned long long)cs.requests, (unsigned long long)cs.retries,
        (unsigned long long)cs.token_reads, (unsigned long long)cs.unauthorized,
        (unsigned long long)cs.probes, (unsigned long long)cs.conns_abandoned));
    emit(&b);
}

static void on_stdin(evutil_socket_t fd, short what, void *arg)
{
    struct watch_cmd *w = arg;
    (void)what;
    char buf[512];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        event_base_loopbreak(w->base);
        return;
    }
    if (cx_buf_append(&w->in, buf, (size_t)n) != 0) {
        cx_buf_reset(&w->in);
        return;
    }
    char *nl;
    while (w->in.len && (nl = memchr(w->in.data, '\n', w->in.len))) {
        *nl = '\0';
        if (strcmp(w->in.data, "dump") == 0)
            dump(w);
        else if (strcmp(w->in.data, "quit") == 0)
            event_base_loopbreak(w->base);
        cx_buf_consume(&w->in, (size_t)(nl - w->in.data) + 1);
    }
}

static void usage(FILE *f)
{
    fprintf(f, "usage: coxswain kube-watch --resource PLURAL [flags]\n"
               "  --kubeconfig FILE      (else $KUBECONFIG, in-cluster, ~/.kube/config)\n"
               "  --context NAME\n"
               "  --group G --version V --kind K   resource (default core v1)\n"
               "  --cluster-scoped       the resource has no namespace\n"
               "  --namespace NS         one namespace (default: all)\n"
               "  --selector SEL         label selector\n"
               "  --field-selector SEL\n"
               "  --identity ID          replica identity in the User-Agent\n"
               "  --streaming auto|on|off   streaming lists (default auto)\n"
               "  --page-size N          list page size (default 500; 0: one unpaged list)\n"
               "  --watch-timeout SECS   timeoutSeconds per watch (default 300)\n"
               "  --stall MS             restart a watch silent this long (default 90000)\n"
               "  --token-reread MS      token file re-read period (default 60000)\n"
               "  --read-idle MS         health check of a silent HTTP/2 connection after\n"
               "                         this (default 25000)\n"
               "  --ping-timeout MS      close a connection not answering it within this\n"
               "                         (default 15000)\n"
               "  --quiet                no line per change\n"
               "  --progress N           a line every N changes after the sync\n"
               "  --exit-on-sync         exit once synced (benchmarks)\n"
               "stdin: 'dump' prints the cache and counters; 'quit' or EOF exits.\n");
}

int cmd_kube_watch(int argc, char **argv)
{
    const char *kubeconfig = NULL, *context = NULL, *group = "", *version = "v1", *kind = "",
               *plural = NULL, *ns = NULL, *sel = NULL, *fsel = NULL, *identity = NULL,
               *streaming = "auto";
    long page = 0, wto = 0, stall = 0, reread = 0, every = 0, idle = 0, ping = 0;
    int cluster = 0, quiet = 0, exit_on_sync = 0, page_set = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define STR_FLAG(name, var)          \
    if (strcmp(a, name) == 0 && v) { \
        var = v;                     \
        i++;                         \
        continue;                    \
    }
#define NUM_FLAG(name, var)                           \
    if (strcmp(a, name) == 0 && v) {                  \
        char *end = NULL;                             \
        var = strtol(v, &end, 10);                    \
        if (!end || *end || var < 0) {                \
            fprintf(stderr, "bad value for %s\n", a); \
            return 2;                                 \
        }                                             \
        i++;                                          \
        continue;                                     \
    }
        STR_FLAG("--kubeconfig", kubeconfig)
        STR_FLAG("--context", context)
        STR_FLAG("--group", group)
        STR_FLAG("--version", version)
        STR_FLAG("--kind", kind)
        STR_FLAG("--resource", plural)
        STR_FLAG("--namespace", ns)
        STR_FLAG("--selector", sel)
        STR_FLAG("--field-selector", fsel)
        STR_FLAG("--identity", identity)
        STR_FLAG("--streaming", streaming)
        if (strcmp(a, "--page-size") == 0)
            page_set = 1;
        NUM_FLAG("--page-size", page)
        NUM_FLAG("--watch-timeout", wto)
        NUM_FLAG("--stall", stall)
        NUM_FLAG("--token-reread", reread)
        NUM_FLAG("--progress", every)
        NUM_FLAG("--read-idle", idle)
        NUM_FLAG("--ping-timeout", ping)
#undef STR_FLAG
#undef NUM_FLAG
        if (strcmp(a, "--cluster-scoped") == 0) {
            cluster = 1;
        } else if (strcmp(a, "--quiet") == 0) {
            quiet = 1;
        } else if (strcmp(a, "--exit-on-sync") == 0) {
            exit_on_sync = 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "kube-watch: unknown flag or missing value: %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!plural) {
        usage(stderr);
        return 2;
    }
    enum kube_streaming sm = KUBE_STREAMING_AUTO;
    if (strcmp(streaming, "on") == 0)
        sm = KUBE_STREAMING_ON;
    else if (strcmp(streaming, "off") == 0)
        sm = KUBE_STREAMING_OFF;
    else if (strcmp(streaming, "auto") != 0) {
        fprintf(stderr, "kube-watch: --streaming must be auto, on or off\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    char err[512];
    struct kube_config cfg;
    if (kube_config_load_default(kubeconfig, context, &cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "kube-watch: %s\n", err);
        return 1;
    }
    int rc = 1;
    struct watch_cmd w = {0};
    struct event *ev_in = NULL;
    cx_buf_init(&w.in, STDIN_LINE_MAX);
    w.quiet = quiet;
    w.exit_on_sync = exit_on_sync;
    w.every = (uint64_t)every;
    w.base = event_base_new();
    struct kube_client_opts co = {.identity = identity,
                                  .token_reread_ms = reread,
                                  .read_idle_ms = idle,
                                  .ping_timeout_ms = ping};
    w.client = w.base ? kube_client_new(w.base, &cfg, &co, err, sizeof(err)) : NULL;
    if (!w.client) {
        fprintf(stderr, "kube-watch: %s\n", w.base ? err : "no event base");
        goto out;
    }
    struct kube_resource res = {group, version, plural, kind, !cluster};
    struct kube_informer_opts io = {
        .res = &res,
        .ns = ns,
        .label_selector = sel,
        .field_selector = fsel,
        .page_size = page_set && page == 0 ? -1 : page,
        .watch_timeout_s = (int)wto,
        .stall_ms = stall,
        .streaming = sm,
    };
    static const struct kube_informer_handlers h = {on_add, on_update, on_delete, on_synced};
    w.inf = kube_informer_new(w.client, &io, &h, &w);
    if (!w.inf) {
        fprintf(stderr, "kube-watch: bad informer options\n");
        goto out;
    }
    /* Commands come on a pipe or a terminal; epoll refuses /dev/null and
     * files, and then there is simply no command channel. */
    struct stat sb;
    if (fstat(STDIN_FILENO, &sb) == 0 &&
        (S_ISFIFO(sb.st_mode) || S_ISSOCK(sb.st_mode) || isatty(STDIN_FILENO))) {
        ev_in = event_new(w.base, STDIN_FILENO, EV_READ | EV_PERSIST, on_stdin, &w);
        if (!ev_in || event_add(ev_in, NULL) != 0)
            goto out;
    }
    w.start_ns = cx_mono_ns();
    if (kube_informer_start(w.inf) != 0)
        goto out;
    event_base_dispatch(w.base);
    rc = 0;
out:
    if (ev_in)
        event_free(ev_in);
    kube_informer_free(w.inf);
    kube_client_free(w.client);
    if (w.base)
        event_base_free(w.base);
    cx_buf_free(&w.in);
    kube_config_free(&cfg);
    return rc;
}
