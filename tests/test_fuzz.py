"""Differential fuzzing: fastcopy.deepcopy against copy.deepcopy on random object graphs.

Quick profile by default (a few hundred graphs). Long profile::

    FASTCOPY_FUZZ_N=100000 python -m pytest tests/test_fuzz.py
    FASTCOPY_FUZZ_SEED=12345 ...     # first seed (default 0)
    scripts/fuzz_long.sh             # random first seed, printed

Without the C extension the candidate is a fresh, separate import of the stdlib ``copy``
module, which keeps the harness itself under test.
"""
import copy
import os
import sys
import unittest

if os.path.dirname(os.path.abspath(__file__)) not in sys.path:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzzgraph  # noqa: E402

try:
    import fastcopy
    IMPL, IMPL_NAME = fastcopy, "fastcopy"
except ImportError:
    from test.support import import_helper
    IMPL, IMPL_NAME = import_helper.import_fresh_module("copy"), "copy"

N = int(os.environ.get("FASTCOPY_FUZZ_N", "400"))
SEED0 = int(os.environ.get("FASTCOPY_FUZZ_SEED", "0"))
MAX_REPORTED = 5


def _report(failures, total):
    lines = ["%d of %d random graphs diverged (impl=%s, python %s)"
             % (len(failures), total, IMPL_NAME, sys.version.split()[0])]
    for seed, problems in failures[:MAX_REPORTED]:
        lines.append("seed %d:" % seed)
        lines.extend("    " + p for p in problems[:6])
        lines.append("    reproduce: " + fuzzgraph.repro_command(seed, IMPL_NAME))
    return "\n".join(lines)


class DifferentialFuzz(unittest.TestCase):

    def test_random_graphs(self):
        failures = []
        for seed in range(SEED0, SEED0 + N):
            problems = fuzzgraph.run_case(seed, IMPL)
            if problems:
                failures.append((seed, problems))
                print("FUZZ FAILURE seed=%d: %s" % (seed, fuzzgraph.repro_command(seed, IMPL_NAME)),
                      file=sys.stderr)
                if len(failures) >= 50:
                    break
        if failures:
            self.fail(_report(failures, N))

    def test_shallow_copy_of_every_node(self):
        failures = []
        for seed in range(SEED0, SEED0 + max(20, N // 4)):
            problems = fuzzgraph.run_shallow_case(seed, IMPL)
            if problems:
                failures.append((seed, problems))
                if len(failures) >= 10:
                    break
        self.assertEqual(failures, [], "\n".join(
            "seed %d: %s\n    reproduce: %s" % (s, p[:4], fuzzgraph.repro_command(s, IMPL_NAME, True))
            for s, p in failures))

    def test_large_graphs(self):
        for seed in range(SEED0, SEED0 + max(3, N // 100)):
            problems = fuzzgraph.run_case(seed, IMPL, size=600)
            self.assertEqual(problems, [], "size=600 seed %d; reproduce with %s"
                             % (seed, fuzzgraph.repro_command(seed, IMPL_NAME)))


class ComparerSelfTest(unittest.TestCase):
    """The comparer must catch lost aliasing, extra copies and memo drift."""

    def _diverging(self, impl, n=150):
        return sum(1 for seed in range(n) if fuzzgraph.run_case(seed, impl))

    def test_detects_lost_sharing(self):
        class NoSharing:
            @staticmethod
            def deepcopy(x, memo=None):
                if isinstance(x, list):
                    return [copy.deepcopy(i) for i in x]
                return copy.deepcopy(x, memo)
        self.assertGreater(self._diverging(NoSharing), 30)

    def test_detects_tuple_copied_when_unchanged(self):
        class NewTuples:
            @staticmethod
            def deepcopy(x, memo=None):
                d = copy._deepcopy_dispatch
                old = d[tuple]
                d[tuple] = lambda t, memo, deepcopy=None: tuple(copy.deepcopy(i, memo) for i in t)
                try:
                    return copy.deepcopy(x, memo)
                finally:
                    d[tuple] = old
        self.assertGreater(self._diverging(NewTuples), 30)

    def test_detects_source_aliasing(self):
        class Shallow:
            @staticmethod
            def deepcopy(x, memo=None):
                return copy.copy(x)
        self.assertGreater(self._diverging(Shallow), 30)

    def test_identical_results_agree(self):
        # two identically built graphs, each copied once: hostile hooks in a graph may mutate
        # their own source, so copying one graph twice need not agree
        root_a, root_b = fuzzgraph.build(7, size=80), fuzzgraph.build(7, size=80)
        src_a, src_b = fuzzgraph.source_ids(root_a), fuzzgraph.source_ids(root_b)
        a, b = copy.deepcopy(root_a), copy.deepcopy(root_b)
        self.assertEqual(fuzzgraph.compare(a, b, src_a, src_b=src_b), [])
        self.assertNotEqual(fuzzgraph.compare(a, root_a, src_a), [])

    def test_build_is_deterministic(self):
        import pprint
        for seed in (1, 2, 3):
            r1, r2 = fuzzgraph.build(seed), fuzzgraph.build(seed)
            self.assertEqual(type(r1), type(r2))
            self.assertEqual(len(fuzzgraph.source_ids(r1)), len(fuzzgraph.source_ids(r2)))
            self.assertEqual(pprint.pformat(r1).count("\n"), pprint.pformat(r2).count("\n"))


if __name__ == "__main__":
    unittest.main()
