/*
 * _fastcopy.c: the one translation unit of the C core.  Each part includes
 * only fastcopy.h and defines static functions; compiling them together
 * gives cross-file inlining without LTO.
 */
#include "fastcopy.h"
#include "defer.c"
#include "memo.c"
#include "buffers.c"
#include "pool.c"
#include "numpy.c"
#include "torch.c"
#include "buffers_dispatch.c"
#include "plan.c"
#include "deepcopy.c"
#include "select.c"
#include "copy.c"
#include "profile.c"
#include "cowdict.c"
#include "module.c"
