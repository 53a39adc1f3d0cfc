/* Frame pipeline: see include/ckey_pipe.h. One mutex and one condition variable guard the slot states; frames
 * take tens of milliseconds per stage, so a single lock costs nothing measurable and keeps the state
 * machine easy to check:
 *
 *   FREE --claim--> READING --read--> READ --network--> NET --finish+write--> WRITTEN --ordered--> FREE
 *                                                      \-- (no ordered stage) --> FREE
 *
 * Frame f always uses slot f mod depth; the reader claims it when FREE, the network threads (one per
 * context) claim frames in order (a failed context's frames first), the ordered thread takes them strictly
 * in order, workers take the lowest NET frame. */
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
    ck_ctx            *ctx;    /* ctxs[0]: parameters, page-locked memory for the slots */
    ck_ctx *const     *ctxs;   /* (n_ctx) one network thread each */
    int                n_ctx;
    int                next_net;  /* the next frame a network thread claims (after the retries) */
    int                batch;     /* frames per forward (ck_key_passes_batch) */
    int                on_device; /* the contexts post-process on the device */
    int                in_net;    /* frames claimed by network threads and not yet past them */
    int                alive;     /* contexts that have not failed */
    int               *retry;     /* (depth) frames a failed context held, for the others */
    int                n_retry;
    int                net_done;  /* frames past the network stage */
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
static int take_net_frame(frame_pipe *p) {
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
        if (p->net_done >= p->count) break;
        pthread_cond_wait(&p->cv, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return f;
}

static void *worker_main(void *arg) {
    frame_pipe *p = arg;
    omp_set_num_threads(p->omp_threads); /* this thread's OpenMP teams */
    lower_priority();
    for (;;) {
        const int f = take_net_frame(p);
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

/* ---- the network stage: one thread per context ---- */

typedef struct net_arg {
    frame_pipe *p;
    int         c; /* its context: p->ctxs[c] */
} net_arg;

/* Context c is out of the run (caller does not hold mu). The run fails when it was the last one. */
static void net_lost(frame_pipe *p, int c, ck_status st, const char *why) {
    pthread_mutex_lock(&p->mu);
    ck_pipe_context_stats *cs = &p->st.per_context[c];
    cs->failed                = 1;
    snprintf(cs->error, sizeof cs->error, "%s", why);
    if (--p->alive == 0) {
        char msg[1400];
        snprintf(msg, sizeof msg, "%s", why);
        fail_locked(p, st, msg);
    }
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* Claims the next frames for a network thread into fb (a failed context's frames first, else the next
 * frames in order once read: a full batch when the batch − 1 after the first are read already, so the
 * network never waits for a batch to fill and only two batch sizes, two graphs, ever run). Returns how
 * many (skipped frames included), 0 when no frame will come. Polls the cancel hook first. */
static int net_claim(frame_pipe *p, int *fb) {
    if (p->ops->cancelled && p->ops->cancelled(p->ops->user)) { /* stop before the next frame */
        pthread_mutex_lock(&p->mu);
        if (p->next_net < p->end) p->end = p->next_net;
        p->st.cancelled = 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    pthread_mutex_lock(&p->mu);
    int n = 0;
    for (;;) {
        if (p->failed) break;
        if (p->n_retry > 0) {
            while (p->n_retry > 0 && n < p->batch) fb[n++] = p->retry[--p->n_retry];
            break;
        }
        const int f = p->next_net;
        if (f >= p->end) {
            if (p->in_net == 0) break; /* nothing is in flight that could come back */
        } else if (*state_of(p, f) == SLOT_READ && slot_of(p, f)->index == f) {
            int full = p->batch > 1;
            for (int k = f + 1; full && k < f + p->batch; k++)
                full = k < p->end && *state_of(p, k) == SLOT_READ && slot_of(p, k)->index == k;
            const int g = full ? f + p->batch : f + 1;
            for (int k = f; k < g; k++) fb[n++] = k;
            p->next_net = g;
            break;
        }
        pthread_cond_wait(&p->cv, &p->mu);
    }
    p->in_net += n;
    pthread_mutex_unlock(&p->mu);
    return n;
}

/* Keys the claimed frames fb[0..n) with context c. CK_OK, or the failure's status with its message. */
static ck_status net_key(frame_pipe *p, int c, const int *fb, int n, char *msg, size_t len) {
    ck_ctx        *ctx = p->ctxs[c];
    ck_pipe_frame *fr[CK_MAX_BATCH];
    ck_image       rgb[CK_MAX_BATCH], hint[CK_MAX_BATCH];
    ck_passes      passes[CK_MAX_BATCH];
    int            nk = 0;
    for (int i = 0; i < n; i++) {
        ck_pipe_frame *f = slot_of(p, fb[i]);
        trace(p, fb[i], TR_NET0);
        if (f->skipped) continue; /* rides along unkeyed */
        fr[nk] = f, rgb[nk] = f->rgb, hint[nk] = f->hint, passes[nk] = f->passes;
        nk++;
    }
    if (nk == 0) return CK_OK;
    const double t1 = now_s();
    ck_status    st = nk > 1        ? ck_key_passes_batch(ctx, nk, rgb, hint, passes)
                      : p->on_device ? ck_key_passes(ctx, &rgb[0], &hint[0], &passes[0])
                                     : ck_key_image_begin(ctx, &fr[0]->rgb, &fr[0]->hint, &fr[0]->res);
    const double tn = now_s() - t1;
    for (int i = 0; i < nk; i++) {
        if (p->on_device) fr[i]->passes = passes[i]; /* the slot's block, also after a failure */
        if (st != CK_OK) continue;                   /* inputs kept: another context may key the frame */
        fr[i]->network_s = tn;
        fr[i]->encoded   = p->on_device;
        free_inputs(fr[i]);
    }
    if (st != CK_OK) {
        snprintf(msg, len, "keying %.512s%s failed: %.800s", fr[0]->stem, nk > 1 ? " (and the frames after it)" : "",
                 ck_ctx_last_error(ctx));
        return st;
    }
    pthread_mutex_lock(&p->mu);
    p->st.network_s += tn;
    p->st.per_context[c].network_s += tn;
    p->st.per_context[c].frames += nk;
    pthread_mutex_unlock(&p->mu);
    return CK_OK;
}

static void *net_main(void *arg) {
    net_arg      *a   = arg;
    frame_pipe   *p   = a->p;
    ck_ctx       *ctx = p->ctxs[a->c];
    ck_status     st;
    /* the device warms up while the first frames are decoded (measured at 4K: the first frame took
     * 0.7 s more than the others) */
    if (p->count > 1 && !p->failed && (st = ck_ctx_warmup(ctx)) != CK_OK) {
        char msg[1400];
        snprintf(msg, sizeof msg, "preparing the device failed: %.1200s", ck_ctx_last_error(ctx));
        if (p->n_ctx == 1) fail(p, st, msg);
        else net_lost(p, a->c, st, msg);
        return NULL;
    }
    int fb[CK_MAX_BATCH];
    int n;
    while ((n = net_claim(p, fb)) > 0) {
        char msg[1400] = "";
        st             = net_key(p, a->c, fb, n, msg, sizeof msg);
        pthread_mutex_lock(&p->mu);
        p->in_net -= n;
        if (st == CK_OK) {
            for (int i = 0; i < n; i++) *state_of(p, fb[i]) = SLOT_NET, trace(p, fb[i], TR_NET1);
            p->net_done += n;
        } else if (st == CK_STATUS_EDEVICE && p->alive > 1) { /* the others take this context's frames */
            for (int i = 0; i < n; i++) p->retry[p->n_retry++] = fb[n - 1 - i];
        }
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        if (st == CK_OK) continue;
        if (st == CK_STATUS_EDEVICE && p->n_ctx > 1) net_lost(p, a->c, st, msg);
        else fail(p, st, msg);
        break;
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
    return ck_pipe_run_multi(&ctx, 1, start, count, readers, workers, ops, stats, err, n);
}

int ck_pipe_run_multi(ck_ctx *const *ctxs, int n_ctx, int start, int count, int readers, int workers,
                      const ck_pipe_ops *ops, ck_pipe_stats *stats, char *err, size_t n) {
    frame_pipe p;
    memset(&p, 0, sizeof p);
    if (n_ctx < 1 || n_ctx > CK_PIPE_MAX_CONTEXTS) {
        snprintf(err, n, "%d contexts: a run takes 1 to %d", n_ctx, CK_PIPE_MAX_CONTEXTS);
        if (stats) memset(stats, 0, sizeof *stats), stats->status = CK_STATUS_EINVAL;
        return 0;
    }
    ck_ctx *ctx = ctxs[0];
    p.ctx = ctx, p.ctxs = ctxs, p.n_ctx = n_ctx, p.alive = n_ctx, p.ops = ops, p.start = start, p.count = count;
    p.st.contexts = n_ctx;
    p.workers     = workers < 1 ? 1 : workers;
    p.readers     = readers < 1 ? 1 : readers;
    /* frames keyed together (ck_key_passes_batch; full frame on the device): the batch holds its slots
     * while the readers fill the next ones */
    const int batch = ck_ctx_postprocess_on_device(ctx) && ck_ctx_params(ctx)->tile <= 0 ? ck_ctx_max_batch(ctx) : 1;
    p.depth       = p.workers + p.readers + 1 + n_ctx * batch; /* each network thread holds a batch */
    p.next_read   = start;
    p.next_net    = start;
    p.batch       = batch;
    p.on_device   = ck_ctx_postprocess_on_device(ctx);
    long cores    = sysconf(_SC_NPROCESSORS_ONLN);
    p.omp_threads = (int)((cores + p.workers - 1) / p.workers);
    if (p.omp_threads < 1) p.omp_threads = 1;
    p.frames = calloc((size_t)p.depth, sizeof *p.frames);
    p.state  = calloc((size_t)p.depth, sizeof *p.state);
    p.retry  = calloc((size_t)p.depth, sizeof *p.retry);
    if (!p.frames || !p.state || !p.retry) {
        free(p.frames), free(p.state), free(p.retry);
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

    pthread_t  ordered, *wt = calloc((size_t)p.workers, sizeof *wt), *rt = calloc((size_t)p.readers, sizeof *rt);
    int        nr = 0, nw = 0, have_ordered = 0;
    for (int i = 0; rt && wt && i < p.readers; i++)
        if (pthread_create(&rt[i], NULL, reader_main, &p) == 0) nr++;
    for (int i = 0; wt && nr && i < p.workers; i++)
        if (pthread_create(&wt[i], NULL, worker_main, &p) == 0) nw++;
    if (ops->ordered && nw && pthread_create(&ordered, NULL, ordered_main, &p) == 0) have_ordered = 1;
    if (!nr || !nw || (ops->ordered && !have_ordered)) fail(&p, CK_STATUS_EOOM, "cannot start the pipeline's threads");

    /* the network stage: a thread per context, the first on this thread */
    net_arg   na[CK_PIPE_MAX_CONTEXTS];
    pthread_t nt[CK_PIPE_MAX_CONTEXTS];
    int       started[CK_PIPE_MAX_CONTEXTS] = {0};
    for (int c = 0; c < p.n_ctx; c++) na[c] = (net_arg){&p, c};
    for (int c = 1; c < p.n_ctx && !p.failed; c++) started[c] = pthread_create(&nt[c], NULL, net_main, &na[c]) == 0;
    for (int c = 1; c < p.n_ctx; c++)
        if (!started[c]) net_lost(&p, c, CK_STATUS_EOOM, "cannot start its thread");
    net_main(&na[0]);
    for (int c = 1; c < p.n_ctx; c++)
        if (started[c]) pthread_join(nt[c], NULL);
    pthread_mutex_lock(&p.mu);
    p.net_done = count; /* nothing more comes: idle workers may leave */
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
    free(wt), free(rt), free(p.frames), free(p.state), free(p.retry);
    return ok;
}
