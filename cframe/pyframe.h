/* pyframe.h: what cframe/ offers the Cython layer (pyframe/_cframe.pyx and
 * its includes; declared for Cython in pyframe/cframe_api.pxi).
 *
 * It names CPython's interpreter frame only as an opaque struct, so the
 * Cython module never sees an internal header; compat.h is for cframe/ alone.
 *
 * cframe/ is written in layers; each file calls only files below it, and a
 * lower layer tells an upper one something (user Python is about to run,
 * decisions changed, the hook may step aside) through a listener the upper
 * one registers, never by calling up:
 *
 *   start.c                pyframe_hook_init: hands each layer its listeners
 *   eval_frame.c, specialize.c
 *                          the PEP 523 function, what runs on every frame;
 *                          the specialization mode (functions' vectorcalls,
 *                          code versions)
 *   specialize_classes.c   classes kept off inlined __init__ / property paths
 *   hook.c                 per-thread state, installing the function, stepping
 *                          aside, the f_locals dict a callback is lent
 *   cache.c                per-code state: owners' decisions, cached entries
 *   frame.c                a not-started frame as a whole: retargeting, moves
 *                          to a new chunk, 3.11's shadow frames, popping, what
 *                          a Frame reads
 *   localsplus.c           a not-started frame's slots: entry locals, a
 *                          replacement's
 *   compat.h               every CPython version difference
 *
 * Files on one line stand side by side (neither uses the other).  Each .c
 * file has a header of the same name for the layers above it;
 * tools/cframe_layers.py checks the picture against the compiled objects.
 */
#ifndef PYFRAME_H
#define PYFRAME_H

#include <Python.h>

struct _PyInterpreterFrame;

/* What the callback decided, as the hook maps its result. */
enum pyframe_action {
    PYFRAME_ERROR = -1,          /* an exception is set */
    PYFRAME_RUN = 0,             /* run the frame; ask again next time */
    PYFRAME_SKIP = 1,            /* run it; never ask again for this code */
    PYFRAME_SKIP_RECURSIVE = 2,  /* run it and all it calls without asking */
    PYFRAME_REPLACE = 3,         /* run *code instead, this time */
    PYFRAME_CACHE = 4,           /* run *code instead and cache it behind *guard */
    PYFRAME_RUN_ONLY = 5,        /* run it; from now on run cached entries only */
    PYFRAME_RUN_ONLY_RECURSIVE = 6,  /* ... and so for all it calls */
};

/* One client's decisions and cached entries: the C side of a pyframe.Cache
 * (cache.c). */
typedef struct pyframe_owner pyframe_owner;

/* The part of a pyframe.Frame the hook fills in before the callback runs
 * and empties when it returns. */
typedef struct {
    struct _PyInterpreterFrame *frame;    /* Borrowed; NULL once the callback returned. */
    struct _PyInterpreterFrame *caller;   /* Borrowed: the frame running when the hook
                                             fired, or NULL. */
    PyThreadState *tstate;                /* Borrowed: the frame's thread. */
} pyframe_frame_ref;

/* Maps a callback result other than None, the decision sentinels and a code
 * object to an action: PYFRAME_CACHE for a pyframe.Compiled, with *code,
 * *guard and *depends (new references; *guard NULL for "always", *depends a
 * tuple of objects or NULL), else PYFRAME_ERROR with a TypeError that names
 * `callback`. */
typedef int (*pyframe_classify_fn)(PyObject *callback, PyObject *result,
                                   PyObject **code, PyObject **guard, PyObject **depends);

/* Tells an owner an entry was dropped: `record` is (pyframe.Cache, original
 * code, replacement code, guard or None, reason).  Returns a new reference,
 * NULL with an exception set (which the caller reports as unraisable). */
typedef PyObject *(*pyframe_notify_fn)(PyObject *record);

/* The verdict of a guard that is a pyframe.FastGuard (`guard`) for a frame
 * whose locals are `f_locals`, looked up in `cache` (a pyframe.Cache) while
 * the thread's callback is `callback` (NULL: none), all Borrowed: 1 holds,
 * 0 not, -1 with an exception.  It calls the check the guard armed itself
 * with while what that assumed still holds, else the guard itself. */
typedef int (*pyframe_fast_guard_fn)(PyObject *guard, PyObject *f_locals, PyObject *cache,
                                     PyObject *callback);

/* What the Cython layer, which owns pyframe's Python types, tells the hook
 * at import.  The hook keeps references to the objects. */
typedef struct {
    PyTypeObject *frame_type;        /* pyframe.Frame */
    Py_ssize_t frame_ref_offset;     /* where a Frame object holds its pyframe_frame_ref */
    PyObject *skip;                  /* pyframe.SKIP */
    PyObject *skip_recursive;        /* pyframe.SKIP_RECURSIVE */
    PyObject *run_only;              /* pyframe.RUN_ONLY */
    PyObject *run_only_recursive;    /* pyframe.RUN_ONLY_RECURSIVE */
    pyframe_classify_fn classify_other;
    pyframe_notify_fn notify_dropped;
    PyTypeObject *fast_guard_type;   /* pyframe.FastGuard */
    pyframe_fast_guard_fn check_fast_guard;
} pyframe_layer;

/* start.c: called once at import, before anything else here. */
int pyframe_hook_init(const pyframe_layer *layer);

/* hook.c: per-thread callbacks and the hook's installation. */
PyObject *pyframe_thread_get_callback(void);                /* Borrowed, or NULL. */
/* Installs `callback` (NULL: none; with `cache` NULL too: nothing at all)
 * with `cache`, a pyframe.Cache, as the owner of its decisions and entries;
 * `run_only`: no callback, cached entries only.  Returns the previous
 * installation as (callback or None, cache or None, run_only), new. */
PyObject *pyframe_thread_install(PyObject *callback, PyObject *cache, pyframe_owner *owner,
                                 int run_only);
/* The same, returning 0 (or -1 with an exception set) and not the previous
 * installation: pyframe.Switch flips a callback on and off around every
 * call of a JIT's compiled code and needs what it replaced only once. */
int pyframe_thread_replace(PyObject *callback, PyObject *cache, pyframe_owner *owner,
                           int run_only);
int pyframe_hook_installed(void);

/* cache.c: owners, and their decisions and entries on code objects.  An
 * `owner` argument of NULL means every owner. */
pyframe_owner *pyframe_owner_new(PyObject *self, int limit);  /* NULL with MemoryError */
void pyframe_owner_free(pyframe_owner *owner);   /* drops its entries, untold */
/* Cache.set_regions: `lookup` and `run` (Borrowed: the Cache holds them;
 * NULL: none) make the context managers entered around the guard calls of
 * each frame with entries of the owner, and around running an entry's code
 * (called with the entry's guard, or None). */
void pyframe_owner_set_regions(pyframe_owner *owner, PyObject *lookup, PyObject *run);
int pyframe_reset_code(PyObject *code, pyframe_owner *owner);
int pyframe_reset_all(pyframe_owner *owner);
/* The owner's decision about `code` set from outside a callback, as if its
 * callback had returned it (PYFRAME_RUN forgets it); the decision in force. */
int pyframe_remember(PyObject *code, pyframe_owner *owner, int action);
int pyframe_remembered(PyObject *code, pyframe_owner *owner);
int pyframe_set_cache_limit(int limit);
int pyframe_get_cache_limit(void);
PyObject *pyframe_cache_entries(PyObject *code, pyframe_owner *owner);   /* New. */

/* specialize.c: the specialization mode (CPython 3.12+; on 3.11 switching
 * it on raises NotImplementedError). */
int pyframe_specialization_set(int on);      /* -1 with an exception */
int pyframe_specialization_enabled(void);
/* For tests: `func` has pyframe's vectorcall; the hook is stepped aside. */
int pyframe_specialization_hooked(PyObject *func);
int pyframe_specialization_aside(void);
/* For tests: gives `func` a vectorcall that counts its calls, calls
 * driver(), and returns how many of func's calls went through it (-1 with an
 * exception).  On 3.11 calls from Python bypass it (compat.h). */
Py_ssize_t pyframe_specialization_probe(PyObject *func, PyObject *driver);

/* frame.c: reading the frame the callback is handed. */
PyObject *pyframe_frame_code(struct _PyInterpreterFrame *frame);      /* Borrowed. */
PyObject *pyframe_frame_globals(struct _PyInterpreterFrame *frame);   /* Borrowed. */
PyObject *pyframe_frame_builtins(struct _PyInterpreterFrame *frame);  /* Borrowed. */
int pyframe_frame_lasti(struct _PyInterpreterFrame *frame);
int pyframe_frame_lineno(struct _PyInterpreterFrame *frame);          /* -1: none */
PyObject *pyframe_frame_back(PyThreadState *tstate,
                             struct _PyInterpreterFrame *caller);     /* New. */

/* hook.c: frame.f_locals for a callback; may hand out this thread's
 * spare dict, and takes it back once the callback returned without keeping it. */
PyObject *pyframe_callback_locals(struct _PyInterpreterFrame *frame);  /* New. */

/* localsplus.c: reading and writing the frame's localsplus before it runs. */

/* The frame's entry locals (see localsplus.c).  New.  When `spare` points to
 * a dict (Owned, from pyframe_locals_recycle) and the frame's locals are a
 * new dict, that dict is taken (*spare becomes NULL) and filled. */
PyObject *pyframe_build_locals(struct _PyInterpreterFrame *frame, PyObject **spare);
/* 1 when `locals`, a dict from pyframe_build_locals that nobody but the
 * caller holds, had its values dropped (its keys stay, for the next fill) and
 * can be passed as a spare; 0 when it cannot be reused. */
int pyframe_locals_recycle(PyObject *locals);
PyObject *pyframe_localsplus(struct _PyInterpreterFrame *frame,
                             PyObject *unbound);                      /* New. */
int pyframe_set_local(struct _PyInterpreterFrame *frame, PyObject *name,
                      PyObject *value);
/* The cells the frame's free variables will be bound to, in co_freevars
 * order: the function's own closure tuple when it is that.  New. */
PyObject *pyframe_frame_closure(struct _PyInterpreterFrame *frame);

#endif /* PYFRAME_H */
