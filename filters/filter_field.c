/*
 * Field selectors: a port of k8s.io/apimachinery/pkg/fields/selector.go
 * (splitTerms, splitTerm, UnescapeValue, their messages), followed by the
 * API server's field-label check against the fields the caller says the
 * kind supports, in the words of the kind's conversion function.
 */
#include "cx_json.h"
#include "filter_internal.h"
#include "filter_selector.h"

#include <stdlib.h>
#include <string.h>

const char *const filter_fields_default[] = {"metadata.name", "metadata.namespace", NULL};
const char *const filter_fields_custom[] = {"metadata.name", "metadata.namespace", NULL};
const char *const filter_fields_secret[] = {"metadata.name", "metadata.namespace", "type", NULL};

struct fterm {
    char *field;
    char *value;
    int neg;
};

struct filter_field_selector {
    struct fterm *t;
    size_t n;
};

struct part {
    const char *p;
    size_t len;
    size_t off;
};

static int part_cmp(const void *a, const void *b)
{
    const struct part *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->p, y->p, n);
    if (c)
        return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

void filter_field_selector_free(struct filter_field_selector *fs)
{
    if (!fs)
        return;
    for (size_t i = 0; i < fs->n; i++) {
        free(fs->t[i].field);
        free(fs->t[i].value);
    }
    free(fs->t);
    free(fs);
}

/* Decodes one UTF-8 rune at |p| (|n| bytes left) the way Go's range does:
 * returns its byte length and writes its encoding (U+FFFD for a bad byte)
 * to |enc|/|enclen|. */
static size_t go_rune(const unsigned char *p, size_t n, unsigned char enc[4], size_t *enclen)
{
    static const unsigned char repl[3] = {0xef, 0xbf, 0xbd};
    size_t need = 0;
    if (p[0] < 0x80)
        need = 1;
    else if (p[0] >= 0xc2 && p[0] <= 0xdf)
        need = 2;
    else if (p[0] >= 0xe0 && p[0] <= 0xef)
        need = 3;
    else if (p[0] >= 0xf0 && p[0] <= 0xf4)
        need = 4;
    int ok = need > 0 && need <= n;
    for (size_t i = 1; ok && i < need; i++)
        if ((p[i] & 0xc0) != 0x80)
            ok = 0;
    if (ok && need == 3 && ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0)))
        ok = 0;
    if (ok && need == 4 && ((p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90)))
        ok = 0;
    if (!ok) {
        memcpy(enc, repl, 3);
        *enclen = 3;
        return 1;
    }
    memcpy(enc, p, need);
    *enclen = need;
    return need;
}

/* UnescapeValue. Returns a new string, or NULL with |err| set (or *oom). */
static char *unescape(const char *s, size_t n, size_t off, struct filter_error *err, int *oom)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    int in_slash = 0;
    size_t i = 0;
    while (i < n) {
        unsigned char enc[4];
        size_t enclen;
        size_t adv = go_rune((const unsigned char *)s + i, n - i, enc, &enclen);
        unsigned char c = (unsigned char)s[i];
        if (in_slash) {
            if (adv == 1 && (c == '\\' || c == ',' || c == '=')) {
                if (cx_buf_append(&b, &c, 1) != 0)
                    goto oom;
            } else {
                filter_err_set(err, off + i - 1,
                               "invalid field selector: invalid escape sequence: \\%.*s",
                               (int)enclen, (const char *)enc);
                cx_buf_free(&b);
                return NULL;
            }
            in_slash = 0;
        } else if (c == '\\') {
            in_slash = 1;
        } else if (c == ',' || c == '=') {
            /* Go prints the rune with %v: its number */
            filter_err_set(err, off + i, "invalid field selector: unescaped character in value: %d",
                           (int)c);
            cx_buf_free(&b);
            return NULL;
        } else if (cx_buf_append(&b, enc, enclen) != 0) {
            goto oom;
        }
        i += adv;
    }
    if (in_slash) {
        filter_err_set(err, off + n - 1, "invalid field selector: invalid escape sequence: \\");
        cx_buf_free(&b);
        return NULL;
    }
    char *r = cx_buf_steal(&b, NULL);
    if (!r)
        goto oom;
    return r;
oom:
    cx_buf_free(&b);
    *oom = 1;
    return NULL;
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

int filter_field_selector_parse(const char *s, const char *const *allowed,
                                struct filter_field_selector **out, struct filter_error *err)
{
    int rc = FILTER_OK;
    struct part *parts = NULL;
    struct filter_field_selector *fs = NULL;
    size_t nparts = 0;
    *out = NULL;
    if (!s)
        s = "";
    if (!allowed)
        allowed = filter_fields_default;
    size_t len = strlen(s);
    if (len > FILTER_SELECTOR_MAX_BYTES) {
        filter_err_set(err, FILTER_SELECTOR_MAX_BYTES, "selector is longer than %d bytes",
                       FILTER_SELECTOR_MAX_BYTES);
        return FILTER_EINVAL;
    }
    fs = calloc(1, sizeof(*fs));
    if (!fs)
        return FILTER_ENOMEM;
    if (len == 0)
        goto out;

    /* splitTerms: commas not preceded by an escaping backslash */
    size_t maxparts = 1;
    for (size_t i = 0; i < len; i++)
        if (s[i] == ',')
            maxparts++;
    parts = calloc(maxparts, sizeof(*parts));
    if (!parts) {
        rc = FILTER_ENOMEM;
        goto out;
    }
    size_t start = 0;
    int in_slash = 0;
    for (size_t i = 0; i < len; i++) {
        if (in_slash)
            in_slash = 0;
        else if (s[i] == '\\')
            in_slash = 1;
        else if (s[i] == ',') {
            parts[nparts++] = (struct part){s + start, i - start, start};
            start = i + 1;
        }
    }
    parts[nparts++] = (struct part){s + start, len - start, start};
    qsort(parts, nparts, sizeof(*parts), part_cmp);

    fs->t = calloc(nparts, sizeof(*fs->t));
    if (!fs->t) {
        rc = FILTER_ENOMEM;
        goto out;
    }
    for (size_t k = 0; k < nparts; k++) {
        const struct part *pt = &parts[k];
        if (pt->len == 0)
            continue;
        /* splitTerm: first position where "!=", "==" or "=" starts */
        size_t i, oplen = 0;
        int neg = 0;
        for (i = 0; i < pt->len; i++) {
            if (pt->p[i] == '!' && i + 1 < pt->len && pt->p[i + 1] == '=') {
                neg = 1;
                oplen = 2;
                break;
            }
            if (pt->p[i] == '=') {
                oplen = (i + 1 < pt->len && pt->p[i + 1] == '=') ? 2 : 1;
                break;
            }
        }
        if (oplen == 0) {
            filter_err_set(err, pt->off, "invalid selector: '%s'; can't understand '%.*s'", s,
                           (int)pt->len, pt->p);
            rc = FILTER_EINVAL;
            goto out;
        }
        int oom = 0;
        char *value =
            unescape(pt->p + i + oplen, pt->len - i - oplen, pt->off + i + oplen, err, &oom);
        if (!value) {
            rc = oom ? FILTER_ENOMEM : FILTER_EINVAL;
            goto out;
        }
        char *field = dup_n(pt->p, i);
        if (!field) {
            free(value);
            rc = FILTER_ENOMEM;
            goto out;
        }
        fs->t[fs->n].field = field;
        fs->t[fs->n].value = value;
        fs->t[fs->n].neg = neg;
        fs->n++;
    }
    /* Transform (the server's field label conversion) runs after parsing,
     * over the sorted terms */
    for (size_t k = 0; k < fs->n; k++) {
        int ok = 0;
        for (const char *const *a = allowed; *a; a++)
            if (strcmp(*a, fs->t[k].field) == 0)
                ok = 1;
        if (!ok) {
            const char *at = strstr(s, fs->t[k].field);
            size_t off = at && fs->t[k].field[0] ? (size_t)(at - s) : 0;
            if (allowed == filter_fields_default) {
                /* runtime.DefaultMetaV1FieldSelectorConversion (%q) */
                struct cx_buf q;
                cx_buf_init(&q, 0);
                if (filter_go_quote(&q, fs->t[k].field) != 0) {
                    cx_buf_free(&q);
                    rc = FILTER_ENOMEM;
                    goto out;
                }
                filter_err_set(err, off,
                               "%s is not a known field selector: only \"metadata.name\", "
                               "\"metadata.namespace\"",
                               q.data);
                cx_buf_free(&q);
            } else {
                /* Secrets' and custom resources' conversion functions */
                filter_err_set(err, off, "field label not supported: %s", fs->t[k].field);
            }
            rc = FILTER_EINVAL;
            goto out;
        }
    }
out:
    free(parts);
    if (rc != FILTER_OK) {
        filter_field_selector_free(fs);
        if (rc == FILTER_ENOMEM)
            filter_err_set(err, 0, "out of memory");
        return rc;
    }
    *out = fs;
    return FILTER_OK;
}

/* The string at the dotted path |field| in |obj|, "" if absent. */
static const char *field_value(const cJSON *obj, const char *field)
{
    const cJSON *cur = obj;
    const char *p = field;
    while (cur && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        const cJSON *next = NULL;
        if (cJSON_IsObject(cur))
            for (const cJSON *c = cur->child; c; c = c->next)
                if (c->string && strncmp(c->string, p, n) == 0 && c->string[n] == '\0') {
                    next = c;
                    break;
                }
        cur = next;
        p = dot ? dot + 1 : p + n;
    }
    return cJSON_IsString(cur) ? cur->valuestring : "";
}

int filter_field_selector_matches(const struct filter_field_selector *fs, const cJSON *obj)
{
    if (!fs)
        return 1;
    for (size_t i = 0; i < fs->n; i++) {
        int eq = strcmp(field_value(obj, fs->t[i].field), fs->t[i].value) == 0;
        if (eq == fs->t[i].neg)
            return 0;
    }
    return 1;
}

int filter_field_selector_matches_fn(const struct filter_field_selector *fs,
                                     const char *(*get)(void *user_data, const char *field),
                                     void *user_data)
{
    if (!fs)
        return 1;
    for (size_t i = 0; i < fs->n; i++) {
        const char *v = get(user_data, fs->t[i].field);
        int eq = strcmp(v ? v : "", fs->t[i].value) == 0;
        if (eq == fs->t[i].neg)
            return 0;
    }
    return 1;
}

int filter_field_selector_is_everything(const struct filter_field_selector *fs)
{
    return !fs || fs->n == 0;
}

int filter_field_escape(struct cx_buf *out, const char *value)
{
    int rc = 0;
    for (const char *p = value; *p && rc == 0; p++) {
        if (*p == '\\' || *p == ',' || *p == '=')
            rc |= cx_buf_append(out, "\\", 1);
        rc |= cx_buf_append(out, p, 1);
    }
    return rc ? -1 : 0;
}

static int term_cmp(const void *a, const void *b)
{
    const struct fterm *x = a, *y = b;
    int c = strcmp(x->field, y->field);
    if (c)
        return c;
    if (x->neg != y->neg)
        return x->neg - y->neg;
    return strcmp(x->value, y->value);
}

int filter_field_selector_string(const struct filter_field_selector *fs, struct cx_buf *out)
{
    int rc = cx_buf_append(out, "", 0);
    if (!fs || fs->n == 0)
        return rc;
    struct fterm *v = malloc(fs->n * sizeof(*v));
    if (!v)
        return -1;
    memcpy(v, fs->t, fs->n * sizeof(*v));
    qsort(v, fs->n, sizeof(*v), term_cmp);
    for (size_t i = 0; i < fs->n && rc == 0; i++) {
        if (i && term_cmp(&v[i], &v[i - 1]) == 0)
            continue;
        if (i)
            rc |= cx_buf_puts(out, ",");
        rc |= cx_buf_puts(out, v[i].field);
        rc |= cx_buf_puts(out, v[i].neg ? "!=" : "=");
        rc |= filter_field_escape(out, v[i].value);
    }
    free(v);
    return rc ? -1 : 0;
}
