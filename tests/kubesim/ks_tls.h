/*
 * ks_tls: HTTPS with a test CA generated at start (CA + server certificate
 * for 127.0.0.1 and localhost) into the state directory. Event loop only.
 */
#ifndef KS_TLS_H
#define KS_TLS_H

#include "ks.h"

int ks_tls_setup(struct ks_server *s);
/* Base64 of the CA certificate PEM (for certificate-authority-data). */
const char *ks_tls_ca_b64(struct ks_server *s);
void ks_tls_free(struct ks_server *s);

/* Tokens and RBAC (ks_auth.c). */
int ks_auth_init(struct ks_server *s);
void ks_auth_free(struct ks_server *s);
void ks_tokens_reload(struct ks_server *s);
bool ks_auth_has_tokens(struct ks_server *s);
struct ks_req;
/* Maps a bearer token to its user and groups (sets r->user, r->groups).
 * Returns 0, or -1 if the token is unknown. */
int ks_auth_token_user(struct ks_server *s, const char *token, struct ks_req *r);
/* Authorizes a routed request against RBAC (unless --allow-all). Returns 0,
 * or replies 403 and returns -1. */
int ks_auth_authorize(struct ks_server *s, struct ks_req *r);
/* /_sim/tokens endpoints. Returns 0 if answered, -1 if not its path. */
int ks_auth_admin(struct ks_req *r, const char *path);

#endif
