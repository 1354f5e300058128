/*
 * testing.c: the module's test-only functions and their state (testing.h).
 * Tests read the counters to prove a path was taken (a flush, a CUDA batch,
 * the memo shown to a hook) and drive the CUDA path through the fake
 * driver (tests/fakecuda).
 */
#include "fastcopy.h"
#include "testing.h"
#include "state.h"
#include "hooks.h"

PyDoc_STRVAR(fc_defer_stats_doc,
"_defer_stats()\n--\n\n"
"Tests: how many times deferred byte copies were flushed, how many CUDA\n"
"batches were submitted since the module was loaded, and the path the last\n"
"one took (as fastcopy._cuda.copy_batch names it).");

static PyObject *
fc_py_defer_stats(PyObject *module, PyObject *unused)
{
    FcState *st = (FcState *)PyModule_GetState(module);
    return Py_BuildValue("{s:n,s:n,s:z}", "flushes", st->test.defer_flushes,
                         "cuda_batches", st->test.cuda_batches,
                         "cuda_last_path", st->test.cuda_last_path);
}

PyDoc_STRVAR(fc_fake_cuda_doc,
"_fake_cuda(device, stream)\n--\n\n"
"Tests only: send the byte copies of CPU tensors through the CUDA path as\n"
"if they lived on `device` (-1: stop), enqueued on `stream`, so that a fake\n"
"driver (tests/fakecuda) sees them.  Never use with a real driver.");

static PyObject *
fc_py_fake_cuda(PyObject *module, PyObject *args)
{
    FcState *st = (FcState *)PyModule_GetState(module);
    int device;
    unsigned long long stream;
    if (!PyArg_ParseTuple(args, "iK:_fake_cuda", &device, &stream)) {
        return NULL;
    }
    st->test.fake_device = device < 0 ? -1 : device;
    st->test.fake_stream = (uintptr_t)stream;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(fc_code_fingerprint_doc,
"_code_fingerprint(function)\n--\n\n"
"Tests and scripts/hook_fingerprints.py: the fingerprint by which a library\n"
"hook's code is recognised (src/hooks.c), or None where it has a constant\n"
"it does not read.");

static PyObject *
fc_py_code_fingerprint(PyObject *module, PyObject *f)
{
    uint64_t fp;
    PyObject *code = PyFunction_Check(f) ? PyFunction_GET_CODE(f) : f;
    if (fc_code_fingerprint(code, &fp) < 0) {
        Py_RETURN_NONE;
    }
    return PyLong_FromUnsignedLongLong(fp);
}

PyDoc_STRVAR(fc_known_fingerprints_doc,
"_known_fingerprints()\n--\n\n"
"Tests and scripts/hook_fingerprints.py: the fingerprints src/hooks.c lists\n"
"for this CPython, by table: {'pd': [(variant, (fp, ...)), ...], ...}.");

static PyObject *
fc_py_known_fingerprints(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    (void)module;
    return fc_known_fingerprints();
}

PyDoc_STRVAR(fc_replicate_road_doc,
"_replicate_road(walk=None)\n--\n\n"
"Tests only: with walk True, replicate() records no tape and makes its\n"
"replicas by n deep copies; False: it records one where the source allows\n"
"and enough replicas are left for it to pay (the default); 'tape': where\n"
"the source allows, from n = 2; None: unchanged.  Returns {'walk': the\n"
"setting before, 'tapes': how many replicate() calls made replicas from a\n"
"tape, 'wasted': how many recorded one and abandoned it}.");

static PyObject *
fc_py_replicate_road(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    FcState *st = (FcState *)PyModule_GetState(module);
    if (nargs > 1) {
        PyErr_SetString(PyExc_TypeError, "_replicate_road() takes at most 1 argument");
        return NULL;
    }
    int before = st->test.replicate_walk;
    if (nargs == 1 && args[0] != Py_None) {
        int w;
        if (PyUnicode_Check(args[0])) {
            if (PyUnicode_CompareWithASCIIString(args[0], "tape") != 0) {
                PyErr_SetString(PyExc_ValueError, "_replicate_road(): 'tape', a bool or None");
                return NULL;
            }
            w = -1;
        }
        else if ((w = PyObject_IsTrue(args[0])) < 0) {
            return NULL;
        }
        st->test.replicate_walk = w;
    }
    PyObject *road = before < 0 ? PyUnicode_FromString("tape") : Py_NewRef(before ? Py_True : Py_False);
    if (road == NULL) {
        return NULL;
    }
    return Py_BuildValue("{s:N,s:n,s:n}", "walk", road, "tapes", st->test.replicate_tapes,
                         "wasted", st->test.replicate_wasted);
}

static PyMethodDef fc_testing_methods[] = {
    {"_code_fingerprint", fc_py_code_fingerprint, METH_O, fc_code_fingerprint_doc},
    {"_known_fingerprints", fc_py_known_fingerprints, METH_NOARGS, fc_known_fingerprints_doc},
    {"_defer_stats", fc_py_defer_stats, METH_NOARGS, fc_defer_stats_doc},
    {"_fake_cuda", fc_py_fake_cuda, METH_VARARGS, fc_fake_cuda_doc},
    {"_replicate_road", (PyCFunction)(void (*)(void))fc_py_replicate_road, METH_FASTCALL,
     fc_replicate_road_doc},
    {NULL, NULL, 0, NULL},
};

FC_INTERNAL int
fc_testing_exec(PyObject *module, FcState *st)
{
    memset(&st->test, 0, sizeof(st->test));
    st->test.fake_device = -1;
    return PyModule_AddFunctions(module, fc_testing_methods);
}
