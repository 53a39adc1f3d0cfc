/* `ckey serve`: finds the shots, makes the token, runs the daemon until SIGINT / SIGTERM (serve.h). */
#define _GNU_SOURCE /* nftw */
#include "serve.h"

#include "cli.h"
#include "key.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

int sv_error(sv_resp *r, int status, const char *fmt, ...) {
    char    msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char  *text = NULL;
    size_t len  = 0;
    FILE  *f    = open_memstream(&text, &len);
    if (f) {
        fprintf(f, "{\"error\": ");
        sv_json_str(f, msg);
        fprintf(f, ", \"status\": %d}\n", status);
        fclose(f);
    }
    sv_json(r, text, len);
    r->status = status;
    return status;
}

void sv_json(sv_resp *r, char *text, size_t len) {
    r->status = 200, r->type = "application/json", r->body = (unsigned char *)text, r->len = text ? len : 0;
}

void sv_json_str(FILE *f, const char *s) { ck_cli_json_str(f, s); }

sv_shot *sv_shot_of(sv_server *s, const sv_req *q, long *frame, sv_resp *r) {
    char why[160];
    long shot = -1;
    if (!sv_query(q, "shot")) shot = 0; /* one shot: no need to name it */
    if (sv_query_int(q, "shot", 0, s->nshots - 1, &shot, why, sizeof why) || shot < 0) {
        sv_error(r, 404, "no such shot (%s)", sv_query(q, "shot") ? why : "give shot=N");
        return NULL;
    }
    sv_shot *sh = &s->shots[shot];
    if (frame) {
        if (!sv_query(q, "frame")) {
            sv_error(r, 400, "give frame=N (0 to %d)", sh->frames.n - 1);
            return NULL;
        }
        if (sv_query_int(q, "frame", 0, sh->frames.n - 1, frame, why, sizeof why)) {
            sv_error(r, 404, "no such frame: %s", why);
            return NULL;
        }
    }
    return sh;
}

/* ---- shots ---- */

static int dir_exists(const char *p) { return is_dir(p); }

/* A shot at dir: CorridorKey's clip layout (Input/, AlphaHint/, Output/) or ckey plates' (Plate/, AlphaHint/).
 * 0 when dir is not a shot; -1 (with a message) when it is one that cannot be served. */
static int shot_at(const char *dir, sv_shot *sh) {
    memset(sh, 0, sizeof *sh);
    char in[PATH_MAX + 16];
    if (!realpath(dir, sh->root)) return 0;
    snprintf(in, sizeof in, "%s/Input", sh->root);
    if (!dir_exists(in)) snprintf(in, sizeof in, "%s/Plate", sh->root);
    if (!dir_exists(in)) {
        char     probe[PATH_MAX + 16];
        snprintf(probe, sizeof probe, "%s/Input.mp4", sh->root);
        if (file_exists(probe) || (snprintf(probe, sizeof probe, "%s/Input.mov", sh->root), file_exists(probe))) {
            fprintf(stderr, "ckey: %s: video clips are not served (the scrubber needs frames); key it with ckey clip\n",
                    dir);
            return -1;
        }
        return 0;
    }
    snprintf(sh->input, sizeof sh->input, "%s", in);
    snprintf(sh->hint, sizeof sh->hint, "%s/AlphaHint", sh->root);
    if (!dir_exists(sh->hint)) snprintf(sh->hint, sizeof sh->hint, "%s/alphahint", sh->root);
    if (!dir_exists(sh->hint)) sh->hint[0] = '\0';
    snprintf(sh->out, sizeof sh->out, "%s/Output", sh->root);
    const char *base = strrchr(sh->root, '/');
    snprintf(sh->name, sizeof sh->name, "%.255s", base && base[1] ? base + 1 : sh->root);
    ck_err err = {{0}};
    if (ck_seq_list(&sh->frames, sh->input, &err) != CK_OK) return -1;
    if (sh->frames.n == 0) {
        fprintf(stderr, "ckey: %s: no frames in %s\n", dir, sh->input);
        ck_seq_free(&sh->frames);
        return -1;
    }
    if (sh->hint[0] && (ck_seq_list(&sh->hints, sh->hint, &err) != CK_OK || sh->hints.n != sh->frames.n)) {
        fprintf(stderr, "ckey: %s: %d frames but %d hints in %s (they are paired by position)\n", dir, sh->frames.n,
                sh->hints.n, sh->hint);
        ck_seq_free(&sh->frames), ck_seq_free(&sh->hints);
        return -1;
    }
    return 1;
}

static int add_shot(sv_server *s, const sv_shot *sh) {
    sv_shot *n = realloc(s->shots, sizeof *n * (size_t)(s->nshots + 1));
    if (!n) return 0;
    s->shots              = n;
    s->shots[s->nshots++] = *sh;
    return 1;
}

/* DIR is a shot, or a folder of shots (natural order; names starting with '.' or '_', Output and IgnoredClips
 * skipped, as ckey clip does). */
static int find_shots(sv_server *s, const char *dir) {
    sv_shot   sh;
    const int one = shot_at(dir, &sh);
    if (one > 0) return add_shot(s, &sh);
    if (one < 0) return 0;
    int    n     = 0;
    char **names = ck_cli_clip_names(dir, &n);
    if (!names) return 0;
    for (int i = 0; i < n; i++) {
        char sub[PATH_MAX + 300];
        snprintf(sub, sizeof sub, "%s/%s", dir, names[i]);
        if (names[i] && is_dir(sub) && shot_at(sub, &sh) > 0 && !add_shot(s, &sh)) {
            ck_seq_free(&sh.frames), ck_seq_free(&sh.hints);
        }
        free(names[i]);
    }
    free(names);
    if (!s->nshots) fprintf(stderr, "ckey: %s: neither a shot (Input/ or Plate/ frames) nor a folder of shots\n", dir);
    return s->nshots > 0;
}

/* ---- the run ---- */

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(p);
}

int sv_run(serve_opts *o, const char *dir) {
    static sv_server srv; /* the daemon's threads see it until they are joined */
    sv_server       *s = &srv;
    s->o               = *o;
    char        ckbuf[4096];
    const char *ckpt = o->k.checkpoint ? o->k.checkpoint : default_checkpoint(ckbuf, sizeof ckbuf);
    s->ckpt          = strdup(ckpt ? ckpt : CK_BUILTIN_SPEC);
    /* as ckey key: the built-in keyer at 2048 on CUDA, at its training size on the CPU, unless --size */
    if (ck_builtin_is_spec(s->ckpt) && !o->k.size_set && !o->k.p.tile) {
        const int cuda = o->k.p.device == CK_DEVICE_CUDA || (o->k.p.device == CK_DEVICE_AUTO && ck_cuda_device_count() > 0);
        s->o.k.p.size  = cuda ? 2048 : ck_builtin_train_size();
    }
    const ck_params *p = &s->o.k.p;
    s->defaults = (sv_settings){p->size, p->tile, p->tile_overlap, p->precision, p->despill, p->despeckle,
                                p->despeckle_size, p->refiner_scale};
    if (!find_shots(s, dir)) return EXIT_RUNTIME;
    if (!ckpt) ck_log(CK_LOG_WARN, "%s", CK_CLI_BUILTIN_NOTE);

    unsigned char rnd[32];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        fprintf(stderr, "ckey: no random bytes for the access token: %s\n", strerror(errno));
        return EXIT_RUNTIME;
    }
    for (int i = 0; i < 32; i++) snprintf(s->token + 2 * i, 3, "%02x", rnd[i]);
    const ssize_t el = readlink("/proc/self/exe", s->exe, sizeof s->exe - 1);
    if (el <= 0) {
        fprintf(stderr, "ckey: cannot find this executable for renders: %s\n", strerror(errno));
        return EXIT_RUNTIME;
    }
    s->exe[el] = '\0';
    const char *tmpdir = getenv("TMPDIR");
    snprintf(s->tmp, sizeof s->tmp, "%s/ckey-serve-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(s->tmp)) {
        fprintf(stderr, "ckey: cannot make a temporary folder %s: %s\n", s->tmp, strerror(errno));
        return EXIT_RUNTIME;
    }

    /* SIGINT / SIGTERM are taken by sigwait below: blocked before any thread starts, so that every thread
     * inherits the mask (render children get the default back) */
    sigset_t stop;
    sigemptyset(&stop), sigaddset(&stop, SIGINT), sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN); /* a client gone mid-answer is a failed write, not the end of the server */

    s->keyer  = sv_keyer_new(s);
    s->render = sv_render_new();
    int   rc  = EXIT_RUNTIME;
    void *d   = s->keyer && s->render ? sv_http_start(s) : NULL;
    if (d) {
        const int v6 = strchr(s->o.bind, ':') != NULL;
        if (strcmp(s->o.bind, "127.0.0.1") && strcmp(s->o.bind, "::1"))
            fprintf(stderr, "ckey: warning: listening on %s: other machines can reach this server; only the token "
                            "keeps them out (plain HTTP: anyone on the way can read it)\n", s->o.bind);
        fprintf(stderr, "ckey: serving %d shot%s of %s (%s; model %s, size %d); Ctrl-C stops\n", s->nshots,
                s->nshots == 1 ? "" : "s", dir, s->o.bind, s->ckpt, s->defaults.size);
        /* the one line on stdout: scripts read the address from it */
        const char *host = !strcmp(s->o.bind, "0.0.0.0") ? "127.0.0.1" : !strcmp(s->o.bind, "::") ? "::1" : s->o.bind;
        printf("http://%s%s%s:%d/?token=%s\n", v6 ? "[" : "", host, v6 ? "]" : "", s->port, s->token);
        fflush(stdout);
        int sig = 0;
        sigwait(&stop, &sig);
        fprintf(stderr, "ckey: %s: stopping the server\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
        sv_render_stop_streams(s->render);
        sv_http_stop(d);
        rc = 0;
    }
    sv_render_free(s->render);
    sv_keyer_free(s->keyer);
    nftw(s->tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    for (int i = 0; i < s->nshots; i++) ck_seq_free(&s->shots[i].frames), ck_seq_free(&s->shots[i].hints);
    free(s->shots);
    return rc;
}
