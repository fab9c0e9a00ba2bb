"""``xrc bench``: speed of the whole simulator on a scenario and of the
event engine alone, printed as numbers (never asserted in tests: machines
are noisy)."""

from __future__ import annotations

import statistics
import time

from . import _core
from .scenario import load


def bench(path: str, *, repeat: int = 5, ns3_seconds: float = 11.0) -> int:
    sc = load(path)
    js = sc.resolved_json()
    walls = []
    events = 0
    sim_s = 0.0
    for _ in range(max(repeat, 1) + 1):  # the first run warms caches and is discarded
        sim = _core.Simulation(js)
        t0 = time.perf_counter()
        sim.run_until(1e18)
        wall = time.perf_counter() - t0
        raw = sim.finish()
        events = int(raw["events"])
        sim_s = float(raw["sim_time_s"])
        walls.append(wall)
    walls = walls[1:]
    best, med = min(walls), statistics.median(walls)
    print(f"scenario        {path} ({sc.name}, {sim_s:.1f} s simulated)")
    print(f"runs            {len(walls)} timed (+1 warm-up)")
    print(f"wall time       best {best * 1e3:.1f} ms, median {med * 1e3:.1f} ms (core only, excluding output writing)")
    print(f"events          {events}")
    print(f"event rate      {events / best / 1e6:.2f} M events/s (best run)")
    print(f"sim speed       {sim_s / best:.0f}x real time")
    print(f"vs ns-3.44      {ns3_seconds:.1f} s / {best:.4f} s = {ns3_seconds / best:.0f}x faster (median: {ns3_seconds / med:.0f}x)")
    n = 20_000_000
    rates = [_core.engine_microbench(n, 1024) for _ in range(3)]
    print(f"engine alone    {max(rates) / 1e6:.1f} M events/s (push+pop, 1024 pending, best of 3 x {n / 1e6:.0f} M)")
    return 0
