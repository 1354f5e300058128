/*
 * watch.h: dict stamps, "has this dict been written since?", where the
 * answer cannot be read off the dict itself (pyver.h, FC_HAVE_DICT_VERSION:
 * PEP 509's version tag is gone from 3.14).  Implemented by watch.c with
 * dict watchers (PyDict_AddWatcher, public since 3.12); through 3.13 the
 * version tag answers and nothing is watched.
 */
#ifndef FASTCOPY_WATCH_H
#define FASTCOPY_WATCH_H

#include "fastcopy.h"

/* The watchers, made when the module's state is (plan.c, fc_watch_init)
   and cleared with it; a watcher that cannot be had leaves its id -1 and
   its users on their slower road. */
FC_INTERNAL void fc_stamps_init(FcState *st);
FC_INTERNAL void fc_stamps_fini(FcState *st);

/* Names stamps: "has dict d changed since?" for the caches that verified
   names in a function's globals and builtins (hooks.c's library roads,
   Fraction's and UUID's).  fc_names_take(st, d) is kept when the names were
   checked; d is unchanged since while fc_names_stamp(st, d) equals it.
   3.10-3.13: d's version tag.  3.14+ (no tag): a counter that moves with
   every change to any dict the names watcher watches -- take starts
   watching d -- so a change anywhere among them only sends each cache back
   to its check; without a watcher the take is 0, which no stamp equals. */
FC_INTERNAL uint64_t fc_names_take(FcState *st, PyObject *d);
FC_INTERNAL_INLINE uint64_t fc_names_stamp(FcState *st, PyObject *d);

#if FC_PREFILL && !FC_HAVE_DICT_VERSION
/* Source stamps (3.14+ GIL builds: pyver.h, FC_PREFILL): a prefilled dict
   frame watches its source with FcState.src_watcher while it lives
   (fc_src_watch: 1 watched now, to unwatch at the end | 0 already watched
   by an outer frame | -1 cannot), and its source was not written while
   fc_src_stamp is what it was when the frame took its snapshot (any write
   to any watched source moves it: a needless demotion at worst). */
FC_INTERNAL_INLINE uint64_t fc_src_stamp(FcState *st);
FC_INTERNAL_INLINE int fc_src_watch(FcState *st, PyObject *d);
FC_INTERNAL_INLINE void fc_src_unwatch(FcState *st, PyObject *d);
#endif

#if FC_MEMO_ABSORB && !FC_HAVE_DICT_VERSION
/* Mirror stamps (3.14+ GIL builds: pyver.h, FC_MEMO_ABSORB): a call's memo
   mirror is watched with watcher wid (FcState.mirror_watcher) from its
   making (fc_mirror_watch: 1 | 0 cannot, and the memo a hook is shown then
   stays the memo) to the call's end; fc_mirror_stamp moves with every
   write to any watched mirror. */
FC_INTERNAL_INLINE uint64_t fc_mirror_stamp(void);
FC_INTERNAL int fc_mirror_watch(int wid, PyObject *d);
FC_INTERNAL void fc_mirror_unwatch(int wid, PyObject *d);
#endif

#endif /* FASTCOPY_WATCH_H */
