/*
 * xlate_api: parses and validates coxswain's resources (and the parts of
 * Services and EndpointSlices the translator reads) from their JSON into the
 * C types of xlate_api_types.h.
 *
 * Errors are precise: the field path and what is wrong
 * ("spec.routes[1].match.regex: invalid perl operator: (?="), unknown fields
 * included ("spec.routes[0].match.prefx: unknown field"). Parsing never stops
 * at the first problem: up to XLATE_MAX_ERRORS are collected.
 *
 * Pure; the caller owns the arena and the result.
 */
#ifndef XLATE_API_H
#define XLATE_API_H

#include "xlate_api_types.h"
#include "xlate_util.h"

#include <cjson/cJSON.h>

/* The kind of |obj| from apiVersion and kind; XLATE_KIND_UNKNOWN if it is not
 * one the translator reads. */
enum xlate_kind xlate_kind_of(const cJSON *obj);
/* "Gateway", "VirtualService", ... ("Unknown" otherwise). */
const char *xlate_kind_name(enum xlate_kind k);

/* Parses |obj| as |kind| into |out| (allocating from |a|) under budgets
 * |lim| (NULL: the defaults; the parse reads the regex program-size limit).
 * Metadata is filled whenever it is readable; every problem goes to
 * out->errors. Returns 0, or -1 when memory ran out (|out| is then
 * unusable). Call xlate_object_release() before freeing the arena. */
__attribute__((warn_unused_result)) int xlate_api_parse(enum xlate_kind kind, const cJSON *obj,
                                                        const struct xlate_limits *lim,
                                                        struct xl_arena *a, struct xl_object *out);

/* spec.tls of a parsed Upstream: all zero (enabled 0) when it has none. */
const struct xl_upstream_tls *xlate_upstream_tls_of(const struct xl_upstream *u);

/* Frees what the arena does not own (label selectors). */
void xlate_object_release(struct xl_object *o);

/* Records a problem. Returns 0 or -1 (memory). */
__attribute__((format(printf, 5, 6))) int xlate_errors_add(struct xl_errors *e, struct xl_arena *a,
                                                           enum xlate_state st, enum xl_reason r,
                                                           const char *fmt, ...);
/* XLATE_REJECTED if any error rejects, XLATE_WARNING if any warns, else
 * XLATE_ACCEPTED. */
enum xlate_state xlate_errors_state(const struct xl_errors *e);

/* Value of label |key| in |m| (binary search), or NULL. */
const char *xlate_meta_label(const struct xl_meta *m, const char *key);

/* 0 if |s| is a valid virtual-host domain (exact, "*", "*suffix" or
 * "prefix*", optional :port), else -1 and a message in |msg|. */
int xlate_domain_valid(const char *s, char *msg, size_t msglen);

/* Value of data key |key| of a ConfigMap (binary search), or NULL. */
const char *xlate_config_map_get(const struct xl_config_map *c, const char *key);

/* 1 if |s| is an IPv4 or IPv6 literal. */
int xlate_is_ip(const char *s);

#endif
