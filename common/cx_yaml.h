/*
 * cx_yaml: YAML documents (libyaml) as cJSON values, the way kubectl reads
 * manifests: plain scalars become null, booleans (true/false, yes/no,
 * on/off in their usual spellings), integers, floats or strings; quoted
 * scalars and !!str are always strings; anchors and aliases are expanded.
 * JSON is YAML, so a JSON file parses too. "---" separates documents; empty
 * documents are skipped.
 *
 * Input is untrusted (operators' CI feeds it files): nesting depth and the
 * number of nodes (aliases included, "billion laughs") are capped.
 * Thread-safe: no state.
 */
#ifndef CX_YAML_H
#define CX_YAML_H

#include <cjson/cJSON.h>
#include <stddef.h>

#define CX_YAML_MAX_DEPTH 128
#define CX_YAML_MAX_NODES 4000000

/* Parses every document of |len| bytes into a cJSON array (one item per
 * non-empty document). Returns it (caller frees with cJSON_Delete) or NULL
 * with a message ("line 3 column 5: mapping values are not allowed here")
 * in |err| (|errlen| bytes). */
cJSON *cx_yaml_parse(const char *data, size_t len, char *err, size_t errlen);

#endif
