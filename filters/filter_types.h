/*
 * filter_types: constants, enums and plain structs of the filters module
 * (selectors, scoping, exclusions, change significance). Prototypes live in
 * filter_selector.h and filter.h. Includes no other module header.
 */
#ifndef FILTER_TYPES_H
#define FILTER_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* Return codes of every filter_* function that can fail. */
enum filter_rc {
    FILTER_OK = 0,
    FILTER_EINVAL = -1, /* the input is invalid; the filter_error says why */
    FILTER_ENOMEM = -2, /* memory ran out */
};

/* Longest selector string (label or field) we accept: far above anything
 * real (a URL carrying it would be refused by most servers first), and a
 * bound on the memory a hostile selector can make us allocate. */
#define FILTER_SELECTOR_MAX_BYTES 65536

/* Longest error message kept; longer ones (a message quoting a huge bad
 * key) are truncated, never overflowed. */
#define FILTER_ERR_MAX 2048

/* What went wrong and where. |msg| uses Kubernetes' wording where it has
 * one (apimachinery v1.20-v1.33: pkg/labels, pkg/fields,
 * pkg/util/validation). |offset| is the byte offset in the selector string
 * of the token the message is about (0 for JSON selectors and configs,
 * where |msg| names the field instead). */
struct filter_error {
    char msg[FILTER_ERR_MAX];
    size_t offset;
};

/* Label selector operators (pkg/selection). */
enum filter_op {
    FILTER_OP_EXISTS = 0,        /* key */
    FILTER_OP_NOT_EXISTS = 1,    /* !key */
    FILTER_OP_EQUALS = 2,        /* key=v */
    FILTER_OP_DOUBLE_EQUALS = 3, /* key==v */
    FILTER_OP_NOT_EQUALS = 4,    /* key!=v (also matches objects without key) */
    FILTER_OP_IN = 5,            /* key in (v1,v2) */
    FILTER_OP_NOT_IN = 6,        /* key notin (v1,v2) (also matches without key) */
    FILTER_OP_GT = 7,            /* key>N (integers) */
    FILTER_OP_LT = 8,            /* key<N */
};

/* The label every kind honours: objects carrying it with this exact value
 * never reach the translator. */
#define FILTER_IGNORE_LABEL       "coxswain.dev/ignore"
#define FILTER_IGNORE_LABEL_VALUE "true"

/* The annotation a ConfigMap lock carries (client-go's resourcelock). */
#define FILTER_LEADER_ANNOTATION "control-plane.alpha.kubernetes.io/leader"

/* Watch event types, as the informer hands them over. */
enum filter_event_type {
    FILTER_EV_ADDED = 1,
    FILTER_EV_MODIFIED = 2,
    FILTER_EV_DELETED = 3,
};

enum filter_verdict {
    FILTER_PASS = 0, /* the store changes (see filter_store_action) */
    FILTER_DROP = 1, /* nothing happens downstream */
};

/* Why. The verdict follows from the reason; FILTER_REASON_COUNT sizes
 * counter tables. Keep filter_reason_name() in step. */
enum filter_reason {
    /* pass */
    FILTER_R_ADDED = 0,            /* new in-scope object */
    FILTER_R_CHANGED = 1,          /* in-scope object whose digest changed */
    FILTER_R_DELETED = 2,          /* stored object deleted */
    FILTER_R_STARTED_MATCHING = 3, /* came into scope: an add for the store */
    FILTER_R_STOPPED_MATCHING = 4, /* left scope: a delete for the store */
    /* drop */
    FILTER_R_EXCLUDED_LOCK = 5,          /* the election's lock object */
    FILTER_R_IGNORED_LABEL = 6,          /* labelled coxswain.dev/ignore=true */
    FILTER_R_OUT_OF_SCOPE_NAMESPACE = 7, /* namespace not watched */
    FILTER_R_SELECTOR_MISMATCH = 8,      /* label selector does not match */
    FILTER_R_FIELD_MISMATCH = 9,         /* field selector does not match */
    FILTER_R_INSIGNIFICANT = 10,         /* digest unchanged */
    FILTER_R_NOT_STORED = 11,            /* delete of an object the store lacks */
    FILTER_R_MALFORMED = 12,             /* no metadata.name, or not an object */
    FILTER_R_UNREFERENCED = 13,          /* a Secret/ConfigMap nothing stored refers to */
    FILTER_REASON_COUNT = 14,
};

/* What the store must do with the event's object. */
enum filter_store_action {
    FILTER_STORE_NONE = 0,
    FILTER_STORE_ADD = 1,    /* insert the new object (with its digest) */
    FILTER_STORE_UPDATE = 2, /* replace the stored object (with its digest) */
    FILTER_STORE_DELETE = 3, /* remove the stored object */
};

struct filter_decision {
    enum filter_verdict verdict;
    enum filter_reason reason;
    enum filter_store_action action;
    /* Digest of the new object: set (and has_digest = 1) for ADD and
     * UPDATE, and for drops where it was computed (insignificant). The
     * store keeps it next to the object and hands it back as old_digest. */
    uint64_t digest;
    int has_digest;
};

#endif
