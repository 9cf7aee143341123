#include "cx_kname.h"

#include <stdio.h>

static int lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ */
int cx_kname_label_fmt(const char *s, size_t n)
{
    if (n == 0 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
        return 0;
    for (size_t i = 1; i + 1 < n; i++)
        if (!lower_alnum(s[i]) && s[i] != '-')
            return 0;
    return 1;
}

/* Labels joined by single dots: an empty label ("a..b", ".a", "a.") or one
 * starting or ending with '-' ("a.-b") fails. */
int cx_kname_subdomain_fmt(const char *s, size_t n)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.')
            continue;
        if (!cx_kname_label_fmt(s + start, i - start))
            return 0;
        start = i + 1;
    }
    return 1;
}

int cx_kname_label(const char *s, size_t n)
{
    return n <= CX_KNAME_LABEL_MAX && cx_kname_label_fmt(s, n);
}

int cx_kname_subdomain(const char *s, size_t n)
{
    return n <= CX_KNAME_SUBDOMAIN_MAX && cx_kname_subdomain_fmt(s, n);
}

static int errors(int too_long, size_t max, int fmt_ok, const char *fmt_err, char *msg,
                  size_t msglen)
{
    if (msglen == 0)
        return too_long || !fmt_ok ? -1 : 0;
    msg[0] = '\0';
    if (!too_long && fmt_ok)
        return 0;
    if (too_long && fmt_ok)
        snprintf(msg, msglen, "must be no more than %zu characters", max);
    else if (too_long)
        snprintf(msg, msglen, "must be no more than %zu characters; %s", max, fmt_err);
    else
        snprintf(msg, msglen, "%s", fmt_err);
    return -1;
}

int cx_kname_label_msg(const char *s, size_t n, char *msg, size_t msglen)
{
    /* a subdomain that is no label can only have dots: said so */
    int fmt_ok = cx_kname_label_fmt(s, n);
    const char *fmt_err =
        !fmt_ok && cx_kname_subdomain_fmt(s, n) ? "must not contain dots" : CX_KNAME_LABEL_ERR;
    return errors(n > CX_KNAME_LABEL_MAX, CX_KNAME_LABEL_MAX, fmt_ok, fmt_err, msg, msglen);
}

int cx_kname_subdomain_msg(const char *s, size_t n, char *msg, size_t msglen)
{
    return errors(n > CX_KNAME_SUBDOMAIN_MAX, CX_KNAME_SUBDOMAIN_MAX, cx_kname_subdomain_fmt(s, n),
                  CX_KNAME_SUBDOMAIN_ERR, msg, msglen);
}
