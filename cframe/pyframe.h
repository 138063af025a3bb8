/* pyframe.h: what cframe/ offers the Cython layer (pyframe/_cframe.pyx).
 *
 * It names CPython's interpreter frame only as an opaque struct, so the
 * Cython module never sees an internal header; compat.h is for cframe/ alone.
 */
#ifndef PYFRAME_H
#define PYFRAME_H

#include <Python.h>

struct _PyInterpreterFrame;

/* What the callback decided, as the dispatcher reports it to the hook. */
enum pyframe_action {
    PYFRAME_ERROR = -1,          /* an exception is set */
    PYFRAME_RUN = 0,             /* run the frame; ask again next time */
    PYFRAME_SKIP = 1,            /* run it; never ask again for this code */
    PYFRAME_SKIP_RECURSIVE = 2,  /* run it and all it calls without asking */
    PYFRAME_REPLACE = 3,         /* run *code instead, this time */
    PYFRAME_CACHE = 4,           /* run *code instead and cache it behind *guard */
};

/* Calls the user's callback for one frame and maps its result to an action.
 * Implemented in Cython (it owns the Frame type and the sentinels) and handed
 * to the hook by pyframe_hook_init().  `caller` is the frame that was running
 * when the hook fired, or NULL.  For PYFRAME_REPLACE and PYFRAME_CACHE it sets
 * *code (new reference) and *guard (new reference, or NULL for "always"). */
typedef int (*pyframe_dispatch_fn)(PyObject *callback,
                                   struct _PyInterpreterFrame *frame,
                                   struct _PyInterpreterFrame *caller,
                                   PyThreadState *tstate,
                                   PyObject **code, PyObject **guard);

/* eval_frame.c: the hook, per-thread callbacks and per-code decisions. */
int pyframe_hook_init(pyframe_dispatch_fn dispatch);
PyObject *pyframe_thread_get_callback(void);                /* Borrowed, or NULL. */
PyObject *pyframe_thread_set_callback(PyObject *callback);  /* New: previous or None. */
int pyframe_hook_installed(void);
int pyframe_reset_code(PyObject *code);
int pyframe_reset_all(void);
int pyframe_set_cache_limit(int limit);
int pyframe_get_cache_limit(void);
PyObject *pyframe_cache_entries(PyObject *code);                    /* New. */

/* eval_frame.c: reading the frame the callback is handed. */
PyObject *pyframe_frame_code(struct _PyInterpreterFrame *frame);      /* Borrowed. */
PyObject *pyframe_frame_globals(struct _PyInterpreterFrame *frame);   /* Borrowed. */
PyObject *pyframe_frame_builtins(struct _PyInterpreterFrame *frame);  /* Borrowed. */
int pyframe_frame_lasti(struct _PyInterpreterFrame *frame);
PyObject *pyframe_frame_back(PyThreadState *tstate,
                             struct _PyInterpreterFrame *caller);     /* New. */

/* localsplus.c: reading and writing the frame's localsplus before it runs. */
PyObject *pyframe_build_locals(struct _PyInterpreterFrame *frame);    /* New. */
PyObject *pyframe_localsplus(struct _PyInterpreterFrame *frame,
                             PyObject *unbound);                      /* New. */
int pyframe_set_local(struct _PyInterpreterFrame *frame, PyObject *name,
                      PyObject *value);

/* localsplus.c: building a replacement frame in place of one that has not
 * started (used by eval_frame.c only; the code types are CPython's). */
#ifdef PYFRAME_COMPAT_H
int pyframe_check_replacement(PyCodeObject *original, PyObject *replacement);
/* 1: the replacement frame can keep the original's function object. */
int pyframe_keeps_function(PyCodeObject *original, PyCodeObject *replacement);
/* The function for the replacement frame when it cannot. */
PyObject *pyframe_replacement_function(struct _PyInterpreterFrame *frame,
                                       PyCodeObject *replacement);   /* New. */
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
        frame->localsplus[i] = NULL;
    }
}
#endif

#endif /* PYFRAME_H */
