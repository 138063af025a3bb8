/* hook.h: per-thread state and the installation of pyframe's PEP 523
 * function (hook.c): which thread has which callback and owner, when the
 * function is installed, chained over another or stepped aside for skipped
 * code, and the f_locals dict a callback is lent.  eval_frame.c, the
 * function itself, reads this state on every frame.
 *
 * Layer 4, above cache.h and frame.h.
 */
#ifndef PYFRAME_HOOK_H
#define PYFRAME_HOOK_H

#include "cache.h"

#pragma GCC visibility push(hidden)

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
    int probing;          /* hook_sync() is asking whether frames reach ours */
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

/* This thread's state (Borrowed from a capsule in the thread's state dict,
 * which frees it when the thread's state is cleared), or NULL. */
extern PYFRAME_THREAD_LOCAL thread_hook *hook_thread;
/* Threads with something installed (a callback, or run-only mode). */
extern Py_ssize_t hook_threads_installed;
/* What runs the frames the hook passes on: the function installed before
 * pyframe's (CPython's own, a debugger's, Dynamo's). */
extern _PyFrameEvalFunction hook_previous_eval;
/* What runs a frame of skipped code: hook_previous_eval, or in the
 * specialization mode a function that steps aside for it (a pointer, so
 * that the SKIP path tests nothing). */
extern _PyFrameEvalFunction hook_skipped_eval;
/* What the Cython layer told pyframe_hook_init (Owned references). */
extern pyframe_layer hook_layer;

/* Keeps `ours`, the PEP 523 function, and the Cython layer's `layer`.  -1
 * with an exception. */
int hook_init(_PyFrameEvalFunction ours, const pyframe_layer *layer);

/* Installs the hook while some thread has a callback and removes it when
 * none has.  -1 with an exception only when a callback is being installed. */
int hook_sync(void);

/* The specialization mode's side of stepping aside (specialize.c registers
 * it while the mode is on). */
typedef struct {
    /* 1 when the hook may step aside now (classes made since were checked). */
    int (*may_step_aside)(void);
} hook_aside_listener;

/* NULL: the mode is off, skipped code runs with hook_previous_eval. */
void hook_listen_aside(const hook_aside_listener *listener);
/* 1 while pyframe's function is stepped aside for skipped code. */
extern int hook_aside;
/* Steps aside when it may: one thread has something installed, it is this
 * one, and nothing was installed over or under ours. */
void hook_step_aside(void);
/* Puts pyframe's function back if it stepped aside. */
void hook_step_in(void);

/* 1 when this thread's owner skips `code` (SKIP): its frames run without
 * the hook in the specialization mode. */
static inline int
hook_code_skipped(PyCodeObject *code)
{
    thread_hook *thread = hook_thread;   /* Borrowed. */
    code_state *state;                   /* Borrowed. */
    if (thread == NULL || thread->cache == NULL || (state = cache_state_peek(code)) == NULL) {
        return 0;
    }
    return cache_decision_of(state, thread->owner->serial) == PYFRAME_SKIP;
}

/* Calls into the user's Python (the callback, a guard, on_drop) go between
 * these: the thread's frames are not intercepted meanwhile, and they run as
 * trace functions do, unseen by tracers, profilers, sys.monitoring and
 * debuggers, so tools stacked on pyframe see the program as it would run
 * alone.  With recursion headroom, so that the program reaches the recursion
 * limit in its own frames, not in the callback (compat.h). */
static inline void
hook_user_python_enter(thread_hook *thread, PyThreadState *tstate)
{
    thread->paused++;
    PyThreadState_EnterTracing(tstate);
    compat_recursion_headroom(tstate, PYFRAME_USER_PYTHON_HEADROOM);
}

static inline void
hook_user_python_leave(thread_hook *thread, PyThreadState *tstate)
{
    compat_recursion_headroom(tstate, -PYFRAME_USER_PYTHON_HEADROOM);
    PyThreadState_LeaveTracing(tstate);
    thread->paused--;
}

/* For cache_init: on_drop runs as the callback does (hook_user_python_enter). */
extern const cache_user_python_listener hook_user_python;

/* Keeps `locals` (stolen), a dict pyframe built, as the thread's spare if
 * nothing else holds it; drops it otherwise. */
static inline void
hook_locals_take_back(thread_hook *thread, PyObject *locals)
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

#pragma GCC visibility pop

#endif /* PYFRAME_HOOK_H */
