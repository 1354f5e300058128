/*
 * numpy.c: numpy arrays.  Kinds FB_NP_FIRST..FB_NP_LAST (buffers.c).
 *
 * What deepcopy(a, memo) does for an exact numpy.ndarray (numpy's
 * methods.c: array_deepcopy): PyArray_NewCopy(a, NPY_KEEPORDER); when the
 * dtype holds references (PyDataType_REFCHK) every object slot of the copy,
 * visited in the copy's memory order and, within an element, in the order
 * of the dtype's fields dict, is replaced by copy.deepcopy(item, memo)
 * (a NULL slot counts as None).  The array itself is never looked up in or
 * stored into the memo by numpy; the caller (the walker) does that.
 *
 * Here, with the same results:
 *   - a plain dtype: PyArray_NewCopy directly -- no attribute lookup, no
 *     bound method, and the memo stays native (numpy never reads it);
 *   - a big C- or F-contiguous array of a builtin, field-less dtype:
 *     PyArray_NewLikeArray(KEEPORDER, subok) -- the very allocation
 *     PyArray_NewCopy makes -- and the bytes moved by several threads with
 *     the GIL released;
 *   - object slots: fastcopy's own walker on the same context, so aliasing
 *     and the memo are shared with the rest of the copy.  Dtypes whose
 *     references numpy does not copy (a subarray of objects: numpy leaves
 *     those shared), new-style DTypes, a copy that is not C/F-contiguous, or
 *     a copy.deepcopy that is neither the stdlib's function (patched or not)
 *     nor ours: declined, so numpy's own __deepcopy__ runs;
 *   - subclasses (matrix, MaskedArray, recarray, user classes) and numpy
 *     scalars are never ours: their own __deepcopy__ runs.
 * With numpy_pool on, the copy's data comes from pool.c through a NEP 49
 * PyDataMem_Handler.  numpy's handler is a context variable: it is set
 * once in a private context (st->np_handler, made empty when the module
 * loads; the handler goes in at configure(numpy_pool=True), or at the
 * first pooled copy if numpy was not imported then; st->np_checked says it
 * is in), and that context is entered only around our own allocation
 * call: no other allocation ever sees the handler, and a pooled copy sets
 * no context variable -- nothing there can fail midway.  (Made at module
 * load because CPython 3.11's PyContext_New crashes when its second
 * allocation fails.)
 *
 * User code mid-copy (a finalizer, on 3.10/3.11 at any allocation of a
 * tracked object; an element's __deepcopy__) may resize an array with
 * refcheck=False: no length, shape or data pointer of an array is used
 * across anything that can run it without being read again.
 */
#include "fastcopy.h"

#include <sched.h>
#include <unistd.h>

enum { FB_NP_ARRAY = FB_NP_FIRST };

/* defined by later parts of the unity build */
static int fc_stack_check(void);
static int fc_parse(const char *fname, PyObject *const *args, Py_ssize_t nargs,
                    PyObject *kwnames, const char *const *names, int nnames,
                    int npos, int nreq, PyObject **out);

#define FC_NP_MAX_SLOTS 64          /* object slots per element we handle */
#define FC_NP_DEFAULT_PAR_MIN ((Py_ssize_t)8 << 20)

/* CPUs this process may run on. */
static int
fc_np_ncpu(void)
{
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) {
            return n;
        }
    }
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* Half the usable CPUs, at most 4: memcpy bandwidth saturates with a few
   threads, and on a 2-CPU machine a second copier only competes with the
   interpreter and its neighbours (measured: 0.8-1.1x at 64-128 MiB). */
static int
fc_np_default_threads(void)
{
    int n = fc_np_ncpu() / 2;
    return n < 1 ? 1 : n > 4 ? 4 : n;
}

#ifdef FC_HAVE_NUMPY
#include <numpy/arrayobject.h>

/* ------------------------------------------------------------------ */
/* The NumPy C API, imported at the first array, and the pool's        */
/* NEP 49 allocator                                                    */
/* ------------------------------------------------------------------ */

/* The pool as a NEP 49 allocator.  Static: arrays allocated from it keep
   the capsule alive, and may be freed after this module is gone. */
static void *
fc_np_h_malloc(void *ctx, size_t n)
{
    return fc_pool_alloc(n, NULL);
}

static void *
fc_np_h_calloc(void *ctx, size_t nelem, size_t elsize)
{
    if (elsize != 0 && nelem > SIZE_MAX / elsize) {
        return NULL;
    }
    size_t n = nelem * elsize;
    int zeroed = 0;
    void *p = fc_pool_alloc(n, &zeroed);
    if (p != NULL && !zeroed) {
        memset(p, 0, n);
    }
    return p;
}

static void *
fc_np_h_realloc(void *ctx, void *p, size_t n)
{
    return fc_pool_realloc(p, n);
}

static void
fc_np_h_free(void *ctx, void *p, size_t size)
{
    /* size is recomputed by numpy from the current shape: the block's own
       header knows better */
    fc_pool_free(p);
}

static PyDataMem_Handler fc_np_handler = {
    "fastcopy_pool",
    1,
    {NULL, fc_np_h_malloc, fc_np_h_calloc, fc_np_h_realloc, fc_np_h_free},
};

/* numpy.ndarray from sys.modules (never imported here), cached.
   0 (st->np_ndarray may still be NULL) | -1+exc */
static int
fc_np_find(FcState *st)
{
    PyObject *modules = PySys_GetObject("modules");   /* borrowed */
    if (modules == NULL || !PyDict_Check(modules)) {
        return 0;
    }
    PyObject *np = PyDict_GetItemString(modules, "numpy");  /* borrowed */
    if (np == NULL || !PyModule_Check(np)) {
        return 0;
    }
    Py_INCREF(np);
    PyObject *nd = NULL;
    PyObject *name = PyUnicode_FromString("ndarray");
    int r = name ? fc_lookup_attr(np, name, &nd) : -1;
    Py_XDECREF(name);
    Py_DECREF(np);
    if (r < 0) {
        /* a half-imported numpy: try again at the next type */
        PyErr_Clear();
        return 0;
    }
    if (r > 0 && PyType_Check(nd)) {
        st->np_ndarray = nd;
        return 0;
    }
    Py_XDECREF(nd);
    return 0;
}

/* Import the C API once.  1 usable | 0 not usable (never an error: the
   array's own __deepcopy__ works without us) */
static int
fc_np_api(FcState *st)
{
    if (FC_LIKELY(st->np_api != 0)) {
        return st->np_api > 0;
    }
    if (PyArray_ImportNumPyAPI() < 0) {
        PyErr_Clear();
        st->np_api = -1;
        return 0;
    }
    /* the numpy whose C API we got must be the one in sys.modules */
    st->np_api = ((PyObject *)&PyArray_Type == st->np_ndarray) ? 1 : -1;
    return st->np_api > 0;
}

/* The private context in which numpy's handler is the pool's, the
   handler set in it the first time (arrays allocated there keep the
   capsule alive themselves).  Needs the C API.  borrowed | NULL+exc */
static PyObject *
fc_np_pool_context(FcState *st)
{
    PyObject *ctx = st->np_handler, *cap = NULL, *old = NULL;
    if (FC_LIKELY(st->np_checked) || ctx == NULL) {
        if (ctx == NULL) {
            PyErr_SetString(PyExc_SystemError, "fastcopy: no pool context");
        }
        return ctx;
    }
    Py_INCREF(ctx);
    cap = PyCapsule_New(&fc_np_handler, "mem_handler", NULL);
    if (cap == NULL || PyContext_Enter(ctx) < 0) {
        goto done;
    }
    old = PyDataMem_SetHandler(cap);
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    int exited = PyContext_Exit(ctx);
    if (exited < 0) {
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
    }
    else {
        PyErr_Restore(et, ev, tb);
    }
    st->np_checked = old != NULL && exited == 0;
done:
    Py_XDECREF(old);
    Py_XDECREF(cap);
    Py_DECREF(ctx);
    return st->np_checked ? st->np_handler : NULL;
}

/* ------------------------------------------------------------------ */
/* Kind and copy                                                       */
/* ------------------------------------------------------------------ */

/* FB_* kind for tp, 0 when not numpy's.  kind | 0 | -1+exc */
static int
fc_np_kind(FcState *st, PyTypeObject *tp)
{
    if (st->np_ndarray == NULL) {
        if (fc_np_find(st) < 0) {
            return -1;
        }
        if (st->np_ndarray == NULL) {
            return 0;
        }
    }
    /* (plan.c asks only for types without a copier registered in
       copy._deepcopy_dispatch, and recomputes plans when it changes) */
    if ((PyObject *)tp != st->np_ndarray || !fc_np_api(st)) {
        return 0;
    }
    return FB_NP_ARRAY;
}

/* PyArray_NewLikeArray(a, KEEPORDER, NULL, 1), its data from the pool
   when pooled.  new ref | NULL+exc */
static PyObject *
fc_np_new_like(FcState *st, PyArrayObject *a, int pooled)
{
    if (!pooled) {
        return PyArray_NewLikeArray(a, NPY_KEEPORDER, NULL, 1);
    }
    /* the pool's context, entered only around the allocation, so that no
       other code, thread or task allocates from it and the caller's
       context is left as it was */
    PyObject *ctx = fc_np_pool_context(st);
    if (ctx == NULL) {
        /* the pool is only an optimization */
        PyErr_Clear();
        return PyArray_NewLikeArray(a, NPY_KEEPORDER, NULL, 1);
    }
    Py_INCREF(ctx);
    if (PyContext_Enter(ctx) < 0) {
        /* entered already: a finalizer or another thread copying in the
           middle of our allocation.  The pool is only an optimization. */
        Py_DECREF(ctx);
        PyErr_Clear();
        return PyArray_NewLikeArray(a, NPY_KEEPORDER, NULL, 1);
    }
    PyObject *y = PyArray_NewLikeArray(a, NPY_KEEPORDER, NULL, 1);
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (PyContext_Exit(ctx) < 0) {
        /* only if code run in between left another context entered */
        Py_CLEAR(y);
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
        Py_DECREF(ctx);
        return NULL;
    }
    PyErr_Restore(et, ev, tb);
    Py_DECREF(ctx);
    return y;
}

/* PyArray_NewCopy(a, NPY_KEEPORDER), pool-aware.  new ref | NULL+exc */
static PyObject *
fc_np_new_copy(FcState *st, PyArrayObject *a, int pooled)
{
    if (!pooled) {
        return PyArray_NewCopy(a, NPY_KEEPORDER);
    }
    PyObject *y = fc_np_new_like(st, a, 1);
    if (y != NULL && PyArray_CopyInto((PyArrayObject *)y, a) < 0) {
        Py_CLEAR(y);
    }
    return y;
}

/* A copy of an array whose dtype holds no references: what
   array_deepcopy returns.  new ref | NULL+exc */
static PyObject *
fc_np_copy_plain(FcState *st, PyArrayObject *a)
{
    Py_ssize_t nbytes = (Py_ssize_t)PyArray_NBYTES(a);
    int pooled = st->np_pool && nbytes >= st->np_pool_min;
    PyArray_Descr *d = PyArray_DESCR(a);
    /* a builtin, field-less dtype in one contiguous block: the bytes are
       all there is, and a memcpy skips NewCopy's dtype-transfer setup */
    int raw = nbytes > 0
              && d->type_num >= 0 && d->type_num < NPY_NTYPES_LEGACY
              && !PyDataType_HASFIELDS(d) && !PyDataType_HASSUBARRAY(d)
              && (PyArray_IS_C_CONTIGUOUS(a) || PyArray_IS_F_CONTIGUOUS(a));
    if (!raw) {
        return fc_np_new_copy(st, a, pooled);
    }
    PyObject *y = fc_np_new_like(st, a, pooled);
    if (y == NULL) {
        return NULL;
    }
    PyArrayObject *b = (PyArrayObject *)y;
    if ((Py_ssize_t)PyArray_NBYTES(a) != nbytes || PyArray_DESCR(a) != d
        || !(PyArray_IS_C_CONTIGUOUS(a) || PyArray_IS_F_CONTIGUOUS(a))) {
        /* a finalizer resized a (refcheck=False) while y was allocated:
           numpy's own copy of a as it is now */
        Py_DECREF(y);
        return PyArray_NewCopy(a, NPY_KEEPORDER);
    }
    /* NewLikeArray(KEEPORDER) keeps a contiguous layout; be sure */
    if ((Py_ssize_t)PyArray_NBYTES(b) != nbytes
        || !(PyArray_IS_C_CONTIGUOUS(a) ? PyArray_IS_C_CONTIGUOUS(b)
                                        : PyArray_IS_F_CONTIGUOUS(b))) {
        if (PyArray_CopyInto(b, a) < 0) {
            Py_DECREF(y);
            return NULL;
        }
        return y;
    }
    FcCopyOp op = {PyArray_BYTES(b), PyArray_BYTES(a), (size_t)nbytes, NULL, NULL, -1, 0};
    if (op.n < FC_NOGIL_MIN) {
        memcpy(op.dst, op.src, op.n);
        return y;
    }
    int nthreads = nbytes >= st->np_par_min ? st->np_threads : 1;
    Py_BEGIN_ALLOW_THREADS
    fc_par_copy(&op, 1, op.n, nthreads, 0);     /* defer.c; no populate: see there */
    Py_END_ALLOW_THREADS
    return y;
}

/* The offsets of the object slots in one element of dtype d, in the order
   array_deepcopy visits them.  0 | 1 decline (a reference numpy does not
   deep-copy, too many slots, a malformed fields dict) */
static int
fc_np_slots(PyArray_Descr *d, npy_intp base, npy_intp *offs, int *n)
{
    if (!PyDataType_REFCHK(d)) {
        return 0;
    }
    if (PyDataType_HASFIELDS(d)) {
        PyObject *fields = PyDataType_FIELDS(d), *key, *value;
        Py_ssize_t pos = 0;
        if (fields == NULL || !PyDict_Check(fields)) {
            return 1;
        }
        while (PyDict_Next(fields, &pos, &key, &value)) {
            if (!PyTuple_Check(value) || PyTuple_GET_SIZE(value) < 2) {
                return 1;
            }
            if (NPY_TITLE_KEY(key, value)) {
                continue;
            }
            PyObject *sub = PyTuple_GET_ITEM(value, 0);
            PyObject *off = PyTuple_GET_ITEM(value, 1);
            if (!PyArray_DescrCheck(sub) || !PyLong_Check(off)) {
                return 1;
            }
            long o = PyLong_AsLong(off);
            if (o == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                return 1;
            }
            if (fc_np_slots((PyArray_Descr *)sub, base + o, offs, n)) {
                return 1;
            }
        }
        return 0;
    }
    if (d->type_num == NPY_OBJECT) {
        if (*n == FC_NP_MAX_SLOTS) {
            return 1;
        }
        offs[(*n)++] = base;
        return 0;
    }
    /* e.g. a subarray of objects: array_deepcopy leaves those shared */
    return 1;
}

/* The stdlib's copy.deepcopy (patched by fastcopy or not) or ours: then
   numpy's per-item copy.deepcopy(item, memo) is our walker. */
static int
fc_np_std_deepcopy(FcState *st)
{
    PyObject *f = PyDict_GetItemString(st->copy_globals, "deepcopy");
    if (f == NULL) {
        return 0;
    }
    if (f == st->py_deepcopy) {
        return 1;
    }
    return PyFunction_Check(f) && PyFunction_GET_GLOBALS(f) == st->copy_globals;
}

/* array_deepcopy for a dtype with object slots, the items copied by our
   walker.  new ref | NULL+exc | NULL: decline */
static PyObject *
fc_np_copy_objects(FcCtx *c, PyArrayObject *a)
{
    FcState *st = c->st;
    npy_intp offs[FC_NP_MAX_SLOTS];
    int nslots = 0;
    PyArray_Descr *d = PyArray_DESCR(a);
    if (fc_np_slots(d, 0, offs, &nslots) || !fc_np_std_deepcopy(st)) {
        return NULL;
    }
    Py_ssize_t nbytes = (Py_ssize_t)PyArray_NBYTES(a);
    PyObject *y = fc_np_new_copy(st, a, st->np_pool && nbytes >= st->np_pool_min);
    if (y == NULL) {
        return NULL;
    }
    PyArrayObject *b = (PyArrayObject *)y;
    npy_intp size = PyArray_SIZE(b);
    /* a dense copy is visited in memory order by numpy's KEEPORDER
       iterator; C/F-contiguous ones are certainly dense.  The slots were
       found from a's dtype before the copy: it must be b's. */
    if (PyArray_DESCR(b) != d
        || (!PyArray_IS_C_CONTIGUOUS(b) && !PyArray_IS_F_CONTIGUOUS(b))) {
        Py_DECREF(y);
        return NULL;
    }
    if (size == 0 || nslots == 0) {
        return y;
    }
    if (fc_stack_check() < 0 || Py_EnterRecursiveCall(FC_RECURSION_WHERE)) {
        Py_DECREF(y);
        return NULL;
    }
    /* The items are copied from b (numpy's NewCopy took references to
       a's), so a hook that resizes a changes nothing here, as in numpy's
       own loop.  b is not published yet; still, user code runs at every
       item, so its buffer is read again after each (a resized b would
       have freed it). */
    char *data = PyArray_BYTES(b);
    npy_intp isz = PyArray_ITEMSIZE(b);
    for (npy_intp i = 0; i < size; i++) {
        for (int j = 0; j < nslots; j++) {
            char *slot = data + i * isz + offs[j];
            PyObject *old, *item, *r;
            memcpy(&old, slot, sizeof(old));
            item = old != NULL ? old : Py_None;
            Py_INCREF(item);
            r = fc_walk(c, item);
            Py_DECREF(item);
            if (r != NULL && (PyArray_BYTES(b) != data || PyArray_SIZE(b) != size
                              || PyArray_DESCR(b) != d)) {
                Py_DECREF(r);
                r = NULL;
                PyErr_SetString(PyExc_RuntimeError,
                                "fastcopy: an array was resized while its items "
                                "were deep-copied");
            }
            if (r == NULL) {
                Py_LeaveRecursiveCall();
                Py_DECREF(y);
                return NULL;
            }
            memcpy(slot, &r, sizeof(r));
            Py_XDECREF(old);
        }
    }
    Py_LeaveRecursiveCall();
    return y;
}

/* See buffers.c for the contract. */
static PyObject *
fc_np_deep(FcCtx *c, PyObject *x, int kind)
{
    FcState *st = c->st;
    if (kind != FB_NP_ARRAY || (PyObject *)Py_TYPE(x) != st->np_ndarray
        || st->np_api <= 0) {
        return NULL;
    }
    PyArrayObject *a = (PyArrayObject *)x;
    PyObject *y;
    if (!PyDataType_REFCHK(PyArray_DESCR(a))) {
        FcProfCall *pc = fc_prof_counting(st);      /* profile.c */
        int64_t t0 = pc != NULL ? fc_prof_now() : 0;
        int64_t nbytes = (int64_t)PyArray_NBYTES(a);
        y = fc_np_copy_plain(st, a);
        if (pc != NULL && y != NULL) {
            fc_prof_buffer(pc, FC_PROF_NUMPY, nbytes, t0);
        }
    }
    else {
        y = fc_np_copy_objects(c, a);
    }
    return fc_memo_done(c, x, y);
}

/* configure(numpy_pool=True): the pool's context ready now if numpy's C
   API can be had.  0 | -1+exc */
static int
fc_np_prepare_pool(FcState *st)
{
    if (st->np_ndarray == NULL || !fc_np_api(st)) {
        return 0;
    }
    return fc_np_pool_context(st) == NULL ? -1 : 0;
}

#else  /* !FC_HAVE_NUMPY: arrays take their own __deepcopy__ */

static int
fc_np_find(FcState *st)
{
    return 0;
}

static int
fc_np_prepare_pool(FcState *st)
{
    return 0;
}

static int
fc_np_kind(FcState *st, PyTypeObject *tp)
{
    return 0;
}

static PyObject *
fc_np_deep(FcCtx *c, PyObject *x, int kind)
{
    return NULL;
}

#endif  /* FC_HAVE_NUMPY */

/* ------------------------------------------------------------------ */
/* configure(), trim(), backends()                                      */
/* ------------------------------------------------------------------ */

/* The current settings as configure() keywords.  new ref | NULL+exc */
static PyObject *
fc_np_settings(FcState *st)
{
    size_t cached, maxb, hits, misses;
    fc_pool_stats(&cached, &maxb, &hits, &misses);
    PyObject *d = Py_BuildValue("{s:i,s:n,s:O,s:n,s:O,s:O}",
                                "numpy_threads", st->np_threads,
                                "numpy_parallel_min_bytes", st->np_par_min,
                                "numpy_pool", st->np_pool ? Py_True : Py_False,
                                "numpy_pool_max_bytes", (Py_ssize_t)maxb,
                                "torch_defer", st->torch_defer ? Py_True : Py_False,
                                "torch_cuda", st->torch_cuda ? Py_True : Py_False);
    /* warn_slow (profile.c) */
    if (d != NULL && fc_prof_settings(st, d) < 0) {
        Py_CLEAR(d);
    }
    return d;
}

/* A non-negative int keyword.  0 | -1+exc */
static int
fc_np_size_arg(const char *name, PyObject *v, Py_ssize_t *out)
{
    if (!PyLong_Check(v) || PyBool_Check(v)) {
        PyErr_Format(PyExc_TypeError, "configure(): %s must be an int, not %.200s",
                     name, Py_TYPE(v)->tp_name);
        return -1;
    }
    Py_ssize_t n = PyLong_AsSsize_t(v);
    if (n == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (n < 0) {
        PyErr_Format(PyExc_ValueError, "configure(): %s must be >= 0", name);
        return -1;
    }
    *out = n;
    return 0;
}

PyDoc_STRVAR(fc_configure_doc,
"configure(*, numpy_threads=None, numpy_parallel_min_bytes=None,\n"
"          numpy_pool=None, numpy_pool_max_bytes=None, torch_defer=None,\n"
"          torch_cuda=None, warn_slow=None)\n--\n\n"
"Tune the buffer backends; arguments left as None keep their value.\n"
"Returns the previous settings as a dict, so configure(**old) restores\n"
"them.\n\n"
"numpy_threads: threads that copy one big contiguous array (0: the\n"
"    default, half the usable CPUs, 1 to 4); 1 turns threading off.\n"
"numpy_parallel_min_bytes: arrays of at least this many bytes are copied\n"
"    by numpy_threads threads.\n"
"numpy_pool: allocate the data of copied arrays of 1 MiB and more from a\n"
"    pool that keeps freed blocks (already faulted pages) for the next\n"
"    copy.  Off by default: it keeps memory.  Turning it off trims it.\n"
"numpy_pool_max_bytes: how many bytes of free blocks the pool keeps.\n"
"torch_defer: record the byte copies of torch tensors and run them\n"
"    together, before any user code and at the end of the call (on by\n"
"    default).  Host copies adding up to 1 MiB run on\n"
"    torch.get_num_threads() threads with the GIL released, as torch's\n"
"    own copy_ would.\n"
"torch_cuda: copy plain CUDA tensors natively, their bytes in one batch\n"
"    per device on torch's current stream (off by default: see\n"
"    docs/buffers-cuda.md).  Needs fastcopy._cuda and a CUDA torch.\n"
"warn_slow: seconds; every top-level copy taking at least that long\n"
"    warns with fastcopy.SlowCopyWarning at the caller's line.  Unlike the\n"
"    others, warn_slow=None (or False) switches it off: the default.");

static PyObject *
fc_py_configure(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                PyObject *kwnames)
{
    FcState *st = (FcState *)PyModule_GetState(module);
    static const char *const names[] = {"numpy_threads", "numpy_parallel_min_bytes",
                                        "numpy_pool", "numpy_pool_max_bytes",
                                        "torch_defer", "torch_cuda",
                                        "warn_slow"};   /* profile.c */
    PyObject *o[7];
    if (fc_parse("configure", args, nargs, kwnames, names, 7, 0, 0, o) < 0) {
        return NULL;
    }
    int64_t warn_ns = -1;   /* warn_slow (profile.c): given, even as None */
    if (o[6] != NULL && fc_prof_warn_arg(o[6], &warn_ns) < 0) {
        return NULL;
    }
    Py_ssize_t threads = -1, par_min = -1, pool_max = -1;
    int pool = -1, defer = -1, cuda = -1;
    if (o[0] != NULL && o[0] != Py_None) {
        if (fc_np_size_arg("numpy_threads", o[0], &threads) < 0) {
            return NULL;
        }
        if (threads > FC_PAR_MAX_THREADS) {
            threads = FC_PAR_MAX_THREADS;
        }
    }
    if (o[1] != NULL && o[1] != Py_None
        && fc_np_size_arg("numpy_parallel_min_bytes", o[1], &par_min) < 0) {
        return NULL;
    }
    if (o[2] != NULL && o[2] != Py_None && (pool = PyObject_IsTrue(o[2])) < 0) {
        return NULL;
    }
    if (o[3] != NULL && o[3] != Py_None
        && fc_np_size_arg("numpy_pool_max_bytes", o[3], &pool_max) < 0) {
        return NULL;
    }
    if ((o[4] != NULL && o[4] != Py_None && (defer = PyObject_IsTrue(o[4])) < 0)
        || (o[5] != NULL && o[5] != Py_None && (cuda = PyObject_IsTrue(o[5])) < 0)) {
        return NULL;
    }
    PyObject *old = fc_np_settings(st);
    if (old == NULL) {
        return NULL;
    }
    if (threads >= 0) {
        st->np_threads = threads == 0 ? fc_np_default_threads() : (int)threads;
    }
    if (par_min >= 0) {
        st->np_par_min = par_min;
    }
    if (defer >= 0) {
        st->torch_defer = defer;
    }
    if (cuda >= 0) {
        st->torch_cuda = cuda;
    }
    if (o[6] != NULL) {
        fc_prof_set_warn(st, warn_ns);      /* profile.c */
    }
    if (pool >= 0 || pool_max >= 0) {
        size_t cached, maxb, hits, misses;
        fc_pool_stats(&cached, &maxb, &hits, &misses);
        if (pool > 0) {
            /* the pool's context, now rather than in a copy, when numpy
               is imported already */
            if (st->np_ndarray == NULL && fc_np_find(st) < 0) {
                Py_DECREF(old);
                return NULL;
            }
            if (fc_np_prepare_pool(st) < 0) {
                Py_DECREF(old);
                return NULL;
            }
        }
        if (pool >= 0) {
            st->np_pool = pool;
        }
        fc_pool_configure(st->np_pool, pool_max >= 0 ? (size_t)pool_max : maxb);
    }
    return old;
}

PyDoc_STRVAR(fc_defer_stats_doc,
"_defer_stats()\n--\n\n"
"Tests: how many times deferred byte copies were flushed, how many CUDA\n"
"batches were submitted since the module was loaded, and the path the last\n"
"one took (as fastcopy._cuda.copy_batch names it).");

static PyObject *
fc_py_defer_stats(PyObject *module, PyObject *unused)
{
    FcState *st = (FcState *)PyModule_GetState(module);
    return Py_BuildValue("{s:n,s:n,s:z}", "flushes", st->defer_flushes,
                         "cuda_batches", st->cuda_batches,
                         "cuda_last_path", st->cuda_last_path);
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
    st->torch_fake_device = device < 0 ? -1 : device;
    st->torch_fake_stream = (uintptr_t)stream;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(fc_trim_doc,
"trim()\n--\n\n"
"Give the memory the buffer pool keeps back to the system.  Returns the\n"
"number of bytes released.  Blocks in use are not affected.");

static PyObject *
fc_py_trim(PyObject *module, PyObject *unused)
{
    size_t n;
    Py_BEGIN_ALLOW_THREADS
    n = fc_pool_trim();
    Py_END_ALLOW_THREADS
    return PyLong_FromSize_t(n);
}

PyDoc_STRVAR(fc_backends_doc,
"backends()\n--\n\n"
"What the buffer backends see and use: numpy's version (when numpy is\n"
"imported -- it is never imported by fastcopy), whether the native path\n"
"is built and active, and the pool and threading settings.");

static PyObject *
fc_py_backends(PyObject *module, PyObject *unused)
{
    FcState *st = (FcState *)PyModule_GetState(module);
    PyObject *version = NULL, *npd = NULL, *res = NULL;
    PyObject *modules = PySys_GetObject("modules");
    PyObject *np = (modules && PyDict_Check(modules))
                   ? PyDict_GetItemString(modules, "numpy") : NULL;
    if (np != NULL && PyModule_Check(np)) {
        version = PyObject_GetAttrString(np, "__version__");
        if (version == NULL) {
            PyErr_Clear();
        }
    }
    if (version == NULL) {
        version = Py_NewRef(Py_None);
    }
#ifdef FC_HAVE_NUMPY
    int built = 1;
    const char *headers = NPY_ABI_VERSION >= 0x02000000 ? ">=2.0" : "1.x";
#else
    int built = 0;
    const char *headers = NULL;
#endif
    size_t cached, maxb, hits, misses;
    fc_pool_stats(&cached, &maxb, &hits, &misses);
    npd = Py_BuildValue(
        "{s:O,s:O,s:z,s:O,s:i,s:n,s:O,s:n,s:n,s:n,s:n}",
        "version", version,
        "built", built ? Py_True : Py_False,
        "headers", headers,
        "native", st->np_api > 0 ? Py_True : Py_False,
        "threads", st->np_threads,
        "parallel_min_bytes", st->np_par_min,
        "pool", st->np_pool ? Py_True : Py_False,
        "pool_max_bytes", (Py_ssize_t)maxb,
        "pool_cached_bytes", (Py_ssize_t)cached,
        "pool_hits", (Py_ssize_t)hits,
        "pool_misses", (Py_ssize_t)misses);
    if (npd != NULL) {
        res = Py_BuildValue("{s:O}", "numpy", npd);
    }
    Py_XDECREF(npd);
    Py_DECREF(version);
    return res;
}

static PyMethodDef fc_np_methods[] = {
    {"configure", (PyCFunction)(void (*)(void))fc_py_configure,
     METH_FASTCALL | METH_KEYWORDS, fc_configure_doc},
    {"trim", fc_py_trim, METH_NOARGS, fc_trim_doc},
    {"_defer_stats", fc_py_defer_stats, METH_NOARGS, fc_defer_stats_doc},
    {"_fake_cuda", fc_py_fake_cuda, METH_VARARGS, fc_fake_cuda_doc},
    {"backends", fc_py_backends, METH_NOARGS, fc_backends_doc},
    {NULL, NULL, 0, NULL},
};

/* Defaults and the public functions above.  0 | -1+exc */
static int
fc_np_exec(PyObject *module, FcState *st)
{
    st->np_api = 0;
    st->np_threads = fc_np_default_threads();
    st->np_par_min = FC_NP_DEFAULT_PAR_MIN;
    st->np_pool = 0;
    st->np_pool_min = (Py_ssize_t)FC_POOL_MIN;
    /* the pool's private context, empty: see the top of the file */
    st->np_checked = 0;
    st->np_handler = PyContext_New();
    if (st->np_handler == NULL) {
        return -1;
    }
    st->torch_defer = 1;
    st->torch_cuda = 0;
    st->torch_fake_device = -1;
    st->torch_fake_stream = 0;
    return PyModule_AddFunctions(module, fc_np_methods);
}
