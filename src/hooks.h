/*
 * hooks.h: native roads for library hooks whose code is known (hooks.c).
 * A class's hook is stood in for only when it is the very function object
 * (and code object) of the library that defines it, and every global it
 * reads is still what was verified; anything else takes the Python road.
 * Callers: plan.c (which types take a road), the walker (deepcopy.c) and
 * module.c (the state's traverse and clear).
 */
#ifndef FASTCOPY_HOOKS_H
#define FASTCOPY_HOOKS_H

#include "fastcopy.h"

/* The builtins the dataclasses hooks read: getattr, object, zip, tuple,
   TypeError (FcHooksState.dc_b). */
#define FC_DC_NBUILTINS 5

/* FcState.hooks */
typedef struct {
    /* dataclasses' _dataclass_getstate / _dataclass_setstate, the state
       hooks of frozen slotted dataclasses, and fields(), which they call */
    int dc_checked;                /* 0 not yet, 1 verified, -1 not available */
    PyObject *dc_getstate, *dc_setstate, *dc_fields;     /* functions, strong */
    PyObject *dc_code[3];          /* their code objects when verified */
    PyObject *dc_marker;           /* dataclasses._FIELD */
    PyTypeObject *dc_field_type;   /* dataclasses.Field, strong */
    unsigned int dc_field_tag;     /* its type tag when its slots were read */
    PyObject *dc_d_name, *dc_d_ftype;       /* Field.name, Field._field_type:
                                               member descriptors, strong */
    PyObject *dc_globals, *dc_builtins;     /* the functions' dicts, strong */
    uint64_t dc_ver[2];            /* their version tags when last checked */
    PyObject *dc_b[FC_DC_NBUILTINS];        /* the builtins as verified */
    PyObject *s_dc_fields;         /* "__dataclass_fields__" */
} FcHooksState;

/* Is tp a frozen slotted dataclass whose state hooks are dataclasses' own
   (plan.c calls it with tp's other hooks checked)?  1 | 0 | -1+exc */
FC_INTERNAL int fc_plan_dataclass(FcState *st, PyTypeObject *tp);
/* _dataclass_getstate(x): [getattr(x, f.name) for f in fields(x)], read
   natively.  new list | NULL+exc | NULL, no exc: not this road now
   (nothing done).  Runs no user code. */
FC_INTERNAL PyObject *fc_dc_getstate(FcState *st, PyObject *x);
/* _dataclass_setstate(y, state): object.__setattr__ per field, natively.
   1 done | 0 not this road now (nothing done) | -1+exc.  Runs no user
   code. */
FC_INTERNAL int fc_dc_setstate(FcState *st, PyObject *y, PyObject *state);

/* The state's references: visit / release (module.c). */
FC_INTERNAL int fc_hooks_traverse(FcHooksState *h, visitproc visit, void *arg);
FC_INTERNAL void fc_hooks_clear(FcHooksState *h);

#endif /* FASTCOPY_HOOKS_H */
