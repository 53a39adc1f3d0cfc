/* Automatic hint: screen colour detection and a matte that is foreground inside the subject and
 * background on the screen, on synthetic green and blue plates and on the fixture frame. */
#include "harness.h"
#include "ckey_io.h"
#include "frame/frame_ops.h"

#include <stdlib.h>

static void plate(float *rgb, int w, int h, int blue) {
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            float *p  = rgb + ((size_t)y * w + x) * 3;
            const float dx = x - w / 2.0f, dy = y - h / 2.0f;
            const int   in = dx * dx + dy * dy < 30.0f * 30.0f; /* a skin-coloured disk */
            const float shade = 0.8f + 0.2f * (float)x / (float)w; /* uneven screen lighting */
            if (in) p[0] = 0.8f, p[1] = 0.55f, p[2] = 0.45f;
            else if (blue) p[0] = 0.1f * shade, p[1] = 0.2f * shade, p[2] = 0.75f * shade;
            else p[0] = 0.12f * shade, p[1] = 0.7f * shade, p[2] = 0.15f * shade;
        }
}

int main(void) {
    const int w = 128, h = 96;
    float    *rgb = malloc(sizeof(float) * w * h * 3), *hint = malloc(sizeof(float) * w * h);
    for (int blue = 0; blue <= 1; blue++) {
        plate(rgb, w, h, blue);
        int detected = -1;
        CHECK(ck_auto_hint(hint, rgb, w, h, &detected) == CK_OK);
        CHECK_MSG(detected == blue, "screen detected as %s", detected ? "blue" : "green");
        const float center = hint[(size_t)(h / 2) * w + w / 2], corner = hint[0], edge = hint[(size_t)(h / 2) * w + 2];
        printf("%s     %s screen: hint centre %.3f, corner %.3f, left edge %.3f\n",
               center > 0.95f && corner < 0.05f && edge < 0.05f ? "OK" : "NOT OK", blue ? "blue" : "green", center,
               corner, edge);
        CHECK(center > 0.95f && corner < 0.05f && edge < 0.05f);
    }
    /* the fixture frame (soft subject, strands, noise over a lit green screen): agrees with its drawn hint */
    char   pr[1024], ph[1024];
    ck_npy r, hh;
    ck_err err = {{0}};
    test_path(pr, sizeof pr, "CK_FIXTURES", "tiny/s128/frame_rgb.npy");
    test_path(ph, sizeof ph, "CK_FIXTURES", "tiny/s128/frame_hint.npy");
    if (ck_npy_read(pr, &r, &err) == CK_OK && ck_npy_read(ph, &hh, &err) == CK_OK) {
        const int fw = (int)r.shape[1], fh = (int)r.shape[0];
        float    *a  = malloc(sizeof(float) * fw * fh);
        int       blue = -1;
        CHECK(ck_auto_hint(a, r.data, fw, fh, &blue) == CK_OK && blue == 0);
        /* the drawn hint carries deliberate specks and is wider than the eroded automatic one: compare
         * as detection, precision (automatic foreground inside the drawn one) and recall */
        double both = 0, autofg = 0, drawn = 0;
        for (int i = 0; i < fw * fh; i++) {
            const int ia = a[i] > 0.5f, ih = hh.data[i] > 0.5f;
            both += ia && ih, autofg += ia, drawn += ih;
        }
        const double prec = autofg ? both / autofg : 0, rec = drawn ? both / drawn : 0;
        printf("%s     fixture frame: precision %.3f, recall %.3f against the drawn hint\n",
               prec > 0.95 && rec > 0.75 ? "OK" : "NOT OK", prec, rec);
        CHECK(prec > 0.95 && rec > 0.75);
        free(a);
        ck_npy_free(&r), ck_npy_free(&hh);
    } else {
        CHECK_MSG(0, "fixture frame missing");
    }
    free(rgb), free(hint);
    return test_summary();
}
