/*
 * election_record: the leader election record in its two lock formats.
 *
 * Lease (coordination.k8s.io/v1): spec.holderIdentity, leaseDurationSeconds,
 * acquireTime / renewTime as MicroTime ("2006-01-02T15:04:05.000000Z",
 * exactly six fractional digits, UTC), leaseTransitions, and the
 * coordinated-election fields strategy / preferredHolder (copied through).
 *
 * ConfigMap: the same record as JSON in the annotation
 * control-plane.alpha.kubernetes.io/leader, written the way client-go does
 * (metav1.Time, whole seconds). Read leniently, because the official Python
 * client writes leaseDurationSeconds as a string ("15"), times as Python
 * str(datetime) in local time ("2026-11-29 15:00:00.123456") and no
 * leaderTransitions. Times we cannot parse are left 0: nothing is decided
 * on them (expiry uses our own clock).
 *
 * Pure functions over cJSON; no I/O, no state; any thread.
 */
#ifndef ELECTION_RECORD_H
#define ELECTION_RECORD_H

#include "cx_buf.h"
#include "election_types.h"

#include <cjson/cJSON.h>
#include <stddef.h>

/* Cap on the annotation we accept (the whole object is ~1.5 MiB at most). */
#define ELECTION_ANNOTATION_MAX (64 * 1024)

/* Decodes the Lease or ConfigMap |obj| (a GET answer or a watch event
 * object) into |out| with found = true. A missing spec or annotation gives
 * an empty record (holder "": free to take). A garbled annotation gives a
 * record whose holder is unknown (holder_overflow set, holder ""): treated
 * as someone else's lock until it expires on our clock. The fingerprint
 * hashes the raw record (the Lease spec, or the annotation text). */
void election_record_decode(enum election_lock_kind kind, const cJSON *obj,
                            struct election_observation *out);

/* Parses a ConfigMap annotation value. Returns 0, or -1 if it is not a JSON
 * object (|r| then holds an empty record). */
int election_record_parse_annotation(const char *s, size_t len, struct election_record *r);

/* Appends the annotation JSON for |r| (client-go's field order, whole-second
 * RFC 3339 times). Returns 0/-1 (cap). */
__attribute__((warn_unused_result)) int
election_record_format_annotation(const struct election_record *r, struct cx_buf *b);

/* Builds the object to CREATE for |r|. Caller frees. NULL on ENOMEM. */
cJSON *election_record_new_object(enum election_lock_kind kind, const char *ns, const char *name,
                                  const struct election_record *r);

/* Builds the object to PUT: a copy of |base| (the last object seen, whose
 * labels, annotations and data are kept; NULL builds a fresh one) with the
 * record replaced and metadata.resourceVersion set to |rv|. Caller frees.
 * NULL on ENOMEM. */
cJSON *election_record_update_object(enum election_lock_kind kind, const cJSON *base,
                                     const char *ns, const char *name, const char *rv,
                                     const struct election_record *r);

/* Parses Python's str(datetime) ("YYYY-MM-DD HH:MM:SS[.ffffff]", local
 * time). Returns 0 and sets *wall_ns, or -1. */
int election_parse_python_time(const char *s, int64_t *wall_ns);

#endif
