#!/usr/bin/env python3
"""Issue 10, first XRC improvement: xrc against xrc2 (air-aware bottleneck
rule) and CUBIC under the simulator's default LTE timing. Runs the cases
below for each scheme and seed and prints one table (Markdown).

    .venv/bin/python scripts/xrc2_bottleneck.py --seeds 1 2 3 4 5 --out runs/xrc2

Cases (overrides on scenarios/paper/fig1-time-varying.toml):
  fig1-lte      Fig. 1 with LTE's default timing: BLER 0.1, SR every 10 ms,
                3 ms SR-to-grant, 4 ms BSR-to-grant (the `HarqConfig` and
                `UplinkConfig` defaults)
  fig1-ideal    Fig. 1 as bundled (the paper's ideal uplink, BLER 0)
  cqi15-lte     fixed CQI 15, default LTE timing, no Internet bottleneck
  inet8-lte     fixed CQI 15, default LTE timing, Internet at 8 Mbit/s
                (buffer 100 packets): the bottleneck is in the Internet
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = "scenarios/paper/fig1-time-varying.toml"
LTE = ["cell.harq.bler=0.1", "cell.uplink.sr_period_ms=10", "cell.uplink.sr_grant_delay_ms=3",
       "cell.uplink.bsr_grant_delay_ms=4"]
CQI15 = ["ues.0.channel={kind = \"fixed_cqi\", cqi = 15}"]
CASES = {
    "fig1-lte": LTE,
    "fig1-ideal": [],
    "cqi15-lte": LTE + CQI15 + ["duration_s=30"],
    "inet8-lte": LTE + CQI15 + ["duration_s=30", "internet.rate_mbps=8", "internet.buffer_packets=100"],
}


def run(case: str, cc: str, seed: int, out: Path) -> Path:
    d = out / f"{case}-{cc}-s{seed}"
    if not (d / "summary.json").exists():
        sets = [f"flows.0.cc={cc}", f"seed={seed}", *CASES[case]]
        cmd = [str(ROOT / ".venv/bin/xrc"), "run", SCENARIO, "--out", str(d), "--force", "--no-plots", "--quiet"]
        for s in sets:
            cmd += ["--set", s]
        subprocess.run(cmd, check=True, cwd=ROOT)
    return d


def measure(d: Path) -> dict:
    s = json.loads((d / "summary.json").read_text())
    ue, fl = s["ues"][0], s["flows"][0]
    cw = pq.read_table(d / "cwnd.parquet", columns=["t", "mode"]).to_pydict()
    t = np.asarray(cw["t"])
    modes = np.asarray(cw["mode"], dtype=object)
    end = float(fl["end_s"])
    dwell = np.diff(np.append(t, end))
    internet = float(dwell[modes == "internet"].sum() / max(dwell.sum(), 1e-9)) if t.size else float("nan")
    rtt = np.asarray(pq.read_table(d / "rtt.parquet", columns=["rtt_ms"]).column(0))
    qd = np.asarray(pq.read_table(d / "queue_delay.parquet", columns=["delay_ms"]).column(0))
    return {
        "util": ue["utilization"], "goodput": fl["goodput_mbps"],
        "hol10": ue["frac_time_hol_below_budget"], "internet": internet,
        "e2e": float(rtt.mean() - rtt.min()) if rtt.size else float("nan"),
        "rlc": float(qd.mean()) if qd.size else float("nan"),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    ap.add_argument("--cases", nargs="+", default=list(CASES))
    ap.add_argument("--schemes", nargs="+", default=["xrc", "xrc2", "cubic"])
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "xrc2")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    jobs = [(c, cc, s) for c in a.cases for cc in a.schemes for s in a.seeds]
    with ThreadPoolExecutor(a.jobs) as ex:
        dirs = list(ex.map(lambda j: run(*j, a.out), jobs))
    rows: dict[tuple[str, str], list[dict]] = {}
    for (c, cc, _), d in zip(jobs, dirs):
        rows.setdefault((c, cc), []).append(measure(d))
    print("| case | scheme | utilization (mean; min–max) | goodput Mbit/s | HoL ≤ 10 ms | time in Internet mode "
          "| mean RTT − min RTT, ms | mean RLC sojourn, ms |")
    print("|---|---|---|---|---|---|---|---|")
    for (c, cc), ms in rows.items():
        def col(k: str, f: str = "{:.2f}") -> str:
            v = np.array([m[k] for m in ms], dtype=float)
            return f.format(np.nanmean(v))
        u = np.array([m["util"] for m in ms], dtype=float)
        print(f"| {c} | {cc} | {u.mean():.3f}; {u.min():.3f}–{u.max():.3f} | {col('goodput', '{:.1f}')} "
              f"| {col('hol10')} | {col('internet')} | {col('e2e', '{:.1f}')} | {col('rlc', '{:.1f}')} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
