/* eval_frame.c: the PEP 523 function, what runs on every frame.
 *
 * pyframe_eval_frame is installed as the interpreter's frame evaluation
 * function while at least one thread has a callback (hook.c).  It reads top
 * to bottom as a frame travels: frames it does not intercept pass through;
 * for a new frame of a thread with something installed, the owner's
 * remembered decision or cached entry (cache.c), else the callback, handed
 * the frame in a pyframe.Frame (a type the Cython layer owns), says whether
 * to run it, skip its code from now on, or run replacement code in it
 * (frame.c).  Frames run with the evaluator that was installed before
 * pyframe (CPython's own, or a debugger's, or Dynamo's); a frame whose
 * callback or guard failed is cleared and popped.
 *
 * The top layer, with start.c: above hook.h and frame.h.
 */
#include "eval_frame.h"
#include "frame.h"

static PyObject *pass_through(PyThreadState *tstate, _PyInterpreterFrame *frame, int throwflag);
static PyObject *intercept(PyThreadState *tstate, _PyInterpreterFrame *frame, thread_hook *thread);
static PyObject *run_first_entry(PyThreadState *tstate, _PyInterpreterFrame *frame,
                                 code_state *state);
static PyObject *decide(PyThreadState *tstate, _PyInterpreterFrame *frame, thread_hook *thread,
                        code_state *state);
/* Inlined in both callers: decide()'s path without regions stays as fast as
 * with one caller. */
static Py_ALWAYS_INLINE inline int cache_lookup(
    PyThreadState *tstate, thread_hook *thread, _PyInterpreterFrame *frame, code_state *state,
    pyframe_owner *owner, PyObject **code, int *keeps_function, PyObject **found_guard);
static PyObject *region_enter(thread_hook *thread, PyThreadState *tstate, PyObject *make,
                              PyObject *arg);
static void region_exit(PyThreadState *tstate, PyObject *manager);
static int lookup_in_regions(PyThreadState *tstate, thread_hook *thread,
                             _PyInterpreterFrame *frame, code_state *state,
                             pyframe_owner *owner, int decision, PyObject **result);
static PyObject *run_in_region(PyThreadState *tstate, _PyInterpreterFrame *frame,
                               thread_hook *thread, PyObject *region, PyObject *guard,
                               int decision, PyObject *code, int keeps_function, int fresh);
static int ask_callback(thread_hook *thread, PyThreadState *tstate, _PyInterpreterFrame *frame,
                        PyObject *callback, PyObject **code, PyObject **guard,
                        PyObject **depends);
static inline PyObject *run_as_is(PyThreadState *tstate, _PyInterpreterFrame *frame,
                                  thread_hook *thread, int decision);
static inline PyObject *run_cached(PyThreadState *tstate, _PyInterpreterFrame *frame,
                                   thread_hook *thread, int decision, PyObject *code,
                                   int keeps_function, int fresh);
static Py_ALWAYS_INLINE inline PyObject *run_replacement(
    PyThreadState *tstate, _PyInterpreterFrame *frame, PyObject *replacement,
    int keeps_function, int fresh);

/* ---- the PEP 523 function ------------------------------------------------------ */

/* The PEP 523 function.  Kept small, without a stack frame of its own: it
 * only chooses between intercept() and pass_through(), for the frames it
 * passes on (resumptions, which generators own, throws into generators,
 * frames run by callbacks and guards and inside trace/profile/monitoring
 * callbacks, and frames of threads without a callback). */
PyObject *
pyframe_eval_frame(PyThreadState *tstate, _PyInterpreterFrame *frame, int throwflag)
{
    thread_hook *thread = hook_thread;   /* Borrowed. */

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

/* What pyframe_eval_frame does with frames it does not intercept.  Out of
 * line, so that the intercepting path needs no stack frame of its own. */
static Py_NO_INLINE PyObject *
pass_through(PyThreadState *tstate, _PyInterpreterFrame *frame, int throwflag)
{
    thread_hook *thread = hook_thread;   /* Borrowed. */

    if (thread != NULL && thread->probing) {
        thread->probe_reached = 1;
    }
    if (hook_threads_installed == 0) {
        /* Another PEP 523 function that was installed over ours put ours
         * back after the last callback was removed: step aside now. */
        (void)hook_sync();
    }
    return hook_previous_eval(tstate, frame, throwflag);
}

/* ---- a frame to decide about ------------------------------------------------- */

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
            return hook_skipped_eval(tstate, frame, 0);
        }
        if (decision == PYFRAME_RUN && state->count > 0 && state->entries[0].owner == owner
                && state->entries[0].guard == NULL && owner->run_region == NULL) {
            return run_first_entry(tstate, frame, state);
        }
    }
    return decide(tstate, frame, thread, state);
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
        return hook_previous_eval(tstate, frame, 0);
    }
    return run_replacement(tstate, frame, Py_NewRef(first->code), first->keeps_function, 1);
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
    PyObject *entry_guard = NULL;        /* Owned: the guard of the entry made, for its region. */
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
            PyObject *result = NULL;   /* Owned: what the frame returned, when found */
            int found = owner->lookup_region == NULL && owner->run_region == NULL
                ? cache_lookup(tstate, thread, frame, state, owner, &code, &keeps_function, NULL)
                : lookup_in_regions(tstate, thread, frame, state, owner, decision, &result);
            if (found < 0) {
                goto error;
            }
            if (found) {
                Py_DECREF(cache);
                if (code == NULL) {
                    return result;   /* run in the regions */
                }
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
    hook_user_python_enter(thread, tstate);
    action = ask_callback(thread, tstate, frame, callback, &code, &guard, &depends);
    hook_user_python_leave(thread, tstate);
    Py_DECREF(callback);

    switch (action) {
    case PYFRAME_RUN:
        Py_DECREF(cache);
        return hook_previous_eval(tstate, frame, 0);
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
            entry_guard = Py_XNewRef(guard);
            int inserted = cache_insert(state, owner, Py_NewRef(code), guard, depends,
                                        keeps_function, &batch);
            guard = depends = NULL;   /* cache_insert stole them */
            if (inserted < 0) {
                goto error;
            }
            drop_batch_finish(&batch);   /* the frame is intact: Python may run */
        }
        if (owner->run_region != NULL) {
            /* With the guard of the entry just made; None uncached. */
            PyObject *result = run_in_region(tstate, frame, thread, owner->run_region,
                                             entry_guard, decision, code, keeps_function, 0);
            Py_XDECREF(entry_guard);
            Py_DECREF(cache);
            return result;
        }
        Py_XDECREF(entry_guard);
        Py_DECREF(cache);
        return run_cached(tstate, frame, thread, decision, code, keeps_function, 0);
    default:
        assert(action == PYFRAME_ERROR && PyErr_Occurred());
        goto error;
    }

error:
    Py_XDECREF(code);
    Py_XDECREF(guard);
    Py_XDECREF(entry_guard);
    Py_XDECREF(depends);
    drop_batch_finish(&batch);   /* entries cache_insert took out before it failed */
    Py_DECREF(cache);
    frame_clear_and_pop(tstate, frame);
    return NULL;
}

/* Looks for an entry of `owner` whose guard accepts the frame.  1: found,
 * *code set (new reference; the frame's own code for an entry that runs the
 * original), *keeps_function and, unless `found_guard` is NULL, *found_guard
 * (new reference, or NULL for an entry without one); 0: none; -1: a guard
 * raised. */
static Py_ALWAYS_INLINE inline int
cache_lookup(PyThreadState *tstate, thread_hook *thread, _PyInterpreterFrame *frame,
             code_state *state, pyframe_owner *owner, PyObject **code, int *keeps_function,
             PyObject **found_guard)
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
            if (entry->guard_kind == 0) {
                entry->guard_kind = PyObject_TypeCheck(guard, hook_layer.fast_guard_type)
                    ? CACHE_GUARD_FAST : CACHE_GUARD_PLAIN;
            }
            int fast = entry->guard_kind == CACHE_GUARD_FAST;
            if (locals == NULL
                    && (locals = pyframe_build_locals(frame, &thread->spare_locals)) == NULL) {
                Py_DECREF(guard);
                found = -1;
                break;
            }
            hook_user_python_enter(thread, tstate);
            if (fast) {
                verdict = hook_layer.check_fast_guard(guard, locals, owner->self,
                                                      thread->callback);
            }
            else {
                PyObject *result = PyObject_CallOneArg(guard, locals);
                verdict = result != NULL ? PyObject_IsTrue(result) : -1;
                Py_XDECREF(result);
            }
            hook_user_python_leave(thread, tstate);
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
        if (found_guard != NULL) {
            *found_guard = Py_XNewRef(state->entries[i].guard);
        }
        if (i > 0) {
            cache_move_to_front(state, i);
        }
        found = 1;
        break;
    }
    if (locals != NULL && found >= 0) {
        hook_locals_take_back(thread, locals);
    }
    else {
        Py_XDECREF(locals);
    }
    return found;
}

/* ---- regions around the lookup and the run (Cache.set_regions) ------------ */

/* `make(arg)` (make() when `arg` is NULL) and its __enter__(), run as the
 * callback is.  The context manager (Owned), or NULL: a region that fails is
 * reported as unraisable and left out, and the frame runs as without it. */
static PyObject *
region_enter(thread_hook *thread, PyThreadState *tstate, PyObject *make, PyObject *arg)
{
    PyObject *manager;   /* Owned. */
    PyObject *entered;   /* Owned. */

    make = Py_NewRef(make);   /* the call may take it off the cache */
    hook_user_python_enter(thread, tstate);
    manager = arg != NULL ? PyObject_CallOneArg(make, arg) : PyObject_CallNoArgs(make);
    entered = manager != NULL ? PyObject_CallMethod(manager, "__enter__", NULL) : NULL;
    hook_user_python_leave(thread, tstate);
    if (entered == NULL) {
        PyErr_WriteUnraisable(make);
        Py_XDECREF(manager);
        manager = NULL;
    }
    Py_XDECREF(entered);
    Py_DECREF(make);
    return manager;
}

/* `manager.__exit__(None, None, None)` (stolen; NULL: nothing), whatever the
 * frame raised kept for its caller.  The thread's state is looked up again:
 * the frame that ran in the region may have taken the thread's callback
 * away. */
static void
region_exit(PyThreadState *tstate, PyObject *manager)
{
    thread_hook *thread = hook_thread;   /* Borrowed. */
    PyObject *pending;                   /* Owned. */
    PyObject *result;                    /* Owned. */

    if (manager == NULL) {
        return;
    }
    pending = PyErr_GetRaisedException();
    if (thread != NULL) {
        hook_user_python_enter(thread, tstate);
    }
    result = PyObject_CallMethod(manager, "__exit__", "OOO", Py_None, Py_None, Py_None);
    if (thread != NULL) {
        hook_user_python_leave(thread, tstate);
    }
    if (result == NULL) {
        PyErr_WriteUnraisable(manager);
    }
    Py_XDECREF(result);
    Py_DECREF(manager);
    PyErr_SetRaisedException(pending);
}

/* cache_lookup() for an owner with regions: inside its lookup region, and a
 * found entry run inside its run region.  As cache_lookup() returns, with
 * *result what the frame returned when found (the frame has run). */
static Py_NO_INLINE int
lookup_in_regions(PyThreadState *tstate, thread_hook *thread, _PyInterpreterFrame *frame,
                  code_state *state, pyframe_owner *owner, int decision, PyObject **result)
{
    PyObject *region = owner->lookup_region != NULL   /* Owned, or NULL */
        ? region_enter(thread, tstate, owner->lookup_region, NULL) : NULL;
    /* Owned, or NULL: the guards may change the cache's regions. */
    PyObject *run_region = Py_XNewRef(owner->run_region);
    PyObject *code = NULL;    /* Owned. */
    PyObject *guard = NULL;   /* Owned. */
    int keeps_function = 0;
    int found = cache_lookup(tstate, thread, frame, state, owner, &code, &keeps_function,
                             &guard);

    region_exit(tstate, region);
    if (found > 0) {
        *result = run_region != NULL
            ? run_in_region(tstate, frame, thread, run_region, guard, decision, code,
                            keeps_function, 1)
            : run_cached(tstate, frame, thread, decision, code, keeps_function, 1);
    }
    Py_XDECREF(guard);
    Py_XDECREF(run_region);
    return found;
}

/* run_cached() inside `region(guard)` (guard NULL: None).  Out of line: the
 * hit path without regions stays as it was. */
static Py_NO_INLINE PyObject *
run_in_region(PyThreadState *tstate, _PyInterpreterFrame *frame, thread_hook *thread,
              PyObject *region, PyObject *guard, int decision, PyObject *code,
              int keeps_function, int fresh)
{
    PyObject *manager = region_enter(thread, tstate, region, guard != NULL ? guard : Py_None);
    PyObject *result = run_cached(tstate, frame, thread, decision, code, keeps_function, fresh);
    region_exit(tstate, manager);
    return result;
}

/* ---- asking the callback ------------------------------------------------------ */

static inline pyframe_frame_ref *
frame_ref_of(PyObject *view)
{
    return (pyframe_frame_ref *)((char *)view + hook_layer.frame_ref_offset);
}

/* Hands `frame` to `callback` in a pyframe.Frame and maps the result to an
 * action (see pyframe.h).  Done here rather than in Cython: on an observing
 * callback's path every instruction counts, and this is the whole of it. */
/* A new pyframe.Frame, for when the thread has no spare one. */
static PyObject *
view_new(void)
{
    static PyObject *no_args;   /* Owned, for the process: (). */
    if (no_args == NULL && (no_args = PyTuple_New(0)) == NULL) {
        return NULL;
    }
    return hook_layer.frame_type->tp_new(hook_layer.frame_type, no_args, NULL);
}

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
    else if ((view = view_new()) == NULL) {
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
            hook_locals_take_back(thread, lent);
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
    else if (result == hook_layer.skip) {
        action = PYFRAME_SKIP;
    }
    else if (result == hook_layer.skip_recursive) {
        action = PYFRAME_SKIP_RECURSIVE;
    }
    else if (result == hook_layer.run_only) {
        action = PYFRAME_RUN_ONLY;
    }
    else if (result == hook_layer.run_only_recursive) {
        action = PYFRAME_RUN_ONLY_RECURSIVE;
    }
    else if (PyCode_Check(result)) {
        *code = Py_NewRef(result);
        action = PYFRAME_REPLACE;
    }
    else {
        action = hook_layer.classify_other(callback, result, code, guard, depends);
    }
    Py_DECREF(result);
    return action;
}

/* ---- running the frame ---------------------------------------------------------- */

/* Runs the frame as it is.  Under `decision` RUN_ONLY_RECURSIVE, what it
 * calls runs cached entries only; under SKIP_RECURSIVE, without callbacks. */
static inline PyObject *
run_as_is(PyThreadState *tstate, _PyInterpreterFrame *frame, thread_hook *thread, int decision)
{
    PyObject *result;
    if (decision == PYFRAME_SKIP_RECURSIVE) {
        thread->paused++;
        result = hook_skipped_eval(tstate, frame, 0);
        thread->paused--;
        return result;
    }
    if (decision == PYFRAME_SKIP) {
        return hook_skipped_eval(tstate, frame, 0);
    }
    if (decision == PYFRAME_RUN_ONLY_RECURSIVE) {
        thread->run_only_depth++;
        result = hook_previous_eval(tstate, frame, 0);
        thread->run_only_depth--;
        return result;
    }
    return hook_previous_eval(tstate, frame, 0);
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
    PyObject *released = NULL;    /* Owned. */
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
    target = frame_retarget(tstate, frame, code, func);   /* takes code and func */
    if (target == NULL) {
        goto error;
    }
    Py_XDECREF(released);   /* may run finalizers: they push frames above ours */
    if (frame_is_shadow(target, frame)) {
        PyObject *result = hook_previous_eval(tstate, target, 0);
        frame_pop_shadow(tstate, target);   /* the shadow is ours to pop */
        return result;
    }
    return hook_previous_eval(tstate, target, 0);

error:
    Py_DECREF(replacement);
    Py_XDECREF(func);
    Py_XDECREF(released);
    frame_clear_and_pop(tstate, frame);
    return NULL;
}
