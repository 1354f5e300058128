/*
 * abi_check.c: compiled only when the CUDA Toolkit headers are found at build
 * time (setup.py).  It proves, at compile time, that the hand-written
 * declarations in fc_cuda.h match <cuda.h>: enum values, struct layout and
 * every entry point's type.  It contributes one symbol, the CUDA_VERSION of
 * the headers it was checked against, which _cuda.c reports in info().
 *
 * __CUDA_API_VERSION_INTERNAL makes <cuda.h> declare the unversioned legacy
 * ABIs too (cuGetProcAddress without symbolStatus, cuMemcpyBatchAsync with
 * failIdx) next to the _v2 ones, so both ABIs we call are checked here.
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <stddef.h>
#define FC_CUDA_ABI_CHECK 1
#include "fc_cuda.h"

#if !defined(__GNUC__)
#error "abi_check.c needs __builtin_types_compatible_p (gcc or clang)"
#endif

#define FC_SAME_TYPE(a, b, msg) _Static_assert(__builtin_types_compatible_p(a, b), msg)

#define FC_SAME_VALUE(a, b) _Static_assert((long long)(a) == (long long)(b), #a " != " #b)
#define FC_SAME_FIELD(ft, rt, f) \
    _Static_assert(offsetof(ft, f) == offsetof(rt, f) && \
                   sizeof(((ft *)0)->f) == sizeof(((rt *)0)->f), #rt "." #f)
#define FC_SAME_FN(fn, ours) FC_SAME_TYPE(__typeof__(&fn), ours, #fn " vs " #ours)

/* The hand-declared scalar stand-ins have the real sizes. */
_Static_assert(sizeof(int) == sizeof(CUresult), "CUresult is int-sized");
_Static_assert(sizeof(int) == sizeof(CUdevice), "CUdevice is int");
_Static_assert(sizeof(unsigned long long) == sizeof(CUdeviceptr), "CUdeviceptr is 64-bit");
_Static_assert(sizeof(int) == sizeof(CUstreamCaptureStatus), "capture status is int-sized");
_Static_assert(sizeof(int) == sizeof(CUdriverProcAddressQueryResult), "query result is int-sized");
_Static_assert(sizeof(int) == sizeof(CUmemLocationType), "CUmemLocationType is int-sized");
_Static_assert(sizeof(int) == sizeof(CUmemcpySrcAccessOrder), "CUmemcpySrcAccessOrder is int-sized");

/* Values */
FC_SAME_VALUE(FC_CUDA_SUCCESS, CUDA_SUCCESS);
FC_SAME_VALUE(FC_CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_VALUE);
FC_SAME_VALUE(FC_CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_NOT_INITIALIZED);
FC_SAME_VALUE(FC_CUDA_ERROR_NO_DEVICE, CUDA_ERROR_NO_DEVICE);
FC_SAME_VALUE(FC_CUDA_ERROR_NOT_FOUND, CUDA_ERROR_NOT_FOUND);
FC_SAME_VALUE(FC_CU_STREAM_LEGACY, CU_STREAM_LEGACY);
FC_SAME_VALUE(FC_CU_STREAM_PER_THREAD, CU_STREAM_PER_THREAD);
FC_SAME_VALUE(FC_CU_STREAM_NON_BLOCKING, CU_STREAM_NON_BLOCKING);
FC_SAME_VALUE(FC_CU_EVENT_DISABLE_TIMING, CU_EVENT_DISABLE_TIMING);
FC_SAME_VALUE(FC_CU_STREAM_CAPTURE_STATUS_NONE, CU_STREAM_CAPTURE_STATUS_NONE);
FC_SAME_VALUE(FC_CU_STREAM_CAPTURE_STATUS_ACTIVE, CU_STREAM_CAPTURE_STATUS_ACTIVE);
FC_SAME_VALUE(FC_CU_STREAM_CAPTURE_STATUS_INVALIDATED, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
FC_SAME_VALUE(FC_CU_GET_PROC_ADDRESS_DEFAULT, CU_GET_PROC_ADDRESS_DEFAULT);
FC_SAME_VALUE(FC_CU_GET_PROC_ADDRESS_LEGACY_STREAM, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
FC_SAME_VALUE(FC_CU_GET_PROC_ADDRESS_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS);
FC_SAME_VALUE(FC_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
FC_SAME_VALUE(FC_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
FC_SAME_VALUE(FC_CU_MEM_LOCATION_TYPE_INVALID, CU_MEM_LOCATION_TYPE_INVALID);
FC_SAME_VALUE(FC_CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_DEVICE);
FC_SAME_VALUE(FC_CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);

/* Struct layout */
_Static_assert(sizeof(struct fc_CUmemLocation_st) == sizeof(CUmemLocation), "CUmemLocation size");
FC_SAME_FIELD(struct fc_CUmemLocation_st, CUmemLocation, type);
FC_SAME_FIELD(struct fc_CUmemLocation_st, CUmemLocation, id);
_Static_assert(sizeof(struct fc_CUmemcpyAttributes_st) == sizeof(CUmemcpyAttributes),
               "CUmemcpyAttributes size");
_Static_assert(_Alignof(struct fc_CUmemcpyAttributes_st) == _Alignof(CUmemcpyAttributes),
               "CUmemcpyAttributes alignment");
FC_SAME_FIELD(struct fc_CUmemcpyAttributes_st, CUmemcpyAttributes, srcAccessOrder);
FC_SAME_FIELD(struct fc_CUmemcpyAttributes_st, CUmemcpyAttributes, srcLocHint);
FC_SAME_FIELD(struct fc_CUmemcpyAttributes_st, CUmemcpyAttributes, dstLocHint);
FC_SAME_FIELD(struct fc_CUmemcpyAttributes_st, CUmemcpyAttributes, flags);

/* Entry points: each of our function-pointer types (built from the real
 * handle types in this TU) is exactly the type of the real function. */
FC_SAME_FN(cuGetProcAddress, fc_cuGetProcAddress_v1_t);
FC_SAME_FN(cuGetProcAddress_v2, fc_cuGetProcAddress_v2_t);
FC_SAME_FN(cuInit, fc_cuInit_t);
FC_SAME_FN(cuDriverGetVersion, fc_cuDriverGetVersion_t);
FC_SAME_FN(cuGetErrorName, fc_cuGetErrorName_t);
FC_SAME_FN(cuDeviceGetCount, fc_cuDeviceGetCount_t);
FC_SAME_FN(cuDeviceGet, fc_cuDeviceGet_t);
FC_SAME_FN(cuDevicePrimaryCtxRetain, fc_cuDevicePrimaryCtxRetain_t);
FC_SAME_FN(cuCtxGetCurrent, fc_cuCtxGetCurrent_t);
FC_SAME_FN(cuCtxPushCurrent_v2, fc_cuCtxPushCurrent_v2_t);
FC_SAME_FN(cuCtxPopCurrent_v2, fc_cuCtxPopCurrent_v2_t);
FC_SAME_FN(cuStreamCreate, fc_cuStreamCreate_t);
FC_SAME_FN(cuEventCreate, fc_cuEventCreate_t);
FC_SAME_FN(cuEventRecord, fc_cuEventRecord_t);
FC_SAME_FN(cuStreamWaitEvent, fc_cuStreamWaitEvent_t);
FC_SAME_FN(cuStreamIsCapturing, fc_cuStreamIsCapturing_t);
FC_SAME_FN(cuMemcpyAsync, fc_cuMemcpyAsync_t);
FC_SAME_FN(cuMemcpyBatchAsync, fc_cuMemcpyBatchAsync_v1_t);     /* 12.8 ABI, failIdx */
FC_SAME_FN(cuMemcpyBatchAsync_v2, fc_cuMemcpyBatchAsync_v2_t);  /* 13.0 ABI */

const int fc_cuda_abi_checked_version = CUDA_VERSION;
