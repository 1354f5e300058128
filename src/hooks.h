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
   TypeError (FcHooksState.dc_b); attrs': getattr, isinstance, tuple, zip. */
#define FC_DC_NBUILTINS 5
#define FC_AT_NBUILTINS 4

/* Whose state hooks a FP_STATEHOOK type has (FcPlan.value). */
enum { FH_DATACLASS = 1, FH_ATTRS = 2, FH_PYDANTIC = 3,
       FH_SKLEARN = 4,           /* BaseEstimator's, a class of sklearn.* */
       FH_SKLEARN_OTHER = 5,     /* ... of a module outside sklearn */
       FH_PYDROOT = 6 };         /* pydantic's RootModel.__deepcopy__ */

/* pydantic's __deepcopy__ variants (hooks.c, "pydantic v2"): 2.14 stores
   memo[id(self)] = m before copying the fields; 2.7-2.13 (and RootModel's
   2.5-2.13) leave the store to deepcopy() after the hook; 2.5-2.6 read
   __pydantic_private__ without hasattr() first. */
enum { FC_PD_V14 = 0, FC_PD_V7 = 1, FC_PD_V5 = 2 };

/* pydantic's BaseModel slots the deepcopy hook writes (FcHooksState.s_pd). */
enum { FC_PD_EXTRA = 0, FC_PD_FSET, FC_PD_PRIVATE, FC_PD_NSLOTS };

/* FcState.hooks */
typedef struct {
    /* dataclasses' _dataclass_getstate / _dataclass_setstate, the state
       hooks of frozen slotted dataclasses, and fields(), which they call */
    int dc_checked;                /* 0 not yet, 1 verified, -1 not available */
    PyObject *dc_getstate, *dc_setstate;    /* functions, strong */
    PyObject *dc_fields;           /* the fields() verified last, or NULL */
    PyObject *dc_code[3];          /* the three's code objects when verified */
    PyObject *dc_marker;           /* dataclasses._FIELD */
    PyTypeObject *dc_field_type;   /* dataclasses.Field, strong */
    unsigned int dc_field_tag;     /* its type tag when its slots were read */
    PyObject *dc_d_name, *dc_d_ftype;       /* Field.name, Field._field_type:
                                               member descriptors, strong */
    PyObject *dc_globals, *dc_builtins;     /* the functions' dicts, strong */
    uint64_t dc_ver[2];            /* their version tags when last checked */
    PyObject *s_dc_fields;         /* "__dataclass_fields__" */

    /* attrs' slots_getstate / slots_setstate (attr._make), one code object
       each for every slotted class, the field names in their closures */
    int at_checked;                /* 0 not yet, 1 verified, -1 not available */
    PyObject *at_code[2];          /* the two code objects, strong */
    int at_names_cell[2];          /* closure index of state_attr_names */
    int at_hash_cell;              /* setstate's hash_caching_enabled */
    PyObject *at_globals, *at_builtins;     /* attr._make's dicts, strong */
    uint64_t at_ver[2];
    PyObject *at_objsetattr;       /* object.__setattr__, as _OBJ_SETATTR */
    PyObject *at_hashfield;        /* _HASH_CACHE_FIELD as verified */
    const char *at_gnames[2];      /* those two globals' names in the
                                      captured variant (hooks.c) */

    /* pydantic v2's BaseModel.__deepcopy__, a released variant whose code
       fingerprint is known (hooks.c) */
    int pd_checked;                /* 0 not yet, 1 verified, -1 not available */
    int pd_variant;                /* FC_PD_V14 | FC_PD_V7 | FC_PD_V5 */
    PyObject *pd_deepcopy;         /* the function, strong */
    PyObject *pd_code;             /* its code when verified */
    PyObject *pd_globals, *pd_builtins;     /* pydantic.main's dicts, strong */
    uint64_t pd_ver[2];
    PyObject *pd_g[5];             /* what its globals deepcopy, copy,
                                      _object_setattr, PydanticUndefined
                                      must be, and fastcopy's module dict */
    PyObject *pd_codes[4];         /* the code deepcopy/copy may run: the
                                      stdlib's, fastcopy's trampolines */
    PyObject *s_pd[FC_PD_NSLOTS];  /* "__pydantic_extra__", ... */
    /* RootModel.__deepcopy__ (pydantic.root_model), captured once
       BaseModel's is: its deepcopy and copy must be pd_g[0] and pd_g[1] */
    int pr_checked;                /* 0 not yet, 1 verified, -1 not available */
    int pr_variant;                /* FC_PD_V14 | FC_PD_V7 (2.5-2.13) */
    PyObject *pr_deepcopy, *pr_code;
    PyObject *pr_globals, *pr_builtins;     /* pydantic.root_model's dicts */
    uint64_t pr_ver[2];
    /* BaseModel.__copy__ [0] and RootModel.__copy__ [1], captured with
       their __deepcopy__ (the globals they read are a subset of those) */
    int pc_checked[2];             /* 0 not yet, 1 verified, -1 not available */
    int pc_variant[2];             /* 0 | 1: BaseModel's private read once
                                      (2.5-2.6) / RootModel's root not
                                      copied (2.5-2.12) */
    PyObject *pc_copy[2], *pc_code[2];
    PyObject *s_root;              /* "root" */

    /* scikit-learn's BaseEstimator.__getstate__ / __setstate__ */
    int sk_checked;                /* 0 not yet, 1 verified, -1 not available */
    PyObject *sk_getstate, *sk_setstate;    /* functions, strong */
    PyObject *sk_code[2];
    PyObject *sk_base;             /* BaseEstimator */
    PyObject *sk_globals, *sk_builtins;     /* sklearn.base's dicts, strong */
    uint64_t sk_ver[2];
    PyObject *s_sk_version, *s_sk_key, *s_sk_prefix, *s_slots, *s_slotnames, *s_module;
} FcHooksState;

/* Whose verified state hooks tp's instances have, if they are reduced by
   object's __reduce_ex__(4) and made by object.__new__ (plan.c calls it
   when no copier or reductor is registered for tp).  FH_* | 0 | -1+exc */
FC_INTERNAL int fc_plan_statehook(FcState *st, PyTypeObject *tp);
/* x.__getstate__() of a FH_* class, read natively: dataclasses' list of
   field values, attrs' dict of them.  new ref | NULL+exc | NULL, no exc:
   not this road now (nothing done).  Runs no user code. */
FC_INTERNAL PyObject *fc_hook_getstate(FcState *st, int hook, PyObject *x);
/* y.__setstate__(state) of a FH_* class, natively: object.__setattr__ per
   field.  1 done | 0 not this road now (nothing done) | -1+exc.  Runs no
   user code. */
FC_INTERNAL int fc_hook_setstate(FcState *st, int hook, PyObject *y, PyObject *state);

/* Is tp a pydantic model whose __deepcopy__ is BaseModel's own (or
   RootModel's), of a verified release, with plain attribute lookup?
   FH_PYDANTIC | FH_PYDROOT | 0 | -1+exc */
FC_INTERNAL int fc_plan_pydantic(FcState *st, PyTypeObject *tp);
/* Are the verified hook (FH_PYDANTIC or FH_PYDROOT) and the globals it
   reads unchanged?  1 | 0 */
FC_INTERNAL int fc_pd_ok(FcState *st, int hook);
/* Is tp a pydantic model whose copy.copy() calls BaseModel.__copy__ (or
   RootModel's), of a verified release, with plain attribute lookup?
   FH_PYDANTIC | FH_PYDROOT | 0 | -1+exc */
FC_INTERNAL int fc_plan_pydantic_copy(FcState *st, PyTypeObject *tp);
/* Is that __copy__ (FH_PYDANTIC or FH_PYDROOT) and what it reads
   unchanged?  1 | 0 */
FC_INTERNAL int fc_pc_ok(FcState *st, int hook);
/* The fingerprint of a code object the hooks are recognised by (hooks.c,
   "Code fingerprints"); also the test function _code_fingerprint.
   0 (*fp set) | -1: a constant it cannot read (no exception) */
FC_INTERNAL int fc_code_fingerprint(PyObject *code, uint64_t *fp);
/* The tables' rows for this CPython, for the test function
   _known_fingerprints: {"dc": [(variant, (fp, ...)), ...], "at": ...,
   "pd", "pr", "pc", "sk"}.  new ref | NULL+exc */
FC_INTERNAL PyObject *fc_known_fingerprints(void);

/* The state's references: visit / release (module.c). */
FC_INTERNAL int fc_hooks_traverse(FcHooksState *h, visitproc visit, void *arg);
FC_INTERNAL void fc_hooks_clear(FcHooksState *h);

#endif /* FASTCOPY_HOOKS_H */
