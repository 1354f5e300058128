/*
 * buffers.c: big-buffer objects (numpy arrays, torch tensors, CUDA memory)
 * -- the registry of buffer backends and the walker's contract with them.
 *
 * A backend is one file with one table of operations (FcBackend,
 * backend.h): recognise its types, deep-copy an instance, its part of the
 * module state with traverse and clear, its configure() keywords with
 * their defaults, its backends() entry and its trim().  The registry below
 * is the only list of them; module.c, settings.c and plan.c walk it.
 *
 * plan.c asks fc_buffer_kind() once per type version; a non-zero kind
 * makes the type's plan FP_BUFFER, and the walker then calls
 * fc_buffer_deep() for each instance (after the memo lookup and share=
 * check, before anything else).  Anything not proven identical to the
 * object's own __deepcopy__ must return NULL without an exception, and the
 * stdlib's road is taken.  Byte copies a backend can postpone go through
 * the call's deferred-copy queue (defer.c: fc_defer_copy), which the walker
 * flushes before any user code runs and at the end of the call, for every
 * backend at once.
 *
 * Adding a backend (docs/backends.md): a new src/<name>.c defining
 * `const FcBackend fc_<name>_backend` (backend.h), its line in
 * FC_BACKEND_LIST (backend.h), and the file in src/_fastcopy.c's list for
 * the unity build.  The parts depend one way: the walker and plan.c call
 * the registry, the registry calls the backends, and a backend reaches
 * the running call only through FcCtx.walk and the parts below it (memo,
 * defer, pool) -- tests/test_structure.py checks that no cycle comes back.
 */
#include "fastcopy.h"
#include "buffers.h"
#include "memo.h"
#include "state.h"

FC_INTERNAL_DATA const FcBackend *const fc_backends[] = {
#define FC_BK_ROW_(name) &fc_##name##_backend,
    FC_BACKEND_LIST(FC_BK_ROW_)
#undef FC_BK_ROW_
};
FC_INTERNAL_DATA const int fc_nbackends = (int)(sizeof(fc_backends) / sizeof(fc_backends[0]));
_Static_assert(FC_NBACKENDS <= FC_BACKENDS_MAX, "FcState.bk has no room for every backend");

FC_INTERNAL int
fc_buffer_kind(FcState *st, PyTypeObject *tp)
{
    for (int i = 0; i < fc_nbackends; i++) {
        const FcBackend *b = fc_backends[i];
        if (b->kind == NULL) {
            continue;
        }
        int k = b->kind(st, tp);
        if (k != 0) {
            return k < 0 ? -1 : ((i + 1) << FB_SHIFT) | k;
        }
    }
    return 0;
}

FC_INTERNAL PyObject *
fc_buffer_deep(FcCtx *c, PyObject *x, int kind)
{
    int i = (kind >> FB_SHIFT) - 1;
    if (i < 0 || i >= fc_nbackends || fc_backends[i]->deep == NULL) {
        return NULL;
    }
    /* a backend may release the GIL for a big copy, and another thread may
       then make references: the memo's deferred entries first (memo.c,
       "Deferred subtrees") */
    if (c->native.nsubs > 0 && fc_memo_expand(&c->native) < 0) {
        return NULL;
    }
#if FC_MEMO_ADOPT
    /* ... which may read or write a caller's dict the table took (memo.c,
       "A caller's dict"): current before, and its writes seen after */
    if (c->native.adopted && fc_memo_adopt_sync(c) < 0) {
        return NULL;
    }
    PyObject *y = fc_backends[i]->deep(c, x, kind & FB_LOCAL_MAX);
    if (y != NULL && c->native.adopted && fc_memo_adopt_check(c) < 0) {
        if (y != FC_PUSHED) {
            Py_DECREF(y);
        }
        return NULL;
    }
    return y;
#else
    return fc_backends[i]->deep(c, x, kind & FB_LOCAL_MAX);
#endif
}
