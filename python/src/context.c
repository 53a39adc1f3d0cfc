/* ckey._ckey.Context: one ck_ctx (a loaded checkpoint planned for one size) and the frame path
 * ck_key_image_begin + ck_result_finish (+ ck_passes_from_result), with the GIL released.
 *
 * Arrays in: rgb (H, W, 3) and hint (H, W) or (H, W, 1), float32 or float16; a C-contiguous float32 array
 * is handed to ckey as it is (no copy), anything else is converted to one first.
 * Arrays out: the buffers ckey malloc'd for the ck_result (and the ck_passes block) become the numpy
 * arrays' memory (no copy); a capsule frees each when its last array goes. With out= (the arrays of an
 * earlier result) the frame is keyed into those arrays instead (ck_key_image_into): no output memory is
 * allocated, so none is page-faulted in afresh on every call. */
#include "ckeymod.h"

#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- ck_params <-> dict ---- */

typedef enum field_kind { F_INT, F_BOOL, F_FLOAT, F_DEVICE, F_PRECISION } field_kind;
typedef struct param_field {
    const char *name;
    size_t      offset;
    field_kind  kind;
    int         per_call; /* used by ck_result_finish only: may change from frame to frame */
} param_field;
#define FIELD(n, k, pc) {#n, offsetof(ck_params, n), k, pc}
static const param_field FIELDS[] = {
    FIELD(size, F_INT, 0),           FIELD(device, F_DEVICE, 0),         FIELD(precision, F_PRECISION, 0),
    FIELD(threads, F_INT, 0),        FIELD(head_dim, F_INT, 0),          FIELD(use_refiner, F_BOOL, 0),
    FIELD(refiner_scale, F_FLOAT, 0), FIELD(input_is_linear, F_BOOL, 0), FIELD(despill, F_FLOAT, 1),
    FIELD(despeckle, F_BOOL, 1),     FIELD(despeckle_size, F_INT, 1),    FIELD(comp, F_BOOL, 1),
    FIELD(fused_attention, F_BOOL, 0), FIELD(pad64, F_INT, 0),           FIELD(cuda_graph, F_INT, 0),
    FIELD(stage_gc, F_BOOL, 0),      FIELD(fused_decode, F_BOOL, 0),     FIELD(gpu_preprocess, F_INT, 0),
    FIELD(tile, F_INT, 0),           FIELD(tile_overlap, F_INT, 0),      FIELD(max_batch, F_INT, 0),
    FIELD(colorspace, F_INT, 0),     FIELD(keep_highlights, F_BOOL, 0),  FIELD(fg_unmix, F_INT, 0),
};
#define N_FIELDS (sizeof FIELDS / sizeof FIELDS[0])

static int set_field(ck_params *p, const param_field *f, PyObject *v) {
    char *at = (char *)p + f->offset;
    if (f->kind == F_FLOAT) {
        const double d = PyFloat_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred()) return -1;
        *(float *)at = (float)d;
        return 0;
    }
    if (f->kind == F_BOOL) {
        const int b = PyObject_IsTrue(v);
        if (b < 0) return -1;
        *(int *)at = b;
        return 0;
    }
    const long l = PyLong_AsLong(v);
    if (l == -1 && PyErr_Occurred()) return -1;
    if (l < INT_MIN || l > INT_MAX) {
        ckm_raisef(CK_STATUS_EINVAL, "%s = %ld: out of range", f->name, l);
        return -1;
    }
    if (f->kind == F_DEVICE) {
        if (l < CK_DEVICE_AUTO || l > CK_DEVICE_CUDA) return ckm_raisef(CK_STATUS_EINVAL, "device %ld: not a ck_device", l), -1;
        p->device = (ck_device)l;
    } else if (f->kind == F_PRECISION) {
        if (l < CK_PREC_FP32 || l > CK_PREC_AUTO) return ckm_raisef(CK_STATUS_EINVAL, "precision %ld: not a ck_precision", l), -1;
        p->precision = (ck_precision)l;
    } else {
        *(int *)at = (int)l;
    }
    return 0;
}

/* Sets the fields named by dict's keys; per_call_only: only those ck_result_finish reads. */
int ckm_params_from_dict(ck_params *p, PyObject *dict, int per_call_only) {
    if (!dict || dict == Py_None) return 0;
    if (!PyDict_Check(dict)) return PyErr_SetString(PyExc_TypeError, "params must be a dict"), -1;
    PyObject  *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        if (!name) return PyErr_SetString(PyExc_TypeError, "parameter names must be str"), -1;
        const param_field *f = NULL;
        for (size_t i = 0; i < N_FIELDS && !f; i++)
            if (!strcmp(FIELDS[i].name, name)) f = &FIELDS[i];
        if (!f) return ckm_raisef(CK_STATUS_EINVAL, "unknown parameter '%s'", name), -1;
        if (per_call_only && !f->per_call)
            return ckm_raisef(CK_STATUS_EINVAL,
                              "'%s' is fixed when the Keyer is made (ck_ctx_init takes it); only despill, despeckle, "
                              "despeckle_size and comp may change per frame", name), -1;
        if (set_field(p, f, value) < 0) return -1;
    }
    return 0;
}

static PyObject *params_to_dict(const ck_params *p) {
    PyObject *d = PyDict_New();
    for (size_t i = 0; d && i < N_FIELDS; i++) {
        const param_field *f  = &FIELDS[i];
        const char        *at = (const char *)p + f->offset;
        PyObject *v = f->kind == F_FLOAT       ? PyFloat_FromDouble(*(const float *)at)
                      : f->kind == F_BOOL      ? PyBool_FromLong(*(const int *)at)
                      : f->kind == F_DEVICE    ? PyLong_FromLong((long)p->device)
                      : f->kind == F_PRECISION ? PyLong_FromLong((long)p->precision)
                                               : PyLong_FromLong(*(const int *)at);
        if (!v || PyDict_SetItemString(d, f->name, v) < 0) Py_CLEAR(d);
        Py_XDECREF(v);
    }
    return d;
}

static PyObject *fn_default_params(PyObject *unused_self, PyObject *unused) {
    const ck_params p = ck_params_default();
    return params_to_dict(&p);
}

/* ---- arrays ---- */

static const char *shape_text(PyArrayObject *a, char *buf, size_t n) {
    size_t len = (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < PyArray_NDIM(a) && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, i ? ", %ld" : "%ld", (long)PyArray_DIM(a, i));
    if (len < n) snprintf(buf + len, n - len, PyArray_NDIM(a) == 1 ? ",)" : ")");
    return buf;
}

/* obj as a C-contiguous float32 array of (H, W, channels) (channels 1 also as (H, W)): the same object
 * when it is one already, else a converted copy. NULL with ckey.DtypeError / ShapeError set. */
static PyArrayObject *as_image(PyObject *obj, const char *what, int channels, npy_intp *h, npy_intp *w) {
    const char *want = channels == 3 ? "(H, W, 3)" : "(H, W) or (H, W, 1)";
    if (!PyArray_Check(obj))
        return ckm_raisef(CK_STATUS_EDTYPE, "%s: expected a numpy array %s of float32 or float16, got %s", what, want,
                          Py_TYPE(obj)->tp_name), NULL;
    PyArrayObject *a    = (PyArrayObject *)obj;
    const int      type = PyArray_TYPE(a);
    if (type != NPY_FLOAT32 && type != NPY_FLOAT16)
        return ckm_raisef(CK_STATUS_EDTYPE, "%s: dtype %s; ckey takes float32 or float16 (values in [0, 1] for "
                          "8/16-bit sources: divide by 255 or 65535)", what, PyArray_DESCR(a)->typeobj->tp_name), NULL;
    char      shape[96];
    const int nd = PyArray_NDIM(a);
    const int ok = channels == 3 ? nd == 3 && PyArray_DIM(a, 2) == 3
                                 : nd == 2 || (nd == 3 && PyArray_DIM(a, 2) == 1);
    if (!ok) return ckm_raisef(CK_STATUS_ESHAPE, "%s: shape %s; expected %s", what, shape_text(a, shape, sizeof shape), want), NULL;
    *h = PyArray_DIM(a, 0), *w = PyArray_DIM(a, 1);
    /* ck_image holds int sizes, and (H, W, 4) float32 outputs must be addressable */
    if (*h < 1 || *w < 1 || *h > INT_MAX / 4 || *w > INT_MAX / 4 || (double)*h * (double)*w > (double)INT_MAX)
        return ckm_raisef(CK_STATUS_ESHAPE, "%s: shape %s; height and width must be at least 1 and at most 2^31 "
                          "pixels in all", what, shape_text(a, shape, sizeof shape)), NULL;
    return (PyArrayObject *)PyArray_FROM_OTF(obj, NPY_FLOAT32, NPY_ARRAY_IN_ARRAY);
}

static void free_buffer(PyObject *capsule) { free(PyCapsule_GetPointer(capsule, "ckey.buffer")); }

static void free_passes(PyObject *capsule) {
    ck_passes *pv = PyCapsule_GetPointer(capsule, "ckey.passes");
    ck_passes_free(NULL, pv); /* a host block (ck_passes_from_result): no context needed */
    free(pv);
}

/* A numpy array over `data` whose memory `owner` (a capsule) keeps; consumes one reference to owner. */
static PyObject *array_over(void *data, int nd, npy_intp *dims, int type, PyObject *owner) {
    PyObject *arr = owner ? PyArray_SimpleNewFromData(nd, dims, type, data) : NULL;
    if (!arr) {
        Py_XDECREF(owner);
        return NULL;
    }
    if (PyArray_SetBaseObject((PyArrayObject *)arr, owner) < 0) { /* the reference is taken even then */
        Py_DECREF(arr);
        return NULL;
    }
    return arr;
}

/* A numpy array owning *data (malloc'd by ckey); *data is NULL afterwards, freed on failure. */
static PyObject *array_owning(float **data, int nd, npy_intp *dims) {
    float *d = *data;
    *data    = NULL;
    PyObject *cap = PyCapsule_New(d, "ckey.buffer", free_buffer);
    if (!cap) free(d);
    return array_over(d, nd, dims, NPY_FLOAT32, cap);
}

/* ---- the type ---- */

static PyObject *context_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    context_object *self = (context_object *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->lock = PyThread_allocate_lock();
    if (!self->lock) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    return (PyObject *)self;
}

static void context_dealloc(context_object *self) {
    if (self->ctx) ck_ctx_free(self->ctx); /* nothing else refers to self: no thread is keying */
    if (self->lock) PyThread_free_lock(self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Context(checkpoint, params): ck_ctx_init(checkpoint, ck_params_default() with params' fields set). */
static int context_init(context_object *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"checkpoint", "params", NULL};
    PyObject    *path = NULL, *dict = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|O:Context", names, PyUnicode_FSConverter, &path, &dict)) return -1;
    if (self->ctx) {
        Py_DECREF(path);
        PyErr_SetString(PyExc_RuntimeError, "Context is already initialized");
        return -1;
    }
    ck_params p = ck_params_default();
    if (ckm_params_from_dict(&p, dict, 0) < 0) {
        Py_DECREF(path);
        return -1;
    }
    ck_ctx   *ctx = NULL;
    ck_status st;
    char      msg[600];
    Py_BEGIN_ALLOW_THREADS /* reading and validating a checkpoint takes a while */
    st = ck_ctx_init(&ctx, PyBytes_AS_STRING(path), &p);
    if (st != CK_OK) {
        snprintf(msg, sizeof msg, "%s", ck_ctx_last_error(ctx));
        ck_ctx_free(ctx);
        ctx = NULL;
    }
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (st != CK_OK) return ckm_raise(st, msg), -1;
    self->ctx              = ctx;
    self->params           = *ck_ctx_params(ctx);
    self->max_batch        = ck_ctx_max_batch(ctx);
    self->activation_bytes = ck_ctx_activation_bytes(ctx);
    self->weight_bytes     = ck_ctx_weight_bytes(ctx);
    snprintf(self->device, sizeof self->device, "%s", ck_ctx_device_name(ctx));
    return 0;
}

static PyObject *context_close(context_object *self, PyObject *unused) {
    ck_ctx *ctx;
    Py_BEGIN_ALLOW_THREADS /* waits for a frame being keyed on another thread */
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    ctx       = self->ctx;
    self->ctx = NULL;
    PyThread_release_lock(self->lock);
    ck_ctx_free(ctx);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* The arrays of out= (kept[i] NULL: none given; comp's also when it is off or was None). */
typedef struct kept_arrays {
    PyArrayObject *a[4]; /* alpha, fg, processed, comp (borrowed from the out tuple) */
} kept_arrays;

/* The outputs as numpy arrays: {"alpha", "fg", "processed", "comp" (None without comp), "passes"}: the
 * kept array itself where one was given (keyed in place), else an array owning res's buffer. */
static PyObject *result_dict(ck_result *res, ck_passes *pv, npy_intp h, npy_intp w, const kept_arrays *kept) {
    npy_intp  d1[2] = {h, w}, d3[3] = {h, w, 3}, d4[3] = {h, w, 4};
    PyObject *out = PyDict_New();
    /* each value is made only while its dict exists: a buffer not made into an array stays in res */
#define PUT(dict, name, expr)                                                                                          \
    do {                                                                                                               \
        PyObject *v_ = NULL;                                                                                           \
        if (dict && (!(v_ = (expr)) || PyDict_SetItemString(dict, name, v_) < 0)) Py_CLEAR(dict);                     \
        Py_XDECREF(v_);                                                                                                \
    } while (0)
#define OUTPUT(i, field, nd, dims)                                                                              \
    (kept && kept->a[i] ? Py_NewRef((PyObject *)kept->a[i]) : array_owning(&res->field.data, nd, dims))
    PUT(out, "alpha", OUTPUT(0, alpha, 2, d1));
    PUT(out, "fg", OUTPUT(1, fg, 3, d3));
    PUT(out, "processed", OUTPUT(2, processed, 3, d4));
    PUT(out, "comp", res->comp.data || (kept && kept->a[3]) ? OUTPUT(3, comp, 3, d3) : Py_NewRef(Py_None));
#undef OUTPUT
    PyObject *passes = NULL;
    if (pv) {
        /* the four passes share one block; each array holds a reference to its capsule */
        PyObject *cap = PyCapsule_New(pv, "ckey.passes", free_passes);
        if (!cap) ck_passes_free(NULL, pv), free(pv);
        passes = cap ? PyDict_New() : NULL;
        PUT(passes, "alpha", array_over(pv->alpha, 2, d1, NPY_FLOAT16, Py_NewRef(cap)));
        PUT(passes, "fg", array_over(pv->fg, 3, d3, NPY_FLOAT16, Py_NewRef(cap)));
        PUT(passes, "processed", array_over(pv->processed, 3, d4, NPY_FLOAT16, Py_NewRef(cap)));
        PUT(passes, "comp", pv->comp ? array_over(pv->comp, 3, d3, NPY_UINT8, Py_NewRef(cap)) : Py_NewRef(Py_None));
        Py_XDECREF(cap);
        if (!passes) Py_CLEAR(out);
    }
    PUT(out, "passes", passes ? Py_NewRef(passes) : Py_NewRef(Py_None));
#undef PUT
    Py_XDECREF(passes);
    return out;
}

/* Whether two contiguous arrays' bytes overlap. */
static int arrays_overlap(PyArrayObject *a, PyArrayObject *b) {
    const char *a0 = PyArray_BYTES(a), *b0 = PyArray_BYTES(b);
    return a0 < b0 + PyArray_NBYTES(b) && b0 < a0 + PyArray_NBYTES(a);
}

/* out=: a tuple (alpha, fg, processed, comp or None) of arrays to key into. Each must be what key() returns
 * for this frame: float32 in native byte order, shaped (H, W), (H, W, 3), (H, W, 4), (H, W, 3), C-contiguous,
 * aligned, writable, none overlapping another or the inputs (ckey reads the plate while writing them). comp
 * is used only when the comp is made (else left alone: kept->a[3] NULL). 0, or -1 with a ckey exception. */
static int kept_from_tuple(PyObject *tuple, npy_intp h, npy_intp w, int comp, PyArrayObject *const inputs[2],
                           kept_arrays *kept, ck_result *res) {
    memset(kept, 0, sizeof *kept);
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != 4)
        return ckm_raisef(CK_STATUS_EINVAL, "out: expected a tuple (alpha, fg, processed, comp)"), -1;
    static const char *const names[4]    = {"alpha", "fg", "processed", "comp"};
    static const int         channels[4] = {1, 3, 4, 3};
    ck_image *const          ims[4]      = {&res->alpha, &res->fg, &res->processed, &res->comp};
    for (int i = 0; i < 4; i++) {
        PyObject *obj = PyTuple_GET_ITEM(tuple, i);
        if (i == 3 && (obj == Py_None || !comp)) continue; /* None with the comp on: ckey allocates it */
        if (!PyArray_Check(obj))
            return ckm_raisef(CK_STATUS_EDTYPE, "out.%s: expected a numpy array (a result of key() for a frame of "
                              "this size), got %s", names[i], Py_TYPE(obj)->tp_name), -1;
        PyArrayObject *a = (PyArrayObject *)obj;
        char           shape[96];
        if (PyArray_TYPE(a) != NPY_FLOAT32 || !PyArray_ISNOTSWAPPED(a))
            return ckm_raisef(CK_STATUS_EDTYPE, "out.%s: dtype %s; key() writes native float32", names[i],
                              PyArray_DESCR(a)->typeobj->tp_name), -1;
        const int nd = channels[i] == 1 ? 2 : 3;
        if (PyArray_NDIM(a) != nd || PyArray_DIM(a, 0) != h || PyArray_DIM(a, 1) != w ||
            (nd == 3 && PyArray_DIM(a, 2) != channels[i])) {
            if (nd == 2)
                return ckm_raisef(CK_STATUS_ESHAPE, "out.%s: shape %s; this frame's is (%ld, %ld)", names[i],
                                  shape_text(a, shape, sizeof shape), (long)h, (long)w), -1;
            return ckm_raisef(CK_STATUS_ESHAPE, "out.%s: shape %s; this frame's is (%ld, %ld, %d)", names[i],
                              shape_text(a, shape, sizeof shape), (long)h, (long)w, channels[i]), -1;
        }
        if (!PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISALIGNED(a))
            return ckm_raisef(CK_STATUS_EINVAL, "out.%s: not a C-contiguous, aligned array (ckey writes it as one "
                              "block)", names[i]), -1;
        if (!PyArray_ISWRITEABLE(a))
            return ckm_raisef(CK_STATUS_EINVAL, "out.%s: read-only array", names[i]), -1;
        for (int j = 0; j < 2; j++)
            if (arrays_overlap(a, inputs[j]))
                return ckm_raisef(CK_STATUS_EINVAL, "out.%s: shares memory with %s", names[i], j ? "hint" : "rgb"), -1;
        for (int j = 0; j < i; j++)
            if (kept->a[j] && arrays_overlap(a, kept->a[j]))
                return ckm_raisef(CK_STATUS_EINVAL, "out.%s: shares memory with out.%s", names[i], names[j]), -1;
        kept->a[i] = a;
        *ims[i]    = (ck_image){(int)w, (int)h, channels[i], (float *)PyArray_DATA(a)};
    }
    return 0;
}

/* key(rgb, hint, post=None, passes=False, out=None) */
static PyObject *context_key(context_object *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"rgb", "hint", "post", "passes", "out", NULL};
    PyObject    *rgb_obj, *hint_obj, *post = NULL, *out_obj = Py_None;
    int          want_passes = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OpO:key", names, &rgb_obj, &hint_obj, &post, &want_passes,
                                     &out_obj))
        return NULL;
    ck_params p = self->params; /* = ck_ctx_params: unchanged, this is ck_key_image */
    if (ckm_params_from_dict(&p, post, 1) < 0) return NULL;
    npy_intp       h, w, hh, hw;
    PyArrayObject *rgb = as_image(rgb_obj, "rgb", 3, &h, &w), *hint = NULL;
    if (rgb) hint = as_image(hint_obj, "hint", 1, &hh, &hw);
    if (!hint) {
        Py_XDECREF(rgb);
        return NULL;
    }
    if (hh != h || hw != w) {
        Py_DECREF(rgb), Py_DECREF(hint);
        return ckm_raisef(CK_STATUS_ESHAPE, "hint: %ld x %ld pixels; the plate is %ld x %ld (width x height)", (long)hw,
                          (long)hh, (long)w, (long)h);
    }
    const ck_image rgb_im  = {(int)w, (int)h, 3, (float *)PyArray_DATA(rgb)};
    const ck_image hint_im = {(int)w, (int)h, 1, (float *)PyArray_DATA(hint)};
    ck_result      res     = {{0}};
    kept_arrays    kept;
    const int      into = out_obj != Py_None;
    /* out's arrays stay alive through the call: the tuple holds them, and the caller holds the tuple */
    if (into && kept_from_tuple(out_obj, h, w, p.comp, (PyArrayObject *const[2]){rgb, hint}, &kept, &res) < 0) {
        Py_DECREF(rgb), Py_DECREF(hint);
        return NULL;
    }
    ck_passes *pv = want_passes ? calloc(1, sizeof *pv) : NULL;
    if (want_passes && !pv) {
        Py_DECREF(rgb), Py_DECREF(hint);
        return PyErr_NoMemory();
    }
    ck_status st     = CK_OK;
    int       closed = 0;
    char      msg[700];
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    if (!self->ctx) {
        closed = 1;
    } else {
        st = into ? ck_key_image_into(self->ctx, &rgb_im, &hint_im, &p, &res)
                  : ck_key_image_begin(self->ctx, &rgb_im, &hint_im, &res);
        if (st != CK_OK) {
            snprintf(msg, sizeof msg, "%s", ck_ctx_last_error(self->ctx));
        } else if (!into && (st = ck_result_finish(&p, (int)w, (int)h, &res)) != CK_OK) {
            snprintf(msg, sizeof msg, "post-processing of a %ldx%ld frame failed: %s", (long)w, (long)h, ck_status_str(st));
        } else if (pv && (st = ck_passes_from_result(&res, pv)) != CK_OK) {
            snprintf(msg, sizeof msg, "converting a %ldx%ld frame's passes failed: %s", (long)w, (long)h, ck_status_str(st));
        }
    }
    PyThread_release_lock(self->lock);
    Py_END_ALLOW_THREADS
    Py_DECREF(rgb), Py_DECREF(hint);
    if (into) { /* the arrays' memory is theirs: only what ckey allocated (a comp for a None) is freed below */
        ck_image *const ims[4] = {&res.alpha, &res.fg, &res.processed, &res.comp};
        for (int i = 0; i < 4; i++)
            if (kept.a[i]) ims[i]->data = NULL;
    }
    if (closed || st != CK_OK) {
        ck_result_free(&res);
        if (pv) ck_passes_free(NULL, pv), free(pv);
        if (closed) return ckm_raise(CK_STATUS_EBADSTATE, "this Keyer is closed");
        if (st == CK_STATUS_EBADSTATE)
            return ckm_raisef(st, "this Keyer cannot key after an earlier failure: %s", msg);
        return ckm_raise(st, msg);
    }
    PyObject *out = result_dict(&res, pv, h, w, into ? &kept : NULL);
    ck_result_free(&res); /* what the arrays did not take (nothing, or the arrays' buffers after a failure) */
    return out;
}

static PyObject *get_closed(context_object *self, void *unused) { return PyBool_FromLong(self->ctx == NULL); }
static PyObject *get_params(context_object *self, void *unused) { return params_to_dict(&self->params); }
static PyObject *get_device(context_object *self, void *unused) { return PyUnicode_FromString(self->device); }
static PyObject *get_max_batch(context_object *self, void *unused) { return PyLong_FromLong(self->max_batch); }
static PyObject *get_act(context_object *self, void *unused) { return PyLong_FromSize_t(self->activation_bytes); }
static PyObject *get_weights(context_object *self, void *unused) { return PyLong_FromSize_t(self->weight_bytes); }

static PyGetSetDef context_getset[] = {
    {"closed", (getter)get_closed, NULL, "True after close().", NULL},
    {"params", (getter)get_params, NULL, "ck_ctx_params() as a dict (the values in effect).", NULL},
    {"device_name", (getter)get_device, NULL, "ck_ctx_device_name(): \"cpu\", or the CUDA backend's name.", NULL},
    {"max_batch", (getter)get_max_batch, NULL, "ck_ctx_max_batch(): images per forward.", NULL},
    {"activation_bytes", (getter)get_act, NULL, "ck_ctx_activation_bytes(): the activation arena's size.", NULL},
    {"weight_bytes", (getter)get_weights, NULL, "ck_ctx_weight_bytes(): the weights' size on the device.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef context_methods[] = {
    {"key", (PyCFunction)(void (*)(void))context_key, METH_VARARGS | METH_KEYWORDS,
     "key(rgb, hint, post=None, passes=False, out=None) -> dict: ck_key_image_begin + ck_result_finish (post: "
     "the per-frame despill / despeckle / despeckle_size / comp) [+ ck_passes_from_result]; out: a tuple "
     "(alpha, fg, processed, comp or None) of arrays to key into instead (ck_key_image_into)."},
    {"key_shot", (PyCFunction)(void (*)(void))ckm_context_key_shot, METH_VARARGS | METH_KEYWORDS,
     "key_shot(image, out, hint=None, first=0, count=-1, ...) -> dict: ck_shot_open + ck_shot_key (shot.c)."},
    {"close", (PyCFunction)context_close, METH_NOARGS, "ck_ctx_free(); waits for a frame being keyed."},
    {"default_params", (PyCFunction)fn_default_params, METH_NOARGS | METH_STATIC, "ck_params_default() as a dict."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject ckm_context_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ckey._ckey.Context",
    .tp_doc       = "Context(checkpoint, params=None): a ck_ctx. Use ckey.Keyer.",
    .tp_basicsize = sizeof(context_object),
    .tp_flags     = Py_TPFLAGS_DEFAULT,
    .tp_new       = context_new,
    .tp_init      = (initproc)context_init,
    .tp_dealloc   = (destructor)context_dealloc,
    .tp_methods   = context_methods,
    .tp_getset    = context_getset,
};
