/*
 * deepcopy.h: the walker (deepcopy.c) -- deepcopy() itself and a call's
 * context, for the parts above it: module.c, select.c, cowdict.c, copy.c.
 * The parts below it (the buffer backends, the memo) reach the running
 * call only through the FcWalkOps it installs in FcCtx (fastcopy.h).
 */
#ifndef FASTCOPY_DEEPCOPY_H
#define FASTCOPY_DEEPCOPY_H

#include "fastcopy.h"

/* deepcopy(x, memo, _nil) as the stdlib defines it (memo NULL = None;
   share: deepcopy(share=...) or NULL).  Runs user code.
   new ref | NULL+exc */
FC_INTERNAL PyObject *fc_deepcopy(FcState *st, PyObject *x, PyObject *memo,
                                  PyObject *nil, PyObject *share);
/* What the walk of deepcopy(x, share=share) tells replicate() (select.c). */
typedef struct {
    int ok;                /* it stayed on the roads a tape holds (FcCtx.off_tape
                              never set, the memo never shown, no deeper than
                              FC_TAPE_MAX_DEPTH): recording x now cannot be
                              abandoned, unless what it reads changed since */
    Py_ssize_t containers; /* copies it memoized */
    Py_ssize_t hits;       /* lookups that found a copy: second references */
} FcTapeProbe;
/* deepcopy(x, share=share), reporting in *probe (all 0 on error).
   new ref | NULL+exc */
FC_INTERNAL PyObject *fc_deepcopy_tape(FcState *st, PyObject *x, PyObject *share,
                                       FcTapeProbe *probe);
/* A call's context: init (no allocation, no user code) and fini (releases
   everything, runs the end-of-call steps: finalizers may run). */
FC_INTERNAL_INLINE void fc_ctx_init(FcCtx *c, FcState *st);
FC_INTERNAL_INLINE void fc_ctx_fini(FcCtx *c);
/* Is x copied as itself by deepcopy, with no memo involved?  (native
   memo only)  1 | 0 */
FC_INTERNAL_INLINE int fc_deep_atomic(FcCtx *c, PyObject *x);
/* Are all of tuple x's items atomic, so that deepcopy returns x itself?
   1 | 0 */
FC_INTERNAL int fc_tuple_atomic(FcCtx *c, PyObject *x);
/* About to run code that is not fastcopy's or the interpreter's own -- a
   hook, a reductor, __setstate__, a key's __hash__/__eq__, an iterator, a
   share= predicate, an object's own __deepcopy__: every call into Python
   of a copy goes through here first.  The byte copies recorded so far run
   (defer.c: a hook could read a result or write a source), the cached
   ambient check of a backend (FcCtx.ambient) is forgotten, and when the code is handed the memo
   (show), the memo becomes the stdlib's dict of this moment (memo.c; pair
   with fc_memo_hide after the call).  0 | -1+exc */
FC_INTERNAL_INLINE int fc_before_user_code(FcCtx *c, int show);
/* Whether this interpreter's dicts are laid out as deepcopy.c's "Values
   put in place" reads them (checked on dicts made for it): sets
   st->dict_slots_ok.  0 | -1+exc */
FC_INTERNAL int fc_dict_slots_probe(FcState *st);
/* A pydantic model's attribute reads, as its hooks make them (also for
   copy.c's copy.copy of a model; c NULL: no call is running).
   getattr(x, name), a set slot read without user code: new ref | NULL+exc.
   private: `not hasattr(x, name) or x.name is None`, else x.name in *val
   (NULL for the first; oneread: `x.name is None` alone, pydantic 2.5 and
   2.6): 0 | -1+exc.
   private_dict: {k: v for k, v in priv.items() if v is not undefined}:
   new ref | NULL+exc. */
FC_INTERNAL PyObject *fc_pd_get(FcCtx *c, PyObject *x, PyObject *name);
FC_INTERNAL int fc_pd_private(FcCtx *c, PyObject *x, PyObject *name, int oneread,
                              PyObject **val);
FC_INTERNAL PyObject *fc_pd_private_dict(FcCtx *c, PyObject *priv, PyObject *undefined);
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

#endif /* FASTCOPY_DEEPCOPY_H */
