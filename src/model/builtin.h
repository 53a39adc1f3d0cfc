/* The built-in small keyer: a GreenFormer of the "small" configuration (Hiera widths 32/64/128/256,
 * 3.7 M parameters with its position table) trained by tools/train/ on procedural green-screen data, stored
 * in the library itself (models/ckey-small.safetensors, fp16, embedded at build time), so that ckey keys
 * without any download.
 * Checkpoint path "builtin:small" (or "builtin"). docs/model_card_small.md says what it can and cannot do.
 *
 *     if (ck_builtin_is_spec(path)) st = ck_builtin_checkpoint(&ck, &err);
 */
#ifndef CK_BUILTIN_H
#define CK_BUILTIN_H

#include "io/checkpoint.h"

/* CK_BUILTIN_SPEC, ck_builtin_is_spec, ck_builtin_train_size: ckey.h */

/* Opens the embedded safetensors (read in place: nothing is copied or freed). */
ck_status ck_builtin_checkpoint(ck_checkpoint *ck, ck_err *err);

#endif
