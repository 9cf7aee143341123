/* Fuzz target: the answers the xDS and admin servers' authentication reads,
 * and the token bytes a client sends before any of it. Input: the JSON of
 * a TokenReview (then SubjectAccessReview) answer; the same bytes are also
 * the bearer token whose JWT exp the token cache reads before asking.
 * Properties: a verdict is OK only with a non-empty username that fits
 * (never cut: a cut ServiceAccount name would be another one), an OK
 * username maps to a ServiceAccount identity only when it is one (and the
 * identity reads back as that username), messages are terminated in their
 * buffers, and a JWT exp is 0 or a time the cache can compute with
 * (seconds since 1970, below year 2300) without overflow. */
#include "cx_json.h"
#include "daemon_auth.h"
#include "xds_auth.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_result(const struct xds_review_result *r)
{
    if (strnlen(r->username, sizeof(r->username)) >= sizeof(r->username) ||
        strnlen(r->message, sizeof(r->message)) >= sizeof(r->message))
        abort();
    if (r->outcome != XDS_REVIEW_OK && r->outcome != XDS_REVIEW_REJECTED)
        abort();
    if (r->outcome == XDS_REVIEW_REJECTED && r->username[0])
        abort();
}

static void check_identity(const char *user)
{
    struct xds_identity id;
    if (xds_identity_from_username(user, &id) != 0)
        return;
    char want[sizeof(id.ns) + sizeof(id.name) + 32];
    snprintf(want, sizeof(want), "system:serviceaccount:%s:%s", id.ns, id.name);
    if (strcmp(want, user) != 0)
        abort();
    char buf[600];
    (void)xds_identity_str(&id, buf, sizeof(buf));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The token, as the cache reads it before the review. */
    char *tok = malloc(size + 1);
    if (!tok)
        return 0;
    memcpy(tok, data, size);
    tok[size] = '\0';
    int64_t exp = xds_jwt_exp(tok);
    if (exp < 0 || exp > INT64_C(10413792000)) /* 2300-01-01 */
        abort();
    free(tok);

    cJSON *obj = cx_json_parse((const char *)data, size);
    if (!obj)
        return 0;
    struct xds_review_result r;
    const cJSON *user = daemon_auth_token_answer(obj, &r);
    check_result(&r);
    if ((r.outcome == XDS_REVIEW_OK) != (user != NULL))
        abort();
    if (r.outcome == XDS_REVIEW_OK) {
        if (!r.username[0])
            abort();
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(user, "username");
        if (!cJSON_IsString(name) || strcmp(name->valuestring, r.username) != 0)
            abort();
        check_identity(r.username);
    }
    daemon_auth_sar_answer(obj, "/debug/snapshot", &r);
    check_result(&r);
    if (r.outcome == XDS_REVIEW_OK)
        check_identity(r.username);
    cJSON_Delete(obj);
    return 0;
}
