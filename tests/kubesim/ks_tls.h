/*
 * ks_tls: HTTPS with a test CA generated at start (CA + server certificate
 * for 127.0.0.1 and localhost) into the state directory. Event loop only.
 */
#ifndef KS_TLS_H
#define KS_TLS_H

#include "ks.h"

int ks_tls_setup(struct ks_server *s);
/* Base64 of the CA certificate PEM (for certificate-authority-data). */
const char *ks_tls_ca_b64(struct ks_server *s);
void ks_tls_free(struct ks_server *s);

#endif
