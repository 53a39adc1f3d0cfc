/* The backend table: memory, transfers and one slot per op. Model code calls ops only through it,
 * so the CPU (reference) and CUDA backends plug in without touching the model.
 *
 * Every op takes ck_tensor arguments in the layouts of core/tensor.h and checks nothing itself: the
 * wrappers in ops/ops.c assert shapes and dtypes once for every backend (and skip the call while
 * the model is only being planned). ops_list.h lists the ops with their semantics and parameters;
 * those of CK_OPS are required in every backend, those of CK_OPS_OPTIONAL are slots in ext.
 */
#ifndef CK_BACKEND_H
#define CK_BACKEND_H

#include "core/check.h"
#include "core/tensor.h"
#include "ops/ops_list.h"
#include "frame/colorspace.h"

typedef struct ck_backend ck_backend;

typedef enum ck_act { CK_ACT_NONE = 0, CK_ACT_GELU = 1, CK_ACT_RELU = 2 } ck_act;

/* The slot types, one per op of ops_list.h (each op's semantics and parameters are there):
 * ck_op_<name>_fn = void (*)(ck_backend *be, <its parameters>). */
#define CK_OP_TYPEDEF(name) typedef void(*ck_op_##name##_fn) CK_OP_PARAMS_WITH(ck_backend *be, name);
CK_OPS(CK_OP_TYPEDEF)
CK_OPS_OPTIONAL(CK_OP_TYPEDEF)
#undef CK_OP_TYPEDEF
#define CK_OP_SLOT(name) ck_op_##name##_fn name;

/* Optional capabilities (NULL in backends without them). */
/* Frame pre-processing on the device (ck_preprocess's arithmetic; model_spec §7.2). All pointers are
 * device memory. Taps per axis from ck_resize_aa_taps: (S, K) indices and weights, (S) counts. */
typedef struct ck_preprocess_args {
    const ck_tensor *x;           /* (1, S, S, 4) output, activation dtype */
    const float     *rgb;         /* (h, pitch, 3) frame, float32: columns [0, w) are read */
    const float     *hint;        /* (h, pitch) hint at the frame size, float32 */
    int              w, h;
    int              pitch;       /* pixels per source row (≥ w): a tile is read in place from its plate */
    const int32_t   *idx_x, *cnt_x; /* taps along x (w → S), Kx per output column */
    const float     *w_x;
    int              Kx;
    const int32_t   *idx_y, *cnt_y; /* taps along y (h → S) */
    const float     *w_y;
    int              Ky;
    float           *tmp;         /* (h, S, 4) float32: after the horizontal pass */
    int              input_is_linear;
    int              colorspace;  /* a converting ck_colorspace: rgb (h, w, 3, no pitch) is first decoded in
                                     place into linear Rec.709 (ck_cs_plate_px); 0 = as it is */
    float            to_working[9];
} ck_preprocess_args;

/* Frame post-processing on the device ("gpu_postprocess"): ck_result_finish's arithmetic (model_spec
 * §7.3 CPU path: Lanczos-4 back to the frame size unless the frame is S×S, despeckle, despill,
 * sRGB→linear, premultiply, checkerboard comp), with results as the files store them: IEEE half
 * (round to nearest even) for the EXR passes, uint8(clip(v, 0, 1)·255) truncated for the comp.
 * All pointers are device memory; outputs are interleaved (h, w, C). */
typedef struct ck_postprocess_args {
    const float   *out;         /* (sh, sw, 4) float32 network output: alpha, fg R, G, B; S×S full frame,
                                   the frame's size when tiles were blended into it */
    int            sw, sh, w, h; /* source size; frame size (no resize when they are equal) */
    const int32_t *idx_x;       /* (w, 8) Lanczos-4 taps along x (sw → w), ck_resize_lanczos4_taps */
    const float   *w_x;         /* (w, 8) */
    const int32_t *idx_y;       /* (h, 8) taps along y (sh → h) */
    const float   *w_y;         /* (h, 8) */
    float          despill;     /* as ck_post_params */
    int            despeckle, despeckle_size;
    uint16_t      *alpha;       /* (h, w, 1) half: raw alpha (Matte) */
    uint16_t      *fg;          /* (h, w, 3) half: raw straight sRGB fg (FG) */
    uint16_t      *processed;   /* (h, w, 4) half: linear premultiplied RGBA (Processed) */
    uint8_t       *comp;        /* (h, w, 3) 8-bit sRGB comp (Comp); NULL = none */
    void          *scratch;     /* ext.postprocess_scratch_bytes(sw, sh, w, h) bytes, 256-byte aligned */
    ck_cs_post     cs;          /* Processed in the plate's gamut (frame/colorspace.h) */
    const float   *plate;       /* (h, w, 3) float32 the plate as given (keep_highlights); NULL = off */
    const float   *unmix_plate; /* (h, w, 3) float32 the plate as given: fg un-mixed from it (frame_ops.h
                                   ck_fg_unmix, colour space cs.colorspace, alpha above unmix_lo); NULL = off */
    float          unmix_lo;
} ck_postprocess_args;

/* zlib streams (RFC 1950 + RFC 1951) of independent byte segments on the device ("gpu_encode": EXR
 * PXR24 chunks). All pointers are device memory. */
#define CK_DEFLATE_MAX_SEGMENT (1 << 20)
typedef struct ck_deflate_args {
    const uint8_t *src;       /* the segments, concatenated */
    const int64_t *seg_off;   /* (n + 1): segment i is src[seg_off[i] .. seg_off[i+1]), 1..CK_DEFLATE_MAX_SEGMENT bytes */
    int            n;         /* number of segments */
    uint8_t       *dst;       /* segment i's stream at dst + seg_off[i]; its capacity is the segment's length */
    int32_t       *dst_bytes; /* (n) the stream's length, or 0 when it would not be shorter than the segment */
    void          *scratch;   /* ext.deflate_scratch_bytes(n, total) bytes, 256-byte aligned */
} ck_deflate_args;

/* The PXR24 byte transform of half-float scanlines (EXR): per row, per channel in the file's order
 * (names sorted), each value minus the previous one of the row (mod 2^16, the first minus 0), the
 * row's high bytes then its low bytes. A chunk of L rows is then L consecutive rows of dst. */
typedef struct ck_pxr24_args {
    const uint16_t *src;    /* (h, w, C) interleaved halves */
    int             w, h, C;
    int             order[4]; /* file channel k is interleaved channel order[k] */
    uint8_t        *dst;    /* (h, C, 2, w) bytes */
} ck_pxr24_args;

/* Packs the first bytes[i] bytes of each segment i of src (at seg_off[i]) back to back into dst, at
 * dst_off[i] = bytes[0] + … + bytes[i−1] (written too, n + 1 values). */
typedef struct ck_gather_args {
    const uint8_t *src;
    const int64_t *seg_off; /* (n + 1) */
    const int32_t *bytes;   /* (n) */
    int            n;
    uint8_t       *dst;
    int64_t       *dst_off; /* (n + 1) out */
} ck_gather_args;

/* Tiled keying on the device: the network outputs of a batch of tiles (and the constant outputs of
 * skipped tiles) accumulated into the plate with the tiles' linear ramps, in the host's tile order and
 * arithmetic (api.c / tiled.c), then normalized. All pointers are device memory. */
#define CK_TILE_BG (-1) /* a skipped tile whose hint is all background: alpha 0, fg 0 */
#define CK_TILE_FG (-2) /* all foreground: alpha 1, fg = the plate (to sRGB when linear) */
typedef struct ck_tile_blend_args {
    float         *acc;        /* (h, w, 4) Σ weight · (alpha, fg R, G, B) */
    float         *wsum;       /* (h, w) Σ weight */
    const float   *out;        /* (B, S, S, 4) float32 network outputs of the batch */
    const float   *rgb;        /* (h, w, 3) the plate */
    int            w, h, S;
    const int32_t *tiles;      /* (n, 5): x0, y0, column of wx, row of wy, batch slot or CK_TILE_BG/FG */
    int            first, count; /* tiles [first, first + count) are blended, in order */
    const float   *wx, *wy;    /* (nx, S), (ny, S): per-axis ramp weights of each tile column / row */
    int            bx0, by0, bx1, by1; /* the bounding box of those tiles, end exclusive */
    int            input_is_linear;
} ck_tile_blend_args;

#define CK_GRAPH_SLOTS 33 /* batch sizes 1 .. CK_MAX_BATCH (include/ckey.h) */

typedef struct ck_backend_ext {
    /* Optional ops (ops_list.h CK_OPS_OPTIONAL: some refiner paths'), NULL when absent. */
    CK_OPS_OPTIONAL(CK_OP_SLOT)
    /* Optional: whether conv3x3_gn runs a fused kernel for maps of this dtype, width and group count (else it
     * runs, if at all, as a reference composition that is slower than the unfused ops). */
    int (*conv3x3_gn_fast)(ck_backend *be, ck_dtype dt, int channels, int groups);
    /* Optional: pre-processing on the device ("gpu_preprocess"), enqueued like an op. */
    void (*preprocess)(ck_backend *be, const ck_preprocess_args *a);
    /* Optional: post-processing on the device ("gpu_postprocess"), enqueued like an op; its scratch. */
    void (*postprocess)(ck_backend *be, const ck_postprocess_args *a);
    size_t (*postprocess_scratch_bytes)(int sw, int sh, int w, int h);
    /* Optional: zlib streams of byte segments on the device, enqueued like an op; its scratch. */
    void (*deflate)(ck_backend *be, const ck_deflate_args *a);
    size_t (*deflate_scratch_bytes)(int n, int64_t total_bytes);
    void (*pxr24)(ck_backend *be, const ck_pxr24_args *a);
    void (*gather)(ck_backend *be, const ck_gather_args *a);
    /* Optional: tiled keying on the device (ck_tile_blend_args); normalize: acc (n, 4) ← acc / wsum
     * (0 where wsum = 0). Enqueued like ops. */
    void (*tile_blend)(ck_backend *be, const ck_tile_blend_args *a);
    void (*tile_normalize)(ck_backend *be, float *acc, const float *wsum, int64_t n);
    /* Optional: a download enqueued without waiting (into page-locked memory; complete after the next
     * synchronize); NULL: callers use download. */
    void (*download_async)(ck_backend *be, void *dst_host, const void *src_dev, size_t bytes);
    /* Optional: page-locked host memory (fast transfers); NULL when the backend has none. */
    void *(*host_alloc)(ck_backend *be, size_t bytes);
    void (*host_free)(ck_backend *be, void *ptr);
    /* CUDA Graph capture of everything enqueued between begin and end, kept in slot 0..CK_GRAPH_SLOTS−1
     * (replacing what the slot held); launch replays a slot; reset drops every slot. */
    int (*graph_begin)(ck_backend *be);
    int (*graph_end)(ck_backend *be, int slot);
    int (*graph_launch)(ck_backend *be, int slot);
    void (*graph_reset)(ck_backend *be);
    /* Peak device bytes allocated through this backend since creation (or the last reset). */
    size_t (*mem_peak)(ck_backend *be);
    void (*mem_peak_reset)(ck_backend *be);
    /* Elapsed device milliseconds between two host calls of timer_mark (0 = start, 1 = stop). */
    void (*timer_mark)(ck_backend *be, int which);
    float (*timer_elapsed_ms)(ck_backend *be);
} ck_backend_ext;

struct ck_backend {
    const char *name;
    ck_device   device;
    void       *impl;
    /* The first device failure (a CUDA, cuBLAS or cuDNN call that returned an error, or a kernel that
     * faulted), set by ck_backend_fail and never cleared: the ops on a failed backend are skipped
     * (ops/ops.c) and the context reports CK_STATUS_EDEVICE with this message. */
    int         failed;
    char        failure[320];
    /* Storage of activations and of weight matrices (Linear and Conv2d weights). Vectors (biases,
     * norm affines) stay float32 in every mode, pos_embed too except in fp16; the network input is in
     * the activation dtype, the output float32. Kernels accumulate in float32. */
    ck_dtype    act_dtype;
    ck_dtype    weight_dtype;
    /* memory (device side); alloc returns NULL on failure */
    void *(*alloc)(ck_backend *be, size_t bytes);
    void (*free)(ck_backend *be, void *ptr);
    void (*upload)(ck_backend *be, void *dst_dev, const void *src_host, size_t bytes);
    void (*download)(ck_backend *be, void *dst_host, const void *src_dev, size_t bytes);
    void (*synchronize)(ck_backend *be);
    void (*destroy)(ck_backend *be);
    ck_backend_ext ext;
    CK_OPS(CK_OP_SLOT) /* the ops, one slot each */
};
#undef CK_OP_SLOT


typedef struct ck_backend_opts {
    int          device_index;
    ck_precision precision;       /* activations and weight matrices: fp32, bf16 or fp16 */
    int          fused_attention; /* 1: flash-style fused kernel ("sdpa"); 0: unfused reference */
    int          weights_only;    /* memory and uploads only (a shared model's weights): no scratch, no
                                     library handles; its ops must not be called */
} ck_backend_opts;

ck_backend *ck_backend_cpu_create(int threads);
/* NULL with a message in err when CUDA is not built or no usable device exists. */
ck_backend *ck_backend_cuda_create(const ck_backend_opts *opts, ck_err *err);

/* Records the backend's first failure (later ones are only logged at debug level). */
void ck_backend_fail(ck_backend *be, const char *fmt, ...) CK_PRINTF(2, 3);

/* Every op slot is filled (checked when a backend is created). */
int ck_backend_complete(const ck_backend *be, const char **missing);

#endif
