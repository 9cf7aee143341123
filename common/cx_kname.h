/*
 * cx_kname: the one check of Kubernetes object and namespace names, as
 * k8s.io/apimachinery/pkg/util/validation has them: a DNS-1123 label
 * (namespaces, Service names and ports; at most 63) and a DNS-1123
 * subdomain (most object names, lease names, label-key prefixes; at most
 * 253, dot-separated labels each starting and ending alphanumeric), with
 * Kubernetes' own messages.
 *
 * Names come from objects, flags and the API server: every check takes a
 * length, reads no further, and refuses what is not plain lower-case
 * ASCII. Pure functions: any thread.
 */
#ifndef CX_KNAME_H
#define CX_KNAME_H

#include <stddef.h>
#include <string.h>

#define CX_KNAME_LABEL_MAX     63
#define CX_KNAME_SUBDOMAIN_MAX 253

#define CX_KNAME_LABEL_FMT     "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
#define CX_KNAME_SUBDOMAIN_FMT CX_KNAME_LABEL_FMT "(\\." CX_KNAME_LABEL_FMT ")*"

/* Kubernetes' validation.RegexError for each format (Go's double space
 * after "'my-name',"), as IsDNS1123Label and IsDNS1123Subdomain word it. */
#define CX_KNAME_LABEL_ERR                                                                       \
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and " \
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "   \
    "used for validation is '" CX_KNAME_LABEL_FMT "')"
#define CX_KNAME_SUBDOMAIN_ERR                                                                   \
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or " \
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "     \
    "used for validation is '" CX_KNAME_SUBDOMAIN_FMT "')"

/* 1 if the |n| bytes at |s| match CX_KNAME_LABEL_FMT / CX_KNAME_SUBDOMAIN_FMT
 * whole, whatever their length (Kubernetes reports the length apart);
 * else 0. */
int cx_kname_label_fmt(const char *s, size_t n);
int cx_kname_subdomain_fmt(const char *s, size_t n);

/* 1 if the |n| bytes at |s| are a valid DNS-1123 label / subdomain: the
 * format and the length; else 0. */
int cx_kname_label(const char *s, size_t n);
int cx_kname_subdomain(const char *s, size_t n);

/* The same for a NUL-terminated string; NULL is no name. */
static inline int cx_kname_is_label(const char *s)
{
    return s && cx_kname_label(s, strlen(s));
}

static inline int cx_kname_is_subdomain(const char *s)
{
    return s && cx_kname_subdomain(s, strlen(s));
}

/* Kubernetes' errors for the |n| bytes at |s| as a label / subdomain,
 * joined with "; " into |msg| (|msglen| bytes, NUL-terminated, may be cut):
 * the length ("must be no more than 63 characters") and then the format
 * (for a label that would be a valid subdomain: "must not contain dots").
 * Returns 0 (valid: |msg| is "") or -1. */
int cx_kname_label_msg(const char *s, size_t n, char *msg, size_t msglen);
int cx_kname_subdomain_msg(const char *s, size_t n, char *msg, size_t msglen);

#endif
