/* The built-in small keyer: a GreenFormer of the "small" configuration (Hiera widths 32/64/128/256,
 * 2.1 M parameters) trained by tools/train/ on procedural green-screen data, stored in the library itself
 * (models/ckey-small.safetensors, fp16, embedded at build time), so that ckey keys without any download.
 * Checkpoint path "builtin:small" (or "builtin"). docs/model_card_small.md says what it can and cannot do.
 *
 *     if (ck_builtin_is_spec(path)) st = ck_builtin_checkpoint(&ck, &err);
 */
#ifndef CK_BUILTIN_H
#define CK_BUILTIN_H

#include "io/checkpoint.h"

#define CK_BUILTIN_SPEC "builtin:small"
/* What the CLI says, once, when it falls back to the built-in model. */
#define CK_BUILTIN_NOTE "built-in small keyer (no checkpoint configured); for CorridorKey quality use CorridorKey.pth"

/* 1 when `path` is "builtin" or "builtin:small". */
int       ck_builtin_is_spec(const char *path);
/* Opens the embedded safetensors (read in place: nothing is copied or freed). */
ck_status ck_builtin_checkpoint(ck_checkpoint *ck, ck_err *err);
/* The model size the built-in model was trained at (its metadata "train_size"). */
int       ck_builtin_train_size(void);

#endif
