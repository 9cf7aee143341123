/*
 * cx_time: clocks, Kubernetes time formats and Go-style durations.
 *
 * Monotonic time is what every timeout and expiry is judged on; wall time is
 * only ever written into objects (renewTime, creationTimestamp) and logs.
 * All functions are thread-safe.
 */
#ifndef CX_TIME_H
#define CX_TIME_H

#include <stddef.h>
#include <stdint.h>

#define CX_NS_PER_MS INT64_C(1000000)
#define CX_NS_PER_S  INT64_C(1000000000)

/* CLOCK_MONOTONIC in nanoseconds / milliseconds. */
int64_t cx_mono_ns(void);
int64_t cx_mono_ms(void);

/* CLOCK_REALTIME in nanoseconds since the Unix epoch. */
int64_t cx_wall_ns(void);

/* Formats |wall_ns| as RFC 3339 in UTC: "2006-01-02T15:04:05Z" (metav1.Time,
 * whole seconds). |out| must hold CX_TIME_RFC3339_LEN bytes. */
#define CX_TIME_RFC3339_LEN 21
void cx_time_format_rfc3339(int64_t wall_ns, char *out, size_t outlen);

/* Formats |wall_ns| as a Kubernetes MicroTime in UTC:
 * "2006-01-02T15:04:05.000000Z" (exactly six fractional digits). */
#define CX_TIME_MICRO_LEN 28
void cx_time_format_micro(int64_t wall_ns, char *out, size_t outlen);

/* Parses RFC 3339 ("...T...Z", optional fraction of up to 9 digits, "Z" or
 * "+hh:mm"/"-hh:mm"). Returns 0 and sets *wall_ns, or -1 if |s| is not a
 * valid timestamp. */
__attribute__((warn_unused_result)) int cx_time_parse_rfc3339(const char *s, int64_t *wall_ns);

/* Parses a Go duration ("15s", "500ms", "1m30s", "1.5h", "0"). Units: ns,
 * us (or µs), ms, s, m, h. Negative durations are refused. Returns 0 and sets
 * *ns, or -1 and writes a message saying what is wrong into |err|. */
__attribute__((warn_unused_result)) int cx_duration_parse(const char *s, int64_t *ns, char *err,
                                                          size_t errlen);

/* Formats |ns| the way Go prints durations ("15s", "500ms", "1m30s", "0s"). */
void cx_duration_format(int64_t ns, char *out, size_t outlen);

#endif
