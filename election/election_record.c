#include "election_record.h"

#include "cx_hash.h"
#include "cx_json.h"
#include "cx_time.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void copy_capped(char *dst, size_t cap, const char *src, bool *overflow)
{
    size_t n = strlen(src);
    if (n >= cap) {
        n = cap - 1;
        if (overflow)
            *overflow = true;
    }
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* A number or a decimal string (the Python client writes "15"); 0 for
 * anything else, negative or not an integer. */
static int32_t lenient_int(const cJSON *v)
{
    double d;
    if (cJSON_IsNumber(v)) {
        d = v->valuedouble;
    } else if (cJSON_IsString(v)) {
        const char *s = v->valuestring;
        while (*s == ' ')
            s++;
        if (*s < '0' || *s > '9')
            return 0;
        d = 0;
        for (; *s >= '0' && *s <= '9'; s++) {
            d = d * 10 + (*s - '0');
            if (d > INT32_MAX)
                return INT32_MAX;
        }
        while (*s == ' ')
            s++;
        if (*s)
            return 0;
    } else {
        return 0;
    }
    if (!isfinite(d) || d <= 0 || d != floor(d))
        return 0;
    return d > INT32_MAX ? INT32_MAX : (int32_t)d;
}

int election_parse_python_time(const char *s, int64_t *wall_ns)
{
    int y, mo, d, h, mi, se, n = 0;
    if (sscanf(s, "%4d-%2d-%2d %2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &se, &n) != 6 || n != 19)
        return -1;
    int64_t frac = 0;
    const char *p = s + n;
    if (*p == '.') {
        int digits = 0;
        for (p++; *p >= '0' && *p <= '9' && digits < 9; p++, digits++)
            frac = frac * 10 + (*p - '0');
        if (digits == 0)
            return -1;
        for (; digits < 9; digits++)
            frac *= 10;
    }
    if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
        return -1;
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = se;
    tm.tm_isdst = -1; /* Python wrote local time without a zone */
    time_t t = mktime(&tm);
    if (t == (time_t)-1)
        return -1;
    *wall_ns = (int64_t)t * 1000000000 + frac;
    return 0;
}

static int64_t lenient_time(const cJSON *v)
{
    int64_t ns;
    if (!cJSON_IsString(v))
        return 0;
    if (cx_time_parse_rfc3339(v->valuestring, &ns) == 0)
        return ns;
    if (election_parse_python_time(v->valuestring, &ns) == 0)
        return ns;
    return 0;
}

static void decode_fields(const cJSON *o, const char *transitions_key, struct election_record *r)
{
    const char *holder = cx_json_str(o, "holderIdentity");
    copy_capped(r->holder, sizeof(r->holder), holder ? holder : "", &r->holder_overflow);
    r->lease_duration_s = lenient_int(cJSON_GetObjectItemCaseSensitive(o, "leaseDurationSeconds"));
    r->acquire_wall_ns = lenient_time(cJSON_GetObjectItemCaseSensitive(o, "acquireTime"));
    r->renew_wall_ns = lenient_time(cJSON_GetObjectItemCaseSensitive(o, "renewTime"));
    r->transitions = lenient_int(cJSON_GetObjectItemCaseSensitive(o, transitions_key));
    const char *ph = cx_json_str(o, "preferredHolder");
    const char *st = cx_json_str(o, "strategy");
    bool ignored = false;
    copy_capped(r->preferred_holder, sizeof(r->preferred_holder), ph ? ph : "", &ignored);
    copy_capped(r->strategy, sizeof(r->strategy), st ? st : "", &ignored);
}

int election_record_parse_annotation(const char *s, size_t len, struct election_record *r)
{
    memset(r, 0, sizeof(*r));
    if (len > ELECTION_ANNOTATION_MAX)
        return -1;
    cJSON *o = cx_json_parse(s, len);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return -1;
    }
    decode_fields(o, "leaderTransitions", r);
    cJSON_Delete(o);
    return 0;
}

void election_record_decode(enum election_lock_kind kind, const cJSON *obj,
                            struct election_observation *out)
{
    memset(out, 0, sizeof(*out));
    out->found = true;
    const char *rv = cx_json_path_str(obj, "metadata", "resourceVersion", (char *)NULL);
    bool ignored = false;
    copy_capped(out->rv, sizeof(out->rv), rv ? rv : "", &ignored);
    /* The peer endpoint: a string that fits, or none (too long is no
     * endpoint at all, never a cut one). */
    const char *peer =
        cx_json_path_str(obj, "metadata", "annotations", ELECTION_PEER_ANNOTATION, (char *)NULL);
    char peerbuf[ELECTION_PEER_MAX];
    bool long_peer = false;
    copy_capped(peerbuf, sizeof(peerbuf), peer ? peer : "", &long_peer);
    if (long_peer)
        peerbuf[0] = '\0';
    if (kind == ELECTION_LOCK_LEASES) {
        const cJSON *spec = cx_json_path(obj, "spec", (char *)NULL);
        if (!cJSON_IsObject(spec))
            return;
        decode_fields(spec, "leaseTransitions", &out->rec);
        memcpy(out->rec.peer, peerbuf, sizeof(peerbuf));
        struct cx_buf b;
        cx_buf_init(&b, 1 << 20);
        if (cx_json_canonical(spec, &b) == 0)
            out->fingerprint = cx_fnv64(CX_FNV64_INIT, b.data, b.len);
        else
            out->fingerprint = 1; /* huge spec: still a value, never the empty one */
        cx_buf_free(&b);
        return;
    }
    const char *ann = cx_json_path_str(obj, "metadata", "annotations",
                                       ELECTION_CONFIGMAP_ANNOTATION, (char *)NULL);
    if (!ann || !*ann)
        return; /* no record: free to take, as client-go and the Python client do */
    out->fingerprint = cx_fnv64(CX_FNV64_INIT, ann, strlen(ann));
    if (election_record_parse_annotation(ann, strlen(ann), &out->rec) != 0) {
        memset(&out->rec, 0, sizeof(out->rec));
        out->rec.holder_overflow = true; /* someone wrote something: wait it out */
        return;
    }
    memcpy(out->rec.peer, peerbuf, sizeof(peerbuf));
}

static int add_time(cJSON *o, const char *key, int64_t wall_ns, bool micro)
{
    if (wall_ns == 0)
        return cJSON_AddNullToObject(o, key) ? 0 : -1;
    char t[CX_TIME_MICRO_LEN + 4];
    if (micro)
        cx_time_format_micro(wall_ns, t, sizeof(t));
    else
        cx_time_format_rfc3339(wall_ns, t, sizeof(t));
    return cJSON_AddStringToObject(o, key, t) ? 0 : -1;
}

int election_record_format_annotation(const struct election_record *r, struct cx_buf *b)
{
    char at[CX_TIME_RFC3339_LEN + 4], rt[CX_TIME_RFC3339_LEN + 4];
    int rc = cx_buf_puts(b, "{\"holderIdentity\":");
    rc |= cx_json_escape(b, r->holder);
    rc |=
        cx_buf_printf(b, ",\"leaseDurationSeconds\":%d,\"acquireTime\":", (int)r->lease_duration_s);
    if (r->acquire_wall_ns) {
        cx_time_format_rfc3339(r->acquire_wall_ns, at, sizeof(at));
        rc |= cx_buf_printf(b, "\"%s\"", at);
    } else {
        rc |= cx_buf_puts(b, "null");
    }
    rc |= cx_buf_puts(b, ",\"renewTime\":");
    if (r->renew_wall_ns) {
        cx_time_format_rfc3339(r->renew_wall_ns, rt, sizeof(rt));
        rc |= cx_buf_printf(b, "\"%s\"", rt);
    } else {
        rc |= cx_buf_puts(b, "null");
    }
    rc |= cx_buf_printf(b, ",\"leaderTransitions\":%d", (int)r->transitions);
    /* client-go's record carries these two (coordinated leader election);
     * written only when set, so the annotation stays byte for byte what
     * client-go and the Python client write otherwise. */
    if (r->strategy[0]) {
        rc |= cx_buf_puts(b, ",\"strategy\":");
        rc |= cx_json_escape(b, r->strategy);
    }
    if (r->preferred_holder[0]) {
        rc |= cx_buf_puts(b, ",\"preferredHolder\":");
        rc |= cx_json_escape(b, r->preferred_holder);
    }
    rc |= cx_buf_puts(b, "}");
    return rc ? -1 : 0;
}

static cJSON *lease_spec(const struct election_record *r)
{
    cJSON *spec = cJSON_CreateObject();
    int rc = spec ? 0 : -1;
    if (spec) {
        rc |= cJSON_AddStringToObject(spec, "holderIdentity", r->holder) ? 0 : -1;
        rc |= cJSON_AddNumberToObject(spec, "leaseDurationSeconds", r->lease_duration_s) ? 0 : -1;
        rc |= add_time(spec, "acquireTime", r->acquire_wall_ns, true);
        rc |= add_time(spec, "renewTime", r->renew_wall_ns, true);
        rc |= cJSON_AddNumberToObject(spec, "leaseTransitions", r->transitions) ? 0 : -1;
        if (r->strategy[0])
            rc |= cJSON_AddStringToObject(spec, "strategy", r->strategy) ? 0 : -1;
        if (r->preferred_holder[0])
            rc |= cJSON_AddStringToObject(spec, "preferredHolder", r->preferred_holder) ? 0 : -1;
    }
    if (rc) {
        cJSON_Delete(spec);
        return NULL;
    }
    return spec;
}

static int set_string(cJSON *o, const char *key, const char *v)
{
    cJSON *s = cJSON_CreateString(v);
    if (!s)
        return -1;
    if (cJSON_GetObjectItemCaseSensitive(o, key))
        return cJSON_ReplaceItemInObjectCaseSensitive(o, key, s) ? 0 : -1;
    return cJSON_AddItemToObject(o, key, s) ? 0 : -1;
}

static cJSON *child_object(cJSON *o, const char *key)
{
    cJSON *c = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsObject(c))
        return c;
    if (c)
        cJSON_DeleteItemFromObjectCaseSensitive(o, key);
    return cJSON_AddObjectToObject(o, key);
}

/* Sets the peer annotation to r->peer, or removes it ("" or none kept). */
static int put_peer(cJSON *o, const struct election_record *r)
{
    cJSON *md = child_object(o, "metadata");
    if (!md)
        return -1;
    cJSON *ann = cJSON_GetObjectItemCaseSensitive(md, "annotations");
    if (!r->peer[0]) {
        if (cJSON_IsObject(ann))
            cJSON_DeleteItemFromObjectCaseSensitive(ann, ELECTION_PEER_ANNOTATION);
        return 0;
    }
    ann = child_object(md, "annotations");
    return ann ? set_string(ann, ELECTION_PEER_ANNOTATION, r->peer) : -1;
}

static int put_record(enum election_lock_kind kind, cJSON *o, const struct election_record *r)
{
    if (put_peer(o, r) != 0)
        return -1;
    if (kind == ELECTION_LOCK_LEASES) {
        cJSON *spec = lease_spec(r);
        if (!spec)
            return -1;
        if (cJSON_GetObjectItemCaseSensitive(o, "spec"))
            return cJSON_ReplaceItemInObjectCaseSensitive(o, "spec", spec) ? 0 : -1;
        return cJSON_AddItemToObject(o, "spec", spec) ? 0 : -1;
    }
    cJSON *md = child_object(o, "metadata");
    cJSON *ann = md ? child_object(md, "annotations") : NULL;
    if (!ann)
        return -1;
    struct cx_buf b;
    cx_buf_init(&b, ELECTION_ANNOTATION_MAX);
    int rc = election_record_format_annotation(r, &b);
    if (rc == 0)
        rc = set_string(ann, ELECTION_CONFIGMAP_ANNOTATION, b.data);
    cx_buf_free(&b);
    return rc;
}

static cJSON *skeleton(enum election_lock_kind kind, const char *ns, const char *name)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    int rc = 0;
    rc |=
        set_string(o, "apiVersion", kind == ELECTION_LOCK_LEASES ? "coordination.k8s.io/v1" : "v1");
    rc |= set_string(o, "kind", kind == ELECTION_LOCK_LEASES ? "Lease" : "ConfigMap");
    cJSON *md = child_object(o, "metadata");
    rc |= md ? 0 : -1;
    if (md) {
        rc |= set_string(md, "name", name);
        rc |= set_string(md, "namespace", ns);
    }
    if (rc) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *election_record_new_object(enum election_lock_kind kind, const char *ns, const char *name,
                                  const struct election_record *r)
{
    cJSON *o = skeleton(kind, ns, name);
    if (o && put_record(kind, o, r) != 0) {
        cJSON_Delete(o);
        o = NULL;
    }
    return o;
}

cJSON *election_record_update_object(enum election_lock_kind kind, const cJSON *base,
                                     const char *ns, const char *name, const char *rv,
                                     const struct election_record *r)
{
    cJSON *o = base && cJSON_IsObject(base) ? cJSON_Duplicate(base, 1) : skeleton(kind, ns, name);
    if (!o)
        return NULL;
    /* List items come without kind and apiVersion; a PUT needs them. */
    int rc =
        set_string(o, "apiVersion", kind == ELECTION_LOCK_LEASES ? "coordination.k8s.io/v1" : "v1");
    rc |= set_string(o, "kind", kind == ELECTION_LOCK_LEASES ? "Lease" : "ConfigMap");
    cJSON *md = child_object(o, "metadata");
    rc |= md ? 0 : -1;
    if (md) {
        rc |= set_string(md, "name", name);
        rc |= set_string(md, "namespace", ns);
        rc |= set_string(md, "resourceVersion", rv);
    }
    rc |= put_record(kind, o, r);
    if (rc) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}
