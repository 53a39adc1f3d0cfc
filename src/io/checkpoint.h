/* Checkpoint readers: PyTorch `torch.save` zip archives (.pth) and .safetensors.
 *
 * Both produce the same index: every tensor's name (with a leading "_orig_mod." removed), dtype,
 * shape and a pointer to its little-endian, contiguous element data inside a read-only mapping of
 * the file. Nothing is copied. Every offset and length is checked against the file size with
 * overflow-safe arithmetic, so a truncated or hostile file yields CK_STATUS_EFORMAT with a message
 * naming the file and the problem, never an out-of-bounds read.
 *
 *     ck_checkpoint ck;
 *     ck_err err = {0};
 *     if (ck_checkpoint_open(&ck, path, &err) != CK_OK) { puts(err.msg); ... }
 *     const ck_ckpt_tensor *t = ck_checkpoint_find(&ck, "encoder.model.pos_embed");
 *     ck_checkpoint_close(&ck);
 */
#ifndef CK_CHECKPOINT_H
#define CK_CHECKPOINT_H

#include "core/check.h"
#include "core/tensor.h"

#define CK_CKPT_NAME_MAX 192

typedef struct ck_ckpt_tensor {
    char        name[CK_CKPT_NAME_MAX]; /* "_orig_mod." prefix stripped */
    ck_dtype    dtype;
    int         ndim;                   /* 0 for scalars (num_batches_tracked) */
    int64_t     shape[8];
    const void *data;                   /* into the mapping; contiguous, little-endian */
    size_t      nbytes;
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
    const uint8_t  *map;      /* read-only mapping of the whole file */
    size_t          map_size;
    char            path[512];
} ck_checkpoint;

/* Detects the format from the file's magic bytes (zip local header → .pth, else safetensors). */
ck_status             ck_checkpoint_open(ck_checkpoint *ck, const char *path, ck_err *err);
/* Same, from a caller-owned memory buffer (not copied; must outlive ck). Used by fuzz tests. */
ck_status             ck_checkpoint_open_memory(ck_checkpoint *ck, const void *data, size_t size,
                                                const char *label, ck_err *err);
const ck_ckpt_tensor *ck_checkpoint_find(const ck_checkpoint *ck, const char *name);
const char           *ck_checkpoint_meta(const ck_checkpoint *ck, const char *key);
void                  ck_checkpoint_close(ck_checkpoint *ck);

/* Writes a .safetensors file (tensors in the given order, 8-byte aligned data, optional metadata),
 * through a temporary file renamed into place. */
ck_status ck_safetensors_write(const char *path, const ck_ckpt_tensor *tensors, int n,
                               const ck_ckpt_meta *meta, int n_meta, ck_err *err);

#endif
