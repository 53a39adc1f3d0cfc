/* The context behind the public ck_ctx handle (internal: tests reach intermediates through it). */
#ifndef CK_CTX_H
#define CK_CTX_H

#include "model/model.h"

#include <stdatomic.h>

struct ck_ctx {
    ck_params     params;
    ck_checkpoint ckpt; /* kept open: CPU weights may point into its mapping */
    ck_config     cfg;
    ck_backend   *be;
    ck_weights    w;
    void         *act_block; /* activation arena memory on the backend */
    size_t        act_bytes;
    ck_arena      arena;
    ck_model_out  last;      /* tensors of the last forward (valid while nothing else ran) */
    float        *host_x;    /* (S, S, 4) pre-processed input */
    float        *host_out;  /* (S, S, 4) alpha, fg */
    uint16_t     *host_x16;  /* (S, S, 4) host_x in the 16-bit activation dtype (16-bit engines) */
    float        *pre_scratch;     /* host pre-processing workspace */
    size_t        pre_scratch_floats;
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
    int           post_w, post_h, post_comp;
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
    int           graph_ready; /* forward captured as a CUDA graph */
    int           failed;
    ck_err        err;
};

/* Runs the network on host_x into host_out: upload, compute (graph replay when enabled), download. */
ck_status ck__ctx_forward(ck_ctx *ctx);
/* Puts the pre-processed frame (model_spec §7) into the network input on the backend: on the device
 * when gpu_preprocess is in effect (CUDA), else ck_preprocess into host_x and an upload. Full frame
 * only (tiles are cut on the host). rgb: 3 channels, hint: 1 channel, any sizes. */
ck_status ck__ctx_preprocess(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint);
ck_status ck__ctx_upload(ck_ctx *ctx);
/* A frame the context can key: not failed before, rgb 3 channels and hint 1, non-empty (message set). */
ck_status ck__check_frame(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint);
ck_status ck__ctx_compute(ck_ctx *ctx);
ck_status ck__ctx_download(ck_ctx *ctx);

#endif
