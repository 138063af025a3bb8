/* regrtest_freshcopy: the pyframe run's callback written in C.
 *
 *   fresh_copy(frame) -> pyframe.Compiled(frame.f_code.replace())
 *
 * The same callback as tools/regrtest_site/pyframe/sitecustomize.py's Python
 * one, but it runs no Python frame, so sys.settrace, sys.setprofile and
 * sys.monitoring cannot see it.  tools/regrtest.py --callback c builds it and
 * uses it to tell "the callback itself is traced" apart from other
 * differences.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *compiled_type = NULL;   /* Owned: pyframe.Compiled. */

static PyObject *
fresh_copy(PyObject *module, PyObject *frame)
{
    PyObject *code = PyObject_GetAttrString(frame, "f_code");
    PyObject *copy, *result;

    if (code == NULL) {
        return NULL;
    }
    copy = PyObject_CallMethod(code, "replace", NULL);
    Py_DECREF(code);
    if (copy == NULL) {
        return NULL;
    }
    result = PyObject_CallOneArg(compiled_type, copy);
    Py_DECREF(copy);
    return result;
}

static PyMethodDef methods[] = {
    {"fresh_copy", fresh_copy, METH_O,
     "fresh_copy(frame): pyframe.Compiled(frame.f_code.replace())."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "regrtest_freshcopy",
    .m_doc = "tools/regrtest.py's pyframe callback, in C.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit_regrtest_freshcopy(void)
{
    PyObject *pyframe = PyImport_ImportModule("pyframe");
    if (pyframe == NULL) {
        return NULL;
    }
    Py_XSETREF(compiled_type, PyObject_GetAttrString(pyframe, "Compiled"));
    Py_DECREF(pyframe);
    if (compiled_type == NULL) {
        return NULL;
    }
    return PyModule_Create(&module_def);
}
