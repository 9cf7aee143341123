/*
 * kube_config: where the API server is and how to authenticate to it.
 *
 * Reads a kubeconfig (YAML or JSON; --kubeconfig, $KUBECONFIG, ~/.kube/config;
 * its current-context or a named one) or the in-cluster service-account
 * files. The result is a plain struct that any number of clients, on any
 * threads, may read at the same time; nothing here keeps state (the shared
 * request limit it may carry is thread-safe: kube_limit.h).
 */
#ifndef KUBE_CONFIG_H
#define KUBE_CONFIG_H

#include "kube_limit.h"

#include <stddef.h>

#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* Caps on what we read from files a user or a mount gives us. */
#define KUBE_CONFIG_FILE_MAX ((size_t)4 << 20)
#define KUBE_TOKEN_FILE_MAX  ((size_t)64 << 10)

struct kube_config {
    char *server;  /* "https://host:port" without a trailing slash */
    char *ca_file; /* PEM file, absolute path, or NULL */
    char *ca_data; /* PEM bytes (certificate-authority-data decoded) */
    size_t ca_data_len;
    char *client_cert_file; /* PEM, or NULL */
    char *client_key_file;
    char *client_cert_data; /* PEM bytes, or NULL */
    size_t client_cert_data_len;
    char *client_key_data;
    size_t client_key_data_len;
    char *token;           /* a static bearer token, or NULL */
    char *token_file;      /* re-read periodically (projected tokens), or NULL */
    char *tls_server_name; /* SNI / verification name override, or NULL */
    int insecure_skip_tls_verify;
    char *namespace; /* the context's namespace, else "default" */
    char *context;   /* the context used ("" in-cluster) */
    char *source;    /* the file it came from, or "in-cluster" */
    /* The request limit every client made from this config shares (one
     * reference; copies take their own), or NULL: each client then makes
     * its own from kube_client_opts. Never read from a file. */
    struct kube_limit *limit;
    /* The dead-connection check of every client made from it
     * (kube_client_opts.read_idle_ms, .ping_timeout_ms, which win when
     * set); 0: the defaults, < 0 read idle: none. Never read from a file. */
    int64_t read_idle_ms;
    int64_t ping_timeout_ms;
};

/* Parses kubeconfig text |text| (|len| bytes). Relative file paths in it
 * are resolved against |base_dir| (the kubeconfig's directory; NULL: as
 * given). |context| NULL means current-context. Returns 0, or -1 with a
 * message in |err| (never a secret). On success the caller owns *out and
 * frees it with kube_config_free. */
__attribute__((warn_unused_result)) int kube_config_parse(const char *text, size_t len,
                                                          const char *base_dir, const char *context,
                                                          struct kube_config *out, char *err,
                                                          size_t errlen);

/* Reads the kubeconfig file |path|. Same contract as kube_config_parse. */
__attribute__((warn_unused_result)) int kube_config_load_file(const char *path, const char *context,
                                                              struct kube_config *out, char *err,
                                                              size_t errlen);

/* In-cluster config: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT
 * (|host|/|port| override them when not NULL), token file, ca.crt and
 * namespace from |sa_dir| (NULL: KUBE_SA_DIR). Returns 0 or -1 with |err|. */
__attribute__((warn_unused_result)) int kube_config_in_cluster(const char *sa_dir, const char *host,
                                                               const char *port,
                                                               struct kube_config *out, char *err,
                                                               size_t errlen);

/* The daemon's rule: |kubeconfig| (the flag) if set, else the first file of
 * $KUBECONFIG (colon-separated) that exists, else in-cluster when
 * $KUBERNETES_SERVICE_HOST is set, else ~/.kube/config. */
__attribute__((warn_unused_result)) int kube_config_load_default(const char *kubeconfig,
                                                                 const char *context,
                                                                 struct kube_config *out, char *err,
                                                                 size_t errlen);

/* Deep copy (for a client that wants its own). Returns 0 or -1 (memory). */
__attribute__((warn_unused_result)) int kube_config_copy(struct kube_config *dst,
                                                         const struct kube_config *src);

/* Overwrites the secrets |c| holds (client key bytes, static token) with
 * zeros in place; kube_config_free does it before freeing them, so freed
 * memory (and a core) does not keep them. */
void kube_config_wipe_secrets(struct kube_config *c);

/* Frees everything |c| owns and zeroes it. */
void kube_config_free(struct kube_config *c);

/* Reads a token file: trims surrounding whitespace; refuses empty files,
 * files larger than KUBE_TOKEN_FILE_MAX and tokens with a control byte
 * inside (it goes into a header line). Returns a string the caller frees,
 * or NULL. */
char *kube_config_read_token(const char *path);

#endif
