/*
 * kubesim from C: the cx_kubesim launcher (start, request, restart, stop),
 * --state across a restart (objects kept, RVs keep increasing, watches
 * from before the restart get 410), and a clean SIGTERM exit.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cx_json.h"
#include "cx_kubesim.h"
#include "cxtest.h"

static long long rv_of(const char *json)
{
    cJSON *o = cJSON_Parse(json);
    const char *rv = cx_json_path_str(o, "metadata", "resourceVersion", NULL);
    long long v = rv ? strtoll(rv, NULL, 10) : -1;
    cJSON_Delete(o);
    return v;
}

static void test_launcher_roundtrip(void)
{
    struct cx_kubesim ks;
    REQUIRE(cx_kubesim_start(&ks, NULL) == 0);
    CHECK(ks.port > 0);
    long code;
    char *b = cx_kubesim_request(&ks, "GET", "/api/v1/namespaces/default", NULL, NULL, &code);
    CHECK_INT_EQ(code, 200);
    CHECK_STR_CONTAINS(b, "\"name\":\"default\"");
    free(b);
    b = cx_kubesim_request(&ks, "POST", "/api/v1/namespaces/default/configmaps",
                           "{\"metadata\":{\"name\":\"c\"},\"data\":{\"k\":\"v\"}}", NULL, &code);
    CHECK_INT_EQ(code, 201);
    free(b);
    FILE *f = fopen(ks.kubeconfig, "r");
    CHECK(f != NULL);
    if (f) {
        char line[256];
        int found = 0;
        while (fgets(line, sizeof(line), f))
            if (strstr(line, "server: http://127.0.0.1:") && strstr(line, ks.url + 17))
                found = 1;
        fclose(f);
        CHECK(found);
    }
    CHECK_INT_EQ(cx_kubesim_stop(&ks), 0);
}

static void test_state_across_restart(void)
{
    struct cx_kubesim ks;
    char state[512];
    const char *tmp = getenv("TMPDIR");
    snprintf(state, sizeof(state), "%s/kubesim-state-%d.json", tmp && *tmp ? tmp : "/tmp",
             (int)getpid());
    remove(state);
    const char *args[] = {"--state", state, NULL};
    REQUIRE(cx_kubesim_start(&ks, args) == 0);
    long code;
    char *b = cx_kubesim_request(&ks, "POST", "/api/v1/namespaces/default/configmaps",
                                 "{\"metadata\":{\"name\":\"keep\"},\"data\":{\"k\":\"v\"}}", NULL,
                                 &code);
    CHECK_INT_EQ(code, 201);
    long long rv1 = rv_of(b);
    free(b);
    b = cx_kubesim_request(&ks, "POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases",
                           "{\"metadata\":{\"name\":\"l\"},\"spec\":{\"holderIdentity\":\"x\","
                           "\"leaseDurationSeconds\":5}}",
                           NULL, &code);
    CHECK_INT_EQ(code, 201);
    long long rv2 = rv_of(b);
    free(b);
    REQUIRE(cx_kubesim_restart(&ks) == 0);
    b = cx_kubesim_request(&ks, "GET", "/api/v1/namespaces/default/configmaps/keep", NULL, NULL,
                           &code);
    CHECK_INT_EQ(code, 200);
    CHECK_INT_EQ(rv_of(b), rv1);
    CHECK_STR_CONTAINS(b, "\"k\":\"v\"");
    free(b);
    b = cx_kubesim_request(&ks, "PUT", "/api/v1/namespaces/default/configmaps/keep",
                           "{\"metadata\":{\"name\":\"keep\"},\"data\":{\"k\":\"v2\"}}", NULL,
                           &code);
    CHECK_INT_EQ(code, 200);
    CHECK_INT_GT(rv_of(b), rv2);
    free(b);
    /* The watch cache starts empty after a restart: older RVs get 410. */
    char path[128];
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=%lld", rv1);
    b = cx_kubesim_request(&ks, "GET", path, NULL, NULL, &code);
    CHECK_INT_EQ(code, 200);
    CHECK_STR_CONTAINS(b, "\"code\":410");
    free(b);
    CHECK_INT_EQ(cx_kubesim_stop(&ks), 0);
    remove(state);
}

static const struct cxt_case cases[] = {
    CXT(test_launcher_roundtrip),
    CXT(test_state_across_restart),
};
CXT_MAIN(cases)
