/* libFuzzer harness: the .npy reader (ck_npy_read; test fixtures and debug dumps). */
#include "fuzz_common.h"
#include "ckey_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ck_fuzz_quiet();
    ck_npy a;
    ck_fuzz_status = ck_npy_read(ck_fuzz_file(data, size), &a, &ck_fuzz_err);
    if (ck_fuzz_status == CK_OK) {
        size_t n = 1;
        for (int d = 0; d < a.ndim; d++) n *= (size_t)a.shape[d];
        CK_ASSERT(n == a.numel);
        ck_fuzz_touch(a.data, a.numel * sizeof(float));
        ck_npy_free(&a);
    }
    return 0;
}
