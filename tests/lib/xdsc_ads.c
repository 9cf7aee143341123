/* The ADS stream of the test client (xdsc.h), in both modes: state of the
 * world (StreamAggregatedResources) and delta (DeltaAggregatedResources).
 * One stream object: the node sent with the first request, per type the
 * last version and nonce, the responses queued for the test, auto-ACK, the
 * stream's end, and the client's view of what it holds (name -> version
 * and bytes per type), updated by the rules of its mode. */
#include "xdsc.h"

#include "xlate_snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADS_PATH   "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"
#define DELTA_PATH "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources"

struct held {
    char *name;
    char *version; /* delta: the resource's; SotW: the response's */
    uint8_t *bytes;
    size_t len;
};

struct resp_node {
    struct resp_node *next;
    ProtobufCMessage *r; /* a DiscoveryResponse or a DeltaDiscoveryResponse */
};

struct xdsc_ads {
    struct xdsc *c;
    struct xdsc_call *call;
    struct xdsc_ads_config cfg;
    char *node_id, *cluster, *gateway;
    int sent_node;
    unsigned responses;
    struct resp_node *head, *tail;
    size_t queued;
    char version[XDS_TYPE_COUNT][128];
    char nonce[XDS_TYPE_COUNT][64];
    char **names[XDS_TYPE_COUNT]; /* SotW: the names last requested (auto-ACK) */
    size_t nnames[XDS_TYPE_COUNT];
    struct held *held[XDS_TYPE_COUNT]; /* the view, sorted by name */
    size_t nheld[XDS_TYPE_COUNT];
    int closed, status;
    char message[512];
};

/* ---- the view ------------------------------------------------------------------- */

static size_t held_find(const struct xdsc_ads *a, int t, const char *name, int *found)
{
    size_t lo = 0, hi = a->nheld[t];
    *found = 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(a->held[t][mid].name, name);
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

static void held_free(struct held *h)
{
    free(h->name);
    free(h->version);
    free(h->bytes);
}

static void held_set(struct xdsc_ads *a, int t, const char *name, const char *version,
                     const uint8_t *bytes, size_t len)
{
    int found;
    size_t i = held_find(a, t, name, &found);
    if (!found) {
        struct held *v = realloc(a->held[t], (a->nheld[t] + 1) * sizeof(*v));
        if (!v)
            return;
        a->held[t] = v;
        memmove(v + i + 1, v + i, (a->nheld[t] - i) * sizeof(*v));
        memset(&v[i], 0, sizeof(v[i]));
        v[i].name = strdup(name);
        a->nheld[t]++;
    }
    struct held *h = &a->held[t][i];
    free(h->version);
    free(h->bytes);
    h->version = strdup(version ? version : "");
    h->bytes = malloc(len ? len : 1);
    if (h->bytes && len)
        memcpy(h->bytes, bytes, len);
    h->len = len;
}

static void held_del(struct xdsc_ads *a, int t, const char *name)
{
    int found;
    size_t i = held_find(a, t, name, &found);
    if (!found)
        return;
    held_free(&a->held[t][i]);
    memmove(a->held[t] + i, a->held[t] + i + 1, (a->nheld[t] - i - 1) * sizeof(struct held));
    a->nheld[t]--;
}

static void held_clear(struct xdsc_ads *a, int t)
{
    for (size_t i = 0; i < a->nheld[t]; i++)
        held_free(&a->held[t][i]);
    free(a->held[t]);
    a->held[t] = NULL;
    a->nheld[t] = 0;
}

/* Field 1 (length-delimited) of a serialised message: the name of every
 * xDS resource type (Listener, RouteConfiguration, Cluster, CLA, Secret). */
static char *field1(const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint64_t key = 0;
        int shift = 0;
        while (i < n) {
            key |= (uint64_t)(p[i] & 0x7f) << shift;
            shift += 7;
            if (!(p[i++] & 0x80))
                break;
        }
        unsigned wt = key & 7;
        uint64_t v = 0;
        shift = 0;
        if (wt == 0 || wt == 2) {
            while (i < n) {
                v |= (uint64_t)(p[i] & 0x7f) << shift;
                shift += 7;
                if (!(p[i++] & 0x80))
                    break;
            }
        }
        if (wt == 2) {
            if (v > n - i)
                return NULL;
            if ((key >> 3) == 1)
                return strndup((const char *)p + i, (size_t)v);
            i += (size_t)v;
        } else if (wt == 1) {
            i += 8;
        } else if (wt == 5) {
            i += 4;
        } else if (wt != 0) {
            return NULL;
        }
    }
    return strdup("");
}

/* SotW: LDS and CDS responses carry the whole state (what is not in one is
 * gone); RDS and EDS responses add or replace what they carry. */
static void view_sotw(struct xdsc_ads *a, int t, const xdsc_response *r)
{
    if (t == XDS_LISTENER || t == XDS_CLUSTER)
        held_clear(a, t);
    for (size_t i = 0; i < r->n_resources; i++) {
        const ProtobufCBinaryData *v = &r->resources[i]->value;
        char *name = field1(v->data, v->len);
        if (name)
            held_set(a, t, name, r->version_info, v->data, v->len);
        free(name);
    }
}

/* Delta: resources added or replaced, removed_resources deleted. */
static void view_delta(struct xdsc_ads *a, int t, const xdsc_delta_response *r)
{
    for (size_t i = 0; i < r->n_resources; i++) {
        const Envoy__Service__Discovery__V3__Resource *res = r->resources[i];
        if (!res->name)
            continue;
        const ProtobufCBinaryData *v = res->resource ? &res->resource->value : NULL;
        held_set(a, t, res->name, res->version, v ? v->data : NULL, v ? v->len : 0);
    }
    for (size_t i = 0; i < r->n_removed_resources; i++)
        held_del(a, t, r->removed_resources[i]);
}

/* ---- the stream ------------------------------------------------------------------- */

static void queue(struct xdsc_ads *a, ProtobufCMessage *m)
{
    struct resp_node *n = calloc(1, sizeof(*n));
    if (!n) {
        protobuf_c_message_free_unpacked(m, NULL);
        return;
    }
    n->r = m;
    if (a->tail)
        a->tail->next = n;
    else
        a->head = n;
    a->tail = n;
    a->queued++;
}

static void on_message(void *user, struct xdsc_call *call, const uint8_t *msg, size_t len)
{
    (void)call;
    struct xdsc_ads *a = user;
    ProtobufCMessage *m = protobuf_c_message_unpack(
        a->cfg.delta ? &envoy__service__discovery__v3__delta_discovery_response__descriptor
                     : &envoy__service__discovery__v3__discovery_response__descriptor,
        NULL, len, msg);
    if (!m)
        return;
    a->responses++;
    const char *url, *nonce, *version;
    if (a->cfg.delta) {
        const xdsc_delta_response *r = (const xdsc_delta_response *)m;
        url = r->type_url, nonce = r->nonce, version = r->system_version_info;
    } else {
        const xdsc_response *r = (const xdsc_response *)m;
        url = r->type_url, nonce = r->nonce, version = r->version_info;
    }
    int t = xlate_type_from_url(url);
    if (t >= 0) {
        snprintf(a->version[t], sizeof(a->version[t]), "%s", version ? version : "");
        snprintf(a->nonce[t], sizeof(a->nonce[t]), "%s", nonce ? nonce : "");
        if (a->cfg.delta)
            view_delta(a, t, (const xdsc_delta_response *)m);
        else
            view_sotw(a, t, (const xdsc_response *)m);
    }
    if (a->cfg.delta && a->cfg.on_delta_response)
        a->cfg.on_delta_response(a->cfg.user, a, (const xdsc_delta_response *)m);
    if (!a->cfg.delta && a->cfg.on_response)
        a->cfg.on_response(a->cfg.user, a, (const xdsc_response *)m);
    if (a->cfg.auto_ack && t >= 0) {
        if (a->cfg.delta)
            xdsc_ads_delta_request(a, (enum xds_type)t, NULL, 0, NULL, 0, NULL, NULL, 0, nonce,
                                   NULL);
        else
            xdsc_ads_request(a, (enum xds_type)t, (const char *const *)a->names[t], a->nnames[t],
                             NULL, NULL, NULL);
    }
    if (a->cfg.keep)
        queue(a, m);
    else
        protobuf_c_message_free_unpacked(m, NULL);
}

static void on_close(void *user, struct xdsc_call *call, int grpc_status, const char *msg,
                     int http_status)
{
    (void)call;
    (void)http_status;
    struct xdsc_ads *a = user;
    a->closed = 1;
    a->status = grpc_status;
    snprintf(a->message, sizeof(a->message), "%s", msg ? msg : "");
}

static const struct xdsc_call_cbs ads_cbs = {.on_message = on_message, .on_close = on_close};

struct xdsc_ads *xdsc_ads_open(struct xdsc *c, const struct xdsc_ads_config *cfg)
{
    struct xdsc_ads *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->c = c;
    a->cfg = *cfg;
    a->node_id = strdup(cfg->node_id ? cfg->node_id : "");
    a->cluster = cfg->cluster ? strdup(cfg->cluster) : NULL;
    a->gateway = cfg->gateway ? strdup(cfg->gateway) : NULL;
    a->call = xdsc_call_open_auth(c, cfg->delta ? DELTA_PATH : ADS_PATH, "application/grpc",
                                  cfg->authorization, &ads_cbs, a);
    if (!a->call) {
        xdsc_ads_free(a);
        return NULL;
    }
    return a;
}

/* The node of a request: id, cluster, user agent, the Gateway in
 * metadata. |md|, |fe|, |fes| and |val| are the caller's storage. */
static void fill_node(Envoy__Config__Core__V3__Node *node, Google__Protobuf__Struct *md,
                      Google__Protobuf__Struct__FieldsEntry *fe,
                      Google__Protobuf__Struct__FieldsEntry **fes, Google__Protobuf__Value *val,
                      const char *node_id, const char *cluster, const char *gateway,
                      const char *agent)
{
    node->id = (char *)node_id;
    if (cluster)
        node->cluster = (char *)cluster;
    node->user_agent_name = (char *)agent;
    if (gateway) {
        fe->key = "coxswain.dev/gateway";
        val->kind_case = GOOGLE__PROTOBUF__VALUE__KIND_STRING_VALUE;
        val->string_value = (char *)gateway;
        fe->value = val;
        fes[0] = fe;
        md->fields = fes;
        md->n_fields = 1;
        node->metadata = md;
    }
}

static int pack_into(struct cx_buf *out, const ProtobufCMessage *m)
{
    size_t sz = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(sz ? sz : 1);
    if (!buf)
        return -1;
    protobuf_c_message_pack(m, buf);
    int rc = cx_buf_append(out, buf, sz);
    free(buf);
    return rc;
}

int xdsc_encode_request(struct cx_buf *out, enum xds_type type, const char *const *names, size_t n,
                        const char *version, const char *nonce, const char *node_id,
                        const char *cluster, const char *gateway, int nack_code,
                        const char *nack_msg)
{
    Envoy__Service__Discovery__V3__DiscoveryRequest req =
        ENVOY__SERVICE__DISCOVERY__V3__DISCOVERY_REQUEST__INIT;
    Envoy__Config__Core__V3__Node node = ENVOY__CONFIG__CORE__V3__NODE__INIT;
    Google__Protobuf__Struct md = GOOGLE__PROTOBUF__STRUCT__INIT;
    Google__Protobuf__Struct__FieldsEntry fe = GOOGLE__PROTOBUF__STRUCT__FIELDS_ENTRY__INIT;
    Google__Protobuf__Struct__FieldsEntry *fes[1];
    Google__Protobuf__Value val = GOOGLE__PROTOBUF__VALUE__INIT;
    Google__Rpc__Status st = GOOGLE__RPC__STATUS__INIT;
    req.type_url = (char *)xlate_type_url(type);
    req.version_info = (char *)(version ? version : "");
    req.response_nonce = (char *)(nonce ? nonce : "");
    req.resource_names = (char **)names;
    req.n_resource_names = n;
    if (node_id) {
        fill_node(&node, &md, &fe, fes, &val, node_id, cluster, gateway, "xdsc");
        req.node = &node;
    }
    if (nack_msg) {
        st.code = nack_code;
        st.message = (char *)nack_msg;
        req.error_detail = &st;
    }
    return pack_into(out, &req.base);
}

int xdsc_encode_delta_request(struct cx_buf *out, enum xds_type type, const char *const *sub,
                              size_t nsub, const char *const *unsub, size_t nunsub,
                              const char *const *init_names, const char *const *init_versions,
                              size_t ninit, const char *nonce, const char *node_id,
                              const char *gateway, const char *nack)
{
    Envoy__Service__Discovery__V3__DeltaDiscoveryRequest req =
        ENVOY__SERVICE__DISCOVERY__V3__DELTA_DISCOVERY_REQUEST__INIT;
    Envoy__Config__Core__V3__Node node = ENVOY__CONFIG__CORE__V3__NODE__INIT;
    Google__Protobuf__Struct md = GOOGLE__PROTOBUF__STRUCT__INIT;
    Google__Protobuf__Struct__FieldsEntry fe = GOOGLE__PROTOBUF__STRUCT__FIELDS_ENTRY__INIT;
    Google__Protobuf__Struct__FieldsEntry *fes[1];
    Google__Protobuf__Value val = GOOGLE__PROTOBUF__VALUE__INIT;
    Google__Rpc__Status st = GOOGLE__RPC__STATUS__INIT;
    req.type_url = (char *)xlate_type_url(type);
    req.resource_names_subscribe = (char **)sub;
    req.n_resource_names_subscribe = nsub;
    req.resource_names_unsubscribe = (char **)unsub;
    req.n_resource_names_unsubscribe = nunsub;
    req.response_nonce = (char *)(nonce ? nonce : "");
    Envoy__Service__Discovery__V3__DeltaDiscoveryRequest__InitialResourceVersionsEntry *ents = NULL,
                                                                                       **pents =
                                                                                           NULL;
    if (ninit) {
        ents = calloc(ninit, sizeof(*ents));
        pents = calloc(ninit, sizeof(*pents));
        if (!ents || !pents) {
            free(ents);
            free(pents);
            return -1;
        }
        for (size_t i = 0; i < ninit; i++) {
            envoy__service__discovery__v3__delta_discovery_request__initial_resource_versions_entry__init(
                &ents[i]);
            ents[i].key = (char *)init_names[i];
            ents[i].value = (char *)init_versions[i];
            pents[i] = &ents[i];
        }
        req.initial_resource_versions = pents;
        req.n_initial_resource_versions = ninit;
    }
    if (node_id) {
        fill_node(&node, &md, &fe, fes, &val, node_id, NULL, gateway, "xdsc-delta");
        req.node = &node;
    }
    if (nack) {
        st.code = 3;
        st.message = (char *)nack;
        req.error_detail = &st;
    }
    int rc = pack_into(out, &req.base);
    free(ents);
    free(pents);
    return rc;
}

int xdsc_ads_request(struct xdsc_ads *a, enum xds_type type, const char *const *names, size_t n,
                     const char *version, const char *nonce, const char *nack)
{
    if (a->cfg.delta)
        return -1;
    if ((const char *const *)a->names[type] != names) {
        for (size_t i = 0; i < a->nnames[type]; i++)
            free(a->names[type][i]);
        free(a->names[type]);
        a->names[type] = n ? calloc(n, sizeof(char *)) : NULL;
        a->nnames[type] = 0;
        for (size_t i = 0; i < n && a->names[type]; i++)
            a->names[type][a->nnames[type]++] = strdup(names[i]);
    }
    struct cx_buf b;
    cx_buf_init(&b, 0);
    int rc = xdsc_encode_request(&b, type, names, n, version ? version : a->version[type],
                                 nonce ? nonce : a->nonce[type], a->sent_node ? NULL : a->node_id,
                                 a->sent_node ? NULL : a->cluster, a->sent_node ? NULL : a->gateway,
                                 3, nack);
    a->sent_node = 1;
    if (rc == 0)
        rc = xdsc_call_send(a->call, b.data, b.len);
    cx_buf_free(&b);
    return rc;
}

int xdsc_ads_delta_request(struct xdsc_ads *a, enum xds_type type, const char *const *sub,
                           size_t nsub, const char *const *unsub, size_t nunsub,
                           const char *const *init_names, const char *const *init_versions,
                           size_t ninit, const char *nonce, const char *nack)
{
    if (!a->cfg.delta)
        return -1;
    struct cx_buf b;
    cx_buf_init(&b, 0);
    int rc = xdsc_encode_delta_request(
        &b, type, sub, nsub, unsub, nunsub, init_names, init_versions, ninit, nonce,
        a->sent_node ? NULL : a->node_id, a->sent_node ? NULL : a->gateway, nack);
    a->sent_node = 1;
    if (rc == 0)
        rc = xdsc_call_send(a->call, b.data, b.len);
    cx_buf_free(&b);
    return rc;
}

static ProtobufCMessage *pop(struct xdsc_ads *a)
{
    struct resp_node *n = a->head;
    if (!n)
        return NULL;
    a->head = n->next;
    if (!a->head)
        a->tail = NULL;
    a->queued--;
    ProtobufCMessage *r = n->r;
    free(n);
    return r;
}

xdsc_response *xdsc_ads_pop(struct xdsc_ads *a)
{
    return a->cfg.delta ? NULL : (xdsc_response *)pop(a);
}

static int has_queued(void *arg)
{
    struct xdsc_ads *a = arg;
    return a->head != NULL || a->closed;
}

xdsc_response *xdsc_ads_wait(struct xdsc_ads *a, struct event_base *base, int timeout_ms)
{
    if (a->cfg.delta)
        return NULL;
    cxt_loop_until(base, has_queued, a, timeout_ms);
    return xdsc_ads_pop(a);
}

xdsc_delta_response *xdsc_ads_delta_wait(struct xdsc_ads *a, struct event_base *base,
                                         int timeout_ms)
{
    if (!a->cfg.delta)
        return NULL;
    cxt_loop_until(base, has_queued, a, timeout_ms);
    return (xdsc_delta_response *)pop(a);
}

void xdsc_response_free(xdsc_response *r)
{
    if (r)
        envoy__service__discovery__v3__discovery_response__free_unpacked(r, NULL);
}

void xdsc_delta_response_free(xdsc_delta_response *r)
{
    if (r)
        envoy__service__discovery__v3__delta_discovery_response__free_unpacked(r, NULL);
}

size_t xdsc_ads_queued(const struct xdsc_ads *a)
{
    return a->queued;
}

unsigned xdsc_ads_responses(const struct xdsc_ads *a)
{
    return a->responses;
}

const char *xdsc_ads_version(const struct xdsc_ads *a, enum xds_type type)
{
    return a->version[type];
}

const char *xdsc_ads_nonce(const struct xdsc_ads *a, enum xds_type type)
{
    return a->nonce[type];
}

size_t xdsc_ads_count(const struct xdsc_ads *a, enum xds_type type)
{
    return a->nheld[type];
}

const char *xdsc_ads_held_version(const struct xdsc_ads *a, enum xds_type type, const char *name)
{
    int found;
    size_t i = held_find(a, type, name, &found);
    return found ? a->held[type][i].version : NULL;
}

const char *xdsc_ads_name_at(const struct xdsc_ads *a, enum xds_type type, size_t i,
                             const char **version, const uint8_t **bytes, size_t *len)
{
    if (i >= a->nheld[type])
        return NULL;
    const struct held *h = &a->held[type][i];
    if (version)
        *version = h->version;
    if (bytes)
        *bytes = h->bytes;
    if (len)
        *len = h->len;
    return h->name;
}

int xdsc_ads_same_view(const struct xdsc_ads *a, const struct xdsc_ads *b, enum xds_type type)
{
    if (a->nheld[type] != b->nheld[type])
        return 0;
    for (size_t i = 0; i < a->nheld[type]; i++) {
        const struct held *x = &a->held[type][i], *y = &b->held[type][i];
        if (strcmp(x->name, y->name) != 0 || x->len != y->len ||
            (x->len && memcmp(x->bytes, y->bytes, x->len) != 0))
            return 0;
    }
    return 1;
}

int xdsc_ads_closed(const struct xdsc_ads *a, int *grpc_status, const char **message)
{
    if (a->closed) {
        if (grpc_status)
            *grpc_status = a->status;
        if (message)
            *message = a->message;
    }
    return a->closed;
}

struct xdsc_call *xdsc_ads_call(struct xdsc_ads *a)
{
    return a->call;
}

void xdsc_ads_free(struct xdsc_ads *a)
{
    if (!a)
        return;
    ProtobufCMessage *m;
    while ((m = pop(a)) != NULL)
        protobuf_c_message_free_unpacked(m, NULL);
    for (int t = 0; t < XDS_TYPE_COUNT; t++) {
        for (size_t i = 0; i < a->nnames[t]; i++)
            free(a->names[t][i]);
        free(a->names[t]);
        held_clear(a, t);
    }
    xdsc_call_detach(a->call);
    free(a->node_id);
    free(a->cluster);
    free(a->gateway);
    free(a);
}

char **xdsc_response_names(const xdsc_response *r, size_t *n)
{
    char **v = calloc(r->n_resources + 1, sizeof(char *));
    *n = 0;
    if (!v)
        return NULL;
    for (size_t i = 0; i < r->n_resources; i++) {
        char *name = field1(r->resources[i]->value.data, r->resources[i]->value.len);
        v[(*n)++] = name ? name : strdup("?");
    }
    return v;
}

void xdsc_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}
