/* Shared declarations of the _ckey extension (ckey_module.c: the module, its exceptions and the log
 * bridge; context.c: the Context type). The extension sees ckey only through its public header. */
#ifndef CKEYMOD_H
#define CKEYMOD_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* numpy's C API table is imported once, in ckey_module.c; context.c uses it through this symbol */
#define PY_ARRAY_UNIQUE_SYMBOL ckey_ARRAY_API
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#ifndef CKEYMOD_IMPORT_ARRAY
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include "ckey.h"
#include "ckey_shot.h"

/* ckey._ckey.Context (context.c): one ck_ctx. */
typedef struct context_object {
    PyObject_HEAD
    ck_ctx            *ctx;  /* NULL once closed (or before a successful init) */
    PyThread_type_lock lock; /* a ck_ctx is used by one thread at a time; held while keying and closing */
    ck_params          params;      /* ck_ctx_params after init (the resolved values; fixed from then on) */
    char               device[64];  /* ck_ctx_device_name */
    int                max_batch;
    size_t             activation_bytes, weight_bytes;
} context_object;

extern PyTypeObject ckm_context_type;

/* Sets the ck_params fields named by dict's keys (None: none); per_call_only: only those ck_result_finish
 * reads. -1 with an exception set. */
int ckm_params_from_dict(ck_params *p, PyObject *dict, int per_call_only);
/* Context.key_shot (shot.c): a shot keyed into files with this context. */
PyObject *ckm_context_key_shot(context_object *self, PyObject *args, PyObject *kw);
/* A message into the "ckey" logger at a ck_log_level (ckey_module.c); takes the GIL itself. */
void ckm_log(ck_log_level level, const char *msg);

/* Raises the ckey.Error subclass of `st` with `msg` (its .status set); returns NULL. */
PyObject *ckm_raise(ck_status st, const char *msg);
/* The same with a printf-style message. */
PyObject *ckm_raisef(ck_status st, const char *fmt, ...);

#endif
