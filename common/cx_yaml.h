/*
 * cx_yaml: YAML documents (libyaml) as cJSON values, the way kubectl reads
 * manifests: plain scalars become null, booleans (true/false, yes/no,
 * on/off in their usual spellings), integers, floats or strings; quoted
 * scalars and !!str are always strings; anchors and aliases are expanded.
 * JSON is YAML, so a JSON file parses too. "---" separates documents; empty
 * documents are skipped.
 *
 * Input is untrusted (operators' CI feeds it files; callers cap its bytes):
 * every limit below refuses the whole input with an error naming it. An
 * alias costs the nodes and levels it would copy, judged before copying
 * ("billion laughs" and chains of aliases stop at a limit, after at most
 * CX_YAML_MAX_ALIAS_NODES nodes copied). A wide mapping or many anchors
 * cost linear time, through cx_map. Thread-safe: no state.
 */
#ifndef CX_YAML_H
#define CX_YAML_H

#include <cjson/cJSON.h>
#include <stddef.h>

#define CX_YAML_MAX_DEPTH 128     /* levels of a document, aliases expanded */
#define CX_YAML_MAX_NODES 4000000 /* nodes of all documents, aliases expanded */
/* Nodes that aliases may copy in all: room for the blocks a hand-written
 * file shares, while a refused bomb costs tens of milliseconds. */
#define CX_YAML_MAX_ALIAS_NODES 100000

/* Parses every document of |len| bytes into a cJSON array (one item per
 * non-empty document). Returns it (caller frees with cJSON_Delete) or NULL
 * with a message ("line 3 column 5: mapping values are not allowed here")
 * in |err| (|errlen| bytes). */
cJSON *cx_yaml_parse(const char *data, size_t len, char *err, size_t errlen);

#endif
