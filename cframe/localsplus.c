/* localsplus.c: reading and writing a frame's localsplus before it runs.
 *
 * When the PEP 523 hook fires, the frame has run none of its prologue:
 * argument slots hold the arguments, a cell slot holds the argument that
 * MAKE_CELL will wrap (or nothing), and free slots are empty because
 * COPY_FREE_VARS has not copied the closure in yet.  CPython's own f_locals
 * code assumes the prologue ran (on 3.13 it may not even be called yet), so
 * these functions apply the prologue's rules themselves: the value a variable
 * will have at the first traced line is the slot's value, except for a free
 * variable, whose value is the content of the matching closure cell.
 */
#include "compat.h"
#include "pyframe.h"

/* The cell a free slot will hold after COPY_FREE_VARS.  Borrowed; NULL when
 * the function carries no closure for it. */
static PyObject *
closure_cell(_PyInterpreterFrame *frame, PyCodeObject *code, int index)
{
    PyObject *cell = frame->localsplus[index];   /* set only once started */
    if (cell != NULL) {
        return cell;
    }
    if (frame->f_funcobj == NULL || !PyFunction_Check(frame->f_funcobj)) {
        return NULL;
    }
    PyObject *closure = ((PyFunctionObject *)frame->f_funcobj)->func_closure;
    int position = index - (code->co_nlocalsplus - code->co_nfreevars);
    if (closure == NULL || position < 0 || position >= PyTuple_GET_SIZE(closure)) {
        return NULL;
    }
    return PyTuple_GET_ITEM(closure, position);
}

/* The value slot `index` holds at the frame's first traced line.  Borrowed;
 * NULL when the variable is unbound there. */
static PyObject *
entry_value(_PyInterpreterFrame *frame, PyCodeObject *code, int index)
{
    assert(compat_frame_not_started(frame));
    if (_PyLocals_GetKind(code->co_localspluskinds, index) & CO_FAST_FREE) {
        PyObject *cell = closure_cell(frame, code, index);
        return cell != NULL && PyCell_Check(cell) ? PyCell_GET(cell) : NULL;
    }
    return frame->localsplus[index];
}

PyObject *
pyframe_build_locals(_PyInterpreterFrame *frame)
{
    PyCodeObject *code = compat_frame_code(frame);   /* Borrowed. */
    PyObject *locals = NULL;                          /* Owned. */

    /* Module bodies, class bodies and exec code keep their variables in a
     * mapping of their own: that mapping is their f_locals. */
    if (!(code->co_flags & CO_OPTIMIZED) && frame->f_locals != NULL) {
        return Py_NewRef(frame->f_locals);
    }
    locals = PyDict_New();
    if (locals == NULL) {
        goto error;
    }
    for (int i = 0; i < code->co_nlocalsplus; i++) {
        /* PEP 709 inlined-comprehension variables are not f_locals. */
        if (_PyLocals_GetKind(code->co_localspluskinds, i) & CO_FAST_HIDDEN) {
            continue;
        }
        PyObject *value = entry_value(frame, code, i);   /* Borrowed. */
        if (value == NULL) {
            continue;
        }
        PyObject *name = PyTuple_GET_ITEM(code->co_localsplusnames, i);
        if (PyDict_SetItem(locals, name, value) < 0) {
            goto error;
        }
    }
    return locals;

error:
    Py_XDECREF(locals);
    return NULL;
}

/* Interned names of the slot kinds, made on first use. */
static PyObject *kind_names[5];
enum { KIND_LOCAL, KIND_CELL, KIND_LOCAL_CELL, KIND_FREE, KIND_HIDDEN };

static PyObject *
kind_name(_PyLocals_Kind kind)
{
    static const char *const texts[5] = {"local", "cell", "local+cell", "free", "hidden"};
    int which;
    if (kind & CO_FAST_HIDDEN) {
        which = KIND_HIDDEN;
    }
    else if (kind & CO_FAST_FREE) {
        which = KIND_FREE;
    }
    else if ((kind & CO_FAST_CELL) && (kind & CO_FAST_LOCAL)) {
        which = KIND_LOCAL_CELL;
    }
    else if (kind & CO_FAST_CELL) {
        which = KIND_CELL;
    }
    else {
        which = KIND_LOCAL;
    }
    if (kind_names[which] == NULL) {
        kind_names[which] = PyUnicode_InternFromString(texts[which]);
    }
    return kind_names[which];   /* Borrowed; NULL with an exception set. */
}

PyObject *
pyframe_localsplus(_PyInterpreterFrame *frame, PyObject *unbound)
{
    PyCodeObject *code = compat_frame_code(frame);   /* Borrowed. */
    PyObject *slots = NULL;                           /* Owned. */

    slots = PyList_New(code->co_nlocalsplus);
    if (slots == NULL) {
        goto error;
    }
    for (int i = 0; i < code->co_nlocalsplus; i++) {
        PyObject *kind = kind_name(_PyLocals_GetKind(code->co_localspluskinds, i));
        if (kind == NULL) {
            goto error;
        }
        PyObject *value = entry_value(frame, code, i);
        PyObject *slot = PyTuple_Pack(3, PyTuple_GET_ITEM(code->co_localsplusnames, i),
                                      kind, value != NULL ? value : unbound);
        if (slot == NULL) {
            goto error;
        }
        PyList_SET_ITEM(slots, i, slot);
    }
    return slots;

error:
    Py_XDECREF(slots);
    return NULL;
}

static int
slot_index(PyCodeObject *code, PyObject *name)
{
    for (int i = 0; i < code->co_nlocalsplus; i++) {
        PyObject *candidate = PyTuple_GET_ITEM(code->co_localsplusnames, i);
        if (candidate == name || PyUnicode_Compare(candidate, name) == 0) {
            return i;
        }
    }
    return -1;
}

int
pyframe_set_local(_PyInterpreterFrame *frame, PyObject *name, PyObject *value)
{
    PyCodeObject *code = compat_frame_code(frame);   /* Borrowed. */

    assert(compat_frame_not_started(frame));
    if (!PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "a local's name must be a str, not %.100s",
                     Py_TYPE(name)->tp_name);
        return -1;
    }
    if (!(code->co_flags & CO_OPTIMIZED) && frame->f_locals != NULL) {
        return PyObject_SetItem(frame->f_locals, name, value);
    }
    int index = slot_index(code, name);
    if (index < 0) {
        PyErr_Format(PyExc_NameError, "%R has no local variable named %R (it has %R)",
                     code, name, code->co_localsplusnames);
        return -1;
    }
    _PyLocals_Kind kind = _PyLocals_GetKind(code->co_localspluskinds, index);
    if (kind & CO_FAST_FREE) {
        PyErr_Format(PyExc_ValueError,
                     "cannot set %R: it is a free variable of %R, whose cell is "
                     "shared with the enclosing scope; setting it would change "
                     "that variable for every function sharing the cell",
                     name, code);
        return -1;
    }
    if (kind & CO_FAST_HIDDEN) {
        PyErr_Format(PyExc_ValueError,
                     "cannot set %R: it is a hidden comprehension variable of %R",
                     name, code);
        return -1;
    }
    /* A cell slot still holds the plain value MAKE_CELL will wrap. */
    Py_XSETREF(frame->localsplus[index], Py_NewRef(value));
    return 0;
}
