/*
 * buffers.h: the registry of buffer backends (buffers.c has the essay).
 */
#ifndef FASTCOPY_BUFFERS_H
#define FASTCOPY_BUFFERS_H

#include "fastcopy.h"
#include "settings.h"

/* One buffer backend: everything the rest of the core knows about it.
   Every pointer but `name` may be NULL. */
typedef struct FcBackend {
    const char *name;        /* its key in backends() */

    /* Module life: its part of FcState set up at module exec (after its
       settings got their defaults; may add module functions), visited and
       cleared with the module.  exec: 0 | -1+exc */
    int (*exec)(PyObject *module, FcState *st);
    int (*traverse)(FcState *st, visitproc visit, void *arg);
    void (*clear)(FcState *st);

    /* Copying.  kind: a local kind 1..FB_LOCAL_MAX for a type it copies
       natively, asked once per type version (plan.c) -- kind | 0 | -1+exc.
       deep: copy an instance of that kind, with the contract of
       fc_buffer_deep below. */
    int (*kind)(FcState *st, PyTypeObject *tp);
    PyObject *(*deep)(FcCtx *c, PyObject *x, int kind);

    /* Its configure() keywords (settings.h).  apply: called after any of
       them was set (and at exec), to act on the new values (0 | -1+exc);
       check: before anything is set, may refuse (0 | -1+exc) -- `given`
       has one slot per row, the new value or FS_UNSET. */
    const FcSetting *settings;
    int nsettings;
    int (*check)(FcState *st, const Py_ssize_t *given);
    int (*apply)(FcState *st);

    /* backends()[name]: what it sees and uses now.  new ref | NULL+exc */
    PyObject *(*info)(FcState *st);
    /* trim(): give back memory it keeps.  bytes released */
    size_t (*trim)(FcState *st);
} FcBackend;

#define FS_UNSET ((Py_ssize_t)-1)

/* The registry (buffers.c), in dispatch order. */
extern FC_INTERNAL_DATA const FcBackend *const fc_backends[];
extern FC_INTERNAL_DATA const int fc_nbackends;

/* Kinds: backend i's local kind k is the FB kind ((i + 1) << FB_SHIFT) | k,
   what FcPlan.buffer stores; 0 is "none". */
#define FB_SHIFT 4
#define FB_LOCAL_MAX ((1 << FB_SHIFT) - 1)

/* The FB kind for tp (a backend recognises it), 0 when none does.  Reads
   sys.modules, imports nothing; can run user code (a half-imported
   module's attributes).  kind | 0 | -1+exc */
FC_INTERNAL int fc_buffer_kind(FcState *st, PyTypeObject *tp);
/* Deep-copy x of FB kind `kind`, after the memo lookup and share= check:
     a new reference: the finished copy, memoized and kept alive exactly
       as deepcopy() would (fc_memo_finish);
     FC_PUSHED after pushing frames;
     NULL with an exception;
     NULL without one: "not for me after all" -- the walker then takes the
       stdlib's road (x.__deepcopy__(memo)). */
FC_INTERNAL PyObject *fc_buffer_deep(FcCtx *c, PyObject *x, int kind);

/* The backends' tables (one per file; the registry lists them). */
extern FC_INTERNAL_DATA const FcBackend fc_numpy_backend;
extern FC_INTERNAL_DATA const FcBackend fc_torch_backend;
extern FC_INTERNAL_DATA const FcBackend fc_cuda_backend;

#endif /* FASTCOPY_BUFFERS_H */
