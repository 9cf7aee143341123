/* Fuzz target: what a new leader reads back of what a previous leader (or
 * anyone with write access) left in the API: an object's .status, compared
 * with the status it would write, and a ProxySnapshot, compared with the
 * version it would publish. Input: one flags byte (the kind, the verdict,
 * extra conditions), then the object's JSON. The object is decoded as the
 * informers keep it (store_obj), its status and generation read back, and
 * the desired status built over that current one. Properties: never a
 * crash or leak; the desired status is what the verdict says whatever the
 * current one holds; writing it and reading it back leaves nothing to
 * write (no write loop between two leaders); a ProxySnapshot's version
 * reads as a string. */
#include "cx_json.h"
#include "kube_cache.h"
#include "publish.h"
#include "status_build.h"
#include "store_obj.h"
#include "xlate_snapshot.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const enum xlate_kind kinds[] = {XLATE_KIND_GATEWAY, XLATE_KIND_VIRTUAL_SERVICE,
                                        XLATE_KIND_ROUTE_TABLE, XLATE_KIND_UPSTREAM};
static const char *const kind_names[] = {"Gateway", "VirtualService", "RouteTable", "Upstream"};

static struct store_decoder decoder;

#define NOW1 ((int64_t)1767225600 * 1000000000) /* 2026-01-01 */
#define NOW2 (NOW1 + (int64_t)3600 * 1000000000)

static void check_desired(const cJSON *d, const struct xlate_report *r, size_t nextra)
{
    const char *state = cx_json_str(d, "state");
    if (!state || strcmp(state, xlate_state_name(r->state)) != 0)
        abort();
    const cJSON *conds = cJSON_GetObjectItemCaseSensitive(d, "conditions");
    if ((size_t)cJSON_GetArraySize(conds) != 1 + nextra)
        abort();
    const cJSON *c;
    cJSON_ArrayForEach(c, conds)
    {
        const char *ts = cx_json_str(c, "lastTransitionTime");
        const char *msg = cx_json_str(c, "message");
        if (!ts || !msg || strlen(msg) > STATUS_MESSAGE_MAX)
            abort();
    }
}

static void statuses(enum xlate_kind kind, const char *kind_name, uint8_t flags,
                     const struct kube_obj *o)
{
    cJSON *cur = store_obj_status(o);
    struct xlate_report r = {
        .kind = (char *)kind_name,
        .namespace = (char *)o->ns,
        .name = (char *)o->name,
        .uid = (char *)o->uid,
        .generation = store_kube_generation(o),
        .state = (enum xlate_state)((flags >> 2) % 3),
        .reason = (flags & 0x20) ? "InvalidRegex" : NULL,
        .message = (flags & 0x40) ? "route 0: regex \"(\" does not compile" : "",
    };
    (void)kind;
    struct status_condition extra[] = {
        {"XdsAccepted", 1, "Accepted", "served"},
        {"ProgrammedByLeader", (flags & 0x80) != 0, NULL, NULL},
    };
    size_t nextra = (flags >> 5) & 1 ? 2 : 0;
    cJSON *d1 = status_desired(&r, extra, nextra, cur, NOW1);
    if (d1) {
        check_desired(d1, &r, nextra);
        (void)status_up_to_date(d1, cur);
        /* Written, then read back by the next leader an hour later. */
        char *text = cJSON_PrintUnformatted(d1);
        cJSON *back = text ? cx_json_parse(text, strlen(text)) : NULL;
        if (back) {
            cJSON *d2 = status_desired(&r, extra, nextra, back, NOW2);
            if (d2) {
                if (!status_up_to_date(d2, back))
                    abort();
                /* the transition times are kept */
                char *t2 = cJSON_PrintUnformatted(d2);
                if (t2 && strcmp(t2, text) != 0)
                    abort();
                free(t2);
                cJSON_Delete(d2);
            }
            cJSON_Delete(back);
        }
        free(text);
        cJSON_Delete(d1);
    }
    cJSON_Delete(cur);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static int inited;
    if (!inited) {
        store_decoder_init(&decoder, NULL);
        inited = 1;
    }
    uint8_t flags = data[0];
    cJSON *json = cx_json_parse((const char *)data + 1, size - 1);
    if (!json)
        return 0;
    /* As a ProxySnapshot (the informer keeps its JSON). */
    cJSON *snap = cJSON_Duplicate(json, 1);
    struct kube_obj *so = snap ? kube_obj_new(snap) : NULL;
    if (so) {
        const char *v = publish_obj_version(so);
        if (!v)
            abort();
        (void)strlen(v);
        (void)publish_obj_is_ours(so);
        kube_obj_unref(so);
    } else {
        cJSON_Delete(snap);
    }
    if (!publish_obj_version(NULL) || *publish_obj_version(NULL))
        abort();
    /* As an object whose status the leader writes: kept JSON, and the
     * decoded form the daemon keeps. */
    unsigned k = flags & 3;
    for (int decoded = 0; decoded < 2; decoded++) {
        cJSON *copy = cJSON_Duplicate(json, 1);
        struct kube_obj *o = copy ? kube_obj_new(copy) : NULL;
        if (!o) {
            cJSON_Delete(copy);
            break;
        }
        if (decoded) {
            struct store_obj *rec = store_obj_decode(&decoder, kinds[k], copy, NULL, 0);
            if (rec)
                kube_obj_keep_rec(o, rec, &store_obj_ops);
        }
        statuses(kinds[k], kind_names[k], flags, o);
        kube_obj_unref(o);
    }
    cJSON_Delete(json);
    return 0;
}
