/* daemon_auth: the verdicts read from the API server's TokenReview and
 * SubjectAccessReview answers (as kube-apiserver writes them). A username
 * that does not fit the verdict is refused, never cut: cut, a long
 * ServiceAccount name reads as another, shorter one. */
#include "cx_json.h"
#include "cxtest.h"
#include "daemon_auth.h"

#include <stdio.h>
#include <string.h>

static cJSON *parse(const char *s)
{
    return cx_json_parse(s, strlen(s));
}

static void test_token_review_answers(void)
{
    struct xds_review_result r;
    cJSON *o = parse("{\"kind\":\"TokenReview\",\"apiVersion\":\"authentication.k8s.io/v1\","
                     "\"status\":{\"authenticated\":true,\"user\":{\"username\":"
                     "\"system:serviceaccount:shop:gateway\",\"uid\":\"9a\",\"groups\":["
                     "\"system:serviceaccounts\"]},\"audiences\":[\"coxswain\"]}}");
    REQUIRE(o != NULL);
    const cJSON *user = daemon_auth_token_answer(o, &r);
    CHECK_INT_EQ(r.outcome, XDS_REVIEW_OK);
    CHECK_STR_EQ(r.username, "system:serviceaccount:shop:gateway");
    CHECK(user != NULL && cJSON_GetObjectItemCaseSensitive(user, "groups") != NULL);
    cJSON_Delete(o);

    o = parse("{\"status\":{\"user\":{},\"error\":\"[invalid bearer token]\"}}");
    CHECK(daemon_auth_token_answer(o, &r) == NULL);
    CHECK_INT_EQ(r.outcome, XDS_REVIEW_REJECTED);
    CHECK_STR_EQ(r.message, "[invalid bearer token]");
    CHECK_STR_EQ(r.username, "");
    cJSON_Delete(o);

    o = parse("{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"\"}}}");
    CHECK(daemon_auth_token_answer(o, &r) == NULL);
    CHECK_INT_EQ(r.outcome, XDS_REVIEW_REJECTED);
    CHECK_STR_EQ(r.message, "not authenticated");
    cJSON_Delete(o);

    /* A real ServiceAccount username can be 22 + 63 + 1 + 253 bytes: longer
     * than the verdict holds. Refused, not cut to a shorter name. */
    char name[400], json[600];
    snprintf(name, sizeof(name), "system:serviceaccount:%063d:%0253d", 0, 0);
    memset(name + 22, 'n', 63);
    memset(name + 22 + 64, 's', 253);
    snprintf(json, sizeof(json),
             "{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"%s\"}}}", name);
    o = parse(json);
    REQUIRE(o != NULL);
    CHECK(daemon_auth_token_answer(o, &r) == NULL);
    CHECK_INT_EQ(r.outcome, XDS_REVIEW_REJECTED);
    CHECK_STR_CONTAINS(r.message, "over 319 bytes (339)");
    CHECK_STR_EQ(r.username, "");
    cJSON_Delete(o);
}

static void test_sar_answers(void)
{
    struct xds_review_result r;
    cJSON *o = parse("{\"kind\":\"SubjectAccessReview\",\"spec\":{\"user\":\"alice\"},"
                     "\"status\":{\"allowed\":true,\"reason\":\"RBAC\"}}");
    daemon_auth_sar_answer(o, "/debug/snapshot", &r);
    CHECK_INT_EQ(r.outcome, XDS_REVIEW_OK);
    CHECK_STR_EQ(r.username, "alice");
    cJSON_Delete(o);
    o = parse("{\"spec\":{\"user\":\"bob\"},\"status\":{\"allowed\":false,\"denied\":true}}");
    daemon_auth_sar_answer(o, "/debug/snapshot", &r);
    CHECK_INT_EQ(r.outcome, XDS_REVIEW_REJECTED);
    CHECK_STR_EQ(r.message, "User \"bob\" may not get /debug/snapshot (SubjectAccessReview)");
    cJSON_Delete(o);
    o = parse("{\"status\":{\"allowed\":\"true\"}}"); /* a string is not true */
    daemon_auth_sar_answer(o, "/v3/discovery:clusters", &r);
    CHECK_INT_EQ(r.outcome, XDS_REVIEW_REJECTED);
    cJSON_Delete(o);
}

static const struct cxt_case cases[] = {
    CXT(test_token_review_answers),
    CXT(test_sar_answers),
};
CXT_MAIN(cases)
