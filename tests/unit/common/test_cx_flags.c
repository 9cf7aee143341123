#include "cx_flags.h"
#include "cx_time.h"
#include "cxtest.h"

#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>

static int elect;
static char *name, *cfgpath, *token;
static long qps;
static int64_t lease;
static double burst;

static const struct cx_flag flags[] = {
    {"config", CX_FLAG_STRING, &cfgpath, NULL, "TEST_CONFIG", "config file", 0, 0},
    {"leader-elect", CX_FLAG_BOOL, &elect, "true", NULL, "run the election", 0, 0},
    {"name", CX_FLAG_STRING, &name, "coxswain", "TEST_NAME", "lock name", 0, 0},
    {"qps", CX_FLAG_INT, &qps, "10", NULL, "writes per second", 1, 1000},
    {"lease-duration", CX_FLAG_DURATION, &lease, "15s", NULL, "lease", 0.001, 3600},
    {"burst", CX_FLAG_DOUBLE, &burst, "2.5", NULL, "burst", 0, 0},
    {"token", CX_FLAG_STRING, &token, NULL, NULL, "a secret", 0, 0},
};
#define NFLAGS (sizeof(flags) / sizeof(flags[0]))

static int parse(int argc, char **argv, char *err)
{
    return cx_flags_parse(flags, NFLAGS, argc, argv, err, 256);
}

static void test_defaults_and_argv(void)
{
    char err[256] = "";
    char *argv[] = {"x",
                    "--name=lock",
                    "--qps",
                    "20",
                    "--leader-elect=false",
                    "--lease-duration=500ms",
                    "--burst",
                    "4"};
    unsetenv("TEST_NAME");
    REQUIRE_INT_EQ(parse(1, argv, err), 0);
    CHECK_INT_EQ(elect, 1);
    CHECK_STR_EQ(name, "coxswain");
    CHECK_INT_EQ(qps, 10);
    CHECK_INT_EQ(lease, 15 * CX_NS_PER_S);
    REQUIRE_INT_EQ(parse(8, argv, err), 0);
    CHECK_INT_EQ(elect, 0);
    CHECK_STR_EQ(name, "lock");
    CHECK_INT_EQ(qps, 20);
    CHECK_INT_EQ(lease, 500 * CX_NS_PER_MS);
    CHECK(burst == 4);
    char *bare[] = {"x", "--leader-elect"};
    REQUIRE_INT_EQ(parse(2, bare, err), 0);
    CHECK_INT_EQ(elect, 1);
    cx_flags_free(flags, NFLAGS);
}

static void test_errors(void)
{
    static const struct {
        const char *arg, *msg;
    } bad[] = {
        {"--nope=1", "unknown flag --nope"},
        {"--qps=abc", "invalid value \"abc\" for --qps (command line): expected an integer"},
        {"--qps=0", "must be between 1 and 1000"},
        {"--lease-duration=15", "missing unit"},
        {"--lease-duration=2h", "must be between"},
        {"--leader-elect=maybe", "expected true or false"},
        {"positional", "unexpected argument \"positional\""},
        {"--name", "flag --name needs a value"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char err[256] = "";
        char *argv[] = {"x", (char *)bad[i].arg};
        CHECK_INT_EQ(parse(2, argv, err), -1);
        CHECK_STR_CONTAINS(err, bad[i].msg);
    }
    char err[256];
    char *help[] = {"x", "--help"};
    CHECK_INT_EQ(parse(2, help, err), 1);
    cx_flags_free(flags, NFLAGS);
}

static void test_env_and_config_precedence(void)
{
    char path[] = "/tmp/cx_flags_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    const char *yaml = "# comment\nname: from-file\nqps: 30\nlease-duration: 1m\n";
    REQUIRE(write(fd, yaml, strlen(yaml)) == (ssize_t)strlen(yaml));
    close(fd);
    char err[256] = "";
    setenv("TEST_NAME", "from-env", 1);
    char *argv[] = {"x", "--config", path};
    REQUIRE_INT_EQ(parse(3, argv, err), 0);
    CHECK_STR_EQ(name, "from-env"); /* env beats file */
    CHECK_INT_EQ(qps, 30);          /* file beats default */
    CHECK_INT_EQ(lease, 60 * CX_NS_PER_S);
    char *argv2[] = {"x", "--config", path, "--name=from-flag"};
    REQUIRE_INT_EQ(parse(4, argv2, err), 0);
    CHECK_STR_EQ(name, "from-flag"); /* command line beats env */
    unsetenv("TEST_NAME");
    /* config via env, and errors in the file name the file and the line */
    fd = open(path, O_WRONLY | O_TRUNC);
    const char *bad = "name: a\nbogus: 1\n";
    REQUIRE(write(fd, bad, strlen(bad)) == (ssize_t)strlen(bad));
    close(fd);
    setenv("TEST_CONFIG", path, 1);
    char *argv3[] = {"x"};
    CHECK_INT_EQ(parse(1, argv3, err), -1);
    CHECK_STR_CONTAINS(err, "line 2: unknown flag \"bogus\"");
    fd = open(path, O_WRONLY | O_TRUNC);
    const char *badv = "qps: lots\n";
    REQUIRE(write(fd, badv, strlen(badv)) == (ssize_t)strlen(badv));
    close(fd);
    CHECK_INT_EQ(parse(1, argv3, err), -1);
    CHECK_STR_CONTAINS(err, "(config file ");
    unsetenv("TEST_CONFIG");
    unlink(path);
    cx_flags_free(flags, NFLAGS);
}

static void test_json_redacts(void)
{
    char err[256];
    char *argv[] = {"x", "--token=s3cr3t"};
    REQUIRE_INT_EQ(parse(2, argv, err), 0);
    char *j = cx_flags_json(flags, NFLAGS);
    CHECK_STR_CONTAINS(j, "\"lease-duration\":\"15s\"");
    CHECK_STR_CONTAINS(j, "\"token\":\"(redacted)\"");
    CHECK(strstr(j, "s3cr3t") == NULL);
    free(j);
    cx_flags_free(flags, NFLAGS);
}

static const struct cxt_case cases[] = {
    CXT(test_defaults_and_argv),
    CXT(test_errors),
    CXT(test_env_and_config_precedence),
    CXT(test_json_redacts),
};
CXT_MAIN(cases)
