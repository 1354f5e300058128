/*
 * state.h: the module state, FcState, one per module object (per
 * interpreter).  Its core -- the stdlib pieces fastcopy follows, interned
 * names, the plan cache, the memo's spares -- is module.c's, plan.c's and
 * memo.c's; each buffer backend owns a block of its own (bk[], laid out by
 * its file alone, traversed and cleared by its backend table: backend.h); test-only counters and switches are in `test` (testing.h).
 * Fetched once per top-level call and passed down through FcCtx.
 */
#ifndef FASTCOPY_STATE_H
#define FASTCOPY_STATE_H

#include "fastcopy.h"
#include "testing.h"
#include "hooks.h"

/* Room for the buffer backends' own state (backend.h): FcState.bk[i] is
   backend i's block, laid out by its file alone. */
#define FC_BACKENDS_MAX 4
#define FC_BACKEND_STATE_BYTES 384
typedef union {
    void *align_ptr;
    int64_t align_i64;
    double align_dbl;
    char bytes[FC_BACKEND_STATE_BYTES];
} FcBackendState;

struct FcState {
    /* the stdlib pieces we follow (refreshed when the copy module or its
       dispatch tables change) */
    PyObject *copy_module;
    PyObject *copy_globals;        /* copy.__dict__ */
    PyObject *error;               /* copy.Error */
    PyObject *deep_dispatch;       /* copy._deepcopy_dispatch */
    PyObject *copy_dispatch;       /* copy._copy_dispatch (NULL where
                                      FC_COPY_SETS: pyver.h) */
    /* FC_COPY_SETS (3.14+; NULL before): copy._copy_atomic_types,
       _copy_builtin_containers and _atomic_types.  *_std: each holds
       exactly the stdlib's own types, so that the kinds' bits (deep_ok,
       copy_ok) say all there is to say and no other type need be looked up
       in them (fc_refresh) */
    PyObject *copy_atomic, *copy_containers, *deep_atomic;
    int copy_sets_std, deep_atomic_std;
    int fdict_ok;                  /* 3.15+: frozendict's _deepcopy_dispatch
                                      entry is the original, and it is not
                                      atomic: deepcopy.c's native road */
#if FC_COPY_SETS_MUTABLE
    FcSetSnap snap[3];             /* the three as fc_refresh last read them */
#endif
    PyObject *dispatch_table;      /* copy.dispatch_table (copyreg's) */
    PyObject *reconstruct;         /* copy._reconstruct */
    PyObject *reconstruct_helper;  /* f(r, x, memo, rv, dc): r(x, memo, *rv, deepcopy=dc) */
    PyObject *copyreg_globals;     /* copyreg.__dict__, watched */
    PyObject *copyreg_dispatch;    /* copyreg.dispatch_table, watched */
    /* the stdlib's original dispatch functions, captured at import */
    PyObject *orig_deep[FK__COUNT];
    PyObject *orig_copy[FK__COUNT];
    PyObject *orig_fdict;          /* copy._deepcopy_frozendict (3.15+) */
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

    int dict_slots_ok;             /* deepcopy.c "Values put in place": the
                                      dict layout checked at import */

    /* value types (plan.c, deepcopy.c "Value types") */
    uint32_t set_ok;               /* FK_SET/FK_FROZENSET bits: their reduce
                                      value is known (fc_refresh) */
    const PyDateTime_CAPI *dt_api; /* datetime's C API once a datetime is met */
    int dt_checked;
    PyObject *frac_deepcopy;       /* fractions.Fraction.__deepcopy__, verified */
    uint64_t frac_ver[2];          /* its globals' and builtins' version tags
                                      when its names were last checked */
    PyObject *uuid_info;           /* uuid.UUID, verified once (plan.c,
                                      fc_plan_uuid): a tuple, FC_UUID_* */
    unsigned int uuid_tag[2];      /* SafeUUID's and its metaclass's type tags */
    uint64_t uuid_ver[3];          /* version tags when last checked: the
                                      functions' globals and builtins, then
                                      SafeUUID._value2member_map_ (the members'
                                      _value_ is read every time) */

    PyTypeObject *method_type;     /* types.MethodType */
    PyTypeObject *code_type;

    /* which builtin kinds still have the stdlib's original entry */
    uint32_t deep_ok, copy_ok;
    uint64_t gen;                  /* bumped when the watched dicts change */
    uint64_t seen_gen;             /* gen the caches were computed for */
#if FC_PY312_PLUS
    int watcher_id;                /* -1 if none could be had */
#endif
#if !FC_HAVE_DICT_VERSION
    /* 3.14+: the names stamps (plan.c, fc_names_take): a second watcher, on
       the globals and builtins the library roads verified, and the dicts it
       watches (strong: unwatched when the module goes) */
    int names_watcher;             /* -1 if none could be had */
    PyObject *names_watched;       /* list | NULL */
    /* the source stamps (plan.c): a third watcher, on the dicts prefilled
       dict frames are copying, each while its frame lives (deepcopy.c) */
    int src_watcher;               /* -1: none, and no prefill */
    int mirror_watcher;            /* watch.c's mirror stamps; -1: none, and
                                      a shown memo stays the memo */
#endif
#if FC_PY312_PLUS
#else
    uint64_t ver[5];               /* ma_version_tag of the watched dicts */
#endif
    int always_refresh;            /* no watcher: re-check every call */

    /* interned names */
    PyObject *s_deepcopy, *s_copy, *s_reduce_ex, *s_reduce, *s_getstate,
             *s_setstate, *s_dict, *s_update, *s_append, *s_items, *s_get,
             *s_new, *s_getnewargs, *s_getnewargs_ex, *s_slotnames,
             *s_func, *s_self, *s_deepcopy_kw, *s_replace,
             *s_getinitargs, *s_fraction, *s_type, *s_value_, *s_memo;

    PyObject *empty_tuple;
    PyObject *nil;                 /* memo.get default, like copy's _nil */
    PyObject *py_deepcopy;         /* our deepcopy function object */

    PyObject *cowdict_type;        /* set by cowdict.c */
#if FC_FT
    /* free-threaded builds (docs/free-threading.md) */
    PyMutex plan_lock;             /* plans[] (plan.c) */
    PyMutex refresh_lock;          /* fc_refresh, one thread at a time */
    PyThreadState *refresh_owner;  /*   the thread in it (a nested refresh
                                      from a user mapping goes on) */
    PyObject *retired;             /* list: tables fc_refresh replaced, kept
                                      until the module goes (other threads
                                      may still be reading them) */
#endif

    FcPlan plans[FC_PLAN_SLOTS];   /* plan.c (traverse/clear: fc_plans_*) */
    FcSpare spare;                 /* the last call's heap buffers (memo.c) */
    struct FcCtx *shown;           /* calls whose memo a hook sees right now,
                                      innermost first (memo.c; GIL builds) */
    struct FcCtx *adopters;        /* calls working on a caller's dict through
                                      its native table (memo.c, "A caller's
                                      dict"), innermost first */

    /* profiling (profile.c) */
    int prof;                      /* FC_PROF_* bits; 0: off, one branch per
                                      top-level call */
    int huge_pages;                /* configure(huge_pages=): defer.c's FC_ROAD_HUGE */
    Py_ssize_t keep_arenas;        /* configure(keep_arenas=): arenas.c's cap */
    Py_ssize_t keep_arenas_set;    /* the cap this interpreter last applied */
    int64_t prof_warn_ns;          /* configure(warn_slow=) in ns; -1 off */
    PyObject *prof_hook;           /* fastcopy._profile._on_copy, or NULL */

    /* the buffer backends' blocks, by registry slot (backend.h) */
    FcBackendState bk[FC_BACKENDS_MAX];
    FcHooksState hooks;            /* hooks.c: library hooks verified */
    FcTestState test;              /* testing.h */
};

/* The copy module's globals that FcState follows, by name (module.c reads
   them at import, fc_refresh whenever the module changes). */
#if FC_COPY_SETS
#  define FC_COPY_NNAMES 7
#  define FC_COPY_NAMES {"_deepcopy_dispatch", "_copy_atomic_types", \
        "_copy_builtin_containers", "_atomic_types", "dispatch_table", \
        "_reconstruct", "Error"}
#  define FC_COPY_SLOTS(st) {&(st)->deep_dispatch, &(st)->copy_atomic, \
        &(st)->copy_containers, &(st)->deep_atomic, &(st)->dispatch_table, \
        &(st)->reconstruct, &(st)->error}
#else
#  define FC_COPY_NNAMES 5
#  define FC_COPY_NAMES {"_deepcopy_dispatch", "_copy_dispatch", \
        "dispatch_table", "_reconstruct", "Error"}
#  define FC_COPY_SLOTS(st) {&(st)->deep_dispatch, &(st)->copy_dispatch, \
        &(st)->dispatch_table, &(st)->reconstruct, &(st)->error}
#endif

/* The dicts whose changes move FcState.gen (plan.c): the copy module's and
   copyreg's globals and dispatch tables.  Fills ds[5]; how many. */
FC_INLINE int
fc_watched_dicts(FcState *st, PyObject **ds)
{
    int n = 0;
    ds[n++] = st->copy_globals;
    ds[n++] = st->deep_dispatch;
#if !FC_COPY_SETS
    ds[n++] = st->copy_dispatch;
#endif
    ds[n++] = st->copyreg_dispatch;
    ds[n++] = st->copyreg_globals;
    return n;
}

/* table.get(key) for the stdlib's tables (copy's and copyreg's dispatch
   tables, read by plan.c, reduce.c, copy.c and torch.c): exact dicts
   directly, anything else through its .get (user code).
   1 (*res new ref, may be None) | 0 | -1+exc */
FC_INLINE int
fc_table_get(FcState *st, PyObject *table, PyObject *key, PyObject **res)
{
    int r;
    /* a key's __eq__ may rebind the copy module's tables, and the refresh
       that follows drops st's reference: hold one of our own */
    Py_INCREF(table);
    if (PyDict_CheckExact(table)) {
        r = fc_dict_getref(table, key, res);
    }
    else {
        *res = PyObject_CallMethodOneArg(table, st->s_get, key);
        r = *res == NULL ? -1 : 1;
    }
    Py_DECREF(table);
    return r;
}

#endif /* FASTCOPY_STATE_H */
