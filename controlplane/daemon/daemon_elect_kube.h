/*
 * daemon_elect_kube: the elector's small Kubernetes interface
 * (election/election_kube.h) implemented over the daemon's Kubernetes
 * client (kube_client). election/ depends on the interface only; the daemon
 * and `coxswain elect` hand it this implementation.
 *
 * Each open() makes a kube_client of its own on the given event_base (the
 * elector thread's), single attempts only (the elector owns its retries
 * and backoff). Everything else runs on that base's thread.
 */
#ifndef DAEMON_ELECT_KUBE_H
#define DAEMON_ELECT_KUBE_H

#include "election_kube.h"
#include "kube_config.h"
#include "kube_types.h"

/* Fills |out| with the implementation over |cfg|, which must outlive every
 * connection opened from it (kube_client copies it at open). */
void daemon_elect_kube(struct election_kube *out, const struct kube_config *cfg);

/* The elector's error class of a kube_client outcome. */
enum election_err_class daemon_elect_kube_class(enum kube_err_code code, int http_status);

#endif
