/*
 * select.h: selective copying (select.c) -- deepcopy(share=...) and
 * replicate().  Callers: the walker, module.c.
 */
#ifndef FASTCOPY_SELECT_H
#define FASTCOPY_SELECT_H

#include "fastcopy.h"

/* Is x one of the objects deepcopy(share=...) keeps by reference?  A
   predicate is user code.  1 | 0 | -1+exc */
FC_INTERNAL int fc_share_match(FcCtx *c, PyObject *x);
/* share= must be a type, a tuple of types, or a callable.  0 | -1+exc */
FC_INTERNAL int fc_check_share(PyObject *share);
/* [deepcopy(x, share=share) for _ in range(n)].  new ref | NULL+exc */
FC_INTERNAL PyObject *fc_replicate(FcState *st, PyObject *x, Py_ssize_t n, PyObject *share);

#endif /* FASTCOPY_SELECT_H */
