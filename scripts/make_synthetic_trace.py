#!/usr/bin/env python3
"""Writes a synthetic cellular trace in Mahimahi's format, so the project
runs without the public traces in ../shared/traces.

    python scripts/make_synthetic_trace.py OUT [--seconds 30] [--seed 1]

The rate follows a bounded random walk in log space, redrawn every 100 ms
(between 1 and 40 Mbit/s, median near 12), with Poisson-distributed
delivery opportunities within each millisecond: a crude imitation of a
driving LTE trace. Deterministic for a given seed.
"""

from __future__ import annotations

import argparse
import math
import random


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    log_rate = math.log(12.0)
    lines = []
    for ms in range(1, args.seconds * 1000 + 1):
        if ms % 100 == 1:
            log_rate += rng.gauss(0.0, 0.35)
            log_rate = min(max(log_rate, math.log(1.0)), math.log(40.0))
        per_ms = math.exp(log_rate) * 1e6 / (1500 * 8) / 1000  # opportunities per ms
        # Poisson draw by inversion (small means).
        k, p, u = 0, math.exp(-per_ms), rng.random()
        c = p
        while u > c:
            k += 1
            p *= per_ms / k
            c += p
        lines.extend([str(ms)] * k)
    if lines[-1] != str(args.seconds * 1000):
        lines.append(str(args.seconds * 1000))
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
