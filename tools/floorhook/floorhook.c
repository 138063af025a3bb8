/* floorhook: the cheapest possible PEP 523 hook, for tests and benchmarks.
 *
 * It measures the "floor" any frame evaluation hook pays: with a PEP 523
 * function installed CPython stops inlining Python-to-Python calls (every
 * call goes through the C stack and the hook), whatever the hook does.  Our
 * hook does nothing but count and call the evaluator that was installed
 * before it, so pyframe's cost over this floor is what pyframe itself adds.
 *
 *   install()          pass-through hook that counts frames (install(None)
 *                      is the same)
 *   install(callback)  the same, and also calls callback() (no arguments) for
 *                      every new frame: not for generator/coroutine
 *                      resumptions nor throws into them, and not for the frames
 *                      the callback itself runs (nor those that print its
 *                      errors).  If callback() raises, the
 *                      error is printed with PyErr_WriteUnraisable and the
 *                      frame runs anyway (so a bad callback never loses a
 *                      frame; it also means KeyboardInterrupt is swallowed).
 *   uninstall()        put back the evaluator found by install(); RuntimeError
 *                      if floorhook is not installed or if another hook was
 *                      installed on top of it since (restoring ours would drop
 *                      that one).
 *   installed()        True while floorhook's function is the interpreter's.
 *   calls()            hook invocations since install() or reset_calls(): every
 *                      frame evaluation (new frames, resumptions, throws),
 *                      except those of frames run by the callback itself.
 *   reset_calls()      set that count to 0.
 *
 * Not thread-aware beyond what the GIL gives: the count and the callback are
 * global, as is the hook (one per interpreter).  Test/benchmark use only.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x03100000
#  error "floorhook is written against CPython 3.11 to 3.15"
#endif

/* Internal headers are usable only with Py_BUILD_CORE. */
#define Py_BUILD_CORE 1
#if PY_VERSION_HEX >= 0x030E0000
/* 3.14 moved the frame's struct out of pycore_frame.h. */
#  include "internal/pycore_interpframe_structs.h"   /* _PyInterpreterFrame.owner */
#else
#  include "internal/pycore_frame.h"   /* _PyInterpreterFrame.owner, FRAME_OWNED_BY_THREAD */
#endif

/* The evaluator installed before us; valid while `hook_installed`. */
static _PyFrameEvalFunction previous_eval = NULL;
static int hook_installed = 0;
static PyObject *callback = NULL;              /* Owned; NULL for install(). */
static unsigned long long call_count = 0;
/* > 0 while this thread runs the callback: its own frames pass straight
 * through, or every call of it would call it again, forever. */
static _Thread_local int in_callback = 0;

static PyObject *
floor_eval_frame(PyThreadState *tstate, struct _PyInterpreterFrame *frame, int throwflag)
{
    if (in_callback) {
        return previous_eval(tstate, frame, throwflag);
    }
    call_count++;
    /* Generator-owned frames are resumptions (the first run of a generator
     * function's frame is thread-owned, as for any call). */
    if (callback != NULL && !throwflag && frame->owner == FRAME_OWNED_BY_THREAD) {
        PyObject *cb = Py_NewRef(callback);   /* uninstall() may run inside it */
        PyObject *result;
        in_callback++;
        result = PyObject_CallNoArgs(cb);
        if (result == NULL) {
            /* Still inside in_callback: printing the error runs Python code
             * (sys.unraisablehook, traceback formatting) whose frames must
             * not call the failing callback again. */
            PyErr_WriteUnraisable(cb);
        }
        else {
            Py_DECREF(result);
        }
        in_callback--;
        Py_DECREF(cb);
    }
    return previous_eval(tstate, frame, throwflag);
}

static PyObject *
floorhook_install(PyObject *module, PyObject *args)
{
    PyObject *cb = NULL;
    PyInterpreterState *interp = PyInterpreterState_Get();

    if (!PyArg_ParseTuple(args, "|O:install", &cb)) {
        return NULL;
    }
    if (cb == Py_None) {
        cb = NULL;
    }
    if (cb != NULL && !PyCallable_Check(cb)) {
        PyErr_Format(PyExc_TypeError, "install() expects a callable or None, not %.100s",
                     Py_TYPE(cb)->tp_name);
        return NULL;
    }
    if (hook_installed) {
        PyErr_SetString(PyExc_RuntimeError, "floorhook is already installed");
        return NULL;
    }
    /* CPython reports its own evaluator as _PyEval_EvalFrameDefault when no
     * hook is set, so previous_eval is never NULL. */
    previous_eval = _PyInterpreterState_GetEvalFrameFunc(interp);
    if (previous_eval == NULL) {
        previous_eval = _PyEval_EvalFrameDefault;
    }
    Py_XSETREF(callback, Py_XNewRef(cb));
    call_count = 0;
    hook_installed = 1;
    _PyInterpreterState_SetEvalFrameFunc(interp, floor_eval_frame);
    Py_RETURN_NONE;
}

static PyObject *
floorhook_uninstall(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    PyInterpreterState *interp = PyInterpreterState_Get();

    if (!hook_installed) {
        PyErr_SetString(PyExc_RuntimeError, "floorhook is not installed");
        return NULL;
    }
    if (_PyInterpreterState_GetEvalFrameFunc(interp) != floor_eval_frame) {
        PyErr_SetString(PyExc_RuntimeError,
                        "another frame evaluation function was installed on top of "
                        "floorhook; remove it first");
        return NULL;
    }
    _PyInterpreterState_SetEvalFrameFunc(interp, previous_eval);
    hook_installed = 0;
    Py_CLEAR(callback);
    Py_RETURN_NONE;
}

static PyObject *
floorhook_installed(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    PyInterpreterState *interp = PyInterpreterState_Get();
    return PyBool_FromLong(_PyInterpreterState_GetEvalFrameFunc(interp) == floor_eval_frame);
}

static PyObject *
floorhook_calls(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromUnsignedLongLong(call_count);
}

static PyObject *
floorhook_reset_calls(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    call_count = 0;
    Py_RETURN_NONE;
}

static PyMethodDef floorhook_methods[] = {
    {"install", floorhook_install, METH_VARARGS,
     "install(callback=None): install the pass-through hook (callback() per new frame)."},
    {"uninstall", floorhook_uninstall, METH_NOARGS,
     "uninstall(): restore the evaluator found by install()."},
    {"installed", floorhook_installed, METH_NOARGS,
     "installed(): True while floorhook's hook is the interpreter's."},
    {"calls", floorhook_calls, METH_NOARGS,
     "calls(): frame evaluations the hook saw since install() or reset_calls()."},
    {"reset_calls", floorhook_reset_calls, METH_NOARGS, "reset_calls(): set calls() to 0."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef floorhook_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "floorhook",
    .m_doc = "A pass-through PEP 523 hook that counts frames: the floor cost of any hook.",
    .m_size = -1,   /* global state: one hook per process is all tests need */
    .m_methods = floorhook_methods,
};

PyMODINIT_FUNC
PyInit_floorhook(void)
{
    return PyModule_Create(&floorhook_module);
}
