/* Token re-arrangements on the CPU: attention head/window split and merge, 2×2 max-pool.
 * Hiera's unroll/reroll is replaced by these spatial equivalents (model_spec §2.4): a mask unit is a
 * win_h×win_w block of the stage grid, and timm's "max over the q_stride axis" is a 2×2 max-pool. */
#include "ops/cpu/ops_cpu.h"

#include <string.h>

void ck_attn_gather_cpu(ck_backend *be, const ck_tensor *q, const ck_tensor *k, const ck_tensor *v,
                        const ck_tensor *qkv, int heads, int win_h, int win_w, int q_pool) {
    (void)be;
    const int64_t B = qkv->shape[0], H = qkv->shape[1], W = qkv->shape[2], C3 = qkv->shape[3];
    const int64_t C = C3 / 3, HD = C / heads, HDp = k->shape[2];
    const int64_t nwy = H / win_h, nwx = W / win_w, nwin = nwy * nwx, T = (int64_t)win_h * win_w;
    const int64_t qh = q_pool ? win_h / 2 : win_h, qw = q_pool ? win_w / 2 : win_w, Tq = qh * qw;
    const float  *X  = (const float *)qkv->data; /* (B, H, W, 3C) */
    float        *Qo = (float *)q->data;         /* (B·heads·nwin, Tq, HDp) */
    float        *Ko = (float *)k->data;         /* (B·heads·nwin, T, HDp) */
    float        *Vo = (float *)v->data;

#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t bh = 0; bh < B * heads; bh++) {
        for (int64_t wi = 0; wi < nwin; wi++) {
            const int64_t b = bh / heads, h = bh % heads;
            const int64_t g = bh * nwin + wi, wy = wi / nwx, wx = wi % nwx;
            for (int64_t t = 0; t < T; t++) {
                const int64_t y = wy * win_h + t / win_w, x = wx * win_w + t % win_w;
                const float  *px = X + ((b * H + y) * W + x) * C3 + h * HD;
                float *kd = Ko + (g * T + t) * HDp, *vd = Vo + (g * T + t) * HDp;
                memcpy(kd, px + C, sizeof(float) * (size_t)HD);
                memcpy(vd, px + 2 * C, sizeof(float) * (size_t)HD);
                for (int64_t d = HD; d < HDp; d++) kd[d] = vd[d] = 0.0f;
            }
            for (int64_t t = 0; t < Tq; t++) {
                float *dst = Qo + (g * Tq + t) * HDp;
                for (int64_t d = HD; d < HDp; d++) dst[d] = 0.0f;
                if (!q_pool) {
                    const int64_t y = wy * win_h + t / qw, x = wx * win_w + t % qw;
                    memcpy(dst, X + ((b * H + y) * W + x) * C3 + h * HD, sizeof(float) * (size_t)HD);
                    continue;
                }
                const int64_t y0 = wy * win_h + 2 * (t / qw), x0 = wx * win_w + 2 * (t % qw);
                const float  *p00 = X + ((b * H + y0) * W + x0) * C3 + h * HD;
                const float  *p01 = p00 + C3, *p10 = p00 + W * C3, *p11 = p10 + C3;
                for (int64_t d = 0; d < HD; d++) {
                    float m = p00[d];
                    m       = p01[d] > m ? p01[d] : m;
                    m       = p10[d] > m ? p10[d] : m;
                    m       = p11[d] > m ? p11[d] : m;
                    dst[d]  = m;
                }
            }
        }
    }
}

void ck_attn_scatter_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *o, int heads, int win_h, int win_w) {
    (void)be;
    const int64_t B = y->shape[0], H = y->shape[1], W = y->shape[2], C = y->shape[3], HD = C / heads;
    const int64_t HDp = o->shape[2];
    const int64_t nwx = W / win_w, nwin = (H / win_h) * nwx, T = (int64_t)win_h * win_w;
    const float  *Oi = (const float *)o->data; /* (B·heads·nwin, T, HDp) */
    float        *Y  = (float *)y->data;       /* (B, H, W, C) */
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t bh = 0; bh < B * heads; bh++) {
        for (int64_t wi = 0; wi < nwin; wi++) {
            const int64_t b = bh / heads, h = bh % heads, g = bh * nwin + wi;
            const int64_t wy = wi / nwx, wx = wi % nwx;
            for (int64_t t = 0; t < T; t++) {
                const int64_t yy = wy * win_h + t / win_w, xx = wx * win_w + t % win_w;
                memcpy(Y + ((b * H + yy) * W + xx) * C + h * HD, Oi + (g * T + t) * HDp, sizeof(float) * (size_t)HD);
            }
        }
    }
}

void ck_maxpool2x2_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x) {
    (void)be;
    const int64_t B = x->shape[0], H = x->shape[1], W = x->shape[2], C = x->shape[3];
    const int64_t Ho = H / 2, Wo = W / 2;
    const float  *X = (const float *)x->data; /* (B, H, W, C) */
    float        *Y = (float *)y->data;       /* (B, H/2, W/2, C) */
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < B * Ho; r++) {
        const int64_t b = r / Ho, oy = r % Ho;
        for (int64_t ox = 0; ox < Wo; ox++) {
            const float *p00 = X + ((b * H + 2 * oy) * W + 2 * ox) * C;
            const float *p01 = p00 + C, *p10 = p00 + W * C, *p11 = p10 + C;
            float       *dst = Y + ((b * Ho + oy) * Wo + ox) * C;
            for (int64_t c = 0; c < C; c++) {
                float m = p00[c];
                m       = p01[c] > m ? p01[c] : m;
                m       = p10[c] > m ? p10[c] : m;
                m       = p11[c] > m ? p11[c] : m;
                dst[c]  = m;
            }
        }
    }
}

void ck_zero_cpu(ck_backend *be, const ck_tensor *y) {
    (void)be;
    memset(y->data, 0, ck_tensor_nbytes(y));
}

void ck_copy_rect_cpu(ck_backend *be, const ck_tensor *y, int dy, int dx, const ck_tensor *x, int sy, int sx, int h,
                      int w) {
    (void)be;
    const int64_t B = x->shape[0], HX = x->shape[1], WX = x->shape[2], C = x->shape[3];
    const int64_t HY = y->shape[1], WY = y->shape[2];
    const size_t  es = ck_dtype_size(x->dtype), row = (size_t)w * (size_t)C * es;
    for (int64_t b = 0; b < B; b++)
        for (int r = 0; r < h; r++)
            memcpy((char *)y->data + (((b * HY + dy + r) * WY + dx) * C) * (int64_t)es,
                   (const char *)x->data + (((b * HX + sy + r) * WX + sx) * C) * (int64_t)es, row);
}

/* The composition itself (ops_list.h): the CPU has no faster way than its three ops. */
void ck_attention_qkv_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *qkv, int heads, int win_h, int win_w,
                          int q_pool, float scale, const ck_tensor *q, const ck_tensor *k, const ck_tensor *v,
                          const ck_tensor *o) {
    ck_attn_gather_cpu(be, q, k, v, qkv, heads, win_h, win_w, q_pool);
    ck_attention_cpu(be, o, q, k, v, scale);
    ck_attn_scatter_cpu(be, y, o, heads, q_pool ? win_h / 2 : win_h, q_pool ? win_w / 2 : win_w);
}

void ck_space_to_depth_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x, int block, int lead) {
    (void)be;
    const int64_t B = x->shape[0], H = x->shape[1], W = x->shape[2], C = x->shape[3];
    const int64_t Hy = y->shape[1], Wy = y->shape[2], k = block;
    const size_t  es = ck_dtype_size(x->dtype), run = (size_t)C * es; /* one pixel's channels */
    const uint8_t *X = (const uint8_t *)x->data; /* (B, H, W, C) */
    uint8_t       *Y = (uint8_t *)y->data;       /* (B, Hy, Wy, k·k·C) */
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < B * Hy; r++) {
        const int64_t b = r / Hy, j = r % Hy;
        for (int64_t i = 0; i < Wy; i++)
            for (int64_t dy = 0; dy < k; dy++)
                for (int64_t dx = 0; dx < k; dx++) {
                    const int64_t yy = k * j - lead + dy, xx = k * i - lead + dx;
                    uint8_t      *dst = Y + (((r * Wy + i) * k + dy) * k + dx) * run;
                    if (yy < 0 || yy >= H || xx < 0 || xx >= W) memset(dst, 0, run);
                    else memcpy(dst, X + ((b * H + yy) * W + xx) * run, run);
                }
    }
}
