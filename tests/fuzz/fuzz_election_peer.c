/* Fuzz target: the bytes a standby reads from the holder's peer endpoint
 * (election_peer.h), which anyone who can reach that address may send.
 * The greeting is fed whole and in pieces cut where the input says: both
 * give the same line and the same identity. An identity is only ever read
 * from a well-formed greeting (magic, leader|standby, a decimal term),
 * printable, non-empty and under ELECTION_IDENTITY_MAX, and the line is
 * exactly the greeting a replica of that identity sends; the line never
 * overruns its buffer. */
#include "election_peer.h"
#include "election_types.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define LINE_CAP (ELECTION_IDENTITY_MAX + 64) /* PEER_LINE_MAX */

struct fed {
    int got;
    size_t len;
    char line[LINE_CAP];
};

static void feed(const char *d, size_t n, size_t cut1, size_t cut2, struct fed *f)
{
    memset(f, 0, sizeof(*f));
    size_t cuts[] = {0, cut1, cut2, n};
    for (int i = 0; i < 3; i++) {
        f->got = election_peer_line_feed(f->line, sizeof(f->line), &f->len, d + cuts[i],
                                         cuts[i + 1] - cuts[i]);
        if (f->len >= sizeof(f->line))
            abort();
        if (f->got != 0)
            break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    const char *d = (const char *)data + 2;
    size_t n = size - 2;
    size_t c1 = n ? data[0] % (n + 1) : 0;
    size_t c2 = n ? data[1] % (n + 1) : 0;
    if (c1 > c2) {
        size_t t = c1;
        c1 = c2;
        c2 = t;
    }
    struct fed whole, split;
    feed(d, n, 0, 0, &whole);
    feed(d, n, c1, c2, &split);
    if (whole.got != split.got || whole.len != split.len ||
        (whole.got == 1 && memcmp(whole.line, split.line, whole.len + 1) != 0))
        abort();
    if (whole.got != 1)
        return 0;
    if (strlen(whole.line) != whole.len && election_peer_greeting_identity(whole.line, whole.len))
        abort(); /* a NUL inside: garbled */
    const char *id = election_peer_greeting_identity(whole.line, whole.len);
    if (!id)
        return 0;
    size_t il = strlen(id);
    if (il == 0 || il >= ELECTION_IDENTITY_MAX || id + il != whole.line + whole.len)
        abort();
    for (size_t i = 0; i < il; i++)
        if ((unsigned char)id[i] < 0x20 || id[i] == 0x7f)
            abort();
    /* Exactly what a replica of that identity sends in one of the roles. */
    const char *role = whole.line + strlen("coxswain-peer/1 ");
    const char *rend = strchr(role, ' ');
    if (!rend || (strncmp(role, "leader ", 7) != 0 && strncmp(role, "standby ", 8) != 0))
        abort();
    const char *term = rend + 1;
    size_t tl = (size_t)(id - 1 - term);
    if (id[-1] != ' ' || tl == 0 || tl > 20 || strspn(term, "0123456789") != tl)
        abort();
    char g[LINE_CAP + 32];
    int gl = snprintf(g, sizeof(g), "coxswain-peer/1 %.*s %.*s %s", (int)(rend - role), role,
                      (int)tl, term, id);
    if (gl < 0 || strcmp(g, whole.line) != 0)
        abort();
    return 0;
}
