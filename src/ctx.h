/* The context behind the public ck_ctx handle (internal: tests reach intermediates through it). */
#ifndef CK_CTX_H
#define CK_CTX_H

#include "model/model.h"

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
    int           graph_ready; /* forward captured as a CUDA graph */
    int           failed;
    ck_err        err;
};

/* Runs the network on host_x into host_out: upload, compute (graph replay when enabled), download. */
ck_status ck__ctx_forward(ck_ctx *ctx);
ck_status ck__ctx_upload(ck_ctx *ctx);
ck_status ck__ctx_compute(ck_ctx *ctx);
ck_status ck__ctx_download(ck_ctx *ctx);

#endif
