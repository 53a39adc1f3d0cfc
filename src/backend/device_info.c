/* CUDA device queries of the public API (ck_cuda_device_count, ck_cuda_device_info): the CUDA runtime
 * when the build has it (CK_HAVE_CUDA), else no devices. Independent of any context, so `ckey doctor`
 * and presets can look before choosing a device. */
#include "core/check.h"

#include <string.h>

#ifdef CK_HAVE_CUDA
#include <cuda_runtime_api.h>

int ck_cuda_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* "no driver" / "no device" is an answer here, not an error to keep */
        return 0;
    }
    return n;
}

ck_status ck_cuda_device_info(int index, ck_device_info *out) {
    memset(out, 0, sizeof *out);
    if (index < 0 || index >= ck_cuda_device_count()) return CK_STATUS_ENODEV;
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, index) != cudaSuccess) {
        cudaGetLastError();
        return CK_STATUS_EDEVICE;
    }
    snprintf(out->name, sizeof out->name, "%s", prop.name);
    out->total_bytes     = prop.totalGlobalMem;
    out->cc_major        = prop.major;
    out->cc_minor        = prop.minor;
    out->multiprocessors = prop.multiProcessorCount;
    out->integrated      = prop.integrated != 0;
    /* free memory needs the device's context; restore the caller's current device afterwards */
    int    prev = 0;
    size_t fr = 0, tot = 0;
    cudaGetDevice(&prev);
    if (cudaSetDevice(index) == cudaSuccess && cudaMemGetInfo(&fr, &tot) == cudaSuccess) out->free_bytes = fr;
    else cudaGetLastError();
    cudaSetDevice(prev);
    return CK_OK;
}

#else

int ck_cuda_device_count(void) { return 0; }

ck_status ck_cuda_device_info(int index, ck_device_info *out) {
    (void)index;
    memset(out, 0, sizeof *out);
    return CK_STATUS_ENODEV;
}

#endif
