/*
 * deepcopy.h: the walker (deepcopy.c) -- deepcopy() itself, and the entry
 * that lets other parts copy a child within a running call (the buffer
 * backends copy an object array's items or a tensor's attributes with the
 * call's own memo and work stack).  Callers: module.c, select.c, copy.c
 * (nothing), numpy.c, torch.c, memo.c.
 */
#ifndef FASTCOPY_DEEPCOPY_H
#define FASTCOPY_DEEPCOPY_H

#include "fastcopy.h"

/* deepcopy(x, memo, _nil) as the stdlib defines it (memo NULL = None;
   share: deepcopy(share=...) or NULL).  Runs user code.
   new ref | NULL+exc */
FC_INTERNAL PyObject *fc_deepcopy(FcState *st, PyObject *x, PyObject *memo,
                                  PyObject *nil, PyObject *share);
/* Deep-copy x within the running call (same memo, same work stack).
   Runs user code.  new ref | NULL+exc */
FC_INTERNAL PyObject *fc_walk(FcCtx *c, PyObject *x);
/* A call's context: init (no allocation, no user code) and fini (releases
   everything, runs the end-of-call steps: finalizers may run). */
FC_INTERNAL_INLINE void fc_ctx_init(FcCtx *c, FcState *st);
FC_INTERNAL_INLINE void fc_ctx_fini(FcCtx *c);
/* Is x copied as itself by deepcopy, with no memo involved?  (native
   memo only)  1 | 0 */
FC_INTERNAL_INLINE int fc_deep_atomic(FcCtx *c, PyObject *x);
/* About to run code that is not fastcopy's or the interpreter's own -- a
   hook, a reductor, __setstate__, a key's __hash__/__eq__, an iterator, a
   share= predicate, an object's own __deepcopy__: every call into Python
   of a copy goes through here first.  The byte copies recorded so far run
   (defer.c: a hook could read a result or write a source), the cached
   torch mode check is forgotten, and when the code is handed the memo
   (show), the memo becomes the stdlib's dict of this moment (memo.c; pair
   with fc_memo_hide after the call).  0 | -1+exc */
FC_INTERNAL_INLINE int fc_before_user_code(FcCtx *c, int show);
/* Before the memo is shown to Python code: every half-built dict made
   exactly the stdlib's (prefilled frames demoted).  0 | -1+exc */
FC_INTERNAL int fc_demote_all(FcCtx *c);
/* Whether this interpreter's dicts are laid out as deepcopy.c's "Values
   put in place" reads them (checked on dicts made for it): sets
   st->dict_slots_ok.  0 | -1+exc */
FC_INTERNAL int fc_dict_slots_probe(FcState *st);
/* PyDict_Next(d, ppos, pk, pv), reading the table directly where its
   layout is the one checked at import.  Borrowed *pk, *pv.  1 | 0 at the
   end */
FC_INTERNAL_INLINE int fc_dict_next(FcCtx *c, PyObject *d, Py_ssize_t *ppos,
                                    PyObject **pk, PyObject **pv);
/* y[key] = value written straight into entry ix of dict y, a table no one
   else holds (y's alone, its entry ix holding key and a value; tracking
   needing no change), as insertdict's replacement would.  1 done (a new
   reference taken) | 0 not so, nothing changed: use PyDict_SetItem */
FC_INTERNAL_INLINE int fc_dict_put_at(FcCtx *c, PyObject *y, Py_ssize_t ix,
                                      PyObject *key, PyObject *value);
/* copy.copy(x) of a pydantic model with BaseModel's or RootModel's own
   __copy__ (hook: FH_PYDANTIC | FH_PYDROOT), natively.  new ref |
   NULL+exc | NULL, no exc: not this road now (nothing done) */
FC_INTERNAL PyObject *fc_copy_pydantic(FcState *st, PyObject *x, int hook);
/* 0 | -1+RecursionError when this thread's C stack is nearly used up. */
FC_INTERNAL int fc_stack_check(void);

#endif /* FASTCOPY_DEEPCOPY_H */
