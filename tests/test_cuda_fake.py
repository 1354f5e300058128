"""fastcopy._cuda against a fake libcuda (tests/fakecuda/fakecuda.c), and
fastcopy.snapshot on CPU.

The fake is compiled with gcc into a temporary .so and selected through
$FASTCOPY_LIBCUDA; ctypes loads the same file, so the tests configure it
(driver version, devices, capture state, injected failures) and read back
what the module asked of it (call counts, a log of stream/event/copy calls).
"""
import copy
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import pytest

from fastcopy import _cuda
from source_tree import RUN_CWD, subprocess_env
from fastcopy._snapshot import _cuda_backend_info

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_SRC = os.path.join(HERE, "fakecuda", "fakecuda.c")

CUDA_SUCCESS = 0
E_INVALID_VALUE = 1
E_NO_DEVICE = 100
E_INVALID_HANDLE = 400
E_ILLEGAL_ADDRESS = 700
CAPTURE_ACTIVE, CAPTURE_INVALIDATED = 1, 2

_built = {}


def _build(variant):
    """Path of the fake driver .so for `variant` ('12+' or '11'); built once."""
    if variant in _built:
        return _built[variant]
    if sys.platform == "win32":     # fakecuda.c is a POSIX shared object (pthreads)
        raise unittest.SkipTest("the fake CUDA driver is built for POSIX systems")
    gcc = shutil.which("gcc")
    if gcc is None:
        raise unittest.SkipTest("gcc is needed to build the fake CUDA driver")
    out = os.path.join(tempfile.mkdtemp(prefix="fakecuda"), "libfakecuda%s.so" % variant)
    cmd = [gcc, "-std=c11", "-D_GNU_SOURCE", "-O1", "-Wall", "-Wextra", "-shared", "-fPIC",
           FAKE_SRC, "-o", out, "-lpthread"]
    if variant == "11":
        cmd.insert(1, "-DFAKECUDA_11")
    subprocess.run(cmd, check=True)
    _built[variant] = out
    return out


class Fake:
    """The fake driver, seen through ctypes."""

    def __init__(self, path):
        self.path = path
        lib = self.lib = ctypes.CDLL(path)
        lib.fake_configure.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.fake_count.argtypes = [ctypes.c_char_p]
        lib.fake_count.restype = ctypes.c_long
        lib.fake_take_log.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        lib.fake_fail.argtypes = [ctypes.c_char_p, ctypes.c_long, ctypes.c_int]
        lib.fake_stream.argtypes = [ctypes.c_int]
        lib.fake_stream.restype = ctypes.c_void_p
        lib.fake_set_capture.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        lib.fake_get_capture.argtypes = [ctypes.c_void_p]
        lib.fake_last_gpa_flags.restype = ctypes.c_ulonglong
        lib.fake_set_current.argtypes = [ctypes.c_int]

    def configure(self, version, ndev=1, init_rc=0):
        self.lib.fake_configure(version, ndev, init_rc)
        self.lib.fake_set_current(-1)

    def count(self, name):
        return self.lib.fake_count(name.encode())

    def log(self):
        buf = ctypes.create_string_buffer(1 << 16)
        self.lib.fake_take_log(buf, len(buf))
        return buf.value.decode().split(";") if buf.value else []

    def fail(self, name, nth, code):
        self.lib.fake_fail(name.encode(), nth, code)

    def stream(self, device=0):
        return self.lib.fake_stream(device)

    def capture(self, stream, status, global_mode=True):
        self.lib.fake_set_capture(stream, status, int(global_mode))


def _use(monkeypatch, path):
    monkeypatch.setenv("FASTCOPY_LIBCUDA", path)
    _cuda._forget_driver()


@pytest.fixture
def fake(monkeypatch):
    f = Fake(_build("12+"))
    f.configure(13000)
    _use(monkeypatch, f.path)
    yield f
    _cuda._forget_driver()


def use_version(fake, version, ndev=1, init_rc=0):
    fake.configure(version, ndev, init_rc)
    _cuda._forget_driver()


class _Copies(list):
    """A copy list that owns the Buffers its addresses point into."""

    def __init__(self, owner, items):
        super().__init__(items)
        self.owner = owner


class Buffers:
    """n source buffers with distinct bytes and n zeroed destinations."""

    def __init__(self, sizes):
        self.src = [ctypes.create_string_buffer(bytes((i * 7 + j) % 251 + 1 for j in range(n)), n)
                    for i, n in enumerate(sizes)]
        self.dst = [ctypes.create_string_buffer(n) for n in sizes]
        self.sizes = list(sizes)

    def copies(self):
        # The list keeps the buffers alive: `copy_batch(Buffers([4]).copies(), ...)`
        # must not hand the driver addresses of freed memory (ASan found it).
        return _Copies(self, [(ctypes.addressof(d), ctypes.addressof(s), n)
                              for d, s, n in zip(self.dst, self.src, self.sizes)])

    def copied(self):
        return all(d.raw == s.raw for d, s, n in zip(self.dst, self.src, self.sizes) if n)

    def untouched(self):
        return all(d.raw == b"\0" * n for d, n in zip(self.dst, self.sizes))


# --------------------------------------------------------------------------
# Loading and reporting
# --------------------------------------------------------------------------

def test_no_driver(monkeypatch):
    _use(monkeypatch, "/nonexistent/libcuda.so.1")
    try:
        ok, reason = _cuda.available()
        assert ok is False
        assert "/nonexistent/libcuda.so.1" in reason
        with pytest.raises(RuntimeError, match="not available"):
            _cuda.driver_version()
        with pytest.raises(RuntimeError, match="not available"):
            _cuda.copy_batch([(1, 2, 3)], 0, 0)
        info = _cuda.info()
        assert info["available"] is False and info["devices"] == 0
        b = _cuda_backend_info()
        assert b["available"] is False and "cannot load" in b["reason"]
    finally:
        _cuda._forget_driver()


def test_info_reports_build_check():
    info = _cuda.info()
    have_headers = any(os.path.isfile(os.path.join(h, "include", "cuda.h"))
                       for h in (os.environ.get("CUDA_HOME", ""), "/usr/local/cuda") if h)
    if have_headers and os.environ.get("FASTCOPY_CUDA") != "0":
        assert isinstance(info["abi_checked_against"], int)
    assert set(info) >= {"available", "reason", "library", "driver_version",
                         "proc_address", "batch_abi", "devices", "abi_checked_against"}


@pytest.mark.parametrize("version, abi", [
    (12000, None), (12060, None), (12080, "12.8"), (12090, "12.8"),
    (13000, "13.0"), (13010, "13.0"),
])
def test_versions_pick_abi(fake, version, abi):
    use_version(fake, version)
    ok, reason = _cuda.available()
    assert ok, reason
    assert _cuda.driver_version() == version
    info = _cuda.info()
    assert info["batch_abi"] == abi
    assert info["proc_address"] == "cuGetProcAddress_v2"
    assert info["devices"] == 1
    assert fake.lib.fake_last_gpa_flags() == 1        # CU_GET_PROC_ADDRESS_LEGACY_STREAM
    assert fake.count("cuInit") == 1
    b = _cuda_backend_info()
    assert b["available"] is True and b["reason"] is None and b["batch_api"] == abi


def test_cuda_11_driver_uses_v1_proc_address(monkeypatch):
    f = Fake(_build("11"))
    f.configure(11080)
    _use(monkeypatch, f.path)
    try:
        assert _cuda.available()[0]
        info = _cuda.info()
        assert info["proc_address"] == "cuGetProcAddress"
        assert info["batch_abi"] is None
        bufs = Buffers([10, 20])
        s = f.stream()
        assert _cuda.copy_batch(bufs.copies(), 0, s) == "memcpy"
        assert bufs.copied()
    finally:
        _cuda._forget_driver()


def test_driver_too_old_for_an_entry_point(fake):
    use_version(fake, 9020)           # before cuStreamIsCapturing (10.0)
    ok, reason = _cuda.available()
    assert not ok and "cuStreamIsCapturing" in reason


def test_init_failures(fake):
    use_version(fake, 13000, ndev=0)
    ok, reason = _cuda.available()
    assert not ok and "cuInit failed: CUDA_ERROR_NO_DEVICE" in reason
    use_version(fake, 13000, init_rc=999)   # a code the driver cannot name
    ok, reason = _cuda.available()
    assert not ok and "CUDA error 999" in reason


def test_load_is_cached(fake):
    for _ in range(3):
        _cuda.available()
        _cuda.driver_version()
    assert fake.count("cuInit") == 1
    assert fake.count("cuDriverGetVersion") == 1


# --------------------------------------------------------------------------
# Paths of copy_batch
# --------------------------------------------------------------------------

@pytest.mark.parametrize("version, tag", [(12080, "batch128"), (13000, "batch13")])
def test_batch_on_user_stream(fake, version, tag):
    use_version(fake, version)
    s = fake.stream()
    bufs = Buffers([1, 4096, 3, 1 << 16])
    fake.lib.fake_set_current(0)      # as after torch's cudaSetDevice: no push
    assert _cuda.copy_batch(bufs.copies(), 0, s) == "batch"
    assert bufs.copied()
    log = fake.log()
    assert log == ["%s(4,s%d)" % (tag, int(log[0].split(",s")[1][:-1]))]
    assert fake.count("cuMemcpyBatchAsync") == 1
    assert fake.count("cuMemcpyAsync") == 0
    assert fake.count("cuCtxPushCurrent") == 0


@pytest.mark.parametrize("legacy", [0, 1])
@pytest.mark.parametrize("version, tag", [(12080, "batch128"), (13000, "batch13")])
def test_legacy_stream_is_fenced(fake, version, tag, legacy):
    use_version(fake, version)
    fake.lib.fake_set_current(0)
    bufs = Buffers([8, 9, 10])
    assert _cuda.copy_batch(bufs.copies(), 0, legacy) == "batch-fenced"
    assert bufs.copied()
    log = [e for e in fake.log() if not e.startswith(("event(", "stream("))]
    assert len(log) == 5
    ev_a = log[0][len("record("):].split(",")[0]
    side = log[1][len("wait("):].split(",")[0]
    ev_b = log[3][len("record("):].split(",")[0]
    assert log == ["record(%s,L)" % ev_a, "wait(%s,%s)" % (side, ev_a),
                   "%s(3,%s)" % (tag, side), "record(%s,%s)" % (ev_b, side),
                   "wait(L,%s)" % ev_b]
    assert ev_a != ev_b and side.startswith("s")
    # The side stream and events are made once per device and reused.
    bufs2 = Buffers([5])
    assert _cuda.copy_batch(bufs2.copies(), 0, legacy) == "batch-fenced"
    assert bufs2.copied()
    assert fake.count("cuStreamCreate") == 1
    assert fake.count("cuEventCreate") == 2
    assert "%s(1,%s)" % (tag, side) in fake.log()


def test_side_stream_is_non_blocking(fake):
    fake.lib.fake_set_current(0)
    _cuda.copy_batch(Buffers([4]).copies(), 0, 0)
    created = [e for e in fake.log() if e.startswith(("stream(", "event("))]
    assert any(e.startswith("stream(") and e.endswith(",1)") for e in created)   # NON_BLOCKING
    assert all(e.endswith(",2)") for e in created if e.startswith("event("))     # DISABLE_TIMING


def test_per_thread_default_stream_takes_batch(fake):
    fake.lib.fake_set_current(0)
    bufs = Buffers([16, 16])
    assert _cuda.copy_batch(bufs.copies(), 0, 2) == "batch"
    assert bufs.copied()
    assert fake.log() == ["batch13(2,P)"]


@pytest.mark.parametrize("version", [12000, 12060])
@pytest.mark.parametrize("stream", ["user", 0])
def test_no_batch_api_one_memcpy_per_copy(fake, version, stream):
    use_version(fake, version)
    s = fake.stream() if stream == "user" else stream
    bufs = Buffers([3, 5, 7])
    assert _cuda.copy_batch(bufs.copies(), 0, s) == "memcpy"
    assert bufs.copied()
    assert fake.count("cuMemcpyAsync") == 3
    assert fake.count("cuMemcpyBatchAsync") == 0
    assert fake.count("cuStreamCreate") == 0 and fake.count("cuEventRecord") == 0


@pytest.mark.parametrize("version", [12080, 13000])
def test_capture_falls_back_to_memcpy(fake, version):
    use_version(fake, version)
    s = fake.stream()
    fake.capture(s, CAPTURE_ACTIVE)
    bufs = Buffers([32, 64])
    assert _cuda.copy_batch(bufs.copies(), 0, s) == "memcpy-capture"
    assert bufs.untouched()                       # captured into the graph, not run
    assert fake.count("cuMemcpyBatchAsync") == 0  # would have invalidated the capture
    assert fake.count("cuMemcpyAsync") == 2
    assert fake.lib.fake_get_capture(s) == CAPTURE_ACTIVE


def test_capture_nodes_logged(fake):
    s = fake.stream()
    fake.capture(s, CAPTURE_ACTIVE)
    fake.lib.fake_set_current(0)
    _cuda.copy_batch(Buffers([32, 64]).copies(), 0, s)
    nodes = [e.split(",")[0] for e in fake.log() if e.startswith("node(")]
    assert nodes == ["node(32", "node(64"]


def _fake_batch13(fake):
    """The fake's 13.0 cuMemcpyBatchAsync, called directly through ctypes."""
    gpa = fake.lib.cuGetProcAddress_v2
    gpa.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                    ctypes.c_ulonglong, ctypes.POINTER(ctypes.c_int)]
    pfn, status = ctypes.c_void_p(), ctypes.c_int()
    assert gpa(b"cuMemcpyBatchAsync", ctypes.byref(pfn), 13000, 1, ctypes.byref(status)) == 0
    P = ctypes.POINTER
    proto = ctypes.CFUNCTYPE(ctypes.c_int, P(ctypes.c_ulonglong), P(ctypes.c_ulonglong),
                             P(ctypes.c_size_t), ctypes.c_size_t, ctypes.c_void_p,
                             P(ctypes.c_size_t), ctypes.c_size_t, ctypes.c_void_p)
    fn = proto(pfn.value)
    attr = (ctypes.c_int * 6)(1, 1, 0, 1, 0, 0)   # srcAccessOrder=STREAM, hints, flags
    idx = (ctypes.c_size_t * 1)(0)

    def call(copies, stream, order=1, nattrs=1):
        n = len(copies)
        d = (ctypes.c_ulonglong * max(n, 1))(*[c[0] for c in copies])
        sr = (ctypes.c_ulonglong * max(n, 1))(*[c[1] for c in copies])
        sz = (ctypes.c_size_t * max(n, 1))(*[c[2] for c in copies])
        attr[0] = order
        return fn(d, sr, sz, n, ctypes.cast(attr, ctypes.c_void_p), idx, nattrs, stream)
    return call


def test_fake_enforces_batch_rules(fake):
    """The rules the module's fallbacks exist for are really enforced."""
    call = _fake_batch13(fake)
    assert call(Buffers([4]).copies(), fake.stream()) == 3     # cuInit not called yet
    assert _cuda.available()[0]                                # calls cuInit
    assert call(Buffers([4]).copies(), fake.stream()) == 201   # no current context
    fake.lib.fake_set_current(0)
    assert call(Buffers([4]).copies(), None) == E_INVALID_VALUE        # legacy NULL stream
    assert call(Buffers([4]).copies(), 1) == E_INVALID_VALUE           # CU_STREAM_LEGACY
    s = fake.stream()
    assert call([], s) == E_INVALID_VALUE                              # empty batch
    assert call(Buffers([0]).copies(), s) == E_INVALID_VALUE           # zero size
    assert call(Buffers([4]).copies(), s, order=0) == E_INVALID_VALUE  # invalid access order
    assert call(Buffers([4]).copies(), s, nattrs=2) == E_INVALID_VALUE # numAttrs > count
    fake.capture(s, CAPTURE_ACTIVE)
    assert call(Buffers([4]).copies(), s) == 900                       # CAPTURE_UNSUPPORTED
    assert fake.lib.fake_get_capture(s) == CAPTURE_INVALIDATED
    s2 = fake.stream()
    b = Buffers([4, 8])
    assert call(b.copies(), s2) == 0 and b.copied()
    fake.lib.fake_set_current(-1)


def test_legacy_stream_during_global_capture_is_an_error(fake):
    s = fake.stream()
    fake.capture(s, CAPTURE_ACTIVE, global_mode=True)
    with pytest.raises(RuntimeError,
                       match="cuStreamIsCapturing failed: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"):
        _cuda.copy_batch(Buffers([4]).copies(), 0, 0)
    assert fake.lib.fake_ctx_depth() == 0         # context popped on the error path


def test_invalidated_capture_reports_driver_error(fake):
    s = fake.stream()
    fake.capture(s, CAPTURE_INVALIDATED)
    with pytest.raises(RuntimeError,
                       match=r"cuMemcpyAsync failed: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED "
                             r"\(copy 0 of 1\)"):
        _cuda.copy_batch(Buffers([4]).copies(), 0, s)


# --------------------------------------------------------------------------
# Contexts and devices
# --------------------------------------------------------------------------

def test_primary_context_pushed_and_popped(fake):
    assert fake.lib.fake_ctx_depth() == 0
    s = fake.stream()
    bufs = Buffers([4])
    assert _cuda.copy_batch(bufs.copies(), 0, s) == "batch"
    log = fake.log()
    assert log[0] == "push(0)" and log[-1] == "pop"
    assert fake.lib.fake_ctx_depth() == 0
    assert fake.count("cuDevicePrimaryCtxRetain") == 1
    _cuda.copy_batch(bufs.copies(), 0, s)
    assert fake.count("cuDevicePrimaryCtxRetain") == 1  # retained once, kept


def test_second_device(fake):
    use_version(fake, 13000, ndev=2)
    fake.lib.fake_set_current(0)                  # another device is current
    s1 = fake.stream(1)
    bufs = Buffers([12])
    assert _cuda.copy_batch(bufs.copies(), 1, s1) == "batch"
    assert bufs.copied()
    log = fake.log()
    assert log[0] == "push(1)" and log[-1] == "pop"
    assert fake.lib.fake_ctx_depth() == 1
    # A stream of device 0 used for device 1: the driver's error comes through.
    s0 = fake.stream(0)
    with pytest.raises(RuntimeError, match="CUDA_ERROR_INVALID_HANDLE"):
        _cuda.copy_batch(bufs.copies(), 1, s0)
    assert fake.lib.fake_ctx_depth() == 1
    with pytest.raises(ValueError, match="device 2 out of range"):
        _cuda.copy_batch(bufs.copies(), 2, 0)
    with pytest.raises(ValueError):
        _cuda.copy_batch(bufs.copies(), -1, 0)


# --------------------------------------------------------------------------
# Sizes, arguments, errors
# --------------------------------------------------------------------------

def test_zero_sizes_skipped(fake):
    s = fake.stream()
    bufs = Buffers([0, 6, 0])
    assert _cuda.copy_batch(bufs.copies(), 0, s) == "batch"
    assert bufs.copied()
    assert [e.split(",")[0] for e in fake.log() if e.startswith("batch")] == ["batch13(1"]
    assert _cuda.copy_batch(Buffers([0, 0]).copies(), 0, s) == "empty"
    assert _cuda.copy_batch([], 0, s) == "empty"
    assert fake.count("cuMemcpyBatchAsync") == 1


def test_bad_arguments(fake):
    with pytest.raises(TypeError):
        _cuda.copy_batch(5, 0, 0)
    with pytest.raises(TypeError, match=r"copies\[0\]"):
        _cuda.copy_batch([(1, 2)], 0, 0)
    with pytest.raises(TypeError, match=r"copies\[1\]: nbytes must be an int"):
        _cuda.copy_batch([(1, 2, 3), (1, 2, "3")], 0, 0)
    with pytest.raises(OverflowError):
        _cuda.copy_batch([(-1, 2, 3)], 0, 0)
    with pytest.raises(OverflowError):
        _cuda.copy_batch([(1, 2, 3)], 0, -1)
    assert fake.count("cuMemcpyBatchAsync") == 0


def test_failidx_names_the_copy_on_12_8(fake):
    use_version(fake, 12080)
    s = fake.stream()
    bufs = Buffers([4, 4, 4])
    copies = bufs.copies()
    copies[1] = (0, copies[1][1], 4)              # NULL destination
    with pytest.raises(RuntimeError,
                       match=r"cuMemcpyBatchAsync failed: CUDA_ERROR_INVALID_VALUE "
                             r"\(copy 1 of 3\)"):
        _cuda.copy_batch(copies, 0, s)


def test_13_0_error_has_no_index(fake):
    s = fake.stream()
    bufs = Buffers([4, 4])
    copies = bufs.copies()
    copies[1] = (0, copies[1][1], 4)
    with pytest.raises(RuntimeError) as ei:
        _cuda.copy_batch(copies, 0, s)
    assert str(ei.value) == "cuMemcpyBatchAsync failed: CUDA_ERROR_INVALID_VALUE"


@pytest.mark.parametrize("call, stream, version", [
    ("cuMemcpyBatchAsync", "user", 13000),
    ("cuMemcpyBatchAsync", "user", 12080),
    ("cuEventRecord", 0, 13000),
    ("cuStreamWaitEvent", 0, 13000),
    ("cuStreamCreate", 0, 13000),
    ("cuEventCreate", 0, 13000),
    ("cuStreamIsCapturing", "user", 13000),
    ("cuCtxGetCurrent", "user", 13000),
    ("cuDevicePrimaryCtxRetain", "user", 13000),
])
def test_injected_failures(fake, call, stream, version):
    use_version(fake, version)
    s = fake.stream() if stream == "user" else stream
    fake.fail(call, 1, E_ILLEGAL_ADDRESS)
    bufs = Buffers([4, 4])
    with pytest.raises(RuntimeError, match="%s failed: CUDA_ERROR_ILLEGAL_ADDRESS" % call):
        _cuda.copy_batch(bufs.copies(), 0, s)
    assert fake.lib.fake_ctx_depth() == 0
    # The next call goes through: nothing was left half-initialised.
    assert _cuda.copy_batch(bufs.copies(), 0, s) in ("batch", "batch-fenced")
    assert bufs.copied()


def test_memcpy_failure_names_the_copy(fake):
    use_version(fake, 12000)
    s = fake.stream()
    fake.fail("cuMemcpyAsync", 2, E_INVALID_VALUE)
    with pytest.raises(RuntimeError,
                       match=r"cuMemcpyAsync failed: CUDA_ERROR_INVALID_VALUE \(copy 1 of 3\)"):
        _cuda.copy_batch(Buffers([1, 2, 3]).copies(), 0, s)


def test_pop_failure_reported(fake):
    s = fake.stream()
    fake.fail("cuCtxPopCurrent", 1, E_INVALID_VALUE)
    with pytest.raises(RuntimeError, match="cuCtxPopCurrent failed"):
        _cuda.copy_batch(Buffers([1]).copies(), 0, s)
    fake.lib.fake_set_current(-1)


def test_unnamed_error_code(fake):
    s = fake.stream()
    fake.fail("cuMemcpyBatchAsync", 1, 4242)
    with pytest.raises(RuntimeError, match="cuMemcpyBatchAsync failed: CUDA error 4242"):
        _cuda.copy_batch(Buffers([1]).copies(), 0, s)


def test_gil_released_threads(fake):
    import threading
    s = fake.stream()
    fake.lib.fake_set_current(0)
    errors = []

    def work():
        try:
            for _ in range(20):
                b = Buffers([64, 128])
                assert _cuda.copy_batch(b.copies(), 0, s) == "batch"
                assert b.copied()
        except Exception as e:  # pragma: no cover
            errors.append(e)
    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


def test_gpucheck_without_gpu_exits_zero():
    env = subprocess_env(dict(os.environ, FASTCOPY_LIBCUDA="/nonexistent/libcuda.so.1"))
    r = subprocess.run([sys.executable, "-m", "fastcopy.gpucheck"], capture_output=True,
                       text=True, env=env, cwd=RUN_CWD, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 1 and "no GPU" in lines[0]


# --------------------------------------------------------------------------
# deepcopy's device copies (src/defer.c -> the _C_API capsule), driven with
# CPU tensors routed as if they lived on device 0 (_fastcopy._fake_cuda)
# --------------------------------------------------------------------------

@pytest.fixture
def routed(fake):
    """CPU tensor copies sent to the fake driver's device 0."""
    _torch()
    import fastcopy
    from fastcopy import _fastcopy
    fake.lib.fake_set_current(0)

    def route(stream, defer=True):
        fastcopy.configure(torch_defer=defer)
        _fastcopy._fake_cuda(0, stream)
    old = fastcopy.configure()
    yield route
    _fastcopy._fake_cuda(-1, 0)
    fastcopy.configure(**old)


def _fastcopy_stats():
    from fastcopy import _fastcopy
    return _fastcopy._defer_stats()


def _tensor_payload(torch):
    base = torch.arange(64, dtype=torch.float32)
    return {"t%d" % i: torch.randn(5, 7) + i for i in range(20)} | {
        "base": base, "view": base[8:40].view(4, 8), "empty": torch.empty(0),
        "p": [torch.nn.Parameter(torch.randn(3, 3)) for _ in range(4)]}


def _same(torch, a, b):
    assert a.keys() == b.keys()
    for k in a:
        if k == "p":
            for pa, pb in zip(a[k], b[k]):
                assert type(pa) is type(pb) and torch.equal(pa, pb)
        else:
            assert torch.equal(a[k], b[k]) and a[k].stride() == b[k].stride()
    assert (b["view"].untyped_storage().data_ptr()
            == b["base"].untyped_storage().data_ptr())


@pytest.mark.parametrize("version, tag", [(12080, "batch128"), (13000, "batch13")])
def test_deepcopy_one_batch_per_call(fake, routed, version, tag):
    torch = _torch()
    import fastcopy
    use_version(fake, version)
    fake.lib.fake_set_current(0)
    s = fake.stream()
    routed(s)
    x = _tensor_payload(torch)
    before = fake.count("cuMemcpyBatchAsync")
    y = fastcopy.deepcopy(x)
    _same(torch, copy.deepcopy(x), y)
    assert fake.count("cuMemcpyBatchAsync") - before == 1
    # every non-empty storage once: 20 tensors, base (its view shares it), 4 params
    assert [e for e in fake.log() if e.startswith(tag)][-1].startswith("%s(25," % tag)
    assert _fastcopy_stats()["cuda_last_path"] == "batch"


def test_deepcopy_on_legacy_stream_is_fenced(fake, routed):
    torch = _torch()
    import fastcopy
    routed(0)
    x = _tensor_payload(torch)
    y = fastcopy.deepcopy(x)
    _same(torch, copy.deepcopy(x), y)
    assert _fastcopy_stats()["cuda_last_path"] == "batch-fenced"
    assert fake.count("cuMemcpyBatchAsync") == 1


def test_deepcopy_eager_mode_one_submission_per_copy(fake, routed):
    torch = _torch()
    import fastcopy
    routed(fake.stream(), defer=False)
    x = _tensor_payload(torch)
    y = fastcopy.deepcopy(x)
    _same(torch, copy.deepcopy(x), y)
    assert fake.count("cuMemcpyBatchAsync") == 25


def test_deepcopy_flushes_before_hooks(fake, routed):
    torch = _torch()
    import fastcopy
    routed(fake.stream())
    ts = [torch.randn(4) for _ in range(3)]

    class Peek:
        def __deepcopy__(self, memo):
            return [memo[id(t)].tolist() for t in ts[:2]]
    y = fastcopy.deepcopy([ts[0], ts[1], Peek(), ts[2]])
    assert y[2] == [ts[0].tolist(), ts[1].tolist()]
    assert fake.count("cuMemcpyBatchAsync") == 2


def test_deepcopy_driver_error_raises(fake, routed):
    torch = _torch()
    import fastcopy
    routed(fake.stream())
    fake.fail("cuMemcpyBatchAsync", 1, E_ILLEGAL_ADDRESS)
    x = {"a": torch.randn(3), "b": torch.randn(4)}
    memo = {}
    with pytest.raises(RuntimeError, match=r"CUDA copies failed: cuMemcpyBatchAsync "
                                           r"failed: CUDA_ERROR_ILLEGAL_ADDRESS"):
        fastcopy.deepcopy(x, memo)
    y = fastcopy.deepcopy(x)          # the next call is unaffected
    assert torch.equal(y["a"], x["a"])


def test_deepcopy_error_in_walk_still_flushes(fake, routed):
    torch = _torch()
    import fastcopy
    routed(fake.stream())

    class Boom:
        def __reduce_ex__(self, proto):
            raise KeyError("boom")
    t = torch.randn(6)
    memo = {}
    with pytest.raises(KeyError):
        fastcopy.deepcopy([t, Boom()], memo)
    assert torch.equal(memo[id(t)], t)
    assert fake.count("cuMemcpyBatchAsync") == 1


@pytest.mark.parametrize("defer", [True, False])
def test_random_graphs_through_the_fake_driver(fake, routed, defer):
    _torch()
    import fastcopy
    import test_torch_defer as T
    from test_torch import shape_of
    routed(fake.stream(), defer=defer)
    for seed in range(60):
        results = []
        for impl in (copy, fastcopy):
            x = T.random_graph(seed)
            T.LOG.clear()
            memo = {}
            try:
                y = impl.deepcopy(x, memo)
                res = (shape_of(y, x), T.holders_state(y, []), T.memo_sig(memo))
            except Exception as e:        # the same error, at the same point
                res = ("raised", type(e), str(e))
            results.append((res, list(T.LOG)))
        assert results[0] == results[1], "seed %d" % seed
    assert fake.count("cuMemcpyBatchAsync") > 0


def test_deepcopy_without_driver_raises_clearly(monkeypatch, routed):
    torch = _torch()
    import fastcopy
    _use(monkeypatch, "/nonexistent/libcuda.so.1")
    routed(0)
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        fastcopy.deepcopy([torch.randn(2)])


# --------------------------------------------------------------------------
# snapshot (CPU behaviour; torch CPU build)
# --------------------------------------------------------------------------

def _torch():
    return pytest.importorskip("torch")


def test_snapshot_without_torch_is_deepcopy():
    from fastcopy import _snapshot
    x = {"a": [1, 2], "b": ([3],)}
    x["self"] = x
    y = _snapshot.snapshot(x)
    assert y["self"] is y and y["a"] is not x["a"]


def test_snapshot_aliasing_and_types():
    torch = _torch()
    from fastcopy._snapshot import snapshot
    base = torch.arange(24.0)
    p = torch.nn.Parameter(torch.randn(3, 4))
    tied = p.detach().view(12)                     # a plain tensor view of a Parameter
    g = torch.zeros(2, requires_grad=True)
    g.grad = torch.ones(2)
    g.tag = ["meta"]
    x = {"base": base, "view": base[3:9], "t": base.view(4, 6).t(), "p": p,
         "tied": tied, "g": g, "again": base}
    y = snapshot(x)
    assert y["again"] is y["base"]
    assert y["base"].untyped_storage().data_ptr() != base.untyped_storage().data_ptr()
    for k in ("view", "t"):
        assert y[k].untyped_storage().data_ptr() == y["base"].untyped_storage().data_ptr()
        assert torch.equal(y[k], x[k])
        assert y[k].stride() == x[k].stride()
        assert y[k].storage_offset() == x[k].storage_offset()
    assert type(y["p"]) is torch.nn.Parameter and y["p"].requires_grad
    assert torch.equal(y["p"].data, p.data)
    # Unlike Parameter.__deepcopy__, storage is shared with the other view.
    assert y["tied"].untyped_storage().data_ptr() == y["p"].untyped_storage().data_ptr()
    assert y["g"].requires_grad and torch.equal(y["g"].grad, g.grad)
    assert y["g"].grad is not g.grad
    assert y["g"].tag == ["meta"] and y["g"].tag is not g.tag
    base[0] = 100.0
    assert y["base"][0].item() == 0.0              # independent of the source


def test_snapshot_module_matches_deepcopy():
    torch = _torch()
    import copy
    from fastcopy._snapshot import snapshot
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.ReLU())
    m[0].weight.grad = torch.ones(3, 4)
    ref = copy.deepcopy(m)
    y = snapshot(m)
    assert type(y) is type(ref)
    sd_y, sd_r = y.state_dict(), ref.state_dict()
    assert list(sd_y) == list(sd_r)
    for k in sd_r:
        assert torch.equal(sd_y[k], sd_r[k]) and sd_y[k].dtype == sd_r[k].dtype
    for py, pr in zip(y.parameters(), ref.parameters()):
        assert type(py) is type(pr) and py.requires_grad == pr.requires_grad
        assert (py.grad is None) == (pr.grad is None)   # Parameter: no grad, as deepcopy
    inp = torch.randn(5, 4)
    y.eval()
    ref.eval()
    assert torch.equal(y(inp), ref(inp))


def test_snapshot_non_leaf_raises_like_deepcopy():
    torch = _torch()
    from fastcopy._snapshot import snapshot
    a = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="graph leaves"):
        snapshot([a * 2])


def test_snapshot_special_tensors():
    torch = _torch()
    from fastcopy._snapshot import snapshot
    c = torch.tensor([1 + 2j, 3 - 1j]).conj()
    s = torch.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (3,))
    e = torch.empty(0)
    y = snapshot([c, s, e, e[:0]])
    assert torch.equal(y[0], c.resolve_conj()) and not y[0].is_conj()
    assert y[1].is_sparse and torch.equal(y[1].to_dense(), s.to_dense())
    assert y[2].shape == (0,) and y[3].shape == (0,)


def test_snapshot_rejects_pin_memory_for_non_cpu_target():
    _torch()
    from fastcopy._snapshot import snapshot
    with pytest.raises(ValueError, match="pin_memory"):
        snapshot([1], device="cuda", pin_memory=True)


def test_snapshot_leaves_copy_module_alone():
    torch = _torch()
    import copy
    from fastcopy._snapshot import snapshot
    snapshot([torch.ones(1)])
    assert torch.Tensor not in copy._deepcopy_dispatch


def test_gpucheck_cpu_dry_run():
    _torch()
    r = subprocess.run([sys.executable, "-m", "fastcopy.gpucheck", "--cpu-dry-run"],
                       capture_output=True, text=True, cwd=RUN_CWD, env=subprocess_env(),
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FAIL" not in r.stdout
