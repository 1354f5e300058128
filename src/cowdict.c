/*
 * cowdict.c: fastcopy.cowdict, a dict whose copies cost O(1).
 *
 * Data structure
 * --------------
 *     handle (FcCowDict) --tab--> table holder (FcCowTable) --dict--> exact dict
 *     handle (FcCowDict) --tab-----^
 *
 * A cowdict is a small handle pointing at a *table*: a private holder object
 * that owns a real exact `dict`.  Handles made by copy() / copy.copy() / an
 * all-immutable deepcopy() point at the same holder and bump its reference
 * count; nothing else is copied.  The holder's reference count *is* the
 * sharing count: a handle may write to its table in place only when it is
 * the holder's unique owner (fc_cow_unique()); otherwise the write first
 * replaces the handle's holder by a new one over PyDict_Copy() of the dict
 * (values shared by reference, as dict.copy() does).  So a shared table is
 * never written to, and no write through one handle is ever visible through
 * another.
 *
 * Invariants
 *   I1  h->tab is a holder whose dict is an exact dict, never NULL once the
 *       handle is published.
 *   I2  A holder whose reference count is > 1 is not mutated, except by the
 *       handle that owns it while that handle is "busy" (I4).
 *   I3  h->nmut is at least the number of values of the table that deepcopy
 *       must copy (fc_cow_needs()); exact after a recount, and kept exact by
 *       every write that learns the value it replaces.  h->keys_mut is 1 if
 *       some key might need copying, h->keys_odd is 1 if some key is not
 *       "plain" (fc_cow_plain()).  All describe the table, so handles
 *       sharing a table share the figures.  If Python code wrote to the same
 *       handle while a write was in progress (h->wseq moved), the write
 *       recounts.
 *   I4  h->busy > 0 while a write is mutating its (owned) table and Python
 *       code may run (a key's __hash__/__eq__, a value's __del__).  A busy
 *       handle's table is semantically its own: nested writes go in place,
 *       and copy()/deepcopy() of a busy handle take a real copy instead of
 *       sharing, so a half-done write can never leak into another handle.
 *   I5  h->gen changes whenever h->tab is replaced; iterators use it to find
 *       their place again in the new table (same content, same order).
 *   I6  The dict is not tracked by the garbage collector outside our own
 *       writes: the holder's tp_traverse visits the keys and values itself.
 *       gc.get_referents() / gc.get_referrers() therefore hand out the
 *       holder (no methods, not instantiable), never the shared dict, and a
 *       holder is visited once however many handles share it.  While a
 *       write is under way the dict may be tracked (dict insertion tracks
 *       it); the holder then visits the dict instead, so the collector
 *       counts each reference exactly once in either state.
 *   I7  A holder is tracked only while some key or value may be part of a
 *       reference cycle (fc_cow_may_cycle: any object the collector handles
 *       except a tuple it has already untracked, which stays untracked);
 *       t->gc says so, set when the table is made (inherited from the table
 *       copied, or found by a scan) and by every write that inserts such an
 *       object, never cleared.  A table of strs, numbers and plain tuples
 *       -- as a dict of them, which CPython leaves untracked -- costs a
 *       collection nothing however big it is.
 *
 * The rule for user code
 * ----------------------
 * Any call that can run Python code (a key's __hash__ or __eq__, a value's
 * __del__ through a decref, on 3.10/3.11 any allocation through a garbage
 * collection) may copy, write, clear or free this handle, its copies and
 * their tables.  So no code here keeps a borrowed pointer to a dict, a key or
 * a value across such a call: it holds a strong reference (to the holder for
 * a write, to the dict for a read) or re-reads.  A key is hashed exactly once
 * per operation, *before* the table is fetched, and the lookup or insert then
 * runs on the current table with that hash (the _KnownHash calls), as
 * dict's own methods do; the table's other keys' __eq__ runs exactly as
 * often as in dict.  Where a dict operation needs both the old value and a
 * user-visible lookup, the write asks dict for one lookup only (pop via
 * _PyDict_Pop) or gives up exactness of nmut (I3: an upper bound) rather
 * than look a user key up twice.  "Plain" keys (exact str, int, float,
 * bytes, ... and tuples of them) run no Python code when hashed or compared
 * with each other, so while every key of a table is plain, extra lookups are
 * invisible and are used to keep nmut exact and to avoid copying a shared
 * table for a missing key.
 *
 * Views and iterators point at the *handle*, never at a table, and read
 * h->tab on every step: they see their own handle's writes exactly as a
 * dict's views do, and never another handle's.  Iterators walk the table
 * with PyDict_Next() and a saved entry position, holding no reference to it
 * (so they do not force copies), and raise "dictionary changed size during
 * iteration" as dict does; reversed iterators step back from their position
 * (fc_cow_prev()).  Set operations and comparisons of views are delegated to
 * the real view type's own slots on the current table, never through the
 * generic protocol, so a real view is never handed to user code.
 *
 * deepcopy
 * --------
 * Values of the immutable kinds (None, bool, int, float, complex, str, bytes,
 * and the other types copy.deepcopy treats as atomic, plus exact tuples and
 * frozensets of such, recursively) are shared.  When nmut == 0 and no key
 * needs copying, __deepcopy__ is an O(1) copy.  Otherwise it builds a new
 * table, passing each value that needs it to copy.deepcopy(value, memo),
 * looked up on the copy module at call time (fastcopy's when patched in),
 * after storing memo[id(self)] = result so that cycles through the cowdict
 * resolve to the copy, as the stdlib's own _deepcopy_dict does.  The caller
 * (copy.deepcopy) then stores the same pair again and keeps self alive.
 *
 * Uniqueness on free-threaded builds uses the interpreter's own test
 * (PyUnstable_Object_IsUniquelyReferenced on 3.14+, its 3.13t equivalent);
 * the bare refcount test is used only on GIL builds.
 */
#include "fastcopy.h"
#include "cowdict.h"
#include "deepcopy.h"
#include "state.h"


#if FC_UNIQUE_API
#  define FC_COW_UNIQUE(o) PyUnstable_Object_IsUniquelyReferenced(o)
#elif defined(Py_GIL_DISABLED)
/* What 3.14's PyUnstable_Object_IsUniquelyReferenced does. */
FC_INLINE int
fc_cow_unique_ft(PyObject *o)
{
    return _Py_IsOwnedByCurrentThread(o)
        && _Py_atomic_load_uint32_relaxed(&o->ob_ref_local) == 1
        && _Py_atomic_load_ssize_relaxed(&o->ob_ref_shared) == 0;
}
#  define FC_COW_UNIQUE(o) fc_cow_unique_ft(o)
#else
#  define FC_COW_UNIQUE(o) (Py_REFCNT(o) == 1)
#endif

/* Lookups and writes with a hash computed once, before the table is read
   (dict's own methods hash first, then look up the dict as it is then).
   3.10-3.12 declare these in cpython/dictobject.h; 3.13-3.15 declare the
   two writers in the internal header but still export them (pyver.h,
   FC_DICT_KNOWN_HASH).  Without them a key would be hashed twice per
   write, which a __hash__ that counts its calls sees. */
#if FC_DICT_KNOWN_HASH
#  define FC_COW_KNOWN_HASH 1
#  if FC_PY313_PLUS
PyAPI_FUNC(int) _PyDict_SetItem_KnownHash(PyObject *mp, PyObject *key,
                                          PyObject *item, Py_hash_t hash);
PyAPI_FUNC(int) _PyDict_DelItem_KnownHash(PyObject *mp, PyObject *key,
                                          Py_hash_t hash);
#  endif
/* borrowed | NULL (+exc, or missing) */
#  define FC_COW_GETH(d, k, h) _PyDict_GetItem_KnownHash((d), (k), (h))
#  define FC_COW_SETH(d, k, v, h) _PyDict_SetItem_KnownHash((d), (k), (v), (h))
#  define FC_COW_DELH(d, k, h) _PyDict_DelItem_KnownHash((d), (k), (h))
#else
#  define FC_COW_KNOWN_HASH 0
#  define FC_COW_GETH(d, k, h) ((void)(h), PyDict_GetItemWithError((d), (k)))
#  define FC_COW_SETH(d, k, v, h) ((void)(h), PyDict_SetItem((d), (k), (v)))
#  define FC_COW_DELH(d, k, h) ((void)(h), PyDict_DelItem((d), (k)))
#endif

/* 1 (*res: a new reference) | 0 missing (*res NULL) | -1+exc: d[key] with
   key's hash h.  dict's known-hash lookup returns a borrowed value: safe on
   GIL builds, where nothing runs between its return and our incref.  On
   free-threaded builds another thread may be inside the table then (see
   fc_cow_recount) and free the value first, so the value is taken as a new
   reference under the dict's lock. */
#if FC_FT && FC_COW_KNOWN_HASH
PyAPI_FUNC(int) _PyDict_GetItemRef_KnownHash_LockHeld(PyDictObject *op, PyObject *key,
                                                      Py_hash_t hash, PyObject **result);
#endif
FC_INLINE int
fc_cow_getref(PyObject *d, PyObject *key, Py_hash_t h, PyObject **res)
{
#if FC_FT && FC_COW_KNOWN_HASH
    /* d is often the handle's table, borrowed: waiting for d's lock
       suspends the handle's, and another thread may then replace the
       handle's table and free d.  Held across. */
    int r;
    Py_INCREF(d);
    FC_CS_BEGIN(d);
    r = _PyDict_GetItemRef_KnownHash_LockHeld((PyDictObject *)d, key, h, res);
    FC_CS_END();
    Py_DECREF(d);
    return r;
#elif FC_FT
    (void)h;
    Py_INCREF(d);
    int r = PyDict_GetItemRef(d, key, res);
    Py_DECREF(d);
    return r;
#else
    PyObject *v = FC_COW_GETH(d, key, h);
    *res = Py_XNewRef(v);
    return v != NULL ? 1 : (PyErr_Occurred() ? -1 : 0);
#endif
}

#if FC_PY314_PLUS
/* 3.14's dict wraps a key's TypeError from hashing (exactly TypeError):
   "cannot use 'T' as a dict key (<the error>)", no context or cause.  A
   dict's own error, so the cowdict's too. */
FC_NOINLINE Py_hash_t
fc_cow_unhashable(PyObject *key)
{
    PyObject *exc = PyErr_GetRaisedException();
    if (exc == NULL || !Py_IS_TYPE(exc, (PyTypeObject *)PyExc_TypeError)) {
        PyErr_SetRaisedException(exc);
        return -1;
    }
    PyErr_Format(PyExc_TypeError, "cannot use '%T' as a dict key (%S)", key, exc);
    Py_DECREF(exc);
    return -1;
}
#endif

/* hash(key), with a str's cached hash read inline (the hot path: dict's
   own lookups do the same); a failure raises what dict raises. */
FC_INLINE Py_hash_t
fc_cow_hash(PyObject *key)
{
    if (FC_LIKELY(PyUnicode_CheckExact(key))) {
        Py_hash_t h = ((PyASCIIObject *)key)->hash;
        if (FC_LIKELY(h != -1)) {
            return h;
        }
    }
    Py_hash_t h = PyObject_Hash(key);
#if FC_PY314_PLUS
    if (FC_UNLIKELY(h == -1)) {
        return fc_cow_unhashable(key);
    }
#endif
    return h;
}

/* Whether the collector tracks o.  On GIL builds through 3.14 the GC header
   (two words, _gc_next first, nonzero while tracked) sits just before the
   object, as _PyObject_GC_IS_TRACKED reads it; elsewhere the API call. */
#if FC_GC_HEADER_READ
#  define FC_COW_TRACKED(o) (((const uintptr_t *)(const void *)(o))[-2] != 0)
#else
#  define FC_COW_TRACKED(o) PyObject_GC_IsTracked(o)
#endif

/* ------------------------------------------------------------------ */
/* Objects                                                             */
/* ------------------------------------------------------------------ */

enum { FC_COW_KEYS = 0, FC_COW_VALUES, FC_COW_ITEMS, FC_COW_ITER,
       FC_COW_REVITER, FC_COW_TABLE, FC_COW_NTYPES };

/* The shared table: private, so that Python code never holds the dict. */
typedef struct {
    PyObject_HEAD
    PyObject *dict;       /* exact dict, untracked by the GC (I6) */
    int gc;               /* a key or value may be part of a cycle: the
                             holder is tracked (I7); 0: it is not */
} FcCowTable;

typedef struct {
    PyObject_HEAD
    FcCowTable *tab;      /* the table, shared between handles (I1, I2) */
    PyObject *types;      /* tuple of the helper types, FC_COW_* order */
    Py_ssize_t nmut;      /* >= values deepcopy must copy (I3) */
    uint32_t gen;         /* bumped when tab is replaced (I5) */
    uint32_t wseq;        /* bumped by every write */
    int32_t busy;         /* writes in progress that may run Python (I4) */
    int16_t keys_mut;     /* some key may need copying (I3) */
    int16_t keys_odd;     /* some key is not plain (I3) */
} FcCowDict;

typedef struct {
    PyObject_HEAD
    FcCowDict *cd;
    int kind;
} FcCowView;

typedef struct {
    PyObject_HEAD
    FcCowDict *cd;        /* NULL once exhausted */
    Py_ssize_t pos;       /* forward: PyDict_Next position; reversed: entry
                             index last returned (PY_SSIZE_T_MAX: none) */
    Py_ssize_t used;      /* size when created; -1 after a size error */
    Py_ssize_t count;     /* items returned so far */
    uint32_t gen;         /* cd->gen that pos belongs to */
    int kind;
} FcCowIter;

static void cowdict_tp_dealloc(PyObject *self);
static void cowview_tp_dealloc(PyObject *self);

#define FC_COW_CHECK(o) (Py_TYPE(o)->tp_dealloc == cowdict_tp_dealloc)
#define FC_COWVIEW_CHECK(o) (Py_TYPE(o)->tp_dealloc == cowview_tp_dealloc)
#define FC_COW_TYPE(cd, i) ((PyTypeObject *)PyTuple_GET_ITEM((cd)->types, (i)))
/* the handle's current dict, borrowed: read it again after user code */
#define FC_COW_DICT(cd) ((cd)->tab->dict)

/* Free-threaded builds: every method and slot of a handle runs under the
   handle's critical section (its fields -- tab, nmut, gen, busy -- change
   together), a view's under its handle's, an iterator's under its own and
   then its handle's; an operation reading a second handle locks it too
   (Py_BEGIN_CRITICAL_SECTION2, or nested).  A table shared by several
   handles is never written (I2), and FC_COW_UNIQUE is the interpreter's own
   conservative test there, so two handles on two threads need no common
   lock.  The wrappers are generated by signature; on GIL builds
   FC_COW_CS(f) is f itself. */
#if FC_FT
/* Whether this thread's topmost critical section holds o's lock: a key's
   __hash__ run by a handle's method (under the handle's lock) may call the
   same handle again.  3.14 begins such a critical section without locking
   (critical_section.c, "locking the same object recursively"); 3.13 parks
   on the lock it holds, counting on the park's detach to release it, and
   that wait was seen to never end (all threads on the handle's lock, its
   owner inside such a __hash__).  So on 3.13 the wrappers check first, as
   3.14 does: the topmost section is active (not suspended), so the lock is
   held by this thread for the whole nested call. */
#  if FC_CS_PARKS_ON_HELD
FC_INLINE int
fc_cow_cs_held(PyObject *o)
{
    uintptr_t tag = PyThreadState_GET()->critical_section;
    if (tag == 0 || (tag & 1)) {            /* none, or _INACTIVE */
        return 0;
    }
    PyCriticalSection *c = (PyCriticalSection *)(tag & ~(uintptr_t)3);
    if (c->_cs_mutex == &o->ob_mutex) {
        return 1;
    }
    return (tag & 2)                        /* _TWO_MUTEXES */
           && ((PyCriticalSection2 *)c)->_cs_mutex2 == &o->ob_mutex;
}
#  else
#    define fc_cow_cs_held(o) 0
#  endif
#  define FC_COW_CS(f) f##_cs
#  define FC_COW_CS_WRAP(ret, f, params, args, lock)                      \
    static ret f##_cs params                                            \
    {                                                                   \
        ret r_;                                                         \
        if (fc_cow_cs_held(lock)) {                                     \
            return f args;                                              \
        }                                                               \
        Py_BEGIN_CRITICAL_SECTION(lock);                                \
        r_ = f args;                                                    \
        Py_END_CRITICAL_SECTION();                                      \
        return r_;                                                      \
    }
#else
#  define FC_COW_CS(f) f
#  define FC_COW_CS_WRAP(ret, f, params, args, lock)
#endif
#define FC_COW_CS_NOARGS(f) FC_COW_CS_WRAP(PyObject *, f, \
    (PyObject *self, PyObject *ign), (self, ign), self)
#define FC_COW_CS_O(f) FC_COW_CS_WRAP(PyObject *, f, \
    (PyObject *self, PyObject *o), (self, o), self)
#define FC_COW_CS_FAST(f) FC_COW_CS_WRAP(PyObject *, f, \
    (PyObject *self, PyObject *const *args, Py_ssize_t nargs), (self, args, nargs), self)
#define FC_COW_CS_UNARY(f) FC_COW_CS_WRAP(PyObject *, f, \
    (PyObject *self), (self), self)
/* a view's slots lock its handle (a view's cd never changes) */
#define FC_COW_VIEW_LOCK(self) ((PyObject *)((FcCowView *)(self))->cd)

/* ------------------------------------------------------------------ */
/* Table holders                                                       */
/* ------------------------------------------------------------------ */

/* I6: untrack the dict again after a write that may have tracked it. */
FC_INLINE void
fc_cow_untrack(PyObject *d)
{
    if (FC_COW_TRACKED(d)) {
        PyObject_GC_UnTrack(d);
    }
}

/* May o be part of a reference cycle (I7)?  An object the collector does
   not handle cannot; a tuple it has untracked holds none that can, and a
   tuple is never tracked again.  Anything else may (an untracked dict is
   tracked again when it gets such a value). */
FC_INLINE int
fc_cow_may_cycle(PyObject *o)
{
    if (!PyObject_IS_GC(o)) {
        return 0;
    }
    return !PyTuple_CheckExact(o) || FC_COW_TRACKED(o);
}

/* Does exact dict d hold a key or value that may be part of a cycle?
   Runs no code. */
static int
fc_cow_scan_gc(PyObject *d)
{
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(d, &pos, &k, &v)) {
        if (fc_cow_may_cycle(k) || fc_cow_may_cycle(v)) {
            return 1;
        }
    }
    return 0;
}

/* I7: t may hold a cycle from now on. */
FC_INLINE void
fc_cow_set_gc(FcCowTable *t)
{
    t->gc = 1;
    if (!FC_COW_TRACKED((PyObject *)t)) {
        PyObject_GC_Track(t);
    }
}

/* I7: table t got key -> value. */
FC_INLINE void
fc_cow_note_gc(FcCowTable *t, PyObject *key, PyObject *value)
{
    if (!t->gc && (fc_cow_may_cycle(key) || fc_cow_may_cycle(value))) {
        fc_cow_set_gc(t);
    }
}

/* new ref | NULL+exc: a holder of dict d (stolen); gc: what I7 says of d's
   contents (the table it was copied from says), -1: not known (a scan). */
static FcCowTable *
fc_cow_table_new(PyObject *types, PyObject *d, int gc)
{
    FcCowTable *t;
    if (d == NULL) {
        return NULL;
    }
    t = PyObject_GC_New(FcCowTable,
                        (PyTypeObject *)PyTuple_GET_ITEM(types, FC_COW_TABLE));
    if (t == NULL) {
        Py_DECREF(d);
        return NULL;
    }
    fc_cow_untrack(d);
    t->dict = d;
    t->gc = gc >= 0 ? gc : fc_cow_scan_gc(d);
    if (t->gc) {
        PyObject_GC_Track(t);
    }
    return t;
}

static void
cowtable_tp_dealloc(PyObject *self)
{
    FcCowTable *t = (FcCowTable *)self;
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (t->dict != NULL && Py_REFCNT(t->dict) > 1
        && !FC_COW_TRACKED(t->dict)) {
        /* someone else (a C temporary) outlives us: an ordinary dict again */
        PyObject_GC_Track(t->dict);
    }
    Py_CLEAR(t->dict);
    PyObject_GC_Del(self);
    Py_DECREF(tp);
}

static int
cowtable_tp_traverse(PyObject *self, visitproc visit, void *arg)
{
    FcCowTable *t = (FcCowTable *)self;
    Py_VISIT(Py_TYPE(self));
    if (t->dict == NULL) {
        return 0;
    }
    if (FC_COW_TRACKED(t->dict)) {
        /* a write is under way (I6): the collector traverses the dict */
        Py_VISIT(t->dict);
    }
    else {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(t->dict, &pos, &k, &v)) {
            Py_VISIT(k);
            Py_VISIT(v);
        }
    }
    return 0;
}

/* Garbage: every handle of this table is garbage too.  The dict object stays
   (I1), empty; the handles' nmut stays an upper bound. */
static int
cowtable_tp_clear(PyObject *self)
{
    FcCowTable *t = (FcCowTable *)self;
    if (t->dict != NULL) {
        PyDict_Clear(t->dict);
    }
    return 0;
}

static PyType_Slot cowtable_slots[] = {
    {Py_tp_dealloc, cowtable_tp_dealloc},
    {Py_tp_traverse, cowtable_tp_traverse},
    {Py_tp_clear, cowtable_tp_clear},
    {0, NULL},
};

static PyType_Spec cowtable_spec = {
    "fastcopy.cowdict_table", sizeof(FcCowTable), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE
        | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    cowtable_slots,
};

/* ------------------------------------------------------------------ */
/* What deepcopy must copy                                             */
/* ------------------------------------------------------------------ */

#define FC_COW_MAXDEPTH 16

/* 1 if copy.deepcopy(o) could differ from sharing o, else 0.  Runs no
   Python code and allocates nothing: safe over borrowed references. */
static int
fc_cow_needs_depth(PyObject *o, int depth)
{
    PyTypeObject *tp = Py_TYPE(o);
    if (tp == &PyUnicode_Type || tp == &PyLong_Type || o == Py_None
        || tp == &PyFloat_Type || tp == &PyBool_Type || tp == &PyBytes_Type
        || tp == &PyComplex_Type) {
        return 0;
    }
    if (tp == &PyTuple_Type) {
        if (depth >= FC_COW_MAXDEPTH) {
            return 1;
        }
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); i++) {
            if (fc_cow_needs_depth(PyTuple_GET_ITEM(o, i), depth + 1)) {
                return 1;
            }
        }
        return 0;
    }
    if (tp == &PyFrozenSet_Type) {
        /* Read the table directly: iterating would allocate. */
        PySetObject *so = (PySetObject *)o;
        if (depth >= FC_COW_MAXDEPTH) {
            return 1;
        }
        for (Py_ssize_t i = 0; i <= so->mask; i++) {
            PyObject *k = so->table[i].key;
            if (k != NULL && fc_cow_needs_depth(k, depth + 1)) {
                return 1;
            }
        }
        return 0;
    }
    /* The rest of copy's atomic table: deepcopy returns them as they are. */
    if (PyType_Check(o) || tp == &PyFunction_Type || tp == &PyCFunction_Type
        || o == Py_Ellipsis || o == Py_NotImplemented || tp == &PyRange_Type
        || tp == &PyCode_Type || tp == &PyProperty_Type
        || tp == &_PyWeakref_RefType) {
        return 0;
    }
    return 1;
}

FC_INLINE int
fc_cow_needs(PyObject *o)
{
    return fc_cow_needs_depth(o, 0);
}


/* 1 if hashing o and comparing it with another plain object runs no Python
   code and allocates nothing: exact str, int, float, bool, None, bytes,
   complex and exact tuples of those. */
static int
fc_cow_plain_depth(PyObject *o, int depth)
{
    PyTypeObject *tp = Py_TYPE(o);
    if (tp == &PyUnicode_Type || tp == &PyLong_Type || o == Py_None
        || tp == &PyFloat_Type || tp == &PyBool_Type || tp == &PyBytes_Type
        || tp == &PyComplex_Type) {
        return 1;
    }
    if (tp == &PyTuple_Type && depth < FC_COW_MAXDEPTH) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); i++) {
            if (!fc_cow_plain_depth(PyTuple_GET_ITEM(o, i), depth + 1)) {
                return 0;
            }
        }
        return 1;
    }
    return 0;
}

FC_INLINE int
fc_cow_plain(PyObject *o)
{
    PyTypeObject *tp = Py_TYPE(o);
    if (FC_LIKELY(tp == &PyUnicode_Type || tp == &PyLong_Type)) {
        return 1;
    }
    return fc_cow_plain_depth(o, 0);
}

/* 1 if looking key up in self's table is invisible to Python code. */
FC_INLINE int
fc_cow_quiet(FcCowDict *self, PyObject *key)
{
    return !self->keys_odd && fc_cow_plain(key);
}

/* Recount I3 over the whole table.  The scan runs under the dict's own lock
   on free-threaded builds: there the handle's lock does not keep other
   threads out of the table.  A thread blocked in a key's __eq__ in the
   middle of a dict write resumes holding only its innermost critical
   section -- the dict's -- and takes the handle's again when the dict call
   ends, so a write of another thread can be under way inside the table
   while this handle's lock is held.  Such a write (busy) adds its own value
   to nmut when it ends: the figures of a scan that may have missed it only
   ever raise them then (I3 stays an upper bound). */
static void
fc_cow_recount(FcCowDict *self)
{
    Py_ssize_t pos = 0, n = 0;
    int km = 0, odd = 0;
    PyObject *k, *v, *d = Py_NewRef(FC_COW_DICT(self));
    FC_CS_BEGIN(d);
    while (PyDict_Next(d, &pos, &k, &v)) {
        n += fc_cow_needs(v);
        if (!km) {
            km = fc_cow_needs(k);
        }
        if (!odd) {
            odd = !fc_cow_plain(k);
        }
    }
    FC_CS_END();
#if FC_FT
    if (FC_COW_DICT(self) != d) {
        /* replaced meanwhile: the new table's figures came with it */
    }
    else if (self->busy > 0) {
        self->nmut = self->nmut > n ? self->nmut : n;
        self->keys_mut |= (int16_t)km;
        self->keys_odd |= (int16_t)odd;
    }
    else
#endif
    {
        self->nmut = n;
        self->keys_mut = (int16_t)km;
        self->keys_odd = (int16_t)odd;
    }
    Py_DECREF(d);
}

/* 1 (*k, *v new references) | 0 (the end): PyDict_Next over a table that
   user code may change between steps, under the dict's own lock on
   free-threaded builds (see fc_cow_recount). */
FC_INLINE int
fc_cow_next(PyObject *d, Py_ssize_t *pos, PyObject **k, PyObject **v)
{
    int r;
    FC_CS_BEGIN(d);
    r = PyDict_Next(d, pos, k, v);
    if (r) {
        Py_INCREF(*k);
        Py_INCREF(*v);
    }
    FC_CS_END();
    return r;
}

/* Record key as a key of self's table (after a write that may insert it). */
FC_INLINE void
fc_cow_note_key(FcCowDict *self, PyObject *key)
{
    if (FC_LIKELY(PyUnicode_CheckExact(key))) {
        return;   /* atomic and plain: neither figure moves */
    }
    if (!self->keys_mut) {
        self->keys_mut = (int16_t)fc_cow_needs(key);
    }
    if (!self->keys_odd) {
        self->keys_odd = (int16_t)!fc_cow_plain(key);
    }
}

/* ------------------------------------------------------------------ */
/* Ownership and the write primitives                                  */
/* ------------------------------------------------------------------ */

/* new ref | NULL+exc: a copy of a table's dict.  On free-threaded builds
   PyDict_Copy is one atomic step under the dict's lock, and fc_dict_copy's
   version check (for 3.10/3.11's collections inside the copy, and for its
   callers' tags) would only make a copier retry, perhaps for long, while
   other threads keep writing the table. */
FC_INLINE PyObject *
fc_cow_dict_copy(PyObject *d)
{
#if FC_FT
    return PyDict_Copy(d);   /* lint: own container (3.13t: no collection in allocations) */
#else
    return fc_dict_copy(d);
#endif
}

/* 0 | -1+exc: make self the unique owner of its table (copy if shared). */
static int
fc_cow_own(FcCowDict *self)
{
    while (!self->busy && !FC_COW_UNIQUE((PyObject *)self->tab)) {
        FcCowTable *t = (FcCowTable *)Py_NewRef(self->tab);
        /* both calls allocate: a finalizer may replace self->tab meanwhile */
        FcCowTable *n = fc_cow_table_new(self->types, fc_cow_dict_copy(t->dict), t->gc);
        if (n == NULL) {
            Py_DECREF(t);
            return -1;
        }
        if (self->tab == t) {
            self->tab = n;
            self->gen++;
            Py_DECREF(t);
        }
        else {
            Py_DECREF(n);
        }
        Py_DECREF(t);
    }
    return 0;
}

/* 1 if self's table is shared with another handle (a write must copy). */
FC_INLINE int
fc_cow_shared(FcCowDict *self)
{
    return !self->busy && !FC_COW_UNIQUE((PyObject *)self->tab);
}

static void
fc_cow_set_keyerror(PyObject *key)
{
    PyObject *tup = PyTuple_Pack(1, key);
    if (tup != NULL) {
        PyErr_SetObject(PyExc_KeyError, tup);
        Py_DECREF(tup);
    }
}


/* 1 found (*res new ref, when res is not NULL) | 0 missing | -1+exc:
   key in self.  The key is hashed once, before the table is read (dict
   hashes first too, and __hash__ may rewrite self); the dict is held
   across the lookup, whose __eq__ calls may replace or free self's table. */
static int
fc_cow_lookup(FcCowDict *self, PyObject *key, PyObject **res)
{
    Py_hash_t h = fc_cow_hash(key);
    PyObject *d, *v;
    int r;
    if (res != NULL) {
        *res = NULL;
    }
    if (h == -1) {
        return -1;
    }
    d = Py_NewRef(FC_COW_DICT(self));
    r = fc_cow_getref(d, key, h, &v);
    if (r > 0 && res != NULL) {
        *res = v;
    }
    else {
        Py_XDECREF(v);
    }
    Py_DECREF(d);
    return r;
}

/* After a write that may have inserted key -> value into t: I6, I7. */
FC_INLINE void
fc_cow_untrack_after(FcCowTable *t, PyObject *key, PyObject *value)
{
    if (PyType_IS_GC(Py_TYPE(key)) || PyType_IS_GC(Py_TYPE(value))) {
        fc_cow_untrack(t->dict);
        fc_cow_note_gc(t, key, value);
    }
}

/* CPython's dict (3.11 to 3.13 at least: gh-140551) checks only before its
   lookup that a non-str key is not being inserted into a str-only keys
   table.  If the key's __eq__ empties the dict meanwhile -- clear() installs
   the shared empty table, which is str-only; update() of an empty dict
   clones a str-only argument's table -- the key is stored without its hash,
   and can be neither found nor compared again: plain dict ends up with
   duplicate keys, and reading that hash reads past the key object.  A
   nested write of a busy handle (I4: an outer write, of this thread or on
   free-threaded builds another, may be mid-lookup) therefore never gives the
   table a str-only keys table: the two helpers below.  A general table
   stays general through resizes and deletions. */

/* 0 | -1+exc: empty d as dict.clear() does, keeping its keys table.  The
   items are held until d is empty, so that finalizers of the values run
   afterwards (as dict.clear() runs them), and popitem() removes entries
   without a lookup (no __eq__ runs). */
static int
fc_cow_clear_keeping_table(PyObject *d)
{
    PyObject *items = PyDict_Items(d);
    if (items == NULL) {
        return -1;
    }
    while (PyDict_GET_SIZE(d) > 0) {
        PyObject *r = PyObject_CallMethod(d, "popitem", NULL);
        if (r == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_KeyError)) {
                Py_DECREF(items);
                return -1;
            }
            PyErr_Clear();   /* emptied by another thread meanwhile */
            continue;
        }
        Py_DECREF(r);
    }
    Py_DECREF(items);
    return 0;
}

/* 0 | -1+exc: d.update(src) for an exact dict src whose keys are all exact
   str, inserting item by item so that an empty d does not clone src's
   str-only table.  Exact str keys run no Python code when hashed or
   compared, so src cannot change during the loop on GIL builds (the
   snapshot matters only on free-threaded ones) and this is dict.update. */
static int
fc_cow_update_keeping_table(PyObject *d, PyObject *src)
{
    PyObject *items = PyDict_Items(src);
    Py_ssize_t i;
    int rc = 0;
    if (items == NULL) {
        return -1;
    }
    for (i = 0; rc == 0 && i < PyList_GET_SIZE(items); i++) {
        PyObject *kv = PyList_GET_ITEM(items, i);
        rc = PyDict_SetItem(d, PyTuple_GET_ITEM(kv, 0), PyTuple_GET_ITEM(kv, 1));
    }
    Py_DECREF(items);
    return rc;
}

/* 0 | -1+exc: self[key] = value. */
static int
fc_cow_store(FcCowDict *self, PyObject *key, PyObject *value)
{
    uint32_t seq;
    int nv = fc_cow_needs(value), rc, exact = 0;
    PyObject *old = NULL;
    FcCowTable *t;
    /* once, before the table is read: __hash__ may rewrite self */
    Py_hash_t h = fc_cow_hash(key);

    if (h == -1) {
        return -1;
    }
    seq = ++self->wseq;
    if ((self->nmut > 0 || nv) && fc_cow_quiet(self, key)) {
        /* invisible lookup of the value we replace (I3 stays exact) */
        if (fc_cow_getref(FC_COW_DICT(self), key, h, &old) < 0) {
            return -1;
        }
        exact = 1;
    }
    if (fc_cow_own(self) < 0) {
        Py_XDECREF(old);
        return -1;
    }
    t = (FcCowTable *)Py_NewRef(self->tab);
    self->busy++;
    rc = FC_COW_SETH(t->dict, key, value, h);
    self->busy--;
    fc_cow_untrack_after(t, key, value);
    if (rc == 0) {
        /* a user key's old value is unknown: nmut stays an upper bound */
        self->nmut += nv - (exact && old != NULL ? fc_cow_needs(old) : 0);
        fc_cow_note_key(self, key);
    }
    Py_DECREF(t);
    if (self->wseq != seq) {
        fc_cow_recount(self);
    }
    Py_XDECREF(old);
    return rc;
}

/* new ref | NULL+exc: dict.pop(d, key[, dflt]) with its one hash and one
   lookup; dflt NULL raises KeyError for a missing key. */
static PyObject *
fc_cow_dict_pop(PyObject *d, PyObject *key, PyObject *dflt)
{
#if FC_PY313_PLUS
    PyObject *r;
    int x = PyDict_Pop(d, key, &r);
    if (x < 0) {
        return NULL;
    }
    if (x == 0) {
        if (dflt != NULL) {
            return Py_NewRef(dflt);
        }
        fc_cow_set_keyerror(key);
        return NULL;
    }
    return r;
#else
    return _PyDict_Pop(d, key, dflt);
#endif
}

/* new ref (the removed value) | NULL+exc: pop key.  A missing key returns
   dflt (new ref) if dflt is not NULL, else raises KeyError. */
static PyObject *
fc_cow_pop(FcCowDict *self, PyObject *key, PyObject *dflt)
{
    uint32_t seq;
    Py_ssize_t n0;
    PyObject *res;
    FcCowTable *t;

    if (PyDict_GET_SIZE(FC_COW_DICT(self)) == 0) {
        /* dict.pop of an empty dict does not hash the key */
        goto missing;
    }
    if (fc_cow_shared(self) && fc_cow_quiet(self, key)) {
        /* invisible lookup: a missing key does not cost a copy */
        Py_hash_t h = fc_cow_hash(key);
        if (h == -1) {
            return NULL;
        }
        if (FC_COW_GETH(FC_COW_DICT(self), key, h) == NULL) {
            if (PyErr_Occurred()) {
                return NULL;
            }
            goto missing;
        }
    }
    /* A user key is hashed and looked up once, by dict itself, in a table
       we own: a shared table is copied first. */
    seq = ++self->wseq;
    if (fc_cow_own(self) < 0) {
        return NULL;
    }
    t = (FcCowTable *)Py_NewRef(self->tab);
    n0 = PyDict_GET_SIZE(t->dict);
    self->busy++;
    res = fc_cow_dict_pop(t->dict, key, dflt);
    self->busy--;
    if (res != NULL && self->wseq == seq && PyDict_GET_SIZE(t->dict) == n0 - 1) {
        self->nmut -= fc_cow_needs(res);
    }
    Py_DECREF(t);
    if (self->wseq != seq) {
        fc_cow_recount(self);
    }
    return res;
missing:
    if (dflt != NULL) {
        return Py_NewRef(dflt);
    }
    fc_cow_set_keyerror(key);
    return NULL;
}

/* 0 | -1+exc: del self[key] (dict hashes the key even when empty). */
static int
fc_cow_del(FcCowDict *self, PyObject *key)
{
    uint32_t seq;
    Py_hash_t h;
    PyObject *old = NULL;
    FcCowTable *t;
    int rc;

    if (!fc_cow_quiet(self, key) && PyDict_GET_SIZE(FC_COW_DICT(self)) > 0) {
        /* one hash and one lookup, which also tell the old value */
        PyObject *v = fc_cow_pop(self, key, NULL);
        if (v == NULL) {
            return -1;
        }
        Py_DECREF(v);
        return 0;
    }
    h = fc_cow_hash(key);
    if (h == -1) {
        return -1;
    }
    seq = ++self->wseq;
    if (fc_cow_quiet(self, key)) {
        /* invisible lookup: a missing key does not cost a copy */
        if (fc_cow_getref(FC_COW_DICT(self), key, h, &old) <= 0) {
            if (!PyErr_Occurred()) {
                fc_cow_set_keyerror(key);
            }
            return -1;
        }
    }
    if (fc_cow_own(self) < 0) {
        Py_XDECREF(old);
        return -1;
    }
    t = (FcCowTable *)Py_NewRef(self->tab);
    self->busy++;
    rc = FC_COW_DELH(t->dict, key, h);
    self->busy--;
    if (rc == 0 && old != NULL) {
        self->nmut -= fc_cow_needs(old);
    }
    Py_DECREF(t);
    if (self->wseq != seq) {
        fc_cow_recount(self);
    }
    Py_XDECREF(old);
    return rc;
}

/* new ref | NULL+exc: self.setdefault(key, dflt). */
static PyObject *
fc_cow_setdefault(FcCowDict *self, PyObject *key, PyObject *dflt)
{
    uint32_t seq;
    Py_ssize_t n0;
    PyObject *r;
    FcCowTable *t;

    if (fc_cow_quiet(self, key)) {
        /* invisible lookup: a present key does not cost a copy */
        Py_hash_t h = fc_cow_hash(key);
        if (h == -1) {
            return NULL;
        }
        int found = fc_cow_getref(FC_COW_DICT(self), key, h, &r);
        if (found > 0) {
            return r;
        }
        if (found < 0 || fc_cow_store(self, key, dflt) < 0) {
            return NULL;
        }
        return Py_NewRef(dflt);
    }
    /* a user key: dict's one hash and one lookup, in a table we own */
    seq = ++self->wseq;
    if (fc_cow_own(self) < 0) {
        return NULL;
    }
    t = (FcCowTable *)Py_NewRef(self->tab);
    n0 = PyDict_GET_SIZE(t->dict);
    self->busy++;
#if FC_PY313_PLUS
    /* a new reference (the borrowed one may be freed by another thread) */
    if (PyDict_SetDefaultRef(t->dict, key, dflt, &r) < 0) {
        r = NULL;
    }
#else
    r = Py_XNewRef(PyDict_SetDefault(t->dict, key, dflt));
#endif
    self->busy--;
    fc_cow_untrack_after(t, key, dflt);
    if (r != NULL && self->wseq == seq && PyDict_GET_SIZE(t->dict) == n0 + 1) {
        self->nmut += fc_cow_needs(dflt);
        fc_cow_note_key(self, key);
    }
    Py_DECREF(t);
    if (self->wseq != seq) {
        fc_cow_recount(self);
    }
    return r;
}

/* 0 | -1+exc: empty self. */
static int
fc_cow_clear(FcCowDict *self)
{
    uint32_t seq = ++self->wseq;
    if (PyDict_GET_SIZE(FC_COW_DICT(self)) == 0) {
        return 0;
    }
    if (self->busy || FC_COW_UNIQUE((PyObject *)self->tab)) {
        int nested = self->busy > 0, rc = 0;
        FcCowTable *t = (FcCowTable *)Py_NewRef(self->tab);
        self->busy++;
        if (nested) {
            rc = fc_cow_clear_keeping_table(t->dict);
        }
        else {
            PyDict_Clear(t->dict);
        }
        self->busy--;
        Py_DECREF(t);
        if (rc < 0) {
            fc_cow_recount(self);
            return -1;
        }
    }
    else {
        FcCowTable *n = fc_cow_table_new(self->types, PyDict_New(), 0);
        if (n == NULL) {
            return -1;
        }
        Py_SETREF(self->tab, n);
        self->gen++;
    }
    self->nmut = 0;
    self->keys_mut = 0;
    self->keys_odd = 0;
    if (self->wseq != seq) {
        fc_cow_recount(self);
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Handles                                                             */
/* ------------------------------------------------------------------ */

/* new ref | NULL+exc: a handle of type tp over table tab (stolen). */
static FcCowDict *
fc_cow_alloc(PyTypeObject *tp, PyObject *types, FcCowTable *tab)
{
    FcCowDict *r;
    if (tab == NULL) {
        return NULL;
    }
    r = (FcCowDict *)tp->tp_alloc(tp, 0);
    if (r == NULL) {
        Py_DECREF(tab);
        return NULL;
    }
    r->tab = tab;
    r->types = Py_NewRef(types);
    return r;
}

/* new ref | NULL+exc: a holder over a copy of self's dict. */
static FcCowTable *
fc_cow_table_copy(FcCowDict *self)
{
    PyObject *d = Py_NewRef(FC_COW_DICT(self));
    int gc = self->tab->gc;     /* d's table's, read before the copy allocates */
    FcCowTable *t = fc_cow_table_new(self->types, fc_cow_dict_copy(d), gc);
    Py_DECREF(d);
    return t;
}

/* new ref | NULL+exc: a handle equal to self, sharing its table. */
static PyObject *
fc_cow_share(FcCowDict *self)
{
    FcCowDict *r;
    if (self->busy) {
        /* I4: a write is half done; the copy must not share its table. */
        r = fc_cow_alloc(Py_TYPE(self), self->types, fc_cow_table_copy(self));
        if (r != NULL) {
            fc_cow_recount(r);
        }
        return (PyObject *)r;
    }
    r = fc_cow_alloc(Py_TYPE(self), self->types,
                     (FcCowTable *)Py_NewRef(self->tab));
    if (r != NULL) {
        /* the allocation may have run a finalizer that wrote to self */
        if (r->tab == self->tab) {
            r->nmut = self->nmut;
            r->keys_mut = self->keys_mut;
            r->keys_odd = self->keys_odd;
        }
        else {
            fc_cow_recount(r);
        }
    }
    return (PyObject *)r;
}

/* 0 | -1+exc: self.update(src) for an exact dict src, which the caller
   holds: dict.update's own merge (stored hashes, no __hash__ call, one
   lookup per key, its "dict mutated during update" check). */
static int
fc_cow_merge_dict(FcCowDict *self, PyObject *src)
{
    Py_ssize_t pos = 0, nv = 0, dec = 0;
    int km = 0, odd = 0, allstr = 1, quiet, rc, gcs = 0;
    uint32_t seq;
    PyObject *k, *v, *cur;
    FcCowTable *t;

    if (PyDict_GET_SIZE(src) == 0 || src == FC_COW_DICT(self)) {
        return 0;
    }
    seq = ++self->wseq;
    /* The figures first, while no Python code can run: reading src, and the
       old values of plain keys in an all-plain table (invisible lookups,
       made before the table is owned: a copy has the same values).  src is
       locked for the scan on free-threaded builds (another thread may write
       to a caller's dict: PyDict_Next alone is not safe); taking the lock
       may wait, which lets other threads in, so it comes before the table
       is owned -- between fc_cow_own() and busy++ nothing may wait. */
    cur = Py_NewRef(FC_COW_DICT(self));
    quiet = self->nmut > 0 && !self->keys_odd;
    FC_CS_BEGIN(src);
    while (PyDict_Next(src, &pos, &k, &v)) {
        int plain = fc_cow_plain(k);
        gcs |= fc_cow_may_cycle(k) || fc_cow_may_cycle(v);
        nv += fc_cow_needs(v);
        km |= fc_cow_needs(k);
        odd |= !plain;
        allstr &= PyUnicode_CheckExact(k);
        if (plain && quiet) {
            Py_hash_t h = fc_cow_hash(k);
            PyObject *o = NULL;
            if (h != -1 && fc_cow_getref(cur, k, h, &o) > 0) {
                dec += fc_cow_needs(o);
                Py_DECREF(o);
            }
            else if (PyErr_Occurred()) {
                PyErr_Clear();   /* cannot happen for plain keys */
            }
        }
    }
    FC_CS_END();
    Py_DECREF(cur);
    if (fc_cow_own(self) < 0) {
        return -1;
    }
    t = (FcCowTable *)Py_NewRef(self->tab);
    self->busy++;
    if (self->busy > 1 && allstr && PyDict_GET_SIZE(t->dict) == 0) {
        /* a nested update of an emptied table: see fc_cow_update_keeping_table */
        rc = fc_cow_update_keeping_table(t->dict, src);
    }
    else {
        rc = PyDict_Update(t->dict, src);
    }
    self->busy--;
    fc_cow_untrack(t->dict);
    /* I7: what src held when read; a key that is not plain may have run
       code that changed src during the merge: then what the table holds */
    if (!t->gc && (gcs || (odd && fc_cow_scan_gc(t->dict)))) {
        fc_cow_set_gc(t);
    }
    if (rc == 0 && self->wseq == seq && (!FC_FT || self->busy == 0)) {
        self->nmut += nv - dec;
        self->keys_mut |= (int16_t)km;
        self->keys_odd |= (int16_t)odd;
    }
    else {
        fc_cow_recount(self);
    }
    Py_DECREF(t);
    return rc;
}

/* 0 | -1+exc: self.update(arg), with dict.update's rules and errors. */
static int
fc_cow_update_arg(FcCowDict *self, PyObject *arg)
{
    PyObject *tmp, *r;
    int rc;

    if (FC_COW_CHECK(arg)) {
        FcCowDict *o = (FcCowDict *)arg;
        PyObject *src = NULL, *hold = NULL;
        FcCowTable *old = NULL;
        if (o == self) {
            return 0;
        }
        FC_CS_BEGIN(o);   /* self is locked by the caller (FC_COW_CS) */
        if (PyDict_GET_SIZE(FC_COW_DICT(self)) == 0
            && PyDict_GET_SIZE(FC_COW_DICT(o)) > 0 && !self->busy && !o->busy) {
            /* Adopt the other table: cowdict(other) is O(1). */
            self->wseq++;
            old = self->tab;
            self->tab = (FcCowTable *)Py_NewRef(o->tab);
            self->gen++;
            self->nmut = o->nmut;
            self->keys_mut = o->keys_mut;
            self->keys_odd = o->keys_odd;
        }
        else if (o->busy) {
            /* a write of o is half done (I4): merge a snapshot */
            src = hold = fc_cow_dict_copy(FC_COW_DICT(o));   /* NULL: error */
        }
        else {
            /* o's table, held through its holder: o's own writes then copy
               it first (I2) instead of changing it under the merge, which
               on free-threaded builds runs after o's lock is released */
            hold = Py_NewRef(o->tab);
            src = ((FcCowTable *)hold)->dict;
        }
        FC_CS_END();
        if (src == NULL) {
            if (old == NULL) {
                return -1;
            }
            Py_DECREF(old);
            return 0;
        }
        rc = fc_cow_merge_dict(self, src);
        Py_DECREF(hold);
        return rc;
    }
    if (PyDict_CheckExact(arg)) {
        return fc_cow_merge_dict(self, arg);
    }
    /* Let dict.update itself parse mappings and pair sequences (its error
       messages, its keys()/__getitem__ rules, one hash per key), then apply
       what it accepted with the stored hashes: like dict.update, a failure
       keeps the items before it. */
    tmp = PyDict_New();
    if (tmp == NULL) {
        return -1;
    }
    r = PyObject_CallMethod(tmp, "update", "O", arg);
    if (r == NULL) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        rc = fc_cow_merge_dict(self, tmp);
        if (rc == 0) {
            PyErr_Restore(et, ev, tb);
        }
        else {
            Py_XDECREF(et);
            Py_XDECREF(ev);
            Py_XDECREF(tb);
        }
        Py_DECREF(tmp);
        return -1;
    }
    Py_DECREF(r);
    rc = fc_cow_merge_dict(self, tmp);
    Py_DECREF(tmp);
    return rc;
}

/* 1 ok | 0+exc: dict's positional-count message. */
static int
fc_cow_nargs(const char *name, Py_ssize_t n, Py_ssize_t lo, Py_ssize_t hi)
{
    if (n < lo) {
        PyErr_Format(PyExc_TypeError, "%.200s expected %s%zd argument%s, got %zd",
                     name, lo == hi ? "" : "at least ", lo, lo == 1 ? "" : "s", n);
        return 0;
    }
    if (n > hi) {
        PyErr_Format(PyExc_TypeError, "%.200s expected %s%zd argument%s, got %zd",
                     name, lo == hi ? "" : "at most ", hi, hi == 1 ? "" : "s", n);
        return 0;
    }
    return 1;
}

/* 0 | -1+exc: dict_update_common: at most one positional, then kwargs. */
static int
fc_cow_update_common(FcCowDict *self, PyObject *args, PyObject *kwds,
                     const char *name)
{
    if (!fc_cow_nargs(name, PyTuple_GET_SIZE(args), 0, 1)) {
        return -1;
    }
    if (PyTuple_GET_SIZE(args) == 1
        && fc_cow_update_arg(self, PyTuple_GET_ITEM(args, 0)) < 0) {
        return -1;
    }
    if (kwds != NULL && PyDict_GET_SIZE(kwds) > 0) {
        return fc_cow_merge_dict(self, kwds);
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Iterators                                                           */
/* ------------------------------------------------------------------ */

/* new ref | NULL+exc */
static PyObject *
fc_cow_iter_new(FcCowDict *cd, int kind, int reversed)
{
    FcCowIter *it = PyObject_GC_New(
        FcCowIter, FC_COW_TYPE(cd, reversed ? FC_COW_REVITER : FC_COW_ITER));
    if (it == NULL) {
        return NULL;
    }
    it->cd = (FcCowDict *)Py_NewRef(cd);
    it->pos = reversed ? PY_SSIZE_T_MAX : 0;
    /* read after the allocation, which may have run a finalizer */
    it->used = PyDict_GET_SIZE(FC_COW_DICT(cd));
    it->count = 0;
    it->gen = cd->gen;
    it->kind = kind;
    PyObject_GC_Track(it);
    return (PyObject *)it;
}

static void
cowiter_tp_dealloc(PyObject *self)
{
    FcCowIter *it = (FcCowIter *)self;
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Py_XDECREF(it->cd);
    PyObject_GC_Del(self);
    Py_DECREF(tp);
}

static int
cowiter_tp_traverse(PyObject *self, visitproc visit, void *arg)
{
    FcCowIter *it = (FcCowIter *)self;
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(it->cd);
    return 0;
}

static void
fc_cow_iter_done(FcCowIter *it)
{
    Py_CLEAR(it->cd);
}

/* 1 ok | 0+exc: dict's "changed size" check, sticky like dict's. */
static int
fc_cow_iter_check(FcCowIter *it)
{
    if (it->used != PyDict_GET_SIZE(FC_COW_DICT(it->cd))) {
        PyErr_SetString(PyExc_RuntimeError,
                        "dictionary changed size during iteration");
        it->used = -1;
        return 0;
    }
    return 1;
}

/* new ref | NULL+exc: what the iterator yields for k, v (strong). */
FC_INLINE PyObject *
fc_cow_iter_item(int kind, PyObject *k, PyObject *v)
{
    PyObject *r;
    switch (kind) {
    case FC_COW_KEYS:
        return Py_NewRef(k);
    case FC_COW_VALUES:
        return Py_NewRef(v);
    default:
        /* hold both before the allocation, which may run a finalizer that
           writes to (and frees) the table they came from */
        Py_INCREF(k);
        Py_INCREF(v);
        r = PyTuple_New(2);
        if (r == NULL) {
            Py_DECREF(k);
            Py_DECREF(v);
            return NULL;
        }
        PyTuple_SET_ITEM(r, 0, k);
        PyTuple_SET_ITEM(r, 1, v);
        return r;
    }
}

/* A step of an iterator: the handle's fields are read first, under the
   handle's lock, and the table is then read under the dict's own lock on
   free-threaded builds (see fc_cow_recount).  Taking that lock may wait;
   the thread then holds only the dict's lock until it is released, so
   nothing between the two touches the handle, and the item is held before
   the lock is released.  If the handle's table was replaced meanwhile, the
   step reads the table it started with (the items and order a replacement
   keeps, I5); the next step finds its place in the new one. */

/* new ref | NULL (+exc, or exhausted) */
static PyObject *
cowiter_tp_iternext(PyObject *self)
{
    FcCowIter *it = (FcCowIter *)self;
    FcCowDict *cd = it->cd;
    PyObject *t, *k = NULL, *v = NULL, *r;
    Py_ssize_t pos, count = it->count;
    uint32_t gen;
    int refind, found;

    if (cd == NULL || !fc_cow_iter_check(it)) {
        return NULL;
    }
    t = Py_NewRef(FC_COW_DICT(cd));
    gen = cd->gen;
    refind = it->gen != gen;
    pos = refind ? 0 : it->pos;
    FC_CS_BEGIN(t);
    if (refind) {
        /* I5: same items in the same order; find our place again. */
        for (Py_ssize_t i = 0; i < count; i++) {
            if (!PyDict_Next(t, &pos, NULL, NULL)) {
                break;
            }
        }
    }
    found = PyDict_Next(t, &pos, &k, &v);
    if (found) {
        FC_FT_INCREF(k);   /* GIL builds: nothing runs before the item holds them */
        FC_FT_INCREF(v);
    }
    FC_CS_END();
    Py_DECREF(t);
    it->pos = pos;
    it->gen = gen;
    if (!found) {
        fc_cow_iter_done(it);
        return NULL;
    }
    if (it->count >= it->used) {
        PyErr_SetString(PyExc_RuntimeError,
                        "dictionary keys changed during iteration");
        fc_cow_iter_done(it);
        r = NULL;
    }
    else {
        it->count++;
        r = fc_cow_iter_item(it->kind, k, v);
    }
    FC_FT_DECREF(k);
    FC_FT_DECREF(v);
    return r;
}

/* The entry index of the last item of d stored before entry index j
   (PY_SSIZE_T_MAX: the last item), or -1; *kp, *vp borrowed.  Stepping
   back with PyDict_Next alone: PyDict_Next(q) yields the first item at an
   entry index >= q and leaves the position just past it, so "some item lies
   in [q, j)" is monotone in q, and the item we want is at the largest q
   where it holds: found by doubling steps and bisection, one call when the
   entries before j have no holes.  No allocation, no Python code. */
static Py_ssize_t
fc_cow_prev(PyObject *d, Py_ssize_t j, PyObject **kp, PyObject **vp)
{
    Py_ssize_t lo = -1, hi = j, q, p, step = 1;
    PyObject *k, *v;
#define FC_COW_HAS(q) (p = (q), PyDict_Next(d, &p, &k, &v) && p - 1 < j)

    if (j <= 0) {
        return -1;
    }
    if (j == PY_SSIZE_T_MAX) {
        /* upwards from 0 until nothing is at or after q */
        q = 0;
        while (FC_COW_HAS(q)) {
            lo = p - 1;
            *kp = k;
            *vp = v;
            if (lo >= PY_SSIZE_T_MAX / 4) {
                break;
            }
            q = lo + step;
            step *= 2;
        }
        if (lo < 0) {
            return -1;
        }
        hi = q > lo ? q : lo + 1;
    }
    else {
        /* downwards from j - 1 until something is in [q, j) */
        for (q = j - 1;; ) {
            if (FC_COW_HAS(q)) {
                lo = p - 1;
                *kp = k;
                *vp = v;
                break;
            }
            hi = q;
            if (q == 0) {
                return -1;
            }
            step *= 2;
            q = j - step < 0 ? 0 : j - step;
        }
    }
    /* an item at lo, none in [hi, j) */
    while (hi - lo > 1) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (FC_COW_HAS(mid)) {
            lo = p - 1;
            *kp = k;
            *vp = v;
        }
        else {
            hi = mid;
        }
    }
#undef FC_COW_HAS
    return lo;
}

/* new ref | NULL (+exc, or exhausted); see cowiter_tp_iternext */
static PyObject *
cowreviter_tp_iternext(PyObject *self)
{
    FcCowIter *it = (FcCowIter *)self;
    FcCowDict *cd = it->cd;
    PyObject *t, *k = NULL, *v = NULL, *r;
    Py_ssize_t e, pos, count = it->count;
    uint32_t gen;
    int refind;

    if (cd == NULL || !fc_cow_iter_check(it)) {
        return NULL;
    }
    t = Py_NewRef(FC_COW_DICT(cd));
    gen = cd->gen;
    refind = it->gen != gen;
    pos = refind ? PY_SSIZE_T_MAX : it->pos;
    FC_CS_BEGIN(t);
    if (refind) {
        /* I5: find our place again, count items from the end */
        for (Py_ssize_t i = 0; i < count && pos >= 0; i++) {
            pos = fc_cow_prev(t, pos, &k, &v);
        }
    }
    e = pos < 0 ? -1 : fc_cow_prev(t, pos, &k, &v);
    if (e >= 0) {
        FC_FT_INCREF(k);
        FC_FT_INCREF(v);
    }
    FC_CS_END();
    Py_DECREF(t);
    it->gen = gen;
    if (e < 0) {
        it->pos = pos;
        fc_cow_iter_done(it);
        return NULL;
    }
    it->pos = e;
    it->count++;
    r = fc_cow_iter_item(it->kind, k, v);
    FC_FT_DECREF(k);
    FC_FT_DECREF(v);
    return r;
}

static PyObject *
cowiter_length_hint(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    FcCowIter *it = (FcCowIter *)self;
    Py_ssize_t n = 0;
    if (it->cd != NULL && it->used == PyDict_GET_SIZE(FC_COW_DICT(it->cd))) {
        n = it->used - it->count;
    }
    return PyLong_FromSsize_t(n < 0 ? 0 : n);
}

#if FC_FT
/* The iterator's own fields, then its handle's: cd is read under the
   first and held while the second is taken. */
#  define FC_COW_ITER_CS(f, params, args)                                \
    static PyObject *f##_cs params                                      \
    {                                                                   \
        PyObject *r_, *cd_;                                             \
        Py_BEGIN_CRITICAL_SECTION(self);                                \
        cd_ = Py_XNewRef((PyObject *)((FcCowIter *)self)->cd);          \
        if (cd_ != NULL) {                                              \
            Py_BEGIN_CRITICAL_SECTION(cd_);                             \
            r_ = f args;                                                \
            Py_END_CRITICAL_SECTION();                                  \
        }                                                               \
        else {                                                          \
            r_ = f args;                                                \
        }                                                               \
        Py_END_CRITICAL_SECTION();                                      \
        Py_XDECREF(cd_);                                                \
        return r_;                                                      \
    }
FC_COW_ITER_CS(cowiter_tp_iternext, (PyObject *self), (self))
FC_COW_ITER_CS(cowreviter_tp_iternext, (PyObject *self), (self))
FC_COW_ITER_CS(cowiter_length_hint, (PyObject *self, PyObject *ign), (self, ign))
#endif

static PyMethodDef cowiter_methods[] = {
    {"__length_hint__", FC_COW_CS(cowiter_length_hint), METH_NOARGS,
     "Private method returning an estimate of len(list(it))."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot cowiter_slots[] = {
    {Py_tp_dealloc, cowiter_tp_dealloc},
    {Py_tp_traverse, cowiter_tp_traverse},
    {Py_tp_iter, PyObject_SelfIter},
    {Py_tp_iternext, FC_COW_CS(cowiter_tp_iternext)},
    {Py_tp_methods, cowiter_methods},
    {0, NULL},
};

static PyType_Slot cowreviter_slots[] = {
    {Py_tp_dealloc, cowiter_tp_dealloc},
    {Py_tp_traverse, cowiter_tp_traverse},
    {Py_tp_iter, PyObject_SelfIter},
    {Py_tp_iternext, FC_COW_CS(cowreviter_tp_iternext)},
    {Py_tp_methods, cowiter_methods},
    {0, NULL},
};

#define FC_COW_HELPER_FLAGS (Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC \
    | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION)

static PyType_Spec cowiter_spec = {
    "fastcopy.cowdict_iterator", sizeof(FcCowIter), 0,
    FC_COW_HELPER_FLAGS, cowiter_slots,
};

static PyType_Spec cowreviter_spec = {
    "fastcopy.cowdict_reverseiterator", sizeof(FcCowIter), 0,
    FC_COW_HELPER_FLAGS, cowreviter_slots,
};

/* ------------------------------------------------------------------ */
/* Views                                                               */
/* ------------------------------------------------------------------ */

static const char *const fc_cow_view_meth[] = {"keys", "values", "items"};

/* new ref | NULL+exc */
static PyObject *
fc_cow_view_new(FcCowDict *cd, int kind)
{
    FcCowView *v = PyObject_GC_New(FcCowView, FC_COW_TYPE(cd, kind));
    if (v == NULL) {
        return NULL;
    }
    v->cd = (FcCowDict *)Py_NewRef(cd);
    v->kind = kind;
    PyObject_GC_Track(v);
    return (PyObject *)v;
}

static void
cowview_tp_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Py_XDECREF(((FcCowView *)self)->cd);
    PyObject_GC_Del(self);
    Py_DECREF(tp);
}

static int
cowview_tp_traverse(PyObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(((FcCowView *)self)->cd);
    return 0;
}

/* new ref | NULL+exc: the real dict view of o's current table when o is
   one of our views, else o itself.  The real view holds the dict; it is
   only ever passed to the dict view type's own slots, never to user code. */
static PyObject *
fc_cow_view_real(PyObject *o)
{
    if (FC_COWVIEW_CHECK(o)) {
        FcCowView *v = (FcCowView *)o;
        PyObject *d, *r;
        FC_CS_BEGIN(v->cd);
        d = Py_NewRef(FC_COW_DICT(v->cd));
        FC_CS_END();
        r = PyObject_CallMethod(d, fc_cow_view_meth[v->kind], NULL);
        Py_DECREF(d);
        return r;
    }
    return Py_NewRef(o);
}

static Py_ssize_t
cowview_sq_length(PyObject *self)
{
    return PyDict_GET_SIZE(FC_COW_DICT(((FcCowView *)self)->cd));
}

static PyObject *
cowview_tp_iter(PyObject *self)
{
    FcCowView *v = (FcCowView *)self;
    return fc_cow_iter_new(v->cd, v->kind, 0);
}

static PyObject *
cowview_reversed(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    FcCowView *v = (FcCowView *)self;
    return fc_cow_iter_new(v->cd, v->kind, 1);
}

/* 1 | 0 | -1+exc */
static int
cowview_sq_contains(PyObject *self, PyObject *x)
{
    FcCowView *v = (FcCowView *)self;
    PyObject *found = NULL, *d;
    int r;

    if (v->kind == FC_COW_KEYS) {
        return fc_cow_lookup(v->cd, x, NULL);
    }
    if (v->kind == FC_COW_ITEMS) {
        /* dictitems_contains: only 2-tuples can be items */
        if (!PyTuple_Check(x) || PyTuple_GET_SIZE(x) != 2) {
            return 0;
        }
        Py_INCREF(x);
        r = fc_cow_lookup(v->cd, PyTuple_GET_ITEM(x, 0), &found);
        if (r > 0) {
            r = PyObject_RichCompareBool(found, PyTuple_GET_ITEM(x, 1), Py_EQ);
        }
        Py_XDECREF(found);
        Py_DECREF(x);
        return r;
    }
    d = Py_NewRef(FC_COW_DICT(v->cd));
    found = PyObject_CallMethod(d, "values", NULL);
    r = found == NULL ? -1 : PySequence_Contains(found, x);
    Py_XDECREF(found);
    Py_DECREF(d);
    return r;
}

enum { FC_COW_AND, FC_COW_OR, FC_COW_XOR, FC_COW_SUB };

/* The dict view type's own slot, called directly: the generic protocol
   would offer the real view to the other operand's reflected method. */
static PyObject *
fc_cow_view_binop(PyObject *a, PyObject *b, int which)
{
    PyObject *ra = NULL, *rb = NULL, *res = NULL;
    PyNumberMethods *nm;
    binaryfunc f;
    ra = fc_cow_view_real(a);
    if (ra == NULL) {
        goto done;
    }
    rb = fc_cow_view_real(b);
    if (rb == NULL) {
        goto done;
    }
    nm = Py_TYPE(FC_COWVIEW_CHECK(a) ? ra : rb)->tp_as_number;
    f = which == FC_COW_AND ? nm->nb_and : which == FC_COW_OR ? nm->nb_or
        : which == FC_COW_XOR ? nm->nb_xor : nm->nb_subtract;
    res = f(ra, rb);
done:
    Py_XDECREF(ra);
    Py_XDECREF(rb);
    return res;
}

static PyObject *cowview_nb_and(PyObject *a, PyObject *b)
{ return fc_cow_view_binop(a, b, FC_COW_AND); }
static PyObject *cowview_nb_or(PyObject *a, PyObject *b)
{ return fc_cow_view_binop(a, b, FC_COW_OR); }
static PyObject *cowview_nb_xor(PyObject *a, PyObject *b)
{ return fc_cow_view_binop(a, b, FC_COW_XOR); }
static PyObject *cowview_nb_sub(PyObject *a, PyObject *b)
{ return fc_cow_view_binop(a, b, FC_COW_SUB); }

static PyObject *
cowview_tp_richcompare(PyObject *self, PyObject *other, int op)
{
    PyObject *ra = NULL, *rb = NULL, *res = NULL;
    ra = fc_cow_view_real(self);
    if (ra == NULL) {
        goto done;
    }
    rb = fc_cow_view_real(other);
    if (rb == NULL) {
        goto done;
    }
    /* the real view's slot: NotImplemented for a user object, which then
       gets our view, not the real one, through its reflected method */
    res = Py_TYPE(ra)->tp_richcompare(ra, rb, op);
done:
    Py_XDECREF(ra);
    Py_XDECREF(rb);
    return res;
}

static PyObject *
cowview_isdisjoint(PyObject *self, PyObject *other)
{
    PyObject *ra = NULL, *rb = NULL, *res = NULL;
    ra = fc_cow_view_real(self);
    if (ra == NULL) {
        goto done;
    }
    rb = fc_cow_view_real(other);
    if (rb == NULL) {
        goto done;
    }
    res = PyObject_CallMethod(ra, "isdisjoint", "O", rb);
done:
    Py_XDECREF(ra);
    Py_XDECREF(rb);
    return res;
}

static PyObject *
cowview_tp_repr(PyObject *self)
{
    PyObject *seq, *res;
    const char *name = strrchr(Py_TYPE(self)->tp_name, '.');
    int r = Py_ReprEnter(self);
    if (r != 0) {
        return r > 0 ? PyUnicode_FromString("...") : NULL;
    }
    seq = PySequence_List(self);
    if (seq == NULL) {
        Py_ReprLeave(self);
        return NULL;
    }
    res = PyUnicode_FromFormat("%s(%R)", name + 1, seq);
    Py_DECREF(seq);
    Py_ReprLeave(self);
    return res;
}

static PyObject *
cowview_mapping(PyObject *self, void *Py_UNUSED(closure))
{
    return PyDictProxy_New((PyObject *)((FcCowView *)self)->cd);
}

FC_COW_CS_WRAP(Py_ssize_t, cowview_sq_length, (PyObject *self), (self),
               FC_COW_VIEW_LOCK(self))
FC_COW_CS_WRAP(PyObject *, cowview_tp_iter, (PyObject *self), (self),
               FC_COW_VIEW_LOCK(self))
FC_COW_CS_WRAP(PyObject *, cowview_reversed, (PyObject *self, PyObject *ign),
               (self, ign), FC_COW_VIEW_LOCK(self))
FC_COW_CS_WRAP(int, cowview_sq_contains, (PyObject *self, PyObject *x), (self, x),
               FC_COW_VIEW_LOCK(self))

static PyGetSetDef cowview_getset[] = {
    {"mapping", cowview_mapping, NULL,
     "a read-only proxy of the cowdict the view refers to", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef cowview_set_methods[] = {
    {"isdisjoint", cowview_isdisjoint, METH_O,
     "Return True if the view and the given iterable have a null intersection."},
    {"__reversed__", FC_COW_CS(cowview_reversed), METH_NOARGS,
     "Return a reverse iterator over the view."},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef cowview_values_methods[] = {
    {"__reversed__", FC_COW_CS(cowview_reversed), METH_NOARGS,
     "Return a reverse iterator over the view."},
    {NULL, NULL, 0, NULL},
};

#define FC_COW_VIEW_COMMON_SLOTS                     \
    {Py_tp_dealloc, cowview_tp_dealloc},             \
    {Py_tp_traverse, cowview_tp_traverse},           \
    {Py_tp_iter, FC_COW_CS(cowview_tp_iter)},                   \
    {Py_tp_repr, cowview_tp_repr},                   \
    {Py_tp_getset, cowview_getset},                  \
    {Py_sq_length, FC_COW_CS(cowview_sq_length)},               \
    {Py_sq_contains, FC_COW_CS(cowview_sq_contains)}

static PyType_Slot cowview_set_slots[] = {
    FC_COW_VIEW_COMMON_SLOTS,
    {Py_tp_hash, PyObject_HashNotImplemented},
    {Py_tp_richcompare, cowview_tp_richcompare},
    {Py_tp_methods, cowview_set_methods},
    {Py_nb_and, cowview_nb_and},
    {Py_nb_or, cowview_nb_or},
    {Py_nb_xor, cowview_nb_xor},
    {Py_nb_subtract, cowview_nb_sub},
    {0, NULL},
};

static PyType_Slot cowview_values_slots[] = {
    FC_COW_VIEW_COMMON_SLOTS,
    {Py_tp_methods, cowview_values_methods},
    {0, NULL},
};

static PyType_Spec cowkeys_spec = {
    "fastcopy.cowdict_keys", sizeof(FcCowView), 0,
    FC_COW_HELPER_FLAGS, cowview_set_slots,
};
static PyType_Spec cowvalues_spec = {
    "fastcopy.cowdict_values", sizeof(FcCowView), 0,
    FC_COW_HELPER_FLAGS, cowview_values_slots,
};
static PyType_Spec cowitems_spec = {
    "fastcopy.cowdict_items", sizeof(FcCowView), 0,
    FC_COW_HELPER_FLAGS, cowview_set_slots,
};

/* ------------------------------------------------------------------ */
/* cowdict: type slots                                                 */
/* ------------------------------------------------------------------ */

#define FC_COW_TYPES_ATTR "__cowdict_types__"

/* new ref | NULL+exc: an empty handle of type tp. */
static FcCowDict *
fc_cow_new_empty(PyTypeObject *tp)
{
    PyObject *types = PyDict_GetItemString(tp->tp_dict, FC_COW_TYPES_ATTR);
    if (types == NULL || !PyTuple_Check(types)
        || PyTuple_GET_SIZE(types) != FC_COW_NTYPES) {
        PyErr_SetString(PyExc_SystemError, "cowdict: helper types missing");
        return NULL;
    }
    return fc_cow_alloc(tp, types, fc_cow_table_new(types, PyDict_New(), 0));
}

static PyObject *
cowdict_tp_new(PyTypeObject *tp, PyObject *args, PyObject *kwds)
{
    return (PyObject *)fc_cow_new_empty(tp);
}

static int
cowdict_tp_init(PyObject *self, PyObject *args, PyObject *kwds)
{
    return fc_cow_update_common((FcCowDict *)self, args, kwds, "cowdict");
}

static void
cowdict_tp_dealloc(PyObject *self)
{
    FcCowDict *cd = (FcCowDict *)self;
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Py_XDECREF(cd->tab);
    Py_XDECREF(cd->types);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static int
cowdict_tp_traverse(PyObject *self, visitproc visit, void *arg)
{
    FcCowDict *cd = (FcCowDict *)self;
    Py_VISIT(Py_TYPE(self));
    /* the holder, never the dict (I6) */
    Py_VISIT(cd->tab);
    Py_VISIT(cd->types);
    return 0;
}

/* Break cycles through the contents.  A shared table is left alone: the
   collector clears its holder if it is garbage too, and I1 keeps every
   handle usable afterwards. */
static int
cowdict_tp_clear(PyObject *self)
{
    FcCowDict *cd = (FcCowDict *)self;
    if (cd->tab != NULL && !cd->busy && FC_COW_UNIQUE((PyObject *)cd->tab)) {
        FcCowTable *t = (FcCowTable *)Py_NewRef(cd->tab);
        cd->wseq++;
        cd->busy++;
        PyDict_Clear(t->dict);
        cd->busy--;
        cd->nmut = 0;
        cd->keys_mut = 0;
        cd->keys_odd = 0;
        Py_DECREF(t);
    }
    return 0;
}

static Py_ssize_t
cowdict_mp_length(PyObject *self)
{
    return PyDict_GET_SIZE(FC_COW_DICT((FcCowDict *)self));
}

static PyObject *
cowdict_mp_subscript(PyObject *self, PyObject *key)
{
    PyObject *v = NULL;
    int r = fc_cow_lookup((FcCowDict *)self, key, &v);
    if (r == 0) {
        fc_cow_set_keyerror(key);
    }
    return v;
}

static int
cowdict_mp_ass_subscript(PyObject *self, PyObject *key, PyObject *value)
{
    if (value != NULL) {
        return fc_cow_store((FcCowDict *)self, key, value);
    }
    return fc_cow_del((FcCowDict *)self, key);
}

static int
cowdict_sq_contains(PyObject *self, PyObject *key)
{
    return fc_cow_lookup((FcCowDict *)self, key, NULL);
}

static PyObject *
cowdict_tp_iter(PyObject *self)
{
    return fc_cow_iter_new((FcCowDict *)self, FC_COW_KEYS, 0);
}

static PyObject *
cowdict_tp_repr(PyObject *self)
{
    FcCowDict *cd = (FcCowDict *)self;
    const char *name = strrchr(Py_TYPE(self)->tp_name, '.');
    PyObject *t = Py_NewRef(FC_COW_DICT(cd));
    /* the table's own repr guards recursion: a cowdict inside itself
       shows as cowdict({...}) */
    PyObject *res = PyUnicode_FromFormat("%s(%R)", name + 1, t);
    Py_DECREF(t);
    return res;
}

static PyObject *
cowdict_tp_richcompare(PyObject *self, PyObject *other, int op)
{
    PyObject *a, *b, *res;
    if ((op != Py_EQ && op != Py_NE) || !FC_COW_CHECK(self)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (FC_COW_CHECK(other)) {
        b = FC_COW_DICT((FcCowDict *)other);
    }
    else if (PyDict_Check(other)) {
        richcmpfunc f = Py_TYPE(other)->tp_richcompare;
        if (f != PyDict_Type.tp_richcompare) {
            /* a dict subclass's own __eq__ first, as dict == sub does; it
               gets the cowdict, never the table */
            res = f(other, self, op);   /* == and != are their own swaps */
            if (res != Py_NotImplemented) {
                return res;
            }
            Py_DECREF(res);
        }
        b = other;
    }
    else {
        Py_RETURN_NOTIMPLEMENTED;
    }
    a = FC_COW_DICT((FcCowDict *)self);
    if (a == b) {
        /* dict_equal of a table with itself compares each value with itself
           through PyObject_RichCompareBool, which is True by identity */
        return PyBool_FromLong(op == Py_EQ);
    }
    Py_INCREF(a);
    Py_INCREF(b);
    /* dict's own slot: the generic protocol would offer the table to a
       subclass's reflected __eq__ */
    res = PyDict_Type.tp_richcompare(a, b, op);
    Py_DECREF(a);
    Py_DECREF(b);
    return res;
}

/* a | b where either is a cowdict and the other a dict or cowdict. */
static PyObject *
cowdict_nb_or(PyObject *a, PyObject *b)
{
    FcCowDict *r;
    if (FC_COW_CHECK(a)) {
        if (!FC_COW_CHECK(b) && !PyDict_Check(b)) {
            Py_RETURN_NOTIMPLEMENTED;
        }
        r = (FcCowDict *)fc_cow_share((FcCowDict *)a);
    }
    else {
        if (!PyDict_Check(a)) {
            Py_RETURN_NOTIMPLEMENTED;
        }
        r = fc_cow_new_empty(Py_TYPE(b));
        if (r != NULL && fc_cow_update_arg(r, a) < 0) {
            Py_CLEAR(r);
        }
    }
    if (r != NULL && fc_cow_update_arg(r, b) < 0) {
        Py_CLEAR(r);
    }
    return (PyObject *)r;
}

static PyObject *
cowdict_nb_inplace_or(PyObject *self, PyObject *other)
{
    if (fc_cow_update_arg((FcCowDict *)self, other) < 0) {
        return NULL;
    }
    return Py_NewRef(self);
}

/* ------------------------------------------------------------------ */
/* cowdict: methods                                                    */
/* ------------------------------------------------------------------ */

static PyObject *
cowdict_get(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *v = NULL;
    int r;
    if (!fc_cow_nargs("get", nargs, 1, 2)) {
        return NULL;
    }
    r = fc_cow_lookup((FcCowDict *)self, args[0], &v);
    if (r == 0) {
        v = Py_NewRef(nargs > 1 ? args[1] : Py_None);
    }
    return v;
}

static PyObject *
cowdict_setdefault(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (!fc_cow_nargs("setdefault", nargs, 1, 2)) {
        return NULL;
    }
    return fc_cow_setdefault((FcCowDict *)self, args[0],
                             nargs > 1 ? args[1] : Py_None);
}

static PyObject *
cowdict_pop(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (!fc_cow_nargs("pop", nargs, 1, 2)) {
        return NULL;
    }
    return fc_cow_pop((FcCowDict *)self, args[0], nargs > 1 ? args[1] : NULL);
}

static PyObject *
cowdict_popitem(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    FcCowDict *cd = (FcCowDict *)self;
    uint32_t seq = ++cd->wseq;
    PyObject *t, *res;
    if (PyDict_GET_SIZE(FC_COW_DICT(cd)) == 0) {
        PyErr_SetString(PyExc_KeyError, "popitem(): dictionary is empty");
        return NULL;
    }
    if (fc_cow_own(cd) < 0) {
        return NULL;
    }
    t = Py_NewRef(cd->tab);
    cd->busy++;
    res = PyObject_CallMethod(((FcCowTable *)t)->dict, "popitem", NULL);
    cd->busy--;
    Py_DECREF(t);
    if (res != NULL && PyTuple_Check(res) && PyTuple_GET_SIZE(res) == 2) {
        cd->nmut -= fc_cow_needs(PyTuple_GET_ITEM(res, 1));
    }
    if (cd->wseq != seq) {
        fc_cow_recount(cd);
    }
    return res;
}

static PyObject *
cowdict_clear(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    if (fc_cow_clear((FcCowDict *)self) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
cowdict_update(PyObject *self, PyObject *args, PyObject *kwds)
{
    if (fc_cow_update_common((FcCowDict *)self, args, kwds, "update") < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
cowdict_keys(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    return fc_cow_view_new((FcCowDict *)self, FC_COW_KEYS);
}

static PyObject *
cowdict_values(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    return fc_cow_view_new((FcCowDict *)self, FC_COW_VALUES);
}

static PyObject *
cowdict_items(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    return fc_cow_view_new((FcCowDict *)self, FC_COW_ITEMS);
}

static PyObject *
cowdict_reversed(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    return fc_cow_iter_new((FcCowDict *)self, FC_COW_KEYS, 1);
}

static PyObject *
cowdict_copy(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    return fc_cow_share((FcCowDict *)self);
}

/* new ref | NULL+exc: the slow __deepcopy__, see the essay. */
static PyObject *
fc_cow_deep_slow(FcCowDict *self, PyObject *memo)
{
    PyObject *copymod = NULL, *deep = NULL, *id = NULL, *d;
    FcCowTable *t = NULL;
    PyObject *key = NULL, *val = NULL, *k2 = NULL, *v2 = NULL;
    PyObject *own_memo = NULL;
    FcCowDict *res = NULL;
    Py_ssize_t pos = 0, used, nmut = 0;
    uint32_t seq = self->wseq;
    int rebuild = self->keys_mut || self->busy, km = 0;

    if (memo == Py_None) {
        memo = own_memo = PyDict_New();
        if (memo == NULL) {
            goto error;
        }
    }
    copymod = PyImport_ImportModule("copy");
    if (copymod == NULL) {
        goto error;
    }
    deep = PyObject_GetAttrString(copymod, "deepcopy");
    if (deep == NULL) {
        goto error;
    }
    /* held: user code below may write to self, which then copies away */
    t = (FcCowTable *)Py_NewRef(self->tab);
    d = t->dict;
    res = fc_cow_alloc(Py_TYPE(self), self->types,
                       fc_cow_table_new(self->types,
                                        rebuild ? PyDict_New() : fc_cow_dict_copy(d),
                                        rebuild ? 0 : t->gc));
    if (res == NULL) {
        goto error;
    }
    if (!rebuild) {
        res->nmut = self->nmut;
    }
    /* so that a cycle back to self finds the copy (stdlib _deepcopy_dict) */
    id = PyLong_FromVoidPtr(self);
    if (id == NULL || PyObject_SetItem(memo, id, (PyObject *)res) < 0) {
        goto error;
    }
    used = PyDict_GET_SIZE(d);
    while (fc_cow_next(d, &pos, &key, &val)) {
        int nk = fc_cow_needs(key), nv = fc_cow_needs(val);
        nmut += nv;
        km |= nk;
        if (!rebuild && !nv) {
            Py_CLEAR(key);
            Py_CLEAR(val);
            continue;
        }
        /* the stdlib copies the value before the key */
        v2 = nv ? PyObject_CallFunctionObjArgs(deep, val, memo, NULL)
                : Py_NewRef(val);
        if (v2 == NULL) {
            goto error;
        }
        k2 = nk ? PyObject_CallFunctionObjArgs(deep, key, memo, NULL)
                : Py_NewRef(key);
        if (k2 == NULL) {
            goto error;
        }
        if (fc_cow_store(res, k2, v2) < 0) {
            goto error;
        }
        Py_CLEAR(key);
        Py_CLEAR(val);
        Py_CLEAR(k2);
        Py_CLEAR(v2);
        if (PyDict_GET_SIZE(d) != used) {
            PyErr_SetString(PyExc_RuntimeError,
                            "dictionary changed size during iteration");
            goto error;
        }
    }
    if (self->wseq == seq && self->tab == t) {
        /* the scan was complete: refresh the figures (keys_mut is sticky) */
        self->nmut = nmut;
        self->keys_mut = km;
    }
    fc_cow_recount(res);
    goto done;
error:
    Py_CLEAR(res);
done:
    Py_XDECREF(copymod);
    Py_XDECREF(deep);
    Py_XDECREF(t);
    Py_XDECREF(id);
    Py_XDECREF(key);
    Py_XDECREF(val);
    Py_XDECREF(k2);
    Py_XDECREF(v2);
    Py_XDECREF(own_memo);
    return (PyObject *)res;
}

static PyObject *
cowdict_deepcopy(PyObject *self, PyObject *memo)
{
    FcCowDict *cd = (FcCowDict *)self;
    if (cd->nmut == 0 && !cd->keys_mut && !cd->busy) {
        /* nothing to copy: the caller memoizes the result, as for any hook */
        return fc_cow_share(cd);
    }
    return fc_cow_deep_slow(cd, memo);
}

static PyObject *
cowdict_reduce(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    /* items come after the object exists, so a cowdict inside itself pickles
       like a dict inside itself */
    PyObject *it, *res;
    /* our own items iterator: a dict's would hand the table out */
    it = fc_cow_iter_new((FcCowDict *)self, FC_COW_ITEMS, 0);
    if (it == NULL) {
        return NULL;
    }
    res = Py_BuildValue("(O()OON)", (PyObject *)Py_TYPE(self), Py_None,
                        Py_None, it);
    return res;
}

static PyObject *
cowdict_sizeof(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    FcCowTable *t = (FcCowTable *)Py_NewRef(((FcCowDict *)self)->tab);
    PyObject *ts;
    Py_ssize_t share, n;
    /* this reference and the one of every other handle: a fair share */
    share = Py_REFCNT(t) - 1;
    ts = PyObject_CallMethod(t->dict, "__sizeof__", NULL);
    Py_DECREF(t);
    if (ts == NULL) {
        return NULL;
    }
    n = PyLong_AsSsize_t(ts);
    Py_DECREF(ts);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (share < 1) {
        share = 1;
    }
    return PyLong_FromSsize_t((Py_ssize_t)sizeof(FcCowDict)
                              + ((Py_ssize_t)sizeof(FcCowTable) + n) / share);
}

static PyObject *
cowdict_fromkeys(PyObject *cls, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *value, *tmp;
    FcCowDict *r;
    if (!fc_cow_nargs("fromkeys", nargs, 1, 2)) {
        return NULL;
    }
    value = nargs > 1 ? args[1] : Py_None;
    r = fc_cow_new_empty((PyTypeObject *)cls);
    if (r == NULL) {
        return NULL;
    }
    /* dict.fromkeys's own hashing: once per key, none for a dict or set */
    tmp = PyObject_CallMethod((PyObject *)&PyDict_Type, "fromkeys", "OO",
                              args[0], value);
    if (tmp == NULL || fc_cow_merge_dict(r, tmp) < 0) {
        Py_XDECREF(tmp);
        Py_DECREF(r);
        return NULL;
    }
    Py_DECREF(tmp);
    return (PyObject *)r;
}

#ifdef FC_DEBUG
/* White-box view for the tests: (table id, nmut, keys_mut, gen, busy,
   keys_odd); the id is the holder's. */
static PyObject *
cowdict_debug_state(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    FcCowDict *cd = (FcCowDict *)self;
    return Py_BuildValue("(NniIii)", PyLong_FromVoidPtr(cd->tab), cd->nmut,
                         (int)cd->keys_mut, (unsigned int)cd->gen, (int)cd->busy,
                         (int)cd->keys_odd);
}
#endif

PyDoc_STRVAR(cowdict_doc,
"A mapping that behaves like dict, whose copy(), copy.copy() and (for\n"
"immutable values) copy.deepcopy() cost O(1): copies share one table\n"
"until one of them is written to.\n"
"\n"
"Takes dict's constructor arguments: cowdict(), cowdict(mapping),\n"
"cowdict(iterable), cowdict(**kwargs) and a mapping or iterable with\n"
"keywords.  Not a dict subclass: a MutableMapping, and not subclassable.");

FC_COW_CS_FAST(cowdict_get)
FC_COW_CS_FAST(cowdict_setdefault)
FC_COW_CS_FAST(cowdict_pop)
FC_COW_CS_NOARGS(cowdict_popitem)
FC_COW_CS_NOARGS(cowdict_clear)
FC_COW_CS_WRAP(PyObject *, cowdict_update,
               (PyObject *self, PyObject *args, PyObject *kwds), (self, args, kwds), self)
FC_COW_CS_NOARGS(cowdict_keys)
FC_COW_CS_NOARGS(cowdict_values)
FC_COW_CS_NOARGS(cowdict_items)
FC_COW_CS_NOARGS(cowdict_reversed)
FC_COW_CS_NOARGS(cowdict_copy)
FC_COW_CS_O(cowdict_deepcopy)
FC_COW_CS_NOARGS(cowdict_reduce)
FC_COW_CS_NOARGS(cowdict_sizeof)
#ifdef FC_DEBUG
FC_COW_CS_NOARGS(cowdict_debug_state)
#endif
FC_COW_CS_WRAP(int, cowdict_tp_init, (PyObject *self, PyObject *args, PyObject *kwds),
               (self, args, kwds), self)
FC_COW_CS_UNARY(cowdict_tp_repr)
FC_COW_CS_UNARY(cowdict_tp_iter)
FC_COW_CS_WRAP(Py_ssize_t, cowdict_mp_length, (PyObject *self), (self), self)
FC_COW_CS_O(cowdict_mp_subscript)
FC_COW_CS_WRAP(int, cowdict_mp_ass_subscript, (PyObject *self, PyObject *k, PyObject *v),
               (self, k, v), self)
FC_COW_CS_WRAP(int, cowdict_sq_contains, (PyObject *self, PyObject *k), (self, k), self)
FC_COW_CS_O(cowdict_nb_inplace_or)

#if FC_FT
/* Two operands, either of which may be a handle: both handles locked. */
static PyObject *
cowdict_tp_richcompare_cs(PyObject *self, PyObject *other, int op)
{
    PyObject *r;
    PyObject *a = FC_COW_CHECK(self) ? self : other;
    PyObject *b = FC_COW_CHECK(other) ? other : a;
    Py_BEGIN_CRITICAL_SECTION2(a, b);
    r = cowdict_tp_richcompare(self, other, op);
    Py_END_CRITICAL_SECTION2();
    return r;
}

static PyObject *
cowdict_nb_or_cs(PyObject *x, PyObject *y)
{
    PyObject *r;
    PyObject *a = FC_COW_CHECK(x) ? x : y;
    PyObject *b = FC_COW_CHECK(y) ? y : a;
    Py_BEGIN_CRITICAL_SECTION2(a, b);
    r = cowdict_nb_or(x, y);
    Py_END_CRITICAL_SECTION2();
    return r;
}
#endif

static PyMethodDef cowdict_methods[] = {
    {"get", (PyCFunction)(void (*)(void))FC_COW_CS(cowdict_get), METH_FASTCALL,
     "Return the value for key if key is in the dictionary, else default."},
    {"setdefault", (PyCFunction)(void (*)(void))FC_COW_CS(cowdict_setdefault), METH_FASTCALL,
     "Insert key with a value of default if key is not in the dictionary.\n\n"
     "Return the value for key if key is in the dictionary, else default."},
    {"pop", (PyCFunction)(void (*)(void))FC_COW_CS(cowdict_pop), METH_FASTCALL,
     "D.pop(k[,d]) -> v, remove specified key and return the corresponding value."},
    {"popitem", FC_COW_CS(cowdict_popitem), METH_NOARGS,
     "Remove and return a (key, value) pair as a 2-tuple, in LIFO order."},
    {"clear", FC_COW_CS(cowdict_clear), METH_NOARGS, "D.clear() -> None.  Remove all items from D."},
    {"update", (PyCFunction)(void (*)(void))FC_COW_CS(cowdict_update),
     METH_VARARGS | METH_KEYWORDS,
     "D.update([E, ]**F) -> None.  Update D from dict/iterable E and F."},
    {"keys", FC_COW_CS(cowdict_keys), METH_NOARGS, "D.keys() -> a set-like view on D's keys"},
    {"values", FC_COW_CS(cowdict_values), METH_NOARGS, "D.values() -> a view on D's values"},
    {"items", FC_COW_CS(cowdict_items), METH_NOARGS, "D.items() -> a set-like view on D's items"},
    {"__reversed__", FC_COW_CS(cowdict_reversed), METH_NOARGS,
     "Return a reverse iterator over the dict keys."},
    {"copy", FC_COW_CS(cowdict_copy), METH_NOARGS,
     "D.copy() -> a shallow copy of D, in O(1): the table is shared until written."},
    {"__copy__", FC_COW_CS(cowdict_copy), METH_NOARGS, "copy.copy(D): same as D.copy()."},
    {"__deepcopy__", FC_COW_CS(cowdict_deepcopy), METH_O,
     "copy.deepcopy(D): O(1) when every key and value is immutable."},
    {"__reduce__", FC_COW_CS(cowdict_reduce), METH_NOARGS, "Return state information for pickling."},
    {"__sizeof__", FC_COW_CS(cowdict_sizeof), METH_NOARGS,
     "Size in memory, in bytes, counting a fair share of the shared table."},
    {"fromkeys", (PyCFunction)(void (*)(void))cowdict_fromkeys,
     METH_FASTCALL | METH_CLASS,
     "Create a new cowdict with keys from iterable and values set to value."},
    {"__class_getitem__", Py_GenericAlias, METH_O | METH_CLASS,
     "See PEP 585"},
#ifdef FC_DEBUG
    {"_debug_state", FC_COW_CS(cowdict_debug_state), METH_NOARGS, NULL},
#endif
    {NULL, NULL, 0, NULL},
};

static PyType_Slot cowdict_slots[] = {
    {Py_tp_doc, (void *)cowdict_doc},
    {Py_tp_new, cowdict_tp_new},
    {Py_tp_init, FC_COW_CS(cowdict_tp_init)},
    {Py_tp_dealloc, cowdict_tp_dealloc},
    {Py_tp_traverse, cowdict_tp_traverse},
    {Py_tp_clear, cowdict_tp_clear},
    {Py_tp_repr, FC_COW_CS(cowdict_tp_repr)},
    {Py_tp_hash, PyObject_HashNotImplemented},
    {Py_tp_richcompare, FC_COW_CS(cowdict_tp_richcompare)},
    {Py_tp_iter, FC_COW_CS(cowdict_tp_iter)},
    {Py_tp_methods, cowdict_methods},
    {Py_mp_length, FC_COW_CS(cowdict_mp_length)},
    {Py_mp_subscript, FC_COW_CS(cowdict_mp_subscript)},
    {Py_mp_ass_subscript, FC_COW_CS(cowdict_mp_ass_subscript)},
    {Py_sq_contains, FC_COW_CS(cowdict_sq_contains)},
    {Py_nb_or, FC_COW_CS(cowdict_nb_or)},
    {Py_nb_inplace_or, FC_COW_CS(cowdict_nb_inplace_or)},
    {0, NULL},
};

static PyType_Spec cowdict_spec = {
    "fastcopy.cowdict", sizeof(FcCowDict), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE
        | Py_TPFLAGS_MAPPING,
    cowdict_slots,
};

/* ------------------------------------------------------------------ */
/* Module exec                                                         */
/* ------------------------------------------------------------------ */

/* 0 | -1+exc: register cls with collections.abc.<abcname>. */
static int
fc_cow_register(PyObject *abc, const char *abcname, PyObject *cls)
{
    PyObject *base = PyObject_GetAttrString(abc, abcname), *r;
    if (base == NULL) {
        return -1;
    }
    r = PyObject_CallMethod(base, "register", "O", cls);
    Py_DECREF(base);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* 0 | -1+exc: create the cowdict types, store the type in st->cowdict_type,
   register it as a MutableMapping and add it to the module as `cowdict`. */
FC_INTERNAL int
fc_cowdict_exec(PyObject *module, FcState *st)
{
    static PyType_Spec *const specs[FC_COW_NTYPES] = {
        &cowkeys_spec, &cowvalues_spec, &cowitems_spec, &cowiter_spec,
        &cowreviter_spec, &cowtable_spec,
    };
    static const char *const abcs[3] = {"KeysView", "ValuesView", "ItemsView"};
    PyObject *types = NULL, *cd = NULL, *abc = NULL;
    int rc = -1;

    types = PyTuple_New(FC_COW_NTYPES);
    if (types == NULL) {
        goto done;
    }
    for (int i = 0; i < FC_COW_NTYPES; i++) {
        PyObject *tp = PyType_FromModuleAndSpec(module, specs[i], NULL);
        if (tp == NULL) {
            goto done;
        }
        PyTuple_SET_ITEM(types, i, tp);
    }
    cd = PyType_FromModuleAndSpec(module, &cowdict_spec, NULL);
    if (cd == NULL) {
        goto done;
    }
    /* the type is immutable from Python; its own dict holds the helpers */
    if (PyDict_SetItemString(((PyTypeObject *)cd)->tp_dict, FC_COW_TYPES_ATTR,
                             types) < 0) {
        goto done;
    }
    PyType_Modified((PyTypeObject *)cd);
    abc = PyImport_ImportModule("collections.abc");
    if (abc == NULL || fc_cow_register(abc, "MutableMapping", cd) < 0) {
        goto done;
    }
    for (int i = 0; i < 3; i++) {
        if (fc_cow_register(abc, abcs[i], PyTuple_GET_ITEM(types, i)) < 0) {
            goto done;
        }
    }
    if (PyModule_AddObjectRef(module, "cowdict", cd) < 0) {
        goto done;
    }
    Py_XSETREF(st->cowdict_type, Py_NewRef(cd));
    rc = 0;
done:
    Py_XDECREF(types);
    Py_XDECREF(cd);
    Py_XDECREF(abc);
    return rc;
}
