/* The one list of ops, and each op's one signature.
 *
 * An op is a backend function `void f(ck_backend *be, <parameters>)`. CK_OP_PARAMS_<name> is its
 * parameter list after `be`, written once, below what the op computes. Generated from it: the slot type
 * ck_op_<name>_fn and the slot be-><name> (ops/backend.h), the kernels' prototypes ck_<name>_cpu
 * (ops/cpu/ops_cpu.h) and ck_<name>_cuda (ops/cuda/ops_cuda.h), and the wrappers' prototypes ck_<name>
 * (ops/ops.h, `ck_exec *ex` in place of `be`; conv2d's is ck_conv2d_pad). Kernel and wrapper definitions
 * are written out; the compiler checks each against its generated prototype.
 *
 * CK_OPS: the network's ops, required in every backend (ck_backend_complete). CK_OPS_OPTIONAL: ops that
 * only some paths use (the tiled refiner, ck_refiner_forward_tiled, the fused refiner's convolution with its
 * GroupNorm moments, model/refiner.c, and the encoder's LayerNorm folded into the next linear, model/hiera.c);
 * their slots are in be->ext, NULL in a backend without them. Both lists drive the tests: every entry
 * has a case test_op_<name> in tests/test_ops_cpu.c (CPU against independent references) and in
 * tests/test_cuda_ops.c (CUDA against the CPU), so an op without a test does not build.
 *
 * Tensors are in the layouts of core/tensor.h. Kernels check nothing: the wrappers in ops/ops.c assert
 * shapes and dtypes once for every backend (and skip the call while the model is only being planned).
 */
#ifndef CK_OPS_LIST_H
#define CK_OPS_LIST_H

/* y (..., N) = act(x (..., K) · w (N, K)ᵀ + b (N)) + residual (..., N). b, residual may be NULL;
 * residual may alias y when act is NONE. */
#define CK_OP_PARAMS_linear                                                                                 \
    (const ck_tensor *y, const ck_tensor *x, const ck_tensor *w, const ck_tensor *b, ck_act act,            \
     const ck_tensor *residual)

/* y = LayerNorm over the last dim (biased variance), affine. */
#define CK_OP_PARAMS_layernorm                                                                              \
    (const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma, const ck_tensor *beta, float eps)

/* y (B,Ho,Wo,OC) = conv2d(x (B,H,W,IC), w (OC,IC,KH,KW)) + b, zero padding (pad_h rows above and below,
 * pad_w columns left and right), square stride and dilation. */
#define CK_OP_PARAMS_conv2d                                                                                 \
    (const ck_tensor *y, const ck_tensor *x, const ck_tensor *w, const ck_tensor *b, int stride, int pad_h, \
     int pad_w, int dilation)

/* y (B,H,W,C) = act(GroupNorm(x; groups, eps) + residual). Statistics over all H·W pixels and C/groups
 * channels of each sample. residual may be NULL; y may alias x and/or the residual. */
#define CK_OP_PARAMS_groupnorm                                                                              \
    (const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma, const ck_tensor *beta, int groups,     \
     float eps, const ck_tensor *residual, ck_act act)

/* y (B,H,W,N) float32 = act(GroupNorm(x (B,H,W,C); groups, eps) + residual) · w (N, C)ᵀ + b (N): the refiner's
 * last GroupNorm and its 1×1 head in one pass, the normalized map neither stored nor rounded to x's dtype.
 * residual and b may be NULL; stats (B, groups, 2) float32, when given, are the (mean, rstd) to use instead of
 * x's own (frozen: the fused refiner has them from the convolution's moments). */
#define CK_OP_PARAMS_groupnorm_linear                                                                       \
    (const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma, const ck_tensor *beta, int groups,     \
     float eps, const ck_tensor *residual, ck_act act, const ck_tensor *w, const ck_tensor *b,              \
     const ck_tensor *stats)

/* o (G,Tq,HD) = softmax(q (G,Tq,HD) · k (G,Tk,HD)ᵀ · scale) · v (G,Tk,HD), flash-style (no G·Tq·Tk). */
#define CK_OP_PARAMS_attention                                                                              \
    (const ck_tensor *o, const ck_tensor *q, const ck_tensor *k, const ck_tensor *v, float scale)

/* Split qkv (B,H,W,3C), C = heads·HD (channel = which·C + head·HD + d), into per-(batch, head, window)
 * groups: k, v (B·heads·nwin, win_h·win_w, HDp) with windows of win_h×win_w tokens tiling the grid
 * (raster order inside a window, windows in raster order); q likewise, or, when q_pool, 2×2 max-pooled
 * inside each window: q (B·heads·nwin, (win_h/2)·(win_w/2), HDp). HDp ≥ HD: columns [HD, HDp) are
 * written as zeros (head-dim padding, e.g. 56 → 64, leaves the attention result unchanged). */
#define CK_OP_PARAMS_attn_gather                                                                            \
    (const ck_tensor *q, const ck_tensor *k, const ck_tensor *v, const ck_tensor *qkv, int heads, int win_h, \
     int win_w, int q_pool)

/* Inverse of the q layout: o (B·heads·nwin, win_h·win_w, HDp) → y (B,H,W,heads·HD), windows win_h×win_w;
 * padded columns of o are ignored. */
#define CK_OP_PARAMS_attn_scatter (const ck_tensor *y, const ck_tensor *o, int heads, int win_h, int win_w)

/* The attention of a Hiera block, from its qkv projection to the token layout: y (B,Hq,Wq,C) =
 * attn_scatter(attention(attn_gather(qkv (B,H,W,3C), heads, win_h×win_w windows, q_pool), scale)) with the
 * scatter's windows halved in each direction when q_pool (Hq, Wq = H/2, W/2; else H, W), C = heads·HD. One
 * H×W window without q_pool is global attention. q, k, v, o are the composition's buffers (attn_gather's
 * shapes): a backend may run it through them (their contents afterwards are unspecified) or read qkv and
 * write y directly (the CUDA backend: the FA3 kernel on long global rows where HDp = 64, one kernel per launch
 * for mask units of at most 64 keys); either way the result is the composition's. */
#define CK_OP_PARAMS_attention_qkv                                                                          \
    (const ck_tensor *y, const ck_tensor *qkv, int heads, int win_h, int win_w, int q_pool, float scale,     \
     const ck_tensor *q, const ck_tensor *k, const ck_tensor *v, const ck_tensor *o)

/* y (B,H/2,W/2,C) = 2×2 stride-2 max-pool of x (B,H,W,C). */
#define CK_OP_PARAMS_maxpool2x2 (const ck_tensor *y, const ck_tensor *x)

/* y = a + b, b broadcast over leading dims (numel(a) is a multiple of numel(b)). y may alias a. */
#define CK_OP_PARAMS_add (const ck_tensor *y, const ck_tensor *a, const ck_tensor *b)

/* y (B,Ho,Wo,C) (+)= bilinear resize of x (B,H,W,C), align_corners=False, no antialias. */
#define CK_OP_PARAMS_resize_bilinear (const ck_tensor *y, const ck_tensor *x, int accumulate)

/* y (B,Ho,Wo,C) = Σ_k resize(x[k] (B,H_k,W_k,C)), k = 0..n-1 (1 ≤ n ≤ CK_RESIZE_SUM_MAX), each resize as
 * resize_bilinear's; the sum in float32 in the order of k, rounded to y's dtype once (16-bit activations
 * would otherwise round every partial sum). */
#define CK_RESIZE_SUM_MAX 4
#define CK_OP_PARAMS_resize_sum (const ck_tensor *y, const ck_tensor *x, int n)

/* y = act(x), elementwise; y may alias x. */
#define CK_OP_PARAMS_activation (const ck_tensor *y, const ck_tensor *x, ck_act act)

/* y (..., C) = σ(a (..., C) + b_scale · b (..., C)); b may be NULL. */
#define CK_OP_PARAMS_sigmoid_add (const ck_tensor *y, const ck_tensor *a, const ck_tensor *b, float b_scale)

/* y (..., Cy) = concat(a (..., ≥Ca)[..., :Ca], σ(b (..., Cb))) on the last dim; channels [Ca+Cb, Cy)
 * are zeros. */
#define CK_OP_PARAMS_concat_sigmoid (const ck_tensor *y, const ck_tensor *a, int a_channels, const ck_tensor *b)

/* y = x converted to y's dtype (same shape; float32/float16/bfloat16, round-to-nearest-even). */
#define CK_OP_PARAMS_convert (const ck_tensor *y, const ck_tensor *x)

/* y ← 0 (every byte). */
#define CK_OP_PARAMS_zero (const ck_tensor *y)

/* ---- optional: the tiled refiner's ---- */

/* groupnorm with its statistics exposed: `stats` (B, groups, 2) float32 = (mean, rstd) per sample and
 * group; when `stats_frozen` they are read instead of computed, else written when stats is non-NULL. */
#define CK_OP_PARAMS_groupnorm_stats                                                                        \
    (const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma, const ck_tensor *beta, int groups,     \
     float eps, const ck_tensor *residual, ck_act act, const ck_tensor *stats, int stats_frozen)

/* Copies the h×w rectangle at (sy, sx) of x (B,H,W,C) to (dy, dx) of y (B,H',W',C); same B, C, dtype. */
#define CK_OP_PARAMS_copy_rect                                                                              \
    (const ck_tensor *y, int dy, int dx, const ck_tensor *x, int sy, int sx, int h, int w)

/* The refiner's 3×3 convolution with its GroupNorms folded in: y (B,h,W,OC) = output rows [row0, row0 + h) of
 * conv2d(a, w (OC,IC,3,3), padding = dilation) + b (OC), where a = x (B,H,W,IC), or, with x_stats (B, gx, 2)
 * (mean, rstd of gx groups of x's channels; frozen), a = ReLU(GroupNorm(x)·γ + β [+ residual]) formed as the
 * groupnorm op forms it (rounded to x's dtype); the padding is zeros of a. residual (B,H,W,IC) or NULL: only with
 * x_stats (a residual block's GroupNorm 2, its skip connection and ReLU, applied while the next block's conv1
 * loads). a_out (B,H,W,IC) or NULL: receives a over the band's rows [row0, row0 + h), as the convolution used it
 * (the residual stream the fold would otherwise write). moments (B, H, ⌈W/CK_GN_SEG⌉, groups, 2) float32:
 * for every output row of the band and every CK_GN_SEG-pixel segment of it, (mean, M2) of each of the groups of
 * y's channels, over y's stored values; the other rows' entries are left as they are. y must not overlap the
 * rows of x the band reads; a_out overlaps none of x, residual and y. */
#define CK_GN_SEG 128
#define CK_OP_PARAMS_conv3x3_gn                                                                             \
    (const ck_tensor *y, const ck_tensor *x, const ck_tensor *w, const ck_tensor *b, int dilation, int row0,  \
     const ck_tensor *x_stats, const ck_tensor *gamma, const ck_tensor *beta, const ck_tensor *residual,     \
     const ck_tensor *a_out, const ck_tensor *moments)

/* stats (B, groups, 2) = (mean, 1/√(var + eps)) per sample and group from conv3x3_gn's moments (B, H, nseg,
 * groups, 2) of a map `width` pixels wide with `group_size` channels per group, merged in float64 in a fixed
 * order: mean = Σ nᵢ·mᵢ / N, var = (Σ M2ᵢ + nᵢ·(mᵢ − mean)²) / N. */
#define CK_OP_PARAMS_gn_moments_stats                                                                       \
    (const ck_tensor *stats, const ck_tensor *moments, int width, int group_size, float eps)

/* y (..., N) = linear(LayerNorm(x (..., K); γ, β, eps), w (N, K), b, act, residual): the layernorm op's output
 * (rounded to x's dtype) into the linear op. xn (..., K) is the composition's buffer: a backend may run the two
 * ops through it (its contents afterwards unspecified) or normalize x on the fly; the result is the
 * composition's either way. */
#define CK_OP_PARAMS_layernorm_linear                                                                       \
    (const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma, const ck_tensor *beta, float eps,        \
     const ck_tensor *w, const ck_tensor *b, ck_act act, const ck_tensor *residual, const ck_tensor *xn)

#define CK_OPS(X)       \
    X(linear)           \
    X(layernorm)        \
    X(conv2d)           \
    X(groupnorm)        \
    X(groupnorm_linear) \
    X(attention)        \
    X(attn_gather)      \
    X(attn_scatter)     \
    X(attention_qkv)    \
    X(maxpool2x2)       \
    X(add)              \
    X(resize_bilinear)  \
    X(resize_sum)       \
    X(activation)       \
    X(sigmoid_add)      \
    X(concat_sigmoid)   \
    X(convert)          \
    X(zero)

/* y (B, Hy, Wy, k²·C) = the k×k blocks of x (B, H, W, C) as channels, the block grid shifted `lead` pixels up and
 * left: y[b, j, i, (dy·k + dx)·C + c] = x[b, k·j − lead + dy, k·i − lead + dx, c], zero outside x. (The patch
 * embedding's 7×7 stride-4 convolution is a 2×2 one over the 4×4 blocks: model/hiera.c.) */
#define CK_OP_PARAMS_space_to_depth (const ck_tensor *y, const ck_tensor *x, int block, int lead)

#define CK_OPS_OPTIONAL(X) \
    X(groupnorm_stats)     \
    X(copy_rect)           \
    X(conv3x3_gn)          \
    X(gn_moments_stats)    \
    X(layernorm_linear)    \
    X(space_to_depth)

/* The parameter list (first, <the op's parameters>), e.g. CK_OP_PARAMS_WITH(ck_backend *be, add) is
 * (ck_backend *be, const ck_tensor *y, const ck_tensor *a, const ck_tensor *b). */
#define CK_OP_PARAMS_WITH(first, name) CK_OP_PREPEND_(first, CK_OP_PARAMS_##name)
#define CK_OP_PREPEND_(first, params) (first, CK_OP_UNPAREN_ params)
#define CK_OP_UNPAREN_(...) __VA_ARGS__

#endif
