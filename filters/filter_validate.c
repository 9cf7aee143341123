/*
 * Kubernetes' validation of label keys and values, ported from
 * k8s.io/apimachinery/pkg/util/validation (v1.20-v1.33 wording), plus the
 * little Go formatting we need to reproduce its messages byte for byte.
 */
#include "cx_kname.h"
#include "filter_internal.h"
#include "filter_selector.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#define QNAME_MAX     63
#define LABEL_VAL_MAX 63

#define QNAME_FMT "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
#define QNAME_ERR                                                                               \
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an " \
    "alphanumeric character"
#define LABEL_VAL_FMT "(" QNAME_FMT ")?"
#define LABEL_VAL_ERR                                                                           \
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or " \
    "'.', and must start and end with an alphanumeric character"

/* validation.RegexError(msg, fmt, examples...): note Go's double space
 * after each "'x'," before " or ". */
#define REGEX_ERR3(msg, fmt, a, b, c) \
    msg " (e.g. '" a "',  or '" b "',  or '" c "', regex used for validation is '" fmt "')"

#define QNAME_REGEX_ERR REGEX_ERR3(QNAME_ERR, QNAME_FMT, "MyName", "my.name", "123-abc")
#define LABEL_VAL_REGEX REGEX_ERR3(LABEL_VAL_ERR, LABEL_VAL_FMT, "MyValue", "my_value", "12345")

void filter_err_set(struct filter_error *err, size_t offset, const char *fmt, ...)
{
    if (!err)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    err->offset = offset;
}

static int is_alnum(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* ^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$ over s[0..n) */
static int qname_ok(const char *s, size_t n)
{
    if (n == 0 || !is_alnum((unsigned char)s[0]) || !is_alnum((unsigned char)s[n - 1]))
        return 0;
    for (size_t i = 1; i + 1 < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!is_alnum(c) && c != '-' && c != '_' && c != '.')
            return 0;
    }
    return 1;
}

/* Appends one error string to the "; "-joined list in |b|. */
static int add_msg(struct cx_buf *b, int *count, const char *prefix, const char *msg)
{
    int rc = 0;
    if (*count > 0)
        rc |= cx_buf_puts(b, "; ");
    rc |= cx_buf_puts(b, prefix);
    rc |= cx_buf_puts(b, msg);
    (*count)++;
    return rc ? -1 : 0;
}

int filter_key_errors(const char *key, struct cx_buf *b)
{
    int count = 0, rc = 0;
    const char *slash = strchr(key, '/');
    const char *name = key;
    size_t namelen;
    if (slash && strchr(slash + 1, '/')) {
        /* more than one '/' */
        rc |= add_msg(b, &count, "a qualified name ",
                      QNAME_REGEX_ERR
                      " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
        return rc ? -1 : count;
    }
    if (slash) {
        size_t plen = (size_t)(slash - key);
        name = slash + 1;
        if (plen == 0) {
            rc |= add_msg(b, &count, "prefix part ", "must be non-empty");
        } else {
            if (plen > CX_KNAME_SUBDOMAIN_MAX) {
                char m[64];
                snprintf(m, sizeof(m), "must be no more than %d characters",
                         CX_KNAME_SUBDOMAIN_MAX);
                rc |= add_msg(b, &count, "prefix part ", m);
            }
            if (!cx_kname_subdomain_fmt(key, plen))
                rc |= add_msg(b, &count, "prefix part ", CX_KNAME_SUBDOMAIN_ERR);
        }
    }
    namelen = strlen(name);
    if (namelen == 0) {
        rc |= add_msg(b, &count, "name part ", "must be non-empty");
    } else if (namelen > QNAME_MAX) {
        char m[64];
        snprintf(m, sizeof(m), "must be no more than %d characters", QNAME_MAX);
        rc |= add_msg(b, &count, "name part ", m);
    }
    if (!qname_ok(name, namelen))
        rc |= add_msg(b, &count, "name part ", QNAME_REGEX_ERR);
    return rc ? -1 : count;
}

int filter_value_errors(const char *value, struct cx_buf *b)
{
    int count = 0, rc = 0;
    size_t n = strlen(value);
    if (n > LABEL_VAL_MAX) {
        char m[64];
        snprintf(m, sizeof(m), "must be no more than %d characters", LABEL_VAL_MAX);
        rc |= add_msg(b, &count, "", m);
    }
    if (n > 0 && !qname_ok(value, n))
        rc |= add_msg(b, &count, "", LABEL_VAL_REGEX);
    return rc ? -1 : count;
}

static int valid_to_msg(int (*check)(const char *, struct cx_buf *), const char *s, char *msg,
                        size_t msglen)
{
    struct cx_buf b;
    cx_buf_init(&b, FILTER_ERR_MAX * 4);
    int n = check(s, &b);
    if (msg && msglen) {
        snprintf(msg, msglen, "%s", b.data ? b.data : (n < 0 ? "out of memory" : ""));
    }
    cx_buf_free(&b);
    return n == 0 ? 0 : -1;
}

int filter_label_key_valid(const char *key, char *msg, size_t msglen)
{
    return valid_to_msg(filter_key_errors, key ? key : "", msg, msglen);
}

int filter_label_value_valid(const char *value, char *msg, size_t msglen)
{
    return valid_to_msg(filter_value_errors, value ? value : "", msg, msglen);
}

/* Length of the valid UTF-8 sequence at |p| (1-4), or 0 if invalid. */
static size_t utf8_len(const unsigned char *p)
{
    if (p[0] < 0x80)
        return 1;
    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        return (p[1] & 0xc0) == 0x80 ? 2 : 0;
    if (p[0] >= 0xe0 && p[0] <= 0xef) {
        if ((p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80)
            return 0;
        if (p[0] == 0xe0 && p[1] < 0xa0)
            return 0; /* overlong */
        if (p[0] == 0xed && p[1] >= 0xa0)
            return 0; /* surrogate */
        return 3;
    }
    if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        if ((p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80 || (p[3] & 0xc0) != 0x80)
            return 0;
        if (p[0] == 0xf0 && p[1] < 0x90)
            return 0;
        if (p[0] == 0xf4 && p[1] >= 0x90)
            return 0;
        return 4;
    }
    return 0;
}

int filter_go_quote(struct cx_buf *b, const char *s)
{
    int rc = cx_buf_append(b, "\"", 1);
    const unsigned char *p = (const unsigned char *)s;
    while (*p && rc == 0) {
        unsigned char c = *p;
        const char *esc = NULL;
        switch (c) {
        case '"':
            esc = "\\\"";
            break;
        case '\\':
            esc = "\\\\";
            break;
        case '\a':
            esc = "\\a";
            break;
        case '\b':
            esc = "\\b";
            break;
        case '\f':
            esc = "\\f";
            break;
        case '\n':
            esc = "\\n";
            break;
        case '\r':
            esc = "\\r";
            break;
        case '\t':
            esc = "\\t";
            break;
        case '\v':
            esc = "\\v";
            break;
        default:
            break;
        }
        if (esc) {
            rc = cx_buf_puts(b, esc);
            p++;
        } else if (c >= 0x20 && c < 0x7f) {
            rc = cx_buf_append(b, p, 1);
            p++;
        } else if (c >= 0x80 && utf8_len(p) > 0) {
            size_t n = utf8_len(p);
            rc = cx_buf_append(b, p, n);
            p += n;
        } else {
            rc = cx_buf_printf(b, "\\x%02x", c);
            p++;
        }
    }
    if (rc == 0)
        rc = cx_buf_append(b, "\"", 1);
    return rc ? -1 : 0;
}

int filter_parse_int64(const char *s, long long *out)
{
    const char *p = s;
    int neg = 0;
    if (*p == '+' || *p == '-') {
        neg = *p == '-';
        p++;
    }
    if (*p == '\0')
        return -1;
    unsigned long long acc = 0;
    const unsigned long long lim = neg ? (unsigned long long)LLONG_MAX + 1ULL : LLONG_MAX;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        unsigned d = (unsigned)(*p - '0');
        if (acc > (lim - d) / 10)
            return -1;
        acc = acc * 10 + d;
    }
    if (neg)
        *out = acc == (unsigned long long)LLONG_MAX + 1ULL ? LLONG_MIN : -(long long)acc;
    else
        *out = (long long)acc;
    return 0;
}
