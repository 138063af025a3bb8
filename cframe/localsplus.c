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
#include "localsplus.h"

/* The cell a free slot will hold after COPY_FREE_VARS.  Borrowed; NULL when
 * the function carries no closure for it. */
static PyObject *
closure_cell(_PyInterpreterFrame *frame, PyCodeObject *code, int index)
{
    PyObject *cell = compat_frame_slot(frame, index);   /* set only once started */
    PyObject *func = compat_frame_function(frame);
    if (cell != NULL) {
        return cell;
    }
    if (func == NULL || !PyFunction_Check(func)) {
        return NULL;
    }
    PyObject *closure = ((PyFunctionObject *)func)->func_closure;
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
    return compat_frame_slot(frame, index);
}

/* Adds the entry value of each bound variable of an optimized frame to
 * `locals`, in slot order.  With `merged` (3.12's exec() mapping, see below)
 * an unbound variable is also removed from `locals`: 3.12 deletes it. */
static int
fill_fast_locals(_PyInterpreterFrame *frame, PyCodeObject *code, PyObject *locals, int merged)
{
    for (int i = 0; i < code->co_nlocalsplus; i++) {
        /* PEP 709 inlined-comprehension variables are not f_locals. */
        if (compat_kind_hidden(_PyLocals_GetKind(code->co_localspluskinds, i))) {
            continue;
        }
        PyObject *value = entry_value(frame, code, i);   /* Borrowed. */
        PyObject *name = PyTuple_GET_ITEM(code->co_localsplusnames, i);
        if (value != NULL) {
            if (PyDict_SetItem(locals, name, value) < 0) {
                return -1;
            }
        }
        else if (merged) {
            int present = PyDict_Contains(locals, name);
            if (present < 0 || (present && PyDict_DelItem(locals, name) < 0)) {
                return -1;
            }
        }
    }
    return 0;
}

/* The entries of `dict`, a dict pyframe made, when its values may be
 * replaced in place: a combined table of str keys, with no deleted entries
 * and no watchers.  NULL otherwise. */
static PyDictUnicodeEntry *
own_dict_entries(PyObject *dict)
{
    PyDictObject *mp = (PyDictObject *)dict;
    if (mp->ma_values != NULL || !DK_IS_UNICODE(mp->ma_keys)
            || mp->ma_keys->dk_nentries != mp->ma_used || compat_dict_watched(mp)) {
        return NULL;
    }
    return DK_UNICODE_ENTRIES(mp->ma_keys);
}

/* What each entry of a spare dict holds until it is refilled: an object of
 * pyframe's own, made on first use and kept for the process.  Not None:
 * references to None kept between frames would show in sys.getrefcount(None)
 * on 3.11, where None is not immortal (CPython's test_sys counts them).  No
 * program holds this one, it has no finalizer, and the reference kept here
 * keeps it alive, so replacing it in an entry runs no code. */
static PyObject *recycled_placeholder;

/* Writes an optimized frame's entry values into the entries of `spare` (a
 * dict only the caller holds, see pyframe_locals_recycle): 1 when its keys
 * were the frame's bound names in slot order, as they are when the frame it
 * served last ran the same code.  PyDict_SetItem would look each key up and
 * tell watchers nobody registered, which costs as much as a new dict.  0 when
 * the keys do not fit; entries written by then hold their new values. */
static inline int
refill_in_place(_PyInterpreterFrame *frame, PyCodeObject *code, PyObject *spare)
{
    PyDictUnicodeEntry *entries = own_dict_entries(spare);   /* Borrowed. */
    Py_ssize_t used, k = 0;
    int holds_gc_objects = 0;

    if (entries == NULL) {
        return 0;
    }
    used = ((PyDictObject *)spare)->ma_used;
    for (int i = 0; i < code->co_nlocalsplus; i++) {
        if (compat_kind_hidden(_PyLocals_GetKind(code->co_localspluskinds, i))) {
            continue;
        }
        PyObject *value = entry_value(frame, code, i);   /* Borrowed. */
        if (value == NULL) {
            continue;
        }
        /* A recycled entry holds a reference to the placeholder (its own, as
         * any dict entry owns its value): replacing it gives that reference
         * back and runs no code that could change the table under `entries`. */
        if (k >= used || entries[k].me_key != PyTuple_GET_ITEM(code->co_localsplusnames, i)
                || entries[k].me_value != recycled_placeholder) {
            return 0;
        }
        entries[k].me_value = Py_NewRef(value);
        Py_DECREF(recycled_placeholder);
        holds_gc_objects |= PyType_IS_GC(Py_TYPE(value));
        k++;
    }
    if (k != used) {
        return 0;
    }
    /* As PyDict_SetItem would: the collector must see a dict that may now
     * be part of a cycle. */
    if (holds_gc_objects && !_PyObject_GC_IS_TRACKED(spare)) {
        PyObject_GC_Track(spare);
    }
    return 1;
}

/* pyframe_build_locals for every frame but an optimized one refilling a
 * spare in place.  Out of line, so that case needs no stack frame. */
static Py_NO_INLINE PyObject *
build_locals_slowly(_PyInterpreterFrame *frame, PyCodeObject *code, PyObject *spare)
{
    PyObject *locals = spare;   /* Owned. */

    if (locals != NULL) {
        /* A spare whose keys did not fit this frame. */
        PyDict_Clear(locals);
        if (fill_fast_locals(frame, code, locals, 0) < 0) {
            goto error;
        }
        return locals;
    }
    /* Module bodies, class bodies and exec code keep their variables in a
     * mapping of their own: that mapping is their f_locals. */
    if (!(code->co_flags & CO_OPTIMIZED) && frame->f_locals != NULL) {
        return Py_NewRef(frame->f_locals);
    }
#if !PYFRAME_PY313
    /* Optimized code has no mapping of its own, except when exec() or eval()
     * runs it: they hand every code object one.  CPython 3.12's f_locals
     * getter then writes the fast locals into that mapping and shows the
     * whole of it, so the entry locals start as a copy of it (pyframe must
     * not write into the caller's mapping the way 3.12 does).  3.13's
     * FrameLocalsProxy ignores the mapping and shows the fast locals alone. */
    if (frame->f_locals != NULL) {
        locals = PyDict_New();
        if (locals == NULL || PyDict_Merge(locals, frame->f_locals, 1) < 0
                || fill_fast_locals(frame, code, locals, 1) < 0) {
            goto error;
        }
        return locals;
    }
#endif
    /* Sized for every variable, so larger frames never grow it (a new dict
     * holds 5 without growing: PyDict_New costs less up to there). */
    locals = code->co_nlocalsplus <= 5 ? PyDict_New() : _PyDict_NewPresized(code->co_nlocalsplus);
    if (locals == NULL || fill_fast_locals(frame, code, locals, 0) < 0) {
        goto error;
    }
    return locals;

error:
    Py_XDECREF(locals);
    return NULL;
}

PyObject *
pyframe_build_locals(_PyInterpreterFrame *frame, PyObject **spare)
{
    PyCodeObject *code = compat_frame_code(frame);   /* Borrowed. */
    PyObject *taken = NULL;                           /* Owned. */

    /* Only frames whose f_locals is a new dict of their fast locals can
     * use the spare (see build_locals_slowly for the others). */
    if (spare != NULL && *spare != NULL && (code->co_flags & CO_OPTIMIZED)
            && (PYFRAME_PY313 || frame->f_locals == NULL)) {
        taken = *spare;
        *spare = NULL;
        if (refill_in_place(frame, code, taken)) {
            return taken;
        }
    }
    return build_locals_slowly(frame, code, taken);
}

int
pyframe_locals_recycle(PyObject *locals)
{
    PyDictUnicodeEntry *entries;   /* Borrowed. */

    if (!PyDict_CheckExact(locals) || Py_REFCNT(locals) != 1) {
        return 0;
    }
    if (recycled_placeholder == NULL) {
        /* No exception is set when a dict is taken back: only ours, if any. */
        recycled_placeholder = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type);
        if (recycled_placeholder == NULL) {
            PyErr_Clear();   /* not reused, then: it is only a saving */
            return 0;
        }
    }
    entries = own_dict_entries(locals);
    for (Py_ssize_t k = 0; entries != NULL && k < ((PyDictObject *)locals)->ma_used; k++) {
        PyObject *value = entries[k].me_value;   /* Owned by the entry until replaced. */
        entries[k].me_value = Py_NewRef(recycled_placeholder);
        if (Py_REFCNT(value) > 1) {
            Py_DECREF(value);
            continue;
        }
        /* The last reference: its finalizer may find the dict
         * (gc.get_objects()) and change it, so look at it again. */
        Py_DECREF(value);
        entries = own_dict_entries(locals);
    }
    /* ... or keep it. */
    return entries != NULL && Py_REFCNT(locals) == 1;
}

/* Interned names of the slot kinds, made on first use. */
static PyObject *kind_names[5];
enum { KIND_LOCAL, KIND_CELL, KIND_LOCAL_CELL, KIND_FREE, KIND_HIDDEN };

static PyObject *
kind_name(_PyLocals_Kind kind)
{
    static const char *const texts[5] = {"local", "cell", "local+cell", "free", "hidden"};
    int which;
    if (compat_kind_hidden(kind)) {
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
    if (compat_kind_hidden(kind)) {
        PyErr_Format(PyExc_ValueError,
                     "cannot set %R: it is a hidden comprehension variable of %R",
                     name, code);
        return -1;
    }
    /* A cell slot still holds the plain value MAKE_CELL will wrap. */
    compat_frame_slot_set(frame, index, value);
    return 0;
}

PyObject *
pyframe_frame_closure(_PyInterpreterFrame *frame)
{
    PyCodeObject *code = compat_frame_code(frame);   /* Borrowed. */
    PyObject *func = compat_frame_function(frame);   /* Borrowed. */
    PyObject *cells = NULL;                          /* Owned. */
    int first_free = code->co_nlocalsplus - code->co_nfreevars;

    /* The function's closure tuple is what COPY_FREE_VARS will copy from:
     * hand out that very tuple, so the cells are the function's own. */
    if (func != NULL && PyFunction_Check(func)) {
        PyObject *closure = ((PyFunctionObject *)func)->func_closure;
        if (closure != NULL && PyTuple_GET_SIZE(closure) == code->co_nfreevars) {
            return Py_NewRef(closure);
        }
    }
    cells = PyTuple_New(code->co_nfreevars);
    for (int i = 0; cells != NULL && i < code->co_nfreevars; i++) {
        PyObject *cell = closure_cell(frame, code, first_free + i);
        if (cell == NULL) {
            /* No function carries a closure for it: nothing to hand out. */
            Py_DECREF(cells);
            PyErr_Format(PyExc_RuntimeError, "pyframe: the frame of %R has no cell for its "
                         "free variable %R", code,
                         PyTuple_GET_ITEM(code->co_localsplusnames, first_free + i));
            return NULL;
        }
        PyTuple_SET_ITEM(cells, i, Py_NewRef(cell));
    }
    return cells;
}

/* ---- building a replacement frame's localsplus --------------------------- */

#define GENERATOR_KINDS (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE)

static int
replacement_mismatch(PyCodeObject *original, PyCodeObject *replacement, const char *what)
{
    PyErr_Format(PyExc_TypeError,
                 "pyframe: replacement %R cannot run in place of %R: %s",
                 replacement, original, what);
    return -1;
}

int
pyframe_check_replacement(PyCodeObject *original, PyObject *replacement_object)
{
    PyCodeObject *replacement = (PyCodeObject *)replacement_object;
    char what[200];

    if (!PyCode_Check(replacement_object)) {
        PyErr_Format(PyExc_TypeError, "pyframe: replacement code must be a code object, not %.100s",
                     Py_TYPE(replacement_object)->tp_name);
        return -1;
    }
    if ((original->co_flags ^ replacement->co_flags) & (CO_OPTIMIZED | CO_NEWLOCALS)) {
        return replacement_mismatch(original, replacement,
            "one is function code and the other module, class or exec code");
    }
    if ((original->co_flags ^ replacement->co_flags) & GENERATOR_KINDS) {
        return replacement_mismatch(original, replacement,
            "they differ in being a generator, coroutine or async generator");
    }
#define SAME_COUNT(field, label)                                                   \
    if (original->field != replacement->field) {                                  \
        PyOS_snprintf(what, sizeof(what), "it takes %d " label " where the original takes %d", \
                      replacement->field, original->field);                       \
        return replacement_mismatch(original, replacement, what);                 \
    }
    SAME_COUNT(co_argcount, "positional arguments")
    SAME_COUNT(co_posonlyargcount, "positional-only arguments")
    SAME_COUNT(co_kwonlyargcount, "keyword-only arguments")
#undef SAME_COUNT
    if ((original->co_flags ^ replacement->co_flags) & CO_VARARGS) {
        return replacement_mismatch(original, replacement,
            "one takes *args and the other does not");
    }
    if ((original->co_flags ^ replacement->co_flags) & CO_VARKEYWORDS) {
        return replacement_mismatch(original, replacement,
            "one takes **kwargs and the other does not");
    }
    int arguments = pyframe_argument_slots(original);
    for (int i = 0; i < arguments; i++) {
        PyObject *mine = PyTuple_GET_ITEM(original->co_localsplusnames, i);
        PyObject *theirs = PyTuple_GET_ITEM(replacement->co_localsplusnames, i);
        if (PyUnicode_Compare(mine, theirs) != 0) {
            PyErr_Format(PyExc_TypeError,
                         "pyframe: replacement %R cannot run in place of %R: its argument %d "
                         "is named %R where the original's is %R",
                         replacement, original, i, theirs, mine);
            return -1;
        }
    }
    /* Free variables are matched by name against the original's closure. */
    int first_free = replacement->co_nlocalsplus - replacement->co_nfreevars;
    for (int i = first_free; i < replacement->co_nlocalsplus; i++) {
        PyObject *name = PyTuple_GET_ITEM(replacement->co_localsplusnames, i);
        int found = 0;
        int original_first_free = original->co_nlocalsplus - original->co_nfreevars;
        for (int j = original_first_free; j < original->co_nlocalsplus && !found; j++) {
            found = PyUnicode_Compare(name, PyTuple_GET_ITEM(original->co_localsplusnames, j)) == 0;
        }
        if (!found) {
            PyErr_Format(PyExc_TypeError,
                         "pyframe: replacement %R needs the free variable %R, which the "
                         "closure of %R does not have",
                         replacement, name, original);
            return -1;
        }
    }
    return 0;
}

/* The closure `replacement` needs, in its own order, taken by name from the
 * function the original frame runs.  New reference; NULL with an error set. */
static PyObject *
closure_for(_PyInterpreterFrame *frame, PyCodeObject *original, PyCodeObject *replacement)
{
    PyObject *closure = PyTuple_New(replacement->co_nfreevars);   /* Owned. */
    int first_free = replacement->co_nlocalsplus - replacement->co_nfreevars;
    int original_first_free = original->co_nlocalsplus - original->co_nfreevars;

    if (closure == NULL) {
        return NULL;
    }
    for (int i = 0; i < replacement->co_nfreevars; i++) {
        PyObject *name = PyTuple_GET_ITEM(replacement->co_localsplusnames, first_free + i);
        PyObject *cell = NULL;
        for (int j = original_first_free; j < original->co_nlocalsplus && cell == NULL; j++) {
            if (PyUnicode_Compare(name, PyTuple_GET_ITEM(original->co_localsplusnames, j)) == 0) {
                cell = closure_cell(frame, original, j);
            }
        }
        if (cell == NULL) {
            Py_DECREF(closure);
            PyErr_Format(PyExc_TypeError, "pyframe: the function running %R has no cell for %R",
                         original, name);
            return NULL;
        }
        PyTuple_SET_ITEM(closure, i, Py_NewRef(cell));
    }
    return closure;
}

/* Whether the replacement frame can keep the original's function object.
 * COPY_FREE_VARS reads the frame function's closure and RETURN_GENERATOR
 * sizes and names the generator from the function's code, so a new function
 * is needed for generator code and for free variables in another order. */
int
pyframe_keeps_function(PyCodeObject *original, PyCodeObject *replacement)
{
    if (replacement->co_flags & GENERATOR_KINDS) {
        return 0;
    }
    if (replacement->co_nfreevars == 0) {
        return 1;
    }
    if (replacement->co_nfreevars != original->co_nfreevars) {
        return 0;
    }
    for (int i = 1; i <= replacement->co_nfreevars; i++) {
        PyObject *mine = PyTuple_GET_ITEM(original->co_localsplusnames, original->co_nlocalsplus - i);
        PyObject *theirs = PyTuple_GET_ITEM(replacement->co_localsplusnames,
                                            replacement->co_nlocalsplus - i);
        if (PyUnicode_Compare(mine, theirs) != 0) {
            return 0;
        }
    }
    return 1;
}

PyObject *
pyframe_replacement_function(_PyInterpreterFrame *frame, PyCodeObject *replacement)
{
    PyCodeObject *original = compat_frame_code(frame);        /* Borrowed. */
    PyFunctionObject *running = (PyFunctionObject *)compat_frame_function(frame);   /* Borrowed. */
    PyFunctionObject *func = NULL;                            /* Owned. */
    PyObject *closure = NULL;                                 /* Owned. */

    assert(!pyframe_keeps_function(original, replacement));
    func = (PyFunctionObject *)PyFunction_New((PyObject *)replacement, frame->f_globals);
    if (func == NULL) {
        goto error;
    }
    if (replacement->co_nfreevars > 0) {
        closure = closure_for(frame, original, replacement);
        if (closure == NULL || PyFunction_SetClosure((PyObject *)func, closure) < 0) {
            goto error;
        }
        Py_CLEAR(closure);
    }
    /* A generator made from it is named like the function the user called. */
    if (PyFunction_Check(running)) {
        Py_XSETREF(func->func_name, Py_NewRef(running->func_name));
        Py_XSETREF(func->func_qualname, Py_NewRef(running->func_qualname));
    }
    return (PyObject *)func;

error:
    Py_XDECREF(closure);
    Py_XDECREF(func);
    return NULL;
}

int
pyframe_take_bound_locals(_PyInterpreterFrame *frame, PyObject **released)
{
    PyCodeObject *code = compat_frame_code(frame);   /* Borrowed. */
    int arguments = pyframe_argument_slots(code);
    Py_ssize_t bound = 0;

    /* Before a frame runs only its arguments are bound, unless a callback
     * used Frame.set_local on another local.  Those references move to a
     * list the caller releases once the frame is consistent again. */
    *released = NULL;
    for (int i = arguments; i < code->co_nlocalsplus; i++) {
        bound += compat_frame_slot(frame, i) != NULL;
    }
    if (bound == 0) {
        return 0;
    }
    if ((*released = PyList_New(0)) == NULL) {
        return -1;
    }
    for (int i = arguments; i < code->co_nlocalsplus; i++) {
        PyObject *value = compat_frame_slot(frame, i);   /* Borrowed. */
        if (value != NULL && PyList_Append(*released, value) < 0) {
            Py_CLEAR(*released);
            return -1;
        }
    }
    for (int i = arguments; i < code->co_nlocalsplus; i++) {
        Py_XDECREF(compat_frame_slot_take(frame, i));   /* the list holds them now */
    }
    return 0;
}
