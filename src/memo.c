/*
 * memo.c: the deepcopy memo, native while nobody can see it.
 *
 * The stdlib's memo is a dict {id(original): copy} plus a keep-alive list
 * stored under memo[id(memo)], to which every original whose copy is not
 * itself is appended when its deepcopy() call returns (post-order).  Python
 * code can observe it only if it is handed the dict: a __deepcopy__ hook, a
 * copier registered in copy._deepcopy_dispatch, the stdlib's _reconstruct
 * (our fallback for malformed reduce values), or the caller, who passed it.
 *
 * So the memo has two representations, and a call uses one at a time:
 *
 *   NATIVE   an insertion-ordered array of (original pointer, copy) pairs,
 *            indexed by an open-addressing table of int32 positions (hash of
 *            the address, as _pickle's PyMemoTable), and an array of
 *            keep-alive references.  No int objects, no dict.  Small copies
 *            use FC_MEMO_INLINE entries inside the call's context and never
 *            touch the heap; the table is emptied when the call returns (its
 *            blocks, up to 1 MiB, are kept for the next big copy: "Spare
 *            buffers" below), so a big copy never slows a later small one.
 *
 *   DICT / MAPPING   the Python object itself is the only truth.  Every
 *            lookup and store goes through it (PyDict_* for an exact dict,
 *            .get / [] / []= for subclasses and other mappings, as the stdlib
 *            does), so hooks that read, add or delete entries are seen at
 *            once and see every entry.
 *
 * The switch NATIVE -> DICT happens once per call, the first time a hook is
 * about to see the memo ("exposure").  Materialising replays the native
 * state in its original order: entries in insertion order, with the
 * keep-alive list inserted at the position where the stdlib's first
 * _keep_alive() call would have created it.  Native stores never change an
 * existing value (the stdlib re-stores the same copy), so insertion order is
 * all there is to replay.  After exposure the call stays in DICT mode: the
 * hook may have kept a reference and change the dict at any later time.
 *
 * Invariant: every key of the native table is the address of an object
 * that stays alive until the call ends (held by the source graph, by a
 * frame, or by the keep-alive array), so addresses cannot be reused within
 * one call.  That is the same argument the stdlib makes for id() keys.
 */
#include "fastcopy.h"
#include "memo.h"
#include "watch.h"
#include "state.h"
#include "platform.h"
#include "arenas.h"

/* ------------------------------------------------------------------ */
/* Spare buffers                                                       */
/* ------------------------------------------------------------------ */

/* A call that outgrows its inline arrays (frames, memo entries, index,
   keep-alive) used to malloc them and grow them by realloc, copying each
   time, then free them on return: for a 400-level chain that was a sixth
   of the walker's own cost.  The largest block of each kind, up to
   FC_SPARE_MAX bytes, is now kept in the module state for the next call.
   Only the buffers are kept, never their contents (the memo is still
   empty at the start of every call), and small copies never touch them.
   A hook's nested deepcopy() finds the slot empty (the outer call holds
   the buffer) and allocates its own.  Free-threaded builds keep nothing:
   the state is shared between threads.  1 MiB (64K entries; 5 MiB kept
   at most): a 10,000-object copy (set_records) spent 8% of its
   instructions regrowing 64 KiB blocks.  A big spare does not slow a
   small copy: the index is sized by the entries in use, not by the
   capacity of the entries block, and only its used part is cleared. */
#define FC_SPARE_MAX ((size_t)1 << 20)

/* Big blocks.  The memo's entries, index and keep-alive array (and the
   list of copies hidden from the collector) of a big copy are megabytes:
   14 MiB for 100,000 records.  malloc hands blocks that big out of fresh
   mappings and unmaps them on free, so every big copy faulted its tables
   in 4 KiB at a time: 0.14 page faults a record against the memo-free
   floor's 0.11, and 360 ns of system time a record against 260 (100,000
   records, collector off).  From FC_BLOCK_BIG bytes they are pages from
   the system advised as huge (transparent huge pages where the kernel
   takes advice: a fault per 2 MiB), grown by moving the pages.  A block's
   size says where it came from, so each is freed with the size it was
   allocated or last grown with. */
#define FC_BLOCK_BIG ((size_t)2 << 20)

static size_t
fc_block_len(size_t n)
{
    return (n + FC_BLOCK_BIG - 1) & ~(FC_BLOCK_BIG - 1);
}

/* n bytes (zeroed if zero).  memory | NULL, no exception */
static void *
fc_block_alloc(size_t n, int zero)
{
    /* what a spare slot keeps is below it: a PyMem_* block, whoever made it */
    Py_BUILD_ASSERT(FC_SPARE_MAX < FC_BLOCK_BIG);
    if (n < FC_BLOCK_BIG) {
        return zero ? PyMem_Calloc(1, n) : PyMem_Malloc(n);
    }
    /* configure(keep_arenas=): a table of the last big copy, faulted in */
    void *p = fc_arenas_take_block(fc_block_len(n));
    if (p != NULL) {
        if (zero) {
            memset(p, 0, n);
        }
        return p;
    }
    p = fc_plat_pages_alloc(fc_block_len(n));
    if (p != NULL) {
        fc_plat_pages_hint_huge(p, fc_block_len(n));
    }
    return p;
}

/* Give back p, allocated (or last grown) with n bytes; NULL: nothing. */
static void
fc_block_free(void *p, size_t n)
{
    if (p == NULL) {
        return;
    }
    if (n < FC_BLOCK_BIG) {
        PyMem_Free(p);
    }
    else if (!fc_arenas_keep_block(p, fc_block_len(n))) {
        fc_plat_pages_free(p, fc_block_len(n));
    }
}

/* p of n bytes (NULL and 0: none yet) grown to n2 > n, its contents
   kept.  memory | NULL, no exception (p is still p) */
static void *
fc_block_realloc(void *p, size_t n, size_t n2)
{
    if (n2 < FC_BLOCK_BIG) {
        return PyMem_Realloc(p, n2);
    }
    if (n < FC_BLOCK_BIG) {
        void *q = fc_block_alloc(n2, 0);
        if (q != NULL && p != NULL) {
            memcpy(q, p, n);
            PyMem_Free(p);
        }
        return q;
    }
    if (fc_block_len(n2) == fc_block_len(n)) {
        return p;
    }
    /* a kept block of the new size is already faulted in: the copy of the
       old contents costs less than faulting in the grown part */
    void *q = fc_arenas_take_block(fc_block_len(n2));
    if (q != NULL) {
        memcpy(q, p, n);
        fc_block_free(p, n);
        return q;
    }
    q = fc_plat_pages_grow(p, fc_block_len(n), fc_block_len(n2));
    if (q != NULL) {
        fc_plat_pages_hint_huge(q, fc_block_len(n2));
    }
    return q;
}

/* An array p of *cap elements of elsize bytes, grown to ncap > *cap: p is
   either inl, an inline array (or NULL for none) holding `used` elements,
   which are copied into spare buffer `slot` of sp if it is big enough
   (sp NULL: none) or a fresh block; or a block from here, grown in place
   or moved.  *cap is set on success.  the array | NULL+exc (MemoryError;
   p and *cap unchanged) */
static void *
fc_block_grow(FcSpare *sp, int slot, void *p, const void *inl, Py_ssize_t used,
              size_t elsize, Py_ssize_t *cap, Py_ssize_t ncap)
{
    void *q;
    if (p == inl) {
        size_t got;
        q = sp != NULL ? fc_spare_take(sp, slot, elsize * (size_t)ncap, &got) : NULL;
        if (q != NULL) {
            ncap = (Py_ssize_t)(got / elsize);
        }
        else {
            q = fc_block_alloc(elsize * (size_t)ncap, 0);
        }
        if (q != NULL && used > 0) {
            memcpy(q, inl, elsize * (size_t)used);
        }
    }
    else {
        q = fc_block_realloc(p, elsize * (size_t)*cap, elsize * (size_t)ncap);
    }
    if (q == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    *cap = ncap;
    return q;
}

/* Take spare buffer `slot` if it holds at least `want` bytes (*size: how
   many).  buffer | NULL */
FC_INTERNAL_INLINE void *
fc_spare_take(FcSpare *sp, int slot, size_t want, size_t *size)
{
    if (sp == NULL || sp->p[slot] == NULL || sp->size[slot] < want) {
        return NULL;
    }
    void *p = sp->p[slot];
    *size = sp->size[slot];
    sp->p[slot] = NULL;
    return p;
}

/* Done with buffer p of `size` bytes: keep the larger of it and the spare
   already there, free the other. */
FC_INTERNAL void
fc_spare_give(FcSpare *sp, int slot, void *p, size_t size)
{
    if (sp != NULL && size <= FC_SPARE_MAX
        && (sp->p[slot] == NULL || sp->size[slot] < size)) {
        PyMem_Free(sp->p[slot]);        /* kept ones are all PyMem_* blocks */
        sp->p[slot] = p;
        sp->size[slot] = size;
        return;
    }
    if (slot == FC_SPARE_ENTRIES || slot == FC_SPARE_INDEX || slot == FC_SPARE_KEEP
        || slot == FC_SPARE_GHOST) {
        fc_block_free(p, size);         /* the memo's own: fc_block_alloc's */
    }
    else {
        PyMem_Free(p);
    }
}

FC_INTERNAL void
fc_spare_free(FcSpare *sp)
{
    for (int i = 0; i < FC_SPARE__COUNT; i++) {
        PyMem_Free(sp->p[i]);
        sp->p[i] = NULL;
    }
}

/* ------------------------------------------------------------------ */
/* The native table                                                    */
/* ------------------------------------------------------------------ */

/* When misses are proven ("Proven misses" below): from an index of 2^14
   slots (64 KiB, some 4K entries), where its probes leave the first-level
   cache and the walker's own data pushes the index out of the second
   (lists of 3,000-30,000 records: 1.08-1.33x faster than from 2^17; trees
   and dicts of lists up to 1.2x) -- unless the copy keeps catching up a
   few entries at a time (shared references met every few objects:
   FC_THIN_CATCH), where an entry indexed later costs the probe its lookup
   saved plus a pass (tuples of two shared containers: 9% more of our
   instructions).  Such a copy proves misses from 2^17 slots (512 KiB, 64K
   entries), past the caches, as before. */
#define FC_PROVEN_MIN_MASK (((Py_ssize_t)1 << 14) - 1)
#define FC_PROVEN_FAR_MASK (((Py_ssize_t)1 << 17) - 1)
/* A copy catches up thinly when, after FC_THIN_CATCH_PASSES catch-up
   passes below FC_PROVEN_FAR_MASK, they indexed fewer than FC_THIN_CATCH
   entries each on average */
#define FC_THIN_CATCH 4
#define FC_THIN_CATCH_PASSES 64

FC_INLINE size_t
fc_memo_hash(PyObject *p)
{
    uint64_t h = (uint64_t)(uintptr_t)p >> 4;
    h *= 0x9E3779B97F4A7C15ull;
    return (size_t)(h ^ (h >> 29));
}

FC_INTERNAL void
fc_memo_init(FcMemo *m)
{
    m->entries = m->small;
    m->n = 0;
    m->cap = FC_MEMO_INLINE;
    m->index = NULL;
    m->mask = 0;
    m->keep = m->small_keep;
    m->nkeep = 0;
    m->capkeep = FC_MEMO_INLINE;
    m->keep_pos = -1;
    m->index_slots = 0;
    m->nidx = 0;
    m->ghost = NULL;
    m->nghost = m->capghost = 0;
    m->grave = NULL;
    m->hits = 0;
    m->miss = NULL;
    m->miss_slot = 0;
    m->spare = NULL;
    m->mirror = NULL;
    m->mirror_keep = NULL;
    m->mir_n = m->mir_keep = 0;
    m->mir_ver = 0;
    m->mir_wid = -1;
    m->mir_watched = 0;
    m->dict_truth = 0;
    m->adopted = 0;
    m->foreign = 0;
    m->mkeys = NULL;
    m->capmkeys = 0;
    m->scanned = 0;
    m->mir_len = m->mir_keep_len = 0;
    m->mirror_id = NULL;
    m->sub_key = NULL;
    m->sub = NULL;
    m->sub_pos = -1;
    m->sub_first = 0;
    m->sub_in_mirror = 0;
    m->subs = m->small_subs;
    m->nsubs = 0;
    m->capsubs = FC_MEMO_SUBS_INLINE;
    m->sub_off = 0;
}

static void fc_ghost_release(FcMemo *m);

FC_INTERNAL void
fc_memo_clear(FcMemo *m)
{
    FcSpare *sp = m->spare;
    if (m->n == 0 && m->nkeep == 0 && m->entries == m->small && m->keep == m->small_keep
        && m->index == NULL && m->ghost == NULL && m->mirror == NULL
        && m->mirror_keep == NULL && m->grave == NULL && m->mkeys == NULL
        && m->mirror_id == NULL && m->sub == NULL && m->subs == m->small_subs) {
        /* nothing held (a nested call's table went back to its lender):
           only the scalars to reset */
        m->keep_pos = -1;
        m->nidx = 0;
        m->miss = NULL;
        m->mir_n = m->mir_keep = 0;
        m->mir_ver = 0;
        m->dict_truth = 0;
        m->adopted = m->foreign = 0;
        m->scanned = m->mir_len = m->mir_keep_len = 0;
        m->nsubs = 0;
        m->sub_off = 0;
        return;
    }
    if (m->mkeys != NULL) {
        for (Py_ssize_t i = 0; i < m->mir_n; i++) {
            Py_XDECREF(m->mkeys[i]);
        }
        PyMem_Free(m->mkeys);
    }
    for (Py_ssize_t i = 0; i < m->n; i++) {
        Py_CLEAR(m->entries[i].value);
    }
    for (Py_ssize_t i = 0; i < m->nkeep; i++) {
        Py_CLEAR(m->keep[i]);
    }
    if (m->ghost != NULL) {
        fc_ghost_release(m);
        fc_spare_give(sp, FC_SPARE_GHOST, m->ghost, sizeof(PyObject *) * (size_t)m->capghost);
    }
    if (m->entries != m->small) {
        fc_spare_give(sp, FC_SPARE_ENTRIES, m->entries,
                      sizeof(FcMemoEntry) * (size_t)m->cap);
    }
    if (m->index != NULL) {
        if (sp != NULL) {
            sp->last_n = m->n;
        }
        fc_spare_give(sp, FC_SPARE_INDEX, m->index,
                      sizeof(int32_t) * (size_t)m->index_slots);
    }
    if (m->keep != m->small_keep) {
        fc_spare_give(sp, FC_SPARE_KEEP, m->keep, sizeof(PyObject *) * (size_t)m->capkeep);
    }
#if FC_MEMO_ABSORB && !FC_HAVE_DICT_VERSION
    if (m->mir_watched && m->mirror != NULL) {
        fc_mirror_unwatch(m->mir_wid, m->mirror);
    }
#endif
    if (m->subs != m->small_subs) {
        PyMem_Free(m->subs);    /* borrowed: their entries hold them */
    }
    int wid = m->mir_wid;
    Py_CLEAR(m->mirror);
    Py_CLEAR(m->mirror_keep);
    Py_CLEAR(m->mirror_id);
    Py_CLEAR(m->grave);
    Py_CLEAR(m->sub);
    Py_CLEAR(m->sub_key);
    fc_memo_init(m);
    m->spare = sp;
    m->mir_wid = wid;
}

/* Rebuild the index for at least `need` entries.  0 | -1+exc */
static int
fc_memo_reindex(FcMemo *m, Py_ssize_t need)
{
    Py_ssize_t size = 16;
    while (size < need * 2) {
        size <<= 1;
    }
    if (size > ((Py_ssize_t)1 << 30)) {
        PyErr_NoMemory();
        return -1;
    }
    /* slots hold position + 1, so a zeroed table is an empty one and big
       tables come from calloc's already-zero pages */
    size_t got, bytes = sizeof(int32_t) * (size_t)size;
    int32_t *idx = fc_spare_take(m->spare, FC_SPARE_INDEX, bytes, &got);
    if (idx != NULL) {
        memset(idx, 0, bytes);
    }
    else {
        idx = fc_block_alloc(bytes, 1);
        if (idx == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        got = bytes;
    }
    size_t mask = (size_t)size - 1;
    for (Py_ssize_t i = 0; i < m->n; i++) {
        if (m->entries[i].key == NULL) {
            continue;                   /* a ghost (below) */
        }
        size_t j = fc_memo_hash(m->entries[i].key) & mask;
        while (idx[j] != 0) {
            j = (j + 1) & mask;
        }
        idx[j] = (int32_t)(i + 1);
    }
    if (m->index != NULL) {
        fc_spare_give(m->spare, FC_SPARE_INDEX, m->index,
                      sizeof(int32_t) * (size_t)m->index_slots);
    }
    else {
        /* the call's first index: nothing reads these before (small
           tables are answered before them, by mask); keys of a caller's
           dict are held by nobody here, so their absence proves nothing */
        m->prove_mask = m->foreign ? PY_SSIZE_T_MAX : FC_PROVEN_MIN_MASK;
        m->ncatch = m->ncaught = 0;
    }
    m->index = idx;
    m->index_slots = (Py_ssize_t)(got / sizeof(int32_t));
    m->mask = (Py_ssize_t)mask;
    m->nidx = m->n;
    return 0;
}

/*
 * Proven misses.  Past a million objects the memo's index outgrows the
 * caches, and its probes -- one random access per lookup, another per
 * store -- became the largest cost of a big copy (a third of the time of
 * a 1M-record list).  Most objects of such data are referenced once, by
 * the container the walker is reading, and such an object cannot be in
 * the memo: every key of the native table is held by a reference the
 * table or the walker owns (the keep-alive array once its copy is done,
 * the frame copying it before that, the grave for a hook's additions:
 * "Invariant" above), so a key in the table has at least one reference
 * besides the container's.  A caller that knows exactly which references
 * it is reading through (fc_memo_get_own: `own` of them, all its own or
 * the source container's, none that can lead the walk back to the key)
 * gets a miss without a probe when the reference count is just that; the
 * store that follows appends the entry without indexing it.  Such entries
 * ([nidx, n)) are indexed in one pass when something needs the index
 * (fc_memo_catch_up): before a probe, or past 2^17 slots only when a
 * lookup's probe misses (fc_memo_get_pending); in a copy where nothing is
 * met twice, never.  Only
 * on builds with the GIL (pyver.h, FC_PROVEN_MISS: free-threaded builds
 * split a count between threads).  3.14's interpreter lends references it
 * does not count, but a key the table holds has the table's reference,
 * which is counted: a borrow can only hide a reference the proof does not
 * need.
 */
#define FC_MEMO_PENDING ((size_t)-1)

/* How many entries to size the index for: as many as the entries block
   holds, as a block grown by doubling would have it -- but a spare block
   can hold 64K entries, and a small copy must not clear an index for all
   of them: at most 4096 or the power of two above the entries in use.
   A call's first index is sized for as many entries as the last call that
   built one ended with, when that call's index is there to take (the
   spare): a copy repeated on like data (a loop, a benchmark, a training
   step) builds its index once instead of doubling it from 4096 entries
   (shared_refs: three builds a copy, 5.5% of our instructions).  A hook's
   nested call while its caller holds that index finds no spare and sizes
   for itself; a smaller copy after a big one clears the big index once,
   and is the hint for the next. */
static Py_ssize_t
fc_memo_index_need(FcMemo *m)
{
    Py_ssize_t need = 4096;
    Py_ssize_t want = m->n;
    if (m->index == NULL && m->spare != NULL && m->spare->last_n > want
        && m->spare->p[FC_SPARE_INDEX] != NULL) {
        want = m->spare->last_n;
    }
    while (need <= want) {
        need <<= 1;
    }
    return need < m->cap ? need : m->cap;
}

/* Index the entries [nidx, n), growing the index first if they need it
   (pending entries never grow it themselves: a copy whose index nothing
   probes never builds it past its first size).  0 | -1+exc (MemoryError:
   nothing changed) */
FC_NOINLINE int
fc_memo_catch_up(FcMemo *m)
{
    if (m->mask < FC_PROVEN_FAR_MASK && m->prove_mask < FC_PROVEN_FAR_MASK) {
        m->ncatch++;
        m->ncaught += m->n - m->nidx;
        if (m->ncatch >= FC_THIN_CATCH_PASSES && m->ncaught < FC_THIN_CATCH * m->ncatch) {
            m->prove_mask = FC_PROVEN_FAR_MASK;     /* thin: as from the start */
        }
    }
    if (m->n * 2 > m->mask) {
        return fc_memo_reindex(m, fc_memo_index_need(m));   /* all of them */
    }
    size_t mask = (size_t)m->mask;
    for (Py_ssize_t i = m->nidx; i < m->n; i++) {
        if (m->entries[i].key == NULL) {
            continue;                   /* a ghost: indexed when filled */
        }
        size_t j = fc_memo_hash(m->entries[i].key) & mask;
        while (m->index[j] != 0) {
            j = (j + 1) & mask;
        }
        m->index[j] = (int32_t)(i + 1);
    }
    m->nidx = m->n;
    return 0;
}

/* The entry of key among the pending ones, read one by one: what a
   lookup does when indexing them failed (out of memory). */
FC_NOINLINE PyObject *
fc_memo_pending_scan(FcMemo *m, PyObject *key)
{
    for (Py_ssize_t i = m->nidx; i < m->n; i++) {
        if (m->entries[i].key == key) {
            return m->entries[i].value;
        }
    }
    return NULL;
}

/* The index's answer for key; a miss is remembered with the slot where it
   goes.  borrowed | NULL */
FC_INLINE PyObject *
fc_memo_probe(FcMemo *m, PyObject *key)
{
    size_t mask = (size_t)m->mask;
    size_t j = fc_memo_hash(key) & mask;
    for (;;) {
        int32_t e = m->index[j];
        if (e == 0) {
            m->miss = key;
            m->miss_slot = j;
            return NULL;
        }
        if (m->entries[e - 1].key == key) {
            m->hits++;
            return m->entries[e - 1].value;
        }
        j = (j + 1) & mask;
    }
}

/* fc_memo_get while entries are pending ("Proven misses" above).

   Past FC_PROVEN_FAR_MASK the index is probed as it is first, and only a
   miss there catches up: a key is in the table at most once (an entry is
   added only for a key that missed -- by a probe, by a proven count, by a
   tuple's scan of the entries since its frame began -- or for a ghost's
   temporary, made after every key it could meet; a hook's additions go
   through fc_memo_set, which replaces), so a key found indexed is not
   also pending, and a hit needs none of them.  A copy whose objects met
   twice were all indexed when first met -- a few hubs every node points
   to -- then never indexes the entries it proved fresh: out of the
   caches, each would have cost a miss.  Below it the pending entries are
   indexed before the probe, as FC_THIN_CATCH was measured with: an index
   in the caches indexes them cheaply, and a copy that catches up thinly
   -- a shared object met every few new ones -- is told from one that
   proves misses usefully by the passes its lookups make.  (Probing first
   there too, the realistic datetime records, whose shared time zones are
   hits, no longer looked thin, kept proving and caught up at each reduce
   value instead: +5% of our instructions.)  If indexing cannot allocate,
   the pending entries are read one by one. */
FC_NOINLINE PyObject *
fc_memo_get_pending(FcMemo *m, PyObject *key)
{
    if (m->mask >= FC_PROVEN_FAR_MASK) {
        PyObject *v = fc_memo_probe(m, key);
        if (v != NULL) {
            return v;
        }
    }
    if (fc_memo_catch_up(m) < 0) {
        /* a lookup cannot fail */
        PyErr_Clear();
        m->miss = NULL;         /* no slot to remember */
        return fc_memo_pending_scan(m, key);
    }
    return fc_memo_probe(m, key);
}

/* borrowed copy | NULL (missing; never an error).  A miss is remembered:
   the walker usually looks the same object up again when it enters it,
   and then stores its copy (fc_memo_missed, fc_memo_set). */
FC_INTERNAL_INLINE PyObject *
fc_memo_get(FcMemo *m, PyObject *key)
{
    if (m->mask == 0) {
        for (Py_ssize_t i = 0; i < m->n; i++) {
            if (m->entries[i].key == key) {
                m->hits++;
                return m->entries[i].value;
            }
        }
        m->miss = key;
        return NULL;
    }
    if (FC_UNLIKELY(m->nidx != m->n)) {
        return fc_memo_get_pending(m, key);
    }
    return fc_memo_probe(m, key);
}


/* Did this call go back to proving misses from 2^17 slots (FC_THIN_CATCH)?
   Read by the tests' counter.  1 | 0 */
FC_INTERNAL int
fc_memo_caught_thinly(FcMemo *m)
{
    return m->index != NULL && m->prove_mask == FC_PROVEN_FAR_MASK;
}

/* Are proven misses in use for this table now?  1 | 0 */
FC_INTERNAL_INLINE int
fc_memo_proving(FcMemo *m)
{
    /* the constant first: a small table's answer costs no load */
    return FC_PROVEN_MISS && m->mask >= FC_PROVEN_MIN_MASK && m->mask >= m->prove_mask;
}

/* fc_memo_get_own's proof alone.  1 key is proven missing (the miss is
   remembered) | 0 proven misses are in use and key's count proves nothing
   | -1 they are not in use, or own is 0 */
FC_INTERNAL_INLINE int
fc_memo_prove_miss(FcMemo *m, PyObject *key, Py_ssize_t own)
{
#if FC_PROVEN_MISS
    if (own != 0 && fc_memo_proving(m)) {
        if (Py_REFCNT(key) != own) {
            return 0;
        }
        m->miss = key;
        m->miss_slot = FC_MEMO_PENDING;
        return 1;
    }
#else
    (void)m;
    (void)key;
    (void)own;
#endif
    return -1;
}

/* fc_memo_get for a key the caller reads through `own` references it
   knows (0: none it can vouch for): "Proven misses" above. */
FC_INTERNAL_INLINE PyObject *
fc_memo_get_own(FcMemo *m, PyObject *key, Py_ssize_t own)
{
    return fc_memo_prove_miss(m, key, own) > 0 ? NULL : fc_memo_get(m, key);
}

/* Was key the last lookup, a miss, with nothing inserted since? */
FC_INTERNAL_INLINE int
fc_memo_missed(FcMemo *m, PyObject *key)
{
    return m->miss == key;
}

/* Room for one more entry.  0 | -1+exc */
static int
fc_memo_grow(FcMemo *m)
{
    Py_ssize_t ncap = m->entries == m->small ? 128 : m->cap * 2;
    if (ncap > INT32_MAX) {
        PyErr_NoMemory();
        return -1;
    }
    FcMemoEntry *ne = fc_block_grow(m->spare, FC_SPARE_ENTRIES, m->entries, m->small, m->n,
                                    sizeof(FcMemoEntry), &m->cap, ncap);
    if (ne == NULL) {
        return -1;
    }
    m->entries = ne;
    return 0;
}

static int fc_memo_replace(FcMemo *m, Py_ssize_t pos, PyObject *value);

/* key -> value (a new reference) as the last entry, not indexed; the
   pending miss is forgotten.  its position | -1+exc */
static Py_ssize_t
fc_memo_append(FcMemo *m, PyObject *key, PyObject *value)
{
    if (m->n == m->cap && fc_memo_grow(m) < 0) {
        return -1;
    }
    m->miss = NULL;
    Py_ssize_t pos = m->n++;
    m->entries[pos].key = key;
    m->entries[pos].value = Py_NewRef(value);
    return pos;
}

/* fc_memo_set, every case.  0 | -1+exc */
static int
fc_memo_set_slow(FcMemo *m, PyObject *key, PyObject *value)
{
    size_t j = 0;
    if (m->miss == key && m->miss_slot == FC_MEMO_PENDING && m->mask != 0) {
        /* a proven miss: appended, not indexed (the index grows when it is
           caught up) */
        return fc_memo_append(m, key, value) < 0 ? -1 : 0;
    }
    if (m->mask != 0 && m->nidx != m->n && fc_memo_catch_up(m) < 0) {
        return -1;
    }
    if (m->miss == key && m->miss_slot != FC_MEMO_PENDING) {
        j = m->miss_slot;
    }
    else if (m->mask == 0) {
        for (Py_ssize_t i = 0; i < m->n; i++) {
            if (m->entries[i].key == key) {
                return fc_memo_replace(m, i, value);
            }
        }
    }
    else {
        size_t mask = (size_t)m->mask;
        j = fc_memo_hash(key) & mask;
        for (;;) {
            int32_t e = m->index[j];
            if (e == 0) {
                break;
            }
            if (m->entries[e - 1].key == key) {
                return fc_memo_replace(m, e - 1, value);
            }
            j = (j + 1) & mask;
        }
    }
    Py_ssize_t pos = fc_memo_append(m, key, value);
    if (pos < 0) {
        return -1;
    }
    m->nidx = m->n;
    if (m->mask != 0 && m->n * 2 <= m->mask) {
        m->index[j] = (int32_t)(pos + 1);   /* the free slot found above */
        return 0;
    }
    if (m->mask != 0 || m->n > FC_MEMO_INLINE) {
        if (fc_memo_reindex(m, fc_memo_index_need(m)) < 0) {
            m->n--;
            m->nidx = m->n;
            Py_DECREF(m->entries[pos].value);
            return -1;
        }
    }
    return 0;
}

/* memo[id(key)] = value (value borrowed, a new reference is taken).
   At most one probe: the slot where the key is, or where it goes -- none
   when the key's own lookup just missed.  0 | -1+exc */
FC_INTERNAL_INLINE int
fc_memo_set(FcMemo *m, PyObject *key, PyObject *value)
{
    /* the usual store: right after the key's lookup missed, with room in
       both the entries and the index (what fc_memo_set_slow would do) */
    if (FC_LIKELY(m->miss == key && m->mask != 0 && m->n < m->cap
                  && ((m->n + 1) * 2 <= m->mask || m->miss_slot == FC_MEMO_PENDING))) {
        Py_ssize_t pos = m->n++;
        m->miss = NULL;
        m->entries[pos].key = key;
        m->entries[pos].value = Py_NewRef(value);
        if (m->miss_slot != FC_MEMO_PENDING) {
            /* a probe's miss: nothing was appended since, none pending */
            FC_ASSERT(m->nidx == pos);
            m->index[m->miss_slot] = (int32_t)(pos + 1);
            m->nidx = m->n;
        }
        return 0;
    }
    return fc_memo_set_slow(m, key, value);
}

/* The keep-alive array grown (doubled, or out of the inline one).
   0 | -1+exc */
static int
fc_memo_keep_grow(FcMemo *m)
{
    Py_ssize_t ncap = m->keep == m->small_keep ? 128 : m->capkeep * 2;
    PyObject **nk = fc_block_grow(m->spare, FC_SPARE_KEEP, m->keep, m->small_keep, m->nkeep,
                                  sizeof(PyObject *), &m->capkeep, ncap);
    if (nk == NULL) {
        return -1;
    }
    m->keep = nk;
    return 0;
}

/* Room for one more keep-alive, and keep_pos set if this is the first.
   0 | -1+exc */
static int
fc_memo_keep_room(FcMemo *m)
{
    if (m->keep_pos < 0) {
        m->keep_pos = m->n;
    }
    if (m->nkeep == m->capkeep && fc_memo_keep_grow(m) < 0) {
        return -1;
    }
    return 0;
}

/* fc_memo_keep, every case.  0 | -1+exc */
static int
fc_memo_keep_slow(FcMemo *m, PyObject *x)
{
    if (fc_memo_keep_room(m) < 0) {
        return -1;
    }
    m->keep[m->nkeep++] = Py_NewRef(x);
    return 0;
}

/* _keep_alive(x): a new reference to x.  0 | -1+exc */
FC_INLINE int
fc_memo_keep(FcMemo *m, PyObject *x)
{
    if (FC_LIKELY(m->keep_pos >= 0 && m->nkeep < m->capkeep)) {
        m->keep[m->nkeep++] = Py_NewRef(x);
        return 0;
    }
    return fc_memo_keep_slow(m, x);
}

/* ------------------------------------------------------------------ */
/* Deferred subtrees                                                   */
/* ------------------------------------------------------------------ */

/*
 * The walker copies a small tree inside a walk on the small road, with no
 * frames and no memo (deepcopy.c, "Small subtrees"), and stores only its
 * root's entry and keep-alive.  The stdlib's memo would also hold, for
 * every container below the root whose copy is not itself, id -> copy and
 * a keep-alive: a dict's or a list's entry before its children's, a
 * tuple's after them, each keep-alive as its copy completes (post-order).
 * Those containers are held by their parent alone, so no lookup can find
 * them until user code makes another reference; and no one can read the
 * table until user code runs or it is synced into a dict.  So the root is
 * recorded here (m->subs) and fc_memo_expand makes the rest at the first
 * of those moments: fc_before_user_code, fc_memo_sync, a ghost's place
 * (its record keeps positions, which must not move after it is made).
 *
 * fc_memo_expand reads each tree again beside its copy (nothing ran since,
 * so both are as the road left them: the copy of a dict is the source's
 * clone with container values put back in place, so both iterate in the
 * same order), counts the entries below each root, moves every entry and
 * keep-alive after a root up by the counts before it (from the last root
 * back, each once), and fills the gaps: entries right after their root's,
 * keep-alives right before their root's.  Places counted in entries
 * (keep_pos, sub_pos) move with the entries; the keep-alive list's place,
 * if the root's keep-alive was the call's first, is where the subtree's
 * first one came.  Nothing else can hold a place past a root: the mirror,
 * the collector's sweep and the ghosts are brought up to date only after
 * an expansion (above), and a tuple frame's `since` only gets older, which
 * its scan allows.  The index is then built again (positions moved), and
 * m->sub_off set: the walker takes no more small subtrees in this call,
 * so that a walk alternating them with user code or ghosts does not pay
 * an expansion (and an index) for each.  Room is taken first, so a
 * MemoryError leaves the table as it was.
 */

/* Record the small tree x -> y, whose root's entry is at pos and its
   keep-alive at kpos (first_keep: the call's first).  0 | -1+exc */
FC_INTERNAL int
fc_memo_sub_add(FcMemo *m, PyObject *x, PyObject *y, Py_ssize_t pos, Py_ssize_t kpos,
                int first_keep)
{
    if (m->nsubs == m->capsubs) {
        /* the first few in the table itself: a call that copies a handful
           (pyperformance's, one object a call) allocates nothing */
        Py_ssize_t ncap = m->subs == m->small_subs ? 64 : m->capsubs * 2;
        FcMemoSub *ns = PyMem_Realloc(m->subs == m->small_subs ? NULL : m->subs,
                                      sizeof(FcMemoSub) * (size_t)ncap);
        if (ns == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        if (m->subs == m->small_subs) {
            memcpy(ns, m->small_subs, sizeof(m->small_subs));
        }
        m->subs = ns;
        m->capsubs = ncap;
    }
    FcMemoSub *s = &m->subs[m->nsubs++];
    s->x = x;
    s->y = y;
    s->pos = pos;
    s->kpos = kpos;
    s->cnt = s->first = 0;
    s->first_keep = first_keep;
    return 0;
}

/* A walk over a recorded tree below its root: counting, or filling the
   gaps at ent and keep */
typedef struct {
    FcMemoEntry *ent;
    PyObject **keep;
    Py_ssize_t n;           /* entries so far */
    Py_ssize_t first;       /* entries before the first keep-alive; -1 none */
    int fill;
} FcSubWalk;

static void fc_sub_walk(FcSubWalk *w, PyObject *x, PyObject *y);

/* Child cx of a recorded tree, copied to cy */
static void
fc_sub_child(FcSubWalk *w, PyObject *cx, PyObject *cy)
{
    PyTypeObject *tp = Py_TYPE(cx);
    if (cy == cx || (tp != &PyDict_Type && tp != &PyList_Type && tp != &PyTuple_Type)) {
        return;     /* an atom, or a tuple of atoms: no store */
    }
    int post = tp == &PyTuple_Type;     /* its entry after its items' */
    if (!post) {
        if (w->fill) {
            w->ent->key = cx;
            w->ent->value = Py_NewRef(cy);
            w->ent++;
        }
        w->n++;
    }
    fc_sub_walk(w, cx, cy);
    if (post) {
        if (w->fill) {
            w->ent->key = cx;
            w->ent->value = Py_NewRef(cy);
            w->ent++;
        }
        w->n++;
    }
    if (w->fill) {
        *w->keep++ = Py_NewRef(cx);
    }
    if (w->first < 0) {
        w->first = w->n;
    }
}

static void
fc_sub_walk(FcSubWalk *w, PyObject *x, PyObject *y)
{
    if (Py_TYPE(x) == &PyDict_Type) {
        Py_ssize_t px = 0, py = 0;
        PyObject *k, *v, *ky, *vy;
        while (PyDict_Next(x, &px, &k, &v) && PyDict_Next(y, &py, &ky, &vy)) {
            FC_ASSERT(ky == k);
            fc_sub_child(w, v, vy);
        }
        return;
    }
    int list = Py_TYPE(x) == &PyList_Type;
    Py_ssize_t n = Py_SIZE(x);
    FC_ASSERT(Py_TYPE(y) == Py_TYPE(x) && Py_SIZE(y) == n);
    for (Py_ssize_t i = 0; i < n; i++) {
        fc_sub_child(w, list ? PyList_GET_ITEM(x, i) : PyTuple_GET_ITEM(x, i),
                     list ? PyList_GET_ITEM(y, i) : PyTuple_GET_ITEM(y, i));
    }
}

/* Entries at places >= from move up by: the counts of the roots before */
static Py_ssize_t
fc_sub_moved(const FcMemo *m, Py_ssize_t place)
{
    Py_ssize_t up = 0;
    for (Py_ssize_t i = 0; i < m->nsubs && m->subs[i].pos + 1 <= place; i++) {
        up += m->subs[i].cnt;
    }
    return up;
}

FC_INTERNAL FC_NOINLINE_ATTR int
fc_memo_expand(FcMemo *m)
{
    Py_ssize_t ns = m->nsubs, total = 0;
    if (ns == 0) {
        return 0;
    }
    FcMemoSub *s = m->subs;
    for (Py_ssize_t i = 0; i < ns; i++) {
        FcSubWalk w = {NULL, NULL, 0, -1, 0};
        fc_sub_walk(&w, s[i].x, s[i].y);
        s[i].cnt = w.n;
        s[i].first = w.first;
        total += w.n;
    }
    if (total == 0) {
        m->nsubs = 0;
        return 0;
    }
    /* room first: a MemoryError changes nothing */
    while (m->cap < m->n + total) {
        if (fc_memo_grow(m) < 0) {
            return -1;
        }
    }
    while (m->capkeep < m->nkeep + total) {
        if (fc_memo_keep_grow(m) < 0) {
            return -1;
        }
    }
    /* places counted in entries, before the entries move */
    Py_ssize_t keep_pos = m->keep_pos, sub_pos = m->sub_pos;
    if (keep_pos >= 0) {
        keep_pos += fc_sub_moved(m, keep_pos);
    }
    if (sub_pos >= 0) {
        sub_pos += fc_sub_moved(m, sub_pos);
    }
    /* move, from the last root back: entries after root i go up by the
       counts of roots 0..i, keep-alives from root i's own on likewise */
    Py_ssize_t up = total, hi = m->n, khi = m->nkeep;
    for (Py_ssize_t i = ns - 1; i >= 0; i--) {
        Py_ssize_t lo = s[i].pos + 1, klo = s[i].kpos;
        memmove(&m->entries[lo + up], &m->entries[lo], sizeof(FcMemoEntry) * (size_t)(hi - lo));
        memmove(&m->keep[klo + up], &m->keep[klo], sizeof(PyObject *) * (size_t)(khi - klo));
        up -= s[i].cnt;
        FcSubWalk w = {&m->entries[lo + up], &m->keep[klo + up], 0, -1, 1};
        if (s[i].cnt > 0) {
            fc_sub_walk(&w, s[i].x, s[i].y);
            FC_ASSERT(w.n == s[i].cnt);
            if (s[i].first_keep) {
                /* the stdlib's list came with the first keep-alive below
                   the root: after the root's entry and `first` more */
                keep_pos = lo + up + s[i].first;
            }
        }
        hi = lo;
        khi = klo;
    }
    m->n += total;
    m->nkeep += total;
    m->keep_pos = keep_pos;
    m->sub_pos = sub_pos;
    m->nsubs = 0;
    /* every position after the first root moved: index them all again.  A
       table too small for an index keeps none; one that cannot have a new
       one reads its entries one by one (fc_memo_pending_scan) */
    m->miss = NULL;
    m->sub_off = 1;
    m->nidx = m->n;
    if ((m->mask != 0 || m->n > FC_MEMO_INLINE)
        && fc_memo_reindex(m, fc_memo_index_need(m)) < 0) {
        PyErr_Clear();
        if (m->mask != 0) {
            memset(m->index, 0, sizeof(int32_t) * (size_t)(m->mask + 1));
            m->nidx = 0;    /* all pending: indexed or scanned when looked up */
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Ghosts                                                              */
/* ------------------------------------------------------------------ */

/*
 * Some roads of the stdlib memoize temporaries nobody else ever sees:
 *
 *   - set.__reduce__ is (type(s), (list(s),), None), and _reconstruct
 *     deep-copies that list through the memo: the memo gets id(list) -> a
 *     new equal list, then the list in the keep-alive list, before the
 *     set's own entry (FC_GHOST_SET);
 *   - object.__reduce_ex__(4) of an instance with __slots__ and no
 *     __dict__ gives the state (None, {slot: value}); _reconstruct deep-
 *     copies it: id(dict) -> its copy first, then the values' entries, the
 *     dict kept alive, then id(pair) -> (None, copy), the pair kept alive
 *     (FC_GHOST_SLOTS; the walker's R_SLOTS phase, deepcopy.c).
 *
 * Nobody can look at the memo while it is native.  So the walker records a
 * *ghost* instead of making them: entries and keep-alive places left empty
 * (key, value and keep NULL), and in m->ghost a record of what the
 * temporaries hold, as strong references -- as they were, whatever happens
 * to the sources afterwards.  The first fc_memo_sync() after it makes them
 * and puts them in their places (fc_memo_resolve), so every dict shown
 * holds the stdlib's entries in the stdlib's order, and from then on they
 * are ordinary entries.  They are new objects, so their addresses are no
 * key of the table (the invariant above).  A record is FC_GHOST_HEAD words
 * -- kind, n, entry and keep-alive positions (two of each for a slot
 * state) -- then n items (a set's) or n names, n values and n copies.
 *
 * A slot state's dict entry comes before its values' entries, so the walker
 * takes its place first, empty, with no record yet (fc_memo_placeholder);
 * before the memo is shown, or when the walk fails, it fills it for real
 * (fc_memo_fill).  Whatever dict it made then, which the stdlib's memo
 * would not keep alive, stays in m->grave until the table goes, so that its
 * address is never reused while it is a key.
 */
enum { FC_GHOST_SET = 0, FC_GHOST_SLOTS = 1 };
#define FC_GHOST_HEAD 6

#define FC_GHOST_WORD(v) ((PyObject *)(uintptr_t)(v))
#define FC_GHOST_SIZE(w) ((Py_ssize_t)(uintptr_t)(w))

/* references held by a record after its head */
FC_INLINE Py_ssize_t
fc_ghost_refs(PyObject *const *rec)
{
    Py_ssize_t n = FC_GHOST_SIZE(rec[1]);
    return FC_GHOST_SIZE(rec[0]) == FC_GHOST_SLOTS ? 3 * n : n;
}

/* Drop the items of every record; the buffer stays. */
static void
fc_ghost_release(FcMemo *m)
{
    Py_ssize_t i = 0, end = m->nghost;
    m->nghost = 0;
    while (i < end) {
        PyObject **rec = m->ghost + i;
        Py_ssize_t n = fc_ghost_refs(rec);
        for (Py_ssize_t j = 0; j < n; j++) {
            Py_XDECREF(rec[FC_GHOST_HEAD + j]);
        }
        i += FC_GHOST_HEAD + n;
    }
}

/* Room for a record of `refs` references.  Their places, for the caller
   to fill | NULL+exc */
static PyObject **
fc_ghost_room(FcMemo *m, Py_ssize_t refs)
{
    Py_ssize_t need = m->nghost + FC_GHOST_HEAD + refs;
    if (need > m->capghost) {
        Py_ssize_t ncap = m->capghost ? m->capghost * 2 : 256;
        while (ncap < need) {
            ncap *= 2;
        }
        if ((size_t)ncap >= PY_SSIZE_T_MAX / sizeof(PyObject *)) {
            PyErr_NoMemory();
            return NULL;
        }
        /* no inline array: the first one is the spare buffer or a block */
        PyObject **ng = fc_block_grow(m->spare, FC_SPARE_GHOST, m->ghost, NULL, 0,
                                      sizeof(PyObject *), &m->capghost, ncap);
        if (ng == NULL) {
            return NULL;
        }
        m->ghost = ng;
    }
    return m->ghost + m->nghost + FC_GHOST_HEAD;
}

FC_INTERNAL PyObject **
fc_memo_ghost_reserve(FcMemo *m, Py_ssize_t n)
{
    return fc_ghost_room(m, n);
}

/* An empty entry, for a ghost.  its position | -1+exc */
FC_INLINE Py_ssize_t
fc_ghost_entry(FcMemo *m)
{
    if (m->nsubs > 0 && fc_memo_expand(m) < 0) {
        return -1;
    }
    if (m->n == m->cap && fc_memo_grow(m) < 0) {
        return -1;
    }
    if (m->mask != 0 && m->nidx != m->n && fc_memo_catch_up(m) < 0) {
        return -1;
    }
    Py_ssize_t pos = m->n++;
    m->entries[pos].key = NULL;
    m->entries[pos].value = NULL;
    m->nidx = m->n;     /* a ghost is indexed when it is filled */
    return pos;
}

/* An empty keep-alive place, for a ghost.  its position | -1+exc */
FC_INLINE Py_ssize_t
fc_ghost_keep(FcMemo *m)
{
    if ((m->nsubs > 0 && fc_memo_expand(m) < 0) || fc_memo_keep_room(m) < 0) {
        return -1;
    }
    m->keep[m->nkeep] = NULL;
    return m->nkeep++;
}

FC_INTERNAL int
fc_memo_ghost_add(FcMemo *m, Py_ssize_t n)
{
    PyObject **rec = m->ghost + m->nghost;
    Py_ssize_t n0 = m->n, k0 = m->nkeep, epos, kpos;
    if ((epos = fc_ghost_entry(m)) < 0 || (kpos = fc_ghost_keep(m)) < 0) {
        m->n = n0;
        m->nidx = m->nidx < n0 ? m->nidx : n0;
        m->nkeep = k0;
        for (Py_ssize_t j = 0; j < n; j++) {
            Py_DECREF(rec[FC_GHOST_HEAD + j]);
        }
        return -1;
    }
    rec[0] = FC_GHOST_WORD(FC_GHOST_SET);
    rec[1] = FC_GHOST_WORD(n);
    rec[2] = FC_GHOST_WORD(epos);
    rec[3] = FC_GHOST_WORD(kpos);
    rec[4] = rec[5] = NULL;
    m->nghost += FC_GHOST_HEAD + n;
    return 0;
}

FC_INTERNAL Py_ssize_t
fc_memo_placeholder(FcMemo *m)
{
    return fc_ghost_entry(m);
}

/* Index entry `pos` under its key (the index has room: empty entries
   count in m->n). */
static void
fc_memo_index_at(FcMemo *m, Py_ssize_t pos)
{
    if (m->mask != 0) {
        size_t mask = (size_t)m->mask, j = fc_memo_hash(m->entries[pos].key) & mask;
        while (m->index[j] != 0) {
            j = (j + 1) & mask;
        }
        m->index[j] = (int32_t)(pos + 1);
        m->miss = NULL;
    }
}

/* An entry dropped for good (its temporaries could not be made): a key no
   object has, never synced and never read through (its value is None). */
static char fc_memo_dead_tag;
#define fc_memo_dead (*(PyObject *)(void *)&fc_memo_dead_tag)

FC_INTERNAL void
fc_memo_fill(FcMemo *m, Py_ssize_t pos, PyObject *key, PyObject *value)
{
    FC_ASSERT(m->entries[pos].key == NULL && m->entries[pos].value == NULL);
    if (key == NULL || value == NULL
        || (m->grave == NULL && (m->grave = PyList_New(0)) == NULL)
        || PyList_Append(m->grave, key) < 0) {
        /* out of memory while a walk fails: the stdlib's memo would hold
           this entry, ours cannot */
        PyErr_Clear();
        m->entries[pos].key = &fc_memo_dead;
        m->entries[pos].value = Py_NewRef(Py_None);
        fc_memo_index_at(m, pos);
        return;
    }
    m->entries[pos].key = key;
    m->entries[pos].value = Py_NewRef(value);
    fc_memo_index_at(m, pos);
}

FC_INTERNAL int
fc_memo_ghost_slots(FcMemo *m, Py_ssize_t dpos, Py_ssize_t n, PyObject *const *names,
                    PyObject *const *values, PyObject *const *copies)
{
    PyObject **items = fc_ghost_room(m, 3 * n);
    if (items == NULL) {
        return -1;
    }
    PyObject **rec = items - FC_GHOST_HEAD;
    Py_ssize_t n0 = m->n, k0 = m->nkeep, dk, tpos, tk;
    if ((dk = fc_ghost_keep(m)) < 0 || (tpos = fc_ghost_entry(m)) < 0
        || (tk = fc_ghost_keep(m)) < 0) {
        m->n = n0;
        m->nidx = m->nidx < n0 ? m->nidx : n0;
        m->nkeep = k0;
        return -1;
    }
    for (Py_ssize_t j = 0; j < n; j++) {
        items[j] = Py_NewRef(names[j]);
        items[n + j] = Py_NewRef(values[j]);
        items[2 * n + j] = Py_NewRef(copies[j]);
    }
    rec[0] = FC_GHOST_WORD(FC_GHOST_SLOTS);
    rec[1] = FC_GHOST_WORD(n);
    rec[2] = FC_GHOST_WORD(dpos);
    rec[3] = FC_GHOST_WORD(dk);
    rec[4] = FC_GHOST_WORD(tpos);
    rec[5] = FC_GHOST_WORD(tk);
    m->nghost += FC_GHOST_HEAD + 3 * n;
    return 0;
}

/* {names[j]: values[j]}.  new ref | NULL+exc */
FC_INTERNAL PyObject *
fc_memo_pairs_dict(Py_ssize_t n, PyObject *const *names, PyObject *const *values)
{
    PyObject *d = _PyDict_NewPresized(n);
    for (Py_ssize_t j = 0; d != NULL && j < n; j++) {
        if (PyDict_SetItem(d, names[j], values[j]) < 0) {
            Py_CLEAR(d);
        }
    }
    return d;
}

/* Put obj (a new ref, stolen) at entry `pos` with value val (a new ref,
   stolen), held alive by keep place `kpos`. */
static void
fc_ghost_put(FcMemo *m, Py_ssize_t pos, Py_ssize_t kpos, PyObject *obj, PyObject *val)
{
    m->entries[pos].key = obj;
    m->entries[pos].value = val;
    m->keep[kpos] = obj;
    fc_memo_index_at(m, pos);
}

/* Make every ghost's temporaries and put them in the table.  0 | -1+exc
   (then the ghosts made so far are entries, the rest still ghosts) */
static int
fc_memo_resolve(FcMemo *m)
{
    for (Py_ssize_t i = 0; i < m->nghost;) {
        PyObject **rec = m->ghost + i, **it = rec + FC_GHOST_HEAD;
        Py_ssize_t kind = FC_GHOST_SIZE(rec[0]), n = FC_GHOST_SIZE(rec[1]);
        Py_ssize_t epos = FC_GHOST_SIZE(rec[2]), kpos = FC_GHOST_SIZE(rec[3]);
        i += FC_GHOST_HEAD + fc_ghost_refs(rec);
        if (m->keep[kpos] != NULL) {
            continue;                   /* made by an earlier, failed run */
        }
        /* a collection in these allocations runs no code that can reach m */
        if (kind == FC_GHOST_SET) {
            PyObject *l = PyList_New(n), *l2 = l != NULL ? PyList_New(n) : NULL;
            if (l2 == NULL) {
                Py_XDECREF(l);
                return -1;
            }
            for (Py_ssize_t j = 0; j < n; j++) {
                PyList_SET_ITEM(l, j, Py_NewRef(it[j]));
                PyList_SET_ITEM(l2, j, Py_NewRef(it[j]));
            }
            fc_ghost_put(m, epos, kpos, l, l2);
            continue;
        }
        /* the slot state: (None, d) -> (None, d2), d -> d2 */
        Py_ssize_t tpos = FC_GHOST_SIZE(rec[4]), tk = FC_GHOST_SIZE(rec[5]);
        PyObject *d = fc_memo_pairs_dict(n, it, it + n);
        PyObject *d2 = d != NULL ? fc_memo_pairs_dict(n, it, it + 2 * n) : NULL;
        PyObject *t = d2 != NULL ? PyTuple_Pack(2, Py_None, d) : NULL;
        PyObject *t2 = t != NULL ? PyTuple_Pack(2, Py_None, d2) : NULL;
        if (t2 == NULL) {
            Py_XDECREF(d);
            Py_XDECREF(d2);
            Py_XDECREF(t);
            return -1;
        }
        fc_ghost_put(m, epos, kpos, d, d2);
        fc_ghost_put(m, tpos, tk, t, t2);
    }
    fc_ghost_release(m);
    return 0;
}

/* ------------------------------------------------------------------ */
/* The memo as seen through the call's context                         */
/* ------------------------------------------------------------------ */

/* id(memo) as an int, cached.  borrowed | NULL+exc */
static PyObject *
fc_ctx_memo_id(FcCtx *c)
{
    if (c->memo_id == NULL) {
        c->memo_id = PyLong_FromVoidPtr(c->memo);
    }
    return c->memo_id;
}

/*
 * Copies and the cyclic GC.  Every container the walker builds is a value
 * of the native memo until the call ends, so it cannot be garbage before
 * then; letting the collections that our own allocations trigger traverse
 * the half-built copy again and again is pure cost (a quarter to a half of
 * all instructions on container-heavy data).  While the memo is native,
 * such copies are untracked (a strong reference is kept here) and tracked
 * again -- each only if it is not tracked by then -- before the memo is
 * shown to Python code and before the call releases the memo, on success
 * and on error.  An untracked container only makes the collector more
 * conservative (what it references counts as reachable); collections still
 * happen as often, and garbage made by hooks is still collected.
 *
 * Hiding a container (untrack, a reference, track again: some 115
 * instructions) costs more than it saves in a copy that spans at most a
 * young collection or two, and most calls copy less than that.  So the
 * first FC_GC_GRACE containers of a call stay tracked; when the call makes
 * one more, the builtin containers made so far (the list, dict, tuple, set
 * and frozenset values of the native memo whose original is a container of
 * the same builtin type copied by the walker itself) are hidden at once -- a big
 * early container such as the outer list must not be traversed by every
 * collection of a long copy -- and from then on each new copy is hidden as
 * it is made.  Objects a reduce function or a registered copier returned
 * are never hidden: they may be older than the call.
 *
 * On 3.12+ a collection starts only at the eval breaker (pyver.h,
 * FC_GC_ANY_ALLOC), that is while Python code runs: copies made after the
 * last user code of a call are never traversed before the call ends, and
 * the copies tracked again at the end go back to the youngest generation,
 * where the next collection traverses them all the same.  Hiding them as
 * they are made was two passes for nothing (callgrind, instructions per
 * copy, hiding against none, 3.12 / 3.13 / 3.14: shared_refs at 100,000
 * rows 197.6M / 195.6M / 153.1M against 179.5M / 177.7M / 138.0M; on 3.11
 * 128.1M against 258.2M; and 8% of hook_idiom on 3.14, whose five hooks
 * run before its 3,000 rows are copied).  So there a grace that runs out
 * only marks the call (FcCtx.gc_due), and the copies made since the last
 * sweep are hidden just before user code next runs
 * (fc_gc_before_user_code, unless the memo is about to be shown, which
 * tracks them all again): a collection that user code triggers finds none
 * of them, and a call that runs no more user code hides nothing.
 *
 * With the collector disabled nothing is hidden: no collection can run
 * unless code asks for one, and hiding would only add its two passes (the
 * second, the tracking again, over copies long out of the cache; 6% of the
 * instructions of a 100,000-record copy).  A set built untracked
 * (fc_untrack_fresh) is still listed and tracked at the end, which costs
 * what tracking it at once would.  The check is made each time a grace
 * runs out, so a hook that turns the collector on is followed within
 * FC_GC_GRACE containers.
 */

/* Room for more in fc_untrack_list's array, out of line (its call is
   once a container).  0 | -1+exc */
FC_NOINLINE int
fc_untrack_grow(FcCtx *c)
{
    Py_ssize_t ncap = c->capuntracked ? c->capuntracked * 2 : 256;
    PyObject **nu = fc_block_grow(NULL, 0, c->untracked, NULL, 0, sizeof(PyObject *),
                                  &c->capuntracked, ncap);
    if (nu == NULL) {
        return -1;
    }
    c->untracked = nu;
    return 0;
}

/* List y for fc_retrack_all.  0 | -1+exc */
static int
fc_untrack_list(FcCtx *c, PyObject *y)
{
    if (c->nuntracked == c->capuntracked && fc_untrack_grow(c) < 0) {
        return -1;
    }
    c->untracked[c->nuntracked++] = Py_NewRef(y);
    return 0;
}

/* Hide y: it is tracked and the memo is native.  0 | -1+exc */
static int
fc_untrack_now(FcCtx *c, PyObject *y)
{
    if (fc_untrack_list(c, y) < 0) {
        return -1;
    }
    PyObject_GC_UnTrack(y);
    return 0;
}

/* Hide the walker's own copies among the memo's values from entry `from`
   on (those still tracked).  0 | -1+exc */
static int
fc_gc_sweep(FcCtx *c, Py_ssize_t from)
{
    FcMemo *m = &c->native;
    uint32_t ok = c->st->deep_ok;
    for (Py_ssize_t i = from; i < m->n; i++) {
        PyObject *v = m->entries[i].value, *k = m->entries[i].key;
        if (k == NULL) {
            continue;               /* a ghost */
        }
        PyTypeObject *tp = Py_TYPE(v);
        /* only the walker's own copies: a builtin container copied as
           such (no copier registered for its type), not the original */
        int kind = tp == &PyList_Type ? FK_LIST : tp == &PyDict_Type ? FK_DICT
                   : tp == &PyTuple_Type ? FK_TUPLE : tp == &PySet_Type ? FK_SET
                   : tp == &PyFrozenSet_Type ? FK_FROZENSET : -1;
        if (kind >= 0 && v != k && Py_TYPE(k) == tp
            && (FK_BIT(kind) & ok & (kind == FK_SET || kind == FK_FROZENSET
                                     ? c->st->set_ok : ~0u))
            && PyObject_GC_IsTracked(v) && fc_untrack_now(c, v) < 0) {
            return -1;
        }
    }
    return 0;
}

/* fc_untrack past the grace.  0 | -1+exc */
static int
fc_untrack_slow(FcCtx *c, PyObject *y)
{
    if (c->mode != FC_MEMO_NATIVE) {
        return 0;
    }
    if (c->gc_grace == 0) {
        if (!FC_GC_ANY_ALLOC) {
            /* 3.12+: nothing collects until user code runs; the copies
               made so far are hidden then (fc_gc_before_user_code) */
            c->gc_grace = FC_GC_GRACE - 1;
            c->gc_due = 1;
            return 0;
        }
        if (!PyGC_IsEnabled()) {
            /* the collector is off (gc.disable(), timeit, a program that
               collects by hand): no collection runs unless code asks for
               one, so hiding would be pure cost -- two passes over every
               copy, the second when a big copy is long out of the cache.
               Look again after another grace: a hook may turn it on. */
            c->gc_grace = FC_GC_GRACE - 1;
            return 0;
        }
        /* the grace just ran out: hide the containers made during it */
        c->gc_grace = -1;
        if (fc_gc_sweep(c, 0) < 0) {
            return -1;
        }
    }
    if (!PyObject_GC_IsTracked(y)) {
        return 0;
    }
    return fc_untrack_now(c, y);
}

FC_INTERNAL int
fc_gc_before_user_code_slow(FcCtx *c)
{
    FcMemo *m = &c->native;
    c->gc_due = 0;
    if (c->mode != FC_MEMO_NATIVE || !PyGC_IsEnabled()) {
        return 0;
    }
    Py_ssize_t from = c->gc_swept <= m->n ? c->gc_swept : 0;
    c->gc_swept = m->n;
    return fc_gc_sweep(c, from);
}

/* Hide y from the cyclic GC until fc_retrack_all().  0 | -1+exc */
FC_INTERNAL_INLINE int
fc_untrack(FcCtx *c, PyObject *y)
{
    if (c->gc_grace > 0) {
        c->gc_grace--;
        return 0;
    }
    return fc_untrack_slow(c, y);   /* gc_grace: 0 just ran out, -1 since */
}

FC_INTERNAL int
fc_untrack_fresh(FcCtx *c, PyObject *y)
{
    if (c->mode != FC_MEMO_NATIVE) {
        PyObject_GC_Track(y);
        return 0;
    }
    /* hidden from its birth, grace or not: listing it costs about what
       tracking it would, and it is then never traversed.  It counts
       against the grace all the same: the longer the containers made in
       the grace stay tracked, the more young collections promote them
       (set_records: 0.03 full collections a copy when these did not count) */
    if (c->gc_grace > 0) {
        c->gc_grace--;
    }
    else if (c->gc_grace == 0 && fc_untrack_slow(c, y) < 0) {   /* the sweep */
        PyObject_GC_Track(y);
        return -1;
    }
    if (fc_untrack_list(c, y) < 0) {
        PyObject_GC_Track(y);
        return -1;
    }
    return 0;
}

FC_INTERNAL void
fc_retrack_all(FcCtx *c)
{
    for (Py_ssize_t i = 0; i < c->nuntracked; i++) {
        PyObject *o = c->untracked[i];
        if (!PyObject_GC_IsTracked(o)) {
            PyObject_GC_Track(o);
        }
        Py_DECREF(o);
    }
    fc_block_free(c->untracked, sizeof(PyObject *) * (size_t)c->capuntracked);
    c->untracked = NULL;
    c->nuntracked = c->capuntracked = 0;
}

/*
 * Showing the memo
 * ----------------
 * A hook that is handed the memo (__deepcopy__, a registered copier, the
 * stdlib's _reconstruct) must find a real dict holding exactly what the
 * stdlib's memo would hold, keep-alive list included.  The call keeps one
 * such dict, the *mirror*, for its whole life, and brings it up to date
 * only when it is shown: the entries and keep-alive originals added since
 * the last showing are appended, in the order the stdlib would have added
 * them (fc_memo_sync).  Between showings the native table stays the truth
 * and the mirror lags behind it; no Python code can reach the mirror then,
 * which is what the check after the hook proves:
 *
 *   - its version tag is the one our last write left (the hook added,
 *     changed or deleted nothing), and
 *   - its reference count is back to what it was when it was shown, and
 *     its keep-alive list is held by the mirror and us alone (the hook
 *     kept no reference; the list may have been made while it ran, by a
 *     nested call).
 *
 * Then the call goes on natively (fc_memo_hide).  Otherwise the dict is the
 * memo from then on, as for a caller's memo: FC_MEMO_DICT, every lookup and
 * store through it, and it already holds everything.  A hook may also
 * append to or edit the keep-alive list in place: later originals are
 * appended to that same list, as the stdlib's _keep_alive would.
 *
 * A hook that calls deepcopy(y, memo) with the mirror it was shown (the
 * copy.deepcopy(self.__dict__, memo) idiom, with fastcopy patched in) gets
 * a nested call that works on the *same* native table, after checking
 * that the mirror is unchanged since it was shown: the table is moved
 * into the nested call's context (FcCtx.lender; the hot paths keep
 * addressing their own context's table) and back when it returns, with
 * the mirror brought up to date first, since the hook goes on and may
 * read it (fc_memo_borrow / fc_memo_return).
 *
 * Free-threaded builds never leave a shown memo: a reference count says
 * nothing there about who can reach the dict.  Without version tags (3.14+)
 * the mirror's writes are seen through a dict watcher instead (watch.c,
 * "mirror"; pyver.h, FC_MEMO_ABSORB); where none can be had, the shown
 * memo stays the memo.
 */

/* The mirror's stamp (m->mir_ver's kind): its version tag, or on 3.14+ the
   mirror stamp (only read while the mirror is watched) */
#if FC_HAVE_DICT_VERSION
#  define FC_MIR_STAMPS 1
#  define FC_MIR_VER(d) fc_dict_version(d)
#elif FC_MEMO_ABSORB
#  define FC_MIR_STAMPS 1
#  define FC_MIR_VER(d) ((void)(d), fc_mirror_stamp())
#else
#  define FC_MIR_STAMPS 0
#endif

/* Room in m->mkeys for `need` entries.  0 | -1+exc */
static int
fc_mkeys_room(FcMemo *m, Py_ssize_t need)
{
    if (need <= m->capmkeys) {
        return 0;
    }
    Py_ssize_t ncap = m->capmkeys ? m->capmkeys : 64;
    while (ncap < need) {
        ncap *= 2;
    }
    PyObject **nk = PyMem_Realloc(m->mkeys, sizeof(PyObject *) * (size_t)ncap);
    if (nk == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    m->mkeys = nk;
    m->capmkeys = ncap;
    return 0;
}

/* mirror[k] = v, written by the call itself: a new key is the mirror's last
   (it never has a hole: the absorb step below refuses one), and the version
   tag stays ours if it was.  0 | -1+exc */
static int
fc_mirror_set(FcMemo *m, PyObject *k, PyObject *v)
{
    PyObject *d = m->mirror;
#if FC_MIR_STAMPS
    int ours = FC_MIR_VER(d) == m->mir_ver;
#endif
    Py_ssize_t n0 = PyDict_GET_SIZE(d);
    if (PyDict_SetItem(d, k, v) < 0) {
        return -1;
    }
    if (PyDict_GET_SIZE(d) != n0) {
        m->mir_len = PyDict_GET_SIZE(d);
    }
#if FC_MIR_STAMPS
    if (ours) {
        m->mir_ver = FC_MIR_VER(d);
    }
#endif
    return 0;
}

/* The sub-memo into the mirror, at its place (fc_memo_sync).  0 | -1+exc */
static int
fc_mirror_sub(FcMemo *m)
{
    if (fc_mirror_set(m, m->sub_key, m->sub) < 0) {
        return -1;
    }
    m->sub_in_mirror = 1;
    return 0;
}

/* The mirror holds every entry and keep-alive original of the native memo,
   in the stdlib's order.  0 | -1+exc */
static int
fc_memo_sync(FcMemo *m)
{
    if ((m->nsubs > 0 && fc_memo_expand(m) < 0) || (m->nghost > 0 && fc_memo_resolve(m) < 0)) {
        return -1;
    }
    PyObject *d = m->mirror;
    if (d == NULL) {
        d = m->mirror = PyDict_New();
        if (d == NULL) {
            return -1;
        }
        m->mir_len = 0;
#if FC_MEMO_ABSORB && !FC_HAVE_DICT_VERSION
        m->mir_watched = fc_mirror_watch(m->mir_wid, d);
#endif
    }
    if (fc_mkeys_room(m, m->n) < 0) {
        return -1;
    }
    for (Py_ssize_t i = m->mir_n; i <= m->n; i++) {
        if (m->sub_first && i == m->sub_pos && !m->sub_in_mirror
            && fc_mirror_sub(m) < 0) {
            return -1;
        }
        if (i == m->keep_pos && m->mirror_keep == NULL) {
            /* memo[id(memo)] = [x]: created at the first _keep_alive, which
               came after m->keep_pos entries */
            PyObject *did = m->mirror_id;
            if (did == NULL && (did = m->mirror_id = PyLong_FromVoidPtr(d)) == NULL) {
                return -1;
            }
            PyObject *keep = PyList_New(0);
            if (keep == NULL || fc_mirror_set(m, did, keep) < 0) {
                Py_XDECREF(keep);
                return -1;
            }
            m->mirror_keep = keep;
            m->mir_keep = 0;
        }
        if (i == m->sub_pos && !m->sub_in_mirror && fc_mirror_sub(m) < 0) {
            return -1;
        }
        if (i == m->n) {
            break;
        }
        if (m->entries[i].key == &fc_memo_dead) {
            m->mkeys[i] = NULL;
            m->mir_n = i + 1;
            continue;
        }
        FC_ASSERT(m->entries[i].key != NULL);
        PyObject *k = PyLong_FromVoidPtr(m->entries[i].key);
        if (k == NULL) {
            return -1;
        }
        if (fc_mirror_set(m, k, m->entries[i].value) < 0) {
            Py_DECREF(k);
            return -1;
        }
        m->mkeys[i] = k;
        m->mir_n = i + 1;
    }
    for (Py_ssize_t i = m->mir_keep; i < m->nkeep; i++) {
        if (PyList_Append(m->mirror_keep, m->keep[i]) < 0) {
            return -1;
        }
        m->mir_keep = i + 1;
    }
    if (m->mirror_keep != NULL) {
        m->mir_keep_len = PyList_GET_SIZE(m->mirror_keep);
    }
#if FC_MIR_STAMPS
    m->mir_ver = FC_MIR_VER(d);
#endif
    return 0;
}

/*
 * A hook that writes into the memo
 * --------------------------------
 * The copy module's documented __deepcopy__ stores memo[id(self)] = result
 * before copying its attributes, and so does pydantic's BaseModel since
 * 2.14; an unpatched hook's copy.deepcopy(v, memo) adds the entries and
 * keep-alive originals of everything it copies.  Turning the memo into the
 * dict for the rest of the call for that (an int and a dict operation per
 * object from then on) is what made such hooks slow.  So when the mirror's
 * version tag moved, the call takes the hook's changes back into the
 * native table where it can prove what they were (fc_memo_absorb):
 *
 *   - the entries from before are all there, in order, each with its
 *     value (compared one by one with the table: a hook may have replaced
 *     a value in place, which nothing else shows), and len() adds up with
 *     the entries after them;
 *   - every entry after it is an addition whose key is id(o) for an object
 *     o that is alive and can be named: the object whose hook it is, or an
 *     original the hook appended to the keep-alive list (the stdlib's
 *     _keep_alive does, for everything it memoizes) -- and o is no atomic,
 *     which the native walker copies without a lookup.  o is then kept
 *     alive to the end of the call (m->grave), so its address stays its
 *     own, and the entry is appended to the table, key o;
 *   - a keep-alive list the hook created under id(memo) becomes the
 *     mirror's; one that is no longer under id(memo) refuses the step.
 *
 * Comparing the entries from before costs one step per entry, and a memo
 * shown to n hooks could make that O(n^2): a call compares at most
 * 4 entries per entry of its table (plus 8192) in all, and past that the
 * dict stays the memo.  (A lazier scheme, which marked the old entries and
 * checked a hit on one against the dict, cost every memo hit a compare
 * and slowed the walker's inlined loops.)  A store to an entry the mirror
 * already holds writes through (fc_memo_replace): a hook may store one
 * copy and return another.  Anything else -- a key that is no such id, a
 * deletion, a replaced value, a mapping kept -- leaves the dict as the
 * memo, as before.
 */

/* memo[id(key)] = value for the key of entry pos.  0 | -1+exc */
static int
fc_memo_replace(FcMemo *m, Py_ssize_t pos, PyObject *value)
{
    if (pos < m->mir_n && m->mkeys != NULL && m->mkeys[pos] != NULL
        && fc_mirror_set(m, m->mkeys[pos], value) < 0) {
        return -1;
    }
    Py_SETREF(m->entries[pos].value, Py_NewRef(value));
    return 0;
}

#if FC_MEMO_ABSORB
/* (free-threaded builds never take a hook's writes back: the helpers below
   serve fc_memo_absorb alone) */
static int
fc_ptr_cmp(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

/* The mirror still holds the L0 entries of our last write, in order, each
   with its key and value (the keep-alive list at its place): what a hook
   may have replaced or deleted.  *pos: the place after the last of them.
   Runs no code.  1 | 0 */
static int
fc_mirror_intact(FcMemo *m, Py_ssize_t L0, Py_ssize_t *pos)
{
    PyObject *d = m->mirror, *k, *v;
    Py_ssize_t i = 0, p = 0;
    int keep_done = m->mirror_keep == NULL, sub_done = !m->sub_in_mirror;
    for (Py_ssize_t j = 0; j < L0; j++) {
        if (!PyDict_Next(d, &p, &k, &v)) {
            return 0;
        }
        /* the keep-alive list and the sub-memo where they came, in the
           order they came when that was the same place */
        int keep_due = !keep_done && i == m->keep_pos;
        if (!sub_done && i == m->sub_pos && (m->sub_first || !keep_due)) {
            if (k != m->sub_key || v != m->sub) {
                return 0;
            }
            sub_done = 1;
            continue;
        }
        if (keep_due) {
            if (k != m->mirror_id || v != m->mirror_keep) {
                return 0;
            }
            keep_done = 1;
            continue;
        }
        while (i < m->mir_n && m->mkeys[i] == NULL) {
            i++;                        /* dropped entries: not in the mirror */
        }
        if (i >= m->mir_n || k != m->mkeys[i] || v != m->entries[i].value) {
            return 0;
        }
        i++;
    }
    *pos = p;
    return 1;
}

/* Has d an entry at place pos or after?  1 | 0 */
static int
fc_dict_any_from(PyObject *d, Py_ssize_t pos)
{
    return PyDict_Next(d, &pos, NULL, NULL);
}

/* The addition at mirror place j: its key and value (strong), the object
   it stands for (NULL: the keep-alive list). */
typedef struct {
    PyObject *key, *value, *obj;
} FcAdded;

/* The hook shown the mirror wrote into it (its version moved): take the
   additions into the table if they can be proven to be only that (above).
   `shown`: the object whose hook it is.  No user code; keeps no exception
   of its own.  1 taken (the mirror current again) | 0 not (the table is
   unchanged, or m->dict_truth set) */
static int
fc_memo_absorb(FcMemo *m, PyObject *shown)
{
    PyObject *d = m->mirror, *k, *v;
    Py_ssize_t L0 = m->mir_len, len = PyDict_GET_SIZE(d);
    if (m->dict_truth || len < L0 || m->mir_n != m->n || m->nghost != 0
        || (m->sub != NULL && !m->sub_in_mirror)) {
        return 0;
    }
    /* O(L0): bounded over the call (the essay above) */
    if (m->scanned + L0 > 4 * m->n + 8192) {
        return 0;
    }
    m->scanned += L0;
    Py_ssize_t pos = 0;
    if (!fc_mirror_intact(m, L0, &pos)) {
        return 0;
    }
    if (m->mirror_keep != NULL
        && PyDict_GetItemWithError(d, m->mirror_id) != m->mirror_keep) {
        PyErr_Clear();
        return 0;
    }
    Py_ssize_t a = len - L0, got = 0;
    uint64_t ver = FC_MIR_VER(d);
    FcAdded *add = NULL;
    uintptr_t *tail = NULL;
    Py_ssize_t ntail = -1, adopt = -1;
    PyObject *keep = m->mirror_keep;
    int ok = 0;
    if (a > 0 && (add = PyMem_Malloc(sizeof(FcAdded) * (size_t)a)) == NULL) {
        goto done;
    }
    /* first the places and keys (and a keep-alive list the hook made,
       whose items name the objects of the entries before it too) */
    unsigned long long did = (unsigned long long)(uintptr_t)d;
    for (Py_ssize_t j = 0; j < a; j++) {
        if (!PyDict_Next(d, &pos, &k, &v) || !PyLong_CheckExact(k)) {
            goto done;
        }
        unsigned long long id = PyLong_AsUnsignedLongLong(k);
        if (id == (unsigned long long)-1 && PyErr_Occurred()) {
            goto done;
        }
        /* strong: the pins below may allocate (a collection, finalizers) */
        add[j].key = Py_NewRef(k);
        add[j].value = Py_NewRef(v);
        add[j].obj = (PyObject *)(uintptr_t)id;     /* an address, until proven */
        got = j + 1;
        if (id == did) {
            if (keep != NULL || m->keep_pos >= 0 || !PyList_CheckExact(v)) {
                goto done;
            }
            keep = v;
            adopt = j;
        }
    }
    if (fc_dict_any_from(d, pos)) {
        goto done;          /* more after them: len() did not add up */
    }
    /* then the object each key is the id of */
    for (Py_ssize_t j = 0; j < a; j++) {
        if (j == adopt) {
            add[j].obj = NULL;
            continue;
        }
        uintptr_t want = (uintptr_t)add[j].obj;
        PyObject *o = NULL;
        if (shown != NULL && want == (uintptr_t)shown) {
            o = shown;
        }
        else if (keep != NULL) {
            if (ntail < 0) {
                /* the originals appended since our last write */
                Py_ssize_t from = keep == m->mirror_keep ? m->mir_keep_len : 0;
                Py_ssize_t to = PyList_GET_SIZE(keep);
                ntail = to > from ? to - from : 0;
                if (ntail > 0) {
                    tail = PyMem_Malloc(sizeof(uintptr_t) * (size_t)ntail);
                    if (tail == NULL) {
                        goto done;
                    }
                    for (Py_ssize_t i = 0; i < ntail; i++) {
                        tail[i] = (uintptr_t)PyList_GET_ITEM(keep, from + i);
                    }
                    qsort(tail, (size_t)ntail, sizeof(uintptr_t), fc_ptr_cmp);
                }
            }
            if (ntail > 0 && bsearch(&want, tail, (size_t)ntail, sizeof(uintptr_t),
                                     fc_ptr_cmp) != NULL) {
                o = (PyObject *)want;   /* an item of the list: alive */
            }
        }
        if (o == NULL || (FK_BIT(fc_kind(Py_TYPE(o))) & FC_DEEP_ATOMIC)
            || fc_memo_get(m, o) != NULL) {
            goto done;
        }
        add[j].obj = o;
    }
    /* proven: keep the objects alive, then take the entries */
    for (Py_ssize_t j = 0; j < a; j++) {
        if (add[j].obj != NULL
            && ((m->grave == NULL && (m->grave = PyList_New(0)) == NULL)
                || PyList_Append(m->grave, add[j].obj) < 0)) {
            goto done;
        }
    }
    if (fc_mkeys_room(m, m->n + a) < 0 || FC_MIR_VER(d) != ver) {
        goto done;          /* (or changed by a finalizer meanwhile) */
    }
    m->miss = NULL;
    for (Py_ssize_t j = 0; j < a; j++) {
        if (j == adopt) {
            m->mirror_keep = Py_NewRef(keep);
            m->mirror_id = Py_NewRef(add[j].key);
            m->keep_pos = m->n;
            m->mir_keep = m->nkeep;
            continue;
        }
        Py_ssize_t n1 = m->n;
        if (fc_memo_set(m, add[j].obj, add[j].value) < 0 || m->n != n1 + 1) {
            /* half taken: the mirror is the only truth left */
            m->dict_truth = 1;
            goto done;
        }
        m->mkeys[m->n - 1] = Py_NewRef(add[j].key);
        m->mir_n = m->n;
    }
    m->mir_n = m->n;
    m->mir_len = len;
    if (m->mirror_keep != NULL) {
        m->mir_keep_len = PyList_GET_SIZE(m->mirror_keep);
    }
    m->mir_ver = FC_MIR_VER(d);
    ok = 1;
done:
    if (PyErr_Occurred()) {
        PyErr_Clear();
    }
    for (Py_ssize_t j = 0; j < got; j++) {
        Py_DECREF(add[j].key);
        Py_DECREF(add[j].value);
    }
    PyMem_Free(add);
    PyMem_Free(tail);
    return ok;
}

/* fc_memo_absorb around a pending exception (a hook that raised). */
static int
fc_memo_absorb_keeping(FcCtx *c)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    int r = fc_memo_absorb(&c->native, c->shown_x);
    PyErr_Restore(et, ev, tb);
    if (r) {
        c->st->test.memo_absorbed++;
    }
    return r;
}
#endif

/* From now on the mirror is the memo: c->memo, FC_MEMO_DICT.  The native
   table goes (the mirror holds all of it). */
static void
fc_memo_to_dict(FcCtx *c)
{
    FcMemo *m = &c->native;
    if (c->memo == NULL) {
        c->memo = Py_NewRef(m->mirror);
    }
    c->mode = FC_MEMO_DICT;
    /* the dict keeps the ids of the temporaries in m->grave: they stay
       alive to the end of the call, so those ids stay theirs */
    PyObject *grave = m->grave;
    m->grave = NULL;
    fc_memo_clear(m);
    m->grave = grave;
    m->dict_truth = 1;
    c->st->test.memo_to_dict++;
}

/* The mirror made the stdlib's memo of this moment, for code that is
   about to see it: every copy tracked again (a copy it reaches may be in a
   collection), no half-built dict, every entry and keep-alive in place.
   0 | -1+exc */
static int
fc_memo_current(FcCtx *c)
{
    fc_retrack_all(c);
    return c->walk->before_show(c) < 0 || fc_memo_sync(&c->native) < 0 ? -1 : 0;
}

/* About to hand c->memo to a hook: make it the stdlib's dict of this
   moment.  Pair with fc_memo_hide() once the hook has returned.
   0 | -1+exc */
FC_INTERNAL int
fc_memo_show(FcCtx *c)
{
    if (c->mode != FC_MEMO_NATIVE) {
        return 0;
    }
    c->shows++;
    if (fc_memo_current(c) < 0) {
        return -1;
    }
    FcMemo *m = &c->native;
    c->memo = Py_NewRef(m->mirror);
    Py_CLEAR(c->memo_id);
    c->st->test.memo_shown++;
#if !FC_MEMO_ABSORB
    /* no refcount argument: the dict is the memo from now on */
    fc_memo_to_dict(c);
#else
#  if !FC_HAVE_DICT_VERSION
    if (!m->mir_watched) {
        /* no watcher: no way to see a hook's writes */
        fc_memo_to_dict(c);
        return 0;
    }
#  endif
    c->shown = 1;
    c->shown_refs = Py_REFCNT(m->mirror);
    c->shown_ts = PyThreadState_Get();
    c->shown_next = c->st->shown;
    c->st->shown = c;
#endif
    return 0;
}

/* The hook has returned (or raised: no exception is touched here).  Back
   to the native table if nobody changed or kept the mirror, else the
   mirror is the memo from now on. */
FC_INTERNAL void
fc_memo_hide(FcCtx *c)
{
    if (!c->shown) {
        return;
    }
    c->shown = 0;
    FcCtx **pp = &c->st->shown;
    while (*pp != NULL && *pp != c) {
        pp = &(*pp)->shown_next;
    }
    if (*pp == c) {
        *pp = c->shown_next;
    }
    c->shown_next = NULL;
    if (c->mode != FC_MEMO_NATIVE) {
        return;
    }
#if FC_MEMO_ABSORB
    FcMemo *m = &c->native;
    if (!m->dict_truth && m->mirror == c->memo
        && Py_REFCNT(m->mirror) == c->shown_refs
        && (m->mirror_keep == NULL || Py_REFCNT(m->mirror_keep) == 2)
        && (FC_MIR_VER(m->mirror) == m->mir_ver || fc_memo_absorb_keeping(c))
        && (m->mirror_keep == NULL || Py_REFCNT(m->mirror_keep) == 2)) {
        Py_CLEAR(c->memo);
        return;
    }
#endif
    fc_memo_to_dict(c);
}

/* Show the memo for good (a caller that writes keys of its own into it).
   0 | -1+exc */
FC_INTERNAL int
fc_memo_expose(FcCtx *c)
{
    if (c->mode != FC_MEMO_NATIVE) {
        return 0;
    }
    if (fc_memo_show(c) < 0) {
        return -1;
    }
    fc_memo_hide(c);
    if (c->mode == FC_MEMO_NATIVE) {
        fc_memo_to_dict(c);
    }
    return 0;
}

/*
 * A sub-memo
 * ----------
 * torch's UntypedStorage.__deepcopy__ keeps a memo of its own inside the
 * stdlib's: memo.setdefault("torch", {}), keyed by the storage's _cdata.
 * It is the one key of a memo that is no id(), and its value is a dict
 * user code may hold and write into.  A native table keeps it beside its
 * entries: the real dict, which later storages look in and add to, and
 * the place it came at (after m->sub_pos entries, as the keep-alive list
 * after m->keep_pos), where fc_memo_sync puts it into the mirror.  A hook
 * shown the memo finds that very dict there; one that adds to it leaves
 * the mirror as it was (the table reads the same dict), one that replaces
 * or deletes it changes the mirror, which is then the memo (fc_memo_hide:
 * the absorb step takes only int keys).  A table holds one such key; a
 * second, different one shows the memo for good (torch has one).
 */

/* Where the sub-memo under `key` is: 1 in the native table (*res its dict,
   a new ref, or NULL: none yet) | 0 in the dict memo c->memo | -1+exc.  A
   native table holding another key shows the memo for good. */
static int
fc_memo_sub_where(FcCtx *c, PyObject *key, PyObject **res)
{
    *res = NULL;
    if (c->mode == FC_MEMO_NATIVE) {
        FcMemo *m = &c->native;
        if (m->sub_key == NULL || m->sub_key == key) {
            *res = Py_XNewRef(m->sub);
            return 1;
        }
        if (fc_memo_expose(c) < 0) {
            return -1;
        }
    }
    if (c->mode != FC_MEMO_DICT) {
        PyErr_SetString(PyExc_SystemError, "fastcopy: a sub-memo of a mapping memo");
        return -1;
    }
    return 0;
}

FC_INTERNAL PyObject *
fc_memo_sub_get(FcCtx *c, PyObject *key)
{
    PyObject *v;
    int r = fc_memo_sub_where(c, key, &v);
    if (r != 0) {
        return v;
    }
    /* strong: a key's __eq__ may replace it */
    return Py_XNewRef(PyDict_GetItemWithError(c->memo, key));
}

FC_INTERNAL PyObject *
fc_memo_sub_setdefault(FcCtx *c, PyObject *key)
{
    PyObject *v;
    int r = fc_memo_sub_where(c, key, &v);
    if (r < 0 || v != NULL) {
        return v;
    }
    if (r > 0) {
        FcMemo *m = &c->native;
        if ((m->sub = PyDict_New()) == NULL) {
            return NULL;
        }
        m->sub_key = Py_NewRef(key);
        m->sub_pos = m->n;
        m->sub_first = m->keep_pos < 0;     /* the keep-alive list comes later */
        m->sub_in_mirror = 0;
        return Py_NewRef(m->sub);
    }
    PyObject *fresh = PyDict_New();
    if (fresh == NULL) {
        return NULL;
    }
    v = PyDict_SetDefault(c->memo, key, fresh);
    Py_XINCREF(v);
    Py_DECREF(fresh);
    return v;
}

/* Move a native memo to another context: its fields, and of its inline
   arrays only the part in use (a big memo uses none). */
static void
fc_memo_move(FcMemo *dst, FcMemo *src)
{
    memcpy(dst, src, offsetof(FcMemo, small));
    if (src->entries == src->small) {
        memcpy(dst->small, src->small, sizeof(FcMemoEntry) * (size_t)src->n);
        dst->entries = dst->small;
    }
    if (src->keep == src->small_keep) {
        memcpy(dst->small_keep, src->small_keep, sizeof(PyObject *) * (size_t)src->nkeep);
        dst->keep = dst->small_keep;
    }
    if (src->subs == src->small_subs) {
        memcpy(dst->small_subs, src->small_subs, sizeof(FcMemoSub) * (size_t)src->nsubs);
        dst->subs = dst->small_subs;
    }
    FcSpare *sp = src->spare;
    fc_memo_init(src);
    src->spare = sp;
}

/* deepcopy(x, memo) from a hook that was shown `memo` by a call still
   running on this thread, with the mirror untouched since: that call, whose
   native table the nested call takes over (c->lender).  NULL otherwise. */
FC_INTERNAL FcCtx *
fc_memo_borrow(FcState *st, PyObject *memo)
{
    PyThreadState *ts = PyThreadState_Get();
    for (FcCtx *o = st->shown; o != NULL; o = o->shown_next) {
        FcMemo *m = &o->native;
        /* a hook that hands the memo to another thread: that thread's
           call uses the dict, as for a caller's memo */
        if (!o->lent && m->mirror == memo && o->shown_ts == ts) {
#if FC_MEMO_ABSORB
            if (o->mode == FC_MEMO_NATIVE && !m->dict_truth
                && (FC_MIR_VER(memo) == m->mir_ver || fc_memo_absorb_keeping(o))) {
                return o;
            }
#endif
            return NULL;
        }
    }
    return NULL;
}

/* Take over the lender's native table. */
FC_INTERNAL void
fc_memo_take(FcCtx *c, FcCtx *lender)
{
    lender->lent_mirror = lender->native.mirror;
    fc_memo_move(&c->native, &lender->native);
    lender->lent = 1;
    c->lender = lender;
    c->st->test.memo_borrowed++;
}

/* The nested call on a borrowed table ends: the hook that called it goes on
   and may read the mirror, and the table goes back.  Keeps a pending
   exception.  0 | -1+exc */
FC_INTERNAL int
fc_memo_return(FcCtx *c)
{
    FcCtx *lender = c->lender;
    if (lender == NULL) {
        return 0;
    }
    FcMemo *m = &c->native;
    int r = 0;
    if (!m->dict_truth && c->mode == FC_MEMO_NATIVE) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        r = fc_memo_sync(m);
        if (r < 0) {
            /* the mirror misses entries: nobody may trust it from now on */
            m->dict_truth = 1;
        }
        if (et != NULL) {
            if (r < 0) {
                PyErr_Clear();
            }
            PyErr_Restore(et, ev, tb);
        }
    }
    fc_memo_move(&lender->native, m);
    lender->lent = 0;
    c->lender = NULL;
    return r;
}

/*
 * A caller's dict
 * ---------------
 * deepcopy(x, memo) with a dict of the caller's own used to make that dict
 * the memo for the whole call: an int and a dict operation for every
 * lookup and store, and none of the roads that need a native memo (the
 * value types, ghosts, hidden copies).  pydantic's model_copy(deep=True)
 * is that call: its __deepcopy__ makes memo = {id(self): m} and hands it
 * to deepcopy(self.__dict__, memo), so every copy of a model paid it
 * (200 orders: 5.9 ms, against 1.9 ms for the same dicts with no memo).
 *
 * What the caller can tell is the dict once the call has returned, and,
 * while it runs, what code that reaches the dict finds there.  Code that
 * is not ours runs only where the walker runs user code (3.12+: no
 * collection, so no finalizer, anywhere else; the essay in deepcopy.c,
 * "Small subtrees", has the one exception, which this shares).  So a small
 * exact dict is taken as the native table's mirror ("Showing the memo"):
 * its entries are loaded into the table, the call runs natively, and the
 * dict is brought up to date -- the stdlib's entries in its order, the
 * keep-alive list at its place, the copies tracked, no half-built dict --
 * before any user code runs (fc_before_user_code) and when the call ends,
 * whether it failed or not (the stdlib's memo keeps what a failed call
 * stored).  After user code its stamp says whether anything wrote to it
 * (any write, our own syncs aside); if so it is the memo from then on,
 * as before.  A hook shown it takes the usual road (show, hide, absorb).
 *
 * Not taken: a dict of more than FC_ADOPT_MAX keys (loading is a pass over
 * them, and a memo shared by many calls grows); one with a key that is
 * not an exact int id (torch's "torch" sub-memo; a bool; a negative int),
 * a value that is _nil, or an id(memo) entry that is not an exact list;
 * one another call is using as its mirror (shown to a hook, lent, or
 * taken so); deep=/share=, the profiler and tapes (they count what the
 * dict mode counts).  Entries already in the dict are taken on 3.14+
 * only (pyver.h, FC_MEMO_ADOPT): through 3.13 deepcopy() looks an atomic
 * up in the memo, which the native walker never does, so an entry for
 * one would be missed there.  The table holds no reference to those
 * entries' objects (a stale id is as good a key as a live one, as in the
 * stdlib), so it proves no miss by a reference count (m->foreign).
 */
#if FC_MEMO_ADOPT
#define FC_ADOPT_MAX FC_MEMO_INLINE

/* k, an exact int, as the address it is the id of; NULL: none (negative,
   0, too big).  No exception. */
static void *
fc_id_ptr(PyObject *k)
{
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(k, &overflow);
    if (overflow != 0 || v <= 0 || (unsigned long long)v > (unsigned long long)UINTPTR_MAX) {
        PyErr_Clear();      /* (an exact int raises nothing here) */
        return NULL;
    }
    return (void *)(uintptr_t)v;
}

FC_INTERNAL int
fc_memo_adopt(FcCtx *c, PyObject *memo, PyObject *nil)
{
    FcState *st = c->st;
    FcMemo *m = &c->native;
    if (!PyDict_CheckExact(memo) || PyDict_GET_SIZE(memo) > FC_ADOPT_MAX) {
        return 0;
    }
    for (FcCtx *o = st->shown; o != NULL; o = o->shown_next) {
        if ((o->lent ? o->lent_mirror : o->native.mirror) == memo) {
            return 0;
        }
    }
    for (FcCtx *o = st->adopters; o != NULL; o = o->adopt_next) {
        if (o->adopt_dict == memo) {
            return 0;
        }
    }
    /* all of it, or nothing */
    Py_ssize_t pos = 0, nent = 0;
    PyObject *k, *v;
    while (PyDict_Next(memo, &pos, &k, &v)) {
        void *p = PyLong_CheckExact(k) ? fc_id_ptr(k) : NULL;
        if (p == NULL || v == nil) {
            return 0;
        }
        if (p == (void *)memo) {
            if (!PyList_CheckExact(v)) {
                return 0;
            }
            continue;
        }
        if (!FC_ATOMIC_FIRST || p == (void *)&fc_memo_dead) {
            return 0;
        }
        nent++;
    }
#if !FC_HAVE_DICT_VERSION
    if (!fc_mirror_watch(m->mir_wid, memo)) {
        return 0;
    }
    m->mir_watched = 1;
#endif
    m->mirror = Py_NewRef(memo);    /* from here fc_memo_clear lets it go */
    if (fc_mkeys_room(m, nent) < 0) {
        return -1;
    }
    pos = 0;
    while (PyDict_Next(memo, &pos, &k, &v)) {
        void *p = fc_id_ptr(k);
        if (p == (void *)memo) {
            m->keep_pos = m->n;
            m->mirror_keep = Py_NewRef(v);
            m->mirror_id = Py_NewRef(k);
            continue;
        }
        /* at most FC_ADOPT_MAX: the inline entries, nothing to fail */
        if (fc_memo_set(m, (PyObject *)p, v) < 0) {
            return -1;
        }
        m->mkeys[m->n - 1] = Py_NewRef(k);
        m->mir_n = m->n;
    }
    m->mir_len = PyDict_GET_SIZE(memo);
    m->mir_keep_len = m->mirror_keep != NULL ? PyList_GET_SIZE(m->mirror_keep) : 0;
    m->mir_ver = FC_MIR_VER(memo);
    m->foreign = m->n > 0;
    m->adopted = 1;
    c->adopt_dict = memo;
    c->adopt_next = st->adopters;
    st->adopters = c;
    st->test.memo_adopted++;
    return 1;
}

FC_INTERNAL int
fc_memo_adopt_sync(FcCtx *c)
{
    if (c->mode != FC_MEMO_NATIVE) {
        return 0;
    }
    /* as for a hook shown it (fc_memo_show), and none of those copies is
       hidden again before the code runs (fc_gc_before_user_code's sweep) */
    if (fc_memo_current(c) < 0) {
        return -1;
    }
    c->gc_due = 0;
    c->gc_swept = c->native.n;
    return 0;
}

FC_INTERNAL int
fc_memo_adopt_check(FcCtx *c)
{
    FcMemo *m = &c->native;
    if (c->mode == FC_MEMO_NATIVE && m->adopted && FC_MIR_VER(m->mirror) != m->mir_ver) {
        /* it is the memo from now on, with all we had: after user code
           that is all of it already (synced before it ran); after a buffer
           backend, what the backend added natively meanwhile comes after
           whatever another thread wrote there */
        int r = fc_memo_sync(m);
        fc_memo_to_dict(c);
        return r;
    }
    return 0;
}

FC_INTERNAL int
fc_memo_adopt_end(FcCtx *c)
{
    FcMemo *m = &c->native;
    if (c->mode != FC_MEMO_NATIVE || !m->adopted || m->dict_truth) {
        return 0;
    }
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    int r = fc_memo_sync(m);
    if (et != NULL) {
        if (r < 0) {
            PyErr_Clear();
        }
        PyErr_Restore(et, ev, tb);
    }
    return r;
}

FC_INTERNAL void
fc_memo_adopt_release(FcCtx *c)
{
    FcCtx **pp = &c->st->adopters;
    while (*pp != NULL && *pp != c) {
        pp = &(*pp)->adopt_next;
    }
    if (*pp == c) {
        *pp = c->adopt_next;
    }
    c->adopt_next = NULL;
    c->adopt_dict = NULL;
}
#endif

/* memo.get(id(x), nil).  1 hit (*res new ref) | 0 miss | -1+exc */
FC_INTERNAL int
fc_memo_lookup_py(FcCtx *c, PyObject *x, PyObject *nil, PyObject **res)
{
    PyObject *k = PyLong_FromVoidPtr(x);
    if (k == NULL) {
        return -1;
    }
    int r;
#if FC_MEMO_IN
    /* 3.15: `if d in memo: return memo[d]`; no _nil (an exact dict answers
       both with no user code: one lookup) */
    (void)nil;
    if (c->mode == FC_MEMO_DICT) {
        r = fc_dict_getref(c->memo, k, res);
        Py_DECREF(k);
        return r;
    }
    r = PySequence_Contains(c->memo, k);
    if (r > 0) {
        *res = PyObject_GetItem(c->memo, k);
        r = *res != NULL ? 1 : -1;
    }
    else {
        *res = NULL;
    }
    Py_DECREF(k);
    return r;
#else
    if (c->mode == FC_MEMO_DICT) {
        r = fc_dict_getref(c->memo, k, res);
        Py_DECREF(k);
        if (r > 0 && *res == nil) {
            /* `y = memo.get(d, _nil); if y is not _nil: return y` */
            Py_CLEAR(*res);
            r = 0;
        }
        return r;
    }
    PyObject *args[3] = {c->memo, k, nil};
    PyObject *v = PyObject_VectorcallMethod(c->st->s_get, args,
                                            3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    Py_DECREF(k);
    if (v == NULL) {
        return -1;
    }
    if (v == nil) {
        Py_DECREF(v);
        *res = NULL;
        return 0;
    }
    *res = v;
    return 1;
#endif
}

/* The memo lookup that opens every deepcopy() step.
   1 hit (*res new ref) | 0 miss | -1+exc */
FC_INTERNAL_INLINE int
fc_memo_lookup(FcCtx *c, PyObject *x, PyObject **res)
{
    if (FC_LIKELY(c->mode == FC_MEMO_NATIVE)) {
        PyObject *v = fc_memo_get(&c->native, x);
        if (v != NULL) {
            *res = Py_NewRef(v);
            return 1;
        }
        return 0;
    }
    return fc_memo_lookup_py(c, x, c->st->nil, res);
}

/* fc_memo_store with a visible memo.  0 | -1+exc */
static int
fc_memo_store_py(FcCtx *c, PyObject *x, PyObject *y)
{
    PyObject *k = PyLong_FromVoidPtr(x);
    if (k == NULL) {
        return -1;
    }
    int r = (c->mode == FC_MEMO_DICT) ? PyDict_SetItem(c->memo, k, y)
                                      : PyObject_SetItem(c->memo, k, y);
    Py_DECREF(k);
    return r;
}

/* memo[id(x)] = y.  0 | -1+exc */
FC_INTERNAL_INLINE int
fc_memo_store(FcCtx *c, PyObject *x, PyObject *y)
{
    if (FC_LIKELY(c->mode == FC_MEMO_NATIVE)) {
        return fc_memo_set(&c->native, x, y);
    }
    return fc_memo_store_py(c, x, y);
}

/* _keep_alive(x, memo):
       try: memo[id(memo)].append(x)
       except KeyError: memo[id(memo)] = [x]
   0 | -1+exc */
FC_INTERNAL int
fc_memo_keep_alive(FcCtx *c, PyObject *x)
{
    if (FC_LIKELY(c->mode == FC_MEMO_NATIVE)) {
        return fc_memo_keep(&c->native, x);
    }
    PyObject *mid = fc_ctx_memo_id(c);
    if (mid == NULL) {
        return -1;
    }
    PyObject *lst = NULL;
    if (c->mode == FC_MEMO_DICT) {
        int r = fc_dict_getref(c->memo, mid, &lst);
        if (r < 0) {
            if (!PyErr_ExceptionMatches(PyExc_KeyError)) {
                return -1;
            }
            PyErr_Clear();
        }
    }
    else {
        lst = PyObject_GetItem(c->memo, mid);
        if (lst == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_KeyError)) {
                return -1;
            }
            PyErr_Clear();
        }
    }
    if (lst != NULL) {
        int r;
        if (PyList_CheckExact(lst)) {
            r = PyList_Append(lst, x);
        }
        else {
            PyObject *v = PyObject_CallMethodOneArg(lst, c->st->s_append, x);
            r = v == NULL ? -1 : 0;
            Py_XDECREF(v);
        }
        Py_DECREF(lst);
        if (r == 0) {
            return 0;
        }
        /* the stdlib's except KeyError also covers the append call */
        if (!PyErr_ExceptionMatches(PyExc_KeyError)) {
            return -1;
        }
        PyErr_Clear();
    }
    PyObject *nl = PyList_New(1);
    if (nl == NULL) {
        return -1;
    }
    PyList_SET_ITEM(nl, 0, Py_NewRef(x));
    int r = (c->mode == FC_MEMO_DICT) ? PyDict_SetItem(c->memo, mid, nl)
                                      : PyObject_SetItem(c->memo, mid, nl);
    Py_DECREF(nl);
    return r;
}

/* The tuple copier's check after its items
       try: return memo[id(x)]
       except KeyError: pass
   since: 0, or 1 + the number of entries of the native table when x's
   frame began, x then missing from it.  While misses are proven, such a
   lookup would index every entry its items left pending ("Proven misses"
   above), one catch-up pass a tuple of a list of (shared, fresh) pairs.
   But a native table only ever gains entries at its end -- a hook's are
   absorbed there, a ghost is filled with a temporary made later, a
   deletion makes the dict the memo for good -- so x is in it exactly
   when it is among the entries added since; a few of them are read in
   order instead, and a miss is remembered as a proven one, so that x's
   own entry is appended after them, pending too.  Not when none is
   pending: the lookup then costs one probe and no pass, and x's entry is
   indexed at once (pending alone, the next lookup would index just it --
   a catch-up of one entry a tuple, which made rows whose other entries
   are all indexed, as on 3.10, look thin to FC_THIN_CATCH).
   1 hit (*res new ref) | 0 miss | -1+exc */
#define FC_SINCE_SCAN 32
FC_INTERNAL int
fc_memo_getitem(FcCtx *c, PyObject *x, Py_ssize_t since, PyObject **res)
{
    if (FC_LIKELY(c->mode == FC_MEMO_NATIVE)) {
        FcMemo *m = &c->native;
        if (since > 0 && m->nidx != m->n && fc_memo_proving(m) && m->n >= since - 1
            && m->n - (since - 1) <= FC_SINCE_SCAN) {
            for (Py_ssize_t i = since - 1; i < m->n; i++) {
                if (m->entries[i].key == x) {
                    m->hits++;
                    *res = Py_NewRef(m->entries[i].value);
                    return 1;
                }
            }
            m->miss = x;
            m->miss_slot = FC_MEMO_PENDING;
            *res = NULL;
            return 0;
        }
        PyObject *v = fc_memo_get(m, x);
        *res = v ? Py_NewRef(v) : NULL;
        return v != NULL;
    }
    PyObject *k = PyLong_FromVoidPtr(x);
    if (k == NULL) {
        return -1;
    }
    int r;
    if (c->mode == FC_MEMO_DICT) {
        r = fc_dict_getref(c->memo, k, res);
    }
    else {
        *res = PyObject_GetItem(c->memo, k);
        if (*res != NULL) {
            r = 1;
        }
        else if (PyErr_ExceptionMatches(PyExc_KeyError)) {
            PyErr_Clear();
            r = 0;
        }
        else {
            r = -1;
        }
    }
    Py_DECREF(k);
    return r;
}

/* "if y is not x: memo[d] = y; _keep_alive(x, memo)".  0 | -1+exc */
FC_INTERNAL_INLINE int
fc_memo_finish(FcCtx *c, PyObject *x, PyObject *y)
{
    if (y == x) {
        return 0;
    }
    if (fc_memo_store(c, x, y) < 0) {
        return -1;
    }
    return fc_memo_keep_alive(c, x);
}

/* fc_memo_finish for a copy just made, which it takes over: y may be NULL
   (its maker failed).  y | NULL+exc */
FC_INTERNAL_INLINE PyObject *
fc_memo_done(FcCtx *c, PyObject *x, PyObject *y)
{
    if (y != NULL && fc_memo_finish(c, x, y) < 0) {
        Py_CLEAR(y);
    }
    return y;
}

#ifdef FC_DEBUG
/* Whether key's entry holds value, found without changing the table: no
   catch-up pass, no remembered miss, no hit counted -- a debug check must
   not steer the copy it checks (a lookup here made every finished
   container catch up, so debug builds never kept entries pending and took
   the thin road of FC_THIN_CATCH on copies that do not).  Pending entries
   are scanned from the newest: a container just finished stored its entry
   before its children's, so the scan costs what its subtree added.  Past
   FC_PEEK_MAX pending entries the check is skipped (answers 1): a chain
   of 100,000 nested lists made it quadratic, a minute a copy under ASan. */
#define FC_PEEK_MAX 4096

static int
fc_memo_holds(FcMemo *m, PyObject *key, PyObject *value)
{
    Py_ssize_t lo = m->mask == 0 ? 0 : m->nidx;
    Py_ssize_t stop = m->n - 1 - lo < FC_PEEK_MAX ? lo : m->n - FC_PEEK_MAX;
    for (Py_ssize_t i = m->n - 1; i >= stop; i--) {
        if (m->entries[i].key == key) {
            return m->entries[i].value == value;
        }
    }
    if (stop > lo) {
        return 1;   /* not among the newest FC_PEEK_MAX: unchecked */
    }
    if (m->mask == 0) {
        return 0;
    }
    size_t mask = (size_t)m->mask;
    for (size_t j = fc_memo_hash(key) & mask; m->index[j] != 0; j = (j + 1) & mask) {
        int32_t e = m->index[j];
        if (m->entries[e - 1].key == key) {
            return m->entries[e - 1].value == value;
        }
    }
    return 0;
}
#endif

/* The same, for a copier that already stored memo[id(x)] = y before
   copying the children (list, dict, _reconstruct): a native memo cannot
   have changed since (no Python code holds it), so only the keep-alive is
   left.  0 | -1+exc */
FC_INTERNAL_INLINE int
fc_memo_finish_stored(FcCtx *c, PyObject *x, PyObject *y)
{
    if (FC_LIKELY(c->mode == FC_MEMO_NATIVE) && y != x) {
        FC_ASSERT(fc_memo_holds(&c->native, x, y));
        return fc_memo_keep(&c->native, x);
    }
    return fc_memo_finish(c, x, y);
}
