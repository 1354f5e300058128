/*
 * _cuda.c: fastcopy._cuda, batched device copies through the CUDA driver API.
 *
 * Design
 * ------
 * The module links against nothing CUDA: the driver is loaded the first
 * time it is needed ("libcuda.so.1", "nvcuda.dll" on Windows, or
 * $FASTCOPY_LIBCUDA, which the tests
 * point at a fake driver), so the package imports and reports why on
 * machines with no GPU.  Only cuDriverGetVersion and cuGetProcAddress are
 * looked up by symbol name; every other entry point comes from
 * cuGetProcAddress with an explicit cudaVersion, because the driver keeps
 * several ABIs under one name and the version picks among them:
 *
 *   cuMemcpyBatchAsync  cudaVersion 12080  ->  ... numAttrs, size_t *failIdx, stream
 *                       cudaVersion 13000  ->  ... numAttrs, stream   (_v2)
 *
 * A driver asked for a version newer than itself answers with the newest ABI
 * it has, so we ask for min(driver version, the ABI we mean) and choose the
 * function-pointer type from the version we asked for.  Lookups pass
 * CU_GET_PROC_ADDRESS_LEGACY_STREAM: stream handle 0 then means the legacy
 * default stream, which is what torch's default stream is.
 *
 * copy_batch(copies, device, stream) submits every copy in one go, in
 * stream order on `stream`, and never waits for them:
 *
 *   capturing stream, or no batch API  ->  one cuMemcpyAsync per copy
 *       (cuMemcpyBatchAsync cannot be captured into a graph)
 *   legacy default stream (0 or 0x1)   ->  batch on a side stream, fenced:
 *       record A on stream; side waits A; batch on side; record B on side;
 *       stream waits B.  Work queued on `stream` later (torch's caching
 *       allocator reusing the blocks included) is ordered after the copies.
 *   any other stream                   ->  cuMemcpyBatchAsync on it
 *
 * The side stream and its two events are per device, created on first use
 * and kept for the life of the process (the driver may be gone by the time
 * module state is freed at exit, so they are never destroyed).  Sharing the
 * events between threads is safe: a stream-wait on an event waits for its
 * latest record, and on an in-order side stream a later record covers the
 * earlier copies too.
 *
 * Copies run under the device's primary context (the one the CUDA runtime
 * and torch use); it is pushed only if it is not already current.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fc_cuda.h"
#include "fc_cuda_capi.h"
#include "platform.h"

#ifdef FC_CUDA_ABI_CHECKED
extern const int fc_cuda_abi_checked_version;   /* abi_check.c */
#endif

#define FC_CUDA_DEFAULT_LIB FC_PLAT_CUDA_DRIVER
#define FC_CUDA_BASE_VERSION 12000   /* ABI of the non-batch entry points we declare */

typedef struct {
    fc_CUcontext ctx;           /* retained primary context, NULL until first use */
    fc_CUstream side;           /* non-blocking side stream, NULL until first use */
    fc_CUevent before, after;
} FcCudaDevice;

typedef struct {
    int state;                  /* 0 not tried | 1 loaded | -1 failed (reason says why) */
    char reason[512];
    char path[512];
    void *lib;
    int driver_version;
    int proc_address_abi;       /* 1: cuGetProcAddress (11.x) | 2: cuGetProcAddress_v2 */
    int batch_abi;              /* 0 none | 1 12.8 ABI (failIdx) | 2 13.0 ABI */
    int ndev;
    FcCudaDevice *devs;

    fc_cuGetProcAddress_v1_t gpa1;
    fc_cuGetProcAddress_v2_t gpa2;
    fc_cuInit_t cuInit;
    fc_cuDriverGetVersion_t cuDriverGetVersion;
    fc_cuGetErrorName_t cuGetErrorName;
    fc_cuDeviceGetCount_t cuDeviceGetCount;
    fc_cuDeviceGet_t cuDeviceGet;
    fc_cuDevicePrimaryCtxRetain_t cuDevicePrimaryCtxRetain;
    fc_cuCtxGetCurrent_t cuCtxGetCurrent;
    fc_cuCtxPushCurrent_v2_t cuCtxPushCurrent;
    fc_cuCtxPopCurrent_v2_t cuCtxPopCurrent;
    fc_cuStreamCreate_t cuStreamCreate;
    fc_cuEventCreate_t cuEventCreate;
    fc_cuEventRecord_t cuEventRecord;
    fc_cuStreamWaitEvent_t cuStreamWaitEvent;
    fc_cuStreamIsCapturing_t cuStreamIsCapturing;
    fc_cuMemcpyAsync_t cuMemcpyAsync;
    fc_cuMemcpyBatchAsync_v1_t cuMemcpyBatchAsync_v1;
    fc_cuMemcpyBatchAsync_v2_t cuMemcpyBatchAsync_v2;
} FcCudaState;

static inline FcCudaState *
fc_cuda_state(PyObject *module)
{
    return (FcCudaState *)PyModule_GetState(module);
}

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */
/* ------------------------------------------------------------------------ */

/* Writes "NAME" (or "CUDA error N" for codes the driver cannot name). */
static void
fc_cuda_errname(FcCudaState *st, fc_CUresult rc, char *buf, size_t n)
{
    const char *name = NULL;
    if (st->cuGetErrorName == NULL || st->cuGetErrorName(rc, &name) != FC_CUDA_SUCCESS
        || name == NULL) {
        snprintf(buf, n, "CUDA error %d", (int)rc);
        return;
    }
    snprintf(buf, n, "%s", name);
}

/* Sets RuntimeError("<what> failed: NAME<extra>").  Always NULL. */
static PyObject *
fc_cuda_raise(FcCudaState *st, const char *what, fc_CUresult rc, const char *extra)
{
    char name[128];
    fc_cuda_errname(st, rc, name, sizeof(name));
    PyErr_Format(PyExc_RuntimeError, "%s failed: %s%s", what, name, extra ? extra : "");
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                   */
/* ------------------------------------------------------------------------ */

/* 0 found | 1 missing (pfn NULL) | -1 driver error (rc set) */
static int
fc_cuda_proc(FcCudaState *st, const char *name, int version, void **pfn, fc_CUresult *rc)
{
    fc_CUdriverProcAddressQueryResult q = FC_CU_GET_PROC_ADDRESS_SUCCESS;
    if (version > st->driver_version)
        version = st->driver_version;
    *pfn = NULL;
    if (st->proc_address_abi == 2)
        *rc = st->gpa2(name, pfn, version, FC_CU_GET_PROC_ADDRESS_LEGACY_STREAM, &q);
    else
        *rc = st->gpa1(name, pfn, version, FC_CU_GET_PROC_ADDRESS_LEGACY_STREAM);
    if (*rc == FC_CUDA_SUCCESS && q == FC_CU_GET_PROC_ADDRESS_SUCCESS && *pfn != NULL)
        return 0;
    if (*rc == FC_CUDA_SUCCESS || *rc == FC_CUDA_ERROR_NOT_FOUND) {
        *pfn = NULL;
        return 1;
    }
    *pfn = NULL;
    return -1;
}

/* 1 loaded | 0 not available (st->reason says why).  Never raises.
 * Runs with the GIL held, which serialises it. */
#ifdef Py_GIL_DISABLED
static int fc_cuda_load_locked(FcCudaState *st);

/* Free-threaded builds: the lazy load runs once, under a lock (on GIL
   builds the GIL serialises it; it calls no Python code). */
static int
fc_cuda_load(FcCudaState *st)
{
    static PyMutex lock;
    PyMutex_Lock(&lock);
    int r = fc_cuda_load_locked(st);
    PyMutex_Unlock(&lock);
    return r;
}
#  define fc_cuda_load fc_cuda_load_locked
#endif

static int
fc_cuda_load(FcCudaState *st)
{
    static const struct { const char *name; size_t off; } required[] = {
#define FC_REQ(f) {#f, offsetof(FcCudaState, f)}
        FC_REQ(cuInit), FC_REQ(cuGetErrorName), FC_REQ(cuDeviceGetCount),
        FC_REQ(cuDeviceGet), FC_REQ(cuDevicePrimaryCtxRetain), FC_REQ(cuCtxGetCurrent),
        FC_REQ(cuCtxPushCurrent), FC_REQ(cuCtxPopCurrent), FC_REQ(cuStreamCreate),
        FC_REQ(cuEventCreate), FC_REQ(cuEventRecord), FC_REQ(cuStreamWaitEvent),
        FC_REQ(cuStreamIsCapturing), FC_REQ(cuMemcpyAsync),
#undef FC_REQ
    };
    const char *path;
    fc_CUresult rc;
    void *pfn;
    int count = 0, r;
    char name[128], err[256];

    if (st->state != 0)
        return st->state == 1;
    st->state = -1;
    path = getenv("FASTCOPY_LIBCUDA");
    if (path == NULL || path[0] == '\0')
        path = FC_CUDA_DEFAULT_LIB;
    snprintf(st->path, sizeof(st->path), "%s", path);

    /* Never dlclose()d: entry points and driver objects outlive any reset. */
    st->lib = fc_plat_dl_open(path, err, sizeof(err));
    if (st->lib == NULL) {
        snprintf(st->reason, sizeof(st->reason), "cannot load the CUDA driver (%s): %s",
                 path, err);
        return 0;
    }
    st->cuDriverGetVersion = (fc_cuDriverGetVersion_t)fc_plat_dl_sym(st->lib, "cuDriverGetVersion");
    st->gpa2 = (fc_cuGetProcAddress_v2_t)fc_plat_dl_sym(st->lib, "cuGetProcAddress_v2");
    st->gpa1 = (fc_cuGetProcAddress_v1_t)fc_plat_dl_sym(st->lib, "cuGetProcAddress");
    if (st->cuDriverGetVersion == NULL || (st->gpa1 == NULL && st->gpa2 == NULL)) {
        snprintf(st->reason, sizeof(st->reason),
                 "%s has no cuGetProcAddress (a CUDA 11.3+ driver is needed)", path);
        return 0;
    }
    st->proc_address_abi = st->gpa2 != NULL ? 2 : 1;
    rc = st->cuDriverGetVersion(&st->driver_version);
    if (rc != FC_CUDA_SUCCESS) {
        snprintf(st->reason, sizeof(st->reason), "cuDriverGetVersion failed: CUDA error %d",
                 (int)rc);
        return 0;
    }
    for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
        r = fc_cuda_proc(st, required[i].name, FC_CUDA_BASE_VERSION, &pfn, &rc);
        if (r != 0) {
            snprintf(st->reason, sizeof(st->reason),
                     "driver %d.%d: cuGetProcAddress(%s) %s (error %d)",
                     st->driver_version / 1000, st->driver_version % 1000 / 10,
                     required[i].name, r > 0 ? "found nothing" : "failed", (int)rc);
            return 0;
        }
        memcpy((char *)st + required[i].off, &pfn, sizeof(pfn));
    }
    rc = st->cuInit(0);
    if (rc != FC_CUDA_SUCCESS) {
        fc_cuda_errname(st, rc, name, sizeof(name));
        snprintf(st->reason, sizeof(st->reason), "cuInit failed: %s", name);
        return 0;
    }
    rc = st->cuDeviceGetCount(&count);
    if (rc != FC_CUDA_SUCCESS || count <= 0) {
        fc_cuda_errname(st, rc, name, sizeof(name));
        snprintf(st->reason, sizeof(st->reason), "no CUDA device (%s)",
                 rc != FC_CUDA_SUCCESS ? name : "device count is 0");
        return 0;
    }
    st->batch_abi = 0;
    if (st->driver_version >= FC_CUDA_VERSION_BATCH_V2) {
        if (fc_cuda_proc(st, "cuMemcpyBatchAsync", FC_CUDA_VERSION_BATCH_V2, &pfn, &rc) == 0) {
            st->cuMemcpyBatchAsync_v2 = (fc_cuMemcpyBatchAsync_v2_t)pfn;
            st->batch_abi = 2;
        }
    }
    else if (st->driver_version >= FC_CUDA_VERSION_BATCH_V1) {
        if (fc_cuda_proc(st, "cuMemcpyBatchAsync", FC_CUDA_VERSION_BATCH_V1, &pfn, &rc) == 0) {
            st->cuMemcpyBatchAsync_v1 = (fc_cuMemcpyBatchAsync_v1_t)pfn;
            st->batch_abi = 1;
        }
    }
    st->devs = PyMem_Calloc((size_t)count, sizeof(FcCudaDevice));
    if (st->devs == NULL) {
        snprintf(st->reason, sizeof(st->reason), "out of memory");
        return 0;
    }
    st->ndev = count;
    st->reason[0] = '\0';
    st->state = 1;
    return 1;
}
#ifdef Py_GIL_DISABLED
#  undef fc_cuda_load
#endif

/* ------------------------------------------------------------------------ */
/* Submission (runs without the GIL)                                         */
/* ------------------------------------------------------------------------ */

typedef struct {
    const char *what;           /* failing call, NULL on success */
    fc_CUresult rc;
    size_t index;               /* failing copy, (size_t)-1 when unknown */
    const char *path;           /* the path taken */
} FcCudaResult;

#define FC_CALL(res, name, expr)                         \
    do {                                                 \
        fc_CUresult rc_ = (expr);                        \
        if (rc_ != FC_CUDA_SUCCESS) {                    \
            (res)->what = (name);                        \
            (res)->rc = rc_;                             \
            goto done;                                   \
        }                                                \
    } while (0)

static int
fc_cuda_is_legacy(fc_CUstream s)
{
    return s == NULL || s == FC_CU_STREAM_LEGACY;
}

#ifdef Py_GIL_DISABLED
static void fc_cuda_submit_locked(FcCudaState *, int, fc_CUstream, fc_CUdeviceptr *,
                                  fc_CUdeviceptr *, size_t *, size_t, FcCudaResult *);

/* Free-threaded builds: a device's context and side stream are made on
   first use; submissions (asynchronous, short) take turns. */
static void
fc_cuda_submit(FcCudaState *st, int device, fc_CUstream stream,
               fc_CUdeviceptr *dsts, fc_CUdeviceptr *srcs, size_t *sizes, size_t n,
               FcCudaResult *res)
{
    static PyMutex lock;
    PyMutex_Lock(&lock);
    fc_cuda_submit_locked(st, device, stream, dsts, srcs, sizes, n, res);
    PyMutex_Unlock(&lock);
}
#  define fc_cuda_submit fc_cuda_submit_locked
#endif

/* Fills *res; the caller raises from it. */
static void
fc_cuda_submit(FcCudaState *st, int device, fc_CUstream stream,
               fc_CUdeviceptr *dsts, fc_CUdeviceptr *srcs, size_t *sizes, size_t n,
               FcCudaResult *res)
{
    FcCudaDevice *d = &st->devs[device];
    fc_CUcontext cur = NULL, popped;
    fc_CUstreamCaptureStatus cap = FC_CU_STREAM_CAPTURE_STATUS_NONE;
    int pushed = 0;
    struct fc_CUmemcpyAttributes_st attr;
    size_t attr_idx = 0, fail_idx = (size_t)-1;

    res->what = NULL;
    res->index = (size_t)-1;
    res->path = NULL;

    if (d->ctx == NULL) {
        fc_CUdevice dev;
        FC_CALL(res, "cuDeviceGet", st->cuDeviceGet(&dev, device));
        FC_CALL(res, "cuDevicePrimaryCtxRetain", st->cuDevicePrimaryCtxRetain(&d->ctx, dev));
    }
    FC_CALL(res, "cuCtxGetCurrent", st->cuCtxGetCurrent(&cur));
    if (cur != d->ctx) {
        FC_CALL(res, "cuCtxPushCurrent", st->cuCtxPushCurrent(d->ctx));
        pushed = 1;
    }
    FC_CALL(res, "cuStreamIsCapturing", st->cuStreamIsCapturing(stream, &cap));

    if (cap != FC_CU_STREAM_CAPTURE_STATUS_NONE || st->batch_abi == 0) {
        res->path = cap != FC_CU_STREAM_CAPTURE_STATUS_NONE ? "memcpy-capture" : "memcpy";
        for (size_t i = 0; i < n; i++) {
            res->index = i;
            FC_CALL(res, "cuMemcpyAsync", st->cuMemcpyAsync(dsts[i], srcs[i], sizes[i], stream));
        }
        res->index = (size_t)-1;
        goto done;
    }

    memset(&attr, 0, sizeof(attr));
    attr.srcAccessOrder = FC_CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    attr.srcLocHint.type = FC_CU_MEM_LOCATION_TYPE_DEVICE;
    attr.srcLocHint.id = device;
    attr.dstLocHint = attr.srcLocHint;

    fc_CUstream on = stream;
    if (fc_cuda_is_legacy(stream)) {
        /* cuMemcpyBatchAsync: "Must not be legacy NULL stream." */
        if (d->side == NULL) {
            FC_CALL(res, "cuEventCreate", st->cuEventCreate(&d->before, FC_CU_EVENT_DISABLE_TIMING));
            FC_CALL(res, "cuEventCreate", st->cuEventCreate(&d->after, FC_CU_EVENT_DISABLE_TIMING));
            FC_CALL(res, "cuStreamCreate", st->cuStreamCreate(&d->side, FC_CU_STREAM_NON_BLOCKING));
        }
        on = d->side;
        FC_CALL(res, "cuEventRecord", st->cuEventRecord(d->before, stream));
        FC_CALL(res, "cuStreamWaitEvent", st->cuStreamWaitEvent(on, d->before, 0));
        res->path = "batch-fenced";
    }
    else {
        res->path = "batch";
    }
    if (st->batch_abi == 2) {
        FC_CALL(res, "cuMemcpyBatchAsync",
                st->cuMemcpyBatchAsync_v2(dsts, srcs, sizes, n, (fc_CUmemcpyAttributes *)&attr,
                                          &attr_idx, 1, on));
    }
    else {
        fc_CUresult rc = st->cuMemcpyBatchAsync_v1(dsts, srcs, sizes, n,
                                                   (fc_CUmemcpyAttributes *)&attr,
                                                   &attr_idx, 1, &fail_idx, on);
        if (rc != FC_CUDA_SUCCESS) {
            res->index = fail_idx < n ? fail_idx : (size_t)-1;
            FC_CALL(res, "cuMemcpyBatchAsync", rc);
        }
    }
    if (on != stream) {
        FC_CALL(res, "cuEventRecord", st->cuEventRecord(d->after, on));
        FC_CALL(res, "cuStreamWaitEvent", st->cuStreamWaitEvent(stream, d->after, 0));
    }

done:
    if (pushed) {
        fc_CUresult rc = st->cuCtxPopCurrent(&popped);
        if (rc != FC_CUDA_SUCCESS && res->what == NULL) {
            res->what = "cuCtxPopCurrent";
            res->rc = rc;
        }
    }
}
#ifdef Py_GIL_DISABLED
#  undef fc_cuda_submit
#endif

/* ------------------------------------------------------------------------ */
/* Python functions                                                          */
/* ------------------------------------------------------------------------ */

PyDoc_STRVAR(available_doc,
"available() -> (bool, str)\n\n"
"Whether the CUDA driver could be loaded and has a device; the string says\n"
"why not (or, when available, which driver and batch ABI were found).");

static PyObject *
fc_cuda_available(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    FcCudaState *st = fc_cuda_state(module);
    if (!fc_cuda_load(st))
        return Py_BuildValue("(Os)", Py_False, st->reason);
    return Py_BuildValue("(Os)", Py_True,
                         st->batch_abi == 2 ? "cuMemcpyBatchAsync (13.0 ABI)"
                         : st->batch_abi == 1 ? "cuMemcpyBatchAsync (12.8 ABI)"
                         : "cuMemcpyAsync per copy (driver has no batch API)");
}

/* 1 | 0+exc */
static int
fc_cuda_require(FcCudaState *st)
{
    if (fc_cuda_load(st))
        return 1;
    PyErr_Format(PyExc_RuntimeError, "CUDA is not available: %s", st->reason);
    return 0;
}

PyDoc_STRVAR(driver_version_doc,
"driver_version() -> int\n\n"
"The driver's CUDA version as cuDriverGetVersion reports it (12080 is 12.8).\n"
"RuntimeError when the driver is not available.");

static PyObject *
fc_cuda_driver_version(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    FcCudaState *st = fc_cuda_state(module);
    if (!fc_cuda_require(st))
        return NULL;
    return PyLong_FromLong(st->driver_version);
}

PyDoc_STRVAR(info_doc,
"info() -> dict\n\n"
"What was loaded: library path, driver version, cuGetProcAddress and batch\n"
"ABIs, device count, and the CUDA headers the hand-declared ABI was checked\n"
"against at build time (None when built without them).  Never raises.");

static PyObject *
fc_cuda_info(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    FcCudaState *st = fc_cuda_state(module);
    int ok = fc_cuda_load(st);
    PyObject *checked;
#ifdef FC_CUDA_ABI_CHECKED
    checked = PyLong_FromLong(fc_cuda_abi_checked_version);
    if (checked == NULL)
        return NULL;
#else
    checked = Py_NewRef(Py_None);
#endif
    return Py_BuildValue(
        "{sOsssssNsNsNsisN}",
        "available", ok ? Py_True : Py_False,
        "reason", st->reason,
        "library", st->path,
        "driver_version",
        st->driver_version ? PyLong_FromLong(st->driver_version) : Py_NewRef(Py_None),
        "proc_address", st->proc_address_abi == 2 ? PyUnicode_FromString("cuGetProcAddress_v2")
                        : st->proc_address_abi == 1 ? PyUnicode_FromString("cuGetProcAddress")
                        : Py_NewRef(Py_None),
        "batch_abi", st->batch_abi == 2 ? PyUnicode_FromString("13.0")
                     : st->batch_abi == 1 ? PyUnicode_FromString("12.8")
                     : Py_NewRef(Py_None),
        "devices", ok ? st->ndev : 0,
        "abi_checked_against", checked);
}

PyDoc_STRVAR(copy_batch_doc,
"copy_batch(copies, device, stream) -> str\n\n"
"Enqueue every (dst_ptr, src_ptr, nbytes) of `copies` on `stream` (a\n"
"CUstream handle as an int; 0 is the legacy default stream) under `device`'s\n"
"primary context, in one submission.  Pointers are unified (UVA) addresses.\n"
"Returns without waiting; the copies are ordered after work already on the\n"
"stream and before work queued on it later.  Returns the path taken:\n"
"'batch', 'batch-fenced' (legacy stream, via a side stream and events),\n"
"'memcpy' (driver without cuMemcpyBatchAsync), 'memcpy-capture' (stream\n"
"capture: one cuMemcpyAsync per copy), or 'empty'.  Driver errors raise\n"
"RuntimeError naming the call and the error (cuGetErrorName).");

/* 0 | -1+exc */
static int
fc_cuda_parse_u64(PyObject *o, unsigned long long *out, const char *what, Py_ssize_t i)
{
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "copies[%zd]: %s must be an int, not %.100s",
                     i, what, Py_TYPE(o)->tp_name);
        return -1;
    }
    *out = PyLong_AsUnsignedLongLong(o);
    if (*out == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Format(PyExc_OverflowError, "copies[%zd]: %s out of range", i, what);
        return -1;
    }
    return 0;
}

static PyObject *
fc_cuda_copy_batch(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"copies", "device", "stream", NULL};
    FcCudaState *st = fc_cuda_state(module);
    PyObject *copies, *stream_obj, *seq = NULL, *result = NULL;
    int device;
    unsigned long long stream_handle;
    fc_CUdeviceptr *dsts = NULL, *srcs = NULL;
    size_t *sizes = NULL, n = 0;
    Py_ssize_t len;
    FcCudaResult res;
    char extra[96];

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OiO:copy_batch", kwlist,
                                     &copies, &device, &stream_obj))
        return NULL;
    if (!PyLong_Check(stream_obj)) {
        PyErr_Format(PyExc_TypeError, "stream must be an int (a CUstream handle), not %.100s",
                     Py_TYPE(stream_obj)->tp_name);
        return NULL;
    }
    stream_handle = PyLong_AsUnsignedLongLong(stream_obj);
    if (stream_handle == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    seq = PySequence_Fast(copies, "copies must be a sequence of (dst, src, nbytes)");
    if (seq == NULL)
        return NULL;
    len = PySequence_Fast_GET_SIZE(seq);
    if (len > 0) {
        dsts = PyMem_Malloc((size_t)len * sizeof(*dsts));
        srcs = PyMem_Malloc((size_t)len * sizeof(*srcs));
        sizes = PyMem_Malloc((size_t)len * sizeof(*sizes));
        if (dsts == NULL || srcs == NULL || sizes == NULL) {
            PyErr_NoMemory();
            goto error;
        }
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        PyObject *t = PySequence_Fast_GET_ITEM(seq, i);
        unsigned long long dst, src, nb;
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 3) {
            PyErr_Format(PyExc_TypeError, "copies[%zd] must be a (dst, src, nbytes) tuple", i);
            goto error;
        }
        if (fc_cuda_parse_u64(PyTuple_GET_ITEM(t, 0), &dst, "dst", i) < 0
            || fc_cuda_parse_u64(PyTuple_GET_ITEM(t, 1), &src, "src", i) < 0
            || fc_cuda_parse_u64(PyTuple_GET_ITEM(t, 2), &nb, "nbytes", i) < 0)
            goto error;
        if (nb == 0)
            continue;           /* the batch API rejects empty copies; they are no-ops */
        dsts[n] = dst;
        srcs[n] = src;
        sizes[n] = (size_t)nb;
        n++;
    }
    if (!fc_cuda_require(st))
        goto error;
    if (device < 0 || device >= st->ndev) {
        PyErr_Format(PyExc_ValueError, "device %d out of range (%d CUDA devices)",
                     device, st->ndev);
        goto error;
    }
    if (n == 0) {
        result = PyUnicode_FromString("empty");
        goto error;             /* shared cleanup */
    }
    Py_BEGIN_ALLOW_THREADS
    fc_cuda_submit(st, device, (fc_CUstream)(uintptr_t)stream_handle, dsts, srcs, sizes, n, &res);
    Py_END_ALLOW_THREADS
    if (res.what != NULL) {
        extra[0] = '\0';
        if (res.index != (size_t)-1)
            snprintf(extra, sizeof(extra), " (copy %zu of %zu)", res.index, n);
        fc_cuda_raise(st, res.what, res.rc, extra);
        goto error;
    }
    result = PyUnicode_FromString(res.path);

error:
    PyMem_Free(dsts);
    PyMem_Free(srcs);
    PyMem_Free(sizes);
    Py_XDECREF(seq);
    return result;
}

/* ------------------------------------------------------------------------ */
/* C API for the core (fc_cuda_capi.h)                                       */
/* ------------------------------------------------------------------------ */

/* 0 | -1+exc */
static int
fc_cuda_capi_ready(void *ctx)
{
    return fc_cuda_require((FcCudaState *)ctx) ? 0 : -1;
}

/* Without the GIL.  0 | -1 with err set */
static int
fc_cuda_capi_submit(void *ctx, int device, uintptr_t stream,
                    unsigned long long *dsts, unsigned long long *srcs, size_t *sizes,
                    size_t n, const char **path, char *err, size_t errlen)
{
    FcCudaState *st = ctx;
    FcCudaResult res;
    if (st->state != 1) {
        snprintf(err, errlen, "the CUDA driver is not loaded");
        return -1;
    }
    if (device < 0 || device >= st->ndev) {
        snprintf(err, errlen, "device %d out of range (%d CUDA devices)", device, st->ndev);
        return -1;
    }
    fc_cuda_submit(st, device, (fc_CUstream)stream, (fc_CUdeviceptr *)dsts,
                   (fc_CUdeviceptr *)srcs, sizes, n, &res);
    if (res.what != NULL) {
        char name[128];
        fc_cuda_errname(st, res.rc, name, sizeof(name));
        if (res.index != (size_t)-1)
            snprintf(err, errlen, "%s failed: %s (copy %zu of %zu)", res.what, name,
                     res.index, n);
        else
            snprintf(err, errlen, "%s failed: %s", res.what, name);
        return -1;
    }
    *path = res.path;
    return 0;
}

static void
fc_cuda_capi_free(PyObject *capsule)
{
    PyMem_Free(PyCapsule_GetPointer(capsule, FC_CUDA_CAPI_NAME));
}

/* Module exec: the "_C_API" capsule.  0 | -1+exc */
static int
fc_cuda_exec(PyObject *module)
{
    FcCudaCAPI *api = PyMem_Calloc(1, sizeof(*api));
    if (api == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    api->version = FC_CUDA_CAPI_VERSION;
    api->ctx = fc_cuda_state(module);
    api->ready = fc_cuda_capi_ready;
    api->submit = fc_cuda_capi_submit;
    PyObject *cap = PyCapsule_New(api, FC_CUDA_CAPI_NAME, fc_cuda_capi_free);
    if (cap == NULL) {
        PyMem_Free(api);
        return -1;
    }
    int r = PyModule_AddObjectRef(module, "_C_API", cap);
    Py_DECREF(cap);
    return r;
}

PyDoc_STRVAR(forget_doc,
"_forget_driver()\n\n"
"Tests only: forget what was loaded so the next call loads again (reading\n"
"$FASTCOPY_LIBCUDA anew).  The library stays mapped and the driver objects\n"
"already created are leaked.  Not thread-safe against concurrent copies.");

static PyObject *
fc_cuda_forget(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    FcCudaState *st = fc_cuda_state(module);
    PyMem_Free(st->devs);
    memset(st, 0, sizeof(*st));
    Py_RETURN_NONE;
}

static PyMethodDef fc_cuda_methods[] = {
    {"available", fc_cuda_available, METH_NOARGS, available_doc},
    {"driver_version", fc_cuda_driver_version, METH_NOARGS, driver_version_doc},
    {"info", fc_cuda_info, METH_NOARGS, info_doc},
    {"copy_batch", (PyCFunction)(void (*)(void))fc_cuda_copy_batch,
     METH_VARARGS | METH_KEYWORDS, copy_batch_doc},
    {"_forget_driver", fc_cuda_forget, METH_NOARGS, forget_doc},
    {NULL, NULL, 0, NULL},
};

static void
fc_cuda_free(void *module)
{
    FcCudaState *st = fc_cuda_state((PyObject *)module);
    /* Driver objects are left to the process's end: see the design note. */
    if (st != NULL)
        PyMem_Free(st->devs);
}

static PyModuleDef_Slot fc_cuda_slots[] = {
    {Py_mod_exec, fc_cuda_exec},
#if PY_VERSION_HEX >= 0x030C0000
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
#ifdef Py_GIL_DISABLED
    /* the lazy load is under a lock of its own; submission never needed
       the GIL */
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#elif PY_VERSION_HEX >= 0x030D0000
    /* Lazy loading is serialised by the GIL. */
    {Py_mod_gil, Py_MOD_GIL_USED},
#endif
    {0, NULL},
};

PyDoc_STRVAR(module_doc,
"fastcopy._cuda: batched device-to-device copies through the CUDA driver API,\n"
"loaded at run time (no link against libcuda or libcudart).");

static struct PyModuleDef fc_cuda_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "fastcopy._cuda",
    .m_doc = module_doc,
    .m_size = sizeof(FcCudaState),
    .m_methods = fc_cuda_methods,
    .m_slots = fc_cuda_slots,
    .m_free = fc_cuda_free,
};

PyMODINIT_FUNC
PyInit__cuda(void)
{
    return PyModuleDef_Init(&fc_cuda_module);
}
