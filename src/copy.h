/*
 * copy.h: copy.copy (copy.c).  Caller: module.c.
 */
#ifndef FASTCOPY_COPY_H
#define FASTCOPY_COPY_H

#include "fastcopy.h"

/* copy(x) as the stdlib defines it.  Runs user code.  new ref | NULL+exc */
FC_INTERNAL PyObject *fc_copy(FcState *st, PyObject *x);

#endif /* FASTCOPY_COPY_H */
