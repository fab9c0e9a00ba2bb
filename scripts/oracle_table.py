#!/usr/bin/env python3
"""Every scheme's power as a fraction of the oracle's, per trace and on Fig. 1.

Runs every scheme alone on every downlink trace of the trace study (the
bundled ones, and those of ``--traces DIR``) with the trace study's setting
(``traces/synthetic-xrc.toml``: 5 ms each way, 150 KB buffer), and every
scheme on the paper's Fig. 1 scenario, once with the paper's ideal LTE timing
(``fig1``) and once with the simulator's default LTE timing (``fig1-lte``:
BLER 0.1, an SR every 10 ms); prints a Markdown table (what
``docs/reproduction.md`` shows) and writes the numbers as JSON.

Power is what ``xrc reproduce`` computes: goodput (Mbit/s) over the queuing
delay, the mean or the 95th percentile of each RTT sample less the flow's
least, at least 0.1 ms. The reference is the physical-limit oracle
(``oracle``): on a trace it follows the trace's opportunities, in the cell the
service of a shadow copy of the cell whose UE is never short of data
(``ran::shadow``). The script exits non-zero if any fraction exceeds 1.

    .venv/bin/python scripts/oracle_table.py --traces ../shared/traces --duration 30 --jobs 2
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from xrc import _core, bundled
from xrc.reproduce.experiments import TRACE_SCENARIO, Point, run_point, trace_files


#: The simulator's default LTE timing on Fig. 1 (as scripts/xrc2_bottleneck.py).
LTE = ("cell.harq.bler=0.1", "cell.uplink.sr_period_ms=10", "cell.uplink.sr_grant_delay_ms=3",
       "cell.uplink.bsr_grant_delay_ms=4")
FIG1 = {"fig1": (), "fig1-lte": LTE}


def _points(traces: list[Path], duration: float, fig1_duration: float) -> list[dict]:
    pts = []
    for tr in traces:
        for cc in _core.schemes():
            pts.append(Point("traces", f"{tr.stem}/{cc}", str(bundled.scenario(TRACE_SCENARIO)),
                             (f"flows.0.cc={cc}", f"trace.downlink={json.dumps(str(tr))}",
                              f"duration_s={duration}"), 1).as_dict())
    for name, timing in FIG1.items():
        for cc in _core.schemes():
            pts.append(Point("fig1", f"{name}/{cc}", str(bundled.scenario("paper/fig1-time-varying.toml")),
                             (f"flows.0.cc={cc}", f"duration_s={fig1_duration}", *timing), 1).as_dict())
    return pts


def _one(p: dict) -> tuple[str, dict]:
    r = run_point(p)
    f = r["summary"]["flows"][0]
    q = r["qdelay"].get(0) or r["qdelay"].get("0") or {}
    return p["label"], {"tput": f["goodput_mbps"], "qmean": q.get("mean"), "q95": q.get("p95")}


def _power(v: dict, key: str) -> float:
    return v["tput"] / max(v[key] or 0.0, 0.1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", help="a directory of *.down traces besides the bundled ones")
    ap.add_argument("--duration", type=float, default=30.0, help="seconds per trace run (default 30)")
    ap.add_argument("--fig1-duration", type=float, default=60.0, help="seconds of the Fig. 1 run (default 60)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="runs/oracle-table.json")
    a = ap.parse_args(argv)
    traces = trace_files(None) + (trace_files(a.traces) if a.traces else [])
    pts = _points(traces, a.duration, a.fig1_duration)
    with ProcessPoolExecutor(a.jobs) as ex:
        res = dict(ex.map(_one, pts))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1))
    groups: dict[str, dict[str, dict]] = {}
    for label, v in res.items():
        g, cc = label.split("/", 1)
        groups.setdefault(g, {})[cc] = v
    names = [t.stem for t in traces] + list(FIG1)
    schemes = [c for c in _core.schemes() if c != "oracle"]
    print("power (mean delay) / oracle's, power (p95 delay) / oracle's; goodput / oracle's")
    print()
    print("| scheme | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    worst = 0.0
    for cc in schemes:
        cells = []
        for n in names:
            d = groups.get(n, {})
            ref = d.get("oracle")
            v = d.get(cc)
            if not ref or not v:
                cells.append("–")
                continue
            pm, p95 = _power(v, "qmean") / _power(ref, "qmean"), _power(v, "q95") / _power(ref, "q95")
            tp = v["tput"] / ref["tput"] if ref["tput"] else float("nan")
            worst = max(worst, pm, p95, tp)
            cells.append(f"{pm:.3f} / {p95:.3f}; {tp:.2f}")
        print(f"| {cc} | " + " | ".join(cells) + " |")
    print()
    print("| oracle (absolute) | " + " | ".join(
        f"{groups[n][r]['tput']:.2f} Mbit/s, {groups[n][r]['qmean'] or 0:.2f} / {groups[n][r]['q95'] or 0:.2f} ms"
        if r in groups.get(n, {}) else "–"
        for n in names for r in ["oracle"]) + " |")
    print()
    print(f"largest fraction of the oracle: {worst:.3f}")
    return 0 if worst <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
