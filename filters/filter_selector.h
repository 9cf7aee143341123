/*
 * filter_selector: Kubernetes label selectors and field selectors.
 *
 * Label selectors: the whole grammar of k8s.io/apimachinery/pkg/labels
 * (=, ==, !=, in, notin, exists, !key, and the gt/lt integer comparisons;
 * comma = AND), with Kubernetes' validation of keys and values and its
 * error messages; built from a string or from a JSON metav1.LabelSelector
 * (matchLabels + matchExpressions). Field selectors: pkg/fields grammar
 * (=, ==, !=, backslash escapes), restricted to the fields the caller allows.
 *
 * Both parse without I/O, never crash on any input (a fuzz target checks),
 * and give a canonical string (sorted, deduplicated, "==" written "=") that
 * is what we push down to the API server as labelSelector/fieldSelector.
 *
 * A parsed selector is immutable: any thread may match against it at once.
 */
#ifndef FILTER_SELECTOR_H
#define FILTER_SELECTOR_H

#include "cx_buf.h"
#include "filter_types.h"

#include <cjson/cJSON.h>

struct filter_selector;       /* a label selector */
struct filter_field_selector; /* a field selector */

/* ---- label selectors ---------------------------------------------------- */

/* Parses |s| (NUL-terminated; "" or blanks select everything). On success
 * stores a new selector in |*out| (caller frees with filter_selector_free)
 * and returns FILTER_OK; otherwise returns FILTER_EINVAL (|err| says what
 * and where; |err| may be NULL) or FILTER_ENOMEM, and |*out| is NULL. */
__attribute__((warn_unused_result)) int
filter_selector_parse(const char *s, struct filter_selector **out, struct filter_error *err);

/* Builds a selector from a metav1.LabelSelector JSON object
 * ({"matchLabels":{k:v},"matchExpressions":[{"key","operator","values"}]},
 * operators In, NotIn, Exists, DoesNotExist). As in Kubernetes'
 * LabelSelectorAsSelector: NULL or JSON null selects nothing, {} selects
 * everything. Returns as filter_selector_parse. */
__attribute__((warn_unused_result)) int
filter_selector_from_json(const cJSON *ls, struct filter_selector **out, struct filter_error *err);

/* A selector that matches every object (never NULL unless memory ran out). */
struct filter_selector *filter_selector_everything(void);

void filter_selector_free(struct filter_selector *sel);

/* 1 if |sel| matches the labels in |labels| (a JSON object of strings, e.g.
 * metadata.labels; NULL means no labels), else 0. Non-string values count
 * as absent. A NULL selector matches everything. */
int filter_selector_matches(const struct filter_selector *sel, const cJSON *labels);

/* Label lookup for filter_selector_matches_fn: the value of |key| or NULL
 * if the object has no such label. */
typedef const char *(*filter_label_get_fn)(void *user_data, const char *key);
int filter_selector_matches_fn(const struct filter_selector *sel, filter_label_get_fn get,
                               void *user_data);

/* 1 if |sel| has no requirement (matches everything), else 0. */
int filter_selector_is_everything(const struct filter_selector *sel);
/* 1 if |sel| matches nothing (from a null metav1.LabelSelector), else 0.
 * Its string form is "", like Kubernetes' Nothing(): never push it down. */
int filter_selector_is_nothing(const struct filter_selector *sel);

/* Appends the canonical string form: requirements sorted by key then text,
 * duplicates removed, "==" written "=", in/notin values sorted. Parsing it
 * gives an equivalent selector with the same canonical form. Returns 0, or
 * -1 if |out|'s cap was reached or memory ran out. */
__attribute__((warn_unused_result)) int filter_selector_string(const struct filter_selector *sel,
                                                               struct cx_buf *out);

/* Introspection (for the translator's reports and for tests). */
size_t filter_selector_count(const struct filter_selector *sel);
/* Requirement |i| (< count): its key, operator and sorted values. Returns 0
 * or -1 if i is out of range. Pointers live as long as |sel|. */
int filter_selector_get(const struct filter_selector *sel, size_t i, const char **key,
                        enum filter_op *op, const char *const **values, size_t *nvalues);

/* Kubernetes' checks, usable alone: 0 if |key| is a valid label key
 * (optional DNS-1123 subdomain prefix <= 253 + "/" + name <= 63) or |value|
 * a valid label value (<= 63, may be empty); else -1 and, if |msg| is not
 * NULL, Kubernetes' message (its errors joined with "; ") in |msg|. */
int filter_label_key_valid(const char *key, char *msg, size_t msglen);
int filter_label_value_valid(const char *value, char *msg, size_t msglen);

/* ---- field selectors ---------------------------------------------------- */

/* The fields the API server supports, by kind; the list also picks the
 * wording of the refusal, as each kind's conversion function words it:
 * built-ins with the default conversion (ConfigMap, Lease, Service,
 * EndpointSlice): metadata.name, metadata.namespace, refused with
 * `"x" is not a known field selector: only "metadata.name", "metadata.namespace"`; */
extern const char *const filter_fields_default[];
/* custom resources: the same fields, refused with `field label not supported: x`; */
extern const char *const filter_fields_custom[];
/* Secrets: also "type", refused like custom resources. */
extern const char *const filter_fields_secret[];

/* Parses |s| ("" selects everything). |allowed| is a NULL-terminated list of
 * field names the server supports for the kind (NULL: filter_fields_default);
 * any other field is refused, as the API server would refuse it (the
 * wording follows which of the lists above |allowed| is). Returns as
 * filter_selector_parse; caller frees with filter_field_selector_free. */
__attribute__((warn_unused_result)) int
filter_field_selector_parse(const char *s, const char *const *allowed,
                            struct filter_field_selector **out, struct filter_error *err);

void filter_field_selector_free(struct filter_field_selector *fs);

/* 1 if |obj| matches: a field is the string at its dotted path in |obj|
 * ("metadata.name", "type"), "" when absent. A NULL selector matches. */
int filter_field_selector_matches(const struct filter_field_selector *fs, const cJSON *obj);
/* The same with the fields' values from |get| ("" when absent). */
int filter_field_selector_matches_fn(const struct filter_field_selector *fs,
                                     const char *(*get)(void *user_data, const char *field),
                                     void *user_data);

int filter_field_selector_is_everything(const struct filter_field_selector *fs);

/* Appends the canonical form (terms sorted, duplicates removed, "=="
 * written "=", values escaped with backslashes as pkg/fields does).
 * Returns 0 or -1. */
__attribute__((warn_unused_result)) int
filter_field_selector_string(const struct filter_field_selector *fs, struct cx_buf *out);

/* Appends |value| escaped for a field selector (\ , = get a backslash). */
__attribute__((warn_unused_result)) int filter_field_escape(struct cx_buf *out, const char *value);

#endif
