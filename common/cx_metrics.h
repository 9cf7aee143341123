/*
 * cx_metrics: the process-wide Prometheus registry (counters, gauges,
 * histograms with labels) and its text exposition (format 0.0.4).
 *
 * A family is registered once by name (registering the same name and type
 * again returns the same family, so modules can register lazily). A series is
 * one combination of label values; its pointer stays valid for the life of
 * the process, so hot paths look a series up once and then update it with
 * lock-free atomics. Every function is thread-safe: the election thread, the
 * translator worker and the main loop all update metrics.
 *
 * Naming: counters end in `_total`; units in the name (`_seconds`,
 * `_bytes`). Label values are escaped on output, never trusted.
 */
#ifndef CX_METRICS_H
#define CX_METRICS_H

#include "cx_buf.h"

#include <stddef.h>

enum cx_metric_type {
    CX_METRIC_COUNTER = 0,
    CX_METRIC_GAUGE = 1,
    CX_METRIC_HISTOGRAM = 2,
};

struct cx_metric; /* a family: name, help, label names, type */
struct cx_series; /* one label combination of a family */

#define CX_METRIC_MAX_LABELS  8
#define CX_METRIC_MAX_BUCKETS 32

/* Registers (or returns the already registered) family. |labels| is a
 * comma-separated list of label names ("kind,verdict,reason") or NULL/"" for
 * none. Returns NULL if the name or labels are invalid, if the name is
 * already registered with another type or other labels, or if memory ran out
 * — a programming error the caller should treat as fatal at start-up. */
struct cx_metric *cx_counter(const char *name, const char *help, const char *labels);
struct cx_metric *cx_gauge(const char *name, const char *help, const char *labels);
/* |bounds|: |n| (<= CX_METRIC_MAX_BUCKETS) strictly increasing upper bounds;
 * the +Inf bucket is implicit. */
struct cx_metric *cx_histogram(const char *name, const char *help, const char *labels,
                               const double *bounds, size_t n);

/* Default latency buckets in seconds: 0.5 ms .. 10 s. */
extern const double cx_metric_latency_buckets[];
extern const size_t cx_metric_latency_nbuckets;

/* The series for the given label values: exactly as many const char *
 * arguments as the family has labels (none for an unlabelled family).
 * Creates it at zero on first use. NULL only if memory ran out. */
struct cx_series *cx_metric_with(struct cx_metric *m, ...);
struct cx_series *cx_metric_withv(struct cx_metric *m, const char *const *values);

void cx_series_inc(struct cx_series *s);
void cx_series_add(struct cx_series *s, double v);     /* counters: v >= 0 */
void cx_series_set(struct cx_series *s, double v);     /* gauges */
void cx_series_observe(struct cx_series *s, double v); /* histograms */
double cx_series_value(const struct cx_series *s);     /* counter/gauge value; histogram count */
double cx_series_sum(const struct cx_series *s);       /* histogram sum */

/* Hides a series from the exposition (e.g. a Gateway that went away). Its
 * pointer stays valid; using it again (set/add/with) makes it visible. */
void cx_series_hide(struct cx_series *s);

/* Removes a series from its family and frees it: for series whose label
 * values keep changing (a snapshot version), which hiding would keep
 * forever. The caller must hold the only pointer to |s|: no other thread
 * may use it now or later (a later cx_metric_with() for the same values
 * creates a fresh series). NULL is ignored. */
void cx_series_remove(struct cx_series *s);

/* Convenience for cold paths: look up + update in one call; label values
 * follow as in cx_metric_with. */
void cx_metric_inc(struct cx_metric *m, ...);
void cx_metric_set(struct cx_metric *m, double v, ...);
void cx_metric_observe(struct cx_metric *m, double v, ...);

/* Value of a series without creating it: 0 if it does not exist. For tests
 * and for the admin pages. Label values as in cx_metric_with. */
double cx_metric_get(struct cx_metric *m, ...);

/* Sum of every series of the family (e.g. all verdicts of one kind). */
double cx_metric_total(struct cx_metric *m);

/* A gauge whose value is read at exposition time (RSS, uptime...). |fn| is
 * called under the registry lock from the exposition's thread; it must be
 * quick and thread-safe. Unlabelled. Returns 0, or -1 on a bad name. */
int cx_gauge_func(const char *name, const char *help, double (*fn)(void *arg), void *arg);
/* The same for a counter read at exposition time (CPU seconds...). */
int cx_counter_func(const char *name, const char *help, double (*fn)(void *arg), void *arg);

/* Appends the Prometheus text exposition of every family (sorted by name,
 * series sorted by label values) to |out|. Returns 0 or -1 (cap reached). */
__attribute__((warn_unused_result)) int cx_metrics_render(struct cx_buf *out);

/* Content-Type of the exposition. */
#define CX_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

#endif
