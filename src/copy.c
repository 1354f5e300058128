/*
 * copy.c: copy.copy, step for step.
 *
 * The shallow copy never recurses, so there is no work stack: builtin
 * containers go to their own .copy(), plain instances (plan.c's FP_PLAIN)
 * are rebuilt as object.__reduce_ex__(4) + _reconstruct would rebuild them,
 * and everything else follows copy.copy()'s dispatch order exactly:
 * _copy_dispatch (truthiness), issubclass(cls, type), getattr(cls,
 * "__copy__") on the class, copyreg.dispatch_table (is not None),
 * __reduce_ex__(4), __reduce__, then _reconstruct(x, None, *rv).
 */
#include "fastcopy.h"
#include "copy.h"
#include "reduce.h"
#include "plan.h"
#include "state.h"
#include "profile.h"
#include "hooks.h"
#include "deepcopy.h"

/* x.copy() for an exact list.  list.copy() sizes its result, allocates
   it -- on 3.10/3.11 a collection there can run a finalizer that shrinks
   x -- and then copies that many items: CPython's own list.copy() can
   read freed memory there.  Here the size is read again after the
   allocation, and a list that changed meanwhile is copied as it is now.
   new ref | NULL+exc */
static PyObject *
fc_list_copy(PyObject *x)
{
    for (;;) {
        Py_ssize_t n = PyList_GET_SIZE(x);
        PyObject *y = PyList_New(n);
        if (y == NULL) {
            return NULL;
        }
        int same;
        FC_CS_BEGIN(x);
        same = PyList_GET_SIZE(x) == n;
        if (FC_LIKELY(same)) {
            PyObject **src = ((PyListObject *)x)->ob_item;
            PyObject **dst = ((PyListObject *)y)->ob_item;
            for (Py_ssize_t i = 0; i < n; i++) {
                dst[i] = Py_NewRef(src[i]);
            }
        }
        FC_CS_END();
        if (FC_LIKELY(same)) {
            return y;
        }
        Py_DECREF(y);   /* an empty list: no finalizer runs */
    }
}

/* _reconstruct(x, None, *rv).  new ref | NULL+exc */
static PyObject *
fc_copy_reconstruct(FcState *st, PyObject *x, PyObject *rv)
{
    if (!fc_rv_native(rv)) {
        return fc_reconstruct_py(st, x, NULL, rv);
    }
    PyObject *state = fc_rv_item(rv, 2), *listiter = fc_rv_item(rv, 3),
             *dictiter = fc_rv_item(rv, 4), *it = NULL, *item;
    PyObject *y = PyObject_Call(PyTuple_GET_ITEM(rv, 0), PyTuple_GET_ITEM(rv, 1), NULL);
    if (y == NULL) {
        goto error;
    }
    if (state != NULL && fc_apply_state(st, y, state, 0) < 0) {
        goto error;
    }
    if (listiter != NULL) {
        it = PyObject_GetIter(listiter);
        if (it == NULL) {
            goto error;
        }
        while ((item = PyIter_Next(it)) != NULL) {
            int r = fc_append(st, y, item);
            Py_DECREF(item);
            if (r < 0) {
                goto error;
            }
        }
        if (PyErr_Occurred()) {
            goto error;
        }
        Py_CLEAR(it);
    }
    if (dictiter != NULL && fc_set_pairs(y, dictiter, PyObject_SetItem) < 0) {
        goto error;
    }
    Py_XDECREF(state);
    Py_XDECREF(listiter);
    Py_XDECREF(dictiter);
    return y;
error:
    Py_XDECREF(it);
    Py_XDECREF(y);
    Py_XDECREF(state);
    Py_XDECREF(listiter);
    Py_XDECREF(dictiter);
    return NULL;
}

/* copy.copy(x) of a pydantic model whose __copy__ is BaseModel's or
   RootModel's own (hooks.c, fc_plan_pydantic_copy): the hook's steps in
   its order, its copy() being the copy module's (fastcopy's copy() does
   what that does, the dispatch table read again on every call).
   new ref | NULL+exc | NULL, no exc: the hook itself (nothing done) */
static PyObject *
fc_copy_pydantic(FcState *st, PyObject *x, int hook)
{
    if (!fc_pc_ok(st, hook)) {
        return NULL;
    }
    FcHooksState *h = &st->hooks;
    PyTypeObject *tp = Py_TYPE(x);
    PyObject *v, *v2, *d, *d2 = NULL;
    /* m = cls.__new__(cls) */
    PyObject *m = tp->tp_new(tp, st->empty_tuple, NULL);
    if (m == NULL) {
        return NULL;
    }
    /* copy(self.__dict__) */
    if ((d = PyObject_GenericGetDict(x, NULL)) == NULL) {
        goto fail;
    }
    d2 = fc_copy(st, d);
    Py_DECREF(d);
    if (d2 == NULL) {
        goto fail;
    }
    if (hook == FH_PYDROOT && h->pc_variant[1] == 0) {
        /* new_dict['root'] = copy(self.__dict__['root']) (2.13 and later) */
        if ((d = PyObject_GenericGetDict(x, NULL)) == NULL) {
            goto fail;
        }
        v = PyObject_GetItem(d, h->s_root);
        Py_DECREF(d);
        v2 = v != NULL ? fc_copy(st, v) : NULL;
        Py_XDECREF(v);
        if (v2 == NULL) {
            goto fail;
        }
        int rc = PyObject_SetItem(d2, h->s_root, v2);
        Py_DECREF(v2);
        if (rc < 0) {
            goto fail;
        }
    }
    /* _object_setattr(m, '__dict__', ...) */
    if (PyObject_GenericSetAttr(m, st->s_dict, d2) < 0) {
        goto fail;
    }
    Py_CLEAR(d2);
    for (int i = hook == FH_PYDROOT ? FC_PD_FSET : FC_PD_EXTRA; i <= FC_PD_FSET; i++) {
        /* _object_setattr(m, name, copy(self.name)): extra, fields set */
        if ((v = fc_pd_get(NULL, x, h->s_pd[i])) == NULL) {
            goto fail;
        }
        v2 = fc_copy(st, v);
        Py_DECREF(v);
        int rc = v2 != NULL ? PyObject_GenericSetAttr(m, h->s_pd[i], v2) : -1;
        Py_XDECREF(v2);
        if (rc < 0) {
            goto fail;
        }
    }
    if (hook == FH_PYDANTIC) {
        PyObject *priv;
        if (fc_pd_private(NULL, x, h->s_pd[FC_PD_PRIVATE], h->pc_variant[0] == 1, &priv) < 0) {
            goto fail;
        }
        if (priv == NULL) {
            v2 = Py_NewRef(Py_None);
        }
        else {
            v2 = fc_pd_private_dict(NULL, priv, h->pd_g[3]);
            Py_DECREF(priv);
            if (v2 == NULL) {
                goto fail;
            }
        }
        int rc = PyObject_GenericSetAttr(m, h->s_pd[FC_PD_PRIVATE], v2);
        Py_DECREF(v2);
        if (rc < 0) {
            goto fail;
        }
    }
    return m;
fail:
    Py_XDECREF(d2);
    Py_DECREF(m);
    return NULL;
}

/* A plain instance, shallow.  new ref | NULL+exc | NULL, no exc: take the
   generic road */
static PyObject *
fc_copy_plain(FcState *st, PyObject *x, FcPlan *p)
{
    PyTypeObject *tp = Py_TYPE(x);
    unsigned int tag = p->tag;
    PyObject *state;
    PyObject *names = p->has_slots ? Py_NewRef(p->slotnames) : NULL;
    int r = fc_plain_state(st, x, names, &state, 0);
    Py_XDECREF(names);
    if (r <= 0) {
        return NULL;
    }
    PyObject *y = tp->tp_new(tp, st->empty_tuple, NULL);
    if (y != NULL && state != Py_None) {
        int known = tag != 0 && fc_type_tag(tp) == tag;
        if (fc_apply_state(st, y, state, known ? FC_STATE_NO_SETSTATE : 0) < 0) {
            Py_CLEAR(y);
        }
    }
    Py_DECREF(state);
    return y;
}

/* copy(x) as the stdlib defines it.  new ref | NULL+exc */
static PyObject *
fc_copy_run(FcState *st, PyObject *x)
{
    if (fc_sync(st) < 0) {
        return NULL;
    }
    PyTypeObject *tp = Py_TYPE(x);
    int k = fc_kind(tp);
    uint32_t bit = FK_BIT(k) & st->copy_ok;
    if (bit & FC_COPY_ATOMIC) {
        return Py_NewRef(x);
    }
    switch (bit ? k : FK_OTHER) {
    case FK_LIST:
        return fc_list_copy(x);
    case FK_DICT:
        return fc_dict_copy(x);
    case FK_SET:
        return PySet_New(x);
    case FK_BYTEARRAY: {
        PyObject *y;
        FC_CS_BEGIN(x);   /* another thread may resize it */
        y = PyByteArray_FromStringAndSize(PyByteArray_AS_STRING(x),
                                          PyByteArray_GET_SIZE(x));
        FC_CS_END();
        return y;
    }
    default:
        break;
    }

    PyObject *copier;
#if FC_COPY_SETS
    /* `if cls in _copy_atomic_types: return x`, then
       `if cls in _copy_builtin_containers: return cls.copy(x)`; with the
       stdlib's own sets only super and frozendict are left to ask about */
    if (st->copy_sets_std) {
        if (fc_copy_atomic_extra(tp)) {
            return Py_NewRef(x);
        }
    }
    else {
        int r = fc_copy_set_has(st->copy_atomic, (PyObject *)tp);
        if (r != 0) {
            return r > 0 ? Py_NewRef(x) : NULL;
        }
        r = fc_copy_set_has(st->copy_containers, (PyObject *)tp);
        if (r < 0) {
            return NULL;
        }
        if (r > 0) {
            PyObject *meth = PyObject_GetAttrString((PyObject *)tp, "copy");
            if (meth == NULL) {
                return NULL;
            }
            fc_prof_hook(st);
            PyObject *y = PyObject_CallOneArg(meth, x);
            Py_DECREF(meth);
            return y;
        }
        if (fc_sync(st) < 0) {   /* a container of the user's ran code */
            return NULL;
        }
    }
    copier = NULL;
#else
    if (fc_table_get(st, st->copy_dispatch, (PyObject *)tp, &copier) < 0) {
        return NULL;
    }
#endif
    if (copier != NULL) {
        int truth = PyObject_IsTrue(copier);
        if (truth < 0) {
            Py_DECREF(copier);
            return NULL;
        }
        if (truth) {
            fc_prof_hook(st);
            PyObject *y = PyObject_CallOneArg(copier, x);
            Py_DECREF(copier);
            return y;
        }
        Py_DECREF(copier);
    }
    if (PyType_IsSubtype(tp, &PyType_Type)) {
        return Py_NewRef(x);
    }
    if (k == FK_OTHER) {
        FcPlan tmp, *p = fc_plan_get(st, tp, &tmp);
        if (p == NULL) {
            return NULL;
        }
        PyObject *y = NULL;
        if (p->shallow == FP_PLAIN) {
            y = fc_copy_plain(st, x, p);
        }
        else if (p->shallow == FP_PYDCOPY || p->shallow == FP_PYDROOTCOPY) {
            y = fc_copy_pydantic(st, x, p->shallow == FP_PYDCOPY ? FH_PYDANTIC : FH_PYDROOT);
        }
        if (p == &tmp) {
            Py_CLEAR(tmp.slotnames);
        }
        if (y != NULL || PyErr_Occurred()) {
            return y;
        }
    }
    if (fc_lookup_attr((PyObject *)tp, st->s_copy, &copier) < 0) {
        return NULL;
    }
    if (copier != NULL && copier != Py_None) {
        fc_prof_hook(st);
        PyObject *y = PyObject_CallOneArg(copier, x);
        Py_DECREF(copier);
        return y;
    }
    Py_XDECREF(copier);
    fc_prof_hook(st);
    PyObject *rv = fc_reduce(st, x, 0, 0);
    if (rv == NULL) {
        return NULL;
    }
    if (PyUnicode_Check(rv)) {
        Py_DECREF(rv);
        return Py_NewRef(x);
    }
    PyObject *y = fc_copy_reconstruct(st, x, rv);
    Py_DECREF(rv);
    return y;
}

/* copy() while profiling is on (profile.c).  new ref | NULL+exc */
FC_NOINLINE PyObject *
fc_copy_profiled(FcState *st, PyObject *x)
{
    int top = fc_prof_begin();
    return fc_prof_end(st, top, FC_PROF_COPY, x, fc_copy_run(st, x));
}

FC_INTERNAL PyObject *
fc_copy(FcState *st, PyObject *x)
{
    if (FC_UNLIKELY(st->prof)) {
        return fc_copy_profiled(st, x);
    }
    return fc_copy_run(st, x);
}
