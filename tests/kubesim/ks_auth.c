/*
 * ks_auth: placeholder until tokens and RBAC land.
 */
#include "ks_tls.h"

int ks_auth_init(struct ks_server *s)
{
    (void)s;
    return 0;
}

void ks_auth_free(struct ks_server *s)
{
    (void)s;
}

void ks_tokens_reload(struct ks_server *s)
{
    (void)s;
}
