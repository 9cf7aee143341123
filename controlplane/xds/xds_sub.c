#include "xds_sub.h"

#include "cx_wire.h"
#include "xds_pbcheck.h"
#include "xlate_snapshot.h"

#include "envoy/service/discovery/v3/discovery.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int xds_sub_full_state(enum xds_type t)
{
    return t == XDS_LISTENER || t == XDS_CLUSTER;
}

void xds_sub_copy(char *dst, size_t cap, const char *src)
{
    if (!src)
        src = "";
    size_t n = strlen(src);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* ---- requests ------------------------------------------------------------------ */

int xds_sub_decode(const ProtobufCMessageDescriptor *desc, const uint8_t *msg, size_t len,
                   struct xds_ads_event *ev, ProtobufCMessage **out)
{
    *out = NULL;
    /* Bounded before protobuf-c, whose decoder recurses without a limit. */
    int pc = xds_pbcheck(desc, msg, len);
    if (pc == XDS_PB_TOO_DEEP || pc == XDS_PB_TOO_MANY) {
        ev->pb_error = pc;
        return XDS_ADS_EBOUND;
    }
    if (pc != XDS_PB_OK)
        return XDS_ADS_EINVAL;
    *out = protobuf_c_message_unpack(desc, NULL, len, msg);
    return *out ? 0 : XDS_ADS_EINVAL;
}

static const char *gateway_of(const Envoy__Config__Core__V3__Node *node)
{
    if (!node->metadata)
        return NULL;
    for (size_t i = 0; i < node->metadata->n_fields; i++) {
        const Google__Protobuf__Struct__FieldsEntry *f = node->metadata->fields[i];
        if (f && f->key && strcmp(f->key, XDS_NODE_GATEWAY_KEY) == 0 && f->value &&
            f->value->kind_case == GOOGLE__PROTOBUF__VALUE__KIND_STRING_VALUE &&
            f->value->string_value && f->value->string_value[0])
            return f->value->string_value;
    }
    return NULL;
}

/* Heap copy of |src| cut at XDS_NODE_STR_MAX - 1 bytes. */
static char *dup_node_str(const char *src)
{
    return strndup(src ? src : "", XDS_NODE_STR_MAX - 1);
}

/* The node's group: node.metadata["coxswain.dev/gateway"] (a string), else
 * node.cluster, else |default_group|. */
static int node_take(struct xds_node *n, const Envoy__Config__Core__V3__Node *node,
                     const char *default_group)
{
    const char *group = NULL;
    char ua[128] = "";
    if (node) {
        if (node->user_agent_name) {
            int v = node->user_agent_version_type_case ==
                    ENVOY__CONFIG__CORE__V3__NODE__USER_AGENT_VERSION_TYPE_USER_AGENT_VERSION;
            snprintf(ua, sizeof(ua), "%s%s%s", node->user_agent_name, v ? "/" : "",
                     v ? node->user_agent_version : "");
        }
        group = gateway_of(node);
        if (!group && node->cluster && node->cluster[0])
            group = node->cluster;
    }
    if (!group)
        group = default_group ? default_group : "";
    n->id = dup_node_str(node ? node->id : "");
    n->cluster = dup_node_str(node ? node->cluster : "");
    n->group = dup_node_str(group);
    n->user_agent = dup_node_str(ua);
    if (!n->id || !n->cluster || !n->group || !n->user_agent) {
        xds_sub_node_free(n);
        return XDS_ADS_ENOMEM;
    }
    n->have = 1;
    return 0;
}

void xds_sub_node_free(struct xds_node *n)
{
    free(n->id);
    free(n->cluster);
    free(n->group);
    free(n->user_agent);
    memset(n, 0, sizeof(*n));
}

int xds_sub_begin(struct xds_node *n, const Envoy__Config__Core__V3__Node *node,
                  const char *type_url, const char *default_group, struct xds_ads_event *ev,
                  int *type)
{
    *type = -1;
    if (!n->have) {
        int rc = node_take(n, node, default_group);
        if (rc != 0)
            return rc;
        ev->first_node = 1;
    }
    if (!type_url || !type_url[0])
        return XDS_ADS_EINVAL;
    *type = xlate_type_from_url(type_url);
    if (*type < 0)
        ev->verdict = XDS_ADS_UNKNOWN_TYPE;
    ev->type = *type;
    return 0;
}

void xds_sub_on_nonce(struct xds_exchange *x, const char *nonce, const Google__Rpc__Status *error,
                      struct xds_ads_event *ev)
{
    ev->verdict = XDS_ADS_SUBSCRIBE;
    if (!nonce || !nonce[0])
        return;
    if (!x->nonce_sent[0] || strcmp(nonce, x->nonce_sent) != 0) {
        ev->verdict = XDS_ADS_STALE;
        return;
    }
    /* A repeat of an answered nonce may change the subscription but is no
     * second NACK (a client cannot NACK one version a thousand times), nor
     * a second ACK; an ACK after a NACK still counts: the client accepted
     * that version after all. */
    if (x->answered && (error || !x->nacked))
        return;
    x->answered = 1;
    x->awaiting = 0;
    ev->origin_ns = x->origin_ns;
    xds_sub_copy(ev->version, sizeof(ev->version), x->version_sent);
    if (error) {
        ev->verdict = XDS_ADS_NACK;
        ev->nack_code = error->code;
        xds_sub_copy(ev->nack_message, sizeof(ev->nack_message), error->message);
        x->nacks++;
        x->nacked = 1;
    } else {
        ev->verdict = XDS_ADS_ACK;
        xds_sub_copy(x->version_acked, sizeof(x->version_acked), x->version_sent);
        x->nacked = 0;
    }
}

int xds_sub_ready(const struct xds_exchange *x, const struct xds_resource_set *set)
{
    return x->requested && !x->awaiting && set;
}

void xds_sub_sent(struct xds_exchange *x, uint64_t *nonce_counter, const char *version,
                  int64_t origin_ns, char *nonce)
{
    snprintf(nonce, XDS_NONCE_MAX, "%llu", (unsigned long long)++*nonce_counter);
    xds_sub_copy(x->version_sent, sizeof(x->version_sent), version);
    xds_sub_copy(x->nonce_sent, sizeof(x->nonce_sent), nonce);
    x->answered = 0;
    x->awaiting = 1;
    x->origin_ns = origin_ns;
}

/* ---- sorted lookups ------------------------------------------------------------- */

size_t xds_sub_find_str(char *const *v, size_t n, const char *name, int *found)
{
    size_t lo = 0, hi = n;
    *found = 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(v[mid], name);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

struct xds_resource *xds_sub_find_res(struct xds_resource *const *items, size_t n, const char *name)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(items[mid]->name, name);
        if (c == 0)
            return items[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* ---- the budget ------------------------------------------------------------------- */

void xds_sub_charge(struct xds_budget *b, size_t *charged, size_t n)
{
    if (!b)
        return;
    b->used += n;
    *charged += n;
}

void xds_sub_uncharge(struct xds_budget *b, size_t *charged, size_t n)
{
    if (!b)
        return;
    if (n > *charged)
        n = *charged;
    b->used -= n;
    *charged -= n;
}

/* ---- wire pieces -------------------------------------------------------------------- */

enum { ANY_TYPE_URL = 1, ANY_VALUE = 2, CONTROL_PLANE_IDENTIFIER = 1 };

int xds_sub_emit_ld(xds_ads_emit_fn emit, void *user, uint32_t field, size_t len, const char *s)
{
    uint8_t hdr[CX_WIRE_HDR_MAX];
    size_t h = cx_wire_put_len_header(hdr, field, len);
    int rc = emit(user, hdr, h, NULL);
    if (rc == 0 && s && len)
        rc = emit(user, s, len, NULL);
    return rc;
}

size_t xds_sub_any_size(const char *url, const struct xds_resource *r)
{
    return cx_wire_len_size(ANY_TYPE_URL, strlen(url)) + cx_wire_len_size(ANY_VALUE, r->len);
}

int xds_sub_emit_any(xds_ads_emit_fn emit, void *user, uint32_t field, const char *url,
                     struct xds_resource *r)
{
    int rc = xds_sub_emit_ld(emit, user, field, xds_sub_any_size(url, r), NULL);
    if (rc == 0)
        rc = xds_sub_emit_ld(emit, user, ANY_TYPE_URL, strlen(url), url);
    if (rc == 0)
        rc = xds_sub_emit_ld(emit, user, ANY_VALUE, r->len, NULL);
    if (rc == 0 && r->len)
        rc = emit(user, r->bytes, r->len, r);
    return rc;
}

size_t xds_sub_control_plane_size(uint32_t field, const char *identifier)
{
    if (!identifier || !identifier[0])
        return 0;
    return cx_wire_len_size(field, cx_wire_len_size(CONTROL_PLANE_IDENTIFIER, strlen(identifier)));
}

int xds_sub_emit_control_plane(xds_ads_emit_fn emit, void *user, uint32_t field,
                               const char *identifier)
{
    if (!identifier || !identifier[0])
        return 0;
    size_t il = strlen(identifier);
    int rc =
        xds_sub_emit_ld(emit, user, field, cx_wire_len_size(CONTROL_PLANE_IDENTIFIER, il), NULL);
    if (rc == 0)
        rc = xds_sub_emit_ld(emit, user, CONTROL_PLANE_IDENTIFIER, il, identifier);
    return rc;
}
