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
#include "io/ckpt_index.h" /* the tensor index, the format readers, the safetensors writer */


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

/* Tests only: when set, ck_checkpoint_open calls it after every block it reads (bytes read so far, file
 * size), so a test can change the file in the middle of the read. NULL otherwise. */
extern void (*ck__checkpoint_read_hook)(const char *path, size_t done, size_t total);

#endif
