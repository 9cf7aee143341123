/*
 * ks_tls: placeholder until HTTPS lands.
 */
#include "ks_tls.h"

#include "cx_log.h"

int ks_tls_setup(struct ks_server *s)
{
    (void)s;
    cx_error(KS_LOG, "--tls is not implemented yet");
    return -1;
}

const char *ks_tls_ca_b64(struct ks_server *s)
{
    (void)s;
    return NULL;
}

void ks_tls_free(struct ks_server *s)
{
    (void)s;
}
