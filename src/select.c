/*
 * select.c: selective copying -- deepcopy(x, share=...) keeps matching
 * objects by reference wherever they occur.
 */
#include "fastcopy.h"

/* Is x one of the objects deepcopy(share=...) keeps by reference?
   share is a type, a tuple of types, or a predicate.  1 | 0 | -1+exc */
static int
fc_share_match(FcCtx *c, PyObject *x)
{
    PyObject *s = c->share;
    /* the predicate (or a metaclass's __instancecheck__) is user code */
    if (fc_defer_flush(c) < 0) {
        return -1;
    }
    if (PyType_Check(s) || PyTuple_Check(s)) {
        return PyObject_IsInstance(x, s);
    }
    PyObject *r = PyObject_CallOneArg(s, x);
    if (r == NULL) {
        return -1;
    }
    int t = PyObject_IsTrue(r);
    Py_DECREF(r);
    return t;
}

/* share= must be a type, a tuple of types, or a callable.  0 | -1+exc */
static int
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
 * with no memo hashing, no keep-alive and no dispatch; since no Python code
 * can run during a replay (keys are atomic, so hashing them is builtin),
 * every replica is exactly what deepcopy(x, share=share) returns.  Any
 * other object -- an instance, a hook, a recursive tuple, a non-atomic key
 * -- and the tape is abandoned for n ordinary deep copies.
 */
enum { T_CONST = 1, T_REF, T_LIST, T_DICT, T_TUPLE, T_END };

typedef struct {
    uint8_t op;
    Py_ssize_t n;        /* LIST/DICT/TUPLE: size; REF: node */
    Py_ssize_t node;     /* LIST/DICT/TUPLE: its node number */
    PyObject *obj;       /* CONST: strong */
} FcTapeOp;

typedef struct {
    FcTapeOp *ops;
    Py_ssize_t nops, cap;
    Py_ssize_t nnodes;
    FcMemo seen;         /* source container -> node number (as an int) */
    int abandoned;
} FcTape;

static void
fc_tape_free(FcTape *t)
{
    for (Py_ssize_t i = 0; i < t->nops; i++) {
        Py_XDECREF(t->ops[i].obj);
    }
    PyMem_Free(t->ops);
    fc_memo_clear(&t->seen);
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

/* Record x.  1 recorded | 0 abandoned | -1+exc */
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
    if (c->share != NULL) {
        int r = fc_share_match(c, x);
        if (r != 0) {
            return r < 0 ? -1 : (fc_tape_emit(t, T_CONST, 0, 0, x) < 0 ? -1 : 1);
        }
    }
    if (!bit || depth > FC_TAPE_MAX_DEPTH || (k != FK_LIST && k != FK_DICT && k != FK_TUPLE)) {
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
    Py_ssize_t n = k == FK_LIST ? PyList_GET_SIZE(x) : k == FK_DICT ? PyDict_GET_SIZE(x)
                                                                     : PyTuple_GET_SIZE(x);
    if (fc_tape_emit(t, op, n, node, NULL) < 0) {
        return -1;
    }
    int r = 1;
    if (k == FK_DICT) {
        Py_ssize_t pos = 0;
        PyObject *key, *val;
        while (r > 0 && PyDict_Next(x, &pos, &key, &val)) {
            if (!fc_deep_atomic(c, key)) {
                return 0;
            }
            r = fc_tape_emit(t, T_CONST, 0, 0, key) < 0 ? -1 : 1;
            if (r > 0) {
                r = fc_tape_record(c, t, val, depth + 1);
            }
        }
    }
    else {
        for (Py_ssize_t i = 0; r > 0 && i < n; i++) {
            PyObject *item = k == FK_LIST ? PyList_GET_ITEM(x, i) : PyTuple_GET_ITEM(x, i);
            r = fc_tape_record(c, t, item, depth + 1);
        }
    }
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

typedef struct {
    PyObject *y;
    PyObject *key;       /* dict: the key waiting for its value */
    Py_ssize_t i;        /* tuple: next slot */
    uint8_t op;
} FcReplayFrame;

/* One replica.  new ref | NULL+exc */
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
            nodes[o->node] = y;          /* borrowed: the frame owns it */
            stack[sp].y = y;
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
    return result;
error:
    while (sp > 0) {
        sp--;
        Py_XDECREF(stack[sp].key);
        Py_DECREF(stack[sp].y);
    }
    Py_XDECREF(result);
    return NULL;
}

/* [deepcopy(x, share=share) for _ in range(n)].  new ref | NULL+exc */
static PyObject *
fc_replicate(FcState *st, PyObject *x, Py_ssize_t n, PyObject *share)
{
    PyObject *out = PyList_New(n);
    if (out == NULL) {
        return NULL;
    }
    if (n == 0) {
        return out;
    }
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
    int r = fc_tape_record(&c, &t, x, 0);
    if (r < 0) {
        goto error;
    }
    if (r > 0 && n > 1) {
        nodes = PyMem_Calloc((size_t)t.nnodes + 1, sizeof(PyObject *));
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
        }
    }
    for (; i < n; i++) {
        PyObject *y = fc_deepcopy(st, x, NULL, NULL, share);
        if (y == NULL) {
            goto error;
        }
        PyList_SET_ITEM(out, i, y);
    }
    PyMem_Free(nodes);
    PyMem_Free(stack);
    fc_tape_free(&t);
    fc_ctx_fini(&c);
    return out;
error:
    PyMem_Free(nodes);
    PyMem_Free(stack);
    fc_tape_free(&t);
    fc_ctx_fini(&c);
    Py_DECREF(out);
    return NULL;
}
