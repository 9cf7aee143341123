/* election_report: one line per distinct failure, a summary of repeats at
 * most once a minute, one line when a verb works again; the last failure
 * kept as text. */
#include "cxtest.h"
#include "election_report.h"

#include <stdio.h>
#include <string.h>

#define S(x) ((int64_t)(x)*1000000000)

static struct election_failure f403(void)
{
    return (struct election_failure){
        .verb = "update",
        .resource = "leases",
        .ns = "ctl",
        .name = "coxswain",
        .purpose = "renew",
        .http_status = 403,
        .cls = ELECTION_ERR_FORBIDDEN,
        .message = "leases.coordination.k8s.io \"coxswain\" is forbidden: User \"x\" cannot "
                   "update resource \"leases\"",
    };
}

static void test_first_then_quiet_then_summary(void)
{
    struct election_report r;
    election_report_init(&r);
    char line[ELECTION_REPORT_LINE_MAX];
    struct election_failure f = f403();
    CHECK_INT_EQ(election_report_failure(&r, S(100), &f, line, sizeof(line)), ELECTION_SAY_FIRST);
    CHECK_STR_EQ(line, "update leases ctl/coxswain: HTTP 403 (forbidden): "
                       "leases.coordination.k8s.io \"coxswain\" is forbidden: User \"x\" cannot "
                       "update resource \"leases\"; while trying to renew; retrying with backoff");
    CHECK_STR_EQ(election_report_last(&r),
                 "update leases ctl/coxswain: HTTP 403 (forbidden): leases.coordination.k8s.io "
                 "\"coxswain\" is forbidden: User \"x\" cannot update resource \"leases\"");
    for (int i = 1; i <= 30; i++) {
        CHECK_INT_EQ(election_report_failure(&r, S(100 + i), &f, line, sizeof(line)),
                     ELECTION_SAY_NOTHING);
        CHECK_STR_EQ(line, "");
    }
    CHECK_INT_EQ(election_report_failure(&r, S(160), &f, line, sizeof(line)), ELECTION_SAY_AGAIN);
    CHECK(strstr(line, "; again, 31 times in the last 60 s (32 in all)") != NULL);
    CHECK_INT_EQ(election_report_failure(&r, S(161), &f, line, sizeof(line)), ELECTION_SAY_NOTHING);
}

static void test_distinct_failures_each_said(void)
{
    struct election_report r;
    election_report_init(&r);
    char line[ELECTION_REPORT_LINE_MAX];
    struct election_failure f = f403();
    CHECK_INT_EQ(election_report_failure(&r, S(1), &f, line, sizeof(line)), ELECTION_SAY_FIRST);
    struct election_failure g = f;
    g.http_status = 503;
    g.cls = ELECTION_ERR_SERVER;
    g.message = "the server is currently unable to handle the request";
    CHECK_INT_EQ(election_report_failure(&r, S(2), &g, line, sizeof(line)), ELECTION_SAY_FIRST);
    CHECK(strstr(line, "HTTP 503 (server)") != NULL);
    struct election_failure h = f;
    h.verb = "get";
    h.purpose = NULL;
    h.http_status = 0;
    h.cls = ELECTION_ERR_TIMEOUT;
    h.message = "Operation timed out after 1000 milliseconds";
    CHECK_INT_EQ(election_report_failure(&r, S(3), &h, line, sizeof(line)), ELECTION_SAY_FIRST);
    CHECK_STR_EQ(line, "get leases ctl/coxswain: no answer (timeout): Operation timed out after "
                       "1000 milliseconds; retrying with backoff");
    /* The first one again: still quiet. */
    CHECK_INT_EQ(election_report_failure(&r, S(4), &f, line, sizeof(line)), ELECTION_SAY_NOTHING);
    /* More distinct failures than slots: the least recently said goes, and
     * is news again when it comes back. */
    for (int i = 0; i < ELECTION_REPORT_SLOTS; i++) {
        char msg[32];
        snprintf(msg, sizeof(msg), "m%d", i);
        struct election_failure k = f;
        k.message = msg;
        CHECK_INT_EQ(election_report_failure(&r, S(10 + i), &k, line, sizeof(line)),
                     ELECTION_SAY_FIRST);
    }
    CHECK_INT_EQ(election_report_failure(&r, S(30), &f, line, sizeof(line)), ELECTION_SAY_FIRST);
}

static void test_success_of_the_verb_ends_it(void)
{
    struct election_report r;
    election_report_init(&r);
    char line[ELECTION_REPORT_LINE_MAX];
    struct election_failure f = f403();
    election_report_failure(&r, S(1), &f, line, sizeof(line));
    election_report_failure(&r, S(2), &f, line, sizeof(line));
    /* A GET that works says nothing about the UPDATE. */
    CHECK(!election_report_success(&r, "get", "leases", line, sizeof(line)));
    CHECK_STR_EQ(line, "");
    CHECK_INT_EQ(election_report_failure(&r, S(3), &f, line, sizeof(line)), ELECTION_SAY_NOTHING);
    CHECK(election_report_success(&r, "update", "leases", line, sizeof(line)));
    CHECK(strncmp(line,
                  "update leases succeeded after 3 failed requests (last: update leases "
                  "ctl/coxswain: HTTP 403",
                  strlen("update leases succeeded after 3 failed requests (last: update leases "
                         "ctl/coxswain: HTTP 403")) == 0);
    CHECK_STR_EQ(election_report_last(&r), "");
    CHECK(!election_report_success(&r, "update", "leases", line, sizeof(line)));
    /* News again. */
    CHECK_INT_EQ(election_report_failure(&r, S(4), &f, line, sizeof(line)), ELECTION_SAY_FIRST);
}

static void test_no_message_and_long_message(void)
{
    struct election_report r;
    election_report_init(&r);
    char line[ELECTION_REPORT_LINE_MAX];
    struct election_failure f = f403();
    f.message = "";
    election_report_failure(&r, S(1), &f, line, sizeof(line));
    CHECK(strstr(line, "HTTP 403 (forbidden): (no message)") != NULL);
    char big[4096];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    f.message = big;
    election_report_failure(&r, S(2), &f, line, sizeof(line));
    CHECK_INT_LT(strlen(line), ELECTION_REPORT_LINE_MAX);
    CHECK_INT_LT(strlen(election_report_last(&r)), ELECTION_REPORT_TEXT_MAX);
}

static const struct cxt_case cases[] = {
    CXT(test_first_then_quiet_then_summary),
    CXT(test_distinct_failures_each_said),
    CXT(test_success_of_the_verb_ends_it),
    CXT(test_no_message_and_long_message),
};
CXT_MAIN(cases)
