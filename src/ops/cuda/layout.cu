/* Token re-arrangements on CUDA: attention head/window split (with optional 2×2 q max-pool and head-dim
 * zero padding), the inverse merge, and the 2×2 max-pool. CPU reference ops/cpu/layout.c; semantics in
 * ops/backend.h. Pure data movement: one thread per 16-byte vector of the head dim (or channel)
 * axis when the sizes allow it (HD = 56 does in every dtype), else per element; 64-bit offsets. */
#include "ops/cuda/common.cuh"
#ifdef CK_HAVE_CUDA_FUSED_ATTENTION
#include "ops/cuda/attention.h"
#endif

struct ck_win_geom {
    int H, W, C, heads, HD, HDp, win_h, win_w, nwx, nwin, T;
};

/* group g, token t of a window → spatial position (b, yy, xx) and head h */
__device__ __forceinline__ void win_pos(const ck_win_geom &gm, int64_t g, int t, int tw, int64_t *b, int *h, int *yy,
                                        int *xx, int step) {
    const int64_t bh = g / gm.nwin;
    const int     wi = (int)(g - bh * gm.nwin);
    *b               = bh / gm.heads;
    *h               = (int)(bh - *b * gm.heads);
    const int wy = wi / gm.nwx, wx = wi - (wi / gm.nwx) * gm.nwx;
    *yy = wy * gm.win_h + step * (t / tw);
    *xx = wx * gm.win_w + step * (t % tw);
}

/* k, v (G, T, HDp) from qkv (B, H, W, 3C); columns [HD, HDp) zero */
template <typename T, int V>
__global__ void gather_kv_kernel(T *__restrict__ k, T *__restrict__ v, const T *__restrict__ qkv, ck_win_geom gm,
                                 int64_t total) {
    const int nvd = gm.HDp / V;
    CK_GRID_STRIDE(i, total) {
        const int     dv = (int)(i % nvd);
        const int64_t r  = i / nvd;
        const int     t  = (int)(r % gm.T);
        const int64_t g  = r / gm.T;
        const int64_t dst = (g * gm.T + t) * gm.HDp + (int64_t)dv * V;
        const int     d0  = dv * V;
        ck_vec<T, V>  kv, vv;
        if (d0 < gm.HD) {
            int64_t b;
            int     h, yy, xx;
            win_pos(gm, g, t, gm.win_w, &b, &h, &yy, &xx, 1);
            const T *px = qkv + ((b * gm.H + yy) * gm.W + xx) * (3 * (int64_t)gm.C) + (int64_t)h * gm.HD + d0;
            kv          = ck_vload<T, V>(px + gm.C);
            vv          = ck_vload<T, V>(px + 2 * gm.C);
        } else {
#pragma unroll
            for (int j = 0; j < V; j++) kv.v[j] = vv.v[j] = ck_stf<T>(0.0f);
        }
        ck_vstore<T, V>(k + dst, kv);
        ck_vstore<T, V>(v + dst, vv);
    }
}

/* q (G, Tq, HDp): plain, or the max of each 2×2 block inside the window (q_pool) */
template <typename T, int V>
__global__ void gather_q_kernel(T *__restrict__ q, const T *__restrict__ qkv, ck_win_geom gm, int q_pool, int Tq,
                                int64_t total) {
    const int nvd = gm.HDp / V;
    const int qw  = q_pool ? gm.win_w / 2 : gm.win_w;
    CK_GRID_STRIDE(i, total) {
        const int     dv = (int)(i % nvd);
        const int64_t r  = i / nvd;
        const int     t  = (int)(r % Tq);
        const int64_t g  = r / Tq;
        const int     d0 = dv * V;
        ck_vec<T, V>  out;
        if (d0 < gm.HD) {
            int64_t b;
            int     h, yy, xx;
            win_pos(gm, g, t, qw, &b, &h, &yy, &xx, q_pool ? 2 : 1);
            const int64_t C3 = 3 * (int64_t)gm.C;
            const T      *p00 = qkv + ((b * gm.H + yy) * gm.W + xx) * C3 + (int64_t)h * gm.HD + d0;
            out               = ck_vload<T, V>(p00);
            if (q_pool) {
                const ck_vec<T, V> a = ck_vload<T, V>(p00 + C3), c = ck_vload<T, V>(p00 + gm.W * C3),
                                   d = ck_vload<T, V>(p00 + gm.W * C3 + C3);
#pragma unroll
                for (int j = 0; j < V; j++) { /* the CPU's comparison order */
                    float m = ck_ldf(out.v[j]);
                    float o = ck_ldf(a.v[j]);
                    m       = o > m ? o : m;
                    o       = ck_ldf(c.v[j]);
                    m       = o > m ? o : m;
                    o       = ck_ldf(d.v[j]);
                    m       = o > m ? o : m;
                    out.v[j] = ck_stf<T>(m);
                }
            }
        } else {
#pragma unroll
            for (int j = 0; j < V; j++) out.v[j] = ck_stf<T>(0.0f);
        }
        ck_vstore<T, V>(q + (g * Tq + t) * gm.HDp + d0, out);
    }
}

/* y (B, H, W, heads·HD) ← o (G, win_h·win_w, HDp) */
template <typename T, int V>
__global__ void scatter_kernel(T *__restrict__ y, const T *__restrict__ o, ck_win_geom gm, int64_t total) {
    const int ncv = gm.C / V;
    CK_GRID_STRIDE(i, total) {
        const int     cv  = (int)(i % ncv);
        const int64_t pix = i / ncv;
        const int     xx  = (int)(pix % gm.W);
        const int64_t rr  = pix / gm.W;
        const int     yy  = (int)(rr % gm.H);
        const int64_t b   = rr / gm.H;
        const int     c0 = cv * V, h = c0 / gm.HD, d0 = c0 - h * gm.HD;
        const int     wy = yy / gm.win_h, ty = yy - wy * gm.win_h, wx = xx / gm.win_w, tx = xx - wx * gm.win_w;
        const int64_t g  = (b * gm.heads + h) * gm.nwin + wy * gm.nwx + wx;
        const int     t  = ty * gm.win_w + tx;
        ck_vstore<T, V>(y + i * V, ck_vload<T, V>(o + (g * gm.T + t) * gm.HDp + d0));
    }
}

template <typename T, int V>
__global__ void maxpool_kernel(T *__restrict__ y, const T *__restrict__ x, int H, int W, int C, int64_t total) {
    const int ncv = C / V, Ho = H / 2, Wo = W / 2;
    CK_GRID_STRIDE(i, total) {
        const int     cv = (int)(i % ncv);
        const int64_t p  = i / ncv;
        const int     ox = (int)(p % Wo);
        const int64_t r  = p / Wo;
        const int     oy = (int)(r % Ho);
        const int64_t b  = r / Ho;
        const T      *p00 = x + ((b * H + 2 * oy) * W + 2 * ox) * (int64_t)C + (int64_t)cv * V;
        ck_vec<T, V>  a = ck_vload<T, V>(p00), bq = ck_vload<T, V>(p00 + C), c = ck_vload<T, V>(p00 + (int64_t)W * C),
                     d = ck_vload<T, V>(p00 + (int64_t)W * C + C);
#pragma unroll
        for (int j = 0; j < V; j++) {
            float m = ck_ldf(a.v[j]), o = ck_ldf(bq.v[j]);
            m       = o > m ? o : m;
            o       = ck_ldf(c.v[j]);
            m       = o > m ? o : m;
            o       = ck_ldf(d.v[j]);
            m       = o > m ? o : m;
            a.v[j]  = ck_stf<T>(m);
        }
        ck_vstore<T, V>(y + i * V, a);
    }
}

static ck_win_geom win_geom(int64_t H, int64_t W, int64_t C, int heads, int64_t HDp, int win_h, int win_w) {
    CK_ASSERT(H <= 0x7fffffff && W <= 0x7fffffff && C <= 0x7fffffff && HDp <= 0x7fffffff);
    ck_win_geom g;
    g.H     = (int)H;
    g.W     = (int)W;
    g.C     = (int)C;
    g.heads = heads;
    g.HD    = (int)(C / heads);
    g.HDp   = (int)HDp;
    g.win_h = win_h;
    g.win_w = win_w;
    g.nwx   = (int)(W / win_w);
    g.nwin  = (int)((H / win_h) * (W / win_w));
    g.T     = win_h * win_w;
    return g;
}

template <typename T>
static void gather(ck_cuda *cu, const ck_tensor *q, const ck_tensor *k, const ck_tensor *v, const ck_tensor *qkv,
                   int heads, int win_h, int win_w, int q_pool) {
    const ck_win_geom gm = win_geom(qkv->shape[1], qkv->shape[2], qkv->shape[3] / 3, heads, k->shape[2], win_h, win_w);
    const int64_t     G  = k->shape[0];
    const int         Tq = (int)q->shape[1];
    constexpr int     V  = ck_v16<T>::V;
    const int vec = gm.HD % V == 0 && gm.HDp % V == 0 && gm.C % V == 0 && ck_aligned(qkv->data, 16) &&
                    ck_aligned(q->data, 16) && ck_aligned(k->data, 16) && ck_aligned(v->data, 16);
    const T *X = (const T *)qkv->data; /* (B, H, W, 3C) */
    if (vec) {
        const int64_t nkv = G * gm.T * (gm.HDp / V), nq = G * Tq * (gm.HDp / V);
        gather_kv_kernel<T, V><<<ck_grid_for(cu, nkv, 256), 256, 0, cu->stream>>>((T *)k->data, (T *)v->data, X, gm, nkv);
        CK_KERNEL_CHECK(cu);
        gather_q_kernel<T, V><<<ck_grid_for(cu, nq, 256), 256, 0, cu->stream>>>((T *)q->data, X, gm, q_pool, Tq, nq);
    } else {
        const int64_t nkv = G * gm.T * gm.HDp, nq = G * Tq * gm.HDp;
        gather_kv_kernel<T, 1><<<ck_grid_for(cu, nkv, 256), 256, 0, cu->stream>>>((T *)k->data, (T *)v->data, X, gm, nkv);
        CK_KERNEL_CHECK(cu);
        gather_q_kernel<T, 1><<<ck_grid_for(cu, nq, 256), 256, 0, cu->stream>>>((T *)q->data, X, gm, q_pool, Tq, nq);
    }
    CK_KERNEL_CHECK(cu);
}

extern "C" void ck_attn_gather_cuda(ck_backend *be, const ck_tensor *q, const ck_tensor *k, const ck_tensor *v,
                                    const ck_tensor *qkv, int heads, int win_h, int win_w, int q_pool) {
    ck_cuda *cu = ck_cuda_of(be);
    CK_ASSERT(ck_is_float_dtype(qkv->dtype) && q->dtype == qkv->dtype && k->dtype == qkv->dtype && v->dtype == qkv->dtype);
    CK_DISPATCH_FLOAT(qkv->dtype, T, gather<T>(cu, q, k, v, qkv, heads, win_h, win_w, q_pool));
}

template <typename T>
static void scatter(ck_cuda *cu, const ck_tensor *y, const ck_tensor *o, int heads, int win_h, int win_w) {
    const ck_win_geom gm    = win_geom(y->shape[1], y->shape[2], y->shape[3], heads, o->shape[2], win_h, win_w);
    constexpr int     V     = ck_v16<T>::V;
    const int64_t     npix  = y->shape[0] * y->shape[1] * y->shape[2];
    const int         vec   = gm.HD % V == 0 && gm.HDp % V == 0 && ck_aligned(y->data, 16) && ck_aligned(o->data, 16);
    if (vec) {
        const int64_t n = npix * (gm.C / V);
        scatter_kernel<T, V><<<ck_grid_for(cu, n, 256), 256, 0, cu->stream>>>((T *)y->data, (const T *)o->data, gm, n);
    } else {
        const int64_t n = npix * gm.C;
        scatter_kernel<T, 1><<<ck_grid_for(cu, n, 256), 256, 0, cu->stream>>>((T *)y->data, (const T *)o->data, gm, n);
    }
    CK_KERNEL_CHECK(cu);
}

extern "C" void ck_attn_scatter_cuda(ck_backend *be, const ck_tensor *y, const ck_tensor *o, int heads, int win_h,
                                     int win_w) {
    ck_cuda *cu = ck_cuda_of(be);
    CK_ASSERT(ck_is_float_dtype(y->dtype) && o->dtype == y->dtype);
    CK_DISPATCH_FLOAT(y->dtype, T, scatter<T>(cu, y, o, heads, win_h, win_w));
}

template <typename T>
static void maxpool(ck_cuda *cu, const ck_tensor *y, const ck_tensor *x) {
    const int64_t B = x->shape[0], H = x->shape[1], W = x->shape[2], C = x->shape[3];
    CK_ASSERT(H <= 0x7fffffff && W <= 0x7fffffff && C <= 0x7fffffff);
    constexpr int V    = ck_v16<T>::V;
    const int64_t nout = B * (H / 2) * (W / 2);
    const int     vec  = C % V == 0 && ck_aligned(x->data, 16) && ck_aligned(y->data, 16);
    if (vec) {
        const int64_t n = nout * (C / V);
        maxpool_kernel<T, V><<<ck_grid_for(cu, n, 256), 256, 0, cu->stream>>>((T *)y->data, (const T *)x->data, (int)H,
                                                                               (int)W, (int)C, n);
    } else {
        const int64_t n = nout * C;
        maxpool_kernel<T, 1><<<ck_grid_for(cu, n, 256), 256, 0, cu->stream>>>((T *)y->data, (const T *)x->data, (int)H,
                                                                               (int)W, (int)C, n);
    }
    CK_KERNEL_CHECK(cu);
}

extern "C" void ck_maxpool2x2_cuda(ck_backend *be, const ck_tensor *y, const ck_tensor *x) {
    ck_cuda *cu = ck_cuda_of(be);
    CK_ASSERT(ck_is_float_dtype(x->dtype) && y->dtype == x->dtype);
    CK_DISPATCH_FLOAT(x->dtype, T, maxpool<T>(cu, y, x));
}

/* ---- zero: cudaMemsetAsync (capturable) ---- */
extern "C" void ck_zero_cuda(ck_backend *be, const ck_tensor *y) {
    CK_CUDA_CHECK(cudaMemsetAsync(y->data, 0, ck_tensor_nbytes(y), ck_cuda_of(be)->stream));
}

/* ---- copy_rect: a rectangle of one NHWC tensor into another; rows are contiguous W·C runs, so this is a
 * strided 2-D copy per batch image (cudaMemcpy2DAsync, capturable) ---- */
extern "C" void ck_copy_rect_cuda(ck_backend *be, const ck_tensor *y, int dy, int dx, const ck_tensor *x, int sy,
                                  int sx, int h, int w) {
    ck_cuda      *cu = ck_cuda_of(be);
    const int64_t B = x->shape[0], HX = x->shape[1], WX = x->shape[2], C = x->shape[3];
    const int64_t HY = y->shape[1], WY = y->shape[2];
    const size_t  es = ck_dtype_size(x->dtype);
    for (int64_t b = 0; b < B; b++) {
        const char *src = (const char *)x->data + (size_t)(((b * HX + sy) * WX + sx) * C) * es;
        char       *dst = (char *)y->data + (size_t)(((b * HY + dy) * WY + dx) * C) * es;
        CK_CUDA_CHECK(cudaMemcpy2DAsync(dst, (size_t)(WY * C) * es, src, (size_t)(WX * C) * es, (size_t)(w * C) * es,
                                        (size_t)h, cudaMemcpyDeviceToDevice, cu->stream));
    }
}

/* attention_qkv: global attention through the FA3 kernel reading qkv and writing y directly where it serves the
 * shape (attention.cu, ck__attention_tokens_fa3: at S = 2048 this saves the gather's and scatter's ~1.2 ms over
 * the 17 global blocks), mask units through the windowed kernel (ck__attention_windows: one launch in place of
 * gather, attention and scatter), else the composition through q, k, v, o with the backend's attention (fused
 * or, with sdpa off, the unfused reference). */
extern "C" void ck_attention_qkv_cuda(ck_backend *be, const ck_tensor *y, const ck_tensor *qkv, int heads, int win_h,
                                      int win_w, int q_pool, float scale, const ck_tensor *q, const ck_tensor *k,
                                      const ck_tensor *v, const ck_tensor *o) {
    const int H = (int)qkv->shape[1], W = (int)qkv->shape[2];
    const int global = win_h == H && win_w == W && !q_pool;
#ifdef CK_HAVE_CUDA_FUSED_ATTENTION
    if (be->attention == ck_attention_cuda) {
        if (global && q->shape[2] == 64 && ck__attention_tokens_fa3(be, y, qkv, heads, scale)) return;
        if (!global && ck__attention_windows(be, y, qkv, heads, win_h, win_w, q_pool, scale)) return;
    }
#endif
    (void)global;
    ck_attn_gather_cuda(be, q, k, v, qkv, heads, win_h, win_w, q_pool);
    be->attention(be, o, q, k, v, scale);
    ck_attn_scatter_cuda(be, y, o, heads, q_pool ? win_h / 2 : win_h, q_pool ? win_w / 2 : win_w);
}

/* space_to_depth: one thread per (b, j, i, dy), the k pixels (k·C values) of one row of one block; 16-byte vectors
 * where the whole row lies inside x and every such row starts 16-byte aligned (`vec`), else value by value. */
template <typename T>
__global__ void space_to_depth_kernel(T *__restrict__ y, const T *__restrict__ x, int H, int W, int C, int Hy, int Wy,
                                      int k, int lead, int vec, int64_t total) {
    const int run = k * C; /* values per block row */
    CK_GRID_STRIDE(n, total) {
        const int     dy = (int)(n % k);
        const int64_t p  = n / k; /* (b, j, i) */
        const int     i  = (int)(p % Wy);
        const int64_t bj = p / Wy;
        const int     j  = (int)(bj % Hy);
        const int64_t b  = bj / Hy;
        const int     yy = k * j - lead + dy, xx0 = k * i - lead;
        T            *dst = y + n * run;
        if (yy < 0 || yy >= H) {
            for (int e = 0; e < run; e++) dst[e] = ck_stf<T>(0.0f);
            continue;
        }
        const T *row = x + ((int64_t)b * H + yy) * W * C; /* (W, C) */
        if (vec && xx0 >= 0 && xx0 + k <= W) {
            for (int e = 0; e < run; e += 16 / (int)sizeof(T))
                *reinterpret_cast<uint4 *>(dst + e) = *reinterpret_cast<const uint4 *>(row + (int64_t)xx0 * C + e);
            continue;
        }
        for (int e = 0; e < run; e++) {
            const int xx = xx0 + e / C;
            dst[e]       = xx >= 0 && xx < W ? row[(int64_t)xx * C + e % C] : ck_stf<T>(0.0f);
        }
    }
}

template <typename T>
static void space_to_depth(ck_cuda *cu, const ck_tensor *y, const ck_tensor *x, int k, int lead) {
    const int64_t B = x->shape[0], H = x->shape[1], W = x->shape[2], C = x->shape[3];
    const int64_t Hy = y->shape[1], Wy = y->shape[2];
    CK_ASSERT(H <= 0x7fffffff && W <= 0x7fffffff && C * k <= 0x7fffffff && Hy <= 0x7fffffff && Wy <= 0x7fffffff);
    const size_t  es  = sizeof(T);
    const int     vec = (k * C * es) % 16 == 0 && (lead * C * es) % 16 == 0 && (W * C * es) % 16 == 0 &&
                    ck_aligned(x->data, 16) && ck_aligned(y->data, 16);
    const int64_t total = B * Hy * Wy * k;
    space_to_depth_kernel<T><<<ck_grid_for(cu, total, 256), 256, 0, cu->stream>>>(
        (T *)y->data, (const T *)x->data, (int)H, (int)W, (int)C, (int)Hy, (int)Wy, k, lead, vec, total);
    CK_KERNEL_CHECK(cu);
}

extern "C" void ck_space_to_depth_cuda(ck_backend *be, const ck_tensor *y, const ck_tensor *x, int block, int lead) {
    ck_cuda *cu = ck_cuda_of(be);
    CK_ASSERT(ck_is_float_dtype(x->dtype) && y->dtype == x->dtype);
    CK_DISPATCH_FLOAT(x->dtype, T, space_to_depth<T>(cu, y, x, block, lead));
}
