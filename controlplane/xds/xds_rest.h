/*
 * xds_rest: Envoy's REST-JSON xDS, for debugging with curl:
 * POST /v3/discovery:{listeners,routes,clusters,endpoints} with a proto3 JSON
 * DiscoveryRequest (snake_case or lowerCamelCase names) answers 200 with the
 * DiscoveryResponse as JSON (resources as Any with "@type", rendered by
 * xlate_pbjson), 304 when version_info is already the current version, 400 for
 * a bad body, 503 before the first snapshot.
 *
 * The node group is chosen as for ADS (node.metadata "coxswain.dev/gateway",
 * else node.cluster, else the server's default group). An empty
 * resource_names means every resource of the type.
 *
 * Mounted on the admin HTTP server (evhttp, main loop).
 */
#ifndef XDS_REST_H
#define XDS_REST_H

#include "cx_buf.h"
#include "xds_types.h"

#include <event2/http.h>

struct xds_cache;
struct xds_server;
struct admin_server;

/* Request bodies larger than this are refused (413). */
#define XDS_REST_MAX_BODY ((size_t)1 << 20)

/* The I/O-free core: answers |body| for |type| from |cache|. Appends the
 * response body (JSON, or an error message) to |out| and returns the HTTP
 * status: 200, 304, 400, 500 (rendering failed) or 503 (no snapshot). */
int xds_rest_discovery(const struct xds_cache *cache, const char *default_group, enum xds_type type,
                       const char *body, size_t len, struct cx_buf *out);

/* evhttp callback; |arg| is the struct xds_server. The type comes from the
 * request path. */
void xds_rest_handle(struct evhttp_request *req, void *arg);

/* Mounts the four paths on the admin server. Returns 0 or -1. */
__attribute__((warn_unused_result)) int xds_rest_mount(struct admin_server *admin,
                                                       struct xds_server *srv);

#endif
