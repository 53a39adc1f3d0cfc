/* libFuzzer harness: PNG through libpng, through ck_image_read. This harness is built without the
 * libdeflate fast path (CK_HAVE_DEFLATE unset), so every input reaches libpng; fuzz_png_direct.c covers
 * the fast path. */
#include "fuzz_image_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return ck_fuzz_image_read(data, size); }
