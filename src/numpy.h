/*
 * numpy.h: the numpy backend (numpy.c).
 */
#ifndef FASTCOPY_NUMPY_H
#define FASTCOPY_NUMPY_H

#include "fastcopy.h"

/* FB_* kind for tp, 0 when not numpy's.  kind | 0 | -1+exc */
FC_INTERNAL int fc_np_kind(FcState *st, PyTypeObject *tp);
/* See buffers.c for the contract. */
FC_INTERNAL PyObject *fc_np_deep(FcCtx *c, PyObject *x, int kind);
/* Defaults and the public functions.  0 | -1+exc */
FC_INTERNAL int fc_np_exec(PyObject *module, FcState *st);

#endif /* FASTCOPY_NUMPY_H */
