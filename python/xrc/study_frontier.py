"""``xrc study frontier``: is there a scheme that gets both more goodput
and less delay than XRC on my link?

Every scheme alone on every trace given (``--traces DIR``, default the
bundled one), at each base RTT and buffer (default 10 and 50 ms; 150 kB
and 1 MB: the bundled trace scenario ``traces/synthetic-xrc`` with its
Internet delay and queue set), and ``xrc2`` over its operating-point knob,
its queuing budget ``budget_ms`` (λ: the HoL its pacing aims at is
``queue_target`` × λ, its window's room for a queue ``window_budgets`` ×
λ, its reset threshold λ; the paper's 10 ms by default). Per run: goodput,
and the mean and 95th-percentile queuing delay of the packets at the
trace's queue.

A point dominates another if it has at least its goodput and at most its
mean queuing delay, and is better in one. The report says, for each link
(trace, RTT, buffer):

- which schemes dominate ``xrc2`` at its default (``budget_ms`` 10);
- for each scheme, whether ``xrc2``'s curve covers it: some setting with at
  least its goodput and at most its mean queuing delay;
- the physical-limit oracle (``oracle``), the bound: no point should
  dominate it.

Traces fall into a tuning and a held-out half: those named
``*-tune-*``/``*-holdout-*`` (``xrc trace synth``) by name, any other by
the parity of its place in the sorted list (odd: held out). The report
counts each half on its own; a change judged on this study is kept only if
it helps the held-out half.

Writes ``report.md``, ``runs.json`` and ``frontier.parquet`` (one row per
run), ``links.json`` (the verdict per link) and one
figure per link (goodput against mean queuing delay, ``xrc2``'s curve as a
line) into ``--out``. The same question on two cellular links: Fig. 1's
cell under the simulator's default LTE timing (``fig1-lte``) and that cell
with four UEs sharing it under proportional fairness, each with one flow
of the scheme (``cell4-pf``; its goodput is the cell's total, its delay
every packet's at the RLC buffers; no oracle there: the physical-limit
oracle needs its UE to be the only one with flows).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from . import bundled
from .parallel import map_parallel
from .runner import simulate
from .scenario import ScenarioError, load
from .study_nr import study_out, write_files

#: xrc2's operating-point knob and the settings of its curve.
KNOB = "budget_ms"
SETTINGS = (2.5, 5.0, 10.0, 20.0, 40.0, 80.0)
DEFAULT_SETTING = 10.0
RTTS_MS = (10.0, 50.0)
BUFFERS_BYTES = (150_000, 1_000_000)
#: Every scheme of `xrc list` but xrc2 (its curve) and oracle-rate (it
#: reads a cell's ground truth); the physical-limit oracle is the bound.
SCHEMES = ("newreno", "cubic", "illinois", "veno", "vegas", "copa", "abc", "pbe", "natcp", "nacubic", "bbr",
           "bbr3", "roccet", "xrc", "oracle")
TEMPLATE = "traces/synthetic-xrc"
TITLE = "# The throughput-delay frontier: every scheme alone on each link, and xrc2 over its knob"


def halves(traces: list[Path]) -> dict[str, str]:
    """Each trace's half ("tune" or "holdout"), by name or by its place."""
    out = {}
    for i, t in enumerate(sorted(traces)):
        n = t.name
        out[n] = "holdout" if "holdout" in n else "tune" if "-tune-" in n else ("holdout" if i % 2 else "tune")
    return out


#: The simulator's default LTE timing (BLER 0.1, an SR every 10 ms, 3 ms to
#: the grant, 4 ms after a buffer report), as `docs/reproduction.md`'s
#: `fig1-lte`.
LTE_TIMING = ("cell.harq.bler=0.1", "cell.uplink.sr_period_ms=10", "cell.uplink.sr_grant_delay_ms=3",
              "cell.uplink.bsr_grant_delay_ms=4")
#: The cellular links: Fig. 1's cell under LTE timing, and the same cell
#: with four UEs (each its own random-jump channel, one flow each, all of
#: the scheme under test) sharing it under proportional fairness. Their
#: RTT is Fig. 1's (30 ms wired); their buffer the RLC's 128 packets.
CELLS = ("fig1-lte", "cell4-pf")
CELL_RTT_MS = 30.0
CELL_BUFFER_BYTES = 128 * 1500


def _cell_overrides(cell: str, cc: str, setting: float | None) -> list[str]:
    n = 4 if cell == "cell4-pf" else 1
    out = list(LTE_TIMING)
    if n > 1:
        ue = "{kind = \"distance\", pathloss = {model = \"urban_macro\"}, tx_power_dbm = 46.0, " \
             "noise_figure_db = 9.0, trajectory = {kind = \"random_jumps\", interval_s = 2.0, min_m = 300.0, " \
             "max_m = 1500.0}}"
        out.append("ues=[" + ", ".join(f"{{channel = {ue}}}" for _ in range(n)) + "]")
        out.append("flows=[" + ", ".join(f"{{id = \"f{k}\", ue = {k}, cc = \"{cc}\", start_s = 0.0}}"
                                         for k in range(n)) + "]")
    else:
        out.append(f"flows.0.cc={cc}")
    if setting is not None:
        out += [f"flows.{k}.cc_params.{KNOB}={setting}" for k in range(n)]
    return out


def run_one(trace: str, rtt_ms: float, buffer: int, cc: str, setting: float | None, duration_s: float) -> dict:
    if trace in CELLS:
        overrides = [*_cell_overrides(trace, cc, setting), f"duration_s={duration_s}"]
        sc = load(bundled.scenario("paper/fig1-time-varying"), overrides=overrides, seed=1)
    else:
        overrides = [f"flows.0.cc={cc}", f"trace.downlink={trace}", f"trace.buffer_bytes={buffer}",
                     f"internet.delay_ms={rtt_ms / 2}", f"duration_s={duration_s}"]
        if setting is not None:
            overrides.append(f"flows.0.cc_params.{KNOB}={setting}")
        sc = load(bundled.scenario(TEMPLATE), overrides=overrides, seed=1)
    r = simulate(sc)
    t = r["tables"]
    fl = t["flows"]
    q = np.asarray(t["queue_delay"]["delay_ms"], dtype=float)
    # Goodput: every flow's delivered payload over the run (one flow but in
    # the 4-UE cell, where it is the cell's total).
    return {"trace": Path(trace).name, "rtt_ms": rtt_ms, "buffer_bytes": buffer, "cc": cc,
            "setting": setting, "goodput_mbps": float(np.sum(fl["bytes_delivered"])) * 8 / duration_s / 1e6,
            "qdelay_mean_ms": float(q.mean()) if q.size else float("nan"),
            "qdelay_p95_ms": float(np.percentile(q, 95)) if q.size else float("nan"),
            "events": r["events"], "wall_s": r["wall_time_s"]}


def _run(a: tuple) -> dict:
    return run_one(*a)


def dominates(a: dict, b: dict) -> bool:
    return (a["goodput_mbps"] >= b["goodput_mbps"] and a["qdelay_mean_ms"] <= b["qdelay_mean_ms"]
            and (a["goodput_mbps"] > b["goodput_mbps"] or a["qdelay_mean_ms"] < b["qdelay_mean_ms"]))


def covers(curve: list[dict], p: dict) -> bool:
    return any(x["goodput_mbps"] >= p["goodput_mbps"] and x["qdelay_mean_ms"] <= p["qdelay_mean_ms"]
               for x in curve)


def analyse(runs: list[dict]) -> list[dict]:
    """Per link: xrc2's default, who dominates it, whom its curve covers."""
    links = sorted({(r["trace"], r["rtt_ms"], r["buffer_bytes"]) for r in runs})
    out = []
    for link in links:
        rs = [r for r in runs if (r["trace"], r["rtt_ms"], r["buffer_bytes"]) == link]
        curve = [r for r in rs if r["cc"] == "xrc2"]
        default = next((r for r in curve if r["setting"] == DEFAULT_SETTING), None)
        others = [r for r in rs if r["cc"] not in ("xrc2", "oracle")]
        oracle = next((r for r in rs if r["cc"] == "oracle"), None)
        out.append({
            "trace": link[0], "rtt_ms": link[1], "buffer_bytes": link[2], "half": rs[0]["half"],
            "dominating_default": [r["cc"] for r in others if default is not None and dominates(r, default)],
            "not_covered": [r["cc"] for r in others if not covers(curve, r)],
            "schemes": len(others),
            "beat_oracle": [r["cc"] for r in rs if oracle is not None and r is not oracle and dominates(r, oracle)],
        })
    return out


def figure(runs: list[dict], link: tuple, path: Path) -> None:
    from matplotlib.figure import Figure

    rs = [r for r in runs if (r["trace"], r["rtt_ms"], r["buffer_bytes"]) == link]
    fig = Figure(figsize=(6.4, 4.4))
    ax = fig.add_subplot()
    curve = sorted((r for r in rs if r["cc"] == "xrc2"), key=lambda r: r["setting"])
    settings = ", ".join(format(r["setting"], "g") for r in curve)
    ax.plot([r["qdelay_mean_ms"] for r in curve], [r["goodput_mbps"] for r in curve], "-o", color="C3",
            label=f"xrc2 over {KNOB} ({settings})")
    for r in rs:
        if r["cc"] == "xrc2":
            continue
        marker, color = ("*", "k") if r["cc"] == "oracle" else ("o", "C0")
        ax.plot(r["qdelay_mean_ms"], r["goodput_mbps"], marker, color=color, ms=9 if marker == "*" else 5)
        ax.annotate(r["cc"], (r["qdelay_mean_ms"], r["goodput_mbps"]), fontsize=7, xytext=(3, 3),
                    textcoords="offset points")
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlabel("mean queuing delay, ms (the oracle: *)")
    ax.set_ylabel("goodput, Mbit/s")
    ax.set_title(f"{link[0]}, {link[1]:g} ms RTT, {link[2] // 1000} kB buffer", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    fig.savefig(path, dpi=110, bbox_inches="tight")


def report(runs: list[dict], links: list[dict], command: str) -> str:
    lines = [TITLE, "", f"Command: `{command}`. Each scheme alone; goodput over the run; queuing delay of every "
             "packet at the trace's queue. `xrc2`'s default setting: "
             f"`{KNOB}` = {DEFAULT_SETTING}.", ""]
    for half in ("tune", "holdout", "cell"):
        ls = [x for x in links if x["half"] == half]
        if not ls:
            continue
        n_dom = sum(1 for x in ls if x["dominating_default"])
        n_cov = sum(1 for x in ls if not x["not_covered"])
        head = {"tune": "The tuning half", "holdout": "The held-out half",
                "cell": "The cellular links (RTT 30 ms wired, RLC buffer 128 packets)"}[half]
        lines += [f"## {head}: {len(ls)} links", "",
                  f"- xrc2's default is dominated on {n_dom} of {len(ls)} links;",
                  f"- xrc2's curve covers every scheme on {n_cov} of {len(ls)} links.", "",
                  "| trace | RTT ms | buffer kB | dominate xrc2's default | not covered by xrc2's curve "
                  "| beat the oracle |", "|---|---|---|---|---|---|"]
        for x in ls:
            lines.append(f"| {x['trace']} | {x['rtt_ms']:g} | {x['buffer_bytes'] // 1000} | "
                         f"{', '.join(x['dominating_default']) or '–'} | {', '.join(x['not_covered']) or '–'} | "
                         f"{', '.join(x['beat_oracle']) or '–'} |")
        lines.append("")
    lines += ["## Every point", "", "| trace | RTT ms | buffer kB | scheme | goodput Mbit/s | mean queuing ms "
              "| p95 queuing ms |", "|---|---|---|---|---|---|---|"]
    for r in runs:
        name = r["cc"] if r["setting"] is None else f"{r['cc']} ({KNOB} {r['setting']:g})"
        lines.append(f"| {r['trace']} | {r['rtt_ms']:g} | {r['buffer_bytes'] // 1000} | {name} | "
                     f"{r['goodput_mbps']:.2f} | {r['qdelay_mean_ms']:.1f} | {r['qdelay_p95_ms']:.1f} |")
    lines += ["", f"{len(runs)} runs, {sum(r['events'] for r in runs)} events, "
              f"{sum(r['wall_s'] for r in runs):.1f} s of simulation (wall)."]
    return "\n".join(lines) + "\n"


def study(out: str | Path | None, traces: str | Path | None = None, quick: bool = False, jobs: int | None = None,
          force: bool = False, duration_s: float | None = None) -> str:
    """Runs the study; writes ``report.md``, ``frontier.parquet``,
    ``links.json`` and the figures into `out` (if given); returns the
    report."""
    if traces is None:
        files = [bundled.traces_dir() / "synthetic-lte.down"] if (bundled.traces_dir() / "synthetic-lte.down") \
            .exists() else sorted(bundled.traces_dir().glob("*.down"))
    else:
        d = Path(traces)
        if not d.is_dir():
            raise ScenarioError(f"--traces {str(traces)!r} is not a directory")
        files = sorted(d.glob("*.down"))
        if not files:
            raise ScenarioError(f"--traces {str(traces)!r} holds no Mahimahi downlink trace (*.down)")
    if duration_s is not None and not (0 < duration_s < float("inf")):
        raise ScenarioError(f"--duration must be positive and finite, got {duration_s}")
    with study_out(out, force, TITLE, extra=("frontier.parquet", "plots", "links.json")) as out:
        dur = 5.0 if quick else (duration_s or 120.0)
        rtts, bufs = (RTTS_MS[:1], BUFFERS_BYTES[:1]) if quick else (RTTS_MS, BUFFERS_BYTES)
        schemes = ("cubic", "bbr", "vegas", "xrc", "oracle") if quick else SCHEMES
        settings = (5.0, DEFAULT_SETTING, 40.0) if quick else SETTINGS
        todo = [(str(t), rtt, b, cc, None, dur) for t in files for rtt in rtts for b in bufs for cc in schemes]
        todo += [(str(t), rtt, b, "xrc2", s, dur) for t in files for rtt in rtts for b in bufs for s in settings]
        cells = CELLS[:1] if quick else CELLS
        # The physical-limit oracle needs its UE to be the cell's only UE
        # with flows: no bound on the 4-UE cell.
        todo += [(c, CELL_RTT_MS, CELL_BUFFER_BYTES, cc, None, dur) for c in cells for cc in schemes
                 if not (cc == "oracle" and c == "cell4-pf")]
        todo += [(c, CELL_RTT_MS, CELL_BUFFER_BYTES, "xrc2", s, dur) for c in cells for s in settings]
        runs = [_run(a) for a in todo] if jobs == 1 else map_parallel(_run, todo, jobs)
        half = {**halves(files), **{c: "cell" for c in CELLS}}
        for r in runs:
            r["half"] = half[r["trace"]]
        links = analyse(runs)
        command = "xrc study frontier" + (" --quick" if quick else "") + \
            (f" --traces {traces}" if traces is not None else "") + \
            (f" --duration {duration_s:g}" if duration_s is not None else "")
        text = report(runs, links, command)
        if out is not None:
            import pandas as pd

            (out / "plots").mkdir(exist_ok=True)
            for x in links:
                link = (x["trace"], x["rtt_ms"], x["buffer_bytes"])
                figure(runs, link, out / "plots" / f"{Path(x['trace']).stem}-{x['rtt_ms']:g}ms-"
                                                   f"{x['buffer_bytes'] // 1000}kB.png")
            tmp = out / ".frontier.parquet.tmp"
            pd.DataFrame(runs).to_parquet(tmp, index=False)
            write_files(out, {"report.md": text, "runs.json": json.dumps(runs, indent=1),
                              "links.json": json.dumps(links, indent=1)})
            tmp.replace(out / "frontier.parquet")
    return text


__all__ = ["study", "analyse", "dominates", "covers", "halves"]
