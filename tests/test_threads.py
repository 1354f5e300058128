"""Concurrency stress: 8 threads deep-copying shared structures at once (and writing to
``cowdict`` copies when the build has it). No crash, no corruption: every result must match,
by shape and aliasing, a stdlib copy made before the threads start.

A short switch interval makes the interpreter hand the GIL over often, including in the middle
of Python hooks (``__deepcopy__``, ``__reduce_ex__``, ``__setstate__``) that a copy calls; on a
free-threaded build the threads really run in parallel.
"""
import copy
import os
import sys
import threading
import unittest

if os.path.dirname(os.path.abspath(__file__)) not in sys.path:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzzgraph  # noqa: E402

try:
    import fastcopy
    IMPL = fastcopy
except ImportError:
    fastcopy = None
    IMPL = copy

THREADS = 8
ROUNDS = int(os.environ.get("FASTCOPY_THREAD_ROUNDS", "20"))


def _run_threads(target, n=THREADS):
    barrier = threading.Barrier(n)
    errors = []

    def runner(i):
        try:
            barrier.wait()
            target(i)
        except BaseException as e:  # noqa: BLE001 - reported to the main thread
            errors.append((i, e))

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=runner, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        alive = [t for t in threads if t.is_alive()]
    finally:
        sys.setswitchinterval(old)
    return errors, alive


class ConcurrentDeepcopy(unittest.TestCase):

    def _check_shared(self, roots):
        refs = [(root, fuzzgraph.source_ids(root), copy.deepcopy(root)) for root in roots]
        problems = []

        def work(i):
            for r in range(ROUNDS):
                root, src, ref = refs[(i + r) % len(refs)]
                memo = {} if r % 3 == 0 else None
                got = IMPL.deepcopy(root, memo) if memo is not None else IMPL.deepcopy(root)
                p = fuzzgraph.compare(ref, got, src)
                if p:
                    problems.append((i, r, p[:3]))
                    return

        errors, alive = _run_threads(work)
        self.assertEqual(alive, [], "threads hung")
        self.assertEqual(errors, [])
        self.assertEqual(problems, [])
        # the sources were only read: they still copy to the same shape
        for root, src, ref in refs:
            self.assertEqual(fuzzgraph.compare(ref, copy.deepcopy(root), src), [])

    def test_shared_builtin_structure(self):
        shared = [1, "s"]
        leaf = {"k": shared, "t": (shared, 2.5)}
        root = {"a": [leaf] * 50, "b": [{i: [i, leaf]} for i in range(200)], "c": leaf}
        root["self"] = root
        self._check_shared([root])

    def test_shared_random_graphs(self):
        # graphs without failing nodes, so every copy succeeds
        roots = []
        seed = 1000
        while len(roots) < 6:
            root = fuzzgraph.build(seed, size=120)
            seed += 1
            if not any(isinstance(x, (fuzzgraph.Raiser, fuzzgraph.Mutator))
                       or "lock" in type(x).__name__
                       for x in fuzzgraph.source_ids(root).values()):
                roots.append(root)
        self._check_shared(roots)

    def test_copy_while_hooks_switch_threads(self):
        # Hooks run Python code that yields the GIL mid-copy, while other threads copy the same
        # objects with their own memos.
        objs = [fuzzgraph.DeepHook(m) for m in (0, 1, 2)] + [fuzzgraph.GetSet(m) for m in range(3)]
        for o in objs:
            if isinstance(o, fuzzgraph.DeepHook):
                o.children = [objs, list(range(50)), {"o": objs}]
            else:
                o.v = [objs, (objs, 1)]
        self._check_shared([objs])


@unittest.skipIf(getattr(fastcopy, "cowdict", None) is None, "fastcopy.cowdict not built")
class ConcurrentCowdict(unittest.TestCase):

    def test_writers_on_copies(self):
        cowdict = fastcopy.cowdict
        base = cowdict({i: [i] for i in range(500)})
        expect = {k: list(v) for k, v in base.items()}
        results = {}

        def work(i):
            mine = []
            for r in range(ROUNDS):
                c = copy.copy(base) if r % 2 else IMPL.deepcopy(base)
                for k in range(0, 500, 7):
                    c[k] = (i, r, k)
                c["t%d" % i] = i
                del c[1]
                mine.append(c)
            results[i] = mine

        errors, alive = _run_threads(work)
        self.assertEqual(alive, [])
        self.assertEqual(errors, [])
        for i, copies in results.items():
            for r, c in enumerate(copies):
                self.assertEqual(c["t%d" % i], i)
                self.assertNotIn(1, c)
                self.assertEqual(c[7], (i, r, 7))
                self.assertEqual(c[8], [8])
        self.assertEqual({k: list(v) for k, v in base.items()}, expect)


if __name__ == "__main__":
    unittest.main()
