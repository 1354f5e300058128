/*
 * defer.h: a call's byte copies, recorded and run together (defer.c), and
 * the threaded memcpy numpy.c shares.  Callers: torch.c (records, through
 * its FcDeferSource), the walker and select.c (flush before user code, end
 * of call), numpy.c.  defer.c calls no backend by name.
 */
#ifndef FASTCOPY_DEFER_H
#define FASTCOPY_DEFER_H

#include "fastcopy.h"


/* below this many bytes, dropping and retaking the GIL costs more than it frees */
#define FC_NOGIL_MIN ((size_t)1 << 16)
/* most threads fc_par_copy starts for one copy */
#define FC_PAR_MAX_THREADS 64

/* Whoever records copies (a buffer backend: torch.c's fc_torch_defer):
   what a flush asks it, so the queue needs no backend's code. */
typedef struct FcDeferSource {
    int prof_kind;      /* FC_PROF_* its bytes count under (profile.h) */
    /* Record copies until a flush, rather than run each at once (its
       setting)?  No Python code.  1 | 0 */
    int (*recording)(FcState *st);
    /* A recorded owner's bytes as they are now: *base (NULL: none left)
       and *nbytes.  No Python code.  0 | -1+exc */
    int (*addr)(FcState *st, PyObject *owner, char **base, size_t *nbytes);
    /* Threads its library's own copy of a big host buffer would use (may
       call Python code; advice, never an error): n >= 1 | 0 unknown.
       NULL: one. */
    long (*threads)(FcState *st);
    /* The CUDA C API for device copies (fastcopy._cuda, loaded on first
       use).  the API | NULL+exc */
    const FcCudaCAPI *(*cuda)(FcState *st);
} FcDeferSource;

/* Will fc_defer_copy(via, n, dev) record the copy rather than run it?
   1 | 0 */
FC_INTERNAL_INLINE int fc_defer_queued(FcState *st, const FcDeferSource *via, size_t n,
                                       int dev);
/* Copy n bytes from src to dst on device dev (-1: host) and stream: now,
   or recorded for the next flush when fc_defer_queued (then src is byte
   src_off of the owner src_store, dst byte dst_off of dst_store, both
   borrowed here and kept; via->addr finds their bytes at the flush).  The
   caller read the addresses after its last call that could run Python
   code.  0 | -1+exc */
FC_INTERNAL int fc_defer_copy(FcCtx *c, const FcDeferSource *via,
                              char *dst, PyObject *dst_store, size_t dst_off,
                              const char *src, PyObject *src_store, size_t src_off,
                              size_t n, int dev, uintptr_t stream);
/* Run the recorded copies (the GIL may be released: other threads run).
   Called before any user code.  0 | -1+exc */
FC_INTERNAL_INLINE int fc_defer_flush(FcCtx *c);
/* The end of a call: flush even when y is NULL, keeping the first error.
   y | NULL+exc */
FC_INTERNAL PyObject *fc_defer_end(FcCtx *c, PyObject *y);
/* Drop the queue without copying (its references released). */
FC_INTERNAL void fc_defer_release(FcCtx *c);
/* How fc_par_copy treats a destination's pages (defer.c has the
   measurements): FC_ROAD_PLAIN memcpy only; FC_ROAD_POPULATE the pages not
   mapped yet mapped ahead (MADV_POPULATE_WRITE), a piece at a time;
   FC_ROAD_HUGE destinations of 4 MiB and more advised huge pages (where
   the kernel's THP mode is "madvise") and copied as they are, smaller ones
   populated. */
enum { FC_ROAD_PLAIN = 0, FC_ROAD_POPULATE = 1, FC_ROAD_HUGE = 2 };
/* The road for st's settings (huge_pages) and this kernel.  FC_ROAD_* */
FC_INTERNAL int fc_copy_road(FcState *st);
/* Every op's memcpy, split by bytes over up to nthreads threads (this one
   included), its pages taken the FC_ROAD_* road.  Call without the GIL. */
FC_INTERNAL void fc_par_copy(const FcCopyOp *ops, Py_ssize_t nops, size_t total,
                             int nthreads, int road);
#endif /* FASTCOPY_DEFER_H */
