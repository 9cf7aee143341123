#include "cx_json.h"
#include "cx_time.h"
#include "cxtest.h"
#include "status_build.h"

#include <stdlib.h>

static const int64_t T0 = INT64_C(1700000000) * CX_NS_PER_S;

static struct xlate_report report(enum xlate_state st, int64_t gen, const char *reason,
                                  const char *msg)
{
    struct xlate_report r = {0};
    r.kind = "VirtualService";
    r.namespace = "default";
    r.name = "vs";
    r.generation = gen;
    r.state = st;
    r.reason = (char *)reason;
    r.message = (char *)msg;
    return r;
}

static void test_shape(void)
{
    struct xlate_report r = report(XLATE_REJECTED, 4, "InvalidRegex", "routes[1].match.regex: x");
    cJSON *st = status_desired(&r, NULL, 0, NULL, T0);
    REQUIRE(st != NULL);
    CHECK_STR_EQ(cx_json_str(st, "state"), "Rejected");
    CHECK(cJSON_GetObjectItem(st, "observedGeneration")->valuedouble == 4);
    cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(st, "conditions"), 0);
    CHECK_STR_EQ(cx_json_str(c, "type"), "Accepted");
    CHECK_STR_EQ(cx_json_str(c, "status"), "False");
    CHECK_STR_EQ(cx_json_str(c, "reason"), "InvalidRegex");
    CHECK_STR_EQ(cx_json_str(c, "message"), "routes[1].match.regex: x");
    CHECK_STR_EQ(cx_json_str(c, "lastTransitionTime"), "2023-11-14T22:13:20Z");
    CHECK(cJSON_GetObjectItem(c, "observedGeneration")->valuedouble == 4);
    cJSON_Delete(st);
    struct xlate_report ok = report(XLATE_ACCEPTED, 1, NULL, "");
    st = status_desired(&ok, NULL, 0, NULL, T0);
    c = cJSON_GetArrayItem(cJSON_GetObjectItem(st, "conditions"), 0);
    CHECK_STR_EQ(cx_json_str(c, "status"), "True");
    CHECK_STR_EQ(cx_json_str(c, "reason"), "Accepted");
    cJSON_Delete(st);
}

static void test_up_to_date_and_transition_time(void)
{
    struct xlate_report r = report(XLATE_ACCEPTED, 2, NULL, "ok");
    struct status_condition extra = {"XdsAccepted", 1, "Acked", "all proxies acked"};
    cJSON *first = status_desired(&r, &extra, 1, NULL, T0);
    REQUIRE(first != NULL);
    /* a later pass with the same verdict: nothing to write, and the
     * transition time is kept */
    cJSON *again = status_desired(&r, &extra, 1, first, T0 + 60 * CX_NS_PER_S);
    CHECK_INT_EQ(status_up_to_date(again, first), 1);
    cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(again, "conditions"), 1);
    CHECK_STR_EQ(cx_json_str(c, "lastTransitionTime"), "2023-11-14T22:13:20Z");
    cJSON_Delete(again);
    /* new generation: must write */
    struct xlate_report r3 = report(XLATE_ACCEPTED, 3, NULL, "ok");
    cJSON *gen3 = status_desired(&r3, &extra, 1, first, T0 + 60 * CX_NS_PER_S);
    CHECK_INT_EQ(status_up_to_date(gen3, first), 0);
    cJSON_Delete(gen3);
    /* NACK flips the extra condition: new transition time */
    struct status_condition nack = {"XdsAccepted", 0, "Nacked", "LDS: bad listener"};
    cJSON *n = status_desired(&r, &nack, 1, first, T0 + 120 * CX_NS_PER_S);
    CHECK_INT_EQ(status_up_to_date(n, first), 0);
    c = cJSON_GetArrayItem(cJSON_GetObjectItem(n, "conditions"), 1);
    CHECK_STR_EQ(cx_json_str(c, "lastTransitionTime"), "2023-11-14T22:15:20Z");
    /* but the Accepted condition kept its time */
    c = cJSON_GetArrayItem(cJSON_GetObjectItem(n, "conditions"), 0);
    CHECK_STR_EQ(cx_json_str(c, "lastTransitionTime"), "2023-11-14T22:13:20Z");
    cJSON_Delete(n);
    /* message change, missing status, foreign extra condition */
    struct xlate_report rm = report(XLATE_ACCEPTED, 2, NULL, "other");
    cJSON *m = status_desired(&rm, &extra, 1, first, T0);
    CHECK_INT_EQ(status_up_to_date(m, first), 0);
    cJSON_Delete(m);
    CHECK_INT_EQ(status_up_to_date(first, NULL), 0);
    cJSON *noextra = status_desired(&r, NULL, 0, first, T0);
    CHECK_INT_EQ(status_up_to_date(noextra, first), 0);
    cJSON_Delete(noextra);
    cJSON_Delete(first);
}

static void test_message_capped(void)
{
    char *big = malloc(100000);
    memset(big, 'x', 99999);
    big[99999] = '\0';
    struct xlate_report r = report(XLATE_REJECTED, 1, "Big", big);
    cJSON *st = status_desired(&r, NULL, 0, NULL, T0);
    cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(st, "conditions"), 0);
    CHECK_INT_EQ(strlen(cx_json_str(c, "message")), STATUS_MESSAGE_MAX);
    cJSON_Delete(st);
    free(big);
}

static const struct cxt_case cases[] = {
    CXT(test_shape),
    CXT(test_up_to_date_and_transition_time),
    CXT(test_message_capped),
};
CXT_MAIN(cases)
