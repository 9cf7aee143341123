#include "publish_encode.h"

#include "cx_buf.h"
#include "cx_hash.h"
#include "cx_json.h"
#include "cx_list.h"
#include "xlate_pbjson.h"
#include "xlate_render.h"
#include "xlate_snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* Rendered JSON is fed to deflate in chunks of about this size. */
#define ENC_CHUNK (64 * 1024)

void publish_group_version(const struct xlate_group *g, char out[XDS_VERSION_LEN + 1])
{
    char buf[16 + XDS_TYPE_COUNT * (XDS_VERSION_LEN + 1)];
    size_t off = (size_t)snprintf(buf, sizeof(buf), "%s",
                                  g->mode == XLATE_MODE_PROXYLESS ? "proxyless" : "envoy");
    for (int t = 0; t < XDS_TYPE_COUNT; t++)
        if (xlate_group_type_shown(g, t))
            off += (size_t)snprintf(buf + off, sizeof(buf) - off, "/%s", g->types[t].version);
    cx_sha256_hex(buf, off, out, XDS_VERSION_LEN);
}

/* ---- streaming render + deflate ------------------------------------------------ */

/* The JSON goes through |json| (a small window) into deflate, whose output
 * may not pass |cap| compressed bytes. */
struct enc {
    z_stream zs;
    struct cx_buf json;
    unsigned char *out;
    size_t cap; /* compressed bytes allowed */
    size_t total_json;
    int over; /* the compressed output passed the cap */
    int failed;
};

static int enc_drain(struct enc *e, int flush)
{
    if (e->over || e->failed)
        return -1;
    e->zs.next_in = (Bytef *)(e->json.data ? e->json.data : "");
    e->zs.avail_in = (uInt)e->json.len;
    e->total_json += e->json.len;
    for (;;) {
        size_t used = e->zs.total_out;
        if (used >= e->cap) {
            e->over = 1; /* the output filled the cap: it cannot fit */
            return -1;
        }
        e->zs.next_out = e->out + used;
        e->zs.avail_out = (uInt)(e->cap - used);
        int rc = deflate(&e->zs, flush);
        if (rc == Z_STREAM_ERROR) {
            e->failed = 1;
            return -1;
        }
        if (flush == Z_FINISH ? rc == Z_STREAM_END : (e->zs.avail_in == 0 && e->zs.avail_out > 0))
            break;
    }
    cx_buf_reset(&e->json);
    return 0;
}

static int enc_maybe_drain(struct enc *e)
{
    return e->json.len >= ENC_CHUNK ? enc_drain(e, Z_NO_FLUSH) : 0;
}

/* The bytes xlate_render_groups() writes for a snapshot holding |g| alone
 * (version: the group's), produced piecewise. */
static int render_stream(struct enc *e, const struct xlate_group *g, const char *version)
{
    struct cx_buf *out = &e->json;
    int rc = cx_buf_puts(out, "{");
    rc |= xlate_render_kv_str(out, 1, "version", version, 0);
    rc |= xlate_render_indent(out, 1);
    rc |= cx_buf_puts(out, "\"groups\": [");
    rc |= xlate_render_indent(out, 2);
    rc |= cx_buf_puts(out, "{");
    rc |= xlate_render_kv_str(out, 3, "name", g->name, 0);
    rc |= xlate_render_kv_str(out, 3, "mode",
                              g->mode == XLATE_MODE_PROXYLESS ? "proxyless" : "envoy", 0);
    for (int t = 0; t < XDS_TYPE_COUNT && rc == 0; t++) {
        const struct xds_resource_set *set = &g->types[t];
        if (!xlate_group_type_shown(g, t))
            continue;
        rc |= xlate_render_indent(out, 3);
        rc |= cx_json_escape(out, xlate_render_type_keys[t]);
        rc |= cx_buf_puts(out, ": {");
        rc |= xlate_render_kv_str(out, 4, "version", set->version, 0);
        rc |= xlate_render_indent(out, 4);
        rc |= cx_buf_puts(out, "\"resources\": [");
        for (size_t i = 0; i < set->n && rc == 0; i++) {
            rc |= cx_buf_puts(out, i ? "," : "");
            rc |= xlate_render_indent(out, 5);
            if (rc)
                break;
            rc = xlate_pbjson_render_any(xlate_type_url((enum xds_type)t), set->items[i]->bytes,
                                         set->items[i]->len,
                                         XLATE_PBJSON_PRETTY | XLATE_PBJSON_INDENT(5), out);
            if (rc == 0)
                rc = enc_maybe_drain(e);
        }
        if (set->n)
            rc |= xlate_render_indent(out, 4);
        rc |= cx_buf_puts(out, "]");
        rc |= xlate_render_indent(out, 3);
        rc |= cx_buf_puts(out, t < xlate_group_last_type(g) ? "}," : "}");
    }
    rc |= xlate_render_indent(out, 2);
    rc |= cx_buf_puts(out, "}");
    rc |= xlate_render_indent(out, 1);
    rc |= cx_buf_puts(out, "]");
    rc |= xlate_render_indent(out, 0);
    rc |= cx_buf_puts(out, "}");
    return rc ? -1 : 0;
}

int publish_encode(const struct xlate_group *g, size_t max_bytes, char **b64, int *truncated,
                   size_t *json_bytes)
{
    *b64 = NULL;
    *truncated = 0;
    *json_bytes = 0;
    /* base64 turns 3 bytes into 4: the compressed bytes that fit. */
    size_t cap = max_bytes / 4 * 3;
    if (cap == 0) {
        *truncated = 1;
        return 0;
    }
    struct enc e;
    memset(&e, 0, sizeof(e));
    cx_buf_init(&e.json, 16 << 20); /* one resource's JSON at most, drained often */
    e.cap = cap;
    e.out = malloc(cap);
    int rc = -1;
    if (!e.out ||
        deflateInit2(&e.zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(e.out);
        cx_buf_free(&e.json);
        return -1;
    }
    char version[XDS_VERSION_LEN + 1];
    publish_group_version(g, version);
    int r = render_stream(&e, g, version);
    if (r == 0)
        r = enc_drain(&e, Z_FINISH);
    if (e.over) {
        *truncated = 1; /* does not fit: no snapshot */
        rc = 0;
    } else if (r == 0 && !e.failed) {
        size_t gzlen = e.zs.total_out;
        size_t n = 4 * ((gzlen + 2) / 3);
        char *s = n <= max_bytes ? malloc(n + 1) : NULL;
        if (n > max_bytes) {
            *truncated = 1;
            rc = 0;
        } else if (s) {
            EVP_EncodeBlock((unsigned char *)s, e.out, (int)gzlen);
            s[n] = '\0';
            *b64 = s;
            *json_bytes = e.total_json;
            rc = 0;
        }
    }
    deflateEnd(&e.zs);
    free(e.out);
    cx_buf_free(&e.json);
    return rc;
}

void publish_blob_free(struct publish_blob *b)
{
    if (!b)
        return;
    free(b->b64);
    free(b);
}

/* ---- the encoder thread ----------------------------------------------------------- */

struct enc_job {
    struct cx_list link;
    struct xlate_snapshot *snap; /* one reference */
    char group[PUBLISH_NAME_MAX];
    char name[PUBLISH_NAME_MAX];
    char version[XDS_VERSION_LEN + 1];
};

struct enc_done {
    struct cx_list link;
    struct publish_blob *blob;
};

struct publish_encoder {
    struct event_base *base;
    size_t max_bytes;
    publish_encoded_fn cb;
    void *user;
    pthread_t thread;
    int started;
    int pipe_rd, pipe_wr;
    struct event *wake;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    struct cx_list jobs; /* FIFO of struct enc_job */
    struct cx_list done; /* FIFO of struct enc_done */
};

static void *enc_main(void *arg)
{
    struct publish_encoder *e = arg;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        while (!e->stop && cx_list_empty(&e->jobs))
            pthread_cond_wait(&e->cv, &e->mu);
        if (e->stop)
            break;
        struct enc_job *j = cx_list_entry(cx_list_pop(&e->jobs), struct enc_job, link);
        pthread_mutex_unlock(&e->mu);

        struct publish_blob *b = calloc(1, sizeof(*b));
        struct enc_done *d = calloc(1, sizeof(*d));
        if (b && d) {
            snprintf(b->name, sizeof(b->name), "%s", j->name);
            snprintf(b->version, sizeof(b->version), "%s", j->version);
            const struct xlate_group *g = xlate_snapshot_group(j->snap, j->group);
            if (!g || publish_encode(g, e->max_bytes, &b->b64, &b->truncated, &b->json_bytes) != 0)
                b->failed = 1;
            d->blob = b;
        } else {
            free(b);
            free(d);
            d = NULL;
        }
        xlate_snapshot_unref(j->snap);
        free(j);

        pthread_mutex_lock(&e->mu);
        if (d)
            cx_list_append(&e->done, &d->link);
        pthread_mutex_unlock(&e->mu);
        char c = 1;
        ssize_t w;
        do
            w = write(e->pipe_wr, &c, 1);
        while (w < 0 && errno == EINTR);
        pthread_mutex_lock(&e->mu);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct publish_encoder *e = arg;
    char buf[64];
    while (read(fd, buf, sizeof(buf)) > 0) {
    }
    struct cx_list done;
    pthread_mutex_lock(&e->mu);
    cx_list_take_all(&done, &e->done);
    pthread_mutex_unlock(&e->mu);
    struct cx_list *l;
    while ((l = cx_list_pop(&done))) {
        struct enc_done *d = cx_list_entry(l, struct enc_done, link);
        e->cb(e->user, d->blob);
        free(d);
    }
}

struct publish_encoder *publish_encoder_new(struct event_base *base, size_t max_bytes,
                                            publish_encoded_fn cb, void *user)
{
    struct publish_encoder *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->base = base;
    e->max_bytes = max_bytes;
    e->cb = cb;
    e->user = user;
    e->pipe_rd = e->pipe_wr = -1;
    cx_list_init(&e->jobs);
    cx_list_init(&e->done);
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0)
        goto fail;
    e->pipe_rd = p[0];
    e->pipe_wr = p[1];
    e->wake = event_new(base, e->pipe_rd, EV_READ | EV_PERSIST, on_wake, e);
    if (!e->wake || event_add(e->wake, NULL) != 0)
        goto fail;
    if (pthread_create(&e->thread, NULL, enc_main, e) != 0)
        goto fail;
    e->started = 1;
    return e;
fail:
    publish_encoder_free(e);
    return NULL;
}

int publish_encoder_submit(struct publish_encoder *e, struct xlate_snapshot *snap,
                           const char *group, const char *name, const char *version)
{
    pthread_mutex_lock(&e->mu);
    struct cx_list *l;
    cx_list_for_each (l, &e->jobs) {
        struct enc_job *j = cx_list_entry(l, struct enc_job, link);
        if (strcmp(j->name, name) != 0)
            continue;
        /* Not started yet: encode the newer one instead. */
        xlate_snapshot_unref(j->snap);
        j->snap = xlate_snapshot_ref(snap);
        snprintf(j->group, sizeof(j->group), "%s", group);
        snprintf(j->version, sizeof(j->version), "%s", version);
        pthread_mutex_unlock(&e->mu);
        return 0;
    }
    pthread_mutex_unlock(&e->mu);
    struct enc_job *j = calloc(1, sizeof(*j));
    if (!j)
        return -1;
    j->snap = xlate_snapshot_ref(snap);
    snprintf(j->group, sizeof(j->group), "%s", group);
    snprintf(j->name, sizeof(j->name), "%s", name);
    snprintf(j->version, sizeof(j->version), "%s", version);
    pthread_mutex_lock(&e->mu);
    cx_list_append(&e->jobs, &j->link);
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    return 0;
}

void publish_encoder_free(struct publish_encoder *e)
{
    if (!e)
        return;
    if (e->started) {
        pthread_mutex_lock(&e->mu);
        e->stop = 1;
        pthread_cond_signal(&e->cv);
        pthread_mutex_unlock(&e->mu);
        pthread_join(e->thread, NULL);
    }
    struct cx_list *l;
    while ((l = cx_list_pop(&e->jobs))) {
        struct enc_job *j = cx_list_entry(l, struct enc_job, link);
        xlate_snapshot_unref(j->snap);
        free(j);
    }
    while ((l = cx_list_pop(&e->done))) {
        struct enc_done *d = cx_list_entry(l, struct enc_done, link);
        publish_blob_free(d->blob);
        free(d);
    }
    if (e->wake)
        event_free(e->wake);
    if (e->pipe_rd >= 0)
        close(e->pipe_rd);
    if (e->pipe_wr >= 0)
        close(e->pipe_wr);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    free(e);
}
