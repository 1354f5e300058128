/*
 * cuda_backend.h: the CUDA buffer backend (cuda_backend.c) -- the core's side of
 * fastcopy._cuda, the optional extension that talks to the driver.  Its
 * copies are the torch backend's CUDA tensors, whose bytes defer.c hands to
 * fastcopy._cuda's C API in batches.
 */
#ifndef FASTCOPY_CUDA_BACKEND_H
#define FASTCOPY_CUDA_BACKEND_H

#include "fastcopy.h"

/* cuda_backend.c's block of FcState (FC_BK_cuda, backend.h), read by that
   file alone.  Traversed and cleared by its backend table. */
typedef struct {
    PyObject *mod;                 /* fastcopy._cuda once its C API is used */
    const FcCudaCAPI *api;         /* its C API (lives as long as mod) */
} FcCudaState;

/* fastcopy._cuda's C API, imported at the first CUDA copy; the module stays
   referenced by the state so the API's context stays alive.
   the API | NULL+exc */
FC_INTERNAL const FcCudaCAPI *fc_cuda_api(FcState *st);

#endif /* FASTCOPY_CUDA_BACKEND_H */
