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

#define RUN(ex) if (!(ex)->planning)

void ck_linear(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w, const ck_tensor *b, ck_act act,
               const ck_tensor *residual) {
    CK_ASSERT(w->ndim == 2 && ck_tensor_last(x) == w->shape[1] && ck_tensor_last(y) == w->shape[0]);
    CK_ASSERT(same_leading(x, y) && x->dtype == y->dtype);
    CK_ASSERT(!b || (b->ndim == 1 && b->shape[0] == w->shape[0]));
    CK_ASSERT(!residual || same_shape(residual, y));
    CK_ASSERT(!residual || residual->data != y->data || act == CK_ACT_NONE);
    RUN(ex) ex->be->linear(ex->be, y, x, w, b, act, residual);
}

void ck_layernorm(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma, const ck_tensor *beta,
                  float eps) {
    CK_ASSERT(same_shape(x, y) && gamma->shape[0] == ck_tensor_last(x) && beta->shape[0] == ck_tensor_last(x));
    RUN(ex) ex->be->layernorm(ex->be, y, x, gamma, beta, eps);
}

void ck_conv2d(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w, const ck_tensor *b,
               int stride, int pad, int dilation) {
    CK_ASSERT(x->ndim == 4 && y->ndim == 4 && w->ndim == 4);
    CK_ASSERT(w->shape[1] == x->shape[3] && w->shape[0] == y->shape[3] && x->shape[0] == y->shape[0]);
    const int64_t kh = w->shape[2], kw = w->shape[3];
    CK_ASSERT(y->shape[1] == (x->shape[1] + 2 * pad - dilation * (kh - 1) - 1) / stride + 1);
    CK_ASSERT(y->shape[2] == (x->shape[2] + 2 * pad - dilation * (kw - 1) - 1) / stride + 1);
    CK_ASSERT(!b || b->shape[0] == w->shape[0]);
    RUN(ex) ex->be->conv2d(ex->be, y, x, w, b, stride, pad, dilation);
}

void ck_groupnorm(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma, const ck_tensor *beta,
                  int groups, float eps, const ck_tensor *residual, ck_act act, const ck_tensor *stats,
                  int stats_frozen) {
    CK_ASSERT(same_shape(x, y) && groups > 0 && ck_tensor_last(x) % groups == 0);
    CK_ASSERT(gamma->shape[0] == ck_tensor_last(x) && beta->shape[0] == ck_tensor_last(x));
    CK_ASSERT(!residual || same_shape(residual, y));
    CK_ASSERT(!stats || ck_tensor_numel(stats) == x->shape[0] * groups * 2);
    CK_ASSERT(!stats_frozen || stats);
    RUN(ex) ex->be->groupnorm(ex->be, y, x, gamma, beta, groups, eps, residual, act, stats, stats_frozen);
}

void ck_attention(ck_exec *ex, const ck_tensor *o, const ck_tensor *q, const ck_tensor *k, const ck_tensor *v,
                  float scale) {
    CK_ASSERT(q->ndim == 3 && same_shape(k, v) && same_shape(o, q));
    CK_ASSERT(q->shape[0] == k->shape[0] && q->shape[2] == k->shape[2]);
    RUN(ex) ex->be->attention(ex->be, o, q, k, v, scale);
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
    RUN(ex) ex->be->attn_gather(ex->be, q, k, v, qkv, heads, win_h, win_w, q_pool);
}

void ck_attn_scatter(ck_exec *ex, const ck_tensor *y, const ck_tensor *o, int heads, int win_h, int win_w) {
    CK_ASSERT(y->ndim == 4 && o->ndim == 3 && y->shape[3] % heads == 0);
    CK_ASSERT(y->shape[1] % win_h == 0 && y->shape[2] % win_w == 0);
    const int64_t G = y->shape[0] * heads * (y->shape[1] / win_h) * (y->shape[2] / win_w);
    CK_ASSERT(o->shape[0] == G && o->shape[1] == (int64_t)win_h * win_w && o->shape[2] >= y->shape[3] / heads);
    RUN(ex) ex->be->attn_scatter(ex->be, y, o, heads, win_h, win_w);
}

void ck_maxpool2x2(ck_exec *ex, const ck_tensor *y, const ck_tensor *x) {
    CK_ASSERT(x->ndim == 4 && y->ndim == 4 && x->shape[1] % 2 == 0 && x->shape[2] % 2 == 0);
    CK_ASSERT(y->shape[0] == x->shape[0] && y->shape[1] * 2 == x->shape[1] && y->shape[2] * 2 == x->shape[2] &&
              y->shape[3] == x->shape[3]);
    RUN(ex) ex->be->maxpool2x2(ex->be, y, x);
}

void ck_add(ck_exec *ex, const ck_tensor *y, const ck_tensor *a, const ck_tensor *b) {
    CK_ASSERT(same_shape(y, a) && ck_tensor_numel(a) % ck_tensor_numel(b) == 0);
    RUN(ex) ex->be->add(ex->be, y, a, b);
}

void ck_resize_bilinear(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, int accumulate) {
    CK_ASSERT(x->ndim == 4 && y->ndim == 4 && x->shape[0] == y->shape[0] && x->shape[3] == y->shape[3]);
    RUN(ex) ex->be->resize_bilinear(ex->be, y, x, accumulate);
}

void ck_activation(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, ck_act act) {
    CK_ASSERT(same_shape(x, y));
    RUN(ex) ex->be->activation(ex->be, y, x, act);
}

void ck_sigmoid_add(ck_exec *ex, const ck_tensor *y, const ck_tensor *a, const ck_tensor *b, float b_scale) {
    CK_ASSERT(same_shape(y, a) && (!b || same_shape(a, b)));
    RUN(ex) ex->be->sigmoid_add(ex->be, y, a, b, b_scale);
}

void ck_concat_sigmoid(ck_exec *ex, const ck_tensor *y, const ck_tensor *a, int a_channels, const ck_tensor *b) {
    CK_ASSERT(same_leading(a, y) && same_leading(b, y) && a_channels <= ck_tensor_last(a));
    CK_ASSERT(ck_tensor_last(y) == a_channels + ck_tensor_last(b));
    RUN(ex) ex->be->concat_sigmoid(ex->be, y, a, a_channels, b);
}

void ck_convert(ck_exec *ex, const ck_tensor *y, const ck_tensor *x) {
    CK_ASSERT(ck_tensor_numel(x) == ck_tensor_numel(y));
    RUN(ex) ex->be->convert(ex->be, y, x);
}

ck_tensor ck_new_dtype(ck_exec *ex, ck_dtype dt, int ndim, const int64_t *shape) {
    ck_dtype saved = ex->dtype;
    ex->dtype      = dt;
    ck_tensor t    = ck_new(ex, ndim, shape);
    ex->dtype      = saved;
    return t;
}
