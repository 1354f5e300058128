/*
 * profile.h: the C half of fastcopy.profile() and configure(warn_slow=)
 * (profile.c has the essay).  Callers: the top-level entries (deepcopy.c,
 * copy.c, module.c), and the few places that count: a hook call (the
 * walker's generic road, copy.c), a native buffer copy (numpy.c, defer.c).
 */
#ifndef FASTCOPY_PROFILE_H
#define FASTCOPY_PROFILE_H

#include "fastcopy.h"
#include "platform.h"
#include "state.h"

#define FC_PROF_RECORD 1          /* FcState.prof: fastcopy.profile() records */
#define FC_PROF_WARN   2          /* FcState.prof: configure(warn_slow=) is set */
enum { FC_PROF_DEEPCOPY = 0, FC_PROF_COPY = 1 };
enum { FC_PROF_NUMPY = 1, FC_PROF_TORCH = 2 };   /* FcProfCall.buffer_kinds */

/* The counters of this thread's running top-level copy.  Kept in
   thread-local storage rather than on the C stack: a hook may switch
   greenlets, and a pointer into a suspended stack must never be written. */
typedef struct {
    int depth;                /* profiled calls running on this thread: 1 is
                                 the top-level one, more are nested in it */
    int64_t t0;               /* its start, fc_prof_now() */
    Py_ssize_t objects;       /* memo entries its calls added (+1 per new
                                 shallow copy) */
    Py_ssize_t hooks;         /* objects copied through the stdlib's generic
                                 road (a copier, __deepcopy__/__copy__, a reduce) */
    Py_ssize_t memo_max;      /* largest memo at the end of one of its calls */
    int64_t buffer_bytes;     /* bytes of arrays/tensors copied natively */
    int64_t buffer_ns;        /* time spent copying them */
    int buffer_kinds;         /* FC_PROF_NUMPY | FC_PROF_TORCH */
} FcProfCall;

/* This thread's counters (defined in profile.c). */
extern FC_INTERNAL_DATA FC_PLAT_THREAD_LOCAL FcProfCall fc_prof_tls;

/* A monotonic clock in ns. */
FC_INLINE int64_t
fc_prof_now(void)
{
    return fc_plat_monotonic_ns();
}

/* This thread's counters when a profiled call is running here, else NULL.
   Out of line: the address of a thread-local is a call (__tls_get_addr)
   in a shared object, and the compiler hoisted it to the entry of
   fc_dispatch, where it ran for every object copied (callgrind: 13
   instructions an object). */
FC_INTERNAL FC_NOINLINE_ATTR FcProfCall *fc_prof_active(void);

/* The counters to bump, or NULL when nothing is profiled here.  Called only
   at places that are expensive anyway: a hook call, a buffer copy. */
FC_INLINE FcProfCall *
fc_prof_counting(FcState *st)
{
    return FC_UNLIKELY(st->prof) ? fc_prof_active() : NULL;
}

/* One more object copied through the generic road (a hook). */
FC_INLINE void
fc_prof_hook(FcState *st)
{
    FcProfCall *pc = fc_prof_counting(st);
    if (pc != NULL) {
        pc->hooks++;
    }
}

/* A buffer copy of nbytes that started at t0 (fc_prof_now()) is done. */
FC_INLINE void
fc_prof_buffer(FcProfCall *pc, int kind, int64_t nbytes, int64_t t0)
{
    pc->buffer_bytes += nbytes;
    pc->buffer_ns += fc_prof_now() - t0;
    pc->buffer_kinds |= kind;
}

/* Open a profiled call: 1 it is this thread's top-level call (counters
   reset, clock started) | 0 nested inside one (counts go to that).  No
   user code. */
FC_INTERNAL int fc_prof_begin(void);
/* Close it: a top-level call is reported to the Python recorder
   (fastcopy/_profile.py: user code), which may raise (a SlowCopyWarning
   turned into an error): then y is dropped.  Steals y.  y | NULL+exc */
FC_INTERNAL PyObject *fc_prof_end(FcState *st, int top, int op, PyObject *x, PyObject *y);
/* A deepcopy() call's memo size now (entries, keep-alive list not counted;
   0 for a mapping that is not a dict: asking it runs its code). */
FC_INTERNAL Py_ssize_t fc_prof_memo_len(FcCtx *c);
/* FcState.prof's FC_PROF_WARN bit from prof_warn_ns (after configure()). */
FC_INTERNAL void fc_prof_sync_warn(FcState *st);
/* Off, and _profiling() added to the module.  0 | -1+exc */
FC_INTERNAL int fc_prof_exec(PyObject *module, FcState *st);

#endif /* FASTCOPY_PROFILE_H */
