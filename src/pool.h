/*
 * pool.h: the process-wide pool of big, already-faulted blocks (pool.c),
 * used by numpy.c's allocator handler and configure()/trim().  No Python
 * objects; every function may be called without the GIL unless noted.
 */
#ifndef FASTCOPY_POOL_H
#define FASTCOPY_POOL_H

#include <stddef.h>
#include "fastcopy.h"

#define FC_POOL_MIN ((size_t)1 << 20)   /* blocks from here are mmap()ed, poolable */

/* A block of at least n usable bytes (*zeroed: its bytes are known zero).
   data | NULL (errno) */
FC_INTERNAL void *fc_pool_alloc(size_t n, int *zeroed);
/* realloc: in place while the block is big enough.  data | NULL (the old
   block stays valid) */
FC_INTERNAL void *fc_pool_realloc(void *p, size_t n);
/* Give a block back: cached when allowed and within the cap, else unmapped. */
FC_INTERNAL void fc_pool_free(void *p);
/* Usable capacity of a block of ours. */
FC_INTERNAL size_t fc_pool_capacity(void *p);
/* Retention on/off and its cap; blocks over the new cap are released.
   With the GIL (configure()). */
FC_INTERNAL void fc_pool_configure(int retain, size_t max_bytes);
/* Statistics for backends() (advisory). */
FC_INTERNAL void fc_pool_stats(size_t *cached, size_t *max_bytes, size_t *hits,
                               size_t *misses);
/* Release every cached block.  bytes released */
FC_INTERNAL size_t fc_pool_trim(void);

#endif /* FASTCOPY_POOL_H */
