/*
 * election_report: what the elector says about its failing requests, so
 * that a failure is never silent and never floods the log. Each distinct
 * failure (verb, resource, object, HTTP status, class and the server's
 * message) gives one line at once; the same failure again gives at most one
 * summary line per ELECTION_REPORT_REPEAT_NS ("... again, 37 times in
 * 60 s"); the first success of a verb after its failures gives one line
 * saying so (a GET that works says nothing about the UPDATE that fails).
 * It also keeps the last failure as text (stop reasons, /debug/leader).
 *
 * Pure: the caller passes the time and logs the lines it gets back. One
 * owner (the elector thread); no locking.
 */
#ifndef ELECTION_REPORT_H
#define ELECTION_REPORT_H

#include "election_types.h"

#include <stddef.h>
#include <stdint.h>

#define ELECTION_REPORT_SLOTS     8
#define ELECTION_REPORT_REPEAT_NS (INT64_C(60) * 1000000000)
#define ELECTION_REPORT_LINE_MAX  1024
#define ELECTION_REPORT_TEXT_MAX  640

/* One failed request (or watch). Strings are borrowed for the call. */
struct election_failure {
    const char *verb;     /* "get", "create", "update", "list", "watch" */
    const char *resource; /* "leases" */
    const char *ns;
    const char *name;
    const char *purpose; /* why it was sent ("renew"), or NULL */
    int http_status;     /* 0 without an answer */
    enum election_err_class cls;
    const char *message; /* the server's message, or a transport text */
};

struct election_report_slot {
    uint64_t key; /* 0: free */
    char verb[8];
    int64_t last_logged;
    uint64_t since_logged; /* repeats not logged yet */
    uint64_t total;
};

struct election_report {
    struct election_report_slot slot[ELECTION_REPORT_SLOTS];
    char last[ELECTION_REPORT_TEXT_MAX];
    int last_http;
    enum election_err_class last_cls;
};

enum election_report_say {
    ELECTION_SAY_NOTHING = 0, /* a repeat inside the quiet period */
    ELECTION_SAY_FIRST = 1,   /* a failure not seen since the last success */
    ELECTION_SAY_AGAIN = 2,   /* a repeat, summarized */
};

void election_report_init(struct election_report *r);

/* A request failed at |now_ns|. Returns what to log and writes the line
 * into |line| (|cap| bytes; empty for ELECTION_SAY_NOTHING). */
enum election_report_say election_report_failure(struct election_report *r, int64_t now_ns,
                                                 const struct election_failure *f, char *line,
                                                 size_t cap);

/* A |verb| request succeeded. Returns true, with a line in |line|, when
 * failures of that verb had been reported since its last success (and
 * forgets them: the next one is news again). */
bool election_report_success(struct election_report *r, const char *verb, const char *resource,
                             char *line, size_t cap);

/* A stable lower-case name of |cls| ("forbidden"), for logs and metric
 * labels. */
const char *election_err_class_name(enum election_err_class cls);

/* The last failure as "<verb> <resource> <ns>/<name>: HTTP 403 (forbidden):
 * <message>", or "" once every verb that failed has succeeded since. */
const char *election_report_last(const struct election_report *r);

#endif
