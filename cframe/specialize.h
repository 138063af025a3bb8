/* specialize.h: the specialization mode (specialize.c), as eval_frame.c and
 * cache.c see it.
 *
 * In the mode, a frame of code the callback skipped runs with pyframe's PEP
 * 523 function stepped aside, so that CPython specializes and inlines the
 * calls it makes; every function of code that is not skipped carries
 * pyframe's vectorcall, which puts the function back for its call.  Builds
 * for interpreters without the mode get constants, so the hook's code reads
 * the same on every version.
 */
#ifndef PYFRAME_SPECIALIZE_H
#define PYFRAME_SPECIALIZE_H

#include "compat.h"
#include "pyframe.h"

/* eval_frame.c: the hook's side of stepping aside. */

/* 1 while pyframe's function is stepped aside for skipped code. */
extern int pyframe_hook_aside;
/* Steps aside when it may: one thread has something installed, it is this
 * one, and the function pyframe runs frames with is CPython's own. */
void pyframe_hook_step_aside(void);
/* Puts pyframe's function back if it stepped aside. */
void pyframe_hook_step_in(void);
/* The mode went on or off: frames of skipped code run accordingly. */
void pyframe_hook_skip_path_changed(void);
/* The owner of this thread's decisions (Borrowed), or NULL. */
pyframe_owner *pyframe_hook_owner(void);

#if PYFRAME_HAS_SPECIALIZATION_MODE
#include "cache.h"

/* 1 while the mode is on. */
extern int pyframe_specializing;
/* 1 when the hook may step aside now (specialize.c first sees to classes
 * made or changed since it last looked). */
int pyframe_specialize_may_step_aside(void);
/* Decisions may have changed (reset, another owner): functions whose code is
 * no longer skipped get pyframe's vectorcall again, and classes are checked
 * again.  Cannot fail (reports what it could not do as unraisable). */
void pyframe_specialize_decisions_changed(void);

/* 1 when this thread's owner skips `code` (SKIP): its frames run without the
 * hook, inlined or not.  SKIP_RECURSIVE is not: what such a frame calls must
 * run without callbacks, which only a frame started by the hook arranges. */
static inline int
specialize_code_is_free(PyCodeObject *code)
{
    pyframe_owner *owner = pyframe_hook_owner();
    code_state *state;
    if (owner == NULL || (state = cache_state_peek(code)) == NULL) {
        return 0;
    }
    return cache_decision_of(state, owner->serial) == PYFRAME_SKIP;
}

/* specialize_classes.c: classes whose __init__ must reach the hook (3.13+,
 * where CALL_ALLOC_AND_ENTER_INIT exists; nothing to do on 3.12). */
#if PYFRAME_INLINES_INIT
/* Watches every class and blocks those that need it.  -1 with an exception. */
int specialize_classes_start(void);
/* Checks every class again (decisions changed).  -1 with an exception. */
int specialize_classes_recheck(void);
/* 1 when classes were made or changed since they were last settled. */
int specialize_classes_pending(void);
/* Checks those.  -1 with an exception. */
int specialize_classes_settle(void);
/* Lets classes inline their __init__ again: those whose __init__ is skipped
 * now, or all of them. */
void specialize_classes_unblock(int all);
/* Unblocks every class and stops watching. */
void specialize_classes_stop(void);
#else
#  define specialize_classes_start() 0
#  define specialize_classes_recheck() 0
#  define specialize_classes_pending() 0
#  define specialize_classes_settle() 0
#  define specialize_classes_unblock(all) ((void)(all))
#  define specialize_classes_stop() ((void)0)
#endif

#else
#  define pyframe_specializing 0
#  define pyframe_specialize_may_step_aside() 0
#  define pyframe_specialize_decisions_changed() ((void)0)
#endif

#endif /* PYFRAME_SPECIALIZE_H */
