/* frame.c: a frame that has not started, as a whole.
 *
 * The hook runs replacement code in the frame it was handed: the frame
 * takes the replacement's code (and function, when the original's cannot
 * run it) and grows to its size, moving to a new data-stack chunk when the
 * current one has no room, following CPython's chunk rules; on 3.11, where
 * the caller pops the frame at its address, the replacement runs in a shadow
 * frame instead.  A frame the hook does not run is cleared and popped as the
 * evaluator would.  And the readers a pyframe.Frame uses, which CPython
 * offers only for frames that started.
 */
#include "frame.h"

/* ---- the data stack ---------------------------------------------------------- */

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
void
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

void
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

/* ---- room for replacement code ------------------------------------------- */

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

_PyInterpreterFrame *
frame_relocate(PyThreadState *tstate, _PyInterpreterFrame *frame, int size)
{
#if PYFRAME_CALLER_POPS_FRAME
    return shadow_frame_push(tstate, frame, size);
#else
    return frame_move_to_new_chunk(tstate, frame, size);
#endif
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
