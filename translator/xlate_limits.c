/*
 * The translator's budgets (struct xlate_limits): their defaults and their
 * flags, shared by `coxswain run` and `coxswain translate` so that a
 * replica and an offline run judge the same objects alike.
 */
#include "xlate.h"

#include <string.h>

void xlate_limits_default(struct xlate_limits *lim)
{
    lim->routes_per_vs = XLATE_LIMIT_ROUTES_PER_VS;
    lim->delegations_per_vs = XLATE_LIMIT_DELEGATIONS_PER_VS;
    lim->routes_per_gateway = XLATE_LIMIT_ROUTES_PER_GATEWAY;
    lim->resources_per_gateway = XLATE_LIMIT_RESOURCES_PER_GATEWAY;
    lim->resource_bytes = XLATE_LIMIT_RESOURCE_BYTES;
    lim->regex_program_size = XLATE_LIMIT_REGEX_PROGRAM_SIZE;
}

#define STR_(x) #x
#define STR(x)  STR_(x)

size_t xlate_limits_flags(struct xlate_limits *lim, struct cx_flag *out, size_t max)
{
    if (max < XLATE_LIMITS_FLAGS)
        return 0;
    const struct cx_flag flags[XLATE_LIMITS_FLAGS] = {
        {.name = "max-routes-per-virtual-service",
         .type = CX_FLAG_INT,
         .target = &lim->routes_per_vs,
         .def = STR(XLATE_LIMIT_ROUTES_PER_VS),
         .env = "COXSWAIN_MAX_ROUTES_PER_VIRTUAL_SERVICE",
         .min = 1,
         .max = 10000000,
         .help = "routes one VirtualService may have after delegation; one that expands to "
                 "more is Rejected (BudgetExceeded) and the expansion stops there"},
        {.name = "max-delegations-per-virtual-service",
         .type = CX_FLAG_INT,
         .target = &lim->delegations_per_vs,
         .def = STR(XLATE_LIMIT_DELEGATIONS_PER_VS),
         .env = "COXSWAIN_MAX_DELEGATIONS_PER_VIRTUAL_SERVICE",
         .min = 1,
         .max = 10000000,
         .help = "RouteTable expansions while resolving one VirtualService (each delegating "
                 "route into each table counts, also when no route comes out); more Rejects "
                 "the VirtualService"},
        {.name = "max-routes-per-gateway",
         .type = CX_FLAG_INT,
         .target = &lim->routes_per_gateway,
         .def = STR(XLATE_LIMIT_ROUTES_PER_GATEWAY),
         .env = "COXSWAIN_MAX_ROUTES_PER_GATEWAY",
         .min = 1,
         .max = 100000000,
         .help = "routes in one Gateway's RouteConfiguration; VirtualServices are taken oldest "
                 "first and one that does not fit is Rejected on that Gateway"},
        {.name = "max-resources-per-gateway",
         .type = CX_FLAG_INT,
         .target = &lim->resources_per_gateway,
         .def = STR(XLATE_LIMIT_RESOURCES_PER_GATEWAY),
         .env = "COXSWAIN_MAX_RESOURCES_PER_GATEWAY",
         .min = 4,
         .max = 100000000,
         .help = "xDS resources (listeners, route configuration, clusters, endpoints) of one "
                 "Gateway; a VirtualService whose listeners and Upstreams do not fit is Rejected "
                 "on that Gateway"},
        {.name = "max-resource-bytes",
         .type = CX_FLAG_INT,
         .target = &lim->resource_bytes,
         .def = "67108864",
         .env = "COXSWAIN_MAX_RESOURCE_BYTES",
         .min = 1024,
         .max = 2147483647,
         .help = "bytes of one encoded VirtualHost or RouteConfiguration; the VirtualService "
                 "that passes it is Rejected"},
        {.name = "max-regex-program-size",
         .type = CX_FLAG_INT,
         .target = &lim->regex_program_size,
         .def = STR(XLATE_LIMIT_REGEX_PROGRAM_SIZE),
         .env = "COXSWAIN_MAX_REGEX_PROGRAM_SIZE",
         .min = 1,
         .max = 10000, /* below what XLATE_RE2_MAX_MEM compiles */
         .help = "RE2 program size a regex may have (Envoy refuses more than its runtime "
                 "re2.max_program_size.error_level, 100 by default: raise both together); a "
                 "larger one Rejects its object (RegexProgramSize)"},
    };
    memcpy(out, flags, sizeof(flags));
    return XLATE_LIMITS_FLAGS;
}
