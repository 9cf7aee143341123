/*
 * xlate_types: the translator's public types — what the daemon hands in
 * (a view of its store: objects as cJSON with their change digests, and the
 * evaluation time) and the statistics a pass reports. The output types are in
 * xlate_snapshot_types.h. Functions are in xlate.h.
 */
#ifndef XLATE_TYPES_H
#define XLATE_TYPES_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

enum xlate_kind {
    XLATE_KIND_UNKNOWN = -1, /* in an input: take the kind from apiVersion/kind */
    XLATE_KIND_GATEWAY = 0,
    XLATE_KIND_VIRTUAL_SERVICE = 1,
    XLATE_KIND_ROUTE_TABLE = 2,
    XLATE_KIND_UPSTREAM = 3,
    XLATE_KIND_SERVICE = 4,        /* core/v1 */
    XLATE_KIND_ENDPOINT_SLICE = 5, /* discovery.k8s.io/v1 */
    XLATE_KIND_SECRET = 6,         /* core/v1, type kubernetes.io/tls: certificates */
    XLATE_KIND_CONFIG_MAP = 7,     /* core/v1: CA bundles */
    XLATE_KIND_COUNT = 8,
};

/* An object decoded once into the form the translator reads
 * (xlate_record_new in xlate.h): immutable, refcounted, any thread. */
struct xlate_record;

/* One object of the daemon's store: a record (what the daemon holds), or
 * the object's JSON, which the translator then decodes into a record
 * itself. Borrowed for the duration of one xlate_run() call: the
 * translator takes its own reference to the records it keeps. */
struct xlate_object {
    enum xlate_kind kind; /* or XLATE_KIND_UNKNOWN */
    const cJSON *obj;     /* the whole object (apiVersion, kind, metadata, spec) */
    /* when set, |obj| is not read (may be NULL) and kind and digest are
     * the record's */
    const struct xlate_record *rec;
    /* Change-significance digest of |obj| (the filters compute one for
     * every stored object; it must cover metadata.namespace/name/labels and
     * spec). Equal digests mean "unchanged": the translator reuses its
     * earlier work. 0: the translator computes xlate_digest(obj). */
    uint64_t digest;
};

struct xlate_input {
    const struct xlate_object *objects; /* any order: output never depends on it */
    size_t n;
    /* The evaluation time, Unix seconds: certificates are judged valid,
     * expired or not yet valid at this instant. It only ever changes
     * reports (Warnings), never xDS bytes or versions, so replicas whose
     * clocks differ still serve identical snapshots. 0: validity periods
     * are not checked. The translator reads no clock. */
    int64_t now;
};

/* One change since the previous pass (xlate_run_changes): an object added
 * or updated (|obj| or |rec| set), or deleted (both NULL: kind, namespace
 * and name say which). */
struct xlate_change {
    enum xlate_kind kind;           /* required for deletions */
    const cJSON *obj;               /* borrowed for the call, like xlate_object.obj */
    const struct xlate_record *rec; /* or the record, as in struct xlate_object */
    uint64_t digest;                /* as in struct xlate_object */
    const char *namespace;          /* deletions only */
    const char *name;               /* deletions only */
};

/* Budgets: how much one object may make the translator produce. An object
 * that would pass one is Rejected with a message naming the limit and the
 * numbers, and its expansion stops there (nothing is built first and
 * counted after); every other object is translated as if it were absent.
 * docs/security.md lists them with their flags (xlate_limits_flags). */
struct xlate_limits {
    long routes_per_vs;         /* routes of one VirtualService after delegation */
    long delegations_per_vs;    /* RouteTable expansions resolving one VirtualService */
    long routes_per_gateway;    /* routes in one Gateway's RouteConfiguration */
    long resources_per_gateway; /* xDS resources of one Gateway, every type */
    long resource_bytes;        /* one encoded VirtualHost or RouteConfiguration */
    long regex_program_size;    /* RE2 program size of one regex (Envoy's
                                 * re2.max_program_size.error_level) */
};

#define XLATE_LIMIT_ROUTES_PER_VS         4096
#define XLATE_LIMIT_DELEGATIONS_PER_VS    1024
#define XLATE_LIMIT_ROUTES_PER_GATEWAY    500000
#define XLATE_LIMIT_RESOURCES_PER_GATEWAY 250000
#define XLATE_LIMIT_RESOURCE_BYTES        (64L << 20)
#define XLATE_LIMIT_REGEX_PROGRAM_SIZE    100

/* What one pass did: the incremental work is visible here (and tested). */
struct xlate_stats {
    size_t objects;          /* input objects */
    size_t parsed;           /* objects parsed this pass (new or changed digest) */
    size_t vhosts_built;     /* virtual hosts encoded this pass */
    size_t vhosts_reused;    /* virtual hosts whose bytes were reused */
    size_t resources_built;  /* xDS resources encoded this pass */
    size_t resources_reused; /* xDS resources carried over (same pointer) */
};

#endif
