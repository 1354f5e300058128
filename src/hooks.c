/*
 * hooks.c: native roads for library hooks whose code is known.
 *
 * Some classes get their copy hooks from a library that writes them once
 * for every class: the dataclasses module gives every frozen slotted
 * dataclass its own _dataclass_getstate / _dataclass_setstate.  Run as
 * Python code, these hooks cost more than everything else in the copy of
 * such an object.  What they do is fixed, so the walker may do it itself --
 * but only while it is exactly that code:
 *
 *   - the class's hook is the library's very function object (found in the
 *     library module's dict, never by a class or module name), and its code
 *     object is the one it had when verified;
 *   - every global and builtin the hook and its helpers read is still the
 *     object verified (the dicts' version tags say when to look again);
 *   - the data the hook reads (a dataclass's __dataclass_fields__ and its
 *     Field objects) is read again on every copy, as the hook reads it, and
 *     every attribute it gets or sets is a plain slot (a member descriptor),
 *     so no user code can run where the hook would have run none.
 *
 * Anything else -- a subclass that overrides the hook, a patched global, a
 * field that is a property -- sends the object down the stdlib's road.
 *
 * dataclasses (3.10-3.13, identical in each):
 *     def _dataclass_getstate(self):
 *         return [getattr(self, f.name) for f in fields(self)]
 *     def _dataclass_setstate(self, state):
 *         for field, value in zip(fields(self), state):
 *             object.__setattr__(self, field.name, value)
 * where fields(x) is tuple(f for f in getattr(x, _FIELDS).values()
 * if f._field_type is _FIELD), after a TypeError for a missing attribute.
 * The state list is a real temporary here, copied by the walker's list road
 * as _reconstruct copies it, so the memo holds what the stdlib's holds.
 */
#include "fastcopy.h"
#include "hooks.h"
#include "state.h"
#include "watch.h"

/* Most fields a dataclass state is read natively for. */
#define FC_DC_MAX 64

static const char *const fc_dc_bnames[FC_DC_NBUILTINS] = {
    "getattr", "object", "zip", "tuple", "TypeError"
};

static int fc_is_builtin_named(PyObject *v, const char *name);

/* d[name] without running code (exact dict, str key).  borrowed | NULL */
static PyObject *
fc_dget(PyObject *d, const char *name)
{
    PyObject *v = PyDict_GetItemString(d, name);
    return v;
}

/* ------------------------------------------------------------------ */
/* Code fingerprints                                                   */
/* ------------------------------------------------------------------ */

/*
 * A library's hook that is defined once (pydantic's BaseModel.__deepcopy__)
 * is recognised by its function object, found in the library's own class
 * dict; which release of the hook that is -- what it does -- by a
 * fingerprint of its code: FNV-1a over the argument counts and flags, the
 * unspecialised bytecode, the exception table, the constants (nested code
 * objects alike), the names and the local names.  File, names and line
 * numbers are left out.  The known fingerprints, one per CPython minor
 * version for each release whose code was read and verified, are in the
 * tables by each road; `scripts/hook_fingerprints.py` prints them for the
 * running interpreter.  A function the hooks call (dataclasses.fields) is
 * recognised the same way.
 */

#define FC_FNV_OFFSET 0xcbf29ce484222325ull
#define FC_FNV_PRIME 0x100000001b3ull

static uint64_t
fc_fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ b[i]) * FC_FNV_PRIME;
    }
    return h;
}

static uint64_t
fc_fnv_int(uint64_t h, long long v)
{
    return fc_fnv(h, &v, sizeof(v));
}

/* Mix a str / bytes object's contents (a tag first).  0 | -1 */
static int
fc_fnv_obj(uint64_t *h, PyObject *o)
{
    if (PyUnicode_CheckExact(o)) {
        Py_ssize_t n;
        const char *u = PyUnicode_AsUTF8AndSize(o, &n);
        if (u == NULL) {
            return -1;
        }
        *h = fc_fnv(fc_fnv_int(*h, 1000 + n), u, (size_t)n);
        return 0;
    }
    if (PyBytes_CheckExact(o)) {
        *h = fc_fnv(fc_fnv_int(*h, 2000 + PyBytes_GET_SIZE(o)), PyBytes_AS_STRING(o),
                    (size_t)PyBytes_GET_SIZE(o));
        return 0;
    }
    return -1;
}

static int fc_fp_code(uint64_t *h, PyObject *code, int depth);

/* Mix a tuple of constants.  0 | -1 */
static int
fc_fp_consts(uint64_t *h, PyObject *t, int depth)
{
    if (!PyTuple_CheckExact(t) || depth > 8) {
        return -1;
    }
    *h = fc_fnv_int(*h, 3000 + PyTuple_GET_SIZE(t));
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t); i++) {
        PyObject *c = PyTuple_GET_ITEM(t, i);
        if (c == Py_None || c == Py_True || c == Py_False || c == Py_Ellipsis) {
            *h = fc_fnv_int(*h, c == Py_None ? 1 : c == Py_True ? 2 : c == Py_False ? 3 : 4);
        }
        else if (PyLong_CheckExact(c)) {
            int overflow;
            long long v = PyLong_AsLongLongAndOverflow(c, &overflow);
            if (overflow || (v == -1 && PyErr_Occurred())) {
                PyErr_Clear();
                return -1;
            }
            *h = fc_fnv_int(fc_fnv_int(*h, 5), v);
        }
        else if (PyTuple_CheckExact(c)) {
            if (fc_fp_consts(h, c, depth + 1) < 0) {
                return -1;
            }
        }
        else if (PyCode_Check(c)) {
            if (fc_fp_code(h, c, depth + 1) < 0) {
                return -1;
            }
        }
        else if (fc_fnv_obj(h, c) < 0) {
            PyErr_Clear();
            return -1;
        }
    }
    return 0;
}

/* Mix code attribute `name` (a bytes object or a tuple of strs).  0 | -1 */
static int
fc_fp_attr(uint64_t *h, PyObject *code, const char *name)
{
    PyObject *v = PyObject_GetAttrString(code, name);
    int r = -1;
    if (v != NULL && PyTuple_CheckExact(v)) {
        *h = fc_fnv_int(*h, 4000 + PyTuple_GET_SIZE(v));
        r = 0;
        for (Py_ssize_t i = 0; r == 0 && i < PyTuple_GET_SIZE(v); i++) {
            r = fc_fnv_obj(h, PyTuple_GET_ITEM(v, i));
        }
    }
    else if (v != NULL) {
        r = fc_fnv_obj(h, v);
    }
    Py_XDECREF(v);
    PyErr_Clear();
    return r;
}

static int
fc_fp_code(uint64_t *h, PyObject *code, int depth)
{
    PyCodeObject *co = (PyCodeObject *)code;
    *h = fc_fnv_int(*h, co->co_argcount);
    *h = fc_fnv_int(*h, co->co_posonlyargcount);
    *h = fc_fnv_int(*h, co->co_kwonlyargcount);
    *h = fc_fnv_int(*h, co->co_flags);
    /* co_code is the unspecialised bytecode on 3.11+ */
    if (fc_fp_attr(h, code, "co_code") < 0
#if FC_PY311_PLUS
        || fc_fp_attr(h, code, "co_exceptiontable") < 0
#endif
        || fc_fp_consts(h, co->co_consts, depth) < 0
        || fc_fp_attr(h, code, "co_names") < 0
        || fc_fp_attr(h, code, "co_varnames") < 0
        || fc_fp_attr(h, code, "co_freevars") < 0
        || fc_fp_attr(h, code, "co_cellvars") < 0) {
        return -1;
    }
    return 0;
}

FC_INTERNAL int
fc_code_fingerprint(PyObject *code, uint64_t *fp)
{
    if (!PyCode_Check(code)) {
        return -1;
    }
    uint64_t h = FC_FNV_OFFSET;
    if (fc_fp_code(&h, code, 0) < 0) {
        return -1;
    }
    *fp = h;
    return 0;
}

/* A table row: the fingerprints of one release's code (a hook, or a pair
   of hooks) on CPython 3.minor.  variant: which of the library's verified
   variants that code is (0, left out of a row: the newest; the roads read
   it where older releases do their steps in another order or read other
   globals). */
typedef struct {
    int minor;
    uint64_t fp[3];
    int variant;
} FcKnownCode;

/* The variant as which fps[k] lists code's fingerprint for this CPython.
   variant | -1 (not listed) */
static int
fc_code_variant(PyObject *code, const FcKnownCode *known, size_t n, int k)
{
    uint64_t fp;
    if (code == NULL || fc_code_fingerprint(code, &fp) < 0) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (known[i].minor == PY_MINOR_VERSION && known[i].fp[k] == fp) {
            return known[i].variant;
        }
    }
    return -1;
}

/* The variant of the first row for this CPython that lists both codes, in
   columns 0 and 1 (a pair of hooks of one release).  variant | -1 */
static int
fc_code_pair_variant(PyObject *c0, PyObject *c1, const FcKnownCode *known, size_t n)
{
    uint64_t f0, f1;
    if (c0 == NULL || c1 == NULL || fc_code_fingerprint(c0, &f0) < 0
        || fc_code_fingerprint(c1, &f1) < 0) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (known[i].minor == PY_MINOR_VERSION && known[i].fp[0] == f0 && known[i].fp[1] == f1) {
            return known[i].variant;
        }
    }
    return -1;
}

/* Does code have the fingerprint fps[k] listed for this CPython?  1 | 0 */
static int
fc_code_known(PyObject *code, const FcKnownCode *known, size_t n, int k)
{
    return fc_code_variant(code, known, n, k) >= 0;
}

#define FC_NKNOWN(t) (sizeof(t) / sizeof((t)[0]))

/* dataclasses' hooks and fields(), 3.10-3.15 (the text above, read in each). */
static const FcKnownCode fc_dc_known[] = {
    /* _dataclass_getstate, _dataclass_setstate, fields */
    {10, {0x54ce0213feee5f75ull, 0x915096c8d12836fbull, 0x6543d4c5d5617ffdull}},
    {11, {0x9092ff244278907dull, 0x14f9b1e63cbc92c0ull, 0x832474117c445ec8ull}},
    {12, {0x3c32d6040b9a02b9ull, 0x0779d0f03ddf4633ull, 0x28367f445759cc30ull}},
    {13, {0x50830b96d5be9650ull, 0xe42d3e7329e77621ull, 0x1fa7d1e30709a154ull}},
    /* 3.14.10, 3.15.2: the three functions' source is 3.13's, line for line */
    {14, {0x2dcec6724890677full, 0x62c2ff66bd1ba1dcull, 0x0d95d2a59aee5c70ull}},
    {15, {0xf422bc2adfda3a0dull, 0x9597b916b6c96893ull, 0x002a54b66d3b6f83ull}},
};

/* Is v the real builtin `name` (getattr, isinstance, ...) or type? */
static int fc_is_builtin_named(PyObject *v, const char *name);

static int
fc_builtin_ok(PyObject *v, const char *name)
{
    if (v == NULL) {
        return 0;
    }
    if (strcmp(name, "object") == 0) {
        return v == (PyObject *)&PyBaseObject_Type;
    }
    if (strcmp(name, "zip") == 0) {
        return v == (PyObject *)&PyZip_Type;
    }
    if (strcmp(name, "tuple") == 0) {
        return v == (PyObject *)&PyTuple_Type;
    }
    if (strcmp(name, "type") == 0) {
        return v == (PyObject *)&PyType_Type;
    }
    if (strcmp(name, "TypeError") == 0) {
        return v == PyExc_TypeError;
    }
    if (strcmp(name, "AttributeError") == 0) {
        return v == PyExc_AttributeError;
    }
    if (strcmp(name, "super") == 0) {
        return v == (PyObject *)&PySuper_Type;
    }
    if (strcmp(name, "dict") == 0) {
        return v == (PyObject *)&PyDict_Type;
    }
    return fc_is_builtin_named(v, name);
}

/* The builtins `names` are the real ones in b and not shadowed in g.
   1 | 0 */
static int
fc_builtins_ok(PyObject *g, PyObject *b, const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        if (fc_dget(g, names[i]) != NULL || !fc_builtin_ok(fc_dget(b, names[i]), names[i])) {
            return 0;
        }
    }
    return 1;
}

/* The globals and builtins dataclasses' hooks read still do what the
   native road does: fields() is a function with the verified code (any
   such function object: recognised by its fingerprint, then by identity),
   _FIELDS names __dataclass_fields__, _FIELD is the marker its Field
   objects were made with, the builtins are the real ones.  1 | 0 */
static int
fc_dc_names_ok(FcState *st)
{
    FcHooksState *h = &st->hooks;
    PyObject *g = h->dc_globals, *b = h->dc_builtins;
    PyObject *fl = h->dc_fields;
    if (fl != NULL && PyFunction_GET_CODE(fl) != h->dc_code[2]) {
        return 0;
    }
    if (fl != NULL && fc_names_stamp(st, g) == h->dc_ver[0]
        && fc_names_stamp(st, b) == h->dc_ver[1]) {
        return 1;
    }
    PyObject *f = fc_dget(g, "fields"), *fs = fc_dget(g, "_FIELDS");
    if (f == NULL || !PyFunction_Check(f) || fc_dget(g, "_FIELD") != h->dc_marker
        || fs == NULL || !PyUnicode_CheckExact(fs)
        || PyUnicode_Compare(fs, h->s_dc_fields) != 0
        || !fc_builtins_ok(g, b, fc_dc_bnames, FC_DC_NBUILTINS)) {
        PyErr_Clear();
        return 0;
    }
    if (f != fl) {
        PyObject *code = PyFunction_GET_CODE(f);
        if (((PyFunctionObject *)f)->func_globals != g
            || !fc_code_known(code, fc_dc_known, FC_NKNOWN(fc_dc_known), 2)) {
            return 0;
        }
        Py_XSETREF(h->dc_fields, Py_NewRef(f));
        Py_XSETREF(h->dc_code[2], Py_NewRef(code));
    }
    h->dc_ver[0] = fc_names_take(st, g);
    h->dc_ver[1] = fc_names_take(st, b);
    return 1;
}

/* Capture the dataclasses module's state hooks the first time it is
   loaded: their functions, recognised by their code's fingerprints, and
   what fields() reads (Field's slots, the _FIELD marker).  1 | 0 (not
   now, or never: dc_checked -1) */
static int
fc_dc_capture(FcState *st)
{
    FcHooksState *h = &st->hooks;
    PyObject *mods = PySys_GetObject("modules");     /* borrowed */
    PyObject *mod = mods != NULL && PyDict_Check(mods)
                    ? PyDict_GetItemString(mods, "dataclasses") : NULL;
    if (mod == NULL || !PyModule_CheckExact(mod)) {
        return 0;
    }
    PyObject *g = PyModule_GetDict(mod);
    PyObject *gs = fc_dget(g, "_dataclass_getstate"), *ss = fc_dget(g, "_dataclass_setstate");
    PyObject *mk = fc_dget(g, "_FIELD"), *ft = fc_dget(g, "Field");
    h->dc_checked = -1;
    if (gs == NULL || ss == NULL || mk == NULL || ft == NULL
        || !PyFunction_Check(gs) || !PyFunction_Check(ss) || !PyType_Check(ft)
        || !PyDict_CheckExact(g)) {
        return 0;
    }
    PyFunctionObject *fs[2] = {(PyFunctionObject *)gs, (PyFunctionObject *)ss};
    PyObject *b = fs[0]->func_builtins;
    for (int i = 0; i < 2; i++) {
        if (fs[i]->func_globals != g || fs[i]->func_builtins != b
            || !fc_code_known(fs[i]->func_code, fc_dc_known, FC_NKNOWN(fc_dc_known), i)) {
            return 0;
        }
    }
    if (b == NULL || !PyDict_CheckExact(b)) {
        return 0;
    }
    PyTypeObject *FT = (PyTypeObject *)ft;
    PyObject *s_name = PyUnicode_InternFromString("name");
    PyObject *s_ft = s_name != NULL ? PyUnicode_InternFromString("_field_type") : NULL;
    if (h->s_dc_fields == NULL && s_ft != NULL) {
        h->s_dc_fields = PyUnicode_InternFromString("__dataclass_fields__");
    }
    if (s_ft == NULL || h->s_dc_fields == NULL) {
        Py_XDECREF(s_name);
        Py_XDECREF(s_ft);
        PyErr_Clear();
        h->dc_checked = 0;
        return 0;
    }
    PyObject *dn = _PyType_Lookup(FT, s_name), *dt = _PyType_Lookup(FT, s_ft);
    Py_DECREF(s_name);
    Py_DECREF(s_ft);
    unsigned int tag = fc_type_tag(FT);
    if (dn == NULL || dt == NULL || tag == 0 || !Py_IS_TYPE(dn, &PyMemberDescr_Type)
        || !Py_IS_TYPE(dt, &PyMemberDescr_Type)) {
        return 0;
    }
    h->dc_getstate = Py_NewRef(gs);
    h->dc_setstate = Py_NewRef(ss);
    for (int i = 0; i < 2; i++) {
        h->dc_code[i] = Py_NewRef(fs[i]->func_code);
    }
    h->dc_marker = Py_NewRef(mk);
    h->dc_field_type = (PyTypeObject *)Py_NewRef(ft);
    h->dc_field_tag = tag;
    h->dc_d_name = Py_NewRef(dn);
    h->dc_d_ftype = Py_NewRef(dt);
    h->dc_globals = Py_NewRef(g);
    h->dc_builtins = Py_NewRef(b);
    h->dc_ver[0] = h->dc_ver[1] = 0;
    h->dc_checked = 1;
    return 1;
}

/* The hooks are captured (their functions known).  1 | 0 */
static int
fc_dc_captured(FcState *st)
{
    int c = st->hooks.dc_checked;
    return c > 0 || (c == 0 && fc_dc_capture(st));
}

/* ... and, for a copy now, their code and what they read unchanged.
   1 | 0 */
static int
fc_dc_ok(FcState *st)
{
    FcHooksState *h = &st->hooks;
    if (!fc_dc_captured(st)
        || PyFunction_GET_CODE(h->dc_getstate) != h->dc_code[0]
        || PyFunction_GET_CODE(h->dc_setstate) != h->dc_code[1]
        || fc_type_tag(h->dc_field_type) != h->dc_field_tag) {
        return 0;
    }
    return fc_dc_names_ok(st);
}

/* fields(tp's instances): the names of the fields in order (new refs into
   names[0..n)).  n | -1: not this road (nothing held) | -2+exc */
static Py_ssize_t
fc_dc_fields(FcState *st, PyTypeObject *tp, PyObject **names)
{
    FcHooksState *h = &st->hooks;
    /* getattr(x, '__dataclass_fields__'): a class attribute of a slotted
       instance with plain getattr */
    PyObject *fd = _PyType_Lookup(tp, h->s_dc_fields);
    if (fd == NULL || !PyDict_CheckExact(fd)) {
        return -1;
    }
    Py_ssize_t pos = 0, n = 0;
    PyObject *k, *f;
    descrgetfunc get = Py_TYPE(h->dc_d_ftype)->tp_descr_get;
    while (PyDict_Next(fd, &pos, &k, &f)) {
        /* member_get reads a slot: no user code */
        if (Py_TYPE(f) != h->dc_field_type) {
            goto other;
        }
        PyObject *ftype = get(h->dc_d_ftype, f, (PyObject *)h->dc_field_type);
        if (ftype == NULL) {
            PyErr_Clear();
            goto other;
        }
        int is_field = ftype == h->dc_marker;
        Py_DECREF(ftype);
        if (!is_field) {
            continue;
        }
        PyObject *name = get(h->dc_d_name, f, (PyObject *)h->dc_field_type);
        if (name == NULL) {
            PyErr_Clear();
            goto other;
        }
        if (!PyUnicode_CheckExact(name) || n == FC_DC_MAX) {
            Py_DECREF(name);
            goto other;
        }
        names[n++] = name;
    }
    return n;
other:
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_DECREF(names[i]);
    }
    return -1;
}

/* The slot descriptor each name finds on tp (borrowed into d[]), all of
   them member descriptors.  1 | 0 */
static int
fc_dc_slots(PyTypeObject *tp, PyObject *const *names, Py_ssize_t n, PyObject **d)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        d[i] = _PyType_Lookup(tp, names[i]);
        if (d[i] == NULL || !Py_IS_TYPE(d[i], &PyMemberDescr_Type)) {
            return 0;
        }
    }
    return 1;
}

static PyObject *
fc_dc_getstate(FcState *st, PyObject *x)
{
    PyTypeObject *tp = Py_TYPE(x);
    PyObject *names[FC_DC_MAX], *d[FC_DC_MAX], *state = NULL;
    if (!fc_dc_ok(st)) {
        return NULL;
    }
    Py_ssize_t n = fc_dc_fields(st, tp, names);
    if (n < 0) {
        return NULL;
    }
    /* the list first: on 3.10/3.11 its allocation may collect and run
       finalizers, and the descriptors below are borrowed from tp's dict */
    state = PyList_New(n);
    if (state == NULL) {
        goto done;
    }
    if (!fc_dc_slots(tp, names, n, d)) {
        Py_CLEAR(state);
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        /* getattr(self, f.name): the member descriptor's get (an unset slot
           raises the stdlib's AttributeError) */
        PyObject *v = Py_TYPE(d[i])->tp_descr_get(d[i], x, (PyObject *)tp);
        if (v == NULL) {
            Py_CLEAR(state);
            goto done;
        }
        PyList_SET_ITEM(state, i, v);
    }
done:
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_DECREF(names[i]);
    }
    return state;
}

static int
fc_dc_setstate(FcState *st, PyObject *y, PyObject *state)
{
    PyTypeObject *tp = Py_TYPE(y);
    PyObject *names[FC_DC_MAX], *d[FC_DC_MAX];
    if (!PyList_CheckExact(state) || !fc_dc_ok(st)) {
        return 0;
    }
    Py_ssize_t n = fc_dc_fields(st, tp, names);
    if (n < 0) {
        return 0;
    }
    int r = 0;
    if (fc_dc_slots(tp, names, n, d)) {
        /* zip(fields(self), state): object.__setattr__(self, name, value)
           finds the same member descriptor and sets the slot */
        r = 1;
        for (Py_ssize_t i = 0; i < n && i < PyList_GET_SIZE(state); i++) {
            PyObject *v = PyList_GET_ITEM(state, i);
            if (Py_TYPE(d[i])->tp_descr_set(d[i], y, v) < 0) {
                r = -1;
                break;
            }
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_DECREF(names[i]);
    }
    return r;
}

/* ------------------------------------------------------------------ */
/* attrs: slots_getstate / slots_setstate                              */
/* ------------------------------------------------------------------ */

/*
 * attrs (22.2 and later) gives every slotted class two closures made by
 * _ClassBuilder._make_getstate_setstate, so every such class's hooks share
 * two code objects, found among that method's constants:
 *     def slots_getstate(self):
 *         return {name: getattr(self, name) for name in state_attr_names}
 *     def slots_setstate(self, state):
 *         __bound_setattr = _OBJ_SETATTR.__get__(self)
 *         if isinstance(state, tuple): ...zip(state_attr_names, state)...
 *         else:
 *             for name in state_attr_names:
 *                 if name in state:
 *                     __bound_setattr(name, state[name])
 *         if hash_caching_enabled:
 *             __bound_setattr(_HASH_CACHE_FIELD, None)
 * The field names and the hash flag are read from the closure cells on
 * every copy.  The tuple branch (states pickled by attrs before 22.2) is
 * left to the Python hook: the walker's own states are dicts.
 * Three variants, each read (scripts/hook_fingerprints.py --releases
 * groups the releases):
 *   0  24.1 to 26.1: the text above;
 *   1  23.1, 23.2: the same steps, the globals named _obj_setattr and
 *      _hash_cache_field;
 *   2  22.2: as 1, without the tuple branch (a dict state never takes it,
 *      and the builtins it reads are still checked: a shadowed one only
 *      sends copies down the Python road).
 * 22.1 and earlier return a tuple state: not listed.
 */

static const char *const fc_at_bnames[FC_AT_NBUILTINS] = {
    "getattr", "isinstance", "tuple", "zip"
};

/* slots_getstate, slots_setstate of the attrs releases read (the text
   above): 24.1.0-26.1.0 (variant 0), 23.1.0-23.2.0 (1), 22.2.0 (2) */
static const FcKnownCode fc_at_known[] = {
    {10, {0x8f08f3260897e629ull, 0xa5769c89f3eb34d5ull}},
    {10, {0xc95117064069b14full, 0xe71da47ecb41c550ull}, 1},    /* 23.1.0-23.2.0 */
    {10, {0xc95117064069b14full, 0x0f011f91b4da7de2ull}, 2},    /* 22.2.0 */
    {11, {0x7663da8a37b99c47ull, 0x14068ea50b9a22d5ull}},
    {11, {0x163fe3bf0884119dull, 0x979e052d317a55fcull}, 1},    /* 23.1.0-23.2.0 */
    {11, {0x163fe3bf0884119dull, 0xfe74799d5f23ae57ull}, 2},    /* 22.2.0 */
    {12, {0xc32ba3297ee9150bull, 0xa9238bca70222dcfull}},
    {12, {0xf93648b62f453da8ull, 0xb75855f5ad8a105eull}, 1},    /* 23.1.0-23.2.0 */
    {12, {0xf93648b62f453da8ull, 0x96053cbdb3c2dfc0ull}, 2},    /* 22.2.0 */
    {13, {0x63192ff6adc24040ull, 0x9b2ed61f3f67edc2ull}},
    {13, {0xbde348b6711a107bull, 0x75579bddbebb1d8full}, 1},    /* 23.1.0-23.2.0 */
    {13, {0xbde348b6711a107bull, 0x63ae93064b473283ull}, 2},    /* 22.2.0 */
    {14, {0xf40ca0b59c2863a8ull, 0xf264495caa3b57daull}},
    {14, {0x69f53c02a0c22bb3ull, 0x4c78107f8c24b1b3ull}, 1},    /* 23.1.0-23.2.0 */
    {14, {0x69f53c02a0c22bb3ull, 0x21c9fbea698ca901ull}, 2},    /* 22.2.0 */
    {15, {0xed1e9182d976efaaull, 0x974d3f9109df9a22ull}},
    {15, {0x89bd6adbb8e27945ull, 0xf6077493db0cfbb3ull}, 1},    /* 23.1.0-23.2.0 */
    {15, {0x89bd6adbb8e27945ull, 0x1a9300cdef405b1cull}, 2},    /* 22.2.0 */
};

/* Is v the builtin function `name` of the builtins module? */
static int
fc_is_builtin_named(PyObject *v, const char *name)
{
    if (!PyCFunction_Check(v)) {
        return 0;
    }
    PyCFunctionObject *f = (PyCFunctionObject *)v;
    if (f->m_ml == NULL || strcmp(f->m_ml->ml_name, name) != 0
        || f->m_self == NULL || !PyModule_Check(f->m_self)) {
        return 0;
    }
    const char *mn = PyModule_GetName(f->m_self);
    if (mn == NULL) {
        PyErr_Clear();
        return 0;
    }
    return strcmp(mn, "builtins") == 0;
}

/* attr._make's globals and builtins the hooks read are the verified ones.
   1 | 0 */
static int
fc_at_names_ok(FcState *st)
{
    FcHooksState *h = &st->hooks;
    PyObject *g = h->at_globals, *b = h->at_builtins;
    if (fc_names_stamp(st, g) == h->at_ver[0] && fc_names_stamp(st, b) == h->at_ver[1]) {
        return 1;
    }
    PyObject *hf = fc_dget(g, h->at_gnames[1]);
    if (fc_dget(g, h->at_gnames[0]) != h->at_objsetattr || hf == NULL
        || !PyUnicode_CheckExact(hf) || PyUnicode_Compare(hf, h->at_hashfield) != 0
        || !fc_builtins_ok(g, b, fc_at_bnames, FC_AT_NBUILTINS)) {
        PyErr_Clear();
        return 0;
    }
    h->at_ver[0] = fc_names_take(st, g);
    h->at_ver[1] = fc_names_take(st, b);
    return 1;
}

/* Index of `name` in code's co_freevars, or -1. */
static int
fc_freevar_index(PyObject *code, const char *name)
{
    PyObject *fv = PyObject_GetAttrString(code, "co_freevars");
    int r = -1;
    if (fv != NULL && PyTuple_Check(fv)) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fv); i++) {
            PyObject *n = PyTuple_GET_ITEM(fv, i);
            if (PyUnicode_Check(n) && PyUnicode_CompareWithASCIIString(n, name) == 0) {
                r = (int)i;
                break;
            }
        }
    }
    Py_XDECREF(fv);
    PyErr_Clear();
    return r;
}

/* Capture attrs' two code objects the first time.  1 | 0 (not now) */
static int
fc_at_capture(FcState *st)
{
    FcHooksState *h = &st->hooks;
    PyObject *mods = PySys_GetObject("modules");     /* borrowed */
    PyObject *mod = mods != NULL && PyDict_Check(mods)
                    ? PyDict_GetItemString(mods, "attr._make") : NULL;
    if (mod == NULL || !PyModule_CheckExact(mod)) {
        return 0;
    }
    h->at_checked = -1;
    PyObject *g = PyModule_GetDict(mod);
    PyObject *cb = fc_dget(g, "_ClassBuilder");
    if (cb == NULL || !PyType_Check(cb) || !PyDict_CheckExact(g)) {
        return 0;
    }
    /* object.__setattr__, the slot wrapper in object's own dict */
    PyObject *s_setattr = PyUnicode_InternFromString("__setattr__");
    PyObject *s_mk = s_setattr ? PyUnicode_InternFromString("_make_getstate_setstate") : NULL;
    if (s_mk == NULL) {
        Py_XDECREF(s_setattr);
        PyErr_Clear();
        return 0;
    }
    PyObject *real = _PyType_Lookup(&PyBaseObject_Type, s_setattr);
    PyObject *mk = _PyType_Lookup((PyTypeObject *)cb, s_mk);
    Py_DECREF(s_setattr);
    Py_DECREF(s_mk);
    if (real == NULL || mk == NULL || !PyFunction_Check(mk)) {
        return 0;
    }
    PyFunctionObject *mf = (PyFunctionObject *)mk;
    PyObject *b = mf->func_builtins;
    if (mf->func_globals != g || b == NULL || !PyDict_CheckExact(b)) {
        return 0;
    }
    PyObject *consts = ((PyCodeObject *)mf->func_code)->co_consts;
    PyObject *codes[2] = {NULL, NULL};
    static const char *const cnames[2] = {"slots_getstate", "slots_setstate"};
    for (Py_ssize_t i = 0; consts != NULL && i < PyTuple_GET_SIZE(consts); i++) {
        PyObject *co = PyTuple_GET_ITEM(consts, i);
        if (!PyCode_Check(co)) {
            continue;
        }
        PyObject *nm = ((PyCodeObject *)co)->co_name;
        for (int k = 0; k < 2; k++) {
            if (PyUnicode_CompareWithASCIIString(nm, cnames[k]) == 0) {
                if (codes[k] != NULL) {
                    return 0;
                }
                codes[k] = co;
            }
        }
    }
    int variant = fc_code_pair_variant(codes[0], codes[1], fc_at_known, FC_NKNOWN(fc_at_known));
    if (variant < 0) {
        return 0;
    }
    /* the globals setstate reads, by the names its variant gives them */
    static const char *const gnames[2][2] = {{"_OBJ_SETATTR", "_HASH_CACHE_FIELD"},
                                             {"_obj_setattr", "_hash_cache_field"}};
    const char *const *gn = gnames[variant == 0 ? 0 : 1];
    PyObject *osa = fc_dget(g, gn[0]), *hf = fc_dget(g, gn[1]);
    if (osa == NULL || hf == NULL || !PyUnicode_CheckExact(hf)) {
        return 0;
    }
    int n0 = fc_freevar_index(codes[0], "state_attr_names");
    int n1 = fc_freevar_index(codes[1], "state_attr_names");
    int hc = fc_freevar_index(codes[1], "hash_caching_enabled");
    if (n0 < 0 || n1 < 0 || hc < 0) {
        return 0;
    }
    for (int k = 0; k < 2; k++) {
        h->at_code[k] = Py_NewRef(codes[k]);
    }
    h->at_names_cell[0] = n0;
    h->at_names_cell[1] = n1;
    h->at_hash_cell = hc;
    h->at_globals = Py_NewRef(g);
    h->at_builtins = Py_NewRef(b);
    h->at_objsetattr = Py_NewRef(real);
    h->at_hashfield = Py_NewRef(hf);
    h->at_gnames[0] = gn[0];
    h->at_gnames[1] = gn[1];
    h->at_ver[0] = h->at_ver[1] = 0;
    h->at_checked = 1;
    return 1;
}

static int
fc_at_captured(FcState *st)
{
    int c = st->hooks.at_checked;
    return c > 0 || (c == 0 && fc_at_capture(st));
}

static int
fc_at_ok(FcState *st)
{
    return fc_at_captured(st) && fc_at_names_ok(st);
}

/* f is attrs' hook k (0 getstate, 1 setstate) as made for a class: its
   closure's cell `which` (k's names cell, or -1: the hash flag).
   borrowed cell content | NULL (not it) */
static PyObject *
fc_at_cell(FcHooksState *h, PyObject *f, int k, int which)
{
    if (f == NULL || !PyFunction_Check(f)) {
        return NULL;
    }
    PyFunctionObject *fn = (PyFunctionObject *)f;
    if (fn->func_code != h->at_code[k] || fn->func_globals != h->at_globals
        || fn->func_builtins != h->at_builtins || fn->func_closure == NULL
        || !PyTuple_Check(fn->func_closure)) {
        return NULL;
    }
    int i = which < 0 ? h->at_hash_cell : h->at_names_cell[k];
    if (i >= PyTuple_GET_SIZE(fn->func_closure)) {
        return NULL;
    }
    PyObject *cell = PyTuple_GET_ITEM(fn->func_closure, i);
    return PyCell_Check(cell) ? PyCell_GET(cell) : NULL;
}

/* The field names of a class's attrs hook k: an exact tuple of exact strs,
   each a plain slot of tp (descriptors borrowed into d[]).  new ref | NULL */
static PyObject *
fc_at_names(FcState *st, PyTypeObject *tp, int k)
{
    FcHooksState *h = &st->hooks;
    PyObject *f = _PyType_Lookup(tp, k == 0 ? st->s_getstate : st->s_setstate);
    PyObject *names = fc_at_cell(h, f, k, 0);
    if (names == NULL || !PyTuple_CheckExact(names) || PyTuple_GET_SIZE(names) > FC_DC_MAX) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++) {
        if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(names, i))) {
            return NULL;
        }
    }
    return Py_NewRef(names);
}

static PyObject *
fc_at_getstate(FcState *st, PyObject *x)
{
    PyTypeObject *tp = Py_TYPE(x);
    PyObject *d[FC_DC_MAX];
    if (!fc_at_ok(st)) {
        return NULL;
    }
    PyObject *names = fc_at_names(st, tp, 0);
    if (names == NULL) {
        return NULL;
    }
    /* the dict first: on 3.10/3.11 its allocation may collect and run
       finalizers, and the descriptors below are borrowed from tp's dict */
    PyObject *state = PyDict_New();
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    if (state == NULL || !fc_dc_slots(tp, &PyTuple_GET_ITEM(names, 0), n, d)) {
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        /* getattr(self, name): the member descriptor's get */
        PyObject *v = Py_TYPE(d[i])->tp_descr_get(d[i], x, (PyObject *)tp);
        if (v == NULL) {
            goto fail;
        }
        /* an exact str key into a dict of our own: no user code, and its
           table grows with PyMem (no collection) */
        int r = PyDict_SetItem(state, PyTuple_GET_ITEM(names, i), v);
        Py_DECREF(v);
        if (r < 0) {
            goto fail;
        }
    }
    Py_DECREF(names);
    return state;
fail:
    Py_DECREF(names);
    Py_XDECREF(state);
    return NULL;
}

static int
fc_at_setstate(FcState *st, PyObject *y, PyObject *state)
{
    FcHooksState *h = &st->hooks;
    PyTypeObject *tp = Py_TYPE(y);
    PyObject *d[FC_DC_MAX + 1];
    if (!PyDict_CheckExact(state) || !fc_at_ok(st)) {
        return 0;
    }
    PyObject *flag = fc_at_cell(h, _PyType_Lookup(tp, st->s_setstate), 1, -1);
    if (flag == NULL || !PyBool_Check(flag)) {
        return 0;
    }
    PyObject *names = fc_at_names(st, tp, 1);
    if (names == NULL) {
        return 0;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    int r = 0;
    if (!fc_dc_slots(tp, &PyTuple_GET_ITEM(names, 0), n, d)
        || (flag == Py_True && !fc_dc_slots(tp, &h->at_hashfield, 1, d + n))) {
        goto done;
    }
    /* for name in names: if name in state: object.__setattr__(y, name,
       state[name]) -- exact str keys in an exact dict: no user code */
    r = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyDict_GetItemWithError(state, PyTuple_GET_ITEM(names, i));
        if (v == NULL) {
            if (PyErr_Occurred()) {
                r = -1;
                goto done;
            }
            continue;
        }
        Py_INCREF(v);
        int rc = Py_TYPE(d[i])->tp_descr_set(d[i], y, v);
        Py_DECREF(v);
        if (rc < 0) {
            r = -1;
            goto done;
        }
    }
    if (flag == Py_True && Py_TYPE(d[n])->tp_descr_set(d[n], y, Py_None) < 0) {
        r = -1;
    }
done:
    Py_DECREF(names);
    return r;
}

/* ------------------------------------------------------------------ */
/* pydantic v2: BaseModel.__deepcopy__                                 */
/* ------------------------------------------------------------------ */

/*
 * pydantic 2.14 (the variant whose fingerprints are listed):
 *     def __deepcopy__(self, memo=None):
 *         if memo is None: memo = {}
 *         cls = type(self); m = cls.__new__(cls); memo[id(self)] = m
 *         _object_setattr(m, '__dict__', deepcopy(self.__dict__, memo=memo))
 *         _object_setattr(m, '__pydantic_extra__',
 *                         deepcopy(self.__pydantic_extra__, memo=memo))
 *         _object_setattr(m, '__pydantic_fields_set__',
 *                         copy(self.__pydantic_fields_set__))
 *         if not hasattr(self, '__pydantic_private__')
 *                 or self.__pydantic_private__ is None:
 *             _object_setattr(m, '__pydantic_private__', None)
 *         else:
 *             _object_setattr(m, '__pydantic_private__', deepcopy(
 *                 {k: v for k, v in self.__pydantic_private__.items()
 *                  if v is not PydanticUndefined}, memo=memo))
 *         return m
 * The walker runs these steps itself (deepcopy.c, fc_deep_pydantic):
 * deepcopy and copy are the copy module's (the stdlib's code or fastcopy's
 * patch of it), _object_setattr is object.__setattr__, and the three
 * attributes are BaseModel's slots.  The variants (FC_PD_V*), each read:
 *   FC_PD_V14  2.14: the text above;
 *   FC_PD_V7   2.7 to 2.13: no `if memo is None` and no memo store: the
 *              fields are copied while memo holds nothing for self (a
 *              reference back to the model copies it again, recursing as
 *              the stdlib does), and deepcopy() stores memo[id(self)] = m
 *              after the hook returns, then keeps self alive;
 *   FC_PD_V5   2.5, 2.6: as FC_PD_V7, with `if self.__pydantic_private__
 *              is None` for the hasattr() test: an unset private slot is
 *              read once through the model's __getattr__ (its error is
 *              the hook's), then again for .items().
 * RootModel's own hook is below.
 */

/* BaseModel.__deepcopy__ of the pydantic releases read (the text above):
   2.14.4 (FC_PD_V14), 2.7.4-2.13.4 (FC_PD_V7), 2.5.3-2.6.4 (FC_PD_V5) */
static const FcKnownCode fc_pd_known[] = {
    {10, {0xa98153b9c0c9a701ull}},
    {10, {0x77f304855c3fb529ull}, FC_PD_V7},      /* 2.7.4-2.13.4 */
    {10, {0xaf2bec760dfb607dull}, FC_PD_V5},      /* 2.5.3-2.6.4 */
    {11, {0xf66de9fe6f6fc9daull}},
    {11, {0xa71605344e6f187dull}, FC_PD_V7},      /* 2.7.4-2.13.4 */
    {11, {0xfe8b95530a30e66bull}, FC_PD_V5},      /* 2.5.3-2.6.4 */
    {12, {0x9f3945c090ab045bull}},
    {12, {0x4cbbf173dd94819full}, FC_PD_V7},      /* 2.7.4-2.13.4 */
    {12, {0xe8272ee4aab3eac1ull}, FC_PD_V5},      /* 2.5.3-2.6.4 */
    {13, {0x2aa88b4b0254ad28ull}},
    {13, {0x3f84cfcef3d597eeull}, FC_PD_V7},      /* 2.7.4-2.13.4 */
    {13, {0x85167af0f1510a65ull}, FC_PD_V5},      /* 2.5.3-2.6.4 */
    {14, {0x41d3e64d0c484dc8ull}},
    {14, {0x0690bd4628ce4ce4ull}, FC_PD_V7},      /* 2.7.4-2.13.4 */
    {14, {0x361b55f29e0b5061ull}, FC_PD_V5},      /* 2.5.3-2.6.4 */
    {15, {0x198cd557f7e18d78ull}},
    {15, {0x689300b830b4e10eull}, FC_PD_V7},      /* 2.7.4-2.13.4 */
    {15, {0xa14a42cffef66805ull}, FC_PD_V5},      /* 2.5.3-2.6.4 */
};

static const char *const fc_pd_bnames[3] = {"hasattr", "type", "id"};

/* deepcopy, copy and _object_setattr in a pydantic module's globals g: the
   ones BaseModel's capture found (pd_g).  1 | 0 */
static int
fc_pd_copy_names_ok(FcHooksState *h, PyObject *g)
{
    return fc_dget(g, "deepcopy") == h->pd_g[0] && fc_dget(g, "copy") == h->pd_g[1]
           && fc_dget(g, "_object_setattr") == h->pd_g[2];
}

/* clsname.__deepcopy__ in a pydantic module's globals g, if it is the
   function both of pydantic's hooks are: g's own, with real builtins, no
   closure nor keyword defaults, the one default None, and a code from
   `known` (*variant: its row's).  borrowed | NULL (an error may be set) */
static PyFunctionObject *
fc_pd_hook_fn(FcState *st, PyObject *g, const char *clsname, const FcKnownCode *known,
              size_t nknown, int *variant)
{
    PyObject *cls = PyDict_CheckExact(g) ? fc_dget(g, clsname) : NULL;
    if (cls == NULL || !PyType_Check(cls)) {
        return NULL;
    }
    PyObject *f = _PyType_Lookup((PyTypeObject *)cls, st->s_deepcopy);
    if (f == NULL || !PyFunction_Check(f)) {
        return NULL;
    }
    PyFunctionObject *fn = (PyFunctionObject *)f;
    PyObject *b = fn->func_builtins, *defs = fn->func_defaults;
    if (fn->func_globals != g || b == NULL || !PyDict_CheckExact(b) || fn->func_closure != NULL
        || fn->func_kwdefaults != NULL || defs == NULL || !PyTuple_CheckExact(defs)
        || PyTuple_GET_SIZE(defs) != 1 || PyTuple_GET_ITEM(defs, 0) != Py_None
        || (*variant = fc_code_variant(fn->func_code, known, nknown, 0)) < 0) {
        return NULL;
    }
    return fn;
}

/* pydantic.main's globals and builtins the hook reads still do what the
   native road does: deepcopy and copy are the copy module's own functions
   (as fastcopy found them at import), running the stdlib's code or
   fastcopy's patch of it; _object_setattr is object.__setattr__;
   PydanticUndefined the object first seen; the builtins the real ones.
   1 | 0 */
static int
fc_pd_names_ok(FcState *st)
{
    FcHooksState *h = &st->hooks;
    PyObject *g = h->pd_globals, *b = h->pd_builtins;
    if (PyFunction_GET_CODE(h->pd_deepcopy) != h->pd_code) {
        return 0;
    }
    for (int k = 0; k < 2; k++) {
        PyObject *code = PyFunction_GET_CODE(h->pd_g[k]);
        if (code != h->pd_codes[2 * k] && code != h->pd_codes[2 * k + 1]) {
            return 0;
        }
    }
    if (fc_names_stamp(st, g) == h->pd_ver[0] && fc_names_stamp(st, b) == h->pd_ver[1]) {
        return 1;
    }
    if (!fc_pd_copy_names_ok(h, g) || fc_dget(g, "PydanticUndefined") != h->pd_g[3]
        || !fc_builtins_ok(g, b, fc_pd_bnames, 3)) {
        PyErr_Clear();
        return 0;
    }
    h->pd_ver[0] = fc_names_take(st, g);
    h->pd_ver[1] = fc_names_take(st, b);
    return 1;
}

/* Capture pydantic's hook the first time pydantic.main is loaded: the
   function, recognised by its code's fingerprint.  1 | 0 (not now, or
   never: pd_checked -1) */
static int
fc_pd_capture(FcState *st)
{
    FcHooksState *h = &st->hooks;
    PyObject *mods = PySys_GetObject("modules");     /* borrowed */
    PyObject *mod = mods != NULL && PyDict_Check(mods)
                    ? PyDict_GetItemString(mods, "pydantic.main") : NULL;
    PyObject *fcm = mods != NULL && PyDict_Check(mods)
                    ? PyDict_GetItemString(mods, "fastcopy") : NULL;
    if (mod == NULL || !PyModule_CheckExact(mod) || fcm == NULL || !PyModule_Check(fcm)) {
        return 0;
    }
    PyObject *g = PyModule_GetDict(mod), *fd = PyModule_GetDict(fcm);
    PyObject *sd = fc_dget(fd, "_STD_DEEPCOPY"), *sc = fc_dget(fd, "_STD_COPY");
    PyObject *codes[4] = {fc_dget(fd, "_STD_DEEPCOPY_CODE"), fc_dget(fd, "_TRAMP_DEEPCOPY"),
                          fc_dget(fd, "_STD_COPY_CODE"), fc_dget(fd, "_TRAMP_COPY")};
    if (sd == NULL || sc == NULL || !PyFunction_Check(sd) || !PyFunction_Check(sc)
        || codes[0] == NULL || codes[1] == NULL || codes[2] == NULL || codes[3] == NULL) {
        return 0;               /* fastcopy's package still importing */
    }
    h->pd_checked = -1;
    PyObject *und = fc_dget(g, "PydanticUndefined");
    int variant = 0;
    PyFunctionObject *fn = und == NULL ? NULL
        : fc_pd_hook_fn(st, g, "BaseModel", fc_pd_known, FC_NKNOWN(fc_pd_known), &variant);
    if (fn == NULL) {
        PyErr_Clear();
        return 0;
    }
    PyObject *f = (PyObject *)fn, *b = fn->func_builtins;
    PyObject *s_setattr = PyUnicode_InternFromString("__setattr__");
    PyObject *real = s_setattr != NULL ? _PyType_Lookup(&PyBaseObject_Type, s_setattr) : NULL;
    Py_XDECREF(s_setattr);
    static const char *const slots[FC_PD_NSLOTS] = {
        "__pydantic_extra__", "__pydantic_fields_set__", "__pydantic_private__"
    };
    for (int i = 0; i < FC_PD_NSLOTS; i++) {
        if (h->s_pd[i] == NULL && (h->s_pd[i] = PyUnicode_InternFromString(slots[i])) == NULL) {
            real = NULL;
        }
    }
    if (real == NULL) {
        PyErr_Clear();
        h->pd_checked = 0;
        return 0;
    }
    h->pd_deepcopy = Py_NewRef(f);
    h->pd_code = Py_NewRef(fn->func_code);
    h->pd_globals = Py_NewRef(g);
    h->pd_builtins = Py_NewRef(b);
    h->pd_g[0] = Py_NewRef(sd);
    h->pd_g[1] = Py_NewRef(sc);
    h->pd_g[2] = Py_NewRef(real);
    h->pd_g[3] = Py_NewRef(und);
    h->pd_g[4] = Py_NewRef(fd);
    for (int i = 0; i < 4; i++) {
        h->pd_codes[i] = Py_NewRef(codes[i]);
    }
    h->pd_ver[0] = h->pd_ver[1] = 0;
    h->pd_variant = variant;
    h->pd_checked = 1;
    return 1;
}

static int
fc_pd_captured(FcState *st)
{
    int c = st->hooks.pd_checked;
    return c > 0 || (c == 0 && fc_pd_capture(st));
}

/*
 * RootModel's own hook (pydantic.root_model), 2.14:
 *     def __deepcopy__(self, memo=None):
 *         if memo is None: memo = {}
 *         cls = type(self); m = cls.__new__(cls); memo[id(self)] = m
 *         _object_setattr(m, '__dict__', deepcopy(self.__dict__, memo=memo))
 *         _object_setattr(m, '__pydantic_fields_set__',
 *                         copy(self.__pydantic_fields_set__))
 *         return m
 * The first steps of BaseModel's; the walker stops after the fields set
 * (RootModel's extra and private are class attributes it never sets).
 * 2.5 to 2.13 (FC_PD_V7): the same without `if memo is None` and the memo
 * store, as BaseModel's FC_PD_V7.  Captured only with BaseModel's hook,
 * whose checks of deepcopy, copy and _object_setattr it shares.
 */
static const FcKnownCode fc_pr_known[] = {
    {10, {0x4d2c92b31f5c01ddull}},
    {10, {0x8ca45626e7e70607ull}, FC_PD_V7},      /* 2.5.3-2.13.4 */
    {11, {0x2ca23cfad9a25933ull}},
    {11, {0xe740187499b3b705ull}, FC_PD_V7},      /* 2.5.3-2.13.4 */
    {12, {0x575031fa6cf58e8eull}},
    {12, {0x11230d3612273634ull}, FC_PD_V7},      /* 2.5.3-2.13.4 */
    {13, {0x9c418a7f185d7b0aull}},
    {13, {0xcc8874109e6a4fa6ull}, FC_PD_V7},      /* 2.5.3-2.13.4 */
    {14, {0x8fd5308e17d71cf9ull}},
    {14, {0x7ddb94a933ad8daeull}, FC_PD_V7},      /* 2.5.3-2.13.4 */
    {15, {0x6f26dbbb2fe07d97ull}},
    {15, {0xc94cadd2e40bedd6ull}, FC_PD_V7},      /* 2.5.3-2.13.4 */
};

static const char *const fc_pr_bnames[2] = {"type", "id"};

/* pydantic.root_model's globals: deepcopy, copy and _object_setattr those
   BaseModel's road checks (pd_g), the builtins the real ones.  1 | 0 */
static int
fc_pr_names_ok(FcState *st)
{
    FcHooksState *h = &st->hooks;
    PyObject *g = h->pr_globals, *b = h->pr_builtins;
    if (PyFunction_GET_CODE(h->pr_deepcopy) != h->pr_code) {
        return 0;
    }
    if (fc_names_stamp(st, g) == h->pr_ver[0] && fc_names_stamp(st, b) == h->pr_ver[1]) {
        return 1;
    }
    if (!fc_pd_copy_names_ok(h, g) || !fc_builtins_ok(g, b, fc_pr_bnames, 2)) {
        PyErr_Clear();
        return 0;
    }
    h->pr_ver[0] = fc_names_take(st, g);
    h->pr_ver[1] = fc_names_take(st, b);
    return 1;
}

/* Capture RootModel's hook once BaseModel's is (and pydantic.root_model
   is loaded).  1 | 0 (not now, or never: pr_checked -1) */
static int
fc_pr_capture(FcState *st)
{
    FcHooksState *h = &st->hooks;
    if (!fc_pd_captured(st)) {
        return 0;
    }
    PyObject *mods = PySys_GetObject("modules");     /* borrowed */
    PyObject *mod = mods != NULL && PyDict_Check(mods)
                    ? PyDict_GetItemString(mods, "pydantic.root_model") : NULL;
    if (mod == NULL || !PyModule_CheckExact(mod)) {
        return 0;
    }
    h->pr_checked = -1;
    PyObject *g = PyModule_GetDict(mod);
    int variant = 0;
    PyFunctionObject *fn = fc_pd_hook_fn(st, g, "RootModel", fc_pr_known, FC_NKNOWN(fc_pr_known),
                                         &variant);
    if (fn == NULL || (PyObject *)fn == h->pd_deepcopy) {
        PyErr_Clear();
        return 0;
    }
    PyObject *f = (PyObject *)fn, *b = fn->func_builtins;
    h->pr_deepcopy = Py_NewRef(f);
    h->pr_code = Py_NewRef(fn->func_code);
    h->pr_globals = Py_NewRef(g);
    h->pr_builtins = Py_NewRef(b);
    h->pr_ver[0] = h->pr_ver[1] = 0;
    h->pr_variant = variant;
    h->pr_checked = 1;
    return 1;
}

static int
fc_pr_captured(FcState *st)
{
    int c = st->hooks.pr_checked;
    return c > 0 || (c == 0 && fc_pr_capture(st));
}

FC_INTERNAL int
fc_pd_ok(FcState *st, int hook)
{
    if (!fc_pd_captured(st) || !fc_pd_names_ok(st)) {
        return 0;
    }
    return hook == FH_PYDANTIC || (fc_pr_captured(st) && fc_pr_names_ok(st));
}

#if !FC_FT
static int fc_pd_shape_ok(FcState *st, PyTypeObject *tp, int hook);
#endif

FC_INTERNAL int
fc_plan_pydantic(FcState *st, PyTypeObject *tp)
{
#if FC_FT
    (void)st;
    (void)tp;
    return 0;
#else
    PyObject *dc = _PyType_Lookup(tp, st->s_deepcopy);
    if (dc == NULL || !PyFunction_Check(dc) || !fc_pd_captured(st)) {
        return 0;
    }
    int hook = dc == st->hooks.pd_deepcopy ? FH_PYDANTIC
               : fc_pr_captured(st) && dc == st->hooks.pr_deepcopy ? FH_PYDROOT : 0;
    return hook == 0 ? 0 : fc_pd_shape_ok(st, tp, hook);
#endif
}

#if !FC_FT
/* What a pydantic hook's steps rely on, for instances of tp: FH_PYDANTIC
   | FH_PYDROOT (hook) | 0 */
static int
fc_pd_shape_ok(FcState *st, PyTypeObject *tp, int hook)
{
    /* getattr(x, name): object's __getattribute__ (pydantic's __getattr__
       runs only for what that does not find); cls.__new__(cls) is
       object.__new__; the instance has a plain __dict__; the three
       attributes the hook sets are slots */
    PyObject *s_ga = PyUnicode_InternFromString("__getattribute__");
    PyObject *ga = s_ga != NULL ? _PyType_Lookup(tp, s_ga) : NULL;
    PyObject *oga = s_ga != NULL ? _PyType_Lookup(&PyBaseObject_Type, s_ga) : NULL;
    Py_XDECREF(s_ga);
    if (ga == NULL || ga != oga || !(tp->tp_flags & Py_TPFLAGS_HEAPTYPE)
        || tp->tp_new != PyBaseObject_Type.tp_new || tp->tp_dictoffset == 0
        || _PyType_Lookup(tp, st->s_new) != st->obj_new
        || PyType_IsSubtype(tp, &PyType_Type)) {
        PyErr_Clear();
        return 0;
    }
    PyObject *d = _PyType_Lookup(tp, st->s_dict);
    if (d == NULL || !Py_IS_TYPE(d, &PyGetSetDescr_Type)
        || ((PyGetSetDescrObject *)d)->d_getset->get != st->dict_getter) {
        return 0;
    }
    for (int i = 0; i < FC_PD_NSLOTS; i++) {
        if (hook == FH_PYDROOT && i != FC_PD_FSET) {
            continue;       /* RootModel's hooks never set extra or private */
        }
        PyObject *s = _PyType_Lookup(tp, st->hooks.s_pd[i]);
        if (s == NULL || !Py_IS_TYPE(s, &PyMemberDescr_Type)) {
            return 0;
        }
    }
    return hook;
}
#endif

/*
 * pydantic 2.14's __copy__ hooks, which copy.copy(model) calls:
 *     BaseModel.__copy__(self):
 *         cls = type(self); m = cls.__new__(cls)
 *         _object_setattr(m, '__dict__', copy(self.__dict__))
 *         _object_setattr(m, '__pydantic_extra__', copy(self.__pydantic_extra__))
 *         _object_setattr(m, '__pydantic_fields_set__',
 *                         copy(self.__pydantic_fields_set__))
 *         if not hasattr(self, '__pydantic_private__')
 *                 or self.__pydantic_private__ is None:
 *             _object_setattr(m, '__pydantic_private__', None)
 *         else:
 *             _object_setattr(m, '__pydantic_private__',
 *                 {k: v for k, v in self.__pydantic_private__.items()
 *                  if v is not PydanticUndefined})
 *         return m
 *     RootModel.__copy__(self):
 *         cls = type(self); m = cls.__new__(cls)
 *         new_dict = copy(self.__dict__)
 *         new_dict['root'] = copy(self.__dict__['root'])
 *         _object_setattr(m, '__dict__', new_dict)
 *         _object_setattr(m, '__pydantic_fields_set__',
 *                         copy(self.__pydantic_fields_set__))
 *         return m
 * Their globals and builtins are among those the __deepcopy__ hooks read
 * (fc_pd_names_ok, fc_pr_names_ok), which are checked for them too.
 * BaseModel's is that from 2.7 to 2.14; 2.5 and 2.6's (variant 1 in
 * column 0) test `self.__pydantic_private__ is None` without hasattr(), as
 * their __deepcopy__ does (FC_PD_V5).  RootModel's is that in 2.13 and
 * 2.14; 2.5 to 2.12's (variant 1 in column 1) set copy(self.__dict__)
 * without copying the root again.
 */
static const FcKnownCode fc_pc_known[] = {
    {10, {0x3e78a1197fd06bc7ull, 0xda41e081cb5e507bull}},
    {10, {0xca559624cab291d5ull, 0xb6f1cd8b3f44ab57ull}, 1},    /* 2.5.3-2.6.4, 2.5.3-2.12.5 */
    {11, {0x2b78f8e6693bfb7bull, 0xd56fe2c7b6f684b4ull}},
    {11, {0x920f738271f9294eull, 0xaba5169ba22c23d4ull}, 1},    /* 2.5.3-2.6.4, 2.5.3-2.12.5 */
    {12, {0x9d941ba8c706accfull, 0x0a59350595024064ull}},
    {12, {0xbaf613ee983b871dull, 0x8b93ff4c5e1f5f89ull}, 1},    /* 2.5.3-2.6.4, 2.5.3-2.12.5 */
    {13, {0x0653c07f3ee8cd45ull, 0xaf18aae8bdf77a96ull}},
    {13, {0x15c1ac3e1269fb66ull, 0xb9d2a834e1745857ull}, 1},    /* 2.5.3-2.6.4, 2.5.3-2.12.5 */
    {14, {0x57ccd0dbb97a50caull, 0x387f58d19161c32eull}},
    {14, {0x4ec7a789d737d6c9ull, 0xd3d8d818063fa92cull}, 1},    /* 2.5.3-2.6.4, 2.5.3-2.12.5 */
    {15, {0x6449946d74f68367ull, 0xa58765ff77a7b454ull}},
    {15, {0xa88888c9b0dfb3b3ull, 0x910109f79d9c4cb0ull}, 1},    /* 2.5.3-2.6.4, 2.5.3-2.12.5 */
};

/* Capture BaseModel's (k 0) or RootModel's (k 1) __copy__, once their
   __deepcopy__ is.  1 | 0 */
static int
fc_pc_capture(FcState *st, int k)
{
    FcHooksState *h = &st->hooks;
    if (!(k == 0 ? fc_pd_captured(st) : fc_pr_captured(st))) {
        return 0;
    }
    h->pc_checked[k] = -1;
    PyObject *dc = k == 0 ? h->pd_deepcopy : h->pr_deepcopy;
    PyObject *g = k == 0 ? h->pd_globals : h->pr_globals;
    PyObject *cls = fc_dget(g, k == 0 ? "BaseModel" : "RootModel");
    if (cls == NULL || !PyType_Check(cls)
        || _PyType_Lookup((PyTypeObject *)cls, st->s_deepcopy) != dc) {
        PyErr_Clear();
        return 0;
    }
    PyObject *f = _PyType_Lookup((PyTypeObject *)cls, st->s_copy);
    if (f == NULL || !PyFunction_Check(f)) {
        return 0;
    }
    PyFunctionObject *fn = (PyFunctionObject *)f;
    int variant;
    if (fn->func_globals != g || fn->func_builtins != ((PyFunctionObject *)dc)->func_builtins
        || fn->func_closure != NULL || fn->func_kwdefaults != NULL || fn->func_defaults != NULL
        || (variant = fc_code_variant(fn->func_code, fc_pc_known, FC_NKNOWN(fc_pc_known), k)) < 0) {
        return 0;
    }
    if (h->s_root == NULL && (h->s_root = PyUnicode_InternFromString("root")) == NULL) {
        PyErr_Clear();
        h->pc_checked[k] = 0;
        return 0;
    }
    h->pc_variant[k] = variant;
    h->pc_copy[k] = Py_NewRef(f);
    h->pc_code[k] = Py_NewRef(fn->func_code);
    h->pc_checked[k] = 1;
    return 1;
}

static int
fc_pc_captured(FcState *st, int k)
{
    int c = st->hooks.pc_checked[k];
    return c > 0 || (c == 0 && fc_pc_capture(st, k));
}

FC_INTERNAL int
fc_pc_ok(FcState *st, int hook)
{
    int k = hook == FH_PYDROOT;
    FcHooksState *h = &st->hooks;
    return fc_pc_captured(st, k) && PyFunction_GET_CODE(h->pc_copy[k]) == h->pc_code[k]
           && fc_pd_ok(st, hook);
}

FC_INTERNAL int
fc_plan_pydantic_copy(FcState *st, PyTypeObject *tp)
{
#if FC_FT
    (void)st;
    (void)tp;
    return 0;
#else
    /* getattr(cls, "__copy__"): type's own attribute lookup on the
       metaclass (pydantic's ModelMetaclass adds only a __getattr__, which
       a found attribute never reaches), nothing of that name on it */
    PyTypeObject *meta = Py_TYPE(tp);
    PyObject *f = _PyType_Lookup(tp, st->s_copy);
    if (f == NULL || !PyFunction_Check(f) || !fc_pd_captured(st)
        || _PyType_Lookup(meta, st->s_copy) != NULL) {
        return 0;
    }
    PyObject *s_ga = PyUnicode_InternFromString("__getattribute__");
    if (s_ga == NULL) {
        return -1;
    }
    PyObject *mga = _PyType_Lookup(meta, s_ga), *tga = _PyType_Lookup(&PyType_Type, s_ga);
    Py_DECREF(s_ga);
    if (mga == NULL || mga != tga) {
        return 0;
    }
    int hook = fc_pc_captured(st, 0) && f == st->hooks.pc_copy[0] ? FH_PYDANTIC
               : fc_pc_captured(st, 1) && f == st->hooks.pc_copy[1] ? FH_PYDROOT : 0;
    return hook == 0 ? 0 : fc_pd_shape_ok(st, tp, hook);
#endif
}

/* ------------------------------------------------------------------ */
/* scikit-learn: BaseEstimator.__getstate__ / __setstate__             */
/* ------------------------------------------------------------------ */

/*
 * scikit-learn 1.9.1 (sklearn/base.py), the steps the native road takes:
 *     def __getstate__(self):
 *         if getattr(self, "__slots__", None): raise TypeError(...)
 *         try:
 *             state = super().__getstate__()     # object's: the __dict__
 *             if state is None:                  # itself, None when empty
 *                 state = self.__dict__.copy()
 *         except AttributeError:                 # 3.10: no object.__getstate__
 *             state = self.__dict__.copy()
 *         if type(self).__module__.startswith("sklearn."):
 *             return dict(state.items(), _sklearn_version=__version__)
 *         else:
 *             return state
 *     def __setstate__(self, state):
 *         if type(self).__module__.startswith("sklearn."):
 *             pickle_version = state.pop("_sklearn_version", "pre-0.18")
 *             if pickle_version != __version__: warnings.warn(...)
 *         try:
 *             super().__setstate__(state)        # none after BaseEstimator
 *         except AttributeError:
 *             self.__dict__.update(state)
 * Which of the two module cases a class is, is known when its plan is made
 * (its __module__, an exact str in its own dict: the plan goes with any
 * change of the class).  A state whose version differs (the hook warns),
 * or whose keys are not all strs, is handed to the Python hook.
 */

static const FcKnownCode fc_sk_known[] = {
    {10, {0xde32e0b53eb0409full, 0x2c579d7b8af120f4ull}},    /* 1.3.2-1.9.1 (1.7 the last for 3.10) */
    {11, {0xd0ce15872fd071cfull, 0x1e2e58078da93b94ull}},    /* 1.9.1 */
    {12, {0x2571ace2f45fc70full, 0x1f9eaff2b673fc8full}},    /* 1.9.1 */
    {13, {0x358a49fd23cda3d9ull, 0x17a73c33668681fdull}},    /* 1.9.1 */
    {14, {0x3fd4d75954199f29ull, 0xaabae7d479a1c9a6ull}},    /* 1.9.1 */
    {15, {0x0750d9ef10815e30ull, 0x33d8161732f0bb28ull}},    /* 1.9.1 */
};

static const char *const fc_sk_bnames[5] = {"getattr", "super", "AttributeError", "type",
                                            "dict"};

static int
fc_sk_capture(FcState *st)
{
    FcHooksState *h = &st->hooks;
    PyObject *mods = PySys_GetObject("modules");     /* borrowed */
    PyObject *mod = mods != NULL && PyDict_Check(mods)
                    ? PyDict_GetItemString(mods, "sklearn.base") : NULL;
    if (mod == NULL || !PyModule_CheckExact(mod)) {
        return 0;
    }
    h->sk_checked = -1;
    PyObject *g = PyModule_GetDict(mod), *be = fc_dget(g, "BaseEstimator");
    if (be == NULL || !PyType_Check(be) || !PyDict_CheckExact(g)) {
        return 0;
    }
    PyObject *f[2] = {_PyType_Lookup((PyTypeObject *)be, st->s_getstate),
                      _PyType_Lookup((PyTypeObject *)be, st->s_setstate)};
    PyObject *b = NULL;
    for (int k = 0; k < 2; k++) {
        if (f[k] == NULL || !PyFunction_Check(f[k])) {
            return 0;
        }
        PyFunctionObject *fn = (PyFunctionObject *)f[k];
        /* super()'s __class__ cell: BaseEstimator */
        PyObject *cl = fn->func_closure;
        if (fn->func_globals != g || (b != NULL && fn->func_builtins != b)
            || cl == NULL || !PyTuple_Check(cl) || PyTuple_GET_SIZE(cl) != 1
            || !PyCell_Check(PyTuple_GET_ITEM(cl, 0))
            || PyCell_GET(PyTuple_GET_ITEM(cl, 0)) != be
            || !fc_code_known(fn->func_code, fc_sk_known, FC_NKNOWN(fc_sk_known), k)) {
            return 0;
        }
        b = fn->func_builtins;
    }
    if (b == NULL || !PyDict_CheckExact(b)) {
        return 0;
    }
    if ((h->s_sk_version == NULL
         && (h->s_sk_version = PyUnicode_InternFromString("__version__")) == NULL)
        || (h->s_sk_key == NULL
            && (h->s_sk_key = PyUnicode_InternFromString("_sklearn_version")) == NULL)
        || (h->s_slots == NULL && (h->s_slots = PyUnicode_InternFromString("__slots__")) == NULL)
        || (h->s_slotnames == NULL
            && (h->s_slotnames = PyUnicode_InternFromString("__slotnames__")) == NULL)
        || (h->s_sk_prefix == NULL
            && (h->s_sk_prefix = PyUnicode_InternFromString("sklearn.")) == NULL)
        || (h->s_module == NULL
            && (h->s_module = PyUnicode_InternFromString("__module__")) == NULL)) {
        PyErr_Clear();
        h->sk_checked = 0;
        return 0;
    }
    h->sk_getstate = Py_NewRef(f[0]);
    h->sk_setstate = Py_NewRef(f[1]);
    for (int k = 0; k < 2; k++) {
        h->sk_code[k] = Py_NewRef(PyFunction_GET_CODE(f[k]));
    }
    h->sk_base = Py_NewRef(be);
    h->sk_globals = Py_NewRef(g);
    h->sk_builtins = Py_NewRef(b);
    h->sk_ver[0] = h->sk_ver[1] = 0;
    h->sk_checked = 1;
    return 1;
}

static int
fc_sk_captured(FcState *st)
{
    int c = st->hooks.sk_checked;
    return c > 0 || (c == 0 && fc_sk_capture(st));
}

/* The hooks' code unchanged, the builtins they call the real ones, and
   sklearn.base's __version__ an exact str: borrowed | NULL (not now) */
static PyObject *
fc_sk_version(FcState *st)
{
    FcHooksState *h = &st->hooks;
    if (!fc_sk_captured(st) || PyFunction_GET_CODE(h->sk_getstate) != h->sk_code[0]
        || PyFunction_GET_CODE(h->sk_setstate) != h->sk_code[1]) {
        return NULL;
    }
    PyObject *g = h->sk_globals, *b = h->sk_builtins;
    int same = fc_names_stamp(st, g) == h->sk_ver[0] && fc_names_stamp(st, b) == h->sk_ver[1];
    if (!same && !fc_builtins_ok(g, b, fc_sk_bnames, 5)) {
        PyErr_Clear();
        return NULL;
    }
    h->sk_ver[0] = fc_names_take(st, g);
    h->sk_ver[1] = fc_names_take(st, b);
    PyObject *v = PyDict_GetItemWithError(g, h->s_sk_version);
    if (v == NULL || !PyUnicode_CheckExact(v)) {
        PyErr_Clear();
        return NULL;
    }
    return v;
}

#if !FC_FT
/* FH_SKLEARN / FH_SKLEARN_OTHER for tp, whose hooks are BaseEstimator's;
   0 if another class of its MRO after BaseEstimator has a state hook, if
   it has __slots__ or slot names, or if its __module__ is no exact str.
   Asks copyreg._slotnames once, as object.__getstate__ would on 3.11+.
   FH_* | 0 | -1+exc */
static int
fc_plan_sklearn(FcState *st, PyTypeObject *tp)
{
    FcHooksState *h = &st->hooks;
    PyObject *mro = tp->tp_mro;
    if (mro == NULL || !PyTuple_Check(mro) || _PyType_Lookup(tp, h->s_slots) != NULL) {
        return 0;
    }
    int after = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
        PyObject *k = PyTuple_GET_ITEM(mro, i);
        if (k == h->sk_base) {
            after = 1;
            continue;
        }
        if (!after || k == (PyObject *)&PyBaseObject_Type || !PyType_Check(k)) {
            continue;
        }
        PyObject *kd = ((PyTypeObject *)k)->tp_dict;
        if (kd == NULL || PyDict_GetItemWithError(kd, st->s_getstate) != NULL
            || PyDict_GetItemWithError(kd, st->s_setstate) != NULL) {
            PyErr_Clear();
            return 0;           /* super() would find a mixin's hook */
        }
    }
    if (!after) {
        return 0;
    }
    PyObject *mod = PyDict_GetItemWithError(tp->tp_dict, h->s_module);
    if (mod == NULL || !PyUnicode_CheckExact(mod)) {
        PyErr_Clear();
        return 0;
    }
#if FC_PY311_PLUS
    /* object.__getstate__ reads the slot names (copyreg._slotnames caches
       them on the class the first time) */
    PyObject *names = PyDict_GetItemWithError(tp->tp_dict, h->s_slotnames);
    if (names == NULL) {
        if (PyErr_Occurred()) {
            return -1;
        }
        names = PyObject_CallOneArg(st->copyreg_slotnames, (PyObject *)tp);
        if (names == NULL) {
            return -1;
        }
        int empty = PyList_CheckExact(names) && PyList_GET_SIZE(names) == 0;
        Py_DECREF(names);
        if (!empty) {
            return 0;
        }
    }
    else if (!PyList_CheckExact(names) || PyList_GET_SIZE(names) != 0) {
        return 0;
    }
#endif
    Py_ssize_t n = PyUnicode_GET_LENGTH(mod);
    int sk = n >= 8 && PyUnicode_Tailmatch(mod, h->s_sk_prefix, 0, n, -1) == 1;
    return sk ? FH_SKLEARN : FH_SKLEARN_OTHER;
}
#endif

static PyObject *
fc_sk_getstate(FcState *st, int hook, PyObject *x)
{
    FcHooksState *h = &st->hooks;
    PyObject *ver = fc_sk_version(st);
    if (ver == NULL) {
        return NULL;
    }
    PyObject *d = PyObject_GenericGetDict(x, NULL);
    if (d == NULL) {
        return NULL;
    }
    /* getattr(self, "__slots__", None) and the reduce's getattr(self,
       "__getstate__") would find an instance attribute of that name */
    PyObject *own = !PyDict_CheckExact(d) ? d
                    : PyDict_GetItemWithError(d, h->s_slots) != NULL ? d
                    : PyDict_GetItemWithError(d, st->s_getstate);
    if (own != NULL || PyErr_Occurred()) {
        Py_DECREF(d);
        return NULL;
    }
    PyObject *state = d;
#if FC_PY311_PLUS
    if (PyDict_GET_SIZE(d) == 0) {
        state = fc_dict_copy(d);     /* super().__getstate__() is None */
        Py_DECREF(d);
    }
#else
    state = fc_dict_copy(d);         /* no object.__getstate__: AttributeError */
    Py_DECREF(d);
#endif
    if (state == NULL || hook != FH_SKLEARN) {
        return state;
    }
    /* dict(state.items(), _sklearn_version=__version__) */
    PyObject *out = fc_dict_copy(state);
    Py_DECREF(state);
    if (out != NULL && PyDict_SetItem(out, h->s_sk_key, ver) < 0) {
        Py_CLEAR(out);
    }
    return out;
}

static int
fc_sk_setstate(FcState *st, int hook, PyObject *y, PyObject *state)
{
    FcHooksState *h = &st->hooks;
    PyObject *ver = fc_sk_version(st), *k;
    if (ver == NULL || !PyDict_CheckExact(state)) {
        return 0;
    }
    Py_ssize_t pos = 0;
    while (PyDict_Next(state, &pos, &k, NULL)) {
        if (!PyUnicode_CheckExact(k)) {
            return 0;           /* update() would hash it: user code */
        }
    }
    if (hook == FH_SKLEARN) {
        PyObject *pv = PyDict_GetItemWithError(state, h->s_sk_key);
        if (pv == NULL || !PyUnicode_CheckExact(pv) || PyUnicode_Compare(pv, ver) != 0) {
            PyErr_Clear();
            return 0;           /* the hook warns: its own road */
        }
        if (PyDict_DelItem(state, h->s_sk_key) < 0) {
            return -1;
        }
    }
    PyObject *yd = PyObject_GenericGetDict(y, NULL);
    if (yd == NULL) {
        return -1;
    }
    int r = PyDict_Update(yd, state);
    Py_DECREF(yd);
    return r < 0 ? -1 : 1;
}

/* ------------------------------------------------------------------ */
/* Which road                                                          */
/* ------------------------------------------------------------------ */

FC_INTERNAL int
fc_plan_statehook(FcState *st, PyTypeObject *tp)
{
#if FC_FT
    (void)st;
    (void)tp;
    return 0;       /* the verified state is not shared between threads */
#else
    if (!st->plain_ok || !(tp->tp_flags & Py_TPFLAGS_HEAPTYPE)
        || (tp->tp_flags & Py_TPFLAGS_IS_ABSTRACT) || tp->tp_itemsize != 0
        || tp->tp_getattro != PyObject_GenericGetAttr
        || tp->tp_new != PyBaseObject_Type.tp_new
        || Py_TYPE(tp)->tp_getattro != PyType_Type.tp_getattro
        || PyType_IsSubtype(tp, &PyType_Type)) {
        return 0;
    }
    PyObject *gs = _PyType_Lookup(tp, st->s_getstate);
    PyObject *ss = _PyType_Lookup(tp, st->s_setstate);
    if (gs == NULL || ss == NULL || !PyFunction_Check(gs) || !PyFunction_Check(ss)
        || _PyType_Lookup(tp, st->s_new) != st->obj_new
        || _PyType_Lookup(tp, st->s_reduce_ex) != st->obj_reduce_ex
        || _PyType_Lookup(tp, st->s_reduce) != st->obj_reduce
        || _PyType_Lookup(tp, st->s_getnewargs_ex) != NULL
        || _PyType_Lookup(tp, st->s_getnewargs) != NULL
        || _PyType_Lookup(tp, st->s_deepcopy) != NULL) {
        return 0;
    }
    FcHooksState *h = &st->hooks;
    if (tp->tp_dictoffset == 0) {
        if (fc_dc_captured(st) && gs == h->dc_getstate && ss == h->dc_setstate) {
            return FH_DATACLASS;
        }
        if (fc_at_captured(st) && fc_at_cell(h, gs, 0, 0) != NULL
            && fc_at_cell(h, ss, 1, 0) != NULL) {
            return FH_ATTRS;
        }
        return 0;
    }
    /* an instance dict: its __dict__ descriptor the standard one */
    PyObject *dd = _PyType_Lookup(tp, st->s_dict);
    if (dd == NULL || !Py_IS_TYPE(dd, &PyGetSetDescr_Type)
        || ((PyGetSetDescrObject *)dd)->d_getset->get != st->dict_getter) {
        return 0;
    }
    if (fc_sk_captured(st) && gs == h->sk_getstate && ss == h->sk_setstate) {
        return fc_plan_sklearn(st, tp);
    }
    return 0;
#endif
}

FC_INTERNAL PyObject *
fc_hook_getstate(FcState *st, int hook, PyObject *x)
{
    return hook == FH_DATACLASS ? fc_dc_getstate(st, x)
           : hook == FH_ATTRS ? fc_at_getstate(st, x)
           : hook == FH_SKLEARN || hook == FH_SKLEARN_OTHER ? fc_sk_getstate(st, hook, x)
           : NULL;
}

FC_INTERNAL int
fc_hook_setstate(FcState *st, int hook, PyObject *y, PyObject *state)
{
    return hook == FH_DATACLASS ? fc_dc_setstate(st, y, state)
           : hook == FH_ATTRS ? fc_at_setstate(st, y, state)
           : hook == FH_SKLEARN || hook == FH_SKLEARN_OTHER ? fc_sk_setstate(st, hook, y, state)
           : 0;
}

FC_INTERNAL int
fc_hooks_traverse(FcHooksState *h, visitproc visit, void *arg)
{
    Py_VISIT(h->dc_getstate);
    Py_VISIT(h->dc_setstate);
    Py_VISIT(h->dc_fields);
    for (int i = 0; i < 3; i++) {
        Py_VISIT(h->dc_code[i]);
    }
    Py_VISIT(h->dc_marker);
    Py_VISIT(h->dc_field_type);
    Py_VISIT(h->dc_d_name);
    Py_VISIT(h->dc_d_ftype);
    Py_VISIT(h->dc_globals);
    Py_VISIT(h->dc_builtins);
    for (int i = 0; i < 2; i++) {
        Py_VISIT(h->at_code[i]);
    }
    Py_VISIT(h->at_globals);
    Py_VISIT(h->at_builtins);
    Py_VISIT(h->at_objsetattr);
    Py_VISIT(h->at_hashfield);
    Py_VISIT(h->pd_deepcopy);
    Py_VISIT(h->pd_code);
    Py_VISIT(h->pd_globals);
    Py_VISIT(h->pd_builtins);
    Py_VISIT(h->pr_deepcopy);
    Py_VISIT(h->pr_code);
    Py_VISIT(h->pr_globals);
    Py_VISIT(h->pr_builtins);
    for (int i = 0; i < 2; i++) {
        Py_VISIT(h->pc_copy[i]);
        Py_VISIT(h->pc_code[i]);
    }
    Py_VISIT(h->s_root);
    for (int i = 0; i < 5; i++) {
        Py_VISIT(h->pd_g[i]);
    }
    for (int i = 0; i < 4; i++) {
        Py_VISIT(h->pd_codes[i]);
    }
    Py_VISIT(h->sk_getstate);
    Py_VISIT(h->sk_setstate);
    for (int i = 0; i < 2; i++) {
        Py_VISIT(h->sk_code[i]);
    }
    Py_VISIT(h->sk_base);
    Py_VISIT(h->sk_globals);
    Py_VISIT(h->sk_builtins);
    return 0;
}

FC_INTERNAL void
fc_hooks_clear(FcHooksState *h)
{
    Py_CLEAR(h->dc_getstate);
    Py_CLEAR(h->dc_setstate);
    Py_CLEAR(h->dc_fields);
    for (int i = 0; i < 3; i++) {
        Py_CLEAR(h->dc_code[i]);
    }
    Py_CLEAR(h->dc_marker);
    Py_CLEAR(h->dc_field_type);
    Py_CLEAR(h->dc_d_name);
    Py_CLEAR(h->dc_d_ftype);
    Py_CLEAR(h->dc_globals);
    Py_CLEAR(h->dc_builtins);
    Py_CLEAR(h->s_dc_fields);
    h->dc_checked = 0;
    for (int i = 0; i < 2; i++) {
        Py_CLEAR(h->at_code[i]);
    }
    Py_CLEAR(h->at_globals);
    Py_CLEAR(h->at_builtins);
    Py_CLEAR(h->at_objsetattr);
    Py_CLEAR(h->at_hashfield);
    h->at_checked = 0;
    Py_CLEAR(h->pd_deepcopy);
    Py_CLEAR(h->pd_code);
    Py_CLEAR(h->pd_globals);
    Py_CLEAR(h->pd_builtins);
    Py_CLEAR(h->pr_deepcopy);
    Py_CLEAR(h->pr_code);
    Py_CLEAR(h->pr_globals);
    Py_CLEAR(h->pr_builtins);
    h->pr_checked = 0;
    for (int i = 0; i < 2; i++) {
        Py_CLEAR(h->pc_copy[i]);
        Py_CLEAR(h->pc_code[i]);
        h->pc_checked[i] = 0;
    }
    Py_CLEAR(h->s_root);
    for (int i = 0; i < 5; i++) {
        Py_CLEAR(h->pd_g[i]);
    }
    for (int i = 0; i < 4; i++) {
        Py_CLEAR(h->pd_codes[i]);
    }
    for (int i = 0; i < FC_PD_NSLOTS; i++) {
        Py_CLEAR(h->s_pd[i]);
    }
    h->pd_checked = 0;
    Py_CLEAR(h->sk_getstate);
    Py_CLEAR(h->sk_setstate);
    for (int i = 0; i < 2; i++) {
        Py_CLEAR(h->sk_code[i]);
    }
    Py_CLEAR(h->sk_base);
    Py_CLEAR(h->sk_globals);
    Py_CLEAR(h->sk_builtins);
    Py_CLEAR(h->s_sk_version);
    Py_CLEAR(h->s_sk_key);
    Py_CLEAR(h->s_sk_prefix);
    Py_CLEAR(h->s_module);
    Py_CLEAR(h->s_slots);
    Py_CLEAR(h->s_slotnames);
    h->sk_checked = 0;
}

/* ------------------------------------------------------------------ */
/* The tables, for scripts/hook_fingerprints.py and the tests          */
/* ------------------------------------------------------------------ */

static int
fc_known_add(PyObject *out, const char *name, const FcKnownCode *known, size_t n, int cols)
{
    PyObject *rows = PyList_New(0);
    if (rows == NULL) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (known[i].minor != PY_MINOR_VERSION) {
            continue;
        }
        PyObject *row = cols == 1 ? Py_BuildValue("(i(K))", known[i].variant,
                                                  (unsigned long long)known[i].fp[0])
                        : cols == 2 ? Py_BuildValue("(i(KK))", known[i].variant,
                                                    (unsigned long long)known[i].fp[0],
                                                    (unsigned long long)known[i].fp[1])
                        : Py_BuildValue("(i(KKK))", known[i].variant,
                                        (unsigned long long)known[i].fp[0],
                                        (unsigned long long)known[i].fp[1],
                                        (unsigned long long)known[i].fp[2]);
        if (row == NULL || PyList_Append(rows, row) < 0) {
            Py_XDECREF(row);
            Py_DECREF(rows);
            return -1;
        }
        Py_DECREF(row);
    }
    int r = PyDict_SetItemString(out, name, rows);
    Py_DECREF(rows);
    return r;
}

FC_INTERNAL PyObject *
fc_known_fingerprints(void)
{
    PyObject *out = PyDict_New();
    if (out == NULL
        || fc_known_add(out, "dc", fc_dc_known, FC_NKNOWN(fc_dc_known), 3) < 0
        || fc_known_add(out, "at", fc_at_known, FC_NKNOWN(fc_at_known), 2) < 0
        || fc_known_add(out, "pd", fc_pd_known, FC_NKNOWN(fc_pd_known), 1) < 0
        || fc_known_add(out, "pr", fc_pr_known, FC_NKNOWN(fc_pr_known), 1) < 0
        || fc_known_add(out, "pc", fc_pc_known, FC_NKNOWN(fc_pc_known), 2) < 0
        || fc_known_add(out, "sk", fc_sk_known, FC_NKNOWN(fc_sk_known), 2) < 0) {
        Py_XDECREF(out);
        return NULL;
    }
    return out;
}
