/* ckey: CorridorKey GreenFormer inference engine (public C API).
 *
 * Usage:
 *     ck_params p = ck_params_default();
 *     p.size = 2048;                        // model resolution, multiple of 32
 *     ck_ctx *ctx = NULL;
 *     ck_status st = ck_ctx_init(&ctx, "CorridorKey.pth", &p);
 *     if (st != CK_OK) { fprintf(stderr, "%s\n", ck_ctx_last_error(ctx)); ... }
 *     ck_image rgb = {...}, hint = {...};   // float32 interleaved, see ck_image
 *     ck_result res = {0};
 *     st = ck_key_image(ctx, &rgb, &hint, &res);   // alpha/fg/processed/comp at the frame size
 *     ...
 *     ck_result_free(&res);
 *     ck_ctx_free(ctx);
 *
 * Thread safety: a ck_ctx is used by one thread at a time. Independent contexts may run
 * concurrently (each owns its weights and arenas). Errors are reported as ck_status codes;
 * the detailed message of the last failure is available from ck_ctx_last_error() and is
 * also passed to the log callback (stderr by default).
 */
#ifndef CKEY_H
#define CKEY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The one place the version is written (CMakeLists.txt reads it from here). */
#define CK_VERSION_MAJOR 0
#define CK_VERSION_MINOR 1
#define CK_VERSION_PATCH 0
/* "MAJOR.MINOR.PATCH" of the library actually linked (the macros above are the header's). */
const char *ck_version(void);

typedef enum ck_status {
    CK_OK               = 0,
    CK_STATUS_EINVAL    = -1,  /* invalid argument or option */
    CK_STATUS_EIO       = -2,  /* file missing, unreadable or unwritable */
    CK_STATUS_EFORMAT   = -3,  /* corrupt or truncated file, unsupported encoding */
    CK_STATUS_ESHAPE    = -4,  /* tensor or image of the wrong shape / size */
    CK_STATUS_EDTYPE    = -5,  /* tensor of an unsupported or unexpected dtype */
    CK_STATUS_EMISSING  = -6,  /* checkpoint lacks a required tensor */
    CK_STATUS_EOOM      = -7,  /* allocation failed or size overflow */
    CK_STATUS_ENODEV    = -8,  /* requested device not available */
    CK_STATUS_EDEVICE   = -9,  /* device runtime error (CUDA, cuBLAS, cuDNN) */
    CK_STATUS_EBADSTATE = -10, /* context unusable after an earlier fatal error */
    CK_STATUS_EUNSUPPORTED = -11 /* valid request this build cannot serve */
} ck_status;

const char *ck_status_str(ck_status st);

/* A message buffer, owned by the caller, that the calls of ckey_io.h, ckey_qa.h and ckey_bench.h fill on
 * failure (one message naming the file or the argument); zero it before use. */
typedef struct ck_err {
    char msg[512];
} ck_err;

typedef enum ck_device { CK_DEVICE_AUTO = 0, CK_DEVICE_CPU = 1, CK_DEVICE_CUDA = 2 } ck_device;
/* AUTO: fp32 on the CPU (its only precision), fp16 on CUDA (measured: as fast as bf16 and within the
 * accuracy bounds, see docs/benchmarks). */
typedef enum ck_precision { CK_PREC_FP32 = 0, CK_PREC_BF16 = 1, CK_PREC_FP16 = 2, CK_PREC_AUTO = 3 } ck_precision;

typedef enum ck_log_level { CK_LOG_ERROR = 0, CK_LOG_WARN = 1, CK_LOG_INFO = 2, CK_LOG_DEBUG = 3 } ck_log_level;
typedef void (*ck_log_fn)(ck_log_level level, const char *msg, void *user);
/* Replace the process-wide log sink (NULL restores stderr). Messages below `min_level` are dropped. */
void ck_set_log(ck_log_fn fn, void *user, ck_log_level min_level);
/* One message (printf format) through that sink, as the library's own messages go: for hosts that want
 * theirs alongside. */
void ck_log(ck_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The encoding of the plates handed to ck_key_* (ck_params.colorspace). Each is a transfer curve
 * (code values -> scene-linear) and a gamut; the network works on sRGB-encoded Rec.709, so a plate is
 * decoded, taken to linear Rec.709 (D65; the ACES and camera gamuts through ACES2065-1 with the
 * matrices OpenColorIO's built-in transforms use) and sRGB-encoded after the resize, as linear
 * plates are. The Processed pass comes back linear in the plate's own gamut (ACEScct: ACEScg). */
typedef enum ck_colorspace {
    CK_CS_DEFAULT = 0,     /* as input_is_linear says: sRGB-encoded Rec.709, or linear Rec.709 */
    CK_CS_SRGB,            /* sRGB-encoded Rec.709 / sRGB primaries */
    CK_CS_LINEAR_REC709,   /* scene-linear Rec.709 / sRGB primaries */
    CK_CS_LOGC3,           /* ARRI LogC3 (EI 800), ALEXA Wide Gamut 3 */
    CK_CS_LOGC4,           /* ARRI LogC4, ARRI Wide Gamut 4 */
    CK_CS_SLOG3,           /* Sony S-Log3, S-Gamut3.Cine */
    CK_CS_LOG3G10,         /* RED Log3G10, REDWideGamutRGB */
    CK_CS_ACESCCT,         /* ACEScct (AP1) */
    CK_CS_ACES2065_1,      /* ACES2065-1 (AP0, linear) */
    CK_CS_ACESCG,          /* ACEScg (AP1, linear) */
    CK_CS_REC2020_LINEAR,  /* scene-linear Rec.2020 */
    CK_CS_COUNT
} ck_colorspace;

/* "srgb", "rec709", "linear", "logc3", "logc4", "slog3", "log3g10", "acescct", "aces2065-1", "acescg",
 * "rec2020-linear" and OCIO-style long names ("ARRI LogC3 (EI800) AWG3", "ACES2065-1", ...), any case;
 * 0 and *out set on success, -1 for an unknown name. */
int         ck_colorspace_parse(const char *name, ck_colorspace *out);
const char *ck_colorspace_name(ck_colorspace cs); /* the short name; "default"; NULL when out of range */
/* The names ck_colorspace_parse takes, comma-separated (for help texts). */
const char *ck_colorspace_names(void);

typedef struct ck_params {
    int          size;            /* model resolution S (multiple of 32); default 2048 */
    ck_device    device;          /* default CK_DEVICE_AUTO */
    ck_precision precision;       /* default CK_PREC_AUTO */
    int          threads;         /* CPU threads, 0 = all cores */
    int          head_dim;        /* 0 = from the checkpoint metadata, else 56 */
    int          use_refiner;     /* default 1 */
    float        refiner_scale;   /* logit-space scale of the refiner delta; default 1.0 */
    int          input_is_linear; /* 1: input RGB is linear light (converted to sRGB after resize) */
    float        despill;         /* 0..1, default 0.5 */
    int          despeckle;       /* default 1 */
    int          despeckle_size;  /* minimum island area in pixels, default 400 */
    int          comp;            /* produce the checkerboard comp, default 1 */
    int          keep_intermediates; /* keep f1..f4/logits for inspection (debug; more memory);
                                        the seed benchmarks' "slim" toggle is its inverse */
    /* Execution toggles, named as in the seed benchmarks: diagnostics. Each default is the measured best
     * (docs/benchmarks, the ablation sweeps of `ckey bench --sweep`) and the outputs do not depend on them
     * beyond rounding; a host changes them only to measure. */
    int          fused_attention; /* "sdpa": fused flash-style attention (1, default) vs the unfused
                                     reference with materialized scores (0) */
    int          pad64;           /* "pad64": zero-pad head_dim 56 to 64 for attention; -1 = auto
                                     (on for CUDA bf16/fp16, off otherwise) */
    int          cuda_graph;      /* "compile": capture the forward once as a CUDA Graph and replay it
                                     per frame; -1 = auto (on for CUDA), ignored on the CPU */
    int          stage_gc;        /* "stage_gc": synchronize between backbone, decoders and refiner
                                     (no effect while a CUDA Graph is used); default 0 */
    int          fused_decode;    /* "fused_decode": both decoder heads in one pass (512 channels, one
                                     upsample per scale); 0 runs the alpha and fg heads one after the
                                     other (same arithmetic per head); default 1 */
    int          gpu_preprocess;  /* "gpu_preprocess": resize + normalize the frame on the device (CUDA;
                                     tiled mode: the tiles, blended on the device too); 0 = on the host;
                                     -1 = auto (on for CUDA) */
    int          gpu_postprocess; /* "gpu_postprocess": ck_key_passes resizes back and post-processes on
                                     the device (CUDA; full frame, and tiled plates of at least a tile
                                     with gpu_preprocess) and downloads only the passes as
                                     stored (half / 8-bit); 0 = on the host; -1 = auto (on for CUDA) */
    int          gpu_encode;      /* "gpu_encode": with gpu_postprocess, ck_key_passes also encodes the EXR
                                     passes as PXR24 chunks on the device (ck_passes.chunk_*); 0 = off
                                     (the writers compress on the host); -1 = auto (on for CUDA) */
    /* Tiled mode: 0 = full frame (the plate is resized to `size`). Otherwise the model runs at
     * S = tile on tiles of the plate at its native resolution, stepped by tile − tile_overlap and
     * blended with linear ramps; all-background / all-foreground hints skip a tile, and a hint whose
     * bounding box plus 64 px fits one tile runs that tile only. */
    int          tile;
    int          tile_overlap;
    /* Images per forward (tiles of a plate, or frames with ck_key_passes_batch): the activation arena
     * is planned for max_batch images and each batch size used gets its own CUDA graph. 0 = auto: in
     * tiled mode on CUDA as many tiles as fit about 2 GiB of activations (at most 16), else 1.
     * At most CK_MAX_BATCH. */
    int          max_batch;
    /* The plates' encoding (ck_colorspace; default CK_CS_DEFAULT = as input_is_linear says). Any other
     * value decides alone: input_is_linear is then ignored (set from it in the context's params). */
    int          colorspace;
    /* Scene-linear highlights in Processed: where the matte is opaque and the plate brighter than 1.0
     * (the network's fg is bounded), Processed takes the plate's own linear value. Weight
     * clamp((alpha - 0.98) / 0.019, 0, 1) * clamp((max(R, G, B) - 1) / 0.25, 0, 1) (R, G, B: the
     * plate in linear Rec.709) of the plate's linear value (its own gamut) against the network's;
     * 0 (default) = off. */
    int          keep_highlights;
    /* The CUDA device (0-based, among those CUDA_VISIBLE_DEVICES leaves visible); default 0. */
    int          device_index;
    /* The foreground un-mixed from the plate: where the matte is above 0.1, fg is blended (fully from 0.25)
     * toward F = (I − (1 − alpha)·B) / alpha in linear light, I the plate and B the screen estimated from the
     * pixels the matte calls screen (the compositing equation solved for F; frame_ops.h ck_fg_unmix). 1 = on,
     * 0 = off (the network's fg as it is), -1 (default) = auto: on for the built-in keyer (its fg error is about
     * a fifth lower with it: docs/model_card_small.md), off for any other checkpoint (CorridorKey's passes stay
     * the original's). The context resolves auto (ck_ctx_params); with it on, ck_key_passes post-processes on
     * the host. ck_result_finish un-mixes when its params say 1 (ck_ctx_params(ctx) of such a context);
     * ck_key_image_into's `post` may say 0 to skip it for a frame, -1 follows the context. */
    int          fg_unmix;
} ck_params;

#define CK_MAX_BATCH 32

ck_params ck_params_default(void);

/* Interleaved float32 image, row-major, `channels` values per pixel. */
typedef struct ck_image {
    int    width, height, channels;
    float *data;
} ck_image;

/* Outputs at the input frame size. Each buffer is malloc'd by the library (ck_key_image, ck_result_finish:
 * the caller's to free with ck_result_free), or, with ck_key_image_into, the caller's own, reused. */
typedef struct ck_result {
    ck_image alpha;     /* 1 ch, linear coverage, not despeckled */
    ck_image fg;        /* 3 ch, straight sRGB-encoded foreground, not despilled */
    ck_image processed; /* 4 ch, linear premultiplied RGBA (despilled, despeckled), in the plate's gamut */
    ck_image comp;      /* 3 ch, sRGB comp over a checkerboard (empty when params.comp = 0) */
    ck_image plate;     /* 3 ch, the plate as given, kept by ck_key_image_begin for ck_result_finish
                           when params.keep_highlights or fg_unmix (freed by it); empty otherwise */
} ck_result;

typedef struct ck_ctx ck_ctx;

/* A model: a checkpoint loaded once onto one device (its weights validated, folded and uploaded), immutable
 * from then on and shared by any number of contexts, each with its own activations, device stream and frame
 * state, usable from its own thread at the same time as the others. Two streams of one model hold its
 * weights once.
 *
 *     ck_model *m; char msg[512];
 *     if (ck_model_load(&m, "CorridorKey.pth", &params, msg, sizeof msg) != CK_OK) { puts(msg); ... }
 *     ck_ctx *a, *b;
 *     ck_ctx_init_model(&a, m, &params); ck_ctx_init_model(&b, m, &params);   // a thread each
 *     ck_model_release(m);   // the contexts keep it alive
 *
 * The model fixes size (tile, when tiled), device, device_index, precision and head_dim from params; the
 * rest of params belongs to each context. */
typedef struct ck_model ck_model;
/* *out NULL and the reason in msg (msg_len bytes; may be NULL) on failure. The caller holds one reference. */
ck_status        ck_model_load(ck_model **out, const char *checkpoint_path, const ck_params *params, char *msg,
                               size_t msg_len);
/* Drops one reference; the last (the caller's and every context's) frees the weights. NULL is ignored. */
void             ck_model_release(ck_model *model);
size_t           ck_model_weight_bytes(const ck_model *model);
/* The settings the model fixed, resolved (device and precision as chosen, head_dim from the checkpoint). */
const ck_params *ck_model_params(const ck_model *model);

/* Loads the checkpoint (.pth or .safetensors), validates every tensor, plans memory for params->size: a
 * model of its own (ck_model_load) and one context over it. On failure *out still points to a context
 * whose ck_ctx_last_error says why (free it with ck_ctx_free). */
ck_status   ck_ctx_init(ck_ctx **out, const char *checkpoint_path, const ck_params *params);
/* A context over a loaded model (it takes a reference): params' size, device, device_index, precision and
 * head_dim must agree with the model's (CK_DEVICE_AUTO, CK_PREC_AUTO and head_dim 0 take the model's),
 * else CK_STATUS_EINVAL naming the difference. */
ck_status   ck_ctx_init_model(ck_ctx **out, ck_model *model, const ck_params *params);

/* Checkpoint paths that name no file, taken by ck_model_load and ck_ctx_init in place of one:
 *   "builtin:small" (or "builtin"): the small keyer embedded in the library (docs/model_card_small.md),
 *     trained at ck_builtin_train_size() pixels, its best model size on the CPU;
 *   "random:base_plus", "random:tiny": random weights of CorridorKey's architecture (Hiera-Base-Plus) or of
 *     the small test one, generated in memory from a fixed seed (benchmarks, smoke runs: not a key). */
#define CK_BUILTIN_SPEC "builtin:small"
int         ck_builtin_is_spec(const char *path);        /* 1 for "builtin" and "builtin:small" */
int         ck_builtin_train_size(void);                 /* pixels (the embedded metadata's train_size) */
int         ck_random_weights_is_spec(const char *path); /* 1 when path starts with "random:" */
void        ck_ctx_free(ck_ctx *ctx);
/* Message of the last failure on this context (or of the failed init when ctx is NULL). */
const char *ck_ctx_last_error(const ck_ctx *ctx);
const ck_params *ck_ctx_params(const ck_ctx *ctx);

/* The look of a key: the parameters that may change from frame to frame without reloading (the
 * corresponding ck_params fields, which ck_ctx_init takes as their first values). */
typedef struct ck_frame_params {
    float refiner_scale;  /* logit-space scale of the refiner delta (ck_params.refiner_scale) */
    float despill;        /* 0..1 */
    int   despeckle;      /* 0 / 1 */
    int   despeckle_size; /* minimum island area in pixels, ≥ 1 */
    int   comp;           /* 0 / 1: produce the checkerboard comp */
} ck_frame_params;
ck_frame_params ck_ctx_frame_params(const ck_ctx *ctx);
/* Sets them for every frame keyed from now on through this context (ck_key_image, ck_key_passes, the
 * batch calls, ck_key_image_begin; ck_result_finish takes a ck_params: pass ck_ctx_params(ctx)). A new
 * refiner scale re-records the CUDA graphs at their next use (one eager forward and a capture, the cost
 * of a first frame). CK_STATUS_EINVAL (nothing changed) for a value out of range. */
ck_status ck_ctx_set_frame_params(ck_ctx *ctx, const ck_frame_params *fp);

/* Full frame: resize to S, run the network, resize back, post-process. `hint` is 1 channel. */
ck_status ck_key_image(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint, ck_result *out);
void      ck_result_free(ck_result *res);

/* ck_key_image in two stages, for pipelines that overlap frames:
 * begin runs the network (this context, one thread at a time) and fills res->alpha and res->fg only, at
 * the model size S (full frame) or at the frame size (tiled); finish resizes them to width × height
 * (Lanczos-4) and post-processes into processed and comp. finish touches no context: it may run on
 * another thread, for several frames at once. ck_key_image = begin + finish with ck_ctx_params(ctx). */
ck_status ck_key_image_begin(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint, ck_result *res);
ck_status ck_result_finish(const ck_params *p, int width, int height, ck_result *res);

/* ck_key_image into a result the caller keeps from frame to frame: its buffers are written in place when they
 * have the frame's size, so that keying frame after frame allocates no output memory (ck_key_image mallocs
 * ~90 MB per 1080p frame, which the kernel then page-faults in afresh on every call). The values equal
 * ck_key_image's (begin + ck_result_finish with `post`) bit for bit. post: the post-processing of this frame,
 * as ck_result_finish reads it (despill, despeckle, despeckle_size, comp, colorspace, input_is_linear,
 * keep_highlights); NULL: ck_ctx_params(ctx). The context keeps its own intermediate buffers (the network's
 * output at S x S, the resize's workspace), grown once per frame size, freed by ck_ctx_free.
 *
 *     ck_result res = {0};                   // kept across frames
 *     for (...) st = ck_key_image_into(ctx, &rgb, &hint, NULL, &res);   // the first call allocates
 *     ck_result_free(&res);
 *
 * Ownership: out and every buffer in it are the caller's, before and after the call. For out->alpha (1
 * channel), fg (3), processed (4) and, when post->comp, comp (3):
 *   - data NULL: malloc'd here at the frame's width x height and channels (ck_image filled in); the caller's
 *     from then on, to free (ck_result_free frees with free()), or to pass again;
 *   - data non-NULL with width, height and channels equal to the frame's: written in place (any memory the
 *     caller owns: malloc'd, a pool's, page-locked, another library's array);
 *   - data non-NULL of another size: CK_STATUS_ESHAPE before any work, out unchanged. The library never
 *     frees or reallocates a buffer it was given: for a frame of another size the caller frees (or keeps)
 *     those buffers and passes them empty.
 * Without the comp (post->comp 0), out->comp is neither written nor freed. out->plate must be empty
 * (CK_STATUS_EINVAL): rgb itself is read for keep_highlights. The buffers must not overlap rgb, hint or each
 * other. On a failure after the checks the buffers stay in out (those allocated by this call included) and
 * their contents are unspecified. One thread at a time per context, as ck_key_image. */
ck_status ck_key_image_into(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint, const ck_params *post,
                            ck_result *out);

/* The passes as CorridorKey's files store them: IEEE half (round to nearest even) for the EXR passes,
 * uint8(clip(v, 0, 1)·255) truncated for the comp. Interleaved, row-major, one block behind all four
 * (page-locked on CUDA, for fast transfers). Zero-initialize before first use; buffers are reused
 * from frame to frame while large enough. */
typedef struct ck_passes {
    int       width, height;
    uint16_t *alpha;     /* (h, w, 1) raw alpha, linear (Matte) */
    uint16_t *fg;        /* (h, w, 3) raw straight sRGB foreground (FG) */
    uint16_t *processed; /* (h, w, 4) linear premultiplied RGBA, despilled, despeckled (Processed) */
    uint8_t  *comp;      /* (h, w, 3) sRGB over the checkerboard (Comp); NULL when params.comp = 0 */
    /* With gpu_encode: the EXR passes already PXR24-encoded on the device, chunk by chunk as the file
     * stores them (ck_image_write_exr_chunks). exr_chunks = 0: not encoded, write from the halves. */
    int       exr_lines;       /* scanlines per chunk (16 for PXR24) */
    int       exr_chunks;      /* chunks per pass: ⌈height / exr_lines⌉ */
    int32_t  *chunk_bytes;     /* (3 · exr_chunks) Matte's, FG's, then Processed's: a zlib stream's
                                  length, or 0 for a chunk stored uncompressed (built from the halves) */
    uint8_t  *chunk_data;      /* the streams back to back, in that order */
    /* The memory behind the pointers, the library's (ck_passes_reserve, ck_key_passes, ck_passes_free):
     * page-locked blocks of the context's device when it has such memory, reused frame after frame. A
     * zeroed ck_passes owns nothing. */
    struct ck_passes_mem *mem;
    /* Set by the caller when the EXR files are all it needs of the halves: with exr_chunks, alpha, fg
     * and processed are NULL unless some chunk is stored uncompressed (chunk_bytes 0), and then only
     * those chunks' rows are filled; comp is always complete. Spares ~130 MB of transfers and of
     * page-locked memory per 4K frame. */
    int       chunks_only;
} ck_passes;

/* How EXR files are compressed (the passes' writers, ckey_shot.h). */
typedef enum ck_exr_compression {
    CK_EXR_PXR24 = 0, /* CorridorKey's choice; lossless for half data; the device can encode it (gpu_encode) */
    CK_EXR_ZIP   = 1,
    CK_EXR_NONE  = 2
} ck_exr_compression;

/* A frame keyed into passes. With gpu_postprocess in effect (CUDA, full frame) everything after
 * decoding runs on the device and only the passes are downloaded; otherwise ck_key_image then
 * ck_passes_from_result (the same values: see ck_ctx_postprocess_on_device). */
ck_status ck_key_passes(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint, ck_passes *out);
/* n frames (1 ≤ n ≤ ck_ctx_max_batch) in one forward, full frame: out[i] as ck_key_passes(rgb[i],
 * hint[i]) would fill it (the same values). Tiled contexts key them one by one (their batches are
 * the tiles). */
ck_status ck_key_passes_batch(ck_ctx *ctx, int n, const ck_image *rgb, const ck_image *hint, ck_passes *out);
/* 1 when ck_key_passes post-processes on this context's device; ..._encodes_...: and PXR24-encodes. */
int       ck_ctx_postprocess_on_device(const ck_ctx *ctx);
int       ck_ctx_encodes_on_device(const ck_ctx *ctx);
/* Host conversion of a finished result (ck_result_finish) into passes; any thread. */
ck_status ck_passes_from_result(const ck_result *res, ck_passes *out);
/* Frees out's memory (page-locked blocks through ctx, so before ck_ctx_free; ctx may be NULL otherwise). */
void      ck_passes_free(ck_ctx *ctx, ck_passes *out);
/* dst (freed first) becomes a copy of src in ordinary memory, the encoded chunks included: passes to keep
 * while src's blocks are reused for the next frame. */
ck_status ck_passes_copy(ck_passes *dst, const ck_passes *src);
/* 1 when p's samples are in page-locked memory. */
int       ck_passes_pinned(const ck_passes *p);
/* Sizes out for ck_key_passes on w × h frames of this context (as out->chunks_only asks; the encoded
 * chunks by the last frame's size), so the keying thread then allocates nothing. Any thread, for
 * passes no other thread is using: pipelines call it where frames are decoded, because page-locked
 * memory is slow to allocate. Optional. */
ck_status ck_passes_reserve(ck_ctx *ctx, ck_passes *out, int w, int h);

/* Readies the device for frames (one forward on a blank input: kernels loaded, library plans chosen,
 * the graph recorded), so that the first frame costs what the others do; pipelines call it while the
 * first frames are being decoded. Nothing to do on the CPU backend. */
ck_status ck_ctx_warmup(ck_ctx *ctx);

/* Host memory for frames handed to this context: page-locked when the device offers it (CUDA: uploads
 * and downloads at full bus speed, no staging copy) and the context's page-locked total stays within a
 * quarter of the machine's memory, else malloc. *pinned says which; free with the same size and flag.
 * Any thread; free before ck_ctx_free. ck_ctx_has_pinned_memory: 1 on CUDA. */
void *ck_ctx_host_alloc(ck_ctx *ctx, size_t bytes, int *pinned);
void  ck_ctx_host_free(ck_ctx *ctx, void *ptr, size_t bytes, int pinned);
int   ck_ctx_has_pinned_memory(const ck_ctx *ctx);

/* Network only, on an already pre-processed input x (1,S,S,4) NHWC (normalized RGB + hint).
 * Writes alpha (S*S) and fg (S*S*3, interleaved) when non-NULL. */
ck_status ck_run_network(ck_ctx *ctx, const float *x_nhwc, float *alpha, float *fg_rgb);
/* The same for n images in one forward (1 ≤ n ≤ ck_ctx_max_batch): x (n,S,S,4), alpha (n,S,S),
 * fg (n,S,S,3). */
ck_status ck_run_network_batch(ck_ctx *ctx, int n, const float *x_nhwc, float *alpha, float *fg_rgb);
/* Images per forward this context was planned for (params.max_batch, resolved). */
int       ck_ctx_max_batch(const ck_ctx *ctx);

/* Peak bytes of the activation arena and of the weights for this context. */
size_t ck_ctx_activation_bytes(const ck_ctx *ctx);
size_t ck_ctx_weight_bytes(const ck_ctx *ctx);
/* Peak device memory allocated by this context's backend (0 on the CPU), and the device name. */
size_t      ck_ctx_device_peak_bytes(const ck_ctx *ctx);
const char *ck_ctx_device_name(const ck_ctx *ctx);
/* The precision the context's network computes in: "float32", "bfloat16" or "float16" (auto resolved). */
const char *ck_ctx_precision_name(const ck_ctx *ctx);

/* Frame helpers, as the engine's own pre- and post-processing compute them (any thread). */
/* The sRGB transfer on one value: max(x, 0), then 12.92·x below 0.0031308, else 1.055·x^(1/2.4) − 0.055;
 * and its inverse: max(x, 0), then x / 12.92 below 0.04045, else ((x + 0.055) / 1.055)^2.4. */
float     ck_linear_to_srgb(float x);
float     ck_srgb_to_linear(float x);
/* The hint ck_key_* takes when a plate has none: a rough (h, w) matte into `hint` (caller's memory) from the
 * plate (h, w, 3): a chroma-difference matte against the detected screen colour (green or
 * blue; *screen_is_blue says which, may be NULL), coarsened and eroded like a drawn hint. CK_STATUS_EOOM
 * when its scratch cannot be allocated. */
ck_status ck_auto_hint(float *hint, const float *rgb, int w, int h, int *screen_is_blue);

/* CUDA devices visible to this process (for `ckey doctor`, presets, reports). The count is 0 when the
 * build has no CUDA support, or there is no driver or device; it never fails. ck_cuda_device_info
 * creates the device's context to read its free memory (a one-off cost of a few hundred ms). */
typedef struct ck_device_info {
    char   name[256];
    size_t total_bytes, free_bytes;
    int    cc_major, cc_minor;  /* compute capability */
    int    multiprocessors;
    int    integrated;          /* 1: shares the host's memory (Jetson-, Grace-class unified memory) */
} ck_device_info;
int       ck_cuda_device_count(void);
ck_status ck_cuda_device_info(int index, ck_device_info *out);

#ifdef __cplusplus
}
#endif
#endif /* CKEY_H */
