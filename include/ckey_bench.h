/* Diagnostics (public; in ckey_core): the network's stages one at a time on a context, timers on its device,
 * the per-op profile, the tensors the last forward kept, the tiles of tiled keying, and what a checkpoint
 * holds, for benchmarks and inspection (`ckey bench`, `ckey doctor`, tools/bench/). Keying never needs them:
 * the calls of ckey.h run every stage in one go.
 *
 *     ck_run_network_batch(ctx, n, x, NULL, NULL);   // sets the host input (n, S, S, 4) and runs once
 *     ck_bench_upload(ctx, n);                       // the input to the device again
 *     ck_bench_timer_start(ctx);
 *     ck_bench_compute(ctx, n);                      // the forward alone
 *     double ms = ck_bench_timer_ms(ctx);            // device time (CUDA events), else host time
 *     ck_bench_download(ctx, n);                     // the output into ck_bench_output(ctx)
 *
 * The calls on a context follow ckey.h's rules: one thread at a time, CK_STATUS_EINVAL for a bad argument,
 * the failure's message in ck_ctx_last_error, a failed context answers with its status.
 */
#ifndef CKEY_BENCH_H
#define CKEY_BENCH_H

#include "ckey.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the network's stages (n: 1 ≤ n ≤ ck_ctx_max_batch images of S × S, S = ck_ctx_params(ctx)->size) ---- */

/* The host input of the last ck_run_network_batch (n images, (n, S, S, 4) NHWC) into the network input on
 * the device, in the activation dtype. */
ck_status    ck_bench_upload(ck_ctx *ctx, int n);
/* The forward on whatever the network input holds (a CUDA graph replay where the context records graphs; the
 * first forward of a batch size records it), without transfers. */
ck_status    ck_bench_compute(ck_ctx *ctx, int n);
/* The output of the last forward of n images to the host, waiting for the device: ck_bench_output. */
ck_status    ck_bench_download(ck_ctx *ctx, int n);
/* (n, S, S, 4) float32 alpha, fg R, G, B of the last download (or ck_run_network_batch); the context's memory,
 * valid until its next call. */
const float *ck_bench_output(const ck_ctx *ctx);
/* A full frame's pre-processing into image 0 of the network input: on the device when gpu_preprocess is in
 * effect (CUDA), else on the host and uploaded; no forward. rgb 3 channels, hint 1, any sizes. */
ck_status    ck_bench_preprocess(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint);
/* 1 when a tiled context keys a w × h plate on the device (gpu_preprocess, CUDA): then ck_bench_key_tiled
 * runs the tiles' pre-processing, their batched forwards and the blend there, and leaves the blended plate on
 * the device (no post-processing, no download). CK_STATUS_EINVAL when the plate is not keyed on the device. */
int          ck_bench_tiled_on_device(const ck_ctx *ctx, int w, int h);
ck_status    ck_bench_key_tiled(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint);

/* ---- timers ---- */

/* 1 when the context's device times its stream with events (CUDA). */
int    ck_bench_has_device_timer(const ck_ctx *ctx);
/* Milliseconds from ck_bench_timer_start to ck_bench_timer_ms on the context's stream, waiting for the work
 * between them: device events when ck_bench_has_device_timer, else the host's monotonic clock after a
 * synchronize (the CPU backend computes in the calls themselves). */
void   ck_bench_timer_start(ck_ctx *ctx);
double ck_bench_timer_ms(ck_ctx *ctx);

/* ---- the per-op profile (process-wide: every context's ops) ---- */

/* on: every op from now on synchronizes its device and adds its time to its name's row (counters reset);
 * off: back to normal. Profiled forwards are slower: time them apart. */
void ck_bench_profile(int on);
/* The rows so far, per frame over `frames` forwards: name, ms/frame, share, calls per frame. */
void ck_bench_profile_report(FILE *f, int frames);

/* ---- the tensors the last forward kept (params.keep_intermediates) ---- */

/* The names, as the reference fixtures call them: "f1" .. "f4" (the backbone's four stages), "logits",
 * "logits_up", "delta_raw"; i from 0, NULL past the last. */
const char *ck_bench_intermediate_name(int i);
/* Tensor `name` of the last forward as float32 NHWC (converted from the activation dtype): *data malloc'd
 * (the caller frees it), *ndim and shape[0 .. ndim) its shape. CK_STATUS_EMISSING (*data NULL, no message)
 * when the forward did not keep it (keep_intermediates off, no refiner); CK_STATUS_EINVAL for another name. */
ck_status   ck_bench_intermediate(ck_ctx *ctx, const char *name, float **data, int *ndim, int64_t shape[8]);

/* ---- tiles ---- */

/* Tiles along an axis of n pixels for ck_params.tile and tile_overlap, as tiled keying cuts a plate (a tile
 * longer than n is cut to n), before tiles are skipped by the hint. 0 for arguments out of range. */
int ck_bench_tiles_along(int n, int tile, int overlap);

/* ---- checkpoints ---- */

typedef struct ck_checkpoint_info {
    int    opened;      /* 1: it reads as a checkpoint (n_tensors and bytes are set) */
    int    greenformer; /* 1: its tensors make a GreenFormer at the size asked (the architecture is set) */
    int    n_tensors;
    size_t bytes;       /* its memory as loaded: the file's size, or the generated or embedded weights' */
    int    embed_dim, num_blocks, head_dim, pos_grid; /* pos_grid: the position embedding's grid side */
    int    stage_dim[4];                              /* the backbone's widths, stage by stage */
    char   message[512]; /* why not, when opened or greenformer is 0 */
} ck_checkpoint_info;

/* What `path` (a file, or a name of ckey.h: builtin, random) holds and the architecture it loads as at model
 * size `size`, without loading weights onto a device. CK_OK when it is a GreenFormer; otherwise the first
 * failure's status with *info filled as far as it got (also logged, as loading would). */
ck_status ck_checkpoint_inspect(const char *path, int size, ck_checkpoint_info *info);

/* Reads checkpoint file `path` as loading does (the whole file into memory, every offset checked), then one
 * byte per 64-byte line of every tensor, as a pass over the weights would: the milliseconds of each, and
 * *checksum, the bytes read summed (so the pass cannot be skipped). For load-time figures. */
ck_status ck_bench_checkpoint_read(const char *path, double *open_ms, double *pass_ms, unsigned long long *checksum,
                                   ck_err *err);
/* The tensors of checkpoint `src` (a file, or a name of ckey.h: builtin, random) and its metadata (head_dim,
 * train_size, ...) written into `path` as .safetensors, replacing the file. */
ck_status ck_checkpoint_write_safetensors(const char *src, const char *path, ck_err *err);

#ifdef __cplusplus
}
#endif

#endif /* CKEY_BENCH_H */
