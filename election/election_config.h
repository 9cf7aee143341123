/*
 * election_config: defaults, the --leader-elect-* flags, validation and
 * identities.
 *
 * Flags carry the names kube components use, so operators can copy their
 * settings: --leader-elect, --leader-elect-lease-duration,
 * --leader-elect-renew-deadline, --leader-elect-retry-period,
 * --leader-elect-resource-lock (leases|configmaps),
 * --leader-elect-resource-name, --leader-elect-resource-namespace.
 * Durations are Go durations ("15s", "500ms"). Called from the main thread
 * before the elector starts; no state of its own.
 */
#ifndef ELECTION_CONFIG_H
#define ELECTION_CONFIG_H

#include "election_types.h"

#include <stddef.h>
#include <stdio.h>

/* Fills |cfg| with the defaults: disabled, 15s/10s/2s, Lease lock named
 * "coxswain" in $POD_NAMESPACE (or "default"), empty identity. */
void election_config_defaults(struct election_config *cfg);

/* Looks at argv[*i]. If it is one of our flags ("--flag=value", or
 * "--flag value" except for the boolean --leader-elect), applies it, advances
 * *i past what it consumed and returns 1. Returns 0 (and leaves *i) if
 * argv[*i] is not an election flag, or -1 with a message in |err| if the
 * value is invalid. */
__attribute__((warn_unused_result)) int election_config_flag(struct election_config *cfg, int argc,
                                                             char **argv, int *i, char *err,
                                                             size_t errlen);

/* Checks the rules; returns 0, or -1 with a message in |err| that names the
 * rule that was broken:
 *   all durations > 0; leaseDuration > renewDeadline;
 *   renewDeadline > 1.2 x retryPeriod; leaseDuration >= renewDeadline +
 *   retryPeriod; name, namespace and identity non-empty. */
__attribute__((warn_unused_result)) int election_config_validate(const struct election_config *cfg,
                                                                 char *err, size_t errlen);

/* Prints the flags and their defaults. */
void election_config_usage(FILE *out);

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
