/* compat.h: the one place that knows which CPython pyframe is built against.
 *
 * Every PY_VERSION_HEX test and every include of CPython's internal headers
 * lives here; the rest of cframe/ uses the named macros and inline helpers
 * below.  pyframe/_support.py states the same supported versions in Python.
 */
#ifndef PYFRAME_COMPAT_H
#define PYFRAME_COMPAT_H

/* The internal headers below need Py_BUILD_CORE, and need Python.h to have
 * seen it too (pycore_gc.h redefines what objimpl.h declares otherwise). */
#ifndef Py_BUILD_CORE
#  define Py_BUILD_CORE 1
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if PY_VERSION_HEX < 0x030C0000 || PY_VERSION_HEX >= 0x030E0000
#  error "pyframe supports CPython 3.12 and 3.13 only"
#endif
#ifdef Py_GIL_DISABLED
#  error "pyframe supports CPython 3.12 and 3.13 with the GIL only"
#endif

/* CPython 3.13 changed the interpreter frame in ways that touch us:
 * - gh-105727: _PyInterpreterFrame.f_code became f_executable (still always a
 *   code object for the frames a PEP 523 function is handed).
 * - prev_instr ("one before the next instruction") became instr_ptr ("the
 *   instruction about to run"), so a frame that has not started points one
 *   code unit earlier on 3.12 than on 3.13.
 * - _PyCFrame went away: the current frame moved from tstate->cframe to
 *   tstate itself.
 * - _PyEval_FrameClearAndPop is exported; 3.12 exports nothing that clears
 *   and pops a thread frame, so eval_frame.c does it itself there.
 * Remove the 3.12 branches when 3.12 support is dropped. */
#define PYFRAME_PY313 (PY_VERSION_HEX >= 0x030D0000)

#include "internal/pycore_code.h"     // _PyLocals_GetKind, CO_FAST_*, _PyCode_CODE
#include "internal/pycore_dict.h"     // PyDictKeysObject, DK_UNICODE_ENTRIES
#include "internal/pycore_frame.h"    // _PyInterpreterFrame, struct _frame
#if PYFRAME_PY313
#  include "internal/pycore_ceval.h"  // _PyEval_FrameClearAndPop
#endif

static inline PyCodeObject *
compat_frame_code(_PyInterpreterFrame *frame)
{
#if PYFRAME_PY313
    return (PyCodeObject *)frame->f_executable;
#else
    return frame->f_code;
#endif
}

/* The frame the thread is running now (the caller, while a PEP 523 function
 * is deciding about a new frame: CPython links the new frame only inside
 * _PyEval_EvalFrameDefault). */
static inline _PyInterpreterFrame *
compat_current_frame(PyThreadState *tstate)
{
#if PYFRAME_PY313
    return tstate->current_frame;
#else
    return tstate->cframe->current_frame;
#endif
}

/* The offset in bytes CPython's frame.f_lasti would report: -1 on 3.12 for a
 * frame that has not started, 0 on 3.13. */
static inline int
compat_frame_lasti(_PyInterpreterFrame *frame)
{
    int units = _PyInterpreterFrame_LASTI(frame);
    return units < 0 ? -1 : units * (int)sizeof(_Py_CODEUNIT);
}

/* True while the frame has run none of its instructions. */
static inline int
compat_frame_not_started(_PyInterpreterFrame *frame)
{
    _Py_CODEUNIT *first = _PyCode_CODE(compat_frame_code(frame));
#if PYFRAME_PY313
    return frame->instr_ptr == first;
#else
    return frame->prev_instr == first - 1;
#endif
}

/* Points a frame that has not started at the first instruction of `code`
 * (stealing the reference); returns the code it ran before (owned). */
static inline PyCodeObject *
compat_frame_swap_code(_PyInterpreterFrame *frame, PyCodeObject *code)
{
    PyCodeObject *previous = compat_frame_code(frame);
#if PYFRAME_PY313
    frame->f_executable = (PyObject *)code;
    frame->instr_ptr = _PyCode_CODE(code);
#else
    frame->f_code = code;
    frame->prev_instr = _PyCode_CODE(code) - 1;
#endif
    return previous;
}

/* True when someone watches `dict`: its low version-tag bits hold the dict
 * watcher bits and, from 3.13 on, a watched-mutation count for the tier-2
 * optimizer (GH-113710).  localsplus.c writes into a dict of its own in place,
 * without the events watchers expect, only while this is false. */
static inline int
compat_dict_watched(PyDictObject *dict)
{
    uint64_t tag = dict->ma_version_tag;
#if PYFRAME_PY313
    return (tag & DICT_WATCHER_AND_MODIFICATION_MASK) != 0;
#else
    return (tag & DICT_VERSION_MASK) != 0;
#endif
}

#endif /* PYFRAME_COMPAT_H */
