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
};

/* Calls the user's callback for one frame and maps its result to an action.
 * Implemented in Cython (it owns the Frame type and the sentinels) and handed
 * to the hook by pyframe_hook_init().  `caller` is the frame that was running
 * when the hook fired, or NULL. */
typedef int (*pyframe_dispatch_fn)(PyObject *callback,
                                   struct _PyInterpreterFrame *frame,
                                   struct _PyInterpreterFrame *caller,
                                   PyThreadState *tstate);

/* eval_frame.c: the hook, per-thread callbacks and per-code decisions. */
int pyframe_hook_init(pyframe_dispatch_fn dispatch);
PyObject *pyframe_thread_get_callback(void);                /* Borrowed, or NULL. */
PyObject *pyframe_thread_set_callback(PyObject *callback);  /* New: previous or None. */
int pyframe_hook_installed(void);
void pyframe_reset_code(PyObject *code);
void pyframe_reset_all(void);

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

#endif /* PYFRAME_H */
