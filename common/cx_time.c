#include "cx_time.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int64_t cx_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * CX_NS_PER_S + ts.tv_nsec;
}

int64_t cx_mono_ms(void)
{
    return cx_mono_ns() / CX_NS_PER_MS;
}

int64_t cx_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * CX_NS_PER_S + ts.tv_nsec;
}

static void split_wall(int64_t wall_ns, struct tm *tm, int64_t *frac_ns)
{
    int64_t sec = wall_ns / CX_NS_PER_S;
    int64_t frac = wall_ns % CX_NS_PER_S;
    if (frac < 0) {
        frac += CX_NS_PER_S;
        sec -= 1;
    }
    time_t t = (time_t)sec;
    gmtime_r(&t, tm);
    *frac_ns = frac;
}

void cx_time_format_rfc3339(int64_t wall_ns, char *out, size_t outlen)
{
    struct tm tm;
    int64_t frac;
    split_wall(wall_ns, &tm, &frac);
    snprintf(out, outlen, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

void cx_time_format_micro(int64_t wall_ns, char *out, size_t outlen)
{
    struct tm tm;
    int64_t frac;
    split_wall(wall_ns, &tm, &frac);
    snprintf(out, outlen, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(frac / 1000));
}

/* Reads exactly |n| digits. */
static int read_digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return -1;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

static int expect(const char **p, char c)
{
    if (**p != c)
        return -1;
    (*p)++;
    return 0;
}

static int days_in_month(int y, int m)
{
    static const int d[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return 29;
    return d[m - 1];
}

int cx_time_parse_rfc3339(const char *s, int64_t *wall_ns)
{
    const char *p = s;
    int y, mo, d, h, mi, se;
    if (!s || read_digits(&p, 4, &y) || expect(&p, '-') || read_digits(&p, 2, &mo) ||
        expect(&p, '-') || read_digits(&p, 2, &d))
        return -1;
    if (*p != 'T' && *p != 't')
        return -1;
    p++;
    if (read_digits(&p, 2, &h) || expect(&p, ':') || read_digits(&p, 2, &mi) || expect(&p, ':') ||
        read_digits(&p, 2, &se))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || se > 60)
        return -1;
    int64_t frac = 0;
    if (*p == '.') {
        p++;
        int nd = 0;
        int64_t scale = CX_NS_PER_S;
        while (isdigit((unsigned char)*p)) {
            if (++nd > 9)
                return -1;
            scale /= 10;
            frac += (*p - '0') * scale;
            p++;
        }
        if (nd == 0)
            return -1;
    }
    int64_t off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1;
        int oh, om;
        p++;
        if (read_digits(&p, 2, &oh) || expect(&p, ':') || read_digits(&p, 2, &om) || oh > 23 ||
            om > 59)
            return -1;
        off = sign * ((int64_t)oh * 3600 + om * 60);
    } else {
        return -1;
    }
    if (*p != '\0')
        return -1;
    struct tm tm = {0};
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = se;
    time_t t = timegm(&tm);
    *wall_ns = ((int64_t)t - off) * CX_NS_PER_S + frac;
    return 0;
}

int cx_duration_parse(const char *s, int64_t *ns, char *err, size_t errlen)
{
    static const struct {
        const char *name;
        int64_t ns;
    } units[] = {
        {"ns", 1},
        {"us", 1000},
        {"\xc2\xb5s", 1000},
        {"ms", CX_NS_PER_MS},
        {"s", CX_NS_PER_S},
        {"m", 60 * CX_NS_PER_S},
        {"h", 3600 * CX_NS_PER_S},
    };
    const char *p = s;
    int64_t total = 0;
    if (!s || !*s) {
        snprintf(err, errlen, "invalid duration \"\": empty");
        return -1;
    }
    if (*p == '-') {
        snprintf(err, errlen, "invalid duration \"%s\": must not be negative", s);
        return -1;
    }
    if (*p == '+')
        p++;
    if (strcmp(p, "0") == 0) {
        *ns = 0;
        return 0;
    }
    if (!*p) {
        snprintf(err, errlen, "invalid duration \"%s\"", s);
        return -1;
    }
    while (*p) {
        /* number: digits with an optional fraction */
        int64_t whole = 0;
        double frac = 0, scale = 0.1;
        int ndig = 0;
        while (isdigit((unsigned char)*p)) {
            if (whole > (INT64_MAX - 9) / 10)
                goto overflow;
            whole = whole * 10 + (*p - '0');
            p++;
            ndig++;
        }
        if (*p == '.') {
            p++;
            while (isdigit((unsigned char)*p)) {
                frac += (*p - '0') * scale;
                scale /= 10;
                p++;
                ndig++;
            }
        }
        if (ndig == 0) {
            snprintf(err, errlen, "invalid duration \"%s\": expected a number at \"%s\"", s, p);
            return -1;
        }
        size_t ulen = 0;
        int64_t unit = 0;
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
            const char *u = units[i].name;
            if (*p != u[0])
                continue; /* most units differ in the first byte */
            size_t l = u[1] ? (u[2] ? 3 : 2) : 1;
            /* longest match: "ms" before "m", "ns" before nothing */
            if (l > ulen && strncmp(p, u, l) == 0) {
                ulen = l;
                unit = units[i].ns;
            }
        }
        if (!unit) {
            if (*p)
                snprintf(err, errlen, "invalid duration \"%s\": unknown unit at \"%s\"", s, p);
            else
                snprintf(err, errlen,
                         "invalid duration \"%s\": missing unit (use ns, us, ms, s, m or h)", s);
            return -1;
        }
        p += ulen;
        if (whole > INT64_MAX / unit)
            goto overflow;
        int64_t v = whole * unit + (int64_t)(frac * (double)unit);
        if (total > INT64_MAX - v)
            goto overflow;
        total += v;
    }
    *ns = total;
    return 0;
overflow:
    snprintf(err, errlen, "invalid duration \"%s\": too large", s);
    return -1;
}

void cx_duration_format(int64_t ns, char *out, size_t outlen)
{
    if (ns == 0) {
        snprintf(out, outlen, "0s");
        return;
    }
    if (ns < CX_NS_PER_S) {
        if (ns % CX_NS_PER_MS == 0)
            snprintf(out, outlen, "%lldms", (long long)(ns / CX_NS_PER_MS));
        else if (ns % 1000 == 0)
            snprintf(out, outlen, "%lldus", (long long)(ns / 1000));
        else
            snprintf(out, outlen, "%lldns", (long long)ns);
        return;
    }
    long long h = ns / (3600 * CX_NS_PER_S);
    long long m = ns / (60 * CX_NS_PER_S) % 60;
    int64_t rest = ns % (60 * CX_NS_PER_S);
    long long sec = rest / CX_NS_PER_S;
    long long frac = rest % CX_NS_PER_S;
    char secs[40];
    if (frac) {
        /* Go prints the fraction without trailing zeros */
        char fb[16];
        snprintf(fb, sizeof(fb), "%09lld", frac);
        size_t l = strlen(fb);
        while (l > 0 && fb[l - 1] == '0')
            fb[--l] = '\0';
        snprintf(secs, sizeof(secs), "%lld.%ss", sec, fb);
    } else {
        snprintf(secs, sizeof(secs), "%llds", sec);
    }
    if (h)
        snprintf(out, outlen, "%lldh%lldm%s", h, m, secs);
    else if (m)
        snprintf(out, outlen, "%lldm%s", m, secs);
    else
        snprintf(out, outlen, "%s", secs);
}
