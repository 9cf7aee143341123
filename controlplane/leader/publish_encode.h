/*
 * publish_encode: what a ProxySnapshot carries as its snapshot — a group's
 * JSON (the /debug/snapshot format) gzip'ed and base64'ed while it fits a
 * cap — and the thread that computes it off the main loop.
 *
 * Rendering a large Gateway (50k virtual hosts: ~20 MB of JSON) takes
 * hundreds of milliseconds; on the main loop that would stall the xDS server
 * and the informers. The encoder thread renders and compresses groups of
 * immutable snapshots (it holds a snapshot reference per job) and hands the
 * result back to the main loop. Rendering stops as soon as the compressed
 * bytes pass the cap.
 *
 * publish_encode() is pure (any thread); the encoder's functions are main
 * loop only (the thread is internal).
 */
#ifndef PUBLISH_ENCODE_H
#define PUBLISH_ENCODE_H

#include "xlate_snapshot_types.h"

#include <event2/event.h>
#include <stddef.h>

/* Encodes |g|'s JSON as gzip+base64 into *b64 (caller frees) unless the
 * result would exceed |max_bytes|: then *b64 = NULL and *truncated = 1.
 * *json_bytes is the JSON size (0 when rendering stopped early). Returns 0
 * or -1 (memory, a resource that does not decode). */
int publish_encode(const struct xlate_group *g, size_t max_bytes, char **b64, int *truncated,
                   size_t *json_bytes);

/* The version of a group: 16 hex of SHA-256 over its mode and type versions. */
void publish_group_version(const struct xlate_group *g, char out[XDS_VERSION_LEN + 1]);

#define PUBLISH_NAME_MAX 320

/* An encoded group, for ProxySnapshot |name| at group |version|. */
struct publish_blob {
    char name[PUBLISH_NAME_MAX];
    char version[XDS_VERSION_LEN + 1];
    char *b64; /* NULL when truncated or failed */
    int truncated;
    int failed; /* encoding failed (memory): publish without the snapshot */
    size_t json_bytes;
};

void publish_blob_free(struct publish_blob *b);

struct publish_encoder;

/* Main loop: a result; the callee owns |blob|. */
typedef void (*publish_encoded_fn)(void *user, struct publish_blob *blob);

struct publish_encoder *publish_encoder_new(struct event_base *base, size_t max_bytes,
                                            publish_encoded_fn cb, void *user);

/* Queues the encoding of group |group| ("ns/name") of |snap| (a reference is
 * taken) for ProxySnapshot |name| at |version|. A job still queued for the
 * same name is replaced (only the newest matters). Returns 0 or -1. */
int publish_encoder_submit(struct publish_encoder *e, struct xlate_snapshot *snap,
                           const char *group, const char *name, const char *version);

/* Stops the thread (after the job it is running) and frees; queued jobs
 * and undelivered results are dropped. */
void publish_encoder_free(struct publish_encoder *e);

#endif
