/*
 * store_kinds: the Kubernetes resources the daemon watches and writes,
 * described once (API paths for the kube client, names for metrics and
 * flags) and indexed by the translator's kinds. Constant data; any thread.
 */
#ifndef STORE_KINDS_H
#define STORE_KINDS_H

#include "kube_types.h"
#include "xlate_types.h"

/* The API group of coxswain's own kinds. */
#define STORE_GROUP "coxswain.dev"

/* The resource of a translator input kind (NULL for XLATE_KIND_UNKNOWN). */
const struct kube_resource *store_kind_resource(enum xlate_kind k);

/* 1 for Gateway, VirtualService, RouteTable and Upstream: the kinds whose
 * .status the leader writes. */
int store_kind_has_status(enum xlate_kind k);

/* The translator kind of a Kind name ("VirtualService"), or
 * XLATE_KIND_UNKNOWN. */
enum xlate_kind store_kind_from_name(const char *kind);

extern const struct kube_resource store_res_proxysnapshots;
extern const struct kube_resource store_res_namespaces;

#endif
