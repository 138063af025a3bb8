/* eval_frame.c: the PEP 523 hook, per-thread callbacks, per-code decisions.
 *
 * pyframe_eval_frame is installed as the interpreter's frame evaluation
 * function while at least one thread has a callback.  For each new frame of
 * such a thread it asks the Cython dispatcher (which calls the user's
 * callback) what to do, then runs the frame with the evaluator that was
 * installed before pyframe (CPython's own, or a debugger's, or Dynamo's), or
 * clears and pops it when the callback failed.  Decisions that outlive one
 * call (SKIP) live on the code object, in code-extra storage.
 */
#include "compat.h"
#include "pyframe.h"

/* ---- per-thread state --------------------------------------------------- */

typedef struct {
    PyObject *callback;   /* Owned; NULL while this thread has none. */
    int paused;           /* > 0: frames run without asking the callback (inside
                             the callback itself, or under SKIP_RECURSIVE). */
} thread_hook;

/* Borrowed from a capsule in the thread's state dict, which frees it (and
 * drops the callback) when the thread's state is cleared at thread exit. */
static _Thread_local thread_hook *this_thread;

#define THREAD_CAPSULE_NAME "pyframe._cframe.thread_hook"

static Py_ssize_t threads_with_callback;

/* ---- the hook's installation -------------------------------------------- */

static _PyFrameEvalFunction previous_eval = _PyEval_EvalFrameDefault;
static pyframe_dispatch_fn dispatch;
static PyObject *pyframe_eval_frame(PyThreadState *, _PyInterpreterFrame *, int);

/* Installs the hook while some thread has a callback and removes it when none
 * has.  When another PEP 523 function was installed on top of ours, we leave
 * it in place; ours stays in its chain as a pass-through. */
static void
sync_hook(void)
{
    PyInterpreterState *interp = PyInterpreterState_Get();
    _PyFrameEvalFunction current = _PyInterpreterState_GetEvalFrameFunc(interp);
    if (threads_with_callback > 0 && current != pyframe_eval_frame) {
        previous_eval = current;
        _PyInterpreterState_SetEvalFrameFunc(interp, pyframe_eval_frame);
    }
    else if (threads_with_callback == 0 && current == pyframe_eval_frame) {
        _PyInterpreterState_SetEvalFrameFunc(interp, previous_eval);
    }
}

int
pyframe_hook_installed(void)
{
    PyInterpreterState *interp = PyInterpreterState_Get();
    return _PyInterpreterState_GetEvalFrameFunc(interp) == pyframe_eval_frame;
}

static void
thread_hook_free(PyObject *capsule)
{
    thread_hook *thread = PyCapsule_GetPointer(capsule, THREAD_CAPSULE_NAME);
    if (thread == NULL) {
        PyErr_WriteUnraisable(capsule);
        return;
    }
    if (this_thread == thread) {
        this_thread = NULL;
    }
    if (thread->callback != NULL) {
        threads_with_callback--;
        Py_CLEAR(thread->callback);
        sync_hook();
    }
    PyMem_RawFree(thread);
}

static thread_hook *
thread_hook_get_or_create(void)
{
    thread_hook *thread = NULL;   /* Owned until the capsule owns it. */
    PyObject *capsule = NULL;     /* Owned. */
    PyObject *dict;               /* Borrowed. */

    if (this_thread != NULL) {
        return this_thread;
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
    this_thread = thread;   /* from here the capsule frees it */
    thread = NULL;
    if (PyDict_SetItemString(dict, THREAD_CAPSULE_NAME, capsule) < 0) {
        goto error;
    }
    Py_DECREF(capsule);
    return this_thread;

error:
    Py_XDECREF(capsule);
    PyMem_RawFree(thread);
    return NULL;
}

PyObject *
pyframe_thread_get_callback(void)
{
    return this_thread != NULL ? this_thread->callback : NULL;
}

PyObject *
pyframe_thread_set_callback(PyObject *callback)
{
    thread_hook *thread = this_thread;   /* Borrowed. */
    PyObject *previous;                  /* Owned; handed to the caller. */

    if (thread == NULL && callback == NULL) {
        Py_RETURN_NONE;
    }
    if (thread == NULL && (thread = thread_hook_get_or_create()) == NULL) {
        return NULL;
    }
    previous = thread->callback;
    thread->callback = Py_XNewRef(callback);
    threads_with_callback += (callback != NULL) - (previous != NULL);
    sync_hook();
    return previous != NULL ? previous : Py_NewRef(Py_None);
}

/* ---- per-code state ------------------------------------------------------- */

typedef struct {
    uint64_t skip_epoch;   /* SKIP holds while this equals reset_epoch. */
} code_state;

static Py_ssize_t code_extra_index = -1;
/* pyframe.reset() forgets every decision at once by moving to a new epoch. */
static uint64_t reset_epoch = 1;

static void
code_state_free(void *state)
{
    PyMem_RawFree(state);
}

/* Borrowed; NULL (no exception) when the code has no state yet. */
static inline code_state *
code_state_peek(PyCodeObject *code)
{
    void *state = NULL;
    if (PyUnstable_Code_GetExtra((PyObject *)code, code_extra_index, &state) < 0) {
        PyErr_Clear();
        return NULL;
    }
    return state;
}

static code_state *
code_state_get_or_create(PyCodeObject *code)
{
    code_state *state = code_state_peek(code);
    if (state != NULL) {
        return state;
    }
    state = PyMem_RawCalloc(1, sizeof(code_state));
    if (state == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    if (PyUnstable_Code_SetExtra((PyObject *)code, code_extra_index, state) < 0) {
        PyMem_RawFree(state);
        return NULL;
    }
    return state;
}

void
pyframe_reset_code(PyObject *code)
{
    code_state *state = code_state_peek((PyCodeObject *)code);
    if (state != NULL) {
        state->skip_epoch = 0;
    }
}

void
pyframe_reset_all(void)
{
    reset_epoch++;
}

/* ---- abandoning a frame that will not run ------------------------------- */

/* The hook owns the frame it is handed: when it returns NULL without running
 * it, it must release the frame's references and pop it off the thread's
 * data stack, as the evaluator would have on return. */
static void
frame_clear_and_pop(PyThreadState *tstate, _PyInterpreterFrame *frame)
{
#if PYFRAME_PY313
    _PyEval_FrameClearAndPop(tstate, frame);
#else
    PyCodeObject *code = frame->f_code;   /* Owned by the frame until the end. */
    PyObject **base = (PyObject **)frame;
    _PyStackChunk *chunk = tstate->datastack_chunk;

    assert(frame->owner == FRAME_OWNED_BY_THREAD);
    assert(frame->frame_obj == NULL);     /* it never ran: no one made one */
    assert(base + code->co_framesize == tstate->datastack_top);
    /* Release references while the frame still holds its place on the data
     * stack: finalizers they run push their frames above it. */
    for (int i = 0; i < frame->stacktop; i++) {
        Py_CLEAR(frame->localsplus[i]);
    }
    Py_CLEAR(frame->f_locals);
    Py_CLEAR(frame->f_funcobj);
    Py_DECREF(code);
    /* Pop.  A frame that starts a chunk takes the chunk with it; the chunk
     * below becomes current again, its `top` saying where its frames end. */
    if (base == &chunk->data[0]) {
        _PyStackChunk *below = chunk->previous;
        PyObjectArenaAllocator arena;
        assert(below != NULL);
        tstate->datastack_chunk = below;
        tstate->datastack_top = &below->data[below->top];
        tstate->datastack_limit = (PyObject **)((char *)below + below->size);
        PyObject_GetArenaAllocator(&arena);
        arena.free(arena.ctx, chunk, chunk->size);
    }
    else {
        tstate->datastack_top = base;
    }
#endif
}

/* ---- the hook --------------------------------------------------------------- */

static PyObject *
pyframe_eval_frame(PyThreadState *tstate, _PyInterpreterFrame *frame, int throwflag)
{
    thread_hook *thread = this_thread;   /* Borrowed. */
    PyObject *callback;                  /* Owned during the call. */
    PyObject *result;
    code_state *state;
    int action;

    /* Resumptions (generator-owned frames), throws into generators, frames
     * run inside trace/profile/monitoring callbacks, and frames of threads
     * without a callback run as they would without pyframe. */
    if (thread == NULL || thread->callback == NULL || thread->paused > 0
            || throwflag || frame->owner != FRAME_OWNED_BY_THREAD
            || tstate->tracing > 0 || !compat_frame_not_started(frame)) {
        return previous_eval(tstate, frame, throwflag);
    }
    state = code_state_peek(compat_frame_code(frame));
    if (state != NULL && state->skip_epoch == reset_epoch) {
        return previous_eval(tstate, frame, 0);
    }

    callback = Py_NewRef(thread->callback);
    thread->paused++;
    action = dispatch(callback, frame, compat_current_frame(tstate), tstate);
    thread->paused--;
    Py_DECREF(callback);

    switch (action) {
    case PYFRAME_RUN:
        return previous_eval(tstate, frame, 0);
    case PYFRAME_SKIP:
        state = code_state_get_or_create(compat_frame_code(frame));
        if (state == NULL) {
            break;
        }
        state->skip_epoch = reset_epoch;
        return previous_eval(tstate, frame, 0);
    case PYFRAME_SKIP_RECURSIVE:
        thread->paused++;
        result = previous_eval(tstate, frame, 0);
        thread->paused--;
        return result;
    default:
        assert(action == PYFRAME_ERROR && PyErr_Occurred());
        break;
    }
    frame_clear_and_pop(tstate, frame);
    return NULL;
}

int
pyframe_hook_init(pyframe_dispatch_fn dispatcher)
{
    dispatch = dispatcher;
    if (code_extra_index < 0) {
        code_extra_index = PyUnstable_Eval_RequestCodeExtraIndex(code_state_free);
        if (code_extra_index < 0) {
            PyErr_SetString(PyExc_RuntimeError,
                            "pyframe: CPython has no code-extra index left");
            return -1;
        }
    }
    return 0;
}

/* ---- what the callback's Frame reads ------------------------------------ */

PyObject *
pyframe_frame_code(_PyInterpreterFrame *frame)
{
    return (PyObject *)compat_frame_code(frame);
}

PyObject *
pyframe_frame_globals(_PyInterpreterFrame *frame)
{
    return frame->f_globals;
}

PyObject *
pyframe_frame_builtins(_PyInterpreterFrame *frame)
{
    return frame->f_builtins;
}

int
pyframe_frame_lasti(_PyInterpreterFrame *frame)
{
    return compat_frame_lasti(frame);
}

/* The frame object of `caller` (the frame that was running when the hook
 * fired), found by walking back from the thread's current frame, since
 * CPython makes frame objects only through calls it exports for that. */
PyObject *
pyframe_frame_back(PyThreadState *tstate, _PyInterpreterFrame *caller)
{
    _PyInterpreterFrame *target = caller ? _PyFrame_GetFirstComplete(caller) : NULL;
    PyFrameObject *walk;   /* Owned. */

    if (target == NULL) {
        Py_RETURN_NONE;
    }
    if (target->frame_obj != NULL) {
        return Py_NewRef(target->frame_obj);
    }
    walk = PyThreadState_GetFrame(tstate);
    while (walk != NULL && walk->f_frame != target) {
        PyFrameObject *back = PyFrame_GetBack(walk);
        Py_DECREF(walk);
        walk = back;
    }
    return walk != NULL ? (PyObject *)walk : Py_NewRef(Py_None);
}
