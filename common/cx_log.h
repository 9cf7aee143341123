/*
 * cx_log: one-line structured logs to stderr, as text or JSON.
 *
 * Library code returns errors; the daemon's edges log them. Each line is
 * written with a single write(2), so lines from different threads never
 * interleave. Never log secrets (tokens, private keys): callers redact.
 * Thread-safe.
 */
#ifndef CX_LOG_H
#define CX_LOG_H

#include <stdarg.h>
#include <stddef.h>

enum cx_log_level {
    CX_LOG_DEBUG = 0,
    CX_LOG_INFO = 1,
    CX_LOG_WARN = 2,
    CX_LOG_ERROR = 3,
};

enum cx_log_format {
    CX_LOG_TEXT = 0,
    CX_LOG_JSON = 1,
};

/* Sets the output format, the minimum level and the replica identity that
 * every JSON line carries (may be NULL). Call once at start-up. */
void cx_log_setup(enum cx_log_format fmt, enum cx_log_level min, const char *identity);

/* Parses "debug|info|warn|error" / "text|json". Return 0 or -1. */
int cx_log_parse_level(const char *s, enum cx_log_level *out);
int cx_log_parse_format(const char *s, enum cx_log_format *out);

/* True if a message at |lvl| would be printed. */
int cx_log_enabled(enum cx_log_level lvl);

/* Copies |in| into |out| (|cap| bytes, always terminated) with control
 * characters escaped: \n \r \t, other C0 bytes and DEL as \xNN, C1
 * controls and U+2028/U+2029 (UTF-8) as \uNNNN. Cut at |cap| without ever
 * splitting an escape. Returns the bytes written. Text-format logs pass every
 * message through it; anything that stores peer-chosen text for operators
 * (NACK messages in a status) uses it too. */
size_t cx_log_escape(const char *in, char *out, size_t cap);

/* Logs one line from |component| ("election", "xds", ...). */
__attribute__((format(printf, 3, 4))) void cx_log(enum cx_log_level lvl, const char *component,
                                                  const char *fmt, ...);
__attribute__((format(printf, 3, 0))) void cx_vlog(enum cx_log_level lvl, const char *component,
                                                   const char *fmt, va_list ap);

#define cx_debug(comp, ...) cx_log(CX_LOG_DEBUG, comp, __VA_ARGS__)
#define cx_info(comp, ...)  cx_log(CX_LOG_INFO, comp, __VA_ARGS__)
#define cx_warn(comp, ...)  cx_log(CX_LOG_WARN, comp, __VA_ARGS__)
#define cx_error(comp, ...) cx_log(CX_LOG_ERROR, comp, __VA_ARGS__)

#endif
