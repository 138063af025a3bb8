/* localsplus.h: a not-started frame's slots (localsplus.c), as the layers
 * above use them to build a replacement frame.  The Cython layer's part
 * (entry locals, set_local, the closure) is in pyframe.h.
 *
 * Layer 1, above compat.h only.
 */
#ifndef PYFRAME_LOCALSPLUS_H
#define PYFRAME_LOCALSPLUS_H

#include "compat.h"
#include "pyframe.h"

#pragma GCC visibility push(hidden)

/* 0 when `replacement` can run in a frame of `original`; -1 with a
 * TypeError that names what differs. */
int pyframe_check_replacement(PyCodeObject *original, PyObject *replacement);
/* 1: the replacement frame can keep the original's function object. */
int pyframe_keeps_function(PyCodeObject *original, PyCodeObject *replacement);
/* The function for the replacement frame when it cannot.  New. */
PyObject *pyframe_replacement_function(struct _PyInterpreterFrame *frame,
                                       PyCodeObject *replacement);
/* Empties the frame's slots past its arguments, moving the values a
 * callback bound there (Frame.set_local) into *released (a new list, or
 * NULL when there were none).  -1 with MemoryError, frame intact. */
int pyframe_take_bound_locals(struct _PyInterpreterFrame *frame, PyObject **released);

/* How many leading slots hold arguments: the positional and keyword-only
 * parameters, then *args and **kwargs if the code takes them. */
static inline int
pyframe_argument_slots(PyCodeObject *code)
{
    return code->co_argcount + code->co_kwonlyargcount
           + !!(code->co_flags & CO_VARARGS) + !!(code->co_flags & CO_VARKEYWORDS);
}

/* Empties the replacement's slots past its arguments (called on the frame
 * that will run it, once pyframe_take_bound_locals emptied the original's):
 * its own cells are made by its prologue (MAKE_CELL), its free variables by
 * COPY_FREE_VARS from the frame's function, and its other locals start
 * unbound.  Inline: it is on the path of every cached replacement. */
static inline void
pyframe_unbind_nonarguments(struct _PyInterpreterFrame *frame, PyCodeObject *replacement)
{
    for (int i = pyframe_argument_slots(replacement); i < replacement->co_nlocalsplus; i++) {
        compat_frame_slot_forget(frame, i);
    }
}

#pragma GCC visibility pop

#endif /* PYFRAME_LOCALSPLUS_H */
