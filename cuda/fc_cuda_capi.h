/*
 * fc_cuda_capi.h: the C API fastcopy._cuda exports to the core as the
 * capsule "fastcopy._cuda._C_API", so a deepcopy call can submit its
 * recorded device copies (src/defer.c) without building Python objects.
 * Plain C types only: the core includes this without fc_cuda.h.
 */
#ifndef FC_CUDA_CAPI_H
#define FC_CUDA_CAPI_H

#include <stddef.h>
#include <stdint.h>

#define FC_CUDA_CAPI_NAME "fastcopy._cuda._C_API"
#define FC_CUDA_CAPI_VERSION 1

typedef struct {
    int version;                /* FC_CUDA_CAPI_VERSION */
    void *ctx;                  /* the module's state; passed back below */
    /* With the GIL: load the driver if not yet done.  0 | -1+exc */
    int (*ready)(void *ctx);
    /* Without the GIL, after ready(): enqueue dsts[i] <- srcs[i] (sizes[i]
       bytes, all > 0) on `stream` of `device`, as copy_batch() does; never
       waits.  *path: the path taken, a static string (copy_batch's return
       values).  0 | -1 with a message in err[0..errlen) */
    int (*submit)(void *ctx, int device, uintptr_t stream,
                  unsigned long long *dsts, unsigned long long *srcs, size_t *sizes,
                  size_t n, const char **path, char *err, size_t errlen);
} FcCudaCAPI;

#endif /* FC_CUDA_CAPI_H */
