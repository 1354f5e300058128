/*
 * settings.c: configure(), backends(), trim() and _settings() -- the
 * module-wide knobs and introspection, driven by the settings tables of
 * the parts that own them (settings.h) and by the registry of buffer
 * backends (buffers.c) -- and fc_parse, the argument binder of every
 * module function.  A new setting is a row in its owner's table; a
 * new backend's rows, backends() entry and trim() come with its FcBackend.
 */
#include "fastcopy.h"
#include "settings.h"
#include "backend.h"
#include "buffers.h"
#include "state.h"
#include "profile.h"
#include "arenas.h"

#include <stdio.h>

/* ------------------------------------------------------------------ */
/* Argument parsing with the messages of a Python function              */
/* ------------------------------------------------------------------ */

/* Bind args/kwnames to out[0..nnames) (settings.h).  0 | -1+exc */
FC_INTERNAL int
fc_parse(const char *fname, PyObject *const *args, Py_ssize_t nargs,
         PyObject *kwnames, const char *const *names, int nnames, int npos,
         int nreq, PyObject **out)
{
    for (int i = 0; i < nnames; i++) {
        out[i] = NULL;
    }
    if (nargs > npos) {
        if (npos == nreq) {
            PyErr_Format(PyExc_TypeError,
                         "%s() takes %d positional argument%s but %zd %s given",
                         fname, npos, npos == 1 ? "" : "s", nargs,
                         nargs == 1 ? "was" : "were");
        }
        else {
            PyErr_Format(PyExc_TypeError,
                         "%s() takes from %d to %d positional arguments but %zd %s given",
                         fname, nreq, npos, nargs, nargs == 1 ? "was" : "were");
        }
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        out[i] = args[i];
    }
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t j = 0; j < nkw; j++) {
        PyObject *kw = PyTuple_GET_ITEM(kwnames, j);
        int found = -1;
        for (int i = 0; i < nnames; i++) {
            if (PyUnicode_CompareWithASCIIString(kw, names[i]) == 0) {
                found = i;
                break;
            }
        }
        if (found < 0) {
            PyErr_Format(PyExc_TypeError,
                         "%s() got an unexpected keyword argument '%U'", fname, kw);
            return -1;
        }
        if (out[found] != NULL) {
            PyErr_Format(PyExc_TypeError,
                         "%s() got multiple values for argument '%s'", fname,
                         names[found]);
            return -1;
        }
        out[found] = args[nargs + j];
    }
    for (int i = 0; i < nreq; i++) {
        if (out[i] == NULL) {
            PyErr_Format(PyExc_TypeError,
                         "%s() missing 1 required positional argument: '%s'",
                         fname, names[i]);
            return -1;
        }
    }
    return 0;
}


#define FC_MAX_SETTINGS 32

/* Core settings: the rows of parts that are not buffer backends. */
static const FcSetting fc_core_settings[] = {
    {"warn_slow", FS_SECONDS, offsetof(FcState, prof_warn_ns), -1, "None (off)",
     "seconds; every top-level copy taking at least that long warns with "
     "fastcopy.SlowCopyWarning at the caller's line (profile.c).  Unlike the "
     "others, warn_slow=None (or False) switches it off."},
    {"huge_pages", FS_BOOL, offsetof(FcState, huge_pages), 1, NULL,
     "the fresh destination of a numpy array or torch storage of 4 MiB and "
     "more gets transparent huge pages (MADV_HUGEPAGE where the kernel's THP "
     "mode is \"madvise\"; none needed in \"always\"; \"never\" and other "
     "systems ignore it) and is written as it is; False maps its missing "
     "4 KiB pages ahead of the copy instead (MADV_POPULATE_WRITE).  The "
     "bytes are the same either way."},
    {"keep_arenas", FS_BYTES, offsetof(FcState, keep_arenas), 0, "0 (off)",
     "bytes of empty object arenas (and of the memo's tables of 2 MiB and "
     "more) kept mapped for reuse instead of handed back to the system: a "
     "program that copies and drops big structures again and again reuses "
     "pages already faulted in (arenas.c).  Process-wide; 0 releases the "
     "kept ones.  Free-threaded builds allocate objects with mimalloc: there "
     "only the memo's tables are kept."},
};
static const int fc_ncore_settings =
    (int)(sizeof(fc_core_settings) / sizeof(fc_core_settings[0]));

/* After a core row was set.  warn_slow needs the Python recorder
   (fastcopy._profile, which fastcopy imports only at first use): it
   registers itself when imported.  0 | -1+exc */
static int
fc_core_apply(FcState *st)
{
    fc_prof_sync_warn(st);
    if (st->keep_arenas != st->keep_arenas_set) {
        fc_arenas_set_limit((size_t)st->keep_arenas);
        st->keep_arenas_set = st->keep_arenas;
    }
    if (st->prof_warn_ns >= 0 && st->prof_hook == NULL) {
        PyObject *m = PyImport_ImportModule("fastcopy._profile");
        if (m == NULL) {
            return -1;
        }
        Py_DECREF(m);
    }
    return 0;
}

typedef struct {
    const FcSetting *s;
    const FcBackend *owner;    /* NULL: core */
    int slot;                  /* the owner's registry slot; -1: core */
    int index;                 /* its row in the owner's table */
} FcSettingRef;

/* Where r's field lives: the owner's state block, or FcState itself. */
static char *
fc_setting_base(FcState *st, const FcSettingRef *r)
{
    return r->slot < 0 ? (char *)st : st->bk[r->slot].bytes;
}

/* Every setting, in configure()'s order: each backend's in registry
   order, then the core's.  count */
static int
fc_settings_all(FcSettingRef *out)
{
    int n = 0;
    for (int b = 0; b < fc_nbackends; b++) {
        const FcBackend *be = fc_backends[b];
        for (int i = 0; i < be->nsettings && n < FC_MAX_SETTINGS; i++) {
            out[n++] = (FcSettingRef){&be->settings[i], be, b, i};
        }
    }
    for (int i = 0; i < fc_ncore_settings && n < FC_MAX_SETTINGS; i++) {
        out[n++] = (FcSettingRef){&fc_core_settings[i], NULL, -1, i};
    }
    return n;
}

/* The value of setting r now.  new ref | NULL+exc */
static PyObject *
fc_setting_get(FcState *st, const FcSettingRef *r)
{
    const FcSetting *s = r->s;
    char *base = fc_setting_base(st, r);
    switch (s->type) {
    case FS_BOOL:
        return PyBool_FromLong(*FC_SETTING_INT(base, s));
    case FS_SECONDS: {
        int64_t ns = *FC_SETTING_NS(base, s);
        return ns < 0 ? Py_NewRef(Py_None) : PyFloat_FromDouble((double)ns / 1e9);
    }
    case FS_THREADS:
        return PyLong_FromLong(*FC_SETTING_INT(base, s));
    default:
        return PyLong_FromSsize_t(*FC_SETTING_SIZE(base, s));
    }
}

/* v as a value for s.  *out: 0/1, or the count.  0 | -1+exc */
static int
fc_setting_parse(const FcSetting *s, PyObject *v, Py_ssize_t *out)
{
    if (s->type == FS_BOOL) {
        int t = PyObject_IsTrue(v);
        if (t < 0) {
            return -1;
        }
        *out = t;
        return 0;
    }
    if (s->type == FS_SECONDS) {
        if (v == Py_None || v == Py_False) {
            *out = -1;
            return 0;
        }
        if (PyBool_Check(v) || !(PyLong_Check(v) || PyFloat_Check(v))) {
            PyErr_Format(PyExc_TypeError,
                         "configure(): %s must be a number of seconds or None, not %.200s",
                         s->name, Py_TYPE(v)->tp_name);
            return -1;
        }
        double sec = PyFloat_AsDouble(v);
        if (sec == -1.0 && PyErr_Occurred()) {
            return -1;
        }
        if (!(sec >= 0.0) || sec > 1e9) {
            PyErr_Format(PyExc_ValueError,
                         "configure(): %s must be >= 0 seconds (None: off)", s->name);
            return -1;
        }
        *out = (Py_ssize_t)(int64_t)(sec * 1e9 + 0.5);
        return 0;
    }
    if (!PyLong_Check(v) || PyBool_Check(v)) {
        PyErr_Format(PyExc_TypeError, "configure(): %s must be an int, not %.200s",
                     s->name, Py_TYPE(v)->tp_name);
        return -1;
    }
    Py_ssize_t n = PyLong_AsSsize_t(v);
    if (n == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (n < 0) {
        PyErr_Format(PyExc_ValueError, "configure(): %s must be >= 0", s->name);
        return -1;
    }
    if (s->type == FS_THREADS && n > FS_THREADS_MAX) {
        n = FS_THREADS_MAX;
    }
    *out = n;
    return 0;
}

static void
fc_setting_store(FcState *st, const FcSettingRef *r, Py_ssize_t v)
{
    const FcSetting *s = r->s;
    char *base = fc_setting_base(st, r);
    if (s->type == FS_BYTES) {
        *FC_SETTING_SIZE(base, s) = v;
    }
    else if (s->type == FS_SECONDS) {
        *FC_SETTING_NS(base, s) = (int64_t)v;
    }
    else {
        *FC_SETTING_INT(base, s) = (int)v;
    }
}

/* The current settings as configure() keywords.  new ref | NULL+exc */
static PyObject *
fc_settings_dict(FcState *st)
{
    FcSettingRef all[FC_MAX_SETTINGS];
    int n = fc_settings_all(all);
    PyObject *d = PyDict_New();
    for (int i = 0; d != NULL && i < n; i++) {
        PyObject *v = fc_setting_get(st, &all[i]);
        if (v == NULL || PyDict_SetItemString(d, all[i].s->name, v) < 0) {
            Py_XDECREF(v);
            Py_CLEAR(d);
            break;
        }
        Py_DECREF(v);
    }
    return d;
}

/* configure.__doc__, made from the tables once (they are constant). */
static char fc_configure_doc[4096];

static void
fc_settings_make_doc(void)
{
    if (fc_configure_doc[0] != '\0') {
        return;
    }
    FcSettingRef all[FC_MAX_SETTINGS];
    int n = fc_settings_all(all);
    char *p = fc_configure_doc, *end = fc_configure_doc + sizeof(fc_configure_doc);
#define FC_PUT(...) \
    do { \
        int k_ = snprintf(p, (size_t)(end - p), __VA_ARGS__); \
        p += (k_ > 0 && k_ < end - p) ? k_ : 0; \
    } while (0)
    FC_PUT("configure($module, /, *");
    for (int i = 0; i < n; i++) {
        FC_PUT(", %s=None", all[i].s->name);
    }
    FC_PUT(")\n--\n\n"
           "Tune fastcopy; arguments left as None keep their value.  Returns the\n"
           "previous settings as a dict, so configure(**old) restores them.\n");
    for (int i = 0; i < n; i++) {
        const FcSetting *s = all[i].s;
        char dflt[64];
        if (s->deflt_doc != NULL) {
            snprintf(dflt, sizeof(dflt), "%s", s->deflt_doc);
        }
        else if (s->type == FS_BOOL) {
            snprintf(dflt, sizeof(dflt), "%s", s->deflt ? "True" : "False");
        }
        else {
            snprintf(dflt, sizeof(dflt), "%zd", s->deflt);
        }
        FC_PUT("\n%s (%s, default %s): %s\n", s->name,
               s->type == FS_BOOL ? "bool" : s->type == FS_SECONDS ? "float or None" : "int",
               dflt, s->doc);
    }
#undef FC_PUT
}

static PyObject *
fc_py_configure(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                PyObject *kwnames)
{
    FcState *st = (FcState *)PyModule_GetState(module);
    FcSettingRef all[FC_MAX_SETTINGS];
    const char *names[FC_MAX_SETTINGS] = {NULL};
    PyObject *o[FC_MAX_SETTINGS];
    Py_ssize_t given[FC_MAX_SETTINGS];
    int n = fc_settings_all(all);
    for (int i = 0; i < n; i++) {
        names[i] = all[i].s->name;
    }
    if (fc_parse("configure", args, nargs, kwnames, names, n, 0, 0, o) < 0) {
        return NULL;
    }
    char set[FC_MAX_SETTINGS];
    for (int i = 0; i < n; i++) {
        given[i] = FS_UNSET;
        set[i] = o[i] != NULL && (o[i] != Py_None || all[i].s->type == FS_SECONDS);
        if (set[i] && fc_setting_parse(all[i].s, o[i], &given[i]) < 0) {
            return NULL;
        }
    }
    /* each owner may refuse (or get ready) before anything changes */
    for (int i = 0; i < n; ) {
        const FcBackend *be = all[i].owner;
        int j = i;
        while (j < n && all[j].owner == be) {
            j++;
        }
        if (be != NULL && be->check != NULL && be->check(st, &given[i]) < 0) {
            return NULL;
        }
        i = j;
    }
    PyObject *old = fc_settings_dict(st);
    if (old == NULL) {
        return NULL;
    }
    for (int i = 0; i < n; ) {
        const FcBackend *be = all[i].owner;
        int j = i, any = 0;
        for (; j < n && all[j].owner == be; j++) {
            if (set[j]) {
                fc_setting_store(st, &all[j], given[j]);
                any = 1;
            }
        }
        if (any && (be != NULL ? (be->apply != NULL && be->apply(st) < 0)
                               : fc_core_apply(st) < 0)) {
            Py_DECREF(old);
            return NULL;
        }
        i = j;
    }
    return old;
}

PyDoc_STRVAR(fc_backends_doc,
"backends()\n--\n\n"
"What each buffer backend sees and uses now, by name (numpy, torch, cuda):\n"
"versions of what is imported (nothing is imported for this), whether the\n"
"native path is what a copy would take, and its settings.");

static PyObject *
fc_py_backends(PyObject *module, PyObject *unused)
{
    FcState *st = (FcState *)PyModule_GetState(module);
    PyObject *res = PyDict_New();
    for (int i = 0; res != NULL && i < fc_nbackends; i++) {
        const FcBackend *be = fc_backends[i];
        if (be->info == NULL) {
            continue;
        }
        PyObject *v = be->info(st);
        if (v == NULL || PyDict_SetItemString(res, be->name, v) < 0) {
            Py_XDECREF(v);
            Py_CLEAR(res);
            break;
        }
        Py_DECREF(v);
    }
    return res;
}

PyDoc_STRVAR(fc_trim_doc,
"trim()\n--\n\n"
"Give the memory the buffer backends keep (numpy's pool) and the object\n"
"arenas kept by configure(keep_arenas=) back to the system.  Blocks in\n"
"use are not affected.\n\n"
"Returns:\n"
"    The number of bytes released.");

static PyObject *
fc_py_trim(PyObject *module, PyObject *unused)
{
    FcState *st = (FcState *)PyModule_GetState(module);
    size_t n = fc_arenas_trim();
    for (int i = 0; i < fc_nbackends; i++) {
        if (fc_backends[i]->trim != NULL) {
            n += fc_backends[i]->trim(st);
        }
    }
    return PyLong_FromSize_t(n);
}

PyDoc_STRVAR(fc_settings_doc,
"_settings()\n--\n\n"
"The settings table: a tuple of (name, owner, type, default, doc), in\n"
"configure()'s order (for the stubs, the docs and their tests).");

static PyObject *
fc_py_settings(PyObject *module, PyObject *unused)
{
    FcSettingRef all[FC_MAX_SETTINGS];
    int n = fc_settings_all(all);
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t != NULL && i < n; i++) {
        const FcSetting *s = all[i].s;
        PyObject *dflt = s->type == FS_BOOL ? PyBool_FromLong((long)s->deflt)
                         : s->type == FS_SECONDS
                           ? (s->deflt < 0 ? Py_NewRef(Py_None)
                                           : PyFloat_FromDouble((double)s->deflt / 1e9))
                         : PyLong_FromSsize_t(s->deflt);
        const char *type = s->type == FS_BOOL ? "bool" : s->type == FS_SECONDS ? "seconds" : "int";
        PyObject *row = dflt == NULL ? NULL
            : Py_BuildValue("(sssNs)", s->name, all[i].owner ? all[i].owner->name : "core",
                            type, dflt, s->doc);
        if (row == NULL) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, row);
    }
    return t;
}

static PyMethodDef fc_settings_methods[] = {
    {"configure", (PyCFunction)(void (*)(void))fc_py_configure,
     METH_FASTCALL | METH_KEYWORDS, fc_configure_doc},
    {"backends", fc_py_backends, METH_NOARGS, fc_backends_doc},
    {"trim", fc_py_trim, METH_NOARGS, fc_trim_doc},
    {"_settings", fc_py_settings, METH_NOARGS, fc_settings_doc},
    {NULL, NULL, 0, NULL},
};

FC_INTERNAL int
fc_settings_exec(PyObject *module, FcState *st)
{
    FcSettingRef all[FC_MAX_SETTINGS];
    int n = fc_settings_all(all);
    for (int i = 0; i < n; i++) {
        fc_setting_store(st, &all[i], all[i].s->deflt);
    }
    fc_settings_make_doc();
    return PyModule_AddFunctions(module, fc_settings_methods);
}
