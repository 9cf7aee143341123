#include "election_config.h"

#include "cx_kname.h"
#include "cx_time.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static void copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

void election_config_defaults(struct election_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->enabled = false;
    cfg->lease_ns = ELECTION_DEFAULT_LEASE_NS;
    cfg->renew_ns = ELECTION_DEFAULT_RENEW_NS;
    cfg->retry_ns = ELECTION_DEFAULT_RETRY_NS;
    cfg->lock = ELECTION_LOCK_LEASES;
    copy_str(cfg->name, sizeof(cfg->name), "coxswain");
    const char *ns = getenv("POD_NAMESPACE");
    copy_str(cfg->ns, sizeof(cfg->ns), ns && *ns ? ns : "default");
}

int election_lock_kind_parse(const char *s, enum election_lock_kind *out)
{
    if (strcmp(s, "leases") == 0 || strcmp(s, "lease") == 0) {
        *out = ELECTION_LOCK_LEASES;
        return 0;
    }
    if (strcmp(s, "configmaps") == 0 || strcmp(s, "configmap") == 0) {
        *out = ELECTION_LOCK_CONFIGMAPS;
        return 0;
    }
    return -1;
}

const char *election_lock_kind_name(enum election_lock_kind k)
{
    return k == ELECTION_LOCK_CONFIGMAPS ? "configmaps" : "leases";
}

size_t election_flags_table(struct election_flags *ef, struct cx_flag *out, size_t max)
{
    if (max < ELECTION_FLAGS_MAX)
        return 0;
    size_t n = 0;
    out[n++] = (struct cx_flag){
        .name = "leader-elect",
        .type = CX_FLAG_BOOL,
        .target = &ef->enabled,
        .def = "false",
        .env = "COXSWAIN_LEADER_ELECT",
        .help = "take part in leader election; only the leader writes to the API",
    };
    out[n++] = (struct cx_flag){
        .name = "leader-elect-lease-duration",
        .type = CX_FLAG_DURATION,
        .target = &ef->lease_ns,
        .def = "15s",
        .env = "COXSWAIN_LEADER_ELECT_LEASE_DURATION",
        .help = "how long standbys wait, from the last change they saw, before taking over an "
                "unrenewed lock",
    };
    out[n++] = (struct cx_flag){
        .name = "leader-elect-renew-deadline",
        .type = CX_FLAG_DURATION,
        .target = &ef->renew_ns,
        .def = "10s",
        .env = "COXSWAIN_LEADER_ELECT_RENEW_DEADLINE",
        .help = "the leader stops writing and steps down this long after the send time of its "
                "last successful renewal",
    };
    out[n++] = (struct cx_flag){
        .name = "leader-elect-retry-period",
        .type = CX_FLAG_DURATION,
        .target = &ef->retry_ns,
        .def = "2s",
        .env = "COXSWAIN_LEADER_ELECT_RETRY_PERIOD",
        .help = "renewal interval of the leader; polling interval of standbys while their watch "
                "is broken",
    };
    out[n++] = (struct cx_flag){
        .name = "leader-elect-resource-lock",
        .type = CX_FLAG_STRING,
        .target = &ef->lock,
        .def = "leases",
        .env = "COXSWAIN_LEADER_ELECT_RESOURCE_LOCK",
        .help = "lock object type: leases or configmaps",
    };
    out[n++] = (struct cx_flag){
        .name = "leader-elect-resource-name",
        .type = CX_FLAG_STRING,
        .target = &ef->name,
        .def = "coxswain",
        .env = "COXSWAIN_LEADER_ELECT_RESOURCE_NAME",
        .help = "name of the lock object",
    };
    out[n++] = (struct cx_flag){
        .name = "leader-elect-resource-namespace",
        .type = CX_FLAG_STRING,
        .target = &ef->ns,
        .def = "default",
        .env = "POD_NAMESPACE",
        .help = "namespace of the lock object",
    };
    out[n++] = (struct cx_flag){
        .name = "leader-elect-peer",
        .type = CX_FLAG_BOOL,
        .target = &ef->peer,
        .def = "true",
        .env = "COXSWAIN_LEADER_ELECT_PEER",
        .help = "the peer liveness channel: serve identity and role on "
                "--leader-elect-peer-listen, advertise it in the lock record while leading, and "
                "as a standby take over at once when the leader's process is proven dead (its "
                "kernel closed the connection and a new one is refused or answered by another "
                "identity); false: lease expiry only",
    };
    out[n++] = (struct cx_flag){
        .name = "leader-elect-peer-listen",
        .type = CX_FLAG_STRING,
        .target = &ef->peer_listen,
        .def = "0.0.0.0:0",
        .env = "COXSWAIN_LEADER_ELECT_PEER_LISTEN",
        .help = "address of the peer liveness channel (port 0 picks one)",
    };
    out[n++] = (struct cx_flag){
        .name = "leader-elect-peer-advertise",
        .type = CX_FLAG_STRING,
        .target = &ef->peer_advertise,
        .def = "",
        .env = "COXSWAIN_LEADER_ELECT_PEER_ADVERTISE",
        .help = "host:port standbys connect to (default: $POD_IP and the listen port, else the "
                "listen address if its host is not a wildcard)",
    };
    return n;
}

/* The advertised endpoint for |listen| when none is given: $POD_IP, else
 * the listen host unless it is a wildcard; the port is the listen port
 * (0 until bound). "" when none can be known. */
static void default_advertise(const char *listen, char *out, size_t cap)
{
    out[0] = '\0';
    const char *colon = strrchr(listen, ':');
    if (!colon)
        return;
    const char *port = colon + 1;
    const char *pod_ip = getenv("POD_IP");
    if (pod_ip && *pod_ip) {
        if (strchr(pod_ip, ':'))
            snprintf(out, cap, "[%s]:%s", pod_ip, port);
        else
            snprintf(out, cap, "%s:%s", pod_ip, port);
        return;
    }
    size_t hl = (size_t)(colon - listen);
    if (hl == 0 || (hl == 7 && strncmp(listen, "0.0.0.0", 7) == 0) ||
        (hl == 4 && strncmp(listen, "[::]", 4) == 0) || (hl == 2 && strncmp(listen, "::", 2) == 0))
        return;
    snprintf(out, cap, "%s", listen);
}

int election_apply_flags(struct election_config *cfg, const struct election_flags *ef, char *err,
                         size_t errlen)
{
    cfg->enabled = ef->enabled != 0;
    cfg->lease_ns = ef->lease_ns;
    cfg->renew_ns = ef->renew_ns;
    cfg->retry_ns = ef->retry_ns;
    if (ef->lock && election_lock_kind_parse(ef->lock, &cfg->lock) != 0) {
        snprintf(err, errlen,
                 "invalid value \"%s\" for --leader-elect-resource-lock: must be leases or "
                 "configmaps",
                 ef->lock);
        return -1;
    }
    if (ef->name) {
        if (strlen(ef->name) >= sizeof(cfg->name)) {
            snprintf(err, errlen, "--leader-elect-resource-name: longer than %zu characters",
                     sizeof(cfg->name) - 1);
            return -1;
        }
        copy_str(cfg->name, sizeof(cfg->name), ef->name);
    }
    if (ef->ns) {
        if (strlen(ef->ns) >= sizeof(cfg->ns)) {
            snprintf(err, errlen, "--leader-elect-resource-namespace: longer than %zu characters",
                     sizeof(cfg->ns) - 1);
            return -1;
        }
        copy_str(cfg->ns, sizeof(cfg->ns), ef->ns);
    }
    cfg->peer = ef->peer != 0;
    const char *listen = ef->peer_listen ? ef->peer_listen : "";
    const char *adv = ef->peer_advertise ? ef->peer_advertise : "";
    if (strlen(listen) >= sizeof(cfg->peer_listen) || strlen(adv) >= sizeof(cfg->peer_advertise)) {
        snprintf(err, errlen, "--leader-elect-peer-%s: longer than %zu characters",
                 strlen(adv) >= sizeof(cfg->peer_advertise) ? "advertise" : "listen",
                 sizeof(cfg->peer_listen) - 1);
        return -1;
    }
    copy_str(cfg->peer_listen, sizeof(cfg->peer_listen), listen);
    if (cfg->peer && !*listen) {
        snprintf(err, errlen,
                 "--leader-elect-peer-listen: empty (use --leader-elect-peer=false "
                 "to turn the peer channel off)");
        return -1;
    }
    if (*adv && !strrchr(adv, ':')) {
        snprintf(err, errlen, "--leader-elect-peer-advertise: \"%s\" is not host:port", adv);
        return -1;
    }
    if (*adv)
        copy_str(cfg->peer_advertise, sizeof(cfg->peer_advertise), adv);
    else
        default_advertise(listen, cfg->peer_advertise, sizeof(cfg->peer_advertise));
    return 0;
}

int election_config_validate(const struct election_config *cfg, char *err, size_t errlen)
{
    char a[32], b[32], c[32];
    if (cfg->lease_ns <= 0 || cfg->renew_ns <= 0 || cfg->retry_ns <= 0) {
        const char *which = cfg->lease_ns <= 0   ? "--leader-elect-lease-duration"
                            : cfg->renew_ns <= 0 ? "--leader-elect-renew-deadline"
                                                 : "--leader-elect-retry-period";
        snprintf(err, errlen, "%s must be greater than zero", which);
        return -1;
    }
    if (cfg->lease_ns <= cfg->renew_ns) {
        cx_duration_format(cfg->lease_ns, a, sizeof(a));
        cx_duration_format(cfg->renew_ns, b, sizeof(b));
        snprintf(err, errlen,
                 "leaseDuration must be greater than renewDeadline "
                 "(--leader-elect-lease-duration %s <= --leader-elect-renew-deadline %s)",
                 a, b);
        return -1;
    }
    /* renew > 1.2 x retry, in integers: 5 x renew > 6 x retry. */
    if (cfg->renew_ns > INT64_MAX / 5 || cfg->retry_ns > INT64_MAX / 6 ||
        5 * cfg->renew_ns <= 6 * cfg->retry_ns) {
        cx_duration_format(cfg->renew_ns, a, sizeof(a));
        cx_duration_format(cfg->retry_ns, b, sizeof(b));
        cx_duration_format(cfg->retry_ns / 5 * 6, c, sizeof(c));
        snprintf(err, errlen,
                 "renewDeadline must be greater than 1.2 x retryPeriod "
                 "(--leader-elect-renew-deadline %s <= 1.2 x --leader-elect-retry-period %s = %s)",
                 a, b, c);
        return -1;
    }
    if (cfg->lease_ns - cfg->renew_ns < cfg->retry_ns) {
        cx_duration_format(cfg->lease_ns, a, sizeof(a));
        cx_duration_format(cfg->renew_ns + cfg->retry_ns, b, sizeof(b));
        snprintf(err, errlen,
                 "leaseDuration must be at least renewDeadline + retryPeriod "
                 "(--leader-elect-lease-duration %s < %s): a standby could take over while the "
                 "leader still believes it may write",
                 a, b);
        return -1;
    }
    if (cfg->lease_ns % 1000000000 != 0) {
        /* leaseDurationSeconds is an integer: 15500ms would be written as
         * 16 s (or 15), a lease other than the one configured. */
        cx_duration_format(cfg->lease_ns, a, sizeof(a));
        snprintf(err, errlen,
                 "--leader-elect-lease-duration %s is not a whole number of seconds: the lock "
                 "records leaseDurationSeconds, an integer (use %llds or %llds)",
                 a, (long long)(cfg->lease_ns / 1000000000),
                 (long long)(cfg->lease_ns / 1000000000 + 1));
        return -1;
    }
    if (cfg->lease_ns > INT64_C(3600) * 24 * 1000000000) {
        snprintf(err, errlen, "--leader-elect-lease-duration must be at most 24h");
        return -1;
    }
    /* the lock's name: a DNS subdomain; its namespace: a DNS label */
    if (!cx_kname_is_subdomain(cfg->name)) {
        snprintf(err, errlen,
                 "--leader-elect-resource-name \"%s\" is not a valid object name (lower-case "
                 "alphanumerics, '-' and '.', at most 253 characters)",
                 cfg->name);
        return -1;
    }
    if (!cx_kname_is_label(cfg->ns)) {
        snprintf(err, errlen,
                 "--leader-elect-resource-namespace \"%s\" is not a valid namespace (lower-case "
                 "alphanumerics and '-', at most 63 characters)",
                 cfg->ns);
        return -1;
    }
    if (strcmp(cfg->identity, ELECTION_PREFERRED_ANY) == 0) {
        snprintf(err, errlen, "identity \"%s\" is reserved (preferredHolder: any standby)",
                 ELECTION_PREFERRED_ANY);
        return -1;
    }
    if (cfg->identity[0] == '\0') {
        snprintf(err, errlen, "the elector needs a non-empty identity");
        return -1;
    }
    return 0;
}

static int random_bytes(unsigned char *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(p + got, n - got, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        got += (size_t)r;
    }
    if (got == n)
        return 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            close(fd);
            return -1;
        }
        got += (size_t)r;
    }
    close(fd);
    return 0;
}

int election_identity_make(char *out, size_t outlen)
{
    static const char hex[] = "0123456789abcdef";
    char host[256] = "";
    const char *pod = getenv("POD_NAME");
    if (pod && *pod) {
        copy_str(host, sizeof(host), pod);
    } else if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') {
        copy_str(host, sizeof(host), "coxswain");
    }
    host[sizeof(host) - 1] = '\0';
    unsigned char rnd[4];
    if (outlen < 10 || random_bytes(rnd, sizeof(rnd)) != 0)
        return -1;
    char suffix[10];
    suffix[0] = '_';
    for (int k = 0; k < 4; k++) {
        suffix[1 + 2 * k] = hex[rnd[k] >> 4];
        suffix[2 + 2 * k] = hex[rnd[k] & 15];
    }
    suffix[9] = '\0';
    size_t hl = strlen(host);
    if (hl > outlen - 10)
        hl = outlen - 10;
    memcpy(out, host, hl);
    memcpy(out + hl, suffix, 10);
    return 0;
}

int64_t election_config_margin(const struct election_config *cfg)
{
    return cfg->guard_margin_ns > 0 ? cfg->guard_margin_ns : cfg->renew_ns / 10;
}

int64_t election_config_jump(const struct election_config *cfg)
{
    return cfg->jump_ns > 0 ? cfg->jump_ns : cfg->lease_ns;
}
