/*
 * xlate_render: a snapshot as JSON, for people and for golden files
 * (`coxswain translate`, tests/data/translator/). Resources are shown as
 * proto3 JSON Any values ("@type" first), exactly as a REST-JSON xDS client
 * would see them, private keys redacted. Deterministic: the same snapshot always gives the same
 * bytes. Pure; thread-safe.
 */
#ifndef XLATE_RENDER_H
#define XLATE_RENDER_H

#include "cx_buf.h"
#include "xlate_snapshot.h"

/* Appends {"version": ..., "groups": [{name, mode, listeners: {version,
 * resources: [...]}, routes, clusters, endpoints, secrets (when any)},
 * ...]} (pretty, two-space
 * indents, starting at indent |depth|). Returns 0, or -1 (cap or memory) or
 * -2 (a resource did not decode: a bug). */
__attribute__((warn_unused_result)) int xlate_render_groups(const struct xlate_snapshot *s,
                                                            int depth, struct cx_buf *out);

/* The same with extra xlate_pbjson flags: XLATE_PBJSON_SHOW_SECRETS shows private
 * keys, which every other rendering replaces with "[redacted]". */
__attribute__((warn_unused_result)) int xlate_render_groups_flags(const struct xlate_snapshot *s,
                                                                  int depth, unsigned flags,
                                                                  struct cx_buf *out);

/* Appends the reports as a JSON array of {kind, namespace, name, state,
 * reason, message}. Returns 0 or -1. */
__attribute__((warn_unused_result)) int xlate_render_reports(const struct xlate_snapshot *s,
                                                             int depth, struct cx_buf *out);

/* Pieces of the rendering, for encoders that stream the same bytes (the
 * ProxySnapshot publisher): the JSON key of each resource type, a newline
 * with |depth| two-space indents, and one "key": "value" member (a comma
 * after it unless |last|). Return 0 or -1. */
extern const char *const xlate_render_type_keys[XDS_TYPE_COUNT];
int xlate_render_indent(struct cx_buf *b, int depth);
int xlate_render_kv_str(struct cx_buf *b, int depth, const char *k, const char *v, int last);

/* Counts of reports by state. */
void xlate_report_counts(const struct xlate_snapshot *s, size_t *accepted, size_t *warning,
                         size_t *rejected);

#endif
