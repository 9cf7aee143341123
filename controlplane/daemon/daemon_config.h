/*
 * daemon_config: the flags of `coxswain run` — the daemon's own, the
 * filters' (filter_flags_table) and the election's (election_flags_table)
 * in one cx_flags table, with environment variables and an optional
 * YAML/JSON config file (--config). Start-up only (main thread).
 */
#ifndef DAEMON_CONFIG_H
#define DAEMON_CONFIG_H

#include "cx_flags.h"
#include "election_config.h"
#include "filter.h"
#include "xlate.h"

#include <stdint.h>
#include <stdio.h>

#define DAEMON_FLAGS_MAX (40 + FILTER_FLAGS_MAX + ELECTION_FLAGS_MAX + XLATE_LIMITS_FLAGS)

/* Always part of the Secrets' field selector. */
#define DAEMON_SECRET_TYPE_SELECTOR "type=kubernetes.io/tls"

struct daemon_config {
    char *config_file;
    char *kubeconfig;
    char *kube_context;
    char *namespace; /* lock, ProxySnapshots, Events */
    char *identity;
    char *xds_listen;
    char *xds_tls_cert;
    char *xds_tls_key;
    char *xds_tls_client_ca;
    long xds_memory_budget_mb;
    int64_t xds_idle_conn_ns;
    double xds_nack_rate;
    char *xds_auth; /* "required" or "none" */
    char *xds_token_audience;
    char *xds_trust_domain;
    char *admin_listen;
    int admin_trust_loopback;
    int allow_core_dumps;
    long admin_max_connections;
    int64_t admin_request_deadline_ns;
    int64_t admin_timeout_ns;
    char *default_gateway;
    int64_t debounce_ns;
    double status_qps;
    long status_burst;
    double kube_api_qps; /* the replica's request limit (kube_limit) */
    long kube_api_burst;
    int64_t kube_api_read_idle_ns; /* dead-connection check (kube_conn.c); 0: none */
    int64_t kube_api_ping_timeout_ns;
    int64_t kube_api_watch_timeout_ns; /* the informers' watch timeoutSeconds */
    long snapshot_max_bytes;
    int64_t shutdown_grace_ns;
    char *ports_file;
    char *log_format;
    char *log_level;
    /* Helm-chart spellings: --namespace-selector is --watch-namespace-selector;
     * --label-selector applies to the coxswain.dev kinds without their own. */
    char *namespace_selector;
    char *label_selector;
    int tls_inputs; /* watch Secrets and ConfigMaps (spec.tls references) */
    char *standby;  /* "warm" or "cold" (--standby) */
    int cold;       /* --standby cold, checked by daemon_config_parse */
    struct filter_flags ff;
    struct election_flags ef;
    struct xlate_limits limits; /* the translator's budgets (xlate_limits_flags) */
    struct cx_flag table[DAEMON_FLAGS_MAX];
    size_t nflags;
};

/* Zeroes |c| and builds the flag table. Returns 0 or -1 (table overflow: a
 * programming error). */
int daemon_config_init(struct daemon_config *c);

/* Parses argv (argv[0] is the subcommand). Returns 0, 1 for --help, or -1
 * with a message in |err|. */
int daemon_config_parse(struct daemon_config *c, int argc, char **argv, char *err, size_t errlen);

void daemon_config_usage(const struct daemon_config *c, FILE *out);

/* Every flag's value as JSON (secrets redacted); caller frees. */
char *daemon_config_json(const struct daemon_config *c);

/* The namespace where the lock, ProxySnapshots and Events live:
 * --namespace, else the kubeconfig's context namespace |kube_ns|, else
 * "default". */
const char *daemon_config_namespace(const struct daemon_config *c, const char *kube_ns);

/* Builds the election config: the flags, the lock namespace defaulting to
 * daemon_config_namespace(), and |identity|. Returns 0 or -1 with |err|. */
int daemon_config_election(const struct daemon_config *c, const char *ns, const char *identity,
                           struct election_config *out, char *err, size_t errlen);

/* Configures |f| from the filter flags (plus the Helm spellings) and
 * excludes the election's lock. Returns 0 or -1 with |err|. */
int daemon_config_filter(const struct daemon_config *c, const struct election_config *ec,
                         struct filter *f, char *err, size_t errlen);

void daemon_config_free(struct daemon_config *c);

#endif
