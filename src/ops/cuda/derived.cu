/* Device copies derived from device tensors, made once and kept while their source lives:
 *   CK_DERIVED_KRSC : cuDNN's (K, R, S, C) filter layout of a (OC, IC, KH, KW) conv weight (conv2d_cudnn.c);
 *   CK_DERIVED_CAST : a float32 vector in the activation dtype, for cuBLASLt's bias epilogue, whose bias must
 *                     have the output's dtype (linear.cu) and for cuDNN's fused bias.
 * A copy is keyed by (source pointer, kind, dtype). It is made outside stream capture only (it allocates
 * through be->alloc, so it counts in the backend's memory figures); under capture a missing copy is NULL and
 * the caller takes its copy-free path. The backend drops the copies of memory it frees or re-uploads
 * (ck__derived_invalidate). */
#include "ops/cuda/common.cuh"

#include <stdlib.h>
#include <string.h>

/* [src, src + src_bytes) → dst. live = 0 with dst set: dropped under capture, freed at the next chance. */
typedef struct dev_copy {
    const void *src;
    size_t      src_bytes;
    void       *dst;
    int         kind, dtype, live;
} dev_copy;

typedef struct derived_table {
    dev_copy *copies;
    int       n, cap;
} derived_table;

extern "C" int ck__cuda_stream_capturing(ck_cuda *cu) {
    if (cu->capturing) return 1;
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(cu->stream, &st) != cudaSuccess) {
        cudaGetLastError();
        return 1; /* unknown: behave as under capture (no allocation) */
    }
    return st != cudaStreamCaptureStatusNone;
}

static void copy_release(ck_backend *be, dev_copy *d) {
    if (d->dst) be->free(be, d->dst);
    d->dst  = NULL;
    d->live = 0;
}

extern "C" const void *ck__derived_get(ck_backend *be, const ck_tensor *t, int kind, ck_dtype dtype) {
    ck_cuda       *cu = ck_cuda_of(be);
    derived_table *tb = (derived_table *)cu->derived;
    dev_copy      *slot = NULL;
    CK_ASSERT(kind == CK_DERIVED_KRSC || (kind == CK_DERIVED_CAST && t->dtype == CK_DTYPE_F32));
    for (int i = 0; tb && i < tb->n; i++) {
        dev_copy *d = &tb->copies[i];
        if (d->live && d->src == t->data && d->kind == kind && d->dtype == (int)dtype) return d->dst;
        if (!d->live && !slot) slot = d;
    }
    if (ck__cuda_stream_capturing(cu)) return NULL;
    if (!tb) {
        if (!(tb = (derived_table *)calloc(1, sizeof *tb))) return NULL;
        cu->derived = tb;
    }
    if (slot) {
        copy_release(be, slot); /* a copy dropped under capture */
    } else {
        if (tb->n == tb->cap) {
            const int n   = tb->cap ? 2 * tb->cap : 64;
            void     *arr = realloc(tb->copies, sizeof *tb->copies * (size_t)n);
            if (!arr) return NULL;
            tb->copies = (dev_copy *)arr;
            tb->cap    = n;
        }
        slot = &tb->copies[tb->n++];
        memset(slot, 0, sizeof *slot);
    }
    const size_t bytes = (size_t)ck_tensor_numel(t) * ck_dtype_size(dtype);
    void        *dst   = be->alloc(be, bytes);
    if (!dst) return NULL;
    if (kind == CK_DERIVED_KRSC) {
        ck__conv_weight_krsc_cuda(be, dst, t);
    } else {
        const ck_tensor d = ck_tensor_make(dst, dtype, t->ndim, t->shape);
        ck_convert_cuda(be, &d, t);
    }
    slot->src       = t->data;
    slot->src_bytes = ck_tensor_nbytes(t);
    slot->dst       = dst;
    slot->kind      = kind;
    slot->dtype     = (int)dtype;
    slot->live      = 1;
    return dst;
}

extern "C" void ck__derived_invalidate(ck_backend *be, const void *p, size_t bytes) {
    ck_cuda       *cu = ck_cuda_of(be);
    derived_table *tb = (derived_table *)cu->derived;
    if (!tb || !p) return;
    const uintptr_t lo = (uintptr_t)p, hi = lo + bytes;
    int             capturing = -1;
    for (int i = 0; i < tb->n; i++) {
        dev_copy *d = &tb->copies[i];
        if (!d->live) continue;
        const uintptr_t s = (uintptr_t)d->src, e = s + d->src_bytes;
        if (s >= hi || e <= lo) continue;
        if (capturing < 0) capturing = ck__cuda_stream_capturing(cu);
        d->live = 0;
        if (!capturing) copy_release(be, d); /* under capture the free waits for the next get or free */
    }
}

extern "C" void ck__derived_free(ck_backend *be) {
    ck_cuda       *cu = ck_cuda_of(be);
    derived_table *tb = (derived_table *)cu->derived;
    if (!tb) return;
    cu->derived = NULL; /* be->free below calls invalidate, which must not walk the table being released */
    for (int i = 0; i < tb->n; i++)
        if (tb->copies[i].dst && be->free) copy_release(be, &tb->copies[i]);
    free(tb->copies);
    free(tb);
}
