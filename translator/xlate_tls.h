/*
 * xlate_tls: certificates for the translator — parses what a
 * kubernetes.io/tls Secret holds (a PEM chain and its private key) and CA
 * bundles with OpenSSL, says which host names a certificate covers
 * (subjectAltName DNS names, else the subject CN; "*.example.com" covers
 * one label), and where a certificate stands in its validity period at a
 * given instant.
 *
 * Pure: no I/O and no clock (the instant is an argument); OpenSSL's error
 * queue is the calling thread's and is left empty. Thread-safe.
 */
#ifndef XLATE_TLS_H
#define XLATE_TLS_H

#include "xlate_api_types.h"
#include "xlate_util.h"

#include <stddef.h>
#include <stdint.h>

/* Decoded tls.crt / tls.key larger than this are refused (Kubernetes caps a
 * Secret at 1 MiB anyway). */
#define XL_TLS_MAX_PEM (1u << 20)

/* Fills s->state, s->problem and s->cert from s->crt / s->key (already
 * decoded): the chain must hold at least one PEM certificate, the key must
 * be a readable PEM private key (not encrypted) matching the first
 * certificate. Allocates from |a|. Returns 0, or -1 when memory ran out. */
__attribute__((warn_unused_result)) int xlate_tls_check_pair(struct xl_arena *a,
                                                             struct xl_secret *s);

/* The PEM certificates in a CA bundle: their number, or 0 with the reason
 * in |msg| when none is readable (or one is garbage). */
size_t xlate_tls_check_ca(const char *pem, size_t len, char *msg, size_t msglen);

/* 2 if certificate name |name| ("a.example.com", "*.example.com") equals
 * host |host| (case-insensitive; a wildcard domain is covered by the same
 * wildcard name), 1 if the wildcard name covers it (exactly one label,
 * never the bare parent), 0 if not. */
int xlate_tls_name_covers(const char *name, const char *host);

/* The best xlate_tls_name_covers() over the certificate's DNS names (its CN
 * when it has none). */
int xlate_tls_cert_covers(const struct xl_cert_info *c, const char *host);

/* Where |now| falls: XL_CERT_NOT_YET_VALID, XL_CERT_VALID or
 * XL_CERT_EXPIRED (a certificate is valid from not_before through
 * not_after, both included). now == 0 (not checked) counts as valid. */
enum xl_cert_phase {
    XL_CERT_NOT_YET_VALID = 0,
    XL_CERT_VALID = 1,
    XL_CERT_EXPIRED = 2,
};
enum xl_cert_phase xlate_tls_phase(const struct xl_cert_info *c, int64_t now);

/* The next instant after |now| at which xlate_tls_phase changes, or 0. */
int64_t xlate_tls_next_change(const struct xl_cert_info *c, int64_t now);

/* "2025-03-01T12:00:00Z". */
void xlate_tls_time_str(int64_t t, char *buf, size_t n);

/* The names a certificate carries, for messages: "a.example.com,
 * *.example.com" (at most |n| bytes, "..." when cut). */
void xlate_tls_names_str(const struct xl_cert_info *c, char *buf, size_t n);

/* The notAfter (Unix seconds) of the first certificate of PEM chain |pem|,
 * into *out. Returns 0, or -1 when no certificate parses. */
int xlate_tls_pem_not_after(const uint8_t *pem, size_t len, int64_t *out);

/* 1 if an object of namespace |from| may use an object of namespace |to|
 * whose XLATE_ALLOW_REFS_ANNOTATION is |allow| (may be NULL): the same
 * namespace, or listed, or "*". */
int xlate_tls_ref_allowed(const char *from, const char *to, const char *allow);

#endif
