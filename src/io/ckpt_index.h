/* The checkpoint index the format readers fill (ckpt_index.c): tensor entries, metadata, the checkpoint
 * struct, the checks every entry passes, and the readers' entry points (pth.c, safetensors.c). The readers
 * depend on this file and never on checkpoint.c, the front end that reads the file and dispatches to them;
 * public callers include io/checkpoint.h, which includes this. */
#ifndef CK_CKPT_INDEX_H
#define CK_CKPT_INDEX_H

#include "core/check.h"
#include "core/tensor.h"

#include <stddef.h>
#include <stdint.h>

/* torch.compile's wrapper prefix, stripped from every name once (model_spec.md §6.1) */
#define CK_CKPT_ORIG_MOD "_orig_mod."

#define CK_CKPT_NAME_MAX 192

typedef struct ck_ckpt_tensor {
    char        name[CK_CKPT_NAME_MAX]; /* "_orig_mod." prefix stripped */
    ck_dtype    dtype;
    int         ndim;                   /* 0 for scalars (num_batches_tracked) */
    int64_t     shape[8];
    const void *data;                   /* into map; contiguous, little-endian */
    size_t      nbytes;
    int         ohwi;                   /* 4-D conv weight stored (O, KH, KW, I) (MLX port layout);
                                           shape[] still reads (O, I, KH, KW). Set by the model loader. */
} ck_ckpt_tensor;

typedef struct ck_ckpt_meta {
    char key[64];
    char value[256];
} ck_ckpt_meta;

typedef enum ck_ckpt_format { CK_CKPT_PTH = 1, CK_CKPT_SAFETENSORS = 2 } ck_ckpt_format;

typedef struct ck_checkpoint {
    ck_ckpt_format  format;
    ck_ckpt_tensor *tensors;
    int             n_tensors;
    ck_ckpt_meta   *meta;     /* safetensors "__metadata__" string pairs; empty for .pth */
    int             n_meta;
    const uint8_t  *map;      /* (map_size) the whole file: a read-only anonymous mapping filled by
                                 ck_checkpoint_open, or the caller's buffer (ck_checkpoint_open_memory) */
    size_t          map_size;
    char            path[512];
    int             owns_map; /* 1: mmap'd here (or by a generator of checkpoints), unmapped by close */
} ck_checkpoint;

/* Writes a .safetensors file (header entries in the given order, optional metadata), through a
 * temporary file renamed into place. The data section starts 8-byte aligned and tensors are laid out
 * by decreasing element size (stable), so every tensor is aligned to its element size with no gaps
 * (the safetensors library rejects gaps). Returns CK_STATUS_EINVAL for an entry whose nbytes
 * does not match its shape and dtype, a duplicate or empty name, or an unsupported dtype. */
ck_status ck_safetensors_write(const char *path, const ck_ckpt_tensor *tensors, int n,
                               const ck_ckpt_meta *meta, int n_meta, ck_err *err);

/* ---- internal to src/io: shared by the .pth and .safetensors readers ---- */

/* ---- the format readers, called by checkpoint.c with ck->map / map_size set ---- */

ck_status ck__pth_load(ck_checkpoint *ck, const char *label, ck_err *err);
ck_status ck__safetensors_load(ck_checkpoint *ck, const char *label, ck_err *err);
/* Bytes of a tensor of this shape and dtype; 0 on overflow or a negative dimension, else 1. */
int       ck__ckpt_nbytes(ck_dtype dt, int ndim, const int64_t *shape, size_t *nbytes);
/* Appends one tensor (name stripped of "_orig_mod.") whose data is map[offset, offset + nbytes),
 * after checking the range, the element alignment and the name. *cap tracks ck->tensors' capacity. */
ck_status ck__ckpt_add(ck_checkpoint *ck, int *cap, const char *name, size_t name_len, ck_dtype dt, int ndim,
                       const int64_t *shape, size_t offset, size_t nbytes, const char *label, ck_err *err);

#endif
