/*
 * cx_hash: content hashes for versions and digests.
 *
 * SHA-256 (OpenSSL) where a hash is published (xDS versions, snapshot
 * versions), FNV-1a 64 where only this process compares values.
 * Thread-safe.
 */
#ifndef CX_HASH_H
#define CX_HASH_H

#include <stddef.h>
#include <stdint.h>

#define CX_SHA256_LEN     32
#define CX_SHA256_HEX_LEN 65

void cx_sha256(const void *data, size_t len, uint8_t out[CX_SHA256_LEN]);

/* Lower-case hex of the SHA-256 of |data|, truncated to |hexchars| (<= 64)
 * characters and NUL-terminated; |out| holds hexchars + 1 bytes. */
void cx_sha256_hex(const void *data, size_t len, char *out, size_t hexchars);

/* A SHA-256 context for many small digests in a row (no allocation per
 * digest, unlike cx_sha256's EVP_Digest). One thread at a time; NULL where
 * one is taken means cx_sha256. */
struct cx_sha256_ctx;
/* Caller frees with cx_sha256_ctx_free; NULL when memory ran out. */
struct cx_sha256_ctx *cx_sha256_ctx_new(void);
void cx_sha256_ctx_free(struct cx_sha256_ctx *h);
void cx_sha256_with(struct cx_sha256_ctx *h, const void *data, size_t len,
                    uint8_t out[CX_SHA256_LEN]);
/* cx_sha256_hex with |h|. */
void cx_sha256_hex_with(struct cx_sha256_ctx *h, const void *data, size_t len, char *out,
                        size_t hexchars);

#define CX_FNV64_INIT UINT64_C(0xcbf29ce484222325)
uint64_t cx_fnv64(uint64_t h, const void *data, size_t len);

#endif
