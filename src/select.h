/*
 * select.h: selective copying (select.c) -- share= checked and replicate(),
 * above the walker (the walker matches share= itself).  Caller: module.c.
 */
#ifndef FASTCOPY_SELECT_H
#define FASTCOPY_SELECT_H

#include "fastcopy.h"

/* share= must be a type, a tuple of types, or a callable.  0 | -1+exc */
FC_INTERNAL int fc_check_share(PyObject *share);
/* [deepcopy(x, share=share) for _ in range(n)].  new ref | NULL+exc */
FC_INTERNAL PyObject *fc_replicate(FcState *st, PyObject *x, Py_ssize_t n, PyObject *share);

#endif /* FASTCOPY_SELECT_H */
