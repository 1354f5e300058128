/*
 * buffers.h: big-buffer objects -- the walker's contract with the buffer
 * backends (buffers.c has the essay).
 */
#ifndef FASTCOPY_BUFFERS_H
#define FASTCOPY_BUFFERS_H

#include "fastcopy.h"


enum {
    FB_NONE = 0,
    FB_NP_FIRST = 1,      /* numpy.c owns FB_NP_FIRST..FB_NP_LAST */
    FB_NP_LAST = 15,
    FB_TORCH_FIRST = 16,  /* torch.c owns FB_TORCH_FIRST..FB_TORCH_LAST */
    FB_TORCH_LAST = 31,
};

/* The FB_* kind for tp (a backend recognises it), 0 when none does.  May
   import nothing; reads sys.modules.  kind | 0 | -1+exc */
FC_INTERNAL int fc_buffer_kind(FcState *st, PyTypeObject *tp);
/* Deep-copy x of FB_* kind `kind` (contract in buffers.c).
   new ref | FC_PUSHED | NULL+exc | NULL: take the generic road */
FC_INTERNAL PyObject *fc_buffer_deep(FcCtx *c, PyObject *x, int kind);

#endif /* FASTCOPY_BUFFERS_H */
