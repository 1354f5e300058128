/*
 * fastcopy.h: the one internal header of the C core.
 *
 * Every part of the core (memo.c, deepcopy.c, copy.c, module.c, ...) is
 * compiled as one translation unit by _fastcopy.c, includes only this file
 * and defines static functions.  Module state, the per-call context, the
 * FC_* macros and every Python-version shim live here.
 *
 * The rule: user code can run at any moment of a copy
 * ----------------------------------------------------
 * fastcopy is patched into whole programs, so a copy can run user code
 * half-way through a walk, and that code can mutate, shrink, clear or free
 * whatever is being copied, or copy it again.  The points where it runs:
 *
 *   - any call into Python: __deepcopy__, __reduce_ex__, a reductor,
 *     __setstate__, an iterator's __next__, a mapping's __setitem__, a
 *     share= predicate, a getattr that reaches a descriptor or __getattr__;
 *   - a key's __hash__ / __eq__: PyDict_SetItem, PyDict_GetItem*,
 *     PyDict_Contains, PyDict_DelItem, PyObject_Hash, PyObject_RichCompare;
 *   - on 3.10 and 3.11 ANY allocation of a GC object (PyList_New,
 *     PyTuple_New, PyDict_New, PyDict_Copy, tp_new, PyObject_GC_New, ...)
 *     can start a collection, and so finalizers (__del__) and weakref
 *     callbacks; on 3.12+ collections wait for the eval breaker, i.e. for
 *     the next piece of Python code;
 *   - a Py_DECREF / Py_CLEAR / Py_SETREF that drops the last reference to
 *     something with a finalizer (or to a container holding one);
 *   - releasing the GIL (deferred byte copies): other threads run.
 *
 * Across any such point the C code holds no borrowed reference, no cached
 * length and no pointer into a container's storage (ob_item, a dict's
 * table, an instance-dict slot *dp, a plan-cache entry, a buffer) that it
 * uses afterwards.  It holds a strong reference, or it re-reads and
 * re-validates (the size after PyList_New; a dict's version tag; the plan's
 * slot names through a reference of its own).  CPython's own copies that
 * read their source after allocating (list.copy(), PyDict_Copy of a split
 * dict) go through fc_list_copy / fc_dict_copy.  When user code changes the
 * source mid-copy the outcome is one the stdlib could give: its exception
 * (RuntimeError: dictionary changed size during iteration) or a consistent
 * copy of the source as it was before or after the change -- never a mix,
 * never freed memory.  After a hook returns, fc_sync() is re-run, so edits
 * to copy._deepcopy_dispatch or copyreg.dispatch_table apply to the rest of
 * the same copy, as in the stdlib.
 *
 * tests/test_lint.py checks what can be checked mechanically (recursion
 * guards paired, PyDict_Next bodies, stale list lengths, calls on *ptr
 * slots, read-after-allocate copies); tests/test_midcopy.py and the
 * finalizer fuzz (tests/finalizer_fuzz.py) drive the rest, in child
 * processes, on every Python here and under the sanitizers.
 */
#ifndef FASTCOPY_H
#define FASTCOPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "fc_cuda_capi.h"

/* datetime.h defines a file-scope PyDateTimeAPI pointer that the core never
   uses: the capsule is kept in module state (FcState.dt_api). */
#if defined(__GNUC__) || defined(__clang__)
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wunused-variable"
#endif
#include <datetime.h>
#if defined(__GNUC__) || defined(__clang__)
#  pragma GCC diagnostic pop
#endif

/* ------------------------------------------------------------------ */
/* Macros and version shims                                            */
/* ------------------------------------------------------------------ */

#if defined(__GNUC__) || defined(__clang__)
#  define FC_LIKELY(x)   __builtin_expect(!!(x), 1)
#  define FC_UNLIKELY(x) __builtin_expect(!!(x), 0)
#  define FC_INLINE      static inline __attribute__((always_inline))
#  define FC_NOINLINE    static __attribute__((noinline))
#else
#  define FC_LIKELY(x)   (x)
#  define FC_UNLIKELY(x) (x)
#  define FC_INLINE      static inline
#  define FC_NOINLINE    static
#endif

#define FC_PY311_PLUS (PY_VERSION_HEX >= 0x030B0000)
#define FC_PY312_PLUS (PY_VERSION_HEX >= 0x030C0000)
#define FC_PY313_PLUS (PY_VERSION_HEX >= 0x030D0000)

#ifdef FC_DEBUG
#  define FC_ASSERT(x) assert(x)
#else
#  define FC_ASSERT(x) ((void)0)
#endif

/* getattr(o, name) that swallows only AttributeError.
   1 found (*res new ref) | 0 missing (*res NULL) | -1+exc */
FC_INLINE int
fc_lookup_attr(PyObject *o, PyObject *name, PyObject **res)
{
#if FC_PY313_PLUS
    return PyObject_GetOptionalAttr(o, name, res);
#else
    return _PyObject_LookupAttr(o, name, res);
#endif
}

/* d.get(key) on an exact dict, strong.
   1 found (*res new ref) | 0 missing | -1+exc */
FC_INLINE int
fc_dict_getref(PyObject *d, PyObject *key, PyObject **res)
{
#if FC_PY313_PLUS
    return PyDict_GetItemRef(d, key, res);
#else
    PyObject *v = PyDict_GetItemWithError(d, key);
    if (v != NULL) {
        *res = Py_NewRef(v);
        return 1;
    }
    *res = NULL;
    return PyErr_Occurred() ? -1 : 0;
#endif
}

/* A code object's bytecode as bytes.  new ref | NULL+exc */
FC_INLINE PyObject *
fc_code_bytes(PyCodeObject *co)
{
#if FC_PY311_PLUS
    return PyCode_GetCode(co);
#else
    return Py_NewRef(co->co_code);
#endif
}

/* A type's own __dict__ (static builtin types keep it per interpreter on
   3.12+).  new ref */
FC_INLINE PyObject *
fc_type_dict(PyTypeObject *tp)
{
#if FC_PY312_PLUS
    return PyType_GetDict(tp);
#else
    return Py_XNewRef(tp->tp_dict);
#endif
}

/* A type's method-cache version: 0 when it has none (then nothing about the
   type may be cached). */
FC_INLINE unsigned int
fc_type_tag(PyTypeObject *tp)
{
#if FC_PY312_PLUS
    return tp->tp_version_tag;
#else
    return (tp->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) ? tp->tp_version_tag : 0;
#endif
}

/* A dict's version tag: it changes on every mutation (3.10-3.13; PEP 509,
   deprecated but maintained through 3.13).  FC_HAVE_DICT_VERSION is 0 where
   it cannot be read, and what depends on it is then switched off. */
#if PY_VERSION_HEX < 0x030E0000
#  define FC_HAVE_DICT_VERSION 1
FC_INLINE uint64_t
fc_dict_version(PyObject *d)
{
#  if defined(__GNUC__) || defined(__clang__)
#    pragma GCC diagnostic push
#    pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#  endif
    return ((PyDictObject *)d)->ma_version_tag;
#  if defined(__GNUC__) || defined(__clang__)
#    pragma GCC diagnostic pop
#  endif
}
#else
#  define FC_HAVE_DICT_VERSION 0
#endif

/* x.copy() for an exact dict, consistent whatever a collection does.  On
   3.10/3.11 PyDict_Copy allocates the copy -- which can collect garbage and
   run finalizers -- and only then reads part of x: a split-table dict (an
   instance's __dict__) its values array, which a finalizer may have freed;
   a combined one its size, which may no longer match the keys cloned
   before (CPython's own dict.copy() has both hazards; the stdlib's
   deepcopy never calls it).  A split dict is copied with the collector
   held off (postponing a collection to the next allocation is
   unobservable); a combined one is copied again if x's version moved
   meanwhile.  3.12+ collect only at the eval breaker.  *ver: x's version
   tag at the time of the snapshot (where it can be read).
   new ref | NULL+exc */
FC_INLINE PyObject *
fc_dict_copy_ver(PyObject *x, uint64_t *ver)
{
#if FC_PY312_PLUS
#  if FC_HAVE_DICT_VERSION
    *ver = fc_dict_version(x);
#  else
    *ver = 0;
#  endif
    return PyDict_Copy(x);
#else
    if (((PyDictObject *)x)->ma_values != NULL) {
        int was = PyGC_Disable();
        *ver = fc_dict_version(x);
        PyObject *y = PyDict_Copy(x);
        if (was) {
            PyGC_Enable();
        }
        return y;
    }
    for (;;) {
        *ver = fc_dict_version(x);
        PyObject *y = PyDict_Copy(x);
        if (y == NULL || FC_LIKELY(fc_dict_version(x) == *ver)) {
            return y;
        }
        /* x changed while y was made: y may not even be consistent.  Its
           entries are all referenced (dealloc walks them, not ma_used). */
        Py_DECREF(y);
    }
#endif
}

FC_INLINE PyObject *
fc_dict_copy(PyObject *x)
{
    uint64_t ver;
    return fc_dict_copy_ver(x, &ver);
}

/* The RecursionError text of the stdlib's own frames on this version. */
#if FC_PY312_PLUS
#  define FC_RECURSION_WHERE ""
#else
#  define FC_RECURSION_WHERE " while calling a Python object"
#endif

/* ------------------------------------------------------------------ */
/* Kinds of builtin types the walker knows natively                    */
/* ------------------------------------------------------------------ */

/* Index of a type in the per-call "is the stdlib's entry still the
   original?" bit masks (FcState.deep_ok / copy_ok). */
enum {
    FK_OTHER = 0,
    FK_STR, FK_INT, FK_FLOAT, FK_BOOL, FK_NONE, FK_BYTES, FK_COMPLEX,
    FK_TUPLE, FK_LIST, FK_DICT, FK_SET, FK_FROZENSET, FK_BYTEARRAY,
    FK_TYPE, FK_RANGE, FK_SLICE, FK_PROPERTY, FK_BUILTIN_FN, FK_FUNCTION,
    FK_CODE, FK_WEAKREF, FK_ELLIPSIS, FK_NOTIMPL, FK_METHOD,
    FK__COUNT
};
#define FK_BIT(k) (1u << (k))

/* ------------------------------------------------------------------ */
/* Per-type plans                                                      */
/* ------------------------------------------------------------------ */

/* What deepcopy()/copy() of an instance of a non-builtin type does,
   computed once per type version (see deepcopy.c's essay). */
enum {
    FP_GENERIC = 0,   /* the stdlib algorithm, step by step */
    FP_PLAIN,         /* default __reduce_ex__(4): __newobj__ + state */
    FP_IDENTITY,      /* __deepcopy__ is enum.Enum's `return self` */
    FP_BUFFER,        /* numpy / torch: FcPlan.buffer says which (buffers.c) */
    FP_ODICT,         /* exactly collections.OrderedDict */
    FP_NAMEDTUPLE,    /* a collections.namedtuple class, hooks untouched */
    FP_VALUE,         /* an exact stdlib value type: FcPlan.value says which */
};

/* FcPlan.value: the stdlib value types copied natively (deepcopy.c,
   "Value types"). */
enum {
    FV_NONE = 0,
    FV_DECIMAL,       /* decimal.Decimal (C): __deepcopy__ returns self */
    FV_FRACTION,      /* fractions.Fraction: `if type(self) == Fraction: return self` */
    FV_DATE,          /* datetime.date: rebuilt from its reduce value */
    FV_TIMEDELTA,
    FV_DATETIME,
    FV_TIME,
    FV_TIMEZONE,
    FV_NUMPY_SELF,    /* a numpy scalar type whose __deepcopy__ returns self */
};

typedef struct {
    PyTypeObject *type;       /* strong; NULL = empty slot */
    unsigned int tag;         /* type's version tag when computed */
    unsigned int meta_tag;    /* metaclass's version tag (0 for type) */
    uint64_t gen;             /* FcState.gen when computed */
    uint8_t deep;             /* FP_* for deepcopy */
    uint8_t shallow;          /* FP_* for copy */
    uint8_t has_slots;        /* slotnames non-empty */
    uint8_t buffer;           /* FB_* kind when deep == FP_BUFFER */
    uint8_t gflags;           /* FG_*: steps of the generic road known empty */
    uint8_t value;            /* FV_* kind when deep == FP_VALUE */
    PyObject *slotnames;      /* strong list (may be empty) */
} FcPlan;

/* FcPlan.gflags: lookups of the generic road whose answer is known to be
   "nothing" for every instance of the type (while the plan is valid). */
#define FG_NO_DEEP_DISPATCH  0x01   /* _deepcopy_dispatch.get(cls) is None */
#define FG_NO_DEEPCOPY_HOOK  0x02   /* getattr(x, "__deepcopy__") fails */
#define FG_NO_REDUCTOR       0x04   /* copyreg.dispatch_table.get(cls) is None */
#define FG_REDUCE_ONLY       0x08   /* object's __reduce_ex__ and an overriding
                                       __reduce__, plain getattr: the reduce
                                       value is x.__reduce__() */

#define FC_PLAN_SLOTS 256

/* ------------------------------------------------------------------ */
/* Module state                                                        */
/* ------------------------------------------------------------------ */

/* Heap buffers a finished call leaves to the next one (memo.c). */
enum { FC_SPARE_FRAMES, FC_SPARE_ENTRIES, FC_SPARE_INDEX, FC_SPARE_KEEP, FC_SPARE__COUNT };
typedef struct {
    void *p[FC_SPARE__COUNT];      /* PyMem_* blocks, or NULL */
    size_t size[FC_SPARE__COUNT];  /* their sizes in bytes */
} FcSpare;

typedef struct {
    /* the stdlib pieces we follow (refreshed when the copy module or its
       dispatch tables change) */
    PyObject *copy_module;
    PyObject *copy_globals;        /* copy.__dict__ */
    PyObject *error;               /* copy.Error */
    PyObject *deep_dispatch;       /* copy._deepcopy_dispatch */
    PyObject *copy_dispatch;       /* copy._copy_dispatch */
    PyObject *dispatch_table;      /* copy.dispatch_table (copyreg's) */
    PyObject *reconstruct;         /* copy._reconstruct */
    PyObject *reconstruct_helper;  /* f(r, x, memo, rv, dc): r(x, memo, *rv, deepcopy=dc) */
    PyObject *copyreg_globals;     /* copyreg.__dict__, watched */
    PyObject *copyreg_dispatch;    /* copyreg.dispatch_table, watched */
    /* the stdlib's original dispatch functions, captured at import */
    PyObject *orig_deep[FK__COUNT];
    PyObject *orig_copy[FK__COUNT];
    PyObject *copyreg_slotnames;   /* copyreg._slotnames */
    PyObject *copyreg_newobj;      /* copyreg.__newobj__ */
    int plain_ok;                  /* copyreg's helpers are the originals */

    /* object's own descriptors, to recognise default hooks */
    PyObject *obj_reduce_ex, *obj_reduce, *obj_getstate, *obj_new;
    getter dict_getter;            /* the getter of a plain class's __dict__ */
    PyObject *enum_deepcopy;       /* enum.Enum.__deepcopy__ or NULL */
    int enum_checked;
    PyObject *nt_getnewargs_code;  /* collections.namedtuple's __getnewargs__ code */
    int nt_checked;

    /* value types (plan.c, deepcopy.c "Value types") */
    uint32_t set_ok;               /* FK_SET/FK_FROZENSET bits: their reduce
                                      value is known (fc_refresh) */
    const PyDateTime_CAPI *dt_api; /* datetime's C API once a datetime is met */
    int dt_checked;
    PyObject *frac_deepcopy;       /* fractions.Fraction.__deepcopy__, verified */
    uint64_t frac_ver[2];          /* its globals' and builtins' version tags
                                      when its names were last checked */

    PyTypeObject *method_type;     /* types.MethodType */
    PyTypeObject *code_type;

    /* which builtin kinds still have the stdlib's original entry */
    uint32_t deep_ok, copy_ok;
    uint64_t gen;                  /* bumped when the watched dicts change */
    uint64_t seen_gen;             /* gen the caches were computed for */
#if FC_PY312_PLUS
    int watcher_id;                /* -1 if none could be had */
#else
    uint64_t ver[5];               /* ma_version_tag of the watched dicts */
#endif
    int always_refresh;            /* no watcher: re-check every call */

    /* interned names */
    PyObject *s_deepcopy, *s_copy, *s_reduce_ex, *s_reduce, *s_getstate,
             *s_setstate, *s_dict, *s_update, *s_append, *s_items, *s_get,
             *s_new, *s_getnewargs, *s_getnewargs_ex, *s_slotnames,
             *s_func, *s_self, *s_deepcopy_kw, *s_replace,
             *s_getinitargs, *s_fraction, *s_type;

    PyObject *empty_tuple;
    PyObject *nil;                 /* memo.get default, like copy's _nil */
    PyObject *py_deepcopy;         /* our deepcopy function object */

    PyObject *cowdict_type;        /* set by cowdict.c */

    /* numpy (numpy.c): found through sys.modules when first met */
    PyObject *np_ndarray;          /* numpy.ndarray, strong, or NULL */
    int np_checked;                /* the pool's handler is set in np_handler's
                                      context (numpy.c) */
    int np_api;                    /* C API: 0 not yet, 1 loaded, -1 unusable */
    int np_threads;                /* threads copying one big array */
    Py_ssize_t np_par_min;         /* bytes from which copies are threaded */
    int np_pool;                   /* copies' data from pool.c */
    Py_ssize_t np_pool_min;        /* bytes from which copies are pooled */
    PyObject *np_handler;          /* the pool's private context (set up once:
                                      numpy.c), or NULL */
    /* torch (torch.c): found through sys.modules when first met */
    PyObject *torch_tensor;        /* torch.Tensor, strong, or NULL */
    PyObject *torch_parameter;     /* torch.nn.Parameter, strong, or NULL */
    int torch_checked;             /* 0 not yet, 1 ready, -1 never */
    PyObject *torch_ustorage;      /* torch.UntypedStorage */
    PyObject *torch_tstorage;      /* torch.TypedStorage */
    PyObject *torch_names;         /* tuple of interned names (torch.c TN_*) */
    PyObject *torch_attr_names;    /* tuple: names of the captured attributes */
    PyObject *torch_attrs;         /* tuple: the attributes seen at first use */
    PyObject *torch_probes;        /* tuple: torch._C mode probes */
    PyObject *torch_strided;       /* torch.strided */
    PyObject *torch_preserve;      /* torch.preserve_format */
    PyObject *torch_copy_deepcopy; /* copy.deepcopy as torch first saw it */
    PyObject *torch_tensor_globals;   /* torch._tensor.__dict__ */
    PyObject *torch_storage_globals;  /* torch.storage.__dict__ */
    PyObject *torch_make_subclass; /* torch.Tensor._make_subclass */
    PyObject *torch_empty_like;    /* torch.empty_like */
    unsigned int torch_us_tag;     /* UntypedStorage's tag when verified */
    unsigned int torch_ts_tag;     /* TypedStorage's tag when verified */
    PyObject *torch_incr_version;  /* torch._C._increment_version */
    int torch_param_swap;          /* a fresh Tensor may become a Parameter
                                      through object.__class__ (torch.c) */
    int torch_defer;               /* record byte copies until a flush (defer.c) */
    int torch_cuda;                /* copy plain CUDA tensors natively */
    PyObject *torch_cuda_stream;   /* torch._C._cuda_getCurrentRawStream or NULL */
    PyObject *torch_num_threads;   /* torch.get_num_threads or NULL */
    PyObject *torch_real_dtype;    /* the last float/int/bool torch.dtype seen */
    PyObject *torch_int_dtypes;    /* tuple: torch's integer and bool dtypes */
    int torch_fake_device;         /* tests: CPU copies go to this CUDA device (-1 off) */
    uintptr_t torch_fake_stream;   /* tests: ... on this stream */
    PyObject *cuda_mod;            /* fastcopy._cuda once its C API is used */
    const FcCudaCAPI *cuda_api;
    Py_ssize_t defer_flushes;      /* counters for tests (sysinfo) */
    Py_ssize_t cuda_batches;
    const char *cuda_last_path;    /* path of the last batch (fastcopy._cuda's static string) */

    FcPlan plans[FC_PLAN_SLOTS];
    FcSpare spare;                 /* the last call's heap buffers (memo.c) */
    struct FcCtx *shown;           /* calls whose memo a hook sees right now,
                                      innermost first (memo.c; GIL builds) */
    Py_ssize_t memo_shown, memo_borrowed, memo_to_dict;   /* counts, for
                                      _sysinfo(): how often a memo was shown
                                      to a hook, lent to a nested call, and
                                      turned into the dict for good */
    /* profiling (profile.c) */
    int prof;                      /* FC_PROF_* bits; 0: off, one branch per
                                      top-level call */
    int64_t prof_warn_ns;          /* configure(warn_slow=) in ns; -1 off */
    PyObject *prof_hook;           /* fastcopy._profile._on_copy, or NULL */
} FcState;

/* ------------------------------------------------------------------ */
/* Native memo                                                         */
/* ------------------------------------------------------------------ */

typedef struct {
    PyObject *key;      /* the original, by address (kept alive elsewhere) */
    PyObject *value;    /* strong */
} FcMemoEntry;

#define FC_MEMO_INLINE 8          /* entries kept without a heap table */

typedef struct {
    FcMemoEntry *entries;         /* insertion order */
    Py_ssize_t n, cap;
    int32_t *index;               /* open addressing: entry position + 1, 0 empty */
    Py_ssize_t mask;              /* index size - 1; 0 = no index yet */
    PyObject **keep;              /* keep-alive originals, strong, in order */
    Py_ssize_t nkeep, capkeep;
    Py_ssize_t keep_pos;          /* entries when the first keep-alive came; -1 */
    Py_ssize_t index_slots;       /* slots allocated for index (>= mask + 1) */
    PyObject *miss;               /* the last key looked up and not found, */
    size_t miss_slot;             /*   and the free slot it would take; both */
                                  /*   forgotten by the next insertion */
    FcSpare *spare;               /* where heap tables come from and go; or NULL */
    /* the dict hooks are shown (memo.c, "Showing the memo"): */
    PyObject *mirror;             /* strong, or NULL: none made yet */
    PyObject *mirror_keep;        /* its keep-alive list, strong, or NULL */
    Py_ssize_t mir_n, mir_keep;   /* entries / keep-alives copied into it */
    uint64_t mir_ver;             /* its version tag after our last write */
    int dict_truth;               /* a hook changed or kept it: from now on
                                     the dict is the memo (every call on it) */
    FcMemoEntry small[FC_MEMO_INLINE];
    PyObject *small_keep[FC_MEMO_INLINE];
} FcMemo;

/* ------------------------------------------------------------------ */
/* Per-call context and the explicit work stack                        */
/* ------------------------------------------------------------------ */

enum { FC_MEMO_NATIVE = 0, FC_MEMO_DICT, FC_MEMO_MAPPING };

typedef struct FcRecon FcRecon;

typedef struct {
    PyObject *x;        /* source, strong */
    PyObject *y;        /* copy under construction, strong (tuple: may be NULL) */
    union {
        struct { Py_ssize_t i; } list;
        struct {
            Py_ssize_t pos, used, left;
            PyObject *key, *val;
            Py_ssize_t done;      /* entries fully copied into y */
            uint64_t ver;         /* prefill: x's version tag when checked */
        } dict;
        struct { Py_ssize_t i; } tuple;
        struct { FcRecon *r; } recon;
    } u;
    uint8_t kind;
    uint8_t phase;
    uint8_t hooked;     /* counted in FcCtx.hook_depth */
    uint8_t prefill;    /* FR_DICT: y started as x.copy() (see deepcopy.c) */
} FcFrame;

#define FC_FRAMES_INLINE 4

/* A byte copy recorded by torch.c and run at the next flush (defer.c). */
typedef struct {
    char *dst;
    const char *src;
    size_t n;
    PyObject *src_owner, *dst_owner;   /* strong */
    int dev;                           /* CUDA device, -1: host memory */
    uintptr_t stream;                  /* CUstream when dev >= 0 */
} FcCopyOp;

typedef struct FcCtx {
    FcState *st;
    int mode;                 /* FC_MEMO_* */
    PyObject *memo;           /* dict or mapping when mode != NATIVE, strong */
    PyObject *memo_id;        /* id(memo), lazily */
    FcMemo native;
    struct FcCtx *lender;     /* the call whose native memo we hold, moved
                                 into `native` until we return (memo.c) */
    int lent;                 /* our native memo is with a nested call */
    struct FcCtx *shown_next; /* FcState.shown list, while shown */
    Py_ssize_t shown_refs;    /* the dict's refcount when shown */
    PyThreadState *shown_ts;  /* the thread it was shown on */
    int shown;                /* a hook sees the memo now */
    FcFrame *frames;
    Py_ssize_t nframes, capframes;
    PyObject *share;          /* share= type/tuple/predicate or NULL */
    Py_ssize_t hook_depth;    /* frames on the stack that run user code */
    PyObject **untracked;     /* copies hidden from the cyclic GC, strong */
    Py_ssize_t nuntracked, capuntracked;
    FcCopyOp *ops;            /* deferred byte copies (defer.c) */
    Py_ssize_t nops, capops;
    int torch_ambient;        /* torch.c: fc_torch_ambient passed since the last
                                 user code: 0 no, 1 modes, 2 modes and storages */
    Py_ssize_t gc_grace;      /* containers still to leave tracked (memo.c);
                                 0: ran out, -1: those hidden since */
    FcFrame small_frames[FC_FRAMES_INLINE];
} FcCtx;

/* The walker's entry points, for parts compiled before deepcopy.c
   (numpy.c, torch.c): deep-copy x within the running call (same memo,
   same work stack).  new ref | NULL+exc */
static PyObject *fc_walk(FcCtx *c, PyObject *x);

/* ------------------------------------------------------------------ */
/* Profiling (profile.c)                                               */
/* ------------------------------------------------------------------ */

#define FC_PROF_RECORD 1          /* FcState.prof: fastcopy.profile() records */
#define FC_PROF_WARN   2          /* FcState.prof: configure(warn_slow=) is set */
enum { FC_PROF_DEEPCOPY = 0, FC_PROF_COPY = 1 };
enum { FC_PROF_NUMPY = 1, FC_PROF_TORCH = 2 };   /* FcProfCall.buffer_kinds */

/* The counters of this thread's running top-level copy.  Kept in
   thread-local storage rather than on the C stack: a hook may switch
   greenlets, and a pointer into a suspended stack must never be written. */
typedef struct {
    int depth;                /* profiled calls running on this thread: 1 is
                                 the top-level one, more are nested in it */
    int64_t t0;               /* its start, fc_prof_now() */
    Py_ssize_t objects;       /* memo entries its calls added (+1 per new
                                 shallow copy) */
    Py_ssize_t hooks;         /* objects copied through the stdlib's generic
                                 road (a copier, __deepcopy__/__copy__, a reduce) */
    Py_ssize_t memo_max;      /* largest memo at the end of one of its calls */
    int64_t buffer_bytes;     /* bytes of arrays/tensors copied natively */
    int64_t buffer_ns;        /* time spent copying them */
    int buffer_kinds;         /* FC_PROF_NUMPY | FC_PROF_TORCH */
} FcProfCall;

static _Thread_local FcProfCall fc_prof_tls;

/* A monotonic clock in ns, cheap (vDSO on Linux). */
FC_INLINE int64_t
fc_prof_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The counters to bump, or NULL when nothing is profiled here.  Called only
   at places that are expensive anyway: a hook call, a buffer copy. */
FC_INLINE FcProfCall *
fc_prof_counting(FcState *st)
{
    return FC_UNLIKELY(st->prof) && fc_prof_tls.depth > 0 ? &fc_prof_tls : NULL;
}

/* One more object copied through the generic road (a hook). */
FC_INLINE void
fc_prof_hook(FcState *st)
{
    FcProfCall *pc = fc_prof_counting(st);
    if (pc != NULL) {
        pc->hooks++;
    }
}

/* A buffer copy of nbytes that started at t0 (fc_prof_now()) is done. */
FC_INLINE void
fc_prof_buffer(FcProfCall *pc, int kind, int64_t nbytes, int64_t t0)
{
    pc->buffer_bytes += nbytes;
    pc->buffer_ns += fc_prof_now() - t0;
    pc->buffer_kinds |= kind;
}

/* Open a profiled call: 1 it is this thread's top-level call (counters
   reset, clock started) | 0 nested inside one (counts go to that). */
static int fc_prof_begin(void);

/* Close it: a top-level call is reported to the Python recorder
   (fastcopy/_profile.py), which may raise (a SlowCopyWarning turned into an
   error): then y is dropped.  Steals y.  y | NULL+exc */
static PyObject *fc_prof_end(FcState *st, int top, int op, PyObject *x, PyObject *y);

/* A deepcopy() call's memo size now (entries, keep-alive list not
   counted; 0 for a mapping that is not a dict: asking it runs its code). */
static Py_ssize_t fc_prof_memo_len(FcCtx *c);

/* configure(warn_slow=v) (numpy.c): v in *ns, -1 off.  0 | -1+exc */
static int fc_prof_warn_arg(PyObject *v, int64_t *ns);
/* ... and applied. */
static void fc_prof_set_warn(FcState *st, int64_t ns);
/* settings["warn_slow"] for configure()'s answer.  0 | -1+exc */
static int fc_prof_settings(FcState *st, PyObject *settings);
/* Defaults (off) and _profiling() (module.c's exec).  0 | -1+exc */
static int fc_prof_exec(PyObject *module, FcState *st);

/* A unique non-object pointer: "a frame was pushed, no result yet". */
static char fc_pushed_marker;
#define FC_PUSHED ((PyObject *)&fc_pushed_marker)

#endif /* FASTCOPY_H */
