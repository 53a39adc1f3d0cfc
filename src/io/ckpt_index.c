/* The checkpoint index (ckpt_index.h): sizes and checked appends shared by the .pth and .safetensors
 * readers. Every entry's range, alignment and name are checked here, so no reader can index bytes
 * outside the file or a name that could alias another after prefix stripping. */
#include "io/ckpt_index.h"

#include <stdlib.h>
#include <string.h>

#define ORIG_MOD    CK_CKPT_ORIG_MOD
#define MAX_TENSORS (1 << 18) /* ~75 MB of index; real checkpoints hold hundreds to a few thousand */

int ck__ckpt_nbytes(ck_dtype dt, int ndim, const int64_t *shape, size_t *nbytes) {
    size_t n = ck_dtype_size(dt);
    if (!n || ndim < 0 || ndim > 8) return 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0 || (uint64_t)shape[d] > (uint64_t)(SIZE_MAX)) return 0;
        if (!ck_mul_size(n, (size_t)shape[d], &n)) return 0;
    }
    /* keep byte counts representable as int64 too, so no caller overflows converting back */
    if (n > (size_t)INT64_MAX) return 0;
    *nbytes = n;
    return 1;
}

ck_status ck__ckpt_add(ck_checkpoint *ck, int *cap, const char *name, size_t name_len, ck_dtype dt, int ndim,
                       const int64_t *shape, size_t offset, size_t nbytes, const char *label, ck_err *err) {
    if (name_len >= sizeof ORIG_MOD - 1 && memcmp(name, ORIG_MOD, sizeof ORIG_MOD - 1) == 0) {
        name += sizeof ORIG_MOD - 1;
        name_len -= sizeof ORIG_MOD - 1;
    }
    /* after stripping: the name need not be NUL-terminated (.pth names point into the pickle) */
    const int shown = name_len > 120 ? 120 : (int)name_len;
    /* a second prefix would alias: ck_checkpoint_find strips one from the name it is asked for */
    if (name_len >= sizeof ORIG_MOD - 1 && memcmp(name, ORIG_MOD, sizeof ORIG_MOD - 1) == 0)
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: tensor name '" ORIG_MOD "%.*s' carries the '" ORIG_MOD
                        "' prefix twice", label, shown, name);
    if (name_len == 0) return ck__fail(err, CK_STATUS_EFORMAT, "%s: tensor with an empty name", label);
    if (name_len >= CK_CKPT_NAME_MAX)
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: tensor name '%.*s...' longer than %d bytes", label, shown, name,
                        CK_CKPT_NAME_MAX - 1);
    if (memchr(name, '\0', name_len))
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: tensor name '%.*s' contains a NUL byte", label, shown, name);
    if (ndim < 0 || ndim > 8)
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: tensor '%.*s' has %d dims (at most 8)", label, shown, name, ndim);
    size_t esize = ck_dtype_size(dt), expect;
    if (!ck__ckpt_nbytes(dt, ndim, shape, &expect) || expect != nbytes)
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: tensor '%.*s' holds %zu bytes, which does not match its shape",
                        label, shown, name, nbytes);
    if (offset > ck->map_size || nbytes > ck->map_size - offset)
        return ck__fail(err, CK_STATUS_EFORMAT,
                        "%s: truncated: tensor '%.*s' data [%zu, %zu) extends past end of file (%zu bytes)", label,
                        shown, name, offset, offset + nbytes, ck->map_size);
    if (offset % esize)
        return ck__fail(err, CK_STATUS_EFORMAT,
                        "%s: tensor '%.*s' data at file offset %zu is not aligned to its %zu-byte elements", label,
                        shown, name, offset, esize);
    if (ck->n_tensors == *cap) {
        if (*cap >= MAX_TENSORS) return ck__fail(err, CK_STATUS_EFORMAT, "%s: more than %d tensors", label, MAX_TENSORS);
        int             ncap = *cap ? *cap * 2 : 64;
        ck_ckpt_tensor *t    = realloc(ck->tensors, (size_t)ncap * sizeof *t);
        if (!t) return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory indexing tensors", label);
        ck->tensors = t;
        *cap        = ncap;
    }
    ck_ckpt_tensor *t = &ck->tensors[ck->n_tensors++];
    memset(t, 0, sizeof *t);
    memcpy(t->name, name, name_len);
    t->dtype = dt;
    t->ndim  = ndim;
    for (int d = 0; d < ndim; d++) t->shape[d] = shape[d];
    t->data   = ck->map + offset;
    t->nbytes = nbytes;
    return CK_OK;
}
