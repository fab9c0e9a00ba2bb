#!/usr/bin/env python3
"""Issue 10: how far any bulk flow could go on Fig. 7's FCT claim.

Runs `xrc reproduce`'s Fig. 7 points (a bulk flow against 50 short NewReno
flows of 10 KB-2 MB, one every 5 s) for the baselines (CUBIC, NewReno,
Illinois, Veno) and for three bulk flows in the XRC arm: `xrc`, `xrc2`, and
none at all (the bulk flow stops after 1 ms, so the short flows have the
cell to themselves). For each it prints the value `xrc reproduce` checks
for fig7-fct (per seed, the smallest FCT reduction over the baselines and
over p50 / p90, then the mean over seeds) and the reductions against each
baseline. "none" is the ceiling: no bulk scheme can leave the short flows
more of the link than no bulk flow.

    .venv/bin/python scripts/fig7_ceiling.py --seeds 5
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from xrc.parallel import run_parallel
from xrc.reproduce.experiments import points, run_point, variant_point

BASELINES = ["cubic", "newreno", "illinois", "veno"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5, help="seeds 1..N (default 5, as xrc reproduce)")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    seeds = list(range(1, a.seeds + 1))
    runs = []
    for p in points(False, seeds, ["xrc", *BASELINES]):
        if p.exp != "fig7" or p.label not in ("xrc", *BASELINES):
            continue
        d = p.as_dict()
        if p.label == "xrc":
            runs.append(("xrc", d))
            runs.append(("xrc2", variant_point(d, "xrc2")))
            none = json.loads(json.dumps(d))
            none["overrides"].append("flows.0.stop_s=0.001")
            runs.append(("none", none))
        else:
            runs.append((p.label, d))
    for label, d in runs:
        d["bulk"] = label
    results: list[dict] = []
    run_parallel(run_point, [d for _, d in runs], a.jobs, results.append)
    fct: dict[str, dict[int, list[float]]] = {}
    for r in results:
        p = r["point"]
        fct.setdefault(p["bulk"], {})[p["seed"]] = [f["fct_s"] for f in r["flows"][1:] if f["fct_s"] is not None]
    print("short flows' FCT, pooled over seeds (s):")
    for label in ("xrc", "xrc2", "none", *BASELINES):
        xs = [x for s in seeds for x in fct[label][s]]
        print(f"  {label:9s} p50 {np.percentile(xs, 50):.3f}  p90 {np.percentile(xs, 90):.3f}  max {max(xs):.3f}")
    print("short flows by size, pooled over seeds: mean FCT (s); mean of size / FCT (Mbit/s):")
    for label in ("none", "xrc", "xrc2", *BASELINES):
        rows = [(f["size"], f["fct_s"]) for r in results if r["point"]["bulk"] == label
                for f in r["flows"][1:] if f["fct_s"] is not None]
        cells = []
        for lo, hi in ((0, 200e3), (200e3, 1e6), (1e6, 3e6)):
            sel = [(b, t) for b, t in rows if lo <= b < hi]
            if sel:
                cells.append(f"{lo / 1e3:.0f}-{hi / 1e3:.0f} KB (n={len(sel)}) {np.mean([t for _, t in sel]):.3f} s, "
                             f"{np.mean([b * 8 / t for b, t in sel]) / 1e6:.1f} Mbit/s")
        print(f"  {label:9s} " + " | ".join(cells))
    print("fig7-fct (holds if >= 0.4; paper: 50% lower at p50 and p90):")
    for label in ("xrc", "xrc2", "none"):
        worst, each = [], {}
        for s in seeds:
            xs, w = fct[label][s], 1.0
            for c in BASELINES:
                for q in (50, 90):
                    red = 1 - np.percentile(xs, q) / np.percentile(fct[c][s], q)
                    each.setdefault(f"{c} p{q}", []).append(red)
                    w = min(w, red)
            worst.append(w)
        print(f"  bulk {label:5s} {np.mean(worst):.3f} (per seed {' '.join(f'{w:.3f}' for w in worst)})")
        print("     " + ", ".join(f"{k} {np.mean(v):.3f}" for k, v in each.items()))


if __name__ == "__main__":
    main()
