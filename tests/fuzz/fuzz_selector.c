/* Fuzz target: arbitrary bytes as a label selector, a field selector, a
 * JSON metav1.LabelSelector and a namespace list. Nothing may crash or leak; an accepted
 * selector's canonical form must parse again to the same canonical form and
 * select the same label sets; a refused one must say why, at an offset
 * inside the input. */
#include "filter.h"
#include "filter_selector.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *canon_label(const struct filter_selector *sel)
{
    struct cx_buf b;
    cx_buf_init(&b, 1 << 20);
    char *r = filter_selector_string(sel, &b) == 0 ? cx_buf_steal(&b, NULL) : NULL;
    cx_buf_free(&b);
    return r;
}

/* Label sets built from the input's own words, so matching sees keys that
 * the selector names. */
static cJSON *labels_from(const char *s, int variant)
{
    cJSON *l = cJSON_CreateObject();
    char key[64];
    size_t k = 0;
    int i = 0;
    for (const char *p = s;; p++) {
        int word = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '.' || *p == '/';
        if (word && k < sizeof(key) - 1) {
            key[k++] = *p;
            continue;
        }
        if (k) {
            key[k] = '\0';
            if (((i++ + variant) % 3) != 0 && !cJSON_GetObjectItemCaseSensitive(l, key))
                cJSON_AddStringToObject(l, key, variant & 1 ? key : "");
            k = 0;
        }
        if (!*p)
            break;
    }
    return l;
}

static void check_label(const char *s, size_t len)
{
    struct filter_selector *sel = NULL;
    struct filter_error err;
    err.msg[0] = '\0';
    int rc = filter_selector_parse(s, &sel, &err);
    if (rc != FILTER_OK) {
        if (sel || (rc == FILTER_EINVAL && (err.msg[0] == '\0' || err.offset > len)))
            abort();
        return;
    }
    char *c1 = canon_label(sel);
    if (!c1)
        abort();
    struct filter_selector *sel2 = NULL;
    if (filter_selector_parse(c1, &sel2, &err) != FILTER_OK)
        abort(); /* canonical form must parse */
    char *c2 = canon_label(sel2);
    if (!c2 || strcmp(c1, c2) != 0)
        abort(); /* and be a fixed point */
    for (int v = 0; v < 4; v++) {
        cJSON *l = labels_from(s, v);
        if (filter_selector_matches(sel, l) != filter_selector_matches(sel2, l))
            abort();
        cJSON_Delete(l);
    }
    free(c1);
    free(c2);
    filter_selector_free(sel);
    filter_selector_free(sel2);
}

static void check_field(const char *s, size_t len)
{
    struct filter_field_selector *fs = NULL, *fs2 = NULL;
    struct filter_error err;
    static const char *const any[] = {"metadata.name", "metadata.namespace", "type", "a", "", NULL};
    int rc = filter_field_selector_parse(s, any, &fs, &err);
    if (rc != FILTER_OK) {
        if (fs || (rc == FILTER_EINVAL && err.offset > len))
            abort();
        return;
    }
    struct cx_buf b, b2;
    cx_buf_init(&b, 1 << 20);
    cx_buf_init(&b2, 1 << 20);
    if (filter_field_selector_string(fs, &b) != 0)
        abort();
    if (filter_field_selector_parse(b.data, any, &fs2, &err) != FILTER_OK)
        abort();
    if (filter_field_selector_string(fs2, &b2) != 0 || strcmp(b.data, b2.data) != 0)
        abort();
    cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\"},\"type\":\"c\"}");
    if (filter_field_selector_matches(fs, o) != filter_field_selector_matches(fs2, o))
        abort();
    cJSON_Delete(o);
    cx_buf_free(&b);
    cx_buf_free(&b2);
    filter_field_selector_free(fs);
    filter_field_selector_free(fs2);
}

static void check_json(const char *s, size_t len)
{
    cJSON *j = cJSON_ParseWithLength(s, len);
    if (!j)
        return;
    struct filter_selector *sel = NULL;
    struct filter_error err;
    if (filter_selector_from_json(j, &sel, &err) == FILTER_OK) {
        char *c = canon_label(sel);
        if (!c)
            abort();
        if (!filter_selector_is_nothing(sel)) {
            struct filter_selector *sel2 = NULL;
            if (filter_selector_parse(c, &sel2, &err) != FILTER_OK)
                abort();
            filter_selector_free(sel2);
        }
        free(c);
        filter_selector_free(sel);
    }
    cJSON_Delete(j);
}

/* The namespace list of --watch-namespaces: every accepted name is a
 * DNS-1123 label, and the push-down lists exactly the accepted names. */
static void check_namespaces(const char *s)
{
    static struct filter *f;
    if (!f)
        f = filter_new(); /* kept: the metric registry is process-wide */
    if (!f)
        return;
    struct filter_error err;
    if (filter_set_namespaces(f, "Kind", s, &err) != FILTER_OK)
        return;
    struct filter_pushdown pd;
    if (filter_pushdown(f, "Kind", &pd) != FILTER_OK)
        return;
    for (size_t i = 0; i < pd.nnamespaces; i++) {
        const char *n = pd.namespaces[i];
        size_t len = strlen(n);
        if (len == 0 || len > 63 || n[0] == '-' || n[len - 1] == '-')
            abort();
        for (size_t j = 0; j < len; j++)
            if (!((n[j] >= 'a' && n[j] <= 'z') || (n[j] >= '0' && n[j] <= '9') || n[j] == '-'))
                abort();
        if (!strstr(s, n))
            abort();
    }
    if ((pd.nnamespaces == 1) != (pd.namespace != NULL))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    size_t len = strlen(s); /* an embedded NUL ends the selector */
    check_label(s, len);
    check_field(s, len);
    check_json(s, len);
    check_namespaces(s);
    free(s);
    return 0;
}
