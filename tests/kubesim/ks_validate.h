/*
 * ks_validate: per-kind defaulting and validation of objects on create and
 * update, with kube-apiserver's field paths and messages. Event loop only
 * (service IP allocation reads server state).
 */
#ifndef KS_VALIDATE_H
#define KS_VALIDATE_H

#include "ks_http.h"

/* Defaults and validates |obj| (modified in place) for a create (|old| NULL)
 * or an update. Returns 0; 400 with a decode message in |err| (the body
 * could not be read as the kind); or 422 with field errors in |fe|. */
int ks_validate(struct ks_server *s, struct ks_rtype *rt, cJSON *obj, const cJSON *old,
                struct ks_ferrs *fe, char *err, size_t errlen);

/* Parses a Kubernetes MicroTime (exactly six fractional digits, "Z" or an
 * offset) and rewrites it in UTC. Returns 0, or -1 and Go's parse message. */
int ks_parse_microtime(const char *s, int64_t *wall_ns, char *err, size_t errlen);

#endif
