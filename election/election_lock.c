#include "election_lock.h"

#include "cx_json.h"
#include "election_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct kube_resource election_res_leases = {"coordination.k8s.io", "v1", "leases", "Lease",
                                                  1};
const struct kube_resource election_res_configmaps = {"", "v1", "configmaps", "ConfigMap", 1};
const struct kube_resource election_res_events = {"", "v1", "events", "Event", 1};

static void copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

void election_lock_init(struct election_lock *l, const struct election_config *cfg)
{
    memset(l, 0, sizeof(*l));
    l->kind = cfg->lock;
    l->res = cfg->lock == ELECTION_LOCK_LEASES ? &election_res_leases : &election_res_configmaps;
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

struct kube_call *election_lock_send(struct election_lock *l, struct kube_client *kc,
                                     const struct election_action *a, kube_result_fn cb,
                                     void *user_data)
{
    struct kube_req_opts o = {
        .timeout_ms = to_ms(a->timeout_ns),
        .deadline_ms = to_ms(a->timeout_ns),
        .max_attempts = 1,
    };
    struct kube_call *call = NULL;
    cJSON *obj = NULL;
    switch (a->req) {
    case ELECTION_REQ_GET:
        call = kube_get(kc, l->res, l->ns, l->name, &o, cb, user_data);
        break;
    case ELECTION_REQ_CREATE:
        obj = election_record_new_object(l->kind, l->ns, l->name, &a->rec);
        if (obj)
            call = kube_create(kc, l->res, l->ns, obj, &o, cb, user_data);
        break;
    case ELECTION_REQ_UPDATE:
        /* The kept object is the base only if it is the version the core
         * decided on; otherwise a fresh body (the 409 will tell). */
        obj = election_record_update_object(
            l->kind, l->last && strcmp(l->last_rv, a->rv) == 0 ? l->last : NULL, l->ns, l->name,
            a->rv, &a->rec);
        if (obj)
            call = kube_update(kc, l->res, l->ns, obj, 0, &o, cb, user_data);
        break;
    }
    cJSON_Delete(obj);
    return call;
}

struct kube_call *election_lock_list(struct election_lock *l, struct kube_client *kc,
                                     int64_t timeout_ns, kube_result_fn cb, void *user_data)
{
    struct kube_list_opts lo = {.field_selector = l->field_selector};
    struct kube_req_opts o = {.timeout_ms = to_ms(timeout_ns), .max_attempts = 1};
    return kube_list(kc, l->res, l->ns, &lo, &o, cb, user_data);
}

struct kube_watch *election_lock_watch(struct election_lock *l, struct kube_client *kc,
                                       const char *rv, int64_t stall_ms,
                                       const struct kube_watch_handlers *h, void *user_data)
{
    struct kube_watch_opts wo = {
        .resource_version = rv,
        .field_selector = l->field_selector,
        .allow_bookmarks = 1,
        .stall_ms = stall_ms,
    };
    return kube_watch_start(kc, l->res, l->ns, &wo, h, user_data);
}

enum election_outcome election_lock_outcome(enum kube_err_code code)
{
    switch (code) {
    case KUBE_OK:
        return ELECTION_OK;
    case KUBE_E_NOT_FOUND:
        return ELECTION_NOT_FOUND;
    case KUBE_E_CONFLICT:
    case KUBE_E_ALREADY_EXISTS:
        return ELECTION_CONFLICT;
    case KUBE_E_TIMEOUT:
        return ELECTION_TIMEOUT;
    default:
        return ELECTION_FAILED;
    }
}
