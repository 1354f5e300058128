/*
 * torch.h: the torch backend (torch.c).
 */
#ifndef FASTCOPY_TORCH_H
#define FASTCOPY_TORCH_H

#include "fastcopy.h"

/* torch.c's block of FcState (FC_BK_torch, backend.h), read by torch.c
   alone: found through sys.modules when first met (torch.c's essay);
   settings from configure().  Traversed and cleared by torch.c's backend
   table. */
typedef struct {
    PyObject *tensor;        /* torch.Tensor, strong, or NULL */
    PyObject *parameter;     /* torch.nn.Parameter, strong, or NULL */
    int checked;             /* 0 not yet, 1 ready, -1 never */
    PyObject *ustorage;      /* torch.UntypedStorage */
    PyObject *tstorage;      /* torch.TypedStorage */
    PyObject *names;         /* tuple of interned names (torch.c TN_*) */
    PyObject *attr_names;    /* tuple: names of the captured attributes */
    PyObject *attrs;         /* tuple: the attributes seen at first use */
    PyObject *probes;        /* tuple: torch._C mode probes */
    PyObject *strided;       /* torch.strided */
    PyObject *preserve;      /* torch.preserve_format */
    PyObject *copy_deepcopy; /* copy.deepcopy as torch first saw it */
    PyObject *tensor_globals;   /* torch._tensor.__dict__ */
    PyObject *storage_globals;  /* torch.storage.__dict__ */
    PyObject *make_subclass; /* torch.Tensor._make_subclass */
    PyObject *empty_like;    /* torch.empty_like */
    unsigned int us_tag;     /* UntypedStorage's tag when verified */
    unsigned int ts_tag;     /* TypedStorage's tag when verified */
    PyObject *incr_version;  /* torch._C._increment_version */
    int param_swap;          /* a fresh Tensor may become a Parameter
                                      through object.__class__ (torch.c) */
    int defer;               /* record byte copies until a flush (defer.c) */
    int cuda;                /* copy plain CUDA tensors natively */
    PyObject *cuda_stream;   /* torch._C._cuda_getCurrentRawStream or NULL */
    PyObject *num_threads;   /* torch.get_num_threads or NULL */
    PyObject *real_dtype;    /* the last float/int/bool torch.dtype seen */
    PyObject *int_dtypes;    /* tuple: torch's integer and bool dtypes */
} FcTorchState;


#endif /* FASTCOPY_TORCH_H */
