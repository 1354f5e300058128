"""Regenerate the charts the README and the docs show: ``python benchmarks/make_charts.py``.

Runs, from the repository root, with the fastcopy this checkout imports (build it in place
first: ``python setup.py build_ext --inplace``):

* ``python -m fastcopy --clock cpu --plot docs/img/speedups.svg`` (the README table's run), and
* ``python -m fastcopy --realistic --quick --plot docs/img/realistic.svg`` (every workload of the
  realistic suite whose library is installed, 3 rounds), and
* ``python -m fastcopy profile --plot docs/img/profile.svg docs/examples/train_loop.py`` (the
  profiler's chart of docs/profiling.md's worked example; needs torch),

each also with ``--json`` into a temporary file, and then rewrites, in README.md and docs/*.md,
every block between ``<!-- chart NAME -->`` and ``<!-- /chart -->``: the image (its path
relative to the page) and a line under it with the command, the machine, the date and the
geometric means of that run.  ``--only NAME`` redoes one chart; ``--quick`` adds ``--quick`` to
the workload run too (a smoke test of this script, not numbers to publish).  Needs matplotlib
(``pip install -e ".[plot]"``); ``mkdocs build --strict`` then checks that every image exists.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMG = os.path.join("docs", "img")
CHARTS = {
    "speedups": (["--clock", "cpu"], "Bar chart: times faster than the stdlib, per workload, "
                                     "for fastcopy and the other copiers"),
    "realistic": (["--realistic", "--quick"], "Bar chart: times faster than copy.deepcopy, per "
                                              "realistic workload and mode, for fastcopy and "
                                              "copium"),
    "profile": (["profile"], "Bar chart: the training loop's copy call sites by total time, "
                             "split into object and buffer copying"),
}
PROFILED = os.path.join("docs", "examples", "train_loop.py")


def run_profile(name):
    """The profiler's chart of PROFILED; (command as shown, a document with "meta" and
    "sites")."""
    import datetime
    import platform
    from fastcopy import _bench
    svg = os.path.join(IMG, name + ".svg")
    shown = ["python", "-m", "fastcopy", "profile", "--plot", svg, PROFILED]
    with tempfile.TemporaryDirectory() as tmp:
        js = os.path.join(tmp, name + ".json")
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        proc = subprocess.run([sys.executable, "-m", "fastcopy", "profile", "--json", js,
                               "--plot", svg, PROFILED], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL)
        if proc.returncode != 0 or not os.path.exists(js):
            sys.exit("make_charts: %s failed (exit status %s)" % (" ".join(shown),
                                                                   proc.returncode))
        with open(js) as f:
            doc = json.load(f)
    doc["meta"] = {"implementation": platform.python_implementation(),
                   "python": platform.python_version(), "platform": platform.platform(),
                   "machine": platform.machine(), "cpu_count": os.cpu_count(),
                   "cpu": _bench.cpu_model(),
                   "date": datetime.datetime.now(datetime.timezone.utc).isoformat()}
    return " ".join(shown), doc
BLOCK = re.compile(r"(<!-- chart (\w+) -->\n)(.*?)(<!-- /chart -->)", re.S)


def pages():
    out = [os.path.join(ROOT, "README.md")]
    docs = os.path.join(ROOT, "docs")
    out += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    return out


def run(name, args, quick):
    """Run the benchmark for chart ``name``; return (command as shown, its JSON document)."""
    svg = os.path.join(IMG, name + ".svg")
    shown = ["python", "-m", "fastcopy"] + args + (["--quick"] if quick and "--quick" not in args
                                                   else []) + ["--plot", svg]
    with tempfile.TemporaryDirectory() as tmp:
        js = os.path.join(tmp, name + ".json")
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        proc = subprocess.run([sys.executable] + shown[1:] + ["--json", js], cwd=ROOT, env=env)
        if not os.path.exists(js) or not os.path.exists(os.path.join(ROOT, svg)):
            sys.exit("make_charts: %s failed (exit status %s)" % (" ".join(shown),
                                                                   proc.returncode))
        with open(js) as f:
            return " ".join(shown), json.load(f)


def means(name, doc):
    from fastcopy import _plot
    if name == "profile":
        sites = doc["sites"]
        return None if not sites else "%d call sites, %.2f s of copying in all" % (
            len(sites), sum(s["total_s"] for s in sites))
    if name == "realistic":
        rows = doc["rows"]
        vals = {"fastcopy": [r.get("fastcopy_vs_stdlib") for r in rows],
                "copium": [r["stdlib"] / r["copium"] for r in rows
                           if r.get("stdlib") and r.get("copium")]}
    else:
        vals = {k: [r["ratios"].get(k) for r in doc["results"]]
                for k in ("fastcopy", "copium", "pickle")}
    out = [(k, _plot._geomean(v)) for k, v in vals.items()]
    return ", ".join("%s %.2fx" % (k, g) for k, g in out if g)


def source():
    """"commit abc1234" (with "+ changes" when the tree differs from it), or "" outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no",
                                "--", "src", "fastcopy", "setup.py"], cwd=ROOT, text=True,
                               capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
    return "fastcopy at commit %s%s, " % (head, " + changes" if dirty else "")


def caption(command, doc, gm):
    from fastcopy import _plot
    m = doc["meta"]
    date = str(m.get("date", "?"))[:16] + " UTC" if m.get("date") else "?"
    summary = ("geometric means over the rows: %s" % gm) if "sites" not in doc else gm
    return ("Chart from `%s`, %s%s %s, %s, %s; %s. "
            "Regenerate with `python benchmarks/make_charts.py`."
            % (command, source(), m.get("implementation", "Python"), m.get("python", "?"),
               _plot._machine(m), date, summary))


def rewrite(charts):
    """Replace the blocks of the charts in ``charts`` ({name: (alt, caption)})."""
    changed = []
    for page in pages():
        with open(page, encoding="utf-8") as f:
            text = f.read()

        def block(m):
            name = m.group(2)
            if name not in charts:
                return m.group(0)
            alt, cap = charts[name]
            src = os.path.relpath(os.path.join(ROOT, IMG, name + ".svg"),
                                  os.path.dirname(page)).replace(os.sep, "/")
            return "%s![%s](%s)\n\n%s\n%s" % (m.group(1), alt, src, cap, m.group(4))
        new = BLOCK.sub(block, text)
        if new != text:
            with open(page, "w", encoding="utf-8") as f:
                f.write(new)
            changed.append(os.path.relpath(page, ROOT))
    return changed


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", choices=sorted(CHARTS), action="append")
    p.add_argument("--quick", action="store_true", help="smoke run of the workload table too")
    a = p.parse_args(argv)
    sys.path.insert(0, ROOT)
    os.makedirs(os.path.join(ROOT, IMG), exist_ok=True)
    done = {}
    for name in a.only or sorted(CHARTS):
        args, alt = CHARTS[name]
        command, doc = run_profile(name) if name == "profile" else run(name, args, a.quick)
        done[name] = (alt, caption(command, doc, means(name, doc)))
        print("make_charts: %s/%s.svg: %s" % (IMG, name, done[name][1]))
    for page in rewrite(done):
        print("make_charts: updated", page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
