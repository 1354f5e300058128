/*
 * torch.c: torch tensors and parameters.  Kinds FB_TORCH_FIRST..LAST.
 */
#include "fastcopy.h"

/* FB_* kind for tp, 0 when not torch's.  kind | 0 | -1+exc */
static int
fc_torch_kind(FcState *st, PyTypeObject *tp)
{
    return 0;
}

/* See buffers.c for the contract. */
static PyObject *
fc_torch_deep(FcCtx *c, PyObject *x, int kind)
{
    return NULL;
}
