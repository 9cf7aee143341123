/*
 * election_config: defaults, the --leader-elect-* flags, validation and
 * identities.
 *
 * Flags carry the names kube components use, so operators can copy their
 * settings: --leader-elect, --leader-elect-lease-duration,
 * --leader-elect-renew-deadline, --leader-elect-retry-period,
 * --leader-elect-resource-lock (leases|configmaps),
 * --leader-elect-resource-name, --leader-elect-resource-namespace; and
 * coxswain's own --leader-elect-peer, --leader-elect-peer-listen,
 * --leader-elect-peer-advertise (the peer liveness channel).
 * Durations are Go durations ("15s", "500ms"). Called from the main thread
 * before the elector starts; no state of its own.
 */
#ifndef ELECTION_CONFIG_H
#define ELECTION_CONFIG_H

#include "cx_flags.h"
#include "election_types.h"

#include <stddef.h>
#include <stdio.h>

/* Fills |cfg| with the defaults: disabled, 15s/10s/2s, Lease lock named
 * "coxswain" in $POD_NAMESPACE (or "default"), empty identity. */
void election_config_defaults(struct election_config *cfg);

/* Storage behind the --leader-elect-* flags: cx_flags_parse writes the
 * values (strings are malloc'ed; the daemon's cx_flags_free releases them).
 * Zero it before use. */
struct election_flags {
    int enabled;
    int64_t lease_ns;
    int64_t renew_ns;
    int64_t retry_ns;
    char *lock;
    char *name;
    char *ns;
    int peer;
    char *peer_listen;
    char *peer_advertise;
};
#define ELECTION_FLAGS_MAX 10

/* Writes the flag table into |out| (room for |max| entries) with the
 * defaults of election_config_defaults(); the daemon appends it to its own
 * table for cx_flags_parse. Environment: COXSWAIN_LEADER_ELECT,
 * COXSWAIN_LEADER_ELECT_LEASE_DURATION, ..._RENEW_DEADLINE,
 * ..._RETRY_PERIOD, ..._RESOURCE_LOCK, ..._RESOURCE_NAME, ..._PEER,
 * ..._PEER_LISTEN, ..._PEER_ADVERTISE and POD_NAMESPACE for the
 * namespace. Returns the number written, or 0 if |max| is too
 * small. */
size_t election_flags_table(struct election_flags *ef, struct cx_flag *out, size_t max);

/* Applies the parsed values to |cfg| (the identity is left alone). The
 * advertised peer endpoint defaults to $POD_IP and the listen port, else
 * the listen address when its host is a concrete address; the port is
 * filled in once bound (port 0). Returns 0, or -1 with a message naming
 * the flag in |err|. Validate afterwards. */
__attribute__((warn_unused_result)) int election_apply_flags(struct election_config *cfg,
                                                             const struct election_flags *ef,
                                                             char *err, size_t errlen);

/* Checks the rules; returns 0, or -1 with a message in |err| that names the
 * rule that was broken:
 *   all durations > 0; leaseDuration > renewDeadline;
 *   renewDeadline > 1.2 x retryPeriod; leaseDuration >= renewDeadline +
 *   retryPeriod; name, namespace and identity non-empty. */
__attribute__((warn_unused_result)) int election_config_validate(const struct election_config *cfg,
                                                                 char *err, size_t errlen);

/* Parses "leases" / "configmaps" (also "lease", "configmap"). 0 or -1. */
int election_lock_kind_parse(const char *s, enum election_lock_kind *out);
const char *election_lock_kind_name(enum election_lock_kind k);

/* Makes an identity "<POD_NAME or hostname>_<8 random hex>" into |out|
 * (ELECTION_IDENTITY_MAX bytes is always enough). Returns 0 or -1 (no
 * randomness available). */
__attribute__((warn_unused_result)) int election_identity_make(char *out, size_t outlen);

/* The guard margin and jump threshold |cfg| implies (its fields, or the
 * defaults when 0). */
int64_t election_config_margin(const struct election_config *cfg);
int64_t election_config_jump(const struct election_config *cfg);

#endif
