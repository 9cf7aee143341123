/*
 * daemon_internal: the daemon's state, shared by daemon.c (lifecycle,
 * leadership, snapshots), daemon_feed.c (informers -> filters -> store) and
 * daemon_admin.c (admin endpoints and metrics). Main loop only.
 */
#ifndef DAEMON_INTERNAL_H
#define DAEMON_INTERNAL_H

#include "admin.h"
#include "daemon_auth.h"
#include "daemon_config.h"
#include "daemon_fetch.h"
#include "daemon_refs.h"
#include "daemon_worker.h"
#include "election.h"
#include "filter.h"
#include "kube_client.h"
#include "kube_informer.h"
#include "publish.h"
#include "status_writer.h"
#include "store.h"
#include "store_obj.h"
#include "xds_server.h"

#include <event2/event.h>

enum daemon_inf_role {
    DAEMON_INF_INPUT = 0,     /* a translator input kind */
    DAEMON_INF_NAMESPACE = 1, /* Namespaces (namespace selectors) */
    DAEMON_INF_SNAPSHOT = 2,  /* ProxySnapshots in --namespace */
};

struct daemon;

struct daemon_inf {
    struct daemon *d;
    enum daemon_inf_role role;
    enum xlate_kind kind; /* DAEMON_INF_INPUT */
    char ns[64];          /* "" : every namespace (but those with informers of their own) */
    char name[96];        /* metrics label */
    char *fields;         /* its field selector (lock exclusions included) */
    struct kube_informer *inf;
    int started;
    int synced;
};

#define DAEMON_GW_COND_MAX 2048

struct daemon {
    struct daemon_config *cfg;
    struct event_base *base;
    char identity[ELECTION_IDENTITY_MAX];
    char ns[64];
    struct kube_config kcfg;
    int have_kcfg;
    struct kube_client *kc;
    struct xds_token_reviewer reviewer;   /* TokenReview of proxies' tokens */
    struct daemon_admin_auth *admin_auth; /* protects the debug and REST paths */
    struct filter *filter;
    int ns_selector; /* some kind uses a namespace selector */
    struct store *store;
    struct store_decoder decoder; /* the informers' decode (store_obj.h) */
    struct daemon_refs *refs;     /* Secrets and ConfigMaps the stored objects name */
    struct daemon_fetch *fetch;   /* their whole copies (their informers hold metadata) */
    int sync_waits_for_reads;     /* every informer synced; referenced objects being read */

    struct daemon_inf *inputs; /* input informers */
    size_t ninputs, inputs_synced;
    struct daemon_inf ns_inf;   /* started when ns_selector */
    struct daemon_inf snap_inf; /* ProxySnapshots */
    int all_synced;             /* inputs (and Namespaces) synced */

    struct daemon_worker *worker;
    struct xlate_snapshot *snap;
    int64_t start_ns;
    int64_t first_snapshot_ns;
    uint64_t snapshots;

    struct xds_server *xds;
    struct admin_server *admin;

    struct election_config ecfg;
    struct election *election;
    int leading;
    uint64_t term;
    char leader[ELECTION_IDENTITY_MAX];

    struct status_writer *sw;
    struct publish *pub;
    int writers_started;

    struct event *sig_term, *sig_int, *grace_timer, *nack_timer;
    struct event *recheck_timer; /* a certificate's validity boundary: translate again */
    int stopping;
    int election_done;
    int xds_done;
    int exit_code;

    char gw_cond_msg[DAEMON_GW_COND_MAX];

    struct {
        struct cx_metric *gw_version;   /* {gateway,version} */
        struct cx_metric *snap_version; /* {version} */
        struct cx_series *snap_series;
        struct cx_metric *store_objects; /* {kind} */
        struct cx_series *leader;        /* coxswain_leader */
        struct cx_series *ready;
        struct cx_series *change_latency_hist;
        struct cx_metric *cert_expiry; /* {secret}: notAfter of stored TLS Secrets */
    } m;
    /* gateway -> its coxswain_snapshot_version_info series, to hide on change */
    struct {
        char *gateway;
        char version[XDS_VERSION_LEN + 1];
        struct cx_series *s;
    } * gw_series;
    size_t ngw_series;
    struct snap_render *render; /* /debug/snapshot, rendered off the main loop */

    /* daemon_standby.c */
    struct {
        int active;            /* cold: informers running for this term */
        int xds_paused;        /* cold: xDS paused by us (standing by, or not serving yet) */
        int64_t term_start_ns; /* mono: on_started_leading */
        int synced, snapshot, serving; /* this term's phases seen */
        struct event *retry;           /* resume xDS / set up the feed again after a failure */
        struct event *release;         /* drop the xDS cache's snapshot after the pause */
        struct cx_metric *takeover;    /* coxswain_takeover_seconds{phase} */
        struct cx_series *mode;        /* coxswain_standby_cold */
    } sb;
};

/* daemon_feed.c */
int daemon_feed_setup(struct daemon *d, char *err, size_t errlen);
void daemon_feed_start(struct daemon *d);
void daemon_feed_free(struct daemon *d);
struct kube_obj *daemon_lookup(struct daemon *d, enum xlate_kind kind, const char *key);
struct kube_obj *daemon_lookup_snapshot(struct daemon *d, const char *name);
void daemon_foreach_snapshot(struct daemon *d, int (*fn)(void *ctx, struct kube_obj *o), void *ctx);
/* Called by the feed when every input informer has synced. */
void daemon_on_synced(struct daemon *d);
/* Called by the feed when the ProxySnapshot informer has synced. */
void daemon_on_snapshots_synced(struct daemon *d);

/* daemon_admin.c */
int daemon_admin_setup(struct daemon *d, char *err, size_t errlen);
void daemon_admin_note_snapshot(struct daemon *d);
/* Waits for a /debug/snapshot rendering in progress and frees its state. */
void daemon_admin_free(struct daemon *d);

/* daemon.c */
int daemon_ready(const struct daemon *d, struct cx_buf *why);
/* The worker, status writer and publisher (made anew by a cold standby). */
int daemon_pipeline_new(struct daemon *d, char *err, size_t errlen);
void daemon_pipeline_free(struct daemon *d);

/* daemon_standby.c: warm and cold standbys (--standby), and the takeover
 * timings of every term. */
int daemon_standby_setup(struct daemon *d, char *err, size_t errlen);
void daemon_standby_lead(struct daemon *d);
void daemon_standby_stop_leading(struct daemon *d);
void daemon_standby_synced(struct daemon *d);
void daemon_standby_snapshot(struct daemon *d);
/* 0, or -1 with the reason in |why|: a cold standby is not ready. */
int daemon_standby_ready(const struct daemon *d, struct cx_buf *why);
void daemon_standby_free(struct daemon *d);

#endif
