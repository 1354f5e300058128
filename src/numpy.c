/*
 * numpy.c: numpy arrays.  Kinds FB_NP_FIRST..FB_NP_LAST (buffers.c).
 */
#include "fastcopy.h"

/* FB_* kind for tp, 0 when not numpy's.  kind | 0 | -1+exc */
static int
fc_np_kind(FcState *st, PyTypeObject *tp)
{
    return 0;
}

/* See buffers.c for the contract. */
static PyObject *
fc_np_deep(FcCtx *c, PyObject *x, int kind)
{
    return NULL;
}
