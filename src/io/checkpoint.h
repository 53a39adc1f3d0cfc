/* Checkpoint readers: PyTorch `torch.save` zip archives (.pth) and .safetensors.
 *
 * Both produce the same index: every tensor's name (with a leading "_orig_mod." removed), dtype,
 * shape and a pointer to its little-endian, contiguous element data inside a read-only in-memory copy
 * of the file, read once at open (not mapped: a mapped file truncated during a run kills the process
 * with SIGBUS). Tensors are not copied again. Every offset and length is checked against the file size
 * with overflow-safe arithmetic, so a truncated or hostile file yields CK_STATUS_EFORMAT with a message
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

/* Detects the format from the file's magic bytes (zip local header → .pth, else safetensors).
 * On failure *ck is left zeroed (closing it is harmless) and err names the file and the problem.
 *
 * Guarantees on success: names are unique after prefix stripping; ndim <= 8; nbytes equals
 * numel * element size; every [data, data + nbytes) lies inside map; data is aligned to the
 * element size relative to the start of the file (files that break this are rejected, so the
 * pointers can be read as float / uint16_t / int64_t arrays: map is page-aligned).
 * .pth: the top level is the tensor dict itself or a dict whose "state_dict" entry is (other entries
 * are ignored); tensors must be contiguous; order is the dict's. .safetensors: order is the header's;
 * "__metadata__" pairs with a key over 63 or a value over 255 bytes are skipped with a warning.
 * The whole file is read into memory first (refused when larger than the machine's memory): a file
 * that shrinks, grows or is rewritten while it is being read is refused with CK_STATUS_EIO and
 * "FILE changed or was truncated while being read"; after open returns, the file may change or vanish
 * without effect on the tensors. */
ck_status             ck_checkpoint_open(ck_checkpoint *ck, const char *path, ck_err *err);
/* Same, from a caller-owned memory buffer (not copied; must outlive ck). Used by fuzz tests. */
ck_status             ck_checkpoint_open_memory(ck_checkpoint *ck, const void *data, size_t size,
                                                const char *label, ck_err *err);
/* Exact-name lookup (a leading "_orig_mod." in `name` is ignored as well); NULL if absent. */
const ck_ckpt_tensor *ck_checkpoint_find(const ck_checkpoint *ck, const char *name);
/* Value of a safetensors "__metadata__" key; NULL if absent (always NULL for .pth). */
const char           *ck_checkpoint_meta(const ck_checkpoint *ck, const char *key);
void                  ck_checkpoint_close(ck_checkpoint *ck);

/* Writes a .safetensors file (header entries in the given order, optional metadata), through a
 * temporary file renamed into place. The data section starts 8-byte aligned and tensors are laid out
 * by decreasing element size (stable), so every tensor is aligned to its element size with no gaps
 * (the safetensors library rejects gaps). Returns CK_STATUS_EINVAL for an entry whose nbytes
 * does not match its shape and dtype, a duplicate or empty name, or an unsupported dtype. */
ck_status ck_safetensors_write(const char *path, const ck_ckpt_tensor *tensors, int n,
                               const ck_ckpt_meta *meta, int n_meta, ck_err *err);

/* ---- internal to src/io: shared by the .pth and .safetensors readers ---- */

ck_status ck__pth_load(ck_checkpoint *ck, const char *label, ck_err *err);
ck_status ck__safetensors_load(ck_checkpoint *ck, const char *label, ck_err *err);
/* Bytes of a tensor of this shape and dtype; 0 on overflow or a negative dimension, else 1. */
int       ck__ckpt_nbytes(ck_dtype dt, int ndim, const int64_t *shape, size_t *nbytes);
/* Appends one tensor (name stripped of "_orig_mod.") whose data is map[offset, offset + nbytes),
 * after checking the range, the element alignment and the name. *cap tracks ck->tensors' capacity. */
ck_status ck__ckpt_add(ck_checkpoint *ck, int *cap, const char *name, size_t name_len, ck_dtype dt, int ndim,
                       const int64_t *shape, size_t offset, size_t nbytes, const char *label, ck_err *err);
/* Tests only: when set, ck_checkpoint_open calls it after every block it reads (bytes read so far, file
 * size), so a test can change the file in the middle of the read. NULL otherwise. */
extern void (*ck__checkpoint_read_hook)(const char *path, size_t done, size_t total);

#endif
