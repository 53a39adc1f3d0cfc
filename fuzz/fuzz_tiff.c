/* libFuzzer harness: TIFF (libtiff), through ck_image_read. */
#include "fuzz_image_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return ck_fuzz_image_read(data, size); }
