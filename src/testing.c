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

PyDoc_STRVAR(fc_replicate_road_doc,
"_replicate_road(walk=None)\n--\n\n"
"Tests only: with walk True, replicate() records no tape and makes its\n"
"replicas by n deep copies; False: it records one where it can (the\n"
"default); None: unchanged.  Returns {'walk': the setting before,\n"
"'tapes': how many replicate() calls made their replicas from a tape}.");

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
        int w = PyObject_IsTrue(args[0]);
        if (w < 0) {
            return NULL;
        }
        st->test.replicate_walk = w;
    }
    return Py_BuildValue("{s:O,s:n}", "walk", before ? Py_True : Py_False,
                         "tapes", st->test.replicate_tapes);
}

static PyMethodDef fc_testing_methods[] = {
    {"_code_fingerprint", fc_py_code_fingerprint, METH_O, fc_code_fingerprint_doc},
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
