#include "status_build.h"

#include "cx_json.h"
#include "cx_time.h"
#include "xlate_snapshot.h"

#include <stdio.h>

#include <stdlib.h>
#include <string.h>

static const cJSON *find_condition(const cJSON *status, const char *type)
{
    const cJSON *conds = cJSON_GetObjectItemCaseSensitive(status, "conditions");
    const cJSON *c;
    cJSON_ArrayForEach(c, conds)
    {
        const char *t = cx_json_str(c, "type");
        if (t && strcmp(t, type) == 0)
            return c;
    }
    return NULL;
}

static int add_condition(cJSON *conds, const char *type, int ok, const char *reason,
                         const char *message, int64_t generation, const cJSON *current,
                         int64_t now_wall_ns)
{
    cJSON *c = cJSON_CreateObject();
    if (!c || !cJSON_AddItemToArray(conds, c))
        return -1;
    const char *st = ok ? "True" : "False";
    char *msg = strndup(message ? message : "", STATUS_MESSAGE_MAX);
    if (!msg)
        return -1;
    char ts[CX_TIME_RFC3339_LEN];
    const cJSON *old = find_condition(current, type);
    const char *old_status = old ? cx_json_str(old, "status") : NULL;
    const char *old_ts = old ? cx_json_str(old, "lastTransitionTime") : NULL;
    if (old_status && old_ts && strcmp(old_status, st) == 0)
        snprintf(ts, sizeof(ts), "%s", old_ts);
    else
        cx_time_format_rfc3339(now_wall_ns, ts, sizeof(ts));
    int rc = 0;
    if (!cJSON_AddStringToObject(c, "type", type) || !cJSON_AddStringToObject(c, "status", st) ||
        !cJSON_AddStringToObject(c, "reason",
                                 reason && *reason ? reason : (ok ? type : "Failed")) ||
        !cJSON_AddStringToObject(c, "message", msg) ||
        !cJSON_AddNumberToObject(c, "observedGeneration", (double)generation) ||
        !cJSON_AddStringToObject(c, "lastTransitionTime", ts))
        rc = -1;
    free(msg);
    return rc;
}

cJSON *status_desired(const struct xlate_report *r, const struct status_condition *extra,
                      size_t nextra, const cJSON *current, int64_t now_wall_ns)
{
    cJSON *st = cJSON_CreateObject();
    cJSON *conds = NULL;
    if (!st)
        return NULL;
    if (!cJSON_AddStringToObject(st, "state", xlate_state_name(r->state)) ||
        !cJSON_AddNumberToObject(st, "observedGeneration", (double)r->generation))
        goto fail;
    conds = cJSON_AddArrayToObject(st, "conditions");
    if (!conds)
        goto fail;
    const char *reason = r->reason;
    if (!reason || !*reason)
        reason = r->state == XLATE_ACCEPTED  ? "Accepted"
                 : r->state == XLATE_WARNING ? "AcceptedWithWarnings"
                                             : "Invalid";
    if (add_condition(conds, "Accepted", r->state != XLATE_REJECTED, reason, r->message,
                      r->generation, current, now_wall_ns) != 0)
        goto fail;
    for (size_t i = 0; i < nextra; i++)
        if (add_condition(conds, extra[i].type, extra[i].ok, extra[i].reason, extra[i].message,
                          r->generation, current, now_wall_ns) != 0)
            goto fail;
    return st;
fail:
    cJSON_Delete(st);
    return NULL;
}

static int same_string(const cJSON *a, const cJSON *b, const char *key)
{
    const char *x = cx_json_str(a, key), *y = cx_json_str(b, key);
    if (!x || !y)
        return x == y;
    return strcmp(x, y) == 0;
}

static int same_number(const cJSON *a, const cJSON *b, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(a, key);
    const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, key);
    if (!cJSON_IsNumber(x) || !cJSON_IsNumber(y))
        return cJSON_IsNumber(x) == cJSON_IsNumber(y);
    return x->valuedouble == y->valuedouble;
}

int status_up_to_date(const cJSON *desired, const cJSON *current)
{
    if (!cJSON_IsObject(current))
        return 0;
    if (!same_string(desired, current, "state") ||
        !same_number(desired, current, "observedGeneration"))
        return 0;
    const cJSON *dc = cJSON_GetObjectItemCaseSensitive(desired, "conditions");
    const cJSON *cc = cJSON_GetObjectItemCaseSensitive(current, "conditions");
    if (cJSON_GetArraySize(dc) != cJSON_GetArraySize(cc))
        return 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, dc)
    {
        const cJSON *c = find_condition(current, cx_json_str(d, "type"));
        if (!c || !same_string(d, c, "status") || !same_string(d, c, "reason") ||
            !same_string(d, c, "message") || !same_number(d, c, "observedGeneration"))
            return 0;
    }
    return 1;
}
