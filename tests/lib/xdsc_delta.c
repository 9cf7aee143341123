#include "xdsc_delta.h"

#include "xlate_snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DELTA_PATH \
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources"

struct held {
    char *name;
    char *version;
};

struct qnode {
    struct qnode *next;
    xdsc_delta_response *r;
};

struct xdsc_delta {
    struct xdsc *c;
    struct xdsc_call *call;
    struct xdsc_delta_config cfg;
    char *node_id, *gateway;
    int sent_node;
    unsigned responses;
    struct qnode *head, *tail;
    size_t queued;
    char nonce[XDS_TYPE_COUNT][64];
    struct held *held[XDS_TYPE_COUNT]; /* sorted by name */
    size_t nheld[XDS_TYPE_COUNT];
    int closed, status;
    char message[512];
};

static size_t held_find(const struct xdsc_delta *d, int t, const char *name, int *found)
{
    size_t lo = 0, hi = d->nheld[t];
    *found = 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(d->held[t][mid].name, name);
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

static void held_set(struct xdsc_delta *d, int t, const char *name, const char *version)
{
    int found;
    size_t i = held_find(d, t, name, &found);
    if (found) {
        free(d->held[t][i].version);
        d->held[t][i].version = strdup(version);
        return;
    }
    struct held *v = realloc(d->held[t], (d->nheld[t] + 1) * sizeof(*v));
    if (!v)
        return;
    d->held[t] = v;
    memmove(v + i + 1, v + i, (d->nheld[t] - i) * sizeof(*v));
    v[i].name = strdup(name);
    v[i].version = strdup(version);
    d->nheld[t]++;
}

static void held_del(struct xdsc_delta *d, int t, const char *name)
{
    int found;
    size_t i = held_find(d, t, name, &found);
    if (!found)
        return;
    free(d->held[t][i].name);
    free(d->held[t][i].version);
    memmove(d->held[t] + i, d->held[t] + i + 1, (d->nheld[t] - i - 1) * sizeof(struct held));
    d->nheld[t]--;
}

static void on_message(void *user, struct xdsc_call *call, const uint8_t *msg, size_t len)
{
    (void)call;
    struct xdsc_delta *d = user;
    xdsc_delta_response *r =
        envoy__service__discovery__v3__delta_discovery_response__unpack(NULL, len, msg);
    if (!r)
        return;
    d->responses++;
    int t = xlate_type_from_url(r->type_url);
    if (t >= 0) {
        snprintf(d->nonce[t], sizeof(d->nonce[t]), "%s", r->nonce);
        for (size_t i = 0; i < r->n_resources; i++)
            if (r->resources[i]->name)
                held_set(d, t, r->resources[i]->name,
                         r->resources[i]->version ? r->resources[i]->version : "");
        for (size_t i = 0; i < r->n_removed_resources; i++)
            held_del(d, t, r->removed_resources[i]);
    }
    if (d->cfg.on_response)
        d->cfg.on_response(d->cfg.user, d, r);
    if (d->cfg.auto_ack && t >= 0)
        xdsc_delta_request(d, (enum xds_type)t, NULL, 0, NULL, 0, NULL, NULL, 0, r->nonce, NULL);
    if (d->cfg.keep) {
        struct qnode *n = calloc(1, sizeof(*n));
        if (n) {
            n->r = r;
            if (d->tail)
                d->tail->next = n;
            else
                d->head = n;
            d->tail = n;
            d->queued++;
            return;
        }
    }
    envoy__service__discovery__v3__delta_discovery_response__free_unpacked(r, NULL);
}

static void on_close(void *user, struct xdsc_call *call, int grpc_status, const char *msg,
                     int http_status)
{
    (void)call;
    (void)http_status;
    struct xdsc_delta *d = user;
    d->closed = 1;
    d->status = grpc_status;
    snprintf(d->message, sizeof(d->message), "%s", msg ? msg : "");
}

static const struct xdsc_call_cbs delta_cbs = {.on_message = on_message, .on_close = on_close};

struct xdsc_delta *xdsc_delta_open(struct xdsc *c, const struct xdsc_delta_config *cfg)
{
    struct xdsc_delta *d = calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    d->c = c;
    d->cfg = *cfg;
    d->node_id = strdup(cfg->node_id ? cfg->node_id : "");
    d->gateway = cfg->gateway ? strdup(cfg->gateway) : NULL;
    d->call = xdsc_call_open_auth(c, DELTA_PATH, "application/grpc", cfg->authorization,
                                  &delta_cbs, d);
    if (!d->call) {
        xdsc_delta_free(d);
        return NULL;
    }
    return d;
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
    Google__Protobuf__Struct__FieldsEntry *fes[1] = {&fe};
    Google__Protobuf__Value val = GOOGLE__PROTOBUF__VALUE__INIT;
    Google__Rpc__Status st = GOOGLE__RPC__STATUS__INIT;
    req.type_url = (char *)xlate_type_url(type);
    req.resource_names_subscribe = (char **)sub;
    req.n_resource_names_subscribe = nsub;
    req.resource_names_unsubscribe = (char **)unsub;
    req.n_resource_names_unsubscribe = nunsub;
    req.response_nonce = (char *)(nonce ? nonce : "");
    Envoy__Service__Discovery__V3__DeltaDiscoveryRequest__InitialResourceVersionsEntry *ents =
        NULL, **pents = NULL;
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
        node.id = (char *)node_id;
        node.user_agent_name = "xdsc-delta";
        if (gateway) {
            fe.key = "coxswain.dev/gateway";
            val.kind_case = GOOGLE__PROTOBUF__VALUE__KIND_STRING_VALUE;
            val.string_value = (char *)gateway;
            fe.value = &val;
            md.fields = fes;
            md.n_fields = 1;
            node.metadata = &md;
        }
        req.node = &node;
    }
    if (nack) {
        st.code = 3;
        st.message = (char *)nack;
        req.error_detail = &st;
    }
    size_t sz = envoy__service__discovery__v3__delta_discovery_request__get_packed_size(&req);
    uint8_t *buf = malloc(sz ? sz : 1);
    int rc = -1;
    if (buf) {
        envoy__service__discovery__v3__delta_discovery_request__pack(&req, buf);
        rc = cx_buf_append(out, buf, sz);
        free(buf);
    }
    free(ents);
    free(pents);
    return rc;
}

int xdsc_delta_request(struct xdsc_delta *d, enum xds_type type, const char *const *sub,
                       size_t nsub, const char *const *unsub, size_t nunsub,
                       const char *const *init_names, const char *const *init_versions,
                       size_t ninit, const char *nonce, const char *nack)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    int rc = xdsc_encode_delta_request(&b, type, sub, nsub, unsub, nunsub, init_names,
                                       init_versions, ninit, nonce,
                                       d->sent_node ? NULL : d->node_id,
                                       d->sent_node ? NULL : d->gateway, nack);
    d->sent_node = 1;
    if (rc == 0)
        rc = xdsc_call_send(d->call, b.data, b.len);
    cx_buf_free(&b);
    return rc;
}

static xdsc_delta_response *pop(struct xdsc_delta *d)
{
    struct qnode *n = d->head;
    if (!n)
        return NULL;
    d->head = n->next;
    if (!d->head)
        d->tail = NULL;
    d->queued--;
    xdsc_delta_response *r = n->r;
    free(n);
    return r;
}

static int has_queued(void *arg)
{
    struct xdsc_delta *d = arg;
    return d->head != NULL || d->closed;
}

xdsc_delta_response *xdsc_delta_wait(struct xdsc_delta *d, struct event_base *base,
                                     int timeout_ms)
{
    xdsc_run_until(base, has_queued, d, timeout_ms);
    return pop(d);
}

void xdsc_delta_response_free(xdsc_delta_response *r)
{
    if (r)
        envoy__service__discovery__v3__delta_discovery_response__free_unpacked(r, NULL);
}

size_t xdsc_delta_queued(const struct xdsc_delta *d)
{
    return d->queued;
}

unsigned xdsc_delta_responses(const struct xdsc_delta *d)
{
    return d->responses;
}

const char *xdsc_delta_nonce(const struct xdsc_delta *d, enum xds_type type)
{
    return d->nonce[type];
}

size_t xdsc_delta_count(const struct xdsc_delta *d, enum xds_type type)
{
    return d->nheld[type];
}

const char *xdsc_delta_version(const struct xdsc_delta *d, enum xds_type type, const char *name)
{
    int found;
    size_t i = held_find(d, type, name, &found);
    return found ? d->held[type][i].version : NULL;
}

const char *xdsc_delta_name_at(const struct xdsc_delta *d, enum xds_type type, size_t i,
                               const char **version)
{
    if (i >= d->nheld[type])
        return NULL;
    if (version)
        *version = d->held[type][i].version;
    return d->held[type][i].name;
}

int xdsc_delta_closed(const struct xdsc_delta *d, int *grpc_status, const char **message)
{
    if (d->closed) {
        if (grpc_status)
            *grpc_status = d->status;
        if (message)
            *message = d->message;
    }
    return d->closed;
}

void xdsc_delta_free(struct xdsc_delta *d)
{
    if (!d)
        return;
    xdsc_delta_response *r;
    while ((r = pop(d)) != NULL)
        xdsc_delta_response_free(r);
    for (int t = 0; t < XDS_TYPE_COUNT; t++) {
        for (size_t i = 0; i < d->nheld[t]; i++) {
            free(d->held[t][i].name);
            free(d->held[t][i].version);
        }
        free(d->held[t]);
    }
    xdsc_call_detach(d->call);
    free(d->node_id);
    free(d->gateway);
    free(d);
}
