/* The body of the image harnesses: the input as a file through ck_image_read (sniffing, the pixel limit,
 * the format's back end, as plates are read), then a check of what came back and every sample read. */
#ifndef CK_FUZZ_IMAGE_COMMON_H
#define CK_FUZZ_IMAGE_COMMON_H

#include "fuzz_common.h"
#include "io/image.h"

#include <stdio.h>

static inline void ck_fuzz_check_image(const ck_image *img, int depth) {
    CK_ASSERT(img->data && img->width >= 1 && img->height >= 1 && img->channels >= 1 && img->channels <= 4);
    CK_ASSERT((long long)img->width * img->height <= ck_image_max_pixels());
    CK_ASSERT(depth == 8 || depth == 10 || depth == 12 || depth == 16 || depth == 32);
    ck_fuzz_touch(img->data, (size_t)img->width * img->height * img->channels * sizeof(float));
}

static inline int ck_fuzz_image_read(const uint8_t *data, size_t size) {
    ck_fuzz_quiet();
    ck_image img   = {0};
    int      depth = 0;
    ck_fuzz_status = ck_image_read(ck_fuzz_file(data, size), &img, &depth, &ck_fuzz_err);
    if (ck_fuzz_status == CK_OK) ck_fuzz_check_image(&img, depth);
    else CK_ASSERT(img.data == NULL && ck_fuzz_err.msg[0]);
    ck_image_release(&img);
    return 0;
}

#endif
