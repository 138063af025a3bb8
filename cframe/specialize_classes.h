/* specialize_classes.h: classes whose __init__ (or, on 3.14, property
 * getters) must reach the hook in the specialization mode
 * (specialize_classes.c), as specialize.c drives them.  3.13+, where
 * CALL_ALLOC_AND_ENTER_INIT exists; 3.12 gets constants.
 *
 * Layer 5, above hook.h.
 */
#ifndef PYFRAME_SPECIALIZE_CLASSES_H
#define PYFRAME_SPECIALIZE_CLASSES_H

#include "hook.h"

#pragma GCC visibility push(hidden)

#if PYFRAME_HAS_SPECIALIZATION_MODE && PYFRAME_INLINES_INIT
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

#pragma GCC visibility pop

#endif /* PYFRAME_SPECIALIZE_CLASSES_H */
