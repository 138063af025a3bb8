/* eval_frame.h: pyframe's PEP 523 function (eval_frame.c), which start.c
 * hands to hook.c for installing.
 *
 * The top layer: above hook.h and frame.h.
 */
#ifndef PYFRAME_EVAL_FRAME_H
#define PYFRAME_EVAL_FRAME_H

#include "hook.h"

#pragma GCC visibility push(hidden)

PyObject *pyframe_eval_frame(PyThreadState *tstate, struct _PyInterpreterFrame *frame,
                             int throwflag);

#pragma GCC visibility pop

#endif /* PYFRAME_EVAL_FRAME_H */
