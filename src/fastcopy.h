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
#  define FC_NOINLINE_ATTR __attribute__((noinline))
#else
#  define FC_LIKELY(x)   (x)
#  define FC_UNLIKELY(x) (x)
#  define FC_INLINE      static inline
#  define FC_NOINLINE    static
#  define FC_NOINLINE_ATTR
#endif

/* Linkage of what one part defines and another calls.  Each such function
   is declared once, with its contract, in its area's header (memo.h,
   plan.h, ...) and defined with the same FC_INTERNAL / FC_INTERNAL_INLINE.
   The unity build (_fastcopy.c defines FC_UNITY) makes them static, so the
   compiler sees every body at every call; compiled alone, a part gets
   hidden external symbols, which is how each part is checked to stand on
   its own (scripts/check_parts.sh) and how the separate-unit build
   (FASTCOPY_UNITY=0, with LTO) links. */
#if defined(_WIN32) || !(defined(__GNUC__) || defined(__clang__))
#  define FC_HIDDEN
#else
#  define FC_HIDDEN __attribute__((visibility("hidden")))
#endif
#ifdef FC_UNITY
#  if defined(__GNUC__) || defined(__clang__)
#    define FC_INTERNAL      static __attribute__((unused))
#  else
#    define FC_INTERNAL      static
#  endif
#  define FC_INTERNAL_INLINE FC_INLINE
#else
#  define FC_INTERNAL        FC_HIDDEN
#  define FC_INTERNAL_INLINE FC_HIDDEN
#endif
/* Data shared by parts: one definition (FC_INTERNAL_DATA in its .c file). */
#define FC_INTERNAL_DATA FC_HIDDEN

/* the facts that differ by CPython version: pyver.h */
#include "pyver.h"

/* Free-threaded builds (3.13t+, Py_GIL_DISABLED): docs/free-threading.md.
   FC_CS_BEGIN(o) / FC_CS_END() bracket reads of a mutable container that
   another thread may change (CPython's own list and dict code takes the
   same per-object lock); FC_FT_PIN* keep what was read alive until the
   call's next read.  On GIL builds they are a plain block and nothing:
   the GIL already makes each read atomic. */
#ifdef Py_GIL_DISABLED
#  define FC_FT 1
#  define FC_CS_BEGIN(o) Py_BEGIN_CRITICAL_SECTION(o)
#  define FC_CS_END() Py_END_CRITICAL_SECTION()
#else
#  define FC_FT 0
#  define FC_CS_BEGIN(o) {
#  define FC_CS_END() }
#endif

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

/* d.get(name) on an exact dict, name a C string, strong.
   1 found (*res new ref) | 0 missing | -1+exc (making the key may fail) */
FC_INLINE int
fc_dict_getref_str(PyObject *d, const char *name, PyObject **res)
{
#if FC_PY313_PLUS
    return PyDict_GetItemStringRef(d, name, res);
#else
    PyObject *k = PyUnicode_FromString(name);
    if (k == NULL) {
        *res = NULL;
        return -1;
    }
    int r = fc_dict_getref(d, k, res);
    Py_DECREF(k);
    return r;
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
#if FC_HAVE_DICT_VERSION
FC_INLINE uint64_t
fc_dict_version(PyObject *d)
{
#  if defined(__GNUC__) || defined(__clang__)
#    pragma GCC diagnostic push
#    pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#  endif
#  if FC_FT
    /* read while another thread may write d: the callers compare tags */
    return _Py_atomic_load_uint64_relaxed(&((PyDictObject *)d)->ma_version_tag);
#  else
    return ((PyDictObject *)d)->ma_version_tag;
#  endif
#  if defined(__GNUC__) || defined(__clang__)
#    pragma GCC diagnostic pop
#  endif
}
#else
/* Is d watched by watcher id?  Bits 0-7 of _ma_watcher_tag are the
   watchers' (cpython/dictobject.h, 3.14 and 3.15). */
FC_INLINE int
fc_dict_watched_by(PyObject *d, int id)
{
    return (((PyDictObject *)d)->_ma_watcher_tag >> id) & 1;
}
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
#if FC_FT && FC_HAVE_DICT_VERSION
    /* another thread may write x between reading the tag and the copy
       (PyDict_Copy locks x itself): a tag unchanged across the copy is the
       copy's */
    for (;;) {
        *ver = fc_dict_version(x);
        PyObject *y = PyDict_Copy(x);
        if (y == NULL || FC_LIKELY(fc_dict_version(x) == *ver)) {
            return y;
        }
        Py_DECREF(y);
    }
#elif FC_PY312_PLUS
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

/* o's instance __dict__ when it is an exact dict, as a new reference (another
   thread may assign o.__dict__; the critical section is nothing on GIL
   builds).  new ref | NULL: none, or not an exact dict */
FC_INLINE PyObject *
fc_instance_dict(PyObject *o)
{
    PyObject *d = NULL;
    FC_CS_BEGIN(o);
    PyObject **dp = _PyObject_GetDictPtr(o);
    if (dp != NULL && *dp != NULL && PyDict_CheckExact(*dp)) {
        d = Py_NewRef(*dp);
    }
    FC_CS_END();
    return d;
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

/* Kinds deepcopy() returns as themselves (copy._deepcopy_atomic's
   types) and copy() returns as themselves (_copy_immutable's). */
#define FC_DEEP_ATOMIC (FK_BIT(FK_STR) | FK_BIT(FK_INT) | FK_BIT(FK_FLOAT) \
    | FK_BIT(FK_BOOL) | FK_BIT(FK_NONE) | FK_BIT(FK_BYTES) | FK_BIT(FK_COMPLEX) \
    | FK_BIT(FK_TYPE) | FK_BIT(FK_RANGE) | FK_BIT(FK_PROPERTY) \
    | FK_BIT(FK_BUILTIN_FN) | FK_BIT(FK_FUNCTION) | FK_BIT(FK_CODE) \
    | FK_BIT(FK_WEAKREF) | FK_BIT(FK_ELLIPSIS) | FK_BIT(FK_NOTIMPL))

/* The kind of an exact builtin type, FK_OTHER for anything else.  Ordered
   by how often each shows up in real data. */
FC_INLINE int
fc_kind(PyTypeObject *tp)
{
    if (tp == &PyUnicode_Type) return FK_STR;
    if (tp == &PyLong_Type) return FK_INT;
    if (tp == &PyFloat_Type) return FK_FLOAT;
    if (tp == &PyList_Type) return FK_LIST;
    if (tp == &PyDict_Type) return FK_DICT;
    if (tp == &PyTuple_Type) return FK_TUPLE;
    if (tp == &PyBool_Type) return FK_BOOL;
    if (tp == Py_TYPE(Py_None)) return FK_NONE;
    if (tp == &PyBytes_Type) return FK_BYTES;
    if (tp->tp_flags & Py_TPFLAGS_HEAPTYPE) return FK_OTHER;
    if (tp == &PyComplex_Type) return FK_COMPLEX;
    if (tp == &PySet_Type) return FK_SET;
    if (tp == &PyFrozenSet_Type) return FK_FROZENSET;
    if (tp == &PyByteArray_Type) return FK_BYTEARRAY;
    if (tp == &PyType_Type) return FK_TYPE;
    if (tp == &PyRange_Type) return FK_RANGE;
    if (tp == &PySlice_Type) return FK_SLICE;
    if (tp == &PyProperty_Type) return FK_PROPERTY;
    if (tp == &PyCFunction_Type) return FK_BUILTIN_FN;
    if (tp == &PyFunction_Type) return FK_FUNCTION;
    if (tp == &PyCode_Type) return FK_CODE;
    if (tp == &_PyWeakref_RefType) return FK_WEAKREF;
    if (tp == Py_TYPE(Py_Ellipsis)) return FK_ELLIPSIS;
    if (tp == Py_TYPE(Py_NotImplemented)) return FK_NOTIMPL;
    if (tp == &PyMethod_Type) return FK_METHOD;
    return FK_OTHER;
}

/* Kinds whose hash and equality are the interpreter's own code (a type's
   hash is its metaclass's: FK_TYPE is exactly `type`; a weakref's is its
   referent's, so it is not here). */
#define FC_QUIET_KEYS (FK_BIT(FK_STR) | FK_BIT(FK_INT) | FK_BIT(FK_FLOAT) \
                       | FK_BIT(FK_BOOL) | FK_BIT(FK_NONE) | FK_BIT(FK_BYTES) \
                       | FK_BIT(FK_COMPLEX) | FK_BIT(FK_TYPE) | FK_BIT(FK_FUNCTION))

/* A replicate() tape (select.c) holds exact lists, dicts and tuples, atomic
   objects and share= matches (a walk that met anything else set
   FcCtx.off_tape), nested no deeper than this */
#define FC_TAPE_MAX_DEPTH 2000

/* Does hashing and comparing k run only the interpreter's own code? */
FC_INLINE int
fc_key_quiet(PyObject *k)
{
    return (FK_BIT(fc_kind(Py_TYPE(k))) & FC_QUIET_KEYS) != 0;
}

#define FC_COPY_ATOMIC (FK_BIT(FK_STR) | FK_BIT(FK_INT) | FK_BIT(FK_FLOAT) \
    | FK_BIT(FK_BOOL) | FK_BIT(FK_NONE) | FK_BIT(FK_BYTES) | FK_BIT(FK_COMPLEX) \
    | FK_BIT(FK_TUPLE) | FK_BIT(FK_FROZENSET) | FK_BIT(FK_TYPE) \
    | FK_BIT(FK_RANGE) | FK_BIT(FK_SLICE) | FK_BIT(FK_PROPERTY) \
    | FK_BIT(FK_BUILTIN_FN) | FK_BIT(FK_FUNCTION) | FK_BIT(FK_CODE) \
    | FK_BIT(FK_WEAKREF) | FK_BIT(FK_ELLIPSIS) | FK_BIT(FK_NOTIMPL))


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
    FP_STATEHOOK,     /* __getstate__/__setstate__ a library made, verified:
                         FcPlan.value says whose (FH_*, hooks.h) */
    FP_PYDCOPY,       /* copy: pydantic's BaseModel.__copy__, verified */
    FP_PYDROOTCOPY,   /* copy: pydantic's RootModel.__copy__, verified */
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
    FV_UUID,          /* uuid.UUID: its __getstate__/__setstate__ done natively */
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
#ifdef Py_GIL_DISABLED
    uint32_t seq;             /* odd while the entry is written (plan.c) */
#endif
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

#if FC_COPY_SETS_MUTABLE
/* One of 3.14's copy-module sets as fc_refresh last read it (plan.c,
   fc_sets_moved).  A table of up to FC_SET_SNAP_MAX slots is kept whole:
   the same mask and the same slots, keys and hashes, is the same set (one
   memcmp; _atomic_types has 32 slots).  A bigger one keeps its size, its
   mask, and where in its table each member sat: equal size plus every
   member still at its place is the same set.  n < 0: too many members to
   snapshot, re-read at every sync.  Keys are compared, never
   dereferenced. */
#define FC_SET_SNAP_MAX 32
typedef struct {
    PyObject *set;                 /* borrowed: the object read (FcState) */
    Py_ssize_t used, mask, n;
    int whole;                     /* u.tab holds the table's mask+1 slots */
    union {
        struct {
            Py_ssize_t idx[FC_SET_SNAP_MAX];
            PyObject *key[FC_SET_SNAP_MAX];
        } m;
        setentry tab[FC_SET_SNAP_MAX];
    } u;
} FcSetSnap;
#endif

/* ------------------------------------------------------------------ */
/* Module state                                                        */
/* ------------------------------------------------------------------ */

/* Module state: src/state.h (each part of it is owned by one file). */
typedef struct FcState FcState;

/* Heap buffers a finished call leaves to the next one (memo.c). */
enum { FC_SPARE_FRAMES, FC_SPARE_ENTRIES, FC_SPARE_INDEX, FC_SPARE_KEEP, FC_SPARE_GHOST,
       FC_SPARE_RECON, FC_SPARE_TAPE, FC_SPARE__COUNT };
typedef struct {
    void *p[FC_SPARE__COUNT];      /* PyMem_* blocks, or NULL */
    size_t size[FC_SPARE__COUNT];  /* their sizes in bytes */
    Py_ssize_t last_n;             /* entries of the last call that built an
                                      index (memo.c, fc_memo_index_need) */
} FcSpare;


/* ------------------------------------------------------------------ */
/* Native memo                                                         */
/* ------------------------------------------------------------------ */

typedef struct {
    PyObject *key;      /* the original, by address (kept alive elsewhere);
                           NULL: a ghost's place (memo.c, "Ghosts") */
    PyObject *value;    /* strong; NULL for a ghost */
} FcMemoEntry;

#define FC_MEMO_INLINE 8          /* entries kept without a heap table */
#define FC_MEMO_SUBS_INLINE 4     /* deferred subtrees, likewise */

/* A small tree the walker copied on the small road, whose entries below its
   root are not made yet (memo.c, "Deferred subtrees") */
typedef struct {
    PyObject *x, *y;              /* the root and its copy: borrowed (the
                                     root's entry and keep-alive hold them) */
    Py_ssize_t pos, kpos;         /* the root's entry and keep-alive places */
    Py_ssize_t cnt;               /* entries below it (fc_memo_expand) */
    Py_ssize_t first;             /* of which before the first keep-alive */
    int first_keep;               /* the root's keep-alive was the call's first */
} FcMemoSub;

typedef struct {
    FcMemoEntry *entries;         /* insertion order */
    Py_ssize_t n, cap;
    int32_t *index;               /* open addressing: entry position + 1, 0 empty */
    Py_ssize_t mask;              /* index size - 1; 0 = no index yet */
    PyObject **keep;              /* keep-alive originals, strong, in order;
                                     NULL: a ghost's temporary */
    Py_ssize_t nkeep, capkeep;
    Py_ssize_t keep_pos;          /* entries when the first keep-alive came; -1 */
    Py_ssize_t index_slots;       /* slots allocated for index (>= mask + 1) */
    Py_ssize_t nidx;              /* entries [nidx, n) are proven-fresh ones
                                     not in the index yet (memo.c, "Proven
                                     misses"); nidx == n otherwise */
    Py_ssize_t prove_mask;        /* misses are proven once mask >= this */
    Py_ssize_t ncatch, ncaught;   /* catch-up passes, and the entries they
                                     indexed, while the index is small (all
                                     three set with the first index) */
    PyObject **ghost;             /* temporaries not made yet: records of */
    Py_ssize_t nghost, capghost;  /*   FC_GHOST_HEAD words + items (memo.c) */
    PyObject *grave;              /* list: temporaries whose address is a key */
    Py_ssize_t hits;              /* lookups that found their key (a walk's
                                     second references: replicate's cost
                                     model, select.c) */
    PyObject *miss;               /* the last key looked up and not found, */
    size_t miss_slot;             /*   and the free slot it would take; both */
                                  /*   forgotten by the next insertion */
    FcSpare *spare;               /* where heap tables come from and go; or NULL */
    /* the dict hooks are shown (memo.c, "Showing the memo"): */
    PyObject *mirror;             /* strong, or NULL: none made yet */
    PyObject *mirror_keep;        /* its keep-alive list, strong, or NULL */
    Py_ssize_t mir_n, mir_keep;   /* entries / keep-alives copied into it */
    uint64_t mir_ver;             /* its stamp after our last write (its
                                     version tag; 3.14+: watch.c's mirror
                                     stamp, while mir_watched) */
    int mir_wid;                  /* 3.14+: the watcher to watch it with, -1 */
    int mir_watched;              /* 3.14+: it is watched (unwatched at fini) */
    int adopted;                  /* the mirror is a caller's dict (memo.c,
                                     "A caller's dict"): brought up to date
                                     before any user code and at the end */
    int foreign;                  /* entries whose keys nothing here holds
                                     (that dict's own): no proven misses */
    int dict_truth;               /* a hook changed or kept it: from now on
                                     the dict is the memo (every call on it) */
    /* what a hook's writes into the mirror are checked against (memo.c,
       "A hook that writes into the memo"): */
    PyObject **mkeys;             /* per entry synced into the mirror: its key
                                     there (an int, strong; NULL: none) */
    Py_ssize_t capmkeys;
    Py_ssize_t scanned;           /* mirror entries compared by absorb steps */
    Py_ssize_t mir_len;           /* len(mirror) after our last write, and */
    Py_ssize_t mir_keep_len;      /*   len(mirror_keep) then */
    PyObject *mirror_id;          /* its key id(mirror), strong, or NULL */
    /* the one key of the stdlib's memo that is no id: torch's storages
       keep their own memo under memo["torch"] (memo.c, "A sub-memo"): */
    PyObject *sub_key;            /* that key, strong, or NULL: none yet */
    PyObject *sub;                /* its dict, strong, or NULL */
    Py_ssize_t sub_pos;           /* entries when it came; -1 */
    int sub_first;                /* before the keep-alive list if both came
                                     after sub_pos entries */
    int sub_in_mirror;            /* the mirror has it */
    FcMemoSub *subs;              /* small trees whose entries below the root */
    Py_ssize_t nsubs, capsubs;    /*   are not made yet, in the order copied */
    int sub_off;                  /* some were made: take no more (memo.c) */
    FcMemoEntry small[FC_MEMO_INLINE];
    PyObject *small_keep[FC_MEMO_INLINE];
    FcMemoSub small_subs[FC_MEMO_SUBS_INLINE];
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
            PyObject **ents;      /* prefill, GIL builds: x's entry 0 (its key's
                                     place) in its snapshot's table, or NULL;
                                     read only while x is unmoved */
        } dict;
        struct { Py_ssize_t i, since; } tuple;   /* since: fc_memo_getitem */
        struct { FcRecon *r; } recon;
    } u;
    union {
        struct {
            uint8_t kind;
            uint8_t phase;
            uint8_t hooked;     /* counted in FcCtx.hook_depth */
            uint8_t prefill;    /* FR_DICT: y started as x.copy() (see deepcopy.c) */
            uint8_t frozen;     /* FR_DICT: x is a frozendict (3.15+), y a plain
                                   dict to freeze at the end, never in the memo
                                   before */
            uint8_t src_watched; /* FR_DICT prefill, 3.14+: this frame watches x
                                   (plan.h, source stamps): unwatched on release */
            uint8_t ents_stride; /* FR_DICT with u.dict.ents: places between
                                    entries */
        };
        uint64_t flags;  /* all of them, cleared in one store (fc_push) */
    };
} FcFrame;

#define FC_FRAMES_INLINE 4

/* A byte copy a buffer backend recorded, run at the next flush (defer.c). */
typedef struct {
    char *dst;
    const char *src;
    size_t n;
    PyObject *src_owner, *dst_owner;   /* strong */
    int dev;                           /* CUDA device, -1: host memory */
    uintptr_t stream;                  /* CUstream when dev >= 0 */
    const struct FcDeferSource *via;   /* who recorded it (defer.h) */
} FcCopyOp;

struct FcCtx;

/* What the walker (deepcopy.c) lends the parts below it, installed in
   every FcCtx by fc_ctx_init: the parts that depend on the walker reach
   it only through these, so nothing below it calls back up. */
typedef struct FcWalkOps {
    /* deepcopy(x, memo) of a child, through the call's memo.
       new ref | NULL+exc */
    PyObject *(*walk)(struct FcCtx *c, PyObject *x);
    /* Before calling code that is not ours: the recorded byte copies run,
       and with show the memo is shown as the stdlib's dict.  0 | -1+exc */
    int (*before_user_code)(struct FcCtx *c, int show);
    /* After such code: the copy module's tables read again.  0 | -1+exc */
    int (*after_user_code)(struct FcCtx *c);
    /* The memo is about to be shown: every half-built copy made to look
       as the stdlib's would (memo.c calls it).  0 | -1+exc */
    int (*before_show)(struct FcCtx *c);
    /* 0 | -1+RecursionError when this thread's C stack is nearly used up */
    int (*stack_check)(void);
} FcWalkOps;

typedef struct FcCtx {
    FcState *st;
    const FcWalkOps *walk;    /* the walker's services (deepcopy.c) */
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
    PyObject *shown_x;        /* ... the object whose hook it is (borrowed:
                                 its frame holds it) */
    unsigned int shows;       /* times the native memo was shown */
    FcFrame *frames;
    Py_ssize_t nframes, capframes;
    PyObject *share;          /* share= type/tuple/predicate or NULL */
    Py_ssize_t hook_depth;    /* frames on the stack that run user code */
    PyObject **untracked;     /* copies hidden from the cyclic GC, strong */
    Py_ssize_t nuntracked, capuntracked;
    FcCopyOp *ops;            /* deferred byte copies (defer.c) */
    Py_ssize_t nops, capops;
    int ambient;              /* a buffer backend's check of the ambient state
                                 (torch.c: its modes), good until user code
                                 runs: every flush (defer.c) sets it to 0 */
    Py_ssize_t gc_grace;      /* containers still to leave tracked (memo.c);
                                 0: ran out, -1: those hidden since */
    int gc_due;               /* 3.12+: a grace ran out since the last sweep;
                                 hide those copies before user code (memo.c) */
    Py_ssize_t gc_swept;      /* memo entries already swept (3.12+) */
    int copy_synced;          /* a full fc_sync ran in this call and no user
                                 code since: FcState.copy_ok is current
                                 (fc_sync_deep leaves it alone) */
    int sets_due;             /* 3.14: user code ran and _atomic_types was
                                 not compared since; the walk compares it
                                 before it next classifies (deepcopy.c,
                                 "Syncs owed") */
    int off_tape;             /* the walk met what a replicate() tape cannot
                                 hold (select.c): an object other than an
                                 exact list, dict or tuple, a key that is
                                 not quiet, a recursive tuple */
    PyObject *adopt_dict;     /* the caller's dict our native table took as
                                 its mirror (borrowed: the caller's argument),
                                 listed in FcState.adopters (memo.c, "A
                                 caller's dict"); NULL */
    struct FcCtx *adopt_next; /* ... the next one there */
    PyObject *lent_mirror;    /* while lent: the mirror of the table lent */
    int sub_credit;           /* > 0: dicts the walker enters may take the
                                 small road (deepcopy.c, "Small subtrees");
                                 a scan that fails takes one, one that
                                 succeeds gives one back */
#if FC_FT
    PyObject *pin[2];         /* strong: the last items read from a container
                                 other threads may change (FC_FT_PIN2) */
#endif
    FcFrame small_frames[FC_FRAMES_INLINE];
} FcCtx;

/* Free-threaded builds: FC_FT_INCREF(o) inside the critical section that
   read o from a container other threads may change (FC_FT_DECREF(o) once
   done with it), or FC_FT_PIN2(c, a, b) after it hands those references to
   the call, which keeps them until
   its next pin or its end (so the borrowed a and b stay usable meanwhile).
   Nothing on GIL builds. */
#if FC_FT
#  define FC_FT_INCREF(o) Py_XINCREF(o)
#  define FC_FT_DECREF(o) Py_XDECREF(o)
#  define FC_FT_PIN2(c, a, b) do {                                      \
        PyObject *fc_old0_ = (c)->pin[0], *fc_old1_ = (c)->pin[1];      \
        (c)->pin[0] = (a);                                              \
        (c)->pin[1] = (b);                                              \
        Py_XDECREF(fc_old0_);                                           \
        Py_XDECREF(fc_old1_);                                           \
    } while (0)
/* FC_FT_REPIN2: FC_FT_PIN2 where a (or b) may be the object pin[0] (pin[1])
   holds already, for which the caller took no new reference: that pin is
   kept as it is.  A run of one object read from a container costs no
   count on its line (docs/free-threading.md, "Shared atoms"). */
#  define FC_FT_REPIN2(c, a, b) do {                                    \
        PyObject *fc_old0_ = (c)->pin[0] != (a) ? (c)->pin[0] : NULL;   \
        PyObject *fc_old1_ = (c)->pin[1] != (b) ? (c)->pin[1] : NULL;   \
        (c)->pin[0] = (a);                                              \
        (c)->pin[1] = (b);                                              \
        Py_XDECREF(fc_old0_);                                           \
        Py_XDECREF(fc_old1_);                                           \
    } while (0)
#else
#  define FC_FT_INCREF(o) ((void)0)
#  define FC_FT_DECREF(o) ((void)0)
#  define FC_FT_PIN2(c, a, b) ((void)0)
#  define FC_FT_REPIN2(c, a, b) ((void)0)
#endif

/* Py_INCREF(o) n times (n >= 0), in one count where the build allows it
   (a run of one object in a list: a run of one memo hit, [l] * 100, or on
   free-threaded builds a run of one atom).  Debug and statistics builds,
   which account for every increment, count one at a time, as does every
   build not named here (3.10/3.11's plain increments the compiler folds
   itself):
   - 3.13t (pyver.h, FC_FT_SPLIT_COUNT): what its Py_INCREF does with n
     for 1 -- a thread that does not own o adds to the shared count once,
     instead of n writes to a line other threads want
     (docs/free-threading.md, "Shared atoms");
   - 3.12+ with the GIL (pyver.h, FC_INCREF_TESTS_IMMORTAL): each
     Py_INCREF tests the count for immortality before it writes, so the
     compiler cannot fold n of them into one add (pyperformance's memo
     payload took 11,055 instructions on 3.14, 10,268 with the add).  The
     count is set through Py_SET_REFCNT, which leaves an immortal object
     alone; a count near the immortal range (or one so read) is counted
     one at a time. */
FC_INLINE void
fc_incref_n(PyObject *o, Py_ssize_t n)
{
#if !defined(Py_REF_DEBUG) && !defined(Py_STATS)
#  if FC_FT_SPLIT_COUNT
    uint32_t local = _Py_atomic_load_uint32_relaxed(&o->ob_ref_local);
    if (local == UINT32_MAX) {
        return;     /* immortal */
    }
    if (!_Py_IsOwnedByCurrentThread(o)) {
        _Py_atomic_add_ssize(&o->ob_ref_shared, n << _Py_REF_SHARED_SHIFT);
        return;
    }
#  elif FC_INCREF_TESTS_IMMORTAL
    Py_ssize_t cur = Py_REFCNT(o);
    if (cur < ((Py_ssize_t)1 << 29) && n < ((Py_ssize_t)1 << 29)) {
        Py_SET_REFCNT(o, cur + n);
        return;
    }
#  endif
#endif
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_INCREF(o);
    }
}

/* "A frame was pushed, no result yet": a pointer that is never an
   object's (objects are aligned), so no part has to define it. */
#define FC_PUSHED ((PyObject *)(uintptr_t)1)

#endif /* FASTCOPY_H */
