#include "xdsp.h"

#include "cx_buf.h"
#include "xdsc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct xdsp {
    pid_t pid;
    int in_fd;  /* child's stdin */
    int out_fd; /* child's stdout */
    struct cx_buf buf;
    int eof;
};

struct xdsp *xdsp_spawn(char *const argv[], char *const env[])
{
    int in[2], out[2];
    if (pipe(in) != 0)
        return NULL;
    if (pipe(out) != 0) {
        close(in[0]);
        close(in[1]);
        return NULL;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        return NULL;
    }
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        for (size_t i = 0; env && env[i]; i++)
            putenv(env[i]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
    fcntl(out[0], F_SETFD, FD_CLOEXEC);
    fcntl(in[1], F_SETFD, FD_CLOEXEC);
    struct xdsp *p = calloc(1, sizeof(*p));
    if (!p) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(in[1]);
        close(out[0]);
        return NULL;
    }
    p->pid = pid;
    p->in_fd = in[1];
    p->out_fd = out[0];
    cx_buf_init(&p->buf, 1 << 20);
    return p;
}

int xdsp_send(struct xdsp *p, const char *line)
{
    size_t n = strlen(line);
    struct cx_buf b;
    cx_buf_init(&b, 0);
    if (cx_buf_append(&b, line, n) != 0 || cx_buf_append(&b, "\n", 1) != 0) {
        cx_buf_free(&b);
        return -1;
    }
    size_t off = 0;
    while (off < b.len) {
        ssize_t w = write(p->in_fd, b.data + off, b.len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            cx_buf_free(&b);
            return -1;
        }
        off += (size_t)w;
    }
    cx_buf_free(&b);
    return 0;
}

/* Reads what is available; 1 when a line is buffered. */
static int fill(void *arg)
{
    struct xdsp *p = arg;
    char tmp[4096];
    for (;;) {
        ssize_t r = read(p->out_fd, tmp, sizeof(tmp));
        if (r > 0) {
            if (cx_buf_append(&p->buf, tmp, (size_t)r) != 0)
                return 1;
            continue;
        }
        if (r == 0)
            p->eof = 1;
        break;
    }
    return (p->buf.len && memchr(p->buf.data, '\n', p->buf.len)) || p->eof;
}

int xdsp_readline(struct xdsp *p, struct event_base *base, char *out, size_t cap, int timeout_ms)
{
    if (!cxt_loop_until(base, fill, p, timeout_ms))
        return 0;
    char *nl = p->buf.len ? memchr(p->buf.data, '\n', p->buf.len) : NULL;
    if (!nl)
        return -1;
    size_t n = (size_t)(nl - p->buf.data);
    size_t c = n < cap - 1 ? n : cap - 1;
    memcpy(out, p->buf.data, c);
    out[c] = '\0';
    cx_buf_consume(&p->buf, n + 1);
    return 1;
}

int xdsp_stop(struct xdsp *p)
{
    if (!p)
        return -1;
    close(p->in_fd);
    int status = -1;
    for (int i = 0; i < 200; i++) {
        pid_t r = waitpid(p->pid, &status, WNOHANG);
        if (r == p->pid)
            goto out;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    kill(p->pid, SIGKILL);
    waitpid(p->pid, &status, 0);
out:
    close(p->out_fd);
    cx_buf_free(&p->buf);
    free(p);
    return status;
}
