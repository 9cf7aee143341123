/*
 * ks_http: one API request (ks_req), its routing, and the replies kubesim
 * sends: JSON bodies and Kubernetes Status objects with the exact shapes of
 * kube-apiserver. Runs on the server's event loop only.
 */
#ifndef KS_HTTP_H
#define KS_HTTP_H

#include "ks.h"
#include "ks_accept.h"

struct ks_h2_stream;

struct ks_qparam {
    char *k;
    char *v;
};

enum ks_verb {
    KS_V_NONE = 0,
    KS_V_GET,
    KS_V_LIST,
    KS_V_WATCH,
    KS_V_CREATE,
    KS_V_UPDATE,
    KS_V_PATCH,
    KS_V_DELETE,
    KS_V_DELETECOLLECTION,
};

const char *ks_verb_name(enum ks_verb v);
bool ks_verb_is_write(enum ks_verb v);

#define KS_BODY_MAX ((size_t)3 << 20) /* kube-apiserver's 3 MiB request cap */
#define KS_USER_MAX 256

struct ks_req {
    struct ks_server *s;
    struct evhttp_request *req;
    enum evhttp_cmd_type method;
    char *path;           /* decoded path */
    struct ks_qparam *qp; /* decoded query parameters */
    size_t nq;
    char user[KS_USER_MAX];
    char uid[128]; /* the authenticated user's uid ("" when none) */
    char **groups;
    size_t ngroups;
    enum ks_verb verb;
    struct ks_rtype *rt;
    char *ns;   /* namespace from the path, or NULL */
    char *name; /* object name from the path, or NULL */
    char *sub;  /* subresource ("status"), or NULL */
    char *body;
    size_t body_len;
    int code;           /* reply status, for audit and counters */
    uint64_t result_rv; /* RV after a write (0: none) */
    bool replied;
    bool dry_run;
    char audit_id[40];
    int64_t start_mono_ns;
    bool parked;             /* a watch or a hang owns the request now */
    bool is_admin;           /* /_sim/ request: no audit, no counters */
    bool end_watch_now;      /* fault: end the watch right after it starts */
    enum ks_as as;           /* negotiated form (ks_form.c) */
    char as_version[8];      /* of the form: "v1" or "v1beta1" */
    char include_object[16]; /* Table rows: "Metadata" (default), "Object", "None" */
    bool table_headers_sent; /* a Table watch sends its columns once */
    cJSON *mutate;           /* fault: mutation applied to each object served */
    struct evbuffer *inject; /* fault: bytes a watch stream starts with */
    bool inject_end;         /* fault: the watch ends after |inject| */
    struct event *park_ev;   /* timer of a parked request */
    TAILQ_ENTRY(ks_req) park_link;
    void (*park_free)(struct ks_req *r); /* cleanup hook of the parker */
    void *park_data;
    struct ks_h2_stream *h2; /* HTTP/2: the stream (NULL: HTTP/1.1, |req|) */
    bool was_h2;             /* came on HTTP/2 (kept after the stream went) */
    bool stalled;            /* fault: a started stream sends nothing more */
    uint32_t reset_code;     /* fault: a watch's stream is reset after reset_after_ms */
    int64_t reset_after_ms;
    void (*close_cb)(struct ks_req *r, void *arg); /* the client went (ks_req_on_close) */
    void *close_arg;
};

/* ---- transport (ks_io.c): HTTP/1.1 through evhttp or an HTTP/2 stream -- */

/* Request headers, or NULL once the client went. */
struct evkeyvalq *ks_req_in_headers(struct ks_req *r);
const char *ks_req_header(struct ks_req *r, const char *name);
/* Adds a response header (before the reply). */
void ks_req_add_header(struct ks_req *r, const char *k, const char *v);
/* A whole reply (|body| may be NULL; its bytes are taken, the buffer stays
 * the caller's). */
void ks_req_send(struct ks_req *r, int code, const char *phrase, struct evbuffer *body);
/* A streamed reply (watches): headers, chunks (bytes taken), end. */
void ks_req_start(struct ks_req *r, int code, const char *phrase);
void ks_req_chunk(struct ks_req *r, struct evbuffer *buf);
void ks_req_end(struct ks_req *r);
/* Bytes queued for the client and not yet written to the socket. */
size_t ks_req_queued(struct ks_req *r);
/* |cb| runs once if the client goes away (connection closed, stream reset)
 * while |r| is parked or streaming; it must end |r| (ks_req_gone() first).
 * NULL clears. */
void ks_req_on_close(struct ks_req *r, void (*cb)(struct ks_req *r, void *arg), void *arg);
/* From a close callback: lets go of the transport (frees libevent's request). */
void ks_req_gone(struct ks_req *r);
/* The peer's address ("127.0.0.1"), or NULL. */
const char *ks_req_peer(struct ks_req *r);
/* Faults on the request's connection or stream. Each returns 0, or -1 when
 * the transport cannot (the caller answers then). */
int ks_req_close_conn(struct ks_req *r);
int ks_req_blackhole(struct ks_req *r, int64_t ms);
int ks_req_reset(struct ks_req *r, uint32_t code);
/* The connection goes away once this request is answered (GOAWAY on
 * HTTP/2, Connection: close on HTTP/1.1). */
void ks_req_goaway(struct ks_req *r);

/* Serves a request whose transport fields (s, req or h2, method) are set:
 * |rawpath| and |query| are still percent-encoded, |in| the body. */
void ks_http_serve(struct ks_req *r, const char *rawpath, const char *query, struct evbuffer *in);

/* Ends a request that was replied to: records audit and counters, frees. */
void ks_req_done(struct ks_req *r);

/* A field error of an Invalid (422) Status. */
struct ks_ferr {
    const char *type; /* "FieldValueInvalid", "FieldValueRequired", ... */
    char field[256];
    char *body; /* ErrorBody(): "Invalid value: 0: must be ..." (owned) */
};

struct ks_ferrs {
    struct ks_ferr e[16];
    size_t n;
};

void ks_ferr_add(struct ks_ferrs *fe, const char *type, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Adds `Invalid value: "<quoted>": detail` for a string value. */
void ks_ferr_invalid_str(struct ks_ferrs *fe, const char *field, const char *value,
                         const char *detail);
void ks_ferrs_free(struct ks_ferrs *fe);

struct ks_cause {
    const char *reason;
    const char *message;
    const char *field;
};

struct ks_details {
    const char *name;
    const char *group;
    const char *kind;
    const char *uid;
    const struct ks_cause *causes;
    size_t ncauses;
    int retry_after;
    bool present; /* send "details":{} even when every field is empty */
};

/* Query parameter |k| or NULL. */
const char *ks_q(struct ks_req *r, const char *k);

/* Replies: each sends exactly once (a second call is ignored). */
void ks_reply_json(struct ks_req *r, int code, const char *json, size_t len);
void ks_reply_evbuf(struct ks_req *r, int code, struct evbuffer *buf, const char *ctype);
void ks_reply_text(struct ks_req *r, int code, const char *ctype, const char *text);
void ks_reply_status(struct ks_req *r, int code, const char *reason, const char *message,
                     const struct ks_details *d, const char *list_continue);

/* Common Status errors. |rt| gives the qualified resource ("configmaps",
 * "leases.coordination.k8s.io"). */
void ks_err_not_found(struct ks_req *r, const struct ks_rtype *rt, const char *name);
void ks_err_already_exists(struct ks_req *r, const struct ks_rtype *rt, const char *name);
void ks_err_conflict(struct ks_req *r, const struct ks_rtype *rt, const char *name,
                     const char *why);
void ks_err_invalid(struct ks_req *r, const struct ks_rtype *rt, const char *name,
                    struct ks_ferrs *fe);
void ks_err_invalid_kind(struct ks_req *r, const char *group, const char *kind, const char *name,
                         struct ks_ferrs *fe);
void ks_err_bad_request(struct ks_req *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void ks_err_internal(struct ks_req *r, const char *msg);
void ks_err_generic_not_found(struct ks_req *r);
void ks_err_method(struct ks_req *r);

/* "configmaps" or "leases.coordination.k8s.io". */
void ks_qualified_resource(const struct ks_rtype *rt, char *out, size_t n);

/* The request entry point (ks_http.c) and the API handlers (ks_api.c). */
void ks_http_handle(struct evhttp_request *req, void *arg);
void ks_api_dispatch(struct ks_req *r);
void ks_discovery_dispatch(struct ks_req *r);
/* /openapi/v3 (|gvpath| ""), or the document of "api/v1" or
 * "apis/<group>/<version>" (ks_openapi.c). */
void ks_openapi_v3(struct ks_req *r, const char *gvpath);
/* /openapi/v2: an empty document (protobuf), what kubectl 1.28 needs. */
void ks_openapi_v2(struct ks_req *r);
void ks_watch_start(struct ks_req *r);
void ks_req_free(struct ks_req *r);
/* Continuation of a discovery request parked by a partition. */
void ks_http_discovery_cont(struct ks_req *r);

#endif
