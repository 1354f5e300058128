/*
 * arenas.c: configure(keep_arenas=N), empty object arenas kept for reuse.
 *
 * Why: CPython's small-object allocator (pymalloc) takes memory from the
 * system an arena (1 MiB from 3.10) at a time and hands an arena back as
 * soon as its last object is freed.  A program that deep-copies a big
 * structure and drops the copy, again and again (checkpoints, replay
 * buffers, rollbacks), maps fresh arenas for every copy: the kernel
 * faults and zeroes each 4 KiB page on first touch.  On the scale
 * benchmark's records that is most of what a copy costs beyond the first
 * ten thousand records (docs/scale.md, "Fresh arenas"): 0.12 faults and
 * ~300 ns of system time a record at 1M, as much for the memo-free floor.
 * Kept arenas are already faulted, and reused without a system call.
 *
 * How: PyObject_SetArenaAllocator, the documented hook of pymalloc
 * (Doc/c-api/memory.rst, "Customize pymalloc Arena Allocator").  The
 * allocator installed here passes through to the one it replaced, whose
 * alloc made every arena, kept or not: an arena freed while the cap has
 * room goes on a LIFO list (the most recently used pages first) instead
 * of to the previous free; alloc takes from that list first.  So every
 * arena ends in the free of the allocator that made it, whatever is
 * installed or uninstalled around this one, and lowering the cap only
 * hands arenas back sooner.  pymalloc does not rely on an arena's bytes:
 * the default allocator of other systems is malloc().
 *
 * Invariants:
 *   - fc_arenas.kept == the sum of the sizes on both lists <= the cap at the
 *     moment each arena was kept;
 *   - the lists, the cap and the counters are read and written under
 *     fc_arenas.lock, always (one lock a MiB of objects, or a memo table
 *     of 2 MiB): pymalloc calls the arena allocator with its interpreter's
 *     lock held, 3.12+'s interpreters with a GIL of their own share it,
 *     and free-threaded builds' memo tables come from any thread;
 *   - installed once and never removed (an extension module that
 *     replaced it meanwhile may chain to it): state is static, usable
 *     before and after any interpreter;
 *   - fork: the lock is held around fork() and reset in the child, as
 *     pool.c's.
 * The memo's tables of 2 MiB and more (memo.c's fc_block_*: system pages)
 * are kept under the same cap, on a list of their own, freed first when
 * the cap comes down.  Free-threaded builds allocate objects with
 * mimalloc, which does not use the arena allocator: there only those
 * tables are kept.
 */
#include "fastcopy.h"
#include "arenas.h"

#include "platform.h"

/* the list's link, in the first bytes of a kept arena (pymalloc is done
   with all of them) */
typedef struct FcKeptArena {
    struct FcKeptArena *next;
    size_t size;
} FcKeptArena;

static struct {
    fc_plat_mutex_t lock;
    PyObjectArenaAllocator prev;   /* what this one replaced */
    int installed;
    FcKeptArena *list;
    FcKeptArena *blocks;           /* the memo's big tables (memo.c) */
    size_t limit;                  /* bytes of empty arenas kept at most */
    size_t kept;                   /* bytes on both lists */
    size_t reused, released;       /* statistics: arenas and blocks */
    fc_plat_once_t once, install;
} fc_arenas = {
    .lock = FC_PLAT_MUTEX_INIT,
    .once = FC_PLAT_ONCE_INIT,
    .install = FC_PLAT_ONCE_INIT,
};

static void fc_arenas_prefork(void) { fc_plat_mutex_lock(&fc_arenas.lock); }
static void fc_arenas_postfork_parent(void) { fc_plat_mutex_unlock(&fc_arenas.lock); }
static void fc_arenas_postfork_child(void) { fc_plat_mutex_reset(&fc_arenas.lock); }

static void
fc_arenas_init_once(void)
{
    (void)fc_plat_atfork(fc_arenas_prefork, fc_arenas_postfork_parent,
                         fc_arenas_postfork_child);
}

/* Keep a at the head of *list when the cap has room.  1 kept | 0 */
static int
fc_arenas_push(FcKeptArena **list, void *p, size_t size)
{
    int kept = 0;
    fc_plat_mutex_lock(&fc_arenas.lock);
    if (fc_arenas.kept <= fc_arenas.limit && size <= fc_arenas.limit - fc_arenas.kept) {
        FcKeptArena *a = (FcKeptArena *)p;
        a->next = *list;
        a->size = size;
        *list = a;
        fc_arenas.kept += size;
        kept = 1;
    }
    fc_plat_mutex_unlock(&fc_arenas.lock);
    return kept;
}

/* A kept block of exactly size bytes from *list, taken off it | NULL */
static void *
fc_arenas_pop(FcKeptArena **list, size_t size)
{
    fc_plat_mutex_lock(&fc_arenas.lock);
    FcKeptArena **pp = list;
    while (*pp != NULL && (*pp)->size != size) {
        pp = &(*pp)->next;
    }
    FcKeptArena *a = *pp;
    if (a != NULL) {
        *pp = a->next;
        fc_arenas.kept -= size;
        fc_arenas.reused++;
    }
    fc_plat_mutex_unlock(&fc_arenas.lock);
    return a;
}

FC_INTERNAL void *
fc_arenas_take_block(size_t size)
{
    return fc_arenas_pop(&fc_arenas.blocks, size);
}

FC_INTERNAL int
fc_arenas_keep_block(void *p, size_t size)
{
    return fc_arenas_push(&fc_arenas.blocks, p, size);
}

#if !FC_FT
/* An arena of size bytes: a kept one of that size, else the previous
   allocator's.  NULL: none (pymalloc reports the MemoryError) */
static void *
fc_arenas_alloc(void *ctx, size_t size)
{
    (void)ctx;
    void *a = fc_arenas_pop(&fc_arenas.list, size);
    return a != NULL ? a : fc_arenas.prev.alloc(fc_arenas.prev.ctx, size);
}

/* pymalloc is done with the arena at p: kept while the cap has room, else
   the previous allocator's free. */
static void
fc_arenas_free(void *ctx, void *p, size_t size)
{
    (void)ctx;
    if (size < sizeof(FcKeptArena) || !fc_arenas_push(&fc_arenas.list, p, size)) {
        fc_arenas.prev.free(fc_arenas.prev.ctx, p, size);
    }
}

/* Once a process, whichever interpreter asks first (two installing at
   once would each pass through to the other). */
static void
fc_arenas_install_once(void)
{
    PyObjectArenaAllocator mine = {NULL, fc_arenas_alloc, fc_arenas_free};
    PyObject_GetArenaAllocator(&fc_arenas.prev);
    PyObject_SetArenaAllocator(&mine);
    fc_plat_mutex_lock(&fc_arenas.lock);
    fc_arenas.installed = 1;
    fc_plat_mutex_unlock(&fc_arenas.lock);
}
#endif

/* Hand kept arenas back until at most keep bytes are kept, the memo's
   blocks first (a copy needs them only past some size).  bytes released */
static size_t
fc_arenas_shrink(size_t keep)
{
    size_t n = 0;
    for (;;) {
        fc_plat_mutex_lock(&fc_arenas.lock);
        FcKeptArena *a = NULL;
        int block = fc_arenas.blocks != NULL;
        if (fc_arenas.kept > keep) {
            FcKeptArena **list = block ? &fc_arenas.blocks : &fc_arenas.list;
            a = *list;
            *list = a->next;
            fc_arenas.kept -= a->size;
            fc_arenas.released++;
        }
        fc_plat_mutex_unlock(&fc_arenas.lock);
        if (a == NULL) {
            return n;
        }
        size_t size = a->size;
        n += size;
        if (block) {
            fc_plat_pages_free(a, size);
        }
        else {
            fc_arenas.prev.free(fc_arenas.prev.ctx, a, size);
        }
    }
}

FC_INTERNAL void
fc_arenas_set_limit(size_t limit)
{
    fc_plat_once(&fc_arenas.once, fc_arenas_init_once);
#if !FC_FT
    if (limit > 0) {
        fc_plat_once(&fc_arenas.install, fc_arenas_install_once);
    }
#endif
    fc_plat_mutex_lock(&fc_arenas.lock);
    fc_arenas.limit = limit;
    fc_plat_mutex_unlock(&fc_arenas.lock);
    (void)fc_arenas_shrink(limit);
}

FC_INTERNAL size_t
fc_arenas_trim(void)
{
    return fc_arenas_shrink(0);
}

FC_INTERNAL PyObject *
fc_arenas_stats(void)
{
    fc_plat_mutex_lock(&fc_arenas.lock);
    size_t limit = fc_arenas.limit, kept = fc_arenas.kept;
    size_t reused = fc_arenas.reused, released = fc_arenas.released, blocks = 0;
    int installed = fc_arenas.installed;
    for (FcKeptArena *a = fc_arenas.blocks; a != NULL; a = a->next) {
        blocks += a->size;
    }
    fc_plat_mutex_unlock(&fc_arenas.lock);
    return Py_BuildValue("{s:i,s:n,s:n,s:n,s:n,s:n}",
                         "installed", installed,
                         "limit", (Py_ssize_t)limit, "kept", (Py_ssize_t)kept,
                         "kept_blocks", (Py_ssize_t)blocks,
                         "reused", (Py_ssize_t)reused,
                         "released", (Py_ssize_t)released);
}
