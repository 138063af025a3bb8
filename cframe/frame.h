/* frame.h: a frame that has not started, as a whole (frame.c): running
 * other code in it (retargeting, with a move to a new data-stack chunk or,
 * on 3.11, a shadow frame), clearing and popping it, and what a
 * pyframe.Frame reads of it (declared in pyframe.h).
 *
 * Layer 2, above localsplus.h.
 */
#ifndef PYFRAME_FRAME_H
#define PYFRAME_FRAME_H

#include "localsplus.h"

#pragma GCC visibility push(hidden)

/* A frame the hook was handed and does not run (the callback failed, say).
 * From 3.12 the hook owns it and must release and pop it, as the evaluator
 * would have on return; on 3.11 the caller that pushed it does that once
 * the hook returns, so it is left as it is. */
void frame_clear_and_pop(PyThreadState *tstate, struct _PyInterpreterFrame *frame);

/* Moves `frame`, the top of the data stack, where `size` words fit: to the
 * start of a new chunk (3.12+), or on 3.11 into a shadow frame there that
 * takes its arguments (frame_is_shadow).  NULL with MemoryError, frame
 * intact. */
struct _PyInterpreterFrame *frame_relocate(PyThreadState *tstate,
                                           struct _PyInterpreterFrame *frame, int size);

/* 3.11: `target`, which frame_retarget returned for `frame`, is a shadow
 * frame, which pyframe pops itself once it ran (frame_pop_shadow). */
#if PYFRAME_CALLER_POPS_FRAME
#  define frame_is_shadow(target, frame) ((target) != (frame))
#  define frame_pop_shadow(tstate, shadow) frame_release_and_pop((tstate), (shadow))
#else
#  define frame_is_shadow(target, frame) 0
#  define frame_pop_shadow(tstate, shadow) ((void)0)
#endif
#if !PYFRAME_PY313
/* Releases the references of `frame`, the top frame of the thread's data
 * stack, and pops it, as CPython's evaluator does for a returning frame. */
void frame_release_and_pop(PyThreadState *tstate, struct _PyInterpreterFrame *frame);
#endif

/* Puts `code` (a checked replacement; stolen) in `frame` in place of its
 * code, with `func` (stolen; NULL: the frame keeps its function) and its
 * slots past the arguments empty, and makes room for it on the data stack.
 * The caller emptied those slots of the original (pyframe_take_bound_locals).
 * Returns the frame that runs the code: `frame`, or where it moved
 * (frame_relocate); NULL with MemoryError, nothing taken.  Inline: on the
 * cached path it is most of what pyframe adds to a call. */
static Py_ALWAYS_INLINE inline struct _PyInterpreterFrame *
frame_retarget(PyThreadState *tstate, struct _PyInterpreterFrame *frame, PyCodeObject *code,
               PyObject *func)
{
    int size = compat_code_framesize(code);
    struct _PyInterpreterFrame *target = frame;   /* Borrowed. */
    PyCodeObject *old_code;                       /* Owned (was the frame's). */
    PyObject *old_func = NULL;                    /* Owned (was the frame's). */

    if ((PyObject **)frame + size >= tstate->datastack_limit
            && (target = frame_relocate(tstate, frame, size)) == NULL) {
        return NULL;
    }
    /* From here nothing fails and no Python runs until the frame and the
     * data stack agree again. */
    pyframe_unbind_nonarguments(target, code);
    old_code = compat_frame_swap_code(target, code);
    if (func != NULL) {
        old_func = compat_frame_swap_function(target, func);
    }
    compat_frame_set_stack_empty(target, code->co_nlocalsplus);
    tstate->datastack_top = (PyObject **)target + size;
    /* Releasing these may run finalizers: they push frames above ours. */
    Py_DECREF(old_code);
    Py_XDECREF(old_func);
    return target;
}

#pragma GCC visibility pop

#endif /* PYFRAME_FRAME_H */
