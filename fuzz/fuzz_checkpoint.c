/* libFuzzer harness: checkpoint dispatch (ck_checkpoint_open, io/checkpoint.h): .pth zip or .safetensors by
 * magic bytes, through the file path (read into memory) and through ck_checkpoint_open_memory on the exact
 * input buffer. On success every documented guarantee is checked and every tensor byte is read. */
#include "fuzz_common.h"
#include "core/tensor.h"
#include "io/checkpoint.h"

#include <stdlib.h>
#include <string.h>

static void check_index(const ck_checkpoint *ck) {
    for (int i = 0; i < ck->n_tensors; i++) {
        const ck_ckpt_tensor *t = &ck->tensors[i];
        size_t                n;
        CK_ASSERT(t->name[0] && memchr(t->name, '\0', sizeof t->name));
        CK_ASSERT(ck__ckpt_nbytes(t->dtype, t->ndim, t->shape, &n) && n == t->nbytes);
        const uint8_t *p = t->data;
        CK_ASSERT(p >= ck->map && t->nbytes <= ck->map_size && (size_t)(p - ck->map) <= ck->map_size - t->nbytes);
        CK_ASSERT((size_t)(p - ck->map) % ck_dtype_size(t->dtype) == 0);
        ck_fuzz_touch(t->data, t->nbytes);
        if (i < 64) CK_ASSERT(ck_checkpoint_find(ck, t->name) == t); /* names are unique (lookups are linear) */
    }
    for (int i = 0; i < ck->n_meta && i < 64; i++) CK_ASSERT(ck_checkpoint_meta(ck, ck->meta[i].key) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ck_fuzz_quiet();
    ck_checkpoint ck;
    ck_fuzz_status = ck_checkpoint_open(&ck, ck_fuzz_file(data, size), &ck_fuzz_err);
    if (ck_fuzz_status == CK_OK) {
        check_index(&ck);
        ck_checkpoint_close(&ck);
    }
    ck_err    err;
    ck_status st = ck_checkpoint_open_memory(&ck, size ? data : NULL, size, "fuzz-input", &err);
    if (st == CK_OK) {
        check_index(&ck);
        ck_checkpoint_close(&ck);
    }
    /* both paths parse the same bytes: they must agree (an empty file is EFORMAT on both) */
    CK_ASSERT((st == CK_OK) == (ck_fuzz_status == CK_OK) || ck_fuzz_status == CK_STATUS_EOOM);
    return 0;
}
