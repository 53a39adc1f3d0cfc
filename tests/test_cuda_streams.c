/* One loaded model, several streams on CUDA: two contexts of one model (ck_ctx_init_model) key different
 * frames in parallel threads, each byte for byte equal to a context of its own (fp16 and fp32, tiny
 * fixture; shared_model_check.h), and they hold the weights once: the device memory two streams of one
 * Hiera-B+ model (random:base_plus) take against two contexts, measured with cudaMemGetInfo at S = 512
 * and 2048 (printed; the difference must be at least 90 % of the weights). Skips (exit 77) without a
 * CUDA device. */
#include "cuda_test.h"
#include "shared_model_check.h"

#include <stdlib.h>

/* Device bytes in use now (free memory of device 0 against its total). */
static size_t used_bytes(void) {
    ck_device_info di;
    return ck_cuda_device_info(0, &di) == CK_OK ? di.total_bytes - di.free_bytes : 0;
}

static void memory(int S) {
    ck_params p = ck_params_default();
    p.size      = S;
    p.device    = CK_DEVICE_CUDA;
    p.precision = CK_PREC_FP16;
    const size_t base = used_bytes();
    ck_ctx      *a = NULL, *b = NULL;
    CHECK(ck_ctx_init(&a, "random:base_plus", &p) == CK_OK && ck_ctx_warmup(a) == CK_OK);
    CHECK(ck_ctx_init(&b, "random:base_plus", &p) == CK_OK && ck_ctx_warmup(b) == CK_OK);
    const size_t two_contexts = used_bytes() - base, weights = ck_ctx_weight_bytes(a);
    ck_ctx_free(a), ck_ctx_free(b);

    const size_t base2 = used_bytes();
    char         msg[512];
    ck_model    *m = NULL;
    CHECK_MSG(ck_model_load(&m, "random:base_plus", &p, msg, sizeof msg) == CK_OK, "%s", msg);
    a = b = NULL;
    CHECK(ck_ctx_init_model(&a, m, &p) == CK_OK && ck_ctx_warmup(a) == CK_OK);
    CHECK(ck_ctx_init_model(&b, m, &p) == CK_OK && ck_ctx_warmup(b) == CK_OK);
    const size_t two_streams = used_bytes() - base2;
    ck_ctx_free(a), ck_ctx_free(b);
    ck_model_release(m);
    printf("S=%d fp16 random:base_plus: two contexts %.1f MiB, two streams of one model %.1f MiB on the device "
           "(weights %.1f MiB; saved %.1f MiB)\n",
           S, two_contexts / 1048576.0, two_streams / 1048576.0, weights / 1048576.0,
           ((double)two_contexts - (double)two_streams) / 1048576.0);
    CHECK_MSG((double)two_contexts - (double)two_streams >= 0.9 * (double)weights,
              "two streams save %.1f MiB, less than the weights' %.1f", ((double)two_contexts - (double)two_streams) / 1048576.0,
              weights / 1048576.0);
}

int main(void) {
    ck_backend *probe = cuda_backend_or_skip();
    if (!probe) return CK_TEST_SKIP;
    probe->destroy(probe);
    /* the built-in convolution in every context: with CK_CONV=auto each context times cuDNN against it on
     * its first forward and may pick the other one, whose sums round differently */
    setenv("CK_CONV", "kernel", 1);
    char ck[1024];
    test_path(ck, sizeof ck, "CK_FIXTURES", "tiny/s128/model.safetensors");
    ck_params p = ck_params_default();
    p.size      = 128;
    p.device    = CK_DEVICE_CUDA;
    p.threads   = 2;
    p.precision = CK_PREC_FP16;
    sm_check(ck, &p, "cuda fp16");
    p.precision = CK_PREC_FP32;
    sm_check(ck, &p, "cuda fp32");
    memory(512);
    memory(2048);
    return test_summary();
}
