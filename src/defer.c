/*
 * defer.c: the byte copies of one deepcopy call, recorded and run together.
 *
 * torch.c allocates every result through torch (empty_like, UntypedStorage)
 * exactly as torch's own deepcopy path would, but instead of moving the
 * bytes there and then it records (dst, src, nbytes, device, stream) here,
 * holding a strong reference to the objects that own both buffers.  The
 * recorder hands in its FcDeferSource (defer.h): how to read an owner's
 * address, its library's thread count, its CUDA API -- defer.c knows no
 * backend, and any backend can record.  The
 * queue lives in the call's FcCtx and is flushed:
 *
 *   - before every call that can run code other than fastcopy's and the
 *     interpreter's own (a __deepcopy__, a reduce, a reconstructor, a
 *     __setstate__, an iterator, a __hash__ of a non-str/int key, a share=
 *     predicate, a declined tensor's own __deepcopy__) and before the memo
 *     is handed to Python: a hook could read a result, or write a source;
 *   - at the end of the call, also when it fails, so a caller's memo never
 *     holds a tensor whose bytes were not copied.
 * Between flushes no hook runs, so no one can tell when the bytes moved:
 * the results are the eager ones.  Finalizers and weakref callbacks still
 * can (on 3.10/3.11 a garbage collection starts inside any allocation):
 * one may rebind a Parameter's .data, set_() or resize a source, or drop
 * its last reference.  So a recorded copy keeps the two *storages* (torch
 * UntypedStorage objects), not the tensors, and the byte offsets into
 * them; the flush reads each storage's address and size again and copies
 * what the storage holds at that offset then -- the bytes the source had
 * when it was recorded, unless user code wrote them or moved them with a
 * resize (torch's resize keeps the prefix) -- or raises RuntimeError if
 * the storage no longer holds them (it was shrunk).  Never freed memory.
 *
 * Host copies under 64 KiB are not recorded: they run at once (recording
 * costs more than the copy, and nothing is gained by waiting).
 *
 * Running them: CPU copies move with memcpy; from 64 KiB in total with the
 * GIL released, and from 32 MiB split into equal byte ranges over as many
 * threads as torch.get_num_threads() -- what torch's own copy_ would use --
 * but no more than one per 16 MiB.  The missing pages of a destination of
 * 64 KiB or more are mapped ahead with MADV_POPULATE_WRITE (those already
 * mapped, as glibc's reused heap is, are left alone).  CUDA copies go,
 * one submission per (device, stream) in first-seen order, to
 * fastcopy._cuda's C API (cuMemcpyBatchAsync on torch's current stream;
 * see cuda/_cuda.c), which never waits.
 *
 * configure(torch_defer=False) turns recording off: each copy then runs
 * the moment torch.c would have recorded it.
 */
#include "fastcopy.h"
#include "defer.h"
#include "state.h"
#include "profile.h"

#include "platform.h"

/* Host copies are split over up to torch's intra-op thread count, as
   torch's own copy_ of a big storage is (at::parallel_for), but each thread
   takes at least this many bytes: starting and joining a thread costs
   ~30-150 us here, and the second CPU is often busy.  Measured on the 2-CPU
   VM (one flush of N MiB into mapped pages, 2 threads against 1, medians of
   15 interleaved rounds, three runs): 4.0x as slow at 1 MiB, 1.14x at 2,
   1.06x at 4, 1.04-1.47x at 8, 0.93-1.30x at 16, 1.02-1.28x at 32,
   0.88x at 48, 1.01-1.04x at 64, 1.00x at 96; a ~30 MB model copy 1.3-2.3x
   as slow with 1 MiB shares (benchmarks/bench_kernel.py --methods
   fastcopy).  No size gained here; 16 MiB keeps the threads for copies
   where a machine with idle CPUs can gain and this one loses little. */
#define FC_DEFER_PER_THREAD ((size_t)16 << 20)

typedef struct {
    const FcCopyOp *ops;
    Py_ssize_t nops;
    size_t lo, hi;          /* byte range of the concatenated copies */
    int road;               /* FC_ROAD_* */
} FcParJob;

/* Pieces of a big copy: its destination pages are populated just before
   they are written (below), a piece at a time so they are still in cache. */
#define FC_POPULATE_MIN ((size_t)1 << 16)
#define FC_POPULATE_PIECE ((size_t)2 << 20)
/* A transparent huge page, and the destinations that get them: numpy's own
   allocator advises huge pages from 4 MiB on (numpy's alloc.c), and so does
   FC_ROAD_HUGE, for torch's too. */
#define FC_HUGE_PAGE ((size_t)2 << 20)
#define FC_HUGE_MIN ((size_t)4 << 20)
/* Streaming stores (fc_stream_copy, below): x86-64, where SSE2 is part of
   the instruction set, and where mincore() can tell mapped pages. */
#if FC_PLAT_HAVE_POPULATE && (defined(__x86_64__) || defined(_M_X64))
#  define FC_HAVE_STREAM 1
#else
#  define FC_HAVE_STREAM 0
#endif

#if FC_PLAT_HAVE_POPULATE
#  include <stdatomic.h>
static atomic_int fc_populate_broken;   /* the kernel said no once: stop asking */
static atomic_int fc_thp_mode = -1;     /* fc_plat_thp_mode(), read once */

/* Populate the pages of [a, b) (page aligned, at most one piece) that are
   not mapped yet, and only those: mincore() tells, one byte per page, from
   the page tables (for anonymous memory "resident" is "mapped").  A
   destination that the allocator hands back from its free lists (glibc's
   heap below its mmap threshold, which adapts upwards to the sizes freed)
   is mapped already, and MADV_POPULATE_WRITE would walk every one of its
   pages for nothing (measured: 0.5-1.1 ms of system time per copy of a
   ~30 MB model, 0 without it); a fresh mmap or a trimmed heap top is not,
   and is mapped here in one call per run of missing pages.
   0 | -1 when the kernel refused (the caller stops asking); *missing set
   when some page was not mapped */
static int
fc_populate_missing(uintptr_t a, uintptr_t b, size_t page, int *missing)
{
    unsigned char vec[FC_POPULATE_PIECE / 4096];
    size_t npages = (size_t)(b - a) / page;
    if (npages > sizeof(vec) || fc_plat_pages_mapped((void *)a, (size_t)(b - a), vec) != 0) {
        /* (cannot happen for our own buffers) populate it all */
        *missing = 1;
        return fc_plat_pages_populate((void *)a, (size_t)(b - a));
    }
    for (size_t i = 0; i < npages; ) {
        if (vec[i] & 1) {
            i++;
            continue;
        }
        size_t j = i + 1;
        while (j < npages && !(vec[j] & 1)) {
            j++;
        }
        *missing = 1;
        if (fc_plat_pages_populate((void *)(a + i * page), (j - i) * page) != 0) {
            return -1;
        }
        i = j;
    }
    return 0;
}

/* The check above costs a system call, ~1.5 us on this VM, also when every
   page is mapped: 5-16% of a copy of 64 KiB-2 MiB into glibc's recycled
   heap (numpy 64 KiB 0.84x numpy's own copy with it, 1.54x without; 1 MiB
   0.95x and 1.07x), while a fresh destination saves ~1.7 us per 4 KiB page
   populated rather than faulted.  So destinations under FC_HUGE_MIN are
   checked by a streak: after FC_CHECK_QUIET checks in a row found every
   page mapped, only one copy in 2, 4, ... FC_CHECK_SPARSEST is checked;
   one check that finds a missing page restores checking every copy.  A
   program whose copies keep getting fresh pages (replay_arrays, a trimmed
   heap top) is checked every time; one that copies into recycled memory
   pays for a check now and then.  Only a cost: the bytes are the same. */
#define FC_CHECK_QUIET 8u
#define FC_CHECK_SPARSEST 64u
static atomic_uint fc_mapped_run;       /* checks in a row that found nothing to map */
static atomic_uint fc_unchecked;        /* copies since the last check, when sparse */

static int
fc_check_due(void)
{
    unsigned run = atomic_load_explicit(&fc_mapped_run, memory_order_relaxed);
    if (run < FC_CHECK_QUIET) {
        return 1;
    }
    unsigned every = 1u << (run - FC_CHECK_QUIET);
    if (every > FC_CHECK_SPARSEST) {
        every = FC_CHECK_SPARSEST;
    }
    unsigned k = atomic_fetch_add_explicit(&fc_unchecked, 1, memory_order_relaxed) + 1;
    if (k < every) {
        return 0;
    }
    atomic_store_explicit(&fc_unchecked, 0, memory_order_relaxed);
    return 1;
}

static void
fc_check_found(int missing)
{
    if (missing) {
        atomic_store_explicit(&fc_mapped_run, 0, memory_order_relaxed);
    }
    else if (atomic_load_explicit(&fc_mapped_run, memory_order_relaxed) < 2 * FC_CHECK_QUIET) {
        atomic_fetch_add_explicit(&fc_mapped_run, 1, memory_order_relaxed);
    }
}

/* The kernel's THP mode (platform.h), read at the first big copy. */
static int
fc_thp(void)
{
    int m = atomic_load_explicit(&fc_thp_mode, memory_order_relaxed);
    if (FC_UNLIKELY(m < 0)) {
        m = fc_plat_thp_mode();
        atomic_store_explicit(&fc_thp_mode, m, memory_order_relaxed);
    }
    return m;
}

/* A destination of FC_HUGE_MIN bytes or more on FC_ROAD_HUGE: huge pages
   advised behind the whole 2 MiB pages inside it, unless it is mapped
   already (a block glibc's heap hands back: advice would only invite
   khugepaged to fill its holes).  Sampled at the first and last of those
   pages; a fresh mmap is unmapped throughout.  Nothing is advised outside
   [dst, dst+n), so the pages around it keep their size and the resident
   set grows by no more than the bytes written. */
static void
fc_advise_huge(char *dst, size_t n)
{
    uintptr_t a = ((uintptr_t)dst + FC_HUGE_PAGE - 1) & ~(uintptr_t)(FC_HUGE_PAGE - 1);
    uintptr_t b = ((uintptr_t)dst + n) & ~(uintptr_t)(FC_HUGE_PAGE - 1);
    unsigned char first = 1, last = 1;
    if (b <= a) {
        return;
    }
    size_t page = fc_plat_page_size();
    if (fc_plat_pages_mapped((void *)a, page, &first) != 0
        || fc_plat_pages_mapped((void *)(b - page), page, &last) != 0
        || (first & 1) || (last & 1)) {
        return;
    }
    (void)fc_plat_pages_advise_huge((void *)a, (size_t)(b - a));
}

#if FC_HAVE_STREAM
/* Is [dst, dst+n) mapped already?  Sampled at its first, middle and last
   whole pages: a block the allocator recycles (glibc's heap, a pool hit)
   is mapped throughout, a fresh mmap nowhere. */
static int
fc_dst_mapped(char *dst, size_t n)
{
    size_t page = fc_plat_page_size();
    uintptr_t a = ((uintptr_t)dst + page - 1) & ~(uintptr_t)(page - 1);
    uintptr_t b = ((uintptr_t)dst + n) & ~(uintptr_t)(page - 1);
    if (b < a + 3 * page) {
        return 0;
    }
    uintptr_t at[3] = {a, (a + (b - a) / 2) & ~(uintptr_t)(page - 1), b - page};
    for (int i = 0; i < 3; i++) {
        unsigned char v = 0;
        if (fc_plat_pages_mapped((void *)at[i], page, &v) != 0 || !(v & 1)) {
            return 0;
        }
    }
    return 1;
}
#endif /* FC_HAVE_STREAM */
#endif /* FC_PLAT_HAVE_POPULATE */

/* Copies of FC_STREAM_MIN (8 MiB) and more into pages that are mapped
   already are written with non-temporal stores (x86-64: SSE2's movntdq,
   in every x86-64 CPU), which skip reading each destination line into the
   cache before overwriting it.  glibc's memcpy switches to them only from
   3/4 of the last-level cache it is told about (240 MiB on the VM below).
   Measured there (medians of 9, one thread): into mapped pages 8 MiB
   0.59 -> 0.33 ms, 32 MiB 3.5 -> 2.1 ms, 128 MiB 15.0 -> 8.0 ms, 512 MiB
   52 -> 34 ms; into fresh huge pages they lose (128 MiB 15.8 -> 22.2 ms:
   the kernel has just zeroed each 2 MiB page into the cache), so fresh
   destinations keep memcpy.  Below 8 MiB a source and destination that
   are in the cache already (the same array copied again and again) copy
   faster with cached stores (4 MiB: 92 us memcpy, 155 us streamed; 8 MiB:
   392 and 327 us).  The copy then is not in the cache, which a copy of
   this size would mostly not be either. */
#define FC_STREAM_MIN ((size_t)8 << 20)
#if FC_HAVE_STREAM
#  include <emmintrin.h>
static void
fc_stream_copy(char *dst, const char *src, size_t n)
{
    size_t head = (16 - ((uintptr_t)dst & 15)) & 15;
    if (head > n) {
        head = n;
    }
    memcpy(dst, src, head);
    dst += head;
    src += head;
    n -= head;
    size_t m = n & ~(size_t)63;
    for (size_t i = 0; i < m; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(src + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(src + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(src + i + 32));
        __m128i d = _mm_loadu_si128((const __m128i *)(src + i + 48));
        _mm_stream_si128((__m128i *)(dst + i), a);
        _mm_stream_si128((__m128i *)(dst + i + 16), b);
        _mm_stream_si128((__m128i *)(dst + i + 32), c);
        _mm_stream_si128((__m128i *)(dst + i + 48), d);
    }
    /* the stores are weakly ordered: visible before this thread goes on
       (and before a joining thread reads them) */
    _mm_sfence();
    memcpy(dst + m, src + m, n - m);
}
#endif

#if FC_PLAT_HAVE_POPULATE
/* The road for a destination's pages (fc_par_copy).  Measured on the 2-CPU
   VM (THP "madvise", a fresh 128 MiB mmap, medians of 7; limit: memcpy into
   mapped pages, 13.6 ms): 4 KiB pages faulted by memcpy 98 ms, populated a
   2 MiB piece at a time 64 ms; huge pages faulted by memcpy 17 ms,
   populated a piece at a time 23 ms.  So a destination that can have huge
   pages gets them and no population; one that cannot is populated. */
FC_INTERNAL int
fc_copy_road(FcState *st)
{
    if (st->huge_pages && fc_thp() != FC_PLAT_THP_NEVER) {
        return FC_ROAD_HUGE;
    }
    return FC_ROAD_POPULATE;
}
#else
FC_INTERNAL int
fc_copy_road(FcState *st)
{
    (void)st;
    return FC_ROAD_PLAIN;
}
#endif /* FC_PLAT_HAVE_POPULATE */

/* memcpy(dst, src, n), bytes of op.  A fresh destination faults on every
   page it touches.  On FC_ROAD_POPULATE its missing pages are mapped
   ahead, a piece at a time, with one madvise(MADV_POPULATE_WRITE) per run
   of them (measured here: 128 MiB into a fresh torch tensor in 49-57 ms
   against 57-75 ms for torch's own copy_, and ~90 ms for a plain memcpy).
   The pages hold the same bytes either way.  numpy's arrays of 64 KiB-4
   MiB on a trimmed heap top come unmapped (replay_arrays, 7 MB of such
   arrays a copy: 1,628 faults, 1.86 ms of its 2.33 ms in the kernel; 1.04
   ms populated); a recycled block costs the mincore() call, ~0.5 us.  On
   FC_ROAD_HUGE an op of FC_HUGE_MIN or more was advised huge pages
   (fc_par_copy): the whole 2 MiB pages inside it are copied as they are
   (each fault is one 2 MiB zeroing the copy then finds in cache), and only
   its 4 KiB head and tail are populated (up to 2 x 2 MiB: ~1 ms of faults
   otherwise).  Pieces end on 2 MiB boundaries, so each lies either inside
   those whole pages or outside them.  On either road, a range of
   FC_STREAM_MIN bytes or more whose pages are all mapped is written with
   non-temporal stores (above). */
static void
fc_copy_bytes(char *dst, const char *src, size_t n, const FcCopyOp *op, int road)
{
#if FC_HAVE_STREAM
    if (road != FC_ROAD_PLAIN && n >= FC_STREAM_MIN && fc_dst_mapped(dst, n)) {
        fc_stream_copy(dst, src, n);
        return;
    }
#endif
#if FC_PLAT_HAVE_POPULATE
    if (road != FC_ROAD_PLAIN && n >= FC_POPULATE_MIN
        && !atomic_load_explicit(&fc_populate_broken, memory_order_relaxed)) {
        int small = op->n < FC_HUGE_MIN, missing = 0;
        if (small && !fc_check_due()) {
            memcpy(dst, src, n);
            return;
        }
        size_t page = fc_plat_page_size();
        uintptr_t ha = 0, hb = 0;       /* the whole huge pages left as they are */
        if (road == FC_ROAD_HUGE && op->n >= FC_HUGE_MIN) {
            ha = ((uintptr_t)op->dst + FC_HUGE_PAGE - 1) & ~(uintptr_t)(FC_HUGE_PAGE - 1);
            hb = ((uintptr_t)op->dst + op->n) & ~(uintptr_t)(FC_HUGE_PAGE - 1);
        }
        for (size_t off = 0, len; off < n; off += len) {
            uintptr_t p = (uintptr_t)dst + off;
            uintptr_t next = (p + FC_POPULATE_PIECE) & ~(uintptr_t)(FC_POPULATE_PIECE - 1);
            len = next - p < n - off ? (size_t)(next - p) : n - off;
            uintptr_t a = (p + page - 1) & ~(uintptr_t)(page - 1);
            uintptr_t b = (p + len) & ~(uintptr_t)(page - 1);
            if (b > a && !(a >= ha && b <= hb)
                && fc_populate_missing(a, b, page, &missing) != 0) {
                /* EINVAL before Linux 5.14, or a mapping it refuses */
                atomic_store_explicit(&fc_populate_broken, 1, memory_order_relaxed);
                memcpy(dst + off, src + off, n - off);
                return;
            }
            memcpy(dst + off, src + off, len);
        }
        if (small) {
            fc_check_found(missing);
        }
        return;
    }
#else
    (void)op;
    (void)road;
#endif
    memcpy(dst, src, n);
}

/* Copy bytes [lo, hi) of the concatenation of ops' buffers. */
static void
fc_par_range(const FcCopyOp *ops, Py_ssize_t nops, size_t lo, size_t hi, int road)
{
    size_t base = 0;
    for (Py_ssize_t i = 0; i < nops && base < hi; i++) {
        size_t n = ops[i].n, a, b;
        if (base + n > lo) {
            a = lo > base ? lo - base : 0;
            b = hi - base < n ? hi - base : n;
            fc_copy_bytes(ops[i].dst + a, ops[i].src + a, b - a, &ops[i], road);
        }
        base += n;
    }
}

static void
fc_par_worker(void *arg)
{
    FcParJob *j = arg;
    fc_par_range(j->ops, j->nops, j->lo, j->hi, j->road);
}

/* Every op's memcpy, split by bytes over up to nthreads threads (this one
   included); range edges fall on page boundaries of the first op's
   destination -- huge-page boundaries for shares of FC_HUGE_MIN and more,
   so that two threads never fault the same huge page.  On FC_ROAD_HUGE the
   big ops are advised first (the kernel's THP mode "madvise"; "always"
   needs no advice).  Call without the GIL.  A thread that cannot be
   started leaves its range to this thread. */
FC_INTERNAL void
fc_par_copy(const FcCopyOp *ops, Py_ssize_t nops, size_t total, int nthreads,
            int road)
{
#if FC_PLAT_HAVE_POPULATE
    if (road == FC_ROAD_HUGE && total >= FC_HUGE_MIN && fc_thp() == FC_PLAT_THP_MADVISE) {
        for (Py_ssize_t i = 0; i < nops; i++) {
            if (ops[i].n >= FC_HUGE_MIN) {
                fc_advise_huge(ops[i].dst, ops[i].n);
            }
        }
    }
#endif
    if (nthreads > FC_PAR_MAX_THREADS) {
        nthreads = FC_PAR_MAX_THREADS;
    }
    if (nthreads <= 1 || total < ((size_t)nthreads << 16)) {
        fc_par_range(ops, nops, 0, total, road);
        return;
    }
    FcParJob job[FC_PAR_MAX_THREADS];
    FcPlatThread tid[FC_PAR_MAX_THREADS];
    int started[FC_PAR_MAX_THREADS];
    size_t per = total / (size_t)nthreads, pos = 0;
    uintptr_t base = (uintptr_t)ops[0].dst;
    uintptr_t align = (per >= FC_HUGE_MIN ? FC_HUGE_PAGE : 4096) - 1;
    for (int i = 0; i < nthreads; i++) {
        size_t end = total;
        if (i < nthreads - 1) {
            end = (size_t)(((base + pos + per + align) & ~align) - base);
            if (end > total) {
                end = total;
            }
        }
        job[i].ops = ops;
        job[i].nops = nops;
        job[i].lo = pos;
        job[i].hi = end;
        job[i].road = road;
        pos = end;
    }
    for (int i = 1; i < nthreads; i++) {
        started[i] = job[i].hi > job[i].lo
            && fc_plat_thread_start(&tid[i], fc_par_worker, &job[i], 64 << 10) == 0;
    }
    fc_par_range(ops, nops, job[0].lo, job[0].hi, road);
    for (int i = 1; i < nthreads; i++) {
        if (started[i]) {
            fc_plat_thread_join(&tid[i]);
        }
        else {
            fc_par_range(ops, nops, job[i].lo, job[i].hi, road);
        }
    }
}

/* ------------------------------------------------------------------ */
/* CUDA: fastcopy._cuda's C API                                        */
/* ------------------------------------------------------------------ */

/* Submit ops[i] for every i in idx[0..n) (all on one device and stream).
   0 | -1+exc */
static int
fc_defer_cuda(FcState *st, const FcCopyOp *ops, const Py_ssize_t *idx, Py_ssize_t n)
{
    const FcCudaCAPI *api = ops[idx[0]].via->cuda(st);
    if (api == NULL) {
        return -1;
    }
    unsigned long long *dsts = PyMem_Malloc((size_t)n * sizeof(*dsts));
    unsigned long long *srcs = PyMem_Malloc((size_t)n * sizeof(*srcs));
    size_t *sizes = PyMem_Malloc((size_t)n * sizeof(*sizes));
    int rc = -1;
    if (dsts == NULL || srcs == NULL || sizes == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const FcCopyOp *op = &ops[idx[i]];
        if (op->n == 0) {
            continue;       /* the batch API rejects empty copies */
        }
        dsts[m] = (unsigned long long)(uintptr_t)op->dst;
        srcs[m] = (unsigned long long)(uintptr_t)op->src;
        sizes[m] = op->n;
        m++;
    }
    if (m == 0) {
        rc = 0;
        goto done;
    }
    const FcCopyOp *first = &ops[idx[0]];
    if (api->ready(api->ctx) < 0) {
        goto done;
    }
    char err[256];
    const char *path = NULL;
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = api->submit(api->ctx, first->dev, first->stream, dsts, srcs, sizes, (size_t)m,
                    &path, err, sizeof(err));
    Py_END_ALLOW_THREADS
    if (r < 0) {
        PyErr_Format(PyExc_RuntimeError, "fastcopy: CUDA copies failed: %s", err);
        goto done;
    }
    st->test.cuda_batches++;
    st->test.cuda_last_path = path;
    rc = 0;
done:
    PyMem_Free(dsts);
    PyMem_Free(srcs);
    PyMem_Free(sizes);
    return rc;
}

/* ------------------------------------------------------------------ */
/* The queue                                                           */
/* ------------------------------------------------------------------ */

/* Threads for host copies of `total` bytes: the recorder's library's
   count (torch's intra-op count, asked at each big flush:
   torch.set_num_threads may have changed it), 1 if that cannot be had, and
   no more than FC_DEFER_PER_THREAD bytes each allow.  Asked before any
   address is read: it is a call. */
static int
fc_defer_threads(FcState *st, const FcDeferSource *via, size_t total)
{
    if (total < 2 * FC_DEFER_PER_THREAD || via == NULL || via->threads == NULL) {
        return 1;
    }
    long n = via->threads(st);
    size_t most = total / FC_DEFER_PER_THREAD;
    if (n > 0 && (size_t)n > most) {
        n = (long)most;
    }
    return n < 1 ? 1 : n > FC_PAR_MAX_THREADS ? FC_PAR_MAX_THREADS : (int)n;
}

/* Host copies of `total` bytes on nthreads threads, GIL released when
   worth it.  No Python code runs. */
static void
fc_defer_host(const FcCopyOp *ops, Py_ssize_t nops, size_t total, int nthreads,
              int road)
{
    if (total < FC_NOGIL_MIN) {
        fc_par_range(ops, nops, 0, total, road);
        return;
    }
    Py_BEGIN_ALLOW_THREADS
    fc_par_copy(ops, nops, total, nthreads, road);
    Py_END_ALLOW_THREADS
}

FC_INTERNAL void
fc_defer_release(FcCtx *c)
{
    for (Py_ssize_t i = 0; i < c->nops; i++) {
        Py_XDECREF(c->ops[i].src_owner);
        Py_XDECREF(c->ops[i].dst_owner);
    }
    c->nops = 0;
}

/* A queued op's offsets -> addresses, from its storages as they are now;
   an op whose storage no longer holds its bytes gets n = 0 (skipped).
   No Python code runs here or after, up to the copies.
   1 all there | 0 some were not | -1+exc */
static int
fc_defer_resolve(FcState *st, FcCopyOp *ops, Py_ssize_t n)
{
    int all = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        FcCopyOp *op = &ops[i];
        char *sb, *db;
        size_t snb, dnb;
        size_t so = (size_t)(uintptr_t)op->src, dof = (size_t)(uintptr_t)op->dst;
        if (op->via->addr(st, op->src_owner, &sb, &snb) < 0
            || op->via->addr(st, op->dst_owner, &db, &dnb) < 0) {
            return -1;
        }
        if (sb == NULL || db == NULL || so > snb || snb - so < op->n
            || dof > dnb || dnb - dof < op->n) {
            op->src = op->dst = NULL;
            op->n = 0;
            all = 0;
            continue;
        }
        op->src = sb + so;
        op->dst = db + dof;
    }
    return all;
}

/* Run the recorded copies: CPU ones first (they may take a while; the
   CUDA ones are only enqueued), then CUDA ones, one submission per
   (device, stream) in first-seen order.  Every owner is released, also on
   failure.  0 | -1+exc */
static int
fc_defer_run(FcCtx *c)
{
    FcState *st = c->st;
    FcCopyOp *ops = c->ops, *cpu = ops;
    Py_ssize_t n = c->nops, ncpu = 0, *idx = NULL;
    size_t total = 0;
    int rc = -1, all;
    FcProfCall *pc = fc_prof_counting(st);      /* profile.c */
    int64_t t0 = pc != NULL ? fc_prof_now() : 0;
    int prof_kinds = 0;
    const FcDeferSource *host_via = NULL, *dev_via = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        prof_kinds |= ops[i].via->prof_kind;
        if (ops[i].dev < 0) {
            total += ops[i].n;
            ncpu++;
            host_via = host_via != NULL ? host_via : ops[i].via;
        }
        else {
            dev_via = dev_via != NULL ? dev_via : ops[i].via;
        }
    }
    /* everything that calls out first (the CUDA module is imported at the
       first CUDA copy, torch is asked for its thread count), then the
       addresses, then the copies */
    PyObject *et = NULL, *ev = NULL, *tb = NULL;
    const FcCudaCAPI *api = dev_via != NULL ? dev_via->cuda(st) : NULL;
    if (dev_via != NULL && (api == NULL || api->ready(api->ctx) < 0)) {
        /* the host copies still run (the caller's memo may hold them) */
        PyErr_Fetch(&et, &ev, &tb);
    }
    int nthreads = fc_defer_threads(st, host_via, total);
    if ((all = fc_defer_resolve(st, ops, n)) < 0) {
        goto done;
    }
    if (ncpu < n) {
        /* mixed: the CPU ones in order, apart; idx for the CUDA groups */
        idx = PyMem_Malloc((size_t)(n - ncpu) * sizeof(*idx));
        cpu = ncpu > 0 ? PyMem_Malloc((size_t)ncpu * sizeof(*cpu)) : NULL;
        if (idx == NULL || (ncpu > 0 && cpu == NULL)) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0, j = 0; i < n; i++) {
            if (ops[i].dev < 0) {
                cpu[j++] = ops[i];
            }
        }
    }
    if (!all) {
        total = 0;
        for (Py_ssize_t i = 0; i < ncpu; i++) {
            total += cpu[i].n;
        }
    }
    fc_defer_host(cpu, ncpu, total, nthreads, fc_copy_road(st));
    st->test.defer_flushes++;
    if (et != NULL) {
        PyErr_Restore(et, ev, tb);
        et = NULL;
        goto done;
    }
    /* CUDA groups: a copy is taken once its (device, stream) comes up */
    for (Py_ssize_t a = 0; a < n; a++) {
        if (ops[a].dev < 0 || ops[a].n == 0) {
            continue;
        }
        Py_ssize_t m = 0;
        for (Py_ssize_t b = a; b < n; b++) {
            if (ops[b].dev == ops[a].dev && ops[b].stream == ops[a].stream && ops[b].n) {
                idx[m++] = b;
            }
        }
        if (fc_defer_cuda(st, ops, idx, m) < 0) {
            goto done;
        }
        for (Py_ssize_t k = 0; k < m; k++) {
            ops[idx[k]].n = 0;      /* submitted */
        }
    }
    if (!all) {
        /* torch's own copy would have read the bytes before the change;
           they are gone */
        PyErr_SetString(PyExc_RuntimeError,
                        "fastcopy: the storage of a tensor being deep-copied was "
                        "resized before its bytes were copied");
        goto done;
    }
    rc = 0;
done:
    if (et != NULL) {
        /* the first error wins */
        PyErr_Clear();
        PyErr_Restore(et, ev, tb);
    }
    if (cpu != ops) {
        PyMem_Free(cpu);
    }
    PyMem_Free(idx);
    fc_defer_release(c);
    if (pc != NULL) {
        fc_prof_buffer(pc, prof_kinds, 0, t0);   /* bytes counted when recorded */
    }
    return rc;
}

/* Before a call into code that is not ours: that code may also change
   a library's modes (torch's), so the cached ambient check is forgotten.
   0 | -1+exc */
FC_INTERNAL_INLINE int
fc_defer_flush(FcCtx *c)
{
    c->ambient = 0;
    return FC_LIKELY(c->nops == 0) ? 0 : fc_defer_run(c);
}

/* The end of a call: flush even when y is NULL (the caller's memo may hold
   results), keeping the first error.  y | NULL+exc */
FC_INTERNAL PyObject *
fc_defer_end(FcCtx *c, PyObject *y)
{
    if (FC_LIKELY(c->nops == 0)) {
        return y;
    }
    if (y != NULL) {
        if (fc_defer_run(c) < 0) {
            Py_DECREF(y);
            return NULL;
        }
        return y;
    }
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (fc_defer_run(c) < 0) {
        PyErr_WriteUnraisable(NULL);
    }
    PyErr_Restore(et, ev, tb);
    return NULL;
}

/* Will fc_defer_copy(via, n, dev) record the copy rather than run it?
   Then the caller hands it the storages and offsets.  1 | 0 */
FC_INTERNAL_INLINE int
fc_defer_queued(FcState *st, const FcDeferSource *via, size_t n, int dev)
{
    return n > 0 && (dev >= 0 || n >= FC_NOGIL_MIN) && via->recording(st);
}

/* Copy n bytes from src to dst on device dev (-1: host) and stream.
   When fc_defer_queued(via, n, dev), the copy is recorded for the next
   flush: src is byte src_off of src_store, dst byte dst_off of dst_store
   (owners whose bytes via->addr finds; borrowed here, kept until then; see
   the top of the file).
   Otherwise it runs now (the stores may be NULL).  Either way the caller
   read the addresses after its last call that could run Python code.
   0 | -1+exc */
FC_INTERNAL int
fc_defer_copy(FcCtx *c, const FcDeferSource *via,
              char *dst, PyObject *dst_store, size_t dst_off,
              const char *src, PyObject *src_store, size_t src_off,
              size_t n, int dev, uintptr_t stream)
{
    FcState *st = c->st;
    if (n == 0) {
        return 0;
    }
    FcProfCall *pc = fc_prof_counting(st);      /* profile.c */
    if (!fc_defer_queued(st, via, n, dev)) {
        FcCopyOp op = {dst, src, n, NULL, NULL, dev, stream, via};
        int64_t t0 = pc != NULL ? fc_prof_now() : 0;
        int rc = 0;
        if (dev < 0) {
            /* a small host copy costs less than recording it, and nothing
               is gained by running it later */
            if (n < FC_NOGIL_MIN) {
                memcpy(dst, src, n);
            }
            else {
                fc_defer_host(&op, 1, n, fc_defer_threads(st, via, n), fc_copy_road(st));
            }
        }
        else {
            /* (the recorder loaded the CUDA module before any address was
               read: torch.c's fc_torch_where) */
            Py_ssize_t zero = 0;
            rc = fc_defer_cuda(st, &op, &zero, 1);
        }
        if (pc != NULL) {
            fc_prof_buffer(pc, via->prof_kind, (int64_t)n, t0);
        }
        return rc;
    }
    if (pc != NULL) {
        /* the time is counted when the copy runs (fc_defer_run) */
        pc->buffer_bytes += (int64_t)n;
        pc->buffer_kinds |= via->prof_kind;
    }
    if (c->nops == c->capops) {
        Py_ssize_t cap = c->capops ? c->capops * 2 : 16;
        FcCopyOp *ops = PyMem_Realloc(c->ops, (size_t)cap * sizeof(*ops));
        if (ops == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        c->ops = ops;
        c->capops = cap;
    }
    FcCopyOp *op = &c->ops[c->nops++];
    /* queued: offsets until fc_defer_resolve */
    op->dst = (char *)(uintptr_t)dst_off;
    op->src = (const char *)(uintptr_t)src_off;
    op->n = n;
    op->src_owner = Py_NewRef(src_store);
    op->dst_owner = Py_NewRef(dst_store);
    op->dev = dev;
    op->stream = stream;
    op->via = via;
    return 0;
}
