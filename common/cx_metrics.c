#include "cx_metrics.h"

#include "cx_hash.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SERIES_BUCKETS 256

struct cx_series {
    struct cx_series *next; /* hash chain */
    struct cx_metric *family;
    uint64_t hash;
    char **values;
    _Atomic uint64_t bits;  /* double: counter/gauge value, histogram sum */
    _Atomic uint64_t count; /* histogram observations */
    _Atomic uint64_t *buckets;
    _Atomic int hidden;
};

struct cx_metric {
    char *name;
    char *help;
    enum cx_metric_type type;
    size_t nlabels;
    char *labels[CX_METRIC_MAX_LABELS];
    size_t nbounds;
    double bounds[CX_METRIC_MAX_BUCKETS];
    double (*fn)(void *);
    void *fn_arg;
    pthread_mutex_t mu; /* guards the series table */
    struct cx_series *table[SERIES_BUCKETS];
    size_t nseries;
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct cx_metric **families;
static size_t nfamilies, capfamilies;

const double cx_metric_latency_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                            0.1,    0.25,  0.5,    1,     2.5,  5,     10};
const size_t cx_metric_latency_nbuckets =
    sizeof(cx_metric_latency_buckets) / sizeof(cx_metric_latency_buckets[0]);

static double bits_to_d(uint64_t b)
{
    double d;
    memcpy(&d, &b, sizeof(d));
    return d;
}

static uint64_t d_to_bits(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof(b));
    return b;
}

static void atomic_add_double(_Atomic uint64_t *p, double v)
{
    uint64_t old = atomic_load(p);
    while (!atomic_compare_exchange_weak(p, &old, d_to_bits(bits_to_d(old) + v)))
        ;
}

/* Prometheus: [a-zA-Z_:][a-zA-Z0-9_:]* for metrics, no ':' for labels. */
static int valid_name(const char *s, int allow_colon)
{
    if (!s || !*s)
        return 0;
    for (const char *p = s; *p; p++) {
        int ok = isalpha((unsigned char)*p) || *p == '_' || (allow_colon && *p == ':') ||
                 (p != s && isdigit((unsigned char)*p));
        if (!ok)
            return 0;
    }
    return strncmp(s, "__", 2) != 0 || allow_colon;
}

static void family_free(struct cx_metric *m)
{
    if (!m)
        return;
    free(m->name);
    free(m->help);
    for (size_t i = 0; i < m->nlabels; i++)
        free(m->labels[i]);
    free(m);
}

static int parse_labels(struct cx_metric *m, const char *labels)
{
    if (!labels || !*labels)
        return 0;
    const char *p = labels;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (m->nlabels == CX_METRIC_MAX_LABELS || n == 0)
            return -1;
        char *l = strndup(p, n);
        if (!l)
            return -1;
        m->labels[m->nlabels++] = l;
        if (!valid_name(l, 0) || strcmp(l, "le") == 0)
            return -1;
        p = e ? e + 1 : p + n;
    }
    return 0;
}

static int same_shape(const struct cx_metric *a, const struct cx_metric *b)
{
    if (a->type != b->type || a->nlabels != b->nlabels || a->nbounds != b->nbounds ||
        (a->fn != NULL) != (b->fn != NULL))
        return 0;
    for (size_t i = 0; i < a->nlabels; i++)
        if (strcmp(a->labels[i], b->labels[i]) != 0)
            return 0;
    for (size_t i = 0; i < a->nbounds; i++)
        if (a->bounds[i] != b->bounds[i])
            return 0;
    return 1;
}

/* Registers |m| or returns the existing family of that name (freeing |m|). */
static struct cx_metric *register_family(struct cx_metric *m)
{
    struct cx_metric *out = NULL;
    pthread_mutex_lock(&reg_mu);
    for (size_t i = 0; i < nfamilies; i++) {
        if (strcmp(families[i]->name, m->name) == 0) {
            out = same_shape(families[i], m) ? families[i] : NULL;
            family_free(m);
            goto out;
        }
    }
    if (nfamilies == capfamilies) {
        size_t ncap = capfamilies ? capfamilies * 2 : 64;
        struct cx_metric **nf = realloc(families, ncap * sizeof(*nf));
        if (!nf) {
            family_free(m);
            goto out;
        }
        families = nf;
        capfamilies = ncap;
    }
    families[nfamilies++] = m;
    out = m;
out:
    pthread_mutex_unlock(&reg_mu);
    return out;
}

static struct cx_metric *family_new(const char *name, const char *help, enum cx_metric_type type,
                                    const char *labels)
{
    if (!valid_name(name, 1))
        return NULL;
    struct cx_metric *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->type = type;
    m->name = strdup(name);
    m->help = strdup(help ? help : "");
    pthread_mutex_init(&m->mu, NULL);
    if (!m->name || !m->help || parse_labels(m, labels) != 0) {
        family_free(m);
        return NULL;
    }
    return m;
}

struct cx_metric *cx_counter(const char *name, const char *help, const char *labels)
{
    struct cx_metric *m = family_new(name, help, CX_METRIC_COUNTER, labels);
    return m ? register_family(m) : NULL;
}

struct cx_metric *cx_gauge(const char *name, const char *help, const char *labels)
{
    struct cx_metric *m = family_new(name, help, CX_METRIC_GAUGE, labels);
    return m ? register_family(m) : NULL;
}

struct cx_metric *cx_histogram(const char *name, const char *help, const char *labels,
                               const double *bounds, size_t n)
{
    if (n > CX_METRIC_MAX_BUCKETS)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(bounds[i]) || (i > 0 && bounds[i] <= bounds[i - 1]))
            return NULL;
    struct cx_metric *m = family_new(name, help, CX_METRIC_HISTOGRAM, labels);
    if (!m)
        return NULL;
    m->nbounds = n;
    memcpy(m->bounds, bounds, n * sizeof(double));
    return register_family(m);
}

static int func_metric(enum cx_metric_type type, const char *name, const char *help,
                       double (*fn)(void *arg), void *arg)
{
    struct cx_metric *m = family_new(name, help, type, NULL);
    if (!m)
        return -1;
    m->fn = fn;
    m->fn_arg = arg;
    struct cx_metric *r = register_family(m);
    if (!r)
        return -1;
    /* re-registration updates the callback (e.g. a restarted component) */
    pthread_mutex_lock(&reg_mu);
    r->fn = fn;
    r->fn_arg = arg;
    pthread_mutex_unlock(&reg_mu);
    return 0;
}

int cx_gauge_func(const char *name, const char *help, double (*fn)(void *arg), void *arg)
{
    return func_metric(CX_METRIC_GAUGE, name, help, fn, arg);
}

int cx_counter_func(const char *name, const char *help, double (*fn)(void *arg), void *arg)
{
    return func_metric(CX_METRIC_COUNTER, name, help, fn, arg);
}

static uint64_t values_hash(const struct cx_metric *m, const char *const *values)
{
    uint64_t h = CX_FNV64_INIT;
    for (size_t i = 0; i < m->nlabels; i++) {
        const char *v = values[i] ? values[i] : "";
        h = cx_fnv64(h, v, strlen(v) + 1);
    }
    return h;
}

static int values_equal(const struct cx_series *s, const char *const *values)
{
    for (size_t i = 0; i < s->family->nlabels; i++)
        if (strcmp(s->values[i], values[i] ? values[i] : "") != 0)
            return 0;
    return 1;
}

static void series_free(struct cx_metric *m, struct cx_series *s)
{
    for (size_t i = 0; s->values && i < m->nlabels; i++)
        free(s->values[i]);
    free(s->values);
    free(s->buckets);
    free(s);
}

static struct cx_series *series_find(struct cx_metric *m, const char *const *values, int create)
{
    uint64_t h = values_hash(m, values);
    struct cx_series *s;
    pthread_mutex_lock(&m->mu);
    for (s = m->table[h % SERIES_BUCKETS]; s; s = s->next)
        if (s->hash == h && values_equal(s, values))
            goto out;
    if (!create)
        goto out;
    s = calloc(1, sizeof(*s));
    if (!s)
        goto out;
    s->family = m;
    s->hash = h;
    s->values = calloc(m->nlabels ? m->nlabels : 1, sizeof(char *));
    if (m->nbounds || m->type == CX_METRIC_HISTOGRAM)
        s->buckets = calloc(m->nbounds + 1, sizeof(*s->buckets));
    int ok = s->values && (m->type != CX_METRIC_HISTOGRAM || s->buckets);
    for (size_t i = 0; ok && i < m->nlabels; i++) {
        s->values[i] = strdup(values[i] ? values[i] : "");
        ok = s->values[i] != NULL;
    }
    if (!ok) {
        series_free(m, s);
        s = NULL;
        goto out;
    }
    s->next = m->table[h % SERIES_BUCKETS];
    m->table[h % SERIES_BUCKETS] = s;
    m->nseries++;
out:
    pthread_mutex_unlock(&m->mu);
    return s;
}

struct cx_series *cx_metric_withv(struct cx_metric *m, const char *const *values)
{
    if (!m)
        return NULL;
    struct cx_series *s = series_find(m, values, 1);
    if (s)
        atomic_store(&s->hidden, 0);
    return s;
}

/* Collects the family's label values from a va_list into |vals|. */
#define COLLECT_VALUES(m, ap, vals)                     \
    const char *vals[CX_METRIC_MAX_LABELS] = {0};       \
    for (size_t i_ = 0; (m) && i_ < (m)->nlabels; i_++) \
        vals[i_] = va_arg(ap, const char *);

struct cx_series *cx_metric_with(struct cx_metric *m, ...)
{
    va_list ap;
    va_start(ap, m);
    COLLECT_VALUES(m, ap, vals);
    va_end(ap);
    return cx_metric_withv(m, vals);
}

void cx_series_inc(struct cx_series *s)
{
    cx_series_add(s, 1);
}

void cx_series_add(struct cx_series *s, double v)
{
    if (!s)
        return;
    atomic_add_double(&s->bits, v);
    atomic_store(&s->hidden, 0);
}

void cx_series_set(struct cx_series *s, double v)
{
    if (!s)
        return;
    atomic_store(&s->bits, d_to_bits(v));
    atomic_store(&s->hidden, 0);
}

void cx_series_observe(struct cx_series *s, double v)
{
    if (!s || !s->buckets)
        return;
    const struct cx_metric *m = s->family;
    size_t i = 0;
    while (i < m->nbounds && v > m->bounds[i])
        i++;
    atomic_fetch_add(&s->buckets[i], 1);
    atomic_fetch_add(&s->count, 1);
    atomic_add_double(&s->bits, v);
}

double cx_series_value(const struct cx_series *s)
{
    if (!s)
        return 0;
    if (s->family->type == CX_METRIC_HISTOGRAM)
        return (double)atomic_load(&s->count);
    return bits_to_d(atomic_load(&s->bits));
}

double cx_series_sum(const struct cx_series *s)
{
    return s ? bits_to_d(atomic_load(&s->bits)) : 0;
}

void cx_series_hide(struct cx_series *s)
{
    if (s)
        atomic_store(&s->hidden, 1);
}

void cx_series_remove(struct cx_series *s)
{
    if (!s)
        return;
    struct cx_metric *m = s->family;
    pthread_mutex_lock(&m->mu);
    struct cx_series **pp = &m->table[s->hash % SERIES_BUCKETS];
    while (*pp && *pp != s)
        pp = &(*pp)->next;
    if (*pp) {
        *pp = s->next;
        m->nseries--;
    }
    pthread_mutex_unlock(&m->mu);
    series_free(m, s);
}

void cx_metric_inc(struct cx_metric *m, ...)
{
    va_list ap;
    va_start(ap, m);
    COLLECT_VALUES(m, ap, vals);
    va_end(ap);
    cx_series_inc(cx_metric_withv(m, vals));
}

void cx_metric_set(struct cx_metric *m, double v, ...)
{
    va_list ap;
    va_start(ap, v);
    COLLECT_VALUES(m, ap, vals);
    va_end(ap);
    cx_series_set(cx_metric_withv(m, vals), v);
}

void cx_metric_observe(struct cx_metric *m, double v, ...)
{
    va_list ap;
    va_start(ap, v);
    COLLECT_VALUES(m, ap, vals);
    va_end(ap);
    cx_series_observe(cx_metric_withv(m, vals), v);
}

double cx_metric_get(struct cx_metric *m, ...)
{
    if (!m)
        return 0;
    va_list ap;
    va_start(ap, m);
    COLLECT_VALUES(m, ap, vals);
    va_end(ap);
    return cx_series_value(series_find(m, vals, 0));
}

double cx_metric_total(struct cx_metric *m)
{
    double sum = 0;
    if (!m)
        return 0;
    pthread_mutex_lock(&m->mu);
    for (size_t b = 0; b < SERIES_BUCKETS; b++)
        for (struct cx_series *s = m->table[b]; s; s = s->next)
            sum += cx_series_value(s);
    pthread_mutex_unlock(&m->mu);
    return sum;
}

/* ---- exposition ------------------------------------------------------- */

static int put_escaped(struct cx_buf *out, const char *s, int quote)
{
    int rc = 0;
    for (const char *p = s; *p && rc == 0; p++) {
        if (*p == '\\')
            rc = cx_buf_puts(out, "\\\\");
        else if (*p == '\n')
            rc = cx_buf_puts(out, "\\n");
        else if (quote && *p == '"')
            rc = cx_buf_puts(out, "\\\"");
        else
            rc = cx_buf_append(out, p, 1);
    }
    return rc;
}

static int put_value(struct cx_buf *out, double v)
{
    if (isnan(v))
        return cx_buf_puts(out, "NaN");
    if (isinf(v))
        return cx_buf_puts(out, v > 0 ? "+Inf" : "-Inf");
    if (v == floor(v) && fabs(v) < 1e15)
        return cx_buf_printf(out, "%.0f", v);
    /* shortest form that reads back as the same double */
    char b[40];
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(b, sizeof(b), "%.*g", prec, v);
        if (strtod(b, NULL) == v)
            break;
    }
    return cx_buf_puts(out, b);
}

/* name{l1="v1",...[,le="x"]} */
static int put_series_name(struct cx_buf *out, const struct cx_metric *m, const struct cx_series *s,
                           const char *suffix, const char *le)
{
    int rc = cx_buf_puts(out, m->name);
    rc |= cx_buf_puts(out, suffix);
    if (m->nlabels == 0 && !le)
        return rc;
    rc |= cx_buf_puts(out, "{");
    for (size_t i = 0; i < m->nlabels; i++) {
        rc |= cx_buf_printf(out, "%s%s=\"", i ? "," : "", m->labels[i]);
        rc |= put_escaped(out, s->values[i], 1);
        rc |= cx_buf_puts(out, "\"");
    }
    if (le)
        rc |= cx_buf_printf(out, "%sle=\"%s\"", m->nlabels ? "," : "", le);
    rc |= cx_buf_puts(out, "}");
    return rc;
}

static int series_cmp(const void *a, const void *b)
{
    const struct cx_series *x = *(struct cx_series *const *)a;
    const struct cx_series *y = *(struct cx_series *const *)b;
    for (size_t i = 0; i < x->family->nlabels; i++) {
        int c = strcmp(x->values[i], y->values[i]);
        if (c)
            return c;
    }
    return 0;
}

static int family_cmp(const void *a, const void *b)
{
    return strcmp((*(struct cx_metric *const *)a)->name, (*(struct cx_metric *const *)b)->name);
}

static int render_family(struct cx_buf *out, struct cx_metric *m)
{
    static const char *const type_names[] = {"counter", "gauge", "histogram"};
    int rc = 0;
    pthread_mutex_lock(&m->mu);
    struct cx_series **list = NULL;
    size_t n = 0;
    if (m->nseries) {
        list = malloc(m->nseries * sizeof(*list));
        if (!list) {
            rc = -1;
            goto out;
        }
        for (size_t b = 0; b < SERIES_BUCKETS; b++)
            for (struct cx_series *s = m->table[b]; s; s = s->next)
                if (!atomic_load(&s->hidden))
                    list[n++] = s;
        qsort(list, n, sizeof(*list), series_cmp);
    }
    /* A family without series still prints its HELP and TYPE: every
     * documented metric is there from the start, for grep, dashboards
     * and alert rules, before its first sample. */
    rc |= cx_buf_printf(out, "# HELP %s ", m->name);
    rc |= put_escaped(out, m->help, 0);
    rc |= cx_buf_printf(out, "\n# TYPE %s %s\n", m->name, type_names[m->type]);
    if (m->fn) {
        rc |= cx_buf_printf(out, "%s ", m->name);
        rc |= put_value(out, m->fn(m->fn_arg));
        rc |= cx_buf_puts(out, "\n");
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        struct cx_series *s = list[i];
        if (m->type != CX_METRIC_HISTOGRAM) {
            rc |= put_series_name(out, m, s, "", NULL);
            rc |= cx_buf_puts(out, " ");
            rc |= put_value(out, cx_series_value(s));
            rc |= cx_buf_puts(out, "\n");
            continue;
        }
        uint64_t cum = 0;
        for (size_t b = 0; b <= m->nbounds; b++) {
            char le[64];
            cum += atomic_load(&s->buckets[b]);
            if (b < m->nbounds) {
                struct cx_buf lb;
                cx_buf_init(&lb, sizeof(le) - 1);
                rc |= put_value(&lb, m->bounds[b]);
                snprintf(le, sizeof(le), "%s", lb.data ? lb.data : "0");
                cx_buf_free(&lb);
            } else {
                snprintf(le, sizeof(le), "+Inf");
            }
            rc |= put_series_name(out, m, s, "_bucket", le);
            rc |= cx_buf_printf(out, " %llu\n", (unsigned long long)cum);
        }
        rc |= put_series_name(out, m, s, "_sum", NULL);
        rc |= cx_buf_puts(out, " ");
        rc |= put_value(out, cx_series_sum(s));
        rc |= cx_buf_puts(out, "\n");
        rc |= put_series_name(out, m, s, "_count", NULL);
        rc |= cx_buf_printf(out, " %llu\n", (unsigned long long)cum);
    }
out:
    pthread_mutex_unlock(&m->mu);
    free(list);
    return rc ? -1 : 0;
}

int cx_metrics_render(struct cx_buf *out)
{
    int rc = 0;
    pthread_mutex_lock(&reg_mu);
    struct cx_metric **sorted = NULL;
    if (nfamilies) {
        sorted = malloc(nfamilies * sizeof(*sorted));
        if (!sorted) {
            rc = -1;
            goto out;
        }
        memcpy(sorted, families, nfamilies * sizeof(*sorted));
        qsort(sorted, nfamilies, sizeof(*sorted), family_cmp);
    }
    for (size_t i = 0; i < nfamilies && rc == 0; i++)
        rc = render_family(out, sorted[i]);
out:
    pthread_mutex_unlock(&reg_mu);
    free(sorted);
    return rc;
}
