/* Process-wide log sink, status strings and the assert handler. */
#include "core/check.h"

#include <stdarg.h>
#include <string.h>

static ck_log_fn    g_log_fn;
static void        *g_log_user;
static ck_log_level g_log_min = CK_LOG_INFO;

void ck_set_log(ck_log_fn fn, void *user, ck_log_level min_level) {
    g_log_fn   = fn;
    g_log_user = user;
    g_log_min  = min_level;
}

static void log_v(ck_log_level level, const char *fmt, va_list ap) {
    if (level > g_log_min) return;
    char buf[1024];
    vsnprintf(buf, sizeof buf, fmt, ap);
    if (g_log_fn) {
        g_log_fn(level, buf, g_log_user);
        return;
    }
    static const char *tag[] = {"error", "warning", "info", "debug"};
    fprintf(stderr, "ckey: %s: %s\n", tag[level], buf);
}

void ck__log(ck_log_level level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    log_v(level, fmt, ap);
    va_end(ap);
}

void ck_log(ck_log_level level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    log_v(level, fmt, ap);
    va_end(ap);
}

ck_status ck__fail(ck_err *err, ck_status st, const char *fmt, ...) {
    char    buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (err) {
        /* keep the first failure: it is the cause, later ones are consequences */
        if (err->msg[0] == '\0') memcpy(err->msg, buf, sizeof buf);
    }
    ck__log(CK_LOG_ERROR, "%s", buf);
    return st;
}

void ck__assert_fail(const char *file, int line, const char *func, const char *expr) {
    fprintf(stderr, "ckey: internal error: %s:%d: %s: assertion `%s' failed\n", file, line, func, expr);
    fflush(stderr);
    abort();
}

const char *ck_status_str(ck_status st) {
    switch (st) {
    case CK_OK: return "ok";
    case CK_STATUS_EINVAL: return "invalid argument";
    case CK_STATUS_EIO: return "i/o error";
    case CK_STATUS_EFORMAT: return "corrupt or unsupported file format";
    case CK_STATUS_ESHAPE: return "wrong shape or size";
    case CK_STATUS_EDTYPE: return "wrong or unsupported dtype";
    case CK_STATUS_EMISSING: return "missing tensor";
    case CK_STATUS_EOOM: return "out of memory";
    case CK_STATUS_ENODEV: return "device not available";
    case CK_STATUS_EDEVICE: return "device runtime error";
    case CK_STATUS_EBADSTATE: return "context in a failed state";
    case CK_STATUS_EUNSUPPORTED: return "unsupported by this build";
    }
    return "unknown status";
}
