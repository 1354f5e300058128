/*
 * _fastcopy.c: the one translation unit of the C core.  Each part includes
 * the headers it uses and stands on its own (scripts/check_parts.sh
 * compiles each alone); compiled together, with FC_INTERNAL functions
 * static, every body is visible at every call (see fastcopy.h, "Linkage").
 * The order below is free: no part relies on an earlier one.  A new part
 * (a buffer backend: docs/backends.md) gets its line here.
 */
#define FC_UNITY 1
#include "defer.c"
#include "memo.c"
#include "buffers.c"
#include "pool.c"
#include "arenas.c"
#include "numpy.c"
#include "torch.c"
#include "cuda_backend.c"
#include "watch.c"
#include "hooks.c"
#include "plan.c"
#include "reduce.c"
#include "deepcopy.c"
#include "select.c"
#include "copy.c"
#include "profile.c"
#include "cowdict.c"
#include "settings.c"
#include "testing.c"
#include "module.c"
