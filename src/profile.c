/*
 * profile.c: the C half of fastcopy.profile() and configure(warn_slow=).
 *
 * Off, profiling costs one test of FcState.prof per deepcopy() / copy()
 * call (fc_deepcopy, fc_copy), on a field of the state the call reads
 * anyway.  On, the call runs as fc_deepcopy_profiled / fc_copy_profiled:
 *
 *   - fc_prof_begin() tells this thread's top-level call from the calls
 *     nested in it (a hook's own deepcopy(), the stdlib's _reconstruct
 *     calling the patched copy.deepcopy, copy(x, deep=...)'s inner copies)
 *     by a per-thread depth: a nested call is part of the outer one;
 *   - the walk bumps counters only where it does something expensive
 *     already: an object taking the stdlib's generic road, i.e. calling a
 *     hook (fc_prof_hook), a native array/tensor byte copy
 *     (fc_prof_buffer, timed); each deepcopy() adds the entries of its
 *     memo at its end, the cost of that is one read for a native memo;
 *   - fc_prof_end() hands a top-level call's time and counters to
 *     fastcopy._profile._on_copy, which finds the caller's line and records
 *     it (FC_PROF_RECORD) and warns when the call took at least warn_slow
 *     (FC_PROF_WARN).  With warn_slow alone, only slow calls reach Python.
 *
 * A call that raises is not reported.  The counters live in thread-local
 * storage (profile.h), so threads never mix; the state's flag, threshold
 * and hook are changed only with the GIL held.
 */
#include "fastcopy.h"
#include "profile.h"
#include "memo.h"
#include "state.h"

FC_INTERNAL_DATA FC_PLAT_THREAD_LOCAL FcProfCall fc_prof_tls;

FC_INTERNAL FC_NOINLINE_ATTR FcProfCall *
fc_prof_active(void)
{
    return fc_prof_tls.depth > 0 ? &fc_prof_tls : NULL;
}

FC_INTERNAL int
fc_prof_begin(void)
{
    FcProfCall *pc = &fc_prof_tls;
    if (pc->depth++ > 0) {
        return 0;
    }
    pc->objects = pc->hooks = pc->memo_max = 0;
    pc->buffer_bytes = pc->buffer_ns = 0;
    pc->buffer_kinds = 0;
    pc->t0 = fc_prof_now();
    return 1;
}

FC_INTERNAL PyObject *
fc_prof_end(FcState *st, int top, int op, PyObject *x, PyObject *y)
{
    FcProfCall *pc = &fc_prof_tls;
    int64_t dt = top ? fc_prof_now() - pc->t0 : 0;
    if (y != NULL && x != NULL && y != x) {
        pc->objects++;              /* a shallow copy made one new object */
    }
    int slow = top && y != NULL && (st->prof & FC_PROF_WARN)
               && st->prof_warn_ns >= 0 && dt >= st->prof_warn_ns;
    PyObject *hook = st->prof_hook;
    if (!top || y == NULL || hook == NULL || !((st->prof & FC_PROF_RECORD) || slow)) {
        pc->depth--;
        return y;
    }
    /* the recorder runs at depth 1: copies it makes (a warnings filter, a
       showwarning) count into this finished call and are not recorded */
    Py_INCREF(hook);
    /* the caller's frame, handed over rather than found by sys._getframe()
       in the recorder: no audit event, no call */
    PyObject *frame = (PyObject *)PyEval_GetFrame();
    PyObject *args[10] = {
        Py_NewRef(frame != NULL ? frame : Py_None),
        PyLong_FromLong(op),
        PyLong_FromLongLong(dt),
        PyLong_FromSsize_t(pc->objects),
        PyLong_FromLongLong(pc->buffer_bytes),
        PyLong_FromSsize_t(pc->hooks),
        PyLong_FromSsize_t(pc->memo_max),
        PyLong_FromLongLong(pc->buffer_ns),
        PyLong_FromLong(pc->buffer_kinds),
        Py_NewRef(slow ? Py_True : Py_False),
    };
    PyObject *r = NULL;
    int ok = 1;
    for (int i = 0; i < 10; i++) {
        ok &= args[i] != NULL;
    }
    if (ok) {
        r = PyObject_Vectorcall(hook, args, 10, NULL);
    }
    for (int i = 0; i < 10; i++) {
        Py_XDECREF(args[i]);
    }
    Py_DECREF(hook);
    pc->depth--;
    if (r == NULL) {
        /* warnings.warn semantics: a warning made an error raises here */
        Py_DECREF(y);
        return NULL;
    }
    Py_DECREF(r);
    return y;
}

FC_INTERNAL Py_ssize_t
fc_prof_memo_len(FcCtx *c)
{
    if (c->mode == FC_MEMO_NATIVE) {
        /* len(memo) less the keep-alive list, as below */
        return c->native.n + (c->native.sub != NULL);
    }
    if (c->mode != FC_MEMO_DICT) {
        return 0;
    }
    /* no exception is pending at either end of a call that counts */
    Py_ssize_t n = PyDict_GET_SIZE(c->memo);
    PyObject *k = PyLong_FromVoidPtr(c->memo);
    int r = k != NULL ? PyDict_Contains(c->memo, k) : -1;
    Py_XDECREF(k);
    if (r < 0) {
        PyErr_Clear();
        return n;
    }
    return n - r;       /* memo[id(memo)], the keep-alive list, is no copy */
}

/* ------------------------------------------------------------------ */
/* Settings: warn_slow is a row of settings.c's core table             */
/* ------------------------------------------------------------------ */

FC_INTERNAL void
fc_prof_sync_warn(FcState *st)
{
    if (st->prof_warn_ns >= 0) {
        st->prof |= FC_PROF_WARN;
    }
    else {
        st->prof &= ~FC_PROF_WARN;
    }
}

/* ------------------------------------------------------------------ */
/* _profiling()                                                        */
/* ------------------------------------------------------------------ */

PyDoc_STRVAR(fc_profiling_doc,
"_profiling(hook, on)\n--\n\n"
"fastcopy/_profile.py only: the recorder each profiled top-level copy is\n"
"reported to, hook(frame, op, ns, objects, buffer_bytes, hooks, memo_max,\n"
"buffer_ns, buffer_kinds, slow) -- frame: the caller's, or None -- and\n"
"whether every call is reported (on) or only those configure(warn_slow=)\n"
"finds slow.");

static PyObject *
fc_py_profiling(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    FcState *st = (FcState *)PyModule_GetState(module);
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "_profiling(hook, on)");
        return NULL;
    }
    PyObject *hook = args[0];
    if (hook != Py_None && !PyCallable_Check(hook)) {
        PyErr_SetString(PyExc_TypeError, "_profiling(): hook must be callable or None");
        return NULL;
    }
    int on = PyObject_IsTrue(args[1]);
    if (on < 0) {
        return NULL;
    }
#if FC_FT
    /* other threads may be reading the hook right now (fc_prof_end takes
       its reference without a lock): an unchanged hook stays, None only
       clears the flag, and a replaced one is retired, not released, until
       the module goes (docs/free-threading.md) */
    if (hook == Py_None || hook == st->prof_hook) {
        hook = st->prof_hook != NULL ? st->prof_hook : Py_None;
    }
    else if (st->prof_hook != NULL
             && ((st->retired == NULL && (st->retired = PyList_New(0)) == NULL)
                 || PyList_Append(st->retired, st->prof_hook) < 0)) {
        return NULL;
    }
    if (hook != st->prof_hook) {
        Py_XSETREF(st->prof_hook, hook == Py_None ? NULL : Py_NewRef(hook));
    }
    on = on && args[0] != Py_None;
#else
    Py_XSETREF(st->prof_hook, hook == Py_None ? NULL : Py_NewRef(hook));
#endif
    if (on && st->prof_hook != NULL) {
        st->prof |= FC_PROF_RECORD;
    }
    else {
        st->prof &= ~FC_PROF_RECORD;
    }
    Py_RETURN_NONE;
}

static PyMethodDef fc_prof_methods[] = {
    {"_profiling", (PyCFunction)(void (*)(void))fc_py_profiling, METH_FASTCALL,
     fc_profiling_doc},
    {NULL, NULL, 0, NULL},
};

/* Off, and the function above.  0 | -1+exc */
FC_INTERNAL int
fc_prof_exec(PyObject *module, FcState *st)
{
    st->prof = 0;
    st->prof_hook = NULL;
    fc_prof_sync_warn(st);     /* prof_warn_ns: its settings row's default */
    return PyModule_AddFunctions(module, fc_prof_methods);
}
