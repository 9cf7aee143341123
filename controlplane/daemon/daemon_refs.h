/*
 * daemon_refs: which Secrets and ConfigMaps the stored Gateways and
 * Upstreams name in spec.tls (and a Gateway's spec.listeners[].tls),
 * counted by referrer. The daemon watches
 * Secrets (type kubernetes.io/tls) and ConfigMaps in the watched namespaces
 * but keeps only the referenced ones in the store (the filters drop the
 * others as "unreferenced"): an unrelated ConfigMap that changes every two
 * seconds — another controller's lock — costs no translation, and a
 * private key nothing uses never reaches the translator.
 *
 * Pure bookkeeping (no I/O); main loop only.
 */
#ifndef DAEMON_REFS_H
#define DAEMON_REFS_H

#include "xlate_types.h"

#include <cjson/cJSON.h>
#include <stddef.h>

/* Most references one object may hold: a Gateway's 128 certificates in
 * all (XLATE_MAX_GATEWAY_CERTIFICATES; the translator refuses more) and a
 * client CA for spec.tls and each of its 16 listeners. */
#define DAEMON_REFS_MAX (128 + 1 + 16)
/* "namespace/name" of a reference. */
#define DAEMON_REFS_KEY_MAX 320

struct daemon_refs;

struct daemon_ref {
    enum xlate_kind kind; /* XLATE_KIND_SECRET or XLATE_KIND_CONFIG_MAP */
    char key[DAEMON_REFS_KEY_MAX];
};

struct daemon_refs *daemon_refs_new(void);
void daemon_refs_free(struct daemon_refs *r);

/* The references of object |obj| of |kind| (a Gateway or an Upstream; other
 * kinds have none), namespaces defaulting to the object's, duplicates
 * removed, into |out| (at most |max|). Returns how many. Pure. */
size_t daemon_refs_of(enum xlate_kind kind, const cJSON *obj, struct daemon_ref *out, size_t max);

/* Called for a key whose count went 0 -> 1 (|referenced| 1) or 1 -> 0. */
typedef void (*daemon_refs_changed_fn)(void *user, enum xlate_kind kind, const char *key,
                                       int referenced);

/* Replaces the references held by |owner_kind| |owner_key| ("ns/name") with
 * those |obj| names (NULL: it left the store). Reports count transitions
 * to |changed| after the index is updated. Returns 0, or -1 when memory ran
 * out (the index keeps the old references of the owner). */
__attribute__((warn_unused_result)) int daemon_refs_set(struct daemon_refs *r,
                                                        enum xlate_kind owner_kind,
                                                        const char *owner_key, const cJSON *obj,
                                                        daemon_refs_changed_fn changed, void *user);

/* The same with the references already listed (daemon_refs_of's output,
 * kept with a decoded object). */
__attribute__((warn_unused_result)) int
daemon_refs_set_list(struct daemon_refs *r, enum xlate_kind owner_kind, const char *owner_key,
                     const struct daemon_ref *refs, size_t n, daemon_refs_changed_fn changed,
                     void *user);

/* 1 if something stored references |kind| |ns|/|name|. */
int daemon_refs_has(const struct daemon_refs *r, enum xlate_kind kind, const char *ns,
                    const char *name);

/* Distinct referenced objects of |kind|. */
size_t daemon_refs_count(const struct daemon_refs *r, enum xlate_kind kind);

#endif
