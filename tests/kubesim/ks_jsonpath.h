/*
 * ks_jsonpath: what the CRD table convertor needs from client-go's jsonpath
 * and apimachinery's duration package, with no I/O (fuzzed): the first
 * result of a printer column's JSONPath and HumanDuration.
 */
#ifndef KS_JSONPATH_H
#define KS_JSONPATH_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* apimachinery's duration.HumanDuration of |ns| ("5m3s", "2d4h"). */
void ks_human_duration(int64_t ns, char *out, size_t n);

/* Evaluates a printer column JSONPath (.a.b, [N], [-1], [*], .*, ['k'],
 * [?(@.k=="v")], [?(@.k)], optionally in braces) on |obj|: the first
 * result in document order, or NULL. Nesting is bounded (32 steps). */
const cJSON *ks_jsonpath_first(const cJSON *obj, const char *path);

#endif
