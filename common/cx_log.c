#include "cx_log.h"

#include "cx_buf.h"
#include "cx_json.h"
#include "cx_time.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static _Atomic int log_min = CX_LOG_INFO;
static _Atomic int log_fmt = CX_LOG_TEXT;
static char log_identity[128];

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void cx_log_setup(enum cx_log_format fmt, enum cx_log_level min, const char *identity)
{
    atomic_store(&log_fmt, (int)fmt);
    atomic_store(&log_min, (int)min);
    snprintf(log_identity, sizeof(log_identity), "%s", identity ? identity : "");
}

int cx_log_parse_level(const char *s, enum cx_log_level *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (enum cx_log_level)i;
            return 0;
        }
    }
    return -1;
}

int cx_log_parse_format(const char *s, enum cx_log_format *out)
{
    if (strcmp(s, "text") == 0) {
        *out = CX_LOG_TEXT;
        return 0;
    }
    if (strcmp(s, "json") == 0) {
        *out = CX_LOG_JSON;
        return 0;
    }
    return -1;
}

int cx_log_enabled(enum cx_log_level lvl)
{
    return (int)lvl >= atomic_load(&log_min);
}

/* Length of the UTF-8 sequence at |p| that is a C1 control (U+0080..U+009F)
 * or a line/paragraph separator (U+2028, U+2029): terminals and log
 * viewers act on those as they do on C0 controls. 0 for anything else. */
static size_t unicode_control(const unsigned char *p)
{
    if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
        return 2;
    if (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9))
        return 3;
    return 0;
}

size_t cx_log_escape(const char *in, char *out, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    size_t k = 0;
    if (cap == 0)
        return 0;
    const unsigned char *p = (const unsigned char *)(in ? in : "");
    while (*p) {
        char esc[8];
        size_t n = 0, adv = 1;
        size_t u = unicode_control(p);
        if (u) {
            unsigned cp = u == 2 ? p[1] : (p[2] == 0xa8 ? 0x2028u : 0x2029u);
            n = (size_t)snprintf(esc, sizeof(esc), "\\u%04x", cp);
            adv = u;
        } else if (*p == '\n' || *p == '\r' || *p == '\t') {
            esc[0] = '\\';
            esc[1] = *p == '\n' ? 'n' : *p == '\r' ? 'r' : 't';
            n = 2;
        } else if (*p < 0x20 || *p == 0x7f) {
            esc[0] = '\\';
            esc[1] = 'x';
            esc[2] = hex[*p >> 4];
            esc[3] = hex[*p & 15];
            n = 4;
        } else {
            esc[0] = (char)*p;
            n = 1;
        }
        if (k + n >= cap)
            break; /* never half an escape */
        memcpy(out + k, esc, n);
        k += n;
        p += adv;
    }
    out[k] = '\0';
    return k;
}

void cx_vlog(enum cx_log_level lvl, const char *component, const char *fmt, va_list ap)
{
    if (!cx_log_enabled(lvl))
        return;
    char ts[CX_TIME_MICRO_LEN];
    cx_time_format_micro(cx_wall_ns(), ts, sizeof(ts));
    char msg[4096];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    struct cx_buf b;
    cx_buf_init(&b, 16384);
    int rc;
    if (atomic_load(&log_fmt) == CX_LOG_JSON) {
        rc = cx_buf_printf(&b, "{\"ts\":\"%s\",\"level\":\"%s\",\"component\":", ts,
                           level_names[lvl]);
        rc |= cx_json_escape(&b, component ? component : "");
        if (log_identity[0]) {
            rc |= cx_buf_puts(&b, ",\"identity\":");
            rc |= cx_json_escape(&b, log_identity);
        }
        rc |= cx_buf_puts(&b, ",\"msg\":");
        rc |= cx_json_escape(&b, msg);
        rc |= cx_buf_puts(&b, "}\n");
    } else {
        /* A message carries peer-chosen text (a NACK's error, a header):
         * escaped, it can never forge a line or drive a terminal. */
        char esc[sizeof(msg) * 4];
        cx_log_escape(msg, esc, sizeof(esc));
        rc = cx_buf_printf(&b, "%s %-5s %s: %s\n", ts, level_names[lvl],
                           component ? component : "-", esc);
    }
    if (rc == 0) {
        /* one write per line: lines from threads never interleave */
        ssize_t off = 0;
        while ((size_t)off < b.len) {
            ssize_t n = write(STDERR_FILENO, b.data + off, b.len - (size_t)off);
            if (n <= 0)
                break;
            off += n;
        }
    }
    cx_buf_free(&b);
}

void cx_log(enum cx_log_level lvl, const char *component, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cx_vlog(lvl, component, fmt, ap);
    va_end(ap);
}
