/*
 * daemon_auth: the reviews behind the xDS server's authentication and the
 * admin server's protected paths, through the daemon's kube client:
 *   - xDS: TokenReview (authentication.k8s.io/v1) of a proxy's token for
 *     the configured audience (xds_auth.h caches the answers);
 *   - admin: /debug/... and /v3/discovery:... from a non-loopback peer need a
 *     bearer token whose user a SubjectAccessReview allows to `get` that
 *     non-resource URL (TokenReview, then SubjectAccessReview; answers
 *     cached per user and URL).
 * The replica's ServiceAccount needs create on tokenreviews and
 * subjectaccessreviews (the ClusterRole system:auth-delegator). Main loop
 * only.
 */
#ifndef DAEMON_AUTH_H
#define DAEMON_AUTH_H

#include "admin.h"
#include "kube_client.h"
#include "xds_auth.h"

/* A reviewer for xds_server_config.reviewer (|kc| must outlive it). */
void daemon_auth_xds_reviewer(struct kube_client *kc, struct xds_token_reviewer *out);

struct daemon_admin_auth;

/* Protects |admin|'s /debug/ and /v3/discovery: paths (admin_protect). */
struct daemon_admin_auth *daemon_auth_admin_new(struct kube_client *kc, struct admin_server *admin,
                                                int trust_loopback);
void daemon_auth_admin_free(struct daemon_admin_auth *a);

/* The verdict of a TokenReview's answer |obj| (a 2xx response, from the
 * API server): OK with status.user.username, or REJECTED with
 * status.error (also when the username is empty or does not fit
 * xds_review_result.username: never cut). Returns status.user on OK (for
 * the SubjectAccessReview), else NULL. Pure. */
const cJSON *daemon_auth_token_answer(const cJSON *obj, struct xds_review_result *out);

/* The verdict of a SubjectAccessReview's answer |obj| for the non-resource
 * URL |path|: OK when status.allowed is true, else REJECTED naming the
 * user and path. Pure. */
void daemon_auth_sar_answer(const cJSON *obj, const char *path, struct xds_review_result *out);

#endif
