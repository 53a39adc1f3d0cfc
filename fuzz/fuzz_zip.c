/* libFuzzer harness: the zip index of .pth archives (ck_zip_open on the exact input buffer). Every indexed
 * entry must be found by name and its bytes must lie inside the input. */
#include "fuzz_common.h"
#include "io/zip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ck_fuzz_quiet();
    ck_zip z;
    ck_fuzz_status = ck_zip_open(&z, data, size, "fuzz-input", &ck_fuzz_err);
    if (ck_fuzz_status != CK_OK) return 0;
    for (int i = 0; i < z.n; i++) {
        const ck_zip_entry *e = &z.entries[i];
        CK_ASSERT(ck_zip_find(&z, e->name, e->name_len) == e);
        CK_ASSERT(e->data >= data && e->size <= size && (size_t)(e->data - data) <= size - e->size);
        if (e->size <= 4096) (void)ck_crc32(e->data, e->size);
        else ck_fuzz_touch(e->data, e->size);
    }
    ck_zip_close(&z);
    return 0;
}
