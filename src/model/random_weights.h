/* Random GreenFormer weights without a file: the checkpoint path "random:base_plus" (Hiera-Base-Plus,
 * the CorridorKey architecture) or "random:tiny" (the small test architecture of
 * tools/reference/random_checkpoint.py). For benchmarks and smoke runs where only the architecture
 * matters; the output is not a key.
 *
 *     ck_checkpoint ck;
 *     if (ck_random_weights_is_spec(path)) st = ck_random_checkpoint(&ck, path, &err);
 *     ...
 *     ck_checkpoint_close(&ck);   // frees the generated tensors
 *
 * Every tensor of the state dict (names, shapes, order and the pos_embed grid of the training size, as
 * random_checkpoint.py writes them) is generated in float32 with that script's distributions and scales
 * (greenformer_ref.init_weights), from ckey's own generator with a fixed seed: identical on every machine
 * and for any thread count, though not the same numbers as PyTorch's generator. */
#ifndef CK_RANDOM_WEIGHTS_H
#define CK_RANDOM_WEIGHTS_H

#include "io/checkpoint.h"

#define CK_RANDOM_PREFIX "random:"

/* ck_random_weights_is_spec: ckey.h */

/* Fills ck from "random:<config>" (config: base_plus or tiny). The tensors live in one anonymous
 * read-only mapping owned by ck (owns_map), released by ck_checkpoint_close. Metadata: head_dim.
 * CK_STATUS_EINVAL for an unknown config, CK_STATUS_EOOM when the memory is not available. */
ck_status ck_random_checkpoint(ck_checkpoint *ck, const char *spec, ck_err *err);

#endif
