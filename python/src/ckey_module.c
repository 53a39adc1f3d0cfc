/* ckey._ckey: the module. Its exceptions (one per ck_status), the bridge from ckey's log to Python's
 * `logging` (logger "ckey"), and the small functions ckey/__init__.py builds the Keyer from. The
 * Context type is in context.c. */
#define CKEYMOD_IMPORT_ARRAY
#include "ckeymod.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#ifndef CKEY_BUILTIN_TRAIN_SIZE
#error "CKEY_BUILTIN_TRAIN_SIZE (the built-in keyer's training size, from its safetensors metadata) must be defined"
#endif

/* ---- exceptions: ckey.Error, and a subclass per failure status ---- */

typedef struct error_kind {
    ck_status   status;
    const char *name;  /* ckey.<name> */
    const char *extra; /* a builtin exception it also derives from, or NULL */
    const char *doc;
} error_kind;

static const error_kind ERROR_KINDS[] = {
    {CK_STATUS_EINVAL, "InvalidArgumentError", "ValueError", "An invalid argument or option (CK_STATUS_EINVAL)."},
    {CK_STATUS_EIO, "FileError", "OSError", "A file missing, unreadable or unwritable (CK_STATUS_EIO)."},
    {CK_STATUS_EFORMAT, "FormatError", NULL, "A corrupt or truncated file, or an unsupported encoding (CK_STATUS_EFORMAT)."},
    {CK_STATUS_ESHAPE, "ShapeError", "ValueError", "An array, tensor or image of the wrong shape or size (CK_STATUS_ESHAPE)."},
    {CK_STATUS_EDTYPE, "DtypeError", "TypeError", "An array or tensor of an unsupported dtype (CK_STATUS_EDTYPE)."},
    {CK_STATUS_EMISSING, "MissingTensorError", NULL, "The checkpoint lacks a required tensor (CK_STATUS_EMISSING)."},
    {CK_STATUS_EOOM, "OutOfMemoryError", "MemoryError", "An allocation failed or a size overflowed (CK_STATUS_EOOM)."},
    {CK_STATUS_EDEVICE, "DeviceError", NULL, "A device runtime error: CUDA, cuBLAS, cuDNN (CK_STATUS_EDEVICE)."},
    /* after DeviceError: it derives from it, so that `except ckey.DeviceError` also catches "no GPU" */
    {CK_STATUS_ENODEV, "NoDeviceError", NULL, "The requested device is not available (CK_STATUS_ENODEV)."},
    {CK_STATUS_EBADSTATE, "BadStateError", NULL,
     "The Keyer is closed, or unusable after an earlier fatal error (CK_STATUS_EBADSTATE)."},
    {CK_STATUS_EUNSUPPORTED, "UnsupportedError", NULL,
     "A valid request this build or device cannot serve, e.g. fp16 on the CPU (CK_STATUS_EUNSUPPORTED)."},
};
#define N_ERROR_KINDS (sizeof ERROR_KINDS / sizeof ERROR_KINDS[0])

static PyObject *g_error;                     /* ckey.Error */
static PyObject *g_error_types[N_ERROR_KINDS]; /* in ERROR_KINDS order */

static PyObject *error_type(ck_status st) {
    for (size_t i = 0; i < N_ERROR_KINDS; i++)
        if (ERROR_KINDS[i].status == st) return g_error_types[i];
    return g_error;
}

PyObject *ckm_raise(ck_status st, const char *msg) {
    PyObject *type = error_type(st);
    /* messages name files, whose bytes need not be UTF-8 */
    PyObject *text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "backslashreplace");
    PyObject *exc  = text ? PyObject_CallOneArg(type, text) : NULL;
    Py_XDECREF(text);
    if (!exc) return NULL;
    PyObject *code = PyLong_FromLong((long)st);
    if (!code || PyObject_SetAttrString(exc, "status", code) < 0) {
        Py_XDECREF(code);
        Py_DECREF(exc);
        return NULL;
    }
    Py_DECREF(code);
    PyErr_SetObject(type, exc);
    Py_DECREF(exc);
    return NULL;
}

PyObject *ckm_raisef(ck_status st, const char *fmt, ...) {
    char    buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return ckm_raise(st, buf);
}

static PyObject *builtin_exception(const char *name) {
    return !strcmp(name, "ValueError")    ? PyExc_ValueError
           : !strcmp(name, "TypeError")   ? PyExc_TypeError
           : !strcmp(name, "OSError")     ? PyExc_OSError
           : !strcmp(name, "MemoryError") ? PyExc_MemoryError
                                          : PyExc_Exception;
}

static int add_errors(PyObject *m) {
    PyObject *base_dict = Py_BuildValue("{s:O}", "status", Py_None);
    if (!base_dict) return -1;
    g_error = PyErr_NewExceptionWithDoc("ckey.Error",
                                        "A failure reported by ckey. `.status` is the ck_status code (a negative int); "
                                        "str() is ckey's message, naming the file and the problem.",
                                        NULL, base_dict);
    Py_DECREF(base_dict);
    if (!g_error || PyModule_AddObjectRef(m, "Error", g_error) < 0) return -1;
    for (size_t i = 0; i < N_ERROR_KINDS; i++) {
        const error_kind *k     = &ERROR_KINDS[i];
        PyObject         *first = g_error;
        if (k->status == CK_STATUS_ENODEV) first = error_type(CK_STATUS_EDEVICE);
        PyObject *bases = k->extra ? Py_BuildValue("(OO)", first, builtin_exception(k->extra)) : Py_BuildValue("(O)", first);
        PyObject *dict  = Py_BuildValue("{s:i}", "status", (int)k->status);
        char      qual[96];
        snprintf(qual, sizeof qual, "ckey.%s", k->name);
        PyObject *t = bases && dict ? PyErr_NewExceptionWithDoc(qual, k->doc, bases, dict) : NULL;
        Py_XDECREF(bases);
        Py_XDECREF(dict);
        if (!t) return -1;
        g_error_types[i] = t; /* the module keeps a reference too */
        if (PyModule_AddObjectRef(m, k->name, t) < 0) return -1;
    }
    return 0;
}

/* ---- ckey's log into Python's logging ---- */

static PyObject *g_logger; /* logging.getLogger("ckey") */

/* ckey logs every failure it returns at error level; those come back as the exception raised for them,
 * so they go to the logger at DEBUG, not twice to the user. Warnings and notices keep their level. */
static void log_to_python(ck_log_level level, const char *msg, void *user) {
    (void)user;
    if (!Py_IsInitialized() || !g_logger) return;
    PyGILState_STATE gil = PyGILState_Ensure(); /* also from threads that hold no GIL (keying) */
    PyObject        *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb); /* an exception being raised survives the message */
    const int pylevel = level == CK_LOG_WARN ? 30 : level == CK_LOG_INFO ? 20 : 10;
    PyObject *text    = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "backslashreplace");
    PyObject *r       = text ? PyObject_CallMethod(g_logger, "log", "iO", pylevel, text) : NULL;
    Py_XDECREF(text);
    Py_XDECREF(r);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    PyGILState_Release(gil);
}

void ckm_log(ck_log_level level, const char *msg) { log_to_python(level, msg, NULL); }

/* ---- functions ---- */

static PyObject *fn_version(PyObject *self, PyObject *unused) { return PyUnicode_FromString(ck_version()); }

static PyObject *fn_cuda_device_count(PyObject *self, PyObject *unused) {
    int n;
    Py_BEGIN_ALLOW_THREADS /* the first call loads the CUDA driver */
    n = ck_cuda_device_count();
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(n);
}

static PyObject *fn_colorspace_parse(PyObject *self, PyObject *arg) {
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name) return NULL;
    ck_colorspace cs;
    if (ck_colorspace_parse(name, &cs) != 0)
        return ckm_raisef(CK_STATUS_EINVAL, "colour space '%s': not one of %s", name, ck_colorspace_names());
    return PyLong_FromLong((long)cs);
}

static PyObject *fn_colorspace_name(PyObject *self, PyObject *arg) {
    const long  cs   = PyLong_AsLong(arg);
    const char *name = cs == -1 && PyErr_Occurred() ? NULL : ck_colorspace_name((ck_colorspace)cs);
    if (PyErr_Occurred()) return NULL;
    if (!name) return ckm_raisef(CK_STATUS_EINVAL, "colour space %ld: not a ck_colorspace", cs);
    return PyUnicode_FromString(name);
}

static PyObject *fn_colorspace_names(PyObject *self, PyObject *unused) {
    return PyUnicode_FromString(ck_colorspace_names());
}

static PyMethodDef module_functions[] = {
    {"version", fn_version, METH_NOARGS, "ck_version(): the version of the linked ckey library."},
    {"cuda_device_count", fn_cuda_device_count, METH_NOARGS,
     "ck_cuda_device_count(): CUDA devices visible (0 without CUDA support, driver or device)."},
    {"colorspace_parse", fn_colorspace_parse, METH_O, "ck_colorspace_parse(name) -> ck_colorspace value."},
    {"colorspace_name", fn_colorspace_name, METH_O, "ck_colorspace_name(value) -> short name."},
    {"colorspace_names", fn_colorspace_names, METH_NOARGS, "ck_colorspace_names(): the accepted names, comma-separated."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_ckey", "ckey's C API (include/ckey.h) for Python; use the `ckey` package.", -1,
    module_functions,
};

PyMODINIT_FUNC PyInit__ckey(void) {
    import_array(); /* returns NULL with an ImportError set when numpy's C API cannot be loaded */
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    if (add_errors(m) < 0 || PyType_Ready(&ckm_context_type) < 0 ||
        PyModule_AddObjectRef(m, "Context", (PyObject *)&ckm_context_type) < 0 ||
        PyModule_AddIntConstant(m, "BUILTIN_TRAIN_SIZE", CKEY_BUILTIN_TRAIN_SIZE) < 0 ||
        PyModule_AddIntConstant(m, "MAX_BATCH", CK_MAX_BATCH) < 0)
        goto fail;
    PyObject *logging = PyImport_ImportModule("logging");
    g_logger          = logging ? PyObject_CallMethod(logging, "getLogger", "s", "ckey") : NULL;
    Py_XDECREF(logging);
    if (!g_logger) goto fail;
    ck_set_log(log_to_python, NULL, CK_LOG_INFO);
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
