/* The context behind the public ck_ctx handle and the loaded model behind ck_model (internal: tests reach
 * intermediates through them). */
#ifndef CK_CTX_H
#define CK_CTX_H

#include "model/model.h"

#include <stdatomic.h>

/* A checkpoint loaded onto one device (model_load.c): immutable once loaded, shared by its contexts. */
struct ck_model {
    ck_params     params; /* as loaded, resolved: device, precision, size, head_dim, device_index */
    ck_checkpoint ckpt;   /* kept open: CPU weights point into its in-memory copy */
    ck_config     cfg;
    ck_backend   *be;     /* the weights' memory (CUDA: a weights-only backend) */
    ck_weights    w;
    atomic_int    refs;   /* the loader's reference and one per context */
    int           builtin; /* the built-in keyer (its contexts un-mix the fg by default: ck_params.fg_unmix) */
};

/* The backend of params' device and precision (CK_DEVICE_AUTO: CUDA when usable, else the CPU, with a
 * notice); weights_only: memory and uploads only (a model's). NULL with *st and err set on failure. */
ck_backend *ck__make_backend(const ck_params *p, int weights_only, ck_err *err, ck_status *st);
/* Loads a model (one reference, for the caller); *out NULL and err set on failure. */
ck_status   ck__model_load(ck_model **out, const char *checkpoint_path, const ck_params *params, ck_err *err);
ck_model   *ck__model_retain(ck_model *m);

/* The memory behind a ck_passes (include/ckey.h): its pass block and its chunk block, page-locked or not. */
struct ck_passes_mem {
    void  *block; /* comp | alpha | fg | processed (passes.c passes_layout) */
    size_t block_bytes;
    int    pinned;
    void  *chunk_block; /* chunk sizes, then the streams */
    size_t chunk_block_bytes;
    int    chunk_pinned;
};
typedef struct ck_passes_mem ck_passes_mem;

struct ck_ctx {
    ck_params     params;
    ck_model     *model; /* the checkpoint, configuration and weights (one reference) */
    ck_config     cfg;   /* the model's (copies: read on every forward) */
    ck_backend   *be;    /* this context's own: stream, scratch, activations */
    ck_weights    w;
    void         *act_block; /* activation arena memory on the backend */
    size_t        act_bytes;
    ck_arena      arena;
    ck_model_out  last;      /* tensors of the last forward (valid while nothing else ran) */
    int           last_batch; /* images in the last forward */
    int           max_batch;  /* images per forward the arena is planned for (params.max_batch resolved) */
    int           host_batch; /* images host_x / host_out / host_x16 hold (1, grown to max_batch on demand) */
    float        *host_x;    /* (host_batch, S, S, 4) pre-processed input */
    float        *host_out;  /* (host_batch, S, S, 4) alpha, fg */
    uint16_t     *host_x16;  /* (host_batch, S, S, 4) host_x in the 16-bit activation dtype (16-bit engines) */
    float        *cs_plate;        /* (h, w, 3) a plate of a converted colour space in linear Rec.709
                                      (ck__ctx_working_plate), grown once per frame size */
    size_t        cs_plate_floats;
    float        *pre_scratch;     /* host pre-processing workspace */
    size_t        pre_scratch_floats;
    /* ck_key_image_into's own buffers, grown once per frame size and kept, so that keying frame after frame
     * into the caller's outputs allocates (and page-faults in) nothing: the network's alpha and fg at S × S
     * before the resize back (or the device tiles' blend), and the Lanczos resize's workspace */
    float        *into_keyed;
    size_t        into_keyed_floats;
    float        *into_ws;
    size_t        into_ws_floats;
    /* device pre-processing (gpu_preprocess) for frames of pre_w × pre_h: frame, hint, the horizontal
     * pass and the tap tables, in the activation arena behind the input when they fit (nothing else
     * lives there before the forward starts), else in pre_dev */
    int           pre_w, pre_h;
    void         *pre_dev;
    size_t        pre_dev_bytes;
    ck_preprocess_args pre;
    void         *pre_taps;       /* host copy of the tap tables, as laid out on the device */
    size_t        pre_taps_bytes; /* uploaded before every frame: the arena is overwritten by each forward */
    /* device post-processing (gpu_postprocess, passes.c) for frames of post_w × post_h: passes | taps |
     * scratch, in the activation arena's larger gap around the network output when they fit (nothing
     * else is live there after the forward), else in post_dev */
    int           post_w, post_h, post_comp, post_sw, post_sh; /* frame size, comp, source size */
    const void   *post_live;       /* the arena region the layout kept clear (NULL: none) */
    size_t        post_live_bytes;
    void         *post_dev;
    size_t        post_dev_bytes;
    ck_postprocess_args post;
    void         *post_passes_dev; /* the passes on the device, laid out as the host block */
    size_t        post_passes_bytes;
    void         *post_taps;       /* host copy of the Lanczos tap tables, uploaded before every frame */
    void         *post_taps_dev;
    size_t        post_taps_bytes;
    /* device PXR24 encoding of the passes (gpu_encode): segments = 3 EXR passes × chunks; the regions
     * follow the passes and taps, over the post-processing scratch (free again by then) */
    int           enc_n, enc_chunks, enc_lines;
    int64_t      *enc_seg_off_host; /* (enc_n + 1) */
    uint8_t      *enc_xf, *enc_dst;  /* transformed passes (16·w·h bytes), then the gathered streams; deflated */
    int64_t      *enc_seg_off, *enc_dst_off; /* (enc_n + 1) */
    int32_t      *enc_bytes;        /* (enc_n) */
    void         *enc_scratch;
    atomic_size_t enc_last_total;  /* the last frame's encoded bytes: ck_passes_reserve sizes by it */
    atomic_size_t pinned_bytes;    /* page-locked host memory handed out (ck_ctx_host_alloc), any thread */
    size_t        pinned_budget;   /* at most a quarter of physical memory */
    uint64_t      graph_ready; /* bit B: the forward of batch B captured as a CUDA graph (graph slot B) */
    ck_model_out  graph_out[CK_MAX_BATCH + 1]; /* the tensors of graph B's forward */
    /* device tiled keying (tiled.c): the plate, the blend accumulators and the tiles' pre-processing
     * scratch for plates of tile_w × tile_h, in tile_dev */
    int           tile_w, tile_h;
    void         *tile_dev;
    size_t        tile_dev_bytes;
    double        bench_t0_ms; /* ck_bench_timer_start's host clock (backends without device timers) */
    int           failed;
    ck_err        err;
};

/* Runs the network on host_x into host_out: upload, compute (graph replay when enabled), download.
 * The _n forms run a batch of n images (1 ≤ n ≤ max_batch; host buffers from ck__ctx_host_batch). */
/* forward.c: the ck_exec of this context's settings (planning: measure only), whether forwards replay a
 * CUDA Graph, and host_x images [first, first + n) into the input tensor's slots. */
ck_exec   ck__ctx_exec(ck_ctx *ctx, int planning);
/* A public call on a context starts (api.c): an earlier, handled failure's message is not this call's
 * (within one call the first failure is kept: it is the cause), and this thread computes with the
 * context's thread count (OpenMP's is per thread; a context may be used by a thread other than its
 * creator's). Not for a failed context (its message says why it failed). */
void      ck__ctx_begin_call(ck_ctx *ctx);
int       ck__ctx_use_graph(const ck_ctx *ctx);
void      ck__ctx_upload_slots(ck_ctx *ctx, int first, int n);
ck_status ck__ctx_forward(ck_ctx *ctx);
ck_status ck__ctx_forward_n(ck_ctx *ctx, int n);
ck_status ck__ctx_upload_n(ck_ctx *ctx, int n);
ck_status ck__ctx_compute_n(ck_ctx *ctx, int n);
ck_status ck__ctx_download_n(ck_ctx *ctx, int n);
/* Grows host_x / host_out / host_x16 to n images (once; message set on failure). */
ck_status ck__ctx_host_batch(ck_ctx *ctx, int n);
/* The network input of batch n (n, S, S, 4) at the start of the arena, in the activation dtype. */
ck_tensor ck__ctx_input(ck_ctx *ctx, int n);
/* ck__ctx_preprocess into image `slot` of the network input: the slots of a batch are filled first,
 * then one forward runs them. */
ck_status ck__ctx_preprocess_slot(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint, int slot);
/* Puts the pre-processed frame (model_spec §7) into the network input on the backend: on the device
 * when gpu_preprocess is in effect (CUDA), else ck_preprocess into host_x and an upload. Full frame
 * only (tiles are cut on the host). rgb: 3 channels, hint: 1 channel, any sizes. */
ck_status ck__ctx_preprocess(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint);
ck_status ck__ctx_upload(ck_ctx *ctx);
/* The plate as the network's pre-processing takes it: rgb itself, or, when params.colorspace converts
 * (colorspace.h), rgb decoded into linear Rec.709 in cs_plate (*out points there; message set and
 * CK_STATUS_EOOM when it cannot grow). */
ck_status ck__ctx_working_plate(ck_ctx *ctx, const ck_image *rgb, ck_image *out);
/* A frame the context can key: not failed before, rgb 3 channels and hint 1, non-empty (message set). */
ck_status ck__check_frame(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint);
ck_status ck__ctx_compute(ck_ctx *ctx);
/* CK_STATUS_EDEVICE with the backend's failure as the context's message (the context is failed from then
 * on) when the backend recorded a device error; else CK_OK. Checked after everything that enqueues. */
ck_status ck__ctx_device_status(ck_ctx *ctx);
/* The status a failed context answers with: CK_STATUS_EDEVICE (message kept) after a device error, else
 * CK_STATUS_EBADSTATE. */
ck_status ck__ctx_failed_status(ck_ctx *ctx);
ck_status ck__ctx_download(ck_ctx *ctx);
/* Tiled keying (tiled.c): alpha (h,w) and straight fg (h,w,3) of the whole plate on the host ... */
ck_status ck__key_tiled_host(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint, float *alpha, float *fg);
/* ... or, on the device, the blended plate as (h, w, 4) float32 alpha, fg R, G, B in device memory
 * (valid until the next frame), ready for the device post-processing. */
int       ck__tiled_on_device(const ck_ctx *ctx, int w, int h);
ck_status ck__key_tiled_device(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint, const float **out_dev);
void      ck__tiled_free(ck_ctx *ctx);

#endif
