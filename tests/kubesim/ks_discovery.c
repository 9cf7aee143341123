/*
 * ks_discovery: /api, /apis, group and version resource lists, /version,
 * health endpoints. Answers the legacy (unaggregated) discovery documents;
 * clients asking for aggregated discovery fall back on the Content-Type.
 */
#include <event2/buffer.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cx_buf.h"
#include "cx_hash.h"
#include "cx_json.h"
#include "ks.h"
#include "ks_http.h"
#include "ks_profile.h"

static int add_rtype_json(struct cx_buf *b, const struct ks_rtype *rt, bool first)
{
    char hash[16];
    char seed[512];
    snprintf(seed, sizeof(seed), "%s/%s/%s", rt->group, rt->version, rt->kind);
    cx_sha256_hex(seed, strlen(seed), hash, 11);
    int rc = cx_buf_printf(b,
                           "%s{\"name\":\"%s\",\"singularName\":\"%s\",\"namespaced\":%s,\"kind\":"
                           "\"%s\",\"verbs\":%s",
                           first ? "" : ",", rt->plural, rt->singular,
                           rt->namespaced ? "true" : "false", rt->kind,
                           rt->review ? "[\"create\"]"
                                      : "[\"create\",\"delete\",\"deletecollection\",\"get\","
                                        "\"list\",\"patch\",\"update\",\"watch\"]");
    if (rt->review)
        return rc | cx_buf_puts(b, "}");
    int ns = 0;
    for (int i = 0; i < 4; i++)
        if (rt->short_names[i])
            ns++;
    if (ns) {
        rc |= cx_buf_puts(b, ",\"shortNames\":[");
        for (int i = 0, k = 0; i < 4; i++)
            if (rt->short_names[i])
                rc |= cx_buf_printf(b, "%s\"%s\"", k++ ? "," : "", rt->short_names[i]);
        rc |= cx_buf_puts(b, "]");
    }
    if (rt->categories[0]) {
        rc |= cx_buf_puts(b, ",\"categories\":[");
        for (int i = 0, k = 0; i < 2; i++)
            if (rt->categories[i])
                rc |= cx_buf_printf(b, "%s\"%s\"", k++ ? "," : "", rt->categories[i]);
        rc |= cx_buf_puts(b, "]");
    }
    rc |= cx_buf_printf(b, ",\"storageVersionHash\":\"%s=\"}", hash);
    if (rt->has_status)
        rc |= cx_buf_printf(b,
                            ",{\"name\":\"%s/status\",\"singularName\":\"\",\"namespaced\":%s,"
                            "\"kind\":\"%s\",\"verbs\":[\"get\",\"patch\",\"update\"]}",
                            rt->plural, rt->namespaced ? "true" : "false", rt->kind);
    return rc;
}

static void resource_list(struct ks_req *r, const char *group, const char *version)
{
    struct cx_buf b;
    cx_buf_init(&b, 1 << 22);
    bool found = false, first = true;
    int rc = cx_buf_printf(&b,
                           "{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\",\"groupVersion\":"
                           "\"%s%s%s\",\"resources\":[",
                           group, *group ? "/" : "", version);
    for (struct ks_rtype *rt = r->s->rtypes; rt; rt = rt->next) {
        if (!rt->served || strcmp(rt->group, group) != 0 || strcmp(rt->version, version) != 0)
            continue;
        rc |= add_rtype_json(&b, rt, first);
        first = false;
        found = true;
    }
    rc |= cx_buf_puts(&b, "]}");
    if (!found)
        ks_err_generic_not_found(r);
    else if (rc)
        ks_err_internal(r, "out of memory");
    else
        ks_reply_json(r, 200, b.data, b.len);
    cx_buf_free(&b);
}

/* Versions served in |group|, in registration order, without repeats. */
static int group_json(struct cx_buf *b, struct ks_server *s, const char *group, bool with_kind)
{
    int rc = 0;
    if (with_kind)
        rc |= cx_buf_puts(b, "{\"kind\":\"APIGroup\",\"apiVersion\":\"v1\",");
    else
        rc |= cx_buf_puts(b, "{");
    rc |= cx_buf_printf(b, "\"name\":\"%s\",\"versions\":[", group);
    const char *seen[16];
    int nseen = 0;
    for (struct ks_rtype *rt = s->rtypes; rt; rt = rt->next) {
        if (!rt->served || strcmp(rt->group, group) != 0)
            continue;
        bool dup = false;
        for (int i = 0; i < nseen; i++)
            if (strcmp(seen[i], rt->version) == 0)
                dup = true;
        if (dup || nseen == 16)
            continue;
        rc |= cx_buf_printf(b, "%s{\"groupVersion\":\"%s/%s\",\"version\":\"%s\"}",
                            nseen ? "," : "", group, rt->version, rt->version);
        seen[nseen++] = rt->version;
    }
    rc |=
        cx_buf_printf(b, "],\"preferredVersion\":{\"groupVersion\":\"%s/%s\",\"version\":\"%s\"}}",
                      group, nseen ? seen[0] : "v1", nseen ? seen[0] : "v1");
    return rc;
}

static bool group_served(struct ks_server *s, const char *group)
{
    for (struct ks_rtype *rt = s->rtypes; rt; rt = rt->next)
        if (rt->served && strcmp(rt->group, group) == 0)
            return true;
    return false;
}

static void group_list(struct ks_req *r)
{
    struct cx_buf b;
    cx_buf_init(&b, 1 << 22);
    int rc = cx_buf_puts(&b, "{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\",\"groups\":[");
    const char *done[64];
    int nd = 0;
    for (struct ks_rtype *rt = r->s->rtypes; rt; rt = rt->next) {
        if (!rt->served || !*rt->group)
            continue;
        bool dup = false;
        for (int i = 0; i < nd; i++)
            if (strcmp(done[i], rt->group) == 0)
                dup = true;
        if (dup || nd == 64)
            continue;
        if (nd)
            rc |= cx_buf_puts(&b, ",");
        rc |= group_json(&b, r->s, rt->group, false);
        done[nd++] = rt->group;
    }
    rc |= cx_buf_puts(&b, "]}");
    if (rc)
        ks_err_internal(r, "out of memory");
    else
        ks_reply_json(r, 200, b.data, b.len);
    cx_buf_free(&b);
}

void ks_discovery_dispatch(struct ks_req *r)
{
    const char *p = r->path;
    if (r->method != EVHTTP_REQ_GET && r->method != EVHTTP_REQ_HEAD) {
        ks_err_method(r);
        return;
    }
    if (strcmp(p, "/healthz") == 0 || strcmp(p, "/livez") == 0 || strcmp(p, "/readyz") == 0) {
        ks_reply_text(r, 200, "text/plain; charset=utf-8", "ok");
        return;
    }
    if (strcmp(p, "/version") == 0 || strcmp(p, "/version/") == 0) {
        const struct ks_profile *pf = ks_profile_find(r->s->cfg.emulate_minor);
        char v[512];
        int n = snprintf(v, sizeof(v),
                         "{\"major\":\"1\",\"minor\":\"%d\",\"gitVersion\":\"%s\",\"gitCommit\":"
                         "\"0000000000000000000000000000000000000000\",\"gitTreeState\":\"clean\","
                         "\"buildDate\":\"2025-01-01T00:00:00Z\",\"goVersion\":\"%s\",\"compiler\":"
                         "\"gc\",\"platform\":\"linux/amd64\"}",
                         pf->minor, pf->git_version, pf->go_version);
        ks_reply_json(r, 200, v, (size_t)n);
        return;
    }
    if (strcmp(p, "/api") == 0 || strcmp(p, "/api/") == 0) {
        char buf[256];
        int n = snprintf(buf, sizeof(buf),
                         "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"],"
                         "\"serverAddressByClientCIDRs\":[{\"clientCIDR\":\"0.0.0.0/0\","
                         "\"serverAddress\":\"127.0.0.1:%d\"}]}",
                         r->s->port);
        ks_reply_json(r, 200, buf, (size_t)n);
        return;
    }
    if (strcmp(p, "/api/v1") == 0 || strcmp(p, "/api/v1/") == 0) {
        resource_list(r, "", "v1");
        return;
    }
    if (strcmp(p, "/apis") == 0 || strcmp(p, "/apis/") == 0) {
        group_list(r);
        return;
    }
    if (strncmp(p, "/apis/", 6) == 0) {
        char g[256] = "", v[64] = "";
        const char *rest = p + 6;
        const char *slash = strchr(rest, '/');
        if (!slash) {
            snprintf(g, sizeof(g), "%s", rest);
        } else {
            snprintf(g, sizeof(g), "%.*s", (int)(slash - rest), rest);
            snprintf(v, sizeof(v), "%s", slash + 1);
            char *e = strchr(v, '/');
            if (e && e[1] == '\0')
                *e = 0;
            else if (e) {
                ks_err_generic_not_found(r);
                return;
            }
        }
        if (!*v) {
            if (!group_served(r->s, g)) {
                ks_err_generic_not_found(r);
                return;
            }
            struct cx_buf b;
            cx_buf_init(&b, 1 << 16);
            if (group_json(&b, r->s, g, true) == 0)
                ks_reply_json(r, 200, b.data, b.len);
            else
                ks_err_internal(r, "out of memory");
            cx_buf_free(&b);
            return;
        }
        resource_list(r, g, v);
        return;
    }
    if (!r->s->cfg.no_openapi &&
        (strcmp(p, "/openapi/v3") == 0 || strcmp(p, "/openapi/v3/") == 0)) {
        ks_openapi_v3(r, "");
        return;
    }
    if (!r->s->cfg.no_openapi && strcmp(p, "/openapi/v2") == 0) {
        ks_openapi_v2(r);
        return;
    }
    if (!r->s->cfg.no_openapi && strncmp(p, "/openapi/v3/", 12) == 0) {
        ks_openapi_v3(r, p + 12);
        return;
    }
    if (strcmp(p, "/") == 0) {
        struct cx_buf b;
        cx_buf_init(&b, 1 << 16);
        int rc = cx_buf_puts(&b, "{\"paths\":[\"/api\",\"/api/v1\",\"/apis\"");
        for (struct ks_rtype *rt = r->s->rtypes; rt; rt = rt->next)
            if (rt->served && *rt->group)
                rc |= cx_buf_printf(&b, ",\"/apis/%s/%s\"", rt->group, rt->version);
        rc |= cx_buf_puts(&b, ",\"/healthz\",\"/livez\",\"/readyz\",\"/version\"]}");
        if (rc == 0)
            ks_reply_json(r, 200, b.data, b.len);
        else
            ks_err_internal(r, "out of memory");
        cx_buf_free(&b);
        return;
    }
    ks_err_generic_not_found(r);
}
