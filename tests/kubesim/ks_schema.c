/*
 * ks_schema: a custom resource against its CRD's structural schema, as the
 * apiextensions server does it: the decoder prunes unknown fields and
 * applies defaults, then kube-openapi's schema validator checks each value
 * (apiextensions-apiserver/pkg/apiserver/validation: type, the composite
 * keywords, string, format, number, array, enum, object, in that order) and
 * the list types are checked (pkg/apiserver/schema/listtype). Messages are
 * kube-openapi's (pkg/validation/errors) turned into field errors by
 * kubeOpenAPIResultToFieldErrors.
 */
#include "ks_schema.h"

#include <arpa/inet.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cx_buf.h"
#include "cx_json.h"
#include "ks_re2.h"
#include "ks_selector.h"

#define MAX_DEPTH    64
#define PATH_MAX_LEN 512

struct walk {
    struct ks_ferrs *fe; /* NULL: count only (a oneOf/anyOf/not branch) */
    bool mutate;         /* prune and default (the decoder's pass) */
    bool check;          /* validate (the validator's pass) */
    size_t nerr;
};

static void add_err(struct walk *w, const char *type, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void add_err(struct walk *w, const char *type, const char *path, const char *fmt, ...)
{
    if (!w->check)
        return;
    w->nerr++;
    if (!w->fe)
        return;
    struct cx_buf b;
    cx_buf_init(&b, 1 << 16);
    va_list ap;
    va_start(ap, fmt);
    int rc = cx_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    if (rc == 0 && b.data)
        ks_ferr_add(w->fe, type, path, "%s", b.data);
    cx_buf_free(&b);
}

static const char *json_type(const cJSON *v)
{
    if (cJSON_IsString(v))
        return "string";
    if (cJSON_IsBool(v))
        return "boolean";
    if (cJSON_IsNumber(v))
        return v->valuedouble == floor(v->valuedouble) ? "integer" : "number";
    if (cJSON_IsArray(v))
        return "array";
    if (cJSON_IsObject(v))
        return "object";
    return "null";
}

/* Go's %v of a float64: the shortest form that reads back, 'g' style. */
static void go_float(char *out, size_t n, double d)
{
    for (int p = 1; p <= 17; p++) {
        snprintf(out, n, "%.*g", p, d);
        if (strtod(out, NULL) == d)
            return;
    }
}

/* A value as field.Error prints it: strings quoted (%q), int64 and float64
 * with %v, anything else as its type name. */
static void go_value(struct cx_buf *b, const cJSON *v)
{
    char num[64];
    if (cJSON_IsString(v)) {
        ks_go_quote(b, v->valuestring);
    } else if (cJSON_IsNumber(v)) {
        if (v->valuedouble == floor(v->valuedouble) && fabs(v->valuedouble) < 9.2e18)
            snprintf(num, sizeof(num), "%lld", (long long)v->valuedouble);
        else
            go_float(num, sizeof(num), v->valuedouble);
        (void)!cx_buf_puts(b, num);
    } else if (cJSON_IsBool(v)) {
        (void)!cx_buf_puts(b, cJSON_IsTrue(v) ? "true" : "false");
    } else {
        ks_go_quote(b, json_type(v));
    }
}

/* `Invalid value: <value>: <path> in body <what>` */
static void invalid(struct walk *w, const char *type, const char *path, const cJSON *v,
                    const char *what)
{
    if (!w->fe) {
        w->nerr += w->check;
        return;
    }
    struct cx_buf b;
    cx_buf_init(&b, 1 << 16);
    go_value(&b, v);
    add_err(w, type, path, "Invalid value: %s: %s in body %s", b.data ? b.data : "\"\"", path,
            what);
    cx_buf_free(&b);
}

static bool num_kw(const cJSON *sch, const char *kw, double *out)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(sch, kw);
    if (!cJSON_IsNumber(n))
        return false;
    *out = n->valuedouble;
    return true;
}

/* utf8.RuneCountInString */
static size_t runes(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xc0) != 0x80)
            n++;
    return n;
}

static bool digits(const char *s, int n)
{
    for (int i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

/* The value of |n| digits already checked by digits(). */
static int num(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++)
        v = v * 10 + (s[i] - '0');
    return v;
}

static bool is_date(const char *s)
{
    if (strlen(s) < 10 || !digits(s, 4) || s[4] != '-' || !digits(s + 5, 2) || s[7] != '-' ||
        !digits(s + 8, 2))
        return false;
    int mon = num(s + 5, 2), day = num(s + 8, 2);
    return mon >= 1 && mon <= 12 && day >= 1 && day <= 31;
}

/* strfmt date-time: RFC 3339 (a 't' or 'T' between date and time; the
 * offset "Z", "z" or ±hh:mm; optional fraction). */
static bool is_date_time(const char *s)
{
    if (!is_date(s) || (s[10] != 'T' && s[10] != 't'))
        return false;
    const char *t = s + 11;
    if (!digits(t, 2) || t[2] != ':' || !digits(t + 3, 2) || t[5] != ':' || !digits(t + 6, 2))
        return false;
    if (num(t, 2) > 23 || num(t + 3, 2) > 59 || num(t + 6, 2) > 60)
        return false;
    t += 8;
    if (*t == '.') {
        t++;
        if (*t < '0' || *t > '9')
            return false;
        while (*t >= '0' && *t <= '9')
            t++;
    }
    if ((*t == 'Z' || *t == 'z') && !t[1])
        return true;
    return (*t == '+' || *t == '-') && digits(t + 1, 2) && t[3] == ':' && digits(t + 4, 2) && !t[6];
}

static bool is_cidr(const char *s)
{
    const char *slash = strchr(s, '/');
    if (!slash || !slash[1] || strlen(s) >= 64)
        return false;
    char ip[64];
    snprintf(ip, sizeof(ip), "%.*s", (int)(slash - s), s);
    unsigned char buf[16];
    bool v6 = inet_pton(AF_INET6, ip, buf) == 1;
    if (!v6 && inet_pton(AF_INET, ip, buf) != 1)
        return false;
    char *end;
    long bits = strtol(slash + 1, &end, 10);
    return !*end && digits(slash + 1, (int)strlen(slash + 1)) && bits >= 0 &&
           bits <= (v6 ? 128 : 32);
}

static bool is_uuid(const char *s)
{
    static const int dash[] = {8, 13, 18, 23};
    if (strlen(s) != 36)
        return false;
    for (int i = 0, d = 0; i < 36; i++) {
        if (d < 4 && i == dash[d]) {
            if (s[i] != '-')
                return false;
            d++;
        } else if (!strchr("0123456789abcdefABCDEF", s[i])) {
            return false;
        }
    }
    return true;
}

static bool is_base64(const char *s)
{
    size_t n = strlen(s), pad = 0;
    if (n % 4)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '=') {
            pad++;
            continue;
        }
        if (pad || !((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                     c == '+' || c == '/'))
            return false;
    }
    return pad <= 2;
}

/* The formats kube-openapi's default registry checks that kubesim knows;
 * any other (int32, int64, ...) is not checked, as there. */
static int check_format(const char *fmt, const char *s)
{
    unsigned char buf[16];
    if (strcmp(fmt, "date-time") == 0 || strcmp(fmt, "datetime") == 0)
        return is_date_time(s);
    if (strcmp(fmt, "date") == 0)
        return strlen(s) == 10 && is_date(s);
    if (strcmp(fmt, "ipv4") == 0)
        return inet_pton(AF_INET, s, buf) == 1;
    if (strcmp(fmt, "ipv6") == 0)
        return inet_pton(AF_INET6, s, buf) == 1;
    if (strcmp(fmt, "cidr") == 0)
        return is_cidr(s);
    if (strcmp(fmt, "uuid") == 0)
        return is_uuid(s);
    if (strcmp(fmt, "byte") == 0)
        return is_base64(s);
    return -1;
}

static void walk(struct walk *w, cJSON *val, const cJSON *sch, const char *path, int depth);

/* Errors of |val| against the value-validation schema |sub|, counted only. */
static size_t branch_errors(cJSON *val, const cJSON *sub, const char *path, int depth)
{
    struct walk b = {.fe = NULL, .mutate = false, .check = true, .nerr = 0};
    walk(&b, val, sub, path, depth + 1);
    return b.nerr;
}

static void composite(struct walk *w, cJSON *val, const cJSON *sch, const char *path, int depth)
{
    const cJSON *sub;
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(sch, "allOf");
    cJSON_ArrayForEach(sub, all)
    {
        walk(w, val, sub, path, depth + 1);
    }
    const cJSON *one = cJSON_GetObjectItemCaseSensitive(sch, "oneOf");
    if (cJSON_IsArray(one) && cJSON_GetArraySize(one) > 0) {
        int valid = 0;
        cJSON_ArrayForEach(sub, one)
        {
            valid += branch_errors(val, sub, path, depth) == 0;
        }
        if (valid != 1) {
            char more[64];
            if (valid == 0)
                snprintf(more, sizeof(more), "Found none valid");
            else
                snprintf(more, sizeof(more), "Found %d valid alternatives", valid);
            add_err(w, "FieldValueInvalid", path,
                    "Invalid value: \"\": %s in body must validate one and only one schema "
                    "(oneOf). %s",
                    path, more);
        }
    }
    const cJSON *any = cJSON_GetObjectItemCaseSensitive(sch, "anyOf");
    if (cJSON_IsArray(any) && cJSON_GetArraySize(any) > 0) {
        bool ok = false;
        cJSON_ArrayForEach(sub, any)
        {
            if (!ok && branch_errors(val, sub, path, depth) == 0)
                ok = true;
        }
        if (!ok)
            add_err(w, "FieldValueInvalid", path,
                    "Invalid value: \"\": %s in body should validate at least one schema (anyOf)",
                    path);
    }
    const cJSON *not = cJSON_GetObjectItemCaseSensitive(sch, "not");
    if (cJSON_IsObject(not ) && branch_errors(val, not, path, depth) == 0)
        add_err(w, "FieldValueInvalid", path,
                "Invalid value: \"\": %s in body shouldn't validate the schema (not)", path);
}

static void check_string(struct walk *w, const cJSON *val, const cJSON *sch, const char *path)
{
    const char *s = val->valuestring;
    double lim;
    char what[PATH_MAX_LEN + 64];
    if (num_kw(sch, "maxLength", &lim) && (double)runes(s) > lim)
        add_err(w, "FieldValueTooLong", path, "Too long: may not be longer than %lld",
                (long long)lim);
    if (num_kw(sch, "minLength", &lim) && (double)runes(s) < lim) {
        snprintf(what, sizeof(what), "should be at least %lld chars long", (long long)lim);
        invalid(w, "FieldValueInvalid", path, val, what);
    }
    const char *pat = cx_json_str(sch, "pattern");
    if (pat) {
        char err[256];
        int m = ks_re2_search(pat, s, strlen(s), err, sizeof(err));
        if (m == 0) {
            struct cx_buf b;
            cx_buf_init(&b, 1 << 16);
            (void)!cx_buf_printf(&b, "should match '%s'", pat);
            invalid(w, "FieldValueInvalid", path, val, b.data ? b.data : "");
            cx_buf_free(&b);
        } else if (m < 0) {
            add_err(w, "FieldValueInvalid", path, "Invalid value: \"\": pattern %s: %s", pat, err);
        }
    }
    const char *fmt = cx_json_str(sch, "format");
    if (fmt && check_format(fmt, s) == 0) {
        struct cx_buf b, q;
        cx_buf_init(&b, 1 << 16);
        cx_buf_init(&q, 1 << 16);
        ks_go_quote(&q, s);
        (void)!cx_buf_printf(&b, "must be of type %s: %s", fmt, q.data ? q.data : "\"\"");
        invalid(w, "FieldValueTypeInvalid", path, val, b.data ? b.data : "");
        cx_buf_free(&b);
        cx_buf_free(&q);
    }
}

static void check_number(struct walk *w, const cJSON *val, const cJSON *sch, const char *path)
{
    double d = val->valuedouble, lim;
    char what[128], ls[64];
    if (num_kw(sch, "multipleOf", &lim) && lim > 0 && fmod(d, lim) != 0) {
        go_float(ls, sizeof(ls), lim);
        snprintf(what, sizeof(what), "should be a multiple of %s", ls);
        invalid(w, "FieldValueInvalid", path, val, what);
    }
    bool excl;
    if (num_kw(sch, "maximum", &lim)) {
        excl = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sch, "exclusiveMaximum"));
        if (excl ? d >= lim : d > lim) {
            go_float(ls, sizeof(ls), lim);
            snprintf(what, sizeof(what), "should be less than %s%s", excl ? "" : "or equal to ",
                     ls);
            invalid(w, "FieldValueInvalid", path, val, what);
        }
    }
    if (num_kw(sch, "minimum", &lim)) {
        excl = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sch, "exclusiveMinimum"));
        if (excl ? d <= lim : d < lim) {
            go_float(ls, sizeof(ls), lim);
            snprintf(what, sizeof(what), "should be greater than %s%s", excl ? "" : "or equal to ",
                     ls);
            invalid(w, "FieldValueInvalid", path, val, what);
        }
    }
}

/* minItems/maxItems, minProperties/maxProperties: the count as the value. */
static void check_count(struct walk *w, int n, const cJSON *sch, const char *path, bool items)
{
    double lim;
    if (num_kw(sch, items ? "minItems" : "minProperties", &lim) && n < lim) {
        cJSON *cnt = cJSON_CreateNumber(n);
        char what[96];
        snprintf(what, sizeof(what), "should have at least %lld %s", (long long)lim,
                 items ? "items" : "properties");
        if (cnt)
            invalid(w, "FieldValueInvalid", path, cnt, what);
        cJSON_Delete(cnt);
    }
    if (num_kw(sch, items ? "maxItems" : "maxProperties", &lim) && n > lim)
        add_err(w, "FieldValueTooMany", path, "Too many: %d: must have at most %lld items", n,
                (long long)lim);
}

/* x-kubernetes-list-type map (unique keys) and set (unique items). */
static void check_list_type(struct walk *w, const cJSON *arr, const cJSON *sch, const char *path)
{
    const char *lt = cx_json_str(sch, "x-kubernetes-list-type");
    if (!lt || (strcmp(lt, "map") != 0 && strcmp(lt, "set") != 0))
        return;
    const cJSON *keys = cJSON_GetObjectItemCaseSensitive(sch, "x-kubernetes-list-map-keys");
    bool map = strcmp(lt, "map") == 0;
    int i = 0;
    const cJSON *a;
    cJSON_ArrayForEach(a, arr)
    {
        int j = 0;
        const cJSON *b;
        bool dup = false;
        cJSON_ArrayForEach(b, arr)
        {
            if (j++ >= i || dup)
                break;
            if (!map) {
                dup = cJSON_Compare(a, b, 1);
                continue;
            }
            bool same = true;
            const cJSON *k;
            cJSON_ArrayForEach(k, keys)
            {
                if (!cJSON_IsString(k))
                    continue;
                const cJSON *x = cJSON_GetObjectItemCaseSensitive(a, k->valuestring);
                const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, k->valuestring);
                if (!(x == NULL && y == NULL) && !(x && y && cJSON_Compare(x, y, 1)))
                    same = false;
            }
            dup = same;
        }
        if (dup) {
            char f[PATH_MAX_LEN + 16];
            snprintf(f, sizeof(f), "%s[%d]", path, i);
            struct cx_buf v;
            cx_buf_init(&v, 1 << 16);
            if (map) {
                /* field.Duplicate of the keys' map, printed with %#v */
                (void)!cx_buf_puts(&v, "map[string]interface {}{");
                bool first = true;
                const cJSON *k;
                cJSON_ArrayForEach(k, keys)
                {
                    const cJSON *x = cJSON_IsString(k)
                                         ? cJSON_GetObjectItemCaseSensitive(a, k->valuestring)
                                         : NULL;
                    if (!x)
                        continue;
                    if (!first)
                        (void)!cx_buf_puts(&v, ", ");
                    first = false;
                    ks_go_quote(&v, k->valuestring);
                    (void)!cx_buf_puts(&v, ":");
                    go_value(&v, x);
                }
                (void)!cx_buf_puts(&v, "}");
            } else {
                go_value(&v, a);
            }
            add_err(w, "FieldValueDuplicate", f, "Duplicate value: %s", v.data ? v.data : "");
            cx_buf_free(&v);
        }
        i++;
    }
}

static void check_enum(struct walk *w, const cJSON *val, const cJSON *sch, const char *path)
{
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(sch, "enum");
    if (!cJSON_IsArray(en))
        return;
    const cJSON *e;
    cJSON_ArrayForEach(e, en)
    {
        if (cJSON_Compare(e, val, 1))
            return;
    }
    if (!w->fe) {
        w->nerr += w->check;
        return;
    }
    struct cx_buf b;
    cx_buf_init(&b, 1 << 14);
    cJSON_ArrayForEach(e, en)
    {
        if (b.len)
            (void)!cx_buf_puts(&b, ", ");
        char *t = cJSON_PrintUnformatted(e);
        if (t)
            (void)!cx_buf_puts(&b, t);
        free(t);
    }
    char *vt = cJSON_PrintUnformatted(val);
    add_err(w, "FieldValueNotSupported", path, "Unsupported value: %s: supported values: %s",
            vt ? vt : "", b.data ? b.data : "");
    free(vt);
    cx_buf_free(&b);
}

static void walk_object(struct walk *w, cJSON *val, const cJSON *sch, const char *path, int depth)
{
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(sch, "properties");
    const cJSON *addl = cJSON_GetObjectItemCaseSensitive(sch, "additionalProperties");
    bool preserve =
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sch, "x-kubernetes-preserve-unknown-fields"));
    bool embedded =
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sch, "x-kubernetes-embedded-resource"));
    const cJSON *p;
    if (w->mutate)
        for (p = cJSON_IsObject(props) ? props->child : NULL; p; p = p->next) {
            const cJSON *def = cJSON_GetObjectItemCaseSensitive(p, "default");
            if (def && !cJSON_GetObjectItemCaseSensitive(val, p->string))
                cJSON_AddItemToObject(val, p->string, cJSON_Duplicate(def, 1));
        }
    check_count(w, cJSON_GetArraySize(val), sch, path, false);
    const cJSON *req;
    cJSON_ArrayForEach(req, cJSON_GetObjectItemCaseSensitive(sch, "required"))
    {
        if (cJSON_IsString(req) && !cJSON_GetObjectItemCaseSensitive(val, req->valuestring)) {
            char f[PATH_MAX_LEN];
            snprintf(f, sizeof(f), "%s%s%s", path, *path ? "." : "", req->valuestring);
            add_err(w, "FieldValueRequired", f, "Required value");
        }
    }
    cJSON *c = val->child;
    while (c) {
        cJSON *next = c->next;
        const cJSON *cs =
            cJSON_IsObject(props) ? cJSON_GetObjectItemCaseSensitive(props, c->string) : NULL;
        char f[PATH_MAX_LEN];
        snprintf(f, sizeof(f), "%s%s%s", path, *path ? "." : "", c->string);
        if (cs) {
            walk(w, c, cs, f, depth + 1);
        } else if (cJSON_IsObject(addl)) {
            walk(w, c, addl, f, depth + 1);
        } else if (w->mutate && !preserve && !cJSON_IsTrue(addl) && !embedded &&
                   !(depth == 0 &&
                     (strcmp(c->string, "apiVersion") == 0 || strcmp(c->string, "kind") == 0 ||
                      strcmp(c->string, "metadata") == 0))) {
            /* Pruning: unknown fields are dropped silently. */
            cJSON_DetachItemViaPointer(val, c);
            cJSON_Delete(c);
        }
        c = next;
    }
}

static void walk(struct walk *w, cJSON *val, const cJSON *sch, const char *path, int depth)
{
    if (!sch || depth > MAX_DEPTH)
        return;
    const char *type = cx_json_str(sch, "type");
    bool nullable = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sch, "nullable"));
    bool int_or_string =
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sch, "x-kubernetes-int-or-string"));
    if (cJSON_IsNull(val)) {
        if (!nullable && type)
            add_err(w, "FieldValueTypeInvalid", path,
                    "Invalid value: \"null\": %s in body must be of type %s: \"null\"", path, type);
        return;
    }
    if (int_or_string) {
        if (!cJSON_IsString(val) &&
            !(cJSON_IsNumber(val) && val->valuedouble == floor(val->valuedouble))) {
            add_err(w, "FieldValueTypeInvalid", path,
                    "Invalid value: \"%s\": %s in body must be of type integer,string: \"%s\"",
                    json_type(val), path, json_type(val));
            return;
        }
    } else if (type) {
        const char *have = json_type(val);
        bool ok = strcmp(type, have) == 0 ||
                  (strcmp(type, "number") == 0 && strcmp(have, "integer") == 0);
        if (!ok) {
            add_err(w, "FieldValueTypeInvalid", path,
                    "Invalid value: \"%s\": %s in body must be of type %s: \"%s\"", have, path,
                    type, have);
            return;
        }
    }
    if (w->check) {
        composite(w, val, sch, path, depth);
        if (cJSON_IsString(val))
            check_string(w, val, sch, path);
        else if (cJSON_IsNumber(val))
            check_number(w, val, sch, path);
        else if (cJSON_IsArray(val))
            check_count(w, cJSON_GetArraySize(val), sch, path, true);
        check_enum(w, val, sch, path);
    }
    if (cJSON_IsObject(val)) {
        walk_object(w, val, sch, path, depth);
    } else if (cJSON_IsArray(val)) {
        const cJSON *items = cJSON_GetObjectItemCaseSensitive(sch, "items");
        int i = 0;
        cJSON *c;
        cJSON_ArrayForEach(c, val)
        {
            char f[PATH_MAX_LEN];
            snprintf(f, sizeof(f), "%s[%d]", path, i++);
            walk(w, c, items, f, depth + 1);
        }
        if (w->check)
            check_list_type(w, val, sch, path);
    }
}

void ks_schema_validate(cJSON *obj, const cJSON *sch, struct ks_ferrs *fe)
{
    /* The decoder prunes and defaults; the validator sees the result. */
    struct walk dec = {.fe = NULL, .mutate = true, .check = false, .nerr = 0};
    walk(&dec, obj, sch, "", 0);
    struct walk val = {.fe = fe, .mutate = false, .check = true, .nerr = 0};
    walk(&val, obj, sch, "", 0);
}
