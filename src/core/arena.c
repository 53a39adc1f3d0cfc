/* Bump arena (see arena.h). */
#include "core/arena.h"
#include "core/check.h"

void ck_arena_init(ck_arena *a, void *base, size_t cap) {
    a->base = (uint8_t *)base;
    a->cap  = cap;
    a->off  = 0;
    a->high = 0;
}

void *ck_arena_alloc(ck_arena *a, size_t bytes) {
    size_t n = 0, end = 0;
    CK_ASSERT(ck_add_size(bytes, CK_ARENA_ALIGN - 1, &n));
    n &= ~(size_t)(CK_ARENA_ALIGN - 1);
    if (n == 0) n = CK_ARENA_ALIGN;
    CK_ASSERT(ck_add_size(a->off, n, &end));
    if (a->base) CK_ASSERT(end <= a->cap);
    /* fake, never dereferenced address while measuring (ops are skipped in that mode) */
    void *p = a->base ? (void *)(a->base + a->off) : (void *)(uintptr_t)(CK_ARENA_ALIGN + a->off);
    a->off  = end;
    if (end > a->high) a->high = end;
    return p;
}
