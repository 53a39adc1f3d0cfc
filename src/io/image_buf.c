/* Shared by the image codecs (image_buf.h): the pixel limit, decode buffers, PNG sample conversion. */
#include "io/image_buf.h"

#include <stdlib.h>
#include <string.h>

long long ck_image_max_pixels(void) {
    const char *env = getenv("CKEY_MAX_PIXELS");
    char       *end = NULL;
    long long   v   = env && *env ? strtoll(env, &end, 10) : 0;
    return v > 0 && end && *end == '\0' ? v : CK_IMAGE_MAX_PIXELS_DEFAULT;
}

ck_status ck__image_alloc(ck_image *img, int width, int height, int channels, const ck__image_dst *dst,
                          const char *path, ck_err *err) {
    img->data = NULL;
    if (width < 1 || height < 1 || width > CK_IMAGE_MAX_DIM || height > CK_IMAGE_MAX_DIM)
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: image size %dx%d outside 1..%d", path, width, height,
                        CK_IMAGE_MAX_DIM);
    const long long limit = ck_image_max_pixels();
    if ((long long)width * height > limit)
        return ck__fail(err, CK_STATUS_EFORMAT,
                        "%s: a %dx%d image (%.1f Mpx) is larger than the limit of %.1f Mpx (CKEY_MAX_PIXELS raises it)",
                        path, width, height, (double)width * height / 1e6, (double)limit / 1e6);
    if (channels < 1 || channels > 4)
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: %d channels (expected 1..4)", path, channels);
    size_t n, bytes;
    if (!ck_mul_size((size_t)width, (size_t)height, &n) || !ck_mul_size(n, (size_t)channels, &n) ||
        !ck_mul_size(n, sizeof(float), &bytes))
        return ck__fail(err, CK_STATUS_EOOM, "%s: image size %dx%dx%d overflows", path, width, height, channels);
    img->data = dst && dst->buf && n <= dst->floats ? dst->buf : malloc(bytes);
    if (!img->data)
        return ck__fail(err, CK_STATUS_EOOM, "%s: cannot allocate %zu bytes for %dx%dx%d pixels", path, bytes, width,
                        height, channels);
    img->width    = width;
    img->height   = height;
    img->channels = channels;
    return CK_OK;
}

void ck__image_drop(ck_image *img, const ck__image_dst *dst) {
    if (!dst || img->data != dst->buf) free(img->data);
    memset(img, 0, sizeof *img);
}

void ck__png_samples_to_float(float *dst, const unsigned char *src, size_t n, int depth) {
    if (depth == 8) {
        /* float32 division, as numpy's uint8.astype(float32) / 255.0 */
        for (size_t i = 0; i < n; i++) dst[i] = (float)src[i] / 255.0f;
    } else {
        /* PNG stores 16-bit samples big-endian */
        for (size_t i = 0; i < n; i++) dst[i] = (float)(((unsigned)src[2 * i] << 8) | src[2 * i + 1]) / 65535.0f;
    }
}
