/*
 * numpy.c: numpy arrays, the "numpy" buffer backend (buffers.c).
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
 * once in a private context (NUMPY(st)->handler, made empty when the module
 * loads; the handler goes in at configure(numpy_pool=True), or at the
 * first pooled copy if numpy was not imported then; NUMPY(st)->checked says it
 * is in), and that context is entered only around our own allocation
 * call: no other allocation ever sees the handler, and a pooled copy sets
 * no context variable -- nothing there can fail midway.  (Made at module
 * load because CPython 3.11's PyContext_New crashes when its second
 * allocation fails.)  A context object can be entered by one thread at a
 * time, and it remembers the context to go back to: on free-threaded
 * builds two threads entering the shared one at once raced on both (one
 * thread's exit failed, "cannot exit context: ... has not been entered",
 * and the other could go back to the wrong context), so there each pooled
 * allocation enters a copy of its own (PyContext_Copy: one allocation, the
 * variables shared), and the handler is set up under a lock.
 *
 * User code mid-copy (a finalizer, on 3.10/3.11 at any allocation of a
 * tracked object; an element's __deepcopy__) may resize an array with
 * refcheck=False: no length, shape or data pointer of an array is used
 * across anything that can run it without being read again.
 */
#include "fastcopy.h"
#include "numpy.h"
#include "backend.h"
#include "memo.h"
#include "defer.h"
#include "pool.h"
#include "state.h"
#include "profile.h"

#include "platform.h"

enum { FB_NP_ARRAY = 1 };   /* local kinds (backend.h) */

/* numpy.c's own block of the module state (backend.h). */
#define NUMPY(st) FC_BACKEND_STATE(st, FcNumpyState, FC_BK_numpy)
FC_BACKEND_STATE_CHECK(FcNumpyState);


#define FC_NP_MAX_SLOTS 64          /* object slots per element we handle */
#define FC_NP_DEFAULT_PAR_MIN ((Py_ssize_t)8 << 20)

/* CPUs this process may run on. */
static int
fc_np_ncpu(void)
{
    return fc_plat_ncpu();
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
   0 (NUMPY(st)->ndarray may still be NULL) | -1+exc */
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
        NUMPY(st)->ndarray = nd;
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
    if (FC_LIKELY(NUMPY(st)->api != 0)) {
        return NUMPY(st)->api > 0;
    }
    if (PyArray_ImportNumPyAPI() < 0) {
        PyErr_Clear();
        NUMPY(st)->api = -1;
        return 0;
    }
    /* the numpy whose C API we got must be the one in sys.modules */
    NUMPY(st)->api = ((PyObject *)&PyArray_Type == NUMPY(st)->ndarray) ? 1 : -1;
    return NUMPY(st)->api > 0;
}

/* The private context in which numpy's handler is the pool's, the
   handler set in it the first time (arrays allocated there keep the
   capsule alive themselves).  Needs the C API.  borrowed | NULL+exc */
static PyObject *
fc_np_pool_context(FcState *st)
{
    PyObject *ctx = NUMPY(st)->handler, *cap = NULL, *old = NULL;
    if (FC_LIKELY(NUMPY(st)->checked) || ctx == NULL) {
        if (ctx == NULL) {
            PyErr_SetString(PyExc_SystemError, "fastcopy: no pool context");
        }
        return ctx;
    }
    Py_INCREF(ctx);
#if FC_FT
    PyMutex_Lock(&NUMPY(st)->setup_lock);
    if (NUMPY(st)->checked) {
        goto done;   /* another thread set it up meanwhile */
    }
#endif
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
    NUMPY(st)->checked = old != NULL && exited == 0;
done:
#if FC_FT
    PyMutex_Unlock(&NUMPY(st)->setup_lock);
#endif
    Py_XDECREF(old);
    Py_XDECREF(cap);
    Py_DECREF(ctx);
    return NUMPY(st)->checked ? NUMPY(st)->handler : NULL;
}

/* ------------------------------------------------------------------ */
/* Kind and copy                                                       */
/* ------------------------------------------------------------------ */

/* FB_* kind for tp, 0 when not numpy's.  kind | 0 | -1+exc */
static int
fc_np_kind(FcState *st, PyTypeObject *tp)
{
    if (NUMPY(st)->ndarray == NULL) {
        if (fc_np_find(st) < 0) {
            return -1;
        }
        if (NUMPY(st)->ndarray == NULL) {
            return 0;
        }
    }
    /* (plan.c asks only for types without a copier registered in
       copy._deepcopy_dispatch, and recomputes plans when it changes) */
    if ((PyObject *)tp != NUMPY(st)->ndarray || !fc_np_api(st)) {
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
#if FC_FT
    /* a context of this thread's own (see the top of the file) */
    ctx = PyContext_Copy(ctx);
    if (ctx == NULL) {
        PyErr_Clear();
        return PyArray_NewLikeArray(a, NPY_KEEPORDER, NULL, 1);
    }
#else
    Py_INCREF(ctx);
#endif
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
    int pooled = NUMPY(st)->pool && nbytes >= NUMPY(st)->pool_min;
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
    int nthreads = nbytes >= NUMPY(st)->par_min ? NUMPY(st)->threads : 1;
    int road = fc_copy_road(st);    /* defer.c: huge pages, or missing pages mapped first */
    Py_BEGIN_ALLOW_THREADS
    fc_par_copy(&op, 1, op.n, nthreads, road);
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
    PyObject *y = fc_np_new_copy(st, a, NUMPY(st)->pool && nbytes >= NUMPY(st)->pool_min);
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
    if (c->walk->stack_check() < 0 || Py_EnterRecursiveCall(FC_RECURSION_WHERE)) {
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
            r = c->walk->walk(c, item);
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
    if (kind != FB_NP_ARRAY || (PyObject *)Py_TYPE(x) != NUMPY(st)->ndarray
        || NUMPY(st)->api <= 0) {
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
    if (NUMPY(st)->ndarray == NULL || !fc_np_api(st)) {
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
/* The backend: settings, backends() entry, trim, state                */
/* ------------------------------------------------------------------ */

static const FcSetting fc_np_settings[] = {
    {"numpy_threads", FS_THREADS, offsetof(FcNumpyState, threads), 0,
     "0: half the usable CPUs, 1 to 4",
     "threads that copy one big contiguous array (0: the default); 1 turns "
     "threading off."},
    {"numpy_parallel_min_bytes", FS_BYTES, offsetof(FcNumpyState, par_min),
     FC_NP_DEFAULT_PAR_MIN, "8 MiB",
     "arrays of at least this many bytes are copied by numpy_threads threads."},
    {"numpy_pool", FS_BOOL, offsetof(FcNumpyState, pool), 0, NULL,
     "allocate the data of copied arrays of 1 MiB and more from a pool that "
     "keeps freed blocks (already faulted pages) for the next copy.  Off by "
     "default: it keeps memory.  Turning it off trims it."},
    {"numpy_pool_max_bytes", FS_BYTES, offsetof(FcNumpyState, pool_max),
     (Py_ssize_t)1 << 30, "1 GiB",
     "how many bytes of free blocks the pool keeps."},
};

/* configure(numpy_pool=True): the pool's context, now rather than in a
   copy, when numpy is imported already.  0 | -1+exc */
static int
fc_np_check(FcState *st, const Py_ssize_t *given)
{
    if (given[2] > 0) {
        if (NUMPY(st)->ndarray == NULL && fc_np_find(st) < 0) {
            return -1;
        }
        return fc_np_prepare_pool(st);
    }
    return 0;
}

static int
fc_np_apply(FcState *st)
{
    if (NUMPY(st)->threads == 0) {
        NUMPY(st)->threads = fc_np_default_threads();
    }
    fc_pool_configure(NUMPY(st)->pool, (size_t)NUMPY(st)->pool_max);
    return 0;
}

/* backends()["numpy"].  "native" says whether arrays are copied natively
   now: numpy is imported, this build has its fast path, and its C API is
   the imported numpy's (loaded here if need be; numpy is never imported
   by fastcopy).  new ref | NULL+exc */
static PyObject *
fc_np_info(FcState *st)
{
    PyObject *version = NULL, *res = NULL;
    PyObject *modules = PySys_GetObject("modules");
    PyObject *np = (modules && PyDict_Check(modules))
                   ? PyDict_GetItemString(modules, "numpy") : NULL;
    int native = 0;
    if (np != NULL && PyModule_Check(np)) {
        Py_INCREF(np);
        version = PyObject_GetAttrString(np, "__version__");
        Py_DECREF(np);
        if (version == NULL) {
            PyErr_Clear();
        }
#ifdef FC_HAVE_NUMPY
        if (NUMPY(st)->ndarray == NULL && fc_np_find(st) < 0) {
            Py_XDECREF(version);
            return NULL;
        }
        native = NUMPY(st)->ndarray != NULL && fc_np_api(st);
#endif
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
    res = Py_BuildValue(
        "{s:O,s:O,s:z,s:O,s:i,s:n,s:O,s:n,s:n,s:n,s:n}",
        "version", version,
        "built", built ? Py_True : Py_False,
        "headers", headers,
        "native", native ? Py_True : Py_False,
        "threads", NUMPY(st)->threads,
        "parallel_min_bytes", NUMPY(st)->par_min,
        "pool", NUMPY(st)->pool ? Py_True : Py_False,
        "pool_max_bytes", (Py_ssize_t)maxb,
        "pool_cached_bytes", (Py_ssize_t)cached,
        "pool_hits", (Py_ssize_t)hits,
        "pool_misses", (Py_ssize_t)misses);
    Py_DECREF(version);
    return res;
}

static size_t
fc_np_trim(FcState *st)
{
    size_t n;
    Py_BEGIN_ALLOW_THREADS
    n = fc_pool_trim();
    Py_END_ALLOW_THREADS
    return n;
}

static int
fc_np_exec(PyObject *module, FcState *st)
{
    NUMPY(st)->api = 0;
    if (NUMPY(st)->threads == 0) {      /* the table's default: automatic */
        NUMPY(st)->threads = fc_np_default_threads();
    }
    NUMPY(st)->pool_min = (Py_ssize_t)FC_POOL_MIN;
    /* the pool's private context, empty: see the top of the file */
    NUMPY(st)->checked = 0;
    NUMPY(st)->handler = PyContext_New();
    return NUMPY(st)->handler == NULL ? -1 : 0;
}

static int
fc_np_traverse(FcState *st, visitproc visit, void *arg)
{
    Py_VISIT(NUMPY(st)->ndarray);
    Py_VISIT(NUMPY(st)->handler);
    return 0;
}

static void
fc_np_clear(FcState *st)
{
    Py_CLEAR(NUMPY(st)->ndarray);
    Py_CLEAR(NUMPY(st)->handler);
}

FC_INTERNAL_DATA const FcBackend fc_numpy_backend = {
    .name = "numpy",
    .exec = fc_np_exec,
    .traverse = fc_np_traverse,
    .clear = fc_np_clear,
    .kind = fc_np_kind,
    .deep = fc_np_deep,
    .settings = fc_np_settings,
    .nsettings = (int)(sizeof(fc_np_settings) / sizeof(fc_np_settings[0])),
    .check = fc_np_check,
    .apply = fc_np_apply,
    .info = fc_np_info,
    .trim = fc_np_trim,
};
