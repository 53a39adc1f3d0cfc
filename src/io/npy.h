/* NumPy .npy reader/writer for float32 arrays (C order): reference fixtures and debug dumps. */
#ifndef CK_NPY_H
#define CK_NPY_H

#include "core/check.h"
#include <stdint.h>

typedef struct ck_npy {
    float  *data;    /* malloc'd, converted to float32 (from <f4, <f8, <f2) */
    int     ndim;
    int64_t shape[8];
    size_t  numel;
} ck_npy;

ck_status ck_npy_read(const char *path, ck_npy *out, ck_err *err);
ck_status ck_npy_write(const char *path, const float *data, int ndim, const int64_t *shape, ck_err *err);
void      ck_npy_free(ck_npy *a);

#endif
