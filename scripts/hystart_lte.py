#!/usr/bin/env python3
"""HyStart over LTE: cwnd when CUBIC leaves slow start, stock against the
two changes from the Ericsson LTE study, over many seeds.

    .venv/bin/python scripts/hystart_lte.py [--seeds 30] [--scenario scenarios/studies/hystart-lte.toml]

For each seed (the seed moves each UE's SR phase and the HARQ failures),
it runs the scenario twice and reads, from the cwnd trace, the window at
the first change from slow start to congestion avoidance that is not a
loss (ca_state Open). Prints the per-seed values and a summary with the
path's bandwidth-delay product for scale.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from xrc.runner import simulate  # noqa: E402
from xrc.scenario import load  # noqa: E402

PATCHES = ["flows.0.cubic.hystart_reset_fix=true", "flows.0.cubic.hystart_no_exit_on_new_min_rtt=true"]


def exit_cwnd(scenario: Path, seed: int, patched: bool) -> tuple[int | None, float]:
    sc = load(scenario, overrides=PATCHES if patched else [], seed=seed)
    r = simulate(sc)
    cw = r["tables"]["cwnd"]
    modes, states, cwnds, ts = cw["mode"], cw["ca_state"], cw["cwnd"], cw["t"]
    for i in range(1, len(modes)):
        if modes[i - 1] == "slow_start" and modes[i] == "cong_avoid" and states[i] == 0:
            return int(cwnds[i]), float(ts[i])
    return None, float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--scenario", default=str(ROOT / "scenarios/studies/hystart-lte.toml"))
    args = ap.parse_args()
    scenario = Path(args.scenario)
    rows = []
    for seed in range(1, args.seeds + 1):
        s, ts = exit_cwnd(scenario, seed, False)
        p, tp = exit_cwnd(scenario, seed, True)
        rows.append((seed, s, ts, p, tp))
        print(f"seed {seed:3d}: stock exit cwnd {s!s:>5} at {ts:.3f} s   patched {p!s:>5} at {tp:.3f} s")
    stock = np.array([r[1] for r in rows if r[1] is not None])
    patched = np.array([r[3] for r in rows if r[3] is not None])
    # Bandwidth-delay product: 75.4 Mbit/s of transport blocks at 20 MHz,
    # 10% BLER, over the base RTT (16 ms wired + 10 ms LTE air), in
    # 1448-byte segments.
    bdp = 75.376e6 * 0.9 / 8 * 0.026 / 1448
    print()
    for name, a in (("stock", stock), ("patched", patched)):
        print(f"{name:8s} (n={a.size}): median {np.median(a):.0f}, mean {a.mean():.1f} segments; "
              f"exits below the BDP in {np.mean(a < bdp):.0%} of runs, below half of it in {np.mean(a < bdp / 2):.0%}")
    print(f"BDP at a 26 ms base RTT: about {bdp:.0f} segments")
    return 0


if __name__ == "__main__":
    sys.exit(main())
