/* Network inputs for the batch tests (test_batch.c, test_cuda_batch.c): image b of a batch, (S, S, 4)
 * NHWC, normalized-RGB-like smooth channels and a hint in (0.05, 0.95), different for every b. */
#ifndef CK_TEST_BATCH_INPUTS_H
#define CK_TEST_BATCH_INPUTS_H

#include <math.h>
#include <stddef.h>

static void make_input(float *x, int S, int b) {
    for (int y = 0; y < S; y++)
        for (int i = 0; i < S; i++)
            for (int c = 0; c < 4; c++)
                x[((size_t)y * S + i) * 4 + c] = c == 3 ? (float)(0.5 + 0.45 * sin(0.11 * (i + 7 * b) + 0.05 * y))
                                                        : (float)(1.2 * sin(0.07 * (i + 1) * (c + 1 + b)) * cos(0.09 * y));
}

#endif
