/*
 * backend.h: the interface between the core and a buffer backend -- what a
 * backend file (numpy.c, torch.c, cuda_backend.c) implements and the only
 * header of the core's registry it includes.  The registry itself is
 * buffers.c (buffers.h: what the walker and plan.c call); buffers.c has the
 * essay.  Adding a backend: its own src/<name>.c defining
 * `const FcBackend fc_<name>_backend`, one line in FC_BACKEND_LIST below,
 * its file in src/_fastcopy.c's list for the unity build, and its tests.
 */
#ifndef FASTCOPY_BACKEND_H
#define FASTCOPY_BACKEND_H

#include <stddef.h>
#include "fastcopy.h"

/* The registry, in dispatch order: X(name) for each backend. */
#define FC_BACKEND_LIST(X) \
    X(numpy)               \
    X(torch)               \
    X(cuda)

/* Backend slots: FC_BK_<name> is its place in the registry, and the
   FcState.bk[] block that holds its state. */
enum {
#define FC_BK_ENUM_(name) FC_BK_##name,
    FC_BACKEND_LIST(FC_BK_ENUM_)
#undef FC_BK_ENUM_
    FC_NBACKENDS
};

/* A backend's own state: a block of FcState that only its file reads, laid
   out as its file's struct (zeroed with the module; traversed and cleared
   by its table).  FC_BACKEND_STATE(st, FcTorchState, FC_BK_torch) */
#define FC_BACKEND_STATE(st, T, slot) ((T *)(void *)(st)->bk[(slot)].bytes)
#define FC_BACKEND_STATE_CHECK(T) \
    _Static_assert(sizeof(T) <= FC_BACKEND_STATE_BYTES, #T " outgrew FC_BACKEND_STATE_BYTES")

/* ---- configure()'s keywords as data (settings.c builds configure(),
   its docstring, the dict it returns and _settings() from the rows) ---- */
enum {
    FS_BOOL,      /* int field, 0/1; any object's truth value */
    FS_BYTES,     /* Py_ssize_t field, an int >= 0 */
    FS_THREADS,   /* int field, an int >= 0, capped at FS_THREADS_MAX; 0 asks
                     the owner's apply() for its automatic choice */
    FS_SECONDS,   /* int64_t field in ns, -1: off; a number of seconds >= 0,
                     and unlike the others an explicit None (or False) is a
                     value: off -- so configure(**old) restores "off" */
};
#define FS_THREADS_MAX 64
#define FS_UNSET ((Py_ssize_t)-1)

typedef struct FcSetting {
    const char *name;        /* the configure() keyword */
    int type;                /* FS_* */
    size_t offset;           /* of its field: in the owner's state (a
                                backend's block), or in FcState (core) */
    Py_ssize_t deflt;        /* the default value */
    const char *deflt_doc;   /* the default in words, or NULL: deflt */
    const char *doc;         /* what it does, for configure.__doc__ */
} FcSetting;

/* A setting's field in its owner's state at base. */
#define FC_SETTING_INT(base, s)  ((int *)((char *)(base) + (s)->offset))
#define FC_SETTING_SIZE(base, s) ((Py_ssize_t *)((char *)(base) + (s)->offset))
#define FC_SETTING_NS(base, s)   ((int64_t *)((char *)(base) + (s)->offset))

/* ---- one buffer backend: everything the rest of the core knows about
   it.  Every pointer but `name` may be NULL. ---- */
typedef struct FcBackend {
    const char *name;        /* its key in backends(); FC_BK_<name> */

    /* Module life: its state block set up at module exec (after its
       settings got their defaults; may add module functions), visited and
       cleared with the module.  exec: 0 | -1+exc */
    int (*exec)(PyObject *module, FcState *st);
    int (*traverse)(FcState *st, visitproc visit, void *arg);
    void (*clear)(FcState *st);

    /* Copying.  kind: a local kind 1..FB_LOCAL_MAX for a type it copies
       natively, asked once per type version (plan.c) -- kind | 0 | -1+exc.
       deep: copy an instance of that kind after the memo lookup and
       share= check:
         a new reference: the finished copy, memoized and kept alive
           exactly as deepcopy() would (fc_memo_finish);
         FC_PUSHED after pushing frames;
         NULL with an exception;
         NULL without one: "not for me after all" -- the walker then takes
           the stdlib's road (x.__deepcopy__(memo)).
       What it needs from the running call (copy a child, run user code)
       it asks through c->walk (FcWalkOps, fastcopy.h); byte copies it
       postpones go to defer.c with its FcDeferSource. */
    int (*kind)(FcState *st, PyTypeObject *tp);
    PyObject *(*deep)(FcCtx *c, PyObject *x, int kind);

    /* Its configure() keywords, offsets into its state block.  apply:
       called after any of them was set (and at exec), to act on the new
       values (0 | -1+exc); check: before anything is set, may refuse
       (0 | -1+exc) -- `given` has one slot per row, the new value or
       FS_UNSET. */
    const FcSetting *settings;
    int nsettings;
    int (*check)(FcState *st, const Py_ssize_t *given);
    int (*apply)(FcState *st);

    /* backends()[name]: what it sees and uses now.  new ref | NULL+exc */
    PyObject *(*info)(FcState *st);
    /* trim(): give back memory it keeps.  bytes released */
    size_t (*trim)(FcState *st);
} FcBackend;

/* Kinds: backend i's local kind k is the FB kind ((i + 1) << FB_SHIFT) | k,
   what FcPlan.buffer stores; 0 is "none". */
#define FB_SHIFT 4
#define FB_LOCAL_MAX ((1 << FB_SHIFT) - 1)

/* The backends' tables, one per file. */
#define FC_BK_EXTERN_(name) extern FC_INTERNAL_DATA const FcBackend fc_##name##_backend;
FC_BACKEND_LIST(FC_BK_EXTERN_)
#undef FC_BK_EXTERN_

#endif /* FASTCOPY_BACKEND_H */
