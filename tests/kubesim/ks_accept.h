/*
 * ks_accept: Accept header negotiation (no I/O; fuzzed). kube-apiserver
 * parses Accept with goautoneg (clauses by q, concrete before wildcard,
 * stable), tries each clause against its media types (JSON, YAML, and
 * protobuf for built-in kinds) and takes the first whose parameters it
 * allows: `as`/`g`/`v` conversions to PartialObjectMetadata[List] (any
 * media type) or Table (JSON/YAML, when the resource prints tables) in
 * meta.k8s.io v1 or v1beta1, `stream=watch`, `sv=v1`. Nothing acceptable
 * means the first media type, untransformed
 * (apiserver/pkg/endpoints/handlers/negotiation/negotiate.go).
 */
#ifndef KS_ACCEPT_H
#define KS_ACCEPT_H

#include <stdbool.h>

/* The transformation a request negotiated (Accept: ...;as=K;g=meta.k8s.io;v=V). */
enum ks_as {
    KS_AS_NONE = 0,
    KS_AS_PARTIAL = 1,      /* PartialObjectMetadata */
    KS_AS_PARTIAL_LIST = 2, /* PartialObjectMetadataList */
    KS_AS_TABLE = 3,        /* Table */
};

/* Negotiates |accept| for a resource (|custom|: a custom resource, which
 * has no protobuf; |table_ok|: it prints tables). Sets *as and *v1beta1
 * (the conversion's version is meta.k8s.io/v1beta1). */
void ks_accept_negotiate(const char *accept, bool custom, bool table_ok, enum ks_as *as,
                         bool *v1beta1);

#endif
