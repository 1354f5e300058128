/*
 * numpy.h: the numpy backend's part of the module state.  The backend
 * itself is numpy.c's table, fc_numpy_backend (backend.h).
 */
#ifndef FASTCOPY_NUMPY_H
#define FASTCOPY_NUMPY_H

#include "fastcopy.h"

/* numpy.c's block of FcState (FC_BK_numpy, backend.h), read by numpy.c
   alone: found through sys.modules when first met; settings from
   configure().  Traversed and cleared by numpy.c's backend table. */
typedef struct {
    PyObject *ndarray;          /* numpy.ndarray, strong, or NULL */
    int checked;                /* the pool's handler is set in handler's
                                      context (numpy.c) */
    int api;                    /* C API: 0 not yet, 1 loaded, -1 unusable */
    int threads;                /* threads copying one big array */
    Py_ssize_t par_min;         /* bytes from which copies are threaded */
    int pool;                   /* copies' data from pool.c */
    Py_ssize_t pool_min;        /* bytes from which copies are pooled */
    PyObject *handler;          /* the pool's private context (set up once:
                                      numpy.c), or NULL */
    Py_ssize_t pool_max;           /* numpy_pool_max_bytes, as pool.c was told */
#ifdef Py_GIL_DISABLED
    PyMutex setup_lock;         /* the handler's setting up (numpy.c) */
#endif
} FcNumpyState;

#endif /* FASTCOPY_NUMPY_H */
