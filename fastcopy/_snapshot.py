"""fastcopy.snapshot and the CUDA backend's report for fastcopy.backends().

``snapshot(x, device="cpu")`` is NOT a drop-in for ``copy.deepcopy``: it is a
deep copy whose torch tensors are created on ``device`` instead of on their
own device, so that a model or optimizer state living on a GPU can be kept as
a CPU copy without ever allocating a second copy on the GPU.  Everything that
is not a torch tensor is copied exactly as ``copy.deepcopy`` copies it.

How: a private instance of the stdlib ``copy`` module (the running
interpreter's own ``copy.py``, loaded once under another name) whose dispatch
table maps exactly ``torch.Tensor`` and ``torch.nn.Parameter`` to the copiers
below.  ``copy.deepcopy`` itself is never modified, so other threads and
``fastcopy.patch()`` are unaffected.
"""
import copy as _copy
import importlib.util as _ilu
import sys as _sys
import threading as _threading

__all__ = ["snapshot"]

_NONLEAF = ("snapshot: only Tensors created explicitly by the user (graph leaves) "
            "can be copied, as with copy.deepcopy")

_tls = _threading.local()
_private = None
_private_lock = _threading.Lock()


def _copy_module(torch):
    """The private copy module, with the tensor copiers registered once."""
    global _private
    with _private_lock:
        if _private is None:
            spec = _ilu.spec_from_file_location("fastcopy._snapshot_copy", _copy.__file__)
            mod = _ilu.module_from_spec(spec)
            spec.loader.exec_module(mod)
            mod._deepcopy_dispatch[torch.Tensor] = _copy_tensor
            mod._deepcopy_dispatch[torch.nn.Parameter] = _copy_parameter
            _private = mod
        return _private


class _Snapshot:
    """State of one snapshot() call: target, new storages, devices to sync."""

    def __init__(self, torch, device, pin_memory):
        self.torch = torch
        self.device = device
        self.pin = pin_memory
        self.storages = {}          # source StorageImpl (_cdata) -> new uint8 tensor
        self.sync = set()           # CUDA devices with pending copies into pinned memory

    def _new_bytes(self, storage):
        """A uint8 tensor on the target device holding a copy of `storage`'s
        bytes; one per source storage, so views stay views of one storage."""
        torch = self.torch
        key = storage._cdata
        new = self.storages.get(key)
        if new is not None:
            return new
        nbytes = storage.nbytes()
        new = torch.empty(nbytes, dtype=torch.uint8, device=self.device,
                          pin_memory=self.pin)
        if nbytes:
            src = torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)
            # Device -> pinned host is the one copy torch runs asynchronously:
            # enqueue them all back to back and wait once, at the end.
            asynchronous = self.pin and src.is_cuda
            new.copy_(src, non_blocking=asynchronous)
            if asynchronous:
                self.sync.add(src.device)
        self.storages[key] = new
        return new

    def data(self, x):
        """x's data on the target device, sharing storage with every other
        view of x's storage copied in this snapshot."""
        torch = self.torch
        with torch.no_grad():
            if (x.layout != torch.strided or x.is_quantized or x.is_conj() or x.is_neg()
                    or x.device.type not in ("cpu", "cuda")):
                # No storage to share (or bits to materialise): a plain copy.
                return x.detach().resolve_conj().resolve_neg().to(self.device, copy=True)
            new = self._new_bytes(x.untyped_storage())
            return torch.empty(0, dtype=x.dtype, device=self.device).set_(
                new.untyped_storage(), x.storage_offset(), x.size(), x.stride())

    def finish(self):
        for dev in self.sync:
            self.torch.cuda.current_stream(dev).synchronize()


def _current():
    return _tls.stack[-1]


def _copy_tensor(x, memo):
    # Mirrors Tensor.__deepcopy__ for a plain tensor: requires_grad, .grad and
    # __dict__ are copied too (all onto the target device).
    s = _current()
    if not x.is_leaf:
        raise RuntimeError(_NONLEAF)
    y = s.data(x)
    memo[id(x)] = y
    if x.requires_grad:
        y.requires_grad_(True)
    deepcopy = _private.deepcopy
    if x.grad is not None:
        y.grad = deepcopy(x.grad, memo)
    if x.__dict__:
        y.__dict__ = deepcopy(x.__dict__, memo)
    return y


def _copy_parameter(x, memo):
    # Mirrors Parameter.__deepcopy__: type and requires_grad, no .grad, no
    # __dict__; unlike it, a Parameter's storage is shared with the other
    # views of that storage in the snapshot (tied weights stay tied).
    s = _current()
    y = type(x)(s.data(x), x.requires_grad)
    memo[id(x)] = y
    return y


def snapshot(x, *, device="cpu", pin_memory=False):
    """A deep copy of `x` whose torch tensors are on `device`. NOT a drop-in.

    Differences from ``copy.deepcopy`` (everything else is the same):

    - every ``torch.Tensor`` and ``torch.nn.Parameter`` (exact types) is
      created on `device`; the source's device memory is never duplicated.
      Views of one storage become views of one new storage, Parameters
      included (``Parameter.__deepcopy__`` would clone each separately).
      ``requires_grad`` and the Parameter type are kept; plain tensors also
      get their ``.grad`` and ``__dict__`` copied (onto `device`), Parameters
      do not, as with deepcopy.  Sparse, quantized, conjugated/negated and
      non-CPU/CUDA tensors are copied with ``tensor.to(device, copy=True)``
      (no storage sharing).
    - tensors of other subclasses, and tensors reached through some other
      object's own ``__deepcopy__``, are copied by their own code, i.e. onto
      their own device.
    - ``pin_memory=True`` (CPU targets only) allocates the copies in pinned
      host memory; device-to-host copies are then enqueued asynchronously on
      the current streams and waited for once before returning, so code run
      during the copy (``__setstate__``, ``__deepcopy__`` hooks) must not
      read the new tensors' values.
    - the memo is private to the call.
    """
    torch = _sys.modules.get("torch")
    if torch is None:
        return _copy.deepcopy(x)    # no tensor can exist without torch imported
    device = torch.device(device)
    if pin_memory and device.type != "cpu":
        raise ValueError("snapshot: pin_memory=True needs a CPU target device")
    mod = _copy_module(torch)
    s = _Snapshot(torch, device, bool(pin_memory))
    stack = getattr(_tls, "stack", None)
    if stack is None:
        stack = _tls.stack = []
    stack.append(s)
    try:
        y = mod.deepcopy(x, {})
    finally:
        stack.pop()
    s.finish()
    return y


def _cuda_backend_info():
    """What the CUDA backend can do here, for ``fastcopy.backends()["cuda"]``.

    Never imports torch and never raises.  ``used_for`` says honestly what
    fastcopy does with CUDA today.
    """
    try:
        from . import _cuda
    except ImportError as e:   # pragma: no cover - built by setup.py everywhere
        return {"available": False, "reason": "fastcopy._cuda is not built: %s" % e,
                "used_for": None}
    info = _cuda.info()
    return {
        "available": info["available"],
        "reason": None if info["available"] else info["reason"],
        "library": info["library"],
        "driver_version": info["driver_version"],
        "batch_api": info["batch_abi"],
        "devices": info["devices"],
        "abi_checked_against": info["abi_checked_against"],
        "used_for": ("deepcopy of plain CUDA tensors and Parameters, one batch per "
                     "device and call, when configure(torch_cuda=True); off by default "
                     "(torch's own path) until verified on a GPU with "
                     "python -m fastcopy.gpucheck"),
    }
