/* Fuzz target: arbitrary bytes as a kubeconfig (YAML or JSON, with base64
 * certificate and key data) and as the in-cluster service-account files
 * (token and namespace). A config that parses is consistent: an http(s)
 * server without a trailing slash, *-data buffers terminated at their
 * length, relative paths resolved under the kubeconfig's directory, a
 * namespace; it survives kube_config_copy unchanged. A token (static or
 * read from a file) never carries a control character: it goes into an
 * Authorization header line. Never crashes or leaks. */
#include "kube_config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_str(const char *s)
{
    if (!s)
        return;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            abort();
}

static void check_bytes(const char *p, size_t n)
{
    if (p && p[n] != '\0')
        abort();
    if (!p && n)
        abort();
}

static int same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int same_bytes(const char *a, size_t an, const char *b, size_t bn)
{
    return (!a && !b) || (a && b && an == bn && memcmp(a, b, an) == 0);
}

static void check_path(const char *p)
{
    if (p && p[0] != '/')
        abort(); /* relative paths resolve under the kubeconfig's directory */
}

static void check_config(const struct kube_config *c)
{
    if (!c->server || !c->namespace || !*c->namespace || !c->context)
        abort();
    if (strncmp(c->server, "https://", 8) != 0 && strncmp(c->server, "http://", 7) != 0)
        abort();
    size_t n = strlen(c->server);
    if (n && c->server[n - 1] == '/')
        abort();
    check_bytes(c->ca_data, c->ca_data_len);
    check_bytes(c->client_cert_data, c->client_cert_data_len);
    check_bytes(c->client_key_data, c->client_key_data_len);
    check_path(c->ca_file);
    check_path(c->client_cert_file);
    check_path(c->client_key_file);
    check_path(c->token_file);
    check_str(c->token);
    struct kube_config cp;
    if (kube_config_copy(&cp, c) != 0)
        return;
    if (!same(cp.server, c->server) || !same(cp.ca_file, c->ca_file) ||
        !same_bytes(cp.ca_data, cp.ca_data_len, c->ca_data, c->ca_data_len) ||
        !same_bytes(cp.client_cert_data, cp.client_cert_data_len, c->client_cert_data,
                    c->client_cert_data_len) ||
        !same_bytes(cp.client_key_data, cp.client_key_data_len, c->client_key_data,
                    c->client_key_data_len) ||
        !same(cp.token, c->token) || !same(cp.token_file, c->token_file) ||
        !same(cp.tls_server_name, c->tls_server_name) || !same(cp.namespace, c->namespace) ||
        !same(cp.context, c->context) || cp.insecure_skip_tls_verify != c->insecure_skip_tls_verify)
        abort();
    kube_config_free(&cp);
}

static char dir[64];

static void write_file(const char *name, const uint8_t *data, size_t size)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (size && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);
}

static void cleanup(void)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/token", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/namespace", dir);
    unlink(path);
    rmdir(dir);
}

static void in_cluster(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof(dir), "%s/fuzz_kubeconfig.%ld", t && *t && strlen(t) < 32 ? t : "/tmp",
                 (long)getpid());
        if (mkdir(dir, 0700) != 0)
            abort();
        atexit(cleanup);
    }
    /* The same bytes as the token and as the namespace file. */
    write_file("token", data, size);
    write_file("namespace", data, size);
    struct kube_config c;
    char err[256];
    if (kube_config_in_cluster(dir, size & 1 ? "fd00::1" : "10.96.0.1", "443", &c, err,
                               sizeof(err)) == 0) {
        check_config(&c);
        char *tok = kube_config_read_token(c.token_file);
        if (!tok)
            abort(); /* in-cluster succeeds only with a readable token */
        check_str(tok);
        size_t n = strlen(tok);
        if (!n || tok[0] == ' ' || tok[n - 1] == ' ' || tok[n - 1] == '\n')
            abort();
        free(tok);
        kube_config_free(&c);
    } else if (strnlen(err, sizeof(err)) >= sizeof(err)) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kube_config c;
    char err[256];
    const char *contexts[] = {NULL, "kind-kind"};
    for (int i = 0; i < 2; i++) {
        err[0] = '\0';
        if (kube_config_parse((const char *)data, size, "/etc/kube", contexts[i], &c, err,
                              sizeof(err)) == 0) {
            check_config(&c);
            kube_config_free(&c);
        } else if (!err[0] || strnlen(err, sizeof(err)) >= sizeof(err)) {
            abort(); /* a refusal always says why */
        }
    }
    in_cluster(data, size);
    return 0;
}
