/*
 * The translator's incremental passes against fresh translations
 * (xlate_walk.h), over the golden inputs of TLS; the others:
 * test_xlate_walk.c.
 */
#include "cxtest.h"
#include "xlate_walk.h"

static void test_incremental_equals_fresh_tls(void)
{
    static const char *const cases[] = {
        "tls_sni_two_certs",    "tls_client_validation",   "tls_upstream_ca_sni",
        "tls_upstream_mtls",    "tls_reject_missing_refs", "tls_validity",
        "tls_cross_namespace",  "tls_reject_bad_ca",       "tls_listener_certs",
        "tls_listener_invalid",
    };
    walk_cases(cases, sizeof(cases) / sizeof(cases[0]));
}

static const struct cxt_case cases[] = {
    CXT(test_incremental_equals_fresh_tls),
};
CXT_MAIN(cases)
