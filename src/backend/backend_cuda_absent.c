/* Backend factory for builds without CUDA: asking for the GPU is a clear error, never a crash. */
#include "ops/backend.h"

#include <stdio.h>

#ifndef CK_HAVE_CUDA
ck_backend *ck_backend_cuda_create(const ck_backend_opts *opts, ck_err *err) {
    (void)opts;
    /* not logged here: with --device auto this is only a notice for the caller to print */
    if (err) snprintf(err->msg, sizeof err->msg, "this build of ckey has no CUDA support (built without nvcc)");
    return NULL;
}
#endif
