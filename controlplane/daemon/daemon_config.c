#include "daemon_config.h"

#include "cx_time.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define F(...)                       \
    c->table[n++] = (struct cx_flag) \
    {                                \
        __VA_ARGS__                  \
    }

int daemon_config_init(struct daemon_config *c)
{
    memset(c, 0, sizeof(*c));
    size_t n = 0;
    F(.name = "config", .type = CX_FLAG_STRING, .target = &c->config_file, .env = "COXSWAIN_CONFIG",
      .help = "YAML or JSON file of flag values (flag names as keys); the environment and the "
              "command line override it");
    F(.name = "kubeconfig", .type = CX_FLAG_STRING, .target = &c->kubeconfig,
      .help = "kubeconfig file; empty: the first file of $KUBECONFIG, else in-cluster "
              "configuration when $KUBERNETES_SERVICE_HOST is set, else ~/.kube/config");
    F(.name = "context", .type = CX_FLAG_STRING, .target = &c->kube_context,
      .help = "kubeconfig context to use (default: its current-context)");
    F(.name = "namespace", .type = CX_FLAG_STRING, .target = &c->namespace, .env = "POD_NAMESPACE",
      .help = "namespace of the control plane: the election lock, ProxySnapshots and Events "
              "live there (default: the kubeconfig context's namespace, else \"default\")");
    F(.name = "identity", .type = CX_FLAG_STRING, .target = &c->identity,
      .env = "COXSWAIN_IDENTITY",
      .help = "this replica's identity in the election and in User-Agents (default "
              "<$POD_NAME or hostname>_<8 random hex>)");
    F(.name = "xds-listen", .type = CX_FLAG_STRING, .target = &c->xds_listen,
      .def = "0.0.0.0:18000", .env = "COXSWAIN_XDS_LISTEN",
      .help = "address of the gRPC ADS (xDS v3) server; port 0 picks a free port");
    F(.name = "xds-tls-cert-file", .type = CX_FLAG_STRING, .target = &c->xds_tls_cert,
      .help = "PEM certificate chain: serve xDS over TLS (with --xds-tls-key-file)");
    F(.name = "xds-tls-key-file", .type = CX_FLAG_STRING, .target = &c->xds_tls_key,
      .help = "PEM private key of --xds-tls-cert-file");
    F(.name = "xds-auth", .type = CX_FLAG_STRING, .target = &c->xds_auth, .def = "required",
      .env = "COXSWAIN_XDS_AUTH",
      .help = "\"required\": every xDS client authenticates (a ServiceAccount token checked "
              "with TokenReview, or a SPIFFE client certificate) and receives only the Gateways "
              "it is allowed; \"none\": anyone who reaches the port gets any Gateway, keys "
              "included (insecure: loopback demos only)");
    F(.name = "xds-token-audience", .type = CX_FLAG_STRING, .target = &c->xds_token_audience,
      .def = "coxswain",
      .help = "audience a proxy's ServiceAccount token must be issued for (its projected "
              "token's audience)");
    F(.name = "xds-spiffe-trust-domain", .type = CX_FLAG_STRING, .target = &c->xds_trust_domain,
      .def = "cluster.local",
      .help = "trust domain of client certificates' SPIFFE IDs "
              "(spiffe://<domain>/ns/<namespace>/sa/<name>)");
    F(.name = "xds-tls-client-ca-file", .type = CX_FLAG_STRING, .target = &c->xds_tls_client_ca,
      .help = "PEM CA bundle: verify xDS clients' certificates against it (mTLS; with "
              "--xds-auth none, a certificate it signed is required)");
    F(.name = "xds-memory-budget-mb", .type = CX_FLAG_INT, .target = &c->xds_memory_budget_mb,
      .def = "64", .env = "COXSWAIN_XDS_MEMORY_BUDGET_MB", .min = 1, .max = 65536,
      .help = "MiB the xDS server may hold for what clients send: partly received messages "
              "and subscription name lists, all streams together (one connection may take a "
              "quarter); past it, new data is refused with RESOURCE_EXHAUSTED");
    F(.name = "xds-idle-connection-timeout", .type = CX_FLAG_DURATION,
      .target = &c->xds_idle_conn_ns, .def = "5m", .min = 0, .max = 86400,
      .help = "close xDS connections that hold no stream for this long (0: never)");
    F(.name = "xds-nack-rate", .type = CX_FLAG_DOUBLE, .target = &c->xds_nack_rate, .def = "0.2",
      .min = 0.001, .max = 1000,
      .help = "NACKs per second and stream that are logged and reported on the Gateway's "
              "status (burst 3); more are only counted");
    F(.name = "admin-listen", .type = CX_FLAG_STRING, .target = &c->admin_listen,
      .def = "0.0.0.0:18080", .env = "COXSWAIN_ADMIN_LISTEN",
      .help = "address of the admin HTTP server: /metrics, /healthz, /readyz, /debug/*, "
              "/v3/discovery:*; port 0 picks a free port");
    F(.name = "admin-trust-loopback", .type = CX_FLAG_BOOL, .target = &c->admin_trust_loopback,
      .def = "true",
      .help = "serve /debug/* and /v3/discovery:* to loopback clients without a token; "
              "others need a bearer token whose user may `get` the path "
              "(SubjectAccessReview)");
    F(.name = "admin-max-connections", .type = CX_FLAG_INT, .target = &c->admin_max_connections,
      .def = "256", .min = 4, .max = 65536,
      .help = "open admin connections; a new one past it closes the oldest connection still "
              "waiting for its answer (so slow clients cannot keep probes out)");
    F(.name = "admin-request-deadline", .type = CX_FLAG_DURATION,
      .target = &c->admin_request_deadline_ns, .def = "30s", .min = 1, .max = 3600,
      .help = "time from an admin connection's start (or its previous request) until a "
              "request has arrived and its answer has left, however slowly the bytes "
              "trickle; the connection is closed past it");
    F(.name = "allow-core-dumps", .type = CX_FLAG_BOOL, .target = &c->allow_core_dumps,
      .def = "false",
      .help = "let the process dump core; by default it is not dumpable (PR_SET_DUMPABLE 0): "
              "a core would hold every private key and token it has read");
    F(.name = "admin-timeout", .type = CX_FLAG_DURATION, .target = &c->admin_timeout_ns,
      .def = "10s", .min = 1, .max = 600,
      .help = "time an admin client has to send its request and to read the answer; the "
              "connection is closed past it (slow clients cannot hold connections)");
    F(.name = "default-gateway", .type = CX_FLAG_STRING, .target = &c->default_gateway,
      .env = "COXSWAIN_DEFAULT_GATEWAY",
      .help = "Gateway (namespace/name) serving proxies whose node names none "
              "(no coxswain.dev/gateway metadata and no cluster)");
    F(.name = "debounce", .type = CX_FLAG_DURATION, .target = &c->debounce_ns, .def = "100ms",
      .env = "COXSWAIN_DEBOUNCE", .min = 0, .max = 60,
      .help = "batch window: changes are translated at most this long after the first of a "
              "batch");
    F(.name = "status-qps", .type = CX_FLAG_DOUBLE, .target = &c->status_qps, .def = "20",
      .env = "COXSWAIN_STATUS_QPS", .min = 0, .max = 100000,
      .help = "status writes per second (token bucket; 0: unlimited)");
    F(.name = "status-burst", .type = CX_FLAG_INT, .target = &c->status_burst, .def = "50",
      .env = "COXSWAIN_STATUS_BURST", .min = 1, .max = 1000000,
      .help = "status writes allowed in a burst (the bucket's depth)");
    F(.name = "kube-api-qps", .type = CX_FLAG_DOUBLE, .target = &c->kube_api_qps, .def = "50",
      .env = "COXSWAIN_KUBE_API_QPS", .min = 1, .max = 100000,
      .help = "safety limit on requests to the Kubernetes API per second, for the whole "
              "replica (informers, writers, Events and the elector together; client-go's "
              "--kube-api-qps); requests over it wait their turn");
    F(.name = "kube-api-burst", .type = CX_FLAG_INT, .target = &c->kube_api_burst, .def = "100",
      .env = "COXSWAIN_KUBE_API_BURST", .min = 4, .max = 1000000,
      .help = "requests to the Kubernetes API allowed in a burst above --kube-api-qps (the "
              "bucket's depth; the last 2 are kept for the elector's lease renewals)");
    F(.name = "kube-api-read-idle-timeout", .type = CX_FLAG_DURATION,
      .target = &c->kube_api_read_idle_ns, .def = "25s",
      .env = "COXSWAIN_KUBE_API_READ_IDLE_TIMEOUT", .min = 0, .max = 600,
      .help = "an HTTP/2 connection to the Kubernetes API that received nothing this long "
              "while requests or watches wait on it gets a health check (client-go's "
              "ReadIdleTimeout; 0: never checked)");
    F(.name = "kube-api-ping-timeout", .type = CX_FLAG_DURATION,
      .target = &c->kube_api_ping_timeout_ns, .def = "15s", .env = "COXSWAIN_KUBE_API_PING_TIMEOUT",
      .min = 0.1, .max = 600,
      .help = "a connection that does not answer its health check within this is closed and "
              "its requests and watches move to a new one (client-go's PingTimeout)");
    F(.name = "kube-api-watch-timeout", .type = CX_FLAG_DURATION,
      .target = &c->kube_api_watch_timeout_ns, .def = "5m",
      .env = "COXSWAIN_KUBE_API_WATCH_TIMEOUT", .min = 1, .max = 3600,
      .help = "timeoutSeconds of the informers' watches: the API server ends each watch after "
              "this and it resumes from its resourceVersion; also how long a watch stream "
              "stalled on a live HTTP/2 connection can go unnoticed (client-go: 5-10 min)");
    F(.name = "snapshot-max-bytes", .type = CX_FLAG_INT, .target = &c->snapshot_max_bytes,
      .def = "524288", .min = 0, .max = 1048576,
      .help = "cap on the gzip+base64 snapshot a ProxySnapshot carries; larger ones are left "
              "out and marked truncated (0: never include it)");
    F(.name = "shutdown-grace", .type = CX_FLAG_DURATION, .target = &c->shutdown_grace_ns,
      .def = "4s", .min = 0, .max = 60,
      .help = "on SIGTERM/SIGINT: time allowed to release the lease and close xDS streams "
              "(GOAWAY) before exiting anyway");
    F(.name = "ports-file", .type = CX_FLAG_STRING, .target = &c->ports_file,
      .help = "once listening, write {\"xds\": port, \"admin\": port, \"identity\": ...} "
              "to this file (for scripts and tests that listen on port 0)");
    F(.name = "log-format", .type = CX_FLAG_STRING, .target = &c->log_format, .def = "text",
      .env = "COXSWAIN_LOG_FORMAT", .help = "log format: text or json");
    F(.name = "log-level", .type = CX_FLAG_STRING, .target = &c->log_level, .def = "info",
      .env = "COXSWAIN_LOG_LEVEL", .help = "minimum log level: debug, info, warn or error");
    F(.name = "namespace-selector", .type = CX_FLAG_STRING, .target = &c->namespace_selector,
      .help = "same as --watch-namespace-selector (the Helm chart's spelling)");
    F(.name = "label-selector", .type = CX_FLAG_STRING, .target = &c->label_selector,
      .help = "label selector for every coxswain.dev kind (Gateway, VirtualService, RouteTable, "
              "Upstream) without its own --<kind>-label-selector");
    F(.name = "tls-inputs", .type = CX_FLAG_BOOL, .target = &c->tls_inputs, .def = "true",
      .env = "COXSWAIN_TLS_INPUTS",
      .help = "watch Secrets (type kubernetes.io/tls) and ConfigMaps in the watched namespaces "
              "and keep those that Gateways and Upstreams name in spec.tls; false: read "
              "neither (no RBAC needed for them; TLS references then report not found)");
    F(.name = "standby", .type = CX_FLAG_STRING, .target = &c->standby, .def = "warm",
      .env = "COXSWAIN_STANDBY",
      .help = "what a replica that does not lead does: warm (watch everything, translate and "
              "serve xDS, ready; takeover in milliseconds) or cold (watch only the lock, serve "
              "no xDS, not ready: no API load but the lock's watch; on becoming leader it "
              "lists, translates, serves and reconciles every status, and on losing it tells "
              "its proxies to go and frees its caches)");
    /* The translator's inputs. */
    static const char *const kinds[] = {"Gateway",  "VirtualService", "RouteTable",
                                        "Upstream", "Service",        "EndpointSlice",
                                        "Secret",   "ConfigMap",      NULL};
    size_t m = filter_flags_table(&c->ff, kinds, c->table + n, DAEMON_FLAGS_MAX - n);
    if (!m)
        return -1;
    n += m;
    m = xlate_limits_flags(&c->limits, c->table + n, DAEMON_FLAGS_MAX - n);
    if (!m)
        return -1;
    n += m;
    size_t first_el = n;
    m = election_flags_table(&c->ef, c->table + n, DAEMON_FLAGS_MAX - n);
    if (!m)
        return -1;
    n += m;
    /* The daemon is meant to run replicated: election on by default, and
     * the lock lives in --namespace unless told otherwise. */
    for (size_t i = first_el; i < n; i++) {
        if (strcmp(c->table[i].name, "leader-elect") == 0) {
            c->table[i].def = "true";
        } else if (strcmp(c->table[i].name, "leader-elect-resource-namespace") == 0) {
            c->table[i].def = NULL;
            c->table[i].env = NULL;
            c->table[i].help = "namespace of the lock object (default: --namespace)";
        }
    }
    c->nflags = n;
    return 0;
}

/* What the election and the filters make of the flags, checked now, so
 * that every bad flag (a lease rule, a selector, a namespace name) is
 * refused while parsing, with the flags' exit status, and not at start-up.
 * The namespace the kubeconfig may supply later is stood in for by
 * "default", the identity by a valid placeholder. */
static int check_derived(const struct daemon_config *c, char *err, size_t errlen)
{
    struct election_config ec;
    const char *ns = c->namespace && *c->namespace ? c->namespace : "default";
    const char *id = c->identity && *c->identity ? c->identity : "replica_00000000";
    if (daemon_config_election(c, ns, id, &ec, err, errlen) != 0)
        return -1;
    struct filter *f = filter_new();
    if (!f) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = daemon_config_filter(c, &ec, f, err, errlen);
    filter_free(f);
    return rc;
}

int daemon_config_parse(struct daemon_config *c, int argc, char **argv, char *err, size_t errlen)
{
    int rc = cx_flags_parse(c->table, c->nflags, argc, argv, err, errlen);
    if (rc != 0)
        return rc;
    if ((c->xds_tls_cert && *c->xds_tls_cert) != (c->xds_tls_key && *c->xds_tls_key)) {
        snprintf(err, errlen, "--xds-tls-cert-file and --xds-tls-key-file go together");
        return -1;
    }
    if (c->xds_tls_client_ca && *c->xds_tls_client_ca && !(c->xds_tls_cert && *c->xds_tls_cert)) {
        snprintf(err, errlen, "--xds-tls-client-ca-file needs --xds-tls-cert-file");
        return -1;
    }
    if (!c->standby || strcmp(c->standby, "warm") == 0) {
        c->cold = 0;
    } else if (strcmp(c->standby, "cold") == 0) {
        c->cold = 1;
    } else {
        snprintf(err, errlen, "--standby: \"%s\" is neither warm nor cold", c->standby);
        return -1;
    }
    if (!c->xds_auth ||
        (strcmp(c->xds_auth, "required") != 0 && strcmp(c->xds_auth, "none") != 0)) {
        snprintf(err, errlen, "--xds-auth: \"%s\" is not \"required\" or \"none\"",
                 c->xds_auth ? c->xds_auth : "");
        return -1;
    }
    if (c->default_gateway && *c->default_gateway) {
        const char *s = strchr(c->default_gateway, '/');
        if (!s || s == c->default_gateway || !s[1] || strchr(s + 1, '/')) {
            snprintf(err, errlen, "--default-gateway: \"%s\" is not namespace/name",
                     c->default_gateway);
            return -1;
        }
    }
    return check_derived(c, err, errlen);
}

void daemon_config_usage(const struct daemon_config *c, FILE *out)
{
    cx_flags_usage(
        out, "coxswain run",
        "Runs one replica of the control plane: watches the Kubernetes API, translates\n"
        "Gateways, VirtualServices, RouteTables, Upstreams, Services and EndpointSlices\n"
        "(and the TLS Secrets and CA ConfigMaps they name) into xDS and serves it to\n"
        "proxies. With --leader-elect (the default) replicas\n"
        "elect a leader; only the leader writes statuses and ProxySnapshots, every\n"
        "replica serves xDS. Environment: POD_NAME (identity), POD_NAMESPACE.\n"
        "\n"
        "Exit status: 0 after a clean shutdown (SIGTERM or SIGINT); 1 when start-up\n"
        "fails (kubeconfig, a port that cannot be listened on, ...); 2 for a bad flag\n"
        "or flag value, the election's lease rules and selectors included.",
        c->table, c->nflags);
}

char *daemon_config_json(const struct daemon_config *c)
{
    return cx_flags_json(c->table, c->nflags);
}

const char *daemon_config_namespace(const struct daemon_config *c, const char *kube_ns)
{
    if (c->namespace && *c->namespace)
        return c->namespace;
    return kube_ns && *kube_ns ? kube_ns : "default";
}

int daemon_config_election(const struct daemon_config *c, const char *ns, const char *identity,
                           struct election_config *out, char *err, size_t errlen)
{
    election_config_defaults(out);
    if (election_apply_flags(out, &c->ef, err, errlen) != 0)
        return -1;
    if (!c->ef.ns || !*c->ef.ns)
        snprintf(out->ns, sizeof(out->ns), "%s", ns);
    if (strlen(identity) >= sizeof(out->identity)) {
        snprintf(err, errlen, "--identity: longer than %zu characters", sizeof(out->identity) - 1);
        return -1;
    }
    snprintf(out->identity, sizeof(out->identity), "%s", identity);
    return election_config_validate(out, err, errlen);
}

static const char *const own_kinds[] = {"Gateway", "VirtualService", "RouteTable", "Upstream"};

int daemon_config_filter(const struct daemon_config *c, const struct election_config *ec,
                         struct filter *f, char *err, size_t errlen)
{
    struct filter_error fe;
    if (filter_apply_flags(f, &c->ff, &fe) != FILTER_OK) {
        snprintf(err, errlen, "%s", fe.msg);
        return -1;
    }
    if (c->namespace_selector && *c->namespace_selector &&
        !(c->ff.watch_namespace_selector && *c->ff.watch_namespace_selector)) {
        if (filter_set_namespace_selector(f, NULL, c->namespace_selector, &fe) != FILTER_OK) {
            snprintf(err, errlen, "--namespace-selector: %s", fe.msg);
            return -1;
        }
    }
    if (c->label_selector && *c->label_selector) {
        for (size_t i = 0; i < sizeof(own_kinds) / sizeof(own_kinds[0]); i++) {
            const char *own = NULL;
            for (size_t k = 0; k < c->ff.nkinds; k++)
                if (strcasecmp(c->ff.kinds[k].kind, own_kinds[i]) == 0)
                    own = c->ff.kinds[k].values[2];
            if (own && *own)
                continue;
            if (filter_set_label_selector(f, own_kinds[i], c->label_selector, &fe) != FILTER_OK) {
                snprintf(err, errlen, "--label-selector: %s", fe.msg);
                return -1;
            }
        }
    }
    /* Secrets: only kubernetes.io/tls ever leaves the API server (pushed
     * down, and re-checked by the filter) */
    const char *sf = NULL;
    for (size_t k = 0; k < c->ff.nkinds; k++)
        if (strcasecmp(c->ff.kinds[k].kind, "Secret") == 0)
            sf = c->ff.kinds[k].values[3];
    char fs[1024];
    if (sf && *sf && strstr(sf, DAEMON_SECRET_TYPE_SELECTOR))
        snprintf(fs, sizeof(fs), "%s", sf);
    else
        snprintf(fs, sizeof(fs), "%s%s" DAEMON_SECRET_TYPE_SELECTOR, sf ? sf : "",
                 sf && *sf ? "," : "");
    if (filter_set_field_selector(f, "Secret", fs, &fe) != FILTER_OK) {
        snprintf(err, errlen, "--secret-field-selector: %s", fe.msg);
        return -1;
    }
    if (ec->enabled &&
        filter_add_lock(f, ec->lock == ELECTION_LOCK_CONFIGMAPS ? "ConfigMap" : "Lease", ec->ns,
                        ec->name) != FILTER_OK) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

void daemon_config_free(struct daemon_config *c)
{
    cx_flags_free(c->table, c->nflags);
}
