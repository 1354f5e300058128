/* The floor of issue 51's small-dict shapes: a hand-written C copy of each
 * shape, built only by benchmarks/small_dicts.py (never installed).
 *
 * What a careful C programmer would write knowing the shape in advance: no
 * memo, no dispatch table, no hooks, the public C API only, and exactly the
 * allocations deepcopy() makes (the same new dicts, lists and tuples; atoms
 * and all-atom tuples shared, as the stdlib shares them).  "At the floor"
 * is then a number: the instructions and time of these functions.
 *
 *   tree(x)        a JSON-like tree of exact dicts, lists and tuples whose
 *                  leaves are atoms (anything else is returned as is):
 *                  pyperformance's dict `a`, the 400-level chain, the config
 *                  tree.  A dict is cloned (PyDict_Copy, a memcpy of its
 *                  table) and only its container values stored again.
 *   shared(x)      pyperformance's memo payload {"a": (l, l, l), "b": [l]*n}:
 *                  the one list l copied once, and the copy placed 3 + n
 *                  times -- which is what the memo buys deepcopy there.
 *
 * Only valid on those shapes: a cycle recurses without end, a shared
 * container anywhere but in shared()'s place is copied twice.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *floor_tree(PyObject *x);

static inline int
floor_is_container(PyObject *v)
{
    PyTypeObject *tp = Py_TYPE(v);
    return tp == &PyDict_Type || tp == &PyList_Type || tp == &PyTuple_Type;
}

static PyObject *
floor_dict(PyObject *x)
{
    PyObject *y = PyDict_Copy(x);
    if (y == NULL) {
        return NULL;
    }
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(x, &pos, &k, &v)) {
        if (!floor_is_container(v)) {
            continue;
        }
        PyObject *w = floor_tree(v);
        if (w == NULL) {
            Py_DECREF(y);
            return NULL;
        }
        if (w != v) {
            int r = PyDict_SetItem(y, k, w);
            Py_DECREF(w);
            if (r < 0) {
                Py_DECREF(y);
                return NULL;
            }
        }
        else {
            Py_DECREF(w);
        }
    }
    return y;
}

static PyObject *
floor_list(PyObject *x)
{
    Py_ssize_t n = PyList_GET_SIZE(x);
    PyObject *y = PyList_New(n);
    if (y == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyList_GET_ITEM(x, i);
        PyObject *w = floor_is_container(v) ? floor_tree(v) : Py_NewRef(v);
        if (w == NULL) {
            Py_DECREF(y);
            return NULL;
        }
        PyList_SET_ITEM(y, i, w);
    }
    return y;
}

static PyObject *
floor_tuple(PyObject *x)
{
    Py_ssize_t n = PyTuple_GET_SIZE(x), i;
    for (i = 0; i < n; i++) {
        if (floor_is_container(PyTuple_GET_ITEM(x, i))) {
            break;
        }
    }
    if (i == n) {
        return Py_NewRef(x);   /* all atoms: deepcopy returns the tuple itself */
    }
    PyObject *y = PyTuple_New(n);
    if (y == NULL) {
        return NULL;
    }
    int same = 1;
    for (i = 0; i < n; i++) {
        PyObject *v = PyTuple_GET_ITEM(x, i);
        PyObject *w = floor_is_container(v) ? floor_tree(v) : Py_NewRef(v);
        if (w == NULL) {
            Py_DECREF(y);
            return NULL;
        }
        same &= w == v;
        PyTuple_SET_ITEM(y, i, w);
    }
    if (same) {
        Py_DECREF(y);
        return Py_NewRef(x);
    }
    return y;
}

static PyObject *
floor_tree(PyObject *x)
{
    PyTypeObject *tp = Py_TYPE(x);
    if (tp == &PyDict_Type) {
        return floor_dict(x);
    }
    if (tp == &PyList_Type) {
        return floor_list(x);
    }
    if (tp == &PyTuple_Type) {
        return floor_tuple(x);
    }
    return Py_NewRef(x);
}

static PyObject *
floor_tree_py(PyObject *module, PyObject *x)
{
    (void)module;
    return floor_tree(x);
}

/* {"a": (l, l, l), "b": [l] * n}, l a list of atoms: found by type, not by
   key (a key lookup would cost the floor a string) */
static PyObject *
floor_shared_py(PyObject *module, PyObject *x)
{
    (void)module;
    PyObject *t = NULL, *b = NULL, *tk = NULL, *bk = NULL, *k, *v;
    Py_ssize_t pos = 0;
    if (PyDict_CheckExact(x) && PyDict_GET_SIZE(x) == 2) {
        while (PyDict_Next(x, &pos, &k, &v)) {
            if (PyTuple_CheckExact(v)) {
                t = v, tk = k;
            }
            else if (PyList_CheckExact(v)) {
                b = v, bk = k;
            }
        }
    }
    if (t == NULL || b == NULL || PyTuple_GET_SIZE(t) != 3
        || !PyList_CheckExact(PyTuple_GET_ITEM(t, 0))
        || PyTuple_GET_ITEM(t, 1) != PyTuple_GET_ITEM(t, 0)
        || PyTuple_GET_ITEM(t, 2) != PyTuple_GET_ITEM(t, 0)) {
        PyErr_SetString(PyExc_TypeError, "shared() takes {'a': (l, l, l), 'b': [l] * n}");
        return NULL;
    }
    PyObject *l = PyTuple_GET_ITEM(t, 0);
    PyObject *l2 = NULL, *t2 = NULL, *b2 = NULL, *y = NULL;
    l2 = PyList_GetSlice(l, 0, PyList_GET_SIZE(l));
    if (l2 == NULL) {
        goto error;
    }
    t2 = PyTuple_Pack(3, l2, l2, l2);
    if (t2 == NULL) {
        goto error;
    }
    Py_ssize_t n = PyList_GET_SIZE(b);
    b2 = PyList_New(n);
    if (b2 == NULL) {
        goto error;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyList_GET_ITEM(b, i) != l) {
            PyErr_SetString(PyExc_TypeError, "shared(): b holds another list");
            goto error;
        }
        PyList_SET_ITEM(b2, i, Py_NewRef(l2));
    }
    y = PyDict_Copy(x);
    if (y == NULL || PyDict_SetItem(y, tk, t2) < 0 || PyDict_SetItem(y, bk, b2) < 0) {
        Py_CLEAR(y);
    }
error:
    Py_XDECREF(l2);
    Py_XDECREF(t2);
    Py_XDECREF(b2);
    return y;
}

static PyMethodDef floor_methods[] = {
    {"tree", floor_tree_py, METH_O, "memo-free copy of a tree of dicts, lists and tuples"},
    {"shared", floor_shared_py, METH_O, "copy of {'a': (l, l, l), 'b': [l] * n}"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef floor_module = {
    PyModuleDef_HEAD_INIT, "_floor", "issue 51's hand-written floors (benchmark only)", -1,
    floor_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__floor(void)
{
    return PyModule_Create(&floor_module);
}
