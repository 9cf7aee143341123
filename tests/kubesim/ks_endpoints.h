/*
 * ks_endpoints: Endpoints of Services derived from their EndpointSlices
 * (see ks_endpoints.c). Event loop only.
 */
#ifndef KS_ENDPOINTS_H
#define KS_ENDPOINTS_H

#include "ks.h"

/* Called by the store after a commit |e| to Services or EndpointSlices
 * (|rt|): creates, updates or deletes the Endpoints that follow. */
void ks_endpoints_changed(struct ks_server *s, struct ks_rtype *rt, const struct ks_event *e);

/* The ENDPOINTS column of kubectl get endpoints (formatEndpoints in
 * pkg/printers/internalversion/printers.go): "ip:port,..." (at most three,
 * then " + N more..."), or "<none>". Returns 0 or -1. */
int ks_endpoints_format(const cJSON *ep, char *out, size_t n);

#endif
