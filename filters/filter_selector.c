/*
 * Label selectors: a port of k8s.io/apimachinery/pkg/labels/selector.go
 * (lexer, recursive-descent parser, NewRequirement's checks, Matches),
 * keeping its token rules and error messages, plus the canonical string.
 */
#include "cx_json.h"
#include "filter_internal.h"
#include "filter_selector.h"
#include "filter_selector_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- lexer ----------------------------------------------------------------
 * Token order and literals follow selector.go; TOK_ERROR is never produced
 * because every single special symbol is itself a token. */
enum tok {
    TOK_ERROR = 0,
    TOK_EOS,
    TOK_CLOSEPAR,
    TOK_COMMA,
    TOK_NOT,
    TOK_DEQ,
    TOK_EQ,
    TOK_GT,
    TOK_ID,
    TOK_IN,
    TOK_LT,
    TOK_NE,
    TOK_NOTIN,
    TOK_OPENPAR,
};

struct item {
    enum tok tok;
    const char *lit;
    size_t len;
    size_t off;
};

static int is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int is_special(unsigned char c)
{
    switch (c) {
    case '=':
    case '!':
    case '(':
    case ')':
    case ',':
    case '>':
    case '<':
        return 1;
    default:
        return 0;
    }
}

static enum tok symbol_tok(const char *p, size_t n)
{
    if (n == 1) {
        switch (p[0]) {
        case ')':
            return TOK_CLOSEPAR;
        case ',':
            return TOK_COMMA;
        case '!':
            return TOK_NOT;
        case '=':
            return TOK_EQ;
        case '>':
            return TOK_GT;
        case '<':
            return TOK_LT;
        case '(':
            return TOK_OPENPAR;
        default:
            return TOK_ERROR;
        }
    }
    if (n == 2 && p[0] == '=' && p[1] == '=')
        return TOK_DEQ;
    if (n == 2 && p[0] == '!' && p[1] == '=')
        return TOK_NE;
    return TOK_ERROR;
}

struct lexer {
    const char *s;
    size_t len;
    size_t pos;
};

static struct item lex(struct lexer *l)
{
    struct item it = {TOK_EOS, "", 0, l->pos};
    while (l->pos < l->len && is_ws((unsigned char)l->s[l->pos]))
        l->pos++;
    size_t start = l->pos;
    it.off = start;
    if (start >= l->len)
        return it;
    if (is_special((unsigned char)l->s[start])) {
        /* longest run of special symbols that is a token ("!=" beats "!") */
        enum tok last = TOK_ERROR;
        size_t lastlen = 0;
        for (size_t n = 1; start + n <= l->len && is_special((unsigned char)l->s[start + n - 1]);
             n++) {
            enum tok t = symbol_tok(l->s + start, n);
            if (t != TOK_ERROR) {
                last = t;
                lastlen = n;
            } else if (last != TOK_ERROR) {
                break;
            }
        }
        l->pos = start + lastlen;
        it.tok = last;
        it.lit = l->s + start;
        it.len = lastlen;
        return it;
    }
    while (l->pos < l->len && !is_special((unsigned char)l->s[l->pos]) &&
           !is_ws((unsigned char)l->s[l->pos]))
        l->pos++;
    it.lit = l->s + start;
    it.len = l->pos - start;
    if (it.len == 2 && memcmp(it.lit, "in", 2) == 0)
        it.tok = TOK_IN;
    else if (it.len == 5 && memcmp(it.lit, "notin", 5) == 0)
        it.tok = TOK_NOTIN;
    else
        it.tok = TOK_ID;
    return it;
}

/* ---- parser ------------------------------------------------------------- */

enum ctx {
    CTX_KEY_OP = 0,
    CTX_VALUES = 1, /* "in"/"notin" are plain identifiers here */
};

struct value {
    char *s;
    size_t off;
};

struct parser {
    struct lexer lx;
    struct item la;
    int have_la;
    struct filter_error *err;
    const char *prefix; /* "unable to parse requirement: " inside one */
    int oom;
    /* the requirement being built */
    struct value *vals;
    size_t nvals, capvals;
};

static struct item lookahead(struct parser *p, enum ctx c)
{
    if (!p->have_la) {
        p->la = lex(&p->lx);
        p->have_la = 1;
    }
    struct item it = p->la;
    if (c == CTX_VALUES && (it.tok == TOK_IN || it.tok == TOK_NOTIN))
        it.tok = TOK_ID;
    return it;
}

static struct item consume(struct parser *p, enum ctx c)
{
    struct item it = lookahead(p, c);
    p->have_la = 0;
    return it;
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

static int add_value(struct parser *p, const char *s, size_t n, size_t off)
{
    if (p->nvals == p->capvals) {
        size_t nc = p->capvals ? p->capvals * 2 : 4;
        struct value *nv = realloc(p->vals, nc * sizeof(*nv));
        if (!nv)
            return -1;
        p->vals = nv;
        p->capvals = nc;
    }
    char *d = dup_n(s, n);
    if (!d)
        return -1;
    p->vals[p->nvals].s = d;
    p->vals[p->nvals].off = off;
    p->nvals++;
    return 0;
}

static void clear_values(struct parser *p)
{
    for (size_t i = 0; i < p->nvals; i++)
        free(p->vals[i].s);
    p->nvals = 0;
}

/* Records a syntax error; |lit| is the offending token's literal. */
static int syntax_err(struct parser *p, const struct item *at, const char *fmt_before,
                      const char *fmt_after)
{
    filter_err_set(p->err, at->off, "%s%s%.*s%s", p->prefix ? p->prefix : "", fmt_before,
                   (int)at->len, at->lit, fmt_after);
    return FILTER_EINVAL;
}

static int value_cmp(const void *a, const void *b)
{
    return strcmp(((const struct value *)a)->s, ((const struct value *)b)->s);
}

/* Sorts and deduplicates p->vals (Go's sets.String.List()). */
static void sort_unique(struct value *v, size_t *n)
{
    if (*n < 2)
        return;
    qsort(v, *n, sizeof(*v), value_cmp);
    size_t w = 1;
    for (size_t r = 1; r < *n; r++) {
        if (strcmp(v[r].s, v[w - 1].s) == 0) {
            if (v[r].off < v[w - 1].off)
                v[w - 1].off = v[r].off;
            free(v[r].s);
            continue;
        }
        v[w++] = v[r];
    }
    *n = w;
}

/* Renders a []string the way encoding/json would ("null" for nil). */
static char *json_list(const struct value *v, size_t n, int is_nil)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    int rc = 0;
    if (is_nil) {
        rc = cx_buf_puts(&b, "null");
    } else {
        rc = cx_buf_puts(&b, "[");
        for (size_t i = 0; i < n && rc == 0; i++) {
            if (i)
                rc |= cx_buf_puts(&b, ",");
            rc |= cx_json_escape(&b, v[i].s);
        }
        rc |= cx_buf_puts(&b, "]");
    }
    if (rc) {
        cx_buf_free(&b);
        return NULL;
    }
    return cx_buf_steal(&b, NULL);
}

/* Adds "values: Invalid value: <the list as JSON>: |msg|" to |a|. */
static void values_error(struct agg *a, size_t key_off, const struct parser *p, int is_nil,
                         const char *msg)
{
    char *j = json_list(p->vals, p->nvals, is_nil);
    if (!j)
        a->oom = 1;
    else
        filter_agg_add(a, key_off, "values", j, msg);
    free(j);
}

/* NewRequirement: validates |key|, |op| and the values in p->vals (in the
 * order given; the parser has sorted them already) and, if all is well,
 * appends the requirement to |sel|. |key_path| is "key" for JSON selectors
 * and NULL for parsed ones (their key was checked while parsing).
 * |values_nil| marks a JSON requirement without values (rendered "null"). */
static int new_requirement(struct parser *p, struct filter_selector *sel, const char *key,
                           size_t key_off, enum filter_op op, int values_nil,
                           const char *err_prefix)
{
    struct agg a;
    filter_agg_init(&a);
    int rc = FILTER_OK;
    char path[96];
    long long num = 0;

    if (strlen(key) > FILTER_SELECTOR_MAX_BYTES) {
        filter_err_set(p->err, key_off, "%skey: longer than %d bytes", err_prefix,
                       FILTER_SELECTOR_MAX_BYTES);
        return FILTER_EINVAL;
    }
    if (values_nil >= 0) /* JSON: Kubernetes validates the key here */
        filter_agg_check(&a, key_off, "key", filter_key_errors, key);

    switch (op) {
    case FILTER_OP_IN:
    case FILTER_OP_NOT_IN:
        if (p->nvals == 0)
            values_error(&a, key_off, p, values_nil > 0,
                         "for 'in', 'notin' operators, values set can't be empty");
        break;
    case FILTER_OP_EQUALS:
    case FILTER_OP_DOUBLE_EQUALS:
    case FILTER_OP_NOT_EQUALS:
        if (p->nvals != 1)
            values_error(&a, key_off, p, values_nil > 0 && p->nvals == 0,
                         "exact-match compatibility requires one single value");
        break;
    case FILTER_OP_EXISTS:
    case FILTER_OP_NOT_EXISTS:
        if (p->nvals != 0)
            values_error(&a, key_off, p, 0,
                         "values set must be empty for exists and does not exist");
        break;
    case FILTER_OP_GT:
    case FILTER_OP_LT:
        if (p->nvals != 1)
            values_error(&a, key_off, p, values_nil > 0 && p->nvals == 0,
                         "for 'Gt', 'Lt' operators, exactly one value is required");
        for (size_t i = 0; i < p->nvals; i++) {
            if (filter_parse_int64(p->vals[i].s, &num) != 0) {
                char *q = filter_quoted(p->vals[i].s);
                snprintf(path, sizeof(path), "values[%zu]", i);
                if (!q)
                    a.oom = 1;
                else
                    filter_agg_add(&a, p->vals[i].off, path, q,
                                   "for 'Gt', 'Lt' operators, the value must be an integer");
                free(q);
            }
        }
        break;
    }

    for (size_t i = 0; i < p->nvals; i++) {
        /* path.Index(i).Key(key): "values[i][key]" */
        struct cx_buf pb;
        cx_buf_init(&pb, 0);
        if (cx_buf_printf(&pb, "values[%zu][%s]", i, key) != 0) {
            a.oom = 1;
            cx_buf_free(&pb);
            break;
        }
        filter_agg_check(&a, p->vals[i].off, pb.data, filter_value_errors, p->vals[i].s);
        cx_buf_free(&pb);
    }

    if (a.oom) {
        rc = FILTER_ENOMEM;
        goto out;
    }
    if (a.n > 0) {
        filter_agg_render(&a, p->err, err_prefix);
        rc = FILTER_EINVAL;
        goto out;
    }

    struct filter_req *nr = realloc(sel->reqs, (sel->n + 1) * sizeof(*nr));
    if (!nr) {
        rc = FILTER_ENOMEM;
        goto out;
    }
    sel->reqs = nr;
    struct filter_req *r = &sel->reqs[sel->n];
    memset(r, 0, sizeof(*r));
    r->op = op;
    r->num = num;
    r->key = strdup(key);
    r->values = p->nvals ? calloc(p->nvals, sizeof(char *)) : NULL;
    if (!r->key || (p->nvals && !r->values)) {
        free(r->key);
        free(r->values);
        rc = FILTER_ENOMEM;
        goto out;
    }
    /* take the (sorted, unique) strings over from the parser */
    struct value *v = p->vals;
    size_t nv = p->nvals;
    sort_unique(v, &nv);
    for (size_t i = 0; i < nv; i++)
        r->values[i] = v[i].s;
    r->nvalues = nv;
    p->nvals = 0;
    sel->n++;
out:
    filter_agg_free(&a);
    return rc;
}

static int parse_values(struct parser *p)
{
    struct item t = consume(p, CTX_VALUES);
    if (t.tok != TOK_OPENPAR)
        return syntax_err(p, &t, "found '", "' expected: '('");
    t = lookahead(p, CTX_VALUES);
    switch (t.tok) {
    case TOK_ID:
    case TOK_COMMA:
        /* parseIdentifiersList: a possibly empty, comma separated list of
         * possibly empty identifiers */
        for (;;) {
            struct item c = consume(p, CTX_VALUES);
            if (c.tok == TOK_ID) {
                if (add_value(p, c.lit, c.len, c.off) != 0)
                    return FILTER_ENOMEM;
                struct item n2 = lookahead(p, CTX_VALUES);
                if (n2.tok == TOK_COMMA)
                    continue;
                if (n2.tok == TOK_CLOSEPAR)
                    break;
                return syntax_err(p, &n2, "found '", "', expected: ',' or ')'");
            } else if (c.tok == TOK_COMMA) {
                if (p->nvals == 0 && add_value(p, "", 0, c.off) != 0)
                    return FILTER_ENOMEM; /* "(," */
                struct item n2 = lookahead(p, CTX_VALUES);
                if (n2.tok == TOK_CLOSEPAR) {
                    if (add_value(p, "", 0, n2.off) != 0) /* ",)" */
                        return FILTER_ENOMEM;
                    break;
                }
                if (n2.tok == TOK_COMMA) {
                    consume(p, CTX_VALUES);
                    if (add_value(p, "", 0, n2.off) != 0) /* ",," */
                        return FILTER_ENOMEM;
                }
            } else {
                return syntax_err(p, &c, "found '", "', expected: ',', or identifier");
            }
        }
        /* the lookahead is ')' (the only way out of the loop) */
        consume(p, CTX_VALUES);
        return FILTER_OK;
    case TOK_CLOSEPAR: /* "()" */
        consume(p, CTX_VALUES);
        return add_value(p, "", 0, t.off) == 0 ? FILTER_OK : FILTER_ENOMEM;
    default:
        return syntax_err(p, &t, "found '", "', expected: ',', ')' or identifier");
    }
}

static int parse_exact_value(struct parser *p)
{
    struct item t = lookahead(p, CTX_VALUES);
    if (t.tok == TOK_EOS || t.tok == TOK_COMMA)
        return add_value(p, "", 0, t.off) == 0 ? FILTER_OK : FILTER_ENOMEM;
    t = consume(p, CTX_VALUES);
    if (t.tok == TOK_ID)
        return add_value(p, t.lit, t.len, t.off) == 0 ? FILTER_OK : FILTER_ENOMEM;
    return syntax_err(p, &t, "found '", "', expected: identifier");
}

#define REQ_PREFIX "unable to parse requirement: "

static int parse_requirement(struct parser *p, struct filter_selector *sel)
{
    int rc;
    int has_op = 0;
    enum filter_op op = FILTER_OP_EXISTS;
    char *key = NULL;

    /* parseKeyAndInferOperator */
    struct item t = consume(p, CTX_VALUES);
    if (t.tok == TOK_NOT) {
        op = FILTER_OP_NOT_EXISTS;
        has_op = 1;
        t = consume(p, CTX_VALUES);
    }
    if (t.tok != TOK_ID) {
        rc = syntax_err(p, &t, "found '", "', expected: identifier");
        goto out;
    }
    key = dup_n(t.lit, t.len);
    if (!key) {
        rc = FILTER_ENOMEM;
        goto out;
    }
    size_t key_off = t.off;
    {
        /* validateLabelKey(literal, nil path): "<nil>: Invalid value: ..." */
        struct agg a;
        filter_agg_init(&a);
        filter_agg_check(&a, key_off, "<nil>", filter_key_errors, key);
        if (a.oom) {
            filter_agg_free(&a);
            rc = FILTER_ENOMEM;
            goto out;
        }
        if (a.n) {
            filter_agg_render(&a, p->err, REQ_PREFIX);
            filter_agg_free(&a);
            rc = FILTER_EINVAL;
            goto out;
        }
        filter_agg_free(&a);
    }
    struct item n2 = lookahead(p, CTX_VALUES);
    if ((n2.tok == TOK_EOS || n2.tok == TOK_COMMA) && op != FILTER_OP_NOT_EXISTS) {
        op = FILTER_OP_EXISTS;
        has_op = 1;
    }
    if (!has_op) {
        /* parseOperator */
        struct item o = consume(p, CTX_KEY_OP);
        switch (o.tok) {
        case TOK_IN:
            op = FILTER_OP_IN;
            break;
        case TOK_EQ:
            op = FILTER_OP_EQUALS;
            break;
        case TOK_DEQ:
            op = FILTER_OP_DOUBLE_EQUALS;
            break;
        case TOK_GT:
            op = FILTER_OP_GT;
            break;
        case TOK_LT:
            op = FILTER_OP_LT;
            break;
        case TOK_NOTIN:
            op = FILTER_OP_NOT_IN;
            break;
        case TOK_NE:
            op = FILTER_OP_NOT_EQUALS;
            break;
        default:
            rc = syntax_err(p, &o, "found '", "', expected: in, notin, =, ==, !=, gt, lt");
            goto out;
        }
        if (op == FILTER_OP_IN || op == FILTER_OP_NOT_IN)
            rc = parse_values(p);
        else
            rc = parse_exact_value(p);
        if (rc != FILTER_OK)
            goto out;
    }
    /* the parser hands NewRequirement a sorted, unique set */
    sort_unique(p->vals, &p->nvals);
    rc = new_requirement(p, sel, key, key_off, op, -1, REQ_PREFIX);
out:
    clear_values(p);
    free(key);
    return rc;
}

static int req_cmp_key(const void *a, const void *b)
{
    return strcmp(((const struct filter_req *)a)->key, ((const struct filter_req *)b)->key);
}

int filter_selector_parse(const char *s, struct filter_selector **out, struct filter_error *err)
{
    int rc = FILTER_OK;
    struct filter_selector *sel = NULL;
    struct parser p;
    memset(&p, 0, sizeof(p));
    *out = NULL;
    if (!s)
        s = "";
    size_t len = strlen(s);
    if (len > FILTER_SELECTOR_MAX_BYTES) {
        filter_err_set(err, FILTER_SELECTOR_MAX_BYTES, "selector is longer than %d bytes",
                       FILTER_SELECTOR_MAX_BYTES);
        return FILTER_EINVAL;
    }
    sel = filter_selector_everything();
    if (!sel)
        return FILTER_ENOMEM;
    p.lx.s = s;
    p.lx.len = len;
    p.err = err;

    for (;;) {
        struct item t = lookahead(&p, CTX_VALUES);
        if (t.tok == TOK_EOS)
            break;
        if (t.tok != TOK_ID && t.tok != TOK_NOT) {
            rc = syntax_err(&p, &t, "found '", "', expected: !, identifier, or 'end of string'");
            goto out;
        }
        p.prefix = REQ_PREFIX;
        rc = parse_requirement(&p, sel);
        p.prefix = NULL;
        if (rc != FILTER_OK)
            goto out;
        struct item c = consume(&p, CTX_VALUES);
        if (c.tok == TOK_EOS)
            break;
        if (c.tok != TOK_COMMA) {
            rc = syntax_err(&p, &c, "found '", "', expected: ',' or 'end of string'");
            goto out;
        }
        struct item n2 = lookahead(&p, CTX_VALUES);
        if (n2.tok != TOK_ID && n2.tok != TOK_NOT) {
            rc = syntax_err(&p, &n2, "found '", "', expected: identifier after ','");
            goto out;
        }
    }
    if (sel->n > 1)
        qsort(sel->reqs, sel->n, sizeof(*sel->reqs), req_cmp_key);
out:
    clear_values(&p);
    free(p.vals);
    if (rc != FILTER_OK) {
        filter_selector_free(sel);
        if (rc == FILTER_ENOMEM)
            filter_err_set(err, 0, "out of memory");
        return rc;
    }
    *out = sel;
    return FILTER_OK;
}

/* ---- metav1.LabelSelector ------------------------------------------------ */

__attribute__((format(printf, 2, 3))) static int json_err(struct filter_error *err, const char *fmt,
                                                          ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
        err->offset = 0;
    }
    return FILTER_EINVAL;
}

int filter_selector_from_json(const cJSON *ls, struct filter_selector **out,
                              struct filter_error *err)
{
    int rc = FILTER_OK;
    struct parser p;
    memset(&p, 0, sizeof(p));
    p.err = err;
    *out = NULL;
    struct filter_selector *sel = filter_selector_everything();
    if (!sel)
        return FILTER_ENOMEM;
    if (!ls || cJSON_IsNull(ls)) {
        sel->nothing = 1;
        *out = sel;
        return FILTER_OK;
    }
    if (!cJSON_IsObject(ls)) {
        rc = json_err(err, "%s", "label selector: must be an object");
        goto out;
    }
    const cJSON *ml = cJSON_GetObjectItemCaseSensitive(ls, "matchLabels");
    const cJSON *me = cJSON_GetObjectItemCaseSensitive(ls, "matchExpressions");
    if (ml && !cJSON_IsNull(ml) && !cJSON_IsObject(ml)) {
        rc = json_err(err, "%s", "matchLabels: must be an object of strings");
        goto out;
    }
    if (me && !cJSON_IsNull(me) && !cJSON_IsArray(me)) {
        rc = json_err(err, "%s", "matchExpressions: must be an array");
        goto out;
    }

    /* matchLabels in sorted key order, so errors are deterministic (Go
     * ranges over a map in random order) */
    size_t nml = 0;
    if (cJSON_IsObject(ml))
        for (const cJSON *c = ml->child; c; c = c->next)
            nml++;
    if (nml) {
        const cJSON **kv = malloc(nml * sizeof(*kv));
        if (!kv) {
            rc = FILTER_ENOMEM;
            goto out;
        }
        size_t i = 0;
        for (const cJSON *c = ml->child; c; c = c->next)
            kv[i++] = c;
        /* insertion sort by key: matchLabels maps are small */
        for (size_t a = 1; a < nml; a++) {
            const cJSON *x = kv[a];
            size_t b = a;
            while (b > 0 && strcmp(kv[b - 1]->string, x->string) > 0) {
                kv[b] = kv[b - 1];
                b--;
            }
            kv[b] = x;
        }
        for (i = 0; i < nml && rc == FILTER_OK; i++) {
            const cJSON *c = kv[i];
            if (!cJSON_IsString(c)) {
                struct cx_buf b;
                cx_buf_init(&b, FILTER_ERR_MAX);
                int brc = cx_buf_puts(&b, "matchLabels[");
                brc |= cx_buf_puts(&b, c->string);
                brc |= cx_buf_puts(&b, "]: must be a string");
                filter_err_set(err, 0, "%s", brc == 0 ? b.data : "matchLabels: must be strings");
                cx_buf_free(&b);
                rc = FILTER_EINVAL;
                break;
            }
            if (add_value(&p, c->valuestring, strlen(c->valuestring), 0) != 0)
                rc = FILTER_ENOMEM;
            else
                rc = new_requirement(&p, sel, c->string, 0, FILTER_OP_EQUALS, 0, "");
            clear_values(&p);
        }
        free(kv);
        if (rc != FILTER_OK)
            goto out;
    }

    size_t idx = 0;
    for (const cJSON *e = cJSON_IsArray(me) ? me->child : NULL; e; e = e->next, idx++) {
        char where[64];
        snprintf(where, sizeof(where), "matchExpressions[%zu]", idx);
        if (!cJSON_IsObject(e)) {
            rc = json_err(err, "%s: must be an object", where);
            goto out;
        }
        const char *key = cx_json_str(e, "key");
        const char *ops = cx_json_str(e, "operator");
        const cJSON *vals = cJSON_GetObjectItemCaseSensitive(e, "values");
        if (!key) {
            rc = json_err(err, "%s.key: must be a string", where);
            goto out;
        }
        if (!ops) {
            rc = json_err(err, "%s.operator: must be a string", where);
            goto out;
        }
        if (vals && !cJSON_IsNull(vals) && !cJSON_IsArray(vals)) {
            rc = json_err(err, "%s.values: must be an array of strings", where);
            goto out;
        }
        enum filter_op op;
        if (strcmp(ops, "In") == 0) {
            op = FILTER_OP_IN;
        } else if (strcmp(ops, "NotIn") == 0) {
            op = FILTER_OP_NOT_IN;
        } else if (strcmp(ops, "Exists") == 0) {
            op = FILTER_OP_EXISTS;
        } else if (strcmp(ops, "DoesNotExist") == 0) {
            op = FILTER_OP_NOT_EXISTS;
        } else {
            char *q = filter_quoted(ops);
            if (!q) {
                rc = FILTER_ENOMEM;
                goto out;
            }
            filter_err_set(err, 0, "%s is not a valid label selector operator", q);
            free(q);
            rc = FILTER_EINVAL;
            goto out;
        }
        for (const cJSON *v = cJSON_IsArray(vals) ? vals->child : NULL; v; v = v->next) {
            if (!cJSON_IsString(v)) {
                clear_values(&p);
                rc = json_err(err, "%s.values: must be an array of strings", where);
                goto out;
            }
            if (add_value(&p, v->valuestring, strlen(v->valuestring), 0) != 0) {
                rc = FILTER_ENOMEM;
                goto out;
            }
        }
        /* append([]string(nil), values...) is nil when there are none */
        rc = new_requirement(&p, sel, key, 0, op, p.nvals == 0 ? 1 : 0, "");
        clear_values(&p);
        if (rc != FILTER_OK)
            goto out;
    }
    if (sel->n > 1)
        qsort(sel->reqs, sel->n, sizeof(*sel->reqs), req_cmp_key);
out:
    clear_values(&p);
    free(p.vals);
    if (rc != FILTER_OK) {
        filter_selector_free(sel);
        if (rc == FILTER_ENOMEM)
            filter_err_set(err, 0, "out of memory");
        return rc;
    }
    *out = sel;
    return FILTER_OK;
}
