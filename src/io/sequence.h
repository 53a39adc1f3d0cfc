/* Image sequences: listing a folder of frames in natural order, and choosing a frame range or a
 * farm shard of it. */
#ifndef CK_SEQUENCE_H
#define CK_SEQUENCE_H

#include "core/check.h"

typedef struct ck_seq {
    char **paths; /* full paths, natural order */
    char **stems; /* file names without extension */
    int    n;
} ck_seq;

/* Natural order: digit runs compare by value ("f2" < "f10"), other characters case-insensitively. */
int ck_natural_cmp(const char *a, const char *b);

/* Every .png/.jpg/.jpeg/.exr/.tif/.tiff/.dpx file of `dir` (case-insensitive extension, hidden files skipped). */
ck_status ck_seq_list(ck_seq *seq, const char *dir, ck_err *err);
void      ck_seq_free(ck_seq *seq);

/* Parses "A-B" (inclusive positions in the sorted list, 0-based) or "A" into [*first, *last]. */
int ck_parse_frames(const char *s, int *first, int *last);
/* Parses "I/N" (0 ≤ I < N). */
int ck_parse_shard(const char *s, int *index, int *count);
/* Contiguous shard I of N over [first, last]: sizes differ by at most one, earlier shards larger.
 * Returns the count (may be 0) and the first index. */
int ck_shard_range(int first, int last, int index, int count, int *shard_first);

#endif
