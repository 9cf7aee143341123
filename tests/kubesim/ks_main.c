/*
 * kubesim main: flags, listening socket, signals, start-up and clean
 * shutdown (every allocation is freed on SIGTERM, so ASan stays quiet).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <event2/http.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cx_log.h"
#include "cx_time.h"
#include "ks.h"
#include "ks_admin.h"
#include "ks_api.h"
#include "ks_http.h"
#include "ks_profile.h"
#include "ks_state.h"
#include "ks_auth.h"
#include "ks_h2.h"
#include "ks_tls.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: kubesim [flags]\n"
               "  --listen ADDR:PORT        listen address (default 127.0.0.1:0)\n"
               "  --port-file FILE          write the bound port there once listening\n"
               "  --kubeconfig FILE         write a kubeconfig for this server there\n"
               "  --kubeconfig-token TOKEN  bearer token to put in that kubeconfig\n"
               "  --allow-all               authorize every request (no RBAC)\n"
               "  --tokens FILE             bearer tokens: lines 'token,user[,uid[,group...]]',\n"
               "                            optional columns aud=a,b and exp=TIME\n"
               "  --api-audiences LIST      audiences a bearer token must be valid for\n"
               "                            (https://kubernetes.default.svc.cluster.local)\n"
               "  --anonymous-user NAME     user of requests without a token (--allow-all);\n"
               "                            default: the User-Agent, else system:anonymous\n"
               "  --tls                     serve HTTPS with a generated test CA (ALPN h2 and\n"
               "                            http/1.1, as kube-apiserver)\n"
               "  --no-http2                with --tls: offer http/1.1 only\n"
               "  --state-dir DIR           where TLS material is written (default: cwd)\n"
               "  --state FILE              load the store at start, save it on SIGTERM\n"
               "  --audit-file FILE         append the audit log (JSON lines) there\n"
               "  --event-window N          events kept per resource for watches (10000)\n"
               "  --bookmark-interval DUR   watch bookmark period (1m)\n"
               "  --too-new-wait DUR        wait for a too-new resourceVersion (3s), then 504\n"
               "  --max-watch-buffer BYTES  end a watch whose unsent bytes exceed this (256MiB)\n"
               "  --no-openapi              answer 404 for /openapi/v3 (as for /openapi/v2)\n"
               "  --emulate VERSION         kube-apiserver release: 1.28 (default), 1.29,\n"
               "                            1.30, 1.31\n"
               "  --feature-gates LIST      Gate=true|false,... (WatchList)\n"
               "  --bookmarks MODE          realistic (default: only when the resource moved\n"
               "                            past the watch) or periodic (every interval)\n"
               "  --progress-notify-interval DUR  etcd progress notifications (default off)\n"
               "  --event-window-time DUR   drop events older than this once 100 are kept\n"
               "                            (75s; 0: by count only)\n"
               "  --log-level LEVEL         debug|info|warn|error (info)\n");
}

static struct ks_server *g_server;

/* --feature-gates Name=bool,...: the gates kubesim emulates. */
static int parse_gates(struct ks_server *s, const char *list)
{
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", list);
    char *save = NULL;
    for (char *g = strtok_r(buf, ",", &save); g; g = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(g, '=');
        bool on;
        if (!eq || (strcmp(eq + 1, "true") != 0 && strcmp(eq + 1, "false") != 0)) {
            fprintf(stderr, "kubesim: --feature-gates %s: Name=true|false\n", g);
            return -1;
        }
        *eq = 0;
        on = strcmp(eq + 1, "true") == 0;
        if (strcmp(g, "WatchList") == 0) {
            s->cfg.watchlist = on;
        } else {
            fprintf(stderr, "kubesim: --feature-gates: unknown gate %s (WatchList)\n", g);
            return -1;
        }
    }
    return 0;
}

/* etcd's progress notification: the watch caches learn the current
 * revision, so quiet resources' watchers get bookmarks again. */
static void on_progress(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct ks_server *s = arg;
    for (struct ks_rtype *rt = s->rtypes; rt; rt = rt->next)
        if (rt->cache_rv < s->rv)
            rt->cache_rv = s->rv;
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    struct ks_server *s = arg;
    if (sig == SIGHUP) {
        ks_tokens_reload(s);
        return;
    }
    cx_info(KS_LOG, "signal %d: shutting down", (int)sig);
    s->stopping = true;
    event_base_loopexit(s->base, NULL);
}

static int write_file_atomic(const char *path, const char *data)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    int rc = fputs(data, f) < 0 ? -1 : 0;
    if (fclose(f) != 0)
        rc = -1;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -1;
    if (rc != 0)
        unlink(tmp);
    return rc;
}

static int write_kubeconfig(struct ks_server *s, const char *token)
{
    struct cx_buf b;
    cx_buf_init(&b, 1 << 20);
    int rc = cx_buf_printf(
        &b, "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: %s://127.0.0.1:%d\n",
        s->cfg.tls ? "https" : "http", s->port);
    if (s->cfg.tls) {
        const char *ca = ks_tls_ca_b64(s);
        if (ca)
            rc |= cx_buf_printf(&b, "    certificate-authority-data: %s\n", ca);
    }
    rc |= cx_buf_puts(&b, "  name: kubesim\ncontexts:\n- context:\n    cluster: kubesim\n"
                          "    namespace: default\n    user: kubesim\n  name: kubesim\n"
                          "current-context: kubesim\npreferences: {}\nusers:\n- name: kubesim\n");
    /* kubectl asks for a username over https when the user has no
     * credentials; with --allow-all and no token file any token is ignored. */
    if (!token && s->cfg.tls)
        token = "kubesim";
    if (token)
        rc |= cx_buf_printf(&b, "  user:\n    token: %s\n", token);
    else
        rc |= cx_buf_puts(&b, "  user: {}\n");
    if (rc == 0)
        rc = write_file_atomic(s->cfg.kubeconfig, b.data);
    cx_buf_free(&b);
    return rc;
}

static void seed_namespaces(struct ks_server *s)
{
    const char *names[] = {"default", "kube-system", "kube-public", "kube-node-lease"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        struct ks_rtype *rt = ks_rtype_find(s, "", "v1", "namespaces");
        if (rt && ks_store_get(rt, names[i]))
            continue;
        cJSON *o = cJSON_CreateObject();
        cJSON *m = cJSON_AddObjectToObject(o, "metadata");
        cJSON_AddStringToObject(m, "name", names[i]);
        if (ks_api_seed(s, "", "namespaces", o) != 0)
            cx_warn(KS_LOG, "could not create namespace %s", names[i]);
        cJSON_Delete(o);
    }
}

/* The bootstrap policy of kube-apiserver (plugin/pkg/auth/authorizer/rbac/
 * bootstrappolicy/policy.go) that matters here: cluster-admin for
 * system:masters, discovery and health for everyone, access reviews of
 * oneself for authenticated users, and the token and access review rights
 * of system:auth-delegator (bound by whoever delegates). */
static const struct {
    const char *plural, *name, *body;
} bootstrap[] = {
    {"clusterroles", "cluster-admin",
     "\"rules\":[{\"apiGroups\":[\"*\"],\"resources\":[\"*\"],\"verbs\":[\"*\"]},"
     "{\"nonResourceURLs\":[\"*\"],\"verbs\":[\"*\"]}]"},
    {"clusterroles", "system:discovery",
     "\"rules\":[{\"nonResourceURLs\":[\"/api\",\"/api/*\",\"/apis\",\"/apis/*\",\"/healthz\","
     "\"/livez\",\"/openapi\",\"/openapi/*\",\"/readyz\",\"/version\",\"/version/\"],"
     "\"verbs\":[\"get\"]}]"},
    {"clusterroles", "system:public-info-viewer",
     "\"rules\":[{\"nonResourceURLs\":[\"/healthz\",\"/livez\",\"/readyz\",\"/version\","
     "\"/version/\"],\"verbs\":[\"get\"]}]"},
    {"clusterroles", "system:basic-user",
     "\"rules\":[{\"apiGroups\":[\"authorization.k8s.io\"],\"resources\":["
     "\"selfsubjectaccessreviews\",\"selfsubjectrulesreviews\"],\"verbs\":[\"create\"]},"
     "{\"apiGroups\":[\"authentication.k8s.io\"],\"resources\":[\"selfsubjectreviews\"],"
     "\"verbs\":[\"create\"]}]"},
    {"clusterroles", "system:auth-delegator",
     "\"rules\":[{\"apiGroups\":[\"authentication.k8s.io\"],\"resources\":[\"tokenreviews\"],"
     "\"verbs\":[\"create\"]},{\"apiGroups\":[\"authorization.k8s.io\"],\"resources\":["
     "\"subjectaccessreviews\"],\"verbs\":[\"create\"]}]"},
    {"clusterrolebindings", "cluster-admin",
     "\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\","
     "\"name\":\"cluster-admin\"},\"subjects\":[{\"apiGroup\":\"rbac.authorization.k8s.io\","
     "\"kind\":\"Group\",\"name\":\"system:masters\"}]"},
    {"clusterrolebindings", "system:discovery",
     "\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\","
     "\"name\":\"system:discovery\"},\"subjects\":[{\"apiGroup\":\"rbac.authorization.k8s.io\","
     "\"kind\":\"Group\",\"name\":\"system:authenticated\"}]"},
    {"clusterrolebindings", "system:public-info-viewer",
     "\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\","
     "\"name\":\"system:public-info-viewer\"},\"subjects\":[{\"apiGroup\":"
     "\"rbac.authorization.k8s.io\",\"kind\":\"Group\",\"name\":\"system:authenticated\"},"
     "{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"Group\",\"name\":"
     "\"system:unauthenticated\"}]"},
    {"clusterrolebindings", "system:basic-user",
     "\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\","
     "\"name\":\"system:basic-user\"},\"subjects\":[{\"apiGroup\":\"rbac.authorization.k8s.io\","
     "\"kind\":\"Group\",\"name\":\"system:authenticated\"}]"},
};

static void seed_rbac(struct ks_server *s)
{
    for (size_t i = 0; i < sizeof(bootstrap) / sizeof(bootstrap[0]); i++) {
        struct ks_rtype *rt =
            ks_rtype_find(s, "rbac.authorization.k8s.io", "v1", bootstrap[i].plural);
        if (!rt || ks_store_get(rt, bootstrap[i].name))
            continue;
        char doc[2048];
        snprintf(doc, sizeof(doc),
                 "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"kubernetes.io/bootstrapping\":"
                 "\"rbac-defaults\"},\"annotations\":{\"rbac.authorization.kubernetes.io/"
                 "autoupdate\":\"true\"}},%s}",
                 bootstrap[i].name, bootstrap[i].body);
        cJSON *o = cJSON_Parse(doc);
        if (!o || ks_api_seed(s, "rbac.authorization.k8s.io", bootstrap[i].plural, o) != 0)
            cx_warn(KS_LOG, "could not create the bootstrap %s %s", bootstrap[i].plural,
                    bootstrap[i].name);
        cJSON_Delete(o);
    }
}

static void server_free(struct ks_server *s)
{
    ks_watch_end_all(s, NULL, NULL);
    ks_admin_release_all(s);
    ks_h2_free_all(s);
    if (s->http)
        evhttp_free(s->http);
    s->http = NULL;
    struct ks_rtype *rt = s->rtypes;
    while (rt) {
        struct ks_rtype *n = rt->next;
        ks_rtype_free(rt);
        rt = n;
    }
    s->rtypes = NULL;
    ks_admin_free(s);
    ks_auth_free(s);
    ks_tls_free(s);
    if (s->sig_term)
        event_free(s->sig_term);
    if (s->sig_int)
        event_free(s->sig_int);
    if (s->sig_hup)
        event_free(s->sig_hup);
    if (s->progress_ev)
        event_free(s->progress_ev);
    if (s->base)
        event_base_free(s->base);
}

int main(int argc, char **argv)
{
    static struct ks_server server;
    struct ks_server *s = &server;
    g_server = s;
    const char *kubeconfig_token = NULL;
    s->cfg.listen = "127.0.0.1:0";
    s->cfg.event_window = 10000;
    s->cfg.bookmark_interval_ms = 60000;
    s->cfg.too_new_wait_ms = 3000;
    s->cfg.emulate_minor = 28;
    s->cfg.window_time_ms = 75000; /* watchCache's eventFreshDuration */
    const char *gates = NULL;
    enum cx_log_level lvl = CX_LOG_INFO;
    enum {
        O_LISTEN = 256,
        O_PORTFILE,
        O_KUBECONFIG,
        O_KCTOKEN,
        O_ALLOWALL,
        O_TOKENS,
        O_ANON,
        O_TLS,
        O_NOH2,
        O_STATEDIR,
        O_STATE,
        O_AUDIT,
        O_WINDOW,
        O_BOOKMARK,
        O_TOONEW,
        O_MAXWATCH,
        O_LOGLEVEL,
        O_HELP,
        O_NOOPENAPI,
        O_APIAUDS,
        O_EMULATE,
        O_GATES,
        O_BOOKMARKS,
        O_PROGRESS,
        O_WINDOWTIME,
    };
    static const struct option opts[] = {
        {"listen", required_argument, NULL, O_LISTEN},
        {"port-file", required_argument, NULL, O_PORTFILE},
        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
        {"kubeconfig-token", required_argument, NULL, O_KCTOKEN},
        {"allow-all", no_argument, NULL, O_ALLOWALL},
        {"tokens", required_argument, NULL, O_TOKENS},
        {"anonymous-user", required_argument, NULL, O_ANON},
        {"tls", no_argument, NULL, O_TLS},
        {"no-http2", no_argument, NULL, O_NOH2},
        {"state-dir", required_argument, NULL, O_STATEDIR},
        {"state", required_argument, NULL, O_STATE},
        {"audit-file", required_argument, NULL, O_AUDIT},
        {"event-window", required_argument, NULL, O_WINDOW},
        {"bookmark-interval", required_argument, NULL, O_BOOKMARK},
        {"too-new-wait", required_argument, NULL, O_TOONEW},
        {"max-watch-buffer", required_argument, NULL, O_MAXWATCH},
        {"log-level", required_argument, NULL, O_LOGLEVEL},
        {"help", no_argument, NULL, O_HELP},
        {"no-openapi", no_argument, NULL, O_NOOPENAPI},
        {"api-audiences", required_argument, NULL, O_APIAUDS},
        {"emulate", required_argument, NULL, O_EMULATE},
        {"feature-gates", required_argument, NULL, O_GATES},
        {"bookmarks", required_argument, NULL, O_BOOKMARKS},
        {"progress-notify-interval", required_argument, NULL, O_PROGRESS},
        {"event-window-time", required_argument, NULL, O_WINDOWTIME},
        {NULL, 0, NULL, 0},
    };
    int c;
    char err[256];
    int64_t ns;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_LISTEN:
            s->cfg.listen = optarg;
            break;
        case O_PORTFILE:
            s->cfg.port_file = optarg;
            break;
        case O_KUBECONFIG:
            s->cfg.kubeconfig = optarg;
            break;
        case O_KCTOKEN:
            kubeconfig_token = optarg;
            break;
        case O_ALLOWALL:
            s->cfg.allow_all = true;
            break;
        case O_TOKENS:
            s->cfg.tokens_file = optarg;
            break;
        case O_ANON:
            s->cfg.anonymous_user = optarg;
            break;
        case O_TLS:
            s->cfg.tls = true;
            break;
        case O_NOH2:
            s->cfg.no_http2 = true;
            break;
        case O_STATEDIR:
            s->cfg.state_dir = optarg;
            break;
        case O_STATE:
            s->cfg.state_file = optarg;
            break;
        case O_AUDIT:
            s->cfg.audit_file = optarg;
            break;
        case O_WINDOW: {
            char *end;
            errno = 0;
            long v = strtol(optarg, &end, 10);
            if (errno || *end || v < 1 || v > 100000000) {
                fprintf(stderr, "kubesim: bad --event-window %s\n", optarg);
                return 2;
            }
            s->cfg.event_window = (size_t)v;
            break;
        }
        case O_BOOKMARK:
        case O_TOONEW:
            if (cx_duration_parse(optarg, &ns, err, sizeof(err)) != 0) {
                fprintf(stderr, "kubesim: bad duration %s: %s\n", optarg, err);
                return 2;
            }
            if (c == O_BOOKMARK)
                s->cfg.bookmark_interval_ms = ns / CX_NS_PER_MS > 0 ? ns / CX_NS_PER_MS : 1;
            else
                s->cfg.too_new_wait_ms = ns / CX_NS_PER_MS;
            break;
        case O_MAXWATCH: {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (errno || *end || v == 0) {
                fprintf(stderr, "kubesim: bad --max-watch-buffer %s\n", optarg);
                return 2;
            }
            s->cfg.max_watch_buffer = (size_t)v;
            break;
        }
        case O_LOGLEVEL:
            if (cx_log_parse_level(optarg, &lvl) != 0) {
                fprintf(stderr, "kubesim: bad --log-level %s\n", optarg);
                return 2;
            }
            break;
        case O_HELP:
            usage(stdout);
            return 0;
        case O_NOOPENAPI:
            s->cfg.no_openapi = true;
            break;
        case O_APIAUDS:
            s->cfg.api_audiences = optarg;
            break;
        case O_EMULATE:
            s->cfg.emulate_minor = ks_profile_parse(optarg);
            if (s->cfg.emulate_minor < 0) {
                fprintf(stderr, "kubesim: --emulate %s: one of 1.28, 1.29, 1.30, 1.31\n", optarg);
                return 2;
            }
            break;
        case O_GATES:
            gates = optarg;
            break;
        case O_BOOKMARKS:
            if (strcmp(optarg, "periodic") == 0)
                s->cfg.bookmarks_periodic = true;
            else if (strcmp(optarg, "realistic") != 0) {
                fprintf(stderr, "kubesim: --bookmarks %s: realistic or periodic\n", optarg);
                return 2;
            }
            break;
        case O_PROGRESS:
        case O_WINDOWTIME:
            if (cx_duration_parse(optarg, &ns, err, sizeof(err)) != 0) {
                fprintf(stderr, "kubesim: bad duration %s: %s\n", optarg, err);
                return 2;
            }
            if (c == O_PROGRESS)
                s->cfg.progress_notify_ms = ns / CX_NS_PER_MS;
            else
                s->cfg.window_time_ms = ns / CX_NS_PER_MS;
            break;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    s->cfg.watchlist = ks_profile_find(s->cfg.emulate_minor)->watchlist_default;
    if (gates && parse_gates(s, gates) != 0)
        return 2;
    cx_log_setup(CX_LOG_TEXT, lvl, "kubesim");
    signal(SIGPIPE, SIG_IGN);
    {
        /* Many watchers (benchmarks, chaos tests): use the hard fd limit. */
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max;
            (void)setrlimit(RLIMIT_NOFILE, &rl);
        }
    }

    int rc = 1;
    char host[256];
    int port = 0;
    {
        const char *colon = strrchr(s->cfg.listen, ':');
        char *end;
        long p = colon ? strtol(colon + 1, &end, 10) : -1;
        if (!colon || *end || p < 0 || p > 65535) {
            fprintf(stderr, "kubesim: bad --listen %s\n", s->cfg.listen);
            return 2;
        }
        snprintf(host, sizeof(host), "%.*s", (int)(colon - s->cfg.listen), s->cfg.listen);
        port = (int)p;
    }
    TAILQ_INIT(&s->all_watches);
    TAILQ_INIT(&s->parked);
    s->base = event_base_new();
    if (!s->base)
        goto out;
    if (ks_admin_init(s) != 0) {
        cx_error(KS_LOG, "cannot open the audit file");
        goto out;
    }
    if (ks_auth_init(s) != 0)
        goto out;
    ks_rtypes_builtin(s);
    if (s->cfg.state_file && ks_state_load(s) != 0)
        goto out;
    seed_namespaces(s);
    seed_rbac(s);
    s->http = evhttp_new(s->base);
    if (!s->http)
        goto out;
    evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
                                            EVHTTP_REQ_PATCH | EVHTTP_REQ_DELETE | EVHTTP_REQ_HEAD |
                                            EVHTTP_REQ_OPTIONS);
    evhttp_set_max_body_size(s->http, (ev_ssize_t)KS_BODY_MAX);
    evhttp_set_max_headers_size(s->http, 1 << 20);
    /* Longer than the longest default watch (60 min): an idle watch must not
     * be cut by libevent's read timeout. */
    evhttp_set_timeout(s->http, 7200);
    evhttp_set_gencb(s->http, ks_http_handle, s);
    if (s->cfg.tls && ks_tls_setup(s) != 0) {
        cx_error(KS_LOG, "TLS setup failed");
        goto out;
    }
    s->bound = evhttp_bind_socket_with_handle(s->http, host, (ev_uint16_t)port);
    if (!s->bound) {
        cx_error(KS_LOG, "cannot listen on %s", s->cfg.listen);
        goto out;
    }
    {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        evutil_socket_t fd = evhttp_bound_socket_get_fd(s->bound);
        if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
            goto out;
        s->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    }
    s->sig_term = evsignal_new(s->base, SIGTERM, on_signal, s);
    s->sig_int = evsignal_new(s->base, SIGINT, on_signal, s);
    s->sig_hup = evsignal_new(s->base, SIGHUP, on_signal, s);
    if (!s->sig_term || !s->sig_int || !s->sig_hup || event_add(s->sig_term, NULL) ||
        event_add(s->sig_int, NULL) || event_add(s->sig_hup, NULL))
        goto out;
    if (s->cfg.progress_notify_ms > 0) {
        s->progress_ev = event_new(s->base, -1, EV_PERSIST, on_progress, s);
        struct timeval tv = {.tv_sec = s->cfg.progress_notify_ms / 1000,
                             .tv_usec = (s->cfg.progress_notify_ms % 1000) * 1000};
        if (!s->progress_ev || event_add(s->progress_ev, &tv) != 0)
            goto out;
    }
    if (s->cfg.kubeconfig && write_kubeconfig(s, kubeconfig_token) != 0) {
        cx_error(KS_LOG, "cannot write %s", s->cfg.kubeconfig);
        goto out;
    }
    if (s->cfg.port_file) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%d\n", s->port);
        if (write_file_atomic(s->cfg.port_file, buf) != 0) {
            cx_error(KS_LOG, "cannot write %s", s->cfg.port_file);
            goto out;
        }
    }
    cx_info(KS_LOG,
            "listening on %s://%s:%d (rv %llu), emulating 1.%d (WatchList %s, %s bookmarks)",
            s->cfg.tls ? "https" : "http", host, s->port, (unsigned long long)s->rv,
            s->cfg.emulate_minor, s->cfg.watchlist ? "on" : "off",
            s->cfg.bookmarks_periodic ? "periodic" : "realistic");
    event_base_dispatch(s->base);
    rc = 0;
    if (s->cfg.state_file && ks_state_save(s) != 0) {
        cx_error(KS_LOG, "cannot save the state to %s", s->cfg.state_file);
        rc = 1;
    }
out:
    server_free(s);
    return rc;
}
