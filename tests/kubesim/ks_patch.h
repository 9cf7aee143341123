/*
 * ks_patch: the three PATCH formats kube-apiserver accepts for JSON objects:
 * JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge
 * patch (maps merge like merge patch; lists with a known patch merge key
 * merge by that key; $patch/$retainKeys/$setElementOrder/
 * $deleteFromPrimitiveList directives). Pure code, no I/O.
 */
#ifndef KS_PATCH_H
#define KS_PATCH_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Applies a merge patch to |doc| in place (|doc| may be replaced; the
 * result is returned and |doc| must not be used afterwards). */
cJSON *ks_merge_patch(cJSON *doc, const cJSON *patch);

/* Applies an RFC 6902 patch. Returns 0, -1 when the patch document itself
 * is malformed (HTTP 400) or -2 when an operation does not apply (422);
 * |err| gets the message. |*doc| is replaced on success. */
int ks_json_patch(cJSON **doc, const cJSON *patch, char *err, size_t errlen);

/* Applies a strategic merge patch; |kind| names the built-in kind (for the
 * merge keys of its lists). Returns 0, or -1 and a message (400). */
int ks_strategic_patch(cJSON **doc, const cJSON *patch, const char *kind, char *err, size_t errlen);

#endif
