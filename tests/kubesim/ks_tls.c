/*
 * ks_tls: HTTPS with a test CA generated at start.
 *
 * A P-256 CA and a server certificate for 127.0.0.1, ::1 and localhost are
 * written to --state-dir (ca.crt, server.crt, server.key), or the ones a
 * previous start left there are served again; the kubeconfig carries the
 * CA as certificate-authority-data. Plain HTTP stays the default.
 */
#include "ks_tls.h"

#include <event2/bufferevent_ssl.h>
#include <event2/http.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cx_log.h"
#include "ks_h2.h"

struct ks_tls {
    SSL_CTX *ctx;
    char *ca_b64;
};

static struct ks_tls g_tls;

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, issuer, cert, NULL, NULL, 0);
    X509_EXTENSION *ex = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
    if (!ex)
        return -1;
    int rc = X509_add_ext(cert, ex, -1) == 1 ? 0 : -1;
    X509_EXTENSION_free(ex);
    return rc;
}

static X509 *make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key, bool ca)
{
    X509 *c = X509_new();
    if (!c)
        return NULL;
    unsigned char serial[16];
    BIGNUM *bn = NULL;
    if (RAND_bytes(serial, sizeof(serial)) != 1)
        goto fail;
    serial[0] &= 0x7f;
    bn = BN_bin2bn(serial, sizeof(serial), NULL);
    if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(c)))
        goto fail;
    X509_set_version(c, 2);
    X509_gmtime_adj(X509_getm_notBefore(c), -3600);
    X509_gmtime_adj(X509_getm_notAfter(c), 3600L * 24 * 365);
    X509_set_pubkey(c, key);
    X509_NAME *name = X509_get_subject_name(c);
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"kubesim", -1, -1,
                               0);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(c, issuer ? X509_get_subject_name(issuer) : name);
    X509 *iss = issuer ? issuer : c;
    if (ca) {
        if (add_ext(c, iss, NID_basic_constraints, "critical,CA:TRUE") ||
            add_ext(c, iss, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature") ||
            add_ext(c, iss, NID_subject_key_identifier, "hash"))
            goto fail;
    } else {
        if (add_ext(c, iss, NID_basic_constraints, "critical,CA:FALSE") ||
            add_ext(c, iss, NID_key_usage, "critical,digitalSignature,keyEncipherment") ||
            add_ext(c, iss, NID_ext_key_usage, "serverAuth") ||
            add_ext(c, iss, NID_subject_alt_name, "IP:127.0.0.1,IP:::1,DNS:localhost") ||
            add_ext(c, iss, NID_authority_key_identifier, "keyid:always"))
            goto fail;
    }
    if (!X509_sign(c, issuer_key ? issuer_key : key, EVP_sha256()))
        goto fail;
    BN_free(bn);
    return c;
fail:
    BN_free(bn);
    X509_free(c);
    return NULL;
}

static int write_pem(const char *dir, const char *file, X509 *cert, EVP_PKEY *key)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int ok =
        cert ? PEM_write_X509(f, cert) : PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
    return fclose(f) == 0 && ok ? 0 : -1;
}

static struct bufferevent *bevcb(struct event_base *base, void *arg)
{
    struct ks_server *s = arg;
    (void)base;
    SSL *ssl = SSL_new(g_tls.ctx);
    if (!ssl)
        return NULL;
    struct bufferevent *bev = ks_h2_new_bev(s, ssl);
    if (!bev)
        SSL_free(ssl);
    return bev;
}

/* The material a previous start left in |dir| (a restarted API server
 * keeps its serving certificate: clients' kubeconfigs stay valid). Returns
 * 0 with all three loaded, or -1 (nothing to reuse). */
static int load_existing(const char *dir, X509 **ca, X509 **cert, EVP_PKEY **key)
{
    char path[4096];
    FILE *f;
    snprintf(path, sizeof(path), "%s/ca.crt", dir);
    if ((f = fopen(path, "r")) != NULL) {
        *ca = PEM_read_X509(f, NULL, NULL, NULL);
        fclose(f);
    }
    snprintf(path, sizeof(path), "%s/server.crt", dir);
    if ((f = fopen(path, "r")) != NULL) {
        *cert = PEM_read_X509(f, NULL, NULL, NULL);
        fclose(f);
    }
    snprintf(path, sizeof(path), "%s/server.key", dir);
    if ((f = fopen(path, "r")) != NULL) {
        *key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
        fclose(f);
    }
    if (*ca && *cert && *key && X509_check_private_key(*cert, *key) == 1)
        return 0;
    X509_free(*ca);
    X509_free(*cert);
    EVP_PKEY_free(*key);
    *ca = *cert = NULL;
    *key = NULL;
    ERR_clear_error();
    return -1;
}

int ks_tls_setup(struct ks_server *s)
{
    const char *dir = s->cfg.state_dir ? s->cfg.state_dir : ".";
    int rc = -1;
    EVP_PKEY *cakey = NULL;
    EVP_PKEY *key = NULL;
    X509 *ca = NULL, *cert = NULL;
    BIO *mem = NULL;
    if (load_existing(dir, &ca, &cert, &key) == 0) {
        cx_info(KS_LOG, "TLS: serving the certificate already in %s", dir);
    } else {
        cakey = EVP_EC_gen("P-256");
        key = EVP_EC_gen("P-256");
        if (!cakey || !key)
            goto out;
        ca = make_cert(cakey, "kubesim-ca", NULL, NULL, true);
        cert = ca ? make_cert(key, "kubesim", ca, cakey, false) : NULL;
        if (!cert)
            goto out;
        if (write_pem(dir, "ca.crt", ca, NULL) || write_pem(dir, "server.crt", cert, NULL) ||
            write_pem(dir, "server.key", NULL, key)) {
            cx_error(KS_LOG, "cannot write TLS files into %s", dir);
            goto out;
        }
    }
    /* certificate-authority-data: base64 of the CA PEM. */
    mem = BIO_new(BIO_s_mem());
    if (!mem || !PEM_write_bio_X509(mem, ca))
        goto out;
    char *pem;
    long plen = BIO_get_mem_data(mem, &pem);
    g_tls.ca_b64 = malloc((size_t)plen * 4 / 3 + 8);
    if (!g_tls.ca_b64)
        goto out;
    EVP_EncodeBlock((unsigned char *)g_tls.ca_b64, (const unsigned char *)pem, (int)plen);
    g_tls.ctx = SSL_CTX_new(TLS_server_method());
    if (!g_tls.ctx || !SSL_CTX_set_min_proto_version(g_tls.ctx, TLS1_2_VERSION) ||
        SSL_CTX_use_certificate(g_tls.ctx, cert) != 1 ||
        SSL_CTX_use_PrivateKey(g_tls.ctx, key) != 1 ||
        SSL_CTX_add_extra_chain_cert(g_tls.ctx, X509_dup(ca)) != 1)
        goto out;
    if (ks_h2_setup(s, g_tls.ctx) != 0)
        goto out;
    evhttp_set_bevcb(s->http, bevcb, s);
    rc = 0;
out:
    if (rc != 0)
        cx_error(KS_LOG, "TLS setup: %s", ERR_reason_error_string(ERR_get_error()));
    BIO_free(mem);
    X509_free(ca);
    X509_free(cert);
    EVP_PKEY_free(cakey);
    EVP_PKEY_free(key);
    return rc;
}

const char *ks_tls_ca_b64(struct ks_server *s)
{
    (void)s;
    return g_tls.ca_b64;
}

void ks_tls_free(struct ks_server *s)
{
    (void)s;
    if (g_tls.ctx)
        SSL_CTX_free(g_tls.ctx);
    g_tls.ctx = NULL;
    free(g_tls.ca_b64);
    g_tls.ca_b64 = NULL;
}
