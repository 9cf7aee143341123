/*
 * ks_selector: Kubernetes label and field selectors, parsed and matched the
 * way kube-apiserver does (apimachinery's labels.Parse and
 * fields.ParseSelector), with the same error messages.
 *
 * This is kubesim's own implementation, independent of filters/: kubesim is
 * the oracle the client-side matcher is property-tested against. Pure code,
 * no I/O; any thread.
 */
#ifndef KS_SELECTOR_H
#define KS_SELECTOR_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

struct ks_lsel;
struct ks_fsel;

/* Parses a label selector. Returns the selector (caller frees with
 * ks_lsel_free; an empty selector matches everything), or NULL and writes
 * Kubernetes' message into |err|. */
struct ks_lsel *ks_lsel_parse(const char *s, char *err, size_t errlen);
void ks_lsel_free(struct ks_lsel *sel);
/* Does the label map |labels| (a JSON object of strings, or NULL) match? */
bool ks_lsel_match(const struct ks_lsel *sel, const cJSON *labels);
bool ks_lsel_empty(const struct ks_lsel *sel);

/* Parses a field selector ("a=b,c!=d"); NULL + message on error. */
struct ks_fsel *ks_fsel_parse(const char *s, char *err, size_t errlen);
void ks_fsel_free(struct ks_fsel *sel);
size_t ks_fsel_count(const struct ks_fsel *sel);
const char *ks_fsel_field(const struct ks_fsel *sel, size_t i);
/* Does the object match? |get| returns the value of a field for |obj|
 * (a field the object lacks is ""). */
bool ks_fsel_match(const struct ks_fsel *sel, const char *(*get)(const void *obj, const char *f),
                   const void *obj);

/* Validators shared with object validation. Each returns 0 if valid, or -1
 * and writes the joined messages ("; ") into |err|. */
int ks_valid_qualified_name(const char *s, char *err, size_t errlen);
int ks_valid_label_value(const char *s, char *err, size_t errlen);
int ks_valid_dns1123_subdomain(const char *s, char *err, size_t errlen);
int ks_valid_dns1123_label(const char *s, char *err, size_t errlen);
int ks_valid_dns1035_label(const char *s, char *err, size_t errlen);
int ks_valid_configmap_key(const char *s, char *err, size_t errlen);

/* Appends |s| quoted the way Go's %q does (for validation messages). */
struct cx_buf;
void ks_go_quote(struct cx_buf *b, const char *s);

#endif
