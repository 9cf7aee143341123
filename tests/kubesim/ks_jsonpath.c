/*
 * ks_jsonpath: printer-column JSONPath and human durations.
 */
#include "ks_jsonpath.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cx_time.h"

/* ---- durations ----------------------------------------------------------- */

void ks_human_duration(int64_t ns, char *out, size_t n)
{
    long long sec = ns / CX_NS_PER_S;
    if (sec < -1) {
        snprintf(out, n, "<invalid>");
        return;
    }
    if (sec < 0) {
        snprintf(out, n, "0s");
        return;
    }
    if (sec < 60 * 2) {
        snprintf(out, n, "%llds", sec);
        return;
    }
    long long min = sec / 60;
    if (min < 10) {
        long long s = sec % 60;
        if (s == 0)
            snprintf(out, n, "%lldm", min);
        else
            snprintf(out, n, "%lldm%llds", min, s);
        return;
    }
    if (min < 60 * 3) {
        snprintf(out, n, "%lldm", min);
        return;
    }
    long long h = sec / 3600;
    if (h < 8) {
        long long m = min % 60;
        if (m == 0)
            snprintf(out, n, "%lldh", h);
        else
            snprintf(out, n, "%lldh%lldm", h, m);
    } else if (h < 48) {
        snprintf(out, n, "%lldh", h);
    } else if (h < 24 * 8) {
        if (h % 24 == 0)
            snprintf(out, n, "%lldd", h / 24);
        else
            snprintf(out, n, "%lldd%lldh", h / 24, h % 24);
    } else if (h < 24 * 365 * 2) {
        snprintf(out, n, "%lldd", h / 24);
    } else if (h < 24 * 365 * 8) {
        long long dy = (h / 24) % 365;
        if (dy == 0)
            snprintf(out, n, "%lldy", h / 24 / 365);
        else
            snprintf(out, n, "%lldy%lldd", h / 24 / 365, dy);
    } else {
        snprintf(out, n, "%lldy", h / 24 / 365);
    }
}

/* ---- JSONPath ------------------------------------------------------------- */

#define JP_DEPTH 32

static const cJSON *jp_eval(const cJSON *cur, const char *p, int depth);

/* Does filter "@.a.b==\"v\"" (or != or a bare "@.a") hold for |item|? */
static bool jp_filter(const cJSON *item, const char *f, size_t len, int depth)
{
    char expr[256];
    snprintf(expr, sizeof(expr), "%.*s", (int)len, f);
    char *op = strstr(expr, "==");
    bool neq = false;
    if (!op) {
        op = strstr(expr, "!=");
        neq = op != NULL;
    }
    char *lhs = expr;
    while (*lhs == ' ')
        lhs++;
    if (*lhs != '@')
        return false;
    if (op)
        *op = 0;
    char *le = lhs + strlen(lhs);
    while (le > lhs && le[-1] == ' ')
        *--le = 0;
    const cJSON *v = jp_eval(item, lhs + 1, depth + 1);
    if (!op)
        return v != NULL;
    char *rhs = op + 2;
    while (*rhs == ' ')
        rhs++;
    char *re = rhs + strlen(rhs);
    while (re > rhs && re[-1] == ' ')
        *--re = 0;
    bool eq;
    if ((*rhs == '"' || *rhs == '\'') && re - rhs >= 2) {
        rhs[re - rhs - 1] = 0;
        eq = cJSON_IsString(v) && strcmp(v->valuestring, rhs + 1) == 0;
    } else if (strcmp(rhs, "true") == 0 || strcmp(rhs, "false") == 0) {
        eq = cJSON_IsBool(v) && (cJSON_IsTrue(v) == (strcmp(rhs, "true") == 0));
    } else {
        char *end;
        double d = strtod(rhs, &end);
        eq = *end == 0 && cJSON_IsNumber(v) && v->valuedouble == d;
    }
    return v && (neq ? !eq : eq);
}

/* The first result of path |p| (".a[0].b", "[*]", "['k']", "[?(...)]")
 * from |cur|; NULL when there is none. */
static const cJSON *jp_eval(const cJSON *cur, const char *p, int depth)
{
    if (!cur || depth > JP_DEPTH)
        return NULL;
    if (!*p)
        return cur;
    if (*p == '.' && p[1] != '[') {
        p++;
        if (*p == '*') {
            const cJSON *c;
            for (c = cur->child; c; c = c->next) {
                const cJSON *r = jp_eval(c, p + 1, depth + 1);
                if (r)
                    return r;
            }
            return NULL;
        }
        size_t n = strcspn(p, ".[");
        if (!cJSON_IsObject(cur) || n == 0 || n >= 256)
            return NULL;
        char key[256];
        snprintf(key, sizeof(key), "%.*s", (int)n, p);
        return jp_eval(cJSON_GetObjectItemCaseSensitive(cur, key), p + n, depth + 1);
    }
    if (*p == '.')
        p++;
    if (*p != '[')
        return NULL;
    const char *close;
    if (p[1] == '?') {
        /* [?( ... )] */
        const char *open = strchr(p, '(');
        close = open ? strstr(open, ")]") : NULL;
        if (!open || !close || !cJSON_IsArray(cur))
            return NULL;
        const cJSON *c;
        cJSON_ArrayForEach(c, cur)
        {
            if (jp_filter(c, open + 1, (size_t)(close - open - 1), depth)) {
                const cJSON *r = jp_eval(c, close + 2, depth + 1);
                if (r)
                    return r;
            }
        }
        return NULL;
    }
    close = strchr(p, ']');
    if (!close)
        return NULL;
    const char *in = p + 1;
    size_t len = (size_t)(close - in);
    const char *rest = close + 1;
    if (len == 1 && *in == '*') {
        const cJSON *c;
        for (c = cur->child; c; c = c->next) {
            const cJSON *r = jp_eval(c, rest, depth + 1);
            if (r)
                return r;
        }
        return NULL;
    }
    if (len >= 2 && (*in == '\'' || *in == '"')) {
        char key[256];
        snprintf(key, sizeof(key), "%.*s", (int)(len - 2), in + 1);
        return cJSON_IsObject(cur)
                   ? jp_eval(cJSON_GetObjectItemCaseSensitive(cur, key), rest, depth + 1)
                   : NULL;
    }
    char num[32];
    snprintf(num, sizeof(num), "%.*s", (int)(len < 31 ? len : 31), in);
    char *end;
    long idx = strtol(num, &end, 10);
    if (*end || !cJSON_IsArray(cur))
        return NULL;
    int size = cJSON_GetArraySize(cur);
    if (idx < 0)
        idx += size;
    if (idx < 0 || idx >= size)
        return NULL;
    return jp_eval(cJSON_GetArrayItem(cur, (int)idx), rest, depth + 1);
}

const cJSON *ks_jsonpath_first(const cJSON *obj, const char *path)
{
    if (!path)
        return NULL;
    /* Accept the braced form too ("{.a.b}"). */
    char buf[512];
    size_t n = strlen(path);
    if (n >= 2 && path[0] == '{' && path[n - 1] == '}') {
        snprintf(buf, sizeof(buf), "%.*s", (int)(n - 2), path + 1);
        path = buf;
    }
    return jp_eval(obj, path, 0);
}
