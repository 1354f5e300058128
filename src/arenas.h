/*
 * arenas.h: configure(keep_arenas=) -- empty object arenas kept mapped for
 * the next big copy instead of handed back to the system (arenas.c).
 * Process-wide; with the GIL (configure(), trim(), _sysinfo()).
 */
#ifndef FASTCOPY_ARENAS_H
#define FASTCOPY_ARENAS_H

#include <stddef.h>
#include "fastcopy.h"

/* Keep up to limit bytes of empty arenas (0: none, the kept ones released).
   The first nonzero limit installs the arena allocator, which then stays
   (passing every call through once the limit is 0); where CPython does not
   use pymalloc's arenas for objects (free-threaded builds) only the memo's
   blocks are kept. */
FC_INTERNAL void fc_arenas_set_limit(size_t limit);
/* The memo's big tables (memo.c's fc_block_*: system pages of size bytes,
   a multiple of 2 MiB) kept under the same cap: a kept block of exactly
   size bytes, its contents stale | NULL */
FC_INTERNAL void *fc_arenas_take_block(size_t size);
/* Keep block p of size bytes.  1 kept | 0: free it as usual */
FC_INTERNAL int fc_arenas_keep_block(void *p, size_t size);
/* Release every kept arena and block.  bytes released */
FC_INTERNAL size_t fc_arenas_trim(void);
/* The allocator's state, for _sysinfo().  new ref | NULL+exc */
FC_INTERNAL PyObject *fc_arenas_stats(void);

#endif /* FASTCOPY_ARENAS_H */
