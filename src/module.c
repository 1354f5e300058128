/*
 * module.c: module state, its lifetime, and the public functions'
 * argument parsing.
 */
#include "fastcopy.h"
#include "deepcopy.h"
#include "copy.h"
#include "select.h"
#include "plan.h"
#include "memo.h"
#include "cowdict.h"
#include "buffers.h"
#include "settings.h"
#include "testing.h"
#include "arenas.h"
#include "state.h"
#include "hooks.h"
#include "profile.h"

/* Every object field of FcState's core, for traverse and clear (the
   backends' parts are theirs: backend.h). */
#define FC_STATE_OBJECTS(X) \
    X(copy_module) X(copy_globals) X(error) X(deep_dispatch) X(copy_dispatch) \
    X(copy_atomic) X(copy_containers) X(deep_atomic) X(orig_fdict) \
    X(dispatch_table) X(reconstruct) X(reconstruct_helper) X(copyreg_globals) \
    X(copyreg_dispatch) X(copyreg_slotnames) X(copyreg_newobj) \
    X(obj_reduce_ex) X(obj_reduce) X(obj_getstate) X(obj_new) X(enum_deepcopy) \
    X(nt_getnewargs_code) \
    X(s_deepcopy) X(s_copy) X(s_reduce_ex) X(s_reduce) X(s_getstate) \
    X(s_setstate) X(s_dict) X(s_update) X(s_append) X(s_items) X(s_get) \
    X(s_new) X(s_getnewargs) X(s_getnewargs_ex) X(s_slotnames) X(s_func) \
    X(s_self) X(s_deepcopy_kw) X(s_replace) X(empty_tuple) X(nil) \
    X(py_deepcopy) X(cowdict_type) \
    X(frac_deepcopy) X(uuid_info) X(s_getinitargs) X(s_fraction) X(s_type) X(s_value_) X(s_memo) X(prof_hook)

FC_INLINE FcState *
fc_state(PyObject *module)
{
    return (FcState *)PyModule_GetState(module);
}

/* ------------------------------------------------------------------ */
/* Public functions                                                    */
/* ------------------------------------------------------------------ */

PyDoc_STRVAR(fc_deepcopy_doc,
#if FC_MEMO_IN
"deepcopy(x, memo=None, *, share=None)\n--\n\n"
#else
"deepcopy(x, memo=None, _nil=[], *, share=None)\n--\n\n"
#endif
"Deep copy operation on arbitrary Python objects: the same result as\n"
"`copy.deepcopy(x, memo)` on this interpreter, computed in C.\n\n"
"Types, values and aliasing, the memo's contents (keep-alive list\n"
"included), the hook calls and the errors are the stdlib's.\n\n"
"Args:\n"
"    x: the object to copy.\n"
"    memo: the stdlib's memo: any mapping from `id(obj)` to its copy,\n"
"        shared with every `__deepcopy__(memo)` hook called on the way.\n"
"    _nil: accepted where the stdlib has it (through 3.14); ignored.\n"
"    share: not in the stdlib.  A type, a tuple of types, or a predicate\n"
"        called with each object: matching objects are kept by reference\n"
"        wherever they occur instead of being copied.  None: the drop-in.\n\n"
"Returns:\n"
"    The deep copy of x.");

/* The calls deepcopy gets from hooks and from the patched copy.deepcopy:
   deepcopy(x[, memo[, _nil]]) and deepcopy(x, memo=memo), bound without
   the generic parser -- the keyword by identity with the interned name
   (code objects intern their keyword names), else by value.  1 bound
   (o: x, memo, _nil; NULL = not given) | 0 any other call */
FC_INLINE int
fc_bind_deepcopy(FcState *st, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                 PyObject *o[3])
{
    if (kwnames == NULL) {
        /* 3.15's deepcopy has no _nil (pyver.h, FC_MEMO_IN) */
        if (nargs < 1 || nargs > (FC_MEMO_IN ? 2 : 3)) {
            return 0;
        }
    }
    else {
        if (nargs != 1 || PyTuple_GET_SIZE(kwnames) != 1) {
            return 0;
        }
        PyObject *kw = PyTuple_GET_ITEM(kwnames, 0);
        if (kw != st->s_memo && PyUnicode_CompareWithASCIIString(kw, "memo") != 0) {
            return 0;
        }
    }
    o[0] = args[0];
    o[1] = nargs > 1 || kwnames != NULL ? args[1] : NULL;
    o[2] = nargs > 2 ? args[2] : NULL;
    return 1;
}

static PyObject *
fc_py_deepcopy(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
               PyObject *kwnames)
{
    FcState *st = fc_state(module);
    PyObject *o[4], *share = NULL;
    if (!fc_bind_deepcopy(st, args, nargs, kwnames, o)) {
#if FC_MEMO_IN
        static const char *const names[] = {"x", "memo", "share"};
        PyObject *p[3];
        if (fc_parse("deepcopy", args, nargs, kwnames, names, 3, 2, 1, p) < 0) {
            return NULL;
        }
        o[0] = p[0];
        o[1] = p[1];
        o[2] = NULL;
        o[3] = p[2];
#else
        static const char *const names[] = {"x", "memo", "_nil", "share"};
        if (fc_parse("deepcopy", args, nargs, kwnames, names, 4, 3, 1, o) < 0) {
            return NULL;
        }
#endif
        share = (o[3] == Py_None) ? NULL : o[3];
        if (share != NULL && fc_check_share(share) < 0) {
            return NULL;
        }
    }
    return fc_deepcopy(st, o[0], o[1], o[2], share);
}

PyDoc_STRVAR(fc_copy_doc,
"copy(x, *, deep=None)\n--\n\n"
"Shallow copy operation on arbitrary Python objects: the same result as\n"
"`copy.copy(x)` on this interpreter, computed in C.\n\n"
"Args:\n"
"    x: the object to copy.\n"
"    deep: not in the stdlib.  Fields to deep-copy inside the shallow\n"
"        copy: one path or an iterable of paths, each a dotted string\n"
"        (\"optimizer.state\") or a tuple of steps ((\"layers\", 0)); a step\n"
"        is a key, an index or an attribute name.  Every object along a\n"
"        path is shallow-copied (the source is never modified) and the\n"
"        fields share one memo.  None: the drop-in.\n\n"
"Returns:\n"
"    The shallow copy of x.\n\n"
"Raises:\n"
"    KeyError: a path names a missing key (IndexError, AttributeError\n"
"        likewise); the message names the whole path and nothing is\n"
"        built.");

static PyObject *
fc_py_copy(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
           PyObject *kwnames)
{
    FcState *st = fc_state(module);
    PyObject *x;
    if (FC_LIKELY(nargs == 1 && kwnames == NULL)) {
        x = args[0];
    }
    else {
        static const char *const names[] = {"x", "deep"};
        PyObject *o[2];
        if (fc_parse("copy", args, nargs, kwnames, names, 2, 1, 1, o) < 0) {
            return NULL;
        }
        x = o[0];
        if (o[1] != NULL && o[1] != Py_None) {
            /* selective copying: path handling lives in fastcopy/_select.py */
            PyObject *mod = PyImport_ImportModule("fastcopy._select");
            if (mod == NULL) {
                return NULL;
            }
            /* profiled as one copy() (profile.c) */
            int prof = st->prof != 0, top = prof ? fc_prof_begin() : 0;
            PyObject *res = PyObject_CallMethod(mod, "copy_paths", "OO", x, o[1]);
            Py_DECREF(mod);
            return prof ? fc_prof_end(st, top, FC_PROF_COPY, NULL, res) : res;
        }
    }
    return fc_copy(st, x);
}

PyDoc_STRVAR(fc_replicate_doc,
"replicate(x, n, *, share=None)\n--\n\n"
"A list of n independent deep copies of x: the same as\n"
"`[deepcopy(x, share=share) for _ in range(n)]`, made in one call.\n\n"
"Args:\n"
"    x: the object to copy.\n"
"    n: how many copies.\n"
"    share: as for deepcopy(): objects kept by reference in every copy.\n\n"
"Returns:\n"
"    A list of n deep copies of x.\n\n"
"Raises:\n"
"    ValueError: n is below 0.");

static PyObject *
fc_py_replicate(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                PyObject *kwnames)
{
    FcState *st = fc_state(module);
    static const char *const names[] = {"x", "n", "share"};
    PyObject *o[3];
    if (fc_parse("replicate", args, nargs, kwnames, names, 3, 2, 2, o) < 0) {
        return NULL;
    }
    PyObject *share = (o[2] == Py_None) ? NULL : o[2];
    if (share != NULL && fc_check_share(share) < 0) {
        return NULL;
    }
    if (!PyLong_Check(o[1]) || PyBool_Check(o[1])) {
        PyErr_Format(PyExc_TypeError, "n must be an int, not %.200s",
                     Py_TYPE(o[1])->tp_name);
        return NULL;
    }
    Py_ssize_t n = PyLong_AsSsize_t(o[1]);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "n must be >= 0");
        return NULL;
    }
    /* profiled as one deepcopy() (profile.c) */
    int prof = st->prof != 0, top = prof ? fc_prof_begin() : 0;
    PyObject *res = fc_replicate(st, o[0], n, share);
    return prof ? fc_prof_end(st, top, FC_PROF_DEEPCOPY, NULL, res) : res;
}

/* ------------------------------------------------------------------ */
/* patch(): the stdlib's functions called straight into C              */
/* ------------------------------------------------------------------ */

/*
 * fastcopy.patch() gives copy.deepcopy and copy.copy a one-line trampoline
 * as their __code__ (fastcopy/__init__.py), so the function objects, their
 * defaults and signature stay the stdlib's and references taken earlier
 * (`from copy import deepcopy`) reach fastcopy.  That costs a Python frame
 * per call.  Their vectorcall is also pointed at the functions below,
 * which take the usual argument shapes straight to the C entry points --
 * no frame -- and hand any other to the trampoline, whose binding is the
 * interpreter's own.  Anyone who then replaces __code__ or __defaults__
 * again gets the function's own vectorcall, as if we were not there.
 * unpatch() restores the saved vectorcall before the code.  A vectorcall
 * gets no context: a small table maps each patched function to its module.
 * GIL builds only.
 *
 * 3.12+ set it with PyFunction_SetVectorcall, which also stops the
 * interpreter from specializing calls to the function: every call comes
 * here.  3.10 and 3.11 have no such API: the field is written directly
 * (PyFunctionObject.vectorcall, which every call through the vectorcall
 * protocol reads).  3.10 calls Python functions through it always; 3.11's
 * interpreter pushes a frame for the function's code -- the trampoline --
 * on every call from Python code without looking at it, so there only
 * calls from C come here (correct either way).
 */
#if !defined(Py_GIL_DISABLED)
#  define FC_HAVE_PATCH_VECTORCALL 1
#  define FC_PATCH_SLOTS 8
static struct {
    PyObject *func;             /* the stdlib's function, strong; NULL: free */
    PyObject *module;           /* ours, strong: both live while patched, so a
                                   call during interpreter teardown finds them */
    PyObject *code, *defaults;  /* what it had when patched, borrowed (only
                                   compared) */
    vectorcallfunc orig;
} fc_patch_table[FC_PATCH_SLOTS];

FC_INLINE void
fc_set_vectorcall(PyFunctionObject *f, vectorcallfunc vc)
{
#  if FC_PY312_PLUS
    PyFunction_SetVectorcall(f, vc);
#  else
    f->vectorcall = vc;
#  endif
}

FC_INLINE int
fc_patch_slot(PyObject *func)
{
    for (int i = 0; i < FC_PATCH_SLOTS; i++) {
        if (fc_patch_table[i].func == func) {
            return i;
        }
    }
    return -1;
}

/* The patched function as it was patched?  Its slot | -1 */
FC_INLINE int
fc_patch_intact(PyObject *func)
{
    int i = fc_patch_slot(func);
    PyFunctionObject *f = (PyFunctionObject *)func;
    if (i < 0 || f->func_code != fc_patch_table[i].code
        || f->func_defaults != fc_patch_table[i].defaults) {
        return -1;
    }
    return i;
}

static PyObject *
fc_patch_fallback(PyObject *func, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    int i = fc_patch_slot(func);
    vectorcallfunc orig = i >= 0 ? fc_patch_table[i].orig : NULL;
    if (orig == NULL) {
        PyErr_SetString(PyExc_SystemError, "fastcopy: patched function without its vectorcall");
        return NULL;
    }
    return orig(func, args, nargsf, kwnames);
}

static PyObject *
fc_patched_deepcopy(PyObject *func, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    int i = fc_patch_intact(func);
    if (FC_UNLIKELY(i < 0)) {
        return fc_patch_fallback(func, args, nargsf, kwnames);
    }
    FcState *st = fc_state(fc_patch_table[i].module);
    PyObject *o[3];
    if (fc_bind_deepcopy(st, args, PyVectorcall_NARGS(nargsf), kwnames, o)) {
        return fc_deepcopy(st, o[0], o[1], o[2], NULL);
    }
    /* anything else through the trampoline's frame: the interpreter's own
       binding and its messages (3.13's "Did you mean ...?") */
    return fc_patch_fallback(func, args, nargsf, kwnames);
}

static PyObject *
fc_patched_copy(PyObject *func, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    int i = fc_patch_intact(func);
    if (FC_UNLIKELY(i < 0)) {
        return fc_patch_fallback(func, args, nargsf, kwnames);
    }
    if (FC_LIKELY(PyVectorcall_NARGS(nargsf) == 1 && kwnames == NULL)) {
        return fc_copy(fc_state(fc_patch_table[i].module), args[0]);
    }
    return fc_patch_fallback(func, args, nargsf, kwnames);
}

static int
fc_patch_one(PyObject *module, PyObject *func, vectorcallfunc vc)
{
    if (!PyFunction_Check(func)) {
        PyErr_SetString(PyExc_TypeError, "fastcopy: can only patch Python functions");
        return -1;
    }
    PyFunctionObject *f = (PyFunctionObject *)func;
    int i = fc_patch_slot(func);
    if (i < 0) {
        i = fc_patch_slot(NULL);
        if (i < 0) {
            return 0;   /* table full: the trampoline alone still works */
        }
        fc_patch_table[i].func = Py_NewRef(func);
        fc_patch_table[i].orig = f->vectorcall;
    }
    Py_XSETREF(fc_patch_table[i].module, Py_NewRef(module));
    fc_patch_table[i].code = f->func_code;
    fc_patch_table[i].defaults = f->func_defaults;
    fc_set_vectorcall(f, vc);
    return 0;
}

static void
fc_unpatch_one(PyObject *func)
{
    int i = fc_patch_slot(func);
    if (i < 0 || !PyFunction_Check(func)) {
        return;
    }
    fc_set_vectorcall((PyFunctionObject *)func, fc_patch_table[i].orig);
    PyObject *f = fc_patch_table[i].func, *m = fc_patch_table[i].module;
    fc_patch_table[i].func = NULL;
    fc_patch_table[i].module = NULL;
    Py_DECREF(f);
    Py_XDECREF(m);
}
#else
#  define FC_HAVE_PATCH_VECTORCALL 0
#endif

PyDoc_STRVAR(fc_patch_vectorcall_doc,
"_patch_vectorcall(deepcopy, copy, on)\n--\n\n"
"Point the stdlib's deepcopy/copy function objects (already given their\n"
"trampoline __code__) at fastcopy's C entry points, or back (on=False).\n"
"Returns whether this build does that (GIL builds).");

static PyObject *
fc_py_patch_vectorcall(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "_patch_vectorcall(deepcopy, copy, on)");
        return NULL;
    }
#if FC_HAVE_PATCH_VECTORCALL
    int on = PyObject_IsTrue(args[2]);
    if (on < 0) {
        return NULL;
    }
    if (on) {
        if (fc_patch_one(module, args[0], fc_patched_deepcopy) < 0
            || fc_patch_one(module, args[1], fc_patched_copy) < 0) {
            return NULL;
        }
    }
    else {
        fc_unpatch_one(args[0]);
        fc_unpatch_one(args[1]);
    }
    Py_RETURN_TRUE;
#else
    Py_RETURN_FALSE;
#endif
}

PyDoc_STRVAR(fc_sysinfo_doc,
"_sysinfo()\n--\n\n"
"How this module was built and what it sees, for tests and bug reports.");

static PyObject *
fc_py_sysinfo(PyObject *module, PyObject *unused)
{
    FcState *st = fc_state(module);
#ifdef FC_DEBUG
    int debug = 1;
#else
    int debug = 0;
#endif
#if defined(__SANITIZE_ADDRESS__)
    int asan = 1;
#else
    int asan = 0;
#endif
#if FC_PY312_PLUS
    int watcher = st->watcher_id;
#else
    int watcher = -1;
#endif
    return Py_BuildValue("{s:i,s:i,s:s,s:i,s:i,s:I,s:I,s:i,s:N,s:i,s:i,s:i,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,"
                         "s:i,s:n,s:n,s:n,s:n,s:n,s:N}",
                         "debug", debug, "asan", asan,
                         "python_built", PY_VERSION,
                         "frame_size", (int)sizeof(FcFrame),
                         "ctx_size", (int)sizeof(FcCtx),
                         "deep_ok", (unsigned int)st->deep_ok,
                         "copy_ok", (unsigned int)st->copy_ok,
                         "plain_ok", st->plain_ok,
                         "gen", PyLong_FromUnsignedLongLong(st->gen),
                         "watcher", watcher,
                         "always_refresh", st->always_refresh,
                         "gc_grace", FC_GC_GRACE,
                         "memo_shown", st->test.memo_shown,
                         "memo_borrowed", st->test.memo_borrowed,
                         "memo_to_dict", st->test.memo_to_dict,
                         "memo_absorbed", st->test.memo_absorbed,
                         "memo_adopted", st->test.memo_adopted,
                         "state_stores", st->test.state_stores,
                         "set_ghosts", st->test.set_ghosts,
                         "slot_ghosts", st->test.slot_ghosts,
                         "dict_slots_ok", st->dict_slots_ok,
                         "dict_puts", st->test.dict_puts,
                         "small_trees", st->test.small_trees,
                         "small_subtrees", st->test.small_subtrees,
                         "memo_thin", st->test.memo_thin,
                         "memo_unindexed", st->test.memo_unindexed,
                         "arenas", fc_arenas_stats());
}

static PyMethodDef fc_methods[] = {
    {"deepcopy", (PyCFunction)(void (*)(void))fc_py_deepcopy,
     METH_FASTCALL | METH_KEYWORDS, fc_deepcopy_doc},
    {"copy", (PyCFunction)(void (*)(void))fc_py_copy,
     METH_FASTCALL | METH_KEYWORDS, fc_copy_doc},
    {"replicate", (PyCFunction)(void (*)(void))fc_py_replicate,
     METH_FASTCALL | METH_KEYWORDS, fc_replicate_doc},
    {"_sysinfo", fc_py_sysinfo, METH_NOARGS, fc_sysinfo_doc},
    {"_patch_vectorcall", (PyCFunction)(void (*)(void))fc_py_patch_vectorcall,
     METH_FASTCALL, fc_patch_vectorcall_doc},
    {NULL, NULL, 0, NULL},
};

/* ------------------------------------------------------------------ */
/* State                                                               */
/* ------------------------------------------------------------------ */

/* A borrowed global of a module dict that must exist.  NULL+exc */
static PyObject *
fc_need(PyObject *globals, const char *name)
{
    PyObject *v = PyDict_GetItemString(globals, name);
    if (v == NULL && !PyErr_Occurred()) {
        PyErr_Format(PyExc_ImportError, "fastcopy: copy module has no '%s'", name);
    }
    return v;
}

/* Interned names, the empty tuple, the memo's _nil.  0 | -1+exc */
static int
fc_exec_names(FcState *st)
{
#define FC_INTERN(field, text) \
    if ((st->field = PyUnicode_InternFromString(text)) == NULL) return -1;
    FC_INTERN(s_deepcopy, "__deepcopy__")
    FC_INTERN(s_copy, "__copy__")
    FC_INTERN(s_reduce_ex, "__reduce_ex__")
    FC_INTERN(s_reduce, "__reduce__")
    FC_INTERN(s_getstate, "__getstate__")
    FC_INTERN(s_setstate, "__setstate__")
    FC_INTERN(s_dict, "__dict__")
    FC_INTERN(s_update, "update")
    FC_INTERN(s_append, "append")
    FC_INTERN(s_items, "items")
    FC_INTERN(s_get, "get")
    FC_INTERN(s_new, "__new__")
    FC_INTERN(s_getnewargs, "__getnewargs__")
    FC_INTERN(s_getnewargs_ex, "__getnewargs_ex__")
    FC_INTERN(s_slotnames, "__slotnames__")
    FC_INTERN(s_func, "__func__")
    FC_INTERN(s_self, "__self__")
    FC_INTERN(s_deepcopy_kw, "deepcopy")
    FC_INTERN(s_replace, "__replace__")
    FC_INTERN(s_getinitargs, "__getinitargs__")
    FC_INTERN(s_fraction, "Fraction")
    FC_INTERN(s_value_, "_value_")
    FC_INTERN(s_type, "type")
    FC_INTERN(s_memo, "memo")
#undef FC_INTERN

    st->empty_tuple = PyTuple_New(0);
    st->nil = PyList_New(0);
    if (st->empty_tuple == NULL || st->nil == NULL) {
        return -1;
    }
#if FC_PY312_PLUS
    st->watcher_id = -1;
#endif
#if !FC_HAVE_DICT_VERSION
    st->names_watcher = -1;
    st->src_watcher = -1;
    st->mirror_watcher = -1;
#endif
    return 0;
}

/* The pieces of copy and copyreg that fastcopy follows, and the stdlib's
   own dispatch functions.  0 | -1+exc */
static int
fc_exec_stdlib(FcState *st)
{
    PyObject *copyreg = NULL, *v;
    st->copy_module = PyImport_ImportModule("copy");
    copyreg = PyImport_ImportModule("copyreg");
    if (st->copy_module == NULL || copyreg == NULL) {
        goto error;
    }
    st->copy_globals = Py_NewRef(PyModule_GetDict(st->copy_module));
    st->copyreg_globals = Py_NewRef(PyModule_GetDict(copyreg));
    PyObject *g = st->copy_globals;
    const char *names[] = FC_COPY_NAMES;
    PyObject **slots[] = FC_COPY_SLOTS(st);
    for (int i = 0; i < FC_COPY_NNAMES; i++) {
        if ((v = fc_need(g, names[i])) == NULL) {
            goto error;
        }
        *slots[i] = Py_NewRef(v);
    }
    if ((v = fc_need(st->copyreg_globals, "dispatch_table")) == NULL) {
        goto error;
    }
    st->copyreg_dispatch = Py_NewRef(v);
    if ((v = fc_need(st->copyreg_globals, "_slotnames")) == NULL) {
        goto error;
    }
    st->copyreg_slotnames = Py_NewRef(v);
    if ((v = fc_need(st->copyreg_globals, "__newobj__")) == NULL) {
        goto error;
    }
    st->copyreg_newobj = Py_NewRef(v);

    /* the stdlib's own dispatch functions, by name: an entry that is not
       one of these is somebody else's and must be called */
#if FC_COPY_SETS
    /* atomic kinds are members of copy's sets, not table entries */
    PyObject *atomic_d = NULL, *atomic_c = NULL;
#else
    PyObject *atomic_d = fc_need(g, "_deepcopy_atomic");
    PyObject *atomic_c = fc_need(g, "_copy_immutable");
    if (!atomic_d || !atomic_c) {
        goto error;
    }
#endif
#if FC_HAVE_FROZENDICT
    PyObject *fdict_d = fc_need(g, "_deepcopy_frozendict");
    if (fdict_d == NULL) {
        goto error;
    }
    st->orig_fdict = Py_NewRef(fdict_d);
#endif
    PyObject *list_d = fc_need(g, "_deepcopy_list");
    PyObject *tuple_d = fc_need(g, "_deepcopy_tuple");
    PyObject *dict_d = fc_need(g, "_deepcopy_dict");
    PyObject *method_d = fc_need(g, "_deepcopy_method");
    if (!list_d || !tuple_d || !dict_d || !method_d) {
        goto error;
    }
    for (int k = 1; k < FK__COUNT; k++) {
        uint32_t b = FK_BIT(k);
        if (b & FC_DEEP_ATOMIC) {
            st->orig_deep[k] = atomic_d;
        }
        if (b & FC_COPY_ATOMIC) {
            st->orig_copy[k] = atomic_c;
        }
    }
    st->orig_deep[FK_LIST] = list_d;
    st->orig_deep[FK_TUPLE] = tuple_d;
    st->orig_deep[FK_DICT] = dict_d;
    st->orig_deep[FK_METHOD] = method_d;
    for (int k = 1; k < FK__COUNT; k++) {
        Py_XINCREF(st->orig_deep[k]);
        Py_XINCREF(st->orig_copy[k]);
    }
    int copy_kinds[] = {FK_LIST, FK_DICT, FK_SET, FK_BYTEARRAY};
    for (int i = 0; i < 4; i++) {
        PyObject *td = fc_type_dict(fc_kind_type(st, copy_kinds[i]));
        if (td == NULL) {
            goto error;
        }
        st->orig_copy[copy_kinds[i]] = Py_XNewRef(PyDict_GetItemString(td, "copy"));
        Py_DECREF(td);
    }
    Py_DECREF(copyreg);
    return 0;
error:
    Py_XDECREF(copyreg);
    return -1;
}

/* object's own descriptors and the __dict__ getter of plain classes.
   0 | -1+exc */
static int
fc_exec_object_hooks(FcState *st)
{
    PyObject *probe = NULL, *v;
    /* object's own hooks, to recognise classes that keep them */
    PyObject *od = fc_type_dict(&PyBaseObject_Type);
    if (od == NULL) {
        goto error;
    }
    st->obj_reduce_ex = Py_XNewRef(PyDict_GetItemString(od, "__reduce_ex__"));
    st->obj_reduce = Py_XNewRef(PyDict_GetItemString(od, "__reduce__"));
    st->obj_new = Py_XNewRef(PyDict_GetItemString(od, "__new__"));
#if FC_PY311_PLUS
    st->obj_getstate = Py_XNewRef(PyDict_GetItemString(od, "__getstate__"));
#endif
    Py_DECREF(od);
#if FC_PY311_PLUS
    if (st->obj_getstate == NULL) {
        goto error;
    }
#endif
    if (!st->obj_reduce_ex || !st->obj_reduce || !st->obj_new) {
        goto error;
    }
    /* the getter every plain class's __dict__ descriptor uses */
    probe = PyObject_CallFunction((PyObject *)&PyType_Type, "s(){}", "_fastcopy_probe");
    if (probe == NULL) {
        goto error;
    }
    v = _PyType_Lookup((PyTypeObject *)probe, st->s_dict);
    if (v == NULL || !Py_IS_TYPE(v, &PyGetSetDescr_Type)) {
        PyErr_SetString(PyExc_ImportError, "fastcopy: unexpected __dict__ descriptor");
        goto error;
    }
    st->dict_getter = ((PyGetSetDescrObject *)v)->d_getset->get;
    Py_CLEAR(probe);
    return 0;
error:
    Py_XDECREF(probe);
    return -1;
}

/* The helper through which copy._reconstruct is called.  0 | -1+exc */
static int
fc_exec_reconstruct_helper(FcState *st)
{
    PyObject *ns = NULL, *v;
    /* _reconstruct(x, memo, *rv) exactly as the stdlib calls it, so
       malformed reduce values raise the stdlib's own errors (its recursion
       uses copy.deepcopy, which is fastcopy while patched; either way the
       memo is the same dict) */
    ns = PyDict_New();
    if (ns == NULL || PyDict_SetItemString(ns, "__builtins__", PyEval_GetBuiltins()) < 0) {
        goto error;
    }
    v = PyRun_String("def _reconstruct_via(r, x, memo, rv, deepcopy):\n"
                     "    return r(x, memo, *rv)\n",
                     Py_file_input, ns, ns);
    if (v == NULL) {
        goto error;
    }
    Py_DECREF(v);
    st->reconstruct_helper = Py_XNewRef(PyDict_GetItemString(ns, "_reconstruct_via"));
    Py_CLEAR(ns);
    if (st->reconstruct_helper == NULL) {
        goto error;
    }
    return 0;
error:
    Py_XDECREF(ns);
    return -1;
}

static int
fc_exec(PyObject *module)
{
    FcState *st = fc_state(module);
    if (fc_exec_names(st) < 0 || fc_dict_slots_probe(st) < 0 || fc_exec_stdlib(st) < 0
        || fc_exec_object_hooks(st) < 0
        || fc_exec_reconstruct_helper(st) < 0) {
        return -1;
    }
    if (PyModule_AddFunctions(module, fc_methods) < 0) {
        return -1;
    }
    st->py_deepcopy = PyObject_GetAttrString(module, "deepcopy");
    if (st->py_deepcopy == NULL) {
        return -1;
    }
    if (PyModule_AddObjectRef(module, "Error", st->error) < 0) {
        return -1;
    }
    st->always_refresh = 0;
    if (fc_watch_init(st) < 0 || fc_refresh(st) < 0) {
        return -1;
    }
#if FC_PY312_PLUS
    st->seen_gen = 0;
#endif
    if (fc_settings_exec(module, st) < 0 || fc_testing_exec(module, st) < 0
        || fc_prof_exec(module, st) < 0) {
        return -1;
    }
    for (int i = 0; i < fc_nbackends; i++) {
        if (fc_backends[i]->exec != NULL && fc_backends[i]->exec(module, st) < 0) {
            return -1;
        }
    }
    if (fc_cowdict_exec(module, st) < 0) {
        return -1;
    }
    return 0;
}

static int
fc_traverse(PyObject *module, visitproc visit, void *arg)
{
    FcState *st = fc_state(module);
    if (st == NULL) {
        return 0;
    }
#define FC_VISIT(f) Py_VISIT(st->f);
    FC_STATE_OBJECTS(FC_VISIT)
#undef FC_VISIT
    for (int k = 0; k < FK__COUNT; k++) {
        Py_VISIT(st->orig_deep[k]);
        Py_VISIT(st->orig_copy[k]);
    }
    int r = fc_plans_traverse(st, visit, arg);
    if (r == 0) {
        r = fc_hooks_traverse(&st->hooks, visit, arg);
    }
    if (r != 0) {
        return r;
    }
#if FC_FT
    Py_VISIT(st->retired);
#endif
#if !FC_HAVE_DICT_VERSION
    Py_VISIT(st->names_watched);
#endif
    for (int i = 0; i < fc_nbackends; i++) {
        r = fc_backends[i]->traverse ? fc_backends[i]->traverse(st, visit, arg) : 0;
        if (r != 0) {
            return r;
        }
    }
    return 0;
}

static int
fc_clear(PyObject *module)
{
    FcState *st = fc_state(module);
    if (st == NULL) {
        return 0;
    }
    fc_watch_fini(st);
#define FC_CLEAR(f) Py_CLEAR(st->f);
    FC_STATE_OBJECTS(FC_CLEAR)
#undef FC_CLEAR
    for (int k = 0; k < FK__COUNT; k++) {
        Py_CLEAR(st->orig_deep[k]);
        Py_CLEAR(st->orig_copy[k]);
    }
    fc_plans_clear(st);
    fc_hooks_clear(&st->hooks);
    fc_spare_free(&st->spare);
#if FC_FT
    Py_CLEAR(st->retired);
#endif
    for (int i = 0; i < fc_nbackends; i++) {
        if (fc_backends[i]->clear != NULL) {
            fc_backends[i]->clear(st);
        }
    }
    return 0;
}

static void
fc_free(void *module)
{
    (void)fc_clear((PyObject *)module);
}

static PyModuleDef_Slot fc_slots[] = {
    {Py_mod_exec, fc_exec},
#if FC_PY312_PLUS
    /* state is per module object; dict watchers are per interpreter */
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
#if FC_FT
    /* every piece of shared state is safe without the GIL
       (docs/free-threading.md) */
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#elif FC_PY313_PLUS
    {Py_mod_gil, Py_MOD_GIL_USED},
#endif
    {0, NULL},
};

PyDoc_STRVAR(fc_module_doc,
"fastcopy._fastcopy: the C core of fastcopy (exact copy/deepcopy).");

static struct PyModuleDef fc_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "fastcopy._fastcopy",
    .m_doc = fc_module_doc,
    .m_size = sizeof(FcState),
    .m_slots = fc_slots,
    .m_traverse = fc_traverse,
    .m_clear = fc_clear,
    .m_free = fc_free,
};

PyMODINIT_FUNC
PyInit__fastcopy(void)
{
    return PyModuleDef_Init(&fc_module);
}
