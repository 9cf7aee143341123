#include "cx_json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *cx_json_str(const cJSON *obj, const char *key)
{
    const cJSON *v = cx_json_member(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static cJSON *json_vpath(const cJSON *obj, va_list ap)
{
    const cJSON *cur = obj;
    const char *k;
    while ((k = va_arg(ap, const char *)) != NULL) {
        if (!cJSON_IsObject(cur))
            return NULL;
        cur = cJSON_GetObjectItemCaseSensitive(cur, k);
        if (!cur)
            return NULL;
    }
    return (cJSON *)cur;
}

cJSON *cx_json_path(const cJSON *obj, ...)
{
    va_list ap;
    va_start(ap, obj);
    cJSON *r = json_vpath(obj, ap);
    va_end(ap);
    return r;
}

const char *cx_json_path_str(const cJSON *obj, ...)
{
    va_list ap;
    va_start(ap, obj);
    cJSON *r = json_vpath(obj, ap);
    va_end(ap);
    return cJSON_IsString(r) ? r->valuestring : NULL;
}

int64_t cx_json_int(const cJSON *n, int64_t lo, int64_t hi, int64_t otherwise)
{
    if (!cJSON_IsNumber(n) || isnan(n->valuedouble))
        return otherwise;
    double v = n->valuedouble;
    /* (double)hi may round up past hi (INT64_MAX): >= keeps the cast in range. */
    if (v <= (double)lo)
        return lo;
    if (v >= (double)hi)
        return hi;
    int64_t r = (int64_t)v; /* in range: (double)lo < v < (double)hi */
    return r < lo ? lo : r > hi ? hi : r;
}

int cx_json_escape(struct cx_buf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    int rc = cx_buf_append(b, "\"", 1);
    const char *run = s;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        const char *esc = NULL;
        char u[7];
        switch (*p) {
        case '"':
            esc = "\\\"";
            break;
        case '\\':
            esc = "\\\\";
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
        case '\b':
            esc = "\\b";
            break;
        case '\f':
            esc = "\\f";
            break;
        default:
            if (*p < 0x20) {
                u[0] = '\\';
                u[1] = 'u';
                u[2] = '0';
                u[3] = '0';
                u[4] = hex[*p >> 4];
                u[5] = hex[*p & 0xf];
                u[6] = '\0';
                esc = u;
            }
        }
        if (esc) {
            rc |= cx_buf_append(b, run, (size_t)((const char *)p - run));
            rc |= cx_buf_puts(b, esc);
            run = (const char *)p + 1;
        }
    }
    rc |= cx_buf_puts(b, run);
    rc |= cx_buf_append(b, "\"", 1);
    return rc ? -1 : 0;
}

static int key_cmp(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a;
    const cJSON *y = *(const cJSON *const *)b;
    return strcmp(x->string, y->string);
}

int cx_json_canonical(const cJSON *v, struct cx_buf *b)
{
    if (!v)
        return cx_buf_puts(b, "null");
    switch (v->type & 0xff) {
    case cJSON_NULL:
        return cx_buf_puts(b, "null");
    case cJSON_True:
        return cx_buf_puts(b, "true");
    case cJSON_False:
        return cx_buf_puts(b, "false");
    case cJSON_String:
        return cx_json_escape(b, v->valuestring ? v->valuestring : "");
    case cJSON_Raw:
        return cx_buf_puts(b, v->valuestring ? v->valuestring : "null");
    case cJSON_Number: {
        double d = v->valuedouble;
        if (!isfinite(d))
            return cx_buf_puts(b, "null");
        if (d == floor(d) && fabs(d) < 1e15) {
            /* integers, by hand: printf is most of the cost otherwise */
            char tmp[24];
            size_t i = sizeof(tmp);
            long long x = (long long)d;
            unsigned long long u = x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;
            do {
                tmp[--i] = (char)('0' + u % 10);
                u /= 10;
            } while (u);
            if (x < 0)
                tmp[--i] = '-';
            return cx_buf_append(b, tmp + i, sizeof(tmp) - i);
        }
        return cx_buf_printf(b, "%.17g", d);
    }
    case cJSON_Array: {
        int rc = cx_buf_append(b, "[", 1);
        for (const cJSON *c = v->child; c && rc == 0; c = c->next) {
            if (c != v->child)
                rc = cx_buf_append(b, ",", 1);
            rc |= cx_json_canonical(c, b);
        }
        return rc | cx_buf_append(b, "]", 1);
    }
    case cJSON_Object: {
        size_t n = 0;
        for (const cJSON *c = v->child; c; c = c->next)
            n++;
        const cJSON *stackv[32];
        const cJSON **kids = n <= 32 ? stackv : malloc(n * sizeof(*kids));
        if (!kids)
            return -1;
        size_t i = 0;
        for (const cJSON *c = v->child; c; c = c->next)
            kids[i++] = c;
        if (n <= 32) {
            /* insertion sort: objects are small and usually sorted already */
            for (size_t a = 1; a < n; a++) {
                const cJSON *k = kids[a];
                size_t j = a;
                for (; j > 0 && strcmp(kids[j - 1]->string, k->string) > 0; j--)
                    kids[j] = kids[j - 1];
                kids[j] = k;
            }
        } else {
            qsort(kids, n, sizeof(*kids), key_cmp);
        }
        int rc = cx_buf_append(b, "{", 1);
        for (i = 0; i < n && rc == 0; i++) {
            if (i)
                rc = cx_buf_append(b, ",", 1);
            rc |= cx_json_escape(b, kids[i]->string);
            rc |= cx_buf_append(b, ":", 1);
            rc |= cx_json_canonical(kids[i], b);
        }
        if (kids != stackv)
            free(kids);
        return rc | cx_buf_append(b, "}", 1);
    }
    default:
        return -1;
    }
}

cJSON *cx_json_parse(const char *data, size_t len)
{
    return cJSON_ParseWithLength(data, len);
}
