/*
 * fc_cuda.h: the slice of the CUDA driver ABI that fastcopy._cuda uses,
 * declared by hand so the module builds (and imports) with no CUDA Toolkit.
 *
 * Every name carries an fc_/FC_ prefix so this header can sit beside the real
 * <cuda.h> in cuda/abi_check.c, which static-asserts each value, size, offset
 * and function type below against the Toolkit's own declarations whenever the
 * headers are present at build time.
 *
 * Entry points are function-pointer types named after the ABI they describe,
 * not after the symbol: cuGetProcAddress hands back the variant that matches
 * the cudaVersion we ask for, and the name alone does not say which one it is.
 */
#ifndef FC_CUDA_H
#define FC_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef FC_CUDA_ABI_CHECK
/* abi_check.c: the real types, so that the function-pointer types below are
 * compared with <cuda.h>'s declarations parameter by parameter. */
typedef CUresult fc_CUresult;
typedef CUdevice fc_CUdevice;
typedef CUdeviceptr fc_CUdeviceptr;
typedef CUcontext fc_CUcontext;
typedef CUstream fc_CUstream;
typedef CUevent fc_CUevent;
typedef CUstreamCaptureStatus fc_CUstreamCaptureStatus;
typedef CUdriverProcAddressQueryResult fc_CUdriverProcAddressQueryResult;
typedef CUmemcpyAttributes fc_CUmemcpyAttributes;
#else
typedef int fc_CUresult;                        /* enum, int-sized */
typedef int fc_CUdevice;
typedef unsigned long long fc_CUdeviceptr;      /* 64-bit builds only */
typedef struct fc_CUctx_st *fc_CUcontext;
typedef struct fc_CUstream_st *fc_CUstream;
typedef struct fc_CUevent_st *fc_CUevent;
typedef int fc_CUstreamCaptureStatus;           /* enum, int-sized */
typedef int fc_CUdriverProcAddressQueryResult;  /* enum, int-sized */
typedef struct fc_CUmemcpyAttributes_st fc_CUmemcpyAttributes;
#endif

/* CUresult values we test for (the rest are only named via cuGetErrorName). */
#define FC_CUDA_SUCCESS                       0
#define FC_CUDA_ERROR_INVALID_VALUE           1
#define FC_CUDA_ERROR_NOT_INITIALIZED         3
#define FC_CUDA_ERROR_NO_DEVICE               100
#define FC_CUDA_ERROR_NOT_FOUND               500

/* Special stream handles. */
#define FC_CU_STREAM_LEGACY       ((fc_CUstream)0x1)
#define FC_CU_STREAM_PER_THREAD   ((fc_CUstream)0x2)

#define FC_CU_STREAM_NON_BLOCKING     0x1
#define FC_CU_EVENT_DISABLE_TIMING    0x2

/* CUstreamCaptureStatus */
#define FC_CU_STREAM_CAPTURE_STATUS_NONE         0
#define FC_CU_STREAM_CAPTURE_STATUS_ACTIVE       1
#define FC_CU_STREAM_CAPTURE_STATUS_INVALIDATED  2

/* CUdriverProcAddress_flags / CUdriverProcAddressQueryResult */
#define FC_CU_GET_PROC_ADDRESS_DEFAULT            0
#define FC_CU_GET_PROC_ADDRESS_LEGACY_STREAM      1
#define FC_CU_GET_PROC_ADDRESS_SUCCESS            0
#define FC_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND   1
#define FC_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT 2

/* CUmemLocationType / CUmemcpySrcAccessOrder */
#define FC_CU_MEM_LOCATION_TYPE_INVALID       0
#define FC_CU_MEM_LOCATION_TYPE_DEVICE        1
#define FC_CU_MEMCPY_SRC_ACCESS_ORDER_STREAM  1

struct fc_CUmemLocation_st {
    int type;                   /* CUmemLocationType */
    int id;
};

struct fc_CUmemcpyAttributes_st {
    int srcAccessOrder;         /* CUmemcpySrcAccessOrder */
    struct fc_CUmemLocation_st srcLocHint;
    struct fc_CUmemLocation_st dstLocHint;
    unsigned int flags;
};

/* Entry points.  Driver ABI is the platform C ABI (CUDAAPI is empty on Linux). */
typedef fc_CUresult (*fc_cuGetProcAddress_v1_t)(const char *symbol, void **pfn,
                                               int cudaVersion, uint64_t flags);
typedef fc_CUresult (*fc_cuGetProcAddress_v2_t)(const char *symbol, void **pfn,
                                               int cudaVersion, uint64_t flags,
                                               fc_CUdriverProcAddressQueryResult *status);
typedef fc_CUresult (*fc_cuInit_t)(unsigned int flags);
typedef fc_CUresult (*fc_cuDriverGetVersion_t)(int *version);
typedef fc_CUresult (*fc_cuGetErrorName_t)(fc_CUresult error, const char **str);
typedef fc_CUresult (*fc_cuDeviceGetCount_t)(int *count);
typedef fc_CUresult (*fc_cuDeviceGet_t)(fc_CUdevice *device, int ordinal);
typedef fc_CUresult (*fc_cuDevicePrimaryCtxRetain_t)(fc_CUcontext *ctx, fc_CUdevice dev);
typedef fc_CUresult (*fc_cuCtxGetCurrent_t)(fc_CUcontext *ctx);
typedef fc_CUresult (*fc_cuCtxPushCurrent_v2_t)(fc_CUcontext ctx);
typedef fc_CUresult (*fc_cuCtxPopCurrent_v2_t)(fc_CUcontext *ctx);
typedef fc_CUresult (*fc_cuStreamCreate_t)(fc_CUstream *stream, unsigned int flags);
typedef fc_CUresult (*fc_cuEventCreate_t)(fc_CUevent *event, unsigned int flags);
typedef fc_CUresult (*fc_cuEventRecord_t)(fc_CUevent event, fc_CUstream stream);
typedef fc_CUresult (*fc_cuStreamWaitEvent_t)(fc_CUstream stream, fc_CUevent event,
                                              unsigned int flags);
typedef fc_CUresult (*fc_cuStreamIsCapturing_t)(fc_CUstream stream,
                                                fc_CUstreamCaptureStatus *status);
typedef fc_CUresult (*fc_cuMemcpyAsync_t)(fc_CUdeviceptr dst, fc_CUdeviceptr src,
                                          size_t nbytes, fc_CUstream stream);
/* CUDA 12.8 - 12.9: reports the failing copy through failIdx. */
typedef fc_CUresult (*fc_cuMemcpyBatchAsync_v1_t)(
    fc_CUdeviceptr *dsts, fc_CUdeviceptr *srcs, size_t *sizes, size_t count,
    fc_CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
    size_t *failIdx, fc_CUstream stream);
/* CUDA 13.0+: failIdx dropped (cuMemcpyBatchAsync_v2). */
typedef fc_CUresult (*fc_cuMemcpyBatchAsync_v2_t)(
    fc_CUdeviceptr *dsts, fc_CUdeviceptr *srcs, size_t *sizes, size_t count,
    fc_CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
    fc_CUstream stream);

/* The cudaVersion each ABI is requested with. */
#define FC_CUDA_VERSION_BATCH_V1  12080
#define FC_CUDA_VERSION_BATCH_V2  13000

#endif /* FC_CUDA_H */
