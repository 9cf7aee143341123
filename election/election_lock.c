#include "election_lock.h"

#include "cx_json.h"
#include "election_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

void election_lock_init(struct election_lock *l, const struct election_config *cfg,
                        const struct election_kube_ops *ops)
{
    memset(l, 0, sizeof(*l));
    l->kind = cfg->lock;
    l->res = cfg->lock == ELECTION_LOCK_LEASES ? ELECTION_RES_LEASES : ELECTION_RES_CONFIGMAPS;
    l->ops = ops;
    copy_str(l->ns, sizeof(l->ns), cfg->ns);
    copy_str(l->name, sizeof(l->name), cfg->name);
    snprintf(l->field_selector, sizeof(l->field_selector), "metadata.name=%s", cfg->name);
}

void election_lock_free(struct election_lock *l)
{
    cJSON_Delete(l->last);
    l->last = NULL;
}

static bool older(const char *a, const char *b)
{
    char *ea, *eb;
    unsigned long long x = strtoull(a, &ea, 10), y = strtoull(b, &eb, 10);
    return *a && *b && !*ea && !*eb && x < y;
}

void election_lock_take(struct election_lock *l, cJSON *obj, struct election_observation *out)
{
    election_record_decode(l->kind, obj, out);
    if (l->last && older(out->rv, l->last_rv)) {
        cJSON_Delete(obj);
        return;
    }
    cJSON_Delete(l->last);
    l->last = obj;
    copy_str(l->last_rv, sizeof(l->last_rv), out->rv);
    const char *uid = cx_json_path_str(obj, "metadata", "uid", (char *)NULL);
    if (uid)
        copy_str(l->uid, sizeof(l->uid), uid);
}

void election_lock_forget(struct election_lock *l)
{
    cJSON_Delete(l->last);
    l->last = NULL;
    l->last_rv[0] = '\0';
}

static int64_t to_ms(int64_t ns)
{
    int64_t ms = (ns + 999999) / 1000000;
    return ms < 1 ? 1 : ms;
}

struct election_kube_call *election_lock_send(struct election_lock *l,
                                              const struct election_action *a,
                                              election_kube_done_fn cb, void *user_data)
{
    int64_t ms = to_ms(a->timeout_ns);
    struct election_kube_call *call = NULL;
    cJSON *obj = NULL;
    switch (a->req) {
    case ELECTION_REQ_GET:
        call = l->ops->get(l->conn, l->res, l->ns, l->name, ms, cb, user_data);
        break;
    case ELECTION_REQ_CREATE:
        obj = election_record_new_object(l->kind, l->ns, l->name, &a->rec);
        if (obj)
            call = l->ops->create(l->conn, l->res, l->ns, obj, ms, cb, user_data);
        break;
    case ELECTION_REQ_UPDATE:
        /* The kept object is the base only if it is the version the core
         * decided on; otherwise a fresh body (the 409 will tell). */
        obj = election_record_update_object(
            l->kind, l->last && strcmp(l->last_rv, a->rv) == 0 ? l->last : NULL, l->ns, l->name,
            a->rv, &a->rec);
        if (obj)
            call = l->ops->update(l->conn, l->res, l->ns, obj, ms, cb, user_data);
        break;
    }
    cJSON_Delete(obj);
    return call;
}

struct election_kube_call *election_lock_list(struct election_lock *l, int64_t timeout_ns,
                                              election_kube_done_fn cb, void *user_data)
{
    return l->ops->list(l->conn, l->res, l->ns, l->field_selector, to_ms(timeout_ns), cb,
                        user_data);
}

struct election_kube_watch *election_lock_watch(struct election_lock *l, const char *rv,
                                                int64_t stall_ms,
                                                const struct election_kube_watch_handlers *h,
                                                void *user_data)
{
    return l->ops->watch(l->conn, l->res, l->ns, l->field_selector, rv, stall_ms, h, user_data);
}

enum election_outcome election_lock_outcome(enum election_err_class cls)
{
    switch (cls) {
    case ELECTION_ERR_NONE:
        return ELECTION_OK;
    case ELECTION_ERR_NOT_FOUND:
        return ELECTION_NOT_FOUND;
    case ELECTION_ERR_CONFLICT:
    case ELECTION_ERR_EXISTS:
        return ELECTION_CONFLICT;
    case ELECTION_ERR_TIMEOUT:
        return ELECTION_TIMEOUT;
    default:
        return ELECTION_FAILED;
    }
}

const char *election_req_verb(enum election_req_kind k)
{
    switch (k) {
    case ELECTION_REQ_GET:
        return "get";
    case ELECTION_REQ_CREATE:
        return "create";
    case ELECTION_REQ_UPDATE:
        return "update";
    }
    return "?";
}

const char *election_kube_res_name(enum election_kube_res res)
{
    switch (res) {
    case ELECTION_RES_LEASES:
        return "leases";
    case ELECTION_RES_CONFIGMAPS:
        return "configmaps";
    case ELECTION_RES_EVENTS:
        return "events";
    }
    return "?";
}
