"""Charts of benchmark and profiler results: ``python -m fastcopy --plot FILE.svg`` and the docs.

matplotlib is optional (``pip install "fastcopy-ml[plot]"``): it is imported only when a chart is
drawn, with the non-interactive Agg backend, so importing this module costs nothing and works
without it.  :func:`pyplot` raises :class:`MissingMatplotlib` (an ImportError whose message says
how to install it) when it is absent.

Every function takes plain data (the JSON documents ``python -m fastcopy --json`` writes, or the
profiler's site dicts), so a chart can be drawn again from a saved run.  The format follows the
file's extension (``.svg`` or ``.png``).  SVG output keeps its text as text and carries no date,
so a chart regenerated from the same numbers is the same file; each bar is a ``<g>`` whose id
names what it shows (``bar:SERIES:ROW``, ``site:RANK:PART``) and each geometric-mean line one
named ``geomean:SERIES``, so tests and readers can find them without comparing pixels.
"""
import math
import os

__all__ = ["MissingMatplotlib", "INSTALL_HINT", "FORMATS", "pyplot", "check_path",
           "plot_bench", "plot_realistic", "plot_profile", "plot_scale", "plot_buffers"]

INSTALL_HINT = 'pip install "fastcopy-ml[plot]" (or: pip install matplotlib)'
FORMATS = (".svg", ".png")

# fixed colours per series, so fastcopy looks the same in every chart
_COLORS = {"fastcopy": "#1f77b4", "copium": "#ff7f0e", "pickle": "#2ca02c",
           "stdlib": "#7f7f7f", "floor": "#000000"}
_OBJECTS_COLOR, _BUFFERS_COLOR = "#1f77b4", "#9467bd"


class MissingMatplotlib(ImportError):
    """matplotlib is not importable; the message says how to install it."""


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend, or :class:`MissingMatplotlib`."""
    try:
        # optional: mypy (stubtest) must build this module without matplotlib installed too
        import matplotlib  # type: ignore[import-not-found,unused-ignore]
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        raise MissingMatplotlib("charts need matplotlib, which is not importable (%s); "
                                "install it with: %s" % (exc, INSTALL_HINT)) from exc
    return plt


def check_path(path):
    """The output format ("svg" or "png") for ``path``, or ValueError."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise ValueError("chart file must end in %s, not %r" % (" or ".join(FORMATS), path))
    return ext[1:]


def _save(plt, fig, path):
    fmt = check_path(path)
    # text as <text>, no timestamp, stable ids: the same numbers give the same file
    style = {"svg.fonttype": "none", "svg.hashsalt": "fastcopy"}
    with plt.rc_context(style):
        fig.savefig(path, format=fmt, dpi=100,
                    metadata={"Date": None} if fmt == "svg" else None)
    plt.close(fig)


def _geomean(values):
    vals = [v for v in values if v]
    return math.exp(sum(map(math.log, vals)) / len(vals)) if vals else None


def _machine(meta):
    """"Linux x86_64, 2 CPUs, Intel Xeon ..." from a run's meta."""
    system = (meta.get("platform") or "").split("-")[0]
    out = " ".join(p for p in (system, meta.get("machine")) if p) or "unknown machine"
    if meta.get("cpu_count"):
        out += ", %d CPUs" % meta["cpu_count"]
    if meta.get("cpu"):
        out += ", %s" % meta["cpu"].replace("(R)", "").replace("(TM)", "")
    return out


def run_title(meta, what):
    """Chart title: what was run, then Python, machine, clock and date from the run's meta."""
    clock = {"cpu": "CPU time", "wall": "wall clock"}.get(meta.get("clock"), meta.get("clock"))
    parts = ["%s %s" % (meta.get("implementation", "Python"), meta.get("python", "?")),
             _machine(meta), clock or "clock ?"]
    if meta.get("date"):
        parts.append(str(meta["date"]))
    return what + "\n" + " | ".join(parts)


_TICKS = (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)


def _speedup_chart(plt, rows, series, path, title, xlabel, note=None):
    """Horizontal grouped bars on a log axis.  ``rows``: [(key, label)]; ``series``:
    [(name, label, {key: ratio or None}, {key: hatch})].  Returns the geometric means."""
    n, k = len(rows), max(1, len(series))
    fig_h = max(3.0, 0.13 * n * k + 0.12 * n + 2.2 + 0.2 * k)
    fig, ax = plt.subplots(figsize=(9.5, fig_h))
    bar_h = 0.8 / k
    means = {}
    lo, hi = 1.0, 1.0
    for j, (name, label, values, hatches) in enumerate(series):
        color = _COLORS.get(name)
        g = _geomean(values.get(key) for key, _ in rows)
        means[name] = g
        legend = "%s (dashed: geometric mean %.2fx)" % (label, g) if g else label
        first = True
        for i, (key, _) in enumerate(rows):
            v = values.get(key)
            if not v:
                continue
            lo, hi = min(lo, v), max(hi, v)
            y = i + (j - (k - 1) / 2) * bar_h
            bar = ax.barh([y], [v], left=0, height=bar_h * 0.92, color=color,
                          hatch=hatches.get(key), edgecolor="white" if not hatches.get(key)
                          else "black", linewidth=0.3, label=legend if first else None)[0]
            bar.set_gid("bar:%s:%s" % (name, key))
            first = False
            ax.text(v * 1.04, y, "%.2fx" % v, va="center", fontsize=6.5)
        if g:
            ax.axvline(g, color=color, linestyle="--", linewidth=1.2).set_gid("geomean:%s" % name)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    left, right = min(0.5, lo / 1.5), hi * 2.2
    ax.set_xlim(left, right)
    ax.set_xticks([t for t in _TICKS if left <= t <= right])
    ax.set_xticklabels(["%gx" % t for t in _TICKS if left <= t <= right])
    ax.minorticks_off()
    ax.set_yticks(range(n))
    ax.set_yticklabels([label for _, label in rows], fontsize=8)
    ax.set_ylim(max(n, 1) - 0.5, -0.5)
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", which="major", linewidth=0.3, alpha=0.6)
    ax.set_title(title, fontsize=9.5)
    # below the axis, outside the bars: one line per series
    foot = 0.2 * k + (0.2 if note else 0.0) + 0.1
    if ax.get_legend_handles_labels()[0]:
        fig.legend(loc="lower center", bbox_to_anchor=(0.5, (0.2 if note else 0.0) / fig_h),
                   ncol=1, fontsize=8, frameon=False)
    if note:
        fig.text(0.5, 0.05 / fig_h, note, fontsize=7, va="bottom", ha="center")
    fig.tight_layout(rect=(0, foot / fig_h, 1, 1))
    _save(plt, fig, path)
    return means


def plot_bench(doc, path, title=None):
    """Chart of a ``python -m fastcopy --json`` document: one row per workload, one bar per
    implementation (fastcopy, then copium and the pickle round trip where they ran), each its
    speed over the stdlib from the same run (stdlib time / its time), log scale; a dashed line
    per implementation at its geometric mean over the workloads (as in the text table).
    Returns {implementation: geometric mean}."""
    check_path(path)
    plt = pyplot()
    results = doc["results"]
    order = ("fastcopy", "copium", "pickle")
    present = [n for n in order if any(r.get("ratios", {}).get(n) for r in results)]
    kinds = {r.get("kind") for r in results}
    rows = [(r["workload"], "%s [%s]" % (r["workload"], r["size"])) for r in results]
    series = []
    for name in present:
        label = next((r["labels"][name] for r in results if name in r.get("labels", {})), name)
        if name == "pickle":
            label = "pickle round trip"
        series.append((name, label, {r["workload"]: r.get("ratios", {}).get(name)
                                     for r in results}, {}))
    base = " / ".join(b for k, b in (("deepcopy", "copy.deepcopy"), ("copy", "copy.copy"))
                      if k in kinds) or "the stdlib"
    meta = doc.get("meta", {})
    if title is None:
        title = run_title(meta, "fastcopy vs %s, %s" % (base, _run_kind(meta)))
    return _speedup_chart(plt, rows, series, path, title,
                          "times faster than %s (log scale; 1 = the stdlib)" % base)


def _run_kind(meta):
    if meta.get("quick"):
        return "quick run"
    return "%s repeats" % meta["repeats"] if meta.get("repeats") else "one run"


def plot_realistic(doc, path, title=None):
    """Chart of a ``python -m fastcopy --realistic --json`` document: one row per workload and
    mode (direct calls, or ``copy.deepcopy`` patched), bars for fastcopy and copium over the
    stdlib, log scale, geometric means over all rows marked; copium bars timed with its dict
    memo (its native one raised there) are hatched.  Skipped and crashed workloads have no row.
    Returns {implementation: geometric mean}."""
    check_path(path)
    plt = pyplot()
    rows_in = doc["rows"]
    rows = [("%s/%s" % (r["workload"], r["mode"]), "%s (%s)" % (r["workload"], r["mode"]))
            for r in rows_in]
    fc = {"%s/%s" % (r["workload"], r["mode"]): r.get("fastcopy_vs_stdlib") for r in rows_in}
    cp = {"%s/%s" % (r["workload"], r["mode"]): (r["stdlib"] / r["copium"]
                                                 if r.get("stdlib") and r.get("copium") else None)
          for r in rows_in}
    dict_memo = {"%s/%s" % (r["workload"], r["mode"]): "////" for r in rows_in
                 if r.get("copium_memo") == "dict" and r.get("copium")}
    series = [("fastcopy", "fastcopy", fc, {})]
    if any(cp.values()):
        series.append(("copium", "copium", cp, dict_memo))
    meta = doc.get("meta", {})
    if title is None:
        title = run_title(meta, "realistic suite, fastcopy vs copy.deepcopy, %s"
                          % _run_kind(meta))
    note = ("hatched: copium with its dict memo (its native memo raised on that workload)"
            if dict_memo and len(series) > 1 else None)
    return _speedup_chart(plt, rows, series, path, title,
                          "times faster than copy.deepcopy (log scale; 1 = the stdlib)",
                          note=note)


def plot_scale(doc, path, title=None):
    """Chart of a ``python -m fastcopy --scale --json`` document: one panel per shape, CPU
    nanoseconds per item against N (both log scales), a line per implementation and the
    memo-free floor (dashed); each line a ``<g>`` with id ``line:SHAPE:IMPL``."""
    check_path(path)
    plt = pyplot()
    shapes = []
    for r in doc["rows"]:
        if r["shape"] not in shapes:
            shapes.append(r["shape"])
    cols = min(2, len(shapes))
    nrows = (len(shapes) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4.6 * cols, 3.3 * nrows + 0.6),
                             squeeze=False)
    for i, shape in enumerate(shapes):
        ax = axes[i // cols][i % cols]
        rows = [r for r in doc["rows"] if r["shape"] == shape]
        impls = [k for k in ("floor", "stdlib", "copium", "fastcopy") if k in rows[0]["results"]]
        for name in impls:
            # a cell whose process was killed for memory (10M, copium) has no point
            xs = [r["n"] for r in rows if name in r["results"]]
            ys = [r["results"][name]["ns"] for r in rows if name in r["results"]]
            line, = ax.plot(xs, ys, marker="o", markersize=3, label=name,
                            color=_COLORS.get(name), linestyle="--" if name == "floor" else "-")
            line.set_gid("line:%s:%s" % (shape, name))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(shape, fontsize=9)
        ax.set_xlabel("N (items)", fontsize=8)
        ax.set_ylabel("ns per item (CPU)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(which="major", linewidth=0.3, alpha=0.6)
        if i == 0:
            ax.legend(fontsize=7, frameon=False)
    for j in range(len(shapes), nrows * cols):
        axes[j // cols][j % cols].axis("off")
    meta = doc.get("meta", {})
    if title is None:
        title = run_title(meta, "deep copies as they grow: CPU ns per item, collector %s"
                          % meta.get("gc", "off"))
    fig.suptitle(title, fontsize=9.5)
    fig.tight_layout()
    _save(plt, fig, path)


# ------------------------------------------------------------------ profiler

def _fmt_bytes(n):
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return "%.3g %s" % (n / scale, unit)
    return "%d B" % n


def _fmt_ibytes(n):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return "%g %s" % (n / scale, unit)
    return "%d B" % n


def _fmt_s(t):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if t >= scale:
            return "%.3g %s" % (t / scale, unit)
    return "%.3g ns" % (t / 1e-9)


def _site_label(site, width=48):
    f = str(site.get("file") or "?")
    if len(f) > width:
        f = "..." + f[-(width - 3):]
    return "%s:%s %s" % (f, site.get("line", "?"), site.get("function") or "?")


def plot_profile(sites, path, top=10, title=None):
    """Chart of the profiler's call sites: the ``top`` sites by total time, one horizontal bar
    each, longest first, labelled ``file:line function``.

    ``sites``: a list of site dicts as the profiler records them (or ``prof.to_json()``'s
    ``{"version": 1, "sites": [...]}``).  Keys used: ``file``, ``line``, ``function``, ``op``,
    ``calls``, ``total_s``, ``objects``, ``buffer_bytes``, ``buffer_s``; missing ones count as
    empty.  Each bar is split into object-copy time (``total_s - buffer_s``) and buffer-copy
    time (``buffer_s``) where both are non-zero; when ``buffer_s`` is 0 (not measured) but
    ``buffer_bytes`` > 0 the bar stays whole and the bytes are written beside it instead.
    Beside every bar: calls, objects and buffer bytes.  Returns the sites drawn, in order.

    In the SVG each bar part is a ``<g>`` with id ``site:RANK:objects`` or
    ``site:RANK:buffers`` (RANK from 1)."""
    check_path(path)
    plt = pyplot()
    if isinstance(sites, dict):
        sites = sites.get("sites", [])
    chosen = sorted(sites, key=lambda s: -(s.get("total_s") or 0.0))[:max(0, top)]
    n = len(chosen)
    fig_h = max(2.5, 0.42 * n + 2.0)
    fig, ax = plt.subplots(figsize=(10, fig_h))
    longest = max([s.get("total_s") or 0.0 for s in chosen] + [1e-9])
    unit, scale = next((u, k) for u, k in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))
                       if longest >= k or u == "ns")
    seen = set()
    for i, s in enumerate(chosen):
        total = s.get("total_s") or 0.0
        buf_s = min(s.get("buffer_s") or 0.0, total)
        obj_s = total - buf_s
        parts = [("objects", 0.0, obj_s, _OBJECTS_COLOR,
                  "copying objects (all of it where no buffer time was measured)")]
        if buf_s > 0:
            parts.append(("buffers", obj_s, buf_s, _BUFFERS_COLOR, "copying buffers (measured)"))
        for part, left, width, color, label in parts:
            if width <= 0 and part == "objects" and buf_s > 0:
                continue
            bar = ax.barh([i], [width / scale], left=left / scale, height=0.7, color=color,
                          label=None if part in seen else label)[0]
            bar.set_gid("site:%d:%s" % (i + 1, part))
            seen.add(part)
        op = " %s" % s["op"] if s.get("op") else ""
        notes = [_fmt_s(total), "%d%s calls" % (s.get("calls") or 0, op)]
        if s.get("objects"):
            notes.append("%d objects" % s["objects"])
        nbytes = s.get("buffer_bytes") or 0
        if nbytes:
            notes.append("%s of buffers%s" % (_fmt_bytes(nbytes), "" if buf_s > 0
                                               else " (their time not measured)"))
        ax.text((total + longest * 0.01) / scale, i,
                "\n".join(", ".join(line) for line in (notes[:2], notes[2:]) if line),
                va="center", fontsize=7)
    ax.set_yticks(range(n))
    ax.set_yticklabels([_site_label(s) for s in chosen], fontsize=8)
    ax.set_ylim(max(n, 1) - 0.5, -0.5)
    ax.set_xlim(0, longest * 1.75 / scale)
    ax.set_xlabel("total time in deepcopy/copy at the call site (%s)" % unit)
    ax.set_title(title or "fastcopy profile: top %d call sites by total copy time" % n,
                 fontsize=10)
    if seen:
        fig.legend(loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.35 / fig_h if seen else 0, 1, 1))
    _save(plt, fig, path)
    return chosen


_BUFFER_SERIES = (("fastcopy", "fastcopy.deepcopy", "#1f77b4"),
                  ("own", "copy.deepcopy (the library's own)", "#ff7f0e"),
                  ("limit", "limit: np.copyto into mapped pages", "#7f7f7f"))


def plot_buffers(doc, path, title=None):
    """Chart of a ``python -m fastcopy --buffers --json`` document: one panel per library, bytes
    copied per second against the buffer size (log-log), a line per implementation, solid at 1
    thread and dashed at 2.  Each line is a ``<g>`` with id ``line:LIB:IMPL:THREADS``.
    Returns the number of lines drawn."""
    check_path(path)
    plt = pyplot()
    rows = doc["sweep"]
    libs = [lib for lib in ("numpy", "torch") if any(r["lib"] == lib for r in rows)]
    threads = sorted({r["threads"] for r in rows})
    fig, axes = plt.subplots(1, len(libs), figsize=(5.2 * len(libs), 4.4), squeeze=False,
                             sharey=True)
    drawn = 0
    for ax, lib in zip(axes[0], libs):
        for impl, label, color in _BUFFER_SERIES:
            for t in threads:
                pts = sorted((r["size"], r["size"] / r[impl]["time"] / 1e9) for r in rows
                             if r["lib"] == lib and r["threads"] == t and r[impl]["time"] > 0)
                if not pts:
                    continue
                line = ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color,
                               linestyle="-" if t == 1 else "--", marker="o", markersize=2.5,
                               linewidth=1.2, label="%s, %d thread%s" % (label, t, "s"[:t > 1]))[0]
                line.set_gid("line:%s:%s:%d" % (lib, impl, t))
                drawn += 1
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        sizes = sorted({r["size"] for r in rows if r["lib"] == lib})
        ax.set_xticks(sizes)
        ax.set_xticklabels([_fmt_ibytes(n) for n in sizes], rotation=60,
                           fontsize=7)
        ax.minorticks_off()
        ax.set_title(lib, fontsize=9.5)
        ax.set_xlabel("buffer size")
        ax.grid(linewidth=0.3, alpha=0.6)
    axes[0][0].set_ylabel("GB/s copied (log scale)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=7.5, frameon=False)
    meta = doc.get("meta", {})
    if title is None:
        title = "buffer copies: fastcopy vs the library's own deepcopy vs the limit\n" + \
            " | ".join(str(p) for p in (
                "Python %s" % meta.get("python", "?"), "numpy %s" % meta.get("numpy"),
                "torch %s" % meta.get("torch"), "THP %s" % meta.get("thp"),
                "%s CPUs" % meta.get("cpus"), meta.get("date")) if p)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout(rect=(0, 0.2, 1, 0.95))
    _save(plt, fig, path)
    return drawn
