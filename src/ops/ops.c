/* Op wrappers: the one place where shapes are checked, for every backend (see ops.h). */
#include "ops/ops.h"

#include <string.h>

ck_tensor ck_new(ck_exec *ex, int ndim, const int64_t *shape) {
    CK_ASSERT(ndim >= 1 && ndim <= CK_MAX_DIMS);
    ck_tensor t = ck_tensor_make(NULL, ex->dtype, ndim, shape);
    for (int i = 0; i < ndim; i++) CK_ASSERT(shape[i] > 0);
    t.data = ck_arena_alloc(ex->arena, ck_tensor_nbytes(&t));
    return t;
}

ck_tensor ck_view(const ck_tensor *t, int ndim, const int64_t *shape) {
    ck_tensor v = ck_tensor_make(t->data, t->dtype, ndim, shape);
    CK_ASSERT(ck_tensor_numel(&v) == ck_tensor_numel(t));
    return v;
}

static int same_shape(const ck_tensor *a, const ck_tensor *b) {
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

/* Leading dims equal, last dims as given. */
static int same_leading(const ck_tensor *a, const ck_tensor *b) {
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim - 1; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

/* ---- per-op profile (ckey bench --profile): synchronize around every op, sum wall time per op ---- */

#include <time.h>

#define CK_PROF_MAX 64
static struct {
    const char *name;
    double      ms;
    long        calls;
} g_prof[CK_PROF_MAX];
static int    g_prof_on;
static double g_prof_t0;

void ck_ops_profile_enable(int on) {
    g_prof_on = on;
    memset(g_prof, 0, sizeof g_prof);
}

static double prof_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void prof_begin(ck_exec *ex) {
    if (!g_prof_on) return;
    ex->be->synchronize(ex->be);
    g_prof_t0 = prof_now();
}

static void prof_end(ck_exec *ex, const char *name) {
    if (!g_prof_on) return;
    ex->be->synchronize(ex->be);
    const double dt = prof_now() - g_prof_t0;
    for (int i = 0; i < CK_PROF_MAX; i++) {
        if (!g_prof[i].name) g_prof[i].name = name;
        if (g_prof[i].name == name || !strcmp(g_prof[i].name, name)) {
            g_prof[i].ms += dt;
            g_prof[i].calls++;
            return;
        }
    }
}

void ck_ops_profile_report(FILE *f, int frames) {
    double total = 0;
    for (int i = 0; i < CK_PROF_MAX && g_prof[i].name; i++) total += g_prof[i].ms;
    fprintf(f, "op profile (%d frames, synchronized per op): %.2f ms/frame\n", frames, total / (frames ? frames : 1));
    for (int i = 0; i < CK_PROF_MAX && g_prof[i].name; i++)
        fprintf(f, "  %-22s %8.3f ms/frame %6.1f%%  %ld calls\n", g_prof[i].name, g_prof[i].ms / (frames ? frames : 1),
                total > 0 ? 100.0 * g_prof[i].ms / total : 0.0, g_prof[i].calls / (frames ? frames : 1));
}

/* Runs the backend slot unless planning or the backend has failed (a device error: what follows it would
 * compute on garbage, and the context reports the failure); profiled under a name when profiling is on. */
#define RUN(ex) if (!(ex)->planning && !(ex)->be->failed)
#define RUNP(ex, label, call)                                                                        \
    do {                                                                                             \
        if (!(ex)->planning && !(ex)->be->failed) {                                                  \
            prof_begin(ex);                                                                          \
            call;                                                                                    \
            prof_end(ex, label);                                                                     \
        }                                                                                            \
    } while (0)

void ck_linear(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w, const ck_tensor *b, ck_act act,
               const ck_tensor *residual) {
    CK_ASSERT(w->ndim == 2 && ck_tensor_last(x) == w->shape[1] && ck_tensor_last(y) == w->shape[0]);
    CK_ASSERT(same_leading(x, y) && (x->dtype == y->dtype || y->dtype == CK_DTYPE_F32));
    CK_ASSERT(!b || (b->ndim == 1 && b->shape[0] == w->shape[0]));
    CK_ASSERT(!residual || same_shape(residual, y));
    CK_ASSERT(!residual || residual->data != y->data || act == CK_ACT_NONE);
    RUNP(ex, act == CK_ACT_GELU ? "linear+gelu" : residual ? "linear+residual" : "linear",
         ex->be->linear(ex->be, y, x, w, b, act, residual));
}

void ck_layernorm(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma, const ck_tensor *beta,
                  float eps) {
    CK_ASSERT(same_shape(x, y) && gamma->shape[0] == ck_tensor_last(x) && beta->shape[0] == ck_tensor_last(x));
    RUNP(ex, "layernorm", ex->be->layernorm(ex->be, y, x, gamma, beta, eps));
}

void ck_conv2d_pad(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w, const ck_tensor *b,
                   int stride, int pad_h, int pad_w, int dilation) {
    CK_ASSERT(x->ndim == 4 && y->ndim == 4 && w->ndim == 4);
    CK_ASSERT(w->shape[1] == x->shape[3] && w->shape[0] == y->shape[3] && x->shape[0] == y->shape[0]);
    const int64_t kh = w->shape[2], kw = w->shape[3];
    CK_ASSERT(y->shape[1] == (x->shape[1] + 2 * pad_h - dilation * (kh - 1) - 1) / stride + 1);
    CK_ASSERT(y->shape[2] == (x->shape[2] + 2 * pad_w - dilation * (kw - 1) - 1) / stride + 1);
    CK_ASSERT(!b || b->shape[0] == w->shape[0]);
    RUNP(ex, kh == 7 ? "conv2d 7x7/4" : kh == 3 ? "conv2d 3x3" : "conv2d",
         ex->be->conv2d(ex->be, y, x, w, b, stride, pad_h, pad_w, dilation));
}

void ck_conv2d(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w, const ck_tensor *b,
               int stride, int pad, int dilation) {
    ck_conv2d_pad(ex, y, x, w, b, stride, pad, pad, dilation);
}

static void groupnorm_check(const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma, const ck_tensor *beta,
                            int groups, const ck_tensor *residual) {
    CK_ASSERT(same_shape(x, y) && groups > 0 && ck_tensor_last(x) % groups == 0);
    CK_ASSERT(gamma->shape[0] == ck_tensor_last(x) && beta->shape[0] == ck_tensor_last(x));
    CK_ASSERT(!residual || same_shape(residual, y));
}

void ck_groupnorm(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma, const ck_tensor *beta,
                  int groups, float eps, const ck_tensor *residual, ck_act act) {
    groupnorm_check(y, x, gamma, beta, groups, residual);
    RUNP(ex, "groupnorm", ex->be->groupnorm(ex->be, y, x, gamma, beta, groups, eps, residual, act));
}

void ck_groupnorm_linear(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma,
                         const ck_tensor *beta, int groups, float eps, const ck_tensor *residual, ck_act act,
                         const ck_tensor *w, const ck_tensor *b, const ck_tensor *stats) {
    CK_ASSERT(x->ndim >= 2 && groups >= 1 && ck_tensor_last(x) % groups == 0);
    CK_ASSERT(gamma->dtype == CK_DTYPE_F32 && beta->dtype == CK_DTYPE_F32);
    CK_ASSERT(gamma->shape[0] == ck_tensor_last(x) && beta->shape[0] == ck_tensor_last(x));
    CK_ASSERT(!residual || (same_shape(residual, x) && residual->dtype == x->dtype));
    CK_ASSERT(w->ndim == 2 && w->shape[1] == ck_tensor_last(x) && ck_tensor_last(y) == w->shape[0]);
    CK_ASSERT(same_leading(x, y) && y->dtype == CK_DTYPE_F32 && y->data != x->data);
    CK_ASSERT(!b || (b->ndim == 1 && b->shape[0] == w->shape[0] && b->dtype == CK_DTYPE_F32));
    CK_ASSERT(!stats || (stats->dtype == CK_DTYPE_F32 && ck_tensor_numel(stats) == x->shape[0] * groups * 2));
    RUNP(ex, "groupnorm+linear",
         ex->be->groupnorm_linear(ex->be, y, x, gamma, beta, groups, eps, residual, act, w, b, stats));
}

void ck_groupnorm_stats(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma,
                        const ck_tensor *beta, int groups, float eps, const ck_tensor *residual, ck_act act,
                        const ck_tensor *stats, int stats_frozen) {
    CK_ASSERT(ex->be->ext.groupnorm_stats && "the backend has the optional op groupnorm_stats");
    groupnorm_check(y, x, gamma, beta, groups, residual);
    CK_ASSERT(!stats || ck_tensor_numel(stats) == x->shape[0] * groups * 2);
    CK_ASSERT(!stats_frozen || stats);
    RUNP(ex, "groupnorm_stats",
         ex->be->ext.groupnorm_stats(ex->be, y, x, gamma, beta, groups, eps, residual, act, stats, stats_frozen));
}

void ck_attention(ck_exec *ex, const ck_tensor *o, const ck_tensor *q, const ck_tensor *k, const ck_tensor *v,
                  float scale) {
    CK_ASSERT(q->ndim == 3 && same_shape(k, v) && same_shape(o, q));
    CK_ASSERT(q->shape[0] == k->shape[0] && q->shape[2] == k->shape[2]);
    RUNP(ex, k->shape[1] > 64 ? "attention global" : "attention window",
         ex->be->attention(ex->be, o, q, k, v, scale));
}

void ck_attn_gather(ck_exec *ex, const ck_tensor *q, const ck_tensor *k, const ck_tensor *v, const ck_tensor *qkv,
                    int heads, int win_h, int win_w, int q_pool) {
    CK_ASSERT(qkv->ndim == 4 && qkv->shape[3] % (3 * heads) == 0);
    CK_ASSERT(qkv->shape[1] % win_h == 0 && qkv->shape[2] % win_w == 0);
    CK_ASSERT(!q_pool || (win_h % 2 == 0 && win_w % 2 == 0));
    const int64_t HD = qkv->shape[3] / (3 * heads), HDp = k->shape[2];
    CK_ASSERT(HDp >= HD);
    const int64_t G  = qkv->shape[0] * heads * (qkv->shape[1] / win_h) * (qkv->shape[2] / win_w);
    const int64_t T = (int64_t)win_h * win_w, Tq = q_pool ? T / 4 : T;
    CK_ASSERT(k->ndim == 3 && k->shape[0] == G && k->shape[1] == T && same_shape(k, v));
    CK_ASSERT(q->ndim == 3 && q->shape[0] == G && q->shape[1] == Tq && q->shape[2] == HDp);
    RUNP(ex, "attn_gather", ex->be->attn_gather(ex->be, q, k, v, qkv, heads, win_h, win_w, q_pool));
}

void ck_attn_scatter(ck_exec *ex, const ck_tensor *y, const ck_tensor *o, int heads, int win_h, int win_w) {
    CK_ASSERT(y->ndim == 4 && o->ndim == 3 && y->shape[3] % heads == 0);
    CK_ASSERT(y->shape[1] % win_h == 0 && y->shape[2] % win_w == 0);
    const int64_t G = y->shape[0] * heads * (y->shape[1] / win_h) * (y->shape[2] / win_w);
    CK_ASSERT(o->shape[0] == G && o->shape[1] == (int64_t)win_h * win_w && o->shape[2] >= y->shape[3] / heads);
    RUNP(ex, "attn_scatter", ex->be->attn_scatter(ex->be, y, o, heads, win_h, win_w));
}

void ck_attention_qkv(ck_exec *ex, const ck_tensor *y, const ck_tensor *qkv, int heads, int win_h, int win_w,
                      int q_pool, float scale, const ck_tensor *q, const ck_tensor *k, const ck_tensor *v,
                      const ck_tensor *o) {
    CK_ASSERT(qkv->ndim == 4 && y->ndim == 4 && heads >= 1 && qkv->shape[3] % (3 * heads) == 0);
    const int64_t H = qkv->shape[1], W = qkv->shape[2], pool = q_pool ? 2 : 1;
    CK_ASSERT(win_h >= 1 && win_w >= 1 && H % win_h == 0 && W % win_w == 0);
    CK_ASSERT(!q_pool || (win_h % 2 == 0 && win_w % 2 == 0));
    CK_ASSERT(y->shape[0] == qkv->shape[0] && y->shape[1] * pool == H && y->shape[2] * pool == W &&
              y->shape[3] * 3 == qkv->shape[3]);
    const int64_t G  = qkv->shape[0] * heads * (H / win_h) * (W / win_w), T = (int64_t)win_h * win_w;
    const int64_t HD = y->shape[3] / heads;
    CK_ASSERT(k->ndim == 3 && k->shape[0] == G && k->shape[1] == T && k->shape[2] >= HD);
    CK_ASSERT(q->ndim == 3 && q->shape[0] == G && q->shape[1] == T / (pool * pool) && q->shape[2] == k->shape[2]);
    CK_ASSERT(same_shape(v, k) && same_shape(o, q));
    CK_ASSERT(scale > 0.0f);
    RUNP(ex, win_h == H && win_w == W && !q_pool ? "attention global" : "attention windowed",
         ex->be->attention_qkv(ex->be, y, qkv, heads, win_h, win_w, q_pool, scale, q, k, v, o));
}

void ck_maxpool2x2(ck_exec *ex, const ck_tensor *y, const ck_tensor *x) {
    CK_ASSERT(x->ndim == 4 && y->ndim == 4 && x->shape[1] % 2 == 0 && x->shape[2] % 2 == 0);
    CK_ASSERT(y->shape[0] == x->shape[0] && y->shape[1] * 2 == x->shape[1] && y->shape[2] * 2 == x->shape[2] &&
              y->shape[3] == x->shape[3]);
    RUNP(ex, "maxpool2x2", ex->be->maxpool2x2(ex->be, y, x));
}

void ck_add(ck_exec *ex, const ck_tensor *y, const ck_tensor *a, const ck_tensor *b) {
    CK_ASSERT(same_shape(y, a) && ck_tensor_numel(a) % ck_tensor_numel(b) == 0);
    RUNP(ex, "add", ex->be->add(ex->be, y, a, b));
}

void ck_resize_bilinear(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, int accumulate) {
    CK_ASSERT(x->ndim == 4 && y->ndim == 4 && x->shape[0] == y->shape[0] && x->shape[3] == y->shape[3]);
    RUNP(ex, "resize_bilinear", ex->be->resize_bilinear(ex->be, y, x, accumulate));
}

void ck_resize_sum(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, int n) {
    CK_ASSERT(n >= 1 && n <= CK_RESIZE_SUM_MAX && y->ndim == 4);
    for (int k = 0; k < n; k++)
        CK_ASSERT(x[k].ndim == 4 && x[k].shape[0] == y->shape[0] && x[k].shape[3] == y->shape[3] &&
                  x[k].dtype == y->dtype && x[k].data != y->data);
    RUNP(ex, "resize_sum", ex->be->resize_sum(ex->be, y, x, n));
}

void ck_activation(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, ck_act act) {
    CK_ASSERT(same_shape(x, y));
    RUNP(ex, "activation", ex->be->activation(ex->be, y, x, act));
}

void ck_sigmoid_add(ck_exec *ex, const ck_tensor *y, const ck_tensor *a, const ck_tensor *b, float b_scale) {
    CK_ASSERT(same_shape(y, a) && (!b || same_shape(a, b)));
    RUNP(ex, "sigmoid_add", ex->be->sigmoid_add(ex->be, y, a, b, b_scale));
}

void ck_concat_sigmoid(ck_exec *ex, const ck_tensor *y, const ck_tensor *a, int a_channels, const ck_tensor *b) {
    CK_ASSERT(same_leading(a, y) && same_leading(b, y) && a_channels <= ck_tensor_last(a));
    CK_ASSERT(ck_tensor_last(y) >= a_channels + ck_tensor_last(b)); /* channels past them are zeroed */
    RUNP(ex, "concat_sigmoid", ex->be->concat_sigmoid(ex->be, y, a, a_channels, b));
}

void ck_convert(ck_exec *ex, const ck_tensor *y, const ck_tensor *x) {
    CK_ASSERT(ck_tensor_numel(x) == ck_tensor_numel(y));
    RUNP(ex, "convert", ex->be->convert(ex->be, y, x));
}

ck_tensor ck_new_dtype(ck_exec *ex, ck_dtype dt, int ndim, const int64_t *shape) {
    ck_dtype saved = ex->dtype;
    ex->dtype      = dt;
    ck_tensor t    = ck_new(ex, ndim, shape);
    ex->dtype      = saved;
    return t;
}

void ck_zero(ck_exec *ex, const ck_tensor *y) { RUNP(ex, "zero", ex->be->zero(ex->be, y)); }

void ck_copy_rect(ck_exec *ex, const ck_tensor *y, int dy, int dx, const ck_tensor *x, int sy, int sx, int h, int w) {
    CK_ASSERT(ex->be->ext.copy_rect && "the backend has the optional op copy_rect");
    CK_ASSERT(x->ndim == 4 && y->ndim == 4 && x->shape[0] == y->shape[0] && x->shape[3] == y->shape[3]);
    CK_ASSERT(x->dtype == y->dtype && h > 0 && w > 0 && sy >= 0 && sx >= 0 && dy >= 0 && dx >= 0);
    CK_ASSERT(sy + h <= x->shape[1] && sx + w <= x->shape[2] && dy + h <= y->shape[1] && dx + w <= y->shape[2]);
    RUNP(ex, "copy_rect", ex->be->ext.copy_rect(ex->be, y, dy, dx, x, sy, sx, h, w));
}

void ck_conv3x3_gn(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w, const ck_tensor *b,
                   int dilation, int row0, const ck_tensor *x_stats, const ck_tensor *gamma, const ck_tensor *beta,
                   const ck_tensor *residual, const ck_tensor *a_out, const ck_tensor *moments) {
    CK_ASSERT(ex->be->ext.conv3x3_gn && "the backend has the optional op conv3x3_gn");
    CK_ASSERT(x->ndim == 4 && y->ndim == 4 && w->ndim == 4 && moments->ndim == 5 && dilation >= 1);
    const int64_t B = x->shape[0], H = x->shape[1], W = x->shape[2], IC = x->shape[3], OC = y->shape[3];
    const int64_t h = y->shape[1], groups = moments->shape[3];
    CK_ASSERT(y->shape[0] == B && y->shape[2] == W && y->dtype == x->dtype);
    CK_ASSERT(w->shape[0] == OC && w->shape[1] == IC && w->shape[2] == 3 && w->shape[3] == 3 && w->dtype == x->dtype);
    CK_ASSERT(b && b->dtype == CK_DTYPE_F32 && b->shape[0] == OC && row0 >= 0 && h >= 1 && row0 + h <= H);
    CK_ASSERT(moments->dtype == CK_DTYPE_F32 && moments->shape[0] == B && moments->shape[1] == H);
    CK_ASSERT(moments->shape[2] == (W + CK_GN_SEG - 1) / CK_GN_SEG && moments->shape[4] == 2 && OC % groups == 0);
    if (x_stats) {
        const int64_t gx = ck_tensor_numel(x_stats) / (2 * B);
        CK_ASSERT(x_stats->dtype == CK_DTYPE_F32 && gx >= 1 && gx * 2 * B == ck_tensor_numel(x_stats) && IC % gx == 0);
        CK_ASSERT(gamma && beta && gamma->dtype == CK_DTYPE_F32 && beta->dtype == CK_DTYPE_F32);
        CK_ASSERT(gamma->shape[0] == IC && beta->shape[0] == IC);
    }
    CK_ASSERT(!residual || (x_stats && same_shape(residual, x) && residual->dtype == x->dtype));
    CK_ASSERT(!a_out || (same_shape(a_out, x) && a_out->dtype == x->dtype && a_out->data != x->data &&
                         (!residual || a_out->data != residual->data) && a_out->data != y->data));
    RUNP(ex, "conv2d 3x3 +gn", ex->be->ext.conv3x3_gn(ex->be, y, x, w, b, dilation, row0, x_stats, gamma, beta,
                                                      residual, a_out, moments));
}

void ck_gn_moments_stats(ck_exec *ex, const ck_tensor *stats, const ck_tensor *moments, int width, int group_size,
                         float eps) {
    CK_ASSERT(ex->be->ext.gn_moments_stats && "the backend has the optional op gn_moments_stats");
    CK_ASSERT(moments->ndim == 5 && moments->dtype == CK_DTYPE_F32 && stats->dtype == CK_DTYPE_F32);
    CK_ASSERT(moments->shape[2] == (width + CK_GN_SEG - 1) / CK_GN_SEG && group_size >= 1);
    CK_ASSERT(ck_tensor_numel(stats) == moments->shape[0] * moments->shape[3] * 2);
    RUNP(ex, "groupnorm stats", ex->be->ext.gn_moments_stats(ex->be, stats, moments, width, group_size, eps));
}

void ck_layernorm_linear(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma,
                         const ck_tensor *beta, float eps, const ck_tensor *w, const ck_tensor *b, ck_act act,
                         const ck_tensor *residual, const ck_tensor *xn) {
    CK_ASSERT(ex->be->ext.layernorm_linear && "the backend has the optional op layernorm_linear");
    const int64_t K = ck_tensor_last(x);
    CK_ASSERT(same_shape(x, xn) && xn->dtype == x->dtype && xn->data != x->data && xn->data != y->data);
    CK_ASSERT(gamma->shape[0] == K && beta->shape[0] == K);
    CK_ASSERT(w->ndim == 2 && w->shape[1] == K && ck_tensor_last(y) == w->shape[0]);
    CK_ASSERT(ck_tensor_numel(y) / w->shape[0] == ck_tensor_numel(x) / K && y->data != x->data);
    CK_ASSERT(!b || b->shape[0] == w->shape[0]);
    CK_ASSERT(!residual || same_shape(residual, y));
    RUNP(ex, act == CK_ACT_GELU ? "layernorm+linear+gelu" : "layernorm+linear",
         ex->be->ext.layernorm_linear(ex->be, y, x, gamma, beta, eps, w, b, act, residual, xn));
}

void ck_space_to_depth(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, int block, int lead) {
    CK_ASSERT(ex->be->ext.space_to_depth && "the backend has the optional op space_to_depth");
    CK_ASSERT(x->ndim == 4 && y->ndim == 4 && y->dtype == x->dtype && x->data != y->data);
    CK_ASSERT(block >= 1 && block <= 16 && lead >= 0 && lead < 16 * block);
    CK_ASSERT(y->shape[0] == x->shape[0] && y->shape[3] == (int64_t)block * block * x->shape[3]);
    CK_ASSERT(y->shape[1] >= 1 && y->shape[2] >= 1 && y->shape[1] * block <= x->shape[1] + 16 * block &&
              y->shape[2] * block <= x->shape[2] + 16 * block);
    RUNP(ex, "space_to_depth", ex->be->ext.space_to_depth(ex->be, y, x, block, lead));
}
