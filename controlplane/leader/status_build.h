/*
 * status_build: the desired .status of an object from its translation
 * report, and the comparison that makes the status writer level-triggered
 * (write only what differs). Pure: no I/O, no clock (time is an input).
 *
 * Shape (every coxswain.dev kind):
 *   status: {state: Accepted|Warning|Rejected, observedGeneration: N,
 *            conditions: [{type: Accepted, status: "True"|"False", reason,
 *                          message, observedGeneration, lastTransitionTime},
 *                         ...extra conditions (e.g. a Gateway's XdsAccepted)]}
 * lastTransitionTime is kept from the current status while a condition's
 * status does not change, as Kubernetes conventions require.
 */
#ifndef STATUS_BUILD_H
#define STATUS_BUILD_H

#include "xlate_snapshot_types.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* Kubernetes caps condition messages at 32768 bytes. */
#define STATUS_MESSAGE_MAX 32768

struct status_condition {
    const char *type;   /* CamelCase, e.g. "XdsAccepted" */
    int ok;             /* status "True" / "False" */
    const char *reason; /* CamelCase */
    const char *message;
};

/* Returns the desired status object (caller frees), or NULL if memory ran
 * out. |current| is the object's current .status (NULL if none). */
cJSON *status_desired(const struct xlate_report *r, const struct status_condition *extra,
                      size_t nextra, const cJSON *current, int64_t now_wall_ns);

/* 1 if |current| already holds everything |desired| says (ignoring
 * lastTransitionTime), else 0. */
int status_up_to_date(const cJSON *desired, const cJSON *current);

#endif
