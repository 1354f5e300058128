/*
 * cuda_backend.c: the "cuda" buffer backend.  It recognises no type of its own:
 * CUDA tensors are torch's (torch.c, configure(torch_cuda=True)), and
 * their byte copies reach the device through the deferred-copy queue
 * (defer.c), which submits them to fastcopy._cuda's C API.  This part owns
 * that module's handle in the state and says what it sees in backends()
 * (fastcopy.backends() adds what the driver reports: fastcopy/_snapshot.py).
 */
#include "fastcopy.h"
#include "cuda_backend.h"
#include "backend.h"
#include "state.h"

/* This backend's own block of the module state (backend.h). */
#define CUDA(st) FC_BACKEND_STATE(st, FcCudaState, FC_BK_cuda)
FC_BACKEND_STATE_CHECK(FcCudaState);

/* The C API of fastcopy._cuda, imported at the first CUDA copy; the module
   stays referenced by the state so the API's context stays alive.
   the API | NULL+exc */
FC_INTERNAL const FcCudaCAPI *
fc_cuda_api(FcState *st)
{
    if (CUDA(st)->api != NULL) {
        return CUDA(st)->api;
    }
    PyObject *mod = PyImport_ImportModule("fastcopy._cuda");
    if (mod == NULL) {
        return NULL;
    }
    const FcCudaCAPI *api = PyCapsule_Import(FC_CUDA_CAPI_NAME, 0);
    if (api == NULL) {
        Py_DECREF(mod);
        return NULL;
    }
    if (api->version != FC_CUDA_CAPI_VERSION) {
        Py_DECREF(mod);
        PyErr_Format(PyExc_ImportError, "fastcopy._cuda C API version %d, expected %d",
                     api->version, FC_CUDA_CAPI_VERSION);
        return NULL;
    }
    Py_XSETREF(CUDA(st)->mod, mod);
    CUDA(st)->api = api;
    return api;
}

/* backends()["cuda"], the core's half.  new ref | NULL+exc */
static PyObject *
fc_cuda_info(FcState *st)
{
    return Py_BuildValue("{s:O}", "loaded", CUDA(st)->mod != NULL ? Py_True : Py_False);
}

static int
fc_cuda_traverse(FcState *st, visitproc visit, void *arg)
{
    Py_VISIT(CUDA(st)->mod);
    return 0;
}

static void
fc_cuda_clear(FcState *st)
{
    CUDA(st)->api = NULL;
    Py_CLEAR(CUDA(st)->mod);
}

FC_INTERNAL_DATA const FcBackend fc_cuda_backend = {
    .name = "cuda",
    .traverse = fc_cuda_traverse,
    .clear = fc_cuda_clear,
    .info = fc_cuda_info,
};
