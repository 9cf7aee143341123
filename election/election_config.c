#include "election_config.h"

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

static int parse_bool(const char *s, bool *out)
{
    if (strcmp(s, "true") == 0 || strcmp(s, "1") == 0 || strcmp(s, "t") == 0 ||
        strcmp(s, "TRUE") == 0 || strcmp(s, "True") == 0) {
        *out = true;
        return 0;
    }
    if (strcmp(s, "false") == 0 || strcmp(s, "0") == 0 || strcmp(s, "f") == 0 ||
        strcmp(s, "FALSE") == 0 || strcmp(s, "False") == 0) {
        *out = false;
        return 0;
    }
    return -1;
}

enum flag_id {
    FLAG_ELECT = 0,
    FLAG_LEASE = 1,
    FLAG_RENEW = 2,
    FLAG_RETRY = 3,
    FLAG_LOCK = 4,
    FLAG_NAME = 5,
    FLAG_NS = 6,
};

static const struct {
    const char *name;
    enum flag_id id;
} flags[] = {
    {"--leader-elect", FLAG_ELECT},
    {"--leader-elect-lease-duration", FLAG_LEASE},
    {"--leader-elect-renew-deadline", FLAG_RENEW},
    {"--leader-elect-retry-period", FLAG_RETRY},
    {"--leader-elect-resource-lock", FLAG_LOCK},
    {"--leader-elect-resource-name", FLAG_NAME},
    {"--leader-elect-resource-namespace", FLAG_NS},
};

int election_config_flag(struct election_config *cfg, int argc, char **argv, int *i, char *err,
                         size_t errlen)
{
    const char *arg = argv[*i];
    const char *eq = strchr(arg, '=');
    size_t namelen = eq ? (size_t)(eq - arg) : strlen(arg);
    int which = -1;
    for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++)
        if (strlen(flags[k].name) == namelen && strncmp(arg, flags[k].name, namelen) == 0)
            which = (int)k;
    if (which < 0)
        return 0;
    const char *fname = flags[which].name;
    const char *val = eq ? eq + 1 : NULL;
    int used = 1;
    if (flags[which].id == FLAG_ELECT) {
        bool b = true;
        if (val && parse_bool(val, &b) != 0) {
            snprintf(err, errlen, "%s: invalid boolean \"%s\"", fname, val);
            return -1;
        }
        cfg->enabled = b;
        *i += 1;
        return 1;
    }
    if (!val) {
        if (*i + 1 >= argc) {
            snprintf(err, errlen, "%s needs a value", fname);
            return -1;
        }
        val = argv[*i + 1];
        used = 2;
    }
    char derr[128];
    int64_t ns = 0;
    switch (flags[which].id) {
    case FLAG_LEASE:
    case FLAG_RENEW:
    case FLAG_RETRY:
        if (cx_duration_parse(val, &ns, derr, sizeof(derr)) != 0) {
            snprintf(err, errlen, "%s: %s", fname, derr);
            return -1;
        }
        if (flags[which].id == FLAG_LEASE)
            cfg->lease_ns = ns;
        else if (flags[which].id == FLAG_RENEW)
            cfg->renew_ns = ns;
        else
            cfg->retry_ns = ns;
        break;
    case FLAG_LOCK:
        if (election_lock_kind_parse(val, &cfg->lock) != 0) {
            snprintf(err, errlen, "%s: \"%s\" is not one of leases, configmaps", fname, val);
            return -1;
        }
        break;
    case FLAG_NAME:
        if (strlen(val) >= sizeof(cfg->name)) {
            snprintf(err, errlen, "%s: longer than %zu characters", fname, sizeof(cfg->name) - 1);
            return -1;
        }
        copy_str(cfg->name, sizeof(cfg->name), val);
        break;
    case FLAG_NS:
        if (strlen(val) >= sizeof(cfg->ns)) {
            snprintf(err, errlen, "%s: longer than %zu characters", fname, sizeof(cfg->ns) - 1);
            return -1;
        }
        copy_str(cfg->ns, sizeof(cfg->ns), val);
        break;
    case FLAG_ELECT:
        break;
    }
    *i += used;
    return 1;
}

/* Object names: DNS subdomain (lower-case alphanumerics, '-', '.', starting
 * and ending alphanumeric). Namespaces: DNS label (no '.', <= 63). */
static bool dns_name_ok(const char *s, bool allow_dot, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return false;
    for (size_t k = 0; k < n; k++) {
        char c = s[k];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && c != '-' && !(allow_dot && c == '.'))
            return false;
        if ((k == 0 || k == n - 1) && !alnum)
            return false;
    }
    return true;
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
    if (cfg->lease_ns > INT64_C(3600) * 24 * 1000000000) {
        snprintf(err, errlen, "--leader-elect-lease-duration must be at most 24h");
        return -1;
    }
    if (!dns_name_ok(cfg->name, true, 253)) {
        snprintf(err, errlen,
                 "--leader-elect-resource-name \"%s\" is not a valid object name (lower-case "
                 "alphanumerics, '-' and '.', at most 253 characters)",
                 cfg->name);
        return -1;
    }
    if (!dns_name_ok(cfg->ns, false, 63)) {
        snprintf(err, errlen,
                 "--leader-elect-resource-namespace \"%s\" is not a valid namespace (lower-case "
                 "alphanumerics and '-', at most 63 characters)",
                 cfg->ns);
        return -1;
    }
    if (cfg->identity[0] == '\0') {
        snprintf(err, errlen, "the elector needs a non-empty identity");
        return -1;
    }
    return 0;
}

void election_config_usage(FILE *out)
{
    fprintf(out,
            "  --leader-elect[=bool]                 take part in leader election (default false)\n"
            "  --leader-elect-lease-duration d       how long a lease lasts without renewal "
            "(default 15s)\n"
            "  --leader-elect-renew-deadline d       the leader steps down if it cannot renew "
            "for this long (default 10s)\n"
            "  --leader-elect-retry-period d         renew / retry interval (default 2s)\n"
            "  --leader-elect-resource-lock kind     leases or configmaps (default leases)\n"
            "  --leader-elect-resource-name name     lock object name (default coxswain)\n"
            "  --leader-elect-resource-namespace ns  lock object namespace (default "
            "$POD_NAMESPACE or default)\n"
            "  Rules: lease > renew > 1.2 x retry, and lease >= renew + retry.\n");
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
