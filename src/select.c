/*
 * select.c: selective copying -- deepcopy(x, share=...) keeps matching
 * objects by reference wherever they occur.
 */
#include "fastcopy.h"

/* Is x one of the objects deepcopy(share=...) keeps by reference?
   share is a type, a tuple of types, or a predicate.  1 | 0 | -1+exc */
static int
fc_share_match(FcCtx *c, PyObject *x)
{
    PyObject *s = c->share;
    if (PyType_Check(s) || PyTuple_Check(s)) {
        return PyObject_IsInstance(x, s);
    }
    PyObject *r = PyObject_CallOneArg(s, x);
    if (r == NULL) {
        return -1;
    }
    int t = PyObject_IsTrue(r);
    Py_DECREF(r);
    return t;
}
