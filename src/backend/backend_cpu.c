/* CPU backend: host memory (64-byte aligned), no-op transfers, and the reference kernels. */
#include "ops/backend.h"
#include "ops/cpu/ops_cpu.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

static void *cpu_alloc(ck_backend *be, size_t bytes) {
    (void)be;
    void  *p = NULL;
    size_t n = (bytes + 255) & ~(size_t)255;
    if (posix_memalign(&p, 256, n ? n : 256) != 0) return NULL;
    return p;
}
static void cpu_free(ck_backend *be, void *ptr) { (void)be; free(ptr); }
static void cpu_copy(ck_backend *be, void *dst, const void *src, size_t n) {
    (void)be;
    if (dst != src && n) memcpy(dst, src, n);
}
static void cpu_sync(ck_backend *be) { (void)be; }
static void cpu_destroy(ck_backend *be) { free(be); }

ck_backend *ck_backend_cpu_create(int threads) {
    ck_backend *be = calloc(1, sizeof *be);
    if (!be) return NULL;
    be->name        = "cpu";
    be->device      = CK_DEVICE_CPU;
    be->alloc       = cpu_alloc;
    be->free        = cpu_free;
    be->upload      = cpu_copy;
    be->download    = cpu_copy;
    be->synchronize = cpu_sync;
    be->destroy     = cpu_destroy;
    be->act_dtype    = CK_DTYPE_F32;
    be->weight_dtype = CK_DTYPE_F32;
#define CK_FILL(name) be->name = ck_##name##_cpu;
    CK_OPS(CK_FILL)
#undef CK_FILL
#define CK_FILL_OPTIONAL(name) be->ext.name = ck_##name##_cpu;
    CK_OPS_OPTIONAL(CK_FILL_OPTIONAL)
#undef CK_FILL_OPTIONAL
    if (threads > 0) omp_set_num_threads(threads);
    const char *missing = NULL;
    CK_ASSERT(ck_backend_complete(be, &missing));
    return be;
}
