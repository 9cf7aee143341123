/* daemon_config: the flags of `coxswain run` — defaults, --help, the Helm
 * chart's exact arguments, config file and environment precedence, the
 * lock namespace defaulting to --namespace, validation messages, and what
 * the filter gets (Helm spellings, lock exclusion). */
#include "cx_json.h"
#include "cxtest.h"
#include "daemon_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct daemon_config c;

static int parse(char **argv, int argc, char *err, size_t n)
{
    daemon_config_free(&c);
    REQUIRE_INT_EQ(daemon_config_init(&c), 0);
    return daemon_config_parse(&c, argc, argv, err, n);
}

static void test_defaults(void)
{
    unsetenv("POD_NAMESPACE");
    char *argv[] = {"run"};
    char err[256];
    REQUIRE_INT_EQ(parse(argv, 1, err, sizeof(err)), 0);
    CHECK_STR_EQ(c.xds_listen, "0.0.0.0:18000");
    CHECK_STR_EQ(c.admin_listen, "0.0.0.0:18080");
    CHECK_INT_EQ(c.debounce_ns, 100000000);
    CHECK(c.status_qps == 20);
    CHECK_INT_EQ(c.status_burst, 50);
    CHECK_STR_EQ(c.log_format, "text");
    CHECK_STR_EQ(c.log_level, "info");
    CHECK_INT_EQ(c.ef.enabled, 1); /* replicated by default */
    CHECK_STR_EQ(daemon_config_namespace(&c, "ctx-ns"), "ctx-ns");
    CHECK_STR_EQ(daemon_config_namespace(&c, NULL), "default");
    struct election_config ec;
    REQUIRE_INT_EQ(daemon_config_election(&c, "ctl", "me_1234abcd", &ec, err, sizeof(err)), 0);
    CHECK_STR_EQ(ec.ns, "ctl"); /* the lock lives in --namespace */
    CHECK_STR_EQ(ec.name, "coxswain");
    CHECK_STR_EQ(ec.identity, "me_1234abcd");
    CHECK_INT_EQ(ec.lease_ns, 15000000000LL);
}

static void test_help_lists_every_flag_with_defaults(void)
{
    char *argv[] = {"run", "--help"};
    char err[256];
    REQUIRE_INT_EQ(parse(argv, 2, err, sizeof(err)), 1);
    char path[] = "/tmp/cxhelpXXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    FILE *f = fdopen(fd, "w+");
    daemon_config_usage(&c, f);
    fflush(f);
    rewind(f);
    static char text[65536];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    text[n] = '\0';
    fclose(f);
    unlink(path);
    const char *must[] = {
        "--config",
        "--kubeconfig",
        "--namespace",
        "[env POD_NAMESPACE]",
        "--identity",
        "--xds-listen",
        "(default 0.0.0.0:18000)",
        "--xds-tls-cert-file",
        "--xds-tls-key-file",
        "--xds-tls-client-ca-file",
        "--admin-listen",
        "(default 0.0.0.0:18080)",
        "--default-gateway",
        "--debounce",
        "(default 100ms)",
        "--status-qps",
        "(default 20)",
        "--status-burst",
        "(default 50)",
        "--log-format",
        "--log-level",
        "--watch-namespaces",
        "--watch-namespace-selector",
        "--virtualservice-label-selector",
        "--gateway-label-selector",
        "--endpointslice-namespaces",
        "--leader-elect\n",
        "--leader-elect-lease-duration",
        "(default 15s)",
        "--leader-elect-renew-deadline",
        "--leader-elect-retry-period",
        "--leader-elect-resource-lock",
        "--leader-elect-resource-name",
        "--leader-elect-resource-namespace",
        "--namespace-selector",
        "--label-selector",
    };
    for (size_t i = 0; i < sizeof(must) / sizeof(must[0]); i++)
        CHECK_STR_CONTAINS(text, must[i]);
    /* --leader-elect defaults to true for the daemon */
    const char *le = strstr(text, "--leader-elect\n");
    REQUIRE(le != NULL);
    size_t off = (size_t)(le - text) + strlen("--leader-elect\n");
    const char *eol = strchr(text + off, '\n'); /* the help line under it */
    CHECK(eol && memmem(text + off, (size_t)(eol - (text + off)), "(default true)", 14) != NULL);
}

static void test_helm_chart_arguments(void)
{
    /* deploy/helm/coxswain/templates/deployment.yaml, HA values. */
    char *argv[] = {"run",
                    "--namespace=coxswain-system",
                    "--xds-listen=0.0.0.0:18000",
                    "--admin-listen=0.0.0.0:18080",
                    "--xds-tls-cert-file=/etc/coxswain/xds-tls/tls.crt",
                    "--xds-tls-key-file=/etc/coxswain/xds-tls/tls.key",
                    "--xds-tls-client-ca-file=/etc/coxswain/xds-client-ca/ca.crt",
                    "--leader-elect=true",
                    "--leader-elect-lease-duration=15s",
                    "--leader-elect-renew-deadline=10s",
                    "--leader-elect-retry-period=2s",
                    "--leader-elect-resource-lock=leases",
                    "--leader-elect-resource-name=coxswain",
                    "--leader-elect-resource-namespace=coxswain-system",
                    "--watch-namespaces=team-a,team-b",
                    "--namespace-selector=gateway=enabled",
                    "--label-selector=tier=edge",
                    "--default-gateway=team-a/edge",
                    "--debounce=100ms",
                    "--status-qps=20",
                    "--status-burst=50",
                    "--log-format=json",
                    "--log-level=info"};
    char err[256] = "";
    int rc = parse(argv, (int)(sizeof(argv) / sizeof(argv[0])), err, sizeof(err));
    if (rc != 0)
        printf("# %s\n", err);
    REQUIRE_INT_EQ(rc, 0);
    CHECK_STR_EQ(c.namespace, "coxswain-system");
    CHECK_STR_EQ(c.namespace_selector, "gateway=enabled");
    CHECK_STR_EQ(c.label_selector, "tier=edge");
    CHECK_STR_EQ(c.default_gateway, "team-a/edge");
    CHECK_STR_EQ(c.log_format, "json");
    struct election_config ec;
    REQUIRE_INT_EQ(
        daemon_config_election(&c, "coxswain-system", "pod-0_0a1b2c3d", &ec, err, sizeof(err)), 0);
    struct filter *f = filter_new();
    REQUIRE_INT_EQ(daemon_config_filter(&c, &ec, f, err, sizeof(err)), 0);
    /* --label-selector reaches the coxswain.dev kinds, not Services. */
    struct filter_pushdown pd;
    REQUIRE_INT_EQ(filter_pushdown(f, "VirtualService", &pd), FILTER_OK);
    CHECK_STR_CONTAINS(pd.label_selector, "tier=edge");
    CHECK_INT_EQ(pd.nnamespaces, 2);
    REQUIRE_INT_EQ(filter_pushdown(f, "Service", &pd), FILTER_OK);
    CHECK(strstr(pd.label_selector, "tier=edge") == NULL);
    /* The lock is excluded. */
    const char *lock = "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\","
                       "\"metadata\":{\"namespace\":\"coxswain-system\",\"name\":\"coxswain\"}}";
    cJSON *lj = cx_json_parse(lock, strlen(lock));
    enum filter_reason why;
    CHECK_INT_EQ(filter_scope_check(f, "Lease", lj, NULL, NULL, &why), 0);
    CHECK_INT_EQ(why, FILTER_R_EXCLUDED_LOCK);
    cJSON_Delete(lj);
    filter_free(f);
    /* /debug/config hides the key file, shows the rest. */
    char *js = daemon_config_json(&c);
    REQUIRE(js != NULL);
    CHECK(strstr(js, "tls.key") == NULL);
    CHECK_STR_CONTAINS(js, "\"namespace\":\"coxswain-system\"");
    free(js);
}

static void test_config_file_and_env(void)
{
    char path[] = "/tmp/cxcfgXXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    const char *yaml = "namespace: from-file\ndebounce: 250ms\nstatus-qps: 7\n"
                       "leader-elect-resource-lock: configmaps\n"
                       "virtualservice-label-selector: \"team in (a,b)\"\n";
    REQUIRE(write(fd, yaml, strlen(yaml)) == (ssize_t)strlen(yaml));
    close(fd);
    setenv("POD_NAMESPACE", "from-env", 1);
    char cfgflag[64];
    snprintf(cfgflag, sizeof(cfgflag), "--config=%s", path);
    char *argv[] = {"run", cfgflag, "--status-qps=9"};
    char err[256];
    REQUIRE_INT_EQ(parse(argv, 3, err, sizeof(err)), 0);
    CHECK_STR_EQ(c.namespace, "from-env"); /* env beats file */
    CHECK_INT_EQ(c.debounce_ns, 250000000);
    CHECK(c.status_qps == 9); /* command line beats file */
    struct election_config ec;
    REQUIRE_INT_EQ(daemon_config_election(&c, c.namespace, "x_00000000", &ec, err, sizeof(err)), 0);
    CHECK_INT_EQ(ec.lock, ELECTION_LOCK_CONFIGMAPS);
    CHECK_STR_EQ(ec.ns, "from-env");
    unsetenv("POD_NAMESPACE");
    unlink(path);
}

static void test_invalid(void)
{
    char err[256];
    char *a1[] = {"run", "--xds-tls-cert-file=/x.crt"};
    CHECK_INT_EQ(parse(a1, 2, err, sizeof(err)), -1);
    CHECK_STR_CONTAINS(err, "--xds-tls-key-file");
    char *a2[] = {"run", "--default-gateway=nogateway"};
    CHECK_INT_EQ(parse(a2, 2, err, sizeof(err)), -1);
    CHECK_STR_CONTAINS(err, "namespace/name");
    char *a3[] = {"run", "--debounce=fast"};
    CHECK_INT_EQ(parse(a3, 2, err, sizeof(err)), -1);
    CHECK_STR_CONTAINS(err, "debounce");
    char *a4[] = {"run", "--xds-tls-client-ca-file=/ca.crt"};
    CHECK_INT_EQ(parse(a4, 2, err, sizeof(err)), -1);
    /* The lease rules and the selectors are flag errors too: refused while
     * parsing (exit status 2), not at start-up. */
    char *a5[] = {"run", "--leader-elect-lease-duration=5s", "--leader-elect-renew-deadline=5s"};
    CHECK_INT_EQ(parse(a5, 3, err, sizeof(err)), -1);
    CHECK_STR_CONTAINS(err, "leaseDuration must be greater than renewDeadline");
    char *a6[] = {"run", "--virtualservice-label-selector=a b c"};
    CHECK_INT_EQ(parse(a6, 2, err, sizeof(err)), -1);
    CHECK_STR_CONTAINS(err, "--virtualservice-label-selector");
    /* leaseDurationSeconds is an integer: 15500ms is refused, not rounded. */
    char *a8[] = {"run", "--leader-elect-lease-duration=15500ms"};
    CHECK_INT_EQ(parse(a8, 2, err, sizeof(err)), -1);
    CHECK_STR_CONTAINS(err, "not a whole number of seconds");
    CHECK_STR_CONTAINS(err, "use 15s or 16s");
    char *a9[] = {"run", "--namespace=Not_A_Namespace"};
    CHECK_INT_EQ(parse(a9, 2, err, sizeof(err)), -1);
    CHECK_STR_CONTAINS(err, "Not_A_Namespace");
    char *a10[] = {"run", "--leader-elect=false", "--leader-elect-lease-duration=16s"};
    CHECK_INT_EQ(parse(a10, 3, err, sizeof(err)), 0);
    char *a7[] = {"run", "stray"};
    CHECK_INT_EQ(parse(a7, 2, err, sizeof(err)), -1);
    daemon_config_free(&c);
}

/* Secrets: type=kubernetes.io/tls is always pushed down (and checked), with
 * or after the operator's own field selector; --tls-inputs defaults on. */
static void test_secret_type_pushed_down(void)
{
    char err[256];
    struct election_config ec;
    struct filter_pushdown pd;
    char *a1[] = {"run"};
    REQUIRE_INT_EQ(parse(a1, 1, err, sizeof(err)), 0);
    CHECK_INT_EQ(c.tls_inputs, 1);
    REQUIRE_INT_EQ(daemon_config_election(&c, "ns", "id_00000000", &ec, err, sizeof(err)), 0);
    struct filter *f = filter_new();
    REQUIRE_INT_EQ(daemon_config_filter(&c, &ec, f, err, sizeof(err)), 0);
    REQUIRE_INT_EQ(filter_pushdown(f, "Secret", &pd), FILTER_OK);
    CHECK_STR_EQ(pd.field_selector, "type=kubernetes.io/tls");
    REQUIRE_INT_EQ(filter_pushdown(f, "ConfigMap", &pd), FILTER_OK);
    CHECK_STR_EQ(pd.field_selector, "");
    filter_free(f);
    char *a2[] = {"run", "--secret-field-selector=metadata.name!=skip", "--tls-inputs=false"};
    REQUIRE_INT_EQ(parse(a2, 3, err, sizeof(err)), 0);
    CHECK_INT_EQ(c.tls_inputs, 0);
    REQUIRE_INT_EQ(daemon_config_election(&c, "ns", "id_00000000", &ec, err, sizeof(err)), 0);
    f = filter_new();
    REQUIRE_INT_EQ(daemon_config_filter(&c, &ec, f, err, sizeof(err)), 0);
    REQUIRE_INT_EQ(filter_pushdown(f, "Secret", &pd), FILTER_OK);
    CHECK_STR_CONTAINS(pd.field_selector, "metadata.name!=skip");
    CHECK_STR_CONTAINS(pd.field_selector, "type=kubernetes.io/tls");
    filter_free(f);
    /* A field Secrets cannot be selected by: a flag error, at parse time. */
    char *a3[] = {"run", "--secret-field-selector=spec.x=1"};
    CHECK_INT_EQ(parse(a3, 2, err, sizeof(err)), -1);
    CHECK_STR_CONTAINS(err, "--secret-field-selector");
    daemon_config_free(&c);
}

static const struct cxt_case cases[] = {
    CXT(test_defaults),
    CXT(test_help_lists_every_flag_with_defaults),
    CXT(test_helm_chart_arguments),
    CXT(test_config_file_and_env),
    CXT(test_invalid),
    CXT(test_secret_type_pushed_down),
};
CXT_MAIN(cases)
