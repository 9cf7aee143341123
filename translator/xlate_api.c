/*
 * Parsing of coxswain's resources (xlate_api.h): kinds, metadata, each
 * kind's spec; routes are in xlate_api_route.c, TLS settings, Secrets and
 * ConfigMaps in xlate_api_tls.c, the parse context in xlate_api_read.c.
 */
#include "xlate_api_parse.h"

#include "filter_selector.h"
#include "xlate.h"
#include "xlate_cluster.h"
#include "xlate_route.h"

#include "cx_hash.h"
#include "cx_time.h"

#include <openssl/crypto.h>

#include <stdlib.h>
#include <string.h>

static const char *const reason_names[XL_R_COUNT] = {
    [XL_R_NONE] = "Accepted",
    [XL_R_INVALID_SPEC] = "InvalidSpec",
    [XL_R_UNKNOWN_FIELD] = "UnknownField",
    [XL_R_INVALID_REGEX] = "InvalidRegex",
    [XL_R_INVALID_WEIGHTS] = "InvalidWeights",
    [XL_R_INVALID_PORT] = "InvalidPort",
    [XL_R_INVALID_DOMAIN] = "InvalidDomain",
    [XL_R_UNSUPPORTED_VERSION] = "UnsupportedVersion",
    [XL_R_DUPLICATE] = "DuplicateObject",
    [XL_R_DOMAIN_CONFLICT] = "DomainConflict",
    [XL_R_UPSTREAM_NOT_FOUND] = "UpstreamNotFound",
    [XL_R_UPSTREAM_REJECTED] = "UpstreamRejected",
    [XL_R_ROUTE_TABLE_NOT_FOUND] = "RouteTableNotFound",
    [XL_R_ROUTE_TABLE_REJECTED] = "RouteTableRejected",
    [XL_R_DELEGATION_CYCLE] = "DelegationCycle",
    [XL_R_PREFIX_VIOLATION] = "PrefixViolation",
    [XL_R_DELEGATION_DEPTH] = "DelegationTooDeep",
    [XL_R_NO_ROUTES] = "NoValidRoutes",
    [XL_R_NOT_SELECTED] = "NotSelected",
    [XL_R_SERVICE_NOT_FOUND] = "ServiceNotFound",
    [XL_R_PORT_NOT_FOUND] = "ServicePortNotFound",
    [XL_R_NO_ENDPOINTS] = "NoReadyEndpoints",
    [XL_R_UNSUPPORTED] = "UnsupportedByProxyless",
    [XL_R_REGEX_SIZE] = "RegexProgramSize",
    [XL_R_UNKNOWN_KIND] = "UnknownKind",
    [XL_R_SECRET_NOT_FOUND] = "SecretNotFound",
    [XL_R_CONFIG_MAP_NOT_FOUND] = "ConfigMapNotFound",
    [XL_R_REF_NOT_PERMITTED] = "RefNotPermitted",
    [XL_R_INVALID_CERTIFICATE] = "InvalidCertificate",
    [XL_R_CERT_EXPIRED] = "CertificateExpired",
    [XL_R_CERT_NOT_YET_VALID] = "CertificateNotYetValid",
    [XL_R_DOMAIN_NOT_COVERED] = "DomainNotCovered",
    [XL_R_CERT_UNUSED] = "CertificateUnused",
    [XL_R_BUDGET] = "BudgetExceeded",
    [XL_R_HASH_IGNORED] = "HashPolicyIgnored",
    [XL_R_LISTENER_CONFLICT] = "ListenerConflict",
    [XL_R_LISTENER_NOT_FOUND] = "ListenerNotFound",
};

const char *xlate_reason_name(enum xl_reason r)
{
    return (unsigned)r < XL_R_COUNT && reason_names[r] ? reason_names[r] : "Unknown";
}

static const struct {
    const char *api_version, *kind;
} kinds[XLATE_KIND_COUNT] = {
    [XLATE_KIND_GATEWAY] = {XLATE_GROUP_VERSION, "Gateway"},
    [XLATE_KIND_VIRTUAL_SERVICE] = {XLATE_GROUP_VERSION, "VirtualService"},
    [XLATE_KIND_ROUTE_TABLE] = {XLATE_GROUP_VERSION, "RouteTable"},
    [XLATE_KIND_UPSTREAM] = {XLATE_GROUP_VERSION, "Upstream"},
    [XLATE_KIND_SERVICE] = {"v1", "Service"},
    [XLATE_KIND_ENDPOINT_SLICE] = {"discovery.k8s.io/v1", "EndpointSlice"},
    [XLATE_KIND_SECRET] = {"v1", "Secret"},
    [XLATE_KIND_CONFIG_MAP] = {"v1", "ConfigMap"},
};

enum xlate_kind xlate_kind_of(const cJSON *obj)
{
    const char *kind = cx_json_str(obj, "kind");
    const char *av = cx_json_str(obj, "apiVersion");
    if (!kind || !av)
        return XLATE_KIND_UNKNOWN;
    for (int k = 0; k < XLATE_KIND_COUNT; k++) {
        if (strcmp(kind, kinds[k].kind) != 0)
            continue;
        /* Our kinds in another version of our group are still ours: the
         * parse reports the version as unsupported. */
        const char *slash = strchr(kinds[k].api_version, '/');
        size_t glen = slash ? (size_t)(slash - kinds[k].api_version) : 0;
        if (strcmp(av, kinds[k].api_version) == 0 ||
            (glen && strncmp(av, kinds[k].api_version, glen + 1) == 0 && k <= XLATE_KIND_UPSTREAM))
            return (enum xlate_kind)k;
    }
    return XLATE_KIND_UNKNOWN;
}

const char *xlate_kind_name(enum xlate_kind k)
{
    return (k >= 0 && k < XLATE_KIND_COUNT) ? kinds[k].kind : "Unknown";
}

/* ---- metadata ---------------------------------------------------------------- */

static void parse_meta(struct pctx *p, const cJSON *obj)
{
    struct xl_meta *m = &p->o->meta;
    const cJSON *md = cx_json_member(obj, "metadata");
    /* one walk over metadata's members (every object has one; most have a
     * few members more than these); the first of a name counts, as
     * cJSON_GetObjectItem finds it */
    const char *ns = NULL, *name = NULL, *uid = NULL, *creation = NULL;
    const cJSON *gen = NULL, *labels = NULL;
    int seen_ns = 0, seen_name = 0, seen_uid = 0, seen_creation = 0;
    const cJSON *c;
    for (c = cJSON_IsObject(md) ? md->child : NULL; c; c = c->next) {
        cx_json_prefetch(c);
        const char *k = c->string;
        if (!k)
            continue;
        const char *v = cJSON_IsString(c) ? c->valuestring : NULL;
        switch (k[0]) {
        case 'n':
            if (!seen_ns && strcmp(k, "namespace") == 0) {
                seen_ns = 1;
                ns = v;
            } else if (!seen_name && strcmp(k, "name") == 0) {
                seen_name = 1;
                name = v;
            }
            break;
        case 'u':
            if (!seen_uid && strcmp(k, "uid") == 0) {
                seen_uid = 1;
                uid = v;
            }
            break;
        case 'c':
            if (!seen_creation && strcmp(k, "creationTimestamp") == 0) {
                seen_creation = 1;
                creation = v;
            }
            break;
        case 'g':
            if (!gen && strcmp(k, "generation") == 0)
                gen = c;
            break;
        case 'l':
            if (!labels && strcmp(k, "labels") == 0)
                labels = c;
            break;
        default:
            break;
        }
    }
    m->ns = pstrdup(p, ns && *ns ? ns : "default");
    m->name = pstrdup(p, name ? name : "");
    /* what reads them: reports (uid: the kinds with a status) and domain
     * claims (creation: VirtualServices); the other kinds, most of a
     * world's objects, keep neither (~60 bytes a record) */
    enum xlate_kind k = p->o->kind;
    int reported = k == XLATE_KIND_GATEWAY || k == XLATE_KIND_VIRTUAL_SERVICE ||
                   k == XLATE_KIND_ROUTE_TABLE || k == XLATE_KIND_UPSTREAM;
    m->uid = uid && reported ? pstrdup(p, uid) : NULL;
    m->creation = k == XLATE_KIND_VIRTUAL_SERVICE ? pstrdup(p, creation) : NULL;
    m->generation = cx_json_int(gen, 0, INT64_MAX, 0); /* 1e300 or -1 from the wire */
    size_t n = 0;
    const cJSON *l;
    cJSON_ArrayForEach(l, labels)
    {
        if (cJSON_IsString(l) && l->string)
            n++;
    }
    if (n) {
        m->labels = palloc(p, n * sizeof(*m->labels));
        if (!m->labels)
            return;
        cJSON_ArrayForEach(l, labels)
        {
            if (cJSON_IsString(l) && l->string) {
                m->labels[m->nlabels].key = pstrdup(p, l->string);
                m->labels[m->nlabels].value = pstrdup(p, l->valuestring);
                m->nlabels++;
            }
        }
        if (m->nlabels > 1)
            qsort(m->labels, m->nlabels, sizeof(*m->labels), xlate_label_cmp);
    }
    if (!md || !cJSON_IsObject(md))
        REJECT(p, XL_R_INVALID_SPEC, "metadata: required");
    else if (!name || !*name)
        REJECT(p, XL_R_INVALID_SPEC, "metadata.name: required");
}

/* ---- kinds -------------------------------------------------------------- */

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* spec.xdsAccess: {serviceAccounts: [{namespace, name}], allowUnauthenticated}. */
static void parse_gateway_access(struct pctx *p, const cJSON *acc, struct xl_gateway_access *a)
{
    static const char *const allowed[] = {"serviceAccounts", "allowUnauthenticated", NULL};
    xlate_check_fields(p, acc, allowed);
    get_bool(p, acc, "allowUnauthenticated", &a->unauthenticated);
    const cJSON *sas = get_arr(p, acc, "serviceAccounts", 0, XLATE_MAX_XDS_ACCESS);
    if (!sas)
        return;
    a->sas = palloc(p, (cx_json_count(sas) + 1) * sizeof(*a->sas));
    if (!a->sas)
        return;
    size_t i = 0;
    const cJSON *sa;
    cJSON_ArrayForEach(sa, sas)
    {
        size_t o = xlate_path_push(p, ".serviceAccounts[%zu]", i++);
        static const char *const fields[] = {"namespace", "name", NULL};
        char *ns = NULL, *name = NULL;
        if (!cJSON_IsObject(sa)) {
            REJECT(p, XL_R_INVALID_SPEC, "must be an object, got %s", jtype(sa));
        } else {
            xlate_check_fields(p, sa, fields);
            if (get_str(p, sa, "namespace", 1, &ns) == 1 && !cx_kname_is_label(ns)) {
                size_t o2 = push_lit(p, ".namespace");
                REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not a valid namespace name", ns);
                pop(p, o2);
                ns = NULL;
            }
            if (get_str(p, sa, "name", 1, &name) == 1 && strcmp(name, "*") != 0 &&
                !cx_kname_is_subdomain(name)) {
                size_t o2 = push_lit(p, ".name");
                REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not a valid ServiceAccount name (or \"*\")",
                       name);
                pop(p, o2);
                name = NULL;
            }
            if (ns && name)
                a->sas[a->n++] = (struct xlate_sa_ref){.ns = ns, .name = name};
        }
        pop(p, o);
    }
}

static void parse_gateway(struct pctx *p, const cJSON *spec)
{
    struct xl_gateway *g = &p->o->u.gw;
    static const char *const allowed[] = {"mode",
                                          "bindAddress",
                                          "bindPort",
                                          "virtualServiceSelector",
                                          "virtualServiceNamespaces",
                                          "tls",
                                          "xdsAccess",
                                          "listeners",
                                          "accessLog",
                                          NULL};
    xlate_check_fields(p, spec, allowed);
    char *mode = NULL;
    g->mode = XLATE_MODE_ENVOY;
    if (get_str(p, spec, "mode", 0, &mode) == 1) {
        if (strcmp(mode, "proxyless") == 0) {
            g->mode = XLATE_MODE_PROXYLESS;
        } else if (strcmp(mode, "envoy") != 0) {
            size_t o = push_lit(p, ".mode");
            REJECT(p, XL_R_INVALID_SPEC, "must be \"envoy\" or \"proxyless\", got \"%s\"", mode);
            pop(p, o);
        }
    }
    g->bind_address = "0.0.0.0";
    int has_addr = get_str(p, spec, "bindAddress", 0, &g->bind_address) == 1;
    if (has_addr && !xlate_is_ip(g->bind_address)) {
        size_t o = push_lit(p, ".bindAddress");
        REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not an IP address", g->bind_address);
        pop(p, o);
    }
    uint64_t port = 8080;
    int has_port = get_uint(p, spec, "bindPort", 0, 1, 65535, XL_R_INVALID_PORT, &port) != 0;
    g->bind_port = (uint32_t)port;
    if (g->mode == XLATE_MODE_PROXYLESS && (has_addr || has_port)) {
        size_t o = xlate_path_push(p, ".%s", has_port ? "bindPort" : "bindAddress");
        WARN(p, XL_R_UNSUPPORTED, "ignored in proxyless mode (gRPC clients open no listener)");
        pop(p, o);
    }
    const cJSON *sel = get(spec, "virtualServiceSelector");
    if (sel) {
        size_t o = push_lit(p, ".virtualServiceSelector");
        g->vs_selector = xlate_parse_selector(p, sel);
        pop(p, o);
    }
    const cJSON *nss = get_arr(p, spec, "virtualServiceNamespaces", 0, XLATE_MAX_NAMESPACES);
    if (nss) {
        size_t n = cx_json_count(nss);
        g->vs_namespaces = palloc(p, n * sizeof(char *));
        if (!g->vs_namespaces)
            return;
        size_t i = 0;
        const cJSON *ns;
        cJSON_ArrayForEach(ns, nss)
        {
            size_t o = xlate_path_push(p, ".virtualServiceNamespaces[%zu]", i++);
            if (!cJSON_IsString(ns)) {
                REJECT(p, XL_R_INVALID_SPEC, "must be a string, got %s", jtype(ns));
            } else if (strcmp(ns->valuestring, "*") == 0) {
                g->all_namespaces = 1;
            } else if (!cx_kname_is_label(ns->valuestring)) {
                REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not a valid namespace name (or \"*\")",
                       ns->valuestring);
            } else {
                g->vs_namespaces[g->n_vs_namespaces++] = pstrdup(p, ns->valuestring);
            }
            pop(p, o);
        }
        qsort(g->vs_namespaces, g->n_vs_namespaces, sizeof(char *), str_cmp);
    }
    if (!nss || (!g->all_namespaces && g->n_vs_namespaces == 0)) {
        g->vs_namespaces = palloc(p, sizeof(char *));
        if (g->vs_namespaces) {
            g->vs_namespaces[0] = p->o->meta.ns;
            g->n_vs_namespaces = 1;
        }
    }
    const cJSON *acc = get_obj(p, spec, "xdsAccess", 0);
    if (acc) {
        size_t o = push_lit(p, ".xdsAccess");
        parse_gateway_access(p, acc, &g->access);
        pop(p, o);
    }
    const cJSON *tls = get_obj(p, spec, "tls", 0);
    if (tls) {
        size_t o = push_lit(p, ".tls");
        if ((g->tls = palloc(p, sizeof(*g->tls))))
            xlate_parse_gateway_tls(p, tls, g->tls);
        if (g->mode == XLATE_MODE_PROXYLESS)
            WARN(p, XL_R_UNSUPPORTED,
                 "ignored in proxyless mode: gRPC clients take their TLS settings from the "
                 "certificate providers of their xDS bootstrap, so these are not applied");
        pop(p, o);
    }
    xlate_parse_gateway_listeners(p, get(spec, "listeners"), g, has_port && get(spec, "bindPort"));
    xlate_parse_access_logs(p, get(spec, "accessLog"), g);
}

/* A VirtualService's claim order and claim hash (struct xl_virtual_service),
 * whether or not its spec parsed. */
static void claim_fields(struct xl_object *o)
{
    struct xl_virtual_service *vs = &o->u.vs;
    int64_t ns = 0;
    vs->has_created =
        o->meta.creation && *o->meta.creation && cx_time_parse_rfc3339(o->meta.creation, &ns) == 0;
    vs->created = vs->has_created ? ns / CX_NS_PER_S : 0;
    uint64_t h = xlate_fnv_str(CX_FNV64_INIT, o->meta.creation);
    for (size_t i = 0; i < vs->ndomains; i++)
        h = xlate_fnv_str(h, vs->domains[i]);
    vs->claim_hash = h;
}

static void parse_virtual_service(struct pctx *p, const cJSON *spec)
{
    struct xl_virtual_service *vs = &p->o->u.vs;
    static const char *const allowed[] = {"domains",   "routes",    "requireTls", "cors",
                                          "rateLimit", "listeners", NULL};
    const cJSON *f[6];
    xlate_fields(p, spec, allowed, f);
    xlate_parse_vs_ext(p, f[2], f[3], f[4], f[5], vs);
    const cJSON *doms = arr_v(p, f[0], "domains", 1, XLATE_MAX_DOMAINS);
    if (doms) {
        vs->domains = palloc(p, cx_json_count(doms) * sizeof(char *));
        if (!vs->domains)
            return;
        size_t i = 0;
        const cJSON *d;
        cJSON_ArrayForEach(d, doms)
        {
            size_t o = xlate_path_push(p, ".domains[%zu]", i++);
            char msg[200];
            if (!cJSON_IsString(d)) {
                REJECT(p, XL_R_INVALID_SPEC, "must be a string, got %s", jtype(d));
            } else if (xlate_domain_valid(d->valuestring, msg, sizeof(msg)) != 0) {
                REJECT(p, XL_R_INVALID_DOMAIN, "invalid domain \"%.100s\": %s", d->valuestring,
                       msg);
            } else {
                int dupl = 0;
                for (size_t k = 0; k < vs->ndomains; k++)
                    if (strcasecmp(vs->domains[k], d->valuestring) == 0)
                        dupl = 1;
                if (dupl)
                    REJECT(p, XL_R_INVALID_DOMAIN, "duplicate domain \"%s\"", d->valuestring);
                else
                    vs->domains[vs->ndomains++] = pstrdup(p, d->valuestring);
            }
            pop(p, o);
        }
    }
    xlate_parse_routes(p, f[1], &vs->routes, &vs->nroutes);
}

/* spec.ringHash: Envoy's RingHashLbConfig sizes, each 1-8M, minimum at
 * most maximum; only with lbPolicy RingHash (Envoy refuses a ring_hash
 * config on another policy). Called after lbPolicy is parsed. */
static void parse_ring_hash(struct pctx *p, const cJSON *ring, struct xl_upstream *u)
{
    static const char *const allowed[] = {"minimumRingSize", "maximumRingSize", NULL};
    size_t o = push_lit(p, ".ringHash");
    xlate_check_fields(p, ring, allowed);
    uint64_t lo = 0, hi = 0;
    int hlo = get_uint(p, ring, "minimumRingSize", 0, 1, XLATE_MAX_RING_SIZE, XL_R_INVALID_SPEC,
                       &lo) == 1;
    int hhi = get_uint(p, ring, "maximumRingSize", 0, 1, XLATE_MAX_RING_SIZE, XL_R_INVALID_SPEC,
                       &hi) == 1;
    if (hlo && hhi && lo > hi)
        REJECT(p, XL_R_INVALID_SPEC,
               "minimumRingSize (%llu) must not be greater than maximumRingSize (%llu)",
               (unsigned long long)lo, (unsigned long long)hi);
    if (u->lb != XL_LB_RING_HASH)
        REJECT(p, XL_R_INVALID_SPEC, "needs lbPolicy: RingHash");
    u->ring_min = (uint32_t)lo;
    u->ring_max = (uint32_t)hi;
    pop(p, o);
}

/* "<a>/<b>" in the arena: the key the translator looks a Service up by.
 * NULL when either is missing or they are longer than any Kubernetes
 * names (nothing has that key). */
static char *pjoin(struct pctx *p, const char *a, const char *b)
{
    if (!a || !b)
        return NULL;
    size_t al = strlen(a), bl = strlen(b);
    if (al + bl + 2 > 600)
        return NULL;
    char *k = palloc(p, al + bl + 2);
    if (!k)
        return NULL;
    memcpy(k, a, al);
    k[al] = '/';
    memcpy(k + al + 1, b, bl + 1);
    return k;
}

static void parse_upstream(struct pctx *p, const cJSON *spec)
{
    struct xl_upstream *u = &p->o->u.up;
    static const char *const allowed[] = {
        "kube",       "static",           "lbPolicy",     "connectTimeout",  "tls",      "ringHash",
        "localities", "outlierDetection", "healthChecks", "circuitBreakers", "protocol", NULL};
    xlate_check_fields(p, spec, allowed);
    const cJSON *kube = get(spec, "kube"), *st = get(spec, "static");
    if (kube && st) {
        REJECT(p, XL_R_INVALID_SPEC, "kube and static are mutually exclusive");
    } else if (!kube && !st) {
        REJECT(p, XL_R_INVALID_SPEC, "one of kube or static is required");
    } else if (kube) {
        u->is_kube = 1;
        const cJSON *k = get_obj(p, spec, "kube", 1);
        size_t o = push_lit(p, ".kube");
        if (k) {
            static const char *const kallowed[] = {"service", "namespace", "port", NULL};
            xlate_check_fields(p, k, kallowed);
            if (get_str(p, k, "service", 1, &u->kube_service) == 1 &&
                !cx_kname_is_label(u->kube_service)) {
                size_t o2 = push_lit(p, ".service");
                REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not a valid Service name", u->kube_service);
                pop(p, o2);
            }
            if (get_str(p, k, "namespace", 0, &u->kube_ns) == 1 && !cx_kname_is_label(u->kube_ns)) {
                size_t o2 = push_lit(p, ".namespace");
                REJECT(p, XL_R_INVALID_SPEC, "\"%s\" is not a valid namespace name", u->kube_ns);
                pop(p, o2);
            }
            if (!u->kube_ns)
                u->kube_ns = p->o->meta.ns;
            u->kube_key = pjoin(p, u->kube_ns, u->kube_service);
            const cJSON *port = get(k, "port");
            if (cJSON_IsString(port)) {
                size_t o2 = push_lit(p, ".port");
                if (!cx_kname_is_label(port->valuestring) || strlen(port->valuestring) > 15)
                    REJECT(p, XL_R_INVALID_PORT, "\"%s\" is neither a port number nor a port name",
                           port->valuestring);
                else
                    u->kube_port_name = pstrdup(p, port->valuestring);
                pop(p, o2);
            } else {
                uint64_t v = 0;
                if (get_uint(p, k, "port", 1, 1, 65535, XL_R_INVALID_PORT, &v) == 1)
                    u->kube_port = (uint32_t)v;
            }
        }
        pop(p, o);
    } else {
        const cJSON *s = get_obj(p, spec, "static", 1);
        size_t o = push_lit(p, ".static");
        if (s) {
            static const char *const sallowed[] = {"hosts", NULL};
            xlate_check_fields(p, s, sallowed);
            const cJSON *hosts = get_arr(p, s, "hosts", 1, XLATE_MAX_HOSTS);
            if (hosts) {
                u->nhosts = cx_json_count(hosts);
                u->hosts = palloc(p, u->nhosts * sizeof(*u->hosts));
                if (!u->hosts)
                    return;
                size_t i = 0;
                const cJSON *h;
                cJSON_ArrayForEach(h, hosts)
                {
                    struct xl_static_host *x = &u->hosts[i];
                    size_t o2 = xlate_path_push(p, ".hosts[%zu]", i++);
                    if (!cJSON_IsObject(h)) {
                        REJECT(p, XL_R_INVALID_SPEC, "must be an object, got %s", jtype(h));
                        pop(p, o2);
                        continue;
                    }
                    static const char *const hallowed[] = {"address", "port",     "weight",
                                                           "zone",    "hostname", NULL};
                    xlate_check_fields(p, h, hallowed);
                    if (get_str(p, h, "address", 1, &x->address) == 1 && !xlate_is_ip(x->address)) {
                        size_t o3 = push_lit(p, ".address");
                        REJECT(p, XL_R_INVALID_SPEC,
                               "\"%s\" is not an IP address (EDS endpoints must be IP literals)",
                               x->address);
                        pop(p, o3);
                    }
                    uint64_t v = 0;
                    get_uint(p, h, "port", 1, 1, 65535, XL_R_INVALID_PORT, &v);
                    x->port = (uint32_t)v;
                    uint64_t w = 1;
                    get_uint(p, h, "weight", 0, 1, 1000000, XL_R_INVALID_SPEC, &w);
                    x->weight = (uint32_t)w;
                    x->zone = "";
                    if (get_str(p, h, "zone", 0, &x->zone) == 1 &&
                        (!x->zone[0] || strlen(x->zone) > 253 || xlate_has_ctl(x->zone))) {
                        REJECT_AT(p, "zone", XL_R_INVALID_SPEC,
                                  "must be 1-253 characters without control characters");
                        x->zone = "";
                    }
                    if (get_str(p, h, "hostname", 0, &x->hostname) == 1 &&
                        !cx_kname_is_subdomain(x->hostname)) {
                        REJECT_AT(p, "hostname", XL_R_INVALID_SPEC,
                                  "\"%.64s\" is not a DNS name (" CX_KNAME_SUBDOMAIN_ERR ")",
                                  x->hostname);
                        x->hostname = NULL;
                    }
                    for (size_t k = 0; k + 1 < i && x->address; k++)
                        if (u->hosts[k].address && u->hosts[k].port == x->port &&
                            strcmp(u->hosts[k].address, x->address) == 0) {
                            REJECT(p, XL_R_INVALID_SPEC, "%s:%u is listed twice (see hosts[%zu])",
                                   x->address, x->port, k);
                            break;
                        }
                    pop(p, o2);
                }
            }
        }
        pop(p, o);
    }
    char *lb = NULL;
    if (get_str(p, spec, "lbPolicy", 0, &lb) == 1) {
        static const char *const names[] = {"RoundRobin", "LeastRequest", "RingHash", "Random",
                                            "Maglev"};
        int found = -1;
        for (int i = 0; i < 5; i++)
            if (strcmp(lb, names[i]) == 0)
                found = i;
        if (found < 0) {
            size_t o = push_lit(p, ".lbPolicy");
            REJECT(p, XL_R_INVALID_SPEC,
                   "must be one of RoundRobin, LeastRequest, RingHash, Random, Maglev; got \"%s\"",
                   lb);
            pop(p, o);
        } else {
            u->lb = (enum xl_lb_policy)found;
        }
    }
    const cJSON *ring = get_obj(p, spec, "ringHash", 0);
    if (ring)
        parse_ring_hash(p, ring, u);
    if (get_duration(p, spec, "connectTimeout", &u->connect_timeout_ns) == 1) {
        u->has_connect_timeout = 1;
        if (u->connect_timeout_ns <= 0) {
            size_t o = push_lit(p, ".connectTimeout");
            REJECT(p, XL_R_INVALID_SPEC, "must be greater than 0");
            pop(p, o);
        }
    }
    const cJSON *tls = get_obj(p, spec, "tls", 0);
    if (tls) {
        size_t o = push_lit(p, ".tls");
        if ((u->tls = palloc(p, sizeof(*u->tls))))
            xlate_parse_upstream_tls(p, tls, u->tls);
        pop(p, o);
    }
    xlate_parse_cluster_opts(p, spec, u);
}

/* Core kinds: lenient (they passed the API server's validation); entries we
 * cannot use are skipped, not reported. */
static void parse_ports(struct pctx *p, const cJSON *arr, struct xl_service_port **out, size_t *n)
{
    size_t cap = cx_json_count(arr);
    if (!cJSON_IsArray(arr) || cap == 0)
        return;
    *out = palloc(p, cap * sizeof(**out));
    if (!*out)
        return;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        const cJSON *port = cx_json_member(e, "port");
        if (!cJSON_IsNumber(port) || port->valuedouble < 1 || port->valuedouble > 65535)
            continue;
        const char *name = cx_json_str(e, "name");
        (*out)[*n].name = pstrdup(p, name ? name : "");
        (*out)[*n].port = (uint32_t)port->valuedouble;
        (*n)++;
    }
}

static void parse_service(struct pctx *p, const cJSON *obj)
{
    const cJSON *spec = cx_json_member(obj, "spec");
    parse_ports(p, cx_json_member(spec, "ports"), &p->o->u.svc.ports, &p->o->u.svc.nports);
}

static void parse_endpoint_slice(struct pctx *p, const cJSON *obj)
{
    struct xl_endpoint_slice *s = &p->o->u.eps;
    const char *svc = xlate_meta_label(&p->o->meta, "kubernetes.io/service-name");
    s->service = svc ? pstrdup(p, svc) : NULL;
    s->svc_key = pjoin(p, p->o->meta.ns, s->service);
    const char *at = cx_json_str(obj, "addressType");
    s->ip_family = at && strcmp(at, "IPv4") == 0 ? 4 : at && strcmp(at, "IPv6") == 0 ? 6 : 0;
    parse_ports(p, cx_json_member(obj, "ports"), &s->ports, &s->nports);
    /* An unnamed port with port null means "all ports": unusable for EDS. */
    const cJSON *eps = cx_json_member(obj, "endpoints");
    if (!cJSON_IsArray(eps) || !eps->child)
        return;
    /* Collected on the stack, then copied to the arena at their count:
     * counting first would follow the items' chain once more on its own,
     * one miss after another. A slice holds at most 1000 endpoints
     * (Kubernetes); past the stack's room they are counted. */
    struct xl_slice_endpoint local[64];
    struct xl_slice_endpoint *out = local;
    size_t cap = sizeof(local) / sizeof(local[0]);
    /* a slice's endpoints share a few zones: each is kept once */
    char *zones[8];
    size_t nzones = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, eps)
    {
        if (s->nendpoints == cap && out == local) {
            size_t all = cx_json_count(eps);
            out = palloc(p, all * sizeof(*out));
            if (!out)
                return;
            /* cppcheck-suppress uninitvar ; the 64 collected so far */
            memcpy(out, local, s->nendpoints * sizeof(*out));
            cap = all;
        }
        struct xl_slice_endpoint *x = &out[s->nendpoints];
        memset(x, 0, sizeof(*x));
        /* one walk over the endpoint's members (Kubernetes writes several
         * more: nodeName, targetRef, hints...); the first of a name counts */
        const cJSON *addrs = NULL, *conds = NULL, *zm = NULL, *hm = NULL, *c;
        for (c = cJSON_IsObject(e) ? e->child : NULL; c; c = c->next) {
            cx_json_prefetch(c);
            if (!c->string)
                continue;
            if (!addrs && c->string[0] == 'a' && keyeq(c->string, "addresses"))
                addrs = c;
            else if (!conds && c->string[0] == 'c' && keyeq(c->string, "conditions"))
                conds = c;
            else if (!zm && c->string[0] == 'z' && keyeq(c->string, "zone"))
                zm = c;
            else if (!hm && c->string[0] == 'h' && keyeq(c->string, "hostname"))
                hm = c;
        }
        size_t na = cx_json_count(addrs);
        if (!cJSON_IsArray(addrs) || na == 0)
            continue;
        x->addresses = palloc(p, na * sizeof(char *));
        if (!x->addresses)
            return;
        const cJSON *a;
        cJSON_ArrayForEach(a, addrs)
        {
            if (cJSON_IsString(a) && xlate_is_ip(a->valuestring))
                x->addresses[x->naddresses++] = pstrdup(p, a->valuestring);
        }
        const cJSON *ready = cx_json_member(conds, "ready");
        /* Kubernetes: a nil ready condition is to be read as ready. */
        x->ready = !cJSON_IsBool(ready) || cJSON_IsTrue(ready);
        const char *zone = cJSON_IsString(zm) ? zm->valuestring : "";
        x->zone = NULL;
        for (size_t z = 0; z < nzones && !x->zone; z++)
            if (strcmp(zones[z], zone) == 0)
                x->zone = zones[z];
        if (!x->zone && (x->zone = pstrdup(p, zone)) && nzones < sizeof(zones) / sizeof(zones[0]))
            zones[nzones++] = x->zone;
        /* Endpoint.hostname, for auto host rewrite: what the API server
         * admits (a DNS-1123 label there; a subdomain here), else none */
        if (cJSON_IsString(hm) && cx_kname_is_subdomain(hm->valuestring))
            x->hostname = pstrdup(p, hm->valuestring);
        if (x->naddresses)
            s->nendpoints++;
    }
    if (out == local && s->nendpoints) {
        out = palloc(p, s->nendpoints * sizeof(*out));
        if (!out) {
            s->nendpoints = 0;
            return;
        }
        memcpy(out, local, s->nendpoints * sizeof(*out));
    }
    s->endpoints = s->nendpoints ? out : NULL;
}

void xlate_object_release(struct xl_object *o)
{
    struct xl_route *routes = NULL;
    size_t n = 0;
    if (o->kind == XLATE_KIND_SECRET && o->u.secret.key) {
        /* the arena is reused or freed: leave no key bytes behind */
        OPENSSL_cleanse(o->u.secret.key, o->u.secret.keylen);
        o->u.secret.key = NULL;
    } else if (o->kind == XLATE_KIND_GATEWAY) {
        filter_selector_free(o->u.gw.vs_selector);
        o->u.gw.vs_selector = NULL;
    } else if (o->kind == XLATE_KIND_VIRTUAL_SERVICE) {
        routes = o->u.vs.routes;
        n = o->u.vs.nroutes;
    } else if (o->kind == XLATE_KIND_ROUTE_TABLE) {
        routes = o->u.rt.routes;
        n = o->u.rt.nroutes;
    }
    for (size_t i = 0; routes && i < n; i++) {
        filter_selector_free(routes[i].delegate.selector);
        routes[i].delegate.selector = NULL;
    }
}

int xlate_api_parse(enum xlate_kind kind, const cJSON *obj, const struct xlate_limits *lim,
                    struct xl_arena *a, struct xl_object *out)
{
    struct xlate_limits dflt;
    if (!lim) {
        xlate_limits_default(&dflt);
        lim = &dflt;
    }
    struct pctx p; /* the segments are written before they are read */
    p.a = a;
    p.o = out;
    p.lim = lim;
    p.regex_total = 0;
    p.depth = 0;
    p.oom = 0;
    p.last_ref = NULL;
    memset(out, 0, sizeof(*out));
    out->kind = kind;
    parse_meta(&p, obj);
    if (p.oom)
        return -1;
    if (kind == XLATE_KIND_SERVICE) {
        parse_service(&p, obj);
        return p.oom ? -1 : 0;
    }
    if (kind == XLATE_KIND_ENDPOINT_SLICE) {
        parse_endpoint_slice(&p, obj);
        return p.oom ? -1 : 0;
    }
    if (kind == XLATE_KIND_SECRET || kind == XLATE_KIND_CONFIG_MAP) {
        if (kind == XLATE_KIND_SECRET)
            xlate_parse_secret(&p, obj);
        else
            xlate_parse_config_map(&p, obj);
        if (p.oom) {
            xlate_object_release(out);
            return -1;
        }
        return 0;
    }
    if (kind < 0 || kind >= XLATE_KIND_COUNT) {
        REJECT(&p, XL_R_UNKNOWN_KIND, "apiVersion %s, kind %s is not a kind coxswain reads",
               cx_json_str(obj, "apiVersion") ? cx_json_str(obj, "apiVersion") : "(none)",
               cx_json_str(obj, "kind") ? cx_json_str(obj, "kind") : "(none)");
        return p.oom ? -1 : 0;
    }
    const char *av = cx_json_str(obj, "apiVersion");
    if (!av || strcmp(av, XLATE_GROUP_VERSION) != 0) {
        REJECT(&p, XL_R_UNSUPPORTED_VERSION, "apiVersion %s is not served; use %s",
               av ? av : "(none)", XLATE_GROUP_VERSION);
        return p.oom ? -1 : 0;
    }
    static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", "status", NULL};
    const cJSON *f[5];
    xlate_fields(&p, obj, top, f);
    const cJSON *spec = f[3];
    push_lit(&p, "spec");
    if (!spec) {
        REJECT(&p, XL_R_INVALID_SPEC, "required");
    } else if (!cJSON_IsObject(spec)) {
        REJECT(&p, XL_R_INVALID_SPEC, "must be an object, got %s", jtype(spec));
    } else {
        switch (kind) {
        case XLATE_KIND_GATEWAY:
            parse_gateway(&p, spec);
            break;
        case XLATE_KIND_VIRTUAL_SERVICE:
            parse_virtual_service(&p, spec);
            break;
        case XLATE_KIND_ROUTE_TABLE: {
            static const char *const allowed[] = {"routes", NULL};
            xlate_check_fields(&p, spec, allowed);
            xlate_parse_routes(&p, get(spec, "routes"), &out->u.rt.routes, &out->u.rt.nroutes);
            break;
        }
        case XLATE_KIND_UPSTREAM:
            parse_upstream(&p, spec);
            break;
        default:
            break;
        }
    }
    if (kind == XLATE_KIND_VIRTUAL_SERVICE)
        claim_fields(out);
    if (p.oom) {
        xlate_object_release(out);
        return -1;
    }
    return 0;
}
