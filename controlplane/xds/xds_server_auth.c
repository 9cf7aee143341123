/* Authentication and authorization of the xDS server's streams
 * (xds_auth.h has the rules and the token cache). */
#include "xds_server_impl.h"

#include "cx_hash.h"
#include "cx_log.h"
#include "cx_time.h"
#include "xds_frame.h"
#include "xds_pbcheck.h"
#include "xlate_snapshot.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <string.h>

/* ---- authentication and authorization ------------------------------------------- */

void xds_srv_auth_refused(struct xds_server *s, enum auth_reason r, const char *peer,
                          const char *msg)
{
    s->stats.auth_refused_total++;
    m_add(s->auth_refused[r], 1);
    /* Refusals are the clients' business, said to them; the log gets a
     * bounded share so that a storm of them costs it nothing. */
    if (cx_ratelimit_take(&s->auth_log_rl, cx_mono_ns()) == 0) {
        char esc[512];
        cx_log_escape(msg, esc, sizeof(esc));
        cx_info("xds", "refused a stream from %s (%s): %s", peer, xds_srv_auth_reason_names[r],
                esc);
    }
}

/* An identity is kept packed: an idle stream carries a few dozen bytes of
 * it, not the 324 of struct xds_identity ("M ns\0name\0", M the method). */
static int set_identity(struct sstream *ss, const struct xds_identity *id)
{
    free(ss->id);
    ss->id = NULL;
    if (id->method == XDS_ID_NONE)
        return 0;
    size_t ln = strnlen(id->ns, sizeof(id->ns)), lm = strnlen(id->name, sizeof(id->name));
    ss->id = malloc(1 + ln + 1 + lm + 1);
    if (!ss->id)
        return -1;
    ss->id[0] = (char)('0' + id->method);
    memcpy(ss->id + 1, id->ns, ln);
    ss->id[1 + ln] = '\0';
    memcpy(ss->id + 2 + ln, id->name, lm);
    ss->id[2 + ln + lm] = '\0';
    return 0;
}

const struct xds_identity *xds_srv_identity(const struct sstream *ss, struct xds_identity *out)
{
    memset(out, 0, sizeof(*out));
    if (!ss->id)
        return out;
    out->method = (enum xds_id_method)(ss->id[0] - '0');
    const char *ns = ss->id + 1;
    snprintf(out->ns, sizeof(out->ns), "%s", ns);
    snprintf(out->name, sizeof(out->name), "%s", ns + strlen(ns) + 1);
    return out;
}

/* May the stream's identity receive its node group? 0, or a gRPC status
 * with the refusal in |*errmsg| (owned by the stream). Sets no_secrets. */
int xds_srv_authorize(struct sstream *ss, const char **errmsg)
{
    struct xds_server *s = ss->srv;
    if (s->auth == XDS_AUTH_NONE)
        return 0;
    struct xlate_snapshot *snap = xds_cache_snapshot(s->cache);
    const struct xlate_group *g = snap ? xlate_snapshot_group(snap, ss_group(ss)) : NULL;
    char msg[600];
    struct xds_identity id;
    enum xds_authz a = xds_authorize(xds_srv_identity(ss, &id), ss_group(ss), g ? &g->access : NULL,
                                     msg, sizeof(msg));
    if (a == XDS_AUTHZ_ALLOW || a == XDS_AUTHZ_ALLOW_NO_SECRETS) {
        ss->no_secrets = a == XDS_AUTHZ_ALLOW_NO_SECRETS;
        return 0;
    }
    free(ss->refusal);
    ss->refusal = strdup(msg);
    *errmsg = ss->refusal ? ss->refusal : "permission denied";
    enum auth_reason r = a == XDS_AUTHZ_DENY ? AUTH_DENIED : AUTH_NO_CREDENTIALS;
    xds_srv_auth_refused(s, r, xds_h2_stream_peer(ss->h2), msg);
    return a == XDS_AUTHZ_DENY ? XDS_GRPC_PERMISSION_DENIED : XDS_GRPC_UNAUTHENTICATED;
}

/* The stream knows its identity and its node group: authorized, it
 * joins the group and is answered. Returns 0 or a gRPC status. */
int xds_srv_admit(struct sstream *ss, const char **errmsg)
{
    struct xds_server *s = ss->srv;
    int code = xds_srv_authorize(ss, errmsg);
    if (code != 0)
        return code;
    if (xds_cache_watch_add(s->cache, &ss->watch, ss_group(ss)) != 0) {
        m_add(s->m.refused[REFUSE_GROUPS], 1);
        *errmsg = "too many node groups";
        return XDS_GRPC_RESOURCE_EXHAUSTED;
    }
    ss->registered = 1;
    struct xds_identity id;
    xds_srv_identity(ss, &id);
    m_add(s->auth_streams[id.method], 1);
    cx_debug("xds", "stream from %s: node \"%s\" group \"%s\" agent \"%s\" as %s/%s (%s)",
             xds_h2_stream_peer(ss->h2), ss_node_id(ss), ss_group(ss), ss_user_agent(ss), id.ns,
             id.name, xds_srv_auth_method_names[id.method]);
    return 0;
}

static void token_checked(void *arg, const struct xds_auth_verdict *v)
{
    struct sstream *ss = arg;
    struct xds_server *s = ss->srv;
    ss->auth_pending = 0;
    if (v->status != 0) {
        free(ss->refusal);
        ss->refusal = strdup(v->message);
        xds_srv_auth_refused(s,
                             v->status == XDS_GRPC_UNAVAILABLE ? AUTH_UNAVAILABLE : AUTH_BAD_TOKEN,
                             xds_h2_stream_peer(ss->h2), v->message);
        xds_h2_stream_finish(ss->h2, v->status, ss->refusal ? ss->refusal : "");
        return;
    }
    if (set_identity(ss, &v->id) != 0) {
        xds_h2_stream_finish(ss->h2, XDS_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    if (!ss_have_node(ss) || ss->registered)
        return;
    const char *msg = NULL;
    int code = xds_srv_admit(ss, &msg);
    if (code != 0) {
        xds_h2_stream_finish(ss->h2, code, msg);
        return;
    }
    xds_srv_pump(ss, cx_mono_ns());
}

/* Authenticates a new call from its certificate and `authorization`
 * header. Returns 0 (identity known, or a review runs), or a gRPC status
 * with the message in |msg|. */
int xds_srv_authenticate(struct sstream *ss, struct xds_h2_stream *st, char *msg, size_t cap,
                         enum auth_reason *why)
{
    struct xds_server *s = ss->srv;
    if (s->auth == XDS_AUTH_NONE)
        return 0;
    const char *authz = xds_h2_stream_authorization(st);
    X509 *cert = xds_h2_stream_peer_cert(st);
    if (cert) {
        struct xds_identity id;
        if (xds_spiffe_from_cert(cert, s->trust_domain, &id, msg, cap) == 0)
            return set_identity(ss, &id) == 0 ? 0 : XDS_GRPC_RESOURCE_EXHAUSTED;
        if (!authz) {
            *why = AUTH_BAD_CERT;
            return XDS_GRPC_UNAUTHENTICATED;
        }
    }
    if (!authz)
        return 0; /* nobody: the Gateway decides (allowUnauthenticated) */
    *why = AUTH_BAD_TOKEN;
    if (strncasecmp(authz, "Bearer ", 7) != 0) {
        snprintf(msg, cap, "the authorization header is not \"Bearer <token>\"");
        return XDS_GRPC_UNAUTHENTICATED;
    }
    const char *token = authz + 7;
    while (*token == ' ')
        token++;
    if (!s->tokens) {
        *why = AUTH_UNAVAILABLE;
        snprintf(msg, cap, "this server cannot review tokens (no Kubernetes API client)");
        return XDS_GRPC_UNAVAILABLE;
    }
    struct xds_auth_verdict v;
    if (xds_tokens_check(s->tokens, token, &v, &ss->waiter, token_checked, ss) == 0) {
        ss->auth_pending = 1;
        return 0;
    }
    if (v.status != 0) {
        snprintf(msg, cap, "%s", v.message);
        if (v.status == XDS_GRPC_UNAVAILABLE)
            *why = AUTH_UNAVAILABLE;
        return v.status;
    }
    if (set_identity(ss, &v.id) != 0) {
        snprintf(msg, cap, "out of memory");
        return XDS_GRPC_RESOURCE_EXHAUSTED;
    }
    return 0;
}
