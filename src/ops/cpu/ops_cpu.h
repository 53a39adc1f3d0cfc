/* CPU reference kernels, one per op of ops_list.h (signatures as in backend/backend.h).
 * fp32 only. Heavy products go through CBLAS (OpenBLAS); everything else is plain loops with OpenMP.
 * Kernels that call BLAS inside an OpenMP region switch BLAS to one thread for that region
 * (ck_cpu_blas_serial_begin/end), so the two thread pools never oversubscribe the cores. */
#ifndef CK_OPS_CPU_H
#define CK_OPS_CPU_H

#include "backend/backend.h"

#include <math.h>

void ck_linear_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w, const ck_tensor *b,
                   ck_act act, const ck_tensor *residual);
void ck_layernorm_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma,
                      const ck_tensor *beta, float eps);
void ck_conv2d_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w, const ck_tensor *b,
                   int stride, int pad_h, int pad_w, int dilation);
void ck_groupnorm_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma,
                      const ck_tensor *beta, int groups, float eps, const ck_tensor *residual, ck_act act,
                      const ck_tensor *stats, int stats_frozen);
void ck_attention_cpu(ck_backend *be, const ck_tensor *o, const ck_tensor *q, const ck_tensor *k, const ck_tensor *v,
                      float scale);
void ck_attn_gather_cpu(ck_backend *be, const ck_tensor *q, const ck_tensor *k, const ck_tensor *v,
                        const ck_tensor *qkv, int heads, int win_h, int win_w, int q_pool);
void ck_attn_scatter_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *o, int heads, int win_h, int win_w);
void ck_maxpool2x2_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x);
void ck_add_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *a, const ck_tensor *b);
void ck_resize_bilinear_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x, int accumulate);
void ck_resize_sum_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x, int n);
void ck_activation_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x, ck_act act);
void ck_sigmoid_add_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *a, const ck_tensor *b, float b_scale);
void ck_convert_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x);
void ck_zero_cpu(ck_backend *be, const ck_tensor *y);
void ck_copy_rect_cpu(ck_backend *be, const ck_tensor *y, int dy, int dx, const ck_tensor *x, int sy, int sx, int h,
                      int w);
void ck_concat_sigmoid_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *a, int a_channels,
                           const ck_tensor *b);

/* BLAS thread control around OpenMP regions that call BLAS per thread. */
void ck_cpu_blas_serial_begin(void);
void ck_cpu_blas_serial_end(void);

static inline float ck_gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f)); }

#endif
