#include "xlate_re2.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* RE2's limits (re2/parse.cc). */
#define RE2_MAX_REPEAT 1000
#define RE2_MAX_DEPTH  1000

/* What one parsed piece contributes. */
struct piece {
    int size;    /* estimated program instructions */
    long prod;   /* largest product of nested counted repetitions inside */
    int operand; /* 1 if it can be repeated (not an empty flag group) */
};

struct re {
    const unsigned char *s;
    size_t len, pos;
    int depth;
    int fail;
    char *err;
    size_t errlen;
    /* capture names seen, for duplicates: offsets into s */
    size_t names[64];
    size_t namelens[64];
    size_t nnames;
};

static int fail(struct re *r, const char *what, size_t from, size_t to)
{
    if (!r->fail && r->err && r->errlen) {
        if (to > r->len)
            to = r->len;
        int n = (int)(to > from ? to - from : 0);
        if (n > 200)
            n = 200;
        if (from == to)
            snprintf(r->err, r->errlen, "%s", what);
        else
            snprintf(r->err, r->errlen, "%s: %.*s", what, n, (const char *)r->s + from);
    }
    r->fail = 1;
    return -1;
}

static int peek(const struct re *r, size_t off)
{
    return r->pos + off < r->len ? r->s[r->pos + off] : -1;
}

/* Decodes one UTF-8 rune at |pos|; returns its length or 0 if invalid. */
static size_t utf8_rune(const unsigned char *s, size_t len, size_t pos, uint32_t *rune)
{
    unsigned c = s[pos];
    size_t n;
    uint32_t r;
    if (c < 0x80) {
        *rune = c;
        return 1;
    } else if ((c & 0xe0) == 0xc0) {
        n = 2;
        r = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
        n = 3;
        r = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
        n = 4;
        r = c & 0x07;
    } else {
        return 0;
    }
    if (pos + n > len)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[pos + i] & 0xc0) != 0x80)
            return 0;
        r = (r << 6) | (s[pos + i] & 0x3f);
    }
    /* overlong forms and values past U+10FFFF are refused; RE2 lets
     * surrogates through */
    if ((n == 2 && r < 0x80) || (n == 3 && r < 0x800) || (n == 4 && r < 0x10000) || r > 0x10ffff)
        return 0;
    *rune = r;
    return n;
}

static int is_word(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static int is_hex(int c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int hexval(int c)
{
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

/* RE2's Unicode groups: general categories and scripts. */
static const char *const unicode_groups[] = {
    "Any",
    "C",
    "Cc",
    "Cf",
    "Co",
    "Cs",
    "L",
    "Ll",
    "Lm",
    "Lo",
    "Lt",
    "Lu",
    "M",
    "Mc",
    "Me",
    "Mn",
    "N",
    "Nd",
    "Nl",
    "No",
    "P",
    "Pc",
    "Pd",
    "Pe",
    "Pf",
    "Pi",
    "Po",
    "Ps",
    "S",
    "Sc",
    "Sk",
    "Sm",
    "So",
    "Z",
    "Zl",
    "Zp",
    "Zs",
    "Adlam",
    "Ahom",
    "Anatolian_Hieroglyphs",
    "Arabic",
    "Armenian",
    "Avestan",
    "Balinese",
    "Bamum",
    "Bassa_Vah",
    "Batak",
    "Bengali",
    "Bhaiksuki",
    "Bopomofo",
    "Brahmi",
    "Braille",
    "Buginese",
    "Buhid",
    "Canadian_Aboriginal",
    "Carian",
    "Caucasian_Albanian",
    "Chakma",
    "Cham",
    "Cherokee",
    "Chorasmian",
    "Common",
    "Coptic",
    "Cuneiform",
    "Cypriot",
    "Cypro_Minoan",
    "Cyrillic",
    "Deseret",
    "Devanagari",
    "Dives_Akuru",
    "Dogra",
    "Duployan",
    "Egyptian_Hieroglyphs",
    "Elbasan",
    "Elymaic",
    "Ethiopic",
    "Georgian",
    "Glagolitic",
    "Gothic",
    "Grantha",
    "Greek",
    "Gujarati",
    "Gunjala_Gondi",
    "Gurmukhi",
    "Han",
    "Hangul",
    "Hanifi_Rohingya",
    "Hanunoo",
    "Hatran",
    "Hebrew",
    "Hiragana",
    "Imperial_Aramaic",
    "Inherited",
    "Inscriptional_Pahlavi",
    "Inscriptional_Parthian",
    "Javanese",
    "Kaithi",
    "Kannada",
    "Katakana",
    "Kawi",
    "Kayah_Li",
    "Kharoshthi",
    "Khitan_Small_Script",
    "Khmer",
    "Khojki",
    "Khudawadi",
    "Lao",
    "Latin",
    "Lepcha",
    "Limbu",
    "Linear_A",
    "Linear_B",
    "Lisu",
    "Lycian",
    "Lydian",
    "Mahajani",
    "Makasar",
    "Malayalam",
    "Mandaic",
    "Manichaean",
    "Marchen",
    "Masaram_Gondi",
    "Medefaidrin",
    "Meetei_Mayek",
    "Mende_Kikakui",
    "Meroitic_Cursive",
    "Meroitic_Hieroglyphs",
    "Miao",
    "Modi",
    "Mongolian",
    "Mro",
    "Multani",
    "Myanmar",
    "Nabataean",
    "Nag_Mundari",
    "Nandinagari",
    "New_Tai_Lue",
    "Newa",
    "Nko",
    "Nushu",
    "Nyiakeng_Puachue_Hmong",
    "Ogham",
    "Ol_Chiki",
    "Old_Hungarian",
    "Old_Italic",
    "Old_North_Arabian",
    "Old_Permic",
    "Old_Persian",
    "Old_Sogdian",
    "Old_South_Arabian",
    "Old_Turkic",
    "Old_Uyghur",
    "Oriya",
    "Osage",
    "Osmanya",
    "Pahawh_Hmong",
    "Palmyrene",
    "Pau_Cin_Hau",
    "Phags_Pa",
    "Phoenician",
    "Psalter_Pahlavi",
    "Rejang",
    "Runic",
    "Samaritan",
    "Saurashtra",
    "Sharada",
    "Shavian",
    "Siddham",
    "SignWriting",
    "Sinhala",
    "Sogdian",
    "Sora_Sompeng",
    "Soyombo",
    "Sundanese",
    "Syloti_Nagri",
    "Syriac",
    "Tagalog",
    "Tagbanwa",
    "Tai_Le",
    "Tai_Tham",
    "Tai_Viet",
    "Takri",
    "Tamil",
    "Tangsa",
    "Tangut",
    "Telugu",
    "Thaana",
    "Thai",
    "Tibetan",
    "Tifinagh",
    "Tirhuta",
    "Toto",
    "Ugaritic",
    "Vai",
    "Vithkuqi",
    "Wancho",
    "Warang_Citi",
    "Yezidi",
    "Yi",
    "Zanabazar_Square",
};

static int unicode_group_known(const unsigned char *name, size_t n)
{
    for (size_t i = 0; i < sizeof(unicode_groups) / sizeof(unicode_groups[0]); i++)
        if (strlen(unicode_groups[i]) == n && memcmp(unicode_groups[i], name, n) == 0)
            return 1;
    return 0;
}

static const char *const posix_classes[] = {"alnum", "alpha", "ascii", "blank", "cntrl",
                                            "digit", "graph", "lower", "print", "punct",
                                            "space", "upper", "word",  "xdigit"};

/* Parses \p / \P at r->pos (pointing at 'p' or 'P'). */
static int parse_unicode_class(struct re *r, size_t start)
{
    r->pos++; /* p or P */
    int c = peek(r, 0);
    if (c < 0)
        return fail(r, "invalid escape sequence", start, r->pos);
    if (c != '{') {
        uint32_t rune;
        size_t n = utf8_rune(r->s, r->len, r->pos, &rune);
        if (n == 0)
            return fail(r, "invalid UTF-8", r->pos, r->pos);
        r->pos += n;
        if (!unicode_group_known(r->s + r->pos - n, n))
            return fail(r, "invalid character class range", start, r->pos);
        return 0;
    }
    size_t name = r->pos + 1;
    size_t end = name;
    while (end < r->len && r->s[end] != '}')
        end++;
    if (end >= r->len)
        return fail(r, "invalid character class range", start, r->len);
    r->pos = end + 1;
    if (name < end && r->s[name] == '^')
        name++;
    if (!unicode_group_known(r->s + name, end - name))
        return fail(r, "invalid character class range", start, r->pos);
    return 0;
}

/* Parses one escape at r->pos (pointing at the backslash). |in_class|: inside
 * [...]. Sets *rune and *is_rune when the escape denotes one character (it may
 * then be a range end); class escapes set *is_rune = 0. Returns 0 or -1. */
static int parse_escape(struct re *r, int in_class, uint32_t *rune, int *is_rune, int *size)
{
    size_t start = r->pos;
    r->pos++;
    *is_rune = 0;
    *size = 1;
    int c = peek(r, 0);
    if (c < 0)
        return fail(r, "trailing \\", 0, 0);
    /* Octal: \1-\7 followed by an octal digit, or \0. A lone \1-\9 is a
     * backreference, which RE2 does not support. */
    if (c >= '1' && c <= '7') {
        int d = peek(r, 1);
        if (d < '0' || d > '7')
            return fail(r, "invalid escape sequence", start, r->pos + 1);
    }
    if (c >= '0' && c <= '7') {
        uint32_t v = 0;
        int k = 0;
        while (k < 3 && peek(r, 0) >= '0' && peek(r, 0) <= '7') {
            v = v * 8 + (uint32_t)(peek(r, 0) - '0');
            r->pos++;
            k++;
        }
        *rune = v;
        *is_rune = 1;
        return 0;
    }
    if (c == '8' || c == '9')
        return fail(r, "invalid escape sequence", start, r->pos + 1);
    if (c == 'x') {
        r->pos++;
        int d = peek(r, 0);
        if (d == '{') {
            r->pos++;
            uint32_t v = 0;
            int k = 0;
            while (is_hex(peek(r, 0))) {
                v = v * 16 + (uint32_t)hexval(peek(r, 0));
                if (v > 0x10ffff)
                    return fail(r, "invalid escape sequence", start, r->pos + 1);
                r->pos++;
                k++;
            }
            if (k == 0 || peek(r, 0) != '}')
                return fail(r, "invalid escape sequence", start, r->pos + 1);
            r->pos++;
            *rune = v;
            *is_rune = 1;
            return 0;
        }
        if (!is_hex(d) || !is_hex(peek(r, 1)))
            return fail(r, "invalid escape sequence", start, r->pos + 2);
        *rune = (uint32_t)(hexval(d) * 16 + hexval(peek(r, 1)));
        r->pos += 2;
        *is_rune = 1;
        return 0;
    }
    if ((c < 0x80 && !is_word(c)) || c == '_') { /* escaped punctuation (and _) is itself */
        r->pos++;
        *rune = (uint32_t)c;
        *is_rune = 1;
        return 0;
    }
    switch (c) {
    case 'a':
        *rune = 7;
        break;
    case 'f':
        *rune = '\f';
        break;
    case 'n':
        *rune = '\n';
        break;
    case 'r':
        *rune = '\r';
        break;
    case 't':
        *rune = '\t';
        break;
    case 'v':
        *rune = '\v';
        break;
    case 'd':
    case 'D':
    case 's':
    case 'S':
    case 'w':
    case 'W':
        r->pos++;
        *size = (c == 'd') ? 1 : 4;
        return 0;
    case 'p':
    case 'P':
        *size = 8;
        return parse_unicode_class(r, start);
    case 'b':
    case 'B':
    case 'A':
    case 'z':
    case 'C':
        if (in_class)
            return fail(r, "invalid escape sequence", start, r->pos + 1);
        r->pos++;
        return 0;
    default:
        /* Letters RE2 does not know: \Z, \G, \e, \K, \h, \R, \X, \_ ... */
        {
            uint32_t u;
            size_t n = utf8_rune(r->s, r->len, r->pos, &u);
            return fail(r, "invalid escape sequence", start, r->pos + (n ? n : 1));
        }
    }
    r->pos++;
    *is_rune = 1;
    return 0;
}

/* Parses a class at r->pos (pointing at '['). */
static int parse_class(struct re *r, int *size)
{
    size_t start = r->pos;
    r->pos++;
    if (peek(r, 0) == '^')
        r->pos++;
    int first = 1;
    int items = 0;
    while (1) {
        int c = peek(r, 0);
        if (c < 0)
            return fail(r, "missing ]", start, r->len);
        if (c == ']' && !first)
            break;
        first = 0;
        /* POSIX class [:name:] or [:^name:] */
        if (c == '[' && peek(r, 1) == ':') {
            size_t name = r->pos + 2;
            size_t end = name;
            while (end + 1 < r->len && !(r->s[end] == ':' && r->s[end + 1] == ']'))
                end++;
            if (end + 1 < r->len) {
                size_t nm = name;
                if (nm < end && r->s[nm] == '^')
                    nm++;
                int ok = 0;
                for (size_t i = 0; i < sizeof(posix_classes) / sizeof(posix_classes[0]); i++)
                    if (strlen(posix_classes[i]) == end - nm &&
                        memcmp(posix_classes[i], r->s + nm, end - nm) == 0)
                        ok = 1;
                if (!ok)
                    return fail(r, "invalid character class range", r->pos, end + 2);
                r->pos = end + 2;
                items++;
                continue;
            }
        }
        size_t lo_start = r->pos;
        uint32_t lo = 0;
        int lo_rune = 1, esc_size;
        if (c == '\\') {
            if (parse_escape(r, 1, &lo, &lo_rune, &esc_size) != 0)
                return -1;
        } else {
            size_t n = utf8_rune(r->s, r->len, r->pos, &lo);
            if (n == 0)
                return fail(r, "invalid UTF-8", 0, 0);
            r->pos += n;
        }
        items++;
        /* A range lo-hi, unless '-' is last ("[a-]"). */
        /* a range lo-hi; after a class escape (\d) the '-' is a literal */
        if (lo_rune && peek(r, 0) == '-' && peek(r, 1) != ']' && peek(r, 1) >= 0) {
            r->pos++;
            uint32_t hi = 0;
            int hi_rune = 1;
            if (peek(r, 0) == '\\') {
                if (parse_escape(r, 1, &hi, &hi_rune, &esc_size) != 0)
                    return -1;
            } else {
                size_t n = utf8_rune(r->s, r->len, r->pos, &hi);
                if (n == 0)
                    return fail(r, "invalid UTF-8", 0, 0);
                r->pos += n;
            }
            if (!lo_rune || !hi_rune || hi < lo)
                return fail(r, "invalid character class range", lo_start, r->pos);
        } else if (!lo_rune) {
            /* \d, \pL... inside a class: fine as an item */
        }
    }
    r->pos++; /* ] */
    *size = items > 0 ? items : 1;
    return 0;
}

static int parse_alt(struct re *r, struct piece *out);

/* Parses the group at r->pos (pointing at '('). */
static int parse_group(struct re *r, struct piece *out)
{
    size_t start = r->pos;
    r->pos++;
    int capture = 1;
    if (peek(r, 0) == '?') {
        int c = peek(r, 1);
        if (c == 'P' && peek(r, 2) == '<') {
            size_t name = r->pos + 3;
            size_t end = name;
            while (end < r->len && r->s[end] != '>')
                end++;
            if (end >= r->len || end == name)
                return fail(r, "invalid named capture group", start,
                            end < r->len ? end + 1 : r->len);
            for (size_t i = name; i < end; i++)
                if (!is_word(r->s[i]))
                    return fail(r, "invalid named capture group", start, end + 1);
            for (size_t i = 0; i < r->nnames; i++)
                if (r->namelens[i] == end - name &&
                    memcmp(r->s + r->names[i], r->s + name, end - name) == 0)
                    return fail(r, "duplicate capture group name", start, end + 1);
            if (r->nnames < sizeof(r->names) / sizeof(r->names[0])) {
                r->names[r->nnames] = name;
                r->namelens[r->nnames++] = end - name;
            }
            r->pos = end + 1;
        } else if (c == 'P') {
            /* (?P=name) backreference, (?P>name) recursion */
            return fail(r, "invalid named capture group", start, r->pos + 3);
        } else {
            /* Flags: (?flags) or (?flags:re), flags from imsU, one optional '-'
             * that must be followed by a flag, at least one flag. */
            size_t p = r->pos + 1;
            int nflags = 0, neg = 0, after_neg = 0;
            while (p < r->len) {
                int f = r->s[p];
                if (f == 'i' || f == 'm' || f == 's' || f == 'U') {
                    nflags++;
                    if (neg)
                        after_neg++;
                    p++;
                    continue;
                }
                if (f == '-' && !neg) {
                    neg = 1;
                    p++;
                    continue;
                }
                break;
            }
            int term = p < r->len ? r->s[p] : -1;
            /* RE2 takes (?) and (?:...) (no flags); a '-' must negate
             * something: (?-) and (?i-) are refused */
            if ((term != ')' && term != ':') || (neg && after_neg == 0)) {
                /* (?=, (?!, (?<=, (?<!, (?<name>, (?>, (?#, (?|, ... */
                size_t to = p + 1;
                if (p == r->pos + 1 && term == '<' && p + 1 < r->len &&
                    (r->s[p + 1] == '=' || r->s[p + 1] == '!'))
                    to = p + 2;
                return fail(r, "invalid perl operator", start, to);
            }
            r->pos = p + 1;
            if (term == ')') {
                /* a bare flag group: no operand */
                out->size = 0;
                out->prod = 1;
                out->operand = 0;
                return 0;
            }
            capture = 0;
        }
    }
    if (++r->depth > RE2_MAX_DEPTH)
        return fail(r, "expression nests too deeply", 0, 0);
    struct piece in;
    if (parse_alt(r, &in) != 0)
        return -1;
    r->depth--;
    if (peek(r, 0) != ')')
        return fail(r, "missing )", start, r->len);
    r->pos++;
    out->size = in.size + (capture ? 2 : 0);
    out->prod = in.prod;
    out->operand = 1;
    return 0;
}

/* Parses {n}, {n,}, {n,m} at r->pos if it is one; returns 1 (and sets
 * lo and hi, hi = -1 for no max, and end) or 0 when the brace is a literal. */
static int parse_counted(const struct re *r, size_t pos, long *lo, long *hi, size_t *end)
{
    size_t p = pos + 1;
    long a = 0, b;
    int digits = 0;
    while (p < r->len && r->s[p] >= '0' && r->s[p] <= '9') {
        if (a < 100000)
            a = a * 10 + (r->s[p] - '0');
        p++;
        digits++;
    }
    if (!digits)
        return 0;
    if (p < r->len && r->s[p] == '}') {
        *lo = *hi = a;
        *end = p + 1;
        return 1;
    }
    if (p >= r->len || r->s[p] != ',')
        return 0;
    p++;
    if (p < r->len && r->s[p] == '}') {
        *lo = a;
        *hi = -1;
        *end = p + 1;
        return 1;
    }
    b = 0;
    digits = 0;
    while (p < r->len && r->s[p] >= '0' && r->s[p] <= '9') {
        if (b < 100000)
            b = b * 10 + (r->s[p] - '0');
        p++;
        digits++;
    }
    if (!digits || p >= r->len || r->s[p] != '}')
        return 0;
    *lo = a;
    *hi = b;
    *end = p + 1;
    return 1;
}

/* Parses repetition operators after an operand. */
static int parse_repeats(struct re *r, struct piece *pc, size_t atom_start)
{
    size_t last_op = (size_t)-1;
    (void)atom_start;
    while (1) {
        int c = peek(r, 0);
        long lo = 0, hi = 0;
        size_t end = 0;
        int counted = 0;
        if (c == '*' || c == '+' || c == '?') {
            end = r->pos + 1;
        } else if (c == '{' && parse_counted(r, r->pos, &lo, &hi, &end)) {
            counted = 1;
        } else {
            return 0;
        }
        size_t op = r->pos;
        if (end < r->len && r->s[end] == '?')
            end++; /* non-greedy */
        if (last_op != (size_t)-1)
            return fail(r, "bad repetition operator", last_op, end);
        if (!pc->operand)
            return fail(r, "no argument for repetition operator", op, end);
        if (counted) {
            if (lo > RE2_MAX_REPEAT || hi > RE2_MAX_REPEAT || (hi >= 0 && hi < lo))
                return fail(r, "invalid repetition size", op, end);
            long m = hi >= 0 ? hi : lo;
            if (m > 0) {
                long prod = pc->prod * m;
                if (prod > RE2_MAX_REPEAT)
                    return fail(r, "invalid repetition size", op, end);
                pc->prod = prod;
            }
            long copies = hi >= 0 ? hi : lo + 1;
            long size = (long)pc->size * (copies > 0 ? copies : 1) + (copies - lo);
            pc->size = size > 1000000 ? 1000000 : (int)size;
        } else {
            pc->size += 1;
        }
        r->pos = end;
        last_op = op;
    }
}

static int parse_concat(struct re *r, struct piece *out)
{
    struct piece last = {0}; /* the previous operand of this concatenation */
    int have_last = 0;
    out->size = 0;
    out->prod = 1;
    out->operand = 1;
    while (r->pos < r->len && !r->fail) {
        int c = peek(r, 0);
        if (c == '|' || c == ')')
            break;
        struct piece pc = {.size = 1, .prod = 1, .operand = 1};
        size_t atom = r->pos;
        switch (c) {
        case '(':
            if (parse_group(r, &pc) != 0)
                return -1;
            break;
        case '[':
            if (parse_class(r, &pc.size) != 0)
                return -1;
            break;
        case '\\':
            if (peek(r, 1) == 'Q') {
                /* \Q...\E: literal text */
                r->pos += 2;
                size_t n = 0;
                while (r->pos < r->len && !(peek(r, 0) == '\\' && peek(r, 1) == 'E')) {
                    uint32_t rune;
                    size_t rl = utf8_rune(r->s, r->len, r->pos, &rune);
                    if (rl == 0)
                        return fail(r, "invalid UTF-8", 0, 0);
                    r->pos += rl;
                    n++;
                }
                if (r->pos < r->len)
                    r->pos += 2;
                pc.size = n ? (int)n : 0;
                pc.operand = n > 0;
            } else {
                uint32_t rune;
                int is_rune;
                if (parse_escape(r, 0, &rune, &is_rune, &pc.size) != 0)
                    return -1;
            }
            break;
        case '*':
        case '+':
        case '?':
            pc.operand = 0; /* parse_repeats reports the missing argument */
            break;
        case '{': {
            long lo, hi;
            size_t end;
            if (parse_counted(r, r->pos, &lo, &hi, &end)) {
                pc.operand = 0;
                break;
            }
            r->pos++;
            break;
        }
        case '.':
            pc.size = 4;
            r->pos++;
            break;
        default: {
            uint32_t rune;
            size_t n = utf8_rune(r->s, r->len, r->pos, &rune);
            if (n == 0)
                return fail(r, "invalid UTF-8", 0, 0);
            pc.size = (int)n;
            r->pos += n;
        }
        }
        if (!pc.operand && (c == '(' || c == '\\') && have_last) {
            /* a flag group or an empty \Q\E pushes nothing: RE2 applies a
             * repetition after it to the operand before it ("a(?i)*") */
            struct piece again = last;
            if (parse_repeats(r, &again, atom) != 0)
                return -1;
            out->size += again.size - last.size;
            if (again.prod > out->prod)
                out->prod = again.prod;
            last = again;
            continue;
        }
        if (parse_repeats(r, &pc, atom) != 0)
            return -1;
        out->size += pc.size;
        if (pc.prod > out->prod)
            out->prod = pc.prod;
        if (pc.operand) {
            last = pc;
            have_last = 1;
        }
    }
    return r->fail ? -1 : 0;
}

static int parse_alt(struct re *r, struct piece *out)
{
    if (parse_concat(r, out) != 0)
        return -1;
    while (peek(r, 0) == '|') {
        r->pos++;
        struct piece p;
        if (parse_concat(r, &p) != 0)
            return -1;
        out->size += p.size + 1;
        if (p.prod > out->prod)
            out->prod = p.prod;
    }
    out->operand = 1;
    return 0;
}

static int run(const char *re, size_t len, char *err, size_t errlen, int *size)
{
    struct re r = {.s = (const unsigned char *)re, .len = len, .err = err, .errlen = errlen};
    if (err && errlen)
        err[0] = '\0';
    if (len == 0)
        return fail(&r, "empty regex", 0, 0);
    if (len > XLATE_RE2_MAX_LEN) {
        if (err && errlen)
            snprintf(err, errlen, "regex longer than %d bytes", XLATE_RE2_MAX_LEN);
        return -1;
    }
    if (memchr(re, '\0', len))
        return fail(&r, "invalid UTF-8", 0, 0);
    struct piece p;
    if (parse_alt(&r, &p) != 0)
        return -1;
    if (r.pos < r.len) /* only ')' stops the top level */
        return fail(&r, "unexpected )", 0, r.len);
    if (size)
        *size = p.size + 3;
    return 0;
}

int xlate_re2_check(const char *re, size_t len, char *err, size_t errlen)
{
    return run(re, len, err, errlen, NULL);
}

int xlate_re2_program_size(const char *re, size_t len)
{
    int size = 0;
    if (run(re, len, NULL, 0, &size) != 0)
        return -1;
    return size;
}

size_t xlate_re2_literal_prefix(const char *re, size_t len, char *out, size_t outlen)
{
    const unsigned char *s = (const unsigned char *)re;
    size_t o = 0, p = 0;
    /* A top-level alternation means no common prefix. */
    int depth = 0, in_class = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\\') {
            i++;
            continue;
        }
        if (in_class) {
            if (s[i] == ']')
                in_class = 0;
            continue;
        }
        if (s[i] == '[') {
            in_class = 1;
            if (i + 1 < len && s[i + 1] == ']')
                i++;
            else if (i + 2 < len && s[i + 1] == '^' && s[i + 2] == ']')
                i += 2;
        } else if (s[i] == '(') {
            depth++;
        } else if (s[i] == ')') {
            depth--;
        } else if (s[i] == '|' && depth == 0) {
            len = 0;
        }
    }
    if (outlen == 0)
        return 0;
    if (p < len && s[p] == '^')
        p++;
    while (p < len) {
        size_t q = p;
        unsigned char ch;
        if (s[q] == '\\') {
            if (q + 1 >= len || !(s[q + 1] < 0x80 && !is_word(s[q + 1])))
                break; /* only escaped punctuation is a plain literal */
            ch = s[q + 1];
            q += 2;
        } else if (strchr(".[](){}*+?|^$", s[q])) {
            break;
        } else {
            ch = s[q];
            q++;
        }
        /* a quantified literal is optional or repeated: stop before it */
        if (q < len && strchr("*+?{", s[q]))
            break;
        if (o + 1 >= outlen)
            break;
        out[o++] = (char)ch;
        p = q;
    }
    out[o] = '\0';
    return o;
}
