"""The plots of a run directory (rate against available capacity, the HoL
delay CDF, the congestion window; PNG and SVG) and the helpers every xrc
figure uses.

No pyplot: figures are :class:`matplotlib.figure.Figure` objects saved
directly, so xrc never selects a backend, never touches the caller's
global figure list, and changes no ``rcParams`` outside a
``with`` block. A notebook that imports xrc keeps its inline backend.

Axes rules: every axis says its unit; delays that may be zero go on a
symmetric-log axis that starts at 0 (linear to 1 ms, logarithmic above,
never negative tick labels); quantities that are always positive and span
decades (completion times) on a log axis labelled with plain numbers,
minor ticks unlabelled so labels cannot overlap.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter, SymmetricalLogLocator

from .schemes import color_of, label_of

# Reproducible SVGs: fixed ids, no date.
_RC = {"svg.hashsalt": "xrc"}
_META = {"svg": {"Date": None}, "png": {}}


def new_figure(nrows: int = 1, ncols: int = 1, *, figsize=(6, 4), **subplot_kw):
    """A figure and its axes grid (always 2-D), without pyplot."""
    fig = Figure(figsize=figsize, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, **subplot_kw)
    return fig, axes


@contextmanager
def _style():
    with rc_context(_RC):
        yield


def save(fig: Figure, directory: Path, stem: str, formats=("png", "svg"), dpi: int = 120) -> list[str]:
    """Writes `fig` as ``stem.<format>`` for every format; returns the names."""
    names = []
    with _style():
        for ext in formats:
            name = f"{stem}.{ext}"
            fig.savefig(directory / name, dpi=dpi, metadata=_META.get(ext) or None)
            names.append(name)
    return names


def _plain(v: float, _pos=None) -> str:
    """A tick label as a person writes it: 0, 0.5, 1, 10, 100, 1000."""
    if v == 0:
        return "0"
    return f"{v:g}"


def delay_axis(ax, axis: str = "x", linthresh: float = 1.0) -> None:
    """A delay axis (ms) that may hold zeros: linear from 0 to `linthresh`,
    logarithmic above, starting at 0 (a symmetric-log axis otherwise shows
    negative ticks for a margin below 0)."""
    set_scale = ax.set_xscale if axis == "x" else ax.set_yscale
    set_scale("symlog", linthresh=linthresh, linscale=0.5)
    a = ax.xaxis if axis == "x" else ax.yaxis
    a.set_major_locator(SymmetricalLogLocator(base=10, linthresh=linthresh))
    a.set_major_formatter(FuncFormatter(_plain))
    a.set_minor_formatter(NullFormatter())
    # Call after plotting: this fixes the far end where autoscaling put it.
    if axis == "x":
        ax.set_xlim(left=0)
    else:
        ax.set_ylim(bottom=0)


def log_axis(ax, axis: str = "x") -> None:
    """A log axis labelled with plain numbers at the decades (and at 2 and 5
    times them when the span is short), minor ticks unlabelled."""
    set_scale = ax.set_xscale if axis == "x" else ax.set_yscale
    set_scale("log")
    a = ax.xaxis if axis == "x" else ax.yaxis
    a.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=12))
    a.set_major_formatter(FuncFormatter(_plain))
    a.set_minor_formatter(NullFormatter())


#: Most points a CDF line keeps: the curve is within 1/(CDF_POINTS - 1) of the
#: exact one everywhere, finer than a figure's pixels, and a million-sample
#: CDF no longer makes matplotlib's drawing (and its search for a legend
#: place) walk a million vertices.
CDF_POINTS = 4096
#: Columns of the window figure whose points are kept (twice its width in
#: pixels, so the envelope is finer than what is drawn).
CWND_COLUMNS = 4096


def cdf(ax, samples, **kw) -> None:
    """An empirical CDF of `samples` as a step line (nothing if empty), at
    most :data:`CDF_POINTS` of its steps: the samples of evenly spaced
    ranks, the smallest and the largest among them."""
    from .grouped import GroupedArrays

    n = np.asarray(samples).size
    group_cdf(ax, GroupedArrays(np.zeros(n, dtype=np.uint32), samples), 0, **kw)


def group_cdf(ax, grouped, group: int, **kw) -> None:
    """:func:`cdf` of one group's values of a series by group
    (:mod:`xrc.grouped`), which need not fit in memory."""
    x, rank, n = grouped.cdf_points(group, CDF_POINTS)
    if n == 0:
        return
    ax.step(x, (rank + 1) / n, where="post", **kw)
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("CDF")


def budget_line(ax, ms: float = 10.0, label: str | None = None) -> None:
    ax.axvline(ms, color="0.5", ls=":", lw=1, label=label)


def fixed_ticks(ax, ticks, axis: str = "x") -> None:
    a = ax.xaxis if axis == "x" else ax.yaxis
    a.set_major_locator(FixedLocator(ticks))
    a.set_major_formatter(FuncFormatter(_plain))


def _has_unit(label: str) -> bool:
    """A unit in parentheses ("time (s)"), a rate unit, or a CDF (no unit)."""
    return bool(label) and ("(" in label or "Mbit/s" in label or label == "CDF" or label.startswith("CDF "))


def figure_problems(fig: Figure, name: str = "figure") -> list[str]:
    """What breaks the axes rules above: a panel with data but no y label,
    a figure without any x label, two labelled series of one panel drawn in
    the same colour and line style, negative tick labels on an axis of
    delays. Empty when the figure is sound."""
    from matplotlib.colors import to_hex

    problems = []
    axes = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    if axes and not any(ax.get_xlabel() for ax in axes):
        problems.append(f"{name}: no x label")
    for ax in axes:
        where = f"{name} [{ax.get_title(loc='left') or ax.get_title() or 'panel'}]"
        if (ax.lines or ax.collections) and not _has_unit(ax.get_ylabel()):
            problems.append(f"{where}: the y label {ax.get_ylabel()!r} gives no unit")
        if ax.get_xlabel() and not _has_unit(ax.get_xlabel()):
            problems.append(f"{where}: the x label {ax.get_xlabel()!r} gives no unit")
        seen: dict[tuple[str, str], str] = {}
        for line in ax.lines:
            label = line.get_label()
            if not label or label.startswith("_"):
                continue
            key = (to_hex(line.get_color()), str(line.get_linestyle()))
            if key in seen and seen[key] != label:
                problems.append(f"{where}: {seen[key]!r} and {label!r} share colour {key[0]} and style {key[1]}")
            seen.setdefault(key, label)
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() != "symlog":
                continue
            lo, hi = axis.get_view_interval()
            if min(lo, hi) < 0:
                problems.append(f"{where}: a delay axis reaches below 0 ({min(lo, hi):g})")
    return problems


#: Up to this many UEs (flows) the run's plots draw one panel (line) per UE
#: (flow); beyond, they draw aggregates and a few chosen UEs and flows (an
#: 88,000-pixel-tall figure of 300 panels is not read by anyone).
MAX_DETAILED = 8
#: UEs and flows drawn one by one beside the aggregates of a large run.
TOP_N = 5


# At most about this many steps per rate series: a figure is about 1,000
# pixels wide, and a 3,600-s run's 36,000 bins of 100 ms made `rate.svg`
# 4.5 MB of vertices no one could tell apart.
MAX_RATE_BINS = 2000


def bins_per_step(resolved) -> tuple[int, float]:
    """How many of the run's bins one step of a rate figure averages (1 when
    the run has at most about `MAX_RATE_BINS` of them), and the bin width in
    seconds."""
    bin_s = float(resolved["output"]["bin_ms"]) * 1e-3
    n = int(np.ceil(float(resolved["duration_s"]) / bin_s - 1e-9))
    return max(1, -(-n // MAX_RATE_BINS)), bin_s


def coarsen(t, columns, bin_s: float, k: int):
    """Per-bin rates averaged over groups of `k` consecutive bins (aligned to
    multiples of `k` bins from time 0): each group's value is the rate over
    the group, since the bins have equal widths; a bin the series lacks
    (before a flow starts) is left out of its group's mean. Returns (group
    starts, averaged columns)."""
    t = np.asarray(t, dtype=float)
    if k <= 1 or t.size == 0:
        return t, [np.asarray(c, dtype=float) for c in columns]
    g = np.floor(t / (k * bin_s) + 1e-9).astype(np.int64)
    counts = np.bincount(g)
    keep = counts > 0
    starts = np.nonzero(keep)[0] * (k * bin_s)
    return starts, [np.bincount(g, weights=np.asarray(c, dtype=float))[keep] / counts[keep] for c in columns]


def _time_label(k: int, bin_s: float) -> str:
    return "time (s)" if k <= 1 else f"time (s); each step the mean of {k} bins ({k * bin_s:g} s)"


def _by_bin(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct bin starts and each row's bin."""
    return np.unique(t, return_inverse=True)


def plot_rates(data, resolved, directory: Path) -> list[str]:
    flows = resolved["flows"]
    n_ues = int(data.tables["ues"]["ue"].size)
    if n_ues > MAX_DETAILED or len(flows) > 4 * MAX_DETAILED:
        return _plot_rates_aggregate(data, resolved, directory, n_ues)
    ur = data.whole("ue_rate", ["t", "ue", "available_mbps", "agent_mbps"])
    tp = data.whole("flow_throughput", ["t", "flow", "goodput_mbps"])
    n_ues = int(ur["ue"].max()) + 1 if ur["ue"].size else 0
    rows = max(n_ues, 1)
    per_step, bin_s = bins_per_step(resolved)
    fig, axes = new_figure(rows, 1, figsize=(9, 3.2 * rows), sharex=True)
    for r in range(rows):
        ax = axes[r][0]
        if n_ues:
            sel = ur["ue"] == r
            t, (avail, agent) = coarsen(ur["t"][sel], [ur["available_mbps"][sel], ur["agent_mbps"][sel]], bin_s, per_step)
            ax.fill_between(t, avail, step="post", color="0.85", label="available capacity")
            ax.step(t, agent, where="post", color="0.5", lw=0.8, ls="--", label="agent estimate")
        for k, f in enumerate(flows):
            if n_ues and f.get("ue") != r:
                continue
            sel = tp["flow"] == k
            t, (good,) = coarsen(tp["t"][sel], [tp["goodput_mbps"][sel]], bin_s, per_step)
            ax.step(t, good, where="post", lw=1.2,
                    color=color_of(f["cc"], k), label=f"{f['id']} ({label_of(f['cc'])})")
        ax.set_ylabel("goodput (Mbit/s)")
        if n_ues > 1:
            ax.set_title(f"UE {r}", fontsize=9)
        ax.legend(loc="upper right", fontsize=8)
        ax.grid(alpha=0.3)
    axes[-1][0].set_xlabel(_time_label(per_step, bin_s))
    axes[0][0].set_title(f"{resolved['name']}: rate against available capacity" + (" (UE 0)" if n_ues > 1 else ""))
    return save(fig, directory, "rate")


def _per_bin(batches, reduce) -> tuple[np.ndarray, np.ndarray]:
    """`reduce(values of one column per bin)` for every bin of a per-bin
    table read in batches (rows in time order; a bin cut by a batch boundary
    is carried into the next batch). Returns (bin starts, results)."""
    starts, results = [], []
    carry: dict[str, np.ndarray] | None = None
    for b in batches:
        if carry is not None:
            b = {c: np.concatenate([carry[c], b[c]]) for c in b}
        if b["t"].size == 0:
            carry = b
            continue
        last = b["t"][-1]
        done = b["t"] < last
        carry = {c: v[~done] for c, v in b.items()}
        part = {c: v[done] for c, v in b.items()}
        if part["t"].size:
            bins, idx = _by_bin(part["t"])
            starts.append(bins)
            results.append(reduce(part, idx, bins.size))
    if carry is not None and carry["t"].size:
        bins, idx = _by_bin(carry["t"])
        starts.append(bins)
        results.append(reduce(carry, idx, bins.size))
    if not starts:
        return np.empty(0), np.empty((0, 0))
    return np.concatenate(starts), np.concatenate(results)


def _sums(*columns):
    def reduce(part, idx, n):
        return np.stack([np.bincount(idx, weights=part[c], minlength=n) for c in columns], axis=1)
    return reduce


def _spread(column, qs=(0, 10, 50, 90, 100)):
    def reduce(part, idx, n):
        order = np.lexsort((part[column], idx))
        v = part[column][order]
        bounds = np.searchsorted(idx[order], np.arange(n + 1))
        return np.array([np.percentile(v[lo:hi], qs) for lo, hi in zip(bounds[:-1], bounds[1:])])
    return reduce


def _plot_rates_aggregate(data, resolved, directory: Path, n_ues: int) -> list[str]:
    """A large run: the cell's totals per bin, and how the flows' goodput
    spreads across flows per bin (median, 10th-90th percentile band,
    extremes)."""
    fig, axes = new_figure(2, 1, figsize=(9, 6.4), sharex=True)
    per_step, bin_s = bins_per_step(resolved)

    def coarse(bins, values):
        t, cols = coarsen(bins, [values[:, j] for j in range(values.shape[1])], bin_s, per_step)
        return t, np.stack(cols, axis=1) if cols else values

    ax = axes[0][0]
    bins, tot = coarse(*_per_bin(data.batches("ue_rate", ["t", "available_mbps", "delivered_mbps"]),
                                 _sums("available_mbps", "delivered_mbps")))
    if bins.size:
        ax.fill_between(bins, tot[:, 0], step="post", color="0.85",
                        label=f"available (sum over {n_ues} UEs' fair shares)")
        ax.step(bins, tot[:, 1], where="post", color="C0", lw=1.2, label="delivered to the UEs")
    bins, good = coarse(*_per_bin(data.batches("flow_throughput", ["t", "goodput_mbps"]), _sums("goodput_mbps")))
    if bins.size:
        ax.step(bins, good[:, 0], where="post", color="C3", lw=1.0, ls="--", label="goodput (sum over flows)")
    ax.set_ylabel("rate (Mbit/s)")
    ax.set_title(f"{resolved['name']}: cell total ({n_ues} UEs, {len(resolved['flows'])} flows)")
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
    ax = axes[1][0]
    bins, q = coarse(*_per_bin(data.batches("flow_throughput", ["t", "goodput_mbps"]), _spread("goodput_mbps")))
    if bins.size:
        ax.fill_between(bins, q[:, 0], q[:, 4], step="post", color="C0", alpha=0.12, label="min to max")
        ax.fill_between(bins, q[:, 1], q[:, 3], step="post", color="C0", alpha=0.3, label="10th to 90th percentile")
        ax.step(bins, q[:, 2], where="post", color="C0", lw=1.2, label="median flow")
    ax.set_ylabel("goodput per flow (Mbit/s)")
    ax.set_title("goodput across flows, per bin" + ("" if per_step <= 1 else f" (each percentile averaged over {per_step} bins)"),
                 fontsize=9)
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
    axes[-1][0].set_xlabel(_time_label(per_step, bin_s))
    return save(fig, directory, "rate")


def _ue_p95(data, n_ues: int, summary) -> np.ndarray:
    """Each UE's 95th-percentile HoL delay while active (NaN without samples)."""
    if summary is not None:
        return np.array([np.nan if u["hol_delay_ms"]["p95"] is None else u["hol_delay_ms"]["p95"]
                         for u in summary["ues"]], dtype=float)
    return np.array([data.hol_active.percentiles(u, (95,))[0] for u in range(n_ues)], dtype=float)


def plot_hol_cdf(data, resolved, directory: Path, summary=None) -> list[str]:
    ues = data.tables["ues"]["ue"]
    if ues.size == 0:
        return []
    if ues.size > MAX_DETAILED:
        return _plot_hol_aggregate(data, resolved, directory, summary)
    fig, axes = new_figure()
    ax = axes[0][0]
    for u in ues:
        group_cdf(ax, data.hol_active, int(u), label=f"UE {int(u)}")
    budget_line(ax, 10.0, "10 ms budget")
    delay_axis(ax)
    ax.set_xlabel("RLC head-of-line delay (ms)")
    ax.set_title(f"{resolved['name']}: HoL delay")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, directory, "hol_cdf")


def _plot_hol_aggregate(data, resolved, directory: Path, summary) -> list[str]:
    """A large run: how each UE's median and 95th-percentile HoL delay spread
    across UEs, and the CDFs of the UEs with the highest 95th percentile
    beside the median UE's."""
    n_ues = int(data.tables["ues"]["ue"].size)
    p95 = _ue_p95(data, n_ues, summary)
    if summary is not None:
        p50 = np.array([np.nan if u["hol_delay_ms"]["p50"] is None else u["hol_delay_ms"]["p50"]
                        for u in summary["ues"]], dtype=float)
    else:
        p50 = np.array([data.hol_active.percentiles(u, (50,))[0] for u in range(n_ues)], dtype=float)
    fig, axes = new_figure(1, 2, figsize=(11, 4))
    ax = axes[0][0]
    cdf(ax, p50, color="C0", label="each UE's median")
    cdf(ax, p95, color="C3", label="each UE's 95th percentile")
    budget_line(ax, 10.0, "10 ms budget")
    delay_axis(ax)
    ax.set_xlabel("RLC head-of-line delay while active (ms)")
    ax.set_ylabel("CDF over UEs")
    ax.set_title(f"{resolved['name']}: {n_ues} UEs", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax = axes[0][1]
    ranked = [int(u) for u in np.argsort(-np.nan_to_num(p95, nan=-np.inf), kind="stable") if not np.isnan(p95[u])]
    chosen = ranked[:TOP_N]
    if len(ranked) > TOP_N:
        chosen.append(ranked[len(ranked) // 2])
    for i, u in enumerate(chosen):
        tag = "median UE" if i == TOP_N else f"#{i + 1} by p95"
        group_cdf(ax, data.hol_active, u, color=f"C{i}", label=f"UE {u} ({tag})")
    budget_line(ax, 10.0, "10 ms budget")
    delay_axis(ax)
    ax.set_xlabel("RLC head-of-line delay while active (ms)")
    ax.set_title(f"the {min(TOP_N, len(ranked))} UEs with the highest 95th percentile, and the median UE", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, directory, "hol_cdf")


def plot_cwnd(data, resolved, directory: Path, summary=None) -> list[str]:
    flows = resolved["flows"]
    fs = data.tables["flows"]
    if len(flows) > MAX_DETAILED:
        # The flows with the highest and lowest goodput, and the median one.
        order = list(np.argsort(-fs["bytes_delivered"].astype(np.float64), kind="stable"))
        ranks = sorted({0, 1, len(order) // 2, len(order) - 2, len(order) - 1})
        chosen = [(int(fs["flow"][order[r]]), r) for r in ranks]
    else:
        chosen = [(k, None) for k in range(len(flows))]
    # The points the figure's columns show (the envelope of each column),
    # not the millions of a long run.
    traces = data.cwnd([k for k, _ in chosen], points=(0.0, float(resolved["duration_s"]), CWND_COLUMNS))
    if not any(t.size for t, _ in traces.values()):
        return []
    fig, axes = new_figure(figsize=(9, 3.5))
    ax = axes[0][0]
    for i, (k, rank) in enumerate(chosen):
        f = flows[k]
        t, w = traces[k]
        if rank is None:
            ax.step(t, w, where="post", lw=1, color=color_of(f["cc"], k), label=f"{f['id']} ({label_of(f['cc'])})")
        else:
            ax.step(t, w, where="post", lw=1, color=f"C{i}",
                    label=f"{f['id']} ({label_of(f['cc'])}, #{rank + 1} of {len(flows)} by goodput)")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("cwnd (segments)")
    title = f"{resolved['name']}: congestion window"
    if len(flows) > MAX_DETAILED:
        title += f" of {len(chosen)} of {len(flows)} flows"
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, directory, "cwnd")


def plot_all(run, resolved, directory: Path, summary=None) -> list[str]:
    """The run's figures from its tables in memory or a
    :class:`xrc.results.RunData` (a streamed run); `summary` (its
    ``summary.json``) spares working out per-UE percentiles again."""
    from .results import RunData

    data = run if isinstance(run, RunData) else RunData.from_tables(run)
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    from ._proc import trim_heap

    # Each figure's memory goes back before the next (a long run's figures
    # each free hundreds of MB).
    out += plot_rates(data, resolved, directory)
    trim_heap()
    out += plot_hol_cdf(data, resolved, directory, summary)
    trim_heap()
    out += plot_cwnd(data, resolved, directory, summary)
    trim_heap()
    return out
