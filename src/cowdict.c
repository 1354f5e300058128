/*
 * cowdict.c: fastcopy.cowdict, a dict whose copies cost O(1).
 *
 * Data structure
 * --------------
 *     handle (FcCowDict)  --table-->  exact dict, shared  <--table--  handle
 *
 * A cowdict is a small handle pointing at a *table*, a real exact `dict`.
 * Handles made by copy() / copy.copy() / an all-immutable deepcopy() point at
 * the same table and bump its reference count; nothing else is copied.  The
 * table's reference count *is* the sharing count: a handle may write to its
 * table in place only when it is the table's unique owner
 * (fc_cow_unique()); otherwise the write first replaces the handle's table
 * by PyDict_Copy() of it (values shared by reference, as dict.copy() does).
 * So a shared table is never written to, and no write through one handle is
 * ever visible through another.
 *
 * Invariants
 *   I1  h->table is an exact dict, never NULL once the handle is published.
 *   I2  A table whose reference count is > 1 is not mutated, except by the
 *       handle that owns it while that handle is "busy" (I4).
 *   I3  h->nmut counts the values of h->table that deepcopy must copy
 *       (fc_cow_needs()); h->keys_mut is 1 if some key might.  Both describe
 *       the table, so handles sharing a table share the figures.  Every write
 *       keeps them exact; if Python code wrote to the same handle while a
 *       write was in progress (h->wseq moved), the write recounts.
 *   I4  h->busy > 0 while a write is mutating its (owned) table and Python
 *       code may run (a key's __eq__, a value's __del__).  A busy handle's
 *       table is semantically its own: nested writes go in place, and
 *       copy()/deepcopy() of a busy handle take a real copy instead of
 *       sharing, so a half-done write can never leak into another handle.
 *   I5  h->gen changes whenever h->table is replaced; iterators use it to
 *       find their place again in the new table (same content, same order).
 *
 * Anything that uses a table across a call that can run Python code holds a
 * strong reference to it.  A handle's own write during such a call then
 * sees a shared table and copies it away: the table being read stays valid
 * and unchanged.
 *
 * Views and iterators point at the *handle*, never at a table, and read
 * h->table on every step: they see their own handle's writes exactly as a
 * dict's views do, and never another handle's.  Forward iterators walk the
 * table with PyDict_Next() and a saved position, holding no reference to it
 * (so they do not force copies), and raise "dictionary changed size during
 * iteration" as dict does.  Reversed iterators wrap the table's own reversed
 * iterator and rebuild it at the same ordinal position when the table is
 * replaced.  Set operations and comparisons of views are delegated to the
 * real view of the current table.
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

/* module.c calls fc_cowdict_exec() when this part is compiled in */
#define FC_HAVE_COWDICT 1

#if PY_VERSION_HEX >= 0x030E0000
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

/* ------------------------------------------------------------------ */
/* Objects                                                             */
/* ------------------------------------------------------------------ */

enum { FC_COW_KEYS = 0, FC_COW_VALUES, FC_COW_ITEMS, FC_COW_ITER,
       FC_COW_REVITER, FC_COW_NTYPES };

typedef struct {
    PyObject_HEAD
    PyObject *table;      /* exact dict, shared between handles (I1, I2) */
    PyObject *types;      /* tuple of the helper types, FC_COW_* order */
    Py_ssize_t nmut;      /* values deepcopy must copy (I3) */
    uint32_t gen;         /* bumped when table is replaced (I5) */
    uint32_t wseq;        /* bumped by every write */
    int32_t busy;         /* writes in progress that may run Python (I4) */
    int32_t keys_mut;     /* some key may need copying (I3) */
} FcCowDict;

typedef struct {
    PyObject_HEAD
    FcCowDict *cd;
    int kind;
} FcCowView;

typedef struct {
    PyObject_HEAD
    FcCowDict *cd;        /* NULL once exhausted */
    PyObject *inner;      /* reversed: the table's reversed iterator */
    Py_ssize_t pos;       /* forward: PyDict_Next position */
    Py_ssize_t used;      /* size when created; -1 after a size error */
    Py_ssize_t count;     /* items returned so far */
    uint32_t gen;         /* cd->gen that pos / inner belong to */
    int kind;
} FcCowIter;

static void cowdict_tp_dealloc(PyObject *self);
static void cowview_tp_dealloc(PyObject *self);

#define FC_COW_CHECK(o) (Py_TYPE(o)->tp_dealloc == cowdict_tp_dealloc)
#define FC_COWVIEW_CHECK(o) (Py_TYPE(o)->tp_dealloc == cowview_tp_dealloc)
#define FC_COW_TYPE(cd, i) ((PyTypeObject *)PyTuple_GET_ITEM((cd)->types, (i)))

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

/* Recount I3 over the whole table. */
static void
fc_cow_recount(FcCowDict *self)
{
    Py_ssize_t pos = 0, n = 0;
    int km = 0;
    PyObject *k, *v;
    while (PyDict_Next(self->table, &pos, &k, &v)) {
        n += fc_cow_needs(v);
        if (!km) {
            km = fc_cow_needs(k);
        }
    }
    self->nmut = n;
    self->keys_mut = km;
}

/* ------------------------------------------------------------------ */
/* Ownership and the write primitives                                  */
/* ------------------------------------------------------------------ */

/* 0 | -1+exc: make self the unique owner of its table (copy if shared). */
static int
fc_cow_own(FcCowDict *self)
{
    while (!self->busy && !FC_COW_UNIQUE(self->table)) {
        PyObject *t = Py_NewRef(self->table);
        PyObject *n = PyDict_Copy(t);
        if (n == NULL) {
            Py_DECREF(t);
            return -1;
        }
        /* The copy may have run a finalizer that replaced the table. */
        if (self->table == t) {
            self->table = n;
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

static void
fc_cow_set_keyerror(PyObject *key)
{
    PyObject *tup = PyTuple_Pack(1, key);
    if (tup != NULL) {
        PyErr_SetObject(PyExc_KeyError, tup);
        Py_DECREF(tup);
    }
}

/* 0 | -1+exc: self[key] = value. */
static int
fc_cow_store(FcCowDict *self, PyObject *key, PyObject *value)
{
    uint32_t seq = ++self->wseq;
    int nv = fc_cow_needs(value), rc;
    PyObject *old = NULL, *t;

    if (!self->busy && !FC_COW_UNIQUE(self->table)) {
        /* an unhashable key must fail before we pay for a copy */
        if (PyObject_Hash(key) == -1) {
            return -1;
        }
    }
    if (self->nmut > 0 || nv) {
        if (fc_dict_getref(self->table, key, &old) < 0) {
            return -1;
        }
    }
    if (fc_cow_own(self) < 0) {
        Py_XDECREF(old);
        return -1;
    }
    t = Py_NewRef(self->table);
    self->busy++;
    rc = PyDict_SetItem(t, key, value);
    self->busy--;
    Py_DECREF(t);
    if (rc == 0) {
        self->nmut += nv - (old != NULL ? fc_cow_needs(old) : 0);
        if (!self->keys_mut) {
            self->keys_mut = fc_cow_needs(key);
        }
    }
    if (self->wseq != seq) {
        fc_cow_recount(self);
    }
    Py_XDECREF(old);
    return rc;
}

/* new ref (the removed value) | NULL+exc: pop key.  A missing key returns
   dflt (new ref) if dflt is not NULL, else raises KeyError. */
static PyObject *
fc_cow_pop(FcCowDict *self, PyObject *key, PyObject *dflt)
{
    uint32_t seq = ++self->wseq;
    PyObject *old = NULL, *t;
    int r, rc;

    t = Py_NewRef(self->table);
    r = fc_dict_getref(t, key, &old);
    Py_DECREF(t);
    if (r < 0) {
        return NULL;
    }
    if (r == 0) {
        if (dflt != NULL) {
            return Py_NewRef(dflt);
        }
        fc_cow_set_keyerror(key);
        return NULL;
    }
    if (fc_cow_own(self) < 0) {
        Py_DECREF(old);
        return NULL;
    }
    t = Py_NewRef(self->table);
    self->busy++;
    rc = PyDict_DelItem(t, key);
    self->busy--;
    Py_DECREF(t);
    if (rc < 0) {
        Py_DECREF(old);
        return NULL;
    }
    self->nmut -= fc_cow_needs(old);
    if (self->wseq != seq) {
        fc_cow_recount(self);
    }
    return old;
}

/* 0 | -1+exc: empty self. */
static int
fc_cow_clear(FcCowDict *self)
{
    uint32_t seq = ++self->wseq;
    if (PyDict_GET_SIZE(self->table) == 0) {
        return 0;
    }
    if (self->busy || FC_COW_UNIQUE(self->table)) {
        PyObject *t = Py_NewRef(self->table);
        self->busy++;
        PyDict_Clear(t);
        self->busy--;
        Py_DECREF(t);
    }
    else {
        PyObject *n = PyDict_New();
        if (n == NULL) {
            return -1;
        }
        Py_SETREF(self->table, n);
        self->gen++;
    }
    self->nmut = 0;
    self->keys_mut = 0;
    if (self->wseq != seq) {
        fc_cow_recount(self);
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Handles                                                             */
/* ------------------------------------------------------------------ */

/* new ref | NULL+exc: a handle of type tp over table (stolen). */
static FcCowDict *
fc_cow_alloc(PyTypeObject *tp, PyObject *types, PyObject *table)
{
    FcCowDict *r;
    if (table == NULL) {
        return NULL;
    }
    r = (FcCowDict *)tp->tp_alloc(tp, 0);
    if (r == NULL) {
        Py_DECREF(table);
        return NULL;
    }
    r->table = table;
    r->types = Py_NewRef(types);
    return r;
}

/* new ref | NULL+exc: a handle equal to self, sharing its table. */
static PyObject *
fc_cow_share(FcCowDict *self)
{
    FcCowDict *r;
    if (self->busy) {
        /* I4: a write is half done; the copy must not share its table. */
        r = fc_cow_alloc(Py_TYPE(self), self->types, PyDict_Copy(self->table));
        if (r != NULL) {
            fc_cow_recount(r);
        }
        return (PyObject *)r;
    }
    r = fc_cow_alloc(Py_TYPE(self), self->types, Py_NewRef(self->table));
    if (r != NULL) {
        r->nmut = self->nmut;
        r->keys_mut = self->keys_mut;
    }
    return (PyObject *)r;
}

/* 0 | -1+exc: self.update(src) for an exact dict src. */
static int
fc_cow_merge_dict(FcCowDict *self, PyObject *src)
{
    Py_ssize_t n = PyDict_GET_SIZE(src), pos = 0;
    PyObject *k, *v;
    int rc = 0;

    if (n == 0 || src == self->table) {
        return 0;
    }
    Py_INCREF(src);
    if (PyDict_GET_SIZE(self->table) == 0) {
        /* Empty target: dict_merge clones the keys wholesale. */
        uint32_t seq = ++self->wseq;
        if (fc_cow_own(self) == 0) {
            PyObject *t = Py_NewRef(self->table);
            self->busy++;
            rc = PyDict_Update(t, src);
            self->busy--;
            Py_DECREF(t);
        }
        else {
            rc = -1;
        }
        (void)seq;
        fc_cow_recount(self);
        Py_DECREF(src);
        return rc;
    }
    while (PyDict_Next(src, &pos, &k, &v)) {
        Py_INCREF(k);
        Py_INCREF(v);
        rc = fc_cow_store(self, k, v);
        Py_DECREF(k);
        Py_DECREF(v);
        if (rc < 0) {
            break;
        }
        if (PyDict_GET_SIZE(src) != n) {
            PyErr_SetString(PyExc_RuntimeError, "dict mutated during update");
            rc = -1;
            break;
        }
    }
    Py_DECREF(src);
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
        if (o == self) {
            return 0;
        }
        if (PyDict_GET_SIZE(self->table) == 0 && PyDict_GET_SIZE(o->table) > 0
            && !self->busy && !o->busy) {
            /* Adopt the other table: cowdict(other) is O(1). */
            self->wseq++;
            Py_SETREF(self->table, Py_NewRef(o->table));
            self->gen++;
            self->nmut = o->nmut;
            self->keys_mut = o->keys_mut;
            return 0;
        }
        return fc_cow_merge_dict(self, o->table);
    }
    if (PyDict_CheckExact(arg)) {
        return fc_cow_merge_dict(self, arg);
    }
    /* Let dict.update itself parse mappings and pair sequences (its error
       messages, its keys()/__getitem__ rules), then apply what it accepted:
       like dict.update, a failure keeps the items before it. */
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
    it->inner = NULL;
    it->pos = 0;
    it->used = PyDict_GET_SIZE(cd->table);
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
    Py_XDECREF(it->inner);
    PyObject_GC_Del(self);
    Py_DECREF(tp);
}

static int
cowiter_tp_traverse(PyObject *self, visitproc visit, void *arg)
{
    FcCowIter *it = (FcCowIter *)self;
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(it->cd);
    Py_VISIT(it->inner);
    return 0;
}

static void
fc_cow_iter_done(FcCowIter *it)
{
    Py_CLEAR(it->cd);
    Py_CLEAR(it->inner);
}

/* 1 ok | 0+exc: dict's "changed size" check, sticky like dict's. */
static int
fc_cow_iter_check(FcCowIter *it)
{
    if (it->used != PyDict_GET_SIZE(it->cd->table)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "dictionary changed size during iteration");
        it->used = -1;
        return 0;
    }
    return 1;
}

/* new ref | NULL (+exc, or exhausted) */
static PyObject *
cowiter_tp_iternext(PyObject *self)
{
    FcCowIter *it = (FcCowIter *)self;
    FcCowDict *cd = it->cd;
    PyObject *t, *k, *v;

    if (cd == NULL || !fc_cow_iter_check(it)) {
        return NULL;
    }
    t = cd->table;
    if (it->gen != cd->gen) {
        /* I5: same items in the same order; find our place again. */
        it->pos = 0;
        for (Py_ssize_t i = 0; i < it->count; i++) {
            if (!PyDict_Next(t, &it->pos, NULL, NULL)) {
                break;
            }
        }
        it->gen = cd->gen;
    }
    if (!PyDict_Next(t, &it->pos, &k, &v)) {
        fc_cow_iter_done(it);
        return NULL;
    }
    if (it->count >= it->used) {
        PyErr_SetString(PyExc_RuntimeError,
                        "dictionary keys changed during iteration");
        fc_cow_iter_done(it);
        return NULL;
    }
    it->count++;
    switch (it->kind) {
    case FC_COW_KEYS:
        return Py_NewRef(k);
    case FC_COW_VALUES:
        return Py_NewRef(v);
    default:
        return PyTuple_Pack(2, k, v);
    }
}

/* new ref | NULL (+exc, or exhausted) */
static PyObject *
cowreviter_tp_iternext(PyObject *self)
{
    FcCowIter *it = (FcCowIter *)self;
    FcCowDict *cd = it->cd;
    PyObject *item;

    if (cd == NULL || !fc_cow_iter_check(it)) {
        return NULL;
    }
    if (it->inner == NULL || it->gen != cd->gen) {
        PyObject *src, *inner;
        if (it->kind == FC_COW_KEYS) {
            src = Py_NewRef(cd->table);
        }
        else {
            src = PyObject_CallMethod(
                cd->table, it->kind == FC_COW_VALUES ? "values" : "items", NULL);
            if (src == NULL) {
                return NULL;
            }
        }
        inner = PyObject_CallMethod(src, "__reversed__", NULL);
        Py_DECREF(src);
        if (inner == NULL) {
            return NULL;
        }
        for (Py_ssize_t i = 0; i < it->count; i++) {
            PyObject *skip = PyIter_Next(inner);
            if (skip == NULL) {
                break;
            }
            Py_DECREF(skip);
        }
        Py_XSETREF(it->inner, inner);
        it->gen = cd->gen;
    }
    item = PyIter_Next(it->inner);
    if (item == NULL) {
        if (!PyErr_Occurred()) {
            fc_cow_iter_done(it);
        }
        return NULL;
    }
    it->count++;
    return item;
}

static PyObject *
cowiter_length_hint(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    FcCowIter *it = (FcCowIter *)self;
    Py_ssize_t n = 0;
    if (it->cd != NULL && it->used == PyDict_GET_SIZE(it->cd->table)) {
        n = it->used - it->count;
    }
    return PyLong_FromSsize_t(n < 0 ? 0 : n);
}

static PyMethodDef cowiter_methods[] = {
    {"__length_hint__", cowiter_length_hint, METH_NOARGS,
     "Private method returning an estimate of len(list(it))."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot cowiter_slots[] = {
    {Py_tp_dealloc, cowiter_tp_dealloc},
    {Py_tp_traverse, cowiter_tp_traverse},
    {Py_tp_iter, PyObject_SelfIter},
    {Py_tp_iternext, cowiter_tp_iternext},
    {Py_tp_methods, cowiter_methods},
    {0, NULL},
};

static PyType_Slot cowreviter_slots[] = {
    {Py_tp_dealloc, cowiter_tp_dealloc},
    {Py_tp_traverse, cowiter_tp_traverse},
    {Py_tp_iter, PyObject_SelfIter},
    {Py_tp_iternext, cowreviter_tp_iternext},
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
   one of our views, else o itself. */
static PyObject *
fc_cow_view_real(PyObject *o)
{
    if (FC_COWVIEW_CHECK(o)) {
        FcCowView *v = (FcCowView *)o;
        return PyObject_CallMethod(v->cd->table, fc_cow_view_meth[v->kind], NULL);
    }
    return Py_NewRef(o);
}

static Py_ssize_t
cowview_sq_length(PyObject *self)
{
    return PyDict_GET_SIZE(((FcCowView *)self)->cd->table);
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
    PyObject *t = Py_NewRef(v->cd->table), *found = NULL;
    int r;

    if (v->kind == FC_COW_KEYS) {
        r = PyDict_Contains(t, x);
    }
    else if (v->kind == FC_COW_ITEMS) {
        /* dictitems_contains: only 2-tuples can be items */
        if (!PyTuple_Check(x) || PyTuple_GET_SIZE(x) != 2) {
            r = 0;
        }
        else {
            r = fc_dict_getref(t, PyTuple_GET_ITEM(x, 0), &found);
            if (r > 0) {
                r = PyObject_RichCompareBool(found, PyTuple_GET_ITEM(x, 1), Py_EQ);
            }
        }
    }
    else {
        PyObject *real = PyObject_CallMethod(t, "values", NULL);
        r = real == NULL ? -1 : PySequence_Contains(real, x);
        Py_XDECREF(real);
    }
    Py_XDECREF(found);
    Py_DECREF(t);
    return r;
}

static PyObject *
fc_cow_view_binop(PyObject *a, PyObject *b, binaryfunc op)
{
    PyObject *ra = NULL, *rb = NULL, *res = NULL;
    ra = fc_cow_view_real(a);
    if (ra == NULL) {
        goto done;
    }
    rb = fc_cow_view_real(b);
    if (rb == NULL) {
        goto done;
    }
    res = op(ra, rb);
done:
    Py_XDECREF(ra);
    Py_XDECREF(rb);
    return res;
}

static PyObject *cowview_nb_and(PyObject *a, PyObject *b)
{ return fc_cow_view_binop(a, b, PyNumber_And); }
static PyObject *cowview_nb_or(PyObject *a, PyObject *b)
{ return fc_cow_view_binop(a, b, PyNumber_Or); }
static PyObject *cowview_nb_xor(PyObject *a, PyObject *b)
{ return fc_cow_view_binop(a, b, PyNumber_Xor); }
static PyObject *cowview_nb_sub(PyObject *a, PyObject *b)
{ return fc_cow_view_binop(a, b, PyNumber_Subtract); }

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
    res = PyObject_RichCompare(ra, rb, op);
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

static PyGetSetDef cowview_getset[] = {
    {"mapping", cowview_mapping, NULL,
     "a read-only proxy of the cowdict the view refers to", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef cowview_set_methods[] = {
    {"isdisjoint", cowview_isdisjoint, METH_O,
     "Return True if the view and the given iterable have a null intersection."},
    {"__reversed__", cowview_reversed, METH_NOARGS,
     "Return a reverse iterator over the view."},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef cowview_values_methods[] = {
    {"__reversed__", cowview_reversed, METH_NOARGS,
     "Return a reverse iterator over the view."},
    {NULL, NULL, 0, NULL},
};

#define FC_COW_VIEW_COMMON_SLOTS                     \
    {Py_tp_dealloc, cowview_tp_dealloc},             \
    {Py_tp_traverse, cowview_tp_traverse},           \
    {Py_tp_iter, cowview_tp_iter},                   \
    {Py_tp_repr, cowview_tp_repr},                   \
    {Py_tp_getset, cowview_getset},                  \
    {Py_sq_length, cowview_sq_length},               \
    {Py_sq_contains, cowview_sq_contains}

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
    return fc_cow_alloc(tp, types, PyDict_New());
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
    Py_XDECREF(cd->table);
    Py_XDECREF(cd->types);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static int
cowdict_tp_traverse(PyObject *self, visitproc visit, void *arg)
{
    FcCowDict *cd = (FcCowDict *)self;
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(cd->table);
    Py_VISIT(cd->types);
    return 0;
}

/* Break cycles through the contents.  A shared table is left alone: the
   collector clears it directly if it is garbage too, and I1 keeps every
   handle usable afterwards. */
static int
cowdict_tp_clear(PyObject *self)
{
    FcCowDict *cd = (FcCowDict *)self;
    if (cd->table != NULL && !cd->busy && FC_COW_UNIQUE(cd->table)) {
        cd->wseq++;
        PyDict_Clear(cd->table);
        cd->nmut = 0;
        cd->keys_mut = 0;
    }
    return 0;
}

static Py_ssize_t
cowdict_mp_length(PyObject *self)
{
    return PyDict_GET_SIZE(((FcCowDict *)self)->table);
}

static PyObject *
cowdict_mp_subscript(PyObject *self, PyObject *key)
{
    PyObject *t = Py_NewRef(((FcCowDict *)self)->table), *v = NULL;
    int r = fc_dict_getref(t, key, &v);
    Py_DECREF(t);
    if (r == 0) {
        fc_cow_set_keyerror(key);
    }
    return v;
}

static int
cowdict_mp_ass_subscript(PyObject *self, PyObject *key, PyObject *value)
{
    PyObject *old;
    if (value != NULL) {
        return fc_cow_store((FcCowDict *)self, key, value);
    }
    old = fc_cow_pop((FcCowDict *)self, key, NULL);
    if (old == NULL) {
        return -1;
    }
    Py_DECREF(old);
    return 0;
}

static int
cowdict_sq_contains(PyObject *self, PyObject *key)
{
    PyObject *t = Py_NewRef(((FcCowDict *)self)->table);
    int r = PyDict_Contains(t, key);
    Py_DECREF(t);
    return r;
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
    PyObject *t = Py_NewRef(cd->table);
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
        b = ((FcCowDict *)other)->table;
    }
    else if (PyDict_Check(other)) {
        b = other;
    }
    else {
        Py_RETURN_NOTIMPLEMENTED;
    }
    a = ((FcCowDict *)self)->table;
    if (a == b) {
        /* dict_equal of a table with itself compares each value with itself
           through PyObject_RichCompareBool, which is True by identity */
        return PyBool_FromLong(op == Py_EQ);
    }
    Py_INCREF(a);
    Py_INCREF(b);
    res = PyObject_RichCompare(a, b, op);
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
    PyObject *t, *v = NULL;
    int r;
    if (!fc_cow_nargs("get", nargs, 1, 2)) {
        return NULL;
    }
    t = Py_NewRef(((FcCowDict *)self)->table);
    r = fc_dict_getref(t, args[0], &v);
    Py_DECREF(t);
    if (r == 0) {
        v = Py_NewRef(nargs > 1 ? args[1] : Py_None);
    }
    return v;
}

static PyObject *
cowdict_setdefault(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    FcCowDict *cd = (FcCowDict *)self;
    PyObject *t, *v = NULL, *dflt;
    int r;
    if (!fc_cow_nargs("setdefault", nargs, 1, 2)) {
        return NULL;
    }
    dflt = nargs > 1 ? args[1] : Py_None;
    t = Py_NewRef(cd->table);
    r = fc_dict_getref(t, args[0], &v);
    Py_DECREF(t);
    if (r != 0) {
        return v;
    }
    if (fc_cow_store(cd, args[0], dflt) < 0) {
        return NULL;
    }
    return Py_NewRef(dflt);
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
    if (PyDict_GET_SIZE(cd->table) == 0) {
        PyErr_SetString(PyExc_KeyError, "popitem(): dictionary is empty");
        return NULL;
    }
    if (fc_cow_own(cd) < 0) {
        return NULL;
    }
    t = Py_NewRef(cd->table);
    cd->busy++;
    res = PyObject_CallMethod(t, "popitem", NULL);
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
    PyObject *copymod = NULL, *deep = NULL, *t = NULL, *id = NULL;
    PyObject *key = NULL, *val = NULL, *k2 = NULL, *v2 = NULL;
    PyObject *own_memo = NULL, *k, *v;
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
    t = Py_NewRef(self->table);
    res = fc_cow_alloc(Py_TYPE(self), self->types,
                       rebuild ? PyDict_New() : PyDict_Copy(t));
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
    used = PyDict_GET_SIZE(t);
    while (PyDict_Next(t, &pos, &k, &v)) {
        int nk = fc_cow_needs(k), nv = fc_cow_needs(v);
        nmut += nv;
        km |= nk;
        if (!rebuild && !nv) {
            continue;
        }
        key = Py_NewRef(k);
        val = Py_NewRef(v);
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
        if (PyDict_GET_SIZE(t) != used) {
            PyErr_SetString(PyExc_RuntimeError,
                            "dictionary changed size during iteration");
            goto error;
        }
    }
    if (self->wseq == seq && self->table == t) {
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
    PyObject *items, *it, *res;
    items = PyObject_CallMethod(((FcCowDict *)self)->table, "items", NULL);
    if (items == NULL) {
        return NULL;
    }
    it = PyObject_GetIter(items);
    Py_DECREF(items);
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
    PyObject *t = Py_NewRef(((FcCowDict *)self)->table), *ts;
    Py_ssize_t share, n;
    /* this reference and the one of every other handle: a fair share */
    share = Py_REFCNT(t) - 1;
    ts = PyObject_CallMethod(t, "__sizeof__", NULL);
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
    return PyLong_FromSsize_t((Py_ssize_t)sizeof(FcCowDict) + n / share);
}

static PyObject *
cowdict_fromkeys(PyObject *cls, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *value, *it = NULL, *key;
    FcCowDict *r;
    if (!fc_cow_nargs("fromkeys", nargs, 1, 2)) {
        return NULL;
    }
    value = nargs > 1 ? args[1] : Py_None;
    r = fc_cow_new_empty((PyTypeObject *)cls);
    if (r == NULL) {
        return NULL;
    }
    it = PyObject_GetIter(args[0]);
    if (it == NULL) {
        goto error;
    }
    while ((key = PyIter_Next(it)) != NULL) {
        int rc = fc_cow_store(r, key, value);
        Py_DECREF(key);
        if (rc < 0) {
            goto error;
        }
    }
    if (PyErr_Occurred()) {
        goto error;
    }
    Py_DECREF(it);
    return (PyObject *)r;
error:
    Py_XDECREF(it);
    Py_DECREF(r);
    return NULL;
}

#ifdef FC_DEBUG
/* White-box view for the tests: (table id, nmut, keys_mut, gen, busy). */
static PyObject *
cowdict_debug_state(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    FcCowDict *cd = (FcCowDict *)self;
    return Py_BuildValue("(NniIi)", PyLong_FromVoidPtr(cd->table), cd->nmut,
                         (int)cd->keys_mut, (unsigned int)cd->gen, (int)cd->busy);
}
#endif

PyDoc_STRVAR(cowdict_doc,
"cowdict() -> new empty copy-on-write dict\n"
"cowdict(mapping) / cowdict(iterable) / cowdict(**kwargs)\n"
"\n"
"A mapping that behaves like dict, whose copy(), copy.copy() and (for\n"
"immutable values) copy.deepcopy() cost O(1): copies share one table\n"
"until one of them is written to.");

static PyMethodDef cowdict_methods[] = {
    {"get", (PyCFunction)(void (*)(void))cowdict_get, METH_FASTCALL,
     "Return the value for key if key is in the dictionary, else default."},
    {"setdefault", (PyCFunction)(void (*)(void))cowdict_setdefault, METH_FASTCALL,
     "Insert key with a value of default if key is not in the dictionary.\n\n"
     "Return the value for key if key is in the dictionary, else default."},
    {"pop", (PyCFunction)(void (*)(void))cowdict_pop, METH_FASTCALL,
     "D.pop(k[,d]) -> v, remove specified key and return the corresponding value."},
    {"popitem", cowdict_popitem, METH_NOARGS,
     "Remove and return a (key, value) pair as a 2-tuple, in LIFO order."},
    {"clear", cowdict_clear, METH_NOARGS, "D.clear() -> None.  Remove all items from D."},
    {"update", (PyCFunction)(void (*)(void))cowdict_update,
     METH_VARARGS | METH_KEYWORDS,
     "D.update([E, ]**F) -> None.  Update D from dict/iterable E and F."},
    {"keys", cowdict_keys, METH_NOARGS, "D.keys() -> a set-like view on D's keys"},
    {"values", cowdict_values, METH_NOARGS, "D.values() -> a view on D's values"},
    {"items", cowdict_items, METH_NOARGS, "D.items() -> a set-like view on D's items"},
    {"__reversed__", cowdict_reversed, METH_NOARGS,
     "Return a reverse iterator over the dict keys."},
    {"copy", cowdict_copy, METH_NOARGS,
     "D.copy() -> a shallow copy of D, in O(1): the table is shared until written."},
    {"__copy__", cowdict_copy, METH_NOARGS, "copy.copy(D): same as D.copy()."},
    {"__deepcopy__", cowdict_deepcopy, METH_O,
     "copy.deepcopy(D): O(1) when every key and value is immutable."},
    {"__reduce__", cowdict_reduce, METH_NOARGS, "Return state information for pickling."},
    {"__sizeof__", cowdict_sizeof, METH_NOARGS,
     "Size in memory, in bytes, counting a fair share of the shared table."},
    {"fromkeys", (PyCFunction)(void (*)(void))cowdict_fromkeys,
     METH_FASTCALL | METH_CLASS,
     "Create a new cowdict with keys from iterable and values set to value."},
    {"__class_getitem__", Py_GenericAlias, METH_O | METH_CLASS,
     "See PEP 585"},
#ifdef FC_DEBUG
    {"_debug_state", cowdict_debug_state, METH_NOARGS, NULL},
#endif
    {NULL, NULL, 0, NULL},
};

static PyType_Slot cowdict_slots[] = {
    {Py_tp_doc, (void *)cowdict_doc},
    {Py_tp_new, cowdict_tp_new},
    {Py_tp_init, cowdict_tp_init},
    {Py_tp_dealloc, cowdict_tp_dealloc},
    {Py_tp_traverse, cowdict_tp_traverse},
    {Py_tp_clear, cowdict_tp_clear},
    {Py_tp_repr, cowdict_tp_repr},
    {Py_tp_hash, PyObject_HashNotImplemented},
    {Py_tp_richcompare, cowdict_tp_richcompare},
    {Py_tp_iter, cowdict_tp_iter},
    {Py_tp_methods, cowdict_methods},
    {Py_mp_length, cowdict_mp_length},
    {Py_mp_subscript, cowdict_mp_subscript},
    {Py_mp_ass_subscript, cowdict_mp_ass_subscript},
    {Py_sq_contains, cowdict_sq_contains},
    {Py_nb_or, cowdict_nb_or},
    {Py_nb_inplace_or, cowdict_nb_inplace_or},
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
static int
fc_cowdict_exec(PyObject *module, FcState *st)
{
    static PyType_Spec *const specs[FC_COW_NTYPES] = {
        &cowkeys_spec, &cowvalues_spec, &cowitems_spec, &cowiter_spec,
        &cowreviter_spec,
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
