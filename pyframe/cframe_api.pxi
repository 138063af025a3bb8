# pyframe.h's declarations: what cframe/ offers this layer (the hook, the
# per-thread installation, each Cache's C side, the frame readers, the
# specialization mode).  Included by _cframe.pyx, before everything that
# calls into cframe/.

cdef extern from "pyframe.h":
    cdef struct _PyInterpreterFrame:
        pass

    ctypedef struct pyframe_frame_ref:
        _PyInterpreterFrame *frame
        _PyInterpreterFrame *caller
        PyThreadState *tstate

    ctypedef int (*pyframe_classify_fn)(object, object, PyObject **, PyObject **,
                                        PyObject **) except -1
    ctypedef object (*pyframe_notify_fn)(object)
    ctypedef int (*pyframe_fast_guard_fn)(PyObject *, PyObject *, PyObject *,
                                          PyObject *) except -1

    ctypedef struct pyframe_owner:
        pass

    ctypedef struct pyframe_layer:
        PyTypeObject *frame_type
        Py_ssize_t frame_ref_offset
        PyObject *skip
        PyObject *skip_recursive
        PyObject *run_only
        PyObject *run_only_recursive
        pyframe_classify_fn classify_other
        pyframe_notify_fn notify_dropped
        PyTypeObject *fast_guard_type
        pyframe_fast_guard_fn check_fast_guard

    enum:
        PYFRAME_ERROR
        PYFRAME_RUN
        PYFRAME_SKIP
        PYFRAME_SKIP_RECURSIVE
        PYFRAME_REPLACE
        PYFRAME_CACHE
        PYFRAME_RUN_ONLY
        PYFRAME_RUN_ONLY_RECURSIVE

    int pyframe_hook_init(const pyframe_layer *layer) except -1
    PyObject *pyframe_thread_get_callback()
    object pyframe_thread_install(PyObject *callback, PyObject *cache, pyframe_owner *owner,
                                  int run_only)
    int pyframe_thread_replace(PyObject *callback, PyObject *cache, pyframe_owner *owner,
                               int run_only) except -1
    int pyframe_hook_installed()
    pyframe_owner *pyframe_owner_new(PyObject *self, int limit) except NULL
    void pyframe_owner_free(pyframe_owner *owner)
    void pyframe_owner_set_regions(pyframe_owner *owner, PyObject *lookup, PyObject *run)
    int pyframe_reset_code(object code, pyframe_owner *owner) except -1
    int pyframe_reset_all(pyframe_owner *owner) except -1
    int pyframe_remember(object code, pyframe_owner *owner, int action) except -1
    int pyframe_remembered(object code, pyframe_owner *owner)
    int pyframe_set_cache_limit(int limit) except -1
    int pyframe_get_cache_limit()
    object pyframe_cache_entries(object code, pyframe_owner *owner)

    PyObject *pyframe_frame_code(_PyInterpreterFrame *frame)
    PyObject *pyframe_frame_globals(_PyInterpreterFrame *frame)
    PyObject *pyframe_frame_builtins(_PyInterpreterFrame *frame)
    int pyframe_frame_lasti(_PyInterpreterFrame *frame)
    int pyframe_frame_lineno(_PyInterpreterFrame *frame)
    object pyframe_frame_back(PyThreadState *tstate, _PyInterpreterFrame *caller)

    object pyframe_callback_locals(_PyInterpreterFrame *frame)
    object pyframe_localsplus(_PyInterpreterFrame *frame, object unbound)
    int pyframe_set_local(_PyInterpreterFrame *frame, object name, object value) except -1
    object pyframe_frame_closure(_PyInterpreterFrame *frame)

    int pyframe_specialization_set(int on) except -1
    int pyframe_specialization_enabled()
    int pyframe_specialization_hooked(object func)
    int pyframe_specialization_aside()
    Py_ssize_t pyframe_specialization_probe(object func, object driver) except -1
