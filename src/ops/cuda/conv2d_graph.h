/* A 2-D convolution (plus bias) as a cuDNN graph-API plan (conv2d_graph.c), for conv2d_cudnn.c. */
#ifndef CK_OPS_CUDA_CONV2D_GRAPH_H
#define CK_OPS_CUDA_CONV2D_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include <cudnn.h>

/* X (n, h, w, c) ⊛ W (k, r, s, c) → Y (n, ho, wo, k), NHWC, fp16 (bf16 when bf16), symmetric padding; with
 * bias, + B (k) float32 before the one rounding to Y. x_al16 / y_al16: those buffers are 16-byte aligned. */
typedef struct ck_conv_graph_shape {
    int n, h, w, c, k, r, s, ho, wo, stride, pad_h, pad_w, dil, bf16, bias, x_al16, y_al16;
} ck_conv_graph_shape;

typedef struct ck_conv_graph ck_conv_graph;

/* Builds the graph, picks the engine (conv2d_graph.c says how) and runs it once on the given buffers (the
 * workspace at ws, at most ws_limit bytes). NULL when cuDNN offers no usable engine for it (or no memory). */
ck_conv_graph *ck__conv_graph_make(cudnnHandle_t h, const ck_conv_graph_shape *s, size_t ws_limit, const void *x,
                                   const void *w, void *y, const void *b, void *ws);
/* Enqueues the plan on the handle's stream; 0 when cuDNN refuses. */
int  ck__conv_graph_exec(ck_conv_graph *g, cudnnHandle_t h, const void *x, const void *w, void *y, const void *b,
                         void *ws);
void ck__conv_graph_free(ck_conv_graph *g);
/* The engine's global index (for the plan log). */
int64_t ck__conv_graph_engine(const ck_conv_graph *g);

#endif
