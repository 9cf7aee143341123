/*
 * The translator's incremental passes against fresh translations
 * (xlate_walk.h), over the golden inputs of routing, delegation, upstreams,
 * gateway selection and Gateway listeners; those of TLS (certificates make
 * them the slowest): test_xlate_walk_tls.c.
 */
#include "cxtest.h"
#include "xlate_util.h"
#include "xlate_walk.h"

static void test_incremental_equals_fresh(void)
{
    static const char *const cases[] = {
        "envoy_basic",
        "proxyless_basic",
        "delegation_by_selector",
        "delegation_by_name",
        "delegation_cycle",
        "delegation_depth",
        "delegation_missing_table",
        "delegation_nested",
        "delegation_prefix_violation",
        "domain_conflict",
        "endpoints_merge",
        "gateway_selection",
        "invalid_values",
        "mixed_modes_shared_upstream",
        "not_selected",
        "proxyless_unsupported",
        "reject_gateway",
        "reject_invalid_ports",
        "service_problems",
        "upstream_missing",
        "upstream_rejected",
        "weighted_totals",
        "gateway_listeners",
        "gateway_listener_routes",
        "gateway_listener_routes_invalid",
        "endpoint_hostname",
    };
    /* every RouteConfiguration and report block mapped on its own
     * (xlate_big_alloc, normally from 2 MiB): the walk's passes prove that
     * path too, and nothing stays mapped once they are freed */
    size_t mapped0 = xlate_big_mapped(), prev = xlate_big_threshold(1);
    walk_cases(cases, sizeof(cases) / sizeof(cases[0]));
    xlate_big_threshold(prev);
    CHECK_INT_EQ(xlate_big_mapped(), mapped0);
}

static const struct cxt_case cases[] = {
    CXT(test_incremental_equals_fresh),
};
CXT_MAIN(cases)
