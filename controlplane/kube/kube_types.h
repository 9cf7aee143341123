/*
 * kube_types: the data types shared by the Kubernetes client modules
 * (kube_config, kube_error, kube_watch, kube_client, kube_informer).
 *
 * Plain structs, enums and constants only; prototypes live in each module's
 * own header. Nothing here is tied to a thread.
 */
#ifndef KUBE_TYPES_H
#define KUBE_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* A resource type, described the way the API paths need it. Built-ins and
 * custom resources (group coxswain.dev) are described alike. */
struct kube_resource {
    const char *group;   /* "" for the core group */
    const char *version; /* "v1" */
    const char *plural;  /* "configmaps" (the path segment) */
    const char *kind;    /* "ConfigMap" */
    int namespaced;      /* 1 if objects live in a namespace */
};

/* What a failed call means to its caller. Every code a caller may branch on
 * has its own value; KUBE_E_OTHER is whatever is left. */
enum kube_err_code {
    KUBE_OK = 0,
    KUBE_E_TRANSPORT = 1,       /* no HTTP response (connect, TLS, reset, timeout) */
    KUBE_E_TIMEOUT = 2,         /* our own deadline passed */
    KUBE_E_CANCELLED = 3,       /* the caller cancelled the call */
    KUBE_E_DECODE = 4,          /* a response we could not understand */
    KUBE_E_BAD_REQUEST = 5,     /* 400 */
    KUBE_E_UNAUTHORIZED = 6,    /* 401 */
    KUBE_E_FORBIDDEN = 7,       /* 403 */
    KUBE_E_NOT_FOUND = 8,       /* 404 */
    KUBE_E_METHOD = 9,          /* 405 */
    KUBE_E_CONFLICT = 10,       /* 409 reason Conflict (stale RV, failed precondition) */
    KUBE_E_ALREADY_EXISTS = 11, /* 409 reason AlreadyExists */
    KUBE_E_EXPIRED = 12,        /* 410, reason Expired or Gone: re-list */
    KUBE_E_UNSUPPORTED = 13,    /* 415 */
    KUBE_E_INVALID = 14,        /* 422 */
    KUBE_E_TOO_MANY = 15,       /* 429 */
    KUBE_E_INTERNAL = 16,       /* 500 */
    KUBE_E_UNAVAILABLE = 17,    /* 502, 503 */
    KUBE_E_SERVER_TIMEOUT = 18, /* 504 */
    KUBE_E_OTHER = 19,
};

#define KUBE_ERR_REASON_MAX  64
#define KUBE_ERR_MESSAGE_MAX 512

/* A decoded error: the HTTP code (0 without a response), the Status reason
 * and message, and Retry-After when the server sent one. */
struct kube_error {
    enum kube_err_code code;
    int http_status;                    /* 0 when no response arrived */
    int64_t retry_after_ms;             /* -1 when absent */
    int maybe_applied;                  /* a write whose outcome is unknown */
    char reason[KUBE_ERR_REASON_MAX];   /* Status.reason ("Conflict"), may be "" */
    char message[KUBE_ERR_MESSAGE_MAX]; /* Status.message or a transport text */
};

/* Watch event types; explicit values (they are logged and counted). */
enum kube_event_type {
    KUBE_EV_ADDED = 0,
    KUBE_EV_MODIFIED = 1,
    KUBE_EV_DELETED = 2,
    KUBE_EV_BOOKMARK = 3,
    KUBE_EV_ERROR = 4,
};
#define KUBE_EV_COUNT 5

/* Patch flavours (their Content-Type). */
enum kube_patch_type {
    KUBE_PATCH_MERGE = 0,     /* application/merge-patch+json */
    KUBE_PATCH_JSON = 1,      /* application/json-patch+json */
    KUBE_PATCH_STRATEGIC = 2, /* application/strategic-merge-patch+json (built-ins) */
};

#endif
