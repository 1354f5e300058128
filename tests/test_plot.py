"""Charts (``python -m fastcopy --plot``, :mod:`fastcopy._plot`): the SVG is parsed, never compared
as pixels.  Each bar is a ``<g id="bar:SERIES:ROW">`` (profiler: ``site:RANK:PART``), each
geometric-mean line a ``<g id="geomean:SERIES">``; text stays text (``svg.fonttype`` none), so
titles and annotations are read from ``<text>`` elements.

The drawing tests need matplotlib (CI installs it); the missing-matplotlib path runs always, in
a child process that hides the module.  Runnable under pytest and plain unittest.
"""
import io
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
import xml.etree.ElementTree as ET

from fastcopy import _plot
from fastcopy.__main__ import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SVG = "{http://www.w3.org/2000/svg}"
try:  # importable, not just present: matplotlib needs numpy
    import matplotlib  # noqa: F401
    HAVE_MPL = True
except ImportError:
    HAVE_MPL = False
try:
    import copium  # noqa: F401
    HAVE_COPIUM = True
except ImportError:
    HAVE_COPIUM = False
needs_mpl = unittest.skipUnless(HAVE_MPL, "needs matplotlib (pip install matplotlib)")
# two cheap deep-copy workloads and one shallow one
DEEP = ["pyperf_deepcopy_reduce", "pyperf_deepcopy_memo"]
SHALLOW = "copy_dict"


def run_main(*argv):
    out, err = io.StringIO(), io.StringIO()
    rc = main(list(argv), out=out, err=err)
    return rc, out.getvalue(), err.getvalue()


def parse(path):
    """(ids of every <g> that has one, all text of the chart)."""
    root = ET.parse(path).getroot()           # raises on invalid XML
    assert root.tag == SVG + "svg", root.tag
    ids = [g.get("id") for g in root.iter(SVG + "g") if g.get("id")]
    text = " ".join("".join(t.itertext()) for t in root.iter(SVG + "text"))
    return ids, text


def bars(ids, prefix="bar:"):
    """{series: [row, ...]} from bar ids, in drawing order."""
    out = {}
    for i in ids:
        if i.startswith(prefix):
            _, series, row = i.split(":", 2)
            out.setdefault(series, []).append(row)
    return out


class TestCli(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    @needs_mpl
    def test_svg_one_bar_per_workload_and_series(self):
        svg, js = self.path("speedups.svg"), self.path("run.json")
        argv = ["--quick", "--no-copium", "--json", js, "--plot", svg]
        for w in DEEP:
            argv += ["-w", w]
        rc, out, err = run_main(*argv)
        self.assertEqual(rc, 0, err)
        ids, text = parse(svg)
        self.assertEqual(bars(ids), {"fastcopy": DEEP, "pickle": DEEP})
        self.assertEqual(sorted(i for i in ids if i.startswith("geomean:")),
                         ["geomean:fastcopy", "geomean:pickle"])
        with open(js) as f:
            meta = json.load(f)["meta"]
        # the title names Python, the machine and the clock
        for word in (meta["implementation"], meta["python"], meta["machine"], "wall clock",
                     "%d CPUs" % meta["cpu_count"]):
            self.assertIn(word, text)
        self.assertIn("geometric mean", text)
        self.assertIn("log scale", text)

    @needs_mpl
    @unittest.skipUnless(HAVE_COPIUM, "needs copium")
    def test_copium_is_a_series_when_installed(self):
        svg = self.path("s.svg")
        rc, _, err = run_main("--quick", "-w", DEEP[0], "--no-pickle", "--plot", svg)
        self.assertEqual(rc, 0, err)
        self.assertEqual(bars(parse(svg)[0]), {"fastcopy": [DEEP[0]], "copium": [DEEP[0]]})

    @needs_mpl
    def test_copy_workloads_have_no_pickle_bar(self):
        svg = self.path("s.svg")
        rc, _, err = run_main("--quick", "--copy", "--no-copium", "-w", DEEP[0], "-w", SHALLOW,
                              "--plot", svg)
        self.assertEqual(rc, 0, err)
        ids, text = parse(svg)
        self.assertEqual(bars(ids), {"fastcopy": [DEEP[0], SHALLOW], "pickle": [DEEP[0]]})
        self.assertIn("copy.deepcopy / copy.copy", text)

    @needs_mpl
    def test_png_by_extension(self):
        png = self.path("speedups.PNG")
        rc, _, err = run_main("--quick", "-w", DEEP[0], "--no-copium", "--plot", png)
        self.assertEqual(rc, 0, err)
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_unknown_extension_refused_before_running(self):
        pdf = self.path("speedups.pdf")
        rc, out, err = run_main("--quick", "-w", DEEP[0], "--plot", pdf)
        self.assertEqual(rc, 2)
        self.assertEqual(out, "")
        self.assertIn(".svg or .png", err)
        self.assertFalse(os.path.exists(pdf))

    @needs_mpl
    def test_realistic_run(self):
        svg, js = self.path("realistic.svg"), self.path("realistic.json")
        rc, out, err = run_main("--realistic", "--quick", "--repeats", "1", "--no-copium",
                                "-w", "set_records", "--json", js, "--plot", svg)
        self.assertEqual(rc, 0, err + out)
        with open(js) as f:
            doc = json.load(f)
        ids, text = parse(svg)
        rows = ["set_records/%s" % m for m in doc["meta"]["modes"]]
        self.assertEqual(bars(ids), {"fastcopy": rows})
        self.assertIn("geomean:fastcopy", ids)
        self.assertIn("realistic suite", text)
        self.assertIn("CPU time", text)


def _result(name, ratios, kind="deepcopy"):
    labels = {"stdlib": "copy.deepcopy", "fastcopy": "fastcopy", "copium": "copium",
              "pickle": "pickle"}
    return {"workload": name, "kind": kind, "size": "small",
            "labels": {k: labels[k] for k in ["stdlib"] + list(ratios)}, "ratios": ratios}


META = {"implementation": "CPython", "python": "3.11.7", "machine": "x86_64",
        "platform": "Linux-6.1-x86_64-with-glibc2.36", "cpu_count": 2, "cpu": "Test CPU",
        "clock": "cpu", "repeats": 11, "date": "2026-12-01 12:00 UTC"}


@needs_mpl
class TestFromDocuments(unittest.TestCase):
    """The drawing functions on synthetic documents: nothing is timed."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.svg = os.path.join(self.tmp.name, "c.svg")

    def test_bench_missing_ratio_has_no_bar_and_geomean_is_the_tables(self):
        doc = {"meta": META, "results": [
            _result("a", {"fastcopy": 4.0, "copium": 2.0, "pickle": None}),
            _result("b", {"fastcopy": 9.0, "copium": 8.0, "pickle": 2.0})]}
        means = _plot.plot_bench(doc, self.svg)
        ids, text = parse(self.svg)
        self.assertEqual(bars(ids), {"fastcopy": ["a", "b"], "copium": ["a", "b"],
                                     "pickle": ["b"]})
        self.assertAlmostEqual(means["fastcopy"], 6.0)
        self.assertAlmostEqual(means["copium"], 4.0)
        self.assertAlmostEqual(means["pickle"], 2.0)
        for word in ("CPython 3.11.7", "Linux x86_64, 2 CPUs, Test CPU", "CPU time",
                     "2026-12-01", "6.00x", "11 repeats"):
            self.assertIn(word, text)

    def test_same_numbers_same_file(self):
        doc = {"meta": META, "results": [_result("a", {"fastcopy": 3.0})]}
        other = os.path.join(self.tmp.name, "d.svg")
        _plot.plot_bench(doc, self.svg)
        _plot.plot_bench(doc, other)
        with open(self.svg, "rb") as f, open(other, "rb") as g:
            self.assertEqual(f.read(), g.read())

    def test_realistic_rows_and_dict_memo_note(self):
        rows = [{"workload": "w1", "mode": "direct", "stdlib": 2.0, "fastcopy": 1.0,
                 "copium": 0.5, "fastcopy_vs_stdlib": 2.0, "copium_memo": "native"},
                {"workload": "w1", "mode": "patched", "stdlib": 2.0, "fastcopy": 1.0,
                 "copium": 1.0, "fastcopy_vs_stdlib": 2.0, "copium_memo": "dict"},
                {"workload": "w2", "mode": "patched", "stdlib": 2.0, "fastcopy": 0.5,
                 "copium": None, "fastcopy_vs_stdlib": 4.0, "copium_memo": None}]
        means = _plot.plot_realistic({"meta": META, "rows": rows}, self.svg)
        ids, text = parse(self.svg)
        self.assertEqual(bars(ids), {"fastcopy": ["w1/direct", "w1/patched", "w2/patched"],
                                     "copium": ["w1/direct", "w1/patched"]})
        self.assertAlmostEqual(means["copium"], 2.0 ** 1.5)
        self.assertIn("w1 (patched)", text)
        self.assertIn("dict memo", text)

    def test_bad_extension(self):
        with self.assertRaises(ValueError):
            _plot.plot_bench({"meta": META, "results": []}, self.svg[:-3] + "jpg")


def _site(i, total, buffer_s=0.0, buffer_bytes=0, **kw):
    site = {"file": "/src/app/train.py", "line": 10 + i, "function": "step%d" % i,
            "op": "deepcopy", "calls": 3 * i + 1, "total_s": total, "mean_s": total / 2,
            "max_s": total, "objects": 100 * i, "buffer_bytes": buffer_bytes, "hooks": 0,
            "memo_max": 4, "buffer_s": buffer_s, "hint": ""}
    site.update(kw)
    return site


@needs_mpl
class TestProfileChart(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.svg = os.path.join(self.tmp.name, "p.svg")

    def test_top_sites_stacked_where_both_apply(self):
        sites = [_site(1, 0.010),                                       # objects only
                 _site(2, 0.050, buffer_s=0.020, buffer_bytes=4 << 20),  # both measured
                 _site(3, 0.030, buffer_s=0.0, buffer_bytes=3_000_000),  # bytes, no time
                 _site(4, 0.001),
                 _site(5, 0.040, buffer_s=0.040, buffer_bytes=10, objects=0)]  # buffers only
        drawn = _plot.plot_profile(sites, self.svg, top=4, title="my profile")
        self.assertEqual([s["line"] for s in drawn], [12, 15, 13, 11])   # by total time
        ids, text = parse(self.svg)
        parts = [i for i in ids if i.startswith("site:")]
        self.assertEqual(parts, ["site:1:objects", "site:1:buffers", "site:2:buffers",
                                 "site:3:objects", "site:4:objects"])
        for label in ("/src/app/train.py:12 step2", "/src/app/train.py:11 step1"):
            self.assertIn(label, text)
        self.assertNotIn("train.py:14 step4", text)               # not in the top 4
        self.assertIn("7 deepcopy calls", text)                   # site 2's calls
        self.assertIn("4.19 MB of buffers", text)
        self.assertIn("3 MB of buffers (their time not measured)", text)
        self.assertIn("my profile", text)

    def test_to_json_document_and_empty(self):
        _plot.plot_profile({"version": 1, "sites": [_site(1, 0.5)]}, self.svg)
        ids, text = parse(self.svg)
        self.assertEqual([i for i in ids if i.startswith("site:")], ["site:1:objects"])
        self.assertIn("top 1 call sites", text)
        _plot.plot_profile([], self.svg)
        parse(self.svg)                                           # still a valid chart

    @needs_mpl
    def test_profile_subcommand_plot(self):
        script = os.path.join(self.tmp.name, "train.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent("""\
                import copy
                def step(state):
                    return copy.deepcopy(state)
                state = {"w": [float(i) for i in range(100)], "cfg": {"lr": 0.1}}
                for _ in range(5):
                    step(state)
                copy.copy(state)
                """))
        rc, out, err = run_main("profile", "--plot", self.svg, script)
        self.assertEqual(rc, 0, err)
        self.assertIn("train.py:3", out)                          # the report still prints
        ids, text = parse(self.svg)
        parts = [i for i in ids if i.startswith("site:")]
        self.assertEqual(parts, ["site:1:objects", "site:2:objects"])   # two call sites
        self.assertIn("train.py:3 step", text)
        self.assertIn("5 deepcopy calls", text)

    def test_profile_subcommand_bad_plot_path_runs_nothing(self):
        script = os.path.join(self.tmp.name, "boom.py")
        with open(script, "w") as f:
            f.write("raise SystemExit(7)\n")
        rc, out, err = run_main("profile", "--plot", os.path.join(self.tmp.name, "x.gif"), script)
        self.assertEqual(rc, 2)
        self.assertIn("--plot", err)


class TestWithoutMatplotlib(unittest.TestCase):
    """matplotlib hidden by a meta path finder in a child process: --plot refuses with the
    install hint and a non-zero status before timing anything; everything else still works."""

    CHILD = textwrap.dedent("""
        import io, json, sys
        class Hide:
            def find_spec(self, name, path=None, target=None):
                if name == "matplotlib" or name.startswith("matplotlib."):
                    raise ModuleNotFoundError("No module named %r (hidden)" % name, name=name)
        sys.meta_path.insert(0, Hide())
        for k in [k for k in sys.modules if k.split(".")[0] == "matplotlib"]:
            del sys.modules[k]
        import fastcopy, fastcopy._plot
        from fastcopy.__main__ import main
        report = {}
        out, err = io.StringIO(), io.StringIO()
        report["plot"] = [main(["--quick", "-w", "pyperf_deepcopy_reduce", "--plot", sys.argv[1]],
                               out=out, err=err), out.getvalue(), err.getvalue()]
        out, err = io.StringIO(), io.StringIO()
        report["plain"] = main(["--quick", "-w", "pyperf_deepcopy_reduce"], out=out, err=err)
        try:
            fastcopy._plot.plot_profile([], sys.argv[1])
        except ImportError as exc:
            report["raises"] = [type(exc).__name__, str(exc)]
        report["imported"] = "matplotlib" in sys.modules
        print(json.dumps(report))
    """)

    def test_refused_with_install_hint(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "speedups.svg")
            env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
            proc = subprocess.run([sys.executable, "-c", self.CHILD, path], cwd=ROOT, env=env,
                                  capture_output=True, text=True, timeout=120)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            report = json.loads(proc.stdout.splitlines()[-1])
            rc, out, err = report["plot"]
            self.assertNotEqual(rc, 0)
            self.assertEqual(out, "")                             # refused before timing
            self.assertIn("need matplotlib", err)
            self.assertIn('pip install "fastcopy-ml[plot]"', err)
            self.assertFalse(os.path.exists(path))
            self.assertEqual(report["plain"], 0)                  # nothing else breaks
            self.assertEqual(report["raises"][0], "MissingMatplotlib")
            self.assertIn("fastcopy-ml[plot]", report["raises"][1])
            self.assertFalse(report["imported"])

    def test_module_import_does_not_import_matplotlib(self):
        proc = subprocess.run([sys.executable, "-c",
                               "import sys, fastcopy._plot, fastcopy.__main__; "
                               "print('matplotlib' in sys.modules)"],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.stdout.strip(), "False", proc.stderr)


if __name__ == "__main__":
    unittest.main()
