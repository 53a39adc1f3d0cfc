/* CPU reference kernels, one per op of ops_list.h (the optional ones included), named ck_<op>_cpu.
 * fp32 only. Heavy products go through CBLAS (OpenBLAS); everything else is plain loops with OpenMP.
 * Kernels that call BLAS inside an OpenMP region switch BLAS to one thread for that region
 * (ck_cpu_blas_serial_begin/end), so the two thread pools never oversubscribe the cores. */
#ifndef CK_OPS_CPU_H
#define CK_OPS_CPU_H

#include "ops/backend.h"

#include <math.h>

/* void ck_<name>_cpu(ck_backend *be, <the op's parameters>) for every op of both lists. */
#define CK_OP_CPU_PROTO(name) void ck_##name##_cpu CK_OP_PARAMS_WITH(ck_backend *be, name);
CK_OPS(CK_OP_CPU_PROTO)
CK_OPS_OPTIONAL(CK_OP_CPU_PROTO)
#undef CK_OP_CPU_PROTO

/* BLAS thread control around OpenMP regions that call BLAS per thread. */
void ck_cpu_blas_serial_begin(void);
void ck_cpu_blas_serial_end(void);

static inline float ck_gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f)); }

#endif
