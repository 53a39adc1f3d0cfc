/* `ckey serve`: the render button (serve.h). A render is this same ckey run as a child, `ckey key --json` on the
 * whole shot with the page's settings, so the server never shares the CLI's internals: its stdout (one JSON
 * event per line) is kept whole and streamed to any number of pages as Server-Sent Events, its stderr goes to
 * the server's. Cancel is SIGTERM: the child finishes the frames already keyed, removes unfinished videos,
 * emits its `cancelled` event and exits 143. One render at a time per server; a second is refused (409).
 * After the child's own events the server adds {"event": "exited", "exit_code": N} (and the last line of its
 * stderr when it ended without an event saying why, e.g. a bad option). */
#define _GNU_SOURCE /* pipe2 */
#include "serve.h"

#include "key.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum { EVENTS_MAX = 64 << 20, KEEPALIVE_S = 10 };

struct sv_render {
    pthread_mutex_t mu;
    pthread_cond_t  cv;      /* new events, the end of a render, a stop */
    int             running; /* a child is alive (or its events are still being read) */
    int             threads; /* reader threads alive */
    pid_t           pid;
    int             shot, exit_code, started;
    uint32_t        gen;     /* renders so far: a stream follows one */
    char           *ev;      /* this render's events, as the stream sends them ("data: {...}\n\n") */
    size_t          ev_len, ev_cap;
    int             done, stopping, saw_end;
    char            last_err[512];
    int             out_fd, err_fd;
};

sv_render *sv_render_new(void) {
    sv_render *rd = calloc(1, sizeof *rd);
    if (!rd) return NULL;
    pthread_mutex_init(&rd->mu, NULL);
    pthread_cond_init(&rd->cv, NULL);
    rd->exit_code = -1;
    return rd;
}

/* Appends one event line (under mu). */
static void add_event(sv_render *rd, const char *line, size_t n) {
    if (rd->ev_len + n + 9 > EVENTS_MAX) return; /* a pathological shot; the page keeps the last state it saw */
    if (rd->ev_len + n + 9 > rd->ev_cap) {
        size_t cap = rd->ev_cap ? rd->ev_cap : 4096;
        while (cap < rd->ev_len + n + 9) cap *= 2;
        char *e = realloc(rd->ev, cap);
        if (!e) return;
        rd->ev = e, rd->ev_cap = cap;
    }
    memcpy(rd->ev + rd->ev_len, "data: ", 6);
    memcpy(rd->ev + rd->ev_len + 6, line, n);
    memcpy(rd->ev + rd->ev_len + 6 + n, "\n\n", 2);
    rd->ev_len += n + 8;
    if (strstr(line, "\"event\": \"completed\"") || strstr(line, "\"event\": \"failed\"") ||
        strstr(line, "\"event\": \"cancelled\""))
        rd->saw_end = 1;
    pthread_cond_broadcast(&rd->cv);
}

static void *err_reader(void *arg) {
    sv_render *rd = arg;
    char       buf[4096], line[512];
    size_t     ll = 0;
    ssize_t    k;
    while ((k = read(rd->err_fd, buf, sizeof buf)) > 0 || (k < 0 && errno == EINTR)) {
        if (k < 0) continue;
        fwrite(buf, 1, (size_t)k, stderr); /* the child's messages, as a terminal would show them */
        for (ssize_t i = 0; i < k; i++) {
            if (buf[i] == '\n') {
                line[ll] = '\0';
                if (ll) {
                    pthread_mutex_lock(&rd->mu);
                    snprintf(rd->last_err, sizeof rd->last_err, "%s", line);
                    pthread_mutex_unlock(&rd->mu);
                }
                ll = 0;
            } else if (ll + 1 < sizeof line) {
                line[ll++] = buf[i];
            }
        }
    }
    close(rd->err_fd);
    return NULL;
}

/* Reads the child's events until it closes stdout, then waits for it and adds the exit event. */
static void *out_reader(void *arg) {
    sv_render *rd = arg;
    pthread_t  et;
    const int  have_err = pthread_create(&et, NULL, err_reader, rd) == 0;
    FILE      *f        = fdopen(rd->out_fd, "r");
    char      *line     = NULL;
    size_t     cap      = 0;
    ssize_t    n;
    while (f && (n = getline(&line, &cap, f)) > 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
        if (n == 0 || line[0] != '{') continue; /* only JSON objects are events */
        pthread_mutex_lock(&rd->mu);
        add_event(rd, line, (size_t)n);
        pthread_mutex_unlock(&rd->mu);
    }
    free(line);
    if (f) fclose(f);
    else close(rd->out_fd);
    if (have_err) pthread_join(et, NULL);
    int status = 0;
    while (waitpid(rd->pid, &status, 0) < 0 && errno == EINTR) {}
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
    char     *text = NULL;
    size_t    len  = 0;
    FILE     *m    = open_memstream(&text, &len);
    pthread_mutex_lock(&rd->mu);
    if (m) {
        fprintf(m, "{\"event\": \"exited\", \"exit_code\": %d", code);
        if (code != 0 && !rd->saw_end) {
            fprintf(m, ", \"message\": ");
            sv_json_str(m, rd->last_err);
        }
        fprintf(m, "}");
        fclose(m);
        add_event(rd, text, len);
    }
    free(text);
    rd->exit_code = code, rd->running = 0, rd->done = 1, rd->threads--;
    pthread_cond_broadcast(&rd->cv);
    pthread_mutex_unlock(&rd->mu);
    return NULL;
}

/* argv of `ckey key` for the shot with these settings (strings in store, n_store bytes each) */
static int render_argv(const sv_server *s, const sv_shot *sh, const sv_settings *t, char **argv, char store[][64]) {
    static const char *prec[] = {"fp32", "bf16", "fp16", "auto"};
    static const char *dev[]  = {"auto", "cpu", "cuda"};
    const ck_params   *p      = &s->o.k.p;
    int                n = 0, k = 0;
#define ARG(v) (argv[n++] = (char *)(v))
#define NUM(fmt, v) (snprintf(store[k], 64, fmt, v), argv[n++] = store[k++])
    ARG(s->exe), ARG("key"), ARG("--image"), ARG(sh->input);
    if (sh->hint[0]) ARG("--hint"), ARG(sh->hint);
    ARG("--out"), ARG(sh->out), ARG("--json"), ARG("--checkpoint"), ARG(s->ckpt);
    ARG("--size"), NUM("%d", t->size);
    if (t->tile) ARG("--tile"), NUM("%d", t->tile), ARG("--overlap"), NUM("%d", t->overlap);
    ARG("--precision"), ARG(prec[t->precision & 3]), ARG("--device"), ARG(dev[p->device % 3]);
    ARG("--despill"), NUM("%.9g", t->despill), ARG(t->despeckle ? "--despeckle" : "--no-despeckle");
    ARG("--despeckle-size"), NUM("%d", t->despeckle_size), ARG("--refiner-scale"), NUM("%.9g", t->refiner_scale);
    if (p->threads) ARG("--threads"), NUM("%d", p->threads);
    if (p->head_dim) ARG("--head-dim"), NUM("%d", p->head_dim);
    if (p->colorspace != CK_CS_DEFAULT) ARG("--colorspace"), ARG(ck_colorspace_name((ck_colorspace)p->colorspace));
    else if (p->input_is_linear) ARG("--linear");
    if (p->keep_highlights) ARG("--keep-highlights");
    argv[n] = NULL;
#undef ARG
#undef NUM
    return n;
}

int sv_handle_render(sv_server *s, const sv_req *q, sv_resp *r) {
    char why[700];
    if (sv_req_only(q, "shot," SV_SETTINGS_KEYS, why, sizeof why)) return sv_error(r, 400, "%s", why);
    sv_shot *sh = sv_shot_of(s, q, NULL, r);
    if (!sh) return r->status;
    sv_settings t = s->defaults;
    if (sv_settings_from_query(q, &t, why, sizeof why)) return sv_error(r, 400, "%s", why);
    char *argv[48], store[16][64];
    render_argv(s, sh, &t, argv, store);
    sv_render *rd = s->render;
    pthread_mutex_lock(&rd->mu);
    if (rd->running || rd->threads) {
        pthread_mutex_unlock(&rd->mu);
        return sv_error(r, 409, "a render is running (one at a time; cancel it first)");
    }
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0) {
        pthread_mutex_unlock(&rd->mu);
        return sv_error(r, 500, "pipe: %s", strerror(errno));
    }
    if (pipe2(err, O_CLOEXEC) != 0) {
        close(out[0]), close(out[1]);
        pthread_mutex_unlock(&rd->mu);
        return sv_error(r, 500, "pipe: %s", strerror(errno));
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t          at;
    sigset_t                   none, def;
    sigemptyset(&none), sigemptyset(&def);
    sigaddset(&def, SIGINT), sigaddset(&def, SIGTERM), sigaddset(&def, SIGPIPE);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    posix_spawnattr_init(&at);
    /* the server blocks SIGINT / SIGTERM for sigwait and ignores SIGPIPE: the child gets the defaults back, so
     * that cancel (SIGTERM) reaches ckey key's own handler */
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &def);
    pid_t     pid = 0;
    const int se  = posix_spawn(&pid, s->exe, &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa), posix_spawnattr_destroy(&at);
    close(out[1]), close(err[1]);
    if (se != 0) {
        close(out[0]), close(err[0]);
        pthread_mutex_unlock(&rd->mu);
        return sv_error(r, 500, "cannot start %s: %s", s->exe, strerror(se));
    }
    rd->gen++, rd->ev_len = 0, rd->done = 0, rd->saw_end = 0, rd->last_err[0] = '\0';
    rd->pid = pid, rd->shot = (int)(sh - s->shots), rd->exit_code = -1, rd->running = 1, rd->started = 1;
    rd->out_fd = out[0], rd->err_fd = err[0];
    /* the command line first, so that the page can show what runs (and a farm can run the same) */
    char  *text = NULL;
    size_t len  = 0;
    FILE  *m    = open_memstream(&text, &len);
    if (m) {
        fprintf(m, "{\"event\": \"render\", \"shot\": %d, \"pid\": %d, \"out\": ", rd->shot, (int)pid);
        sv_json_str(m, sh->out);
        fprintf(m, ", \"argv\": [");
        for (int i = 0; argv[i]; i++) {
            fprintf(m, "%s", i ? ", " : "");
            sv_json_str(m, argv[i]);
        }
        fprintf(m, "]}");
        fclose(m);
        add_event(rd, text, len);
    }
    free(text);
    pthread_t      th;
    pthread_attr_t ta;
    pthread_attr_init(&ta);
    pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
    rd->threads++;
    if (pthread_create(&th, &ta, out_reader, rd) != 0) { /* nobody would read it: stop the child */
        rd->threads--;
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(out[0]), close(err[0]);
        rd->running = 0, rd->done = 1;
        pthread_attr_destroy(&ta);
        pthread_mutex_unlock(&rd->mu);
        return sv_error(r, 500, "cannot start the render's reader thread");
    }
    pthread_attr_destroy(&ta);
    text = NULL, len = 0;
    m    = open_memstream(&text, &len);
    fprintf(m, "{\"started\": true, \"pid\": %d, \"shot\": %d, \"out\": ", (int)pid, rd->shot);
    sv_json_str(m, sh->out);
    fprintf(m, "}\n");
    fclose(m);
    pthread_mutex_unlock(&rd->mu);
    sv_json(r, text, len);
    r->status = 202;
    return 202;
}

int sv_handle_cancel(sv_server *s, const sv_req *q, sv_resp *r) {
    char why[200];
    if (sv_req_only(q, "", why, sizeof why)) return sv_error(r, 400, "%s", why);
    sv_render *rd = s->render;
    pthread_mutex_lock(&rd->mu);
    const int running = rd->running;
    if (running) kill(rd->pid, SIGTERM);
    pthread_mutex_unlock(&rd->mu);
    if (!running) return sv_error(r, 409, "no render is running");
    char *text = strdup("{\"cancelling\": true}\n");
    sv_json(r, text, text ? strlen(text) : 0);
    r->status = 202;
    return 202;
}

void sv_render_describe(sv_render *rd, FILE *f) {
    pthread_mutex_lock(&rd->mu);
    fprintf(f, "{\"started\": %s, \"running\": %s, \"shot\": %d, \"exit_code\": %d, \"events_bytes\": %zu}",
            rd->started ? "true" : "false", rd->running ? "true" : "false", rd->started ? rd->shot : -1,
            rd->exit_code, rd->ev_len);
    pthread_mutex_unlock(&rd->mu);
}

long sv_render_events(sv_render *rd, uint64_t *pos, char *buf, size_t max) {
    pthread_mutex_lock(&rd->mu);
    uint32_t gen = (uint32_t)(*pos >> 32);
    size_t   off = (size_t)(*pos & 0xffffffffu);
    if (gen == 0) gen = rd->gen, off = 0; /* a new stream follows the latest render from its first event */
    long n = -1;
    for (;;) {
        if (rd->stopping || gen != rd->gen || gen == 0) break;
        if (off < rd->ev_len) {
            n = (long)(rd->ev_len - off < max ? rd->ev_len - off : max);
            memcpy(buf, rd->ev + off, (size_t)n);
            off += (size_t)n;
            break;
        }
        if (rd->done) break;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += KEEPALIVE_S;
        if (pthread_cond_timedwait(&rd->cv, &rd->mu, &until) == ETIMEDOUT) {
            /* a comment line: proxies and the browser keep the connection, and a page gone is noticed */
            n = snprintf(buf, max, ": keep-alive\n\n");
            break;
        }
    }
    *pos = (uint64_t)gen << 32 | off;
    pthread_mutex_unlock(&rd->mu);
    return n;
}

void sv_render_stop_streams(sv_render *rd) {
    pthread_mutex_lock(&rd->mu);
    rd->stopping = 1;
    pthread_cond_broadcast(&rd->cv);
    pthread_mutex_unlock(&rd->mu);
}

void sv_render_free(sv_render *rd) {
    if (!rd) return;
    pthread_mutex_lock(&rd->mu);
    if (rd->running) {
        fprintf(stderr, "ckey: cancelling the render (pid %d)\n", (int)rd->pid);
        kill(rd->pid, SIGTERM); /* it writes the frames already keyed, then exits */
    }
    while (rd->threads) pthread_cond_wait(&rd->cv, &rd->mu);
    pthread_mutex_unlock(&rd->mu);
    pthread_cond_destroy(&rd->cv), pthread_mutex_destroy(&rd->mu);
    free(rd->ev);
    free(rd);
}
