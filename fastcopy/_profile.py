"""The copy profiler: ``fastcopy.profile()`` and ``configure(warn_slow=)``'s warning.

The C core times every *top-level* copy while profiling is on (a copy nested in another one --
a ``__deepcopy__`` hook's own ``deepcopy()``, the stdlib's ``_reconstruct`` -- is part of the
outer one) and hands :func:`_on_copy` its time and counters (src/profile.c).  This module finds
the caller's line and adds the call to each running profiler; report time merges the records by
``file:line``.  See docs/profiling.md.
"""
import _thread
import contextlib
import copy
import os
import sys
import time

from . import _fastcopy  # type: ignore[attr-defined]  # a C extension: no stub of its own

__all__ = ["profile", "CopySite", "SlowCopyWarning"]

_OPS = ("deepcopy", "copy")
_SORTS = {"time": "total_s", "bytes": "buffer_bytes", "calls": "calls"}
_KINDS = ((1, "numpy"), (2, "torch"))


class SlowCopyWarning(RuntimeWarning):
    """A top-level copy took at least ``configure(warn_slow=seconds)``.

    Issued at the line that called ``copy.deepcopy`` / ``copy.copy`` / ``fastcopy.deepcopy`` /
    ``fastcopy.copy``.  Attributes: ``op``, ``seconds``, ``objects``, ``buffer_bytes``, ``hooks``.
    """

    op = "deepcopy"
    seconds = 0.0
    objects = 0
    buffer_bytes = 0
    hooks = 0


# -------------------------------------------------------------------------------------------
# Finding the caller
# -------------------------------------------------------------------------------------------

_get_ident = _thread.get_ident
_PKG = os.path.dirname(os.path.abspath(__file__)) + os.sep
# copy.py: patch()'s trampoline, the frame a patched copy.deepcopy keeps on 3.11, has the name
# the stdlib's own deepcopy code has (this module is imported before anything is patched)
_COPY_FILES = frozenset(
    f for f in (getattr(copy, "__file__", None), copy.deepcopy.__code__.co_filename,
                copy.copy.__code__.co_filename) if f)
# filename -> skip it?  copy.py, and fastcopy's own modules (copy(x, deep=...) runs in
# _select.py)
_skip: dict[str, bool] = {}


def _skip_file(filename):
    skip = filename in _COPY_FILES or os.path.abspath(filename).startswith(_PKG)
    _skip[filename] = skip
    return skip


# -------------------------------------------------------------------------------------------
# The recorder: called by the C core after each profiled top-level copy
# -------------------------------------------------------------------------------------------

_recorders = ()          # the running profilers (a tuple: replaced, never changed in place)
_lock = _thread.allocate_lock()
_patch_users = 0         # running profilers that asked for copy.deepcopy to be patched
_we_patched = False      # ...and the patch is theirs to undo


def _on_copy(f, op, ns, objects, nbytes, hooks, memo, buf_ns, kinds, slow):
    # The hot path: one call per top-level copy.  A record is a list
    # [code, calls, total_ns, max_ns, objects, buffer_bytes, hooks, memo_max, buffer_ns, kinds]
    # keyed by (thread id, id(code), f_lasti, op): it holds the code, so the id cannot be reused,
    # and only its own thread updates it, so no update is lost to a thread switch.
    # f: the frame that called the copy (None: C code with no Python frame, e.g. a thread
    # started by C)
    if f is not None:
        code = f.f_code
        skip = _skip.get(code.co_filename)
        while skip is not False:      # out of skipped files (3.11's trampoline is common)
            if skip is None:
                skip = _skip_file(code.co_filename)
                continue
            if f.f_back is None:
                break
            f = f.f_back
            code = f.f_code
            skip = _skip.get(code.co_filename)
        lasti = f.f_lasti
    else:
        code = None
        lasti = -1
    recorders = _recorders
    if recorders:
        key = (_get_ident(), id(code), lasti, op)
        for p in recorders:
            raw = p._raw
            r = raw.get(key)
            if r is None:
                raw[key] = [code, 1, ns, ns, objects, nbytes, hooks, memo, buf_ns, kinds]
                continue
            r[1] += 1
            r[2] += ns
            if ns > r[3]:
                r[3] = ns
            r[4] += objects
            if memo > r[7]:
                r[7] = memo
            if hooks:
                r[6] += hooks
            if nbytes:
                r[5] += nbytes
                r[8] += buf_ns
                r[9] |= kinds
    if slow:
        _warn_slow(f, op, ns, objects, nbytes, hooks)


def _warn_slow(f, op, ns, objects, nbytes, hooks):
    import warnings
    threshold = _fastcopy.configure().get("warn_slow")
    w = SlowCopyWarning(
        "fastcopy: %s took %s (warn_slow=%s): %s objects, %s of array/tensor buffers, "
        "%s through hooks" % (_OPS[op], _fmt_time(ns / 1e9), threshold, _fmt_int(objects),
                              _fmt_bytes(nbytes), _fmt_int(hooks)))
    w.op, w.seconds, w.objects, w.buffer_bytes, w.hooks = _OPS[op], ns / 1e9, objects, nbytes, hooks
    if f is None:
        warnings.warn(w, stacklevel=1)
        return
    # what warnings.warn(w, stacklevel=n) does, with n found by skipping fastcopy's frames
    g = f.f_globals
    registry = g.setdefault("__warningregistry__", {})
    # no module_globals, as warnings.warn itself passes none: with them the source line is
    # asked of the module's loader, which raises for code run by `python -c`
    warnings.warn_explicit(w, SlowCopyWarning, f.f_code.co_filename, f.f_lineno,
                           g.get("__name__", "<string>"), registry)


def _sync():
    _fastcopy._profiling(_on_copy, bool(_recorders))


def _patch_acquire():
    global _patch_users, _we_patched
    import fastcopy
    if _patch_users == 0 and not fastcopy.is_patched():
        fastcopy.patch()
        _we_patched = True
    _patch_users += 1


def _patch_release():
    global _patch_users, _we_patched
    import fastcopy
    _patch_users -= 1
    if _patch_users == 0 and _we_patched:
        _we_patched = False
        if fastcopy.is_patched():
            fastcopy.unpatch()


# configure(warn_slow=) works without a profiler running: the hook is always installed
_sync()


# -------------------------------------------------------------------------------------------
# Records
# -------------------------------------------------------------------------------------------

def _line_of(code, lasti):
    if code is None:
        return 0
    for start, end, line in code.co_lines():
        if start <= lasti < end:
            return line if line is not None else code.co_firstlineno
    return code.co_firstlineno


class CopySite:
    """One call site's copies: ``file:line`` in ``function``, of one ``op``.

    ``calls``, ``total_s``, ``mean_s``, ``max_s``; ``objects`` (objects copied: memo entries made,
    one per new shallow copy), ``buffer_bytes`` and ``buffer_s`` (bytes of numpy arrays / torch
    tensors copied natively, time in those byte copies), ``hooks`` (objects copied through a
    ``__deepcopy__``, ``__copy__``, reduce or ``copy._deepcopy_dispatch`` copier), ``memo_max``
    (the largest memo at the end of a call), ``buffer_kinds`` (``"numpy"``, ``"torch"``),
    ``threads`` (how many threads copied here) and ``hint`` (a suggestion, or None).  Totals are
    over all calls.
    """

    __slots__ = ("file", "line", "function", "op", "calls", "total_s", "max_s", "objects",
                 "buffer_bytes", "hooks", "memo_max", "buffer_s", "buffer_kinds", "threads",
                 "hint")

    def __init__(self, file, line, function, op):
        self.file, self.line, self.function, self.op = file, line, function, op
        self.calls = self.objects = self.buffer_bytes = self.hooks = self.memo_max = 0
        self.total_s = self.max_s = self.buffer_s = 0.0
        self.buffer_kinds = ()
        self.threads = 0
        self.hint = None

    @property
    def mean_s(self):
        """Seconds per call: ``total_s / calls`` (0.0 before any call)."""
        return self.total_s / self.calls if self.calls else 0.0

    def as_dict(self):
        """Every field and ``mean_s`` as a dict of JSON-ready values (what ``to_json`` writes)."""
        d = {name: getattr(self, name) for name in self.__slots__}
        d["mean_s"] = self.mean_s
        d["buffer_kinds"] = list(self.buffer_kinds)
        return d

    def __repr__(self):
        return "<CopySite %s:%d %s %s: %d calls, %s>" % (
            self.file, self.line, self.function, self.op, self.calls, _fmt_time(self.total_s))


def _hint(s):
    """A suggestion for one site, the most telling first; None if nothing stands out."""
    if not s.calls:
        return None
    per_bytes = s.buffer_bytes / s.calls
    per_obj = s.objects / s.calls
    per_hooks = s.hooks / s.calls
    if s.op == "deepcopy" and (per_bytes >= 16e6 or (per_bytes >= 1e6
                                                     and s.buffer_s >= 0.5 * s.total_s)):
        if "torch" in s.buffer_kinds:
            return ("copies %s of tensors per call: `share=torch.Tensor`, `snapshot()`, "
                    "or a cowdict?" % _fmt_bytes(per_bytes))
        return ("copies %s of arrays per call: `share=np.ndarray` (if nothing writes them), "
                "or a cowdict?" % _fmt_bytes(per_bytes))
    if per_hooks >= 100 and s.hooks >= 0.25 * s.objects:
        return ("%s objects per call go through Python hooks (__deepcopy__, __reduce_ex__, a "
                "copier): their code runs for each; `share=` what needs no copy?"
                % _fmt_int(round(per_hooks)))
    if s.op == "deepcopy" and per_obj >= 10000:
        return ("copies %s objects per call: `copy(x, deep=[...])` for only the fields that "
                "change, `share=` for read-only parts, or a cowdict?" % _fmt_int(round(per_obj)))
    if s.calls >= 10000 and s.mean_s < 20e-6:
        return ("called %s times: copy once outside the loop, or `replicate(x, n)` for n copies "
                "of one object?" % _fmt_int(s.calls))
    return None


# -------------------------------------------------------------------------------------------
# profile()
# -------------------------------------------------------------------------------------------

class profile(contextlib.ContextDecorator):
    """Record every top-level copy by call site while active.

    ``with fastcopy.profile() as prof: ...`` or ``@fastcopy.profile()`` (or ``prof.start()`` /
    ``prof.stop()``); records add up over every activation.  ``copy.deepcopy`` and ``copy.copy``
    are patched while a profiler runs unless ``patch=False``, and restored as they were found.
    Copies from every thread are recorded.  ``report()``, ``sites()``, ``to_json()`` read it.
    """

    def __init__(self, *args, patch=True):
        if args:
            raise TypeError("profile() takes no positional arguments: decorate with "
                            "@fastcopy.profile() (parentheses), or prof = fastcopy.profile() "
                            "and @prof to read prof.report() afterwards")
        self.patch = patch
        self._raw = {}           # (thread id, id(code), f_lasti, op) -> record (_on_copy)
        self._depth = 0
        self._started = None
        self._elapsed = 0.0

    # --- switching -------------------------------------------------------------------------
    def start(self):
        """Start recording (nested starts count: as many stops end it); returns the profiler."""
        global _recorders
        with _lock:
            self._depth += 1
            if self._depth == 1:
                if self.patch:
                    _patch_acquire()
                self._started = time.perf_counter()
                _recorders = _recorders + (self,)
                _sync()
        return self

    def stop(self):
        """End one start(): the last one stops recording and puts back what patching changed."""
        global _recorders
        with _lock:
            if self._depth == 0:
                return
            self._depth -= 1
            if self._depth == 0:
                _recorders = tuple(p for p in _recorders if p is not self)
                _sync()
                self._elapsed += time.perf_counter() - self._started
                self._started = None
                if self.patch:
                    _patch_release()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    @property
    def active(self):
        """Whether the profiler is recording now."""
        return self._depth > 0

    def clear(self):
        """Forget every record (the profiler keeps running if it is)."""
        self._raw = {}
        self._elapsed = 0.0
        if self._started is not None:
            self._started = time.perf_counter()

    @property
    def elapsed_s(self):
        """Seconds this profiler has been active."""
        now = self._elapsed
        if self._started is not None:
            now += time.perf_counter() - self._started
        return now

    # --- reading ---------------------------------------------------------------------------
    def sites(self, sort="time"):
        """The call sites as ``CopySite`` records, costliest first by ``sort``
        (``"time"``: total time, ``"bytes"``: buffer bytes, ``"calls"``)."""
        if sort not in _SORTS:
            raise ValueError("sort must be one of %s, not %r" % (", ".join(_SORTS), sort))
        merged, threads, lines = {}, {}, {}
        for key, r in list(self._raw.items()):
            tid, code, lasti, op = key[0], r[0], key[2], key[3]
            lk = (key[1], lasti)
            line = lines.get(lk)
            if line is None:
                line = lines[lk] = _line_of(code, lasti)
            if code is None:
                site_key = ("<unknown>", 0, "<unknown>", op)
            else:
                site_key = (code.co_filename, line,
                            getattr(code, "co_qualname", code.co_name), op)
            s = merged.get(site_key)
            if s is None:
                s = merged[site_key] = CopySite(*site_key[:3], _OPS[op])
                s.buffer_kinds = 0
                threads[site_key] = set()
            threads[site_key].add(tid)
            s.calls += r[1]
            s.total_s += r[2] / 1e9
            s.max_s = max(s.max_s, r[3] / 1e9)
            s.objects += r[4]
            s.buffer_bytes += r[5]
            s.hooks += r[6]
            s.memo_max = max(s.memo_max, r[7])
            s.buffer_s += r[8] / 1e9
            s.buffer_kinds |= r[9]
        out = list(merged.values())
        for k, s in merged.items():
            s.threads = len(threads[k])
            s.buffer_kinds = tuple(name for bit, name in _KINDS if s.buffer_kinds & bit)
            s.hint = _hint(s)
        attr = _SORTS[sort]
        out.sort(key=lambda s: (-getattr(s, attr), -s.total_s, s.file, s.line, s.op))
        return out

    def report(self, top=None, sort="time"):
        """A table of the call sites, costliest first (``sort``: ``"time"``, ``"bytes"`` or
        ``"calls"``), at most ``top`` rows, with a hint under a row where one applies."""
        sites = self.sites(sort)
        calls = sum(s.calls for s in sites)
        total = sum(s.total_s for s in sites)
        elapsed = self.elapsed_s
        lines = ["fastcopy profile: %s top-level copies at %d sites, %s copying in %s profiled"
                 % (_fmt_int(calls), len(sites), _fmt_time(total), _fmt_time(elapsed))
                 + (" (%.1f%%)" % (100.0 * total / elapsed) if elapsed > 0 else "")]
        if not sites:
            lines.append("(no copies recorded)")
            return "\n".join(lines) + "\n"
        shown = sites if top is None else sites[:max(0, int(top))]
        head = ("%9s %6s %8s %9s %9s %12s %12s %6s %10s  %s"
                % ("total", "share", "calls", "mean", "max", "objects/call", "buffers/call",
                   "in buf", "hooks/call", "site"))
        lines.append(head)
        lines.append("-" * len(head))
        cwd = os.getcwd() + os.sep
        for s in shown:
            f = s.file[len(cwd):] if s.file.startswith(cwd) else s.file
            lines.append("%9s %5.1f%% %8s %9s %9s %12s %12s %5.0f%% %10s  %s:%d %s (%s)" % (
                _fmt_time(s.total_s), 100.0 * s.total_s / total if total else 0.0,
                _fmt_int(s.calls), _fmt_time(s.mean_s), _fmt_time(s.max_s),
                _fmt_int(round(s.objects / s.calls)), _fmt_bytes(s.buffer_bytes / s.calls),
                100.0 * s.buffer_s / s.total_s if s.total_s else 0.0,
                _fmt_int(round(s.hooks / s.calls)), f, s.line, s.function, s.op))
            if s.hint:
                lines.append("%9s hint: %s" % ("", s.hint))
        if len(shown) < len(sites):
            rest = sites[len(shown):]
            lines.append("(%d more sites, %s)" % (len(rest), _fmt_time(sum(s.total_s for s in rest))))
        return "\n".join(lines) + "\n"

    def to_json(self, sort="time", indent=None):
        """The records for tools, as a JSON string: ``{"version": 1, "sites": [...], ...}``;
        each site is ``CopySite.as_dict()``."""
        import json
        import fastcopy
        sites = self.sites(sort)
        doc = {
            "version": 1,
            "fastcopy": fastcopy.__version__,
            "python": sys.version.split()[0],
            "elapsed_s": self.elapsed_s,
            "calls": sum(s.calls for s in sites),
            "total_s": sum(s.total_s for s in sites),
            "sort": sort,
            "sites": [s.as_dict() for s in sites],
        }
        return json.dumps(doc, indent=indent)

    def __repr__(self):
        return "<fastcopy.profile %s, %d sites>" % ("active" if self.active else "stopped",
                                                    len(self.sites()))


# -------------------------------------------------------------------------------------------
# Formatting
# -------------------------------------------------------------------------------------------

def _fmt_time(t):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if t >= scale:
            return "%.3g %s" % (t / scale, unit) if t / scale < 1000 else "%.0f %s" % (
                t / scale, unit)
    return "%.3g ns" % (t / 1e-9) if t > 0 else "0 s"


def _fmt_bytes(n):
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return "%.3g %s" % (n / scale, unit) if n / scale < 1000 else "%.0f %s" % (
                n / scale, unit)
    return "%d B" % n


def _fmt_int(n):
    return "{:,}".format(int(n))
