/*
 * testing.h: what exists only so that tests can look inside (testing.c):
 * counters the copy paths bump, the fake-CUDA switch, and the functions
 * that read and set them (_defer_stats, _fake_cuda; _sysinfo's counters).
 * Nothing here changes what a copy returns, except _fake_cuda, which only
 * the fake driver's tests (tests/fakecuda) turn on; _replicate_road only
 * changes how replicate() makes the same replicas.
 */
#ifndef FASTCOPY_TESTING_H
#define FASTCOPY_TESTING_H

#include "fastcopy.h"

/* FcState.test */
typedef struct {
    int fake_device;               /* CPU tensor copies go to this CUDA device (-1 off) */
    uintptr_t fake_stream;         /* ... on this stream */
    Py_ssize_t defer_flushes;      /* deferred byte copies flushed */
    Py_ssize_t cuda_batches;       /* CUDA batches submitted */
    const char *cuda_last_path;    /* path of the last batch (fastcopy._cuda's static string) */
    Py_ssize_t memo_shown;         /* a memo shown to a hook */
    Py_ssize_t memo_borrowed;      /* ... lent to a nested call */
    Py_ssize_t memo_to_dict;       /* ... turned into the dict for good */
    Py_ssize_t memo_absorbed;      /* ... whose additions by a hook went native */
    Py_ssize_t memo_adopted;       /* a caller's dict taken as a native table's mirror */
    Py_ssize_t state_stores;       /* states given as attribute stores (reduce.c) */
    Py_ssize_t set_ghosts;         /* sets whose reduce list was left a ghost (memo.c) */
    Py_ssize_t slot_ghosts;        /* slot states left a ghost (deepcopy.c, R_SLOTS) */
    Py_ssize_t dict_puts;          /* prefilled values replaced in place (deepcopy.c) */
    Py_ssize_t small_trees;        /* calls copied on the small road (deepcopy.c) */
    Py_ssize_t small_subtrees;     /* dicts inside a walk copied on it (deepcopy.c) */
    Py_ssize_t memo_thin;          /* calls that went back to proving misses from
                                      2^17 slots (memo.c, FC_THIN_CATCH) */
    Py_ssize_t memo_unindexed;     /* entries calls ended with still pending, never
                                      indexed (memo.c, "Proven misses") */
    int replicate_walk;            /* replicate() records no tape: n deep copies (select.c);
                                      -1: it records one whenever the source allows,
                                      from n = 2 */
    Py_ssize_t replicate_tapes;    /* replicate() calls whose replicas came from a tape */
    Py_ssize_t replicate_wasted;   /* ... whose recording was abandoned (its cost lost) */
} FcTestState;

/* Defaults, and the test-only functions added to the module.  0 | -1+exc */
FC_INTERNAL int fc_testing_exec(PyObject *module, FcState *st);

#endif /* FASTCOPY_TESTING_H */
