/*
 * ks_profile: the emulated releases. Versions are the last patch release of
 * each minor that kubesim's behaviour was checked against; the WatchList
 * gate is alpha and off in all of them (pkg/features/kube_features.go:
 * WatchList Alpha 1.27, Beta 1.32).
 */
#include "ks_profile.h"

#include <stdlib.h>
#include <string.h>

static const struct ks_profile profiles[] = {
    {28, "v1.28.15", "go1.22.8", false},
    {29, "v1.29.10", "go1.22.8", false},
    {30, "v1.30.6", "go1.22.8", false},
    {31, "v1.31.2", "go1.22.8", false},
};

const struct ks_profile *ks_profile_find(int minor)
{
    for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
        if (profiles[i].minor == minor)
            return &profiles[i];
    return NULL;
}

int ks_profile_parse(const char *s)
{
    if (*s == 'v')
        s++;
    if (strncmp(s, "1.", 2) != 0)
        return -1;
    char *end;
    long m = strtol(s + 2, &end, 10);
    if (*end || m < 0 || m > 1000 || !ks_profile_find((int)m))
        return -1;
    return (int)m;
}
