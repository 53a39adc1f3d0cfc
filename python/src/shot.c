/* Context.key_shot: a shot (a plate file, a folder of frames or a video) keyed into CorridorKey's output
 * folder by the library (include/ckey_shot.h), the files `ckey key` writes. The GIL is released for the whole
 * run; the progress callable is called with it held, from the library's threads (one call at a time, in frame
 * order). The run stops before its next frame when the callable returns False, raises (the exception is
 * re-raised here once the frames already keyed are written), or a signal handler raises (KeyboardInterrupt
 * on Ctrl-C: checked before every frame when keying on the main thread, and once more when the run ends). */
#include "ckeymod.h"

#include <string.h>

typedef struct shot_call {
    PyObject *progress;                 /* callable or NULL (borrowed) */
    PyObject *exc_type, *exc, *exc_tb; /* the first exception raised in a callback or signal handler (owned) */
    int       stop;                     /* cancellation asked */
} shot_call;

static void keep_exception(shot_call *c) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (!c->exc_type) c->exc_type = type, c->exc = value, c->exc_tb = tb;
    else Py_XDECREF(type), Py_XDECREF(value), Py_XDECREF(tb);
    c->stop = 1;
}

/* {"frame", "stem", "skipped", "done", "total", "paths", "seconds": {stage: s}} */
static PyObject *frame_dict(const ck_shot_event *ev) {
    PyObject *paths = PyTuple_New(ev->npaths);
    for (int i = 0; paths && i < ev->npaths; i++) {
        PyObject *p = PyUnicode_DecodeFSDefault(ev->paths[i]);
        if (!p) Py_CLEAR(paths);
        else PyTuple_SET_ITEM(paths, i, p);
    }
    if (!paths) return NULL;
    PyObject *d = Py_BuildValue("{s:i,s:O&,s:O,s:i,s:i,s:N,s:{s:d,s:d,s:d,s:d,s:d}}", "frame", ev->frame, "stem",
                                PyUnicode_DecodeFSDefault, ev->stem, "skipped", ev->skipped ? Py_True : Py_False,
                                "done", ev->done, "total", ev->total, "paths", paths, "seconds", "read", ev->read_s,
                                "network", ev->network_s, "finish", ev->finish_s, "write", ev->write_s, "ordered",
                                ev->ordered_s);
    return d;
}

static void on_event(void *user, const ck_shot_event *ev) {
    shot_call *c = user;
    if (ev->kind == CK_SHOT_WARNING) {
        if (ev->warning != CK_SHOT_WARN_SKIPPED) ckm_log(CK_LOG_WARN, ev->message);
        return;
    }
    if (!c->progress || c->stop) return;
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject        *d   = frame_dict(ev);
    PyObject        *r   = d ? PyObject_CallOneArg(c->progress, d) : NULL;
    if (!r) keep_exception(c);
    else if (r == Py_False) c->stop = 1;
    Py_XDECREF(r);
    Py_XDECREF(d);
    PyGILState_Release(gil);
}

/* Python runs signal handlers on the main thread only: PyErr_CheckSignals does nothing on the others. */
static int on_cancelled(void *user) {
    shot_call *c = user;
    if (!c->stop) {
        PyGILState_STATE gil = PyGILState_Ensure();
        if (PyErr_CheckSignals() < 0) keep_exception(c);
        PyGILState_Release(gil);
    }
    return c->stop;
}

static const char *const EXR_NAMES[] = {"pxr24", "zip", "none"};

/* key_shot(image, out, hint=None, first=0, count=-1, skip_existing=False, exr="pxr24", video_out=None,
 *          readers=0, workers=0, input_is_linear=False, post=None, progress=None) -> dict of ck_shot_stats
 * (and "cancelled", "videos_encoded"). count -1: to the shot's end. */
PyObject *ckm_context_key_shot(context_object *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"image", "out", "hint", "first", "count", "skip_existing", "exr", "video_out", "readers",
                            "workers", "input_is_linear", "post", "progress", NULL};
    PyObject    *image = NULL, *out = NULL, *hint = NULL, *video_out = NULL, *post = Py_None, *progress = Py_None;
    int          first = 0, count = -1, skip = 0, readers = 0, workers = 0, linear = 0;
    const char  *exr = "pxr24";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&O&|O&iipsO&iipOO:key_shot", names, PyUnicode_FSConverter, &image,
                                     PyUnicode_FSConverter, &out, PyUnicode_FSConverter, &hint, &first, &count, &skip,
                                     &exr, PyUnicode_FSConverter, &video_out, &readers, &workers, &linear, &post,
                                     &progress))
        goto fail_args;
    ck_shot_opts o = ck_shot_opts_default();
    int          e = 0;
    while (e < 3 && strcmp(exr, EXR_NAMES[e])) e++;
    if (e == 3) {
        ckm_raisef(CK_STATUS_EINVAL, "exr '%s': one of pxr24, zip, none", exr);
        goto fail_args;
    }
    if (progress != Py_None && !PyCallable_Check(progress)) {
        PyErr_SetString(PyExc_TypeError, "progress must be callable");
        goto fail_args;
    }
    ck_params look = self->params; /* the post-processing of this shot: ck_ctx_set_frame_params */
    if (ckm_params_from_dict(&look, post, 1) < 0) goto fail_args;
    const ck_frame_params fp = {look.refiner_scale, look.despill, look.despeckle, look.despeckle_size, look.comp};

    shot_call c = {progress == Py_None ? NULL : progress, NULL, NULL, NULL, 0};
    o.image = PyBytes_AS_STRING(image), o.out = PyBytes_AS_STRING(out), o.hint = hint ? PyBytes_AS_STRING(hint) : NULL;
    o.input_is_linear = linear, o.exr = (ck_exr_compression)e, o.skip_existing = skip;
    o.video_out = video_out ? PyBytes_AS_STRING(video_out) : NULL;
    o.readers = readers, o.workers = workers, o.ordered_events = 1;
    o.user = &c, o.event = on_event, o.cancelled = on_cancelled;

    ck_shot_stats st;
    ck_status     rc = CK_OK;
    int           closed = 0, encoded = 0;
    char          msg[1500] = "";
    memset(&st, 0, sizeof st);
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    ck_shot *shot = NULL;
    if (!self->ctx) {
        closed = 1;
    } else if ((rc = ck_shot_open(&shot, &o)) == CK_OK) {
        if (count < 0) count = ck_shot_frames(shot) - first;
        if ((rc = ck_shot_select(shot, first, count)) == CK_OK && (rc = ck_shot_check(shot)) == CK_OK) {
            /* a whole shot keyed by this process: what dead runs left half-written goes (as ckey key) */
            if (first == 0 && count == ck_shot_frames(shot)) ck_shot_sweep(shot);
            const ck_frame_params before = ck_ctx_frame_params(self->ctx);
            rc = ck_ctx_set_frame_params(self->ctx, &fp);
            if (rc != CK_OK) snprintf(msg, sizeof msg, "%s", ck_ctx_last_error(self->ctx));
            else {
                rc = ck_shot_key(shot, self->ctx, &st);
                if (rc == CK_OK && !st.cancelled) rc = ck_shot_encode_pending(shot, &encoded);
                ck_ctx_set_frame_params(self->ctx, &before);
            }
        }
    }
    if (rc != CK_OK && !msg[0]) snprintf(msg, sizeof msg, "%s", ck_shot_last_error(shot));
    ck_shot_free(shot);
    PyThread_release_lock(self->lock);
    Py_END_ALLOW_THREADS
    Py_XDECREF(image), Py_XDECREF(out), Py_XDECREF(hint), Py_XDECREF(video_out);
    /* a signal that came after the network stage's last check (the run's tail: frames in flight, writes) */
    if (!c.exc_type && PyErr_CheckSignals() < 0) keep_exception(&c);
    if (c.exc_type) { /* the callback's or the signal handler's exception, once the written frames are complete */
        PyErr_Restore(c.exc_type, c.exc, c.exc_tb);
        return NULL;
    }
    if (closed) return ckm_raise(CK_STATUS_EBADSTATE, "this Keyer is closed");
    if (rc != CK_OK) return ckm_raise(rc, msg);
    return Py_BuildValue("{s:i,s:i,s:O,s:i,s:i,s:i,s:d,s:{s:d,s:d,s:d,s:d,s:d}}", "frames", st.frames, "skipped",
                         st.skipped, "cancelled", st.cancelled ? Py_True : Py_False, "videos_encoded", encoded,
                         "readers", st.readers, "workers", st.workers, "wall_s", st.wall_s, "seconds", "read",
                         st.read_s, "network", st.network_s, "finish", st.finish_s, "write", st.write_s, "ordered",
                         st.ordered_s);
fail_args:
    Py_XDECREF(image), Py_XDECREF(out), Py_XDECREF(hint), Py_XDECREF(video_out);
    return NULL;
}
