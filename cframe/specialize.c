/* specialize.c: the specialization mode (CPython 3.12+; compat.h says why not
 * 3.11).
 *
 * While any PEP 523 function is installed, CPython runs every call through
 * it and inlines none, so code a callback skipped still runs 1.7-1.9x slower
 * than without a hook.  In this mode a skipped frame runs with pyframe's
 * function stepped aside (hook.c), and CPython specializes and inlines
 * its calls again.  The frames that must still reach the hook are kept off
 * the inlined paths by their function objects:
 *
 * - every function of code that is not skipped gets pyframe's vectorcall,
 *   which puts the hook back for that call.  PyFunction_SetVectorcall also
 *   clears the function's version, and call sites inline only a function
 *   whose version they cached, or (unspecialized) one with CPython's own
 *   vectorcall;
 * - its code gets co_version 0, since MAKE_FUNCTION gives the functions it
 *   makes the code's version after the function watcher saw them;
 * - functions that exist when the mode goes on are found by walking the
 *   garbage collector's objects, new ones by a function watcher;
 * - a class whose __init__ is not skipped gets no CALL_ALLOC_AND_ENTER_INIT
 *   call sites (3.13+), which inline __init__ checking only the class's
 *   version (specialize_classes.c);
 * - a function made by C code rather than by MAKE_FUNCTION (exec, eval,
 *   types.FunctionType), and a class body, are run by C without a call
 *   through their vectorcall: making one while stepped aside puts the hook
 *   back for the rest of the skipped frame.
 *
 * A function of skipped code gets CPython's vectorcall and its version back
 * on its first call through pyframe's (its code keeps its version from then
 * on); when decisions change (reset(), another cache) the walk runs again.
 * A vectorcall someone else set is kept and called, and put back when the
 * function is released.
 */
#include "specialize_classes.h"

#if PYFRAME_HAS_SPECIALIZATION_MODE

static int specializing;

static int watcher_id = -1;
/* Code-extra slot holding a code's own co_version + 1 while pyframe keeps
 * its co_version at 0. */
static Py_ssize_t saved_version_index = -1;
/* Owned dict or NULL: id(function) -> address of the vectorcall it had, for
 * functions whose vectorcall was not CPython's when pyframe took it over. */
static PyObject *foreign_vectorcalls;
/* Functions given CPython's vectorcall back since the last walk, and the
 * serial of the owner whose SKIP decisions released them (RELEASED_MIXED:
 * more than one owner's). */
static Py_ssize_t released_since_walk;
static uint64_t released_under;
#define RELEASED_MIXED UINT64_MAX
/* CPython's vectorcall for functions, _PyFunction_Vectorcall, which 3.13
 * and 3.14 do not export: read off a function CPython made. */
static vectorcallfunc cpython_vectorcall;

static PyObject *function_vectorcall(PyObject *, PyObject *const *, size_t, PyObject *);

/* ---- code versions --------------------------------------------------------- */

static void *
code_saved_version(PyCodeObject *code)
{
    void *saved = NULL;
    if (code->co_extra != NULL
            && PyUnstable_Code_GetExtra((PyObject *)code, saved_version_index, &saved) < 0) {
        PyErr_Clear();
        return NULL;
    }
    return saved;
}

/* Makes the functions MAKE_FUNCTION makes of `code` unversioned.  -1 with
 * MemoryError. */
static int
code_hide_version(PyCodeObject *code)
{
    if (code_saved_version(code) != NULL) {
        return 0;
    }
    void *saved = (void *)((uintptr_t)compat_code_version(code) + 1);
    if (PyUnstable_Code_SetExtra((PyObject *)code, saved_version_index, saved) < 0) {
        return -1;
    }
    compat_code_set_version(code, 0);
    return 0;
}

static void
code_restore_version(PyCodeObject *code)
{
    void *saved = code_saved_version(code);
    if (saved != NULL) {
        compat_code_set_version(code, (uint32_t)((uintptr_t)saved - 1));
        if (PyUnstable_Code_SetExtra((PyObject *)code, saved_version_index, NULL) < 0) {
            PyErr_Clear();   /* the slot exists: cannot fail */
        }
    }
}

/* The code and the code objects nested in it (which functions made later
 * will run), all restored. */
static void
code_restore_versions_nested(PyCodeObject *code)
{
    code_restore_version(code);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(code->co_consts); i++) {
        PyObject *constant = PyTuple_GET_ITEM(code->co_consts, i);
        if (PyCode_Check(constant)) {
            code_restore_versions_nested((PyCodeObject *)constant);
        }
    }
}

/* ---- function objects -------------------------------------------------------- */

static PyObject *
function_key(PyFunctionObject *func)
{
    return PyLong_FromVoidPtr(func);
}

/* The vectorcall `func` had before pyframe's: CPython's or a saved one.
 * NULL with an exception. */
static vectorcallfunc
function_original_vectorcall(PyFunctionObject *func)
{
    PyObject *key, *saved;
    void *address;

    if (foreign_vectorcalls == NULL || PyDict_GET_SIZE(foreign_vectorcalls) == 0) {
        return cpython_vectorcall;
    }
    if ((key = function_key(func)) == NULL) {
        return NULL;
    }
    saved = PyDict_GetItemWithError(foreign_vectorcalls, key);   /* Borrowed. */
    Py_DECREF(key);
    if (saved == NULL) {
        return PyErr_Occurred() ? NULL : cpython_vectorcall;
    }
    address = PyLong_AsVoidPtr(saved);
    return address == NULL ? NULL : (vectorcallfunc)address;
}

/* Drops what pyframe saved about `func` (it is being destroyed, or gets
 * its vectorcall back). */
static void
function_forget_foreign(PyFunctionObject *func)
{
    PyObject *key;
    if (foreign_vectorcalls == NULL || PyDict_GET_SIZE(foreign_vectorcalls) == 0) {
        return;
    }
    if ((key = function_key(func)) == NULL || PyDict_Pop(foreign_vectorcalls, key, NULL) < 0) {
        PyErr_WriteUnraisable((PyObject *)func);
    }
    Py_XDECREF(key);
}

/* Gives `func` pyframe's vectorcall, which also clears its version, and
 * unversions its code.  -1 with an exception (MemoryError). */
static int
function_hook(PyFunctionObject *func)
{
    PyObject *key, *address;
    int stored;

    if (code_hide_version((PyCodeObject *)func->func_code) < 0) {
        return -1;
    }
    if (func->vectorcall == function_vectorcall) {
        return 0;
    }
    if (func->vectorcall != cpython_vectorcall) {
        if (foreign_vectorcalls == NULL && (foreign_vectorcalls = PyDict_New()) == NULL) {
            return -1;
        }
        key = function_key(func);
        address = PyLong_FromVoidPtr((void *)func->vectorcall);
        stored = key != NULL && address != NULL
                 ? PyDict_SetItem(foreign_vectorcalls, key, address) : -1;
        Py_XDECREF(key);
        Py_XDECREF(address);
        if (stored < 0) {
            return -1;
        }
    }
    PyFunction_SetVectorcall(func, function_vectorcall);
    return 0;
}

/* The serial of the owner in force on this thread; 0: none. */
static inline uint64_t
current_owner_serial(void)
{
    thread_hook *thread = hook_thread;   /* Borrowed. */
    return thread != NULL && thread->owner != NULL ? thread->owner->serial : 0;
}

/* Gives `func` the vectorcall it had and, with CPython's, the version of its
 * code, whose own version comes back too: its frames may be inlined again. */
static void
function_release(PyFunctionObject *func)
{
    PyCodeObject *code = (PyCodeObject *)func->func_code;   /* Borrowed. */
    vectorcallfunc original = function_original_vectorcall(func);

    if (original == NULL) {
        /* Cannot happen short of a broken dict: keep pyframe's, which
         * still runs the function. */
        PyErr_WriteUnraisable((PyObject *)func);
        return;
    }
    code_restore_version(code);
    function_forget_foreign(func);
    func->vectorcall = original;
    if (original == cpython_vectorcall) {
        compat_function_set_version(func, compat_code_version(code));
    }
    if (released_since_walk++ == 0) {
        released_under = current_owner_serial();
    }
    else if (released_under != current_owner_serial()) {
        released_under = RELEASED_MIXED;
    }
    /* Classes whose __init__ this is; on 3.14 also those whose property
     * getter it may be (compat.h, PYFRAME_PROPERTY_GUARDED_BY_CLASS). */
    if (PYFRAME_PROPERTY_GUARDED_BY_CLASS || PyUnicode_EqualToUTF8(code->co_name, "__init__")) {
        specialize_classes_unblock(0);
    }
}

/* pyframe's vectorcall: the function's call runs with the hook in. */
static PyObject *
function_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyFunctionObject *func = (PyFunctionObject *)callable;   /* Borrowed. */
    vectorcallfunc original = function_original_vectorcall(func);
    PyObject *result;   /* Owned. */

    if (original == NULL) {
        return NULL;
    }
    if (!specializing || hook_code_skipped((PyCodeObject *)func->func_code)) {
        function_release(func);
        return original(callable, args, nargsf, kwnames);
    }
    if (!hook_aside) {
        return original(callable, args, nargsf, kwnames);
    }
    hook_step_in();
    result = original(callable, args, nargsf, kwnames);
    /* Back as the caller ran: a skipped frame of this thread, or any frame
     * of one while another thread of the same cache had stepped aside (which
     * hides none: hook.c). */
    hook_step_aside();
    return result;
}

/* ---- the function watcher ------------------------------------------------------ */

static int
function_created(PyFunctionObject *func)
{
    PyCodeObject *code = (PyCodeObject *)func->func_code;   /* Borrowed. */
    int optimized = (code->co_flags & CO_OPTIMIZED) != 0;

    if (hook_code_skipped(code)) {
        return 0;
    }
    if (function_hook(func) < 0) {
        return -1;
    }
    /* Class bodies, and functions C code makes, run without a call through
     * their vectorcall. */
    if (hook_aside
            && (!optimized || !compat_making_function_in_bytecode(PyThreadState_Get()))) {
        hook_step_in();
    }
    return 0;
}

static int
function_event(PyFunction_WatchEvent event, PyFunctionObject *func, PyObject *new_value)
{
    if (!specializing) {
        return 0;
    }
    switch (event) {
    case PyFunction_EVENT_CREATE:
        return function_created(func);
    case PyFunction_EVENT_MODIFY_CODE:
        /* The setter clears the version; the new code's functions from
         * MAKE_FUNCTION must not get one either. */
        if (code_hide_version((PyCodeObject *)new_value) < 0) {
            return -1;
        }
        return function_hook(func);
    case PyFunction_EVENT_DESTROY:
        function_forget_foreign(func);
        return 0;
    default:
        return 0;
    }
}

/* ---- walking every function --------------------------------------------------- */

static int
visit_object(PyObject *object, void *functions)
{
    if (PyFunction_Check(object) && PyList_Append((PyObject *)functions, object) < 0) {
        return 0;   /* stop: the list says how far it got, the exception why */
    }
    return 1;
}

/* Every function object, in a new list (the visit itself must not run code
 * that could change the heap).  NULL with an exception. */
static PyObject *
find_functions(void)
{
    PyObject *functions = PyList_New(0);   /* Owned. */
    int gc_was_enabled;

    if (functions == NULL) {
        return NULL;
    }
    gc_was_enabled = PyGC_Disable();
    PyUnstable_GC_VisitObjects(visit_object, functions);
    if (gc_was_enabled) {
        PyGC_Enable();
    }
    if (PyErr_Occurred()) {
        Py_DECREF(functions);
        return NULL;
    }
    return functions;
}

/* Puts every function of code that is not skipped on the hook.  -1 with an
 * exception; functions hooked by then stay hooked (the mode stays correct). */
static int
hook_all(void)
{
    PyObject *functions = find_functions();   /* Owned. */
    int result = 0;

    if (functions == NULL) {
        return -1;
    }
    for (Py_ssize_t i = 0; result == 0 && i < PyList_GET_SIZE(functions); i++) {
        PyFunctionObject *func = (PyFunctionObject *)PyList_GET_ITEM(functions, i);
        if (!hook_code_skipped((PyCodeObject *)func->func_code)) {
            result = function_hook(func);
        }
    }
    if (result == 0) {
        released_since_walk = 0;
    }
    Py_DECREF(functions);
    return result;
}

/* Gives every function its own vectorcall and version back, and their code
 * and the code nested in it their versions.  -1 with an exception. */
static int
release_all(void)
{
    PyObject *functions = find_functions();   /* Owned. */

    if (functions == NULL) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(functions); i++) {
        PyFunctionObject *func = (PyFunctionObject *)PyList_GET_ITEM(functions, i);
        if (func->vectorcall == function_vectorcall) {
            function_release(func);
        }
        code_restore_versions_nested((PyCodeObject *)func->func_code);
    }
    released_since_walk = 0;
    Py_DECREF(functions);
    return 0;
}

/* ---- what the hook and the cache tell the mode --------------------------------- */

/* Before the hook steps aside (the only time CPython may inline a call):
 * functions released under another owner than this thread's go back on the
 * hook, since its decisions may differ, and classes made or changed since
 * the hook last looked are seen to.  Checked here rather than when the owner
 * changes: a JIT's switch flips between its owner and none around every
 * call of compiled code (pyframe.Switch), and no owner steps nothing aside. */
static int
may_step_aside(void)
{
    PyObject *exception;   /* Owned: what the caller is returning, if it raised. */
    int walk = released_since_walk > 0 && released_under != current_owner_serial();
    int may = 1;

    if (!walk && !specialize_classes_pending()) {
        return 1;
    }
    exception = PyErr_GetRaisedException();
    if (walk && (hook_all() < 0 || specialize_classes_recheck() < 0)) {
        PyErr_WriteUnraisable(NULL);
        may = 0;   /* the hook stays in: nothing is missed */
    }
    else if (specialize_classes_pending() && specialize_classes_settle() < 0) {
        PyErr_WriteUnraisable(NULL);
        may = 0;
    }
    PyErr_SetRaisedException(exception);
    return may;
}

/* Decisions may have changed (reset()): functions whose code is no longer
 * skipped go back on the hook at once, since a frame stepped aside now may
 * call them.  (Registered only while the mode is on.) */
static void
decisions_changed(void)
{
    if (released_since_walk > 0 && (hook_all() < 0 || specialize_classes_recheck() < 0)) {
        PyErr_WriteUnraisable(NULL);
    }
}

static const hook_aside_listener aside_listener = {may_step_aside};

/* ---- switching the mode ---------------------------------------------------------- */

/* Reads cpython_vectorcall off a new function (before pyframe's watcher is
 * added: nothing else sees it).  -1 with an exception. */
static int
find_cpython_vectorcall(void)
{
    PyObject *code, *globals, *func;   /* Owned. */

    if (cpython_vectorcall != NULL) {
        return 0;
    }
    code = Py_CompileString("None", "<pyframe>", Py_eval_input);
    globals = code != NULL ? PyDict_New() : NULL;
    func = globals != NULL ? PyFunction_New(code, globals) : NULL;
    if (func != NULL) {
        cpython_vectorcall = ((PyFunctionObject *)func)->vectorcall;
    }
    Py_XDECREF(code);
    Py_XDECREF(globals);
    Py_XDECREF(func);
    return cpython_vectorcall != NULL ? 0 : -1;
}

int
pyframe_specialization_set(int on)
{
    if (on == specializing) {
        return 0;
    }
    if (on) {
        if (saved_version_index < 0
                && (saved_version_index = PyUnstable_Eval_RequestCodeExtraIndex(NULL)) < 0) {
            return -1;
        }
        if (find_cpython_vectorcall() < 0) {
            return -1;
        }
        if ((watcher_id = PyFunction_AddWatcher(function_event)) < 0) {
            return -1;
        }
        specializing = 1;
        hook_listen_aside(&aside_listener);
        cache_listen_decisions(decisions_changed);
        if (hook_all() < 0 || specialize_classes_start() < 0) {
            /* Nothing half-on: take back what was done. */
            PyObject *exception = PyErr_GetRaisedException();
            (void)pyframe_specialization_set(0);
            PyErr_SetRaisedException(exception);
            return -1;
        }
        return 0;
    }
    specializing = 0;
    hook_listen_aside(NULL);   /* steps in */
    cache_listen_decisions(NULL);
    if (PyFunction_ClearWatcher(watcher_id) < 0) {
        PyErr_WriteUnraisable(NULL);
    }
    watcher_id = -1;
    specialize_classes_stop();
    return release_all();
}

int
pyframe_specialization_enabled(void)
{
    return specializing;
}

int
pyframe_specialization_hooked(PyObject *func)
{
    return PyFunction_Check(func)
           && ((PyFunctionObject *)func)->vectorcall == function_vectorcall;
}

int
pyframe_specialization_aside(void)
{
    return hook_aside;
}

#else   /* !PYFRAME_HAS_SPECIALIZATION_MODE */

int
pyframe_specialization_set(int on)
{
    if (on) {
        PyErr_Format(PyExc_NotImplementedError,
                     "pyframe.set_specialization(True) needs CPython 3.12 or later: "
                     "%d.%d's CALL runs a Python function's frame without calling its "
                     "vectorcall, so frames that must reach the callback would run "
                     "unseen", PY_MAJOR_VERSION, PY_MINOR_VERSION);
        return -1;
    }
    return 0;
}

int
pyframe_specialization_enabled(void)
{
    return 0;
}

int
pyframe_specialization_hooked(PyObject *func)
{
    return 0;
}

int
pyframe_specialization_aside(void)
{
    return 0;
}

#endif

/* ---- the probe behind the 3.11 refusal (tests/test_specialization_probe.py) ---- */

static vectorcallfunc probe_original;
static Py_ssize_t probe_calls;

static PyObject *
probe_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    probe_calls++;
    return probe_original(callable, args, nargsf, kwnames);
}

Py_ssize_t
pyframe_specialization_probe(PyObject *func, PyObject *driver)
{
    PyFunctionObject *target = (PyFunctionObject *)func;   /* Borrowed. */
    PyObject *result;                                       /* Owned. */

    if (!PyFunction_Check(func) || probe_original != NULL) {
        PyErr_SetString(PyExc_TypeError, "pyframe: the probe takes a Python function");
        return -1;
    }
    probe_original = target->vectorcall;
    probe_calls = 0;
    target->vectorcall = probe_vectorcall;   /* what PyFunction_SetVectorcall sets */
#if PYFRAME_PY312
    target->func_version = 0;                /* ... and what it clears (3.12+) */
#endif
    result = PyObject_CallNoArgs(driver);
    target->vectorcall = probe_original;
    probe_original = NULL;
    if (result == NULL) {
        return -1;
    }
    Py_DECREF(result);
    return probe_calls;
}

