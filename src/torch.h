/*
 * torch.h: the torch backend (torch.c).
 */
#ifndef FASTCOPY_TORCH_H
#define FASTCOPY_TORCH_H

#include "fastcopy.h"

/* FB_* kind for tp, 0 when not torch's.  kind | 0 | -1+exc */
FC_INTERNAL int fc_torch_kind(FcState *st, PyTypeObject *tp);
/* See buffers.c for the contract. */
FC_INTERNAL PyObject *fc_torch_deep(FcCtx *c, PyObject *x, int kind);
/* A torch storage's address and size now: two C getters, no Python code.
   0 | -1+exc */
FC_INTERNAL int fc_torch_storage_addr(FcState *st, PyObject *store, char **base,
                                      size_t *nbytes);

#endif /* FASTCOPY_TORCH_H */
