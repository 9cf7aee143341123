/*
 * ks_schema: validation of a custom resource against its version's
 * openAPIV3Schema as kube-apiserver's apiextensions server does it:
 * pruning and defaulting, then types, nullable, int-or-string, enum,
 * required, pattern (RE2), min/maxLength, minimum/maximum (exclusive),
 * multipleOf, min/maxItems, min/maxProperties, oneOf/anyOf/allOf/not,
 * formats (date-time, date, ipv4, ipv6, cidr, uuid, byte) and
 * x-kubernetes-list-type map/set uniqueness. Event loop only (ks_re2).
 */
#ifndef KS_SCHEMA_H
#define KS_SCHEMA_H

#include "ks_http.h"

/* Prunes unknown fields of |obj| and applies defaults (in place), then adds
 * a field error to |fe| for each violation (paths from the object's root,
 * kube-apiserver's messages). |obj| must not hold metadata. */
void ks_schema_validate(cJSON *obj, const cJSON *sch, struct ks_ferrs *fe);

/* Adds a field error to |fe| for each way the schema |sch| of a CRD
 * version (at |path|, "spec.versions[0].schema.openAPIV3Schema") is not
 * structural or breaks apiextensions' schema rules. */
void ks_schema_structural(const cJSON *sch, const char *path, struct ks_ferrs *fe);

#endif
