"""``xrc plot RUN... --out DIR``: comparison figures across arbitrary run
directories, or across every run of a sweep directory.

Each argument is a run directory (``xrc run --out``) or a sweep directory
(``xrc sweep --out``: all its runs). Runs are labelled by what differs
between their scenarios (``flows.0.cc=cubic``, ``seed=2``), unless
``--label`` names them. Figures (PNG and SVG):

- ``goodput``: every flow's goodput over time, one panel per run, the UE's
  available capacity shaded (up to 12 runs);
- ``rtt_cdf``: the CDF of every run's RTT samples (all flows);
- ``queuing_cdf``: the CDF of every run's per-packet queuing delay at the
  bottleneck (``queue_delay.parquet``);
- ``tradeoff``: each run's total goodput against its p95 per-packet
  queuing delay;
- for a sweep, ``sweep``: total goodput and p95 queuing delay against the
  first swept field, a line per combination of the others, the mean over
  seeds (error bars: their range).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from .plots import cdf, delay_axis, figure_problems, new_figure, save
from .rundir import read_sweep_listing
from .scenario import ScenarioError

#: Beyond this many runs, no per-run panels (the other figures still show all).
MAX_PANELS = 12

_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf"]
_STYLES = ["-", "--", ":", "-."]


def style(i: int) -> dict[str, Any]:
    """Run i's colour and line style: distinct for the first 40 runs."""
    return {"color": _COLORS[i % len(_COLORS)], "ls": _STYLES[(i // len(_COLORS)) % len(_STYLES)]}


def expand(paths: list[str | Path]) -> tuple[list[Path], list[Path]]:
    """Run directories named or contained (sweeps), and the sweep
    directories among the arguments. Raises :class:`ScenarioError`."""
    runs: list[Path] = []
    sweeps: list[Path] = []
    for p in map(Path, paths):
        if (p / "summary.json").is_file() and (p / "scenario.resolved.json").is_file():
            runs.append(p)
        elif (p / "summary.json").exists() and not (p / "sweep.json").exists():
            # Damaged (not a file, its scenario missing): read_run names what.
            runs.append(p)
        elif (p / "sweep.json").is_file() and (p / "runs").is_dir():
            sweeps.append(p)
            listed = read_sweep_listing(p / "sweep.json")
            listed.sort(key=lambda r: ([_sortable(o) for o in r["overrides"]], r["seed"]))
            found = [p / "runs" / r["run_id"] for r in listed if (p / "runs" / r["run_id"] / "summary.json").is_file()]
            if not found:
                raise ScenarioError(f"{str(p)!r}: a sweep directory without finished runs")
            runs += found
        else:
            raise ScenarioError(f"{str(p)!r} is neither a run directory (summary.json) nor a sweep directory "
                                f"(sweep.json)")
    if not runs:
        raise ScenarioError("no runs to plot")
    return runs, sweeps


def _sortable(override: str) -> tuple:
    """An override ``PATH=VALUE`` as a sort key: numbers by value."""
    from .scenario import parse_value

    k, _, v = override.partition("=")
    x = parse_value(v)
    return (k, 0, x, "") if isinstance(x, (int, float)) and not isinstance(x, bool) else (k, 1, 0, str(x))


def _flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(node, dict):
        for k, v in node.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(node, list) and node and all(isinstance(x, dict) for x in node):
        for i, v in enumerate(node):
            out.update(_flatten(v, f"{prefix}.{i}"))
    else:
        out[prefix] = json.dumps(node, sort_keys=True) if isinstance(node, (list, dict)) else node
    return out


def labels_of(scenarios: list[dict[str, Any]], dirs: list[Path]) -> list[str]:
    """A label per run: the fields whose values differ between the runs."""
    flat = [_flatten(s) for s in scenarios]
    keys = sorted({k for f in flat for k in f})
    differ = [k for k in keys if len({json.dumps(f.get(k), sort_keys=True) for f in flat}) > 1
              and k not in ("name", "description")]
    # A flow's parameters follow its scheme: when the scheme differs, it
    # says it all.
    schemes = {k.rsplit(".", 1)[0] for k in differ if k.startswith("flows.") and k.endswith(".cc")}
    differ = [k for k in differ if not any(k.startswith(f"{f}.cc_params.") for f in schemes)]
    if not differ or len(scenarios) == 1:
        names = [s.get("name", d.name) for s, d in zip(scenarios, dirs)]
        return names if len(set(names)) == len(names) else [d.name for d in dirs]
    # Swept fields first, the seed last.
    differ.sort(key=lambda k: (k == "seed", k))
    labels = [", ".join(f"{k}={_short(f.get(k))}" for k in differ[:4]) + (" ..." if len(differ) > 4 else "")
              for f in flat]
    if len(set(labels)) < len(labels):  # differences beyond the first four
        labels = [f"{lab} ({d.name})" for lab, d in zip(labels, dirs)]
    return labels


def _field_label(key: str) -> str:
    """A swept field as an axis label, with the unit its name carries."""
    for suffix, unit in (("_ms", "ms"), ("_s", "s"), ("_mbps", "Mbit/s"), ("_mhz", "MHz"), ("_bytes", "bytes"),
                         ("_packets", "packets"), ("_ttis", "TTIs"), ("_db", "dB"), ("_dbm", "dBm"), ("_m", "m")):
        if key.endswith(suffix):
            return f"{key} ({unit})"
    return f"{key} (as set)"


def _short(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def plot_runs(paths: list[str | Path], out: str | Path, labels: list[str] | None = None,
              formats: tuple[str, ...] = ("png", "svg")) -> dict[str, Any]:
    """Draws the comparison figures into `out`. Returns ``{"files",
    "labels", "problems"}`` (problems: :func:`xrc.plots.figure_problems`)."""
    from .api import read_run
    from .outdir import OutputError, check_not_inside_output, check_parents

    out = Path(out)
    # Checked before reading the runs (a file in the way failed only when
    # the first figure was saved, as "Not a directory" or "File exists").
    check_parents(out)
    # Figures added into a run directory (`xrc plot RUN --out RUN`) mixed
    # with what `xrc run` wrote there, and `xrc run --force` dropped them.
    check_not_inside_output(out, "xrc plot")
    if out.exists() and not out.is_dir():
        raise OutputError(f"--out {str(out)!r} exists and is not a directory")
    dirs, sweeps = expand(paths)
    runs = [read_run(d) for d in dirs]
    if labels is not None and len(labels) != len(runs):
        raise ScenarioError(f"--label: {len(labels)} labels for {len(runs)} runs")
    if labels is not None and len(set(labels)) != len(labels):
        twice = sorted({x for x in labels if labels.count(x) > 1})
        raise ScenarioError(f"--label: {', '.join(map(repr, twice))} given for more than one run; each run needs "
                            f"its own label")
    labels = labels or labels_of([r.scenario for r in runs], dirs)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"--out {str(out)!r}: {e.strerror or e}") from None
    files: list[str] = []
    problems: list[str] = []

    def done(fig, stem):
        problems.extend(figure_problems(fig, stem))
        files.extend(save(fig, out, stem, formats))

    if len(runs) <= MAX_PANELS:
        fig, axes = new_figure(len(runs), 1, figsize=(9, 1.9 * len(runs) + 0.6), sharex=True)
        for ax, r, lab in zip(axes[:, 0], runs, labels):
            ur = r.ue_rate
            if len(ur):
                u0 = ur[ur["ue"] == ur["ue"].min()]
                ax.fill_between(u0["t"], u0["available_mbps"], step="post", color="0.88", label="capacity (UE 0)")
            tp = r.flow_throughput
            for k, fid in enumerate(r.flow_ids):
                sel = tp["flow"] == k
                ax.step(tp.loc[sel, "t"], tp.loc[sel, "goodput_mbps"], where="post", lw=1, label=fid, **style(k))
            ax.set_ylabel("Mbit/s")
            ax.set_title(lab, fontsize=9, loc="left")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.005, 1.0))
        axes[-1, 0].set_xlabel("time (s)")
        fig.suptitle("goodput of every flow", fontsize=10)
        done(fig, "goodput")

    for stem, table, column, xlabel in (("rtt_cdf", "rtt", "rtt_ms", "RTT (ms)"),
                                        ("queuing_cdf", "queue_delay", "delay_ms",
                                         "per-packet queuing delay at the bottleneck (ms)")):
        fig, axes = new_figure(figsize=(7, _height(len(runs))))
        ax = axes[0, 0]
        drawn = 0
        for i, (r, lab) in enumerate(zip(runs, labels)):
            x = r.table(table)[column].to_numpy(dtype=float)
            if np.count_nonzero(~np.isnan(x)):
                cdf(ax, x, label=lab, lw=1.2, **style(i))
                drawn += 1
        if not drawn:
            continue
        delay_axis(ax)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("CDF")
        ax.grid(alpha=0.3)
        _legend_below(fig, ax)
        done(fig, stem)

    rows = [_run_numbers(r) for r in runs]
    fig, axes = new_figure(figsize=(7, _height(len(runs))))
    ax = axes[0, 0]
    markers = "osD^vP*Xhp<>8dH"
    for i, (row, lab) in enumerate(zip(rows, labels)):
        if row["qdelay_p95_ms"] is not None:
            ax.scatter([max(row["qdelay_p95_ms"], 0.0)], [row["goodput_mbps"]], color=style(i)["color"],
                       marker=markers[(i // len(_COLORS)) % len(markers)], s=40, label=lab)
    ax.set_xlabel("p95 per-packet queuing delay (ms)")
    ax.set_ylabel("total goodput (Mbit/s)")
    ax.grid(alpha=0.3)
    _legend_below(fig, ax)
    done(fig, "tradeoff")

    for sw in sweeps:
        files += _sweep_figure(sw, out, formats, problems)
    return {"files": files, "labels": labels, "problems": problems}


def _height(n_entries: int) -> float:
    """A figure tall enough for a plot and a legend of n entries below it."""
    return 4.2 + 0.2 * ((n_entries + 1) // 2)


def _legend_below(fig, ax) -> None:
    """The legend under the plot, two columns: long labels hide no data and
    squeeze no axes."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncol=2 if len(labels) > 1 else 1, fontsize=7)


def _run_numbers(r) -> dict[str, Any]:
    """A run's total goodput and its p95 per-packet queuing delay (over all
    its packets, every UE)."""
    q = r.queue_delay["delay_ms"].to_numpy(dtype=float)
    return {"goodput_mbps": float(sum(f["goodput_mbps"] for f in r.summary["flows"])),
            "qdelay_p95_ms": float(np.percentile(q, 95)) if q.size else None}


def _sweep_figure(sweep_dir: Path, out: Path, formats, problems: list[str]) -> list[str]:
    """Total goodput and p95 queuing delay against the first swept field."""
    from .api import read_run
    from .scenario import parse_value

    listed = read_sweep_listing(sweep_dir / "sweep.json")
    points = []
    for r in listed:
        d = sweep_dir / "runs" / r["run_id"]
        if not (d / "summary.json").is_file():
            continue
        ov = {}
        for o in r["overrides"]:
            k, _, v = o.partition("=")
            ov[k] = parse_value(v)
        points.append((ov, _run_numbers(read_run(d))))
    keys = [k for k in sorted({k for ov, _ in points for k in ov})
            if len({json.dumps(ov.get(k), sort_keys=True) for ov, _ in points}) > 1]
    if not keys:
        return []
    # The x axis: the first numeric swept field, else the first swept field.
    numeric = [k for k in keys if all(isinstance(ov.get(k), (int, float)) and not isinstance(ov.get(k), bool)
                                      for ov, _ in points)]
    xkey = numeric[0] if numeric else keys[0]
    rest = [k for k in keys if k != xkey]
    def order(s: str) -> tuple:
        # Numbers and strings in their own order; tables and lists (a grid
        # of `flows.0.tcp` tables) by their JSON text, which is sortable.
        v = json.loads(s)
        if v is None:
            return (2, 0, "")
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return (0, v, "")
        return (1, 0, s if isinstance(v, (dict, list)) else str(v))

    xs = sorted({json.dumps(ov.get(xkey), sort_keys=True) for ov, _ in points}, key=order)
    groups: dict[str, dict[str, list]] = {}
    for ov, nums in points:
        g = ", ".join(f"{k}={_short(ov.get(k))}" for k in rest) or "all runs"
        groups.setdefault(g, {}).setdefault(json.dumps(ov.get(xkey), sort_keys=True), []).append(nums)
    fig, axes = new_figure(1, 2, figsize=(11, _height(len(groups))))
    spread = min(0.1, 0.6 / max(len(groups), 1))
    for metric, ax, ylabel in (("goodput_mbps", axes[0, 0], "total goodput (Mbit/s)"),
                               ("qdelay_p95_ms", axes[0, 1], "p95 per-packet queuing delay (ms)")):
        for i, (g, by_x) in enumerate(sorted(groups.items())):
            xv, mean, lo, hi = [], [], [], []
            for j, x in enumerate(xs):
                vals = [n[metric] for n in by_x.get(x, []) if n[metric] is not None]
                if not vals:
                    continue
                # Categories have no order to join by a line; side by side
                # so that the groups' range bars do not hide each other.
                xv.append(json.loads(x) if numeric else j + spread * (i - (len(groups) - 1) / 2))
                mean.append(float(np.mean(vals)))
                lo.append(mean[-1] - min(vals))
                hi.append(max(vals) - mean[-1])
            st = style(i) if numeric else {**style(i), "ls": "none"}
            ax.errorbar(xv, mean, yerr=[lo, hi], marker="o", capsize=3, label=g, **st)
        ax.set_xlabel(_field_label(xkey))
        if not numeric:
            ax.set_xticks(range(len(xs)), [_short(json.loads(x)) for x in xs])
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    _legend_below(fig, axes[0, 1])
    fig.suptitle(f"sweep {sweep_dir.name}: mean over seeds (bars: their range)", fontsize=10)
    stem = "sweep" if sweep_dir.name in ("", ".") else f"sweep_{sweep_dir.name}"
    problems.extend(figure_problems(fig, stem))
    return save(fig, out, stem, formats)
