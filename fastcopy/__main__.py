"""``python -m fastcopy``: time copy.deepcopy against fastcopy (and copium, pickle) in one process.

``python -m fastcopy profile script.py`` runs a script under the copy profiler instead
(:func:`_main_profile`; docs/profiling.md).

fastcopy itself is imported inside :func:`main`, after argument parsing, so ``--help`` and
``--list`` work on a checkout whose C core is not built yet.
"""
# Untyped on purpose (a command-line tool; its optional imports (matplotlib, copium) may be absent or
# have no stubs, and `python -m mypy.stubtest fastcopy` builds every submodule):
# mypy: ignore-errors
import argparse
import json
import os
import sys
import time

from . import _bench

_IMPL_ORDER = ("stdlib", "fastcopy", "copium", "pickle")


def _parser():
    p = argparse.ArgumentParser(
        prog="python -m fastcopy",
        description="Benchmark fastcopy against the stdlib copy module on built-in workloads. "
                    "Each workload is timed in this process, implementations interleaved, "
                    "medians reported; ratios are 'x faster than the stdlib' from the same run.")
    p.add_argument("-w", "--workload", action="append", metavar="NAME", default=None,
                   help="workload name or glob (repeatable); default: all deepcopy workloads")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.add_argument("--copy", action="store_true",
                   help="also run the copy.copy workloads (default: deepcopy only)")
    p.add_argument("--size", choices=_bench.SIZES, default=None,
                   help="payload size for every workload (default: each workload's reference "
                        "size: the exact pyperformance payloads, medium for the rest; "
                        "small with --quick)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 3 short repeats, small payloads unless --size is given")
    p.add_argument("--repeats", type=int, default=None, metavar="N",
                   help="samples per implementation (default 11, 3 with --quick)")
    p.add_argument("--sample", type=float, default=None, metavar="SECONDS",
                   help="time per sample (default 0.05, 0.002 with --quick; with --realistic "
                        "0.03, 0.005 with --quick): long enough that every sample spans whole cycles of "
                        "the collections the copies trigger -- at 0.01 s a 1 ms copy's median "
                        "moved by 40%% between runs with whether it caught a full collection")
    p.add_argument("--no-gc", action="store_true",
                   help="disable the cyclic GC while sampling, as timeit does (default: "
                        "enabled, as in pyperformance)")
    p.add_argument("--clock", choices=sorted(_bench.CLOCKS), default=None,
                   help="wall: time.perf_counter (default, as pyperf/timeit); cpu: "
                        "time.process_time, steadier on a busy shared machine (the default "
                        "with --realistic)")
    p.add_argument("--no-pickle", action="store_true",
                   help="leave out the pickle.loads(pickle.dumps(x, 5)) column")
    p.add_argument("--no-copium", action="store_true",
                   help="leave out copium even when it is importable")
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    r = p.add_argument_group(
        "realistic suite",
        "objects built from the libraries users copy (transformers, torch, sklearn, pandas, "
        "pydantic, omegaconf, numpy; missing ones are skipped), each workload in its own "
        "process, CPU time, direct and patched, every copy checked against the stdlib's; "
        "see docs/realistic.md")
    r.add_argument("--realistic", action="store_true",
                   help="run the realistic suite instead of the built-in workloads (-w, "
                        "--list, --quick, --repeats, --json, --no-gc, --no-copium apply)")
    r.add_argument("--mode", choices=("both", "direct", "patched"), default="both",
                   help="with --realistic: direct calls (fastcopy.deepcopy, copium.deepcopy), "
                        "patched copy.deepcopy (fastcopy.patch(), copium.patch.enable()), or "
                        "both (default)")
    r.add_argument("--torch-threads", type=int, default=1, metavar="N",
                   help="with --realistic: torch.set_num_threads(N) in the torch workloads, "
                        "and numpy's BLAS/OpenMP pools at N threads unless their variables "
                        "are set (default 1: idle pool threads spin, and CPU time counts the "
                        "spinning; 0: the libraries' own defaults)")
    b = p.add_argument_group(
        "buffer sweep",
        "numpy arrays and torch tensors from 1 KiB to 1 GiB at 1 and 2 threads: fastcopy, the "
        "library's own deepcopy and the copy-into-mapped-memory limit, with page faults and "
        "system time per copy; a snapshot loop with numpy_pool; peak RSS of one copy; see "
        "docs/buffers-sweep.md")
    b.add_argument("--buffers", action="store_true",
                   help="run the buffer sweep instead of the built-in workloads (--quick, "
                        "--repeats, --sample, --json, --plot apply)")
    b.add_argument("--buffer-lib", action="append", choices=("numpy", "torch"), default=None,
                   dest="buffer_libs", help="with --buffers: only this library (repeatable)")
    b.add_argument("--max-size", metavar="SIZE", default=None,
                   help="with --buffers: leave out sizes above SIZE (e.g. 256M)")
    b.add_argument("--no-rss", action="store_true",
                   help="with --buffers: skip the peak-RSS processes")
    p.add_argument("--plot", metavar="FILE",
                   help="also draw the speedups over the stdlib as a bar chart, SVG or PNG by "
                        "FILE's extension (with --realistic too); needs matplotlib: "
                        'pip install "fastcopy-ml[plot]"')
    p.add_argument("--scale", action="store_true",
                   help="the scale benchmark instead: cost per item of copies of 1,000 to "
                        "1,000,000 records, dict entries, tree and graph nodes, with the "
                        "memo-free floor (python -m fastcopy --scale -h; docs/scale.md)")
    p.epilog = ("python -m fastcopy profile [options] script.py [args]: run a script under the "
                "copy profiler instead (python -m fastcopy profile -h)")
    return p


def _fmt_ratio(r):
    return "-" if r is None else "%.2fx" % r


def _param(p):
    return "x".join(map(str, p)) if isinstance(p, tuple) else str(p)


def _list(out):
    width = max(len(w.name) for w in _bench.WORKLOADS)
    for w in _bench.WORKLOADS:
        sizes = " ".join("%s%s=%s" % ("*" if s == w.reference else "", s, _param(w.sizes[s]))
                         for s in _bench.SIZES)
        print("%-*s  %-8s  %s" % (width, w.name, w.kind, w.description), file=out)
        print("%-*s            sizes: %s" % (width, "", sizes), file=out)
    print("(* = reference size, used when --size is not given)", file=out)


class _Progress:
    """One status line on stderr: rewritten in place on a terminal, one line per step otherwise
    only at workload granularity, so logs stay short."""

    def __init__(self, stream, total):
        self.stream, self.total, self.index = stream, total, 0
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self.last_len = 0

    def start(self, name):
        self.index += 1
        if not self.tty:
            print("[%d/%d] %s" % (self.index, self.total, name), file=self.stream, flush=True)

    def __call__(self, msg):
        if self.tty:
            line = "[%d/%d] %s" % (self.index, self.total, msg)
            pad = max(0, self.last_len - len(line))
            self.stream.write("\r" + line + " " * pad)
            self.stream.flush()
            self.last_len = len(line)

    def done(self):
        if self.tty and self.last_len:
            self.stream.write("\r" + " " * self.last_len + "\r")
            self.stream.flush()


def _table(results, impls, out):
    headers = ["workload", "size"]
    for name in impls:
        headers.append(_bench.IMPL_LABELS["deepcopy"].get(name, name)
                       if name != "stdlib" else "stdlib")
    rows = []
    for res in results:
        row = [res.workload.name, res.size]
        for name in impls:
            if name in res.errors:
                row.append("error")
            elif name not in res.times:
                row.append("-")
            elif name == "stdlib":
                row.append(_bench.fmt_time(res.times[name]))
            else:
                row.append("%s %7s" % (_bench.fmt_time(res.times[name]), _fmt_ratio(res.ratio(name))))
        rows.append(row)
    gm = ["geometric mean", ""]
    for name in impls:
        g = _bench.geomean(r.ratio(name) for r in results) if name != "stdlib" else None
        gm.append("" if name == "stdlib" else _fmt_ratio(g))
    rows.append(gm)
    widths = [max(len(str(r[i])) for r in rows + [headers]) for i in range(len(headers))]
    line = "  ".join(h.ljust(widths[i]) if i < 2 else h.rjust(widths[i])
                     for i, h in enumerate(headers))
    print(line, file=out)
    print("-" * len(line), file=out)
    for k, r in enumerate(rows):
        if k == len(rows) - 1:
            print("-" * len(line), file=out)
        print("  ".join(str(c).ljust(widths[i]) if i < 2 else str(c).rjust(widths[i])
                        for i, c in enumerate(r)), file=out)
    errors = [(r.workload.name, n, e) for r in results for n, e in r.errors.items()]
    for wname, n, e in errors:
        print("error: %s on %s: %s" % (n, wname, e), file=out)


_version = _bench.library_version


def _plot_ready(path, err):
    """True when ``--plot path`` can be drawn (matplotlib importable, known extension); else
    say why on ``err``.  Checked before any benchmarking."""
    from . import _plot
    try:
        _plot.check_path(path)
        _plot.pyplot()
    except (ValueError, ImportError) as exc:
        print("python -m fastcopy: --plot: %s" % exc, file=err)
        return False
    return True


def _main_realistic(args, out, err):
    from . import _realistic
    if args.list:
        _realistic.list_workloads(out)
        return 0
    bad = [opt for opt, used in (("--size", args.size), ("--copy", args.copy)) if used]
    if bad:
        print("python -m fastcopy: %s do(es) not apply to --realistic" % ", ".join(bad), file=err)
        return 2
    if args.plot and not _plot_ready(args.plot, err):
        return 2
    impls = _import_impls(args, err, ("deepcopy", "patch"), say_no_copium=True)
    if impls is None:
        return 2
    return _realistic.main(args, out, err, *impls)


def _import_impls(args, err, needs, say_no_copium=False):
    """(fastcopy, copium or None), or None after saying why fastcopy is missing."""
    try:
        import fastcopy
        for name in needs:
            getattr(fastcopy, name)
    except (ImportError, AttributeError) as exc:
        print("python -m fastcopy: fastcopy is not importable (%s); build it with "
              "'python setup.py build_ext --inplace'" % exc, file=err)
        return None
    copium = None
    if not args.no_copium:
        try:
            import copium
        except ImportError:
            copium = None
            if say_no_copium:
                print("python -m fastcopy: copium is not installed; its columns stay empty",
                      file=err)
    return fastcopy, copium


# ---------------------------------------------------------------------------------------------
# python -m fastcopy profile [options] script.py [args...] | -m module [args...]
# ---------------------------------------------------------------------------------------------

def _profile_parser():
    p = argparse.ArgumentParser(
        prog="python -m fastcopy profile",
        usage="python -m fastcopy profile [options] (script.py | -m module) [args ...]",
        description="Run a script or module with fastcopy.profile() active (copy.deepcopy and "
                    "copy.copy patched) and print which call sites copy how much; see "
                    "docs/profiling.md.  Options come before the script or -m.")
    p.add_argument("--top", type=int, default=20, metavar="N",
                   help="rows of the table (default 20; 0: all)")
    p.add_argument("--sort", choices=("time", "bytes", "calls"), default="time",
                   help="order of the sites: total time (default), buffer bytes, calls")
    p.add_argument("--json", nargs="?", const="-", default=None, metavar="FILE",
                   help="also write the records as JSON to FILE; without FILE (or -) the JSON "
                        "goes to stdout instead of the table.  FILE is never a .py file: "
                        "`--json train.py` means JSON to stdout for train.py")
    p.add_argument("--plot", metavar="FILE", default=None,
                   help="also draw the top call sites by total time (object vs buffer time) "
                        "as a bar chart, SVG or PNG by FILE's extension; needs matplotlib: "
                        'pip install "fastcopy-ml[plot]"')
    p.add_argument("-m", dest="module", metavar="MODULE", default=None,
                   help="run a library module as a script, as python -m does")
    p.add_argument("script", nargs="?", help="the script to run (with its arguments)")
    return p


def _split_profile_argv(parser, argv):
    """(our options, target kind, target, its args): our options end where the script or -m
    starts, so the target's own options are never parsed as ours."""
    takes = {}
    for action in parser._actions:
        for opt in action.option_strings:
            takes[opt] = action.nargs
    i, ours = 0, []
    while i < len(argv):
        a = argv[i]
        if a == "-m":
            if i + 1 >= len(argv):
                return ours + [a], None, None, []
            return ours, "module", argv[i + 1], argv[i + 2:]
        if a.startswith("-m") and not a.startswith("--"):
            return ours, "module", a[2:], argv[i + 1:]
        if a == "--" and i + 1 < len(argv):
            return ours, "script", argv[i + 1], argv[i + 2:]
        if not a.startswith("-") or a == "-":
            return ours, "script", a, argv[i + 1:]
        name = a.split("=", 1)[0]
        nargs = takes.get(name, 0)
        ours.append(a)
        i += 1
        if "=" in a or nargs == 0:
            continue
        if nargs is None and i < len(argv):
            ours.append(argv[i])
            i += 1
        elif nargs == "?" and i + 1 < len(argv) and not argv[i].startswith("-") \
                and not argv[i].endswith(".py"):
            ours.append(argv[i])
            i += 1
    return ours, None, None, []


def _main_profile(argv, out, err):
    import runpy
    import traceback
    parser = _profile_parser()
    ours, kind, target, rest = _split_profile_argv(parser, argv)
    args = parser.parse_args(ours)
    if kind is None:
        parser.print_usage(err)
        print("python -m fastcopy profile: name a script or -m module to run", file=err)
        return 2
    try:
        import fastcopy
    except ImportError as exc:
        print("python -m fastcopy profile: %s" % exc, file=err)
        return 2
    if args.plot and not _plot_ready(args.plot, err):
        return 2
    old_argv, inserted = sys.argv[:], False
    rc = 0
    prof = fastcopy.profile()
    try:
        if kind == "script":
            if not os.path.exists(target):
                print("python -m fastcopy profile: can't open file %r" % target, file=err)
                return 2
            sys.argv = [target] + list(rest)
            # as `python script.py` does: the script's directory first on sys.path
            sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
            inserted = True
        else:
            sys.argv = [target] + list(rest)
        with prof:
            try:
                if kind == "script":
                    runpy.run_path(target, run_name="__main__")
                else:
                    runpy.run_module(target, run_name="__main__", alter_sys=True)
            except SystemExit as exc:
                code = exc.code
                rc = code if isinstance(code, int) else (0 if code is None else 1)
                if code is not None and not isinstance(code, int):
                    print(code, file=err)
            except KeyboardInterrupt:
                traceback.print_exc(file=err)
                rc = 130
            except BaseException:  # the report is still worth having
                traceback.print_exc(file=err)
                rc = 1
    finally:
        sys.argv = old_argv
        if inserted:
            sys.path.pop(0)
    text = prof.to_json(sort=args.sort, indent=1) if args.json else None
    if args.json and args.json != "-":
        with open(args.json, "w") as f:
            f.write(text + "\n")
    if args.json == "-":
        out.write(text + "\n")
    else:
        out.write(prof.report(top=args.top or None, sort=args.sort))
    if args.plot:
        from . import _plot
        _plot.plot_profile(json.loads(prof.to_json(sort="time")), args.plot,
                           top=args.top or 10)
        print("chart written to %s" % args.plot, file=err)
    out.flush()
    return rc


def _main_buffers(args, out, err):
    from . import _buffers
    bad = [opt for opt, used in (("--size", args.size), ("--copy", args.copy),
                                 ("-w", args.workload), ("--list", args.list),
                                 ("--realistic", args.realistic)) if used]
    if bad:
        print("python -m fastcopy: %s do(es) not apply to --buffers" % ", ".join(bad), file=err)
        return 2
    if args.plot and not _plot_ready(args.plot, err):
        return 2
    if args.max_size:
        try:
            _buffers.parse_size(args.max_size)
        except (ValueError, IndexError):
            print("python -m fastcopy: --max-size: not a size: %r" % args.max_size, file=err)
            return 2
    import fastcopy
    return _buffers.main(args, out, err, fastcopy)


def main(argv=None, out=None, err=None):
    out = out or sys.stdout
    err = err or sys.stderr
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "profile":
        return _main_profile(argv[1:], out, err)
    if "--scale" in argv:
        from . import _scale
        return _scale.main(argv, out, err)
    args = _parser().parse_args(argv)

    if args.realistic:
        return _main_realistic(args, out, err)
    if args.buffers:
        return _main_buffers(args, out, err)
    args.clock = args.clock or "wall"
    if args.list:
        _list(out)
        return 0

    try:
        workloads = _bench.select(args.workload, include_copy=args.copy)
    except KeyError as exc:
        print("python -m fastcopy: no workload matches %s (see --list)" % exc, file=err)
        return 2

    if args.plot and not _plot_ready(args.plot, err):
        return 2

    impls = _import_impls(args, err, ("deepcopy", "copy"))
    if impls is None:
        return 2
    fastcopy, copium = impls

    size = args.size or ("small" if args.quick else None)
    repeats = args.repeats or (3 if args.quick else 11)
    target = args.sample or (0.002 if args.quick else 0.05)

    # patch() retargets copy.deepcopy's own code object, so a patched stdlib baseline would
    # time fastcopy against itself: unpatch for the run, restore afterwards.
    was_patched = getattr(fastcopy, "is_patched", lambda: False)()
    if was_patched:
        fastcopy.unpatch()
        print("python -m fastcopy: copy module was patched; unpatched for this run", file=err)
    progress = _Progress(err, len(workloads))
    results = []
    t_start = time.perf_counter()
    try:
        for w in workloads:
            progress.start(w.name)
            impls = _bench.implementations(w.kind, fastcopy, copium,
                                           with_pickle=not args.no_pickle)
            results.append(_bench.run_workload(w, impls, size=size, repeats=repeats,
                                               target=target, collect=not args.no_gc,
                                               clock=args.clock,
                                               progress=progress))
    finally:
        progress.done()
        if was_patched:
            fastcopy.patch()
    wall = time.perf_counter() - t_start

    info = _bench.python_info()
    header = "fastcopy %s | %s %s | %s | %d repeats, median per op, %s clock, gc %s | %.1f s" % (
        getattr(fastcopy, "__version__", "?"), info["implementation"], info["python"],
        info["platform"], repeats, args.clock, "off" if args.no_gc else "on", wall)
    if copium is not None:
        header += " | copium %s" % _version(copium)
    print(header, file=out)
    impl_cols = [n for n in _IMPL_ORDER if any(n in r.times or n in r.errors for r in results)]
    _table(results, impl_cols, out)

    doc = {
        "meta": dict(info, fastcopy=getattr(fastcopy, "__version__", None),
                     fastcopy_file=getattr(fastcopy, "__file__", None),
                     copium=(_version(copium) if copium else None),
                     repeats=repeats, target_s=target, size=size, quick=args.quick,
                     gc=not args.no_gc, clock=args.clock,
                     wall_s=wall, cpu_count=os.cpu_count(), cpu=_bench.cpu_model(),
                     date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())),
        "results": [r.as_dict() for r in results],
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
    if args.plot:
        from . import _plot
        _plot.plot_bench(doc, args.plot)
        print("python -m fastcopy: chart written to %s" % args.plot, file=err)
    return 0


if __name__ == "__main__":
    sys.exit(main())
