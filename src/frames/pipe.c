/* Frame pipeline: see include/ckey_pipe.h. One mutex and one condition variable guard the slot states; frames
 * take tens of milliseconds per stage, so a single lock costs nothing measurable and keeps the state
 * machine easy to check:
 *
 *   FREE --claim--> READING --read--> READ --network--> NET --finish+write--> WRITTEN --ordered--> FREE
 *                                                      \-- (no ordered stage) --> FREE
 *
 * Frame f always uses slot f mod depth; the reader claims it when FREE, the network thread and the
 * ordered thread take frames strictly in order, workers take the lowest NET frame. */
#include "ckey_pipe.h"

#include <omp.h>
#include <pthread.h>
#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { SLOT_FREE, SLOT_READING, SLOT_READ, SLOT_NET, SLOT_BUSY, SLOT_WRITTEN };

typedef struct frame_pipe {
    ck_ctx            *ctx;
    const ck_pipe_ops *ops;
    int                start, count, depth, workers, readers, omp_threads;
    int                next_read; /* the next frame a reader claims */
    ck_pipe_frame     *frames; /* (depth) */
    int               *state;  /* (depth) */
    pthread_mutex_t    mu;
    pthread_cond_t     cv;
    pthread_mutex_t    done_mu; /* serializes ops->done */
    int                failed;
    int                end;       /* frames ≥ end never come: the reader failed on frame `end` */
    char               err[1400];
    ck_pipe_stats      st;
    double             t0;
    double            *trace; /* (count, TR_N) seconds since t0 per frame and event; NULL unless CK_PIPE_TRACE */
} frame_pipe;

/* CK_PIPE_TRACE=file: when each frame entered and left each stage, as CSV (diagnosis of ramp-up and
 * stalls; one row per frame, seconds since the pipeline started). */
enum { TR_READ0, TR_READ1, TR_STAGED, TR_NET0, TR_NET1, TR_WRITE0, TR_WRITE1, TR_N };

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void trace(frame_pipe *p, int f, int ev) {
    if (p->trace && f >= p->start && f < p->start + p->count)
        p->trace[(size_t)(f - p->start) * TR_N + ev] = now_s() - p->t0;
}

static void trace_write(const frame_pipe *p, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "frame,read0,read1,staged,net0,net1,write0,write1\n");
    for (int i = 0; i < p->count; i++) {
        fprintf(f, "%d", p->start + i);
        for (int e = 0; e < TR_N; e++) fprintf(f, ",%.4f", p->trace[(size_t)i * TR_N + e]);
        fputc('\n', f);
    }
    fclose(f);
}

static ck_pipe_frame *slot_of(frame_pipe *p, int f) { return &p->frames[(f - p->start) % p->depth]; }
static int           *state_of(frame_pipe *p, int f) { return &p->state[(f - p->start) % p->depth]; }

/* Records the first failure and wakes every stage. Caller holds mu. */
static void fail_locked(frame_pipe *p, ck_status st, const char *msg) {
    if (!p->failed) snprintf(p->err, sizeof p->err, "%s", msg && msg[0] ? msg : "failed"), p->st.status = st;
    p->failed = 1;
    pthread_cond_broadcast(&p->cv);
}

static void fail(frame_pipe *p, ck_status st, const char *msg) {
    pthread_mutex_lock(&p->mu);
    fail_locked(p, st, msg);
    pthread_mutex_unlock(&p->mu);
}

/* Moves frame f to state s and wakes the waiters; busy seconds are added to *acc under the lock. */
static void advance(frame_pipe *p, int f, int s, double *acc, double busy) {
    pthread_mutex_lock(&p->mu);
    *state_of(p, f) = s;
    if (acc) *acc += busy;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* Waits until frame f is in state s (and is frame f: its slot may still hold an earlier one); 0 when it
 * never will. */
static int wait_for(frame_pipe *p, int f, int s) {
    pthread_mutex_lock(&p->mu);
    while (!p->failed && f < p->end && !(*state_of(p, f) == s && slot_of(p, f)->index == f))
        pthread_cond_wait(&p->cv, &p->mu);
    const int ok = !p->failed && f < p->end;
    pthread_mutex_unlock(&p->mu);
    return ok;
}

/* Whether frame f is in state s now (no waiting). */
static int is_in(frame_pipe *p, int f, int s) {
    pthread_mutex_lock(&p->mu);
    const int ok = !p->failed && f < p->end && *state_of(p, f) == s && slot_of(p, f)->index == f;
    pthread_mutex_unlock(&p->mu);
    return ok;
}

int ck_pipe_in_block(const ck_pipe_frame *fr, const float *p) {
    return p && fr->in_block && p >= fr->in_block && p < fr->in_block + fr->in_floats;
}

static void free_inputs(ck_pipe_frame *fr) {
    if (!ck_pipe_in_block(fr, fr->rgb.data)) free(fr->rgb.data);
    if (!ck_pipe_in_block(fr, fr->hint.data)) free(fr->hint.data);
    fr->rgb.data = fr->hint.data = NULL;
}

static void release_frame(ck_pipe_frame *fr) {
    free_inputs(fr);
    ck_result_free(&fr->res);
}

/* The frame is complete: report it, free its memory, hand the slot back. */
static void complete(frame_pipe *p, ck_pipe_frame *fr) {
    pthread_mutex_lock(&p->done_mu);
    if (p->ops->done) p->ops->done(p->ops->user, fr);
    pthread_mutex_unlock(&p->done_mu);
    const int f = fr->index;
    pthread_mutex_lock(&p->mu);
    if (fr->skipped) p->st.skipped++;
    else p->st.frames++;
    release_frame(fr);
    *state_of(p, f) = SLOT_FREE;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* Readers and workers yield to the network thread: it wakes after every device synchronization, and a
 * late wake-up idles the GPU (measured on a 16-core machine with 20 busy threads: 98 ms per frame in
 * the pipeline against 60 ms alone). Linux applies nice values per thread. */
static void lower_priority(void) {
#ifdef __linux__
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 5);
#endif
}

/* Moves the frame's rgb and hint into the slot's input block (allocated once, grown when a frame is
 * larger; page-locked when the device has such memory, so the network thread uploads at full bus
 * speed); kept as read when no block can be had. Frames after the slot's first are decoded in the
 * block already (ckey_pipe.h): no copy, and no fresh memory to fault in per frame. */
static void stage_inputs(frame_pipe *p, ck_pipe_frame *fr) {
    const size_t nrgb = (size_t)fr->rgb.width * fr->rgb.height * 3, nhint = (size_t)fr->hint.width * fr->hint.height;
    if (fr->rgb.data == fr->in_block) { /* decoded in place; the hint too, or it is copied after it */
        if (fr->hint.data != fr->in_block + nrgb && nrgb + nhint <= fr->in_floats) {
            memcpy(fr->in_block + nrgb, fr->hint.data, sizeof(float) * nhint);
            free(fr->hint.data);
            fr->hint.data = fr->in_block + nrgb;
        }
        return; /* (a hint larger than the plate stays where it is: the frame is refused anyway) */
    }
    if (nrgb + nhint > fr->in_floats) {
        ck_ctx_host_free(p->ctx, fr->in_block, sizeof(float) * fr->in_floats, fr->in_pinned);
        int    pinned = 0;
        float *blk    = ck_ctx_host_alloc(p->ctx, sizeof(float) * (nrgb + nhint), &pinned);
        fr->in_block = blk, fr->in_floats = blk ? nrgb + nhint : 0, fr->in_pinned = pinned;
        if (!blk) return;
    }
    memcpy(fr->in_block, fr->rgb.data, sizeof(float) * nrgb);
    memcpy(fr->in_block + nrgb, fr->hint.data, sizeof(float) * nhint);
    free(fr->rgb.data);
    if (!ck_pipe_in_block(fr, fr->hint.data)) free(fr->hint.data);
    fr->rgb.data  = fr->in_block;
    fr->hint.data = fr->in_block + nrgb;
}

/* Readers claim frames in order; with several readers (file sequences) frames are decoded in parallel. */
static void *reader_main(void *arg) {
    frame_pipe *p = arg;
    lower_priority();
    for (;;) {
        pthread_mutex_lock(&p->mu);
        const int f = p->next_read++;
        while (!p->failed && f < p->end && *state_of(p, f) != SLOT_FREE) pthread_cond_wait(&p->cv, &p->mu);
        const int stop = p->failed || f >= p->end;
        if (!stop) *state_of(p, f) = SLOT_READING; /* claimed: frame f + depth must wait for it */
        pthread_mutex_unlock(&p->mu);
        if (stop) break;
        ck_pipe_frame  *fr   = slot_of(p, f);
        const ck_pipe_frame keep = *fr; /* the slot's buffers outlive its frames */
        memset(fr, 0, sizeof *fr);
        fr->passes   = keep.passes;
        fr->in_block = keep.in_block, fr->in_floats = keep.in_floats, fr->in_pinned = keep.in_pinned;
        fr->index    = f;
        char         msg[1024] = "";
        const double t0        = now_s();
        trace(p, f, TR_READ0);
        if (!p->ops->read(p->ops->user, fr, msg, sizeof msg)) {
            /* an unreadable frame ends the run there: the frames before it still complete */
            release_frame(fr);
            pthread_mutex_lock(&p->mu);
            if (f < p->end) { /* the earliest unreadable frame wins */
                p->end = f;
                if (p->st.status == CK_OK) p->st.status = CK_STATUS_EIO;
                snprintf(p->err, sizeof p->err, "%s", msg[0] ? msg : "cannot read the frame");
            }
            *state_of(p, f) = SLOT_FREE;
            pthread_cond_broadcast(&p->cv);
            pthread_mutex_unlock(&p->mu);
            break;
        }
        trace(p, f, TR_READ1);
        if (!fr->skipped) {
            fr->w = fr->rgb.width, fr->h = fr->rgb.height;
            stage_inputs(p, fr);
            /* the slot's first frame: its page-locked output memory is allocated here, not on the
             * network thread (allocation failures are left for ck_key_passes to report) */
            ck_passes_reserve(p->ctx, &fr->passes, fr->w, fr->h);
        }
        trace(p, f, TR_STAGED);
        fr->read_s = now_s() - t0;
        advance(p, f, SLOT_READ, &p->st.read_s, fr->read_s);
    }
    return NULL;
}

/* Takes the lowest frame waiting for a worker; -1 when none will come (all past the network, or failed). */
static int take_net_frame(frame_pipe *p, int *net_done) {
    pthread_mutex_lock(&p->mu);
    int f = -1;
    for (;;) {
        if (p->failed) break;
        int best = -1;
        for (int i = 0; i < p->depth; i++)
            if (p->state[i] == SLOT_NET && (best < 0 || p->frames[i].index < p->frames[best].index)) best = i;
        if (best >= 0) {
            p->state[best] = SLOT_BUSY;
            f              = p->frames[best].index;
            break;
        }
        if (*net_done >= p->count) break;
        pthread_cond_wait(&p->cv, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return f;
}

typedef struct worker_arg {
    frame_pipe *p;
    int  *net_done; /* frames past the network stage (guarded by p->mu) */
} worker_arg;

static void *worker_main(void *arg) {
    worker_arg *wa = arg;
    frame_pipe       *p  = wa->p;
    omp_set_num_threads(p->omp_threads); /* this thread's OpenMP teams */
    lower_priority();
    for (;;) {
        const int f = take_net_frame(p, wa->net_done);
        if (f < 0) break;
        ck_pipe_frame *fr  = slot_of(p, f);
        double         tf  = 0.0, tw = 0.0;
        char           msg[1400] = "";
        if (!fr->skipped) {
            const double t0 = now_s();
            ck_status    st = CK_OK;
            if (!fr->encoded) { /* host post-processing, then the samples as stored */
                st = ck_result_finish(ck_ctx_params(p->ctx), fr->w, fr->h, &fr->res);
                if (st == CK_OK) st = ck_passes_from_result(&fr->res, &fr->passes);
                ck_result_free(&fr->res);
                fr->encoded = st == CK_OK;
            }
            tf = now_s() - t0;
            if (st != CK_OK) {
                snprintf(msg, sizeof msg, "%.1024s: post-processing failed: %s", fr->stem, ck_status_str(st));
                fail(p, st, msg);
                break;
            }
            const double t1 = now_s();
            trace(p, f, TR_WRITE0);
            if (!p->ops->write(p->ops->user, fr, msg, sizeof msg)) {
                fail(p, CK_STATUS_EIO, msg);
                break;
            }
            tw = now_s() - t1;
            trace(p, f, TR_WRITE1);
        }
        fr->finish_s = tf, fr->write_s = tw;
        pthread_mutex_lock(&p->mu);
        p->st.finish_s += tf, p->st.write_s += tw;
        pthread_mutex_unlock(&p->mu);
        if (p->ops->ordered) advance(p, f, SLOT_WRITTEN, NULL, 0.0);
        else complete(p, fr);
    }
    return NULL;
}

static void *ordered_main(void *arg) {
    frame_pipe *p = arg;
    for (int f = p->start; f < p->start + p->count; f++) {
        if (!wait_for(p, f, SLOT_WRITTEN)) break;
        ck_pipe_frame *fr        = slot_of(p, f);
        char           msg[1024] = "";
        const double   t0        = now_s();
        if (!fr->skipped && !p->ops->ordered(p->ops->user, fr, msg, sizeof msg)) {
            fail(p, CK_STATUS_EIO, msg);
            break;
        }
        fr->ordered_s = now_s() - t0;
        pthread_mutex_lock(&p->mu);
        p->st.ordered_s += fr->ordered_s;
        pthread_mutex_unlock(&p->mu);
        complete(p, fr);
    }
    return NULL;
}

int ck_pipe_default_workers(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int  w     = (int)(cores / 4);
    return w < 1 ? 1 : w > 8 ? 8 : w;
}

int ck_pipe_default_readers(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int  r     = (int)(cores * 3 / 8);
    return r < 1 ? 1 : r > 16 ? 16 : r;
}

int ck_pipe_run(ck_ctx *ctx, int start, int count, int readers, int workers, const ck_pipe_ops *ops,
                ck_pipe_stats *stats, char *err, size_t n) {
    frame_pipe p;
    memset(&p, 0, sizeof p);
    p.ctx = ctx, p.ops = ops, p.start = start, p.count = count;
    p.workers     = workers < 1 ? 1 : workers;
    p.readers     = readers < 1 ? 1 : readers;
    /* frames keyed together (ck_key_passes_batch; full frame on the device): the batch holds its slots
     * while the readers fill the next ones */
    const int batch = ck_ctx_postprocess_on_device(ctx) && ck_ctx_params(ctx)->tile <= 0 ? ck_ctx_max_batch(ctx) : 1;
    p.depth       = p.workers + p.readers + 2 + (batch - 1);
    p.next_read   = start;
    long cores    = sysconf(_SC_NPROCESSORS_ONLN);
    p.omp_threads = (int)((cores + p.workers - 1) / p.workers);
    if (p.omp_threads < 1) p.omp_threads = 1;
    p.frames = calloc((size_t)p.depth, sizeof *p.frames);
    p.state  = calloc((size_t)p.depth, sizeof *p.state);
    if (!p.frames || !p.state) {
        free(p.frames), free(p.state);
        snprintf(err, n, "out of memory");
        if (stats) memset(stats, 0, sizeof *stats), stats->status = CK_STATUS_EOOM;
        return 0;
    }
    for (int i = 0; i < p.depth; i++) p.frames[i].index = -1;
    p.end = start + count;
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    pthread_mutex_init(&p.done_mu, NULL);
    const double t0 = now_s();
    p.t0            = t0;
    const char *trace_path = getenv("CK_PIPE_TRACE");
    if (trace_path && *trace_path) p.trace = calloc((size_t)count * TR_N, sizeof *p.trace);

    int        net_done = 0;
    worker_arg wa       = {&p, &net_done};
    pthread_t  ordered, *wt = calloc((size_t)p.workers, sizeof *wt), *rt = calloc((size_t)p.readers, sizeof *rt);
    int        nr = 0, nw = 0, have_ordered = 0;
    for (int i = 0; rt && wt && i < p.readers; i++)
        if (pthread_create(&rt[i], NULL, reader_main, &p) == 0) nr++;
    for (int i = 0; wt && nr && i < p.workers; i++)
        if (pthread_create(&wt[i], NULL, worker_main, &wa) == 0) nw++;
    if (ops->ordered && nw && pthread_create(&ordered, NULL, ordered_main, &p) == 0) have_ordered = 1;
    if (!nr || !nw || (ops->ordered && !have_ordered)) fail(&p, CK_STATUS_EOOM, "cannot start the pipeline's threads");

    /* the network stage, on this thread: the context belongs to it. The device warms up while the
     * first frames are decoded (measured at 4K: the first frame took 0.7 s more than the others). */
    const int on_device = ck_ctx_postprocess_on_device(ctx);
    ck_status wst;
    if (count > 1 && !p.failed && (wst = ck_ctx_warmup(ctx)) != CK_OK) {
        char msg[1400];
        snprintf(msg, sizeof msg, "preparing the device failed: %.1200s", ck_ctx_last_error(ctx));
        fail(&p, wst, msg);
    }
    for (int f = start; f < start + count && !p.failed;) {
        if (ops->cancelled && ops->cancelled(ops->user)) { /* stop before frame f: the earlier ones complete */
            pthread_mutex_lock(&p.mu);
            if (f < p.end) p.end = f;
            p.st.cancelled = 1;
            pthread_cond_broadcast(&p.cv);
            pthread_mutex_unlock(&p.mu);
            break;
        }
        /* the next batch: the next frame and, when the batch − 1 after it are all read already, those too
         * (skipped frames ride along unkeyed): full batches form when frames queue up for the network, the
         * network never waits for a batch to fill, and only two batch sizes (two graphs) ever run */
        ck_pipe_frame *fb[CK_MAX_BATCH];
        ck_image       rgb[CK_MAX_BATCH], hint[CK_MAX_BATCH];
        ck_passes      passes[CK_MAX_BATCH];
        int            g = f, nk = 0, stop = 0;
        int full = batch > 1;
        for (int k = f + 1; full && k < f + batch; k++) full = k < start + count && is_in(&p, k, SLOT_READ);
        for (; g < start + count && g - f < (full ? batch : 1); g++) { /* at most `batch` slots held */
            if (!wait_for(&p, g, SLOT_READ)) {
                stop = 1;
                break;
            }
            ck_pipe_frame *fr = slot_of(&p, g);
            if (fr->skipped) continue;
            fb[nk] = fr, rgb[nk] = fr->rgb, hint[nk] = fr->hint, passes[nk] = fr->passes;
            nk++;
            trace(&p, g, TR_NET0);
        }
        if (stop) break;
        double tn = 0.0;
        if (nk > 0) {
            const double t1 = now_s();
            ck_status    st = nk > 1       ? ck_key_passes_batch(ctx, nk, rgb, hint, passes)
                              : on_device ? ck_key_passes(ctx, &rgb[0], &hint[0], &passes[0])
                                          : ck_key_image_begin(ctx, &fb[0]->rgb, &fb[0]->hint, &fb[0]->res);
            tn = now_s() - t1;
            for (int i = 0; i < nk; i++) {
                ck_pipe_frame *fr = fb[i];
                fr->network_s     = tn;
                if (on_device) fr->passes = passes[i];
                fr->encoded = on_device && st == CK_OK;
                free_inputs(fr);
            }
            for (int k = f; k < g; k++) trace(&p, k, TR_NET1);
            if (st != CK_OK) {
                char msg[1400];
                snprintf(msg, sizeof msg, "keying %.512s%s failed: %.800s", fb[0]->stem, nk > 1 ? " (and the frames after it)" : "",
                         ck_ctx_last_error(ctx));
                fail(&p, st, msg);
                break;
            }
        }
        pthread_mutex_lock(&p.mu);
        for (int k = f; k < g; k++) *state_of(&p, k) = SLOT_NET;
        p.st.network_s += tn;
        net_done += g - f;
        pthread_cond_broadcast(&p.cv);
        pthread_mutex_unlock(&p.mu);
        f = g;
    }
    pthread_mutex_lock(&p.mu);
    net_done = count; /* nothing more comes: idle workers may leave */
    pthread_cond_broadcast(&p.cv);
    pthread_mutex_unlock(&p.mu);

    for (int i = 0; i < nr; i++) pthread_join(rt[i], NULL);
    for (int i = 0; i < nw; i++) pthread_join(wt[i], NULL);
    if (have_ordered) pthread_join(ordered, NULL);
    for (int i = 0; i < p.depth; i++) {
        release_frame(&p.frames[i]);
        ck_passes_free(ctx, &p.frames[i].passes);
        if (p.frames[i].in_block)
            ck_ctx_host_free(ctx, p.frames[i].in_block, sizeof(float) * p.frames[i].in_floats, p.frames[i].in_pinned);
    }
    p.st.wall_s = now_s() - t0;
    if (p.trace) trace_write(&p, trace_path);
    free(p.trace);
    if (stats) *stats = p.st;
    const int ok = !p.failed && p.end == start + count;
    if (!ok) snprintf(err, n, "%s", p.err);
    pthread_cond_destroy(&p.cv);
    pthread_mutex_destroy(&p.mu);
    pthread_mutex_destroy(&p.done_mu);
    free(wt), free(rt), free(p.frames), free(p.state);
    return ok;
}
