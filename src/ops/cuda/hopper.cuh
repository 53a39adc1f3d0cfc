/* The PTX primitives the tensor-core kernels share (attention.cu and attention_fa3.cuh, refiner_conv.cu,
 * gemm_sm90.cu), in an unnamed namespace of the including file. A host emulation build (CK_CUDA_EMU,
 * dev/cuda/emu_core.h) supplies its own versions with the same signatures, so the kernels are the code the
 * emulator runs; the Hopper-only ones exist in sm_90a images only, where the kernels using them are guarded the
 * same way.
 * ref: PTX ISA, "cp.async", "Asynchronous Warpgroup Level Matrix Multiply-Accumulate" (wgmma.mma_async, its
 *      fence / commit / wait, the matrix descriptor), "Parallel Synchronization and Communication
 *      Instructions: bar" and "membar/fence" (the async proxy). */
#ifndef CK_OPS_CUDA_HOPPER_CUH
#define CK_OPS_CUDA_HOPPER_CUH

#include <stdint.h>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace {

#ifndef CK_CUDA_EMU
__device__ __forceinline__ uint32_t ck__smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* 16-byte global → shared copy; when !valid the 16 bytes are zero-filled and global memory is not read
 * (src-size 0), which is how rows and columns past a tensor's end become zeros. */
__device__ __forceinline__ void ck__cp_async16(void *smem, const void *gmem, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(ck__smem_addr(smem)), "l"(gmem),
                 "r"(valid ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void ck__cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void ck__cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
#endif

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) && !defined(CK_CUDA_EMU)
/* A shared store the compiler cannot drop (keeps a marker array allocated in the image). */
__device__ __forceinline__ void ck__keep_smem(void *p) {
    asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(ck__smem_addr(p)), "r"(0u) : "memory");
}
/* The dynamic shared memory of the launch. */
__device__ __forceinline__ uint8_t *ck__dyn_smem() {
    extern __shared__ __align__(16) uint8_t ck__smem_dyn[];
    return ck__smem_dyn;
}
__device__ __forceinline__ void ck__wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void ck__wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void ck__wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
/* generic-proxy shared stores (cp.async, st.shared) made visible to the MMA's async-proxy operand reads */
__device__ __forceinline__ void ck__fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
/* a named barrier over n threads (0 is __syncthreads') */
__device__ __forceinline__ void ck__bar_sync_n(int id, int n) { asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory"); }
/* Registers an in-flight wgmma writes: code that reads them must not move above the wait. */
template <int N> __device__ __forceinline__ void ck__reg_fence(float (&r)[N]) {
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+f"(r[i])::"memory");
}
#define CK__WGMMA_D64(d)                                                                                      \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), \
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),  \
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), \
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), \
        "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), \
        "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), \
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), \
        "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define CK__WGMMA_SS128(TY)                                                                                    \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                                              \
    "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {"                                              \
    "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,"   \
    "%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53," \
    "%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
/* d (64×128 per warpgroup, f32) (+)= A (64×16) · B (16×128), both K-major in shared memory as the descriptors
 * say (layout and strides); accumulate = 0 overwrites d. */
template <typename T>
__device__ __forceinline__ void ck__wgmma_ss128(float (&d)[64], uint64_t adesc, uint64_t bdesc, int accumulate) {
    if constexpr (std::is_same<T, __nv_bfloat16>::value)
        asm volatile(CK__WGMMA_SS128("bf16") : CK__WGMMA_D64(d) : "l"(adesc), "l"(bdesc), "r"(accumulate));
    else
        asm volatile(CK__WGMMA_SS128("f16") : CK__WGMMA_D64(d) : "l"(adesc), "l"(bdesc), "r"(accumulate));
}
#undef CK__WGMMA_SS128

/* The e4m3 (FP8) forms, f32 accumulators. d (64×128) (+)= A (64×32) · B (32×128), both K-major in shared memory
 * (8-bit operands are K-major only; no transpose immediates). */
#define CK__WGMMA_FP8_SS128                                                                                    \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                                              \
    "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {"                                                  \
    "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,"   \
    "%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53," \
    "%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1;\n}\n"
__device__ __forceinline__ void ck__wgmma_fp8_ss128(float (&d)[64], uint64_t adesc, uint64_t bdesc, int accumulate) {
    asm volatile(CK__WGMMA_FP8_SS128 : CK__WGMMA_D64(d) : "l"(adesc), "l"(bdesc), "r"(accumulate));
}
#undef CK__WGMMA_FP8_SS128
#undef CK__WGMMA_D64
/* d (64×64) (+)= a (64×32 e4m3 in registers: per warp 16 rows, a[0] row lane/4 bytes k = 4·(lane%4) + 0..3,
 * a[1] the row 8 below, a[2] / a[3] the same at k + 16) · B (32×64) K-major in shared memory. */
__device__ __forceinline__ void ck__wgmma_fp8_rs64(float (&d)[32], const uint32_t (&a)[4], uint64_t desc,
                                                   int accumulate) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 {"
                 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
                 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31"
                 "}, {%32,%33,%34,%35}, %36, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
                   "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),
                   "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),
                   "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(accumulate));
}
/* Four floats as e4m3 (round to nearest even, saturating at ±448) in one register, x0 in the lowest byte. */
__device__ __forceinline__ uint32_t ck__pack_e4m3x4(float x0, float x1, float x2, float x3) {
    uint32_t r;
    asm("{\n.reg .b16 lo, hi;\n"
        "cvt.rn.satfinite.e4m3x2.f32 lo, %2, %1;\n"
        "cvt.rn.satfinite.e4m3x2.f32 hi, %4, %3;\n"
        "mov.b32 %0, {lo, hi};\n}\n"
        : "=r"(r)
        : "f"(x0), "f"(x1), "f"(x2), "f"(x3));
    return r;
}
#endif

/* A 16-bit value (float16 or bfloat16) to float, and a float rounded (to nearest even) to one. */
template <typename T> __device__ __forceinline__ float ck__h2f(T v) {
    if constexpr (std::is_same<T, __half>::value) return __half2float(v);
    else return __bfloat162float(v);
}
template <typename T> __device__ __forceinline__ T ck__f2h(float v) {
    if constexpr (std::is_same<T, __half>::value) return __float2half_rn(v);
    else return __float2bfloat16_rn(v);
}

/* Shared-memory matrix descriptors (PTX ISA, "Matrix Descriptor Format"): start, LBO and SBO in 16-byte units,
 * the layout in bits 62–63. The 128-byte swizzle: 8-row groups 1024 bytes apart (LBO unused). No swizzle,
 * K-major: core matrices of 8 rows × 16 bytes, rows 16 bytes apart, 8-row groups `sbo` apart, the two 8-element
 * halves of a k16 step `lbo` apart. */
__host__ __device__ __forceinline__ uint64_t ck__desc_sw128(uint32_t addr) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (uint64_t)1 << 16 | (uint64_t)(1024 >> 4) << 32 | (uint64_t)1 << 62;
}
/* The 64-byte swizzle (layout 2): rows of 64 bytes, 8-row groups 512 bytes apart, chunk bits [4,6) XOR [7,9). */
__host__ __device__ __forceinline__ uint64_t ck__desc_sw64(uint32_t addr) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (uint64_t)1 << 16 | (uint64_t)(512 >> 4) << 32 | (uint64_t)2 << 62;
}
__host__ __device__ __forceinline__ uint64_t ck__desc_plain(uint32_t addr, uint32_t lbo, uint32_t sbo) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (uint64_t)(lbo >> 4) << 16 | (uint64_t)(sbo >> 4) << 32;
}

/* The kernels whose body exists only in sm_90a images declare this many bytes of static shared memory there
 * (a marker array, kept by ck__keep_smem), and none elsewhere. */
constexpr int kCkSm90aMarker = 16;

/* The image the runtime loads for `kern` on the current device is the sm_90a one: a compute capability 9.0
 * device, and the kernel's static shared memory is the marker (an sm_80 or plain sm_90 image holds an empty body
 * that traps). All of the library's kernels come from one build, so the answer is cached per device (ints: a
 * race between host threads only repeats the query). Host calls only, legal during stream capture. */
static int ck__sm90a_ready(const void *kern) {
    static int cache[64]; /* 0 unknown, 1 yes, 2 no */
    int        dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return 0;
    if (dev >= 0 && dev < 64 && cache[dev]) return cache[dev] == 1;
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess)
        return 0;
    int ok = 0;
    if (major == 9 && minor == 0) {
        cudaFuncAttributes fa;
        if (cudaFuncGetAttributes(&fa, kern) != cudaSuccess) {
            (void)cudaGetLastError(); /* not a launch failure; ask again next time rather than cache a no */
            return 0;
        }
        ok = fa.sharedSizeBytes == (size_t)kCkSm90aMarker;
    }
    if (dev >= 0 && dev < 64) cache[dev] = ok ? 1 : 2;
    return ok;
}

} /* namespace */

#endif
