/* Flags, validation messages and identities. */
#include "cxtest.h"
#include "election_config.h"

#include <ctype.h>
#include <stdlib.h>
#include <unistd.h>

#define S(x)  ((int64_t)(x)*1000000000)
#define MS(x) ((int64_t)(x)*1000000)

static void test_defaults(void)
{
    unsetenv("POD_NAMESPACE");
    struct election_config c;
    election_config_defaults(&c);
    CHECK(!c.enabled);
    CHECK_INT_EQ(c.lease_ns, S(15));
    CHECK_INT_EQ(c.renew_ns, S(10));
    CHECK_INT_EQ(c.retry_ns, S(2));
    CHECK_INT_EQ(c.lock, ELECTION_LOCK_LEASES);
    CHECK_STR_EQ(c.name, "coxswain");
    CHECK_STR_EQ(c.ns, "default");
    setenv("POD_NAMESPACE", "gw-system", 1);
    election_config_defaults(&c);
    CHECK_STR_EQ(c.ns, "gw-system");
    unsetenv("POD_NAMESPACE");
    snprintf(c.identity, sizeof(c.identity), "x_1234abcd");
    char err[256];
    CHECK_INT_EQ(election_config_validate(&c, err, sizeof(err)), 0);
}

/* Parses argv (argv[0] is the program) through cx_flags with the election
 * table and applies it. */
static int parse(struct election_config *c, char **argv, int argc, char *err, size_t errlen)
{
    struct election_flags ef;
    memset(&ef, 0, sizeof(ef));
    struct cx_flag table[ELECTION_FLAGS_MAX];
    size_t n = election_flags_table(&ef, table, ELECTION_FLAGS_MAX);
    if (n != ELECTION_FLAGS_MAX) {
        snprintf(err, errlen, "table");
        return -1;
    }
    int r = cx_flags_parse(table, n, argc, argv, err, errlen);
    if (r == 0)
        r = election_apply_flags(c, &ef, err, errlen);
    cx_flags_free(table, n);
    return r;
}

static void test_flags(void)
{
    unsetenv("POD_NAMESPACE");
    struct election_config c;
    election_config_defaults(&c);
    char *argv[] = {"elect",
                    "--leader-elect",
                    "--leader-elect-lease-duration=3s",
                    "--leader-elect-renew-deadline",
                    "2s",
                    "--leader-elect-retry-period=500ms",
                    "--leader-elect-resource-lock=configmaps",
                    "--leader-elect-resource-name",
                    "gw-lock",
                    "--leader-elect-resource-namespace=ops"};
    char err[256] = "";
    CHECK_INT_EQ(parse(&c, argv, 10, err, sizeof(err)), 0);
    CHECK(c.enabled);
    CHECK_INT_EQ(c.lease_ns, S(3));
    CHECK_INT_EQ(c.renew_ns, S(2));
    CHECK_INT_EQ(c.retry_ns, MS(500));
    CHECK_INT_EQ(c.lock, ELECTION_LOCK_CONFIGMAPS);
    CHECK_STR_EQ(c.name, "gw-lock");
    CHECK_STR_EQ(c.ns, "ops");

    /* Defaults through the table are the documented ones. */
    char *none[] = {"elect"};
    election_config_defaults(&c);
    c.lock = ELECTION_LOCK_CONFIGMAPS;
    CHECK_INT_EQ(parse(&c, none, 1, err, sizeof(err)), 0);
    CHECK(!c.enabled);
    CHECK_INT_EQ(c.lease_ns, S(15));
    CHECK_INT_EQ(c.renew_ns, S(10));
    CHECK_INT_EQ(c.retry_ns, S(2));
    CHECK_INT_EQ(c.lock, ELECTION_LOCK_LEASES);
    CHECK_STR_EQ(c.name, "coxswain");
    CHECK_STR_EQ(c.ns, "default");

    /* The namespace follows the downward API's POD_NAMESPACE. */
    setenv("POD_NAMESPACE", "gw-system", 1);
    CHECK_INT_EQ(parse(&c, none, 1, err, sizeof(err)), 0);
    CHECK_STR_EQ(c.ns, "gw-system");
    unsetenv("POD_NAMESPACE");
    setenv("COXSWAIN_LEADER_ELECT_RETRY_PERIOD", "1500ms", 1);
    CHECK_INT_EQ(parse(&c, none, 1, err, sizeof(err)), 0);
    CHECK_INT_EQ(c.retry_ns, MS(1500));
    unsetenv("COXSWAIN_LEADER_ELECT_RETRY_PERIOD");

    char *off[] = {"elect", "--leader-elect=false"};
    CHECK_INT_EQ(parse(&c, off, 2, err, sizeof(err)), 0);
    CHECK(!c.enabled);
}

static void test_flag_errors(void)
{
    static const struct {
        const char *arg, *msg;
    } bad[] = {
        {"--leader-elect-lease-duration=15", "--leader-elect-lease-duration"},
        {"--leader-elect-lease-duration=15", "missing unit"},
        {"--leader-elect-retry-period=-2s", "must not be negative"},
        {"--leader-elect-renew-deadline=fast", "--leader-elect-renew-deadline"},
        {"--leader-elect-resource-lock=endpoints",
         "invalid value \"endpoints\" for --leader-elect-resource-lock: must be leases or "
         "configmaps"},
        {"--leader-elect=maybe", "--leader-elect"},
        {"--leader-elect-resource-name", "--leader-elect-resource-name"},
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        struct election_config c;
        election_config_defaults(&c);
        char *argv[] = {"elect", (char *)bad[k].arg};
        char err[256] = "";
        CHECK_INT_EQ(parse(&c, argv, 2, err, sizeof(err)), -1);
        CHECK_STR_CONTAINS(err, bad[k].msg);
    }
}

static void test_validation_rules(void)
{
    static const struct {
        int64_t lease, renew, retry;
        const char *msg; /* NULL: valid */
    } rows[] = {
        {S(15), S(10), S(2), NULL},
        {S(3), S(2), MS(500), NULL},
        {S(3), S(2), MS(1000), NULL}, /* lease == renew + retry is allowed */
        {0, S(10), S(2), "--leader-elect-lease-duration must be greater than zero"},
        {S(15), 0, S(2), "--leader-elect-renew-deadline must be greater than zero"},
        {S(15), S(10), 0, "--leader-elect-retry-period must be greater than zero"},
        {S(10), S(10), S(2), "leaseDuration must be greater than renewDeadline"},
        {S(5), S(10), S(2),
         "(--leader-elect-lease-duration 5s <= --leader-elect-renew-deadline 10s)"},
        {S(15), S(2), S(2), "renewDeadline must be greater than 1.2 x retryPeriod"},
        {S(15), MS(2400), S(2), "1.2 x --leader-elect-retry-period 2s = 2.4s"},
        {S(11), S(10), S(2), "leaseDuration must be at least renewDeadline + retryPeriod"},
        {S(11), S(10), S(2), "(--leader-elect-lease-duration 11s < 12s)"},
        {S(100000), S(10), S(2), "at most 24h"},
    };
    for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
        struct election_config c;
        election_config_defaults(&c);
        snprintf(c.identity, sizeof(c.identity), "me");
        c.lease_ns = rows[k].lease;
        c.renew_ns = rows[k].renew;
        c.retry_ns = rows[k].retry;
        char err[512] = "";
        int r = election_config_validate(&c, err, sizeof(err));
        if (!rows[k].msg) {
            CHECK_INT_EQ(r, 0);
            if (r)
                printf("# row %zu: %s\n", k, err);
        } else {
            CHECK_INT_EQ(r, -1);
            CHECK_STR_CONTAINS(err, rows[k].msg);
        }
    }
}

static void test_validation_names(void)
{
    static const struct {
        const char *name, *ns, *id, *msg;
    } rows[] = {
        {"Gw", "default", "me", "--leader-elect-resource-name \"Gw\" is not a valid object name"},
        {"", "default", "me", "--leader-elect-resource-name"},
        {"-gw", "default", "me", "--leader-elect-resource-name"},
        /* each dot-separated label starts and ends alphanumeric */
        {"gw..lock", "default", "me", "--leader-elect-resource-name \"gw..lock\""},
        {"gw.-lock", "default", "me", "--leader-elect-resource-name \"gw.-lock\""},
        {"gw-.lock", "default", "me", "--leader-elect-resource-name \"gw-.lock\""},
        {"gw.lock", "kube.system", "me", "--leader-elect-resource-namespace \"kube.system\""},
        {"gw", "", "me", "--leader-elect-resource-namespace"},
        {"gw", "default", "", "non-empty identity"},
        {"gw", "default", "*", "identity \"*\" is reserved"},
        {"gw.lock-1", "kube-system", "me", NULL},
    };
    for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
        struct election_config c;
        election_config_defaults(&c);
        snprintf(c.name, sizeof(c.name), "%s", rows[k].name);
        snprintf(c.ns, sizeof(c.ns), "%s", rows[k].ns);
        snprintf(c.identity, sizeof(c.identity), "%s", rows[k].id);
        char err[512] = "";
        int r = election_config_validate(&c, err, sizeof(err));
        if (!rows[k].msg) {
            CHECK_INT_EQ(r, 0);
        } else {
            CHECK_INT_EQ(r, -1);
            CHECK_STR_CONTAINS(err, rows[k].msg);
        }
    }
}

static bool hex8_suffix(const char *id, const char *prefix)
{
    size_t pl = strlen(prefix);
    if (strncmp(id, prefix, pl) != 0 || id[pl] != '_' || strlen(id) != pl + 9)
        return false;
    for (size_t k = pl + 1; k < pl + 9; k++)
        if (!isxdigit((unsigned char)id[k]) || isupper((unsigned char)id[k]))
            return false;
    return true;
}

static void test_identity(void)
{
    char a[ELECTION_IDENTITY_MAX], b[ELECTION_IDENTITY_MAX];
    setenv("POD_NAME", "coxswain-7d9f8-abcde", 1);
    REQUIRE(election_identity_make(a, sizeof(a)) == 0);
    REQUIRE(election_identity_make(b, sizeof(b)) == 0);
    CHECK(hex8_suffix(a, "coxswain-7d9f8-abcde"));
    CHECK(hex8_suffix(b, "coxswain-7d9f8-abcde"));
    CHECK(strcmp(a, b) != 0); /* 32 random bits each */
    unsetenv("POD_NAME");
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    REQUIRE(election_identity_make(a, sizeof(a)) == 0);
    CHECK(hex8_suffix(a, host));
    /* Small buffers are filled, never overrun, and keep the suffix. */
    char small[16];
    setenv("POD_NAME", "a-very-long-pod-name-indeed", 1);
    REQUIRE(election_identity_make(small, sizeof(small)) == 0);
    CHECK_INT_EQ(strlen(small), 15);
    CHECK(hex8_suffix(small, "a-very"));
    unsetenv("POD_NAME");
}

static const struct cxt_case cases[] = {
    CXT(test_defaults),         CXT(test_flags),
    CXT(test_flag_errors),      CXT(test_validation_rules),
    CXT(test_validation_names), CXT(test_identity),
};
CXT_MAIN(cases)
