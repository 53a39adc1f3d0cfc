/* The frame pipeline (part of the library; shots of frame files run through it (ckey_shot.h: `ckey key`,
 * `ckey clip`, the Python package), and so can any host that reads and writes its own frames): frames overlap
 * across stages.
 *
 *   reader threads     decode frames (claimed in order)               ops->read
 *   calling thread     network (the context: one thread; one per       ck_key_image_begin, or ck_key_passes
 *                      context with ck_pipe_run_multi)
 *                      (the whole frame when it post-processes on the device: gpu_postprocess)
 *   `workers` threads  resize back, post-process, write (any order)   ck_result_finish, ck_passes_from_result,
 *                                                                      ops->write
 *   ordered thread     frames in order, e.g. video encoders           ops->ordered (optional)
 *
 * Every frame lives in one of `readers + workers + 2` slots, so memory is bounded whatever the clip length. A frame
 * that cannot be read ends the run there: the frames before it still complete. Any other failure stops
 * every stage at once; frames already written stay complete (writes are atomic), the rest are not
 * started. Per-stage busy times are summed for the report.
 *
 *     ck_pipe_ops ops = {user, read_fn, write_fn, NULL, done_fn};
 *     ck_pipe_stats stats;
 *     int ok = ck_pipe_run(ctx, start, count, workers, &ops, &stats, err, sizeof err);
 */
#ifndef CKEY_PIPE_H
#define CKEY_PIPE_H

#include "ckey.h"

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>

typedef struct ck_pipe_frame {
    int       index;     /* frame position f */
    char      stem[1024];
    ck_image  rgb, hint; /* from read; freed once the network has run */
    ck_result res;       /* network output, then (after finish) every pass in float; freed once encoded */
    ck_passes passes;    /* every pass as the files store it; the slot's block, reused frame after frame */
    int       encoded;   /* passes hold this frame */
    float    *in_block;  /* the slot's input memory, page-locked (CUDA): rgb then hint, reused */
    size_t    in_floats;
    int       in_pinned;
    int       w, h;      /* frame size: the passes' size */
    int       skipped;   /* set by read: nothing to key (--skip-existing); still reported by done */
    /* this frame's seconds in each stage, for done (network: its batch's, when keyed in a batch) */
    double    read_s, network_s, finish_s, write_s, ordered_s;
} ck_pipe_frame;

typedef struct ck_pipe_ops {
    void *user;
    /* reader threads: fill fr->rgb, fr->hint, fr->stem (or set fr->skipped) for frame fr->index. With one
     * reader, calls come in frame order (sequential sources such as video); with several, concurrently
     * for different frames. Returns 0 on failure with a message in err. The pixels are malloc'd, or, to
     * spare a copy and fresh memory per frame, decoded into fr->in_block when the whole frame fits there
     * (in_floats ≥ 4·w·h): rgb at its start, the hint right after it; data inside the block is never
     * freed. */
    int (*read)(void *user, ck_pipe_frame *fr, char *err, size_t n);
    /* worker threads, concurrently for different frames: write the finished passes. 0 = failure. */
    int (*write)(void *user, ck_pipe_frame *fr, char *err, size_t n);
    /* one thread, in frame order, after write; NULL for none. 0 = failure. */
    int (*ordered)(void *user, ck_pipe_frame *fr, char *err, size_t n);
    /* after each frame is complete (written or skipped); calls are serialized, in frame order when
     * there is an ordered stage, else in completion order. */
    void (*done)(void *user, const ck_pipe_frame *fr);
    /* polled by the network thread before each frame; NULL for never. Non-zero: the run ends there, as at
     * an unreadable frame (the frames already keyed are written, no further frame starts) and
     * ck_pipe_stats.cancelled is set. */
    int (*cancelled)(void *user);
} ck_pipe_ops;

/* Contexts a run can share its frames among (ck_pipe_run_multi). */
#define CK_PIPE_MAX_CONTEXTS 16

/* One context's share of a run. */
typedef struct ck_pipe_context_stats {
    int    frames;     /* frames it keyed */
    double network_s;  /* its busy seconds */
    int    failed;     /* it stopped on a device error; its frames went to the others */
    char   error[512]; /* that error */
} ck_pipe_context_stats;

typedef struct ck_pipe_stats {
    double read_s, network_s, finish_s, write_s, ordered_s; /* busy seconds summed over frames */
    double wall_s;
    int    frames, skipped;
    int    cancelled; /* ended early by ops->cancelled */
    /* the first failure's status: the context's for keying and post-processing; CK_STATUS_EIO for a callback
     * that failed (its own status is the host's to keep) */
    ck_status status;
    int                   contexts;                        /* ck_pipe_run_multi's n (1 for ck_pipe_run) */
    ck_pipe_context_stats per_context[CK_PIPE_MAX_CONTEXTS];
} ck_pipe_stats;

/* 1 when p points into the slot's input block (memory the frame does not own). */
int ck_pipe_in_block(const ck_pipe_frame *fr, const float *p);

/* Frames start .. start + count − 1. readers ≥ 1 (decoding threads; 1 for sequential sources),
 * workers ≥ 1 (post-processing and writing threads; each uses ⌈cores / workers⌉ OpenMP threads).
 * Returns 1 when every frame completed, else 0 with the first failure's message in err. */
int ck_pipe_run(ck_ctx *ctx, int start, int count, int readers, int workers, const ck_pipe_ops *ops,
                ck_pipe_stats *stats, char *err, size_t n);
/* The same with n_ctx contexts (1 to CK_PIPE_MAX_CONTEXTS, e.g. one per GPU, or several streams of one
 * model on one GPU) made with the same parameters: a network thread per context takes the next frames
 * read, so the contexts key different frames at once; decoding, writing and the ordered stage are shared
 * and outputs come out as with one context. A context that fails with a device error (CK_STATUS_EDEVICE)
 * stops: the frames it held are keyed by the others and the run goes on (per_context says which failed
 * and why); only when every context has failed does the run fail. Each context is used by its own
 * thread (ctxs[0] by the calling thread). */
int ck_pipe_run_multi(ck_ctx *const *ctxs, int n_ctx, int start, int count, int readers, int workers,
                      const ck_pipe_ops *ops, ck_pipe_stats *stats, char *err, size_t n);

/* Default thread counts for this machine, a quarter of the cores for workers (1 to 8) and three eighths
 * for readers (1 to 16): with the passes encoded on the GPU a 4K frame takes ~0.3 s to decode (16-bit PNG)
 * and ~0.25 s to write, so 6 readers and 4 workers keep up with the GPU's 17 fps on 16 cores; every
 * further thread adds a slot whose page-locked memory is slow to allocate (the run's first frames wait
 * for it) and contends for memory bandwidth. Measured at 4K on 16 cores (whole 96-frame runs): 6 readers
 * 10.7 fps, 4 workers 10.6, against 8 and 6 10.0 and 12 and 8 9.9 (docs/benchmarks). Without GPU
 * encoding each worker compresses with a quarter of the cores' OpenMP threads. */
int ck_pipe_default_workers(void);
int ck_pipe_default_readers(void);

#ifdef __cplusplus
}
#endif

#endif
