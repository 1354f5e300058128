/*
 * buffers_dispatch.c: routes buffer kinds to numpy.c / torch.c.
 */
#include "fastcopy.h"

/* kind | 0 | -1+exc */
static int
fc_buffer_kind(FcState *st, PyTypeObject *tp)
{
    int k = fc_np_kind(st, tp);
    if (k != 0) {
        return k;
    }
    return fc_torch_kind(st, tp);
}

/* new ref | FC_PUSHED | NULL+exc | NULL: take the generic road */
static PyObject *
fc_buffer_deep(FcCtx *c, PyObject *x, int kind)
{
    if (kind >= FB_NP_FIRST && kind <= FB_NP_LAST) {
        return fc_np_deep(c, x, kind);
    }
    if (kind >= FB_TORCH_FIRST && kind <= FB_TORCH_LAST) {
        return fc_torch_deep(c, x, kind);
    }
    return NULL;
}
