"""``xrc study roccet``: the TCP ROCCET paper's comparison on the 5G mid-band cell.

Prause and Akselrod ("TCP ROCCET: An RTT-Oriented CUBIC Congestion Control
Extension for 5G and Beyond Networks") measure each congestion control
*alone*, one 30 s greedy download per run, on commercial 5G cells, with the
UE standing still and moving, and show goodput and sRTT boxplots (their
finding: ROCCET cuts CUBIC's latency and bufferbloat, and has throughput
similar to BBRv3's at a lower latency). This study runs the same design in
the simulator: ``nr/roccet-stationary.toml`` (one UE at a fixed SINR, CQI
13) and ``nr/roccet-mobile.toml`` (one UE driving away at 14 m/s through
TR 38.901 UMa path loss and correlated shadowing), each with one bulk flow
of CUBIC, ROCCET, BBRv3, XRC and xrc2 in turn, over seeds (a seed changes
the HARQ failures and, when mobile, the shadowing along the drive), and
reports per scheme and scenario:

- **goodput**: delivered payload over the run (mean over seeds, and the
  range);
- **utilization**: the UE's delivered bits over what its radio could carry
  (``summary.json``'s ``utilization``);
- **HoL ≤ 10 ms**: the fraction of the UE's active time whose RLC
  head-of-line delay was within XRC's queuing budget;
- **RTT**: mean, median and 95th percentile of the flow's per-ACK RTT
  samples pooled over the seeds (the paper plots the kernel's sRTT; the
  per-ACK samples are what that smooths);
- **retransmissions**: per run, and as a share of the segments sent.

Both scenarios run twice: with the bundled 1000-packet RLC buffer (~40 ms
at the stationary UE's 295 Mbit/s) and with a deep one of 10,000 packets
(~0.4 s), not a measured value but the order of the several-hundred-ms
queues reported for cellular bufferbloat (Jiang et al., "Tackling
Bufferbloat in 3G/4G Networks", IMC 2012) and of the large RLC buffers the
ROCCET paper blames.

A separate study from ``xrc study nr`` because it asks a different question
(each scheme alone in a changing channel, not eight schemes sharing a cell
under TDD against FDD) and its report has different rows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from . import bundled
from .parallel import map_parallel
from .results import summarize
from .runner import simulate
from .scenario import load
from .study_nr import study_out, write_files

SCENARIOS = {"stationary": "nr/roccet-stationary.toml", "mobile": "nr/roccet-mobile.toml"}
SCHEMES = ("cubic", "roccet", "bbr3", "xrc", "xrc2")
#: RLC buffer (packets) per variant: the scenario's own, and a deep one.
BUFFERS = {"": None, "deep": 10_000}


def run_one(where: str, buffer: str, cc: str, seed: int, duration_s: float | None) -> dict[str, Any]:
    """Runs one scheme alone in one scenario; keeps what the report needs
    (the RTT samples whole, to pool them over the seeds)."""
    overrides = [f"flows.0.cc={cc}"]
    if duration_s:
        overrides.append(f"duration_s={duration_s}")
    if BUFFERS[buffer] is not None:
        overrides.append(f"cell.rlc.buffer_packets={BUFFERS[buffer]}")
    sc = load(bundled.scenario(SCENARIOS[where]), overrides=overrides, seed=seed)
    r = simulate(sc)
    t = r["tables"]
    s = summarize(sc.resolved, t, events=r["events"], sim_time_s=r["sim_time_s"], wall_time_s=r["wall_time_s"])
    f, u = s["flows"][0], s["ues"][0]
    fl = t["flows"]
    rtt = t["rtt"]["rtt_ms"][t["rtt"]["flow"] == 0]
    return {
        "where": where + (f", {buffer} buffer" if buffer else ""), "cc": cc, "seed": seed,
        "events": r["events"], "wall_s": r["wall_time_s"],
        "goodput_mbps": f["goodput_mbps"],
        "capacity_mbps": u["capacity_mbps"],
        "utilization": u["utilization"],
        "hol_within_budget": u["frac_time_hol_below_budget"],
        "retransmits": int(fl["retransmits"][0]),
        "segments_sent": int(fl["segments_sent"][0]),
        "rtt_ms": np.asarray(rtt, dtype=float),
    }


def _fmt(x: float | None, spec: str) -> str:
    return "–" if x is None else format(x, spec)


#: The report's first line: how `--force` knows this study wrote it.
TITLE = "# The TCP ROCCET comparison on the 5G mid-band cell: each scheme alone, stationary and mobile"


def report(runs: list[dict[str, Any]], command: str) -> str:
    """The report's text (Markdown): one row per scheme and scenario."""
    seeds = sorted({r["seed"] for r in runs})
    wheres = list(dict.fromkeys(r["where"] for r in runs))
    lines = [
        TITLE,
        "",
        f"μ = 1, 100 MHz (273 PRBs), TDD DDDSU, 256QAM tables, 1000-packet RLC buffer (deep: 10,000), 20 ms wired "
        f"RTT; one UE, "
        f"one bulk download; seeds {', '.join(map(str, seeds))}. Command: `{command}`.",
        "",
        "| scheme | UE | goodput Mbit/s (min–max) | capacity Mbit/s | utilization | HoL ≤ 10 ms | RTT mean ms "
        "| RTT p50 ms | RTT p95 ms | retransmits per run | retransmitted % of sent |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for where in wheres:
        for cc in SCHEMES:
            rs = [r for r in runs if r["where"] == where and r["cc"] == cc]
            if not rs:
                continue
            g = [r["goodput_mbps"] for r in rs]
            rtt = np.concatenate([r["rtt_ms"] for r in rs])
            sent = sum(r["segments_sent"] for r in rs)
            rtx = sum(r["retransmits"] for r in rs)
            lines.append(
                f"| {cc} | {where} | {np.mean(g):.1f} ({min(g):.1f}–{max(g):.1f}) "
                f"| {np.mean([r['capacity_mbps'] for r in rs]):.1f} "
                f"| {np.mean([r['utilization'] for r in rs]):.3f} "
                f"| {np.mean([r['hol_within_budget'] for r in rs]):.3f} "
                f"| {_fmt(float(rtt.mean()) if rtt.size else None, '.1f')} "
                f"| {_fmt(float(np.percentile(rtt, 50)) if rtt.size else None, '.1f')} "
                f"| {_fmt(float(np.percentile(rtt, 95)) if rtt.size else None, '.1f')} "
                f"| {rtx / len(rs):.0f} | {_fmt(100.0 * rtx / sent if sent else None, '.2f')} |")
    lines += [
        "",
        "Goodput: mean over the seeds (range in brackets). Capacity: what the UE's radio could carry on average "
        "(the denominator of utilization). RTT: per-ACK samples pooled over the seeds. HoL ≤ 10 ms: share of the "
        "UE's active time with RLC head-of-line delay within 10 ms.",
        "",
        f"{len(runs)} runs, {sum(r['events'] for r in runs)} events, "
        f"{sum(r['wall_s'] for r in runs):.1f} s of simulation (wall).",
    ]
    return "\n".join(lines) + "\n"


def _run(args: tuple[str, str, str, int, float | None]) -> dict[str, Any]:
    return run_one(*args)


def study(out: str | Path | None, seeds: int = 5, quick: bool = False, jobs: int | None = None,
          force: bool = False) -> str:
    """Runs the study; writes ``report.md`` and ``runs.json`` (without the
    RTT samples) into `out` (if given) and returns the report."""
    with study_out(out, force, TITLE) as out:
        duration = 3.0 if quick else None
        n = 1 if quick else seeds
        todo = [(w, b, cc, s, duration) for b in BUFFERS for w in SCENARIOS for cc in SCHEMES
                for s in range(1, n + 1)]
        if jobs == 1:
            runs = [_run(a) for a in todo]
        else:
            # Not a plain ProcessPoolExecutor: its workers went on running
            # when the study was killed (SIGKILL).
            runs = map_parallel(_run, todo, jobs)
        command = "xrc study roccet " + ("--quick" if quick else f"--seeds {seeds}")
        text = report(runs, command)
        if out is not None:
            write_files(out, {"report.md": text, "runs.json": json.dumps(
                [{k: v for k, v in r.items() if k != "rtt_ms"} for r in runs], indent=1)})
    return text
