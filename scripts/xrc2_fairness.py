#!/usr/bin/env python3
"""Issue 10, third XRC improvement: the paper's coexistence claims for an XRC
variant.

Runs the points of ``xrc reproduce`` for Fig. 3 (XRC joined by Illinois or
CUBIC) and Fig. 5 (the capacity-seeking pairs, with the CUBIC-first
baselines), with the XRC arm's ``flows.0.cc`` set to the scheme named (the
baselines are unchanged; with ``--all``, every paper experiment, Fig. 1 and
3 to 7, and all 18 claims), and prints the claims ``xrc reproduce`` checks on
them (its own code, :func:`xrc.reproduce.report.write_report`): Fig. 5 HoL
within budget, HoL reduction, Fig. 5 fairness, Jain XRC vs CUBIC, median
queuing delay vs CUBIC+CUBIC; then each run's goodputs and HoL. ``--pairs``
adds Fig. 5's setting against partners of one's choice (e.g. bbr), with the
partner stopping at ``--stop`` s, to show the mode ends when it is gone.

    .venv/bin/python scripts/xrc2_fairness.py --cc xrc xrc2 --seeds 5 --pairs bbr cubic illinois
    .venv/bin/python scripts/xrc2_fairness.py --cc xrc xrc2 --seeds 5 --all

``--lte-timing`` runs every point (the baselines too) under the simulator's
default LTE timing instead of the paper's ideal one (BLER 0.1, an SR every
10 ms, 3 ms SR-to-grant, 4 ms BSR-to-grant; ``scripts/xrc2_bottleneck.py``'s
overrides).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from xrc import bundled
from xrc.parallel import run_parallel
from xrc.reproduce.experiments import points, run_point, variant_point
from xrc.reproduce.report import fmt_unit, write_report

#: The simulator's default LTE timing (as ``scripts/xrc2_bottleneck.py``).
LTE = ["cell.harq.bler=0.1", "cell.uplink.sr_period_ms=10", "cell.uplink.sr_grant_delay_ms=3",
       "cell.uplink.bsr_grant_delay_ms=4"]


def claims(cc: str, seeds: list[int], jobs: int, extra: list[str], every: bool = False,
           timing: list[str] = ()) -> tuple[list[dict], list[dict]]:
    """`xrc reproduce`'s Fig. 3 and Fig. 5 points (every paper experiment,
    Fig. 1 and 3 to 7, with `every`) with the XRC flows running `cc`."""
    pts = []
    for p in points(False, seeds, [], []):
        if p.exp == "traces" or (not every and p.exp not in ("fig3", "fig5")):
            continue
        d = p.as_dict()
        v = variant_point(d, cc) if cc != "xrc" else None
        if v is not None:
            d = v
            d["overrides"] += extra
        d["overrides"] = [*d["overrides"], *timing]
        pts.append(d)
    res: list[dict] = []
    run_parallel(run_point, pts, jobs, res.append)
    res.sort(key=lambda r: (r["point"]["exp"], r["point"]["label"], r["point"]["seed"]))
    meta = {"quick": False, "seeds": seeds, "runs": len(res), "wall_time_s": 0, "jobs": jobs, "engine": "local",
            "schemes": [], "xrc_version": "", "core_version": "", "git_commit": None, "sim_seconds": 0, "events": 0,
            "traces": {"source": "", "files": []}, "inputs": {}}
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "figures").mkdir()
        return write_report(res, meta, Path(tmp)), res


def pair(cc: str, partner: str, stop: float, extra: list[str], timing: list[str] = ()) -> list[str]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        out = tmp + "/run"
        sets = [f"flows.0.cc={cc}", f"flows.1.cc={partner}", f"flows.1.stop_s={stop}"] + extra + list(timing)
        subprocess.run([str(Path(sys.executable).parent / "xrc"), "run", str(bundled.scenario("paper/fig5-pairs.toml")), "--out",
                        out, "--force"] + [x for s in sets for x in ("--set", s)], check=True, capture_output=True)
        r = pq.read_table(out + "/rlc.parquet").to_pandas()
        r = r[r.active == 1]
        tp = pq.read_table(out + "/flow_throughput.parquet").to_pandas()
        for a, b, what in [(6.0, stop, "together"), (stop, 30.0, "alone")]:
            rr = r[(r.t >= a) & (r.t < b)]
            g = [tp[(tp.flow == k) & (tp.t >= a) & (tp.t < b)].goodput_mbps.mean() for k in (0, 1)]
            rows.append(f"| {cc} | {partner} | {what} ({a:g}–{b:g} s) | {g[0]:.1f} | {g[1]:.1f} | "
                        f"{np.percentile(rr.hol_ms, 50):.1f} / {np.percentile(rr.hol_ms, 90):.1f} | "
                        f"{np.mean(rr.hol_ms <= 10):.2f} |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cc", nargs="+", default=["xrc", "xrc2"])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--pairs", nargs="*", default=[], help="partners for Fig. 5's setting with a stop")
    ap.add_argument("--stop", type=float, default=15.0)
    ap.add_argument("--set", dest="extra", nargs="*", default=[], help="more overrides for the XRC flow's runs")
    ap.add_argument("--all", action="store_true", help="every paper experiment (Fig. 1, 3-7), all 18 claims")
    ap.add_argument("--lte-timing", action="store_true",
                    help="the simulator's default LTE timing (BLER 0.1, SR every 10 ms) instead of the paper's")
    a = ap.parse_args()
    timing = LTE if a.lte_timing else []
    seeds = list(range(1, a.seeds + 1))
    table: dict[str, dict[str, dict]] = {}
    runs: dict[str, list[dict]] = {}
    for cc in a.cc:
        cl, res = claims(cc, seeds, a.jobs, a.extra, a.all, timing)
        table[cc] = {c["id"]: c for c in cl}
        runs[cc] = res
    ids = list(next(iter(table.values())))
    what = "claims" if a.all else "coexistence claims"
    when = ", default LTE timing" if a.lte_timing else ""
    print(f"### The paper's {what}, seeds {' '.join(map(str, seeds))}{when} (mean, 95% CI)\n")
    print("| claim | paper | " + " | ".join(a.cc) + " |")
    print("|---|---|" + "---|" * len(a.cc))
    for i in ids:
        c0 = table[a.cc[0]][i]
        cells = []
        for cc in a.cc:
            c = table[cc][i]
            ci = f" ± {c['ci95']:.3g}" if c["ci95"] is not None else ""
            cells.append(f"{fmt_unit(c['ours'], c['unit'])}{ci} ({c['verdict']})")
        print(f"| {i} | {c0['paper']} | " + " | ".join(cells) + " |")
    print("\n### Each pair, seed 1: goodput (Mbit/s) of the first and second flow; HoL p50 / p90 (ms); HoL ≤ 10 ms\n")
    print("| XRC arm | pair | goodputs | HoL p50 / p90 | HoL ≤ 10 ms |")
    print("|---|---|---|---|---|")
    for cc in a.cc:
        for r in runs[cc]:
            p = r["point"]
            if p["exp"] not in ("fig3", "fig5") or p["seed"] != 1 or (
                    cc != a.cc[0] and not p["label"].startswith("xrc")):
                continue
            arm = cc if p["label"].startswith("xrc") else "–"
            gp = " / ".join(f"{f['goodput_mbps']:.1f}" for f in r["summary"]["flows"])
            print(f"| {arm} | {p['exp']} {p['label']} | {gp} | {r['hol']['p50']:.1f} / {r['hol']['p90']:.1f} | "
                  f"{r['hol']['frac_below_10']:.2f} |")
    if a.pairs:
        print(f"\n### Fig. 5's setting, partner from 5.5 s to {a.stop:g} s (seed 1)\n")
        print("| XRC arm | partner | period | XRC Mbit/s | partner Mbit/s | HoL p50 / p90 ms | HoL ≤ 10 ms |")
        print("|---|---|---|---|---|---|---|")
        for cc in a.cc:
            for b in a.pairs:
                print("\n".join(pair(cc, b, a.stop, a.extra, timing)))


if __name__ == "__main__":
    main()
