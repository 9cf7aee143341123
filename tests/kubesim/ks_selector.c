/*
 * ks_selector: label/field selector parsing and matching, and the name and
 * label validators of apimachinery (same grammar, same messages).
 */
#include "ks_selector.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cx_buf.h"

#define SEL_MAX_LEN 8192 /* a selector longer than this is refused */

/* ---- validators -------------------------------------------------------- */

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] */
static bool match_qname(const char *s, size_t n)
{
    if (n == 0 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? */
static bool match_dns_label(const char *s, size_t n)
{
    if (n == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_lower_alnum(s[i]) && s[i] != '-')
            return false;
    return true;
}

static bool match_dns_subdomain(const char *s, size_t n)
{
    size_t start = 0;
    if (n == 0)
        return false;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            if (!match_dns_label(s + start, i - start))
                return false;
            start = i + 1;
        }
    }
    return true;
}

static void add_err(struct cx_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_err(struct cx_buf *b, const char *fmt, ...)
{
    va_list ap;
    if (b->len)
        (void)!cx_buf_puts(b, "; ");
    va_start(ap, fmt);
    (void)!cx_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

static int finish(struct cx_buf *b, char *err, size_t errlen)
{
    int rc = b->len ? -1 : 0;
    if (rc && err && errlen)
        snprintf(err, errlen, "%s", b->data);
    cx_buf_free(b);
    return rc;
}

#define QNAME_FMT "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
#define QNAME_MSG                                                                               \
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an " \
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "      \
    "validation is '" QNAME_FMT "')"
#define SUBDOMAIN_FMT "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
#define SUBDOMAIN_MSG                                                                             \
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "  \
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used " \
    "for validation is '" SUBDOMAIN_FMT "')"
#define LABEL_FMT "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
#define LABEL_MSG                                                                                \
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and " \
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "   \
    "used for validation is '" LABEL_FMT "')"
#define DNS1035_FMT "[a-z]([-a-z0-9]*[a-z0-9])?"
#define DNS1035_MSG                                                                              \
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an " \
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "         \
    "'abc-123', regex used for validation is '" DNS1035_FMT "')"

static void subdomain_errs(struct cx_buf *b, const char *prefix, const char *s)
{
    size_t n = strlen(s);
    if (n > 253)
        add_err(b, "%smust be no more than 253 characters", prefix);
    if (!match_dns_subdomain(s, n))
        add_err(b, "%s%s", prefix, SUBDOMAIN_MSG);
}

int ks_valid_dns1123_subdomain(const char *s, char *err, size_t errlen)
{
    struct cx_buf b;
    cx_buf_init(&b, 4096);
    subdomain_errs(&b, "", s);
    return finish(&b, err, errlen);
}

int ks_valid_dns1123_label(const char *s, char *err, size_t errlen)
{
    struct cx_buf b;
    cx_buf_init(&b, 4096);
    size_t n = strlen(s);
    if (n > 63)
        add_err(&b, "must be no more than 63 characters");
    if (!match_dns_label(s, n)) {
        if (match_dns_subdomain(s, n))
            add_err(&b, "must not contain dots");
        else
            add_err(&b, "%s", LABEL_MSG);
    }
    return finish(&b, err, errlen);
}

int ks_valid_dns1035_label(const char *s, char *err, size_t errlen)
{
    struct cx_buf b;
    cx_buf_init(&b, 4096);
    size_t n = strlen(s);
    if (n > 63)
        add_err(&b, "must be no more than 63 characters");
    if (!match_dns_label(s, n) || !(s[0] >= 'a' && s[0] <= 'z'))
        add_err(&b, "%s", DNS1035_MSG);
    return finish(&b, err, errlen);
}

int ks_valid_qualified_name(const char *s, char *err, size_t errlen)
{
    struct cx_buf b;
    cx_buf_init(&b, 8192);
    const char *slash = strchr(s, '/');
    const char *name = s;
    if (slash && strchr(slash + 1, '/')) {
        add_err(&b, "a qualified name " QNAME_MSG
                    " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
        return finish(&b, err, errlen);
    }
    if (slash) {
        size_t pl = (size_t)(slash - s);
        char *prefix = strndup(s, pl);
        if (pl == 0)
            add_err(&b, "prefix part must be non-empty");
        else if (prefix)
            subdomain_errs(&b, "prefix part ", prefix);
        free(prefix);
        name = slash + 1;
    }
    size_t n = strlen(name);
    if (n == 0)
        add_err(&b, "name part must be non-empty");
    else if (n > 63)
        add_err(&b, "name part must be no more than 63 characters");
    if (!match_qname(name, n))
        add_err(&b, "name part " QNAME_MSG);
    return finish(&b, err, errlen);
}

int ks_valid_label_value(const char *s, char *err, size_t errlen)
{
    struct cx_buf b;
    cx_buf_init(&b, 4096);
    size_t n = strlen(s);
    if (n > 63)
        add_err(&b, "must be no more than 63 characters");
    if (n && !match_qname(s, n))
        add_err(&b, "a valid label must be an empty string or consist of alphanumeric characters, "
                    "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
                    "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
                    "'(" QNAME_FMT ")?')");
    return finish(&b, err, errlen);
}

int ks_valid_configmap_key(const char *s, char *err, size_t errlen)
{
    struct cx_buf b;
    cx_buf_init(&b, 4096);
    size_t n = strlen(s);
    bool ok = n > 0;
    for (size_t i = 0; i < n; i++)
        if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            ok = false;
    if (n > 253)
        add_err(&b, "must be no more than 253 characters");
    if (!ok)
        add_err(&b, "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
                    "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation "
                    "is '[-._a-zA-Z0-9]+')");
    if (strcmp(s, ".") == 0)
        add_err(&b, "must not be '.'");
    else if (strcmp(s, "..") == 0)
        add_err(&b, "must not be '..'");
    else if (strncmp(s, "..", 2) == 0)
        add_err(&b, "must not start with '..'");
    return finish(&b, err, errlen);
}

/* ---- label selector ---------------------------------------------------- */

enum op {
    OP_IN = 1,
    OP_NOTIN,
    OP_EQ,
    OP_DEQ,
    OP_NEQ,
    OP_EXISTS,
    OP_NOTEXISTS,
    OP_GT,
    OP_LT,
};

struct req {
    char *key;
    enum op op;
    char **vals;
    size_t nvals;
};

struct ks_lsel {
    struct req *reqs;
    size_t n;
};

enum tok {
    T_ERROR = 0,
    T_END,
    T_CLOSEPAR,
    T_COMMA,
    T_NOT,
    T_DEQ,
    T_EQ,
    T_GT,
    T_ID,
    T_IN,
    T_LT,
    T_NEQ,
    T_NOTIN,
    T_OPENPAR,
};

struct item {
    enum tok t;
    char *lit;
};

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_special(char c)
{
    return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

static enum tok special_tok(const char *s, size_t n)
{
    static const struct {
        const char *s;
        enum tok t;
    } tab[] = {{")", T_CLOSEPAR}, {",", T_COMMA}, {"!", T_NOT},  {"==", T_DEQ},   {"=", T_EQ},
               {">", T_GT},       {"<", T_LT},    {"!=", T_NEQ}, {"(", T_OPENPAR}};
    for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
        if (strlen(tab[i].s) == n && memcmp(tab[i].s, s, n) == 0)
            return tab[i].t;
    return T_ERROR;
}

/* Tokenises like apimachinery's Lexer. Returns the number of items or -1. */
static int lex_all(const char *s, struct item **out)
{
    size_t cap = 16, n = 0, pos = 0, len = strlen(s);
    struct item *it = malloc(cap * sizeof(*it));
    if (!it)
        return -1;
    for (;;) {
        if (n + 1 >= cap) {
            cap *= 2;
            struct item *p = realloc(it, cap * sizeof(*it));
            if (!p)
                goto oom;
            it = p;
        }
        while (pos < len && is_ws(s[pos]))
            pos++;
        if (pos >= len) {
            it[n].t = T_END;
            it[n].lit = strdup("");
            if (!it[n].lit)
                goto oom;
            n++;
            break;
        }
        if (is_special(s[pos])) {
            /* Longest run of special chars that still forms a token. */
            size_t start = pos, best = 0;
            enum tok bt = T_ERROR;
            size_t i = pos;
            while (i < len && is_special(s[i])) {
                enum tok t = special_tok(s + start, i - start + 1);
                if (t != T_ERROR) {
                    bt = t;
                    best = i - start + 1;
                } else if (bt != T_ERROR) {
                    break;
                }
                i++;
            }
            if (bt == T_ERROR) {
                /* Go reads the whole run of special symbols into the message. */
                char msg[256];
                snprintf(msg, sizeof(msg), "error expected: keyword found '%.*s'", (int)(i - start),
                         s + start);
                it[n].t = T_ERROR;
                it[n].lit = strdup(msg);
                pos = i;
            } else {
                it[n].t = bt;
                it[n].lit = strndup(s + start, best);
                pos = start + best;
            }
        } else {
            size_t start = pos;
            while (pos < len && !is_special(s[pos]) && !is_ws(s[pos]))
                pos++;
            it[n].lit = strndup(s + start, pos - start);
            if (it[n].lit && strcmp(it[n].lit, "in") == 0)
                it[n].t = T_IN;
            else if (it[n].lit && strcmp(it[n].lit, "notin") == 0)
                it[n].t = T_NOTIN;
            else
                it[n].t = T_ID;
        }
        if (!it[n].lit)
            goto oom;
        n++;
    }
    *out = it;
    return (int)n;
oom:
    for (size_t i = 0; i < n; i++)
        free(it[i].lit);
    free(it);
    return -1;
}

struct parser {
    struct item *it;
    int n, pos;
    char *err;
    size_t errlen;
};

/* In the Values context "in" and "notin" are identifiers. */
static enum tok look(struct parser *p, bool values, const char **lit)
{
    struct item *i = &p->it[p->pos];
    if (lit)
        *lit = i->lit;
    if (values && (i->t == T_IN || i->t == T_NOTIN))
        return T_ID;
    return i->t;
}

static enum tok consume(struct parser *p, bool values, const char **lit)
{
    enum tok t = look(p, values, lit);
    if (p->pos < p->n - 1)
        p->pos++;
    return t;
}

static void req_free(struct req *r)
{
    free(r->key);
    for (size_t i = 0; i < r->nvals; i++)
        free(r->vals[i]);
    free(r->vals);
}

static int set_add(struct req *r, const char *v)
{
    for (size_t i = 0; i < r->nvals; i++)
        if (strcmp(r->vals[i], v) == 0)
            return 0;
    char **nv = realloc(r->vals, (r->nvals + 1) * sizeof(*nv));
    if (!nv)
        return -1;
    r->vals = nv;
    r->vals[r->nvals] = strdup(v);
    if (!r->vals[r->nvals])
        return -1;
    r->nvals++;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int perr(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int perr(struct parser *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, p->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

void ks_go_quote(struct cx_buf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    (void)!cx_buf_append(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            char e[2] = {'\\', (char)*p};
            (void)!cx_buf_append(b, e, 2);
        } else if (*p == '\n') {
            (void)!cx_buf_puts(b, "\\n");
        } else if (*p == '\t') {
            (void)!cx_buf_puts(b, "\\t");
        } else if (*p < 0x20 || *p == 0x7f) {
            char e[4] = {'\\', 'x', hex[*p >> 4], hex[*p & 15]};
            (void)!cx_buf_append(b, e, 4);
        } else {
            (void)!cx_buf_append(b, p, 1);
        }
    }
    (void)!cx_buf_append(b, "\"", 1);
}
#define go_quote ks_go_quote

static int parse_requirement(struct parser *p, struct req *r)
{
    const char *lit;
    enum tok t = consume(p, true, &lit);
    bool notexists = false;
    if (t == T_NOT) {
        notexists = true;
        t = consume(p, true, &lit);
    }
    if (t != T_ID)
        return perr(p, "found '%s', expected: identifier", lit);
    char kerr[4096];
    if (ks_valid_qualified_name(lit, kerr, sizeof(kerr)) != 0) {
        struct cx_buf b;
        cx_buf_init(&b, 16384);
        (void)!cx_buf_puts(&b, "<nil>: Invalid value: ");
        go_quote(&b, lit);
        (void)!cx_buf_printf(&b, ": %s", kerr);
        int rc = perr(p, "%s", b.data ? b.data : "");
        cx_buf_free(&b);
        return rc;
    }
    r->key = strdup(lit);
    if (!r->key)
        return perr(p, "out of memory");
    enum tok nt = look(p, true, NULL);
    if (nt == T_END || nt == T_COMMA) {
        r->op = notexists ? OP_NOTEXISTS : OP_EXISTS;
        return 0;
    }
    if (notexists) {
        /* "!key=v": Go returns the DoesNotExist requirement here and the
         * caller then trips over the operator ("found '='..."). */
        r->op = OP_NOTEXISTS;
        return 0;
    }
    t = consume(p, false, &lit);
    switch (t) {
    case T_IN:
        r->op = OP_IN;
        break;
    case T_EQ:
        r->op = OP_EQ;
        break;
    case T_DEQ:
        r->op = OP_DEQ;
        break;
    case T_GT:
        r->op = OP_GT;
        break;
    case T_LT:
        r->op = OP_LT;
        break;
    case T_NOTIN:
        r->op = OP_NOTIN;
        break;
    case T_NEQ:
        r->op = OP_NEQ;
        break;
    default:
        return perr(p, "found '%s', expected: in, notin, =, ==, !=, gt, lt", lit);
    }
    if (r->op == OP_IN || r->op == OP_NOTIN) {
        t = consume(p, true, &lit);
        if (t != T_OPENPAR)
            return perr(p, "found '%s' expected: '('", lit);
        const char *l0;
        t = look(p, true, &l0);
        if (t == T_ID || t == T_COMMA) {
            for (;;) {
                t = consume(p, true, &lit);
                if (t == T_ID) {
                    if (set_add(r, lit) != 0)
                        return perr(p, "out of memory");
                    const char *l2;
                    enum tok t2 = look(p, true, &l2);
                    if (t2 == T_COMMA)
                        continue;
                    if (t2 == T_CLOSEPAR)
                        break;
                    return perr(p, "found '%s', expected: ',' or ')'", l2);
                } else if (t == T_COMMA) {
                    if (r->nvals == 0 && set_add(r, "") != 0)
                        return perr(p, "out of memory");
                    enum tok t2 = look(p, true, NULL);
                    if (t2 == T_CLOSEPAR) {
                        if (set_add(r, "") != 0)
                            return perr(p, "out of memory");
                        break;
                    }
                    if (t2 == T_COMMA) {
                        consume(p, true, NULL);
                        if (set_add(r, "") != 0)
                            return perr(p, "out of memory");
                    }
                } else {
                    return perr(p, "found '%s', expected: ',', or identifier", lit);
                }
            }
            t = consume(p, true, NULL);
            if (t != T_CLOSEPAR)
                return perr(p, "found '%s', expected: ')'", l0);
        } else if (t == T_CLOSEPAR) {
            consume(p, true, NULL);
            if (set_add(r, "") != 0)
                return perr(p, "out of memory");
        } else {
            return perr(p, "found '%s', expected: ',', ')' or identifier", l0);
        }
    } else {
        t = look(p, true, NULL);
        if (t == T_END || t == T_COMMA) {
            if (set_add(r, "") != 0)
                return perr(p, "out of memory");
        } else {
            t = consume(p, true, &lit);
            if (t != T_ID)
                return perr(p, "found '%s', expected: identifier", lit);
            if (set_add(r, lit) != 0)
                return perr(p, "out of memory");
        }
    }
    /* NewRequirement's checks, values sorted as sets.String.List() does. */
    if (r->nvals > 1)
        qsort(r->vals, r->nvals, sizeof(*r->vals), cmp_str);
    struct cx_buf b;
    int nerr = 0;
    cx_buf_init(&b, 65536);
    if ((r->op == OP_GT || r->op == OP_LT)) {
        for (size_t i = 0; i < r->nvals; i++) {
            char *end;
            errno = 0;
            (void)strtoll(r->vals[i], &end, 10);
            if (errno || end == r->vals[i] || *end) {
                if (b.len)
                    (void)!cx_buf_puts(&b, ", ");
                (void)!cx_buf_printf(&b, "values[%zu]: Invalid value: ", i);
                nerr++;
                go_quote(&b, r->vals[i]);
                (void)!cx_buf_puts(&b, ": for 'Gt', 'Lt' operators, the value must be an integer");
            }
        }
    }
    for (size_t i = 0; i < r->nvals; i++) {
        char verr[4096];
        if (ks_valid_label_value(r->vals[i], verr, sizeof(verr)) != 0) {
            if (b.len)
                (void)!cx_buf_puts(&b, ", ");
            (void)!cx_buf_printf(&b, "values[%zu][%s]: Invalid value: ", i, r->key);
            nerr++;
            go_quote(&b, r->vals[i]);
            (void)!cx_buf_printf(&b, ": %s", verr);
        }
    }
    if (b.len) {
        /* An aggregate of several errors is printed as "[a, b]". */
        int rc = nerr > 1 ? perr(p, "[%s]", b.data) : perr(p, "%s", b.data);
        cx_buf_free(&b);
        return rc;
    }
    cx_buf_free(&b);
    return 0;
}

static int cmp_req(const void *a, const void *b)
{
    return strcmp(((const struct req *)a)->key, ((const struct req *)b)->key);
}

void ks_lsel_free(struct ks_lsel *sel)
{
    if (!sel)
        return;
    for (size_t i = 0; i < sel->n; i++)
        req_free(&sel->reqs[i]);
    free(sel->reqs);
    free(sel);
}

struct ks_lsel *ks_lsel_parse(const char *s, char *err, size_t errlen)
{
    struct ks_lsel *sel = calloc(1, sizeof(*sel));
    struct item *items = NULL;
    int nitems = 0;
    if (!sel) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (strlen(s) > SEL_MAX_LEN) {
        snprintf(err, errlen, "label selector too long");
        goto fail;
    }
    nitems = lex_all(s, &items);
    if (nitems < 0) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    struct parser p = {.it = items, .n = nitems, .pos = 0, .err = err, .errlen = errlen};
    for (;;) {
        const char *lit;
        enum tok t = look(&p, true, &lit);
        if (t == T_END)
            break;
        if (t != T_ID && t != T_NOT) {
            snprintf(err, errlen, "found '%s', expected: !, identifier, or 'end of string'", lit);
            goto fail;
        }
        struct req *nr = realloc(sel->reqs, (sel->n + 1) * sizeof(*nr));
        if (!nr) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        sel->reqs = nr;
        memset(&sel->reqs[sel->n], 0, sizeof(struct req));
        char inner[8192];
        p.err = inner;
        p.errlen = sizeof(inner);
        int rc = parse_requirement(&p, &sel->reqs[sel->n]);
        sel->n++;
        if (rc != 0) {
            snprintf(err, errlen, "unable to parse requirement: %s", inner);
            goto fail;
        }
        t = consume(&p, true, &lit);
        if (t == T_END)
            break;
        if (t == T_COMMA) {
            const char *l2;
            enum tok t2 = look(&p, true, &l2);
            if (t2 != T_ID && t2 != T_NOT) {
                snprintf(err, errlen, "found '%s', expected: identifier after ','", l2);
                goto fail;
            }
            continue;
        }
        snprintf(err, errlen, "found '%s', expected: ',' or 'end of string'", lit);
        goto fail;
    }
    if (sel->n > 1)
        qsort(sel->reqs, sel->n, sizeof(*sel->reqs), cmp_req);
    for (int i = 0; i < nitems; i++)
        free(items[i].lit);
    free(items);
    return sel;
fail:
    for (int i = 0; i < nitems; i++)
        free(items[i].lit);
    free(items);
    ks_lsel_free(sel);
    return NULL;
}

bool ks_lsel_empty(const struct ks_lsel *sel)
{
    return !sel || sel->n == 0;
}

static bool has_val(const struct req *r, const char *v)
{
    for (size_t i = 0; i < r->nvals; i++)
        if (strcmp(r->vals[i], v) == 0)
            return true;
    return false;
}

static bool parse_i64(const char *s, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end)
        return false;
    *out = v;
    return true;
}

bool ks_lsel_match(const struct ks_lsel *sel, const cJSON *labels)
{
    if (!sel)
        return true;
    for (size_t i = 0; i < sel->n; i++) {
        const struct req *r = &sel->reqs[i];
        const cJSON *lv =
            cJSON_IsObject(labels) ? cJSON_GetObjectItemCaseSensitive(labels, r->key) : NULL;
        const char *v = cJSON_IsString(lv) ? lv->valuestring : NULL;
        bool ok;
        switch (r->op) {
        case OP_IN:
        case OP_EQ:
        case OP_DEQ:
            ok = v && has_val(r, v);
            break;
        case OP_NOTIN:
        case OP_NEQ:
            ok = !v || !has_val(r, v);
            break;
        case OP_EXISTS:
            ok = v != NULL;
            break;
        case OP_NOTEXISTS:
            ok = v == NULL;
            break;
        case OP_GT:
        case OP_LT: {
            long long a, b;
            ok = v && r->nvals == 1 && parse_i64(v, &a) && parse_i64(r->vals[0], &b) &&
                 (r->op == OP_GT ? a > b : a < b);
            break;
        }
        default:
            ok = false;
        }
        if (!ok)
            return false;
    }
    return true;
}

/* ---- field selector ---------------------------------------------------- */

struct fterm {
    char *field;
    char *value;
    bool neq;
};

struct ks_fsel {
    struct fterm *t;
    size_t n;
};

void ks_fsel_free(struct ks_fsel *sel)
{
    if (!sel)
        return;
    for (size_t i = 0; i < sel->n; i++) {
        free(sel->t[i].field);
        free(sel->t[i].value);
    }
    free(sel->t);
    free(sel);
}

size_t ks_fsel_count(const struct ks_fsel *sel)
{
    return sel ? sel->n : 0;
}

const char *ks_fsel_field(const struct ks_fsel *sel, size_t i)
{
    return sel->t[i].field;
}

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Unescapes \\ \, \= ; other escapes are errors (fields.UnescapeValue). */
static char *unescape(const char *s, char *err, size_t errlen)
{
    size_t n = strlen(s);
    char *o = malloc(n + 1), *q = o;
    if (!o)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\') {
            if (i + 1 >= n || (s[i + 1] != '\\' && s[i + 1] != ',' && s[i + 1] != '=')) {
                snprintf(err, errlen, "invalid field selector: invalid escape sequence: %s",
                         i + 1 < n ? (char[]){'\\', s[i + 1], 0} : "\\");
                free(o);
                return NULL;
            }
            *q++ = s[++i];
        } else if (s[i] == ',' || s[i] == '=') {
            snprintf(err, errlen, "invalid field selector: unescaped %c in value", s[i]);
            free(o);
            return NULL;
        } else {
            *q++ = s[i];
        }
    }
    *q = 0;
    return o;
}

struct ks_fsel *ks_fsel_parse(const char *s, char *err, size_t errlen)
{
    struct ks_fsel *sel = calloc(1, sizeof(*sel));
    char **parts = NULL;
    size_t np = 0;
    if (!sel || strlen(s) > SEL_MAX_LEN) {
        snprintf(err, errlen, sel ? "field selector too long" : "out of memory");
        free(sel);
        return NULL;
    }
    /* splitTerms: split on commas not escaped by a backslash. */
    size_t len = strlen(s), start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] == '\\' && i + 1 < len) {
            i++;
            continue;
        }
        if (i == len || s[i] == ',') {
            char **pp = realloc(parts, (np + 1) * sizeof(*pp));
            if (!pp)
                goto oom;
            parts = pp;
            parts[np] = strndup(s + start, i - start);
            if (!parts[np])
                goto oom;
            np++;
            start = i + 1;
        }
    }
    if (np > 1)
        qsort(parts, np, sizeof(*parts), cmp_cstr);
    for (size_t i = 0; i < np; i++) {
        const char *part = parts[i];
        if (!*part)
            continue;
        /* splitTerm: the first position where "!=", "==" or "=" starts. */
        const char *op = NULL;
        size_t oplen = 0;
        for (const char *c = part; *c && !op; c++) {
            if (strncmp(c, "!=", 2) == 0)
                op = c, oplen = 2;
            else if (strncmp(c, "==", 2) == 0)
                op = c, oplen = 2;
            else if (*c == '=')
                op = c, oplen = 1;
        }
        if (!op) {
            snprintf(err, errlen, "invalid selector: '%s'; can't understand '%s'", s, part);
            goto fail;
        }
        char *val = unescape(op + oplen, err, errlen);
        if (!val)
            goto fail;
        struct fterm *nt = realloc(sel->t, (sel->n + 1) * sizeof(*nt));
        if (!nt) {
            free(val);
            goto oom;
        }
        sel->t = nt;
        sel->t[sel->n].field = strndup(part, (size_t)(op - part));
        sel->t[sel->n].value = val;
        sel->t[sel->n].neq = op[0] == '!';
        sel->n++;
        if (!sel->t[sel->n - 1].field)
            goto oom;
    }
    for (size_t i = 0; i < np; i++)
        free(parts[i]);
    free(parts);
    return sel;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    for (size_t i = 0; i < np; i++)
        free(parts[i]);
    free(parts);
    ks_fsel_free(sel);
    return NULL;
}

bool ks_fsel_match(const struct ks_fsel *sel, const char *(*get)(const void *obj, const char *f),
                   const void *obj)
{
    if (!sel)
        return true;
    for (size_t i = 0; i < sel->n; i++) {
        const char *v = get(obj, sel->t[i].field);
        bool eq = strcmp(v ? v : "", sel->t[i].value) == 0;
        if (eq == sel->t[i].neq)
            return false;
    }
    return true;
}
