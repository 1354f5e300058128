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
 * which is what the memo would have answered.  Replaying builds the copy
 * with no memo hashing, no keep-alive and no dispatch.  Any other object --
 * an instance, a hook, a recursive tuple, a key whose hash is not the
 * interpreter's own -- and the tape is abandoned for n ordinary deep
 * copies.
 *
 * Why the replicas are exactly [deepcopy(x, share=share) for _ in range(n)]:
 * no user code runs while the tape is recorded, nor while it is replayed,
 * except finalizers of garbage collections (next paragraph).
 *   - Recording reads the source through borrowed references and cached
 *     sizes.  That is sound only because nothing in it can run Python code:
 *     it allocates no GC-tracked object (the tape and its memo are PyMem
 *     blocks, node numbers are ints), and it decides share= itself, without
 *     a call: replicate records only when share is None or a type (or tuple
 *     of types) whose metaclass is exactly `type`, and an object is matched
 *     only where isinstance() would run none of its own code (fc_tape_share).
 *     A predicate, an ABC or any other __instancecheck__ is user code that
 *     may mutate the source, and n deep copies must call it n times in
 *     deepcopy's order: then there is no tape at all, replicate() *is* the
 *     n calls.  Keep it so: anything added to fc_tape_record that can run
 *     Python code must first hold strong references to what it reads after.
 *   - Replaying reads only the tape, which holds strong references to every
 *     object it puts into a replica, and dict keys on the tape hash with the
 *     interpreter's own code (fc_key_quiet).  On 3.10/3.11 an allocation may
 *     run a collection and so finalizers, which may mutate the source: the
 *     replicas made after that are copies of the source as it was recorded,
 *     a consistent copy from before the change, as the stdlib could give
 *     had the collection come after the copy.  Nodes a REF points back to
 *     are held strongly until the replica is done, lists and tuples are
 *     hidden from the collector (fc_untrack) and so is the result list
 *     until it is complete: a finalizer that digs into objects through
 *     gc.get_objects() finds only valid ones (a dict being filled) and
 *     cannot free or resize what the replay still writes to.
 */
enum { T_CONST = 1, T_REF, T_LIST, T_DICT, T_TUPLE, T_END };

typedef struct {
    uint8_t op;
    Py_ssize_t n;        /* LIST/DICT/TUPLE: size; REF: slot in nodes */
    Py_ssize_t node;     /* LIST/DICT/TUPLE: node number while recording,
                            then its slot in nodes (-1: no REF to it) */
    PyObject *obj;       /* CONST: strong */
} FcTapeOp;

typedef struct {
    FcTapeOp *ops;
    Py_ssize_t nops, cap;
    Py_ssize_t nnodes;
    Py_ssize_t nslots;   /* nodes some REF points back to */
    FcMemo seen;         /* source container -> node number (as an int) */
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
    PyMem_Free(t->ops);
    t->ops = NULL;
    t->nops = 0;
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

/* 0 | -1+exc */
static int
fc_tape_emit(FcTape *t, int op, Py_ssize_t n, Py_ssize_t node, PyObject *obj)
{
    if (t->nops == t->cap) {
        Py_ssize_t ncap = t->cap ? t->cap * 2 : 256;
        FcTapeOp *no = PyMem_Realloc(t->ops, sizeof(FcTapeOp) * (size_t)ncap);
        if (no == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        t->ops = no;
        t->cap = ncap;
    }
    FcTapeOp *o = &t->ops[t->nops++];
    o->op = (uint8_t)op;
    o->n = n;
    o->node = node;
    o->obj = Py_XNewRef(obj);
    return 0;
}

#define FC_TAPE_MAX_DEPTH 2000

/* Record x.  Runs no Python code (see above): borrowed references into
   the source stay valid throughout.  1 recorded | 0 abandoned | -1+exc */
static int
fc_tape_record(FcCtx *c, FcTape *t, PyObject *x, int depth)
{
    FcState *st = c->st;
    int k = fc_kind(Py_TYPE(x));
    uint32_t bit = FK_BIT(k) & st->deep_ok;
    if (bit & FC_DEEP_ATOMIC) {
        return fc_tape_emit(t, T_CONST, 0, 0, x) < 0 ? -1 : 1;
    }
    PyObject *seen = fc_memo_get(&t->seen, x);
    if (seen != NULL) {
        if (seen == Py_None) {
            return 0;                  /* a tuple still being recorded */
        }
        return fc_tape_emit(t, T_REF, PyLong_AsSsize_t(seen), 0, NULL) < 0 ? -1 : 1;
    }
    int container = bit && (k == FK_LIST || k == FK_DICT || k == FK_TUPLE);
    if (t->share != NULL) {
        int r = fc_tape_share(t, x, container);
        if (r != 0) {
            return r < 0 ? 0 : (fc_tape_emit(t, T_CONST, 0, 0, x) < 0 ? -1 : 1);
        }
    }
    if (!container || depth > FC_TAPE_MAX_DEPTH) {
        return 0;
    }
    if (k == FK_TUPLE) {
        /* deepcopy returns an all-atomic tuple itself */
        Py_ssize_t n = PyTuple_GET_SIZE(x), i;
        for (i = 0; i < n; i++) {
            if (!fc_deep_atomic(c, PyTuple_GET_ITEM(x, i))) {
                break;
            }
        }
        if (i == n) {
            return fc_tape_emit(t, T_CONST, 0, 0, x) < 0 ? -1 : 1;
        }
    }
    Py_ssize_t node = t->nnodes++;
    Py_ssize_t start = t->nops;
    PyObject *num = k == FK_TUPLE ? Py_NewRef(Py_None) : PyLong_FromSsize_t(node);
    if (num == NULL || fc_memo_set(&t->seen, x, num) < 0) {
        Py_XDECREF(num);
        return -1;
    }
    Py_DECREF(num);
    int op = k == FK_LIST ? T_LIST : k == FK_DICT ? T_DICT : T_TUPLE;
    int r;
    /* no user code runs while recording: another thread's writes to x wait
       (free-threaded builds), so the size and the items agree */
    FC_CS_BEGIN(x);
    Py_ssize_t n = k == FK_LIST ? PyList_GET_SIZE(x) : k == FK_DICT ? PyDict_GET_SIZE(x)
                                                                     : PyTuple_GET_SIZE(x);
    r = fc_tape_emit(t, op, n, node, NULL) < 0 ? -1 : 1;
    if (r > 0 && k == FK_DICT) {
        Py_ssize_t pos = 0;
        PyObject *key, *val;
        while (r > 0 && PyDict_Next(x, &pos, &key, &val)) {
            /* the replay hashes the key: only the interpreter's own hash */
            if (!fc_key_quiet(key)) {
                r = 0;
                break;
            }
            r = fc_tape_emit(t, T_CONST, 0, 0, key) < 0 ? -1 : 1;
            if (r > 0) {
                r = fc_tape_record(c, t, val, depth + 1);
            }
        }
    }
    else if (r > 0) {
        for (Py_ssize_t i = 0; r > 0 && i < n; i++) {
            PyObject *item = k == FK_LIST ? PyList_GET_ITEM(x, i) : PyTuple_GET_ITEM(x, i);
            r = fc_tape_record(c, t, item, depth + 1);
        }
    }
    FC_CS_END();
    if (r <= 0) {
        return r;
    }
    if (k == FK_TUPLE) {
        /* every item came out identical: the tuple itself, as deepcopy does */
        int same = 1;
        for (Py_ssize_t i = start + 1; same && i < t->nops; i++) {
            same = t->ops[i].op == T_CONST;
        }
        if (same) {
            for (Py_ssize_t i = start; i < t->nops; i++) {
                Py_CLEAR(t->ops[i].obj);
            }
            t->nops = start;
            t->nnodes--;
            return fc_tape_emit(t, T_CONST, 0, 0, x) < 0 ? -1 : 1;
        }
        PyObject *num2 = PyLong_FromSsize_t(node);
        if (num2 == NULL || fc_memo_set(&t->seen, x, num2) < 0) {
            Py_XDECREF(num2);
            return -1;
        }
        Py_DECREF(num2);
    }
    return fc_tape_emit(t, T_END, 0, node, NULL) < 0 ? -1 : 1;
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
    PyObject *key;       /* dict: the key waiting for its value */
    Py_ssize_t i;        /* tuple: next slot */
    uint8_t op;
} FcReplayFrame;

/* One replica.  nodes: t->nslots NULLs, NULLs again on return.
   new ref | NULL+exc */
static PyObject *
fc_tape_replay(FcCtx *c, FcTape *t, PyObject **nodes, FcReplayFrame *stack)
{
    Py_ssize_t sp = 0;
    PyObject *result = NULL;
    for (Py_ssize_t pc = 0; pc < t->nops; pc++) {
        FcTapeOp *o = &t->ops[pc];
        PyObject *v;
        switch (o->op) {
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
            if (o->op == T_LIST) {
                y = PyList_New(o->n);
                if (y != NULL) {
                    Py_SET_SIZE(y, 0);
                }
            }
            else if (o->op == T_DICT) {
                y = _PyDict_NewPresized(o->n);
            }
            else {
                y = PyTuple_New(o->n);
            }
            if (y == NULL) {
                goto error;
            }
            if (o->op != T_DICT && fc_untrack(c, y) < 0) {
                Py_DECREF(y);
                goto error;
            }
            if (o->node >= 0) {
                nodes[o->node] = Py_NewRef(y);
            }
            stack[sp].y = y;             /* the frame owns it */
            stack[sp].key = NULL;
            stack[sp].i = 0;
            stack[sp].op = o->op;
            sp++;
            continue;
        }
        default: /* T_END */
            sp--;
            v = stack[sp].y;
            if (stack[sp].op == T_DICT && fc_untrack(c, v) < 0) {
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
        if (f->op == T_LIST) {
            PyList_SET_ITEM(f->y, Py_SIZE(f->y), v);
            Py_SET_SIZE(f->y, Py_SIZE(f->y) + 1);
        }
        else if (f->op == T_TUPLE) {
            PyTuple_SET_ITEM(f->y, f->i, v);
            f->i++;
        }
        else if (f->key == NULL) {
            f->key = v;
        }
        else {
            int r = PyDict_SetItem(f->y, f->key, v);
            Py_CLEAR(f->key);
            Py_DECREF(v);
            if (r < 0) {
                goto error;
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
        Py_XDECREF(stack[sp].key);
        Py_DECREF(stack[sp].y);
    }
    for (Py_ssize_t i = 0; i < t->nslots; i++) {
        Py_CLEAR(nodes[i]);
    }
    Py_XDECREF(result);
    return NULL;
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
    c.gc_grace = -1;    /* n replicas: a big copy from the start (memo.c) */
    FcTape t = {0};
    fc_memo_init(&t.seen);
    PyObject **nodes = NULL;
    FcReplayFrame *stack = NULL;
    Py_ssize_t i = 0;
    int r = 0;
    /* a predicate is user code: n deep copies call it n times, in
       deepcopy's order, and see what it does to the source */
    if (n > 1 && fc_tape_share_quiet(share)) {
        t.share = share;
        if (share != NULL && PyTuple_Check(share)) {
            t.s_class = PyUnicode_InternFromString("__class__");
            if (t.s_class == NULL) {
                goto error;
            }
            t.obj_class = _PyType_Lookup(&PyBaseObject_Type, t.s_class);
        }
        r = fc_tape_record(&c, &t, x, 0);
        if (r < 0 || (r > 0 && fc_tape_slots(&t) < 0)) {
            goto error;
        }
        fc_memo_clear(&t.seen);          /* the replay needs the ops only */
    }
    if (r > 0) {
        nodes = PyMem_Calloc((size_t)t.nslots + 1, sizeof(PyObject *));
        stack = PyMem_Malloc(sizeof(FcReplayFrame) * (size_t)(FC_TAPE_MAX_DEPTH + 2));
        if (nodes == NULL || stack == NULL) {
            PyErr_NoMemory();
            goto error;
        }
        /* replicas stay hidden from the cyclic GC until the call ends
           (memo.c): collections our allocations trigger need not traverse
           them again and again; fc_ctx_fini() tracks them again */
        for (; i < n; i++) {
            PyObject *y = fc_tape_replay(&c, &t, nodes, stack);
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
        PyObject *y = fc_deepcopy(st, x, NULL, NULL, share);
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
