"""The copy profiler: fastcopy.profile(), configure(warn_slow=), ``python -m fastcopy profile``
and ``pytest --fastcopy-profile`` (fastcopy/_profile.py, src/profile.c).

No timing is asserted: only what is counted and where it is attributed.  Runnable under plain
unittest.
"""
import copy
import gc
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import threading
import unittest
import warnings
from copy import deepcopy as early_deepcopy   # taken before any patch()

try:
    import fastcopy
except ImportError as exc:  # the C core not built for this interpreter
    raise unittest.SkipTest("fastcopy not importable: %s" % exc)

try:
    import numpy as np
except ImportError:
    np = None
try:
    import torch
except ImportError:
    torch = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THIS = sys._getframe().f_code.co_filename
REQUIRED_KEYS = {"file", "line", "function", "op", "calls", "total_s", "mean_s", "max_s",
                 "objects", "buffer_bytes", "hooks", "memo_max", "buffer_s", "hint"}


def here():
    """The caller's line: `ln = here(); copy_call()` names the line of copy_call()."""
    return sys._getframe(1).f_lineno


def site_at(prof, line, op=None, file=THIS):
    found = [s for s in prof.sites() if s.file == file and s.line == line
             and (op is None or s.op == op)]
    assert len(found) == 1, (line, op, prof.sites())
    return found[0]


def stdlib_objects(x):
    """What the stdlib's memo holds after deepcopy(x): entries, keep-alive list not counted."""
    memo = {}
    saved = fastcopy.is_patched()
    fastcopy.unpatch()
    try:
        copy.deepcopy(x, memo)
    finally:
        if saved:
            fastcopy.patch()
    return len(memo) - (1 if id(memo) in memo else 0)


class Hooked:
    """__deepcopy__ recursing with the memo (nested, same memo) and without (nested, fresh)."""

    def __init__(self):
        self.items = [[1], [2]]
        self.w = {"a": [3]}

    def __deepcopy__(self, memo):
        new = Hooked.__new__(Hooked)
        memo[id(self)] = new
        new.items = copy.deepcopy(self.items, memo)
        new.w = fastcopy.deepcopy(self.w)
        return new

    def __copy__(self):
        new = Hooked.__new__(Hooked)
        new.items = copy.copy(self.items)
        new.w = self.w
        return new


class Plain:
    def __init__(self, v):
        self.v = v


class WithHook:
    def __init__(self, v):
        self.v = v

    def __deepcopy__(self, memo):
        return WithHook(copy.deepcopy(self.v, memo))


class Boom(Exception):
    pass


class Raiser:
    def __deepcopy__(self, memo):
        raise Boom("no")


def _restore_patch(test, was):
    def fix():
        if fastcopy.is_patched() != was:
            (fastcopy.patch if was else fastcopy.unpatch)()
    test.addCleanup(fix)


class TestRecords(unittest.TestCase):
    def setUp(self):
        _restore_patch(self, fastcopy.is_patched())
        old = fastcopy.configure(warn_slow=None)
        self.addCleanup(lambda: fastcopy.configure(**old))

    def test_counts_of_one_site(self):
        shared = [1, 2]
        x = {"a": shared, "b": (shared, [3]), "c": Plain([4])}
        with fastcopy.profile() as prof:
            for _ in range(5):
                ln = here(); fastcopy.deepcopy(x)  # noqa: E702
        s = site_at(prof, ln)
        self.assertEqual((s.op, s.calls, s.function), ("deepcopy", 5, "TestRecords.test_counts_of_one_site"
                                                       if sys.version_info >= (3, 11)
                                                       else "test_counts_of_one_site"))
        self.assertEqual(s.objects, 5 * stdlib_objects(x))
        self.assertEqual(s.memo_max, stdlib_objects(x))
        self.assertEqual((s.hooks, s.buffer_bytes, s.buffer_s, s.threads), (0, 0, 0.0, 1))
        self.assertGreater(s.total_s, 0.0)
        self.assertGreaterEqual(s.max_s, s.mean_s)
        self.assertAlmostEqual(s.mean_s, s.total_s / 5)
        self.assertEqual(len(prof.sites()), 1)

    def test_four_entry_points_and_early_reference(self):
        x = [[1], {"k": [2]}]
        lines = {}
        with fastcopy.profile() as prof:
            lines["fd"] = here(); fastcopy.deepcopy(x)  # noqa: E702
            lines["fc"] = here(); fastcopy.copy(x)  # noqa: E702
            lines["cd"] = here(); copy.deepcopy(x)  # noqa: E702
            lines["cc"] = here(); copy.copy(x)  # noqa: E702
            lines["early"] = here(); early_deepcopy(x)  # noqa: E702
            lines["memo_kw"] = here(); copy.deepcopy(x, memo={})  # noqa: E702
            lines["memo_pos"] = here(); copy.deepcopy(x, {})  # noqa: E702
            lines["share"] = here(); fastcopy.deepcopy(x, share=int)  # noqa: E702
            lines["map"] = here(); list(map(copy.deepcopy, [x, x]))  # noqa: E702
        ops = {"fc": "copy", "cc": "copy"}
        for name, ln in lines.items():
            s = site_at(prof, ln)
            self.assertEqual(s.op, ops.get(name, "deepcopy"), name)
            self.assertEqual(s.calls, 2 if name == "map" else 1, name)
        n = stdlib_objects(x)
        self.assertEqual(site_at(prof, lines["cd"]).objects, n)
        self.assertEqual(site_at(prof, lines["memo_kw"]).objects, n)
        self.assertEqual(site_at(prof, lines["fc"]).objects, 1)
        self.assertEqual(len(prof.sites()), len(lines))

    def test_function_names(self):
        def inner_copier(v):
            return copy.deepcopy(v)
        with fastcopy.profile() as prof:
            inner_copier([1])
        (s,) = prof.sites()
        self.assertEqual(s.function.rsplit(".", 1)[-1], "inner_copier")
        self.assertEqual(s.line, inner_copier.__code__.co_firstlineno + 1)

    def test_nested_copies_are_part_of_the_outer_one(self):
        x = [Hooked()]
        with fastcopy.profile() as prof:
            ln = here(); copy.deepcopy(x)  # noqa: E702
            ln2 = here(); copy.copy(x[0])  # noqa: E702
        self.assertEqual(len(prof.sites()), 2, prof.sites())
        s = site_at(prof, ln)
        self.assertEqual(s.calls, 1)
        self.assertGreaterEqual(s.hooks, 1)
        # the shared memo's entries once, plus the fresh-memo copy of w ({"a": [3]}: 2)
        self.assertEqual(s.objects, stdlib_objects(x) + 2)
        c = site_at(prof, ln2)
        self.assertEqual((c.op, c.calls, c.objects, c.hooks), ("copy", 1, 2, 1))

    def test_selective_and_replicate_count_once(self):
        x = {"a": [1], "b": {"c": [2]}}
        with fastcopy.profile() as prof:
            ln = here(); fastcopy.copy(x, deep=["b"])  # noqa: E702
            ln2 = here(); fastcopy.replicate(x, 3)  # noqa: E702
        self.assertEqual(len(prof.sites()), 2, prof.sites())
        self.assertEqual(site_at(prof, ln).calls, 1)
        self.assertEqual(site_at(prof, ln).op, "copy")
        self.assertEqual(site_at(prof, ln2).calls, 1)
        self.assertEqual(site_at(prof, ln2).op, "deepcopy")

    def test_hooks_counted(self):
        x = [WithHook([i]) for i in range(10)] + [Plain(1)]
        with fastcopy.profile() as prof:
            fastcopy.deepcopy(x)
        (s,) = prof.sites()
        self.assertEqual(s.hooks, 10)
        self.assertEqual(s.objects, stdlib_objects(x))

    def test_failed_copies_not_recorded(self):
        with fastcopy.profile() as prof:
            with self.assertRaises(Boom):
                fastcopy.deepcopy([Raiser()])
            ln = here(); fastcopy.deepcopy([1])  # noqa: E702
        self.assertEqual([s.line for s in prof.sites()], [ln])

    def test_atomic_and_memo_hit(self):
        memo = {}
        y = fastcopy.deepcopy([1], memo)
        with fastcopy.profile() as prof:
            ln = here(); fastcopy.deepcopy(5)  # noqa: E702
            ln2 = here(); r = fastcopy.deepcopy(memo[id(memo)][0], memo)  # noqa: E702
        self.assertIs(r, y)
        self.assertEqual(site_at(prof, ln).objects, 0)
        self.assertEqual(site_at(prof, ln2).objects, 0)

    def test_caller_memo_counts_added_entries(self):
        memo = {}
        fastcopy.deepcopy([[1], [2]], memo)
        before = len(memo) - 1
        x = [[3]]
        with fastcopy.profile() as prof:
            fastcopy.deepcopy(x, memo)
        (s,) = prof.sites()
        self.assertEqual(s.objects, 2)
        self.assertEqual(s.memo_max, before + 2)

    @unittest.skipIf(np is None, "numpy not installed")
    def test_numpy_buffers(self):
        arrays = [np.zeros(1000), np.ones((10, 10), dtype=np.int32)]
        with fastcopy.profile() as prof:
            fastcopy.deepcopy(arrays)
        (s,) = prof.sites()
        if fastcopy.backends()["numpy"]["native"]:
            self.assertEqual(s.buffer_bytes, sum(a.nbytes for a in arrays))
            self.assertEqual(s.buffer_kinds, ("numpy",))
            self.assertGreaterEqual(s.buffer_s, 0.0)

    @unittest.skipIf(torch is None, "torch not installed")
    def test_torch_buffers(self):
        ts = [torch.zeros(1000), torch.ones(300, dtype=torch.float64), torch.zeros(5)]
        for defer in (True, False):
            old = fastcopy.configure(torch_defer=defer)
            try:
                with fastcopy.profile() as prof:
                    copy.deepcopy(ts)
            finally:
                fastcopy.configure(**old)
            (s,) = prof.sites()
            self.assertEqual(s.buffer_bytes, sum(t.numel() * t.element_size() for t in ts))
            self.assertEqual(s.buffer_kinds, ("torch",))

    def test_clear_and_elapsed(self):
        prof = fastcopy.profile()
        with prof:
            fastcopy.deepcopy([1])
        self.assertGreater(prof.elapsed_s, 0.0)
        self.assertFalse(prof.active)
        prof.clear()
        self.assertEqual(prof.sites(), [])
        self.assertEqual(prof.elapsed_s, 0.0)

    def test_records_add_up_over_activations(self):
        prof = fastcopy.profile()
        for _ in range(3):
            with prof:
                ln = here(); fastcopy.deepcopy([1])  # noqa: E702
        fastcopy.deepcopy([1])    # not recorded: stopped
        self.assertEqual(site_at(prof, ln).calls, 3)

    def test_nested_profilers_both_record(self):
        with fastcopy.profile() as outer:
            fastcopy.deepcopy([1])
            with fastcopy.profile() as inner:
                fastcopy.deepcopy([2])
        self.assertEqual(sum(s.calls for s in outer.sites()), 2)
        self.assertEqual(sum(s.calls for s in inner.sites()), 1)


class TestReport(unittest.TestCase):
    def setUp(self):
        _restore_patch(self, fastcopy.is_patched())

    def _three_sites(self):
        big = [[i] for i in range(12000)]
        small = [1]
        with fastcopy.profile() as prof:
            l_big = here(); fastcopy.deepcopy(big)  # noqa: E702
            for _ in range(30):
                l_small = here(); fastcopy.deepcopy(small)  # noqa: E702
            l_hooks = here(); fastcopy.deepcopy([WithHook(i) for i in range(150)])  # noqa: E702
        return prof, l_big, l_small, l_hooks

    def test_sorting(self):
        prof, l_big, l_small, l_hooks = self._three_sites()
        by_time = prof.sites()
        self.assertEqual([s.total_s for s in by_time],
                         sorted((s.total_s for s in by_time), reverse=True))
        by_calls = prof.sites(sort="calls")
        self.assertEqual(by_calls[0].line, l_small)
        self.assertEqual(prof.sites(sort="bytes")[0].buffer_bytes, 0)
        with self.assertRaises(ValueError):
            prof.sites(sort="nope")
        with self.assertRaises(ValueError):
            prof.report(sort="nope")

    def test_table(self):
        prof, l_big, l_small, l_hooks = self._three_sites()
        text = prof.report()
        rows = [ln for ln in text.splitlines() if "%s:" % os.path.basename(THIS) in ln]
        self.assertEqual(len(rows), 3, text)
        # costliest first, file:line on each row
        first = prof.sites()[0]
        self.assertIn(":%d " % first.line, rows[0])
        self.assertIn("fastcopy profile: 32 top-level copies at 3 sites", text)
        short = prof.report(top=1)
        self.assertEqual(len([ln for ln in short.splitlines() if os.path.basename(THIS) in ln]), 1)
        self.assertIn("(2 more sites", short)
        calls_first = prof.report(sort="calls")
        rows = [ln for ln in calls_first.splitlines() if os.path.basename(THIS) in ln]
        self.assertIn(":%d " % l_small, rows[0])

    def test_hints(self):
        prof, l_big, l_small, l_hooks = self._three_sites()
        self.assertIn("12,001 objects per call", site_at(prof, l_big).hint)
        self.assertIn("through Python hooks", site_at(prof, l_hooks).hint)
        self.assertIsNone(site_at(prof, l_small).hint)
        text = prof.report()
        self.assertIn("hint: copies 12,001 objects per call", text)
        with fastcopy.profile() as prof:
            for _ in range(10000):
                ln = here(); fastcopy.deepcopy([1])  # noqa: E702
        self.assertIn("called 10,000 times", site_at(prof, ln).hint)

    @unittest.skipIf(np is None, "numpy not installed")
    def test_numpy_hint(self):
        if not fastcopy.backends()["numpy"]["native"]:
            self.skipTest("numpy fast path not built")
        a = np.zeros(3_000_000)     # 24 MB
        with fastcopy.profile() as prof:
            fastcopy.deepcopy({"w": a})
        (s,) = prof.sites()
        self.assertIn("copies 24 MB of arrays per call: `share=np.ndarray`", s.hint)
        self.assertEqual(prof.sites(sort="bytes")[0].buffer_bytes, a.nbytes)

    @unittest.skipIf(torch is None, "torch not installed")
    def test_torch_hint(self):
        t = torch.zeros(5_000_000)    # 20 MB
        with fastcopy.profile() as prof:
            copy.deepcopy({"w": t})
        (s,) = prof.sites()
        self.assertIn("copies 20 MB of tensors per call: `share=torch.Tensor`, `snapshot()`", s.hint)

    def test_json(self):
        prof, l_big, l_small, l_hooks = self._three_sites()
        doc = json.loads(prof.to_json())
        self.assertEqual(doc["version"], 1)
        self.assertEqual(doc["calls"], 32)
        self.assertEqual(len(doc["sites"]), 3)
        for site, rec in zip(doc["sites"], prof.sites()):
            self.assertLessEqual(REQUIRED_KEYS, set(site))
            self.assertEqual(site, json.loads(json.dumps(rec.as_dict())))
            self.assertIn(site["op"], ("deepcopy", "copy"))
        self.assertEqual([s["line"] for s in json.loads(prof.to_json(sort="calls"))["sites"]][0],
                         l_small)
        self.assertEqual(json.loads(fastcopy.profile().to_json())["sites"], [])

    def test_empty_report(self):
        self.assertIn("no copies recorded", fastcopy.profile().report())


class TestDecoratorAndPatching(unittest.TestCase):
    def setUp(self):
        _restore_patch(self, fastcopy.is_patched())
        fastcopy.unpatch()

    def _stdlib_state(self):
        return (copy.deepcopy.__code__, copy.copy.__code__,
                "_fastcopy_deepcopy" in copy.__dict__, fastcopy.is_patched())

    def test_decorator(self):
        prof = fastcopy.profile()

        @prof
        def step(n):
            if n:
                step(n - 1)        # re-entering the active profiler is fine
            return copy.deepcopy([n])

        self.assertEqual(step(2), [2])
        step(0)
        self.assertFalse(prof.active)
        self.assertFalse(fastcopy.is_patched())
        (s,) = prof.sites()
        self.assertEqual(s.calls, 4)
        with self.assertRaisesRegex(TypeError, "parentheses"):
            fastcopy.profile(step)

    def test_unpatched_state_restored(self):
        before = self._stdlib_state()
        with fastcopy.profile():
            self.assertTrue(fastcopy.is_patched())
        self.assertEqual(self._stdlib_state(), before)
        with self.assertRaises(Boom):
            with fastcopy.profile():
                raise Boom()
        self.assertEqual(self._stdlib_state(), before)

    def test_patched_state_kept(self):
        fastcopy.patch()
        before = self._stdlib_state()
        with fastcopy.profile():
            pass
        self.assertEqual(self._stdlib_state(), before)
        self.assertTrue(fastcopy.is_patched())

    def test_overlapping_profilers(self):
        before = self._stdlib_state()
        a, b = fastcopy.profile(), fastcopy.profile()
        a.start()
        b.start()
        a.stop()                        # not LIFO: b still needs the patch
        self.assertTrue(fastcopy.is_patched())
        ln = here(); copy.deepcopy([1])  # noqa: E702
        b.stop()
        self.assertEqual(self._stdlib_state(), before)
        self.assertEqual(site_at(b, ln).calls, 1)
        self.assertEqual(a.sites(), [])
        b.stop()                        # idempotent

    def test_patch_false(self):
        with fastcopy.profile(patch=False) as prof:
            self.assertFalse(fastcopy.is_patched())
            copy.deepcopy([1])          # the stdlib's own: not seen
            ln = here(); fastcopy.deepcopy([1])  # noqa: E702
        self.assertEqual([s.line for s in prof.sites()], [ln])

    def test_stdlib_hook_calling_fastcopy_unpatched(self):
        # the stdlib's deepcopy (Python) runs the hook, whose fastcopy.deepcopy is top-level
        with fastcopy.profile(patch=False) as prof:
            copy.deepcopy([Hooked()])
        (s,) = prof.sites()
        self.assertEqual(s.function.rsplit(".", 1)[-1], "__deepcopy__")


class TestWarnSlow(unittest.TestCase):
    def setUp(self):
        _restore_patch(self, fastcopy.is_patched())
        self.old = fastcopy.configure()
        self.addCleanup(lambda: fastcopy.configure(**self.old))

    def test_settings(self):
        self.assertIsNone(self.old["warn_slow"])
        old = fastcopy.configure(warn_slow=0.25)
        self.assertIsNone(old["warn_slow"])
        self.assertEqual(fastcopy.configure()["warn_slow"], 0.25)
        fastcopy.configure(numpy_threads=1)     # others leave it alone
        self.assertEqual(fastcopy.configure()["warn_slow"], 0.25)
        fastcopy.configure(**old)
        self.assertIsNone(fastcopy.configure()["warn_slow"])
        fastcopy.configure(warn_slow=2)
        fastcopy.configure(warn_slow=False)
        self.assertIsNone(fastcopy.configure()["warn_slow"])
        for bad, exc in (("1", TypeError), (True, TypeError), (-1, ValueError),
                         (float("nan"), ValueError)):
            with self.assertRaises(exc):
                fastcopy.configure(warn_slow=bad)
        self.assertIsNone(fastcopy.configure()["warn_slow"])

    def test_category(self):
        self.assertTrue(issubclass(fastcopy.SlowCopyWarning, RuntimeWarning))

    def test_points_at_the_callers_line(self):
        x = [[1], {"a": (2, [3])}]
        fastcopy.configure(warn_slow=0)
        lines = {}
        with fastcopy.patched(), warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lines["fd"] = here(); fastcopy.deepcopy(x)  # noqa: E702
            lines["fc"] = here(); fastcopy.copy(x)  # noqa: E702
            lines["cd"] = here(); copy.deepcopy(x)  # noqa: E702
            lines["cc"] = here(); copy.copy(x)  # noqa: E702
            lines["early"] = here(); early_deepcopy(x)  # noqa: E702
            lines["kw"] = here(); copy.deepcopy(x, memo={})  # noqa: E702
        got = [(r.filename, r.lineno, r.category) for r in w]
        self.assertEqual(got, [(THIS, ln, fastcopy.SlowCopyWarning) for ln in lines.values()])
        msg = w[0].message
        self.assertEqual((msg.op, msg.objects, msg.hooks, msg.buffer_bytes),
                         ("deepcopy", stdlib_objects(x), 0, 0))
        self.assertGreater(msg.seconds, 0.0)
        self.assertRegex(str(msg), r"^fastcopy: deepcopy took .* \(warn_slow=0\.0\): %d objects, "
                                   r"0 B of array/tensor buffers" % stdlib_objects(x))
        self.assertEqual(w[1].message.op, "copy")

    def test_fast_copies_do_not_warn(self):
        fastcopy.configure(warn_slow=60)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            fastcopy.deepcopy([1, [2]])
        self.assertEqual(w, [])

    def test_as_error(self):
        fastcopy.configure(warn_slow=0)
        x = [[1]]
        with warnings.catch_warnings():
            warnings.simplefilter("error", fastcopy.SlowCopyWarning)
            with self.assertRaises(fastcopy.SlowCopyWarning):
                fastcopy.deepcopy(x)
            with self.assertRaises(fastcopy.SlowCopyWarning):
                fastcopy.copy(x)

    def test_filters_and_registry_are_the_callers(self):
        fastcopy.configure(warn_slow=0)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("ignore")
            warnings.filterwarnings("always", category=fastcopy.SlowCopyWarning,
                                    module=__name__)
            fastcopy.deepcopy([1])
        self.assertEqual(len(w), 1)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            warnings.filterwarnings("ignore", category=fastcopy.SlowCopyWarning,
                                    module=__name__)
            fastcopy.deepcopy([1])
        self.assertEqual(len(w), 0)
        globals().pop("__warningregistry__", None)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("default")
            fastcopy.deepcopy([1])
        self.assertIn("__warningregistry__", globals())

    def test_with_profiler(self):
        fastcopy.configure(warn_slow=0)
        with warnings.catch_warnings(record=True) as w, fastcopy.profile() as prof:
            warnings.simplefilter("always")
            ln = here(); fastcopy.deepcopy([1])  # noqa: E702
        self.assertEqual(site_at(prof, ln).calls, 1)
        self.assertEqual([r.lineno for r in w], [ln])

    def test_copies_made_by_a_warning_handler_are_not_reported(self):
        fastcopy.configure(warn_slow=0)
        seen = []

        def show(message, category, filename, lineno, file=None, line=None):
            seen.append(lineno)
            fastcopy.deepcopy([message.objects])     # would warn again, forever

        with warnings.catch_warnings(), fastcopy.profile() as prof:
            warnings.simplefilter("always")
            warnings.showwarning = show
            ln = here(); fastcopy.deepcopy([1])  # noqa: E702
        self.assertEqual(seen, [ln])
        self.assertEqual([(s.line, s.calls) for s in prof.sites()], [(ln, 1)])


class TestThreads(unittest.TestCase):
    def setUp(self):
        _restore_patch(self, fastcopy.is_patched())

    def test_exact_counts_across_threads(self):
        x = {"a": [1, 2], "b": (3, [4])}
        n, rounds = 4, 300
        barrier = threading.Barrier(n)
        box = {}

        def worker():
            barrier.wait()
            for _ in range(rounds):
                box["ln"] = here(); copy.deepcopy(x)  # noqa: E702

        old = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)     # switch threads as often as possible
        try:
            with fastcopy.profile() as prof:
                ts = [threading.Thread(target=worker) for _ in range(n)]
                for t in ts:
                    t.start()
                for t in ts:
                    t.join()
        finally:
            sys.setswitchinterval(old)
        s = site_at(prof, box["ln"])
        self.assertEqual((s.calls, s.threads), (n * rounds, n))
        self.assertEqual(s.objects, n * rounds * stdlib_objects(x))

    def test_top_level_is_per_thread(self):
        # thread A is inside a hook (GIL released) while the main thread copies: the main
        # thread's copy is a top-level copy of its own, not part of A's
        entered, release = threading.Event(), threading.Event()

        class Waiter:
            def __deepcopy__(self, memo):
                entered.set()
                release.wait(10)
                return Waiter()

        box = {}

        def a():
            box["a"] = here(); fastcopy.deepcopy([Waiter()])  # noqa: E702

        with fastcopy.profile() as prof:
            t = threading.Thread(target=a)
            t.start()
            self.assertTrue(entered.wait(10))
            ln = here(); fastcopy.deepcopy([[1]])  # noqa: E702
            release.set()
            t.join()
        sa, sm = site_at(prof, box["a"]), site_at(prof, ln)
        self.assertEqual((sa.calls, sa.hooks, sa.objects), (1, 1, 2))
        self.assertEqual((sm.calls, sm.hooks, sm.objects), (1, 0, 2))


class TestLeaks(unittest.TestCase):
    """Profiling on, the same sites over and over: no growth, no refcount drift."""

    def setUp(self):
        _restore_patch(self, fastcopy.is_patched())
        self.old = fastcopy.configure()
        self.addCleanup(lambda: fastcopy.configure(**self.old))

    def _round(self, x, prof):
        with prof:
            fastcopy.deepcopy(x)
            copy.deepcopy(x)
            fastcopy.copy(x)
            try:
                fastcopy.deepcopy([x, Raiser()])
            except Boom:
                pass
            fastcopy.copy(x, deep=[(0,)])
        with warnings.catch_warnings():
            warnings.simplefilter("error", fastcopy.SlowCopyWarning)
            fastcopy.configure(warn_slow=0)
            try:
                fastcopy.deepcopy(x)
            except fastcopy.SlowCopyWarning:
                pass
            fastcopy.configure(warn_slow=None)
        fastcopy.profile().start().stop()

    @unittest.skipIf(bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
                     "free-threaded builds free memory lazily (QSBR, mimalloc pages): the "
                     "block count grows for the stdlib's own copy too (test_leaks.py)")
    def test_no_growth(self):
        x = [[1, "a"], {"k": (2, [3])}, Plain([4]), WithHook([5])]
        prof = fastcopy.profile()
        for _ in range(100):        # warm the caches (selective copying's among them)
            self._round(x, prof)
        gc.collect()    # a SlowCopyWarning raised holds a cycle through its traceback
        counts = [sys.getrefcount(o) for o in (x, x[0], x[2], Plain)]
        best = None
        for _ in range(4):
            gc.collect()
            before = sys.getallocatedblocks()
            for _ in range(300):
                self._round(x, prof)
            gc.collect()
            delta = sys.getallocatedblocks() - before
            best = delta if best is None else min(best, delta)
        # a leak of one block per round (six copies) would show up as >= 300; in a full
        # suite run unrelated caches still settle by a few dozen blocks
        self.assertLess(best, 150, best)
        self.assertEqual([sys.getrefcount(o) for o in (x, x[0], x[2], Plain)], counts)
        self.assertEqual(sum(s.calls for s in prof.sites()), 1300 * 4)


class TestCommandLine(unittest.TestCase):
    SCRIPT = textwrap.dedent("""\
        import copy, sys
        state = {"w": [list(range(50)) for _ in range(20)], "step": 0}
        for i in range(40):
            snap = copy.deepcopy(state)
        cfg = copy.copy(state)
        print("args", sys.argv[1:], __name__)
        if "--fail" in sys.argv:
            sys.exit(3)
        """)

    def _run(self, *args, cwd=None):
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        return subprocess.run([sys.executable, "-m", "fastcopy", "profile"] + list(args),
                              capture_output=True, text=True, timeout=120, env=env,
                              cwd=cwd or ROOT)

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.script = os.path.join(self.dir, "train.py")
        with open(self.script, "w") as f:
            f.write(self.SCRIPT)
        self.addCleanup(lambda: [os.remove(os.path.join(self.dir, n))
                                 for n in os.listdir(self.dir)
                                 if os.path.isfile(os.path.join(self.dir, n))])

    def test_script(self):
        p = self._run("--top", "5", self.script, "a", "--b")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("args ['a', '--b'] __main__", p.stdout)
        self.assertIn("train.py:4 <module> (deepcopy)", p.stdout)
        self.assertIn("train.py:5 <module> (copy)", p.stdout)
        self.assertIn("fastcopy profile: 41 top-level copies at 2 sites", p.stdout)

    def test_sort_top_and_exit_code(self):
        p = self._run("--sort", "calls", "--top", "1", self.script, "--fail")
        self.assertEqual(p.returncode, 3, p.stderr)
        rows = [ln for ln in p.stdout.splitlines() if "train.py:" in ln]
        self.assertEqual(len(rows), 1, p.stdout)
        self.assertIn("train.py:4", rows[0])
        self.assertIn("(1 more sites", p.stdout)

    def test_json_file_and_stdout(self):
        out = os.path.join(self.dir, "prof.json")
        p = self._run("--json", out, self.script)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("train.py:4", p.stdout)          # the table too
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual(doc["version"], 1)
        self.assertEqual({s["line"]: s["calls"] for s in doc["sites"]}, {4: 40, 5: 1})
        p = self._run("--json", self.script)          # a .py is the script, not the FILE
        self.assertEqual(p.returncode, 0, p.stderr)
        body = p.stdout[p.stdout.index("{"):]
        self.assertEqual(json.loads(body)["calls"], 41)

    def test_module(self):
        p = self._run("-m", "train", "x", cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("args ['x'] __main__", p.stdout)
        self.assertIn("train.py:4 <module> (deepcopy)", p.stdout)

    def test_no_target(self):
        p = self._run()
        self.assertEqual(p.returncode, 2)
        self.assertIn("usage: python -m fastcopy profile", p.stderr)
        p = self._run(os.path.join(self.dir, "missing.py"))
        self.assertEqual(p.returncode, 2)

    def test_help(self):
        p = self._run("-h")
        self.assertEqual(p.returncode, 0)
        for opt in ("--top", "--json", "--sort", "-m"):
            self.assertIn(opt, p.stdout)

    def test_split(self):
        from fastcopy.__main__ import _profile_parser, _split_profile_argv
        parser = _profile_parser()
        cases = [
            (["a.py", "--top", "3"], ([], "script", "a.py", ["--top", "3"])),
            (["--top", "3", "a.py"], (["--top", "3"], "script", "a.py", [])),
            (["--top=3", "--json", "o.json", "a.py"], (["--top=3", "--json", "o.json"], "script",
                                                      "a.py", [])),
            (["--json", "a.py", "x"], (["--json"], "script", "a.py", ["x"])),
            (["--json", "-m", "pkg.mod", "-v"], (["--json"], "module", "pkg.mod", ["-v"])),
            (["-mpkg", "1"], ([], "module", "pkg", ["1"])),
        ]
        for argv, want in cases:
            self.assertEqual(_split_profile_argv(parser, argv), want, argv)


class TestPytestOption(unittest.TestCase):
    def test_report_at_the_end(self):
        d = tempfile.mkdtemp()
        test = os.path.join(d, "test_inner.py")
        with open(test, "w") as f:
            f.write(textwrap.dedent("""\
                import copy

                def test_copies():
                    for _ in range(7):
                        copy.deepcopy({"a": [1]})
                """))
        out = os.path.join(d, "p.json")
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
        p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "-p", "fastcopy.pytest_plugin", "--fastcopy-profile",
                            "--fastcopy-profile-top", "3", "--fastcopy-profile-json", out, test],
                           capture_output=True, text=True, timeout=120, env=env, cwd=d)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("fastcopy profile", p.stdout)
        self.assertIn("test_inner.py:5 test_copies (deepcopy)", p.stdout)
        with open(out) as f:
            self.assertEqual(json.load(f)["sites"][0]["calls"], 7)
        # without the option: no report
        p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "-p", "fastcopy.pytest_plugin", test],
                           capture_output=True, text=True, timeout=120, env=env, cwd=d)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertNotIn("fastcopy profile", p.stdout)



class TestImportedAtFirstUse(unittest.TestCase):
    """fastcopy does not import the profiler; warn_slow alone brings it in and warns."""

    def test_lazy_and_warn_slow_alone(self):
        code = textwrap.dedent("""\
            import sys, warnings, fastcopy
            assert "fastcopy._profile" not in sys.modules
            fastcopy.configure(warn_slow=0)
            assert "fastcopy._profile" in sys.modules
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                fastcopy.deepcopy([1, [2]])
            assert [x.category.__name__ for x in w] == ["SlowCopyWarning"], w
            assert w[0].lineno == 7, w[0].lineno
            assert fastcopy.SlowCopyWarning is w[0].category
            from fastcopy import *
            print("ok", profile.__name__)
            """)
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=ROOT + os.pathsep
                                    + os.environ.get("PYTHONPATH", "")), timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ok profile", r.stdout)

if __name__ == "__main__":
    unittest.main()
