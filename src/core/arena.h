/* Bump arenas with mark/reset, 256-byte aligned (safe for vector loads and TMA).
 *
 * A measuring arena (base == NULL) hands out fake addresses and only records the high-water mark:
 * the model runs its shape logic once in that mode (ops skipped) to size the real arena exactly.
 *
 *     ck_arena a; ck_arena_init(&a, NULL, 0);     // plan
 *     ... forward(planning) ...;  need = a.high;
 *     ck_arena_init(&a, be->alloc(be, need), need); // run
 */
#ifndef CK_ARENA_H
#define CK_ARENA_H

#include <stddef.h>
#include <stdint.h>

#define CK_ARENA_ALIGN 256

typedef struct ck_arena {
    uint8_t *base; /* NULL while measuring */
    size_t   cap;
    size_t   off;
    size_t   high; /* high-water mark in bytes */
} ck_arena;

void   ck_arena_init(ck_arena *a, void *base, size_t cap);
/* Never returns NULL: overflowing a real arena is a planning bug (asserted). */
void  *ck_arena_alloc(ck_arena *a, size_t bytes);
static inline size_t ck_arena_mark(const ck_arena *a) { return a->off; }
static inline void   ck_arena_reset(ck_arena *a, size_t mark) { a->off = mark; }

#endif
