"""``python -m fastcopy --buffers`` (fastcopy/_buffers.py): the size sweep of numpy/torch copies.

Only the shape of the report is checked, on tiny sizes: a test never asserts a timing.  numpy is
needed (the tests skip without it); torch rows appear when torch is importable.  Runnable under
pytest and plain unittest.
"""
import io
import json
import os
import tempfile
import unittest
import xml.etree.ElementTree as ET

from fastcopy import _buffers, _plot
from fastcopy.__main__ import main

try:
    import numpy  # noqa: F401
    HAVE_NUMPY = True
except ImportError:
    HAVE_NUMPY = False
try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False
try:
    import matplotlib  # noqa: F401
    HAVE_MPL = True
except ImportError:
    HAVE_MPL = False

SVG = "{http://www.w3.org/2000/svg}"


def run_main(*argv):
    out, err = io.StringIO(), io.StringIO()
    rc = main(list(argv), out=out, err=err)
    return rc, out.getvalue(), err.getvalue()


class TestSizes(unittest.TestCase):
    def test_parse_size(self):
        self.assertEqual(_buffers.parse_size("64K"), 64 << 10)
        self.assertEqual(_buffers.parse_size("128M"), 128 << 20)
        self.assertEqual(_buffers.parse_size("1G"), 1 << 30)
        self.assertEqual(_buffers.parse_size("1GiB"), 1 << 30)
        self.assertEqual(_buffers.parse_size("4096"), 4096)

    def test_fmt_size(self):
        self.assertEqual(_buffers.fmt_size(1 << 10), "1 KiB")
        self.assertEqual(_buffers.fmt_size(256 << 20), "256 MiB")
        self.assertEqual(_buffers.fmt_size(1 << 30), "1 GiB")

    def test_sweep_spans_1k_to_1g(self):
        for sizes in (_buffers.SIZES, _buffers.QUICK_SIZES):
            self.assertEqual((sizes[0], sizes[-1]), (1 << 10, 1 << 30))
            self.assertEqual(sizes, sorted(sizes))

    def test_bad_max_size_is_an_error(self):
        rc, out, err = run_main("--buffers", "--max-size", "lots")
        self.assertEqual(rc, 2)
        self.assertIn("--max-size", err)

    def test_options_of_other_modes_are_refused(self):
        rc, out, err = run_main("--buffers", "--copy")
        self.assertEqual(rc, 2)
        self.assertIn("--copy", err)


@unittest.skipUnless(HAVE_NUMPY, "needs numpy")
class TestRun(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def test_quick_tiny_sweep_json(self):
        path = os.path.join(self.tmp.name, "b.json")
        rc, out, err = run_main("--buffers", "--quick", "--max-size", "64K", "--repeats", "2",
                                "--sample", "0.0005", "--no-rss", "--json", path)
        self.assertEqual(rc, 0, err)
        with open(path) as f:
            doc = json.load(f)
        libs = ["numpy"] + (["torch"] if HAVE_TORCH else [])
        want = [(lib, size, t) for lib in libs for size in (1 << 10, 64 << 10) for t in (1, 2)]
        self.assertEqual([(r["lib"], r["size"], r["threads"]) for r in doc["sweep"]], want)
        for r in doc["sweep"]:
            for impl in _buffers.IMPLS:
                self.assertGreater(r[impl]["time"], 0)
                self.assertGreaterEqual(r[impl]["faults"], 0)
                self.assertGreaterEqual(r[impl]["sys"], 0)
        snap = doc["snapshot"]
        self.assertEqual(snap["copies"], _buffers.SNAPSHOT_COPIES)
        self.assertEqual(set(snap) - {"size", "copies"}, set(_buffers.SNAPSHOT_IMPLS))
        self.assertNotIn("rss", doc)
        self.assertIn("own/fc", out)
        self.assertIn("snapshot loop", out)
        self.assertEqual(doc["meta"]["threads"], [1, 2])
        # the run leaves the settings as they were
        import fastcopy
        self.assertFalse(fastcopy.configure()["numpy_pool"])

    @unittest.skipUnless(HAVE_TORCH, "needs torch")
    def test_torch_alone(self):
        # numpy is still what the limit is measured with: a torch-only sweep runs
        path = os.path.join(self.tmp.name, "t.json")
        rc, out, err = run_main("--buffers", "--quick", "--buffer-lib", "torch", "--max-size", "1K",
                                "--repeats", "2", "--sample", "0.0005", "--no-rss", "--json", path)
        self.assertEqual(rc, 0, err)
        with open(path) as f:
            doc = json.load(f)
        self.assertEqual({r["lib"] for r in doc["sweep"]}, {"torch"})

    def test_peak_rss_rows(self):
        rows = _buffers.peak_rss(["numpy"], [1 << 20])
        self.assertEqual(len(rows), 1)
        self.assertEqual(set(rows[0]), {"lib", "size", "own", "fastcopy"})
        for impl in ("own", "fastcopy"):
            self.assertIsNotNone(rows[0][impl])
            self.assertGreaterEqual(rows[0][impl], 0)


def _doc():
    rows = []
    for lib in ("numpy", "torch"):
        for size in (1 << 10, 1 << 20):
            for t in (1, 2):
                rows.append({"lib": lib, "size": size, "threads": t,
                             **{impl: {"time": size / 1e9 * k, "faults": 0, "sys": 0,
                                       "user": 0}
                                for impl, k in (("own", 2.0), ("fastcopy", 1.2),
                                                ("limit", 1.0))}})
    return {"sweep": rows, "meta": {"python": "3.x", "thp": "madvise", "cpus": 2}}


@unittest.skipUnless(HAVE_MPL, "needs matplotlib")
class TestPlot(unittest.TestCase):
    def test_one_line_per_lib_impl_and_thread_count(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "b.svg")
            self.assertEqual(_plot.plot_buffers(_doc(), path), 12)
            root = ET.parse(path).getroot()
            ids = {g.get("id") for g in root.iter(SVG + "g") if g.get("id")}
        want = {"line:%s:%s:%d" % (lib, impl, t) for lib in ("numpy", "torch")
                for impl in _buffers.IMPLS for t in (1, 2)}
        self.assertEqual(want - ids, set())

    def test_unknown_extension_refused(self):
        with self.assertRaises(ValueError):
            _plot.plot_buffers(_doc(), "chart.gif")


if __name__ == "__main__":
    unittest.main()
