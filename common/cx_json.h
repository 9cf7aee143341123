/*
 * cx_json: small helpers over cJSON shared by every module.
 *
 * Canonical serialisation (sorted keys, no spaces) is what digests,
 * versions and no-op write detection are computed on, so two equal objects
 * always give the same bytes whatever their key order. Thread-safe (no
 * state).
 */
#ifndef CX_JSON_H
#define CX_JSON_H

#include "cx_buf.h"

#include <cjson/cJSON.h>
#include <stdint.h>

/* Child |key| of |obj| if it is a string, else NULL. */
const char *cx_json_str(const cJSON *obj, const char *key);

/* Asks for what a walk reads after node |c|: the next sibling, the first
 * child and the value string, each its own allocation somewhere in the
 * heap. Asked for before |c|'s name is compared, the misses overlap
 * instead of following one another. */
static inline void cx_json_prefetch(const cJSON *c)
{
    __builtin_prefetch(c->next);
    __builtin_prefetch(c->child);
    __builtin_prefetch(c->valuestring);
}

/* cJSON_GetArraySize, asking for each item's first child on the way: a
 * count is mostly followed by a walk over the items. */
static inline size_t cx_json_count(const cJSON *arr)
{
    size_t n = 0;
    for (const cJSON *c = arr ? arr->child : NULL; c; c = c->next, n++)
        __builtin_prefetch(c->child);
    return n;
}

/* Member |key| of object |obj| (the first of that name), NULL if none or
 * |obj| is no object: cJSON_GetObjectItemCaseSensitive with the names
 * compared inline, first bytes first (called for every field the informers
 * and the translator read; names are a few bytes). */
static inline const cJSON *cx_json_member(const cJSON *obj, const char *key)
{
    if (!cJSON_IsObject(obj))
        return NULL;
    for (const cJSON *c = obj->child; c; c = c->next) {
        cx_json_prefetch(c);
        const char *a = c->string, *b = key;
        if (!a || *a != *b)
            continue;
        while (*a && *a == *b) {
            a++;
            b++;
        }
        if (*a == *b)
            return c;
    }
    return NULL;
}

/* Follows a NULL-terminated list of object keys from |obj|; NULL if any step
 * is missing or not an object. */
cJSON *cx_json_path(const cJSON *obj, ...) __attribute__((sentinel));

/* Like cx_json_path but the leaf must be a string. */
const char *cx_json_path_str(const cJSON *obj, ...) __attribute__((sentinel));

/* The integer of number |n| (truncated toward zero) clamped to [lo, hi];
 * |otherwise| when |n| is not a number or is NaN. For numbers from the
 * wire: a cast of 1e300 or inf to an integer is undefined behaviour. */
int64_t cx_json_int(const cJSON *n, int64_t lo, int64_t hi, int64_t otherwise);

/* Appends |s| as a JSON string literal (quotes and escapes). Returns 0/-1. */
__attribute__((warn_unused_result)) int cx_json_escape(struct cx_buf *b, const char *s);

/* Appends the canonical form of |v|: object keys sorted bytewise, no
 * whitespace, integers without exponent. Returns 0/-1 (cap reached). */
__attribute__((warn_unused_result)) int cx_json_canonical(const cJSON *v, struct cx_buf *b);

/* Parses |len| bytes (not necessarily NUL-terminated). NULL on bad JSON. */
cJSON *cx_json_parse(const char *data, size_t len);

#endif
