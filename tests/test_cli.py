"""Tests of ``python -m fastcopy`` and the shared workload module (no timings are asserted).

Runnable under pytest and plain unittest.  Each test runs one tiny workload at most.
"""
import copy
import importlib.util
import io
import json
import os
import pickle
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

from fastcopy import _bench, _realistic
from fastcopy.__main__ import main

from source_tree import RUN_CWD, subprocess_env

try:  # importable, not just present: matplotlib needs numpy
    import matplotlib  # noqa: F401
    HAVE_MPL = True
except ImportError:
    HAVE_MPL = False
# one cheap workload of each kind
DEEP = "pyperf_deepcopy_reduce"
SHALLOW = "copy_dict"


def run_main(*argv):
    out, err = io.StringIO(), io.StringIO()
    rc = main(list(argv), out=out, err=err)
    return rc, out.getvalue(), err.getvalue()


class TestList(unittest.TestCase):
    def test_list_names_every_workload(self):
        rc, out, _ = run_main("--list")
        self.assertEqual(rc, 0)
        for w in _bench.WORKLOADS:
            self.assertIn(w.name, out)

    def test_module_entry_point(self):
        proc = subprocess.run([sys.executable, "-m", "fastcopy", "--list"], cwd=RUN_CWD,
                              env=subprocess_env(), capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("pyperf_deepcopy_memo", proc.stdout)

    def test_help(self):
        proc = subprocess.run([sys.executable, "-m", "fastcopy", "--help"], cwd=RUN_CWD,
                              env=subprocess_env(), capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for opt in ("--workload", "--list", "--json", "--copy", "--size", "--quick", "--plot"):
            self.assertIn(opt, proc.stdout)


class TestSelect(unittest.TestCase):
    def test_glob(self):
        names = [w.name for w in _bench.select(["pyperf_*"])]
        self.assertEqual(names, ["pyperf_deepcopy", "pyperf_deepcopy_reduce",
                                 "pyperf_deepcopy_memo"])

    def test_default_excludes_copy_unless_asked(self):
        kinds = {w.kind for w in _bench.select()}
        self.assertEqual(kinds, {"deepcopy"})
        kinds = {w.kind for w in _bench.select(include_copy=True)}
        self.assertEqual(kinds, {"deepcopy", "copy"})

    def test_unknown_workload_is_an_error(self):
        rc, out, err = run_main("-w", "no_such_workload", "--quick")
        self.assertEqual(rc, 2)
        self.assertIn("no_such_workload", err)

    def test_every_workload_has_three_sizes(self):
        for w in _bench.WORKLOADS:
            self.assertEqual(set(w.sizes), set(_bench.SIZES), w.name)
            self.assertIn(w.reference, _bench.SIZES)


class TestRun(unittest.TestCase):
    def _run_json(self, *argv):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "out.json")
            rc, out, err = run_main("--quick", "--json", path, *argv)
            self.assertEqual(rc, 0, err)
            with open(path) as f:
                return json.load(f), out, err

    def test_quick_deepcopy_json(self):
        doc, out, err = self._run_json("-w", DEEP)
        self.assertIn(DEEP, out)
        self.assertIn("geometric mean", out)
        self.assertIn(DEEP, err)                      # the progress line
        self.assertEqual(set(doc), {"meta", "results"})
        for key in ("python", "platform", "fastcopy", "repeats", "size", "wall_s"):
            self.assertIn(key, doc["meta"])
        (res,) = doc["results"]
        for key in ("workload", "kind", "size", "times", "ratios", "samples", "loops",
                    "errors", "calls_per_op"):
            self.assertIn(key, res)
        self.assertEqual(res["workload"], DEEP)
        self.assertEqual(res["kind"], "deepcopy")
        self.assertEqual(res["size"], "small")
        for impl in ("stdlib", "fastcopy", "pickle"):
            self.assertGreater(res["times"][impl], 0)
        self.assertNotIn("stdlib", res["ratios"])
        self.assertGreater(res["ratios"]["fastcopy"], 0)
        self.assertEqual(res["errors"], {})

    def test_quick_shallow_json_has_no_pickle(self):
        doc, _, _ = self._run_json("-w", SHALLOW, "--no-copium", "--clock", "cpu")
        self.assertEqual(doc["meta"]["clock"], "cpu")
        (res,) = doc["results"]
        self.assertEqual(res["kind"], "copy")
        self.assertEqual(set(res["times"]), {"stdlib", "fastcopy"})

    def test_patched_stdlib_is_unpatched_for_the_run(self):
        import fastcopy
        with fastcopy.patched():
            doc, _, err = self._run_json("-w", DEEP, "--no-copium", "--no-pickle")
            self.assertTrue(fastcopy.is_patched())
        self.assertFalse(fastcopy.is_patched())
        self.assertIn("unpatched", err)
        self.assertEqual(set(doc["results"][0]["times"]), {"stdlib", "fastcopy"})

    @unittest.skipIf(HAVE_MPL, "matplotlib is installed")
    def test_plot_without_matplotlib_is_a_clear_error(self):
        self._assert_plot_refused()

    def test_plot_refused_when_matplotlib_import_fails(self):
        with mock.patch.dict(sys.modules, {"matplotlib": None, "matplotlib.pyplot": None}):
            self._assert_plot_refused()

    def _assert_plot_refused(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "speedups.png")
            rc, out, err = run_main("--quick", "-w", DEEP, "--plot", path)
            self.assertEqual(rc, 2)
            self.assertIn("matplotlib", err)
            self.assertEqual(out, "")                 # refused before benchmarking
            self.assertFalse(os.path.exists(path))

    @unittest.skipUnless(HAVE_MPL, "needs matplotlib")
    def test_plot_writes_png(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "speedups.png")
            rc, _, err = run_main("--quick", "-w", DEEP, "--plot", path)
            self.assertEqual(rc, 0, err)
            with open(path, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")


class TestRealistic(unittest.TestCase):
    """``--realistic``: one cheap stdlib-only workload end to end (a child process), the skip
    path, and the result checker on known-bad copies.  No timings are asserted."""
    CHEAP = "set_records"

    def test_quick_run_prints_the_table(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "real.json")
            rc, out, err = run_main("--realistic", "--quick", "-w", self.CHEAP, "--json", path)
            self.assertEqual(rc, 0, out + err)
            with open(path) as f:
                doc = json.load(f)
        for col in ("workload", "stdlib ms", "fastcopy ms", "copium ms", "fastcopy/stdlib",
                    "fastcopy/copium", "geometric mean"):
            self.assertIn(col, out)
        rows = [line.split() for line in out.splitlines() if line.startswith(self.CHEAP)]
        self.assertEqual([r[1] for r in rows], ["direct", "patched"])
        self.assertTrue(all(r[-1] == "ok" for r in rows), out)
        self.assertNotIn("FAILED", out + err)
        self.assertEqual(doc["meta"]["suite"], "realistic")
        self.assertEqual(doc["meta"]["clock"], "cpu")
        self.assertEqual([r["mode"] for r in doc["rows"]], ["direct", "patched"])
        (res,) = doc["results"]
        self.assertEqual(res["workload"], self.CHEAP)
        self.assertEqual(res["errors"], {})
        self.assertGreater(res["times"]["stdlib"], 0)
        self.assertGreater(res["times"]["fastcopy_patched"], 0)

    def test_module_entry_point(self):
        proc = subprocess.run([sys.executable, "-m", "fastcopy", "--realistic", "--quick",
                               "--mode", "direct", "--no-copium", "-w", "graph_adjacency"],
                              cwd=RUN_CWD, env=subprocess_env(), capture_output=True,
                              text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("graph_adjacency", proc.stdout)
        self.assertIn("geometric mean", proc.stdout)
        self.assertNotIn("patched", proc.stdout.split("\n", 1)[1])

    def test_list_and_errors(self):
        rc, out, _ = run_main("--realistic", "--list")
        self.assertEqual(rc, 0)
        for w in _realistic.WORKLOADS:
            self.assertIn(w.name, out)
        rc, _, err = run_main("--realistic", "-w", "no_such_workload")
        self.assertEqual(rc, 2)
        self.assertIn("no_such_workload", err)
        rc, _, err = run_main("--realistic", "--size", "small", "-w", self.CHEAP)
        self.assertEqual(rc, 2)
        self.assertIn("--size", err)

    def test_missing_library_is_a_skip_line(self):
        fake = _realistic.Workload("needs_nothing_real", "fake", ("no_such_module_fc15",),
                                   "a workload whose library is absent", list)
        with mock.patch.object(_realistic, "WORKLOADS", [fake]), \
                mock.patch.object(_realistic, "_BY_NAME", {fake.name: fake}):
            rc, out, err = run_main("--realistic", "--quick")
        self.assertEqual(rc, 0, err)
        self.assertIn("skipped: needs_nothing_real (needs no_such_module_fc15", out)

    def test_checker_flags_copies_unlike_the_stdlib(self):
        shared = [1, "x"]
        src = {"a": shared, "b": shared, "s": {"p", "q"}, "t": (shared,)}
        good = copy.deepcopy(src)
        _realistic.compare(good, copy.deepcopy(src), src)
        unshared = {"a": [1, "x"], "b": [1, "x"], "s": {"p", "q"}, "t": ([1, "x"],)}
        for bad, why in ((unshared, "aliasing"),
                         (dict(good, a=shared, b=shared, t=(shared,)), "source"),
                         (dict(good, s={"p"}), "set"),
                         (dict(good, t=[good["a"]]), "type")):
            with self.subTest(why=why), self.assertRaises(_realistic.Mismatch) as cm:
                _realistic.compare(good, bad, src)
            self.assertIn(why, str(cm.exception))

    def test_failed_check_is_reported_loudly(self):
        with mock.patch.object(_realistic, "compare",
                               side_effect=_realistic.Mismatch("<root>[3]: 1 != 2")):
            res = _realistic.run_child("graph_adjacency", repeats=1, target=0.001,
                                       with_copium=False)
        self.assertEqual(res["checks"]["fastcopy"], "FAILED: <root>[3]: 1 != 2")
        table = _realistic.format_table([res])
        self.assertIn("CHECK FAILED: graph_adjacency [direct]: fastcopy: FAILED: <root>[3]", table)
        rows = [line.split() for line in table.splitlines() if line.startswith("graph_")]
        self.assertEqual([r[-1] for r in rows], ["FAILED", "FAILED"])
        self.assertEqual(_realistic.failures([res]), 2)

    def test_stdlib_workloads_build(self):
        for w in _realistic.WORKLOADS:
            if w.group == "stdlib":
                with self.subTest(workload=w.name):
                    payload = w.build()
                    _realistic.compare(copy.deepcopy(payload), copy.deepcopy(payload), payload)


class TestPayloads(unittest.TestCase):
    """The timed payloads are copied to the same shape (values and aliasing) as the stdlib:
    pickle's memo encodes sharing, so equal dumps mean equal structure."""

    def test_small_payloads_match_stdlib(self):
        import fastcopy
        for w in _bench.WORKLOADS:
            payload, each = w.build("small")
            items = payload if each else [payload]
            fn = getattr(fastcopy, "deepcopy" if w.kind == "deepcopy" else "copy")
            ref = getattr(copy, "deepcopy" if w.kind == "deepcopy" else "copy")
            for x in items[:50]:
                with self.subTest(workload=w.name):
                    self.assertEqual(pickle.dumps(fn(x), 5), pickle.dumps(ref(x), 5))

    def test_pyperf_payloads_are_exact(self):
        payload, each = _bench.get("pyperf_deepcopy").build("small")
        self.assertTrue(each)
        self.assertEqual(len(payload), 60)
        self.assertTrue(all(x is payload[0] for x in payload[:30]))
        self.assertEqual(payload[0], {"list": [1, 2, 3, 43], "t": (1, 2, 3), "str": "hello",
                                      "subdict": {"a": True}})
        self.assertEqual([(d.string, d.lst, d.boolean) for d in payload[30:32]],
                         [("red", [0, 2, 3], True), ("red", [0, 2, 3], False)])
        data, _ = _bench.get("pyperf_deepcopy_memo").build("small")
        a = data["a"][0]
        self.assertEqual(a, [1] * 100)
        self.assertTrue(all(x is a for x in data["a"] + tuple(data["b"])))
        self.assertEqual(len(data["b"]), 100)
        c, _ = _bench.get("pyperf_deepcopy_reduce").build("small")
        self.assertEqual(vars(c), {"a": 1, "b": 2})


if __name__ == "__main__":
    unittest.main()


class RealisticChildEnvironment(unittest.TestCase):
    """The realistic suite's children run numpy's BLAS pools at the torch thread count, so that
    their spinning threads do not count in the CPU time; a caller's own setting wins."""

    def test_blas_pools_follow_the_torch_threads(self):
        from fastcopy import _realistic
        saved = {v: os.environ.pop(v, None) for v in _realistic._BLAS_THREADS}
        try:
            env = _realistic._child_env(1)
            self.assertEqual([env[v] for v in _realistic._BLAS_THREADS], ["1"] * 3)
            self.assertNotIn("FASTCOPY_AUTOPATCH", env)
            os.environ["OPENBLAS_NUM_THREADS"] = "7"
            env = _realistic._child_env(2)
            self.assertEqual(env["OPENBLAS_NUM_THREADS"], "7")
            self.assertEqual(env["MKL_NUM_THREADS"], "2")
            del os.environ["OPENBLAS_NUM_THREADS"]
            env = _realistic._child_env(0)         # the libraries' own defaults
            self.assertFalse(any(v in env for v in _realistic._BLAS_THREADS))
        finally:
            for v, val in saved.items():
                os.environ.pop(v, None)
                if val is not None:
                    os.environ[v] = val


class ScaleBenchmark(unittest.TestCase):
    """python -m fastcopy --scale: every shape's copies checked against the stdlib, a row per
    shape and N, JSON with the numbers (the floor included)."""

    def run_scale(self, *argv, child=False):
        """python -m fastcopy --scale *argv --json F, which must succeed: (F's document, its
        output).  child: in a fresh interpreter, as a user runs it, rather than in this process
        (where the tests' mocks reach it, but every round's full collections walk the whole
        test session's heap: 30 s for all shapes at 1k instead of 1)."""
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "scale.json")
            if child:
                proc = subprocess.run([sys.executable, "-m", "fastcopy", "--scale", *argv,
                                       "--json", path], cwd=RUN_CWD, env=subprocess_env(),
                                      capture_output=True, text=True, timeout=300)
                rc, out, err = proc.returncode, proc.stdout, proc.stderr
            else:
                rc, out, err = run_main("--scale", *argv, "--json", path)
            self.assertEqual(rc, 0, err)
            with open(path) as f:
                return json.load(f), out

    def test_small_run_json(self):
        doc, out = self.run_scale("--max-n", "1000", "--no-copium", child=True)
        self.assertEqual(doc["meta"]["suite"], "scale")
        from fastcopy import _scale
        self.assertEqual([r["shape"] for r in doc["rows"]], list(_scale.SHAPES))
        for row in doc["rows"]:
            self.assertEqual(row["n"], 1000)
            self.assertEqual(set(row["results"]), {"floor", "stdlib", "fastcopy"})
            for r in row["results"].values():
                self.assertGreater(r["ns"], 0)
                self.assertIsInstance(r["gc_ms"], float)   # a difference: may be < 0
            self.assertIn(row["shape"], out)

    def test_floors_build_what_the_stdlib_builds(self):
        import copy
        from fastcopy import _scale
        for shape, (build, floor, _) in _scale.SHAPES.items():
            data = build(300)
            self.assertTrue(_scale._shape_of(copy.deepcopy(data), floor(data)), shape)
            self.assertFalse(_scale._shape_of(data, [data]), shape)

    def test_split_cells_one_process_each(self):
        """Above SPLIT_N (10M items) each implementation runs in a process of its own, with the
        floor beside it; the same code path, tried on a small N here."""
        from fastcopy import _scale
        with mock.patch.object(_scale, "SPLIT_N", 500):
            doc, out = self.run_scale("--shape", "records", "--shape", "graph", "--no-copium",
                                      "--min-n", "1000", "--max-n", "1000")
        self.assertIn("each in a process of its own", out)
        for row in doc["rows"]:
            self.assertEqual(set(row["results"]), {"floor", "stdlib", "fastcopy"})
            self.assertEqual(set(row["split"]["floors"]), {"stdlib", "fastcopy"})
            self.assertEqual(row["split"]["failed"], {})
            # the floor reported is the one timed beside fastcopy
            self.assertEqual(row["results"]["floor"], row["split"]["floors"]["fastcopy"])

    def test_keep_arenas_for_the_run_only(self):
        """--keep-arenas MIB sets configure(keep_arenas=) for the run (split children too) and
        puts the previous value back; the JSON says what it was."""
        from fastcopy import _scale
        import fastcopy
        seen = []
        real = _scale._child

        def spy(template, **fields):
            seen.append(fields.get("keep_arenas"))
            return real(template, **fields)

        before = fastcopy.configure()["keep_arenas"]
        with mock.patch.object(_scale, "SPLIT_N", 500), mock.patch.object(_scale, "_child", spy):
            doc, out = self.run_scale("--shape", "records", "--no-copium", "--min-n", "1000",
                                      "--max-n", "1000", "--keep-arenas", "8")
        self.assertIn("keep_arenas=8 MiB", out)
        self.assertEqual(doc["meta"]["keep_arenas_mib"], 8)
        self.assertEqual(seen, [8 << 20, 8 << 20])
        self.assertEqual(fastcopy.configure()["keep_arenas"], before)

    def test_split_cell_survives_a_killed_child(self):
        """A child the kernel kills for memory (copium at 10M records on 24 GiB) leaves its
        column empty and the row goes on; fastcopy's own child failing, or any child crashing,
        is an error."""
        from fastcopy import _scale
        real_run = subprocess.run

        def run(cmd, **kw):
            if "'copium'" in cmd[-1]:
                return subprocess.CompletedProcess(cmd, -9, "", "")
            return real_run(cmd, **kw)

        names = ["stdlib", "fastcopy", "copium"]
        with mock.patch.object(_scale, "_impls",
                                        lambda ns: {n: None for n in names if n in ns}), \
                mock.patch.object(subprocess, "run", run):
            r = _scale.measure_split("records", 300, names, False)
        self.assertEqual(r["failed"], {"copium": "killed by signal 9"})
        self.assertNotIn("copium", r)
        self.assertEqual(set(r["floors"]), {"stdlib", "fastcopy"})

        def run_all_killed(cmd, **kw):
            return subprocess.CompletedProcess(cmd, -9, "", "")

        with mock.patch.object(subprocess, "run", run_all_killed):
            with self.assertRaisesRegex(RuntimeError, "fastcopy's cell"):
                _scale.measure_split("records", 300, ["stdlib", "fastcopy"], False)

        def run_crashed(cmd, **kw):                      # SIGSEGV: not a want of memory
            return subprocess.CompletedProcess(cmd, -11, "", "")

        with mock.patch.object(subprocess, "run", run_crashed):
            with self.assertRaisesRegex(RuntimeError, "failed in its process"):
                _scale.measure_split("records", 300, ["stdlib", "fastcopy"], False)

    def test_split_child_checks_the_copy(self):
        """measure_one compares the copy with the floor's: by value, by shape for the graph."""
        from fastcopy import _scale
        for shape, broken in (("records", lambda x: [dict(d, id=-1) for d in x]),
                              ("graph", lambda x: [dict(d) for d in x])):   # edges shared
            with mock.patch.object(_scale, "_impls",
                                            lambda names: {names[0]: broken}), \
                    mock.patch.object(_scale, "_rounds", lambda n: 1):
                with self.assertRaisesRegex(AssertionError, "differs from the floor's"):
                    _scale.measure_one(shape, 200, "fastcopy", False)
        r = _scale.measure_one("graph", 200, "fastcopy", False)
        self.assertEqual(set(r), {"fastcopy", "floor"})

    def test_peak_rss_child(self):
        if sys.platform == "win32":
            self.skipTest("the resource module is POSIX")
        from fastcopy import _scale
        self.assertGreater(_scale.peak_rss("records", 100_000, "fastcopy"), 0)
