/* hook.c: per-thread state and the installation of pyframe's PEP 523
 * function.
 *
 * Each thread that installed a callback (or run-only mode) has a
 * thread_hook; pyframe's function (eval_frame.c) is installed while at least
 * one has.  It goes over whatever function is installed then, which runs the
 * frames it passes on; a function installed over ours later stays, ours in
 * its chain.  In the specialization mode it steps aside while a frame of
 * skipped code runs, when that cannot hide another thread's frames.
 */
#include "hook.h"

PYFRAME_THREAD_LOCAL thread_hook *hook_thread;
Py_ssize_t hook_threads_installed;
_PyFrameEvalFunction hook_previous_eval = _PyEval_EvalFrameDefault;
_PyFrameEvalFunction hook_skipped_eval = _PyEval_EvalFrameDefault;
pyframe_layer hook_layer;
int hook_aside;

#define THREAD_CAPSULE_NAME "pyframe._cframe.thread_hook"

/* The PEP 523 function (eval_frame.c), from hook_init(). */
static _PyFrameEvalFunction ours;
/* Registered by the specialization mode while it is on, or NULL. */
static const hook_aside_listener *aside_listener;

/* ---- the hook's installation -------------------------------------------- */

static void skip_path_changed(void);

/* 1 from the moment ours is installed until we put the previous function
 * back: another PEP 523 function installed over ours meanwhile may still run
 * frames with ours (most do, Dynamo included), so ours is in its chain. */
static int in_chain;

/* 1 when a new frame evaluated now reaches ours (through the
 * function installed over ours), 0 when it does not, -1 with an exception.
 * Runs the smallest code there is, `None`, as a module, with this thread's
 * callback paused. */
static int
frames_reach_us(thread_hook *thread)
{
    static PyObject *probe_code;   /* Owned, for the process. */
    PyObject *globals = NULL, *result = NULL;

    if (probe_code == NULL
            && (probe_code = Py_CompileString("None", "<pyframe probe>", Py_eval_input)) == NULL) {
        return -1;
    }
    globals = PyDict_New();
    if (globals == NULL || PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) < 0) {
        Py_XDECREF(globals);
        return -1;
    }
    thread->probing = 1;
    thread->probe_reached = 0;
    thread->paused++;
    result = PyEval_EvalCode(probe_code, globals, globals);
    thread->paused--;
    thread->probing = 0;
    Py_DECREF(globals);
    if (result == NULL) {
        return -1;
    }
    Py_DECREF(result);
    return thread->probe_reached;
}

/* Installs ours over `current`, the function installed now, which runs the
 * frames ours passes on from then on. */
static void
install_over(PyInterpreterState *interp, _PyFrameEvalFunction current)
{
    hook_previous_eval = current;
    skip_path_changed();
    _PyInterpreterState_SetEvalFrameFunc(interp, ours);
    in_chain = 1;
}

/* When another PEP 523 function was installed on top of ours, we leave it in
 * place; ours stays in its chain as a pass-through. */
int
hook_sync(void)
{
    PyInterpreterState *interp = PyInterpreterState_Get();
    _PyFrameEvalFunction current;

    /* Stepped aside for one thread's skipped code: installing or removing
     * anything ends that (the hook steps aside again where it still may). */
    hook_step_in();
    current = _PyInterpreterState_GetEvalFrameFunc(interp);
    if (hook_threads_installed > 0 && current != ours) {
        if (in_chain) {
            /* Installing ours over a function that calls ours would loop. */
            int reached = frames_reach_us(hook_thread);
            if (reached != 0) {
                return reached;
            }
        }
        install_over(interp, current);
    }
    else if (hook_threads_installed == 0 && current == ours) {
        _PyInterpreterState_SetEvalFrameFunc(interp, hook_previous_eval);
        in_chain = 0;
    }
    return 0;
}

/* ---- stepping aside for skipped code (specialization mode) ------------- */

void
hook_step_aside(void)
{
    thread_hook *thread = hook_thread;   /* Borrowed. */
    PyInterpreterState *interp;

    /* While aside, any thread may run (the GIL passes on) and start frames
     * unseen by the hook: frames of code skipped, inlined; every other
     * frame starts through its function's vectorcall or is heard of by the
     * function watcher, either of which steps in (specialize.c), whichever
     * thread it runs in.  So the threads with something installed must all
     * decide by this thread's owner: what it skips they skip.  A function
     * installed before ours must keep running their frames. */
    if (hook_aside || thread == NULL || thread->cache == NULL
            || thread->owner->threads_installed != hook_threads_installed
            || hook_previous_eval != _PyEval_EvalFrameDefault
            || aside_listener == NULL || !aside_listener->may_step_aside()) {
        return;
    }
    interp = PyInterpreterState_Get();
    if (_PyInterpreterState_GetEvalFrameFunc(interp) != ours) {
        return;   /* another function was installed over ours */
    }
    _PyInterpreterState_SetEvalFrameFunc(interp, _PyEval_EvalFrameDefault);
    hook_aside = 1;
}

void
hook_step_in(void)
{
    PyInterpreterState *interp;
    _PyFrameEvalFunction current;

    if (!hook_aside) {
        return;
    }
    hook_aside = 0;
    interp = PyInterpreterState_Get();
    current = _PyInterpreterState_GetEvalFrameFunc(interp);
    /* CPython's, as ours left it; or one installed meanwhile, which chains
     * to CPython's: ours goes over it and runs frames with it. */
    if (current != ours) {
        install_over(interp, current);
    }
}

int
pyframe_hook_installed(void)
{
    PyInterpreterState *interp = PyInterpreterState_Get();
    return _PyInterpreterState_GetEvalFrameFunc(interp) == ours;
}

/* ---- the skipped path ------------------------------------------------------ */

/* Runs a frame of skipped code in the specialization mode: with pyframe's
 * function stepped aside where it may, so that CPython inlines its calls. */
static PyObject *
run_skipped(PyThreadState *tstate, _PyInterpreterFrame *frame, int throwflag)
{
    PyObject *result;
    hook_step_aside();
    result = hook_previous_eval(tstate, frame, throwflag);
    hook_step_in();   /* the hook ran this frame: it was in */
    return result;
}

static void
skip_path_changed(void)
{
    hook_skipped_eval = aside_listener != NULL ? run_skipped : hook_previous_eval;
}

void
hook_listen_aside(const hook_aside_listener *listener)
{
    if (listener == NULL) {
        hook_step_in();
    }
    aside_listener = listener;
    skip_path_changed();
}

/* ---- per-thread state ------------------------------------------------------ */

static void
thread_hook_free(PyObject *capsule)
{
    thread_hook *thread = PyCapsule_GetPointer(capsule, THREAD_CAPSULE_NAME);
    if (thread == NULL) {
        PyErr_WriteUnraisable(capsule);
        return;
    }
    if (hook_thread == thread) {
        hook_thread = NULL;
    }
    if (thread->cache != NULL) {
        hook_threads_installed--;
        thread->owner->threads_installed--;
        Py_CLEAR(thread->callback);
        Py_CLEAR(thread->cache);
        thread->owner = NULL;
        (void)hook_sync();   /* removing: cannot fail */
    }
    Py_CLEAR(thread->lent_locals);
    Py_CLEAR(thread->spare_locals);
    Py_CLEAR(thread->spare_view);
    PyMem_RawFree(thread);
}

static thread_hook *
thread_hook_get_or_create(void)
{
    thread_hook *thread = NULL;   /* Owned until the capsule owns it. */
    PyObject *capsule = NULL;     /* Owned. */
    PyObject *dict;               /* Borrowed. */

    if (hook_thread != NULL) {
        return hook_thread;
    }
    dict = PyThreadState_GetDict();
    if (dict == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "pyframe: this thread has no state dict");
        goto error;
    }
    thread = PyMem_RawCalloc(1, sizeof(thread_hook));
    if (thread == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    capsule = PyCapsule_New(thread, THREAD_CAPSULE_NAME, thread_hook_free);
    if (capsule == NULL) {
        goto error;
    }
    hook_thread = thread;   /* from here the capsule frees it */
    thread = NULL;
    if (PyDict_SetItemString(dict, THREAD_CAPSULE_NAME, capsule) < 0) {
        goto error;
    }
    Py_DECREF(capsule);
    return hook_thread;

error:
    Py_XDECREF(capsule);
    PyMem_RawFree(thread);
    return NULL;
}

PyObject *
pyframe_thread_get_callback(void)
{
    return hook_thread != NULL ? hook_thread->callback : NULL;
}

/* Counts the thread as one of `owner`'s and no longer `old_owner`'s
 * (sign 1), or the other way round (sign -1: undoing that). */
static void
owner_count(pyframe_owner *owner, pyframe_owner *old_owner, int sign)
{
    if (owner != NULL) {
        owner->threads_installed += sign;
    }
    if (old_owner != NULL) {
        old_owner->threads_installed -= sign;
    }
}

int
pyframe_thread_replace(PyObject *callback, PyObject *cache, pyframe_owner *owner, int run_only)
{
    thread_hook *thread = hook_thread;   /* Borrowed. */
    PyObject *old_callback, *old_cache;  /* Owned. */
    pyframe_owner *old_owner;
    int old_run_only, installing = cache != NULL;

    assert(cache != NULL || (callback == NULL && owner == NULL));
    if (thread == NULL && !installing) {
        return 0;
    }
    if (thread == NULL && (thread = thread_hook_get_or_create()) == NULL) {
        return -1;
    }
    old_callback = thread->callback;
    old_cache = thread->cache;
    old_owner = thread->owner;
    old_run_only = thread->run_only;
    thread->callback = Py_XNewRef(callback);
    thread->cache = Py_XNewRef(cache);
    thread->owner = owner;
    thread->run_only = run_only;
    hook_threads_installed += installing - (old_cache != NULL);
    owner_count(owner, old_owner, 1);
    if (hook_sync() < 0) {
        /* Not installed: leave things as they were. */
        hook_threads_installed -= installing - (old_cache != NULL);
        owner_count(owner, old_owner, -1);
        Py_XSETREF(thread->callback, old_callback);
        Py_XSETREF(thread->cache, old_cache);
        thread->owner = old_owner;
        thread->run_only = old_run_only;
        return -1;
    }
    if (!installing) {
        Py_CLEAR(thread->spare_locals);
    }
    /* Released last: either may be the last reference to a finalizer. */
    Py_XDECREF(old_callback);
    Py_XDECREF(old_cache);
    return 0;
}

PyObject *
pyframe_thread_install(PyObject *callback, PyObject *cache, pyframe_owner *owner, int run_only)
{
    /* Owned, for the process: what a thread with nothing installed had, the
     * usual case (a JIT's wrapper going on), not built anew each time. */
    static PyObject *nothing;
    thread_hook *thread = hook_thread;   /* Borrowed. */
    PyObject *previous;                  /* Owned: (callback, cache, run_only). */

    if (thread == NULL
            || (thread->callback == NULL && thread->cache == NULL && !thread->run_only)) {
        if (nothing == NULL && (nothing = PyTuple_Pack(3, Py_None, Py_None, Py_False)) == NULL) {
            return NULL;
        }
        previous = Py_NewRef(nothing);
    }
    else {
        /* PyTuple_Pack, not Py_BuildValue: parsing a format string costs
         * more than the rest of an installation. */
        previous = PyTuple_Pack(3, thread->callback ? thread->callback : Py_None,
                                thread->cache ? thread->cache : Py_None,
                                thread->run_only ? Py_True : Py_False);
    }
    if (previous == NULL) {
        return NULL;
    }
    if (pyframe_thread_replace(callback, cache, owner, run_only) < 0) {
        Py_DECREF(previous);
        return NULL;
    }
    return previous;
}

/* on_drop calls from the cache (cache.h) run as the callback's do. */

static void
user_python_enter(void)
{
    if (hook_thread != NULL) {
        hook_user_python_enter(hook_thread, PyThreadState_Get());
    }
}

static void
user_python_leave(void)
{
    if (hook_thread != NULL) {
        hook_user_python_leave(hook_thread, PyThreadState_Get());
    }
}

const cache_user_python_listener hook_user_python = {user_python_enter, user_python_leave};

/* ---- frame.f_locals for a callback ---------------------------------------- */

PyObject *
pyframe_callback_locals(_PyInterpreterFrame *frame)
{
    thread_hook *thread = hook_thread;   /* Borrowed. */
    PyObject *locals;                    /* Owned; handed to the caller. */

    /* Only the first f_locals of a callback is lent: every one is a new
     * dict to the callback, and it may keep some of them. */
    if (thread == NULL || !thread->lending || thread->lent_locals != NULL) {
        return pyframe_build_locals(frame, NULL);
    }
    locals = pyframe_build_locals(frame, &thread->spare_locals);
    thread->lent_locals = Py_XNewRef(locals);
    return locals;
}

/* ---- start-up ---------------------------------------------------------------- */

int
hook_init(_PyFrameEvalFunction function, const pyframe_layer *from_cython)
{
    pyframe_layer previous = hook_layer;

    ours = function;
    /* Kept for the process: frames may run through the hook while the
     * interpreter tears the Cython module down. */
    hook_layer = *from_cython;
    Py_INCREF(hook_layer.frame_type);
    Py_INCREF(hook_layer.skip);
    Py_INCREF(hook_layer.skip_recursive);
    Py_INCREF(hook_layer.run_only);
    Py_INCREF(hook_layer.run_only_recursive);
    Py_INCREF(hook_layer.fast_guard_type);
    Py_XDECREF(previous.frame_type);
    Py_XDECREF(previous.skip);
    Py_XDECREF(previous.skip_recursive);
    Py_XDECREF(previous.run_only);
    Py_XDECREF(previous.run_only_recursive);
    Py_XDECREF(previous.fast_guard_type);
    return 0;
}
