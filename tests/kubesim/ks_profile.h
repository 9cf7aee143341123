/*
 * ks_profile: the kube-apiserver release kubesim emulates (--emulate
 * 1.28|1.29|1.30|1.31, default 1.28, the oldest supported): what /version
 * and the OpenAPI documents say, and the defaults that differ between the
 * releases and kubesim's test conveniences. The behaviours themselves
 * (WatchList gate, bookmarks, event window) are flags the profile sets.
 */
#ifndef KS_PROFILE_H
#define KS_PROFILE_H

#include <stdbool.h>

struct ks_profile {
    int minor;
    const char *git_version; /* "v1.28.15" */
    const char *go_version;
    bool watchlist_default; /* WatchList feature gate default (alpha: off) */
};

/* The profile of 1.|minor|, or NULL when kubesim does not emulate it. */
const struct ks_profile *ks_profile_find(int minor);

/* Parses "1.28" (or "v1.28"); returns the minor or -1. */
int ks_profile_parse(const char *s);

#endif
