/*
 * select.c: selective copying -- deepcopy(x, share=...) keeps matching
 * objects by reference wherever they occur (the walker matches them,
 * deepcopy.c "fc_share_match"; here: the argument's check and
 * replicate()).
 */
#include "fastcopy.h"
#include "select.h"
#include "deepcopy.h"
#include "memo.h"
#include "plan.h"
#include "state.h"
#include "testing.h"

/* share= must be a type, a tuple of types, or a callable.  0 | -1+exc */
FC_INTERNAL int
fc_check_share(PyObject *share)
{
    if (PyType_Check(share) || PyCallable_Check(share)) {
        return 0;
    }
    int ok = PyTuple_Check(share);
    for (Py_ssize_t i = 0; ok && i < PyTuple_GET_SIZE(share); i++) {
        ok = PyType_Check(PyTuple_GET_ITEM(share, i));
    }
    if (!ok) {
        PyErr_Format(PyExc_TypeError,
                     "share must be a type, a tuple of types or a callable, not %.200s",
                     Py_TYPE(share)->tp_name);
        return -1;
    }
    return 0;
}
/* ------------------------------------------------------------------ */
/* replicate(): record once, replay n times                            */
/* ------------------------------------------------------------------ */

/*
 * A tape is the source graph flattened in deepcopy's visiting order, for
 * graphs made only of exact lists, dicts and tuples, deep-atomic objects
 * and objects kept by share=.  Each list, dict and non-atomic tuple gets a
 * node number when first met; a second reference to it becomes a REF op,
 * which is what the memo would have answered.  Any other object -- an
 * instance, a hook, a recursive tuple, a key whose hash is not the
 * interpreter's own -- and the tape is abandoned for n ordinary deep
 * copies.
 *
 * The first replica is always an ordinary deep copy (fc_deepcopy_tape),
 * whose walk also reports whether it met anything a tape cannot hold
 * (FcCtx.off_tape, set on the walker's other roads).  Only a source that
 * passed is recorded, so a recording is not abandoned half-way at an
 * object found late -- which cost up to a walk on top of the n copies --
 * and a source no tape holds costs what the loop costs.  Recording costs
 * about a walk and its templates become the last replica, so it is done
 * only where fc_tape_pays says so, from the replicas still to make and the
 * walk's counts of containers and memo hits (second references, which
 * cost a tape more than a walk): otherwise the rest are walks too, and
 * replicate() is never slower than the loop.
 *
 * What a replica costs is what the tape makes it do, so the tape holds
 * each container in the form that is cheapest to rebuild:
 *   - a dict is a *template*: x.copy() taken while recording, in which
 *     every value that is not its own deep copy (a container, a REF) is
 *     replaced by None.  A replica's dict is template.copy() -- CPython
 *     clones the key table, no key is hashed or inserted, as in the
 *     walker's "prefill" (deepcopy.c) -- and the values still to make are
 *     written into their entries (fc_dict_put_at; PyDict_SetItem where the
 *     layout is not the one checked at import).  The op yielding such a
 *     value (a REF, or the END of a container) carries the entry and the
 *     key.  The last replica takes the templates themselves, so over the
 *     call every dict is copied from its source once per replica, as by
 *     the loop.
 *   - a list or tuple is a template too, made while recording: the items
 *     that are their own copies in their places, None in the others.  A
 *     RUN op copies k items from it at once; the others are made by their
 *     ops and stored in their places.  The last replica takes these
 *     templates as well.
 * So a replica costs an allocation per container plus a store per item,
 * where a walk also looks every container up in the memo, stores it there,
 * dispatches on every object and manages a frame.  The recording costs
 * about one walk.
 *
 * Why the replicas are exactly [deepcopy(x, share=share) for _ in range(n)]:
 * no user code runs while the tape is recorded, nor while it is replayed,
 * except finalizers of garbage collections (next paragraph).
 *   - Recording reads the source through borrowed references and cached
 *     sizes.  That is sound only because nothing in it can run Python code.
 *     Its only GC-tracked allocations are the templates, x.copy() of dicts
 *     whose keys were all checked quiet first (fc_key_quiet: no __eq__ can
 *     run in the copy), and on 3.10/3.11, where any such allocation may
 *     start a collection, collections are held off until the recording
 *     ends (no Python code runs meanwhile that could see the switch; 3.12+
 *     collect at the eval breaker only).  It decides share= itself, without
 *     a call: replicate records only when share is None or a type (or tuple
 *     of types) whose metaclass is exactly `type`, and an object is matched
 *     only where isinstance() would run none of its own code (fc_tape_share).
 *     A predicate, an ABC or any other __instancecheck__ is user code that
 *     may mutate the source, and n deep copies must call it n times in
 *     deepcopy's order: then there is no tape at all, replicate() *is* the
 *     n calls.  Keep it so: anything added to fc_tape_record that can run
 *     Python code must first hold strong references to what it reads after.
 *   - Replaying reads only the tape, which holds strong references to every
 *     object it puts into a replica; templates are private and hidden from
 *     the collector (no finalizer can find one through gc.get_objects()),
 *     and a dict key on the tape hashes with the interpreter's own code.
 *     On 3.10/3.11 an allocation may run a collection and so finalizers,
 *     which may mutate the source: the replicas made after that are copies
 *     of the source as it was recorded, a consistent copy from before the
 *     change, as the stdlib could give had the collection come after the
 *     copy.  Nodes a REF points back to are held strongly until the
 *     replica is done, lists and tuples are hidden from the collector
 *     (fc_untrack) and so is the result list until it is complete: a
 *     finalizer that digs into objects through gc.get_objects() finds only
 *     valid ones (a dict being filled, None where a value is still to come;
 *     a write into it that went wrong falls back to PyDict_SetItem) and
 *     cannot free or resize what the replay still writes to.
 */
/* Replicas still to make, after the first, for a recording to pay (see
   fc_replicate; benchmarks/replicate.py measures it) */
#define FC_TAPE_LEAST 2
/* Second references (REF ops) cost a tape more than a walk: recording
   one and putting it into the last replica cost about FC_TAPE_REF_COST
   instructions more than the walk's memo hit, and each other replica
   saves only about FC_TAPE_REF_GAIN on it, where it saves about
   FC_TAPE_NODE_GAIN or more per container (callgrind, 3.11, fitted on
   the shapes of benchmarks/replicate.py and the cost-model test: a list
   of 5,000 references to one list costs about 240 a reference to record
   and put into the last replica, 50 to replay, 90 to walk; a container
   about 350-1,600 to walk, 600-1,000 less to replay) */
#define FC_TAPE_REF_COST 160
#define FC_TAPE_REF_GAIN 30
#define FC_TAPE_NODE_GAIN 200

enum { T_CONST = 1, T_RUN, T_REF, T_LIST, T_DICT, T_TUPLE, T_END };

typedef struct {
    uint8_t op;
    uint8_t track;       /* DICT: its copies are tracked by the collector */
    uint32_t ix;         /* REF/END inside a dict: the value's entry */
    Py_ssize_t n;        /* LIST/TUPLE: size; REF: node, then slot;
                            RUN: how many items */
    Py_ssize_t node;     /* LIST/DICT/TUPLE: node number while recording,
                            then its slot in nodes (-1: no REF to it);
                            RUN: the first item's place */
    PyObject *obj;       /* strong.  CONST: the object; DICT: the template;
                            REF/END inside a dict: the key */
} FcTapeOp;

typedef struct {
    FcTapeOp *ops;
    Py_ssize_t nops, cap;
    Py_ssize_t nnodes;
    Py_ssize_t nslots;   /* nodes some REF points back to */
    FcMemo seen;         /* source container -> node number (as an int);
                            None: a tuple being recorded; Ellipsis: a tuple
                            deepcopy returns as itself */
    int maxdepth;        /* of the containers recorded */
    FcSpare *spare;      /* where the ops array comes from and goes */
    PyObject *share;     /* NULL, a type, or a tuple of types (quiet) */
    PyObject *s_class;   /* "__class__", strong, when share is a tuple */
    PyObject *obj_class; /* object.__dict__["__class__"], borrowed */
} FcTape;

static void
fc_tape_free(FcTape *t)
{
    for (Py_ssize_t i = 0; i < t->nops; i++) {
        Py_XDECREF(t->ops[i].obj);
    }
    if (t->ops != NULL) {
        fc_spare_give(t->spare, FC_SPARE_TAPE, t->ops, sizeof(FcTapeOp) * (size_t)t->cap);
    }
    t->ops = NULL;
    t->nops = t->cap = 0;
    fc_memo_clear(&t->seen);
    Py_CLEAR(t->s_class);
}

/* Is deciding share= for any object free of user code?  A type whose
   metaclass is exactly `type`, or a tuple of such: isinstance() then runs
   type's own __instancecheck__ (plus a __class__ lookup, fc_tape_share). */
static int
fc_tape_share_quiet(PyObject *share)
{
    if (share == NULL) {
        return 1;
    }
    if (PyType_Check(share)) {
        return Py_IS_TYPE(share, &PyType_Type);
    }
    if (!PyTuple_CheckExact(share)) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(share); i++) {
        if (!Py_IS_TYPE(PyTuple_GET_ITEM(share, i), &PyType_Type)) {
            return 0;
        }
    }
    return 1;
}

/* isinstance(x, t->share), computed without running any code of x's, or
   "unknown".  isinstance(x, cls) for a cls of metaclass `type` is
   PyObject_TypeCheck, and when that fails, a look-up of x.__class__: quiet
   for the builtin containers and for types with the generic getattr whose
   __class__ is object's own.  1 match | 0 no match | -1 unknown (no error) */
static int
fc_tape_share(FcTape *t, PyObject *x, int container)
{
    PyObject *s = t->share;
    PyTypeObject *tp = Py_TYPE(x);
    if (PyType_Check(s)) {
        return PyType_IsSubtype(tp, (PyTypeObject *)s) ? 1 : container ? 0 : -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(s);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyType_IsSubtype(tp, (PyTypeObject *)PyTuple_GET_ITEM(s, i))) {
            if (i == 0 || container) {
                return 1;
            }
            /* isinstance() looked x.__class__ up for the items before */
            return (tp->tp_getattro == PyObject_GenericGetAttr
                    && _PyType_Lookup(tp, t->s_class) == t->obj_class) ? 1 : -1;
        }
    }
    /* no match: a container is copied; anything else ends the tape */
    return container ? 0 : -1;
}


/* A new op; obj is stolen (NULL: none).  the op | NULL+exc */
static FcTapeOp *
fc_tape_emit(FcTape *t, int op, Py_ssize_t n, Py_ssize_t node, PyObject *obj)
{
    if (t->nops == t->cap) {
        size_t got;
        FcTapeOp *no;
        if (t->cap == 0
            && (no = fc_spare_take(t->spare, FC_SPARE_TAPE, sizeof(FcTapeOp) * 256, &got))) {
            t->ops = no;          /* the last call's: no allocation, no copy */
            t->cap = (Py_ssize_t)(got / sizeof(FcTapeOp));
            goto room;
        }
        Py_ssize_t ncap = t->cap ? t->cap * 2 : 256;
        no = PyMem_Realloc(t->ops, sizeof(FcTapeOp) * (size_t)ncap);
        if (no == NULL) {
            Py_XDECREF(obj);
            PyErr_NoMemory();
            return NULL;
        }
        t->ops = no;
        t->cap = ncap;
    }
room:;
    FcTapeOp *o = &t->ops[t->nops++];
    o->op = (uint8_t)op;
    o->track = 0;
    o->ix = 0;
    o->n = n;
    o->node = node;
    o->obj = obj;
    return o;
}

/* Items a .. b-1 of the list or tuple being recorded are their own
   copies: they join the run of such items the tape ends with, or start
   one.  0 | -1+exc */
static int
fc_tape_run(FcTape *t, Py_ssize_t a, Py_ssize_t b)
{
    FcTapeOp *run = &t->ops[t->nops - 1];
    if (run->op == T_RUN && run->node + run->n == a) {
        run->n += b - a;
        return 0;
    }
    return fc_tape_emit(t, T_RUN, b - a, a, NULL) ? 0 : -1;
}

/* Can x, read through `own` references the recording knows of (the
   source container's slot, a template's), be reached another way?  Not
   when those are all it has: it needs no entry in seen, and no lookup.
   Counts are exact on builds with the GIL (any reference the interpreter
   lends without counting is not one of the graph's).  1 | 0 */
FC_INLINE int
fc_tape_shared(PyObject *x, Py_ssize_t own)
{
#if FC_FT
    (void)x; (void)own;
    return 1;
#else
    return Py_REFCNT(x) != own;
#endif
}

/* seen[x] = node, if x can be met again.  0 | -1+exc */
static int
fc_tape_seen(FcTape *t, PyObject *x, Py_ssize_t own, Py_ssize_t node)
{
    if (!fc_tape_shared(x, own)) {
        return 0;
    }
    PyObject *num = PyLong_FromSsize_t(node);
    if (num == NULL) {
        return -1;
    }
    int r = fc_memo_set(&t->seen, x, num);
    Py_DECREF(num);
    return r;
}

static int fc_tape_record(FcCtx *c, FcTape *t, PyObject *x, Py_ssize_t own, int depth);

/* The items of list or tuple x (op T_LIST or T_TUPLE) into its template y
   (n empty places; stolen): an item that is its own copy is put there, an
   item that is not gets None there and its ops, the last of which names
   the place.  2 every item is its own copy | 1 | 0 abandoned | -1+exc */
static int
fc_tape_seq(FcCtx *c, FcTape *t, PyObject *x, int op, Py_ssize_t node,
            PyObject *y, Py_ssize_t n, int depth)
{
    PyObject **dst = op == T_LIST ? ((PyListObject *)y)->ob_item
                                  : ((PyTupleObject *)y)->ob_item;
    uint32_t atomic = FC_DEEP_ATOMIC & c->st->deep_ok;
    /* private: no finalizer may find it through gc.get_objects() */
    PyObject_GC_UnTrack(y);
    if (fc_tape_emit(t, op, n, node, y) == NULL) {
        return -1;
    }
    int r = 1, same = 1;
    Py_ssize_t run = 0;           /* items run .. i-1 are their own copies */
    /* no user code runs while recording: another thread's writes to a list
       wait (free-threaded builds), so the size and the items agree */
    FC_CS_BEGIN(x);
    if (op == T_LIST && PyList_GET_SIZE(x) != n) {
        r = 0;        /* changed by another thread since (free-threaded) */
    }
    /* x's items stay where they are: nothing below can resize it */
    PyObject **src = op == T_LIST ? ((PyListObject *)x)->ob_item
                                  : ((PyTupleObject *)x)->ob_item;
    for (Py_ssize_t i = 0; r > 0 && i < n; i++) {
        PyObject *item = src[i];
        if (FK_BIT(fc_kind(Py_TYPE(item))) & atomic) {
            dst[i] = Py_NewRef(item);
            continue;
        }
        /* the run before it goes first on the tape */
        if (i > run && fc_tape_run(t, run, i) < 0) {
            r = -1;
            break;
        }
        run = i;
        r = fc_tape_record(c, t, item, 1, depth + 1);
        if (r == 2) {
            dst[i] = Py_NewRef(item);     /* it stays in the run */
            r = 1;
        }
        else if (r == 1) {
            dst[i] = Py_NewRef(Py_None);
            t->ops[t->nops - 1].ix = (uint32_t)i;
            run = i + 1;
            same = 0;
        }
    }
    if (r > 0 && n > run && fc_tape_run(t, run, n) < 0) {
        r = -1;
    }
    FC_CS_END();
    return r > 0 && same ? 2 : r;
}

/* List x.  1 | 0 abandoned | -1+exc */
static int
fc_tape_list(FcCtx *c, FcTape *t, PyObject *x, Py_ssize_t own, int depth)
{
    Py_ssize_t n = PyList_GET_SIZE(x);
    if ((size_t)n > UINT32_MAX) {
        return 0;
    }
    Py_ssize_t node = t->nnodes++;
    PyObject *y;
    if (fc_tape_seen(t, x, own, node) < 0 || (y = PyList_New(n)) == NULL) {
        return -1;
    }
    int r = fc_tape_seq(c, t, x, T_LIST, node, y, n, depth);
    if (r <= 0) {
        return r;
    }
    return fc_tape_emit(t, T_END, 0, node, NULL) ? 1 : -1;
}

/* Tuple x, not all atomic.  2 x itself is its copy | 1 | 0 abandoned |
   -1+exc */
static int
fc_tape_tuple(FcCtx *c, FcTape *t, PyObject *x, Py_ssize_t own, int depth)
{
    Py_ssize_t n = PyTuple_GET_SIZE(x), start = t->nops;
    if ((size_t)n > UINT32_MAX) {
        return 0;
    }
    Py_ssize_t node = t->nnodes++;
    PyObject *y;
    /* in progress: met again before it is done, it is a recursive tuple */
    int shared = fc_tape_shared(x, own);
    if ((shared && fc_memo_set(&t->seen, x, Py_None) < 0) || (y = PyTuple_New(n)) == NULL) {
        return -1;
    }
    int r = fc_tape_seq(c, t, x, T_TUPLE, node, y, n, depth);
    if (r == 2) {
        /* every item came out identical: deepcopy returns the tuple itself
           and memoizes nothing (no node was made below it: each item is
           its own copy) */
        for (Py_ssize_t i = start; i < t->nops; i++) {
            Py_CLEAR(t->ops[i].obj);
        }
        t->nops = start;
        t->nnodes--;
        return shared && fc_memo_set(&t->seen, x, Py_Ellipsis) < 0 ? -1 : 2;
    }
    if (r <= 0) {
        return r;
    }
    if (fc_tape_seen(t, x, own, node) < 0) {
        return -1;
    }
    return fc_tape_emit(t, T_END, 0, node, NULL) ? 1 : -1;
}

/* Dict x: its template, and the values that are not their own copies.
   1 | 0 abandoned | -1+exc */
static int
fc_tape_dict(FcCtx *c, FcTape *t, PyObject *x, Py_ssize_t own, int depth)
{
    Py_ssize_t node = t->nnodes++;
    if (fc_tape_seen(t, x, own, node) < 0) {
        return -1;
    }
    /* the replay hashes no key (the copy of a template clones its table;
       PyDict_SetItem where it does not), but x.copy() may compare keys
       when it rebuilds a table: only keys whose hash and equality are the
       interpreter's own */
    PyObject *key, *val, *tmpl;
    Py_ssize_t pos = 0;
    int quiet = 1;
    FC_CS_BEGIN(x);
    while (quiet && fc_dict_next(c, x, &pos, &key, &val)) {
        quiet = fc_key_quiet(key);
    }
    FC_CS_END();
    if (!quiet) {
        return 0;
    }
    tmpl = PyDict_Copy(x);   /* lint: own container (collections held off) */
    if (tmpl == NULL) {
        return -1;
    }
    /* private: no finalizer may find it through gc.get_objects() */
    int tracked = PyObject_GC_IsTracked(tmpl);
    if (tracked) {
        PyObject_GC_UnTrack(tmpl);
    }
    Py_ssize_t start = t->nops;
    if (fc_tape_emit(t, T_DICT, PyDict_GET_SIZE(tmpl), node, tmpl) == NULL) {
        return -1;
    }
    /* read from the template, which nothing else can change: a value's
       entry there is the entry of its copies */
    int r = 1, kids = 0;
    pos = 0;
    while (r > 0 && fc_dict_next(c, tmpl, &pos, &key, &val)) {
        if (!fc_key_quiet(key) || pos - 1 > (Py_ssize_t)UINT32_MAX) {
            r = 0;   /* another thread's key (free-threaded builds) */
            break;
        }
        if (fc_deep_atomic(c, val)) {
            continue;
        }
        /* read through x's entry and the template's */
        r = fc_tape_record(c, t, val, 2, depth + 1);
        if (r == 2) {
            r = 1;   /* the template holds it */
            continue;
        }
        if (r <= 0) {
            break;
        }
        FcTapeOp *o = &t->ops[t->nops - 1];
        o->ix = (uint32_t)(pos - 1);
        o->obj = Py_NewRef(key);
        kids = 1;
        /* a replica gets its own value there: the template holds none of
           the source's containers */
        if (!fc_dict_put_at(c, tmpl, pos - 1, key, Py_None)
            && PyDict_SetItem(tmpl, key, Py_None) < 0) {
            r = -1;
        }
    }
    if (r <= 0) {
        return r;
    }
    t->ops[start].track = (uint8_t)(tracked || kids);
    return fc_tape_emit(t, T_END, 0, node, NULL) ? 1 : -1;
}

/* Record x.  Runs no Python code (see above): borrowed references into
   the source stay valid throughout.  2 x is its own copy (nothing
   emitted: the caller places it) | 1 recorded (the last op emitted yields
   the copy) | 0 abandoned | -1+exc */
static int
fc_tape_record(FcCtx *c, FcTape *t, PyObject *x, Py_ssize_t own, int depth)
{
    FcState *st = c->st;
    int k = fc_kind(Py_TYPE(x));
    uint32_t bit = FK_BIT(k) & st->deep_ok;
    if (bit & FC_DEEP_ATOMIC) {
        return 2;
    }
    PyObject *seen = fc_tape_shared(x, own) ? fc_memo_get(&t->seen, x) : NULL;
    if (seen != NULL) {
        if (seen == Py_None) {
            return 0;                  /* a tuple still being recorded */
        }
        if (seen == Py_Ellipsis) {
            return 2;
        }
        return fc_tape_emit(t, T_REF, PyLong_AsSsize_t(seen), 0, NULL) ? 1 : -1;
    }
    int container = bit && (k == FK_LIST || k == FK_DICT || k == FK_TUPLE);
    if (t->share != NULL) {
        int r = fc_tape_share(t, x, container);
        if (r != 0) {
            return r < 0 ? 0 : 2;
        }
    }
    if (!container || depth > FC_TAPE_MAX_DEPTH) {
        return 0;
    }
    if (depth > t->maxdepth) {
        t->maxdepth = depth;
    }
    if (k == FK_TUPLE) {
        /* deepcopy returns an all-atomic tuple itself */
        return fc_tuple_atomic(c, x) ? 2 : fc_tape_tuple(c, t, x, own, depth);
    }
    return k == FK_LIST ? fc_tape_list(c, t, x, own, depth) : fc_tape_dict(c, t, x, own, depth);
}

/* Give the nodes some REF points back to dense slots (the others need no
   reference during the replay).  0 | -1+exc */
static int
fc_tape_slots(FcTape *t)
{
    Py_ssize_t *slot = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(t->nnodes + 1));
    if (slot == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < t->nnodes; i++) {
        slot[i] = -1;
    }
    for (Py_ssize_t i = 0; i < t->nops; i++) {
        FcTapeOp *o = &t->ops[i];
        if (o->op == T_REF) {
            if (slot[o->n] < 0) {
                slot[o->n] = t->nslots++;
            }
            o->n = slot[o->n];
        }
    }
    for (Py_ssize_t i = 0; i < t->nops; i++) {
        FcTapeOp *o = &t->ops[i];
        if (o->op == T_LIST || o->op == T_DICT || o->op == T_TUPLE) {
            o->node = slot[o->node];
        }
    }
    PyMem_Free(slot);
    return 0;
}

typedef struct {
    PyObject *y;
    PyObject **src;      /* list, tuple: the template's items */
    uint8_t op;
    uint8_t own;         /* y is the template itself (the last replica) */
} FcReplayFrame;

/* Containers of this many items and more are hidden from the collector
   as soon as they are made, grace or not: a collection would traverse all
   their items, where hiding costs about what traversing a few does. */
#define FC_TAPE_HIDE_ITEMS 64

/* Hide the replay's y (tracked) from the collector: when it is big, now;
   else as one deepcopy() call would (fc_untrack).  0 | -1+exc */
static int
fc_tape_hide(FcCtx *c, PyObject *y, Py_ssize_t items)
{
    /* 3.12+: a replay runs no user code, so no collection (memo.c) */
    if (FC_GC_ANY_ALLOC && items >= FC_TAPE_HIDE_ITEMS) {
        PyObject_GC_UnTrack(y);
        return fc_untrack_fresh(c, y);   /* listed: tracked again at the end */
    }
    return fc_untrack(c, y);
}

/* One replica.  nodes: t->nslots NULLs, NULLs again on return.  last: the
   last replica, which takes the templates themselves.
   new ref | NULL+exc */
static PyObject *
fc_tape_replay(FcCtx *c, FcTape *t, PyObject **nodes, FcReplayFrame *stack, int last)
{
    Py_ssize_t sp = 0;
    PyObject *result = NULL;
    for (Py_ssize_t pc = 0; pc < t->nops; pc++) {
        FcTapeOp *o = &t->ops[pc];
        PyObject *v;
        switch (o->op) {
        case T_RUN: {
            /* items o->node .. o->node + o->n - 1: a template already has
               them; a new list's size counts the items filled so far */
            FcReplayFrame *f = &stack[sp - 1];
            if (f->own) {
                continue;
            }
            PyObject **src = f->src + o->node;
            PyObject **dst = (f->op == T_LIST ? ((PyListObject *)f->y)->ob_item
                              : ((PyTupleObject *)f->y)->ob_item) + o->node;
            for (Py_ssize_t k = 0; k < o->n; k++) {
                dst[k] = Py_NewRef(src[k]);
            }
            if (f->op == T_LIST) {
                Py_SET_SIZE(f->y, o->node + o->n);
            }
            continue;
        }
        case T_CONST:
            v = Py_NewRef(o->obj);
            break;
        case T_REF:
            v = Py_NewRef(nodes[o->n]);
            break;
        case T_LIST:
        case T_DICT:
        case T_TUPLE: {
            PyObject *y;
            int r;
            if (last) {
                /* the op's reference; lists and tuples were made tracked,
                   and are listed to be tracked again when the call ends */
                y = o->obj;
                o->obj = NULL;
                if (o->op != T_DICT) {
                    r = fc_untrack_fresh(c, y);
                }
                else {
                    if (o->track) {
                        PyObject_GC_Track(y);
                    }
                    r = 0;
                }
            }
            else if (o->op == T_LIST) {
                y = PyList_New(o->n);
                if (y != NULL) {
                    Py_SET_SIZE(y, 0);
                }
                r = y == NULL ? -1 : fc_tape_hide(c, y, o->n);
            }
            else if (o->op == T_TUPLE) {
                y = PyTuple_New(o->n);
                r = y == NULL ? -1 : fc_tape_hide(c, y, o->n);
            }
            else {
                y = PyDict_Copy(o->obj);   /* lint: own container */
                if (y != NULL && o->track && !PyObject_GC_IsTracked(y)) {
                    PyObject_GC_Track(y);
                }
                r = y == NULL ? -1 : 0;
            }
            if (r < 0) {
                Py_XDECREF(y);
                goto error;
            }
            if (o->node >= 0) {
                nodes[o->node] = Py_NewRef(y);
            }
            stack[sp].y = y;             /* the frame owns it */
            stack[sp].src = last || o->op == T_DICT ? NULL
                            : o->op == T_LIST ? ((PyListObject *)o->obj)->ob_item
                            : ((PyTupleObject *)o->obj)->ob_item;
            stack[sp].op = o->op;
            stack[sp].own = (uint8_t)last;
            sp++;
            continue;
        }
        default: /* T_END */
            sp--;
            v = stack[sp].y;
            if (stack[sp].op == T_DICT && PyObject_GC_IsTracked(v)
                && fc_tape_hide(c, v, PyDict_GET_SIZE(v)) < 0) {
                Py_DECREF(v);
                goto error;
            }
            break;
        }
        if (sp == 0) {
            result = v;
            continue;
        }
        FcReplayFrame *f = &stack[sp - 1];
        if (f->op == T_DICT) {
            int r = fc_dict_put_at(c, f->y, o->ix, o->obj, v) ? 0
                    : PyDict_SetItem(f->y, o->obj, v);
            Py_DECREF(v);
            if (r < 0) {
                goto error;
            }
            continue;
        }
        PyObject **place = (f->op == T_LIST ? ((PyListObject *)f->y)->ob_item
                            : ((PyTupleObject *)f->y)->ob_item) + o->ix;
        if (f->own) {
            Py_SETREF(*place, v);        /* None, the template's */
        }
        else {
            *place = v;
            if (f->op == T_LIST) {
                Py_SET_SIZE(f->y, (Py_ssize_t)o->ix + 1);
            }
        }
    }
    for (Py_ssize_t i = 0; i < t->nslots; i++) {
        Py_CLEAR(nodes[i]);
    }
    return result;
error:
    while (sp > 0) {
        sp--;
        Py_DECREF(stack[sp].y);
    }
    for (Py_ssize_t i = 0; i < t->nslots; i++) {
        Py_CLEAR(nodes[i]);
    }
    Py_XDECREF(result);
    return NULL;
}

/* Record x on t.  1 recorded | 0 abandoned | -1+exc */
static int
fc_tape_make(FcCtx *c, FcTape *t, PyObject *x)
{
#if !FC_PY312_PLUS
    /* the templates are the recording's only tracked allocations: no
       collection (and so no finalizer) while borrowed references into the
       source are held */
    int gc_was = PyGC_Disable();
#endif
    int r = fc_tape_record(c, t, x, 0, 0);
#if !FC_PY312_PLUS
    if (gc_was) {
        PyGC_Enable();
    }
#endif
    if (r == 2) {
        r = fc_tape_emit(t, T_CONST, 0, 0, Py_NewRef(x)) ? 1 : -1;
    }
    if (r > 0 && fc_tape_slots(t) < 0) {
        return -1;
    }
    fc_memo_clear(&t->seen);          /* the replay needs the ops only */
    return r;
}

/* Does a tape of the source whose walk p reports pay, with `left`
   replicas to make (the last of them the recording's templates)?  A walk
   made of containers and atomic objects: from two on (a recording costs
   about a walk).  Second references cost it more than they save per
   replica, so with many of them against few containers it needs more
   replicas, or is not made at all.  1 | 0 */
static int
fc_tape_pays(const FcTapeProbe *p, Py_ssize_t left)
{
    if (!p->ok || left < FC_TAPE_LEAST) {
        return 0;
    }
    double gain = (double)(left - 1) * ((double)FC_TAPE_NODE_GAIN * (double)p->containers
                                        + (double)FC_TAPE_REF_GAIN * (double)p->hits);
    return gain >= (double)FC_TAPE_REF_COST * (double)p->hits;
}

/* [deepcopy(x, share=share) for _ in range(n)].  new ref | NULL+exc */
FC_INTERNAL PyObject *
fc_replicate(FcState *st, PyObject *x, Py_ssize_t n, PyObject *share)
{
    /* filled in place, so hidden from the collector until it is complete:
       user code (a predicate, a finalizer) that found it through
       gc.get_objects() and resized it would pull the storage from under
       the stores below; its size counts the finished replicas only */
    PyObject *out = PyList_New(n);
    if (out == NULL) {
        return NULL;
    }
    Py_SET_SIZE(out, 0);
    if (n == 0) {
        return out;
    }
    PyObject_GC_UnTrack(out);
    if (fc_sync(st) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    FcCtx c;
    fc_ctx_init(&c, st);
    c.share = share;
    /* as in one deepcopy() call (memo.c): the first FC_GC_GRACE containers
       stay tracked, the replicas' later ones are hidden as they are made
       (a few small replicas cost no more than the loop's; many are not
       traversed by every collection their allocations trigger); big ones
       are hidden at once (fc_tape_hide) */
    FcTape t = {0};
    t.spare = c.native.spare;     /* NULL on free-threaded builds */
    fc_memo_init(&t.seen);
    PyObject **nodes = NULL;
    FcReplayFrame *stack = NULL;
    Py_ssize_t i = 0;
    int r = 0;
    FcTapeProbe probe;
    /* The first replica is an ordinary deep copy, whose walk also tells
       whether the source is one a tape holds.  A source it is not costs
       nothing more than the loop then, wherever the object that stops a
       tape lies (a recording would have read everything before it). */
    PyObject *y = fc_deepcopy_tape(st, x, share, &probe);
    if (y == NULL) {
        goto error;
    }
    PyList_SET_ITEM(out, 0, y);
    Py_SET_SIZE(out, 1);
    i = 1;
    /* The recording costs about a walk and the last replica is its
       templates (fc_tape_pays); a predicate is user code: n deep copies
       call it n times, in deepcopy's order, and see what it does to the
       source */
    int pays = st->test.replicate_walk < 0 ? probe.ok && n >= 2
               : st->test.replicate_walk == 0 && fc_tape_pays(&probe, n - 1);
    if (pays && fc_tape_share_quiet(share)) {
        t.share = share;
        if (share != NULL && PyTuple_Check(share)) {
            t.s_class = PyUnicode_InternFromString("__class__");
            if (t.s_class == NULL) {
                goto error;
            }
            t.obj_class = _PyType_Lookup(&PyBaseObject_Type, t.s_class);
        }
        r = fc_tape_make(&c, &t, x);
        if (r < 0) {
            goto error;
        }
        st->test.replicate_wasted += r == 0;
    }
    if (r > 0) {
        nodes = PyMem_Calloc((size_t)t.nslots + 1, sizeof(PyObject *));
        stack = PyMem_Malloc(sizeof(FcReplayFrame) * (size_t)(t.maxdepth + 2));
        if (nodes == NULL || stack == NULL) {
            PyErr_NoMemory();
            goto error;
        }
        st->test.replicate_tapes++;
        /* replicas stay hidden from the cyclic GC until the call ends
           (memo.c): collections our allocations trigger need not traverse
           them again and again; fc_ctx_fini() tracks them again */
        for (; i < n; i++) {
            y = fc_tape_replay(&c, &t, nodes, stack, i == n - 1);
            if (y == NULL) {
                goto error;
            }
            PyList_SET_ITEM(out, i, y);
            Py_SET_SIZE(out, i + 1);
        }
    }
    else {
        /* nothing recorded is used: let go of the tape now */
        fc_tape_free(&t);
    }
    for (; i < n; i++) {
        y = fc_deepcopy(st, x, NULL, NULL, share);
        if (y == NULL) {
            goto error;
        }
        PyList_SET_ITEM(out, i, y);
        Py_SET_SIZE(out, i + 1);
    }
    PyMem_Free(nodes);
    PyMem_Free(stack);
    fc_ctx_fini(&c);
    fc_tape_free(&t);
    PyObject_GC_Track(out);
    return out;
error:
    PyMem_Free(nodes);
    PyMem_Free(stack);
    fc_ctx_fini(&c);
    fc_tape_free(&t);
    Py_DECREF(out);
    return NULL;
}
