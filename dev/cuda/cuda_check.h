/* The stand-alone device programs' check of a CUDA runtime call: on failure, the call, where it was and the
 * runtime's message on stderr, then exit status 2. */
#ifndef CK_DEV_CUDA_CHECK_H
#define CK_DEV_CUDA_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#define CU(x)                                                                                        \
    do {                                                                                             \
        cudaError_t e_ = (x);                                                                        \
        if (e_ != cudaSuccess) {                                                                     \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));       \
            exit(2);                                                                                 \
        }                                                                                            \
    } while (0)

#endif
