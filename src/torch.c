/*
 * torch.c: torch tensors and parameters, the "torch" buffer backend (buffers.c).
 *
 * fastcopy is not compiled against torch.  The first time a type is planned
 * while "torch" is in sys.modules, fc_torch_init() caches torch.Tensor,
 * nn.Parameter, UntypedStorage, TypedStorage and -- "at first use" -- every
 * attribute that torch's own deepcopy path looks up on those classes.  The
 * functions whose bodies we reproduce are fingerprinted by their co_names,
 * so a torch whose deepcopy code differs from the one this file was written
 * against (2.13) is simply not taken over.
 *
 * What we reproduce (torch/_tensor.py, torch/storage.py, nn/parameter.py):
 *
 *   Tensor.__deepcopy__(memo), plain CPU strided leaf branch:
 *     us = self.untyped_storage()
 *     new_us = copy.deepcopy(us, memo)          # memo.get(id(us)) first;
 *         UntypedStorage.__deepcopy__:          #   then this, then
 *           tm = memo.setdefault("torch", {})   #   memo[id(us)] = new_us
 *           tm.get(us._cdata) or                #   and _keep_alive(us)
 *           tm[us._cdata] = UntypedStorage(us.nbytes(), device=us.device)
 *                           .copy_(us)
 *     t = self.new_empty([]); t.set_(new_us, offset, size, stride)
 *     if self.requires_grad: t.requires_grad_()
 *     if self.grad is not None: t.grad = self.grad.__deepcopy__(memo)
 *     t.__dict__ = deepcopy(self.__dict__, memo)
 *     memo[id(self)] = t
 *   The TypedStorage wrapper torch builds around new_us is transient and
 *   invisible; set_ accepts the untyped storage itself.  The fresh tensor we
 *   set_ comes from self.new() (no allocation) instead of new_empty([]):
 *   set_ replaces everything new_empty set up (sizes, strides, storage), and
 *   both start at version 0 and leave set_ at version 1.  The byte copy
 *   between the two data pointers is recorded in the call's queue and run
 *   at the next flush (defer.c), with the others; configure(torch_defer=
 *   False) runs each at once.  The memo holds a string key ("torch"), so
 *   the call's memo is exposed as a dict before the first tensor.
 *
 *   Parameter.__deepcopy__(memo):
 *     Parameter(self.data.clone(memory_format=torch.preserve_format),
 *               self.requires_grad)
 *     == Tensor._make_subclass(Parameter, clone, requires_grad) for a plain
 *     data tensor; no storage memo, no .grad, no __dict__.  The memo stays
 *     native.
 *
 * Declined (NULL without an exception -> the walker calls the object's own
 * __deepcopy__ with the same memo): any active torch function mode,
 * dispatch mode, functorch transform or inference mode; a memo that is not
 * a dict; tensors that are not CPU (or CUDA, when configure(torch_cuda=
 * True) and torch has CUDA), strided, leaf, or are quantized, conj,
 * neg, inference, or have a non-empty __dict__; a .grad (or its .grad) that
 * would be declined itself; any of the captured attributes replaced on the
 * classes, a __deepcopy__ in the instance dict, an entry for the type in
 * copy._deepcopy_dispatch, or copy.deepcopy replaced.  Every check runs
 * before the first side effect.
 *
 * CUDA tensors take the very same steps: torch allocates the results on the
 * tensor's device (its caching allocator, on the current stream, as
 * UntypedStorage(n, device=...) and empty_like do in torch's own path), and
 * the byte copies go to fastcopy._cuda on torch's current stream of that
 * device -- the stream torch's copy_ would use -- without synchronizing.
 * Off by default until `python -m fastcopy.gpucheck` has been run on real
 * hardware for this code (docs/buffers-cuda.md).
 */
#include "fastcopy.h"
#include "torch.h"
#include "backend.h"
#include "cuda_backend.h"
#include "memo.h"
#include "defer.h"
#include "state.h"
#include "profile.h"

/* torch.c's own block of the module state (backend.h). */
#define TORCH(st) FC_BACKEND_STATE(st, FcTorchState, FC_BK_torch)
FC_BACKEND_STATE_CHECK(FcTorchState);

enum {                     /* local kinds (backend.h) */
    FB_TORCH_TENSOR = 1,
    FB_TORCH_PARAM,
};

/* Owners of the captured attributes. */
enum { FT_TENSOR, FT_PARAM, FT_USTORAGE, FT_TSTORAGE };

typedef struct {
    int owner;
    const char *name;
    const char *names;   /* expected co_names of the function, or NULL */
} FcTorchAttr;

/* Everything torch's deepcopy path or ours looks up on the classes.  Index
   order is the order of TORCH(st)->attrs. */
static const FcTorchAttr fc_torch_attrs[] = {
    {FT_TENSOR, "__deepcopy__",
     "has_torch_function_unary,handle_torch_function,Tensor,__deepcopy__,is_leaf,"
     "RuntimeError,id,torch,no_grad,is_sparse,device,type,_C,_has_storage,"
     "_get_privateuse1_backend_name,data_ptr,clone,_typed_storage,_deepcopy,"
     "is_quantized,qscheme,per_tensor_affine,q_scale,q_zero_point,"
     "per_channel_affine,per_channel_affine_float_qparams,q_per_channel_scales,"
     "q_per_channel_zero_points,q_per_channel_axis,_utils,_rebuild_qtensor,"
     "storage,TypedStorage,_untyped_storage,dtype,storage_offset,size,stride,"
     "requires_grad,_backward_hooks,new_empty,set_,is_conj,conj_physical,"
     "is_neg,neg,requires_grad_,grad,copyreg,_slotnames,__class__,hasattr,"
     "setattr,deepcopy,getattr,_clear_non_serializable_cached_data,__dict__"},
    {FT_TENSOR, "_typed_storage", "untyped_storage,torch,TypedStorage,dtype"},
    {FT_TENSOR, "_clear_non_serializable_cached_data",
     "has_torch_function_unary,handle_torch_function,Tensor,"
     "_clear_non_serializable_cached_data,__dict__,pop"},
    {FT_TENSOR, "untyped_storage", NULL},
    {FT_TENSOR, "new_empty", NULL},
    {FT_TENSOR, "new", NULL},
    {FT_TENSOR, "set_", NULL},
    {FT_TENSOR, "storage_offset", NULL},
    {FT_TENSOR, "size", NULL},
    {FT_TENSOR, "shape", NULL},
    {FT_TENSOR, "stride", NULL},
    {FT_TENSOR, "requires_grad", NULL},
    {FT_TENSOR, "requires_grad_", NULL},
    {FT_TENSOR, "grad", NULL},
    {FT_TENSOR, "is_leaf", NULL},
    {FT_TENSOR, "is_sparse", NULL},
    {FT_TENSOR, "is_cpu", NULL},
    {FT_TENSOR, "device", NULL},
    {FT_TENSOR, "layout", NULL},
    {FT_TENSOR, "dtype", NULL},
    {FT_TENSOR, "data_ptr", NULL},
    {FT_TENSOR, "is_quantized", NULL},
    {FT_TENSOR, "is_conj", NULL},
    {FT_TENSOR, "is_neg", NULL},
    {FT_TENSOR, "is_inference", NULL},
    {FT_TENSOR, "clone", NULL},
    {FT_TENSOR, "data", NULL},
    {FT_TENSOR, "nbytes", NULL},
    {FT_TENSOR, "is_contiguous", NULL},
    {FT_TENSOR, "__dict__", NULL},
    {FT_TENSOR, "__torch_function__", NULL},
    {FT_TENSOR, "_make_subclass", NULL},
    {FT_PARAM, "__deepcopy__",
     "id,type,data,clone,torch,preserve_format,requires_grad"},
    {FT_PARAM, "__new__",
     "torch,empty,type,Tensor,Parameter,_make_subclass,detach,requires_grad_,"
     "RuntimeError,__name__,_is_param"},
    {FT_PARAM, "__init__", NULL},
    {FT_PARAM, "data", NULL},
    {FT_PARAM, "requires_grad", NULL},
    {FT_PARAM, "__torch_function__", NULL},
    {FT_USTORAGE, "__deepcopy__", "setdefault,_cdata,clone"},
    {FT_USTORAGE, "clone", "type,nbytes,device,copy_"},
    {FT_USTORAGE, "__new__", NULL},
    {FT_USTORAGE, "__init__", NULL},
    {FT_USTORAGE, "nbytes", NULL},
    {FT_USTORAGE, "device", NULL},
    {FT_USTORAGE, "copy_", NULL},
    {FT_USTORAGE, "data_ptr", NULL},
    {FT_USTORAGE, "_cdata", NULL},
    {FT_TSTORAGE, "_deepcopy", "_new_wrapped_storage,copy,deepcopy,_untyped_storage"},
    {FT_TSTORAGE, "_new_wrapped_storage",
     "type,torch,UntypedStorage,AssertionError,__name__,TypedStorage,cast,Self,dtype"},
    {FT_TSTORAGE, "__new__", NULL},
    {FT_TSTORAGE, "__init__", NULL},
    /* the fresh tensor of a Parameter copy becomes a Parameter through
       object.__class__ (see fc_torch_param_deep) */
    {FT_TENSOR, "__class__", NULL},
    {FT_TENSOR, "__torch_dispatch__", NULL},
    {FT_PARAM, "__class__", NULL},
    {FT_PARAM, "__torch_dispatch__", NULL},
    /* CUDA tensors (configure(torch_cuda=True)) */
    {FT_TENSOR, "is_cuda", NULL},
    {FT_TENSOR, "get_device", NULL},
};
#define FC_TORCH_NATTRS ((Py_ssize_t)(sizeof(fc_torch_attrs) / sizeof(fc_torch_attrs[0])))

/* Indices into fc_torch_attrs of the descriptors we call directly
   (fc_torch_get / fc_torch_call0); checked against the names at init. */
enum {
    TA_T_UNTYPED_STORAGE = 3, TA_T_STORAGE_OFFSET = 7, TA_T_REQUIRES_GRAD = 11,
    TA_T_GRAD = 13, TA_T_IS_LEAF = 14, TA_T_IS_CPU = 16, TA_T_LAYOUT = 18, TA_T_DTYPE = 19,
    TA_T_DATA_PTR = 20, TA_T_IS_QUANTIZED = 21, TA_T_IS_CONJ = 22, TA_T_IS_NEG = 23,
    TA_T_IS_INFERENCE = 24, TA_T_NBYTES = 27, TA_T_IS_CONTIGUOUS = 28,
    TA_US_NBYTES = 42, TA_US_DATA_PTR = 45, TA_US_CDATA = 46,
    TA_T_CLASS = 51, TA_T_TORCH_DISPATCH = 52, TA_P_CLASS = 53,
    TA_P_TORCH_DISPATCH = 54, TA_T_IS_CUDA = 55, TA_T_GET_DEVICE = 56,
};
static const struct { int i; int owner; const char *name; } fc_torch_direct[] = {
    {TA_T_UNTYPED_STORAGE, FT_TENSOR, "untyped_storage"},
    {TA_T_STORAGE_OFFSET, FT_TENSOR, "storage_offset"},
    {TA_T_REQUIRES_GRAD, FT_TENSOR, "requires_grad"},
    {TA_T_GRAD, FT_TENSOR, "grad"},
    {TA_T_IS_LEAF, FT_TENSOR, "is_leaf"},
    {TA_T_IS_CPU, FT_TENSOR, "is_cpu"},
    {TA_T_LAYOUT, FT_TENSOR, "layout"},
    {TA_T_DTYPE, FT_TENSOR, "dtype"},
    {TA_T_DATA_PTR, FT_TENSOR, "data_ptr"},
    {TA_T_IS_QUANTIZED, FT_TENSOR, "is_quantized"},
    {TA_T_IS_CONJ, FT_TENSOR, "is_conj"},
    {TA_T_IS_NEG, FT_TENSOR, "is_neg"},
    {TA_T_IS_INFERENCE, FT_TENSOR, "is_inference"},
    {TA_T_NBYTES, FT_TENSOR, "nbytes"},
    {TA_T_IS_CONTIGUOUS, FT_TENSOR, "is_contiguous"},
    {TA_US_NBYTES, FT_USTORAGE, "nbytes"},
    {TA_US_DATA_PTR, FT_USTORAGE, "data_ptr"},
    {TA_US_CDATA, FT_USTORAGE, "_cdata"},
    {TA_T_CLASS, FT_TENSOR, "__class__"},
    {TA_T_TORCH_DISPATCH, FT_TENSOR, "__torch_dispatch__"},
    {TA_P_CLASS, FT_PARAM, "__class__"},
    {TA_P_TORCH_DISPATCH, FT_PARAM, "__torch_dispatch__"},
    {TA_T_IS_CUDA, FT_TENSOR, "is_cuda"},
    {TA_T_GET_DEVICE, FT_TENSOR, "get_device"},
};
#define FC_TORCH_NDIRECT ((int)(sizeof(fc_torch_direct) / sizeof(fc_torch_direct[0])))

/* Interned names, by index into TORCH(st)->names. */
enum {
    TN_UNTYPED_STORAGE, TN_NEW, TN_SET, TN_STORAGE_OFFSET, TN_SHAPE, TN_STRIDE,
    TN_REQUIRES_GRAD, TN_GRAD, TN_IS_LEAF, TN_IS_CPU, TN_LAYOUT, TN_IS_QUANTIZED,
    TN_IS_CONJ, TN_IS_NEG, TN_IS_INFERENCE, TN_DATA, TN_CLONE, TN_NBYTES,
    TN_DEVICE, TN_COPY, TN_DATA_PTR, TN_CDATA, TN_TORCH, TN_DEEPCOPY, TN_COPY_MOD,
    TN_MEMORY_FORMAT, TN_NBYTES_ATTR, TN_IS_CONTIGUOUS, TN_IS_COMPLEX,
    TN_IS_FLOATING_POINT,
    TN__COUNT,
    TN_KW_DEVICE = TN__COUNT,     /* ("device",) */
    TN_KW_MEMORY_FORMAT,          /* ("memory_format",) */
    TN__SIZE
};
static const char *const fc_torch_names[TN__COUNT] = {
    "untyped_storage", "new", "set_", "storage_offset", "shape", "stride",
    "requires_grad", "grad", "is_leaf", "is_cpu", "layout", "is_quantized",
    "is_conj", "is_neg", "is_inference", "data", "clone", "nbytes",
    "device", "copy_", "data_ptr", "_cdata", "torch", "deepcopy", "copy",
    "memory_format", "nbytes", "is_contiguous", "is_complex", "is_floating_point",
};
#define TN(st, i) PyTuple_GET_ITEM(TORCH(st)->names, (i))

/* Probes of torch's thread-local modes, by index into TORCH(st)->probes:
   each returns a bool or an int; any true value declines. */
static const char *const fc_torch_probes[] = {
    "_is_torch_function_mode_enabled", "_len_torch_dispatch_stack",
    "is_inference_mode_enabled", "_are_functorch_transforms_active",
    /* a replaced CPU allocator: torch.empty_like would no longer allocate
       where UntypedStorage(n) does (fc_torch_tensor_deep) */
    "_is_default_mobile_cpu_allocator_set",
};
#define FC_TORCH_NPROBES 5

/* ------------------------------------------------------------------ */
/* Finding torch                                                       */
/* ------------------------------------------------------------------ */

/* A module from sys.modules, or NULL (no exception) when absent.
   borrowed */
static PyObject *
fc_torch_module(const char *name)
{
    PyObject *mods = PySys_GetObject("modules");
    PyObject *m = mods != NULL && PyDict_Check(mods)
                  ? PyDict_GetItemString(mods, name) : NULL;
    return m;
}

/* co_names of f joined by commas == expected?  1 | 0 | -1+exc */
static int
fc_torch_fingerprint(PyObject *f, const char *expected)
{
    PyObject *fn = NULL;
    if (Py_IS_TYPE(f, &PyStaticMethod_Type)) {
        /* __new__ is stored as a staticmethod */
        fn = PyObject_GetAttrString(f, "__func__");
        if (fn == NULL) {
            return -1;
        }
        f = fn;
    }
    if (!PyFunction_Check(f)) {
        Py_XDECREF(fn);
        return 0;
    }
    PyObject *names = ((PyCodeObject *)PyFunction_GET_CODE(f))->co_names;
    PyObject *sep = PyUnicode_FromString(",");
    if (sep == NULL) {
        Py_XDECREF(fn);
        return -1;
    }
    PyObject *joined = PyUnicode_Join(sep, names);
    Py_DECREF(sep);
    Py_XDECREF(fn);
    if (joined == NULL) {
        return -1;
    }
    int same = PyUnicode_CompareWithASCIIString(joined, expected) == 0;
    Py_DECREF(joined);
    return same;
}

FC_INLINE PyTypeObject *
fc_torch_owner(FcState *st, int owner)
{
    switch (owner) {
    case FT_TENSOR: return (PyTypeObject *)TORCH(st)->tensor;
    case FT_PARAM: return (PyTypeObject *)TORCH(st)->parameter;
    case FT_USTORAGE: return (PyTypeObject *)TORCH(st)->ustorage;
    default: return (PyTypeObject *)TORCH(st)->tstorage;
    }
}

/* Are the attributes of `owner` still the ones seen at first use? */
static int
fc_torch_attrs_same(FcState *st, int owner)
{
    PyTypeObject *tp = fc_torch_owner(st, owner);
    for (Py_ssize_t i = 0; i < FC_TORCH_NATTRS; i++) {
        if (fc_torch_attrs[i].owner != owner) {
            continue;
        }
        PyObject *name = PyTuple_GET_ITEM(TORCH(st)->attr_names, i);
        PyObject *v = _PyType_Lookup(tp, name);
        PyObject *seen = PyTuple_GET_ITEM(TORCH(st)->attrs, i);
        if ((v == NULL ? Py_None : v) != seen) {
            return 0;
        }
    }
    return 1;
}

/* A type's tag after making sure it has one (0 when it cannot). */
static unsigned int
fc_torch_tag(FcState *st, PyTypeObject *tp)
{
    (void)_PyType_Lookup(tp, st->s_new);   /* assigns a tag when possible */
    return fc_type_tag(tp);
}

/* Capture torch's classes and attributes.  1 ready | 0 not (yet) usable |
   -1+exc.  Sets TORCH(st)->checked to 1 (ready) or -1 (never). */
static int
fc_torch_init(FcState *st)
{
    PyObject *torch = fc_torch_module("torch");
    PyObject *tmod = fc_torch_module("torch._tensor");
    PyObject *smod = fc_torch_module("torch.storage");
    PyObject *pmod = fc_torch_module("torch.nn.parameter");
    PyObject *cmod = fc_torch_module("torch._C");
    PyObject *names = NULL, *attr_names = NULL, *attrs = NULL, *probes = NULL;
    PyObject *tensor = NULL, *param = NULL, *ustorage = NULL, *tstorage = NULL;
    PyObject *strided = NULL, *preserve = NULL, *dc = NULL;
    int rc;
    if (torch == NULL || tmod == NULL || smod == NULL || pmod == NULL || cmod == NULL) {
        return 0;   /* not imported (or still importing): look again later */
    }
    /* strong: the lookups below may run a module __getattr__, or collect */
    Py_INCREF(torch);
    Py_INCREF(tmod);
    Py_INCREF(smod);
    Py_INCREF(pmod);
    Py_INCREF(cmod);
    tensor = PyObject_GetAttrString(tmod, "Tensor");
    param = PyObject_GetAttrString(pmod, "Parameter");
    ustorage = PyObject_GetAttrString(smod, "UntypedStorage");
    tstorage = PyObject_GetAttrString(smod, "TypedStorage");
    strided = PyObject_GetAttrString(torch, "strided");
    preserve = PyObject_GetAttrString(torch, "preserve_format");
    if (tensor == NULL || param == NULL || ustorage == NULL || tstorage == NULL
        || strided == NULL || preserve == NULL) {
        goto not_yet;
    }
    if (!PyType_Check(tensor) || !PyType_Check(param) || !PyType_Check(ustorage)
        || !PyType_Check(tstorage)) {
        goto never;
    }
    probes = PyTuple_New(FC_TORCH_NPROBES);
    if (probes == NULL) {
        goto error;
    }
    for (int i = 0; i < FC_TORCH_NPROBES; i++) {
        PyObject *f = PyObject_GetAttrString(cmod, fc_torch_probes[i]);
        if (f == NULL) {
            goto not_yet;
        }
        PyTuple_SET_ITEM(probes, i, f);
    }
    names = PyTuple_New(TN__SIZE);
    attr_names = PyTuple_New(FC_TORCH_NATTRS);
    attrs = PyTuple_New(FC_TORCH_NATTRS);
    if (names == NULL || attr_names == NULL || attrs == NULL) {
        goto error;
    }
    for (int i = 0; i < TN__COUNT; i++) {
        PyObject *s = PyUnicode_InternFromString(fc_torch_names[i]);
        if (s == NULL) {
            goto error;
        }
        PyTuple_SET_ITEM(names, i, s);
    }
    for (int i = TN__COUNT; i < TN__SIZE; i++) {
        PyObject *kw = PyTuple_Pack(1, PyTuple_GET_ITEM(
            names, i == TN_KW_DEVICE ? TN_DEVICE : TN_MEMORY_FORMAT));
        if (kw == NULL) {
            goto error;
        }
        PyTuple_SET_ITEM(names, i, kw);
    }
    Py_XSETREF(TORCH(st)->tensor, Py_NewRef(tensor));
    Py_XSETREF(TORCH(st)->parameter, Py_NewRef(param));
    Py_XSETREF(TORCH(st)->ustorage, Py_NewRef(ustorage));
    Py_XSETREF(TORCH(st)->tstorage, Py_NewRef(tstorage));
    for (Py_ssize_t i = 0; i < FC_TORCH_NATTRS; i++) {
        const FcTorchAttr *a = &fc_torch_attrs[i];
        PyObject *s = PyUnicode_InternFromString(a->name);
        if (s == NULL) {
            goto error;
        }
        PyTuple_SET_ITEM(attr_names, i, s);
        PyObject *v = _PyType_Lookup(fc_torch_owner(st, a->owner), s);
        v = Py_NewRef(v == NULL ? Py_None : v);
        PyTuple_SET_ITEM(attrs, i, v);
        if (a->names != NULL) {
            int r = v == Py_None ? 0 : fc_torch_fingerprint(v, a->names);
            if (r < 0) {
                goto error;
            }
            if (r == 0) {
                goto never;
            }
        }
    }
    /* torch's storage path calls copy.deepcopy (torch.storage's `copy`)
       and _tensor.py's `from copy import deepcopy`: both must be the
       stdlib's function (patched or not, it is the same object) */
    dc = PyDict_GetItemString(st->copy_globals, "deepcopy");
    if (dc == NULL || !PyFunction_Check(dc)) {
        dc = NULL;
        goto never;
    }
    Py_INCREF(dc);
    /* new references: the locals are released on every path below (a
       later `never` must not release what the state now owns) */
    Py_XSETREF(TORCH(st)->names, Py_NewRef(names));
    Py_XSETREF(TORCH(st)->attr_names, Py_NewRef(attr_names));
    Py_XSETREF(TORCH(st)->attrs, Py_NewRef(attrs));
    Py_XSETREF(TORCH(st)->probes, Py_NewRef(probes));
    Py_XSETREF(TORCH(st)->strided, Py_NewRef(strided));
    Py_XSETREF(TORCH(st)->preserve, Py_NewRef(preserve));
    Py_XSETREF(TORCH(st)->copy_deepcopy, Py_NewRef(dc));
    Py_XSETREF(TORCH(st)->tensor_globals, Py_NewRef(PyModule_GetDict(tmod)));
    Py_XSETREF(TORCH(st)->storage_globals, Py_NewRef(PyModule_GetDict(smod)));
    Py_XSETREF(TORCH(st)->empty_like, PyObject_GetAttrString(torch, "empty_like"));
    if (TORCH(st)->empty_like == NULL) {
        PyErr_Clear();
        goto never;
    }
    Py_XSETREF(TORCH(st)->make_subclass,
               PyObject_GetAttrString(tensor, "_make_subclass"));
    if (TORCH(st)->make_subclass == NULL) {
        PyErr_Clear();
        goto never;
    }
    for (int i = 0; i < FC_TORCH_NDIRECT; i++) {
        const FcTorchAttr *a = &fc_torch_attrs[fc_torch_direct[i].i];
        if (a->owner != fc_torch_direct[i].owner
            || strcmp(a->name, fc_torch_direct[i].name) != 0) {
            goto never;
        }
    }
    Py_XSETREF(TORCH(st)->incr_version,
               PyObject_GetAttrString(cmod, "_increment_version"));
    if (TORCH(st)->incr_version == NULL) {
        PyErr_Clear();
        goto never;
    }
    {
        /* _make_subclass(Parameter, t, rg) == t with requires_grad set and
           its type changed, when the two types lay out instances alike
           and Parameter has no __torch_dispatch__ of its own (the only
           per-type step of THPVariable_NewWithVar) */
        PyTypeObject *tt = (PyTypeObject *)tensor, *pt = (PyTypeObject *)param;
        PyObject *disabled = PyObject_GetAttrString(cmod, "_disabled_torch_dispatch_impl");
        PyObject *cls = _PyType_Lookup(&PyBaseObject_Type, PyTuple_GET_ITEM(attr_names, TA_T_CLASS));
        if (disabled == NULL) {
            PyErr_Clear();
        }
        TORCH(st)->param_swap =
            disabled != NULL && cls != NULL
            && PyTuple_GET_ITEM(attrs, TA_T_TORCH_DISPATCH) == disabled
            && PyTuple_GET_ITEM(attrs, TA_P_TORCH_DISPATCH) == disabled
            && PyTuple_GET_ITEM(attrs, TA_T_CLASS) == cls
            && PyTuple_GET_ITEM(attrs, TA_P_CLASS) == cls
            && pt->tp_base == tt && Py_TYPE(tt) != NULL
            && pt->tp_basicsize == tt->tp_basicsize
            && pt->tp_itemsize == tt->tp_itemsize
            && pt->tp_dictoffset == tt->tp_dictoffset
            && pt->tp_weaklistoffset == tt->tp_weaklistoffset
            && pt->tp_alloc == tt->tp_alloc && pt->tp_dealloc == tt->tp_dealloc
            && pt->tp_free == tt->tp_free
            && (pt->tp_flags & Py_TPFLAGS_HEAPTYPE) && (tt->tp_flags & Py_TPFLAGS_HEAPTYPE)
            && Py_SIZE(pt) == 0;
        Py_XDECREF(disabled);
    }
    /* torch's current stream of a device, as an int (CUDA builds only) */
    Py_XSETREF(TORCH(st)->cuda_stream,
               PyObject_GetAttrString(cmod, "_cuda_getCurrentRawStream"));
    if (TORCH(st)->cuda_stream == NULL) {
        PyErr_Clear();
    }
    {
        /* the integer and bool dtypes (fc_torch_special); missing names are
           skipped (older torch has no uint16..uint64) */
        static const char *const ints[] = {"bool", "uint8", "int8", "int16", "int32",
                                           "int64", "uint16", "uint32", "uint64"};
        PyObject *lst = PyList_New(0);
        if (lst == NULL) {
            goto error;
        }
        for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
            PyObject *d = PyObject_GetAttrString(torch, ints[i]);
            if (d == NULL) {
                PyErr_Clear();
                continue;
            }
            int r = PyList_Append(lst, d);
            Py_DECREF(d);
            if (r < 0) {
                Py_DECREF(lst);
                goto error;
            }
        }
        Py_XSETREF(TORCH(st)->int_dtypes, PyList_AsTuple(lst));   /* lint: own container */
        Py_DECREF(lst);
        if (TORCH(st)->int_dtypes == NULL) {
            goto error;
        }
    }
    Py_XSETREF(TORCH(st)->num_threads, PyObject_GetAttrString(torch, "get_num_threads"));
    if (TORCH(st)->num_threads == NULL) {
        PyErr_Clear();
    }
    TORCH(st)->us_tag = fc_torch_tag(st, (PyTypeObject *)ustorage);
    TORCH(st)->ts_tag = fc_torch_tag(st, (PyTypeObject *)tstorage);
    TORCH(st)->checked = 1;
    rc = 1;
    goto release;

never:
    TORCH(st)->checked = -1;
    Py_CLEAR(TORCH(st)->names);
    Py_CLEAR(TORCH(st)->attrs);
    /* fall through */
not_yet:
    PyErr_Clear();
    rc = 0;
    goto release;
error:
    rc = -1;
release:
    Py_XDECREF(names);
    Py_XDECREF(attr_names);
    Py_XDECREF(attrs);
    Py_XDECREF(probes);
    Py_XDECREF(tensor);
    Py_XDECREF(param);
    Py_XDECREF(ustorage);
    Py_XDECREF(tstorage);
    Py_XDECREF(strided);
    Py_XDECREF(preserve);
    Py_XDECREF(dc);
    Py_DECREF(torch);
    Py_DECREF(tmod);
    Py_DECREF(smod);
    Py_DECREF(pmod);
    Py_DECREF(cmod);
    return rc;
}

/* FB_* kind for tp, 0 when not torch's.  kind | 0 | -1+exc */
static int
fc_torch_kind(FcState *st, PyTypeObject *tp)
{
    if (TORCH(st)->checked == 0) {
        if (fc_torch_module("torch") == NULL) {
            return 0;
        }
        int r = fc_torch_init(st);
        if (r <= 0) {
            return r;
        }
    }
    if (TORCH(st)->checked < 0) {
        return 0;
    }
    int kind;
    if ((PyObject *)tp == TORCH(st)->tensor) {
        kind = FB_TORCH_TENSOR;
    }
    else if ((PyObject *)tp == TORCH(st)->parameter) {
        kind = FB_TORCH_PARAM;
        if (!fc_torch_attrs_same(st, FT_PARAM)) {
            return 0;
        }
        for (int i = 0; i < FC_TORCH_NDIRECT; i++) {
            int ai = fc_torch_direct[i].i;
            if (fc_torch_direct[i].owner == FT_TENSOR
                && _PyType_Lookup(tp, PyTuple_GET_ITEM(TORCH(st)->attr_names, ai))
                   != PyTuple_GET_ITEM(TORCH(st)->attrs, ai)) {
                return 0;
            }
        }
    }
    else {
        return 0;
    }
    if (!fc_torch_attrs_same(st, FT_TENSOR)) {
        return 0;
    }
    /* (a copier registered in copy._deepcopy_dispatch wins: plan.c asks
       only for types without one) */
    return kind;
}

/* ------------------------------------------------------------------ */
/* Per-call guards                                                     */
/* ------------------------------------------------------------------ */

/* The parts torch's path reaches that are not attributes of the tensor's
   type: thread-local modes, the storage classes, copy.deepcopy.
   1 native is fine | 0 decline | -1+exc */
static int
fc_torch_ambient(FcState *st, int storages)
{
    for (int i = 0; i < FC_TORCH_NPROBES; i++) {
        PyObject *f = PyTuple_GET_ITEM(TORCH(st)->probes, i), *v;
        if (PyCFunction_Check(f)
            && (PyCFunction_GET_FLAGS(f) & ~METH_COEXIST) == METH_NOARGS) {
            v = PyCFunction_GET_FUNCTION(f)(PyCFunction_GET_SELF(f), NULL);
            if (v == NULL && !PyErr_Occurred()) {
                PyErr_SetString(PyExc_SystemError, "probe returned NULL");
            }
        }
        else {
            v = PyObject_CallNoArgs(f);
        }
        if (v == NULL) {
            return -1;
        }
        int t = PyObject_IsTrue(v);
        Py_DECREF(v);
        if (t != 0) {
            return t < 0 ? -1 : 0;
        }
    }
    if (!storages) {
        return 1;
    }
    PyTypeObject *us = (PyTypeObject *)TORCH(st)->ustorage;
    PyTypeObject *ts = (PyTypeObject *)TORCH(st)->tstorage;
    if (fc_type_tag(us) != TORCH(st)->us_tag || TORCH(st)->us_tag == 0) {
        if (!fc_torch_attrs_same(st, FT_USTORAGE)) {
            return 0;
        }
        TORCH(st)->us_tag = fc_torch_tag(st, us);
    }
    if (fc_type_tag(ts) != TORCH(st)->ts_tag || TORCH(st)->ts_tag == 0) {
        if (!fc_torch_attrs_same(st, FT_TSTORAGE)) {
            return 0;
        }
        TORCH(st)->ts_tag = fc_torch_tag(st, ts);
    }
    /* copy.deepcopy(self._untyped_storage, memo) in torch.storage, and
       _tensor.py's own `deepcopy` for __dict__ */
    PyObject *dc = TORCH(st)->copy_deepcopy;
    if (PyDict_GetItemWithError(st->copy_globals, TN(st, TN_DEEPCOPY)) != dc
        || PyDict_GetItemWithError(TORCH(st)->tensor_globals, TN(st, TN_DEEPCOPY)) != dc
        || PyDict_GetItemWithError(TORCH(st)->storage_globals, TN(st, TN_COPY_MOD))
           != st->copy_module) {
        return PyErr_Occurred() ? -1 : 0;
    }
    PyObject *e;
    if (fc_table_get(st, st->deep_dispatch, TORCH(st)->ustorage, &e) < 0) {
        return -1;
    }
    int registered = e != NULL && e != Py_None;
    Py_XDECREF(e);
    return !registered;
}

/* getattr(o, name of attrs[ai]) through the getset descriptor captured at
   first use (the caller has made sure it is still what type(o) finds, and
   a data descriptor wins over the instance dict).  new ref | NULL+exc */
static PyObject *
fc_torch_get(FcState *st, PyObject *o, int ai)
{
    PyObject *d = PyTuple_GET_ITEM(TORCH(st)->attrs, ai);
    if (Py_IS_TYPE(d, &PyGetSetDescr_Type)) {
        PyGetSetDef *gs = ((PyGetSetDescrObject *)d)->d_getset;
        if (gs->get != NULL) {
            PyObject *v = gs->get(o, gs->closure);
            if (v == NULL && !PyErr_Occurred()) {
                PyErr_SetString(PyExc_SystemError, "getter returned NULL");
            }
            return v;
        }
    }
    return PyObject_GetAttr(o, PyTuple_GET_ITEM(TORCH(st)->attr_names, ai));
}

/* setattr(o, name of attrs[ai], v) through the getset descriptor captured
   at first use (a data descriptor: the instance dict plays no part).
   0 | -1+exc */
static int
fc_torch_set(FcState *st, PyObject *o, int ai, PyObject *v)
{
    PyObject *d = PyTuple_GET_ITEM(TORCH(st)->attrs, ai);
    if (Py_IS_TYPE(d, &PyGetSetDescr_Type)) {
        PyGetSetDef *gs = ((PyGetSetDescrObject *)d)->d_getset;
        if (gs->set != NULL) {
            return gs->set(o, v, gs->closure);
        }
    }
    return PyObject_SetAttr(o, PyTuple_GET_ITEM(TORCH(st)->attr_names, ai), v);
}

/* o.<attrs[ai]>() through the method descriptor captured at first use (the
   instance dict is known empty).  new ref | NULL+exc */
static PyObject *
fc_torch_call0(FcState *st, PyObject *o, int ai)
{
    PyObject *d = PyTuple_GET_ITEM(TORCH(st)->attrs, ai), *v = NULL;
    if (Py_IS_TYPE(d, &PyMethodDescr_Type)) {
        PyMethodDef *m = ((PyMethodDescrObject *)d)->d_method;
        int flags = m->ml_flags & ~METH_COEXIST;
        if (flags == METH_NOARGS) {
            v = m->ml_meth(o, NULL);
        }
        else if (flags == (METH_VARARGS | METH_KEYWORDS)) {
            v = ((PyCFunctionWithKeywords)(void (*)(void))m->ml_meth)(
                o, st->empty_tuple, NULL);
        }
        else {
            goto generic;
        }
        if (v == NULL && !PyErr_Occurred()) {
            PyErr_SetString(PyExc_SystemError, "method returned NULL");
        }
        return v;
    }
generic:
    return PyObject_CallMethodNoArgs(o, PyTuple_GET_ITEM(TORCH(st)->attr_names, ai));
}

/* bool(fc_torch_get / fc_torch_call0 (call)).  1 | 0 | -1+exc */
static int
fc_torch_is(FcState *st, PyObject *o, int ai, int call)
{
    PyObject *v = call ? fc_torch_call0(st, o, ai) : fc_torch_get(st, o, ai);
    if (v == NULL) {
        return -1;
    }
    int r = v == Py_True ? 1 : v == Py_False ? 0 : PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* A Py_ssize_t from fc_torch_get / fc_torch_call0.  0 | -1+exc */
static int
fc_torch_ssize(FcState *st, PyObject *o, int ai, int call, Py_ssize_t *res)
{
    PyObject *v = call ? fc_torch_call0(st, o, ai) : fc_torch_get(st, o, ai);
    if (v == NULL) {
        return -1;
    }
    *res = PyLong_Check(v) ? PyLong_AsSsize_t(v) : -1;
    Py_DECREF(v);
    if (*res == -1 && !PyErr_Occurred()) {
        PyErr_SetString(PyExc_TypeError, "expected an int");
    }
    return *res == -1 && PyErr_Occurred() ? -1 : 0;
}

/* A data pointer from fc_torch_call0.  0 | -1+exc */
static int
fc_torch_ptr(FcState *st, PyObject *o, int ai, void **res)
{
    PyObject *v = fc_torch_call0(st, o, ai);
    if (v == NULL) {
        return -1;
    }
    int isint = PyLong_Check(v);
    *res = isint ? PyLong_AsVoidPtr(v) : NULL;
    Py_DECREF(v);
    if (!isint) {
        PyErr_SetString(PyExc_TypeError, "expected an int");
    }
    return *res == NULL && PyErr_Occurred() ? -1 : 0;
}

/* A torch storage's address and size now: two C getters, no Python code.
   (defer.c re-reads them at each flush: fc_torch_defer.)  0 | -1+exc */
static int
fc_torch_storage_addr(FcState *st, PyObject *store, char **base, size_t *nbytes)
{
    Py_ssize_t n;
    void *p;
    if (fc_torch_ptr(st, store, TA_US_DATA_PTR, &p) < 0
        || fc_torch_ssize(st, store, TA_US_NBYTES, 1, &n) < 0) {
        return -1;
    }
    *base = p;
    *nbytes = n < 0 ? 0 : (size_t)n;
    return 0;
}

/* What defer.c asks torch.c at a flush (defer.h). */
static int
fc_torch_defer_recording(FcState *st)
{
    return TORCH(st)->defer;
}

/* torch.get_num_threads(): what torch's own copy_ of a big storage would
   use (at::parallel_for).  n >= 1 | 0 unknown (never an error) */
static long
fc_torch_defer_threads(FcState *st)
{
    if (TORCH(st)->num_threads == NULL) {
        return 0;
    }
    PyObject *v = PyObject_CallNoArgs(TORCH(st)->num_threads);
    long n = v != NULL && PyLong_Check(v) ? PyLong_AsLong(v) : 0;
    if (v == NULL || (n == -1 && PyErr_Occurred())) {
        PyErr_Clear();      /* a thread count is advice: copy on one */
        n = 0;
    }
    Py_XDECREF(v);
    return n < 0 ? 0 : n;
}

static const FcDeferSource fc_torch_defer = {
    .prof_kind = FC_PROF_TORCH,
    .recording = fc_torch_defer_recording,
    .addr = fc_torch_storage_addr,
    .threads = fc_torch_defer_threads,
    .cuda = fc_cuda_api,
};

/* x.untyped_storage(), for a copy defer.c records.  It may allocate (and
   so collect): take it before the addresses are read.  new ref | NULL+exc
   | NULL: not an UntypedStorage */
static PyObject *
fc_torch_store_of(FcState *st, PyObject *x)
{
    PyObject *s = fc_torch_call0(st, x, TA_T_UNTYPED_STORAGE);
    if (s != NULL && (PyObject *)Py_TYPE(s) != TORCH(st)->ustorage) {
        Py_DECREF(s);
        return NULL;
    }
    return s;
}

/* Is [p, p+n) inside storage s?  Its offset in *off.  1 | 0 | -1+exc */
static int
fc_torch_span(FcState *st, PyObject *s, const char *p, size_t n, size_t *off)
{
    char *b;
    size_t nb;
    if (fc_torch_storage_addr(st, s, &b, &nb) < 0) {
        return -1;
    }
    if (b == NULL || p < b || (size_t)(p - b) > nb || nb - (size_t)(p - b) < n) {
        return 0;
    }
    *off = (size_t)(p - b);
    return 1;
}

/* Allocating a result (empty_like, untyped_storage) can run user code in
   two ways: on 3.10/3.11 a garbage collection starts inside the
   allocation and runs finalizers, and torch drops the GIL in the op, so
   another thread may run (its finalizers too, on any version).  Such code
   may rebind x.data, set_() or resize x or its storage, after x's address
   and size were read.  When this thread is the interpreter's only one,
   collections are held off around the allocations (no other code can see
   the switch) and the addresses read before stay good; otherwise the
   caller reads them again after.  Returns what fc_torch_gc_resume needs:
   1 alone, collections held | 2 alone | 0 not alone (re-read) */
static int
fc_torch_gc_hold(void)
{
    PyThreadState *h = PyInterpreterState_ThreadHead(PyInterpreterState_Get());
    if (h == NULL || PyThreadState_Next(h) != NULL) {
        return 0;
    }
#if FC_GC_ANY_ALLOC
    /* 3.12+ collect at the eval breaker only: never inside a C call */
    return PyGC_Disable() ? 1 : 2;
#else
    return 2;
#endif
}

static void
fc_torch_gc_resume(int held)
{
#if FC_GC_ANY_ALLOC
    if (held == 1) {
        PyGC_Enable();
    }
#else
    (void)held;
#endif
}

/* Is x quantized or conj?  Asked through its dtype first, with a getter:
   TensorImpl::_set_conj asserts a complex dtype, and a quantized tensor
   needs a quantized dtype ("Creation of quantized tensor requires
   quantized dtype"), so a floating-point, integer or bool dtype answers no
   for both without is_conj() (which releases and retakes the GIL).  The
   last such dtype is remembered: torch.dtype objects are singletons.
   1 | 0 | -1+exc */
static int
fc_torch_special(FcState *st, PyObject *x)
{
    PyObject *dt = fc_torch_get(st, x, TA_T_DTYPE), *v;
    int r;
    if (dt == NULL) {
        return -1;
    }
    if (dt == TORCH(st)->real_dtype) {
        Py_DECREF(dt);
        return 0;
    }
    v = PyObject_GetAttr(dt, TN(st, TN_IS_COMPLEX));
    r = v == NULL ? -1 : PyObject_IsTrue(v);
    Py_XDECREF(v);
    if (r != 0) {
        Py_DECREF(dt);
        return r < 0 ? -1 : fc_torch_is(st, x, TA_T_IS_CONJ, 1);
    }
    v = PyObject_GetAttr(dt, TN(st, TN_IS_FLOATING_POINT));
    r = v == NULL ? -1 : PyObject_IsTrue(v);
    Py_XDECREF(v);
    if (r == 0) {
        r = PySequence_Contains(TORCH(st)->int_dtypes, dt);
    }
    if (r < 0) {
        Py_DECREF(dt);
        return -1;
    }
    if (r > 0) {
        Py_XSETREF(TORCH(st)->real_dtype, dt);
        return 0;
    }
    Py_DECREF(dt);
    return fc_torch_is(st, x, TA_T_IS_QUANTIZED, 0);
}

/* Is x on a device we copy: the CPU, or CUDA when turned on and torch has
   CUDA.  1 CPU | 2 CUDA | 0 | -1+exc */
static int
fc_torch_device_ok(FcState *st, PyObject *x)
{
    int r = fc_torch_is(st, x, TA_T_IS_CPU, 0);
    if (r != 0) {
        return r;
    }
    if (!TORCH(st)->cuda || TORCH(st)->cuda_stream == NULL) {
        return 0;
    }
    r = fc_torch_is(st, x, TA_T_IS_CUDA, 0);
    return r > 0 ? 2 : r;
}

/* Where the bytes of x (accepted by fc_torch_device_ok, which returned
   known; 0: not asked) live: *dev -1 for host memory, else its CUDA device,
   with torch's current stream there -- the stream torch's own copy_ would
   run on.  Call before reading x's address: it may import.  0 | -1+exc */
static int
fc_torch_where(FcState *st, PyObject *x, int known, int *dev, uintptr_t *stream)
{
    int cpu = known == 1 ? 1 : known == 2 ? 0 : fc_torch_is(st, x, TA_T_IS_CPU, 0);
    if (cpu < 0) {
        return -1;
    }
    if (cpu) {
        /* tests: host copies sent through the CUDA path (fake driver) */
        *dev = st->test.fake_device;
        *stream = st->test.fake_stream;
        return *dev >= 0 && fc_cuda_api(st) == NULL ? -1 : 0;
    }
    Py_ssize_t d;
    if (fc_torch_ssize(st, x, TA_T_GET_DEVICE, 1, &d) < 0) {
        return -1;
    }
    if (d < 0 || d > INT_MAX || TORCH(st)->cuda_stream == NULL) {
        PyErr_SetString(PyExc_SystemError, "fastcopy: a CUDA tensor without a device");
        return -1;
    }
    PyObject *i = PyLong_FromSsize_t(d), *v = NULL;
    if (i == NULL) {
        return -1;
    }
    v = PyObject_CallOneArg(TORCH(st)->cuda_stream, i);
    Py_DECREF(i);
    if (v == NULL) {
        return -1;
    }
    unsigned long long h = (unsigned long long)-1;
    if (PyLong_Check(v)) {
        h = PyLong_AsUnsignedLongLong(v);
    }
    else {
        PyErr_SetString(PyExc_TypeError, "fastcopy: torch's raw stream is not an int");
    }
    Py_DECREF(v);
    if (h == (unsigned long long)-1 && PyErr_Occurred()) {
        return -1;
    }
    *dev = (int)d;
    *stream = (uintptr_t)h;
    /* the first CUDA copy imports fastcopy._cuda: now, before any address
       is read, not at the copy */
    return fc_cuda_api(st) == NULL ? -1 : 0;
}

/* Is x (an exact torch.Tensor) one we copy natively?  depth counts .grad
   levels.  1 yes, on the CPU | 2 yes, CUDA | 0 decline | -1+exc */
static int
fc_torch_tensor_ok(FcState *st, PyObject *x, int depth)
{
    if ((PyObject *)Py_TYPE(x) != TORCH(st)->tensor || depth > 2) {
        return 0;
    }
    /* an empty instance dict: nothing shadows a method, no
       __deepcopy__ of its own, nothing for _clear_non_serializable_... */
    PyObject **dp = _PyObject_GetDictPtr(x);
    if (dp != NULL && *dp != NULL
        && (!PyDict_CheckExact(*dp) || PyDict_GET_SIZE(*dp) != 0)) {
        return 0;
    }
    int r, dev;
    if ((r = fc_torch_is(st, x, TA_T_IS_LEAF, 0)) != 1
        || (r = dev = fc_torch_device_ok(st, x)) < 1) {
        return r;
    }
    PyObject *layout = fc_torch_get(st, x, TA_T_LAYOUT);
    if (layout == NULL) {
        return -1;
    }
    Py_DECREF(layout);
    if (layout != TORCH(st)->strided) {
        return 0;
    }
    if ((r = fc_torch_special(st, x)) != 0
        || (r = fc_torch_is(st, x, TA_T_IS_NEG, 1)) != 0
        || (r = fc_torch_is(st, x, TA_T_IS_INFERENCE, 1)) != 0) {
        return r < 0 ? -1 : 0;
    }
    PyObject *g = fc_torch_get(st, x, TA_T_GRAD);
    if (g == NULL) {
        return -1;
    }
    r = g == Py_None ? 1 : fc_torch_tensor_ok(st, g, depth + 1);
    Py_DECREF(g);
    return r > 0 ? dev : r;
}

/* ------------------------------------------------------------------ */
/* Storages                                                            */
/* ------------------------------------------------------------------ */

/* _StorageBase.clone: UntypedStorage(nbytes, device=device), its bytes
   copied now or at the next flush (defer.c) on dev/stream, where the
   tensor that owns us lives.  new ref | NULL+exc */
static PyObject *
fc_torch_storage_clone(FcCtx *c, PyObject *us, int dev, uintptr_t stream)
{
    FcState *st = c->st;
    PyObject *nb = NULL, *dv = NULL, *y = NULL;
    void *src, *dst;
    nb = PyObject_CallMethodNoArgs(us, TN(st, TN_NBYTES));
    if (nb == NULL || (dv = PyObject_GetAttr(us, TN(st, TN_DEVICE))) == NULL) {
        goto done;
    }
    PyObject *args[3] = {NULL, nb, dv};
    y = PyObject_Vectorcall(TORCH(st)->ustorage, args + 1,
                            1 | PY_VECTORCALL_ARGUMENTS_OFFSET, TN(st, TN_KW_DEVICE));
    if (y == NULL) {
        goto done;
    }
    Py_ssize_t n = PyLong_AsSsize_t(nb), un;
    if ((n == -1 && PyErr_Occurred())
        || fc_torch_ssize(st, us, TA_US_NBYTES, 1, &un) < 0) {
        goto error;
    }
    if (un != n) {
        /* a finalizer resized us while y was allocated: torch's copy_
           says what happens */
        PyObject *v = PyObject_CallMethodOneArg(y, TN(st, TN_COPY), us);
        if (v == NULL) {
            goto error;
        }
        Py_DECREF(v);
        goto done;
    }
    if (n > 0) {
        /* no allocation from here to the copy (or its record) */
        if (fc_torch_ptr(st, us, TA_US_DATA_PTR, &src) < 0
            || fc_torch_ptr(st, y, TA_US_DATA_PTR, &dst) < 0) {
            goto error;
        }
        if (src != NULL && dst != NULL
            && fc_defer_copy(c, &fc_torch_defer, dst, y, 0, src, us, 0, (size_t)n, dev, stream) < 0) {
            goto error;
        }
    }
    goto done;
error:
    Py_CLEAR(y);
done:
    Py_XDECREF(nb);
    Py_XDECREF(dv);
    return y;
}

/* copy.deepcopy(us, memo) for an UntypedStorage, memo native or a dict:
       memo.get(id(us)) first; else UntypedStorage.__deepcopy__ (the
       "torch" sub-memo keyed by _cdata), memo[id(us)] = y, _keep_alive(us).
   new ref | NULL+exc */
static PyObject *
fc_torch_storage_deep(FcCtx *c, PyObject *us, int dev, uintptr_t stream)
{
    FcState *st = c->st;
    PyObject *y, *tm = NULL, *cdata = NULL;
    int r = fc_memo_lookup(c, us, &y);
    if (r != 0) {
        return r > 0 ? y : NULL;
    }
    y = NULL;
    /* memo = memo.setdefault("torch", {}) */
    tm = fc_memo_sub_setdefault(c, TN(st, TN_TORCH));
    if (tm == NULL) {
        return NULL;
    }
    cdata = PyObject_GetAttr(us, TN(st, TN_CDATA));
    if (cdata == NULL) {
        goto done;
    }
    /* if self._cdata in memo: return memo[self._cdata] */
    r = PySequence_Contains(tm, cdata);
    if (r < 0) {
        goto done;
    }
    if (r) {
        y = PyObject_GetItem(tm, cdata);
    }
    else {
        y = fc_torch_storage_clone(c, us, dev, stream);
        if (y != NULL && PyObject_SetItem(tm, cdata, y) < 0) {
            Py_CLEAR(y);
        }
    }
    if (y != NULL && fc_memo_finish(c, us, y) < 0) {
        Py_CLEAR(y);
    }
done:
    Py_XDECREF(tm);
    Py_XDECREF(cdata);
    return y;
}

/* ------------------------------------------------------------------ */
/* Tensors                                                             */
/* ------------------------------------------------------------------ */

/* The storage half of Tensor.__deepcopy__ plus new_empty([]).set_(...) for
   a tensor that is its storage's only occupant (offset 0, contiguous,
   storage bytes == tensor bytes) whose storage the memo has not seen:
   empty_like(x) allocates a fresh resizable storage of exactly nbytes with
   x's sizes and strides (x is dense), as UntypedStorage(nbytes) + set_
   would; the bytes are copied as _StorageBase.clone does; the version goes
   to 1 as set_ leaves it.  t's storage object then plays new_storage for
   the memo ("torch" sub-memo, memo[id(us)], keep-alive), in the stdlib's
   order.  new ref | NULL+exc | NULL: take the general road */
static PyObject *
fc_torch_tensor_owned(FcCtx *c, PyObject *x, PyObject *us, int dev, uintptr_t stream)
{
    FcState *st = c->st;
    PyObject *t = NULL, *nus = NULL, *cdata = NULL, *tm = NULL, *v;
    Py_ssize_t off, n, un;
    void *src, *dst;
    int r, held;
    if ((PyObject *)Py_TYPE(us) != TORCH(st)->ustorage) {
        return NULL;
    }
    r = fc_memo_lookup(c, us, &v);
    if (r != 0) {
        if (r > 0) {
            Py_DECREF(v);
        }
        return NULL;
    }
    if (fc_torch_ssize(st, x, TA_T_STORAGE_OFFSET, 1, &off) < 0 || off != 0
        || fc_torch_is(st, x, TA_T_IS_CONTIGUOUS, 1) != 1
        || fc_torch_ssize(st, x, TA_T_NBYTES, 0, &n) < 0
        || fc_torch_ssize(st, us, TA_US_NBYTES, 1, &un) < 0 || un != n) {
        goto decline;
    }
    cdata = fc_torch_get(st, us, TA_US_CDATA);
    if (cdata == NULL) {
        goto decline;
    }
    /* strong: a key's __eq__ in the sub-memo may replace it */
    tm = fc_memo_sub_get(c, TN(st, TN_TORCH));
    if (tm != NULL) {
        r = PyDict_CheckExact(tm) ? PyDict_Contains(tm, cdata) : 1;
        Py_CLEAR(tm);
        if (r != 0) {
            goto decline;
        }
    }
    else if (PyErr_Occurred()) {
        goto decline;
    }
    held = fc_torch_gc_hold();
    t = PyObject_CallOneArg(TORCH(st)->empty_like, x);
    if (t != NULL) {
        nus = fc_torch_call0(st, t, TA_T_UNTYPED_STORAGE);
    }
    fc_torch_gc_resume(held);
    if (t == NULL || (PyObject *)Py_TYPE(t) != TORCH(st)->tensor
        || nus == NULL || (PyObject *)Py_TYPE(nus) != TORCH(st)->ustorage
        || fc_torch_ssize(st, nus, TA_US_NBYTES, 1, &un) < 0 || un != n) {
        goto decline;
    }
    if (n > 0) {
        /* us is ours, but code run by the two allocations above may have
           resized it (fc_torch_gc_hold): its size again then.  No
           allocation from here up to the copy (or its record). */
        if ((!held && (fc_torch_ssize(st, us, TA_US_NBYTES, 1, &un) < 0 || un != n))
            || fc_torch_ptr(st, us, TA_US_DATA_PTR, &src) < 0
            || fc_torch_ptr(st, nus, TA_US_DATA_PTR, &dst) < 0
            || src == NULL || dst == NULL) {
            goto decline;
        }
        if (fc_defer_copy(c, &fc_torch_defer, dst, nus, 0, src, us, 0, (size_t)n, dev, stream) < 0) {
            goto error;
        }
    }
    {
        PyObject *one = PyTuple_Pack(1, t);
        if (one == NULL) {
            goto decline;
        }
        v = PyObject_CallOneArg(TORCH(st)->incr_version, one);
        Py_DECREF(one);
        if (v == NULL) {
            goto decline;
        }
        Py_DECREF(v);
    }
    /* memo.setdefault("torch", {})[us._cdata] = new_storage, then
       copy.deepcopy's memo[id(us)] and keep-alive */
    tm = fc_memo_sub_setdefault(c, TN(st, TN_TORCH));
    if (tm == NULL || PyObject_SetItem(tm, cdata, nus) < 0
        || fc_memo_finish(c, us, nus) < 0) {
        goto error;
    }
    Py_DECREF(tm);
    Py_DECREF(nus);
    Py_DECREF(cdata);
    return t;
decline:
    PyErr_Clear();
error:
    Py_XDECREF(tm);
    Py_XDECREF(t);
    Py_XDECREF(nus);
    Py_XDECREF(cdata);
    return NULL;
}

/* Tensor.__deepcopy__(x, memo) for a tensor fc_torch_tensor_ok accepted
   (known: what it returned, no code run since), with a native or a dict
   memo (its "torch" key: fc_memo_sub_*); sets memo[id(x)] (no keep-alive:
   the caller does what its caller would).  new ref | NULL+exc */
static PyObject *
fc_torch_tensor_deep(FcCtx *c, PyObject *x, int known)
{
    FcState *st = c->st;
    PyObject *us = NULL, *nus = NULL, *t = NULL, *off = NULL, *size = NULL;
    PyObject *stride = NULL, *g = NULL, *ng = NULL, *d = NULL, *nd = NULL;
    PyObject *v;
    int dev;
    uintptr_t stream;

    if (fc_torch_where(st, x, known, &dev, &stream) < 0) {
        goto error;
    }
    us = fc_torch_call0(st, x, TA_T_UNTYPED_STORAGE);
    if (us == NULL) {
        goto error;
    }
    t = fc_torch_tensor_owned(c, x, us, dev, stream);
    if (t != NULL) {
        goto storage_done;
    }
    if (PyErr_Occurred() || (nus = fc_torch_storage_deep(c, us, dev, stream)) == NULL) {
        goto error;
    }
    t = PyObject_CallMethodNoArgs(x, TN(st, TN_NEW));
    if (t == NULL
        || (off = PyObject_CallMethodNoArgs(x, TN(st, TN_STORAGE_OFFSET))) == NULL
        || (size = PyObject_GetAttr(x, TN(st, TN_SHAPE))) == NULL
        || (stride = PyObject_CallMethodNoArgs(x, TN(st, TN_STRIDE))) == NULL) {
        goto error;
    }
    {
        PyObject *args[5] = {t, nus, off, size, stride};
        v = PyObject_VectorcallMethod(TN(st, TN_SET), args,
                                      5 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        if (v == NULL) {
            goto error;
        }
        Py_DECREF(v);
    }
storage_done:;
    int rg = fc_torch_is(st, x, TA_T_REQUIRES_GRAD, 0);
    if (rg < 0 || (rg && fc_torch_set(st, t, TA_T_REQUIRES_GRAD, Py_True) < 0)) {
        goto error;
    }
    g = fc_torch_get(st, x, TA_T_GRAD);
    if (g == NULL) {
        goto error;
    }
    if (g != Py_None) {
        /* self.grad.__deepcopy__(memo): a direct call, no keep-alive.  The
           grad was vetted before the first allocation; a finalizer may have
           replaced it since (say by a sparse one): vetted again, and its own
           __deepcopy__ when declined */
        int r = fc_memo_lookup(c, g, &ng);
        if (r == 0) {
            r = fc_torch_tensor_ok(st, g, 1);
            if (r < 0) {
                PyErr_Clear();      /* torch's own path decides what to raise */
                r = 0;
            }
            if (r > 0) {
                ng = fc_torch_tensor_deep(c, g, r);
            }
            else {
                /* the grad's own __deepcopy__, shown the memo */
                c->shown_x = g;
                if (c->walk->before_user_code(c, 1) == 0) {
                    ng = PyObject_CallMethodOneArg(g, st->s_deepcopy, c->memo);
                }
                fc_memo_hide(c);
            }
            r = ng == NULL ? -1 : 1;
        }
        if (r < 0 || PyObject_SetAttr(t, TN(st, TN_GRAD), ng) < 0) {
            goto error;
        }
    }
    /* new_tensor.__dict__ = deepcopy(self.__dict__, memo) */
    d = PyObject_GetAttr(x, st->s_dict);
    if (d == NULL || (nd = c->walk->walk(c, d)) == NULL
        || PyObject_SetAttr(t, st->s_dict, nd) < 0) {
        goto error;
    }
    if (fc_memo_store(c, x, t) < 0) {
        goto error;
    }
    goto done;
error:
    Py_CLEAR(t);
done:
    Py_XDECREF(us);
    Py_XDECREF(nus);
    Py_XDECREF(off);
    Py_XDECREF(size);
    Py_XDECREF(stride);
    Py_XDECREF(g);
    Py_XDECREF(ng);
    Py_XDECREF(d);
    Py_XDECREF(nd);
    return t;
}

/* A plain contiguous tensor's bytes, copied into empty_like(x): the same
   tensor clone(memory_format=preserve_format) makes (clone allocates
   empty_strided(sizes, strides) for a dense tensor, as empty_like does,
   then copies).  new ref | NULL+exc | NULL: not for this tensor */
static PyObject *
fc_torch_clone_dense(FcCtx *c, PyObject *x, int known)
{
    FcState *st = c->st;
    PyObject *v = NULL, *y = NULL, *xs = NULL, *ys = NULL;
    void *src, *src2, *dst;
    Py_ssize_t n, n2;
    size_t soff = 0, doff = 0;
    int dev, held;
    uintptr_t stream;
    if (fc_torch_special(st, x) != 0
        || fc_torch_is(st, x, TA_T_IS_NEG, 1) != 0
        || fc_torch_is(st, x, TA_T_IS_CONTIGUOUS, 1) != 1) {
        return NULL;
    }
    v = fc_torch_get(st, x, TA_T_LAYOUT);
    if (v == NULL || v != TORCH(st)->strided) {
        goto fail;
    }
    Py_CLEAR(v);
    if (fc_torch_where(st, x, known, &dev, &stream) < 0
        || fc_torch_ssize(st, x, TA_T_NBYTES, 0, &n) < 0 || n < 0
        || fc_torch_ptr(st, x, TA_T_DATA_PTR, &src) < 0 || (src == NULL && n > 0)) {
        goto fail;
    }
    held = fc_torch_gc_hold();
    y = PyObject_CallOneArg(TORCH(st)->empty_like, x);
    if (y != NULL && fc_defer_queued(st, &fc_torch_defer, (size_t)n, dev)) {
        if ((xs = fc_torch_store_of(st, x)) != NULL) {
            ys = fc_torch_store_of(st, y);
        }
    }
    fc_torch_gc_resume(held);
    if (y == NULL || (fc_defer_queued(st, &fc_torch_defer, (size_t)n, dev) && ys == NULL)) {
        goto fail;
    }
    /* y was shaped from x before the allocations: x must still be those
       bytes (fc_torch_gc_hold).  No allocation from here to the copy (or
       its record). */
    if ((!held && (fc_torch_ptr(st, x, TA_T_DATA_PTR, &src2) < 0 || src2 != src
                   || fc_torch_ssize(st, x, TA_T_NBYTES, 0, &n2) < 0 || n2 != n))
        || fc_torch_ptr(st, y, TA_T_DATA_PTR, &dst) < 0 || (dst == NULL && n > 0)) {
        goto fail;
    }
    if (xs != NULL
        && (fc_torch_span(st, xs, src, (size_t)n, &soff) != 1
            || fc_torch_span(st, ys, dst, (size_t)n, &doff) != 1)) {
        goto fail;
    }
    /* the last step: a failure to record leaves nothing to undo */
    if (n > 0 && fc_defer_copy(c, &fc_torch_defer, dst, ys, doff, src, xs, soff, (size_t)n, dev, stream) < 0) {
        goto fail;
    }
    Py_XDECREF(xs);
    Py_XDECREF(ys);
    return y;
fail:
    Py_XDECREF(v);
    Py_XDECREF(y);
    Py_XDECREF(xs);
    Py_XDECREF(ys);
    return NULL;
}

/* Parameter.__deepcopy__ for a dense tensor, without _make_subclass's
   detach and second Python object: the fresh plain tensor clone_dense
   made gets requires_grad (TensorImpl::set_requires_grad, as
   _make_subclass does; nothing when False) and then type Parameter
   (object.__class__: same layout, checked at init).  _make_subclass's
   detach would give a shallow copy of that TensorImpl sharing its storage
   and version counter (0), with metadata changes allowed -- the state the
   fresh tensor already has -- and THPVariable_NewWithVar(Parameter) would
   set nothing more (Parameter has no __torch_dispatch__).
   new ref | NULL: not for this one (nothing observable happened) */
static PyObject *
fc_torch_param_swap(FcCtx *c, PyObject *x, int known)
{
    FcState *st = c->st;
    PyObject *y = fc_torch_clone_dense(c, x, known);
    if (y == NULL || (PyObject *)Py_TYPE(y) != TORCH(st)->tensor) {
        goto decline;
    }
    int rg = fc_torch_is(st, x, TA_T_REQUIRES_GRAD, 0);
    if (rg < 0 || (rg && fc_torch_set(st, y, TA_T_REQUIRES_GRAD, Py_True) < 0)
        || fc_torch_set(st, y, TA_T_CLASS, TORCH(st)->parameter) < 0) {
        goto decline;
    }
    return y;
decline:
    PyErr_Clear();
    Py_XDECREF(y);
    return NULL;
}

/* Parameter.__deepcopy__: _make_subclass(Parameter, x.data.clone(
   memory_format=preserve_format), x.requires_grad).  new ref | NULL+exc */
static PyObject *
fc_torch_param_deep(FcCtx *c, PyObject *x, int known)
{
    FcState *st = c->st;
    PyObject *data = NULL, *cl = NULL, *rg = NULL, *y = NULL;
    if (TORCH(st)->param_swap && (y = fc_torch_param_swap(c, x, known)) != NULL) {
        return y;
    }
    {
        /* nothing observable has happened yet: any failure here just
           takes torch's own clone below */
        cl = fc_torch_clone_dense(c, x, known);
        if (cl == NULL) {
            PyErr_Clear();
        }
        else if ((rg = PyObject_GetAttr(x, TN(st, TN_REQUIRES_GRAD))) == NULL) {
            goto done;
        }
        else {
            goto make;
        }
    }
    data = PyObject_GetAttr(x, TN(st, TN_DATA));
    if (data == NULL) {
        goto done;
    }
    PyObject *cargs[2] = {data, TORCH(st)->preserve};
    cl = PyObject_VectorcallMethod(TN(st, TN_CLONE), cargs,
                                   1 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                   TN(st, TN_KW_MEMORY_FORMAT));
    if (cl == NULL || (rg = PyObject_GetAttr(x, TN(st, TN_REQUIRES_GRAD))) == NULL) {
        goto done;
    }
make:;
    PyObject *args[3] = {TORCH(st)->parameter, cl, rg};
    y = PyObject_Vectorcall(TORCH(st)->make_subclass, args, 3, NULL);
done:
    Py_XDECREF(data);
    Py_XDECREF(cl);
    Py_XDECREF(rg);
    return y;
}

/* Is x (an exact Parameter) one we copy natively?  1 CPU | 2 CUDA | 0 |
   -1+exc */
static int
fc_torch_param_ok(FcState *st, PyObject *x)
{
    PyObject **dp = _PyObject_GetDictPtr(x);
    if (dp != NULL && *dp != NULL) {
        if (!PyDict_CheckExact(*dp)) {
            return 0;
        }
        /* strong: a key's __eq__ may replace x.__dict__ */
        PyObject *d = Py_NewRef(*dp);
        int has = PyDict_Contains(d, st->s_deepcopy);
        Py_DECREF(d);
        if (has != 0) {
            return has < 0 ? -1 : 0;
        }
    }
    /* an exact Parameter wraps a plain Tensor (Parameter.__new__ makes
       custom tensors keep their own type), so type(self)(data, rg) takes
       _make_subclass */
    return fc_torch_device_ok(st, x);
}

/* See buffers.c for the contract. */
static PyObject *
fc_torch_deep(FcCtx *c, PyObject *x, int kind)
{
    FcState *st = c->st;
    if (c->mode == FC_MEMO_MAPPING || TORCH(st)->checked <= 0) {
        return NULL;
    }
    /* a guard that fails with an error declines too: torch's own path
       decides what to raise */
    /* the ambient state changes only when code that is not ours runs, and
       every such call goes through the walker's before_user_code (FcWalkOps),
       whose flush forgets this */
    int need = kind == FB_TORCH_TENSOR ? 2 : 1;
    int r = 1;
    if (c->ambient < need) {
        r = fc_torch_ambient(st, need == 2);
        if (r > 0) {
            c->ambient = need;
        }
    }
    if (r > 0) {
        r = kind == FB_TORCH_PARAM ? fc_torch_param_ok(st, x)
                                   : fc_torch_tensor_ok(st, x, 0);
    }
    if (r <= 0) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *y;
    if (kind == FB_TORCH_PARAM) {
        y = fc_torch_param_deep(c, x, r);
    }
    else {
        /* the memo's "torch" key is a sub-memo of the native table, or of
           the dict memo (memo.c, "A sub-memo") */
        y = fc_torch_tensor_deep(c, x, r);
    }
    return fc_memo_done(c, x, y);
}

/* ------------------------------------------------------------------ */
/* The backend: settings, backends() entry, state                      */
/* ------------------------------------------------------------------ */

static const FcSetting fc_torch_settings[] = {
    {"torch_defer", FS_BOOL, offsetof(FcTorchState, defer), 1, NULL,
     "record the byte copies of torch tensors and run them together, before "
     "any user code and at the end of the call (on by default).  Host copies "
     "of 64 KiB and more run with the GIL released, from 32 MiB on up to "
     "torch.get_num_threads() threads (16 MiB each at least), as torch's own "
     "copy_ would."},
    {"torch_cuda", FS_BOOL, offsetof(FcTorchState, cuda), 0, NULL,
     "copy plain CUDA tensors natively, their bytes in one batch per device "
     "on torch's current stream (off by default: see docs/buffers-cuda.md).  "
     "Needs fastcopy._cuda and a CUDA torch."},
};

/* Is the native path what a deepcopy of a tensor would take now?  torch is
   imported and was captured, and none of the attributes its deepcopy path
   reaches (Tensor.__deepcopy__, Parameter.__deepcopy__, the storages'
   __deepcopy__, ...) has been replaced since.  Per-tensor conditions
   (device, layout, modes) are not part of the answer.
   1 | 0 (*why says why) | -1+exc */
static int
fc_torch_native(FcState *st, const char **why)
{
    if (fc_torch_module("torch") == NULL) {
        *why = "torch is not imported";
        return 0;
    }
    if (TORCH(st)->checked == 0) {
        int r = fc_torch_init(st);
        if (r < 0) {
            return -1;
        }
    }
    if (TORCH(st)->checked <= 0) {
        *why = TORCH(st)->checked < 0
               ? "this torch's deepcopy code is not the one fastcopy reproduces"
               : "torch is not fully imported yet";
        return 0;
    }
    static const struct { int owner; const char *name; } owners[] = {
        {FT_TENSOR, "torch.Tensor"}, {FT_PARAM, "torch.nn.Parameter"},
        {FT_USTORAGE, "torch.UntypedStorage"}, {FT_TSTORAGE, "torch.TypedStorage"},
    };
    for (size_t i = 0; i < sizeof(owners) / sizeof(owners[0]); i++) {
        if (!fc_torch_attrs_same(st, owners[i].owner)) {
            *why = owners[i].owner == FT_TENSOR
                   ? "torch.Tensor's deepcopy path was replaced"
                   : owners[i].owner == FT_PARAM
                   ? "torch.nn.Parameter's deepcopy path was replaced"
                   : "a torch storage's deepcopy path was replaced";
            return 0;
        }
    }
    *why = NULL;
    return 1;
}

/* backends()["torch"].  new ref | NULL+exc */
static PyObject *
fc_torch_info(FcState *st)
{
    PyObject *torch = fc_torch_module("torch");   /* borrowed */
    PyObject *version = NULL;
    if (torch != NULL) {
        Py_INCREF(torch);
        version = PyObject_GetAttrString(torch, "__version__");
        Py_DECREF(torch);
        if (version == NULL) {
            PyErr_Clear();
        }
    }
    const char *why = NULL;
    int native = fc_torch_native(st, &why);
    if (native < 0) {
        Py_XDECREF(version);
        return NULL;
    }
    PyObject *res = Py_BuildValue("{s:O,s:O,s:z,s:O,s:O}",
                                  "version", version ? version : Py_None,
                                  "native", native ? Py_True : Py_False,
                                  "why_not", why,
                                  "defer", TORCH(st)->defer ? Py_True : Py_False,
                                  "cuda", TORCH(st)->cuda ? Py_True : Py_False);
    Py_XDECREF(version);
    return res;
}

static int
fc_torch_traverse(FcState *st, visitproc visit, void *arg)
{
    Py_VISIT(TORCH(st)->tensor);
    Py_VISIT(TORCH(st)->parameter);
    Py_VISIT(TORCH(st)->ustorage);
    Py_VISIT(TORCH(st)->tstorage);
    Py_VISIT(TORCH(st)->names);
    Py_VISIT(TORCH(st)->attr_names);
    Py_VISIT(TORCH(st)->attrs);
    Py_VISIT(TORCH(st)->probes);
    Py_VISIT(TORCH(st)->strided);
    Py_VISIT(TORCH(st)->preserve);
    Py_VISIT(TORCH(st)->copy_deepcopy);
    Py_VISIT(TORCH(st)->tensor_globals);
    Py_VISIT(TORCH(st)->storage_globals);
    Py_VISIT(TORCH(st)->make_subclass);
    Py_VISIT(TORCH(st)->empty_like);
    Py_VISIT(TORCH(st)->incr_version);
    Py_VISIT(TORCH(st)->cuda_stream);
    Py_VISIT(TORCH(st)->num_threads);
    Py_VISIT(TORCH(st)->real_dtype);
    Py_VISIT(TORCH(st)->int_dtypes);
    return 0;
}

static void
fc_torch_clear(FcState *st)
{
    Py_CLEAR(TORCH(st)->tensor);
    Py_CLEAR(TORCH(st)->parameter);
    Py_CLEAR(TORCH(st)->ustorage);
    Py_CLEAR(TORCH(st)->tstorage);
    Py_CLEAR(TORCH(st)->names);
    Py_CLEAR(TORCH(st)->attr_names);
    Py_CLEAR(TORCH(st)->attrs);
    Py_CLEAR(TORCH(st)->probes);
    Py_CLEAR(TORCH(st)->strided);
    Py_CLEAR(TORCH(st)->preserve);
    Py_CLEAR(TORCH(st)->copy_deepcopy);
    Py_CLEAR(TORCH(st)->tensor_globals);
    Py_CLEAR(TORCH(st)->storage_globals);
    Py_CLEAR(TORCH(st)->make_subclass);
    Py_CLEAR(TORCH(st)->empty_like);
    Py_CLEAR(TORCH(st)->incr_version);
    Py_CLEAR(TORCH(st)->cuda_stream);
    Py_CLEAR(TORCH(st)->num_threads);
    Py_CLEAR(TORCH(st)->real_dtype);
    Py_CLEAR(TORCH(st)->int_dtypes);
}

FC_INTERNAL_DATA const FcBackend fc_torch_backend = {
    .name = "torch",
    .traverse = fc_torch_traverse,
    .clear = fc_torch_clear,
    .kind = fc_torch_kind,
    .deep = fc_torch_deep,
    .settings = fc_torch_settings,
    .nsettings = (int)(sizeof(fc_torch_settings) / sizeof(fc_torch_settings[0])),
    .info = fc_torch_info,
};
