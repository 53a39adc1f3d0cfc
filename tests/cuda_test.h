/* The start every GPU test shares: an fp32 CUDA backend on device 0, or NULL after printing the SKIP
 * line (the test then exits CK_TEST_SKIP, which ctest reports as skipped: builds without CUDA, machines
 * without a GPU or driver).
 *
 *     ck_backend *be = cuda_backend_or_skip();
 *     if (!be) return CK_TEST_SKIP;
 */
#ifndef CK_TEST_CUDA_H
#define CK_TEST_CUDA_H

#include "ops/backend.h"

#include <stdio.h>

#define CK_TEST_SKIP 77 /* tests/CMakeLists.txt: SKIP_RETURN_CODE */

static ck_backend *cuda_backend_or_skip(void) {
    ck_err          err  = {{0}};
    ck_backend_opts opts = {0, CK_PREC_FP32, 1, 0};
    ck_backend     *be   = ck_backend_cuda_create(&opts, &err);
    if (!be) printf("SKIP: no CUDA device (%s)\n", err.msg);
    return be;
}

#endif
