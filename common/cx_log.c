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
        rc = cx_buf_printf(&b, "%s %-5s %s: %s\n", ts, level_names[lvl],
                           component ? component : "-", msg);
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
