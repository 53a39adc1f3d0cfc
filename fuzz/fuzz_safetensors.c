/* libFuzzer harness: the .safetensors reader alone (ck__safetensors_load on the exact input buffer, whatever
 * its first bytes: the dispatch would send "PK" inputs to the zip reader). */
#include "fuzz_common.h"
#include "io/checkpoint.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ck_fuzz_quiet();
    ck_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    ck.map         = data;
    ck.map_size    = size;
    ck.format      = CK_CKPT_SAFETENSORS;
    ck_fuzz_status = ck__safetensors_load(&ck, "fuzz-input", &ck_fuzz_err);
    for (int i = 0; ck_fuzz_status == CK_OK && i < ck.n_tensors; i++) {
        const ck_ckpt_tensor *t = &ck.tensors[i];
        CK_ASSERT((const uint8_t *)t->data >= data && t->nbytes <= size &&
                  (size_t)((const uint8_t *)t->data - data) <= size - t->nbytes);
        ck_fuzz_touch(t->data, t->nbytes);
    }
    ck.map = NULL; /* not ours: close frees the index only */
    ck_checkpoint_close(&ck);
    return 0;
}
