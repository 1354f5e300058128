/*
 * watch.c: the dict stamps of watch.h.
 *
 * Through 3.13 a dict's version tag moves with every write, and a cache
 * keeps the tag it saw.  3.14 removed the tag; dict watchers are the
 * supported way to learn that a dict changed.  A watcher's callback gets no
 * context, so each kind of stamp is one process-wide counter that the
 * callback moves on any event of any dict it watches: a cache keeps the
 * counter it saw, and an unequal counter sends it back to its check.  A
 * write to an unrelated watched dict costs a needless recheck, never a
 * missed change.  Three kinds, on three watchers, so that none's writes
 * disturb the others' caches:
 *   names    the globals and builtins the library roads' names were read
 *            from (hooks.c, plan.c's Fraction and UUID): watched for good
 *            once taken; they rarely change
 *   source   the dicts prefilled dict frames are copying (deepcopy.c), each
 *            watched only while its frame lives
 *   mirror   the dict a call shows hooks as its memo (memo.c), watched from
 *            its making to the call's end: the hook's writes are what the
 *            absorb step looks for
 * The copy module's own tables have a third watcher of their own (plan.c).
 */
#include "fastcopy.h"
#include "state.h"
#include "watch.h"

#if !FC_HAVE_DICT_VERSION
/* A stamp's counter: one for the process per kind (as plan.c's
   fc_watch_counter), never 0, moved by its watcher's callback on every
   event of every dict it watches (another thread's too, on free-threaded
   builds). */
FC_INLINE int
fc_stamp_bump(uint64_t *counter)
{
#if FC_FT
    _Py_atomic_add_uint64(counter, 1);
#else
    (*counter)++;
#endif
    return 0;
}

FC_INLINE uint64_t
fc_stamp_read(uint64_t *counter)
{
#if FC_FT
    return _Py_atomic_load_uint64_relaxed(counter);
#else
    return *counter;
#endif
}

static uint64_t fc_names_counter = 1;

static int
fc_names_cb(PyDict_WatchEvent event, PyObject *dict, PyObject *key, PyObject *new_value)
{
    return fc_stamp_bump(&fc_names_counter);
}

#if FC_PREFILL
/* Source stamps (watch.h): a write to any dict a prefilled frame is copying
   moves fc_src_counter. */
static uint64_t fc_src_counter = 1;

static int
fc_src_cb(PyDict_WatchEvent event, PyObject *dict, PyObject *key, PyObject *new_value)
{
    return fc_stamp_bump(&fc_src_counter);
}

FC_INTERNAL_INLINE uint64_t
fc_src_stamp(FcState *st)
{
    (void)st;
    return fc_stamp_read(&fc_src_counter);
}

FC_INTERNAL_INLINE int
fc_src_watch(FcState *st, PyObject *d)
{
    if (fc_dict_watched_by(d, st->src_watcher)) {
        return 0;   /* an outer frame's (a hook's nested copy of the same dict) */
    }
    if (PyDict_Watch(st->src_watcher, d) < 0) {
        PyErr_Clear();
        return -1;
    }
    return 1;
}

FC_INTERNAL_INLINE void
fc_src_unwatch(FcState *st, PyObject *d)
{
    if (PyDict_Unwatch(st->src_watcher, d) < 0) {
        PyErr_Clear();
    }
}
#endif

#if FC_MEMO_ABSORB
/* Mirror stamps (watch.h): any write to a memo mirror a call has shown a
   hook, the call's own writes included, moves fc_mirror_counter. */
static uint64_t fc_mirror_counter = 1;

static int
fc_mirror_cb(PyDict_WatchEvent event, PyObject *dict, PyObject *key, PyObject *new_value)
{
    return fc_stamp_bump(&fc_mirror_counter);
}

FC_INTERNAL_INLINE uint64_t
fc_mirror_stamp(void)
{
    return fc_stamp_read(&fc_mirror_counter);
}

FC_INTERNAL int
fc_mirror_watch(int wid, PyObject *d)
{
    if (wid < 0 || PyDict_Watch(wid, d) < 0) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

FC_INTERNAL void
fc_mirror_unwatch(int wid, PyObject *d)
{
    if (PyDict_Unwatch(wid, d) < 0) {
        PyErr_Clear();
    }
}
#endif
#endif

FC_INTERNAL_INLINE uint64_t
fc_names_stamp(FcState *st, PyObject *d)
{
    (void)st;
#if FC_HAVE_DICT_VERSION
    return fc_dict_version(d);
#else
    (void)d;
    return fc_stamp_read(&fc_names_counter);
#endif
}

FC_INTERNAL uint64_t
fc_names_take(FcState *st, PyObject *d)
{
#if FC_HAVE_DICT_VERSION
    (void)st;
    return fc_dict_version(d);
#else
    if (st->names_watcher < 0 || !PyDict_Check(d)) {
        return 0;
    }
    /* watched once for good (PyDict_Watch twice is harmless, but the list
       keeps each dict once) */
    int seen = 0;
    if (st->names_watched != NULL) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(st->names_watched); i++) {
            if (PyList_GET_ITEM(st->names_watched, i) == d) {
                seen = 1;
                break;
            }
        }
    }
    if (!seen) {
        if (st->names_watched == NULL && (st->names_watched = PyList_New(0)) == NULL) {
            PyErr_Clear();
            return 0;
        }
        if (PyList_Append(st->names_watched, d) < 0 || PyDict_Watch(st->names_watcher, d) < 0) {
            PyErr_Clear();
            return 0;
        }
    }
    return fc_names_stamp(st, d);
#endif
}


FC_INTERNAL void
fc_stamps_init(FcState *st)
{
#if !FC_HAVE_DICT_VERSION
    st->names_watcher = PyDict_AddWatcher(fc_names_cb);
    if (st->names_watcher < 0) {
        PyErr_Clear();   /* no slot: every names check runs in full */
    }
#if FC_PREFILL
    st->src_watcher = PyDict_AddWatcher(fc_src_cb);
    if (st->src_watcher < 0) {
        PyErr_Clear();   /* no slot: no prefilled dicts */
    }
#endif
#if FC_MEMO_ABSORB
    st->mirror_watcher = PyDict_AddWatcher(fc_mirror_cb);
    if (st->mirror_watcher < 0) {
        PyErr_Clear();   /* no slot: a shown memo stays the memo */
    }
#endif
#else
    (void)st;
#endif
}

FC_INTERNAL void
fc_stamps_fini(FcState *st)
{
#if !FC_HAVE_DICT_VERSION
    if (st->names_watcher >= 0) {
        if (st->names_watched != NULL) {
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(st->names_watched); i++) {
                (void)PyDict_Unwatch(st->names_watcher, PyList_GET_ITEM(st->names_watched, i));
            }
        }
        (void)PyDict_ClearWatcher(st->names_watcher);
        PyErr_Clear();
        st->names_watcher = -1;
    }
    Py_CLEAR(st->names_watched);
    if (st->src_watcher >= 0) {
        /* no frame is alive: nothing is watched by it any more */
        (void)PyDict_ClearWatcher(st->src_watcher);
        PyErr_Clear();
        st->src_watcher = -1;
    }
    if (st->mirror_watcher >= 0) {
        /* every call's mirror was unwatched when its call ended */
        (void)PyDict_ClearWatcher(st->mirror_watcher);
        PyErr_Clear();
        st->mirror_watcher = -1;
    }
#else
    (void)st;
#endif
}
