/*
 * buffers.c: big-buffer objects (numpy arrays, torch tensors) -- the
 * walker's contract with numpy.c and torch.c.
 *
 * plan.c asks fc_buffer_kind() once per type version; a non-zero FB_* kind
 * makes the type's plan FP_BUFFER, and the walker then calls
 * fc_buffer_deep() for each instance (after the memo lookup and share=
 * check, before anything else).  fc_buffer_deep() returns
 *   - a new reference: the finished copy; it must already be memoized and
 *     kept alive exactly as deepcopy() would (fc_memo_finish), or
 *   - FC_PUSHED after pushing frames, or
 *   - NULL with an exception, or
 *   - NULL without one: "not for me after all" -- the walker then takes
 *     the stdlib's generic road for x (which calls x.__deepcopy__(memo)).
 * Anything not proven identical to the object's own __deepcopy__ must
 * return NULL without an exception.
 */
#include "fastcopy.h"
#include "buffers.h"
#include "numpy.h"
#include "torch.h"

/* kind | 0 | -1+exc */
FC_INTERNAL int
fc_buffer_kind(FcState *st, PyTypeObject *tp)
{
    int k = fc_np_kind(st, tp);
    if (k != 0) {
        return k;
    }
    return fc_torch_kind(st, tp);
}

/* new ref | FC_PUSHED | NULL+exc | NULL: take the generic road */
FC_INTERNAL PyObject *
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
