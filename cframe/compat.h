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

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x03100000
#  error "pyframe supports CPython 3.11 to 3.15 only"
#endif
#ifdef Py_GIL_DISABLED
#  error "pyframe supports CPython 3.11 to 3.15 with the GIL only"
#endif

/* CPython 3.12 changed what a PEP 523 function is handed and must do:
 * - gh-96421 (a shim frame on entry to the interpreter): from 3.12 the
 *   evaluator clears and pops the frame it was given when it returns.  On
 *   3.11 the caller that pushed it (_PyEval_Vector) clears and pops it, at
 *   its address, after the PEP 523 function returned, whether or not it ran:
 *   see PYFRAME_CALLER_POPS_FRAME.
 * - gh-96237: _PyInterpreterFrame.f_func (a function) became f_funcobj
 *   (any object).
 * - GH-93897: code objects gained co_framesize; 3.11 sizes a frame as
 *   localsplus + value stack + FRAME_SPECIALS_SIZE.
 * - PEP 709 (inlined comprehensions) added CO_FAST_HIDDEN slots; 3.11 runs
 *   every comprehension in a frame of its own.
 * - PEP 689 renamed the code-extra functions PyUnstable_*; 3.11 has the
 *   underscore names.
 * - dict watchers (gh-91052) are 3.12's; 3.11 has none.
 * Remove the 3.11 branches when 3.11 support is dropped (October 2027). */
#define PYFRAME_PY312 (PY_VERSION_HEX >= 0x030C0000)
#define PYFRAME_CALLER_POPS_FRAME (!PYFRAME_PY312)

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

/* CPython 3.14 made the frame's references "stack references" (gh-117139,
 * internal/pycore_stackref.h): f_executable, f_funcobj and every localsplus
 * slot are a _PyStackRef, a pointer whose low tag bit says the slot does not
 * own a reference (an immortal object, or one a caller keeps alive).  A slot
 * is read by masking the tag, written with a reference of its own, and
 * emptied by "closing" it, which drops the reference only if it owns one.
 * The frame's header moved to pycore_interpframe_structs.h, its helpers to
 * pycore_interpframe.h, and `stacktop` (an index) became `stackpointer`. */
#define PYFRAME_PY314 (PY_VERSION_HEX >= 0x030E0000)
#define PYFRAME_PY315 (PY_VERSION_HEX >= 0x030F0000)

/* pyframe's specialization mode (specialize.c) runs on CPython 3.12+: while
 * skipped code runs, pyframe's function steps aside so that CPython
 * specializes and inlines calls again, and keeps every other frame on the
 * hook by giving those functions a vectorcall of its own.  It relies on what
 * the interpreter checks before it pushes a callee's frame itself:
 * - the function's version, on every specialized call path: CALL_PY_* and
 *   CALL_BOUND_METHOD_* (3.12+), CALL_KW_PY / CALL_KW_BOUND_METHOD (3.14+),
 *   CALL_EX_PY (3.15), LOAD_ATTR_PROPERTY (not 3.14's: below),
 *   LOAD_ATTR_GETATTRIBUTE_OVERRIDDEN and the __getitem__ call
 *   (BINARY_SUBSCR_GETITEM; BINARY_OP_SUBSCR_GETITEM from 3.14).
 *   PyFunction_SetVectorcall clears the version, and a call site
 *   specializes only for a function with CPython's vectorcall (gh-91049 and
 *   gh-92193, 3.12);
 * - the function's vectorcall, on the unspecialized CALL (and CALL_KW,
 *   CALL_FUNCTION_EX from 3.13), which push the frame themselves only for a
 *   function whose vectorcall is _PyFunction_Vectorcall (3.12+);
 * - MAKE_FUNCTION giving the functions it makes their code's co_version
 *   (3.12+; a function made otherwise gets a version lazily, when a call
 *   site first specializes for it, and only with CPython's vectorcall): the
 *   function watcher hears of the function before that, so pyframe zeroes
 *   co_version of code that is not skipped;
 * - CALL_ALLOC_AND_ENTER_INIT (gh-91095, 3.13+), which inlines a class's
 *   __init__ guarded by the class's version alone, being made only for
 *   classes that allocate with PyType_GenericAlloc (below).  3.12 has no
 *   such call site: its class calls run __init__ through its vectorcall.
 * gh-146031 (3.15) also added
 * _PyInterpreterState_SetEvalFrameAllowSpecialization, which pyframe does not
 * use: with it set, specialized calls still go through
 * the installed function (measured on 3.15.2: every fib frame reached a
 * pass-through hook).
 *
 * Not on 3.11: its generic CALL pushes the frame of any PyFunction_Type
 * callee itself whenever no PEP 523 function is installed, without looking
 * at the function's vectorcall (ceval.c, CALL: `Py_TYPE(function) ==
 * &PyFunction_Type && tstate->interp->eval_frame == NULL`), and
 * _PyFunction_GetVersionForCurrentState versions any function, whatever its
 * vectorcall, when a call site specializes for it (CALL_PY_EXACT_ARGS then
 * checks that version only).  3.11 has no function watcher either (gh-91053,
 * 3.12).  So with the hook stepped aside, a frame of code that is not
 * skipped would run unseen: tests/test_specialization_probe.py shows it. */
#define PYFRAME_HAS_SPECIALIZATION_MODE PYFRAME_PY312
/* CALL_ALLOC_AND_ENTER_INIT exists (gh-91095, 3.13). */
#define PYFRAME_INLINES_INIT PYFRAME_PY313
/* LOAD_ATTR_PROPERTY checks only the class's version (3.14: below). */
#define PYFRAME_PROPERTY_GUARDED_BY_CLASS (PYFRAME_PY314 && !PYFRAME_PY315)

#include "internal/pycore_code.h"     // _PyLocals_GetKind, CO_FAST_*, _PyCode_CODE
#include "internal/pycore_dict.h"     // PyDictKeysObject, DK_UNICODE_ENTRIES
#include "internal/pycore_frame.h"    // struct _frame (PyFrameObject)
#if PYFRAME_PY314
#  include "internal/pycore_interpframe.h"  // _PyInterpreterFrame, _PyFrame_GetFirstComplete
#  include "internal/pycore_stackref.h"     // _PyStackRef and its conversions
#endif
#if PYFRAME_HAS_SPECIALIZATION_MODE
#  include "internal/pycore_function.h"     // _PyFunction_SetVersion
#  if PYFRAME_PY313
#    include "opcode_ids.h"                 // MAKE_FUNCTION
#  else
#    include "opcode.h"                     // MAKE_FUNCTION
#  endif
#endif
#if PYFRAME_PY313
#  include "internal/pycore_ceval.h"  // _PyEval_FrameClearAndPop
#endif
#if !PYFRAME_PY312
#  include "internal/pycore_gc.h"     // _PyObject_GC_IS_TRACKED (3.12+ get it with pycore_dict.h)
#endif

#if !PYFRAME_PY312
#  define PyUnstable_Code_GetExtra _PyCode_GetExtra
#  define PyUnstable_Code_SetExtra _PyCode_SetExtra
#  define PyUnstable_Eval_RequestCodeExtraIndex _PyEval_RequestCodeExtraIndex

/* gh-101578 (3.12) keeps a raised exception as one object and added these
 * two to take it out and put it back; 3.11 keeps type, value and traceback
 * apart.  The same on 3.11: the normalized exception, carrying its
 * traceback. */
static inline PyObject *
PyErr_GetRaisedException(void)
{
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    if (type == NULL) {
        return NULL;
    }
    PyErr_NormalizeException(&type, &value, &traceback);
    if (traceback != NULL) {
        PyException_SetTraceback(value, traceback);
        Py_DECREF(traceback);
    }
    Py_DECREF(type);
    return value;
}

static inline void
PyErr_SetRaisedException(PyObject *exception)
{
    if (exception == NULL) {
        PyErr_Clear();
        return;
    }
    PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(exception)), exception,
                  PyException_GetTraceback(exception));
}
#endif

/* ---- one reference held by the frame ------------------------------------ */

/* compat_ref is what a localsplus slot, f_executable and f_funcobj hold. */
#if PYFRAME_PY314
typedef _PyStackRef compat_ref;
#else
typedef PyObject *compat_ref;
#endif

/* The object `ref` refers to (Borrowed), or NULL for an empty slot. */
static inline PyObject *
compat_ref_borrow(compat_ref ref)
{
#if PYFRAME_PY314
    return PyStackRef_IsNull(ref) ? NULL : PyStackRef_AsPyObjectBorrow(ref);
#else
    return ref;
#endif
}

/* A reference of its own to `value` (not NULL) for a slot. */
static inline compat_ref
compat_ref_new(PyObject *value)
{
#if PYFRAME_PY314
    return PyStackRef_FromPyObjectNew(value);
#else
    return Py_NewRef(value);
#endif
}

/* A slot's reference made of `value`'s (stolen; not NULL). */
static inline compat_ref
compat_ref_steal(PyObject *value)
{
#if PYFRAME_PY314
    return PyStackRef_FromPyObjectSteal(value);
#else
    return value;
#endif
}

/* The object of `ref` as a reference of the caller's own (the slot's,
 * handed over, or a new one when the slot owned none); NULL when empty. */
static inline PyObject *
compat_ref_take(compat_ref ref)
{
#if PYFRAME_PY314
    return PyStackRef_IsNull(ref) ? NULL : PyStackRef_AsPyObjectSteal(ref);
#else
    return ref;
#endif
}

static inline compat_ref
compat_ref_null(void)
{
#if PYFRAME_PY314
    return PyStackRef_NULL;
#else
    return NULL;
#endif
}

/* ---- the interpreter frame ---------------------------------------------- */

static inline PyCodeObject *
compat_frame_code(_PyInterpreterFrame *frame)
{
#if PYFRAME_PY314
    return (PyCodeObject *)PyStackRef_AsPyObjectBorrow(frame->f_executable);
#elif PYFRAME_PY313
    return (PyCodeObject *)frame->f_executable;
#else
    return frame->f_code;
#endif
}

/* How many words a frame running `code` takes on the data stack: its
 * specials, localsplus and value stack. */
static inline int
compat_code_framesize(PyCodeObject *code)
{
#if PYFRAME_PY312
    return code->co_framesize;
#else
    return code->co_nlocalsplus + code->co_stacksize + (int)FRAME_SPECIALS_SIZE;
#endif
}

/* True for a PEP 709 inlined-comprehension slot (3.12+), which is not one
 * of the frame's f_locals. */
static inline int
compat_kind_hidden(_PyLocals_Kind kind)
{
#if PYFRAME_PY312
    return (kind & CO_FAST_HIDDEN) != 0;
#else
    return 0;
#endif
}

/* The function object the frame runs (Borrowed; may be NULL or not a
 * function for frames CPython makes itself). */
static inline PyObject *
compat_frame_function(_PyInterpreterFrame *frame)
{
#if PYFRAME_PY312
    return compat_ref_borrow(frame->f_funcobj);
#else
    return (PyObject *)frame->f_func;
#endif
}

/* Gives the frame `func` (stolen) to run; returns the function it had (owned). */
static inline PyObject *
compat_frame_swap_function(_PyInterpreterFrame *frame, PyObject *func)
{
#if PYFRAME_PY312
    PyObject *previous = compat_ref_take(frame->f_funcobj);
    frame->f_funcobj = compat_ref_steal(func);
#else
    PyObject *previous = (PyObject *)frame->f_func;
    assert(func == NULL || PyFunction_Check(func));   /* 3.11 frames run functions */
    frame->f_func = (PyFunctionObject *)func;
#endif
    return previous;
}

/* Slot `index` of localsplus: its value (Borrowed) or NULL when empty. */
static inline PyObject *
compat_frame_slot(_PyInterpreterFrame *frame, int index)
{
    return compat_ref_borrow(frame->localsplus[index]);
}

/* Empties slot `index`; returns what it held (owned) or NULL. */
static inline PyObject *
compat_frame_slot_take(_PyInterpreterFrame *frame, int index)
{
    PyObject *value = compat_ref_take(frame->localsplus[index]);
    frame->localsplus[index] = compat_ref_null();
    return value;
}

/* Stores a reference to `value` (not NULL) in slot `index`, then releases
 * what the slot held (which may run a finalizer: the slot is final by then). */
static inline void
compat_frame_slot_set(_PyInterpreterFrame *frame, int index, PyObject *value)
{
    PyObject *previous = compat_ref_take(frame->localsplus[index]);
    frame->localsplus[index] = compat_ref_new(value);
    Py_XDECREF(previous);
}

/* Empties slot `index` of a frame whose slot holds nothing that needs
 * releasing (an empty slot, or one whose reference moved elsewhere). */
static inline void
compat_frame_slot_forget(_PyInterpreterFrame *frame, int index)
{
    frame->localsplus[index] = compat_ref_null();
}

/* Marks the frame's value stack empty: the frame holds its `nlocalsplus`
 * slots and nothing above them. */
static inline void
compat_frame_set_stack_empty(_PyInterpreterFrame *frame, int nlocalsplus)
{
#if PYFRAME_PY314
    frame->stackpointer = frame->localsplus + nlocalsplus;
#else
    frame->stacktop = nlocalsplus;
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

/* The first frame from `frame` back that has run its prologue (the one a
 * frame object may be made for); NULL if none.  3.12 has this as
 * _PyFrame_GetFirstComplete; 3.11 has only the test it repeats. */
static inline _PyInterpreterFrame *
compat_first_complete_frame(_PyInterpreterFrame *frame)
{
#if PYFRAME_PY312
    return _PyFrame_GetFirstComplete(frame);
#else
    while (frame != NULL && _PyFrame_IsIncomplete(frame)) {
        frame = frame->previous;
    }
    return frame;
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
#if PYFRAME_PY314
    PyCodeObject *previous = (PyCodeObject *)compat_ref_take(frame->f_executable);
    frame->f_executable = compat_ref_steal((PyObject *)code);
    frame->instr_ptr = _PyCode_CODE(code);
#elif PYFRAME_PY313
    PyCodeObject *previous = compat_frame_code(frame);
    frame->f_executable = (PyObject *)code;
    frame->instr_ptr = _PyCode_CODE(code);
#else
    PyCodeObject *previous = compat_frame_code(frame);
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
#if !PYFRAME_PY312
    (void)dict;
    return 0;   /* 3.11 has no dict watchers */
#else
#if PYFRAME_PY314
    /* PEP 699: 3.14 removed ma_version_tag; the watcher bits stayed, in
     * _ma_watcher_tag. */
    uint64_t tag = dict->_ma_watcher_tag;
#else
    uint64_t tag = dict->ma_version_tag;
#endif
#if PYFRAME_PY313
    return (tag & DICT_WATCHER_AND_MODIFICATION_MASK) != 0;
#else
    return (tag & DICT_VERSION_MASK) != 0;
#endif
#endif
}

/* ---- recursion limits ----------------------------------------------------- */

/* How CPython counts recursion, for the headroom below:
 * - 3.11: one counter, tstate->recursion_remaining, takes a level for each
 *   Python frame and for each C call that checks for recursion (a method
 *   call such as f_locals.values() does).
 * - GH-96510 (gh-91079, 3.12) split it: py_recursion_remaining counts Python
 *   frames against sys.getrecursionlimit(), c_recursion_remaining counts C
 *   calls against a fixed limit (GH-107535: 1500 on 3.12, each entry to the
 *   evaluator costing 2; under a PEP 523 function every Python call is one).
 * - GH-130007 (gh-91079, 3.14) checks the C stack by its address instead of
 *   a counter: only Python frames are counted.
 * Remove a branch when its versions are dropped. */
#define PYFRAME_ONE_RECURSION_COUNTER (!PYFRAME_PY312)
#define PYFRAME_C_RECURSION_COUNTER (PYFRAME_PY312 && !PYFRAME_PY314)

/* Levels of recursion pyframe gives the Python it runs before a frame (the
 * callback, guards): they run at the depth of the frame they decide about,
 * which has not started, so without it their own calls would reach the
 * recursion limit where the program's frame would not, and their frames
 * would end the program's RecursionError traceback.  As many as CPython
 * allows a thread that is raising RecursionError (tstate->recursion_headroom).
 */
#define PYFRAME_USER_PYTHON_HEADROOM 50

/* Gives the thread `levels` more recursion (negative: takes them back).
 * sys.setrecursionlimit() keeps the depth a thread is at, and with it the
 * levels given, until they are taken back. */
static inline void
compat_recursion_headroom(PyThreadState *tstate, int levels)
{
#if PYFRAME_ONE_RECURSION_COUNTER
    tstate->recursion_remaining += levels;
#else
    tstate->py_recursion_remaining += levels;
#  if PYFRAME_C_RECURSION_COUNTER
    tstate->c_recursion_remaining += levels;
#  endif
#endif
}

#if PYFRAME_HAS_SPECIALIZATION_MODE
/* ---- what the specialization mode touches (specialize.c) ------------------ */

#if !PYFRAME_PY313
/* 3.13 added these (gh-111262 PyDict_Pop, gh-110289 PyUnicode_EqualToUTF8,
 * gh-105927 PyWeakref_GetRef); 3.12's equivalents, for the mode's use. */
static inline int
PyDict_Pop(PyObject *dict, PyObject *key, PyObject **result)
{
    PyObject *value = PyDict_GetItemWithError(dict, key);   /* Borrowed. */
    if (result != NULL) {
        *result = Py_XNewRef(value);
    }
    if (value == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    if (PyDict_DelItem(dict, key) < 0) {
        if (result != NULL) {
            Py_CLEAR(*result);
        }
        return -1;
    }
    return 1;
}

static inline int
PyUnicode_EqualToUTF8(PyObject *unicode, const char *string)
{
    return PyUnicode_CompareWithASCIIString(unicode, string) == 0;
}

static inline int
PyWeakref_GetRef(PyObject *ref, PyObject **pobj)
{
    PyObject *object = PyWeakref_GetObject(ref);   /* Borrowed. */
    if (object == NULL) {
        *pobj = NULL;
        return -1;
    }
    *pobj = object == Py_None ? NULL : Py_NewRef(object);
    return 0;
}
#endif

/* True when the thread's running frame is executing MAKE_FUNCTION: a
 * function made now is the one the bytecode makes, which the code calls (or
 * hands to __build_class__) as a function.  3.13+ point instr_ptr at the
 * instruction being executed, 3.12 prev_instr.  An instrumented instruction
 * reads as another opcode, which callers treat as "made by C code". */
static inline int
compat_making_function_in_bytecode(PyThreadState *tstate)
{
    _PyInterpreterFrame *frame = compat_current_frame(tstate);
#if PYFRAME_PY314
    /* 3.14 added FRAME_OWNED_BY_INTERPRETER before FRAME_OWNED_BY_CSTACK. */
    if (frame == NULL || frame->owner >= FRAME_OWNED_BY_INTERPRETER) {
        return 0;
    }
#else
    if (frame == NULL || frame->owner >= FRAME_OWNED_BY_CSTACK) {
        return 0;
    }
#endif
#if PYFRAME_PY313
    return frame->instr_ptr->op.code == MAKE_FUNCTION;
#else
    return frame->prev_instr->op.code == MAKE_FUNCTION;
#endif
}

/* The version MAKE_FUNCTION gives the functions it makes of `code` (3.12+);
 * 0 makes them unversioned, which no call site specializes for. */
static inline uint32_t
compat_code_version(PyCodeObject *code)
{
    return code->co_version;
}

/* 3.13+: the interpreter's function-version cache (gh-117045) keeps borrowed
 * references to code objects by version, and a dying code object leaves it by
 * the version it has then: one whose co_version goes to 0 leaves it first, or
 * its slot would point to freed memory once the code object is gone (memcheck
 * saw that read).  Leaving the cache only makes a later lookup by that
 * version miss.  3.12 has no such cache. */
static inline void
compat_code_set_version(PyCodeObject *code, uint32_t version)
{
#if PYFRAME_PY313
    if (version == 0 && code->co_version != 0) {
        struct _func_version_cache_item *slot =
            &PyInterpreterState_Get()->func_state
                 .func_version_cache[code->co_version % FUNC_VERSION_CACHE_SIZE];
        if (slot->code == (PyObject *)code) {
            slot->code = NULL;
            slot->func = NULL;
        }
    }
#endif
    code->co_version = version;
}

/* Gives `func` (with CPython's vectorcall) `version`, as MAKE_FUNCTION does.
 * 3.13+ also enter it in the function-version cache; 3.12 has none. */
static inline void
compat_function_set_version(PyFunctionObject *func, uint32_t version)
{
#if PYFRAME_PY313
    _PyFunction_SetVersion(func, version);
#else
    func->func_version = version;
#endif
}

#if PYFRAME_INLINES_INIT
/* CALL_ALLOC_AND_ENTER_INIT (3.13+) inlines the __init__ it cached on a
 * class without checking that function's version or vectorcall; only the
 * class's version guards it.  CPython's specializer makes that call site
 * only for a class that uses object.__new__ and PyType_GenericAlloc itself
 * (specialize.c, get_init_for_simple_managed_python_class): a class whose
 * tp_alloc is another function (one that calls PyType_GenericAlloc, so
 * objects are made the same way) never gets one, while its version, and
 * with it every other specialization on the class and its instances, stay.
 * Blocking also drops the class's version once (PyType_Modified), and with
 * it the __init__ call sites cached. */
static PyObject *
compat_blocked_alloc(PyTypeObject *type, Py_ssize_t nitems)
{
    return PyType_GenericAlloc(type, nitems);
}

/* 1 when CPython may inline the __init__ of `type`, or pyframe keeps it
 * from doing so. */
static inline int
compat_class_may_inline_init(PyTypeObject *type)
{
    return type->tp_new == PyBaseObject_Type.tp_new
           && (type->tp_alloc == PyType_GenericAlloc || type->tp_alloc == compat_blocked_alloc);
}

static inline int
compat_class_init_blocked(PyTypeObject *type)
{
    return type->tp_alloc == compat_blocked_alloc;
}

static inline void
compat_class_block_init(PyTypeObject *type)
{
    type->tp_alloc = compat_blocked_alloc;
    PyType_Modified(type);
}

static inline void
compat_class_unblock_init(PyTypeObject *type)
{
    if (type->tp_alloc == compat_blocked_alloc) {
        type->tp_alloc = PyType_GenericAlloc;
    }
}

/* 3.14's LOAD_ATTR_PROPERTY pushes the frame of the getter it cached,
 * guarded by the class's version alone (bytecodes.c, _LOAD_ATTR_PROPERTY_FRAME;
 * 3.12 and 3.13 check the getter's version too; on 3.15 the contract tests,
 * tests/specialization, see every getter frame without this).  CPython's
 * specializer makes no LOAD_ATTR specialization through a class's
 * descriptors when its tp_getattro is not PyObject_GenericGetAttr
 * (analyze_descriptor_load: GETSET_OVERRIDDEN): pyframe gives a class whose
 * property getter must reach the hook another function that calls
 * PyObject_GenericGetAttr, which keeps attribute loads on its instances
 * unspecialized (the slow path), and drops its version once, and with it the
 * property loads cached. */
#if PYFRAME_PROPERTY_GUARDED_BY_CLASS
#  include "internal/pycore_descrobject.h"   // _PyPropertyObject

static PyObject *
compat_blocked_getattro(PyObject *object, PyObject *name)
{
    return PyObject_GenericGetAttr(object, name);
}

/* The getter of `descr` when it is a property (Borrowed), else NULL. */
static inline PyObject *
compat_property_getter(PyObject *descr)
{
    return Py_IS_TYPE(descr, &PyProperty_Type) ? ((_PyPropertyObject *)descr)->prop_get : NULL;
}

static inline int
compat_class_may_inline_property(PyTypeObject *type)
{
    return type->tp_getattro == PyObject_GenericGetAttr
           || type->tp_getattro == compat_blocked_getattro;
}

static inline int
compat_class_property_blocked(PyTypeObject *type)
{
    return type->tp_getattro == compat_blocked_getattro;
}

static inline void
compat_class_block_property(PyTypeObject *type)
{
    type->tp_getattro = compat_blocked_getattro;
    PyType_Modified(type);
}

static inline void
compat_class_unblock_property(PyTypeObject *type)
{
    if (type->tp_getattro == compat_blocked_getattro) {
        type->tp_getattro = PyObject_GenericGetAttr;
    }
}
#else
#  define compat_property_getter(descr) ((void)(descr), (PyObject *)NULL)
#  define compat_class_may_inline_property(type) ((void)(type), 0)
#  define compat_class_property_blocked(type) ((void)(type), 0)
#  define compat_class_block_property(type) ((void)(type))
#  define compat_class_unblock_property(type) ((void)(type))
#endif

/* Where the dict of `type`'s subclasses (cls.__subclasses__(): id -> weak
 * reference) lives.  A static builtin type (object, int, ...) keeps its in
 * the interpreter, at the index its tp_subclasses field holds plus one
 * (gh-94673, 3.12; 3.13 split builtin from extension types, gh-117398).
 * 3.15 exports _PyType_LookupSubclasses/_PyType_InitSubclasses instead.
 * NULL when pyframe cannot find it. */
static inline PyObject **
compat_type_subclasses_slot(PyTypeObject *type)
{
#if PYFRAME_PY315
    (void)type;
    return NULL;   /* not used: see compat_type_subclasses */
#else
    if (!(type->tp_flags & _Py_TPFLAGS_STATIC_BUILTIN)) {
        return (PyObject **)&type->tp_subclasses;
    }
    if (type->tp_subclasses == NULL) {
        return NULL;
    }
    size_t index = (size_t)type->tp_subclasses - 1;
    PyInterpreterState *interp = PyInterpreterState_Get();
    managed_static_type_state *state = NULL;
    if (index < _Py_MAX_MANAGED_STATIC_BUILTIN_TYPES
            && interp->types.builtins.initialized[index].type == type) {
        state = &interp->types.builtins.initialized[index];
    }
    else if (index < _Py_MAX_MANAGED_STATIC_EXT_TYPES
             && interp->types.for_extensions.initialized[index].type == type) {
        state = &interp->types.for_extensions.initialized[index];
    }
    return state != NULL ? &state->tp_subclasses : NULL;
#endif
}

/* The subclass dict of `type` (Borrowed), or NULL when it has none. */
static inline PyObject *
compat_type_subclasses(PyTypeObject *type)
{
#if PYFRAME_PY315
    return _PyType_LookupSubclasses(type);
#else
    PyObject **slot = compat_type_subclasses_slot(type);
    return slot != NULL ? *slot : NULL;
#endif
}

/* The subclass dict of `type`, made if it has none (Borrowed).  NULL with
 * an exception. */
static inline PyObject *
compat_type_init_subclasses(PyTypeObject *type)
{
#if PYFRAME_PY315
    return _PyType_InitSubclasses(type);
#else
    PyObject **slot = compat_type_subclasses_slot(type);
    if (slot == NULL) {
        PyErr_Format(PyExc_SystemError, "pyframe: cannot find the subclasses of %s",
                     type->tp_name);
        return NULL;
    }
    if (*slot == NULL) {
        *slot = PyDict_New();
    }
    return *slot;
#endif
}
#endif   /* PYFRAME_INLINES_INIT */
#endif   /* PYFRAME_HAS_SPECIALIZATION_MODE */

#endif /* PYFRAME_COMPAT_H */
