/* kubeconfig and in-cluster parsing. */
#include "cxtest.h"
#include "kube_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *KC =
    "apiVersion: v1\n"
    "kind: Config\n"
    "current-context: dev\n"
    "clusters:\n"
    "- name: prod\n"
    "  cluster:\n"
    "    server: https://prod.example:6443/\n"
    "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCmFiYwo=\n"
    "    tls-server-name: kubernetes.default\n"
    "- name: local\n"
    "  cluster:\n"
    "    server: http://127.0.0.1:8080\n"
    "    certificate-authority: certs/ca.pem\n"
    "    insecure-skip-tls-verify: true\n"
    "contexts:\n"
    "- name: dev\n"
    "  context: {cluster: local, user: tok, namespace: team-a}\n"
    "- name: prod\n"
    "  context:\n"
    "    cluster: prod\n"
    "    user: cert\n"
    "users:\n"
    "- name: tok\n"
    "  user:\n"
    "    token: abc.def\n"
    "    tokenFile: /var/run/tok\n"
    "- name: cert\n"
    "  user:\n"
    "    client-certificate-data: Y2VydA==\n"
    "    client-key: keys/k.pem\n";

static void test_current_context(void)
{
    struct kube_config c;
    char err[256] = "";
    REQUIRE_INT_EQ(kube_config_parse(KC, strlen(KC), "/home/u/.kube", NULL, &c, err, sizeof(err)),
                   0);
    CHECK_STR_EQ(c.server, "http://127.0.0.1:8080");
    CHECK_STR_EQ(c.ca_file, "/home/u/.kube/certs/ca.pem");
    CHECK_INT_EQ(c.insecure_skip_tls_verify, 1);
    CHECK_STR_EQ(c.token, "abc.def");
    CHECK_STR_EQ(c.token_file, "/var/run/tok");
    CHECK_STR_EQ(c.namespace, "team-a");
    CHECK_STR_EQ(c.context, "dev");
    CHECK(c.ca_data == NULL);
    CHECK(c.client_cert_file == NULL);
    kube_config_free(&c);
}

static void test_named_context_with_data(void)
{
    struct kube_config c;
    char err[256] = "";
    REQUIRE_INT_EQ(kube_config_parse(KC, strlen(KC), "/etc/kc", "prod", &c, err, sizeof(err)), 0);
    CHECK_STR_EQ(c.server, "https://prod.example:6443"); /* trailing slash dropped */
    CHECK_INT_EQ(c.insecure_skip_tls_verify, 0);
    REQUIRE(c.ca_data != NULL);
    CHECK_STR_EQ(c.ca_data, "-----BEGIN CERTIFICATE-----\nabc\n");
    CHECK_INT_EQ(c.ca_data_len, strlen("-----BEGIN CERTIFICATE-----\nabc\n"));
    CHECK_STR_EQ(c.client_cert_data, "cert");
    CHECK_INT_EQ(c.client_cert_data_len, 4);
    CHECK_STR_EQ(c.client_key_file, "/etc/kc/keys/k.pem");
    CHECK_STR_EQ(c.tls_server_name, "kubernetes.default");
    CHECK_STR_EQ(c.namespace, "default");
    CHECK(c.token == NULL);

    struct kube_config d;
    REQUIRE_INT_EQ(kube_config_copy(&d, &c), 0);
    kube_config_free(&c);
    CHECK_STR_EQ(d.ca_data, "-----BEGIN CERTIFICATE-----\nabc\n");
    CHECK_STR_EQ(d.server, "https://prod.example:6443");
    kube_config_free(&d);
}

static void test_json_kubeconfig(void)
{
    const char *j = "{\"current-context\":\"c\",\"clusters\":[{\"name\":\"k\",\"cluster\":"
                    "{\"server\":\"https://h:1\"}}],\"contexts\":[{\"name\":\"c\",\"context\":"
                    "{\"cluster\":\"k\",\"user\":\"u\"}}],\"users\":[{\"name\":\"u\",\"user\":"
                    "{\"token\":\"t\"}}]}";
    struct kube_config c;
    char err[256] = "";
    REQUIRE_INT_EQ(kube_config_parse(j, strlen(j), NULL, NULL, &c, err, sizeof(err)), 0);
    CHECK_STR_EQ(c.server, "https://h:1");
    CHECK_STR_EQ(c.token, "t");
    kube_config_free(&c);

    /* The client key and the token are wiped in place before they are
     * freed (kube_config_free calls this): freed memory and cores keep
     * no secret. */
    const char *k = "{\"current-context\":\"c\",\"clusters\":[{\"name\":\"k\",\"cluster\":"
                    "{\"server\":\"https://h:1\"}}],\"contexts\":[{\"name\":\"c\",\"context\":"
                    "{\"cluster\":\"k\",\"user\":\"u\"}}],\"users\":[{\"name\":\"u\",\"user\":"
                    "{\"token\":\"secret-token\",\"client-key-data\":\"a2V5LWJ5dGVz\"}}]}";
    REQUIRE_INT_EQ(kube_config_parse(k, strlen(k), NULL, NULL, &c, err, sizeof(err)), 0);
    REQUIRE(c.client_key_data != NULL && c.token != NULL);
    CHECK_STR_EQ(c.client_key_data, "key-bytes");
    size_t tl = strlen(c.token);
    kube_config_wipe_secrets(&c);
    for (size_t i = 0; i < c.client_key_data_len; i++)
        CHECK_INT_EQ(c.client_key_data[i], 0);
    for (size_t i = 0; i < tl; i++)
        CHECK_INT_EQ(c.token[i], 0);
    kube_config_free(&c);
}

static void expect_error(const char *text, const char *ctx, const char *needle)
{
    struct kube_config c;
    char err[256] = "";
    CHECK_INT_EQ(kube_config_parse(text, strlen(text), NULL, ctx, &c, err, sizeof(err)), -1);
    CHECK_STR_CONTAINS(err, needle);
    CHECK(c.server == NULL); /* nothing left allocated */
}

static void test_errors(void)
{
    expect_error(KC, "nope", "context \"nope\" not found");
    expect_error("apiVersion: v1\n", NULL, "no current-context");
    expect_error("a: [b\n", NULL, "invalid YAML");
    expect_error("- a\n- b\n", NULL, "not a mapping");
    expect_error("current-context: x\ncontexts:\n- name: x\n  context: {cluster: y}\n", NULL,
                 "cluster \"y\"");
    expect_error("current-context: x\ncontexts:\n- name: x\n  context: {cluster: y, user: z}\n"
                 "clusters:\n- name: y\n  cluster: {server: https://a}\n",
                 NULL, "user \"z\"");
    expect_error("current-context: x\ncontexts:\n- name: x\n  context: {cluster: y}\n"
                 "clusters:\n- name: y\n  cluster: {server: ftp://a}\n",
                 NULL, "server URL");
    expect_error("current-context: x\ncontexts:\n- name: x\n  context: {cluster: y}\n"
                 "clusters:\n- name: y\n  cluster: {server: https://a, "
                 "certificate-authority-data: '***'}\n",
                 NULL, "not base64");
    expect_error("current-context: x\ncontexts:\n- name: x\n  context: {cluster: y, user: u}\n"
                 "clusters:\n- name: y\n  cluster: {server: https://a}\n"
                 "users:\n- name: u\n  user: {exec: {command: aws}}\n",
                 NULL, "exec");
    /* a token goes into a header line: no CR/LF (fuzz_kubeconfig) */
    expect_error("current-context: x\ncontexts:\n- name: x\n  context: {cluster: y, user: u}\n"
                 "clusters:\n- name: y\n  cluster: {server: https://a}\n"
                 "users:\n- name: u\n  user: {token: \"abc\\r\\nX-Injected: 1\"}\n",
                 NULL, "control character");
}

static void test_alias_bomb_bounded(void)
{
    /* Billion laughs: must fail fast, not allocate without bound. */
    const char *bomb = "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
                       "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                       "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
                       "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                       "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
                       "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
                       "current-context: x\n";
    expect_error(bomb, NULL, "too large");
}

static char tmpdir[256];

static void write_file(const char *name, const char *content)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", tmpdir, name);
    FILE *f = fopen(p, "w");
    REQUIRE(f != NULL);
    fputs(content, f);
    fclose(f);
}

static void test_in_cluster_and_files(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/cx_kube_config_%d", (int)getpid());
    mkdir(tmpdir, 0700);
    write_file("token", "  tok-123\n");
    write_file("ca.crt", "PEM");
    write_file("namespace", "coxswain-system\n");
    struct kube_config c;
    char err[256] = "";
    REQUIRE_INT_EQ(kube_config_in_cluster(tmpdir, "10.0.0.1", "443", &c, err, sizeof(err)), 0);
    CHECK_STR_EQ(c.server, "https://10.0.0.1:443");
    CHECK_STR_EQ(c.namespace, "coxswain-system");
    CHECK_STR_CONTAINS(c.token_file, "/token");
    CHECK_STR_CONTAINS(c.ca_file, "/ca.crt");
    CHECK_STR_EQ(c.source, "in-cluster");
    char *t = kube_config_read_token(c.token_file);
    CHECK_STR_EQ(t, "tok-123");
    free(t);
    kube_config_free(&c);

    REQUIRE_INT_EQ(kube_config_in_cluster(tmpdir, "fd00::1", "6443", &c, err, sizeof(err)), 0);
    CHECK_STR_EQ(c.server, "https://[fd00::1]:6443");
    kube_config_free(&c);

    CHECK_INT_EQ(kube_config_in_cluster("/nonexistent", "h", "1", &c, err, sizeof(err)), -1);
    write_file("token", "\n  \n");
    CHECK_INT_EQ(kube_config_in_cluster(tmpdir, "h", "1", &c, err, sizeof(err)), -1);
    /* A token with a line break inside would split the Authorization
     * header (found by fuzz_kubeconfig): refused; a namespace file with
     * one falls back to "default". */
    write_file("token", "tok\r\nX-Injected: 1\n");
    CHECK_INT_EQ(kube_config_in_cluster(tmpdir, "h", "1", &c, err, sizeof(err)), -1);
    char tpath[512];
    snprintf(tpath, sizeof(tpath), "%s/token", tmpdir);
    CHECK(kube_config_read_token(tpath) == NULL);
    write_file("token", "tok-\x01\n");
    CHECK(kube_config_read_token(tpath) == NULL);
    write_file("token", "tok-456\n");
    write_file("namespace", "a\nb\n");
    REQUIRE_INT_EQ(kube_config_in_cluster(tmpdir, "h", "1", &c, err, sizeof(err)), 0);
    CHECK_STR_EQ(c.namespace, "default");
    kube_config_free(&c);
    write_file("namespace", "coxswain-system\n");

    /* A kubeconfig file on disk, its relative paths resolved next to it;
     * $KUBECONFIG with a missing first entry. */
    write_file("kc.yaml", KC);
    char kc[512], env[1100];
    snprintf(kc, sizeof(kc), "%s/kc.yaml", tmpdir);
    snprintf(env, sizeof(env), "/nonexistent/kc:%s", kc);
    setenv("KUBECONFIG", env, 1);
    REQUIRE_INT_EQ(kube_config_load_default(NULL, NULL, &c, err, sizeof(err)), 0);
    char want[600];
    snprintf(want, sizeof(want), "%s/certs/ca.pem", tmpdir);
    CHECK_STR_EQ(c.ca_file, want);
    CHECK_STR_EQ(c.source, kc);
    kube_config_free(&c);
    unsetenv("KUBECONFIG");
    CHECK_INT_EQ(kube_config_load_file("/nonexistent/kc", NULL, &c, err, sizeof(err)), -1);
    CHECK_STR_CONTAINS(err, "cannot read kubeconfig");

    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    CHECK_INT_EQ(system(cmd), 0);
}

static const struct cxt_case cases[] = {
    CXT(test_current_context), CXT(test_named_context_with_data), CXT(test_json_kubeconfig),
    CXT(test_errors),          CXT(test_alias_bomb_bounded),      CXT(test_in_cluster_and_files),
};
CXT_MAIN(cases)
