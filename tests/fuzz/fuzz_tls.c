/* Fuzz target: arbitrary bytes as the contents of a kubernetes.io/tls
 * Secret and a CA bundle -> xlate_tls (our base64 decoder, the PEM block
 * scan, OpenSSL's PEM/X.509/key parsing through our wrappers, name
 * matching). The first byte splits the rest into tls.crt and tls.key.
 * Checks: a usable pair has at least one certificate; never crashes, never
 * leaks, never leaves an OpenSSL error behind. */
#include "cx_base64.h"
#include "xlate_tls.h"

#include <openssl/err.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 65536)
        return 0;
    size_t cut = (size_t)data[0] * (size - 1) / 255;
    const uint8_t *rest = data + 1;
    size_t n = size - 1;
    struct xl_arena a = {0};
    struct xl_secret s = {0};
    s.crt = malloc(cut + 1);
    s.key = malloc(n - cut + 1);
    memcpy(s.crt, rest, cut);
    memcpy(s.key, rest + cut, n - cut);
    s.crtlen = cut;
    s.keylen = n - cut;
    if (xlate_tls_check_pair(&a, &s) == 0) {
        if (s.state == XL_SECRET_OK && s.cert.nchain == 0)
            abort();
        if (s.state != XL_SECRET_OK && !s.problem)
            abort();
        for (size_t i = 0; i < s.cert.ndns; i++)
            (void)xlate_tls_cert_covers(&s.cert, s.cert.dns[i]);
        char names[200];
        xlate_tls_names_str(&s.cert, names, sizeof(names));
    }
    if (ERR_peek_error() != 0)
        abort();
    char msg[300];
    (void)xlate_tls_check_ca((const char *)rest, n, msg, sizeof(msg));
    uint8_t *out = malloc(CX_B64_DECODED_MAX(n) + 1);
    for (int mode = CX_B64_STD; mode <= CX_B64_URL; mode++) {
        long d = cx_b64_decode((const char *)rest, n, out, (enum cx_b64_mode)mode);
        if (d < -1 || d > (long)CX_B64_DECODED_MAX(n))
            abort();
    }
    free(out);
    /* names: the two halves as a certificate name and a host */
    char *x = strndup((const char *)s.crt, s.crtlen), *y = strndup((const char *)s.key, s.keylen);
    int c = xlate_tls_name_covers(x, y);
    if (c < 0 || c > 2)
        abort();
    free(x);
    free(y);
    free(s.crt);
    free(s.key);
    xlate_arena_free(&a);
    return 0;
}
