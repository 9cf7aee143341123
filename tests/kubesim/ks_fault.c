/*
 * ks_fault: fault injection (placeholder until the fault rules land).
 */
#include "ks_fault.h"

#include <stdlib.h>

struct ks_fault_state {
    int unused;
};

struct ks_fault_state *ks_fault_new(void)
{
    return calloc(1, sizeof(struct ks_fault_state));
}

void ks_fault_free(struct ks_fault_state *f)
{
    free(f);
}

int ks_fault_token_user(struct ks_server *s, const char *token, char *user, size_t n)
{
    (void)s;
    (void)token;
    (void)user;
    (void)n;
    return -1;
}

int ks_fault_intercept(struct ks_server *s, struct ks_req *r)
{
    (void)s;
    (void)r;
    return 0;
}

int ks_fault_admin(struct ks_req *r, const char *path)
{
    (void)r;
    (void)path;
    return -1;
}

void ks_fault_park_data_free(struct ks_req *r)
{
    free(r->park_data);
    r->park_data = NULL;
}
