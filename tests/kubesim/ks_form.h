/*
 * ks_form: what a response looks like. kube-apiserver negotiates the Accept
 * header (apiserver/pkg/endpoints/handlers/negotiation/negotiate.go) and may
 * transform what it serves (handlers/response.go): `as=PartialObjectMetadata`
 * and `as=PartialObjectMetadataList` keep only kind, apiVersion and
 * metadata; `as=Table` prints the resource's columns (ks_table.c); both in
 * meta.k8s.io v1 or v1beta1. This module parses Accept into the request and
 * writes single objects, lists and watch frames in the negotiated form,
 * with the mutation of a `mutate` fault rule applied. Status objects are
 * never transformed. Event loop only.
 */
#ifndef KS_FORM_H
#define KS_FORM_H

#include "ks_http.h"

/* Sets r->as (and its version and includeObject) from the request's Accept
 * header and query. Returns 0, or replies 400 (a bad includeObject) and
 * returns -1. */
int ks_form_negotiate(struct ks_req *r);

/* Replies with one object in the negotiated form (406 when the client asked
 * for a list form). |v| and |obj| are borrowed. */
void ks_reply_ver(struct ks_req *r, int code, struct ks_ver *v);
void ks_reply_obj(struct ks_req *r, int code, const cJSON *obj);

/* The list metadata of a reply: |cont| may be NULL; |remaining| < 0 means
 * no remainingItemCount. */
struct ks_listmeta {
    const char *rv;
    const char *cont;
    long remaining;
};

/* Replies 200 with |items| (borrowed) as a list of r->rt in the negotiated
 * form (406 when the client asked for a single-object form). */
void ks_reply_list(struct ks_req *r, const struct ks_listmeta *lm, struct ks_ver *const *items,
                   size_t n);

/* Watch frames for |r| in its form: new references (caller unrefs), NULL
 * when memory ran out. */
struct ks_blob *ks_form_event_frame(struct ks_req *r, struct ks_event *e, enum ks_evtype t);
struct ks_blob *ks_form_added_frame(struct ks_req *r, struct ks_ver *v);
/* A BOOKMARK at |rv| (annotated k8s.io/initial-events-end when
 * |initial_end|), shaped as the watch cache's empty object of the type. */
struct ks_blob *ks_form_bookmark(struct ks_req *r, uint64_t rv, bool initial_end);

/* Applies a fault rule's mutation {"path":"a.b.0.c","value":V} (or
 * "delete":true) to |obj| in place. Missing intermediate objects are
 * created; a path through a non-container is left alone. */
void ks_form_mutate(cJSON *obj, const cJSON *mutation);

/* "*core.ConfigMap", "*unstructured.UnstructuredList": the Go type that
 * kube-apiserver names in its NotAcceptable messages. */
void ks_form_go_type(const struct ks_rtype *rt, bool list, char *out, size_t n);

#endif
