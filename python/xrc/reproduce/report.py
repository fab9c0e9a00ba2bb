"""Figures, the paper's claims against our numbers, and the report."""

from __future__ import annotations

import base64
import html
import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..plots import budget_line, cdf, delay_axis, figure_problems, log_axis, new_figure, save as save_figure
from ..schemes import color_of, label_of
from .metrics import jain_over, jain_sliding, mean_ci95

Results = dict[tuple[str, str], list[dict[str, Any]]]

#: Fig. 4's Jain's index of four XRC flows with different RTTs, in the paper.
PAPER_FIG4_XRC_JAIN = 99.5


def _group(results: list[dict[str, Any]]) -> Results:
    g: Results = defaultdict(list)
    for r in results:
        g[(r["point"]["exp"], r["point"]["label"])].append(r)
    return g


def _tp(r: dict[str, Any]) -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in r["tp"].items()}


#: Problems :func:`xrc.plots.figure_problems` found in the figures of the
#: report being written (recorded in its metadata; the tests want none).
_PROBLEMS: list[str] = []


def _save(fig, figdir: Path, name: str) -> str:
    save_figure(fig, figdir, name, formats=("png",), dpi=110)
    _PROBLEMS.extend(figure_problems(fig, name))
    return f"figures/{name}.png"


def _cdf(ax, samples, label, color, **kw):
    cdf(ax, samples, label=label, color=color, **kw)


def _rate_panel(ax, name: str) -> None:
    """A goodput-over-time panel: its unit on the axis, its scheme inside it."""
    ax.set_ylabel("Mbit/s")
    ax.set_title(name, fontsize=9, loc="left")
    ax.grid(alpha=0.3)


#: Fig. 7's XRC bulk flow with XRC short flows: XRC's colour would repeat
#: the XRC/NewReno-shorts series, so it gets its own colour and dashes.
XRC_SHORTS_STYLE = {"color": "#7f0000", "ls": "--"}


def _fmt(v, nd=3):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.{nd}g}" if abs(v) < 1e4 else f"{v:.0f}"
    return str(v)


#: How a claim's number is written in each of the paper's units, and the
#: values it can take (a confidence interval is cut to them).
UNITS: dict[str, tuple[Callable[[float], str], float, float]] = {
    # Two decimals near 100% (Jain 99.5% against 99.98%), one elsewhere.
    "%": (lambda v: f"{v:.2f}%" if abs(v) >= 99 else f"{v:.1f}%", 0.0, 100.0),
    "ms": (lambda v: f"{v:.3g} ms", 0.0, math.inf),
    "s": (lambda v: f"{v:.4g} s", 0.0, math.inf),
    "x": (lambda v: f"{v:.3g}x", 0.0, math.inf),
}

_OPS: dict[str, tuple[Callable[[float, float], bool], str]] = {
    ">=": (lambda a, b: a >= b, "≥"), ">": (lambda a, b: a > b, ">"), "<=": (lambda a, b: a <= b, "≤")}

#: A claim's verdicts: the whole 95% interval meets the criterion, none of
#: it does, or it reaches both sides (more seeds may decide).
VERDICTS = ("holds", "fails", "inconclusive", "no data")


def fmt_unit(v: float | None, unit: str) -> str:
    """`v` written in `unit` (one of :data:`UNITS`)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if math.isinf(v):
        return "never" if v > 0 else "–"
    return UNITS[unit][0](v)


def verdict(mean: float | None, interval: tuple[float, float] | None, ok: Callable[[float], bool]) -> str:
    """One of :data:`VERDICTS`: the criterion `ok` checked at both ends of
    the interval (at the mean when there is none: one seed)."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "no data"
    if interval is None:
        return "holds" if ok(mean) else "fails"
    lo, hi = (ok(x) for x in interval)
    return "holds" if lo and hi else "fails" if not (lo or hi) else "inconclusive"


class Claims:
    """The paper's claims against our numbers. Each has its number in the
    paper's unit, a criterion in words, and a verdict that agrees with the
    95% confidence interval shown (over seeds; none with one seed)."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def add(self, cid: str, claim: str, paper: str, values: list[float | None], *, unit: str, measure: str,
            op: str, threshold: float, why: str = "", note: str = "",
            bounds: tuple[float, float] | None = None) -> None:
        """`values`: one per seed, in the paper's `unit`; the claim holds if
        `measure` `op` `threshold` (`why`: where the threshold comes from).
        `bounds`: the values the measure can take (default: the unit's)."""
        vals = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
        mean, ci = mean_ci95(vals)
        if ci is not None and math.isnan(ci):
            ci = None
        if ci == 0 and len(vals) > 1:
            # A zero-width interval from several seeds is no precision: no
            # randomness reached this measure.
            note = (f"all {len(vals)} seeds gave the same value: no randomness reaches this measure, so its "
                    f"interval says nothing about variability. " + note).strip()
        lo_b, hi_b = bounds or UNITS[unit][1:]
        interval = None
        if mean is not None and ci is not None and math.isfinite(mean):
            interval = (max(mean - ci, lo_b), min(mean + ci, hi_b))
        test, sym = _OPS[op]
        v = verdict(mean, interval, lambda x: test(x, threshold))
        bound = f"{threshold:.4g}" + ("%" if unit == "%" else "x" if unit == "x" else f" {unit}")
        criterion = f"{measure} {sym} {bound}" + (f" {why}" if why else "")
        self.items.append({"id": cid, "claim": claim, "paper": paper, "ours": mean, "unit": unit, "ci95": ci,
                           "interval": None if interval is None else list(interval), "criterion": criterion,
                           "verdict": v, "holds": v == "holds", "seeds": len(vals), "note": note})


def write_report(results: list[dict[str, Any]], meta: dict[str, Any], out: Path,
                 variants: dict[str, list[dict[str, Any]]] | None = None) -> list[dict[str, Any]]:
    """Writes the figures, report.md and report.html; returns the claims.
    `variants`: another XRC's claims (computed by this function on results
    whose XRC arms ran it), by scheme name: shown beside each claim and kept
    in it under that name (``{"ours", "ci95", "holds"}``).
    Sets ``meta["figure_problems"]`` to what the figures break of the axes
    rules (:func:`xrc.plots.figure_problems`)."""
    _PROBLEMS.clear()
    g = _group(results)
    figdir = out / "figures"
    claims = Claims()
    sections: list[tuple[str, str, list[str], list[str]]] = []  # (title, text, table lines, images)

    # ---------------- Fig. 1 ----------------
    labels = [lab for (e, lab) in g if e == "fig1"]
    order = [c for c in ["xrc", "cubic", "newreno", "illinois", "veno", "oracle"] if c in labels]
    if order:
        fig, axes = new_figure(len(order), 1, figsize=(9, 1.9 * len(order)), sharex=True)
        for ax, cc in zip(axes[:, 0], order):
            r = g[("fig1", cc)][0]
            cap = r["cap"]
            ax.fill_between(cap["t"], cap["available_mbps"], step="post", color="0.85")
            tp = _tp(r)
            ax.step(tp["t"], tp["goodput_mbps"], where="post", color=color_of(cc), lw=1)
            _rate_panel(ax, label_of(cc))
        axes[-1, 0].set_xlabel("time (s)")
        fig.suptitle("Fig. 1(a): goodput against available capacity (shaded), seed 1", fontsize=10)
        img_a = _save(fig, figdir, "fig1a_rates")
        fig, axes = new_figure()
        ax = axes[0, 0]
        for cc in order:
            pooled = [x for r in g[("fig1", cc)] for x in r["hol"]["samples"]]
            _cdf(ax, pooled, label_of(cc), color_of(cc))
        budget_line(ax)
        delay_axis(ax)
        ax.set_xlabel("RLC HoL delay (ms)")
        ax.set_title("Fig. 1(b): HoL delay")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        img_b = _save(fig, figdir, "fig1b_hol_cdf")
        rows = ["| scheme | utilization | HoL p50 (ms) | HoL p90 (ms) | HoL ≤ 10 ms |", "|---|---|---|---|---|"]
        for cc in order:
            rs = g[("fig1", cc)]
            u = mean_ci95([r["summary"]["ues"][0]["utilization"] for r in rs])[0]
            p50 = mean_ci95([r["hol"]["p50"] for r in rs])[0]
            p90 = mean_ci95([r["hol"]["p90"] for r in rs])[0]
            fr = mean_ci95([r["hol"]["frac_below_10"] for r in rs])[0]
            rows.append(f"| {label_of(cc)} | {_fmt(u)} | {_fmt(p50)} | {_fmt(p90)} | {_fmt(fr)} |")
        sections.append(("Fig. 1: a single flow over a time-varying channel",
                         "One UE whose distance to the base station jumps every 2 s (CQI 5 to 15), one bulk flow. "
                         "The reference line is the physical-limit oracle (`oracle`): it sends each packet to "
                         "reach the base station just before the TTI that starts sending it, in the TTIs a shadow "
                         "copy of the cell, whose UE is never short of data, serves it (`ran::shadow`): the "
                         "most the cell can carry for the UE, with the least queue its transport blocks allow. "
                         + _lasting(sum((g[("fig1", cc)] for cc in order), [])),
                         rows, [img_a, img_b]))
        if "xrc" in order:
            xr = g[("fig1", "xrc")]
            claims.add("fig1-xrc-hol", "XRC keeps the RLC HoL delay within 10 ms at least 80% of the time",
                       "80% of the time", _pct(r["hol"]["frac_below_10"] for r in xr), unit="%",
                       measure="XRC's time with HoL ≤ 10 ms", op=">=", threshold=80.0)
            claims.add("fig1-xrc-util", "XRC fully uses the available capacity",
                       "close to the maximum possible rate", _pct(r["summary"]["ues"][0]["utilization"] for r in xr),
                       unit="%", measure="XRC's share of the available capacity", op=">=", threshold=90.0)
            others = [c for c in order if c not in ("xrc", "oracle")]
            lowest = []
            for i in range(len(xr)):
                vals = [g[("fig1", c)][i]["hol"]["p90"] for c in others if i < len(g[("fig1", c)])]
                vals = [v for v in vals if v is not None]
                lowest.append(min(vals) if vals else None)
            p90x = mean_ci95([r["hol"]["p90"] for r in xr])[0]
            low = mean_ci95(lowest)[0]
            names = ", ".join(label_of(c) for c in others)
            claims.add("fig1-others-p90", "Every other scheme's p90 HoL delay is an order of magnitude above XRC's",
                       "about 400 ms at p90, ~10x XRC", lowest, unit="ms",
                       measure=f"the lowest p90 HoL delay of {names}", op=">=",
                       threshold=10 * max(p90x or 0.0, 0.1),
                       why=f"(10x XRC's p90 of {fmt_unit(p90x, 'ms')})",
                       note=(f"XRC's p90 HoL delay is {fmt_unit(p90x, 'ms')}, {fmt_unit(low / max(p90x, 0.1), 'x')} "
                             "below the lowest other scheme's." if low is not None and p90x is not None else ""))

    # ---------------- Fig. 3 and the XRC-vs-CUBIC claims ----------------
    f3 = [lab for (e, lab) in g if e == "fig3"]
    if f3:
        fig, axes = new_figure(len(f3), 1, figsize=(9, 2.6 * len(f3)), sharex=True)
        for ax, lab in zip(axes[:, 0], sorted(f3, reverse=True)):
            r = g[("fig3", lab)][0]
            tp = _tp(r)
            for k, f in enumerate(r["flows"]):
                sel = tp["flow"] == k
                ax.step(tp["t"][sel], tp["goodput_mbps"][sel], where="post", color=color_of(f["cc"]),
                        label=f"{f['id']} ({label_of(f['cc'])})")
            _rate_panel(ax, " joined by ".join(label_of(x) for x in lab.split("+")))
            ax.legend(fontsize=8, loc="upper right")
        fig.suptitle("Fig. 3: XRC joined at 5 s by a flow in congestion avoidance, seed 1", fontsize=10)
        axes[-1, 0].set_xlabel("time (s)")
        img = _save(fig, figdir, "fig3_coexistence")
        rows = ["| pair | Jain (overlap) | XRC goodput | joiner goodput | HoL p50 (ms) |", "|---|---|---|---|---|"]
        for lab in sorted(f3):
            rs = g[("fig3", lab)]
            j = mean_ci95([_jain_overlap(r) for r in rs])[0]
            gx = mean_ci95([r["summary"]["flows"][0]["goodput_mbps"] for r in rs])[0]
            gj = mean_ci95([r["summary"]["flows"][1]["goodput_mbps"] for r in rs])[0]
            h = mean_ci95([r["hol"]["p50"] for r in rs])[0]
            rows.append(f"| {lab} | {_fmt(j)} | {_fmt(gx)} | {_fmt(gj)} | {_fmt(h)} |")
        sections.append(("Fig. 3: XRC joined by Illinois or CUBIC",
                         "XRC alone, then a flow starting in congestion avoidance (ssthresh one segment) joins at 5 s. "
                         + _lasting(sum((g[("fig3", lab)] for lab in f3), [])),
                         rows, [img]))

    # ---------------- Fig. 4 ----------------
    f4 = sorted({lab for (e, lab) in g if e == "fig4"})
    if f4:
        main = [lab for lab in f4 if not lab.endswith("-same-rtt")]
        fig, axes = new_figure(len(main), 1, figsize=(9, 2.2 * len(main)), sharex=True)
        pal = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd"]
        for ax, lab in zip(axes[:, 0], ["xrc", "cubic", "newreno", "illinois"]):
            if ("fig4", lab) not in g:
                continue
            r = g[("fig4", lab)][0]
            tp = _tp(r)
            for k, f in enumerate(r["flows"]):
                sel = tp["flow"] == k
                ax.step(tp["t"][sel], tp["goodput_mbps"][sel], where="post", color=pal[k % 4], lw=1, label=f["id"])
            _rate_panel(ax, label_of(lab))
        # Outside the panels, where it hides no data.
        axes[0, 0].legend(fontsize=7, ncol=1, loc="upper left", bbox_to_anchor=(1.005, 1.0))
        fig.suptitle("Fig. 4: four flows, base RTTs 38/48/58/68 ms, seed 1", fontsize=10)
        axes[-1, 0].set_xlabel("time (s)")
        img = _save(fig, figdir, "fig4_rtt_fairness")
        # Jain's index over sliding 1 s windows among the flows alive in each.
        fig, axes = new_figure(figsize=(9, 3.2))
        ax = axes[0, 0]
        for cc in ["xrc", "cubic", "newreno", "illinois"]:
            if ("fig4", cc) not in g:
                continue
            r = g[("fig4", cc)][0]
            t, j = jain_sliding(_tp(r), [(f["start_s"], f["end_s"]) for f in r["flows"]], 1.0)
            ax.plot(t, j, color=color_of(cc), label=label_of(cc), lw=1)
        ax.set_ylim(0.4, 1.02)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("Jain's index (1 s windows)")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        img_j = _save(fig, figdir, "fig4_jain_sliding")
        rows = ["| scheme | RTTs | Jain (all four active) | HoL ≤ 10 ms |", "|---|---|---|---|"]
        jains: dict[str, list] = {}
        for lab in f4:
            rs = g[("fig4", lab)]
            js = [_jain_all_active(r) for r in rs]
            jains[lab] = js
            fr = mean_ci95([r["hol"]["frac_below_10"] for r in rs])[0]
            cc = lab.replace("-same-rtt", "")
            rows.append(f"| {label_of(cc)} | {'equal' if lab.endswith('same-rtt') else 'different'} | "
                        f"{_fmt(mean_ci95(js)[0], 4)} | {_fmt(fr)} |")
        sections.append(("Fig. 4: convergence and RTT fairness",
                         _fig4_text(sum((g[("fig4", lab)] for lab in f4), [])), rows, [img, img_j]))
        if "xrc" in jains:
            claims.add("fig4-jain-xrc", "Four XRC flows with different RTTs share the cell fairly",
                       "Jain 99.5%", _pct(jains["xrc"]), unit="%", measure="XRC's Jain", op=">=", threshold=99.0)
            xrc_j = mean_ci95(jains["xrc"])[0]
            for cc, paper in (("cubic", 85.71), ("newreno", 86.74)):
                if cc in jains:
                    # The paper's point is a clear gap: the baseline must be
                    # nearer its unfair value than XRC's fair one, not merely
                    # a little below whatever XRC reached.
                    mid = (paper + PAPER_FIG4_XRC_JAIN) / 2
                    name = label_of(cc)
                    claims.add(f"fig4-jain-{cc}", f"{name} flows with different RTTs are clearly less fair than XRC's",
                               f"Jain {paper}% (XRC {PAPER_FIG4_XRC_JAIN}%)", _pct(jains[cc]), unit="%",
                               measure=f"{name}'s Jain", op="<=", threshold=mid,
                               why=f"(midway between the paper's {name} at {paper}% and its XRC at "
                                   f"{PAPER_FIG4_XRC_JAIN}%)",
                               note="" if xrc_j is None else f"XRC's Jain in the same setting: {fmt_unit(100 * xrc_j, '%')}.")
            claims.add("fig4-xrc-hol", "XRC keeps HoL within 10 ms while four flows converge",
                       "99% of the time", _pct(r["hol"]["frac_below_10"] for r in g[("fig4", "xrc")]), unit="%",
                       measure="XRC's time with HoL ≤ 10 ms", op=">=", threshold=97.0)

    # ---------------- Fig. 5 ----------------
    f5 = sorted({lab for (e, lab) in g if e == "fig5"})
    if f5:
        seconds = ["cubic", "newreno", "illinois", "veno"]
        firsts = ["xrc", "cubic"]
        fig, axes = new_figure(len(seconds), len(firsts), figsize=(11, 2.2 * len(seconds)), sharex=True)
        for j, a in enumerate(firsts):
            for i, b in enumerate(seconds):
                ax = axes[i, j]
                if ("fig5", f"{a}+{b}") not in g:
                    ax.axis("off")
                    continue
                r = g[("fig5", f"{a}+{b}")][0]
                tp = _tp(r)
                for k, f in enumerate(r["flows"]):
                    sel = tp["flow"] == k
                    ax.step(tp["t"][sel], tp["goodput_mbps"][sel], where="post",
                            color=["#d62728", "#1f77b4"][k], lw=1,
                            label=f"{label_of(f['cc'])} ({['first', 'second'][k]})")
                _rate_panel(ax, f"{label_of(a)} then {label_of(b)}")
                ax.legend(fontsize=7, loc="upper right")
        for ax in axes[-1, :]:
            ax.set_xlabel("time (s)")
        fig.suptitle("Fig. 5: goodput of capacity-seeking pairs, seed 1", fontsize=10)
        img = _save(fig, figdir, "fig5_pairs")
        fig, axes = new_figure()
        ax = axes[0, 0]
        for a, style in (("xrc", "-"), ("cubic", "--")):
            pooled = [x for b in seconds if ("fig5", f"{a}+{b}") in g for r in g[("fig5", f"{a}+{b}")]
                      for x in r["hol"]["samples"]]
            cdf(ax, pooled, ls=style, color=color_of(a), label=f"first flow {label_of(a)}")
        budget_line(ax)
        delay_axis(ax)
        ax.set_xlabel("RLC HoL delay (ms)")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        img2 = _save(fig, figdir, "fig5h_hol_cdf")
        rows = ["| pair | Jain (overlap) | HoL p50 / p90 (ms) | HoL ≤ 10 ms |", "|---|---|---|---|"]
        for lab in f5:
            rs = g[("fig5", lab)]
            j = mean_ci95([_jain_overlap(r) for r in rs])[0]
            p50 = mean_ci95([r["hol"]["p50"] for r in rs])[0]
            p90 = mean_ci95([r["hol"]["p90"] for r in rs])[0]
            fr = mean_ci95([r["hol"]["frac_below_10"] for r in rs])[0]
            rows.append(f"| {lab} | {_fmt(j, 4)} | {_fmt(p50)} / {_fmt(p90)} | {_fmt(fr)} |")
        sections.append(("Fig. 5: capacity-seeking pairs",
                         "The first flow starts at 0.5 s, the second at 5.5 s. "
                         + _lasting(sum((g[("fig5", lab)] for lab in f5), [])), rows, [img, img2]))
        xrc_pairs = [f"xrc+{b}" for b in seconds if ("fig5", f"xrc+{b}") in g]
        if xrc_pairs:
            claims.add("fig5-xrc-hol", "XRC keeps HoL within its 10 ms budget against every partner",
                       "about 70% of the time",
                       _pct(np.mean([g[("fig5", p)][i]["hol"]["frac_below_10"] for p in xrc_pairs])
                            for i in range(len(g[("fig5", xrc_pairs[0])]))),
                       unit="%", measure="XRC's time with HoL ≤ 10 ms, mean over its pairs", op=">=", threshold=60.0)
            red = []
            for i in range(len(g[("fig5", xrc_pairs[0])])):
                worst = 1.0
                for b in seconds:
                    if ("fig5", f"xrc+{b}") in g and ("fig5", f"cubic+{b}") in g:
                        rx, rc = g[("fig5", f"xrc+{b}")][i], g[("fig5", f"cubic+{b}")][i]
                        for q in ("p50", "p90"):
                            c = rc["hol"][q] or 0
                            if c > 0:
                                worst = min(worst, 1 - (rx["hol"][q] or 0) / c)
                red.append(worst)
            claims.add("fig5-hol-reduction", "XRC cuts p50 and p90 HoL delay by more than half against CUBIC, "
                       "with every partner", "> 50% lower", _pct(red), unit="%",
                       measure="the smallest reduction against CUBIC first, over partners and p50/p90", op=">",
                       threshold=50.0, bounds=(-math.inf, 100.0))
            claims.add("fig5-xrc-fair", "XRC shares capacity equally with every partner", "equal shares",
                       _pct(min(_jain_overlap(g[("fig5", p)][i]) or 0 for p in xrc_pairs)
                            for i in range(len(g[("fig5", xrc_pairs[0])]))),
                       unit="%", measure="the lowest Jain over XRC's pairs", op=">=", threshold=95.0)
        # The abstract's claims, from Fig. 3(b) and Fig. 5: XRC vs CUBIC.
        # One value per seed (the mean of the two setups): the setups are
        # not samples of one measure, and the interval is over seeds.
        by_seed: dict[int, list[float]] = defaultdict(list)
        for r in g.get(("fig5", "xrc+cubic"), []) + g.get(("fig3", "xrc+cubic"), []):
            j = _jain_overlap(r)
            if j is not None:
                by_seed[r["point"]["seed"]].append(j)
        if by_seed:
            claims.add("xrc-cubic-jain", "When competing with CUBIC at a wireless bottleneck XRC is fair",
                       "Jain 99.7%", _pct(float(np.mean(by_seed[k])) for k in sorted(by_seed)), unit="%",
                       measure="XRC+CUBIC's Jain, per seed the mean of Fig. 3(b) and Fig. 5", op=">=", threshold=99.0)
        if ("fig5", "cubic+cubic") in g and ("fig5", "xrc+cubic") in g:
            ratios = [(c["hol"]["p50"] or 0) / max(x["hol"]["p50"] or 0, 1e-3)
                      for x, c in zip(g[("fig5", "xrc+cubic")], g[("fig5", "cubic+cubic")])]
            claims.add("xrc-cubic-qdelay", "XRC vs CUBIC has a lower median queuing delay than CUBIC vs CUBIC",
                       "3x lower", ratios, unit="x", measure="median HoL delay of CUBIC+CUBIC / of XRC+CUBIC",
                       op=">=", threshold=2.4, why="(80% of the paper's factor)")

    # ---------------- Fig. 6 ----------------
    f6 = [c for c in ["xrc", "cubic", "newreno", "illinois", "veno"] if ("fig6", c) in g]
    if f6:
        fig, axes = new_figure(len(f6), 1, figsize=(9, 1.9 * len(f6)), sharex=True)
        for ax, cc in zip(axes[:, 0], f6):
            r = g[("fig6", cc)][0]
            tp = _tp(r)
            for k, colr, what in ((0, "#d62728", "download"), (1, "#2ca02c", "CUBIC video")):
                sel = tp["flow"] == k
                ax.step(tp["t"][sel], tp["goodput_mbps"][sel], where="post", color=colr, lw=1, label=what)
            _rate_panel(ax, f"{label_of(cc)} download")
        axes[0, 0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.005, 1.0))
        fig.suptitle("Fig. 6: a download of each scheme against CUBIC video, seed 1", fontsize=10)
        axes[-1, 0].set_xlabel("time (s)")
        img = _save(fig, figdir, "fig6_video")
        fig, axes = new_figure()
        ax = axes[0, 0]
        for cc in f6:
            pooled = [x for r in g[("fig6", cc)] for x in r["qdelay"].get("0", r["qdelay"].get(0, {})).get("samples", [])]
            _cdf(ax, pooled, label_of(cc), color_of(cc))
        budget_line(ax)
        delay_axis(ax)
        ax.set_xlabel("end-to-end queuing delay of the download (ms)")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        img2 = _save(fig, figdir, "fig6e_queuing_cdf")
        rows = ["| download | video chunk delivery p50 / max (s) | download queuing ≤ 10 ms | mean queuing (ms) |",
                "|---|---|---|---|"]
        for cc in f6:
            rs = g[("fig6", cc)]
            ch = [x for r in rs for x in r["chunks"] if not math.isnan(x)]
            q = [_qd(r, 0) for r in rs]
            rows.append(f"| {label_of(cc)} | {_fmt(np.median(ch) if ch else None)} / {_fmt(max(ch) if ch else None)} | "
                        f"{_fmt(mean_ci95([x['frac_below_10'] for x in q if x])[0])} | "
                        f"{_fmt(mean_ci95([x['mean'] for x in q if x])[0])} |")
        sections.append(("Fig. 6: a download against CUBIC video",
                         "Every 10 s the video sends a 2 s chunk at 17 Mbit/s; the next chunk waits for the previous "
                         "one's delivery. " + _lasting(sum((g[("fig6", cc)] for cc in f6), [])), rows, [img, img2]))
        if "xrc" in f6:
            xr = g[("fig6", "xrc")]
            claims.add("fig6-chunk", "With an XRC download the video chunk is delivered in time", "within 2 s",
                       [max([x for x in r["chunks"] if not math.isnan(x)] or [math.inf]) for r in xr], unit="s",
                       measure="the slowest chunk's delivery", op="<=", threshold=2.2,
                       why="(a 2 s chunk cannot arrive sooner than 2 s)")
            claims.add("fig6-queuing", "XRC keeps the end-to-end queuing delay below its 10 ms budget",
                       "99% of the time", _pct((_qd(r, 0) or {}).get("frac_below_10") for r in xr), unit="%",
                       measure="the download's time with queuing delay ≤ 10 ms", op=">=", threshold=97.0,
                       note="queuing delay: the download's RTT minus its minimum.")
            others = [c for c in f6 if c != "xrc"]
            ratios = []
            for i, r in enumerate(xr):
                mx = max((_qd(r, 0) or {}).get("mean") or 0.0, 1e-3)
                vals = [(_qd(g[("fig6", c)][i], 0) or {}).get("mean") for c in others if i < len(g[("fig6", c)])]
                vals = [v for v in vals if v is not None]
                if vals:
                    ratios.append(min(vals) / mx)
            claims.add("fig6-queuing-ratio", "Other schemes' end-to-end queuing delay is several times XRC's",
                       "almost 4x lower", ratios, unit="x",
                       measure="the smallest ratio of mean queuing delays, other scheme / XRC", op=">=",
                       threshold=3.2, why="(80% of the paper's factor)")

    # ---------------- Fig. 7 ----------------
    f7 = [c for c in ["xrc", "cubic", "newreno", "illinois", "veno", "xrc/xrc-short"] if ("fig7", c) in g]
    if f7:
        fig, grid = new_figure(1, 2, figsize=(11, 4))
        axes = grid[0]
        for cc in f7:
            pooled = [f["fct_s"] for r in g[("fig7", cc)] for f in r["flows"][1:] if f["fct_s"] is not None]
            base = cc.split("/")[0]
            style = XRC_SHORTS_STYLE if "/" in cc else {"color": color_of(base)}
            label = f"{label_of(base)} bulk, " + ("XRC shorts" if "/" in cc else "NewReno shorts")
            cdf(axes[0], pooled, label=label, **style)
            hol = [x for r in g[("fig7", cc)] for x in r["hol"]["samples"]]
            cdf(axes[1], hol, label=label, **style)
        log_axis(axes[0])
        axes[0].set_xlabel("short-flow completion time (s)")
        budget_line(axes[1])
        delay_axis(axes[1])
        axes[1].set_xlabel("RLC HoL delay (ms)")
        for ax in axes:
            ax.grid(alpha=0.3)
        # One legend for both panels, below them, where it hides no line.
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=3, fontsize=8)
        axes[0].set_title("Fig. 7(a): FCT of 10 KB-2 MB flows")
        axes[1].set_title("Fig. 7(b): HoL delay")
        img = _save(fig, figdir, "fig7_short_flows")
        rows = ["| bulk flow | short flows | FCT p50 / p90 / max (s) | completed |", "|---|---|---|---|"]
        fct = {}
        for cc in f7:
            rs = g[("fig7", cc)]
            per_seed = [[f["fct_s"] for f in r["flows"][1:] if f["fct_s"] is not None] for r in rs]
            fct[cc] = per_seed
            pooled = [x for s in per_seed for x in s]
            n = sum(len(r["flows"]) - 1 for r in rs)
            rows.append(f"| {label_of(cc.split('/')[0])} | {'XRC' if '/' in cc else 'NewReno'} | "
                        f"{_fmt(np.percentile(pooled, 50) if pooled else None)} / "
                        f"{_fmt(np.percentile(pooled, 90) if pooled else None)} / {_fmt(max(pooled) if pooled else None)}"
                        f" | {len(pooled)}/{n} |")
        sections.append(("Fig. 7: a bulk flow against short flows",
                         _fig7_text(sum((g[("fig7", cc)] for cc in f7), [])), rows, [img]))
        if "xrc" in fct:
            others = [c for c in ["cubic", "newreno", "illinois", "veno"] if c in fct]
            red = []
            for i, xs in enumerate(fct["xrc"]):
                worst = 1.0
                for c in others:
                    ys = fct[c][i] if i < len(fct[c]) else []
                    if xs and ys:
                        for q in (50, 90):
                            worst = min(worst, 1 - np.percentile(xs, q) / np.percentile(ys, q))
                red.append(worst)
            claims.add("fig7-fct", "With an XRC bulk flow, short flows finish sooner than with any other bulk scheme",
                       "50% lower FCT at p50 and p90", _pct(red), unit="%",
                       measure="the smallest FCT reduction, over bulk schemes and p50/p90", op=">=", threshold=40.0,
                       bounds=(-math.inf, 100.0))
            for c, paper, thr in (("cubic", "3x lower than CUBIC", 2.4), ("illinois", "1.4x lower than Illinois", 1.12)):
                if c in fct:
                    ratios = [max(ys) / max(max(xs), 1e-6) for xs, ys in zip(fct["xrc"], fct[c]) if xs and ys]
                    claims.add(f"fig7-maxfct-{c}", f"With an XRC bulk flow the slowest short flow beats {label_of(c)}'s",
                               f"maximum FCT {paper}", ratios, unit="x",
                               measure=f"maximum FCT with {label_of(c)} / with XRC", op=">=", threshold=thr,
                               why="(80% of the paper's factor)")

    # ---------------- Trace study ----------------
    tr = defaultdict(dict)
    for (e, lab), rs in g.items():
        if e == "traces":
            trace, cc = lab.split("/", 1)
            r = rs[0]
            f = r["summary"]["flows"][0]
            q = _qd(r, 0) or {}
            tr[trace][cc] = {"tput": f["goodput_mbps"], "qmean": q.get("mean"), "q95": q.get("p95")}
    if tr:
        schemes = sorted({cc for d in tr.values() for cc in d})
        norm = defaultdict(lambda: defaultdict(list))
        for trace, d in tr.items():
            best_t = max(v["tput"] for v in d.values()) or 1.0
            for cc, v in d.items():
                qm = max(v["qmean"] or 0.0, 0.1)
                q95 = max(v["q95"] or 0.0, 0.1)
                norm[cc]["tput"].append(v["tput"] / best_t)
                norm[cc]["power"].append(v["tput"] / qm)
                norm[cc]["power95"].append(v["tput"] / q95)
                norm[cc]["q95"].append(v["q95"] or 0.0)
        for key in ("power", "power95"):
            for trace, d in tr.items():
                pass
        # Normalise power per trace to the best scheme.
        for key in ("power", "power95"):
            per_trace = defaultdict(dict)
            for trace, d in tr.items():
                vals = {cc: d[cc]["tput"] / max((d[cc]["qmean"] if key == "power" else d[cc]["q95"]) or 0.0, 0.1)
                        for cc in d}
                best = max(vals.values()) or 1.0
                for cc, v in vals.items():
                    per_trace[cc][trace] = v / best
            for cc in per_trace:
                norm[cc][key] = list(per_trace[cc].values())
        fig, axes = new_figure(figsize=(8, 5))
        ax = axes[0, 0]
        # Points of similar schemes sit on top of one another: a legend
        # names them instead of labels that would overlap.
        markers = "osD^vP*Xhp<>8dH"
        for i, cc in enumerate(schemes):
            xs = [max(tr[t][cc]["q95"] or 0, 0.1) for t in tr if cc in tr[t]]
            ys = [tr[t][cc]["tput"] for t in tr if cc in tr[t]]
            ax.scatter([np.mean(xs)], [np.mean(ys)], color=color_of(cc), s=45, marker=markers[i % len(markers)],
                       label=label_of(cc), edgecolors="white", linewidths=0.5)
        log_axis(ax)
        ax.invert_xaxis()
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.set_xlabel("95th percentile queuing delay (ms, mean over traces)")
        ax.set_ylabel("throughput (Mbit/s, mean over traces)")
        ax.set_title(f"Trace study over {len(tr)} traces")
        ax.grid(alpha=0.3)
        img = _save(fig, figdir, "traces_scatter")
        rows = ["| scheme | throughput / best | power / best | power95 / best | p95 queuing (ms) |",
                "|---|---|---|---|---|"]
        for cc in sorted(schemes, key=lambda c: -np.mean(norm[c]["power"])):
            rows.append(f"| {label_of(cc)} | {_fmt(np.mean(norm[cc]['tput']))} | {_fmt(np.mean(norm[cc]['power']))} | "
                        f"{_fmt(np.mean(norm[cc]['power95']))} | {_fmt(np.mean(norm[cc]['q95']))} |")
        src = (meta.get("traces") or {}).get("source")
        where = ("the traces bundled with xrc" if src == "bundled" else f"the traces in {src}") if src else "traces"
        sections.append(("Trace study (NATCP-style)",
                         f"Every scheme alone on every downlink trace of {where} ({', '.join(sorted(tr))}); "
                         "10 ms base RTT, "
                         "150 KB per-user buffer; per trace each metric is divided by the best scheme's, then "
                         "averaged over traces. Power = throughput / queuing delay (mean or p95). "
                         + _trace_length([rs[0] for (e, _), rs in g.items() if e == "traces"]), rows, [img]))

    meta["figure_problems"] = list(_PROBLEMS)
    for v, items in (variants or {}).items():
        theirs = {c["id"]: c for c in items}
        for c in claims.items:
            o = theirs.get(c["id"])
            c[v] = None if o is None else {k: o[k] for k in VARIANT_KEYS}
    sections.append(_provenance(meta))
    _write_md(out, meta, claims.items, sections)
    _write_html(out, meta, claims.items, sections)
    return claims.items


def _provenance(meta: dict[str, Any]) -> tuple[str, str, list[str], list[str]]:
    """What produced the report: versions, commit and every input's hash."""
    commit = meta.get("git_commit") or "unknown (not run from an xrc checkout)"
    tr = meta.get("traces") or {}
    src = tr.get("source")
    text = (f"xrc {meta.get('xrc_version', '?')}, core {meta.get('core_version', '?')}, git commit {commit}. "
            f"Trace study traces: {'bundled with xrc' if src == 'bundled' else src} "
            f"({len(tr.get('files', []))} file(s)). Every input file and its SHA-256 (also in metadata.json):")
    rows = ["| file | bytes | SHA-256 |", "|---|---|---|"]
    for path, info in sorted((meta.get("inputs") or {}).items()):
        rows.append(f"| {_short_path(path)} | {info['bytes']} | {info['sha256']} |")
    return ("Provenance", text, rows, [])


def _short_path(path: str) -> str:
    """A bundled file by its name inside the package; others as given."""
    from .. import bundled

    try:
        return "xrc/scenarios/" + str(Path(path).relative_to(bundled.scenarios_dir()))
    except ValueError:
        return path


def _pct(fractions) -> list[float | None]:
    """Fractions as percentages, the paper's unit for them."""
    return [None if f is None else 100.0 * f for f in fractions]


def _overrides(r) -> dict[str, str]:
    """A run's ``--set`` overrides, by path."""
    return dict(o.split("=", 1) for o in r["point"].get("overrides", []) if "=" in o)


def _s(x: float) -> str:
    return f"{x:g} s"


def _duration(r) -> float:
    """How long a run was simulated: its `duration_s` override, or what it ran."""
    d = _overrides(r).get("duration_s")
    return float(d) if d is not None else float(r["sim_s"])


def _lasting(rs) -> str:
    """The runs' length and seeds, as they ran (the quick runs are shorter)."""
    if not rs:
        return ""
    ds = sorted({_duration(r) for r in rs})
    n = len({r["point"]["seed"] for r in rs})
    length = f"{_s(ds[0])}" if len(ds) == 1 else f"{ds[0]:g}-{_s(ds[-1])}"
    return f"Each run lasts {length}; {n} seed{'s' if n != 1 else ''}."


def _fig4_text(rs) -> str:
    """Fig. 4's arrivals and departures as its runs set them."""
    ov = _overrides(rs[0])
    r0 = rs[0]["flows"]
    try:
        starts = [float(ov[f"flows.{k}.start_s"]) for k in range(len(r0))]
        stops = [float(ov[f"flows.{k}.stop_s"]) for k in range(len(r0))]
    except KeyError:
        # Not set by the run: the flows' own times, without the start jitter.
        starts = [round(f["start_s"], 1) for f in r0]
        stops = [round(f["end_s"], 1) for f in r0]
    gap_in = starts[1] - starts[0] if len(starts) > 1 else 0.0
    gap_out = stops[1] - stops[0] if len(stops) > 1 else 0.0
    return (f"{len(r0)} flows of one scheme arrive {_s(gap_in)} apart and leave {_s(gap_out)} apart from "
            f"{_s(stops[0])}; Jain's index over the interval when all are active, and over sliding 1 s windows. "
            + _lasting(rs))


def _fig7_text(rs) -> str:
    """Fig. 7's short flows as its runs had them."""
    r = rs[0]
    n = (r["point"].get("gen") or {}).get("short_flows") or len(r["flows"]) - 1
    starts = [f["start_s"] for f in r["flows"][1:]]
    every = round(float(np.median(np.diff(starts))), 1) if len(starts) > 1 else None
    when = f", one every {_s(every)}" if every else ""
    return (f"{n} short NewReno flows of 10 KB-2 MB (uniform){when}, against a bulk flow of each scheme; "
            "and XRC short flows with an XRC bulk flow. " + _lasting(rs))


def _trace_length(rs) -> str:
    """Whether the trace runs covered whole traces or their beginning."""
    if not rs:
        return ""
    if all((r["point"].get("gen") or {}).get("full_trace") for r in rs):
        return "Each run covers its whole trace once."
    return f"Each run covers the first {_s(min(_duration(r) for r in rs))} of its trace."


def _qd(r, k):
    q = r["qdelay"]
    return q.get(k) or q.get(str(k))


def _jain_overlap(r) -> float | None:
    fs = r["flows"]
    start = max(f["start_s"] for f in fs)
    end = min(f["end_s"] for f in fs)
    return jain_over(_tp(r), list(range(len(fs))), start, end)


def _jain_all_active(r) -> float | None:
    return _jain_overlap(r)


#: What a claim keeps of another XRC's numbers, under that XRC's name.
VARIANT_KEYS = ("ours", "ci95", "interval", "criterion", "verdict", "holds")

_OWN_KEYS = {"id", "claim", "paper", "ours", "unit", "ci95", "interval", "criterion", "verdict", "holds", "seeds",
             "note"}


def _variant_names(items) -> list[str]:
    """The variants whose numbers the claims carry (keys beyond a claim's own)."""
    return sorted({k for c in items for k in c if k not in _OWN_KEYS})


def _interval_text(o: dict[str, Any], unit: str, seeds: int) -> str:
    """The 95% interval in the claim's unit, cut to the values it can take."""
    if o.get("interval") is None:
        return "one seed" if seeds == 1 else "–"
    lo, hi = o["interval"]
    return f"{fmt_unit(lo, unit)} to {fmt_unit(hi, unit)}"


def _verdict_text(v: str) -> str:
    return {"holds": "holds", "fails": "**fails**", "inconclusive": "*inconclusive*"}.get(v, v)


def _number_cells(o: dict[str, Any] | None, unit: str, seeds: int) -> list[str]:
    if not o:
        return ["–", "–", "–"]
    return [fmt_unit(o["ours"], unit), _interval_text(o, unit, seeds), _verdict_text(o["verdict"])]


def _claim_table(items) -> tuple[list[str], list[list[str]]]:
    """The claims table: its header and, per claim, its cells in Markdown."""
    vs = _variant_names(items)
    head = ["id", "claim", "paper", "criterion", "ours (xrc)", "95% CI", "verdict"]
    for v in vs:
        head += [f"ours ({v})", "95% CI", "verdict"]
    rows = []
    for c in items:
        cells = [f"`{c['id']}`", c["claim"], c["paper"], c["criterion"]] + _number_cells(c, c["unit"], c["seeds"])
        for v in vs:
            cells += _number_cells(c.get(v), c["unit"], c["seeds"])
        rows.append(cells)
    return head, rows


def _claim_notes(items) -> list[str]:
    """Per claim, its note and any variant judged by a different criterion."""
    vs = _variant_names(items)
    out = []
    for c in items:
        text = [c["note"]] if c["note"] else []
        for v in vs:
            o = c.get(v)
            if o and o.get("criterion") and o["criterion"] != c["criterion"]:
                text.append(f"`{v}` is judged by: {o['criterion']}.")
        if text:
            out.append(f"`{c['id']}`: " + " ".join(text))
    return out


def _claims_md(items) -> list[str]:
    head, rows = _claim_table(items)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    notes = [f"- {n}" for n in _claim_notes(items)]
    return lines + ([""] + notes if notes else [])


def _counts(items, key: str | None = None) -> str:
    """How many claims hold, fail, are inconclusive (of `key`'s numbers)."""
    vs = [(c if key is None else c.get(key) or {}).get("verdict") for c in items]
    words = {"fails": "fail", "inconclusive": "inconclusive", "no data": "without data"}
    return ", ".join([f"{vs.count('holds')} of {len(items)} claims hold"]
                     + [f"{vs.count(v)} {w}" for v, w in words.items() if vs.count(v)])


def _how_judged(items) -> list[str]:
    seeds = max((c["seeds"] for c in items), default=0)
    text = ("Each number is in the paper's unit. A claim holds if its criterion, stated in words beside it, is met "
            "over the whole 95% confidence interval of the mean over seeds (Student t, cut to the values the "
            "measure can take); it fails if no part of the interval meets it, and is inconclusive if the interval "
            "reaches both sides (more seeds may decide).")
    if seeds <= 1:
        text += " These runs have one seed each: no interval, so each verdict rests on a single run."
    return [text, ""]


def _variants_text(items) -> list[str]:
    vs = _variant_names(items)
    if not vs:
        return []
    return [f"`ours (xrc)` is the paper's algorithm as published ({_counts(items)}); "
            + "; ".join(f"`ours ({v})` the same experiments with the XRC flows running `{v}` ({_counts(items, v)})"
                        for v in vs)
            + ". The figures and sections below are `xrc`'s.", ""]


def _write_md(out: Path, meta, items, sections) -> None:
    lines = ["# XRC paper reproduction", "",
             f"{meta['runs']} runs, seeds {meta['seeds']}, {meta['sim_seconds']:.0f} simulated seconds, "
             f"{meta['events']} events, {meta['wall_time_s']:.1f} s of wall time on {meta['jobs']} worker(s) "
             f"({'quick' if meta['quick'] else 'full'} mode; core {meta['core_version']}).", "",
             "## The paper's claims", ""] + _how_judged(items) + _variants_text(items) + _claims_md(items) + [""]
    for title, text, rows, imgs in sections:
        lines += [f"## {title}", "", text, ""] + rows + [""] + [f"![{title}]({i})" for i in imgs] + [""]
    (out / "report.md").write_text("\n".join(lines) + "\n")


def _inline_html(text: str) -> str:
    """The inline Markdown the report writes (`code`, **bold**, *emphasis*)
    as HTML, everything else escaped: code spans first, their contents
    verbatim; emphasis only outside them."""
    parts = re.split(r"`([^`]+)`", text)
    out = []
    for i, part in enumerate(parts):
        esc = html.escape(part)
        if i % 2:
            out.append(f"<code>{esc}</code>")
        else:
            esc = re.sub(r"\*\*(\S(?:.*?\S)?)\*\*", r"<strong>\1</strong>", esc)
            esc = re.sub(r"(?<![\w*])\*(\S(?:[^*]*?\S)?)\*(?![\w*])", r"<em>\1</em>", esc)
            out.append(esc)
    return "".join(out)


def _md_table_to_html(rows: list[str]) -> str:
    if not rows:
        return ""
    out = ["<table>"]
    for i, r in enumerate(rows):
        if i == 1 and set(r.replace("|", "").strip()) <= set("-: "):
            continue
        cells = [c.strip() for c in r.strip().strip("|").split("|")]
        tag = "th" if i == 0 else "td"
        out.append("<tr>" + "".join(f"<{tag}>{_inline_html(c)}</{tag}>" for c in cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _write_html(out: Path, meta, items, sections) -> None:
    def img(path):
        data = base64.b64encode((out / path).read_bytes()).decode()
        return f'<img src="data:image/png;base64,{data}" style="max-width:100%">'

    head, rows = _claim_table(items)
    colour = {"holds": "#e6f4ea", "fails": "#fce8e6", "inconclusive": "#fff4d6"}
    claim_rows = ["<table><tr>" + "".join(f"<th>{_inline_html(h)}</th>" for h in head) + "</tr>"]
    for c, cells in zip(items, rows):
        claim_rows.append(f'<tr style="background:{colour.get(c["verdict"], "#eeeeee")}">'
                          + "".join(f"<td>{_inline_html(x)}</td>" for x in cells) + "</tr>")
    claim_rows.append("</table>")
    notes = "".join(f"<li>{_inline_html(n)}</li>" for n in _claim_notes(items))
    body = [f"<h1>XRC paper reproduction</h1><p>{meta['runs']} runs, seeds {meta['seeds']}, "
            f"{meta['sim_seconds']:.0f} simulated seconds, {meta['events']} events, {meta['wall_time_s']:.1f} s of "
            f"wall time on {meta['jobs']} worker(s) ({'quick' if meta['quick'] else 'full'} mode).</p>",
            "<h2>The paper's claims</h2>",
            "".join(f"<p>{_inline_html(t)}</p>" for t in _how_judged(items) + _variants_text(items) if t),
            "\n".join(claim_rows), f"<ul>{notes}</ul>"]
    for title, text, rows, imgs in sections:
        body.append(f"<h2>{html.escape(title)}</h2><p>{_inline_html(text)}</p>")
        body.append(_md_table_to_html(rows))
        body += [img(i) for i in imgs]
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;line-height:1.4}"
             "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;font-size:90%}")
    (out / "report.html").write_text(f"<!doctype html><html><head><meta charset='utf-8'><title>XRC reproduction</title>"
                                     f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n")
