/*
 * plan.c: per-type plans, and keeping the stdlib's dispatch tables in view.
 *
 * For an instance of a user class the stdlib walks a long road: a lookup in
 * copy._deepcopy_dispatch, getattr(x, "__deepcopy__"), copyreg.dispatch_table,
 * getattr(x, "__reduce_ex__"), object.__reduce_ex__(4) (which looks up
 * __reduce__, __getnewargs_ex__, __getnewargs__, __getstate__, __slotnames__),
 * then _reconstruct (copyreg.__newobj__ -> cls.__new__, hasattr(y,
 * "__setstate__"), y.__dict__.update(state), setattr per slot).  For a class
 * that overrides none of those hooks every answer is known in advance, and
 * depends only on the class, its metaclass and the two dispatch tables.
 *
 * A plan records those answers for one type.  It stays valid while
 *   - the type's method-cache version tag is unchanged (CPython resets it on
 *     any assignment to the class or to a base class),
 *   - the metaclass is the same object with the same tag,
 *   - FcState.gen is unchanged: it moves whenever the copy module's globals,
 *     copy._deepcopy_dispatch, copy._copy_dispatch or copyreg.dispatch_table
 *     change (dict watchers on 3.12+, ma_version_tag before).
 * Anything else a plan does not know is checked per object (the instance
 * dict may shadow __deepcopy__, __reduce_ex__ or __getstate__).  A type that
 * cannot get a version tag is never cached and takes the generic road.
 * Plans only decide between shortcuts and the faithful generic algorithm;
 * when in doubt a plan says FP_GENERIC.
 */
#include "fastcopy.h"
#include "plan.h"
#include "buffers.h"
#include "state.h"
#include "hooks.h"
#include "watch.h"
#include "structmember.h"

/* 3.12 renamed structmember.h's constants */
#ifdef Py_T_OBJECT_EX
#  define FC_T_OBJECT_EX Py_T_OBJECT_EX
#  define FC_READONLY Py_READONLY
#else
#  define FC_T_OBJECT_EX T_OBJECT_EX
#  define FC_READONLY READONLY
#endif

/* ------------------------------------------------------------------ */
/* Watching the stdlib's tables                                        */
/* ------------------------------------------------------------------ */

#if FC_PY312_PLUS
/* Watcher callbacks get no context: one counter for the process.  It only
   ever grows; every module instance compares it with its own copy. */
static uint64_t fc_watch_counter = 1;

static int
fc_watch_cb(PyDict_WatchEvent event, PyObject *dict, PyObject *key,
            PyObject *new_value)
{
#if FC_FT
    /* two threads writing watched dicts at once must both be counted */
    _Py_atomic_add_uint64(&fc_watch_counter, 1);
#else
    fc_watch_counter++;
#endif
    return 0;
}
#endif

#if FC_COPY_SETS_MUTABLE
/* 3.14's copy-module sets can be changed in place, and nothing tells: each
   sync compares them with what fc_refresh read (FcSetSnap).  A small
   table (_atomic_types: 32 slots) is compared whole: the same slots are
   the same members.  In a bigger one, the same size with every member read
   then still at its place in the table is the same set (as many members,
   all of them the old ones); a change anywhere else in the table is a
   change of size.  No hashing, no user code.  1 moved | 0 same */
static int
fc_set_moved(const FcSetSnap *sn)
{
    PyObject *o = sn->set;
    if (sn->n < 0 || o == NULL || !PyAnySet_CheckExact(o)) {
        return 1;
    }
    int moved = 0;
    FC_CS_BEGIN(o);
    PySetObject *so = (PySetObject *)o;
    if (so->used != sn->used || so->mask != sn->mask) {
        moved = 1;
    }
    else if (sn->whole) {
        moved = memcmp(so->table, sn->u.tab, (size_t)(so->mask + 1) * sizeof(setentry)) != 0;
    }
    else {
        for (Py_ssize_t i = 0; i < sn->n; i++) {
            if (so->table[sn->u.m.idx[i]].key != sn->u.m.key[i]) {
                moved = 1;
                break;
            }
        }
    }
    FC_CS_END();
    return moved;
}

/* which=FC_SYNC_ALL: the three; FC_SYNC_DEEP: _atomic_types only;
   FC_SYNC_DICTS: none */
FC_INTERNAL_INLINE int
fc_sets_moved(FcState *st, int which)
{
    return which != FC_SYNC_DICTS
           && (fc_set_moved(&st->snap[2])
               || (which == FC_SYNC_ALL
                   && (fc_set_moved(&st->snap[0]) || fc_set_moved(&st->snap[1]))));
}

/* Read one set's members and places (n -1 when it is not an exact set or
   too big to keep, so that every sync refreshes). */
static void
fc_set_snap(FcSetSnap *sn, PyObject *o)
{
    sn->set = o;
    sn->n = -1;
    if (o == NULL || !PyAnySet_CheckExact(o)) {
        return;
    }
    FC_CS_BEGIN(o);
    PySetObject *so = (PySetObject *)o;
    if (so->mask < FC_SET_SNAP_MAX) {
        memcpy(sn->u.tab, so->table, (size_t)(so->mask + 1) * sizeof(setentry));
        sn->whole = 1;
        sn->used = so->used;
        sn->mask = so->mask;
        sn->n = so->used;
    }
    else if (so->used <= FC_SET_SNAP_MAX) {
        Py_ssize_t n = 0;
        for (Py_ssize_t i = 0; i <= so->mask; i++) {
            PyObject *k = so->table[i].key;
            if (k != NULL && so->table[i].hash != -1) {
                sn->u.m.idx[n] = i;
                sn->u.m.key[n] = k;
                n++;
            }
        }
        sn->whole = 0;
        sn->used = so->used;
        sn->mask = so->mask;
        sn->n = n;
    }
    FC_CS_END();
}
#endif

/* Make sure st reflects the current stdlib tables (which: plan.h).
   0 | -1+exc; FC_SYNC_DICTS: 1 when it refreshed */
FC_INTERNAL_INLINE int
fc_sync_for(FcState *st, int which)
{
#if FC_PY312_PLUS
    if (FC_LIKELY(st->seen_gen == fc_watch_counter && !st->always_refresh
#  if FC_COPY_SETS_MUTABLE
                  && !fc_sets_moved(st, which)
#  endif
                  )) {
        return 0;
    }
    st->seen_gen = fc_watch_counter;
#else
    /* all five are dicts unless always_refresh (fc_refresh); the copy
       module's globals first: a rebound table shows there */
    if (FC_LIKELY(!st->always_refresh
                  && fc_dict_version(st->copy_globals) == st->ver[0]
                  && fc_dict_version(st->deep_dispatch) == st->ver[1]
                  && fc_dict_version(st->copyreg_dispatch) == st->ver[3]
                  && fc_dict_version(st->copyreg_globals) == st->ver[4]
                  && fc_dict_version(st->copy_dispatch) == st->ver[2])) {
        return 0;
    }
#endif
    if (fc_refresh(st) < 0) {
        return -1;
    }
    return which == FC_SYNC_DICTS;   /* every set read again */
}

#if FC_FT
/* Writers (under plan_lock) make p->seq odd around their writes. */
FC_INLINE void
fc_plan_write_begin(FcPlan *p)
{
    _Py_atomic_store_uint32_relaxed(&p->seq, p->seq + 1);
    _Py_atomic_fence_release();
}

FC_INLINE void
fc_plan_write_end(FcPlan *p)
{
    _Py_atomic_store_uint32_release(&p->seq, p->seq + 1);
}

#endif

/* Callers never keep a plan pointer across code that can reach here
   (they copy what they use: fc_deep_plain), so entries may be dropped. */
FC_INTERNAL void
fc_plans_clear(FcState *st)
{
#if FC_FT
    /* emptied under the lock, released after it: a finalizer run by the
       release may copy, and so look a plan up */
    PyObject *old[2 * FC_PLAN_SLOTS];
    PyMutex_Lock(&st->plan_lock);
    for (int i = 0; i < FC_PLAN_SLOTS; i++) {
        FcPlan *p = &st->plans[i];
        old[2 * i] = (PyObject *)p->type;
        old[2 * i + 1] = p->slotnames;
        fc_plan_write_begin(p);
        p->type = NULL;
        p->slotnames = NULL;
        fc_plan_write_end(p);
    }
    PyMutex_Unlock(&st->plan_lock);
    for (int i = 0; i < 2 * FC_PLAN_SLOTS; i++) {
        Py_XDECREF(old[i]);
    }
#else
    for (int i = 0; i < FC_PLAN_SLOTS; i++) {
        FcPlan *p = &st->plans[i];
        Py_CLEAR(p->type);
        Py_CLEAR(p->slotnames);
    }
#endif
}

FC_INTERNAL int
fc_plans_traverse(FcState *st, visitproc visit, void *arg)
{
    for (int i = 0; i < FC_PLAN_SLOTS; i++) {
        Py_VISIT(st->plans[i].type);
        Py_VISIT(st->plans[i].slotnames);
    }
    return 0;
}

/* Which type each kind bit stands for. */
FC_INTERNAL PyTypeObject *
fc_kind_type(FcState *st, int k)
{
    switch (k) {
    case FK_STR: return &PyUnicode_Type;
    case FK_INT: return &PyLong_Type;
    case FK_FLOAT: return &PyFloat_Type;
    case FK_BOOL: return &PyBool_Type;
    case FK_NONE: return Py_TYPE(Py_None);
    case FK_BYTES: return &PyBytes_Type;
    case FK_COMPLEX: return &PyComplex_Type;
    case FK_TUPLE: return &PyTuple_Type;
    case FK_LIST: return &PyList_Type;
    case FK_DICT: return &PyDict_Type;
    case FK_SET: return &PySet_Type;
    case FK_FROZENSET: return &PyFrozenSet_Type;
    case FK_BYTEARRAY: return &PyByteArray_Type;
    case FK_TYPE: return &PyType_Type;
    case FK_RANGE: return &PyRange_Type;
    case FK_SLICE: return &PySlice_Type;
    case FK_PROPERTY: return &PyProperty_Type;
    case FK_BUILTIN_FN: return &PyCFunction_Type;
    case FK_FUNCTION: return &PyFunction_Type;
    case FK_CODE: return &PyCode_Type;
    case FK_WEAKREF: return &_PyWeakref_RefType;
    case FK_ELLIPSIS: return Py_TYPE(Py_Ellipsis);
    case FK_NOTIMPL: return Py_TYPE(Py_NotImplemented);
    case FK_METHOD: return &PyMethod_Type;
    default: return NULL;
    }
}

/* Is key absent from table (no entry, or None)?  1 | 0 | -1+exc */
static int
fc_table_absent(FcState *st, PyObject *table, PyObject *key)
{
    PyObject *e;
    if (fc_table_get(st, table, key, &e) < 0) {
        return -1;
    }
    int absent = e == NULL || e == Py_None;
    Py_XDECREF(e);
    return absent;
}

/* Is the table one whose lookups run no user code and whose changes are
   seen (an exact dict, watched: copy's dispatch_table is copyreg's)? */
FC_INLINE int
fc_tables_plain(FcState *st)
{
    return PyDict_CheckExact(st->dispatch_table) && PyDict_CheckExact(st->deep_dispatch)
           && st->dispatch_table == st->copyreg_dispatch;
}

/* FcState.set_ok: deepcopy(s) of an exact set or frozenset reduces it to
   (type(s), (list(s),), None) -- no copier registered in either table, and
   on 3.11+ the state comes from object.__getstate__, which asks the
   original copyreg._slotnames (an empty list, nothing cached: the types
   are static).  0 | -1+exc */
static int
fc_refresh_set_ok(FcState *st)
{
    st->set_ok = 0;
    if (!fc_tables_plain(st) || (FC_PY311_PLUS && !st->plain_ok)) {
        return 0;
    }
    const int kinds[2] = {FK_SET, FK_FROZENSET};
    for (int i = 0; i < 2; i++) {
        int absent = fc_table_absent(st, st->dispatch_table,
                                     (PyObject *)fc_kind_type(st, kinds[i]));
        if (absent < 0) {
            return -1;
        }
        if (absent && (st->deep_ok & FK_BIT(kinds[i]))) {
            st->set_ok |= FK_BIT(kinds[i]);
        }
    }
    return 0;
}

#if FC_COPY_SETS
/* `key in c` for one of copy's sets (or whatever the user bound in its
   place).  1 | 0 | -1+exc */
FC_INTERNAL int
fc_copy_set_has(PyObject *c, PyObject *key)
{
    if (c == NULL) {
        return 0;
    }
    if (PyAnySet_CheckExact(c)) {
        return PySet_Contains(c, key);
    }
    return PySequence_Contains(c, key);
}

static Py_ssize_t
fc_bits(uint32_t b)
{
    Py_ssize_t n = 0;
    for (; b; b &= b - 1) {
        n++;
    }
    return n;
}

/* How many members c has when it is an exact set, else -1. */
static Py_ssize_t
fc_set_size(PyObject *c)
{
    return (c != NULL && PyAnySet_CheckExact(c)) ? PySet_GET_SIZE(c) : -1;
}

FC_INTERNAL int
fc_copy_atomic_extra(PyTypeObject *tp)
{
#if FC_HAVE_FROZENDICT
    if (tp == &PyFrozenDict_Type) {
        return 1;
    }
#endif
    return tp == &PySuper_Type;
}

/* deep_ok / copy_ok from copy's sets (3.14+), and whether each set holds
   exactly the stdlib's own types:
     deepcopy: an atomic kind is native while `cls in _atomic_types`; any
       other kind while it is not there and its _deepcopy_dispatch entry is
       the original (or absent, as originally).
     copy: an atomic kind while `cls in _copy_atomic_types`; list, dict,
       set and bytearray while they are in _copy_builtin_containers only;
       the rest while in neither.
   Only exact sets are asked here (no user code, nothing observable).  A
   container of the user's bound in a set's place is asked exactly when
   and as often as the stdlib asks it: once per deepcopy() step
   (fc_atomic_custom), once per copy() (copy.c); its kinds' bits stay 0.
   0 | -1+exc */
static int
fc_refresh_sets(FcState *st, uint32_t *deep_ok, uint32_t *copy_ok)
{
    const uint32_t containers = FK_BIT(FK_LIST) | FK_BIT(FK_DICT) | FK_BIT(FK_SET)
                                | FK_BIT(FK_BYTEARRAY);
    int deep_exact = fc_set_size(st->deep_atomic) >= 0;
    int copy_exact = fc_set_size(st->copy_atomic) >= 0 && fc_set_size(st->copy_containers) >= 0;
    uint32_t in_deep = 0, in_catomic = 0, in_ccont = 0;
    for (int k = 1; k < FK__COUNT; k++) {
        PyObject *t = (PyObject *)fc_kind_type(st, k);
        uint32_t b = FK_BIT(k);
        int a = deep_exact ? PySet_Contains(st->deep_atomic, t) : 0;
        int ca = (copy_exact && a >= 0) ? PySet_Contains(st->copy_atomic, t) : 0;
        int cc = (copy_exact && ca >= 0) ? PySet_Contains(st->copy_containers, t) : 0;
        if (a < 0 || ca < 0 || cc < 0) {
            return -1;
        }
        in_deep |= a ? b : 0;
        in_catomic |= ca ? b : 0;
        in_ccont |= cc ? b : 0;
        if (b & FC_DEEP_ATOMIC) {
            *deep_ok |= a ? b : 0;
        }
        else if (!a) {
            PyObject *e;
            if (fc_table_get(st, st->deep_dispatch, t, &e) < 0) {
                return -1;
            }
            if ((e == NULL || e == Py_None) ? st->orig_deep[k] == NULL
                                             : e == st->orig_deep[k]) {
                *deep_ok |= b;
            }
            Py_XDECREF(e);
        }
        if (!copy_exact) {
            /* copy.c asks the user's containers, in the stdlib's order */
            *copy_ok |= (b & (FC_COPY_ATOMIC | containers)) ? 0 : b;
        }
        else if (b & FC_COPY_ATOMIC) {
            *copy_ok |= ca ? b : 0;
        }
        else if (b & containers) {
            *copy_ok |= (!ca && cc) ? b : 0;
        }
        else {
            *copy_ok |= (!ca && !cc) ? b : 0;
        }
    }
    /* exactly the stdlib's: its kinds all there, and nothing else (the
       sizes count the other types the stdlib lists: super, frozendict) */
    st->copy_sets_std = 0;
    if (copy_exact) {
        int r1 = PySet_Contains(st->copy_atomic, (PyObject *)&PySuper_Type);
        int r2 = 1;
#if FC_HAVE_FROZENDICT
        r2 = r1 < 0 ? -1 : PySet_Contains(st->copy_atomic, (PyObject *)&PyFrozenDict_Type);
#endif
        if (r1 < 0 || r2 < 0) {
            return -1;
        }
        st->copy_sets_std = r1 && r2 && in_catomic == FC_COPY_ATOMIC
            && fc_set_size(st->copy_atomic) == fc_bits(FC_COPY_ATOMIC) + 1 + FC_HAVE_FROZENDICT
            && in_ccont == containers
            && fc_set_size(st->copy_containers) == fc_bits(containers);
    }
    st->deep_atomic_std = deep_exact && in_deep == FC_DEEP_ATOMIC
        && fc_set_size(st->deep_atomic) == fc_bits(FC_DEEP_ATOMIC);
    st->fdict_ok = 0;
#if FC_HAVE_FROZENDICT
    {
        /* the stdlib's own copier, and frozendict not atomic (a set of the
           user's would be asked first: fc_atomic_custom) */
        PyObject *e;
        if (fc_table_get(st, st->deep_dispatch, (PyObject *)&PyFrozenDict_Type, &e) < 0) {
            return -1;
        }
        st->fdict_ok = e != NULL && e == st->orig_fdict && st->deep_atomic_std;
        Py_XDECREF(e);
    }
#endif
    return 0;
}
#endif

/* Re-read the copy module's globals and recompute what is still the
   stdlib's original.  0 | -1+exc */
#if FC_FT
static int fc_refresh_locked(FcState *st);

/* One thread at a time: two would release the same old tables.  A nested
   refresh on the same thread (a user mapping's .get copying) goes on, as
   on GIL builds. */
FC_INTERNAL int
fc_refresh(FcState *st)
{
    PyThreadState *ts = PyThreadState_Get();
    if (_Py_atomic_load_ptr_relaxed(&st->refresh_owner) == ts) {
        return fc_refresh_locked(st);
    }
    PyMutex_Lock(&st->refresh_lock);
    _Py_atomic_store_ptr_relaxed(&st->refresh_owner, ts);
    int r = fc_refresh_locked(st);
    _Py_atomic_store_ptr_relaxed(&st->refresh_owner, NULL);
    PyMutex_Unlock(&st->refresh_lock);
    return r;
}

static int
fc_refresh_locked(FcState *st)
#else
FC_INTERNAL int
fc_refresh(FcState *st)
#endif
{
    PyObject *g = st->copy_globals;
    PyObject *v;
    const char *names[] = FC_COPY_NAMES;
    PyObject **slots[] = FC_COPY_SLOTS(st);
    for (int i = 0; i < FC_COPY_NNAMES; i++) {
        /* strong, and a failure is the caller's (a MemoryError making the
           key must not leave the old table in place unnoticed) */
        if (fc_dict_getref_str(g, names[i], &v) < 0) {
            return -1;
        }
#if FC_FT
        /* another thread's copy may be reading the old table, borrowed */
        if (v != NULL && v != *slots[i]) {
            if (*slots[i] != NULL) {
                if ((st->retired == NULL && (st->retired = PyList_New(0)) == NULL)
                    || PyList_Append(st->retired, *slots[i]) < 0) {
                    Py_DECREF(v);
                    return -1;
                }
            }
            Py_XSETREF(*slots[i], v);
        }
        else {
            Py_XDECREF(v);
        }
#else
        if (v != NULL) {
            Py_XSETREF(*slots[i], v);
        }
#endif
    }
    uint32_t deep_ok = 0, copy_ok = 0;
#if FC_COPY_SETS
    if (fc_refresh_sets(st, &deep_ok, &copy_ok) < 0) {
        return -1;
    }
#else
    for (int k = 1; k < FK__COUNT; k++) {
        PyTypeObject *t = fc_kind_type(st, k);
        PyObject *e;
        if (fc_table_get(st, st->deep_dispatch, (PyObject *)t, &e) < 0) {
            return -1;
        }
        /* kinds absent from the stdlib table stay absent */
        if ((e == NULL || e == Py_None) ? st->orig_deep[k] == NULL
                                         : e == st->orig_deep[k]) {
            deep_ok |= FK_BIT(k);
        }
        Py_XDECREF(e);
        if (fc_table_get(st, st->copy_dispatch, (PyObject *)t, &e) < 0) {
            return -1;
        }
        if ((e == NULL || e == Py_None) ? st->orig_copy[k] == NULL
                                         : e == st->orig_copy[k]) {
            copy_ok |= FK_BIT(k);
        }
        Py_XDECREF(e);
    }
#endif
    st->deep_ok = deep_ok;
    st->copy_ok = copy_ok;
    st->plain_ok =
        PyDict_GetItemString(st->copyreg_globals, "__newobj__") == st->copyreg_newobj
        && PyDict_GetItemString(st->copyreg_globals, "_slotnames") == st->copyreg_slotnames;
    if (fc_refresh_set_ok(st) < 0) {
        return -1;
    }
    fc_plans_clear(st);
    st->gen++;
#if FC_PY312_PLUS
    if (st->watcher_id >= 0) {
        /* the globals may now name other dicts: watch whatever is current */
        PyObject *ws[5];
        int nw = fc_watched_dicts(st, ws);
        int all = 1;
        for (int i = 0; i < nw; i++) {
            if (!PyDict_Check(ws[i])) {
                all = 0;   /* a mapping of the user's: nothing to watch */
            }
            else if (PyDict_Watch(st->watcher_id, ws[i]) < 0) {
                return -1;
            }
        }
        st->always_refresh = !all;
    }
#endif
#if FC_COPY_SETS_MUTABLE
    fc_set_snap(&st->snap[0], st->copy_atomic);
    fc_set_snap(&st->snap[1], st->copy_containers);
    fc_set_snap(&st->snap[2], st->deep_atomic);
#endif
#if !FC_PY312_PLUS
    PyObject *ds[5] = {st->copy_globals, st->deep_dispatch, st->copy_dispatch,
                       st->copyreg_dispatch, st->copyreg_globals};
    st->always_refresh = 0;
    for (int i = 0; i < 5; i++) {
        if (PyDict_Check(ds[i])) {
            st->ver[i] = fc_dict_version(ds[i]);
        }
        else {
            /* a mapping of the user's: no version to watch */
            st->ver[i] = 0;
            st->always_refresh = 1;
        }
    }
#endif
    return 0;
}

/* Watch the tables (3.12+).  0 | -1+exc */
FC_INTERNAL int
fc_watch_init(FcState *st)
{
#if FC_PY312_PLUS
    st->watcher_id = PyDict_AddWatcher(fc_watch_cb);
    if (st->watcher_id < 0) {
        /* all watcher slots taken: fall back to re-checking every call */
        PyErr_Clear();
        st->always_refresh = 1;
        return 0;
    }
    PyObject *ds[5];
    int nd = fc_watched_dicts(st, ds);
    for (int i = 0; i < nd; i++) {
        if (PyDict_Check(ds[i]) && PyDict_Watch(st->watcher_id, ds[i]) < 0) {
            return -1;
        }
        if (!PyDict_Check(ds[i])) {
            st->always_refresh = 1;
        }
    }
    st->seen_gen = 0;
#endif
    fc_stamps_init(st);
    return 0;
}

FC_INTERNAL void
fc_watch_fini(FcState *st)
{
#if FC_PY312_PLUS
    if (st->watcher_id >= 0) {
        PyObject *ds[5];
        int nd = fc_watched_dicts(st, ds);
        for (int i = 0; i < nd; i++) {
            if (ds[i] != NULL && PyDict_Check(ds[i])) {
                (void)PyDict_Unwatch(st->watcher_id, ds[i]);
            }
        }
        (void)PyDict_ClearWatcher(st->watcher_id);
        PyErr_Clear();
        st->watcher_id = -1;
    }
#endif
    fc_stamps_fini(st);
}

/* ------------------------------------------------------------------ */
/* Plans                                                               */
/* ------------------------------------------------------------------ */

/* getattr(sys.modules[modname], attr), never importing the module.
   new ref | NULL (not loaded, or no such attribute; no exception) */
static PyObject *
fc_loaded_attr(const char *modname, const char *attr)
{
    PyObject *mods = PySys_GetObject("modules");   /* borrowed */
    PyObject *mod = mods ? PyDict_GetItemString(mods, modname) : NULL;
    if (mod == NULL) {
        return NULL;
    }
    PyObject *v = PyObject_GetAttrString(mod, attr);
    if (v == NULL) {
        PyErr_Clear();
    }
    return v;
}

/* Are constant tuples a and b the same constants: each pair of the same
   type and equal (1 == 1.0 == True, but not as code constants)?  Nested
   tuples alike; other containers and code objects are not expected in the
   references and compare unequal.  1 | 0 */
static int
fc_consts_same(PyObject *a, PyObject *b)
{
    if (!PyTuple_CheckExact(a) || !PyTuple_CheckExact(b)
        || PyTuple_GET_SIZE(a) != PyTuple_GET_SIZE(b)) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a); i++) {
        PyObject *x = PyTuple_GET_ITEM(a, i), *y = PyTuple_GET_ITEM(b, i);
        if (x == y) {
            continue;
        }
        if (Py_TYPE(x) != Py_TYPE(y)) {
            return 0;
        }
        if (PyTuple_CheckExact(x)) {
            if (!fc_consts_same(x, y)) {
                return 0;
            }
        }
        else if (!(PyUnicode_CheckExact(x) || PyLong_CheckExact(x) || PyBytes_CheckExact(x))
                 || PyObject_RichCompareBool(x, y, Py_EQ) != 1) {
            /* exact str, int and bytes compare without user code */
            return 0;
        }
    }
    return 1;
}

/* Do code objects a and b run the same: bytecode (unspecialised), exception
   table, constants, names, local names, argument counts, flags?  Their file,
   name and line numbers may differ.  1 | 0 (no exception) */
static int
fc_code_same(PyCodeObject *a, PyCodeObject *b)
{
    if (a->co_argcount != b->co_argcount || a->co_posonlyargcount != b->co_posonlyargcount
        || a->co_kwonlyargcount != b->co_kwonlyargcount
        || (a->co_flags & ~FC_CO_FLAGS_NEUTRAL) != (b->co_flags & ~FC_CO_FLAGS_NEUTRAL)
        || a->co_nlocals != b->co_nlocals) {
        return 0;
    }
#if FC_PY311_PLUS
    PyObject *va = PyCode_GetVarnames(a), *vb = PyCode_GetVarnames(b);
#else
    PyObject *va = Py_NewRef(a->co_varnames), *vb = Py_NewRef(b->co_varnames);
#endif
    PyObject *ca = fc_code_bytes(a), *cb = fc_code_bytes(b);
    int same = va != NULL && vb != NULL && ca != NULL && cb != NULL
               && PyObject_RichCompareBool(ca, cb, Py_EQ) == 1
#if FC_PY311_PLUS
               && PyObject_RichCompareBool(a->co_exceptiontable, b->co_exceptiontable,
                                           Py_EQ) == 1
#endif
               && fc_consts_same(a->co_consts, b->co_consts)
               /* tuples of exact strs: no user code */
               && PyObject_RichCompareBool(a->co_names, b->co_names, Py_EQ) == 1
               && PyObject_RichCompareBool(va, vb, Py_EQ) == 1;
    Py_XDECREF(va);
    Py_XDECREF(vb);
    Py_XDECREF(ca);
    Py_XDECREF(cb);
    PyErr_Clear();
    return same;
}

/* Does function f have the code of fastcopy._reference.<name>, a function
   without closure, defaults or keyword defaults?  The reference module is
   imported with the package and only looked up here: nothing is compiled or
   run, so no audit event is raised that the stdlib's copy would not raise.
   (Not imported -- the extension loaded on its own -- : 0, the generic
   road.)  1 | 0 */
static int
fc_func_is(PyObject *f, const char *name)
{
    if (!PyFunction_Check(f)) {
        return 0;
    }
    PyFunctionObject *fo = (PyFunctionObject *)f;
    if (fo->func_closure != NULL || fo->func_defaults != NULL || fo->func_kwdefaults != NULL) {
        return 0;
    }
    PyObject *ref = fc_loaded_attr("fastcopy._reference", name);
    int same = ref != NULL && PyFunction_Check(ref)
               && fc_code_same((PyCodeObject *)PyFunction_GET_CODE(f),
                               (PyCodeObject *)PyFunction_GET_CODE(ref));
    Py_XDECREF(ref);
    return same;
}

/* Does f do nothing but `return <first argument>` (two arguments)?  1 | 0 */
static int
fc_is_return_self(PyObject *f)
{
    return fc_func_is(f, "enum_deepcopy");
}

/* *slot = v (stolen), set once: on free-threaded builds two threads may
   both get here, and the first one's stays. */
static void
fc_publish(PyObject **slot, PyObject *v)
{
#if FC_FT
    PyObject *expected = NULL;
    if (!_Py_atomic_compare_exchange_ptr(slot, &expected, v)) {
        Py_DECREF(v);
    }
#else
    *slot = v;
#endif
}

/* enum.Enum.__deepcopy__ is `return self` (3.11+); found lazily through
   sys.modules, never by importing enum ourselves. */
static PyObject *
fc_enum_deepcopy(FcState *st)
{
    if (st->enum_deepcopy != NULL || st->enum_checked) {
        return st->enum_deepcopy;
    }
    PyObject *Enum = fc_loaded_attr("enum", "Enum");
    if (Enum == NULL) {
        return NULL;
    }
    st->enum_checked = 1;
    if (PyType_Check(Enum)) {
        PyObject *f = _PyType_Lookup((PyTypeObject *)Enum, st->s_deepcopy);
        if (f != NULL && fc_is_return_self(f)) {
            fc_publish(&st->enum_deepcopy, Py_NewRef(f));
        }
    }
    Py_DECREF(Enum);
    return st->enum_deepcopy;
}

/* The code object of the __getnewargs__ every collections.namedtuple class
   shares (`return _tuple(self)`, a constant of namedtuple's own code), found
   through sys.modules; NULL if collections is not imported. */
static PyObject *
fc_nt_getnewargs_code(FcState *st)
{
    if (st->nt_getnewargs_code != NULL || st->nt_checked) {
        return st->nt_getnewargs_code;
    }
    PyObject *nt = fc_loaded_attr("collections", "namedtuple");
    if (nt == NULL) {
        return NULL;
    }
    st->nt_checked = 1;
    if (!PyFunction_Check(nt)) {
        Py_DECREF(nt);
        return NULL;
    }
    PyObject *consts = ((PyCodeObject *)PyFunction_GET_CODE(nt))->co_consts;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(consts); i++) {
        PyObject *co = PyTuple_GET_ITEM(consts, i);
        if (PyCode_Check(co)
            && PyUnicode_CompareWithASCIIString(((PyCodeObject *)co)->co_name,
                                                "__getnewargs__") == 0) {
            fc_publish(&st->nt_getnewargs_code, Py_NewRef(co));
            break;
        }
    }
    Py_DECREF(nt);
    return st->nt_getnewargs_code;
}

/* _PyType_GetSlotNames(tp): cls.__dict__["__slotnames__"], else
   copyreg._slotnames(cls), which caches it on the class (the stdlib's first
   copy of an instance does the same).  1 (*names new ref) | 0 when it
   raises (cleared: the real __reduce_ex__ will raise it again, exactly) |
   -1+exc */
static int
fc_type_slotnames(FcState *st, PyTypeObject *tp, PyObject **names)
{
    PyObject *tdict = fc_type_dict(tp);
    if (tdict == NULL) {
        return -1;
    }
    int got = fc_dict_getref(tdict, st->s_slotnames, names);
    Py_DECREF(tdict);
    if (got < 0) {
        return -1;
    }
    if (*names == NULL) {
        *names = PyObject_CallOneArg(st->copyreg_slotnames, (PyObject *)tp);
        if (*names == NULL) {
            PyErr_Clear();
            return 0;
        }
    }
    return 1;
}

/* A namedtuple class whose reduce is object's default: object.__reduce_ex__(4)
   gives (copyreg.__newobj__, (cls, *self), None) -- no instance dict, no
   slots, so no state.  1 | 0 | -1+exc */
static int
fc_plan_namedtuple(FcState *st, PyTypeObject *tp)
{
    if (!st->plain_ok || !(tp->tp_flags & Py_TPFLAGS_HEAPTYPE)
        || tp->tp_base != &PyTuple_Type
        || tp->tp_dictoffset != 0
        || tp->tp_getattro != PyObject_GenericGetAttr
        || Py_TYPE(tp)->tp_getattro != PyType_Type.tp_getattro) {
        return 0;
    }
    PyObject *code = fc_nt_getnewargs_code(st);
    PyObject *gna = _PyType_Lookup(tp, st->s_getnewargs);
    if (code == NULL || gna == NULL || !PyFunction_Check(gna)
        || PyFunction_GET_CODE(gna) != code) {
        return 0;
    }
    if (_PyType_Lookup(tp, st->s_reduce_ex) != st->obj_reduce_ex
        || _PyType_Lookup(tp, st->s_reduce) != st->obj_reduce
        || _PyType_Lookup(tp, st->s_getstate) != st->obj_getstate
        || _PyType_Lookup(tp, st->s_getnewargs_ex) != NULL
        || _PyType_Lookup(tp, st->s_deepcopy) != NULL) {
        return 0;
    }
    /* no slots to report in the state (namedtuple sets __slots__ = ()) */
    PyObject *names;
    int got = fc_type_slotnames(st, tp, &names);
    if (got <= 0) {
        return got;
    }
    int ok = names == Py_None || (PyList_CheckExact(names) && PyList_GET_SIZE(names) == 0);
    Py_DECREF(names);
    return ok;
}

/* The common half of FP_PLAIN: instances are reduced by object's own
   __reduce_ex__(4) into (copyreg.__newobj__, (cls,), state) and rebuilt
   without __setstate__.  Sets *slotnames (new ref, list) on success.
   1 plain | 0 not plain | -1+exc */
static int
fc_plan_plain_common(FcState *st, PyTypeObject *tp, int gflags, PyObject **slotnames)
{
    *slotnames = NULL;
    if (!st->plain_ok || !(tp->tp_flags & Py_TPFLAGS_HEAPTYPE)
        || (tp->tp_flags & Py_TPFLAGS_IS_ABSTRACT)
        || tp->tp_itemsize != 0
        || tp->tp_getattro != PyObject_GenericGetAttr
        || tp->tp_new != PyBaseObject_Type.tp_new
        || Py_TYPE(tp)->tp_getattro != PyType_Type.tp_getattro
        || PyType_IsSubtype(tp, &PyType_Type)) {
        return 0;
    }
    if (_PyType_Lookup(tp, st->s_new) != st->obj_new
        || _PyType_Lookup(tp, st->s_reduce_ex) != st->obj_reduce_ex
        || _PyType_Lookup(tp, st->s_reduce) != st->obj_reduce
        || _PyType_Lookup(tp, st->s_getstate) != st->obj_getstate
        || _PyType_Lookup(tp, st->s_getnewargs_ex) != NULL
        || _PyType_Lookup(tp, st->s_getnewargs) != NULL
        || _PyType_Lookup(tp, st->s_setstate) != NULL) {
        return 0;
    }
    if (tp->tp_dictoffset != 0) {
        PyObject *d = _PyType_Lookup(tp, st->s_dict);
        if (d == NULL || !Py_IS_TYPE(d, &PyGetSetDescr_Type)
            || ((PyGetSetDescrObject *)d)->d_getset->get != st->dict_getter) {
            return 0;
        }
    }
    if (!(gflags & FG_NO_REDUCTOR)) {
        return 0;
    }
    PyObject *names;
    int got = fc_type_slotnames(st, tp, &names);
    if (got <= 0) {
        return got;
    }
    if (names == Py_None) {
        Py_SETREF(names, PyList_New(0));
        if (names == NULL) {
            return -1;
        }
    }
    if (!PyList_CheckExact(names)) {
        Py_DECREF(names);
        return 0;
    }
    /* object_getstate_default(required=1) refuses objects with C fields it
       cannot see; be at least as strict */
    Py_ssize_t basic = PyBaseObject_Type.tp_basicsize;
    if (tp->tp_dictoffset > 0) {
        basic += sizeof(PyObject *);
    }
    if (tp->tp_weaklistoffset > 0) {
        basic += sizeof(PyObject *);
    }
    basic += sizeof(PyObject *) * PyList_GET_SIZE(names);
    if (tp->tp_basicsize > basic) {
        Py_DECREF(names);
        return 0;
    }
    *slotnames = names;
    return 1;
}

/* Does Fraction.__deepcopy__ (st->frac_deepcopy) still return self for an
   exact Fraction tp: its globals name tp `Fraction` and do not shadow
   `type`, which its builtins map to type?  Checked again whenever either
   dict's version tag moved.  1 | 0 | -1+exc */
FC_INTERNAL int
fc_frac_names_ok(FcState *st, PyTypeObject *tp)
{
    PyFunctionObject *f = (PyFunctionObject *)st->frac_deepcopy;
    PyObject *g = f->func_globals, *b = f->func_builtins;
    if (!PyDict_CheckExact(g) || !PyDict_CheckExact(b)) {
        return 0;
    }
    if (fc_names_stamp(st, g) == st->frac_ver[0] && fc_names_stamp(st, b) == st->frac_ver[1]
        && st->frac_ver[0] != 0) {
        return 1;
    }
    /* the keys are exact strs: these lookups run no user code */
    PyObject *v = PyDict_GetItemWithError(g, st->s_fraction);
    if (v != (PyObject *)tp) {
        return PyErr_Occurred() ? -1 : 0;
    }
    if (PyDict_GetItemWithError(g, st->s_type) != NULL || PyErr_Occurred()) {
        return PyErr_Occurred() ? -1 : 0;
    }
    if (PyDict_GetItemWithError(b, st->s_type) != (PyObject *)&PyType_Type) {
        return PyErr_Occurred() ? -1 : 0;
    }
    st->frac_ver[0] = fc_names_take(st, g);
    st->frac_ver[1] = fc_names_take(st, b);
    return 1;
}

/* uuid.UUID's state methods (fastcopy/_reference.py, uuid_getstate and
   uuid_setstate), 3.10-3.13 alike.  The stdlib deep-copies a
   UUID u through object.__reduce_ex__(4): (copyreg.__newobj__, (UUID,),
   u.__getstate__()), then _reconstruct: y = object.__new__(UUID),
   memo[id(u)] = y, the state dict deep-copied (memo[id(d)] = its copy,
   d kept alive), y.__setstate__(copy), memo[id(u)] = y, u kept alive.
   With the memo native (deepcopy.c, fc_deep_uuid) that is done directly,
   temporaries and memo entries included, as long as everything those
   functions reach is what it was when checked here (fc_plan_uuid). */

/* tp's own writable object slot `name`: its member descriptor, found first
   in tp's MRO (borrowed) | NULL */
static PyObject *
fc_slot_descr(PyTypeObject *tp, const char *name)
{
    PyObject *n = PyUnicode_InternFromString(name);
    if (n == NULL) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *d = _PyType_Lookup(tp, n);
    Py_DECREF(n);
    if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type) || PyDescr_TYPE(d) != tp) {
        return NULL;
    }
    PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
    return (m->type == FC_T_OBJECT_EX && !(m->flags & FC_READONLY)) ? d : NULL;
}

/* The str constant equal to s among f's code constants (borrowed) | NULL */
static PyObject *
fc_code_const_str(PyObject *f, const char *s)
{
    PyObject *consts = ((PyCodeObject *)PyFunction_GET_CODE(f))->co_consts;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(consts); i++) {
        PyObject *k = PyTuple_GET_ITEM(consts, i);
        if (PyUnicode_CheckExact(k) && PyUnicode_CompareWithASCIIString(k, s) == 0) {
            return k;
        }
    }
    return NULL;
}

/* The names __getstate__/__setstate__ read from their globals and builtins:
   SafeUUID the class checked, `object` not shadowed.  1 | 0 */
static int
fc_uuid_names_ok(FcState *st, PyObject *g, PyObject *b, PyObject *safe)
{
    PyObject *v = PyDict_GetItemString(g, "SafeUUID");
    if (v != safe || PyDict_GetItemString(g, "object") != NULL
        || PyDict_GetItemString(b, "object") != (PyObject *)&PyBaseObject_Type) {
        return 0;
    }
    st->uuid_ver[0] = fc_names_take(st, g);
    st->uuid_ver[1] = fc_names_take(st, b);
    return 1;
}

FC_INTERNAL_INLINE PyObject *
fc_uuid_info(FcState *st)
{
#if FC_FT
    return _Py_atomic_load_ptr_acquire(&st->uuid_info);   /* fc_publish */
#else
    return st->uuid_info;
#endif
}

FC_INTERNAL int
fc_uuid_ok(FcState *st, PyObject *info)
{
    PyObject *S = PyTuple_GET_ITEM(info, FC_UUID_SAFEUUID);
    if (fc_type_tag((PyTypeObject *)S) != st->uuid_tag[0] || st->uuid_tag[0] == 0
        || fc_type_tag(Py_TYPE(S)) != st->uuid_tag[1] || st->uuid_tag[1] == 0) {
        return 0;
    }
    /* SafeUUID(value): the map it reads, looked at again when its version
       tag moved */
    PyObject *v2m = PyTuple_GET_ITEM(info, FC_UUID_V2M);
    if (!PyDict_CheckExact(v2m)) {
        return 0;
    }
    if (fc_names_stamp(st, v2m) != st->uuid_ver[2]) {
        for (int i = 0; i < 3; i++) {
            /* keys 0, -1, None: no user code in the lookups */
            PyObject *m = PyDict_GetItemWithError(v2m, PyTuple_GET_ITEM(info, FC_UUID_VALUES + i));
            if (m != PyTuple_GET_ITEM(info, FC_UUID_MEMBERS + i)) {
                PyErr_Clear();
                return 0;
            }
        }
        st->uuid_ver[2] = fc_names_take(st, v2m);
    }
    PyFunctionObject *f = (PyFunctionObject *)PyTuple_GET_ITEM(info, FC_UUID_SETSTATE);
    PyObject *g = f->func_globals, *b = f->func_builtins;
    if (fc_names_stamp(st, g) == st->uuid_ver[0] && fc_names_stamp(st, b) == st->uuid_ver[1]) {
        return 1;
    }
    return fc_uuid_names_ok(st, g, b, S);
}

FC_INTERNAL int
fc_uuid_member_ok(FcState *st, PyObject *info, int k)
{
    /* member.value is member._value_, read from its __dict__: a patched
       and restored member keeps the road */
    PyObject *md = fc_instance_dict(PyTuple_GET_ITEM(info, FC_UUID_MEMBERS + k));
    if (md == NULL) {
        return 0;
    }
    /* read every time: on 3.13 a member's materialized __dict__ can share
       the object's inline values, and a store through them was seen to
       leave its version tag as it was (a patched _value_ went unnoticed
       once in CI's 3.13 wheel run) */
    PyObject *v = PyDict_GetItemWithError(md, st->s_value_);   /* exact str key */
    int same = v != NULL && v == PyTuple_GET_ITEM(info, FC_UUID_VALUES + k);
    PyErr_Clear();
    Py_DECREF(md);
    return same;
}

/* Check uuid.UUID once (the first UUID met), and publish what fc_uuid_ok
   and fc_deep_uuid need.  1 | 0 */
static int
fc_plan_uuid(FcState *st, PyTypeObject *tp)
{
    /* asked again whenever UUID's type tag moves: everything but the
       source comparisons is checked each time */
    PyObject *U = fc_loaded_attr("uuid", "UUID");
    Py_XDECREF(U);
    if (U != (PyObject *)tp || !st->plain_ok
        || Py_TYPE(tp)->tp_getattro != PyType_Type.tp_getattro
        || _PyType_Lookup(tp, st->s_new) != st->obj_new
        || _PyType_Lookup(tp, st->s_reduce_ex) != st->obj_reduce_ex
        || _PyType_Lookup(tp, st->s_reduce) != st->obj_reduce
        || _PyType_Lookup(tp, st->s_getnewargs_ex) != NULL
        || _PyType_Lookup(tp, st->s_getnewargs) != NULL) {
        return 0;
    }
    PyObject *gs = _PyType_Lookup(tp, st->s_getstate);
    PyObject *ss = _PyType_Lookup(tp, st->s_setstate);
    PyObject *dint = fc_slot_descr(tp, "int"), *dsafe = fc_slot_descr(tp, "is_safe");
    if (gs == NULL || ss == NULL || dint == NULL || dsafe == NULL) {
        return 0;
    }
    PyObject *info0 = fc_uuid_info(st);
    if (info0 != NULL) {
        /* verified once: the same functions and slots are still UUID's */
        return PyTuple_GET_ITEM(info0, FC_UUID_GETSTATE) == gs
               && PyTuple_GET_ITEM(info0, FC_UUID_SETSTATE) == ss
               && PyTuple_GET_ITEM(info0, FC_UUID_DINT) == dint
               && PyTuple_GET_ITEM(info0, FC_UUID_DSAFE) == dsafe
               && fc_uuid_ok(st, info0);
    }
    if (!fc_func_is(gs, "uuid_getstate") || !fc_func_is(ss, "uuid_setstate")) {
        return 0;
    }
    PyObject *kint = fc_code_const_str(gs, "int"), *ksafe = fc_code_const_str(gs, "is_safe");
    if (kint == NULL || ksafe == NULL) {
        return 0;
    }
    PyFunctionObject *f = (PyFunctionObject *)ss;
    PyObject *g = f->func_globals, *b = f->func_builtins;
    if (g != ((PyFunctionObject *)gs)->func_globals || !PyDict_CheckExact(g)
        || !PyDict_CheckExact(b) || ((PyFunctionObject *)gs)->func_builtins != b) {
        return 0;
    }
    /* SafeUUID and its members, as __getstate__'s `.value` and
       __setstate__'s SafeUUID(value) see them now */
    PyObject *S = NULL;
#if FC_PY313_PLUS
    if (PyDict_GetItemStringRef(g, "SafeUUID", &S) < 0) {
        PyErr_Clear();
    }
#else
    S = Py_XNewRef(PyDict_GetItemString(g, "SafeUUID"));
#endif
    if (S == NULL || !PyType_Check(S)) {
        Py_XDECREF(S);
        return 0;
    }
    PyObject *info = PyTuple_New(FC_UUID_NINFO);
    if (info == NULL) {
        Py_DECREF(S);
        PyErr_Clear();
        return 0;
    }
    PyTuple_SET_ITEM(info, FC_UUID_GETSTATE, Py_NewRef(gs));
    PyTuple_SET_ITEM(info, FC_UUID_SETSTATE, Py_NewRef(ss));
    PyTuple_SET_ITEM(info, FC_UUID_SAFEUUID, S);   /* the reference taken */
    PyTuple_SET_ITEM(info, FC_UUID_DINT, Py_NewRef(dint));
    PyTuple_SET_ITEM(info, FC_UUID_DSAFE, Py_NewRef(dsafe));
    PyTuple_SET_ITEM(info, FC_UUID_KINT, Py_NewRef(kint));
    PyTuple_SET_ITEM(info, FC_UUID_KSAFE, Py_NewRef(ksafe));
    static const char *const names[3] = {"safe", "unsafe", "unknown"};
    int ok = 1;
    for (int i = 0; ok && i < 3; i++) {
        PyObject *m = PyObject_GetAttrString(S, names[i]);
        PyObject *v = m ? PyObject_GetAttrString(m, "value") : NULL;
        PyObject *back = v ? PyObject_CallOneArg(S, v) : NULL;
        /* `is_safe != SafeUUID.unknown` must be identity */
        ok = back != NULL && back == m && Py_TYPE(m) == (PyTypeObject *)S
             && Py_TYPE(m)->tp_richcompare == PyBaseObject_Type.tp_richcompare
             && (i == 2) == (v == Py_None);
        Py_XDECREF(back);
        PyTuple_SET_ITEM(info, FC_UUID_MEMBERS + i, m != NULL ? m : Py_NewRef(Py_None));
        PyTuple_SET_ITEM(info, FC_UUID_VALUES + i, v != NULL ? v : Py_NewRef(Py_None));
        /* fc_uuid_member_ok reads member._value_ from this dict each time */
        PyObject *md = ok ? fc_instance_dict(m) : NULL;
        Py_XDECREF(md);
        ok = md != NULL;
    }
    PyObject *v2m = ok ? PyObject_GetAttrString(S, "_value2member_map_") : NULL;
    ok = ok && v2m != NULL && PyDict_CheckExact(v2m);
    if (ok) {
        st->uuid_ver[2] = fc_names_take(st, v2m);
    }
    PyTuple_SET_ITEM(info, FC_UUID_V2M, v2m != NULL ? v2m : Py_NewRef(Py_None));
    PyErr_Clear();
    st->uuid_tag[0] = fc_type_tag((PyTypeObject *)S);
    st->uuid_tag[1] = fc_type_tag(Py_TYPE(S));
    if (!ok || fc_uuid_names_ok(st, g, b, S) <= 0) {
        Py_DECREF(info);
        PyErr_Clear();
        return 0;
    }
    /* the fields above are the same whichever thread computes them */
    fc_publish(&st->uuid_info, info);
    return fc_uuid_ok(st, fc_uuid_info(st));
}

/* The datetime C API, once the datetime module is loaded.  NULL if not. */
static const PyDateTime_CAPI *
fc_dt_api(FcState *st)
{
    if (st->dt_api != NULL || st->dt_checked) {
        return st->dt_api;
    }
    PyObject *mods = PySys_GetObject("modules");   /* borrowed */
    if (mods == NULL || PyDict_GetItemString(mods, "datetime") == NULL) {
        return NULL;
    }
    st->dt_checked = 1;
    st->dt_api = (const PyDateTime_CAPI *)PyCapsule_Import(PyDateTime_CAPSULE_NAME, 0);
    if (st->dt_api == NULL) {
        PyErr_Clear();
    }
    return st->dt_api;
}

/* A numpy scalar type (not void: its copies are new objects) whose
   __deepcopy__ is numpy.generic's own (C).  What that returns depends on
   the numpy version -- numpy 2.x gives back the scalar itself, with the
   memo untouched; older versions a new scalar through a 0-d array -- so it
   is asked once per type, on a fresh instance and a fresh memo: FV_NUMPY_SELF
   only when it answered with the instance and left the memo empty.  The
   instance is tp() except for datetime64 and timedelta64, which get a unit:
   without one they take the 'generic' unit, which numpy 2.5 deprecates with
   a warning that the stdlib's copy never shows (an error under -W error).
   FV_NUMPY_SELF | 0 */
static int
fc_plan_numpy_scalar(FcState *st, PyTypeObject *tp, PyObject *dc)
{
    PyObject *generic = fc_loaded_attr("numpy", "generic");
    PyObject *vd = fc_loaded_attr("numpy", "void");
    int ok = generic != NULL && vd != NULL && PyType_Check(generic) && PyType_Check(vd)
             && PyType_IsSubtype(tp, (PyTypeObject *)generic)
             && !PyType_IsSubtype(tp, (PyTypeObject *)vd)
             && dc != NULL && Py_IS_TYPE(dc, &PyMethodDescr_Type)
             && PyDescr_TYPE(dc) == (PyTypeObject *)generic;
    Py_XDECREF(generic);
    Py_XDECREF(vd);
    if (!ok) {
        return 0;
    }
    PyObject *probe;
    if (strcmp(tp->tp_name, "numpy.datetime64") == 0
        || strcmp(tp->tp_name, "numpy.timedelta64") == 0) {
        probe = PyObject_CallFunction((PyObject *)tp, "is", 0, "s");
    }
    else {
        probe = PyObject_CallNoArgs((PyObject *)tp);
    }
    PyObject *memo = probe ? PyDict_New() : NULL;
    PyObject *r = memo ? PyObject_CallMethodOneArg(probe, st->s_deepcopy, memo) : NULL;
    ok = r != NULL && r == probe && PyDict_GET_SIZE(memo) == 0;
    Py_XDECREF(r);
    Py_XDECREF(memo);
    Py_XDECREF(probe);
    PyErr_Clear();
    return ok ? FV_NUMPY_SELF : 0;
}

/* Which FV_* value type tp is (0: none).  The caller checked that no copier
   is registered for tp in either table.  0.. | -1+exc */
static int
fc_plan_value(FcState *st, PyTypeObject *tp, int gflags)
{
    if (!fc_tables_plain(st) || tp->tp_getattro != PyObject_GenericGetAttr
        || tp->tp_dictoffset != 0) {
        return 0;
    }
    PyObject *dc = _PyType_Lookup(tp, st->s_deepcopy);
    if (tp->tp_flags & Py_TPFLAGS_IMMUTABLETYPE) {
        const char *name = tp->tp_name;
        if (strncmp(name, "numpy.", 6) == 0) {
            return fc_plan_numpy_scalar(st, tp, dc);
        }
        if (strcmp(name, "decimal.Decimal") == 0) {
            /* _decimal's __deepcopy__ is `return self` (C); _pydecimal's
               is a Python function and stays on the generic road */
            PyObject *D = fc_loaded_attr("decimal", "Decimal");
            int ok = D == (PyObject *)tp && dc != NULL
                     && Py_IS_TYPE(dc, &PyMethodDescr_Type)
                     && PyDescr_TYPE(dc) == tp;
            Py_XDECREF(D);
            return ok ? FV_DECIMAL : 0;
        }
        if (strncmp(name, "datetime.", 9) != 0 || dc != NULL
            || !(gflags & FG_NO_REDUCTOR)) {
            return 0;
        }
        const PyDateTime_CAPI *api = fc_dt_api(st);
        if (api == NULL) {
            return 0;
        }
        if (tp == api->DateType) {
            return FV_DATE;
        }
        if (tp == api->DeltaType) {
            return FV_TIMEDELTA;
        }
        if (tp == api->DateTimeType) {
            return FV_DATETIME;
        }
        if (tp == api->TimeType) {
            return FV_TIME;
        }
        /* tzinfo.__reduce__ asks object.__getstate__ for the state on
           3.11+, and so copyreg._slotnames */
        if (tp == Py_TYPE(api->TimeZone_UTC) && (!FC_PY311_PLUS || st->plain_ok)) {
            return FV_TIMEZONE;
        }
        return 0;
    }
    if (dc != NULL && PyFunction_Check(dc) && strcmp(tp->tp_name, "Fraction") == 0
        && Py_TYPE(tp)->tp_richcompare == PyType_Type.tp_richcompare) {
        PyObject *F = fc_loaded_attr("fractions", "Fraction");
        int ok = F == (PyObject *)tp;
        Py_XDECREF(F);
        if (!ok) {
            return 0;
        }
        if (dc != st->frac_deepcopy) {
            if (!fc_func_is(dc, "fraction_deepcopy")) {
                return 0;
            }
            Py_XSETREF(st->frac_deepcopy, Py_NewRef(dc));
            st->frac_ver[0] = st->frac_ver[1] = 0;
        }
        int r = fc_frac_names_ok(st, tp);
        return r <= 0 ? r : FV_FRACTION;
    }
    if (dc == NULL && strcmp(tp->tp_name, "UUID") == 0 && (gflags & FG_NO_REDUCTOR)) {
        return fc_plan_uuid(st, tp) ? FV_UUID : 0;
    }
    return 0;
}

/* Compute a plan into *p (no caching).  0 | -1+exc */
static int
fc_plan_compute(FcState *st, PyTypeObject *tp, FcPlan *p)
{
    p->deep = FP_GENERIC;
    p->shallow = FP_GENERIC;
    p->has_slots = 0;
    p->buffer = 0;
    p->gflags = 0;
    p->value = 0;
    p->slotnames = NULL;

    /* what the generic road may skip: no entry in the stdlib's tables, and
       no __deepcopy__ reachable through a plain getattr (no instance dict
       that could shadow it, no __getattr__) */
    int absent = fc_table_absent(st, st->deep_dispatch, (PyObject *)tp);
    if (absent < 0) {
        return -1;
    }
    p->gflags |= absent ? FG_NO_DEEP_DISPATCH : 0;
    absent = fc_table_absent(st, st->dispatch_table, (PyObject *)tp);
    if (absent < 0) {
        return -1;
    }
    p->gflags |= absent ? FG_NO_REDUCTOR : 0;
    if (tp->tp_getattro == PyObject_GenericGetAttr && tp->tp_dictoffset == 0
        && _PyType_Lookup(tp, st->s_deepcopy) == NULL) {
        p->gflags |= FG_NO_DEEPCOPY_HOOK;
    }

    /* object.__reduce_ex__(4) on a class that overrides only __reduce__
       does getattr(x, "__reduce__")() after comparing type(x).__reduce__
       with object's; with plain getattr on the class and its metaclass the
       comparison is known here */
    if (tp->tp_getattro == PyObject_GenericGetAttr
        && Py_TYPE(tp)->tp_getattro == PyType_Type.tp_getattro
        && _PyType_Lookup(tp, st->s_reduce_ex) == st->obj_reduce_ex) {
        PyObject *red = _PyType_Lookup(tp, st->s_reduce);
        if (red != NULL && red != st->obj_reduce) {
            p->gflags |= FG_REDUCE_ONLY;
        }
    }

    /* a copier registered in copy._deepcopy_dispatch comes first, also
       for the types the buffer backends know */
    if (p->gflags & FG_NO_DEEP_DISPATCH) {
        int b = fc_buffer_kind(st, tp);
        if (b < 0) {
            return -1;
        }
        if (b > 0) {
            p->deep = FP_BUFFER;
            p->buffer = (uint8_t)b;
            return 0;
        }
    }
    /* the stdlib's value types (deepcopy.c, "Value types") */
    if (p->gflags & FG_NO_DEEP_DISPATCH) {
        int v = fc_plan_value(st, tp, p->gflags);
        if (v < 0) {
            return -1;
        }
        if (v > 0) {
            p->deep = FP_VALUE;
            p->value = (uint8_t)v;
            return 0;
        }
    }
    /* collections.OrderedDict itself: its C __reduce__ is known (see
       fc_deep_odict) */
    if (tp == &PyODict_Type && (p->gflags & FG_NO_DEEP_DISPATCH)
        && (p->gflags & FG_NO_REDUCTOR)) {
        p->deep = FP_ODICT;
        return 0;
    }

    if ((p->gflags & FG_NO_DEEP_DISPATCH) && (p->gflags & FG_NO_REDUCTOR)) {
        int nt = fc_plan_namedtuple(st, tp);
        if (nt < 0) {
            return -1;
        }
        if (nt) {
            p->deep = FP_NAMEDTUPLE;
            return 0;
        }
    }

    {
        /* copy.copy: pydantic's own __copy__ (the copy module's dispatch
           table is read first, on every copy: copy.c) */
        int pc = fc_plan_pydantic_copy(st, tp);
        if (pc < 0) {
            return -1;
        }
        if (pc) {
            p->shallow = pc == FH_PYDROOT ? FP_PYDROOTCOPY : FP_PYDCOPY;
        }
    }
    if (p->gflags & FG_NO_DEEP_DISPATCH) {
        int pd = fc_plan_pydantic(st, tp);
        if (pd < 0) {
            return -1;
        }
        if (pd) {
            p->deep = FP_STATEHOOK;
            p->value = (uint8_t)pd;         /* FH_PYDANTIC or FH_PYDROOT */
            return 0;
        }
    }
    if ((p->gflags & FG_NO_DEEP_DISPATCH) && (p->gflags & FG_NO_REDUCTOR)) {
        int h = fc_plan_statehook(st, tp);
        if (h < 0) {
            return -1;
        }
        if (h) {
            p->deep = FP_STATEHOOK;
            p->value = (uint8_t)h;
            return 0;
        }
    }

    PyObject *names = NULL;
    int plain = fc_plan_plain_common(st, tp, p->gflags, &names);
    if (plain < 0) {
        return -1;
    }
    PyObject *e;
    if (plain) {
        p->slotnames = names;
        p->has_slots = PyList_GET_SIZE(names) > 0;
        if ((p->gflags & FG_NO_DEEP_DISPATCH) && _PyType_Lookup(tp, st->s_deepcopy) == NULL) {
            p->deep = FP_PLAIN;
        }
        /* (3.14+: copy's sets are asked before the plan, copy.c) */
        e = NULL;
#if !FC_COPY_SETS
        if (fc_table_get(st, st->copy_dispatch, (PyObject *)tp, &e) < 0) {
            return -1;
        }
#endif
        int truthy = 0;
        if (e != NULL && e != Py_None) {
            truthy = PyObject_IsTrue(e);
        }
        Py_XDECREF(e);
        if (truthy < 0) {
            return -1;
        }
        if (!truthy && _PyType_Lookup(tp, st->s_copy) == NULL
            && _PyType_Lookup(Py_TYPE(tp), st->s_copy) == NULL) {
            p->shallow = FP_PLAIN;
        }
    }
    else if (tp->tp_getattro == PyObject_GenericGetAttr
             && !PyType_IsSubtype(tp, &PyType_Type)) {
        PyObject *enum_dc = fc_enum_deepcopy(st);
        if (enum_dc != NULL && _PyType_Lookup(tp, st->s_deepcopy) == enum_dc
            && (p->gflags & FG_NO_DEEP_DISPATCH)) {
            p->deep = FP_IDENTITY;
        }
    }
    return 0;
}

FC_INLINE size_t
fc_plan_slot(PyTypeObject *tp)
{
    uintptr_t h = (uintptr_t)tp >> 4;
    return (size_t)((h ^ (h >> 9)) & (FC_PLAN_SLOTS - 1));
}

FC_INLINE int
fc_plan_valid(FcState *st, FcPlan *p, PyTypeObject *tp)
{
    if (p->type != tp || p->gen != st->gen || p->tag == 0 || fc_type_tag(tp) != p->tag) {
        return 0;
    }
    PyTypeObject *meta = Py_TYPE(tp);
    return meta == &PyType_Type ? p->meta_tag == 0 : fc_type_tag(meta) == p->meta_tag;
}

static int
fc_assign_tag(FcState *st, PyTypeObject *tp)
{
#if FC_PY312_PLUS
    return PyUnstable_Type_AssignVersionTag(tp);
#else
    /* a method-cache lookup assigns a tag when the type can have one */
    (void)_PyType_Lookup(tp, st->s_new);
    return fc_type_tag(tp) != 0;
#endif
}

/* tp's and its metaclass's version tags, read after the plan was computed
   (copyreg._slotnames may have just set __slotnames__ on the class, which
   resets its tag).  1 (*meta_tag: 0 for `type`) | 0: no tag can be had,
   the plan is not cached */
static int
fc_plan_tags(FcState *st, PyTypeObject *tp, unsigned int *meta_tag)
{
    PyTypeObject *meta = Py_TYPE(tp);
    *meta_tag = 0;
    if (meta != &PyType_Type) {
        if (!fc_assign_tag(st, meta)) {
            return 0;
        }
        *meta_tag = fc_type_tag(meta);
    }
    return fc_assign_tag(st, tp);
}

/* A plan for tp computed into *tmp (tmp->type NULL: not in the cache yet),
   and the tags it would be cached under.  1 cache it | 0 it cannot be
   cached (no tag) | -1+exc (tmp->slotnames already released) */
static int
fc_plan_fresh(FcState *st, PyTypeObject *tp, FcPlan *tmp, unsigned int *meta_tag)
{
    if (fc_plan_compute(st, tp, tmp) < 0) {
        Py_CLEAR(tmp->slotnames);
        return -1;
    }
    tmp->type = NULL;
    return fc_plan_tags(st, tp, meta_tag);
}

/* The plan for tp: a cached one, or *tmp filled in when tp cannot be
   cached (the caller then releases tmp->slotnames).
   borrowed plan | NULL+exc */
#if FC_FT
/* Free-threaded builds: plans[] is read and written under st->plan_lock,
   and every caller gets a copy of its own (slotnames strong: the caller
   releases it, as for a plan that cannot be cached), since another thread
   may evict the entry at any moment.  The generation is the one the plan
   was computed under. */
FC_INTERNAL FcPlan *
fc_plan_get(FcState *st, PyTypeObject *tp, FcPlan *tmp)
{
    FcPlan *p = &st->plans[fc_plan_slot(tp)];
    /* A plan without slot names needs no reference: read it without the
       lock, as a sequence lock (an entry whose seq moved or is odd was
       being written; what was read is then thrown away unused).  Two
       threads copying instances of one class then share no cache line
       they write. */
    uint32_t seq = _Py_atomic_load_uint32_acquire(&p->seq);
    if (!(seq & 1)) {
        memcpy(tmp, p, sizeof(*tmp));
        _Py_atomic_fence_acquire();
        if (_Py_atomic_load_uint32_relaxed(&p->seq) == seq && !tmp->has_slots
            && fc_plan_valid(st, tmp, tp)) {
            tmp->type = NULL;
            tmp->slotnames = NULL;
            return tmp;
        }
    }
    PyMutex_Lock(&st->plan_lock);
    int hit = fc_plan_valid(st, p, tp);
    if (FC_LIKELY(hit)) {
        *tmp = *p;
        tmp->type = NULL;
        Py_XINCREF(tmp->slotnames);
    }
    PyMutex_Unlock(&st->plan_lock);
    if (FC_LIKELY(hit)) {
        return tmp;
    }
    uint64_t gen = st->gen;
    unsigned int meta_tag;
    int r = fc_plan_fresh(st, tp, tmp, &meta_tag);
    if (r <= 0) {
        return r < 0 ? NULL : tmp;
    }
    PyMutex_Lock(&st->plan_lock);
    PyObject *old_type = (PyObject *)p->type, *old_names = p->slotnames;
    uint32_t wseq = p->seq;
    fc_plan_write_begin(p);
    *p = *tmp;
    p->seq = wseq + 1;
    p->type = (PyTypeObject *)Py_NewRef(tp);
    Py_XINCREF(p->slotnames);
    p->tag = fc_type_tag(tp);
    p->meta_tag = meta_tag;
    p->gen = gen;
    /* the caller's copy carries them too: its walker compares the tag
       again after user code ran (a 0 there matched a type modified since) */
    tmp->tag = p->tag;
    tmp->meta_tag = meta_tag;
    tmp->gen = gen;
    fc_plan_write_end(p);
    PyMutex_Unlock(&st->plan_lock);
    Py_XDECREF(old_type);
    Py_XDECREF(old_names);
    return tmp;
}
#else
FC_INTERNAL FcPlan *
fc_plan_get(FcState *st, PyTypeObject *tp, FcPlan *tmp)
{
    FcPlan *p = &st->plans[fc_plan_slot(tp)];
    if (FC_LIKELY(fc_plan_valid(st, p, tp))) {
        return p;
    }
    unsigned int meta_tag;
    int r = fc_plan_fresh(st, tp, tmp, &meta_tag);
    if (r <= 0) {
        return r < 0 ? NULL : tmp;
    }
    PyObject *old_type = (PyObject *)p->type, *old_names = p->slotnames;
    *p = *tmp;
    tmp->slotnames = NULL;
    p->type = (PyTypeObject *)Py_NewRef(tp);
    p->tag = fc_type_tag(tp);
    p->meta_tag = meta_tag;
    p->gen = st->gen;
    if (old_type == NULL && old_names == NULL) {
        return p;
    }
    /* releasing the evicted plan may free its class, and a finalizer run
       by that may refill this slot: hand out a copy of our own */
    *tmp = *p;
    tmp->type = NULL;
    Py_XINCREF(tmp->slotnames);
    Py_XDECREF(old_type);
    Py_XDECREF(old_names);
    return tmp;
}
#endif
