/* libFuzzer harness: the libdeflate PNG path alone (ck__png_read_direct, image_png_direct.c), which either
 * decodes a file completely or declines it (img untouched) for libpng to decode or report. */
#include "fuzz_image_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ck_fuzz_quiet();
    ck_image img   = {0};
    int      depth = 0;
    ck_fuzz_status = CK_STATUS_EFORMAT;
    snprintf(ck_fuzz_err.msg, sizeof ck_fuzz_err.msg, "declined (left to libpng)");
    if (ck__png_read_direct(ck_fuzz_file(data, size), &img, NULL, &depth)) {
        ck_fuzz_status = CK_OK;
        ck_fuzz_check_image(&img, depth);
        CK_ASSERT(depth == 8 || depth == 16);
        ck_image_release(&img);
    } else {
        CK_ASSERT(img.data == NULL);
    }
    return 0;
}
