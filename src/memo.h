/*
 * memo.h: the native memo (memo.c) -- a pointer-keyed table with the
 * stdlib memo's semantics, its keep-alive list, the dict hooks are shown,
 * the spare buffers one call leaves to the next, and the copies hidden from
 * the cyclic GC while a call runs.  Callers: the walker (deepcopy.c),
 * select.c, the buffer backends (numpy.c, torch.c) and module.c.
 */
#ifndef FASTCOPY_MEMO_H
#define FASTCOPY_MEMO_H

#include "fastcopy.h"

/* Containers a call makes before it starts hiding them from the GC
   (memo.c, "Copies and the cyclic GC"). */
#ifndef FC_GC_GRACE
#  define FC_GC_GRACE 1000
#endif

/* An empty table / release every entry and heap block.  No user code runs
   in init; clear drops references (finalizers may run). */
FC_INTERNAL void fc_memo_init(FcMemo *m);
FC_INTERNAL void fc_memo_clear(FcMemo *m);

/* borrowed copy | NULL (missing; never an error).  A miss is remembered
   for the store that usually follows (fc_memo_missed, fc_memo_set). */
FC_INTERNAL_INLINE PyObject *fc_memo_get(FcMemo *m, PyObject *key);
/* fc_memo_get for a key read through exactly `own` references the caller
   can vouch for (the source container's slot it read, a private copy's):
   a reference count of just that proves a miss, answered without a probe
   (memo.c, "Proven misses").  own 0: an ordinary lookup. */
FC_INTERNAL_INLINE PyObject *fc_memo_get_own(FcMemo *m, PyObject *key, Py_ssize_t own);
/* fc_memo_get_own's proof alone: 1 key proven missing (remembered as a
   miss) | 0 proven misses in use, but key's count proves nothing | -1 not
   in use (or own 0) */
FC_INTERNAL_INLINE int fc_memo_prove_miss(FcMemo *m, PyObject *key, Py_ssize_t own);
/* Is fc_memo_get_own answering misses without a probe for this table
   (a big one, on a build where counts are exact)?  1 | 0 */
FC_INTERNAL_INLINE int fc_memo_proving(FcMemo *m);
/* Has this call gone back to proving misses only past the caches, as one
   that catches up a few entries at a time (memo.c, FC_THIN_CATCH)?  1 | 0 */
FC_INTERNAL int fc_memo_caught_thinly(FcMemo *m);
/* Was key the last lookup, a miss, with nothing inserted since?  1 | 0 */
FC_INTERNAL_INLINE int fc_memo_missed(FcMemo *m, PyObject *key);
/* The small tree x -> y copied inside a walk (deepcopy.c, "Small
   subtrees"), whose root's entry is at pos and its keep-alive at kpos
   (first_keep: the call's first keep-alive): the entries below its root
   are made by fc_memo_expand.  0 | -1+exc (MemoryError) */
FC_INTERNAL int fc_memo_sub_add(FcMemo *m, PyObject *x, PyObject *y, Py_ssize_t pos,
                                Py_ssize_t kpos, int first_keep);
/* Make the entries and keep-alives of the trees fc_memo_sub_add recorded,
   in the stdlib's order and places.  No user code.  0 | -1+exc
   (MemoryError: nothing changed) */
FC_INTERNAL FC_NOINLINE_ATTR int fc_memo_expand(FcMemo *m);

/* memo[id(key)] = value (borrowed; a new reference is taken).  No user
   code.  0 | -1+exc (MemoryError) */
FC_INTERNAL_INLINE int fc_memo_set(FcMemo *m, PyObject *key, PyObject *value);

/* The lookup that opens every deepcopy() step, in whatever mode the memo
   is (a dict or mapping memo runs its __hash__/__getitem__: user code).
   1 hit (*res new ref) | 0 miss | -1+exc */
FC_INTERNAL_INLINE int fc_memo_lookup(FcCtx *c, PyObject *x, PyObject **res);
/* memo.get(id(x), nil), for deepcopy()'s own first step.
   1 hit (*res new ref) | 0 miss | -1+exc */
FC_INTERNAL int fc_memo_lookup_py(FcCtx *c, PyObject *x, PyObject *nil, PyObject **res);
/* The tuple copier's `try: return memo[id(x)] except KeyError: pass`;
   since: 0, or 1 + the native table's size when x missed it as its frame
   began (memo.c).  1 hit (*res new ref) | 0 miss | -1+exc */
FC_INTERNAL int fc_memo_getitem(FcCtx *c, PyObject *x, Py_ssize_t since, PyObject **res);
/* memo[id(x)] = y.  May run user code (dict or mapping memo).  0 | -1+exc */
FC_INTERNAL_INLINE int fc_memo_store(FcCtx *c, PyObject *x, PyObject *y);
/* _keep_alive(x, memo).  May run user code (mapping memo).  0 | -1+exc */
FC_INTERNAL int fc_memo_keep_alive(FcCtx *c, PyObject *x);
/* "if y is not x: memo[d] = y; _keep_alive(x, memo)".  0 | -1+exc */
FC_INTERNAL_INLINE int fc_memo_finish(FcCtx *c, PyObject *x, PyObject *y);
/* fc_memo_finish for a copier that stored memo[id(x)] = y before copying
   the children: only the keep-alive is left.  0 | -1+exc */
FC_INTERNAL_INLINE int fc_memo_finish_stored(FcCtx *c, PyObject *x, PyObject *y);
/* fc_memo_finish for a copy just made, which it takes over: y may be NULL
   (its maker failed).  y | NULL+exc */
FC_INTERNAL_INLINE PyObject *fc_memo_done(FcCtx *c, PyObject *x, PyObject *y);

/* Ghosts (memo.c, "Ghosts"): the stdlib's temporaries, memoized and kept
   alive as it would, made only if the memo is shown.  Native memo only; no
   user code.
   A set's list of n atomic items: reserve the n places to fill with strong
   references (NULL+exc), then add (the references stolen, also on
   failure).  0 | -1+exc
   A slot state (None, {names: values}) copied as (None, {names: copies}):
   the dict's entry comes first, so take its place (placeholder: position
   | -1+exc) before the values are copied; then either ghost_slots once
   they all are (new references taken; 0 | -1+exc), or fill the place with
   the dict and its copy made for real (borrowed; never fails: without
   memory the entry is dropped).  pairs_dict makes such a dict.  */
FC_INTERNAL PyObject **fc_memo_ghost_reserve(FcMemo *m, Py_ssize_t n);
FC_INTERNAL int fc_memo_ghost_add(FcMemo *m, Py_ssize_t n);
FC_INTERNAL Py_ssize_t fc_memo_placeholder(FcMemo *m);
FC_INTERNAL int fc_memo_ghost_slots(FcMemo *m, Py_ssize_t dpos, Py_ssize_t n,
                                    PyObject *const *names, PyObject *const *values,
                                    PyObject *const *copies);
FC_INTERNAL void fc_memo_fill(FcMemo *m, Py_ssize_t pos, PyObject *key, PyObject *value);
FC_INTERNAL PyObject *fc_memo_pairs_dict(Py_ssize_t n, PyObject *const *names,
                                         PyObject *const *values);

/* Showing the memo to user code (memo.c, "Showing the memo").
   fc_memo_show: about to hand c->memo to a hook; makes it the stdlib's
   dict of this moment.  0 | -1+exc.  Pair with fc_memo_hide once the hook
   has returned or raised (keeps any pending exception).
   fc_memo_expose: show it for good (a caller writes keys of its own).
   0 | -1+exc */
FC_INTERNAL int fc_memo_show(FcCtx *c);
FC_INTERNAL void fc_memo_hide(FcCtx *c);
FC_INTERNAL int fc_memo_expose(FcCtx *c);
/* The sub-memo under `key` (an interned str: torch's "torch"; memo.c, "A
   sub-memo"), in a native table or a dict memo (not a mapping memo).
   get: memo.get(key).  new ref | NULL (none) | NULL+exc
   setdefault: memo.setdefault(key, {}).  new ref | NULL+exc
   No user code, but a dict memo's keys' __eq__. */
FC_INTERNAL PyObject *fc_memo_sub_get(FcCtx *c, PyObject *key);
FC_INTERNAL PyObject *fc_memo_sub_setdefault(FcCtx *c, PyObject *key);
/* deepcopy(x, memo) from a hook that was shown `memo` by a call still
   running on this thread, with the dict untouched since: that call, whose
   native table the nested call may take over.  borrowed | NULL (no error) */
FC_INTERNAL FcCtx *fc_memo_borrow(FcState *st, PyObject *memo);
/* Take over the lender's native table / give it back when the nested call
   ends (keeps a pending exception).  return: 0 | -1+exc */
FC_INTERNAL void fc_memo_take(FcCtx *c, FcCtx *lender);
FC_INTERNAL int fc_memo_return(FcCtx *c);

#if FC_MEMO_ADOPT
/* deepcopy(x, memo) with a caller's dict (memo.c, "A caller's dict"):
   fc_memo_adopt takes it as the empty native table's mirror, its entries
   loaded (nil: the _nil a value may not be); 1 taken | 0 not (nothing
   changed) | -1+exc (the context's fini releases what was taken).
   fc_memo_adopt_sync: before user code runs (not a hook's show), the dict
   made the stdlib's of this moment.  0 | -1+exc.  fc_memo_adopt_check:
   after it ran, the dict is the memo from now on if anything wrote to it
   (0 | -1+exc: an entry could not be written into it).
   fc_memo_adopt_end: the call ends, the dict gets the rest (keeps a
   pending exception).  0 | -1+exc.  fc_memo_adopt_release: the context
   ends (FcState.adopters). */
FC_INTERNAL int fc_memo_adopt(FcCtx *c, PyObject *memo, PyObject *nil);
FC_INTERNAL int fc_memo_adopt_sync(FcCtx *c);
FC_INTERNAL int fc_memo_adopt_check(FcCtx *c);
FC_INTERNAL int fc_memo_adopt_end(FcCtx *c);
FC_INTERNAL void fc_memo_adopt_release(FcCtx *c);
#endif

/* Spare heap buffers (FcSpare): take one of at least `want` bytes
   (*size: how many) | NULL; give one back (the larger is kept); free all. */
FC_INTERNAL_INLINE void *fc_spare_take(FcSpare *sp, int slot, size_t want, size_t *size);
FC_INTERNAL void fc_spare_give(FcSpare *sp, int slot, void *p, size_t size);
FC_INTERNAL void fc_spare_free(FcSpare *sp);

/* Hide y (a copy the call made) from the cyclic GC until
   fc_retrack_all(), which runs before the memo is shown and when the call
   ends.  No user code.  0 | -1+exc */
FC_INTERNAL_INLINE int fc_untrack(FcCtx *c, PyObject *y);
FC_INTERNAL void fc_retrack_all(FcCtx *c);
/* 3.12+: user code is about to run (the walker's fc_before_user_code, not
   when it shows the memo): hide the copies made since the last sweep if a
   grace ran out meanwhile (memo.c).  No user code.  0 | -1+exc */
FC_INTERNAL int fc_gc_before_user_code_slow(FcCtx *c);
FC_INLINE int
fc_gc_before_user_code(FcCtx *c)
{
    return FC_UNLIKELY(c->gc_due) ? fc_gc_before_user_code_slow(c) : 0;
}
/* fc_untrack for a fresh y the GC has never tracked (PyObject_GC_New):
   left so and listed while the memo is native (the grace aside: hiding it
   costs no more than tracking it), tracked now otherwise.  0 | -1+exc
   (y tracked) */
FC_INTERNAL int fc_untrack_fresh(FcCtx *c, PyObject *y);

#endif /* FASTCOPY_MEMO_H */
