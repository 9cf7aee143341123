/*
 * cx_base64: the one base64 decoder, over OpenSSL's EVP_DecodeBlock.
 *
 * Three inputs need three dialects, checked here before OpenSSL sees the
 * bytes (EVP_DecodeBlock itself skips surrounding whitespace and counts
 * padding as zero bytes):
 *   CX_B64_STD      RFC 4648's standard alphabet, padding required, nothing
 *                   else: Secret data as Kubernetes stores it;
 *   CX_B64_LENIENT  the standard or URL alphabet, whitespace anywhere and
 *                   padding optional: kubeconfig *-data fields, which people
 *                   and tools write by hand;
 *   CX_B64_URL      the URL alphabet without padding: JWT segments.
 * Input is untrusted: every call takes a length and reads no further.
 * Pure functions: any thread.
 */
#ifndef CX_BASE64_H
#define CX_BASE64_H

#include <stddef.h>
#include <stdint.h>

enum cx_b64_mode { CX_B64_STD, CX_B64_LENIENT, CX_B64_URL };

/* Room |out| needs for |len| bytes of input in any mode. */
#define CX_B64_DECODED_MAX(len) (((len) + 3) / 4 * 3)

/* Decodes the |len| bytes at |in| into |out| (CX_B64_DECODED_MAX(len)
 * bytes). Returns the decoded length, or -1 if |in| is not base64 of that
 * kind (or memory ran out). */
long cx_b64_decode(const char *in, size_t len, uint8_t *out, enum cx_b64_mode mode);

#endif
