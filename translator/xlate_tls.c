#include "xlate_tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- OpenSSL helpers ------------------------------------------------------------ */

/* The reason of the first (root) OpenSSL error, and an empty queue after. */
static const char *ssl_reason(char *buf, size_t n)
{
    unsigned long e = ERR_peek_error();
    const char *r = e ? ERR_reason_error_string(e) : NULL;
    snprintf(buf, n, "%s", r ? r : "unreadable");
    ERR_clear_error();
    return buf;
}

/* Never ask for a password (an encrypted key is refused, not prompted). */
static int no_password(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return -1;
}

/* Checks that every PEM block of |pem| is a CERTIFICATE: a private key
 * pasted into tls.crt (a "combined PEM") must not end up in the certificate
 * chain, which is shown unredacted everywhere. Returns 0, or -1 with the
 * offending label in |label|. */
static int only_certificates(const char *pem, size_t len, char *label, size_t n)
{
    static const char begin[] = "-----BEGIN ";
    const char *p = pem, *end = pem + len;
    while (p < end) {
        const char *b = memmem(p, (size_t)(end - p), begin, sizeof(begin) - 1);
        if (!b)
            return 0;
        const char *l = b + sizeof(begin) - 1;
        const char *dash = memchr(l, '-', (size_t)(end - l));
        if (!dash)
            return 0; /* a truncated header: the parser will say so */
        size_t ll = (size_t)(dash - l);
        if (!(ll == 11 && memcmp(l, "CERTIFICATE", 11) == 0)) {
            snprintf(label, n, "%.*s", (int)(ll > 40 ? 40 : ll), l);
            return -1;
        }
        p = dash;
    }
    return 0;
}

static int64_t asn1_time(const ASN1_TIME *t)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    if (!t || ASN1_TIME_to_tm(t, &tm) != 1)
        return 0;
    return (int64_t)timegm(&tm);
}

static char *lower_dup(struct xl_arena *a, const unsigned char *s, size_t n)
{
    char *r = xlate_strndup(a, (const char *)s, n);
    for (size_t i = 0; r && i < n; i++)
        if (r[i] >= 'A' && r[i] <= 'Z')
            r[i] = (char)(r[i] - 'A' + 'a');
    return r;
}

/* Names and validity of |x| into |c|. Returns 0 or -1 (memory). */
static int cert_info(struct xl_arena *a, X509 *x, struct xl_cert_info *c)
{
    c->not_before = asn1_time(X509_get0_notBefore(x));
    c->not_after = asn1_time(X509_get0_notAfter(x));
    GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    int n = gens ? sk_GENERAL_NAME_num(gens) : 0;
    int rc = 0;
    if (n > 0) {
        c->dns = xlate_alloc(a, (size_t)n * sizeof(char *));
        if (!c->dns)
            rc = -1;
    }
    for (int i = 0; i < n && rc == 0; i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
        if (g->type != GEN_DNS)
            continue;
        const unsigned char *d = ASN1_STRING_get0_data(g->d.dNSName);
        int dl = ASN1_STRING_length(g->d.dNSName);
        if (dl <= 0 || memchr(d, '\0', (size_t)dl))
            continue;
        if (!(c->dns[c->ndns++] = lower_dup(a, d, (size_t)dl)))
            rc = -1;
    }
    GENERAL_NAMES_free(gens);
    X509_NAME *subj = X509_get_subject_name(x);
    int idx = subj ? X509_NAME_get_index_by_NID(subj, NID_commonName, -1) : -1;
    if (rc == 0 && idx >= 0) {
        unsigned char *u = NULL;
        int ul = ASN1_STRING_to_UTF8(&u, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, idx)));
        if (ul > 0 && !memchr(u, '\0', (size_t)ul) && !(c->cn = lower_dup(a, u, (size_t)ul)))
            rc = -1;
        OPENSSL_free(u);
    }
    ERR_clear_error();
    return rc;
}

/* ---- a certificate and its key ---------------------------------------------------- */

static int problem(struct xl_arena *a, struct xl_secret *s, enum xl_secret_state st,
                   const char *msg)
{
    s->state = st;
    s->problem = xlate_strdup(a, msg);
    return s->problem ? 0 : -1;
}

int xlate_tls_check_pair(struct xl_arena *a, struct xl_secret *s)
{
    char why[160], msg[400], label[48];
    int rc = 0;
    X509 *leaf = NULL;
    EVP_PKEY *key = NULL;
    BIO *b = NULL;
    ERR_clear_error();
    if (only_certificates((const char *)s->crt, s->crtlen, label, sizeof(label)) != 0) {
        snprintf(msg, sizeof(msg),
                 "tls.crt holds a \"%s\" PEM block; it must hold certificates only (the "
                 "private key belongs in tls.key)",
                 label);
        return problem(a, s, XL_SECRET_BAD_PEM, msg);
    }
    b = BIO_new_mem_buf(s->crt, (int)s->crtlen);
    if (!b)
        return -1;
    X509 *x;
    while ((x = PEM_read_bio_X509(b, NULL, no_password, NULL)) != NULL) {
        if (!leaf)
            leaf = x;
        else
            X509_free(x);
        s->cert.nchain++;
    }
    unsigned long e = ERR_peek_last_error();
    int clean_end = ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE;
    if (!leaf || !clean_end) {
        if (!leaf && clean_end)
            snprintf(msg, sizeof(msg), "tls.crt holds no PEM certificate");
        else
            snprintf(msg, sizeof(msg), "tls.crt is not a valid PEM certificate chain (%s)",
                     ssl_reason(why, sizeof(why)));
        rc = problem(a, s, XL_SECRET_BAD_PEM, msg);
        goto out;
    }
    ERR_clear_error();
    if (cert_info(a, leaf, &s->cert) != 0) {
        rc = -1;
        goto out;
    }
    BIO_free(b);
    b = BIO_new_mem_buf(s->key, (int)s->keylen);
    if (!b) {
        rc = -1;
        goto out;
    }
    key = PEM_read_bio_PrivateKey(b, NULL, no_password, NULL);
    if (!key) {
        const char *k = (const char *)s->key;
        if (memmem(k, s->keylen, "ENCRYPTED", 9))
            snprintf(msg, sizeof(msg),
                     "tls.key is encrypted; Envoy needs it unencrypted (openssl pkey -in "
                     "key.pem -out plain.pem)");
        else if (memmem(k, s->keylen, "-----BEGIN CERTIFICATE", 22))
            snprintf(msg, sizeof(msg), "tls.key holds a certificate, not a private key");
        else
            snprintf(msg, sizeof(msg), "tls.key is not a valid PEM private key (%s)",
                     ssl_reason(why, sizeof(why)));
        ERR_clear_error();
        rc = problem(a, s, XL_SECRET_BAD_PEM, msg);
        goto out;
    }
    if (X509_check_private_key(leaf, key) != 1) {
        rc = problem(a, s, XL_SECRET_KEY_MISMATCH,
                     "tls.key does not match the certificate in tls.crt (the first one)");
        goto out;
    }
    s->state = XL_SECRET_OK;
out:
    ERR_clear_error();
    BIO_free(b);
    X509_free(leaf);
    EVP_PKEY_free(key);
    return rc;
}

size_t xlate_tls_check_ca(const char *pem, size_t len, char *msg, size_t msglen)
{
    char why[160], label[48];
    if (only_certificates(pem, len, label, sizeof(label)) != 0) {
        snprintf(msg, msglen, "holds a \"%s\" PEM block; a CA bundle holds certificates only",
                 label);
        return 0;
    }
    ERR_clear_error();
    BIO *b = BIO_new_mem_buf(pem, (int)len);
    if (!b) {
        snprintf(msg, msglen, "out of memory");
        return 0;
    }
    size_t n = 0;
    X509 *x;
    while ((x = PEM_read_bio_X509(b, NULL, no_password, NULL)) != NULL) {
        X509_free(x);
        n++;
    }
    unsigned long e = ERR_peek_last_error();
    int clean_end = ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE;
    if (!clean_end) {
        snprintf(msg, msglen, "is not a valid PEM certificate bundle (%s)",
                 ssl_reason(why, sizeof(why)));
        n = 0;
    } else if (n == 0) {
        snprintf(msg, msglen, "holds no PEM certificate");
    }
    ERR_clear_error();
    BIO_free(b);
    return n;
}

int xlate_tls_pem_not_after(const uint8_t *pem, size_t len, int64_t *out)
{
    if (len > XL_TLS_MAX_PEM)
        return -1;
    BIO *b = BIO_new_mem_buf(pem, (int)len);
    X509 *x = b ? PEM_read_bio_X509(b, NULL, no_password, NULL) : NULL;
    int rc = -1;
    if (x) {
        *out = asn1_time(X509_get0_notAfter(x));
        rc = 0;
    }
    X509_free(x);
    BIO_free(b);
    ERR_clear_error();
    return rc;
}

/* ---- names -------------------------------------------------------------------------- */

int xlate_tls_name_covers(const char *name, const char *host)
{
    if (!name || !host || !*name || !*host)
        return 0;
    if (strcasecmp(name, host) == 0)
        return 2;
    if (name[0] != '*' || name[1] != '.' || host[0] == '*')
        return 0;
    const char *dot = strchr(host, '.');
    if (!dot || dot == host)
        return 0; /* "*.example.com" never covers "example.com" */
    return strcasecmp(name + 1, dot) == 0 ? 1 : 0;
}

int xlate_tls_cert_covers(const struct xl_cert_info *c, const char *host)
{
    int best = 0;
    for (size_t i = 0; i < c->ndns && best < 2; i++) {
        int v = xlate_tls_name_covers(c->dns[i], host);
        if (v > best)
            best = v;
    }
    if (c->ndns == 0 && c->cn)
        best = xlate_tls_name_covers(c->cn, host);
    return best;
}

void xlate_tls_names_str(const struct xl_cert_info *c, char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = '\0';
    char *const *names = c->ndns ? c->dns : &c->cn;
    size_t nn = c->ndns ? c->ndns : (c->cn ? 1 : 0);
    if (nn == 0) {
        snprintf(buf, n, "no DNS names");
        return;
    }
    for (size_t i = 0; i < nn; i++) {
        int w = snprintf(buf + o, n - o, "%s%s", i ? ", " : "", names[i]);
        if (w < 0 || (size_t)w >= n - o) {
            if (n > 4)
                memcpy(buf + n - 4, "...", 4);
            return;
        }
        o += (size_t)w;
    }
}

/* ---- time ---------------------------------------------------------------------------- */

enum xl_cert_phase xlate_tls_phase(const struct xl_cert_info *c, int64_t now)
{
    if (now == 0)
        return XL_CERT_VALID;
    if (now < c->not_before)
        return XL_CERT_NOT_YET_VALID;
    if (now > c->not_after)
        return XL_CERT_EXPIRED;
    return XL_CERT_VALID;
}

int64_t xlate_tls_next_change(const struct xl_cert_info *c, int64_t now)
{
    if (now == 0)
        return 0;
    if (now < c->not_before)
        return c->not_before;
    if (now <= c->not_after)
        return c->not_after + 1;
    return 0;
}

void xlate_tls_time_str(int64_t t, char *buf, size_t n)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, n, "@%lld", (long long)t);
}

/* ---- references ------------------------------------------------------------------------ */

int xlate_tls_ref_allowed(const char *from, const char *to, const char *allow)
{
    if (strcmp(from, to) == 0)
        return 1;
    if (!allow)
        return 0;
    const char *p = allow;
    size_t fl = strlen(from);
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *t = e;
        while (t > p && t[-1] == ' ')
            t--;
        size_t l = (size_t)(t - p);
        if ((l == 1 && *p == '*') || (l == fl && strncmp(p, from, l) == 0))
            return 1;
        p = e;
    }
    return 0;
}
