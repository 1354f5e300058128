/*
 * pool.c: a process-wide pool of big, already-faulted memory blocks.
 *
 * Why: copying N bytes into fresh pages costs a page fault (and the kernel
 * zeroing the page) per 4 KiB or 2 MiB, which on these machines makes a
 * one-shot copy 2-10x slower than the same copy into pages that are already
 * mapped.  A program that deep-copies and drops big arrays again and again
 * (snapshots, rollbacks) can keep its pages if the blocks are recycled.
 *
 * Shape: size classes (four per power of two, so at most 25% slack), each
 * a LIFO free list threaded through the blocks' own headers.  Every block
 * starts with a FcPoolHead that records its class and capacity: the numpy
 * allocator interface passes a size recomputed from the array's current
 * shape to free(), which cannot be trusted, so the block says how big it
 * is.  Blocks of FC_POOL_MIN bytes and more are system pages
 * (fc_plat_pages_alloc: mmap, VirtualAlloc), so that trim() really gives
 * memory back; smaller ones (a realloc can shrink a block)
 * come from malloc() and are never cached.
 *
 * Invariants:
 *   - fc_pool.cached == the sum of the capacities on the free lists
 *     <= fc_pool.max_bytes at the moment each block was cached;
 *   - every field is read and written under fc_pool.lock, except the
 *     statistics read by backends() (advisory);
 *   - the pool is never torn down: blocks may be freed by arrays that
 *     outlive the module (interpreter shutdown), so it is a static object
 *     with a static mutex, usable before and after any interpreter;
 *   - fork: the lock is taken around fork() (fc_plat_atfork), so the child
 *     inherits consistent lists (its own copy-on-write pages) and a fresh,
 *     unlocked mutex.
 * Nothing here touches Python objects; it is called without the GIL.
 */
#include "fastcopy.h"
#include "pool.h"

#include "platform.h"

#include <errno.h>
#include <stdlib.h>

#define FC_POOL_MAGIC 0x66635f706f6f6c31ull      /* "fc_pool1" */
#define FC_POOL_HEAD 64                          /* keeps data 64-aligned */
#define FC_POOL_CLASSES 256
#define FC_POOL_HUGE ((size_t)4 << 20)           /* fc_plat_pages_hint_huge */

typedef struct FcPoolHead {
    uint64_t magic;
    size_t cap;                  /* usable bytes after the header */
    int cls;                     /* size class, -1 = malloc()ed */
    int fresh;                   /* never handed out: pages are zero */
    struct FcPoolHead *next;     /* free list link while cached */
} FcPoolHead;

static struct {
    fc_plat_mutex_t lock;
    FcPoolHead *free[FC_POOL_CLASSES];
    size_t cached;               /* bytes on the free lists */
    size_t max_bytes;            /* retention cap */
    int retain;                  /* cache freed blocks at all */
    size_t hits, misses;         /* statistics */
    fc_plat_once_t once;
} fc_pool = {
    .lock = FC_PLAT_MUTEX_INIT,
    .max_bytes = (size_t)1 << 30,
    .once = FC_PLAT_ONCE_INIT,
};

static void fc_pool_prefork(void) { fc_plat_mutex_lock(&fc_pool.lock); }
static void fc_pool_postfork_parent(void) { fc_plat_mutex_unlock(&fc_pool.lock); }

static void
fc_pool_postfork_child(void)
{
    fc_plat_mutex_reset(&fc_pool.lock);
}

static void
fc_pool_init_once(void)
{
    (void)fc_plat_atfork(fc_pool_prefork, fc_pool_postfork_parent,
                         fc_pool_postfork_child);
}

/* Size class of a request and its capacity (4 classes per power of two
   above FC_POOL_MIN).  class | -1 when too small to pool */
static int
fc_pool_class(size_t n, size_t *cap)
{
    if (n < FC_POOL_MIN) {
        *cap = n;
        return -1;
    }
    int lg = 63 - fc_plat_clz64((uint64_t)n);      /* 2^lg <= n */
    size_t base = (size_t)1 << lg, step = base >> 2;
    size_t k = (n - base + step - 1) / step;                   /* 0..4 */
    *cap = base + k * step;
    int cls = (lg - 20) * 4 + (int)k;
    if (cls >= FC_POOL_CLASSES) {
        return -1;
    }
    return cls;
}

static void
fc_pool_unmap(FcPoolHead *h)
{
    if (h->cls < 0) {
        free(h);
    }
    else {
        fc_plat_pages_free(h, h->cap + FC_POOL_HEAD);
    }
}

/* A block of at least n usable bytes.  data pointer | NULL (errno) */
FC_INTERNAL void *
fc_pool_alloc(size_t n, int *zeroed)
{
    size_t cap;
    if (n > SIZE_MAX - 2 * FC_POOL_HEAD - (SIZE_MAX >> 3)) {
        errno = ENOMEM;
        return NULL;
    }
    int cls = fc_pool_class(n ? n : 1, &cap);
    FcPoolHead *h = NULL;
    if (cls >= 0) {
        fc_plat_mutex_lock(&fc_pool.lock);
        h = fc_pool.free[cls];
        if (h != NULL) {
            fc_pool.free[cls] = h->next;
            fc_pool.cached -= h->cap;
            fc_pool.hits++;
        }
        else {
            fc_pool.misses++;
        }
        fc_plat_mutex_unlock(&fc_pool.lock);
        if (h == NULL) {
            void *p = fc_plat_pages_alloc(cap + FC_POOL_HEAD);
            if (p == NULL) {
                return NULL;
            }
            if (cap >= FC_POOL_HUGE) {
                fc_plat_pages_hint_huge(p, cap + FC_POOL_HEAD);
            }
            h = p;
            h->fresh = 1;
        }
        else {
            h->fresh = 0;
        }
    }
    else {
        h = malloc(cap + FC_POOL_HEAD);
        if (h == NULL) {
            return NULL;
        }
        h->fresh = 0;
    }
    h->magic = FC_POOL_MAGIC;
    h->cap = cap;
    h->cls = cls;
    h->next = NULL;
    if (zeroed != NULL) {
        *zeroed = h->fresh;
    }
    return (char *)h + FC_POOL_HEAD;
}

static FcPoolHead *
fc_pool_head(void *p)
{
    return (FcPoolHead *)((char *)p - FC_POOL_HEAD);
}

/* Give a block back: cached when allowed and within the cap, else
   returned to the system. */
FC_INTERNAL void
fc_pool_free(void *p)
{
    if (p == NULL) {
        return;
    }
    FcPoolHead *h = fc_pool_head(p);
    if (h->cls >= 0) {
        fc_plat_mutex_lock(&fc_pool.lock);
        if (fc_pool.retain && fc_pool.cached + h->cap <= fc_pool.max_bytes) {
            h->next = fc_pool.free[h->cls];
            fc_pool.free[h->cls] = h;
            fc_pool.cached += h->cap;
            h = NULL;
        }
        fc_plat_mutex_unlock(&fc_pool.lock);
    }
    if (h != NULL) {
        h->magic = 0;
        fc_pool_unmap(h);
    }
}

/* Usable capacity of a block of ours. */
FC_INTERNAL size_t
fc_pool_capacity(void *p)
{
    return fc_pool_head(p)->cap;
}

/* realloc: in place while the block is big enough.  data | NULL (the old
   block stays valid) */
FC_INTERNAL void *
fc_pool_realloc(void *p, size_t n)
{
    if (p == NULL) {
        return fc_pool_alloc(n, NULL);
    }
    size_t cap = fc_pool_capacity(p);
    size_t want;
    int cls = fc_pool_class(n ? n : 1, &want);
    if (n <= cap && (cls < 0 || want == cap)) {
        return p;
    }
    void *q = fc_pool_alloc(n, NULL);
    if (q == NULL) {
        return NULL;
    }
    memcpy(q, p, n < cap ? n : cap);
    fc_pool_free(p);
    return q;
}

/* Release every cached block.  bytes released */
FC_INTERNAL size_t
fc_pool_trim(void)
{
    FcPoolHead *all = NULL;
    size_t bytes;
    fc_plat_mutex_lock(&fc_pool.lock);
    bytes = fc_pool.cached;
    for (int i = 0; i < FC_POOL_CLASSES; i++) {
        FcPoolHead *h = fc_pool.free[i];
        while (h != NULL) {
            FcPoolHead *next = h->next;
            h->next = all;
            all = h;
            h = next;
        }
        fc_pool.free[i] = NULL;
    }
    fc_pool.cached = 0;
    fc_plat_mutex_unlock(&fc_pool.lock);
    while (all != NULL) {
        FcPoolHead *next = all->next;
        all->magic = 0;
        fc_pool_unmap(all);
        all = next;
    }
    return bytes;
}

/* Turn retention on/off and set its cap; blocks over the new cap are
   released.  Call with the GIL held (configure()). */
FC_INTERNAL void
fc_pool_configure(int retain, size_t max_bytes)
{
    fc_plat_once(&fc_pool.once, fc_pool_init_once);
    fc_plat_mutex_lock(&fc_pool.lock);
    fc_pool.retain = retain;
    fc_pool.max_bytes = max_bytes;
    int over = !retain || fc_pool.cached > max_bytes;
    fc_plat_mutex_unlock(&fc_pool.lock);
    if (over) {
        (void)fc_pool_trim();
    }
}

/* Snapshot of the statistics for backends(). */
FC_INTERNAL void
fc_pool_stats(size_t *cached, size_t *max_bytes, size_t *hits, size_t *misses)
{
    fc_plat_mutex_lock(&fc_pool.lock);
    *cached = fc_pool.cached;
    *max_bytes = fc_pool.max_bytes;
    *hits = fc_pool.hits;
    *misses = fc_pool.misses;
    fc_plat_mutex_unlock(&fc_pool.lock);
}
