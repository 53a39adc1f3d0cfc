/* What every backend shares: the completeness check of the op table and the failure record. */
#include "ops/backend.h"

#include <stdarg.h>
#include <stdio.h>

int ck_backend_complete(const ck_backend *be, const char **missing) {
#define CK_CHECK_SLOT(name)                                                                           \
    if (!be->name) {                                                                                \
        if (missing) *missing = #name;                                                              \
        return 0;                                                                                   \
    }
    CK_OPS(CK_CHECK_SLOT)
#undef CK_CHECK_SLOT
    return 1;
}

void ck_backend_fail(ck_backend *be, const char *fmt, ...) {
    char    msg[sizeof be->failure];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (be->failed) { /* the first failure is the cause; later ones follow from it */
        CK_LOG_DBG("%s backend: also: %s", be->name, msg);
        return;
    }
    be->failed = 1;
    snprintf(be->failure, sizeof be->failure, "%s", msg);
    CK_LOG_DBG("%s backend failed: %s", be->name, msg);
}
