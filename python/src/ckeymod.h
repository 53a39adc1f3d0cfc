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

extern PyTypeObject ckm_context_type;

/* Raises the ckey.Error subclass of `st` with `msg` (its .status set); returns NULL. */
PyObject *ckm_raise(ck_status st, const char *msg);
/* The same with a printf-style message. */
PyObject *ckm_raisef(ck_status st, const char *fmt, ...);

#endif
