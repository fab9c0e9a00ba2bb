"""The ACK-noise experiment of ``docs/validation.md`` ("BBR through the
emulator"): does the timing noise of a real run, replayed on xrc's ACK
path, move xrc's BBR from its noise-free result to Linux's?

Usage (no root; builds the example once)::

    .venv/bin/python scripts/bbr_noise_experiment.py RUN_DIR [RUN_DIR ...] [--scale 0,0.5,1,2] [--reps 10]

Each ``RUN_DIR`` is a smooth-link (``wired-*``) or constant-trace
(``const-*``) run written by ``scripts/bbr_rate_probe.py``. For each run:

1. ``scripts/bbr_rate_analysis.py`` rebuilds Linux's delivery-rate samples
   and BBR's filter from the capture (the "released" clock: what the sender
   saw; "ideal": without any timing error) and exports every ACK's
   lateness (released − ideal) into ``RUN_DIR/noise.txt``;
2. ``crates/xrc-core/examples/ack_noise.rs`` runs the same case (its
   duration: the run's) with xrc's sender, receiver and links, holding each
   ACK for the measured lateness: ``series`` replays the run's lateness at
   the same times, rotated by 0..reps−1 seconds; ``shuffle`` draws it from
   the same values without their time structure (seeds 1..reps);
   ``--scale`` multiplies the lateness (0: xrc as it is).

Printed per run: Linux's mean RTT, retransmissions and filter excess
over the link's payload rate, then xrc's mean RTT (mean and range over
the repetitions), p95, mean cwnd and in-flight, retransmissions and the
bandwidth BBR paces at in its gain-1 phases.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "target" / "release" / "examples" / "ack_noise"


def run_example(scenario: Path, noise: Path | None, mode: str, seed: int) -> dict:
    argv = [str(EXAMPLE), str(scenario)] + ([str(noise), mode, str(seed)] if noise else [])
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout

    def g(p: str) -> float:
        return float(re.search(p, out).group(1))

    return {"rtt": g(r"RTT mean ([\d.]+)"), "p95": g(r"p95 ([\d.]+)"), "cwnd": g(r"cwnd mean ([\d.]+)"),
            "inflight": g(r"in flight mean ([\d.]+)"), "retx": g(r"retransmissions (\d+)"),
            "bw": g(r"gain-1 bw ([\d.]+)")}


def summary(rows: list[dict]) -> str:
    a = {k: np.array([r[k] for r in rows]) for k in rows[0]}
    return (f"RTT mean {a['rtt'].mean():5.1f} [{a['rtt'].min():.1f}..{a['rtt'].max():.1f}] "
            f"p95 {a['p95'].mean():5.1f} ms, "
            f"cwnd {a['cwnd'].mean():5.1f}, in flight {a['inflight'].mean():5.1f}, retx {a['retx'].mean():4.0f}, "
            f"gain-1 bw {a['bw'].mean():.3f} Mbit/s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--scale", default="1", help="comma-separated factors on the measured lateness (default 1)")
    ap.add_argument("--reps", type=int, default=10, help="rotations / shuffle seeds per mode (default 10)")
    a = ap.parse_args()
    try:
        scales = [float(x) for x in a.scale.split(",")]
    except ValueError:
        print(f"--scale: comma-separated numbers, got {a.scale!r}", file=sys.stderr)
        return 2
    if any(not (s >= 0) for s in scales):
        print(f"--scale: factors must be ≥ 0, got {a.scale!r}", file=sys.stderr)
        return 2
    if a.reps < 1:
        print(f"--reps: at least 1, got {a.reps}", file=sys.stderr)
        return 2
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "xrc-core", "--example", "ack_noise"],
                   cwd=REPO, check=True)
    sys.path.insert(0, str(REPO / "python"))
    from xrc.emulation import linuxref as L
    from xrc.scenario import from_dict

    for run in a.runs:
        meta = json.loads((run / "meta.json").read_text())
        case = next((c for c in L.all_cases() if c.id == meta["case"]), None)
        if case is None or not (case.link == "wired" or case.id.startswith("const-")):
            print(f"{run}: a wired-* or const-* run expected, got {meta.get('case')!r}", file=sys.stderr)
            return 2
        traces = None if case.link == "wired" else L.trace_files(case, run / "xrc-traces")
        subprocess.run([sys.executable, str(REPO / "scripts" / "bbr_rate_analysis.py"), str(run), "--export-noise",
                        str(run / "noise.txt"), "--json", str(run / "analysis.json")], check=True,
                       stdout=subprocess.DEVNULL)
        an = json.loads((run / "analysis.json").read_text())
        scenario = run / "xrc-scenario.json"
        scenario.write_text(json.dumps(from_dict(L.sim_scenario(case, meta["duration_s"], traces)).resolved))
        print(f"== {run} ({case.id}, {meta['duration_s']:g} s; app nice {meta.get('app_nice')}, RPS off "
              f"{meta.get('no_rps')}, ss every {meta.get('ss_interval_s')} s)")
        print(f"  Linux: RTT mean {an['linux_rtt_mean_ms']:.1f} p95 {an['linux_rtt_p95_ms']:.1f} ms, retx "
              f"{an['linux_retransmissions']}; BBR filter above the link's payload rate: "
              f"{100 * an['released']['filter_excess']:+.2f} % (ideal timing "
              f"{100 * an['ideal']['filter_excess']:+.2f} %)")
        for s in scales:
            if s == 0:
                print(f"  xrc, no noise       : {summary([run_example(scenario, None, 'none', 1)])}")
                continue
            noise = run / "noise.txt"
            if s != 1:
                noise = run / f"noise-x{s:g}.txt"
                with open(noise, "w") as fh:
                    for line in (run / "noise.txt").read_text().splitlines():
                        if line.startswith("#"):
                            continue
                        t, d = line.split()
                        fh.write(f"{t} {float(d) * s:.1f}\n")
            for mode in ("series", "shuffle"):
                rows = [run_example(scenario, noise, mode, k) for k in range(1, a.reps + 1)]
                print(f"  xrc + {s:g}× {mode:7s}: {summary(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
