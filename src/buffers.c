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

enum {
    FB_NONE = 0,
    FB_NP_FIRST = 1,      /* numpy.c owns FB_NP_FIRST..FB_NP_LAST */
    FB_NP_LAST = 15,
    FB_TORCH_FIRST = 16,  /* torch.c owns FB_TORCH_FIRST..FB_TORCH_LAST */
    FB_TORCH_LAST = 31,
};
