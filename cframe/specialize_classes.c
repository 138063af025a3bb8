/* specialize_classes.c: classes whose __init__ (or, on 3.14, property
 * getters) must reach the hook, in the specialization mode (specialize.c).
 *
 * A class call site specialized as CALL_ALLOC_AND_ENTER_INIT (3.13+; 3.12
 * has none, and this file nothing to do there) inlines the class's __init__
 * frame, guarded only by the class's version: pyframe's vectorcall on the
 * function does not keep it away.  So while the mode is on, a class whose
 * __init__ is a Python function of code that is not skipped is "blocked":
 * CPython no longer makes such call sites for it (compat.h), while every
 * other specialization on the class stays.  3.14's LOAD_ATTR_PROPERTY is
 * guarded the same way: a class with a property getter of code that is not
 * skipped is blocked from specialized attribute loads (compat.h,
 * PYFRAME_PROPERTY_GUARDED_BY_CLASS).  A class is unblocked once what it was
 * blocked for is skipped, and when the mode goes off.
 *
 * Classes come and change while the mode is on.  Every class registers
 * itself in its bases' subclass dicts as it is made, and pyframe watches
 * those dicts (for every class, from `object` down); a type watcher on every
 * class reports changes (a new __init__, new bases).  Either event puts the
 * hook back in, and the class is checked before the hook next steps aside:
 * nothing runs stepped aside in between.
 */
#include "specialize_classes.h"

#if PYFRAME_HAS_SPECIALIZATION_MODE && PYFRAME_INLINES_INIT

static int type_watcher = -1;
static int subclasses_watcher = -1;
/* Owned dict or NULL: id(class) -> weak reference, for the classes pyframe
 * blocked. */
static PyObject *blocked;
/* Owned dict or NULL: id(class) -> weak reference, for classes made or
 * changed since they were last checked. */
static PyObject *to_check;
/* pyframe is blocking a class: the type watcher hears of it and ignores it. */
static int blocking;
/* Between specialize_classes_start() and _stop(): the watchers act. */
static int watching;

/* The class's __init__ when it is a Python function (Borrowed), else NULL. */
static PyFunctionObject *
class_init_function(PyTypeObject *type)
{
    static PyObject *init_name;   /* Owned, for the process. */
    PyObject *init;               /* Borrowed. */

    if (init_name == NULL && (init_name = PyUnicode_InternFromString("__init__")) == NULL) {
        PyErr_Clear();
        return NULL;
    }
    init = _PyType_Lookup(type, init_name);
    return init != NULL && PyFunction_Check(init) ? (PyFunctionObject *)init : NULL;
}

/* What pyframe keeps CPython from inlining for a class: its __init__, and
 * (3.14) its property getters. */
enum { BLOCK_INIT = 1, BLOCK_PROPERTY = 2 };

static int
code_observed(PyObject *func)
{
    return func != NULL && PyFunction_Check(func)
           && !hook_code_skipped((PyCodeObject *)((PyFunctionObject *)func)->func_code);
}

/* 1 when a property of `type` or of a class in its MRO has a getter of code
 * that is not skipped (3.14: compat.h, PYFRAME_PROPERTY_GUARDED_BY_CLASS). */
static int
class_has_observed_property(PyTypeObject *type)
{
    PyObject *mro = type->tp_mro;   /* Borrowed. */
    if (mro == NULL || !compat_class_may_inline_property(type)) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
        PyTypeObject *base = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        PyObject *value;   /* Borrowed. */
        Py_ssize_t pos = 0;
        if (!PyType_HasFeature(base, Py_TPFLAGS_HEAPTYPE) || base->tp_dict == NULL) {
            continue;   /* static types' properties are C getters */
        }
        while (PyDict_Next(base->tp_dict, &pos, NULL, &value)) {
            if (code_observed(compat_property_getter(value))) {
                return 1;
            }
        }
    }
    return 0;
}

static int
class_needs_block(PyTypeObject *type)
{
    int needs = 0;
    if (!PyType_HasFeature(type, Py_TPFLAGS_HEAPTYPE)) {
        return 0;
    }
    if (compat_class_may_inline_init(type)
            && code_observed((PyObject *)class_init_function(type))) {
        needs |= BLOCK_INIT;
    }
    if (class_has_observed_property(type)) {
        needs |= BLOCK_PROPERTY;
    }
    return needs;
}

static int
class_blocked(PyTypeObject *type)
{
    return (compat_class_init_blocked(type) ? BLOCK_INIT : 0)
           | (compat_class_property_blocked(type) ? BLOCK_PROPERTY : 0);
}

/* Blocks and unblocks what `blocks` says (BLOCK_* bits). */
static void
class_set_blocked(PyTypeObject *type, int blocks)
{
    int now = class_blocked(type);
    blocking = 1;
    if ((blocks & BLOCK_INIT) && !(now & BLOCK_INIT)) {
        compat_class_block_init(type);
    }
    if (!(blocks & BLOCK_INIT)) {
        compat_class_unblock_init(type);
    }
    if ((blocks & BLOCK_PROPERTY) && !(now & BLOCK_PROPERTY)) {
        compat_class_block_property(type);
    }
    if (!(blocks & BLOCK_PROPERTY)) {
        compat_class_unblock_property(type);
    }
    blocking = 0;
}

/* Blocks or unblocks `type` as its __init__ and properties now ask.  -1 with
 * an exception. */
static int
class_check(PyTypeObject *type)
{
    PyObject *key, *ref;   /* Owned. */
    int needs = class_needs_block(type), result;

    if (needs == class_blocked(type)) {
        return 0;
    }
    if (blocked == NULL && (blocked = PyDict_New()) == NULL) {
        return -1;
    }
    if ((key = PyLong_FromVoidPtr(type)) == NULL) {
        return -1;
    }
    if (!needs) {
        class_set_blocked(type, 0);
        result = PyDict_Pop(blocked, key, NULL) < 0 ? -1 : 0;
        Py_DECREF(key);
        return result;
    }
    /* Recorded first, then blocked: nothing fails after. */
    ref = PyWeakref_NewRef((PyObject *)type, NULL);
    result = ref != NULL ? PyDict_SetItem(blocked, key, ref) : -1;
    Py_DECREF(key);
    Py_XDECREF(ref);
    if (result == 0) {
        class_set_blocked(type, needs);
    }
    return result;
}

/* Remembers `ref` (a weak reference to a class) for checking, and puts the
 * hook back in until then.  -1 with an exception. */
static int
class_to_check(PyObject *key, PyObject *ref)
{
    if (to_check == NULL && (to_check = PyDict_New()) == NULL) {
        return -1;
    }
    hook_step_in();
    return PyDict_SetItem(to_check, key, ref);
}

static int
type_changed(PyTypeObject *type)
{
    PyObject *key, *ref;   /* Owned. */
    int result;

    if (blocking || !watching) {
        return 0;
    }
    key = PyLong_FromVoidPtr(type);
    ref = key != NULL ? PyWeakref_NewRef((PyObject *)type, NULL) : NULL;
    result = ref != NULL ? class_to_check(key, ref) : -1;
    Py_XDECREF(key);
    Py_XDECREF(ref);
    return result;
}

/* A subclass dict changed: a class being made adds itself (key: its id,
 * value: a weak reference to it) to each of its bases'.  It is not ready
 * yet: it is checked later. */
static int
subclasses_changed(PyDict_WatchEvent event, PyObject *dict, PyObject *key, PyObject *new_value)
{
    if (event != PyDict_EVENT_ADDED || !watching || new_value == NULL
            || !PyWeakref_Check(new_value)) {
        return 0;
    }
    return class_to_check(key, new_value);
}

/* Watches the subclass dict of `type` (made if it has none), when it can
 * have subclasses, and a class for changes.  -1 with an exception. */
static int
class_watch(PyTypeObject *type)
{
    if (PyType_HasFeature(type, Py_TPFLAGS_BASETYPE)) {
        PyObject *subclasses = compat_type_init_subclasses(type);   /* Borrowed. */
        if (subclasses == NULL || PyDict_Watch(subclasses_watcher, subclasses) < 0) {
            return -1;
        }
    }
    if (PyType_HasFeature(type, Py_TPFLAGS_HEAPTYPE)) {
        return PyType_Watch(type_watcher, (PyObject *)type);
    }
    return 0;
}

/* Calls `visit` on every class, from `object` down its subclass dicts.  -1
 * with an exception. */
static int
classes_walk(int (*visit)(PyTypeObject *))
{
    PyObject *stack = PyList_New(0);     /* Owned: classes to visit. */
    PyObject *seen = PySet_New(NULL);    /* Owned: the ids of those found. */
    int result = -1;

    if (stack == NULL || seen == NULL || PyList_Append(stack, (PyObject *)&PyBaseObject_Type) < 0) {
        goto done;
    }
    while (PyList_GET_SIZE(stack) > 0) {
        Py_ssize_t last = PyList_GET_SIZE(stack) - 1;
        PyObject *type = Py_NewRef(PyList_GET_ITEM(stack, last));   /* Owned. */
        PyObject *subclasses, *ref;                                   /* Borrowed. */
        Py_ssize_t pos = 0;
        if (PyList_SetSlice(stack, last, last + 1, NULL) < 0 || visit((PyTypeObject *)type) < 0) {
            Py_DECREF(type);
            goto done;
        }
        subclasses = compat_type_subclasses((PyTypeObject *)type);
        Py_DECREF(type);
        if (subclasses == NULL) {
            continue;   /* none */
        }
        while (PyDict_Next(subclasses, &pos, NULL, &ref)) {
            PyObject *subclass = NULL;   /* Owned. */
            int added;
            if (PyWeakref_GetRef(ref, &subclass) < 0) {
                goto done;
            }
            if (subclass == NULL) {
                continue;
            }
            /* By id: a metaclass may define __hash__ in Python. */
            PyObject *id = PyLong_FromVoidPtr(subclass);   /* Owned. */
            added = id != NULL ? PySet_Contains(seen, id) : -1;
            if (added == 0) {
                added = PySet_Add(seen, id) < 0 || PyList_Append(stack, subclass) < 0 ? -1 : 1;
            }
            Py_XDECREF(id);
            Py_DECREF(subclass);
            if (added < 0) {
                goto done;
            }
        }
    }
    result = 0;
done:
    Py_XDECREF(stack);
    Py_XDECREF(seen);
    return result;
}

static int
class_watch_and_check(PyTypeObject *type)
{
    return class_watch(type) < 0 ? -1 : class_check(type);
}

int
specialize_classes_start(void)
{
    watching = 1;
    if ((type_watcher = PyType_AddWatcher(type_changed)) < 0) {
        return -1;
    }
    if ((subclasses_watcher = PyDict_AddWatcher(subclasses_changed)) < 0) {
        return -1;
    }
    return classes_walk(class_watch_and_check);
}

int
specialize_classes_recheck(void)
{
    return classes_walk(class_check);
}

int
specialize_classes_pending(void)
{
    return to_check != NULL && PyDict_GET_SIZE(to_check) > 0;
}

int
specialize_classes_settle(void)
{
    PyObject *checking = to_check;   /* Owned. */
    PyObject *ref;                   /* Borrowed. */
    Py_ssize_t pos = 0;
    int result = 0;

    if (checking == NULL || PyDict_GET_SIZE(checking) == 0) {
        return 0;
    }
    to_check = NULL;   /* what checking reports afresh goes to a new dict */
    while (result == 0 && PyDict_Next(checking, &pos, NULL, &ref)) {
        PyObject *type = NULL;   /* Owned. */
        if (PyWeakref_GetRef(ref, &type) < 0) {
            result = -1;
            break;
        }
        if (type != NULL) {
            result = class_watch_and_check((PyTypeObject *)type);
            Py_DECREF(type);
        }
    }
    Py_DECREF(checking);
    return result;
}

void
specialize_classes_unblock(int all)
{
    PyObject *key, *ref;   /* Borrowed. */
    PyObject *done;        /* Owned list of keys. */
    Py_ssize_t pos = 0;

    if (blocked == NULL || PyDict_GET_SIZE(blocked) == 0) {
        return;
    }
    if ((done = PyList_New(0)) == NULL) {
        PyErr_WriteUnraisable(NULL);
        return;
    }
    while (PyDict_Next(blocked, &pos, &key, &ref)) {
        PyObject *type = NULL;   /* Owned. */
        int needs = 0;
        if (PyWeakref_GetRef(ref, &type) < 0) {
            PyErr_WriteUnraisable(NULL);
            continue;
        }
        if (type != NULL) {
            needs = all ? 0 : class_needs_block((PyTypeObject *)type);
            class_set_blocked((PyTypeObject *)type, needs);
            Py_DECREF(type);
        }
        if (needs != 0) {
            continue;
        }
        if (PyList_Append(done, key) < 0) {
            PyErr_WriteUnraisable(NULL);
            break;
        }
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(done); i++) {
        if (PyDict_DelItem(blocked, PyList_GET_ITEM(done, i)) < 0) {
            PyErr_WriteUnraisable(NULL);
        }
    }
    Py_DECREF(done);
}

/* Stops watching `type` and its subclass dict: a watcher registered later
 * under the same id must not hear of them. */
static int
class_unwatch(PyTypeObject *type)
{
    /* Also classes made after their base was blocked, which inherited it. */
    class_set_blocked(type, 0);
    PyObject *subclasses = compat_type_subclasses(type);   /* Borrowed. */
    if (subclasses != NULL && PyDict_Unwatch(subclasses_watcher, subclasses) < 0) {
        return -1;
    }
    if (PyType_HasFeature(type, Py_TPFLAGS_HEAPTYPE)
            && PyType_Unwatch(type_watcher, (PyObject *)type) < 0) {
        return -1;
    }
    return 0;
}

void
specialize_classes_stop(void)
{
    watching = 0;
    specialize_classes_unblock(1);
    Py_CLEAR(to_check);
    if (type_watcher >= 0 && subclasses_watcher >= 0 && classes_walk(class_unwatch) < 0) {
        PyErr_WriteUnraisable(NULL);
    }
    if (type_watcher >= 0 && PyType_ClearWatcher(type_watcher) < 0) {
        PyErr_WriteUnraisable(NULL);
    }
    if (subclasses_watcher >= 0 && PyDict_ClearWatcher(subclasses_watcher) < 0) {
        PyErr_WriteUnraisable(NULL);
    }
    type_watcher = subclasses_watcher = -1;
}

#endif
