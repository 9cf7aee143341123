#include "daemon_refs.h"

#include "cx_json.h"
#include "cx_map.h"
#include "xlate_api_types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A referenced object: its key and how many owners name it. */
struct target {
    size_t count;
    char key[]; /* "S/ns/name" or "C/ns/name" (the map's key) */
};

/* An owner and what it references (targets' keys). */
struct owner {
    size_t n;
    char **keys;
    char key[]; /* "G/ns/name" or "U/ns/name" */
};

struct daemon_refs {
    struct cx_map targets; /* "S/ns/name" -> struct target */
    struct cx_map owners;  /* "G/ns/name" -> struct owner */
    size_t counts[2];      /* distinct Secrets, ConfigMaps */
};

struct daemon_refs *daemon_refs_new(void)
{
    return calloc(1, sizeof(struct daemon_refs));
}

static void owner_free(struct owner *o)
{
    if (!o)
        return;
    for (size_t i = 0; i < o->n; i++)
        free(o->keys[i]);
    free(o->keys);
    free(o);
}

void daemon_refs_free(struct daemon_refs *r)
{
    if (!r)
        return;
    const struct cx_map_slot *s;
    for (size_t i = 0; cx_map_next(&r->targets, &i, &s);)
        free(s->val);
    for (size_t i = 0; cx_map_next(&r->owners, &i, &s);)
        owner_free(s->val);
    cx_map_free(&r->targets);
    cx_map_free(&r->owners);
    free(r);
}

/* every reference of a Gateway the translator accepts fits */
_Static_assert(DAEMON_REFS_MAX >= XLATE_MAX_GATEWAY_CERTIFICATES + 1 + XLATE_MAX_LISTENERS,
               "DAEMON_REFS_MAX below a Gateway's references");

/* ---- what an object names ------------------------------------------------------- */

static void add(struct daemon_ref *out, size_t max, size_t *n, enum xlate_kind kind,
                const char *own_ns, const cJSON *ref)
{
    const char *name = cx_json_str(ref, "name");
    const char *ns = cx_json_str(ref, "namespace");
    if (!name || !*name || *n >= max)
        return;
    struct daemon_ref d = {.kind = kind};
    int w = snprintf(d.key, sizeof(d.key), "%s/%s", ns && *ns ? ns : own_ns, name);
    if (w < 0 || (size_t)w >= sizeof(d.key))
        return;
    for (size_t i = 0; i < *n; i++)
        if (out[i].kind == kind && strcmp(out[i].key, d.key) == 0)
            return;
    out[(*n)++] = d;
}

/* The Secrets and the client CA a Gateway TLS block (spec.tls, or a
 * listener's tls) names. */
static void gateway_tls_refs(struct daemon_ref *out, size_t max, size_t *n, const char *ns,
                             const cJSON *tls)
{
    if (!cJSON_IsObject(tls))
        return;
    const cJSON *certs = cJSON_GetObjectItemCaseSensitive(tls, "certificates");
    if (!cJSON_IsArray(certs))
        certs = NULL;
    const cJSON *c;
    cJSON_ArrayForEach(c, certs)
    {
        add(out, max, n, XLATE_KIND_SECRET, ns, cx_json_path(c, "secretRef", NULL));
    }
    add(out, max, n, XLATE_KIND_CONFIG_MAP, ns,
        cx_json_path(tls, "clientValidation", "caConfigMapRef", NULL));
}

size_t daemon_refs_of(enum xlate_kind kind, const cJSON *obj, struct daemon_ref *out, size_t max)
{
    const char *ns = cx_json_path_str(obj, "metadata", "namespace", NULL);
    if (!ns || !*ns)
        ns = "default";
    const cJSON *tls = cx_json_path(obj, "spec", "tls", NULL);
    size_t n = 0;
    if (kind == XLATE_KIND_GATEWAY) {
        gateway_tls_refs(out, max, &n, ns, tls);
        const cJSON *ls = cx_json_path(obj, "spec", "listeners", NULL);
        if (!cJSON_IsArray(ls))
            ls = NULL;
        const cJSON *l;
        cJSON_ArrayForEach(l, ls)
        {
            gateway_tls_refs(out, max, &n, ns, cx_json_path(l, "tls", NULL));
        }
    } else if (kind == XLATE_KIND_UPSTREAM && cJSON_IsObject(tls)) {
        add(out, max, &n, XLATE_KIND_CONFIG_MAP, ns, cx_json_path(tls, "caConfigMapRef", NULL));
        add(out, max, &n, XLATE_KIND_SECRET, ns,
            cx_json_path(tls, "clientCertificate", "secretRef", NULL));
    }
    return n;
}

/* ---- the index ---------------------------------------------------------------------- */

static int kind_index(enum xlate_kind k)
{
    return k == XLATE_KIND_SECRET ? 0 : 1;
}

static char kind_char(enum xlate_kind k)
{
    return k == XLATE_KIND_SECRET ? 'S' : 'C';
}

/* Adds one to |tkey|'s count; *created = 1 when it is new. */
static int target_inc(struct daemon_refs *r, const char *tkey, int *created)
{
    struct target *t = cx_map_gets(&r->targets, tkey);
    *created = 0;
    if (t) {
        t->count++;
        return 0;
    }
    size_t l = strlen(tkey);
    t = calloc(1, sizeof(*t) + l + 1);
    if (!t)
        return -1;
    memcpy(t->key, tkey, l + 1);
    t->count = 1;
    if (cx_map_puts(&r->targets, t->key, t, NULL) != 0) {
        free(t);
        return -1;
    }
    *created = 1;
    r->counts[tkey[0] == 'S' ? 0 : 1]++;
    return 0;
}

/* Takes one from |tkey|'s count; 1 when it reached zero (removed). */
static int target_dec(struct daemon_refs *r, const char *tkey)
{
    struct target *t = cx_map_gets(&r->targets, tkey);
    if (!t || --t->count > 0)
        return 0;
    cx_map_dels(&r->targets, tkey);
    r->counts[tkey[0] == 'S' ? 0 : 1]--;
    free(t);
    return 1;
}

static void notify(daemon_refs_changed_fn changed, void *user, const char *tkey, int referenced)
{
    if (changed)
        changed(user, tkey[0] == 'S' ? XLATE_KIND_SECRET : XLATE_KIND_CONFIG_MAP, tkey + 2,
                referenced);
}

int daemon_refs_set(struct daemon_refs *r, enum xlate_kind owner_kind, const char *owner_key,
                    const cJSON *obj, daemon_refs_changed_fn changed, void *user)
{
    struct daemon_ref refs[DAEMON_REFS_MAX];
    size_t n = obj ? daemon_refs_of(owner_kind, obj, refs, DAEMON_REFS_MAX) : 0;
    return daemon_refs_set_list(r, owner_kind, owner_key, refs, n, changed, user);
}

int daemon_refs_set_list(struct daemon_refs *r, enum xlate_kind owner_kind, const char *owner_key,
                         const struct daemon_ref *refs, size_t n, daemon_refs_changed_fn changed,
                         void *user)
{
    char okey[DAEMON_REFS_KEY_MAX + 2];
    snprintf(okey, sizeof(okey), "%c/%s", owner_kind == XLATE_KIND_GATEWAY ? 'G' : 'U', owner_key);
    if (n > DAEMON_REFS_MAX)
        n = DAEMON_REFS_MAX;
    struct owner *old = cx_map_gets(&r->owners, okey);
    if (n == 0 && !old)
        return 0;
    /* the new owner record first: nothing changes if memory runs out */
    struct owner *o = NULL;
    if (n) {
        size_t l = strlen(okey);
        o = calloc(1, sizeof(*o) + l + 1);
        if (!o || !(o->keys = calloc(n, sizeof(*o->keys))))
            goto oom;
        memcpy(o->key, okey, l + 1);
        for (size_t i = 0; i < n; i++) {
            size_t kl = strlen(refs[i].key);
            if (!(o->keys[i] = malloc(kl + 3)))
                goto oom;
            o->keys[i][0] = kind_char(refs[i].kind);
            o->keys[i][1] = '/';
            memcpy(o->keys[i] + 2, refs[i].key, kl + 1);
            o->n++;
        }
        if (cx_map_puts(&r->owners, o->key, o, NULL) != 0)
            goto oom;
    } else {
        cx_map_dels(&r->owners, okey);
    }
    /* new counts before old ones go, so a key in both never drops to 0 */
    char *born[DAEMON_REFS_MAX];
    size_t nborn = 0;
    for (size_t i = 0; o && i < o->n; i++) {
        int created = 0;
        if (target_inc(r, o->keys[i], &created) != 0) {
            /* undo: the owner keeps its old references */
            for (size_t k = 0; k < i; k++)
                (void)target_dec(r, o->keys[k]);
            if (old) {
                /* puts back what |o| replaced: allocates nothing, cannot fail */
                int rc = cx_map_puts(&r->owners, old->key, old, NULL);
                (void)rc;
            } else {
                cx_map_dels(&r->owners, okey);
            }
            owner_free(o);
            return -1;
        }
        if (created)
            born[nborn++] = o->keys[i];
    }
    for (size_t i = 0; old && i < old->n; i++)
        if (target_dec(r, old->keys[i]))
            notify(changed, user, old->keys[i], 0);
    for (size_t i = 0; i < nborn; i++)
        notify(changed, user, born[i], 1);
    owner_free(old);
    return 0;
oom:
    owner_free(o);
    return -1;
}

int daemon_refs_has(const struct daemon_refs *r, enum xlate_kind kind, const char *ns,
                    const char *name)
{
    char key[DAEMON_REFS_KEY_MAX + 2];
    int w = snprintf(key, sizeof(key), "%c/%s/%s", kind_char(kind), ns, name);
    if (w < 0 || (size_t)w >= sizeof(key))
        return 0;
    return cx_map_gets(&r->targets, key) != NULL;
}

size_t daemon_refs_count(const struct daemon_refs *r, enum xlate_kind kind)
{
    return r->counts[kind_index(kind)];
}
