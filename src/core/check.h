/* Always-on invariants and logging helpers shared by every translation unit.
 * CK_ASSERT is never compiled out (unlike assert()): a broken invariant inside the engine
 * is a bug, and continuing would read or write out of bounds. */
#ifndef CK_CHECK_H
#define CK_CHECK_H

#include "ckey.h"
#include <stdio.h>
#include <stdlib.h>

#if defined(__GNUC__)
#define CK_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CK_PRINTF(a, b)
#endif

void ck__log(ck_log_level level, const char *fmt, ...) CK_PRINTF(2, 3);
void ck__assert_fail(const char *file, int line, const char *func, const char *expr);

#define CK_ASSERT(cond)                                                          \
    do {                                                                         \
        if (!(cond)) ck__assert_fail(__FILE__, __LINE__, __func__, #cond);       \
    } while (0)

#define CK_LOG_ERR(...)  ck__log(CK_LOG_ERROR, __VA_ARGS__)
#define CK_LOG_WARN(...) ck__log(CK_LOG_WARN, __VA_ARGS__)
#define CK_LOG_INFO(...) ck__log(CK_LOG_INFO, __VA_ARGS__)
#define CK_LOG_DBG(...)  ck__log(CK_LOG_DEBUG, __VA_ARGS__)

/* Formats into err (if non-NULL), logs at ERROR and returns st. */
ck_status ck__fail(ck_err *err, ck_status st, const char *fmt, ...) CK_PRINTF(3, 4);

/* Overflow-checked size arithmetic: return 0 on overflow, 1 on success. */
static inline int ck_mul_size(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > (size_t)-1 / a) return 0;
    *out = a * b;
    return 1;
}
static inline int ck_add_size(size_t a, size_t b, size_t *out) {
    if (b > (size_t)-1 - a) return 0;
    *out = a + b;
    return 1;
}

#endif
