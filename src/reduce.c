/*
 * reduce.c: the pieces of copy's reduce protocol that copy() and deepcopy()
 * share -- obtaining a reduce value (copyreg.dispatch_table,
 * __reduce_ex__(4), __reduce__), calling its function, and the state step
 * of copy._reconstruct (__setstate__, or __dict__.update plus setattr for
 * slots), with the interpreter's own errors for malformed values.  The
 * walker (deepcopy.c) and copy.c drive them; nothing here copies children.
 */
#include "fastcopy.h"
#include "reduce.h"
#include "plan.h"
#include "state.h"

/* `a, b = pair` with the interpreter's messages.  0 | -1+exc */
FC_INTERNAL int
fc_unpack2(PyObject *pair, PyObject **a, PyObject **b)
{
    *a = *b = NULL;
    if ((PyTuple_CheckExact(pair) || PyList_CheckExact(pair))
        && PySequence_Fast_GET_SIZE(pair) == 2) {
        *a = Py_NewRef(PySequence_Fast_ITEMS(pair)[0]);
        *b = Py_NewRef(PySequence_Fast_ITEMS(pair)[1]);
        return 0;
    }
    PyObject *it = PyObject_GetIter(pair);
    if (it == NULL) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)
            && Py_TYPE(pair)->tp_iter == NULL && !PySequence_Check(pair)) {
            PyErr_Format(PyExc_TypeError, "cannot unpack non-iterable %.200s object",
                         Py_TYPE(pair)->tp_name);
        }
        return -1;
    }
    PyObject *items[3] = {NULL, NULL, NULL};
    int got = 0;
    for (; got < 3; got++) {
        items[got] = PyIter_Next(it);
        if (items[got] == NULL) {
            break;
        }
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) {
        goto error;
    }
    if (got < 2) {
        PyErr_Format(PyExc_ValueError,
                     "not enough values to unpack (expected 2, got %d)", got);
        goto error;
    }
    if (got == 3) {
#if FC_PY314_PLUS
        /* 3.14+ names an exact tuple's, list's or dict's length (checked
           on 3.14.10 and 3.15.2); 3.10-3.13 do not */
        if (PyTuple_CheckExact(pair) || PyList_CheckExact(pair) || PyDict_CheckExact(pair)) {
            PyErr_Format(PyExc_ValueError,
                         "too many values to unpack (expected 2, got %zd)",
                         PyDict_CheckExact(pair) ? PyDict_GET_SIZE(pair) : Py_SIZE(pair));
            goto error;
        }
#endif
        PyErr_SetString(PyExc_ValueError, "too many values to unpack (expected 2)");
        goto error;
    }
    *a = items[0];
    *b = items[1];
    return 0;
error:
    for (int i = 0; i < 3; i++) {
        Py_XDECREF(items[i]);
    }
    return -1;
}

/* for key, value in pairs: set(y, key, value) -- with the interpreter's
   unpacking errors.  0 | -1+exc */
FC_INTERNAL int
fc_set_pairs(PyObject *y, PyObject *pairs, int (*set)(PyObject *, PyObject *, PyObject *))
{
    PyObject *it = PyObject_GetIter(pairs), *pair;
    if (it == NULL) {
        return -1;
    }
    while ((pair = PyIter_Next(it)) != NULL) {
        PyObject *k, *v;
        int r = fc_unpack2(pair, &k, &v);
        Py_DECREF(pair);
        if (r == 0) {
            r = set(y, k, v);
            Py_DECREF(k);
            Py_DECREF(v);
        }
        if (r < 0) {
            Py_DECREF(it);
            return -1;
        }
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

/* for key, value in slotstate.items(): setattr(y, key, value)
   0 | -1+exc */
static int
fc_set_slots(FcState *st, PyObject *y, PyObject *slotstate)
{
    if (PyDict_CheckExact(slotstate)) {
        Py_ssize_t pos = 0, used = PyDict_GET_SIZE(slotstate), left = used;
        PyObject *k, *v;
        for (;;) {
            int step;   /* 1 an entry | 0 the end | -1 size changed */
            FC_CS_BEGIN(slotstate);
            step = PyDict_GET_SIZE(slotstate) != used ? -1
                   : PyDict_Next(slotstate, &pos, &k, &v);
            if (step > 0) {
                Py_INCREF(k);
                Py_INCREF(v);
            }
            FC_CS_END();
            if (step < 0) {
                PyErr_SetString(PyExc_RuntimeError,
                                "dictionary changed size during iteration");
                return -1;
            }
            if (!step) {
                return 0;
            }
            if (left-- == 0) {
                Py_DECREF(k);
                Py_DECREF(v);
                PyErr_SetString(PyExc_RuntimeError,
                                "dictionary keys changed during iteration");
                return -1;
            }
            int r = PyObject_SetAttr(y, k, v);
            Py_DECREF(k);
            Py_DECREF(v);
            if (r < 0) {
                return -1;
            }
        }
    }
    PyObject *items = PyObject_CallMethodNoArgs(slotstate, st->s_items);
    if (items == NULL) {
        return -1;
    }
    int r = fc_set_pairs(y, items, PyObject_SetAttr);
    Py_DECREF(items);
    return r;
}

#if FC_INLINE_ATTRS
/* y.__dict__.update(state) for a new instance whose attributes live inline
   in the object (Py_TPFLAGS_INLINE_VALUES), as attribute stores that never
   make y a dict object.  Reading y.__dict__ would make one, sharing the
   class's keys table: an atomic increment of that table's reference count,
   and a decrement when the copy dies -- a cache line every thread copying
   instances of the class writes, which on free-threaded builds kept two
   threads copying objects from going faster than one.  It also saves the
   dict on every build.
   Why the result is the same, key objects included: PyObject_GenericSetAttr
   stores a name the type does not define as
   _PyObject_StoreInstanceAttribute, which puts each key through the shared
   keys table as dict.update() does into y's new (split) __dict__
   (insert_split_key: an equal key already there is the one kept, a new one
   is added while there is room, and the first that finds no room turns the
   attributes into an ordinary dict that keeps every later key object as
   given), in the same order.  Two things differ, and send the whole state
   down the dict road before any store: a name the type defines (a
   descriptor, a class attribute, __dict__) or a key that is not an exact
   str; and a state bigger than the shared keys' 30 entries, which
   dict.update() answers by resizing y's dict to an ordinary one up front.
   y is FC_STATE_FRESH: it has no attributes, so no store replaces a value;
   should one run a finalizer all the same, the items are held, and a state
   that changes fails as dict.update() fails.  On free-threaded builds the
   state's lock is held throughout, as dict.update() holds it, and the
   items are not held: the state is the walker's own, locked against other
   threads, and nothing on this one can run -- no value is replaced, and
   3.13 collects only at the evaluation loop's breaker, not inside an
   allocation -- while two more counts of a value that many records share
   would be two more writes to a line both cores want (docs/free-threading.md,
   "Shared atoms").
   1 done | 0 take the dict road | -1+exc */
static int
fc_store_inline_attrs(PyObject *y, PyObject *state)
{
    PyTypeObject *tp = Py_TYPE(y);
    if (!(tp->tp_flags & Py_TPFLAGS_INLINE_VALUES)) {
        return 0;
    }
    int r = 1;
    PyObject *k, *v;
    Py_ssize_t pos = 0, n;
    FC_CS_BEGIN(state);
    n = PyDict_GET_SIZE(state);
    if (n > 30) {   /* SHARED_KEYS_MAX_SIZE; dict_merge resizes past 42 */
        r = 0;
    }
    while (r > 0 && PyDict_Next(state, &pos, &k, &v)) {
        if (!PyUnicode_CheckExact(k) || _PyType_Lookup(tp, k) != NULL) {
            r = 0;
        }
    }
    pos = 0;
    while (r > 0 && PyDict_Next(state, &pos, &k, &v)) {
#if !FC_FT
        Py_INCREF(k);
        Py_INCREF(v);
#endif
        if (PyObject_GenericSetAttr(y, k, v) < 0) {
            r = -1;
        }
        else if (PyDict_GET_SIZE(state) != n) {
            PyErr_SetString(PyExc_RuntimeError, "dict mutated during update");
            r = -1;
        }
#if !FC_FT
        Py_DECREF(k);
        Py_DECREF(v);
#endif
    }
    FC_CS_END();
    return r;
}
#endif

/* The state step of _reconstruct, after the state was (deep-)copied:
       if hasattr(y, '__setstate__'): y.__setstate__(state)
       else: split a 2-tuple into (state, slotstate); y.__dict__.update(state);
             setattr(y, k, v) for each slot item
   flags: FC_STATE_NO_SETSTATE (a plain plan whose type is unchanged),
   FC_STATE_FRESH.  0 | -1+exc */
FC_INTERNAL int
fc_apply_state(FcState *st, PyObject *y, PyObject *state, int flags)
{
    if (!(flags & FC_STATE_NO_SETSTATE)) {
#if !FC_FT
        PyTypeObject *tp = Py_TYPE(y);
        PyObject *f = tp->tp_getattro == PyObject_GenericGetAttr
                      ? _PyType_Lookup(tp, st->s_setstate) : NULL;   /* borrowed */
        if (f != NULL && Py_IS_TYPE(f, &PyFunction_Type)) {
            /* A function on the class is not a data descriptor: generic
               getattr finds an instance attribute of that name first, else
               the bound function, so hasattr(y, "__setstate__") is true --
               and y.__setstate__(state) is the method call, made as the
               interpreter's LOAD_METHOD makes it (no bound method) */
            PyObject *args[2] = {y, state};
            PyObject *v = PyObject_VectorcallMethod(st->s_setstate, args, 2, NULL);
            if (v == NULL) {
                return -1;
            }
            Py_DECREF(v);
            return 0;
        }
#endif
        PyObject *meth;
        int r = fc_lookup_attr(y, st->s_setstate, &meth);
        if (r < 0) {
            return -1;
        }
        if (r > 0) {
            PyObject *v;
            if (Py_TYPE(y)->tp_getattro == PyObject_GenericGetAttr) {
                /* hasattr() then y.__setstate__: with the generic getattr the
                   second lookup finds the same thing, unobservably */
                v = PyObject_CallOneArg(meth, state);
                Py_DECREF(meth);
            }
            else {
                Py_DECREF(meth);
                v = PyObject_CallMethodOneArg(y, st->s_setstate, state);
            }
            if (v == NULL) {
                return -1;
            }
            Py_DECREF(v);
            return 0;
        }
    }
    PyObject *dstate = Py_NewRef(state), *sstate = NULL;
    if (PyTuple_Check(state)) {
        Py_ssize_t n = PyTuple_CheckExact(state) ? PyTuple_GET_SIZE(state)
                                                 : PyObject_Size(state);
        if (n < 0) {
            Py_DECREF(dstate);
            return -1;
        }
        if (n == 2) {
            Py_CLEAR(dstate);
            if (fc_unpack2(state, &dstate, &sstate) < 0) {
                return -1;
            }
        }
    }
    int rc = -1;
    if (dstate != Py_None) {
#if FC_INLINE_ATTRS
        if ((flags & (FC_STATE_NO_SETSTATE | FC_STATE_FRESH))
                == (FC_STATE_NO_SETSTATE | FC_STATE_FRESH)
            && PyDict_CheckExact(dstate)) {
            int r = fc_store_inline_attrs(y, dstate);
            if (r < 0) {
                goto done;
            }
            if (r > 0) {
                st->test.state_stores++;
                goto slots;
            }
        }
#endif
        PyObject *d = PyObject_GetAttr(y, st->s_dict);
        if (d == NULL) {
            goto done;
        }
        int r;
        if (PyDict_CheckExact(d) && PyDict_CheckExact(dstate)) {
            r = PyDict_Update(d, dstate);
        }
        else {
            PyObject *v = PyObject_CallMethodOneArg(d, st->s_update, dstate);
            r = v == NULL ? -1 : 0;
            Py_XDECREF(v);
        }
        Py_DECREF(d);
        if (r < 0) {
            goto done;
        }
    }
#if FC_INLINE_ATTRS
slots:
#endif
    if (sstate != NULL && sstate != Py_None && fc_set_slots(st, y, sstate) < 0) {
        goto done;
    }
    rc = 0;
done:
    Py_XDECREF(dstate);
    Py_XDECREF(sstate);
    return rc;
}

/* y.append(item), honouring overrides on list subclasses.  0 | -1+exc */
FC_INTERNAL int
fc_append(FcState *st, PyObject *y, PyObject *item)
{
    if (PyList_CheckExact(y)) {
        return PyList_Append(y, item);
    }
    PyObject *v = PyObject_CallMethodOneArg(y, st->s_append, item);
    if (v == NULL) {
        return -1;
    }
    Py_DECREF(v);
    return 0;
}

/* The reduce value of x, as copy()/deepcopy() obtain it:
       reductor = dispatch_table.get(cls)   (deep: truthiness, copy: is not None)
       else x.__reduce_ex__(4), else x.__reduce__(), else Error.
   new ref | NULL+exc */
FC_INTERNAL PyObject *
fc_reduce(FcState *st, PyObject *x, int deep, int gflags)
{
    PyTypeObject *tp = Py_TYPE(x);
    PyObject *reductor = NULL, *rv;
    if (!(gflags & FG_NO_REDUCTOR)
        && fc_table_get(st, st->dispatch_table, (PyObject *)tp, &reductor) < 0) {
        return NULL;
    }
    if (reductor != NULL) {
        int use;
        if (deep) {
            use = PyObject_IsTrue(reductor);
        }
        else {
            use = reductor != Py_None;
        }
        if (use < 0) {
            Py_DECREF(reductor);
            return NULL;
        }
        if (use) {
            rv = PyObject_CallOneArg(reductor, x);
            Py_DECREF(reductor);
            return rv;
        }
        Py_DECREF(reductor);
    }
    if (gflags & FG_REDUCE_ONLY) {
        /* unless the instance dict shadows __reduce_ex__, this is what
           object.__reduce_ex__(4) ends up calling */
        PyObject *d = NULL;
        int shadow = 0;
        FC_CS_BEGIN(x);   /* another thread may assign x.__dict__ */
        PyObject **dp = Py_TYPE(x)->tp_dictoffset ? _PyObject_GetDictPtr(x) : NULL;
        if (dp != NULL && *dp != NULL) {
            /* a colliding key's __eq__ may replace x.__dict__: hold it */
            d = Py_NewRef(*dp);
        }
        FC_CS_END();
        if (d != NULL) {
            shadow = PyDict_Check(d) ? PyDict_Contains(d, st->s_reduce_ex) : 1;
            Py_DECREF(d);
            if (shadow < 0) {
                return NULL;
            }
        }
        if (!shadow) {
            return PyObject_CallMethodNoArgs(x, st->s_reduce);
        }
    }
    int r = fc_lookup_attr(x, st->s_reduce_ex, &reductor);
    if (r < 0) {
        return NULL;
    }
    if (r > 0 && reductor != Py_None) {
        PyObject *four = PyLong_FromLong(4);
        if (four == NULL) {
            Py_DECREF(reductor);
            return NULL;
        }
        rv = PyObject_CallOneArg(reductor, four);
        Py_DECREF(four);
        Py_DECREF(reductor);
        return rv;
    }
    Py_XDECREF(reductor);
    r = fc_lookup_attr(x, st->s_reduce, &reductor);
    if (r < 0) {
        return NULL;
    }
    int truth = r > 0 ? PyObject_IsTrue(reductor) : 0;
    if (truth < 0) {
        Py_DECREF(reductor);
        return NULL;
    }
    if (truth) {
        rv = PyObject_CallNoArgs(reductor);
        Py_DECREF(reductor);
        return rv;
    }
    Py_XDECREF(reductor);
    /* %S runs the metaclass's __repr__, which may rebind copy.Error */
    PyObject *error = Py_NewRef(st->error);
    PyErr_Format(error, deep ? "un(deep)copyable object of type %S"
                             : "un(shallow)copyable object of type %S",
                 (PyObject *)tp);
    Py_DECREF(error);
    return NULL;
}

/* The stdlib's own _reconstruct(x, memo, *rv, deepcopy=ours), for reduce
   values we do not take apart ourselves.  new ref | NULL+exc */
FC_INTERNAL PyObject *
fc_reconstruct_py(FcState *st, PyObject *x, PyObject *memo, PyObject *rv)
{
    /* a refresh during the call may replace st's references */
    PyObject *recon = Py_NewRef(st->reconstruct);
    PyObject *dc = Py_NewRef(st->py_deepcopy ? st->py_deepcopy : Py_None);
    PyObject *args[5] = {recon, x, memo ? memo : Py_None, rv, dc};
    PyObject *y = PyObject_Vectorcall(st->reconstruct_helper, args, 5, NULL);
    Py_DECREF(recon);
    Py_DECREF(dc);
    return y;
}

/* Is rv a reduce value we take apart natively? */
FC_INTERNAL_INLINE int
fc_rv_native(PyObject *rv)
{
    if (!PyTuple_CheckExact(rv)) {
        return 0;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(rv);
    return n >= 2 && n <= 5 && PyTuple_GET_ITEM(rv, 0) != Py_None
           && PyTuple_CheckExact(PyTuple_GET_ITEM(rv, 1));
}

FC_INTERNAL_INLINE PyObject *
fc_rv_item(PyObject *rv, Py_ssize_t i)
{
    if (i >= PyTuple_GET_SIZE(rv)) {
        return NULL;
    }
    PyObject *v = PyTuple_GET_ITEM(rv, i);
    return v == Py_None ? NULL : Py_NewRef(v);
}

/* func(*args) for a reduce value.  copyreg.__newobj__(cls, *args) is
   `return cls.__new__(cls, *args)`: while it is the original (plain_ok),
   do that directly instead of through a Python frame.  new ref | NULL+exc */
FC_INTERNAL PyObject *
fc_call_reduce_func(FcState *st, PyObject *func, PyObject *args)
{
    if (func == st->copyreg_newobj && st->plain_ok && PyTuple_GET_SIZE(args) >= 1) {
        PyObject *cls = PyTuple_GET_ITEM(args, 0);
        PyObject *new = PyObject_GetAttr(cls, st->s_new);
        if (new == NULL) {
            return NULL;
        }
        PyObject *y = PyObject_Call(new, args, NULL);
        Py_DECREF(new);
        return y;
    }
    return PyObject_Call(func, args, NULL);
}


/* The state object.__reduce_ex__(4) gives a plain instance: its __dict__
   (None when empty or absent), paired with a dict of
   the set slots when there are any.  names: the plan's slot names, a
   reference the caller holds (NULL: no slots) -- never the plan itself,
   which user code run here (an allocation's finalizers, a getattr) may
   overwrite.  *state new ref.
   1 | 0 when x shadows a hook in its own __dict__ | -1+exc */
FC_INTERNAL int
fc_plain_state(FcState *st, PyObject *x, PyObject *names, PyObject **state, int deep)
{
    PyTypeObject *tp = Py_TYPE(x);
    PyObject *xdict = NULL;
    *state = NULL;
    if (tp->tp_dictoffset != 0) {
#if FC_PY311_PLUS
        xdict = PyObject_GenericGetDict(x, NULL);
        if (xdict == NULL) {
            return -1;
        }
#else
        PyObject **dp = _PyObject_GetDictPtr(x);
        xdict = (dp != NULL) ? Py_XNewRef(*dp) : NULL;
#endif
        if (xdict != NULL && !PyDict_CheckExact(xdict)) {
            Py_DECREF(xdict);
            return 0;
        }
        if (xdict != NULL && PyDict_GET_SIZE(xdict) > 0) {
            /* getattr(x, ...) finds these in the instance dict first */
            PyObject *names[3] = {st->s_reduce_ex, st->s_getstate, st->s_deepcopy};
            for (int i = 0; i < (deep ? 3 : 2); i++) {
                int r = PyDict_Contains(xdict, names[i]);
                if (r != 0) {
                    Py_DECREF(xdict);
                    return r < 0 ? -1 : 0;
                }
            }
        }
    }
    PyObject *s;
    /* an empty __dict__ is reported as None on 3.10 too (_PyObject_GetState:
       "consistent regardless whether the dict was initialized or not") */
    if (xdict != NULL && PyDict_GET_SIZE(xdict) > 0) {
        s = xdict;
    }
    else {
        Py_XDECREF(xdict);
        s = Py_NewRef(Py_None);
    }
    if (names != NULL) {
        Py_ssize_t n = PyList_GET_SIZE(names);
        PyObject *slots = PyDict_New();
        if (slots == NULL) {
            Py_DECREF(s);
            return -1;
        }
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(names); i++) {
            PyObject *name = Py_NewRef(PyList_GET_ITEM(names, i)), *v;
            int r = fc_lookup_attr(x, name, &v);
            if (r > 0) {
                r = PyDict_SetItem(slots, name, v);
                Py_DECREF(v);
            }
            Py_DECREF(name);
            if (r >= 0 && n != PyList_GET_SIZE(names)) {
                PyErr_SetString(PyExc_RuntimeError,
                                "__slotsname__ changed size during iteration");
                r = -1;
            }
            if (r < 0) {
                Py_DECREF(slots);
                Py_DECREF(s);
                return -1;
            }
        }
        if (PyDict_GET_SIZE(slots) > 0) {
            PyObject *pair = PyTuple_Pack(2, s, slots);
            Py_DECREF(s);
            s = pair;
        }
        Py_DECREF(slots);
        if (s == NULL) {
            return -1;
        }
    }
    *state = s;
    return 1;
}
