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


def cdf(ax, samples, **kw) -> None:
    """An empirical CDF of `samples` as a step line (nothing if empty)."""
    x = np.sort(np.asarray(samples, dtype=float))
    x = x[~np.isnan(x)]
    if x.size == 0:
        return
    ax.step(x, np.arange(1, x.size + 1) / x.size, where="post", **kw)
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
    return bool(label) and ("(" in label or "Mbit/s" in label or label == "CDF")


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


def plot_rates(tables, resolved, directory: Path) -> list[str]:
    flows = resolved["flows"]
    ur = tables["ue_rate"]
    tp = tables["flow_throughput"]
    n_ues = int(ur["ue"].max()) + 1 if ur["ue"].size else 0
    rows = max(n_ues, 1)
    fig, axes = new_figure(rows, 1, figsize=(9, 3.2 * rows), sharex=True)
    for r in range(rows):
        ax = axes[r][0]
        if n_ues:
            sel = ur["ue"] == r
            t = ur["t"][sel]
            ax.fill_between(t, ur["available_mbps"][sel], step="post", color="0.85", label="available capacity")
            ax.step(t, ur["agent_mbps"][sel], where="post", color="0.5", lw=0.8, ls="--", label="agent estimate")
        for k, f in enumerate(flows):
            if n_ues and f.get("ue") != r:
                continue
            sel = tp["flow"] == k
            ax.step(tp["t"][sel], tp["goodput_mbps"][sel], where="post", lw=1.2,
                    color=color_of(f["cc"], k), label=f"{f['id']} ({label_of(f['cc'])})")
        ax.set_ylabel("goodput (Mbit/s)")
        if n_ues > 1:
            ax.set_title(f"UE {r}", fontsize=9)
        ax.legend(loc="upper right", fontsize=8)
        ax.grid(alpha=0.3)
    axes[-1][0].set_xlabel("time (s)")
    axes[0][0].set_title(f"{resolved['name']}: rate against available capacity" + (" (UE 0)" if n_ues > 1 else ""))
    return save(fig, directory, "rate")


def plot_hol_cdf(tables, resolved, directory: Path) -> list[str]:
    rlc = tables["rlc"]
    if rlc["ue"].size == 0:
        return []
    fig, axes = new_figure()
    ax = axes[0][0]
    for u in np.unique(rlc["ue"]):
        sel = (rlc["ue"] == u) & (rlc["active"] == 1)
        cdf(ax, rlc["hol_ms"][sel], label=f"UE {int(u)}")
    budget_line(ax, 10.0, "10 ms budget")
    delay_axis(ax)
    ax.set_xlabel("RLC head-of-line delay (ms)")
    ax.set_title(f"{resolved['name']}: HoL delay")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, directory, "hol_cdf")


def plot_cwnd(tables, resolved, directory: Path) -> list[str]:
    cw = tables["cwnd"]
    if cw["flow"].size == 0:
        return []
    fig, axes = new_figure(figsize=(9, 3.5))
    ax = axes[0][0]
    for k, f in enumerate(resolved["flows"]):
        sel = cw["flow"] == k
        ax.step(cw["t"][sel], cw["cwnd"][sel], where="post", lw=1, color=color_of(f["cc"], k),
                label=f"{f['id']} ({label_of(f['cc'])})")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("cwnd (segments)")
    ax.set_title(f"{resolved['name']}: congestion window")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, directory, "cwnd")


def plot_all(tables, resolved, directory: Path) -> list[str]:
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    out += plot_rates(tables, resolved, directory)
    out += plot_hol_cdf(tables, resolved, directory)
    out += plot_cwnd(tables, resolved, directory)
    return out
