/* `ckey bench --devices LIST`: how keying scales over GPUs (or streams of one GPU), in one call. For k = 1 .. N
 * (the first k entries of LIST):
 *   network only: k contexts (a model per distinct device), each on its own thread running --runs forwards of
 *     the network at --size after --warmup ones; frames per second over the wall time of the slowest, and
 *     the speed-up against k = 1;
 *   end to end (--clip DIR, a folder of plates, with --clip-hint DIR): the whole shot keyed through the shot
 *     library with k contexts (ck_shot_key_multi, every pass written to a scratch folder), frames per second
 *     and the CPU stages' busy time per frame (read, post-processing, write), which bound the rate once the
 *     GPUs are fast enough.
 * One JSON line per k and mode on stdout. */
#include "ckey_bench.h"
#include "cmd_opts.h"
#include "key.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct net_job {
    ck_ctx         *ctx;
    int             warmup, runs;
    pthread_barrier_t *start;
    double          t_end; /* when its last forward was complete */
    ck_status       st;
} net_job;

static void *net_run(void *arg) {
    net_job *j = arg;
    j->st      = ck_ctx_warmup(j->ctx);
    for (int i = 0; i < j->warmup && j->st == CK_OK; i++)
        if ((j->st = ck_bench_compute(j->ctx, 1)) == CK_OK) j->st = ck_bench_download(j->ctx, 1);
    pthread_barrier_wait(j->start); /* every context warm: the timed part starts together */
    for (int i = 0; i < j->runs && j->st == CK_OK; i++) j->st = ck_bench_compute(j->ctx, 1);
    if (j->st == CK_OK) j->st = ck_bench_download(j->ctx, 1); /* waits for the device's work */
    j->t_end = now_s();
    return NULL;
}

/* Network-only frames per second of k contexts; < 0 on failure (message printed). */
static double network_fps(const bench_opts *o, const int *dev, int k) {
    ck_ctx *ctx[CK_PIPE_MAX_CONTEXTS];
    char    msg[1024];
    if (!key_open_contexts(o->ckpt, &o->p, dev, k, ctx, msg, sizeof msg)) {
        fprintf(stderr, "ckey: %s\n", msg);
        return -1.0;
    }
    net_job           job[CK_PIPE_MAX_CONTEXTS];
    pthread_t         th[CK_PIPE_MAX_CONTEXTS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)k + 1);
    int started = 0;
    for (int i = 0; i < k; i++) {
        job[i] = (net_job){ctx[i], o->warmup, o->runs, &start, 0.0, CK_OK};
        if (pthread_create(&th[i], NULL, net_run, &job[i]) != 0) break;
        started++;
    }
    double fps = -1.0;
    if (started == k) {
        pthread_barrier_wait(&start);
        const double t0 = now_s();
        double       t1 = t0;
        int          ok = 1;
        for (int i = 0; i < k; i++) {
            pthread_join(th[i], NULL);
            if (job[i].st != CK_OK) ok = 0, fprintf(stderr, "ckey: device %d: %s\n", dev[i], ck_ctx_last_error(ctx[i]));
            if (job[i].t_end > t1) t1 = job[i].t_end;
        }
        if (ok) fps = (double)k * o->runs / (t1 - t0);
    } else {
        fprintf(stderr, "ckey: cannot start %d threads\n", k);
        exit(1); /* threads blocked at the barrier cannot be joined: nothing sensible is left to do */
    }
    pthread_barrier_destroy(&start);
    for (int i = 0; i < k; i++) ck_ctx_free(ctx[i]);
    return fps;
}

/* End to end: the clip keyed with k contexts into a scratch folder; 0 on failure (message printed). */
static int clip_run(const bench_opts *o, const int *dev, int k, ck_shot_stats *st) {
    char out[4200], msg[1024];
    snprintf(out, sizeof out, "%s/ckey-bench-devices-%d-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid(), k);
    ck_shot_opts so = ck_shot_opts_default();
    so.image = o->clip, so.hint = o->clip_hint, so.out = out, so.video_out = "";
    ck_shot *shot = NULL;
    ck_ctx  *ctx[CK_PIPE_MAX_CONTEXTS];
    int      ok = ck_shot_open(&shot, &so) == CK_OK;
    if (!ok) snprintf(msg, sizeof msg, "%s", ck_shot_last_error(shot));
    else ok = key_open_contexts(o->ckpt, &o->p, dev, k, ctx, msg, sizeof msg);
    if (ok) {
        if (ck_shot_key_multi(shot, ctx, k, st) != CK_OK) ok = 0, snprintf(msg, sizeof msg, "%s", ck_shot_last_error(shot));
        for (int i = 0; i < k; i++) ck_ctx_free(ctx[i]);
    }
    ck_shot_free(shot);
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", out);
    if (system(cmd) != 0) fprintf(stderr, "ckey: could not remove %s\n", out);
    if (!ok) fprintf(stderr, "ckey: %s\n", msg);
    return ok;
}

int bench_devices(const bench_opts *o) {
    int  dev[CK_PIPE_MAX_CONTEXTS];
    char msg[512];
    const int n = key_parse_devices(o->devices, dev, CK_PIPE_MAX_CONTEXTS, msg, sizeof msg);
    if (n < 0) return fprintf(stderr, "ckey: %s\n", msg), 2;
    double base = 0.0;
    int    rc   = 0;
    for (int k = 1; k <= n; k++) {
        const double fps = network_fps(o, dev, k);
        if (fps < 0) return 1;
        if (k == 1) base = fps;
        printf("{\"mode\": \"network\", \"contexts\": %d, \"devices\": [", k);
        for (int i = 0; i < k; i++) printf("%s%d", i ? ", " : "", dev[i]);
        printf("], \"size\": %d, \"runs_per_context\": %d, \"fps\": %.3f, \"speedup\": %.3f}\n", o->p.size, o->runs, fps,
               fps / base);
        fflush(stdout);
    }
    if (!o->clip) return rc;
    double e2e_base = 0.0;
    for (int k = 1; k <= n; k++) {
        ck_shot_stats st;
        if (!clip_run(o, dev, k, &st)) return 1;
        const int    f   = st.frames > 0 ? st.frames : 1;
        const double fps = st.frames / (st.wall_s > 0 ? st.wall_s : 1e-9);
        if (k == 1) e2e_base = fps;
        printf("{\"mode\": \"end_to_end\", \"contexts\": %d, \"frames\": %d, \"fps\": %.3f, \"speedup\": %.3f, "
               "\"readers\": %d, \"workers\": %d, \"cpu_ms_per_frame\": {\"read\": %.1f, \"finish\": %.1f, \"write\": %.1f}, "
               "\"network_ms_per_frame\": [",
               k, st.frames, fps, fps / (e2e_base > 0 ? e2e_base : 1e-9), st.readers, st.workers, 1e3 * st.read_s / f,
               1e3 * st.finish_s / f, 1e3 * st.write_s / f);
        for (int i = 0; i < st.contexts; i++) {
            const ck_pipe_context_stats *c = &st.per_context[i];
            printf("%s%.1f", i ? ", " : "", c->frames ? 1e3 * c->network_s / c->frames : 0.0);
        }
        printf("]}\n");
        fflush(stdout);
    }
    return rc;
}
