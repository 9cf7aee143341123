/*
 * kube_report: makes failed API requests loud without flooding the log.
 *
 * Every attempt a client makes ends here: it is counted
 * (coxswain_kube_requests_total, and coxswain_kube_request_errors_total by
 * error class), and a failure is logged with its verb, resource, object and
 * the server's message: the first time a distinct error is seen (same verb,
 * resource, object, class, HTTP status, reason and, for answers from the
 * server, message), then at most once per KUBE_REPORT_REPEAT_NS with the
 * number of repeats in between. A success on an object that had failed
 * says so once ("... succeeds again after N failures"). A per-client bucket
 * bounds the lines per second whatever the number of distinct errors; what
 * it holds back is counted and summed up in the next line.
 *
 * kube_reqinfo_parse and kube_report_note are I/O-free (the decision and the
 * text); kube_report_attempt also logs (cx_log) and counts (cx_metrics).
 * One reporter per client: not thread-safe, used on its client's thread.
 */
#ifndef KUBE_REPORT_H
#define KUBE_REPORT_H

#include "cx_ratelimit.h"
#include "kube_types.h"

#include <stddef.h>
#include <stdint.h>

/* What a request is, the way kube-apiserver's RequestInfo reads its path. */
struct kube_reqinfo {
    char verb[20];      /* get list watch create update patch delete deletecollection, or "" */
    char resource[128]; /* "configmaps", "gateways/status"; "" for a non-resource path */
    char ns[64];        /* "" when cluster-wide or cluster-scoped */
    char name[256];     /* "" for a collection (a watch by metadata.name names it) */
};

/* Fills |ri| from an HTTP method and a path with its query. Never fails:
 * what it cannot read stays "". */
void kube_reqinfo_parse(struct kube_reqinfo *ri, const char *method, const char *path_query);

/* "ns/name", "namespace ns", "all namespaces" or "name" (cluster-scoped):
 * the object part of a log line. Returns |out|. */
const char *kube_reqinfo_object(const struct kube_reqinfo *ri, char *out, size_t n);

#define KUBE_REPORT_SLOTS     64
#define KUBE_REPORT_REPEAT_NS (30 * (int64_t)1000000000)
/* Lines per second (and burst) one client may log about failures. */
#define KUBE_REPORT_LINES_QPS   2.0
#define KUBE_REPORT_LINES_BURST 20.0

struct kube_report_slot {
    uint64_t key;  /* hash of the distinct error; 0: free */
    uint64_t obj;  /* hash of verb, resource, ns, name: for the recovery line */
    uint64_t seen; /* occurrences */
    uint64_t since_logged;
    int64_t logged_ns; /* when last logged */
    int64_t last_ns;   /* when last seen (eviction) */
};

struct kube_report {
    char client[64]; /* metric label: the client's User-Agent product */
    struct kube_report_slot slots[KUBE_REPORT_SLOTS];
    size_t used;
    struct cx_ratelimit lines;
    uint64_t held_back; /* lines the bucket held back since the last line */
};

/* What to do with one attempt's outcome. */
enum kube_report_action {
    KUBE_REPORT_NONE = 0,      /* nothing to log */
    KUBE_REPORT_FIRST = 1,     /* a new distinct error */
    KUBE_REPORT_REPEAT = 2,    /* seen before; its interval passed */
    KUBE_REPORT_RECOVERED = 3, /* a success after failures of the same request */
};

struct kube_report_line {
    enum kube_report_action action;
    uint64_t repeats;   /* REPEAT: occurrences since the last line; RECOVERED: failures */
    uint64_t held_back; /* other lines held back by the per-client bucket */
};

void kube_report_init(struct kube_report *r, const char *client, int64_t now_ns);

/* The decision for one attempt: |e| is its outcome (KUBE_OK for a
 * success). I/O-free. */
struct kube_report_line kube_report_note(struct kube_report *r, const struct kube_reqinfo *ri,
                                         const struct kube_error *e, int64_t now_ns);

/* Counts one request sent. */
void kube_report_sent(struct kube_report *r, const struct kube_reqinfo *ri);

/* kube_report_note, then the log line (warning, or debug when |quiet|: an
 * outcome the caller handles as part of normal work) and the counters. */
void kube_report_attempt(struct kube_report *r, const struct kube_reqinfo *ri,
                         const struct kube_error *e, int quiet, int64_t now_ns);

/* Registers the client metrics (so they are listed, at zero, from the
 * start). Idempotent and thread-safe. */
void kube_report_metrics_init(void);

#endif
