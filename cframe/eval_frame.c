/* eval_frame.c: the PEP 523 hook, per-thread callbacks, per-code decisions.
 *
 * pyframe_eval_frame is installed as the interpreter's frame evaluation
 * function while at least one thread has a callback.  For each new frame of
 * such a thread it hands the frame to the user's callback in a pyframe.Frame
 * (a type the Cython layer owns) and maps the result to what to do, then runs
 * the frame with the evaluator that was
 * installed before pyframe (CPython's own, or a debugger's, or Dynamo's), or
 * clears and pops it when the callback failed.  Decisions and cached entries
 * that outlive one call live on the code object, per owner (cache.c).
 */
#include "cache.h"
#include "specialize.h"

/* ---- per-thread state --------------------------------------------------- */

typedef struct {
    PyObject *callback;   /* Owned; NULL while this thread has none (or runs
                             cached entries only). */
    PyObject *cache;      /* Owned pyframe.Cache; NULL: nothing is installed. */
    pyframe_owner *owner; /* Borrowed from `cache`: whose decisions and entries
                             this thread's frames use. */
    int run_only;         /* installed to run cached entries only */
    int run_only_depth;   /* > 0: inside a RUN_ONLY_RECURSIVE frame */
    int paused;           /* > 0: frames run without asking the callback (inside
                             the callback itself, or under SKIP_RECURSIVE). */
    int probing;          /* sync_hook() is asking whether frames reach ours */
    int probe_reached;    /* ... and one did */
    /* Building a new dict for every frame.f_locals costs more than the rest
     * of an observing callback's trip through pyframe, so the dict a
     * callback's first f_locals got, if the callback dropped it, is kept and
     * refilled for the next one (pyframe_locals_recycle). */
    int lending;              /* the callback runs: f_locals may lend the spare */
    PyObject *lent_locals;    /* Owned or NULL: the dict lent to the running callback */
    PyObject *spare_locals;   /* Owned or NULL: a dict with its values dropped */
    PyObject *spare_view;     /* Owned or NULL: a pyframe.Frame no callback kept */
    /* The last code whose state this thread looked up: recursion and loops
     * call the same code again, and PyUnstable_Code_GetExtra costs as much as
     * the rest of a SKIP.  Valid while cache_states_freed == last_freed. */
    PyCodeObject *last_code;  /* Borrowed */
    code_state *last_state;   /* Borrowed: last_code's */
    uint64_t last_freed;
} thread_hook;

/* Thread-locals read on every frame: the initial-exec model makes each read
 * one instruction instead of a call to __tls_get_addr (the few bytes come
 * from the static TLS space glibc keeps for modules loaded later). */
#define PYFRAME_THREAD_LOCAL _Thread_local __attribute__((tls_model("initial-exec")))

/* Borrowed from a capsule in the thread's state dict, which frees it (and
 * drops the callback) when the thread's state is cleared at thread exit. */
static PYFRAME_THREAD_LOCAL thread_hook *this_thread;

#define THREAD_CAPSULE_NAME "pyframe._cframe.thread_hook"

/* Threads with something installed (a callback, or run-only mode). */
static Py_ssize_t threads_with_callback;

/* ---- the hook's installation -------------------------------------------- */

static _PyFrameEvalFunction previous_eval = _PyEval_EvalFrameDefault;
/* What runs a frame of skipped code: previous_eval, or in the specialization
 * mode run_skipped() (a pointer, so that the SKIP path tests nothing). */
static _PyFrameEvalFunction skipped_eval = _PyEval_EvalFrameDefault;
static pyframe_layer layer;   /* Owned references; from pyframe_hook_init(). */
static PyObject *no_args;     /* Owned: (), for making a Frame. */
static PyObject *pyframe_eval_frame(PyThreadState *, _PyInterpreterFrame *, int);

/* 1 from the moment ours is installed until we put the previous function
 * back: another PEP 523 function installed over ours meanwhile may still run
 * frames with ours (most do, Dynamo included), so ours is in its chain. */
static int in_chain;

/* 1 when a new frame evaluated now reaches pyframe_eval_frame (through the
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
    previous_eval = current;
    pyframe_hook_skip_path_changed();
    _PyInterpreterState_SetEvalFrameFunc(interp, pyframe_eval_frame);
    in_chain = 1;
}

/* Installs the hook while some thread has a callback and removes it when none
 * has.  When another PEP 523 function was installed on top of ours, we leave
 * it in place; ours stays in its chain as a pass-through.  -1 with an
 * exception only when a callback is being installed. */
static int
sync_hook(void)
{
    PyInterpreterState *interp = PyInterpreterState_Get();
    _PyFrameEvalFunction current;

    /* Stepped aside for one thread's skipped code: installing or removing
     * anything ends that (the hook steps aside again where it still may). */
    pyframe_hook_step_in();
    current = _PyInterpreterState_GetEvalFrameFunc(interp);
    if (threads_with_callback > 0 && current != pyframe_eval_frame) {
        if (in_chain) {
            /* Installing ours over a function that calls ours would loop. */
            int reached = frames_reach_us(this_thread);
            if (reached != 0) {
                return reached;
            }
        }
        install_over(interp, current);
    }
    else if (threads_with_callback == 0 && current == pyframe_eval_frame) {
        _PyInterpreterState_SetEvalFrameFunc(interp, previous_eval);
        in_chain = 0;
    }
    return 0;
}

/* ---- stepping aside for skipped code (specialization mode) ------------- */

int pyframe_hook_aside;

void
pyframe_hook_step_aside(void)
{
    thread_hook *thread = this_thread;   /* Borrowed. */
    PyInterpreterState *interp;

    /* Frames of every other thread with a callback must keep reaching the
     * hook, and a function installed before ours must keep running them. */
    if (pyframe_hook_aside || threads_with_callback != 1 || thread == NULL
            || thread->cache == NULL || previous_eval != _PyEval_EvalFrameDefault
            || !pyframe_specialize_may_step_aside()) {
        return;
    }
    interp = PyInterpreterState_Get();
    if (_PyInterpreterState_GetEvalFrameFunc(interp) != pyframe_eval_frame) {
        return;   /* another function was installed over ours */
    }
    _PyInterpreterState_SetEvalFrameFunc(interp, _PyEval_EvalFrameDefault);
    pyframe_hook_aside = 1;
}

void
pyframe_hook_step_in(void)
{
    PyInterpreterState *interp;
    _PyFrameEvalFunction current;

    if (!pyframe_hook_aside) {
        return;
    }
    pyframe_hook_aside = 0;
    interp = PyInterpreterState_Get();
    current = _PyInterpreterState_GetEvalFrameFunc(interp);
    /* CPython's, as ours left it; or one installed meanwhile, which chains
     * to CPython's: ours goes over it and runs frames with it. */
    if (current != pyframe_eval_frame) {
        install_over(interp, current);
    }
}

pyframe_owner *
pyframe_hook_owner(void)
{
    thread_hook *thread = this_thread;   /* Borrowed. */
    return thread != NULL && thread->cache != NULL ? thread->owner : NULL;
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
    if (thread->cache != NULL) {
        threads_with_callback--;
        Py_CLEAR(thread->callback);
        Py_CLEAR(thread->cache);
        thread->owner = NULL;
        (void)sync_hook();   /* removing: cannot fail */
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
pyframe_thread_install(PyObject *callback, PyObject *cache, pyframe_owner *owner, int run_only)
{
    thread_hook *thread = this_thread;   /* Borrowed. */
    PyObject *previous = NULL;           /* Owned: (callback, cache, run_only). */
    PyObject *old_callback, *old_cache;  /* Owned. */
    pyframe_owner *old_owner;
    int old_run_only, installing = cache != NULL;

    assert(cache != NULL || (callback == NULL && owner == NULL));
    if (thread == NULL && !installing) {
        return PyTuple_Pack(3, Py_None, Py_None, Py_False);
    }
    if (thread == NULL && (thread = thread_hook_get_or_create()) == NULL) {
        return NULL;
    }
    /* PyTuple_Pack, not Py_BuildValue: this runs twice per call of a JIT's
     * compiled code (pyframe.Switch), and parsing a format string costs more
     * than the rest of it. */
    previous = PyTuple_Pack(3, thread->callback ? thread->callback : Py_None,
                            thread->cache ? thread->cache : Py_None,
                            thread->run_only ? Py_True : Py_False);
    if (previous == NULL) {
        return NULL;
    }
    old_callback = thread->callback;
    old_cache = thread->cache;
    old_owner = thread->owner;
    old_run_only = thread->run_only;
    thread->callback = Py_XNewRef(callback);
    thread->cache = Py_XNewRef(cache);
    thread->owner = owner;
    thread->run_only = run_only;
    threads_with_callback += installing - (old_cache != NULL);
    if (sync_hook() < 0) {
        /* Not installed: leave things as they were. */
        threads_with_callback -= installing - (old_cache != NULL);
        Py_XSETREF(thread->callback, old_callback);
        Py_XSETREF(thread->cache, old_cache);
        thread->owner = old_owner;
        thread->run_only = old_run_only;
        Py_DECREF(previous);
        return NULL;
    }
    if (!installing) {
        Py_CLEAR(thread->spare_locals);
    }
    if (owner != old_owner) {
        pyframe_specialize_decisions_changed();
    }
    /* Released last: either may be the last reference to a finalizer. */
    Py_XDECREF(old_callback);
    Py_XDECREF(old_cache);
    return previous;
}

PyObject *
pyframe_callback_locals(_PyInterpreterFrame *frame)
{
    thread_hook *thread = this_thread;   /* Borrowed. */
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

/* Keeps `locals` (stolen), a dict pyframe built, as the thread's spare if
 * nothing else holds it; drops it otherwise. */
static void
locals_take_back(thread_hook *thread, PyObject *locals)
{
    /* Recycling may run a finalizer, which may fill the spare slot.  A
     * thread whose callback was removed keeps no spare. */
    if (thread->cache != NULL && thread->spare_locals == NULL
            && pyframe_locals_recycle(locals) && thread->spare_locals == NULL) {
        thread->spare_locals = locals;
        return;
    }
    Py_DECREF(locals);
}

/* ---- releasing and popping frames ----------------------------------------- */

/* A new data-stack chunk for a frame of `size` words, sized by CPython's
 * rule (16 KiB, doubled until the frame fits).  NULL with MemoryError. */
static _PyStackChunk *
chunk_new(int size)
{
    PyObjectArenaAllocator arena;
    size_t bytes = 16 * 1024;   /* CPython's smallest chunk */
    _PyStackChunk *fresh;

    while (bytes < offsetof(_PyStackChunk, data) + (size_t)size * sizeof(PyObject *)) {
        bytes *= 2;
    }
    PyObject_GetArenaAllocator(&arena);
    fresh = arena.alloc(arena.ctx, bytes);
    if (fresh == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    fresh->size = bytes;
    fresh->top = 0;
    fresh->previous = NULL;
    return fresh;
}

/* Makes `chunk` the thread's current one, with its frames starting at
 * `top`; the chunk below records where its own frames end (`below_top`). */
static void
chunk_enter(PyThreadState *tstate, _PyStackChunk *chunk, PyObject **below_top)
{
    _PyStackChunk *below = chunk->previous;
    if (below != NULL) {
        below->top = below_top - &below->data[0];
    }
    tstate->datastack_chunk = chunk;
    tstate->datastack_limit = (PyObject **)((char *)chunk + chunk->size);
    tstate->datastack_top = &chunk->data[0];
}

#if PYFRAME_CALLER_POPS_FRAME
/* A frame that ran keeps living in its frame object when something (a
 * traceback, sys._getframe()) still holds that object as the frame goes:
 * the frame's header and slots move into the object, which owns them from
 * then on, and the object links to its caller's frame object since the
 * interpreter frame below will be gone.  This is CPython 3.11's rule for a
 * returning frame (frameobject.c), which exports no function for it; only
 * pyframe's own shadow frames (below) need it. */
static void
frame_give_to_object(PyFrameObject *owner, _PyInterpreterFrame *frame)
{
    /* Asked while frame->previous still names the running caller. */
    PyFrameObject *back = PyFrame_GetBack(owner);   /* Owned, or NULL. */
    _PyInterpreterFrame *kept = (_PyInterpreterFrame *)owner->_f_frame_data;

    memcpy(kept, frame, (char *)&frame->localsplus[frame->stacktop] - (char *)frame);
    kept->owner = FRAME_OWNED_BY_FRAME_OBJECT;
    kept->previous = NULL;
    owner->f_frame = kept;
    if (owner->f_back == NULL) {
        owner->f_back = back;
    }
    else {
        Py_XDECREF(back);
    }
    if (!PyObject_GC_IsTracked((PyObject *)owner)) {
        PyObject_GC_Track(owner);
    }
}
#endif

#if !PYFRAME_PY313
/* Releases the references of `frame`, the top frame of the thread's data
 * stack, and pops it, as CPython's evaluator does for a returning frame:
 * used for frames the hook will not run on 3.12, which exports nothing that
 * does it, and for pyframe's shadow frames on 3.11 once they ran. */
static void
frame_release_and_pop(PyThreadState *tstate, _PyInterpreterFrame *frame)
{
    PyCodeObject *code = compat_frame_code(frame);   /* Owned by the frame until the end. */
    PyObject **base = (PyObject **)frame;
    _PyStackChunk *chunk = tstate->datastack_chunk;
    int released = 0;

    assert(frame->owner == FRAME_OWNED_BY_THREAD);
    assert(base + compat_code_framesize(code) == tstate->datastack_top);
    if (frame->frame_obj != NULL) {
#if PYFRAME_CALLER_POPS_FRAME
        PyFrameObject *owner = frame->frame_obj;   /* Owned (was the frame's). */
        frame->frame_obj = NULL;
        if (Py_REFCNT(owner) > 1) {
            frame_give_to_object(owner, frame);    /* it takes every reference */
            released = 1;
        }
        Py_DECREF(owner);
#else
        assert(!"a frame that never ran has no frame object");
#endif
    }
    /* Release references while the frame still holds its place on the data
     * stack: finalizers they run push their frames above it. */
    for (int i = 0; !released && i < frame->stacktop; i++) {
        Py_XDECREF(compat_frame_slot_take(frame, i));
    }
    if (!released) {
        Py_CLEAR(frame->f_locals);
        Py_XDECREF(compat_frame_swap_function(frame, NULL));
        Py_DECREF(code);
    }
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
}
#endif

/* A frame the hook was handed and does not run (the callback failed, say).
 * From 3.12 the hook owns it and must release and pop it, as the evaluator
 * would have on return; on 3.11 the caller that pushed it does that once
 * the hook returns, so it is left as it is. */
static void
frame_clear_and_pop(PyThreadState *tstate, _PyInterpreterFrame *frame)
{
#if PYFRAME_CALLER_POPS_FRAME
    (void)tstate;
    (void)frame;
#elif PYFRAME_PY313
    _PyEval_FrameClearAndPop(tstate, frame);
#else
    frame_release_and_pop(tstate, frame);
#endif
}

/* ---- running replacement code in the frame ------------------------------- */

#if PYFRAME_CALLER_POPS_FRAME
/* 3.11: a replacement that does not fit where the frame is runs in a shadow
 * frame at the start of a new chunk.  The frame cannot move there the 3.12
 * way: its caller pops it at its address once the hook returns.  The shadow
 * takes the frame's arguments; the frame keeps references of its own to
 * what its caller releases, and empty slots.  pyframe pops the shadow
 * itself (frame_release_and_pop) once it ran.  NULL with MemoryError,
 * frame intact. */
static _PyInterpreterFrame *
shadow_frame_push(PyThreadState *tstate, _PyInterpreterFrame *frame, int size)
{
    int nlocalsplus = compat_frame_code(frame)->co_nlocalsplus;
    _PyStackChunk *fresh = chunk_new(size);
    _PyInterpreterFrame *shadow;

    if (fresh == NULL) {
        return NULL;
    }
    shadow = (_PyInterpreterFrame *)&fresh->data[0];
    memcpy(shadow, frame, offsetof(_PyInterpreterFrame, localsplus)
                          + nlocalsplus * sizeof(PyObject *));
    Py_INCREF(compat_frame_code(frame));
    Py_INCREF(compat_frame_function(frame));
    Py_XINCREF(frame->f_locals);
    for (int i = 0; i < nlocalsplus; i++) {
        compat_frame_slot_forget(frame, i);   /* the shadow has them */
    }
    fresh->previous = tstate->datastack_chunk;
    chunk_enter(tstate, fresh, tstate->datastack_top);
    return shadow;
}
#else
/* 3.12+: the frame's header and locals move to the start of a new chunk,
 * following CPython's chunk rules: a frame that starts a chunk frees it when
 * popped, and `top` of the chunk below records where its frames end.  NULL
 * with MemoryError, frame intact. */
static _PyInterpreterFrame *
frame_move_to_new_chunk(PyThreadState *tstate, _PyInterpreterFrame *frame, int size)
{
    PyObject **base = (PyObject **)frame;
    _PyStackChunk *chunk = tstate->datastack_chunk;
    size_t used = offsetof(_PyInterpreterFrame, localsplus)
                  + compat_frame_code(frame)->co_nlocalsplus * sizeof(PyObject *);
    _PyStackChunk *fresh = chunk_new(size);

    if (fresh == NULL) {
        return NULL;
    }
    memcpy(&fresh->data[0], frame, used);
    if (base == &chunk->data[0]) {
        /* The frame had this chunk to itself (never so for the root chunk,
         * whose frames start at data[1]): the new one replaces it. */
        PyObjectArenaAllocator arena;
        fresh->previous = chunk->previous;
        PyObject_GetArenaAllocator(&arena);
        arena.free(arena.ctx, chunk, chunk->size);
        tstate->datastack_chunk = fresh;
        tstate->datastack_limit = (PyObject **)((char *)fresh + fresh->size);
        tstate->datastack_top = &fresh->data[0];
    }
    else {
        fresh->previous = chunk;
        chunk_enter(tstate, fresh, base);
    }
    return (_PyInterpreterFrame *)&fresh->data[0];
}
#endif

/* Makes room for `size` words at `frame`, the top of the data stack: in
 * place when the current chunk has room, else in a new chunk (above). */
static inline _PyInterpreterFrame *
frame_make_room(PyThreadState *tstate, _PyInterpreterFrame *frame, int size)
{
    if ((PyObject **)frame + size < tstate->datastack_limit) {
        return frame;
    }
#if PYFRAME_CALLER_POPS_FRAME
    return shadow_frame_push(tstate, frame, size);
#else
    return frame_move_to_new_chunk(tstate, frame, size);
#endif
}

/* Runs `replacement` (a checked code object; stolen) in place of `frame`.
 * `keeps_function`: pyframe_keeps_function() of the pair.  `fresh`: the
 * frame holds nothing but its arguments (no callback had it to call
 * Frame.set_local on), as for cached replacements.  Inlined: on the cached
 * path it is most of what pyframe adds to a call. */
static Py_ALWAYS_INLINE inline PyObject *
run_replacement(PyThreadState *tstate, _PyInterpreterFrame *frame, PyObject *replacement,
                int keeps_function, int fresh)
{
    PyCodeObject *code = (PyCodeObject *)replacement;   /* Owned until the frame has it. */
    PyObject *func = NULL;        /* Owned until the frame has it; NULL: keep the frame's. */
    PyObject *old_func = NULL;    /* Owned (was the frame's). */
    PyObject *released = NULL;    /* Owned. */
    PyCodeObject *old_code;       /* Owned (was the frame's). */
    _PyInterpreterFrame *target;  /* Borrowed: the frame, maybe moved. */

    if (!keeps_function && (func = pyframe_replacement_function(frame, code)) == NULL) {
        goto error;
    }
    if (!fresh && pyframe_take_bound_locals(frame, &released) < 0) {
        goto error;
    }
#ifndef NDEBUG
    for (int i = pyframe_argument_slots(code); fresh && i < compat_frame_code(frame)->co_nlocalsplus; i++) {
        assert(compat_frame_slot(frame, i) == NULL);
    }
#endif
    target = frame_make_room(tstate, frame, compat_code_framesize(code));
    if (target == NULL) {
        goto error;
    }
    /* From here nothing fails and no Python runs until the frame and the
     * data stack agree again. */
    pyframe_unbind_nonarguments(target, code);
    old_code = compat_frame_swap_code(target, code);
    if (func != NULL) {
        old_func = compat_frame_swap_function(target, func);
    }
    compat_frame_set_stack_empty(target, code->co_nlocalsplus);
    tstate->datastack_top = (PyObject **)target + compat_code_framesize(code);
    /* Releasing these may run finalizers: they push frames above ours. */
    Py_DECREF(old_code);
    Py_XDECREF(old_func);
    Py_XDECREF(released);
#if PYFRAME_CALLER_POPS_FRAME
    if (target != frame) {
        PyObject *result = previous_eval(tstate, target, 0);
        frame_release_and_pop(tstate, target);   /* the shadow is ours to pop */
        return result;
    }
#endif
    return previous_eval(tstate, target, 0);

error:
    Py_DECREF(replacement);
    Py_XDECREF(func);
    Py_XDECREF(released);
    frame_clear_and_pop(tstate, frame);
    return NULL;
}

/* Calls into the user's Python (the callback, a guard) go between these:
 * the thread's frames are not intercepted meanwhile, and they run as trace
 * functions do, unseen by tracers, profilers, sys.monitoring and debuggers,
 * so tools stacked on pyframe see the program as it would run alone.  With
 * recursion headroom, so that the program reaches the recursion limit in its
 * own frames, not in the callback (compat.h). */
static inline void
user_python_enter(thread_hook *thread, PyThreadState *tstate)
{
    thread->paused++;
    PyThreadState_EnterTracing(tstate);
    compat_recursion_headroom(tstate, PYFRAME_USER_PYTHON_HEADROOM);
}

static inline void
user_python_leave(thread_hook *thread, PyThreadState *tstate)
{
    compat_recursion_headroom(tstate, -PYFRAME_USER_PYTHON_HEADROOM);
    PyThreadState_LeaveTracing(tstate);
    thread->paused--;
}

void
pyframe_user_python_enter(void)
{
    if (this_thread != NULL) {
        user_python_enter(this_thread, PyThreadState_Get());
    }
}

void
pyframe_user_python_leave(void)
{
    if (this_thread != NULL) {
        user_python_leave(this_thread, PyThreadState_Get());
    }
}

/* Looks for an entry of `owner` whose guard accepts the frame.  1: found,
 * *code set (new reference; the frame's own code for an entry that runs the
 * original) and *keeps_function; 0: none; -1: a guard raised. */
static int
cache_lookup(PyThreadState *tstate, thread_hook *thread, _PyInterpreterFrame *frame,
             code_state *state, pyframe_owner *owner, PyObject **code, int *keeps_function)
{
    PyObject *locals = NULL;   /* Owned; built once, for the first guard. */
    int found = 0;
    int rescans = 0;

    for (int i = 0; i < state->count; i++) {
        cache_entry *entry = &state->entries[i];
        if (entry->owner != owner) {
            continue;   /* another client's: never run it */
        }
        if (entry->guard != NULL) {
            PyObject *guard = Py_NewRef(entry->guard);   /* Owned: the call may drop the entry. */
            uint64_t version = state->version;
            int verdict;
            if (locals == NULL
                    && (locals = pyframe_build_locals(frame, &thread->spare_locals)) == NULL) {
                Py_DECREF(guard);
                found = -1;
                break;
            }
            user_python_enter(thread, tstate);
            PyObject *result = PyObject_CallOneArg(guard, locals);
            verdict = result != NULL ? PyObject_IsTrue(result) : -1;
            user_python_leave(thread, tstate);
            Py_XDECREF(result);
            Py_DECREF(guard);
            if (verdict < 0) {
                found = -1;
                break;
            }
            if (state->version != version) {
                /* The cache changed during the call: the guard itself, or
                 * another thread while the guard let go of the GIL (a hit
                 * there moves an entry to the front).  Entries may have moved
                 * under `i`: scan again from the start, a few times, rather
                 * than ask the callback for an entry that may be cached. */
                if (++rescans > 4) {
                    break;
                }
                i = -1;
                continue;
            }
            if (!verdict) {
                continue;
            }
        }
        state->entries[i].hits++;
        *code = Py_NewRef(state->entries[i].runs_original ? (PyObject *)state->code
                                                          : state->entries[i].code);
        *keeps_function = state->entries[i].keeps_function;
        if (i > 0) {
            cache_move_to_front(state, i);
        }
        found = 1;
        break;
    }
    if (locals != NULL && found >= 0) {
        locals_take_back(thread, locals);
    }
    else {
        Py_XDECREF(locals);
    }
    return found;
}

/* ---- asking the callback ------------------------------------------------------ */

static inline pyframe_frame_ref *
frame_ref_of(PyObject *view)
{
    return (pyframe_frame_ref *)((char *)view + layer.frame_ref_offset);
}

/* Hands `frame` to `callback` in a pyframe.Frame and maps the result to an
 * action (see pyframe.h).  Done here rather than in Cython: on an observing
 * callback's path every instruction counts, and this is the whole of it. */
static int
ask_callback(thread_hook *thread, PyThreadState *tstate, _PyInterpreterFrame *frame,
             PyObject *callback, PyObject **code, PyObject **guard, PyObject **depends)
{
    PyObject *view = thread->spare_view;   /* Owned. */
    PyObject *result;                       /* Owned. */
    PyObject *lent;                         /* Owned. */
    pyframe_frame_ref *ref;
    int action;

    if (view != NULL) {
        thread->spare_view = NULL;
    }
    else if ((view = layer.frame_type->tp_new(layer.frame_type, no_args, NULL)) == NULL) {
        return PYFRAME_ERROR;
    }
    ref = frame_ref_of(view);
    *ref = (pyframe_frame_ref){frame, compat_current_frame(tstate), tstate};
    thread->lending = 1;
    result = PyObject_CallOneArg(callback, view);
    thread->lending = 0;
    *ref = (pyframe_frame_ref){NULL, NULL, NULL};
    /* A Frame the callback did not keep serves the next callback. */
    if (Py_REFCNT(view) == 1 && thread->spare_view == NULL) {
        thread->spare_view = view;
    }
    else {
        Py_DECREF(view);
    }
    if ((lent = thread->lent_locals) != NULL) {
        thread->lent_locals = NULL;
        if (result != NULL) {
            locals_take_back(thread, lent);
        }
        else {
            Py_DECREF(lent);
        }
    }

    if (result == NULL) {
        return PYFRAME_ERROR;
    }
    if (result == Py_None) {
        action = PYFRAME_RUN;
    }
    else if (result == layer.skip) {
        action = PYFRAME_SKIP;
    }
    else if (result == layer.skip_recursive) {
        action = PYFRAME_SKIP_RECURSIVE;
    }
    else if (result == layer.run_only) {
        action = PYFRAME_RUN_ONLY;
    }
    else if (result == layer.run_only_recursive) {
        action = PYFRAME_RUN_ONLY_RECURSIVE;
    }
    else if (PyCode_Check(result)) {
        *code = Py_NewRef(result);
        action = PYFRAME_REPLACE;
    }
    else {
        action = layer.classify_other(callback, result, code, guard, depends);
    }
    Py_DECREF(result);
    return action;
}

/* ---- the hook --------------------------------------------------------------- */

/* Runs a frame of skipped code in the specialization mode: with pyframe's
 * function stepped aside where it may, so that CPython inlines its calls. */
static PyObject *
run_skipped(PyThreadState *tstate, _PyInterpreterFrame *frame, int throwflag)
{
    PyObject *result;
    pyframe_hook_step_aside();
    result = previous_eval(tstate, frame, throwflag);
    pyframe_hook_step_in();   /* the hook ran this frame: it was in */
    return result;
}

void
pyframe_hook_skip_path_changed(void)
{
    skipped_eval = pyframe_specializing ? run_skipped : previous_eval;
}

/* Runs the frame as it is.  Under `decision` RUN_ONLY_RECURSIVE, what it
 * calls runs cached entries only; under SKIP_RECURSIVE, without callbacks. */
static inline PyObject *
run_as_is(PyThreadState *tstate, _PyInterpreterFrame *frame, thread_hook *thread, int decision)
{
    PyObject *result;
    if (decision == PYFRAME_SKIP_RECURSIVE) {
        thread->paused++;
        result = skipped_eval(tstate, frame, 0);
        thread->paused--;
        return result;
    }
    if (decision == PYFRAME_SKIP) {
        return skipped_eval(tstate, frame, 0);
    }
    if (decision == PYFRAME_RUN_ONLY_RECURSIVE) {
        thread->run_only_depth++;
        result = previous_eval(tstate, frame, 0);
        thread->run_only_depth--;
        return result;
    }
    return previous_eval(tstate, frame, 0);
}

/* Runs `code` (stolen) in place of the frame's code, or the frame as it is
 * when `code` is the frame's own code. */
static inline PyObject *
run_cached(PyThreadState *tstate, _PyInterpreterFrame *frame, thread_hook *thread, int decision,
           PyObject *code, int keeps_function, int fresh)
{
    PyObject *result;
    if (code == (PyObject *)compat_frame_code(frame)) {
        Py_DECREF(code);   /* the frame holds it */
        return run_as_is(tstate, frame, thread, decision);
    }
    if (decision != PYFRAME_RUN_ONLY_RECURSIVE) {
        return run_replacement(tstate, frame, code, keeps_function, fresh);
    }
    thread->run_only_depth++;
    result = run_replacement(tstate, frame, code, keeps_function, fresh);
    thread->run_only_depth--;
    return result;
}

/* A new frame of a thread with something installed: run it, skip it, or run
 * replacement code, as the owner's decisions and entries or the callback
 * decide.  `state` is the code's (cache_state_peek), or NULL. */
static Py_NO_INLINE PyObject *
decide(PyThreadState *tstate, _PyInterpreterFrame *frame, thread_hook *thread,
       code_state *state)
{
    PyObject *cache = Py_NewRef(thread->cache);   /* Owned: keeps `owner` alive. */
    pyframe_owner *owner = thread->owner;          /* Borrowed from `cache`. */
    PyObject *callback;                  /* Owned during the call. */
    PyObject *code = NULL;               /* Owned: replacement code. */
    PyObject *guard = NULL;              /* Owned. */
    PyObject *depends = NULL;            /* Owned. */
    drop_batch batch = DROP_BATCH_INIT;
    int action, keeps_function = 0;
    int decision = PYFRAME_RUN;
    int run_only = thread->run_only || thread->run_only_depth > 0;

    if (state != NULL) {
        decision = cache_decision_of(state, owner->serial);
        if (decision == PYFRAME_SKIP || decision == PYFRAME_SKIP_RECURSIVE) {
            Py_DECREF(cache);
            return run_as_is(tstate, frame, thread, decision);
        }
        run_only |= decision != PYFRAME_RUN;
        if (state->count > 0) {
            int found = cache_lookup(tstate, thread, frame, state, owner, &code, &keeps_function);
            if (found < 0) {
                goto error;
            }
            if (found) {
                Py_DECREF(cache);
                return run_cached(tstate, frame, thread, decision, code, keeps_function, 1);
            }
        }
    }
    /* A guard (or a finalizer it set off) may have changed what this thread
     * has installed: the callback installed now is asked, for its cache, or
     * with nothing installed the frame just runs. */
    if (thread->owner != owner) {
        if (thread->cache == NULL) {
            Py_DECREF(cache);
            return run_as_is(tstate, frame, thread, PYFRAME_RUN);
        }
        Py_SETREF(cache, Py_NewRef(thread->cache));
        owner = thread->owner;
        run_only = thread->run_only || thread->run_only_depth > 0;
        decision = PYFRAME_RUN;
    }
    /* Run-only: a miss runs the frame as it is. */
    if (run_only || thread->callback == NULL) {
        Py_DECREF(cache);
        return run_as_is(tstate, frame, thread, decision);
    }

    callback = Py_NewRef(thread->callback);
    user_python_enter(thread, tstate);
    action = ask_callback(thread, tstate, frame, callback, &code, &guard, &depends);
    user_python_leave(thread, tstate);
    Py_DECREF(callback);

    switch (action) {
    case PYFRAME_RUN:
        Py_DECREF(cache);
        return previous_eval(tstate, frame, 0);
    case PYFRAME_SKIP:
    case PYFRAME_SKIP_RECURSIVE:
    case PYFRAME_RUN_ONLY:
    case PYFRAME_RUN_ONLY_RECURSIVE:
        state = cache_state_get_or_create(compat_frame_code(frame));
        if (state == NULL || cache_remember(state, owner->serial, action) < 0) {
            goto error;
        }
        Py_DECREF(cache);
        return run_as_is(tstate, frame, thread, action);
    case PYFRAME_REPLACE:
    case PYFRAME_CACHE:
        if (pyframe_check_replacement(compat_frame_code(frame), code) < 0) {
            goto error;
        }
        keeps_function = pyframe_keeps_function(compat_frame_code(frame), (PyCodeObject *)code);
        if (action == PYFRAME_CACHE) {
            state = cache_state_get_or_create(compat_frame_code(frame));
            if (state == NULL) {
                goto error;
            }
            int inserted = cache_insert(state, owner, Py_NewRef(code), guard, depends,
                                        keeps_function, &batch);
            guard = depends = NULL;   /* cache_insert stole them */
            if (inserted < 0) {
                goto error;
            }
            drop_batch_finish(&batch);   /* the frame is intact: Python may run */
        }
        Py_DECREF(cache);
        return run_cached(tstate, frame, thread, decision, code, keeps_function, 0);
    default:
        assert(action == PYFRAME_ERROR && PyErr_Occurred());
        goto error;
    }

error:
    Py_XDECREF(code);
    Py_XDECREF(guard);
    Py_XDECREF(depends);
    drop_batch_finish(&batch);   /* entries cache_insert took out before it failed */
    Py_DECREF(cache);
    frame_clear_and_pop(tstate, frame);
    return NULL;
}

/* Runs the frame with the code state's most recently used entry, which has
 * no guard.  Apart from intercept(), whose SKIP path then saves fewer
 * registers. */
static Py_NO_INLINE PyObject *
run_first_entry(PyThreadState *tstate, _PyInterpreterFrame *frame, code_state *state)
{
    cache_entry *first = &state->entries[0];   /* Borrowed. */
    first->hits++;
    if (first->runs_original) {
        return previous_eval(tstate, frame, 0);
    }
    return run_replacement(tstate, frame, Py_NewRef(first->code), first->keeps_function, 1);
}

/* decide() for the two outcomes that run no Python before the frame: the
 * owner's remembered SKIP, and its most recently used entry when it has no
 * guard.  Apart, so that these skip decide()'s set-up (the owner's cache is
 * not referenced: nothing can free it before the frame runs). */
static Py_NO_INLINE PyObject *
intercept(PyThreadState *tstate, _PyInterpreterFrame *frame, thread_hook *thread)
{
    PyCodeObject *code = compat_frame_code(frame);   /* Borrowed. */
    pyframe_owner *owner = thread->owner;             /* Borrowed. */
    code_state *state;                                /* Borrowed. */

    if (code == thread->last_code && thread->last_freed == cache_states_freed) {
        state = thread->last_state;
    }
    else if ((state = cache_state_peek(code)) != NULL) {
        thread->last_code = code;
        thread->last_state = state;
        thread->last_freed = cache_states_freed;
    }

    if (state != NULL) {
        int decision = cache_decision_of(state, owner->serial);
        if (decision == PYFRAME_SKIP) {
            return skipped_eval(tstate, frame, 0);
        }
        if (decision == PYFRAME_RUN && state->count > 0 && state->entries[0].owner == owner
                && state->entries[0].guard == NULL) {
            return run_first_entry(tstate, frame, state);
        }
    }
    return decide(tstate, frame, thread, state);
}

/* What pyframe_eval_frame does with frames it does not intercept.  Out of
 * line, so that the intercepting path needs no stack frame of its own. */
static Py_NO_INLINE PyObject *
pass_through(PyThreadState *tstate, _PyInterpreterFrame *frame, int throwflag)
{
    thread_hook *thread = this_thread;   /* Borrowed. */

    if (thread != NULL && thread->probing) {
        thread->probe_reached = 1;
    }
    if (threads_with_callback == 0) {
        /* Another PEP 523 function that was installed over ours put ours
         * back after the last callback was removed: step aside now. */
        (void)sync_hook();
    }
    return previous_eval(tstate, frame, throwflag);
}

/* The PEP 523 function.  Kept small, without a stack frame of its own: it
 * only chooses between intercept() and pass_through(), for the frames it
 * passes on (resumptions, which generators own, throws into generators,
 * frames run by callbacks and guards and inside trace/profile/monitoring
 * callbacks, and frames of threads without a callback). */
static PyObject *
pyframe_eval_frame(PyThreadState *tstate, _PyInterpreterFrame *frame, int throwflag)
{
    thread_hook *thread = this_thread;   /* Borrowed. */

    if (thread != NULL && thread->paused == 0 && thread->cache != NULL && !throwflag
            && frame->owner == FRAME_OWNED_BY_THREAD && tstate->tracing == 0
            && compat_frame_not_started(frame)) {
        if (compat_frame_code(frame)->co_extra == NULL) {
            /* Nothing stored on the code by anyone, so no decision or entry
             * of ours (an observing callback's frames): ask the callback. */
            return decide(tstate, frame, thread, NULL);
        }
        return intercept(tstate, frame, thread);
    }
    return pass_through(tstate, frame, throwflag);
}

int
pyframe_hook_init(const pyframe_layer *from_cython)
{
    if (no_args == NULL && (no_args = PyTuple_New(0)) == NULL) {
        return -1;
    }
    /* Kept for the process: frames may run through the hook while the
     * interpreter tears the Cython module down. */
    pyframe_layer previous = layer;
    layer = *from_cython;
    Py_INCREF(layer.frame_type);
    Py_INCREF(layer.skip);
    Py_INCREF(layer.skip_recursive);
    Py_INCREF(layer.run_only);
    Py_INCREF(layer.run_only_recursive);
    Py_XDECREF(previous.frame_type);
    Py_XDECREF(previous.skip);
    Py_XDECREF(previous.skip_recursive);
    Py_XDECREF(previous.run_only);
    Py_XDECREF(previous.run_only_recursive);
    return cache_init(layer.notify_dropped);
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

/* The line the frame reports as it starts, as CPython's frame.f_lineno
 * gives it at the frame's first traced line: the line of its first
 * instruction that has one (3.13 gives MAKE_CELL and COPY_FREE_VARS none,
 * and CPython's answer for the not-started frame itself would be None
 * there, or on 3.12 the first line of the code rather than RESUME's). */
int
pyframe_frame_lineno(_PyInterpreterFrame *frame)
{
    PyCodeObject *code = compat_frame_code(frame);   /* Borrowed. */
    int units = (int)Py_SIZE(code);
    int line = -1;

    for (int unit = 0; line < 0 && unit < units; unit++) {
        line = PyCode_Addr2Line(code, unit * (int)sizeof(_Py_CODEUNIT));
    }
    return line;
}

/* The frame object of `caller` (the frame that was running when the hook
 * fired), found by walking back from the thread's current frame, since
 * CPython makes frame objects only through calls it exports for that. */
PyObject *
pyframe_frame_back(PyThreadState *tstate, _PyInterpreterFrame *caller)
{
    _PyInterpreterFrame *target = caller ? compat_first_complete_frame(caller) : NULL;
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
