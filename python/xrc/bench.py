"""``xrc bench``: speed of the whole simulator on a scenario and of the
event engine alone, printed as numbers (never asserted in tests: machines
are noisy)."""

from __future__ import annotations

import json
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
    print(f"vs ns-3.44      {ns3_seconds:.1f} s / {best:.4f} s = {ns3_seconds / best:.0f}x faster (median: {ns3_seconds / med:.0f}x; "
          f"ns-3's time is the stored figure of docs/performance.md, not measured now: `make bench-ns3` measures both)")
    n = 20_000_000
    rates = [_core.engine_microbench(n, 1024) for _ in range(3)]
    print(f"engine alone    {max(rates) / 1e6:.1f} M events/s (push+pop, 1024 pending, best of 3 x {n / 1e6:.0f} M)")
    return 0


# ----- one cell, many UEs (the cost must stay linear in the UEs) -----

#: UE counts of the cell benchmark.
CELL_SIZES = (1, 10, 100, 400, 1000)
#: CQIs the UEs take in turn (UE i has CELL_CQIS[i % 5]).
CELL_CQIS = (15, 13, 11, 9, 7)


def cell_scenario_text(n_ues: int, duration_s: float = 60.0, *, name: str | None = None, bandwidth_mhz: int = 20,
                       cqis: tuple[int, ...] = CELL_CQIS, cell_tables: tuple[str, ...] = ()) -> str:
    """The cell benchmark's scenario: one 20 MHz LTE cell (100 PRBs, PF),
    `n_ues` UEs with fixed CQIs (15, 13, 11, 9, 7 in turn), one bulk CUBIC
    flow per UE from the start, 15 ms each way on the Internet path, every
    output at its default (every series on, RLC sampled every TTI).
    ``name``, ``bandwidth_mhz``, ``cqis`` and ``cell_tables`` (TOML lines
    appended after ``[cell]``, e.g. ``[cell.harq]`` sections) vary it for
    other benchmarks (scripts/bench_ns3_lte.py)."""
    lines = [
        f'name = "{name or f"cell-{n_ues}ue"}"',
        "seed = 1",
        f"duration_s = {float(duration_s)!r}",
        'topology = "cellular"',
        "",
        "[internet]",
        "delay_ms = 15.0",
        "rate_mbps = 1000.0",
        "",
        "[cell]",
        f"bandwidth_mhz = {bandwidth_mhz}",
        'scheduler = "pf"',
        "",
        *cell_tables,
    ]
    for i in range(n_ues):
        lines += ["[[ues]]", f'channel = {{ kind = "fixed_cqi", cqi = {cqis[i % len(cqis)]} }}', ""]
    for i in range(n_ues):
        lines += ["[[flows]]", f'id = "ue{i}"', f"ue = {i}", 'cc = "cubic"', ""]
    return "\n".join(lines)


def _cell_child(n_ues: int, duration_s: float, out: str, overrides: list[str] | None = None) -> int:
    """One size, in its own process (so that its peak RSS is its own): runs
    the scenario as `xrc run --no-plots` does and prints what it measured
    as JSON."""
    from pathlib import Path

    from .runner import run_to_dir
    from .scenario import load_text

    sc = load_text(cell_scenario_text(n_ues, duration_s), base=Path.cwd(), overrides=overrides)
    stats: dict = {}
    t0 = time.perf_counter()
    summary = run_to_dir(sc, out, force=True, plots=False, stats=stats)
    wall = time.perf_counter() - t0
    size = sum(p.stat().st_size for p in Path(out).glob("*.parquet"))
    # The same scenario in the core alone (no Python, no Parquet beside it),
    # best of CORE_ALONE_REPEAT, after the whole run (whose peak RSS is the
    # larger).
    alone = []
    for _ in range(CORE_ALONE_REPEAT):
        events, secs = _core.core_alone(sc.resolved_json())
        if events != summary["events"]:
            raise RuntimeError(f"the core alone ran {events} events, the whole run {summary['events']}")
        alone.append(secs)
    print(json.dumps({"ues": n_ues, "events": summary["events"], "sim_s": summary["sim_time_s"], "run_s": wall,
                      "parquet_bytes": size, "core_s": stats["core_s"], "rows": sum(stats["rows"].values()),
                      "rlc_rows": stats["rows"].get("rlc", 0), "alone_s": min(alone)}))
    return 0


def _measured_child(argv: list[str], read: str) -> tuple[int, str, float, int]:
    """Runs `argv` as a child that dies with this process; returns its exit
    status, the text of its `read` stream ("stdout" or "stderr"; the other
    is inherited or dropped), its wall time and its own peak RSS in bytes
    (getrusage of that child alone, through wait4)."""
    import os
    import subprocess

    t0 = time.perf_counter()
    p = subprocess.Popen(argv, text=True, env={**os.environ, PARENT_ENV: str(os.getpid())},
                         stdout=subprocess.PIPE if read == "stdout" else subprocess.DEVNULL,
                         stderr=subprocess.PIPE if read == "stderr" else None)
    try:
        text = (p.stdout if read == "stdout" else p.stderr).read()
        _, status, usage = os.wait4(p.pid, 0)
    except BaseException:
        # Ctrl-C reaches the child too, SIGTERM only this process.
        p.kill()
        p.wait()
        raise
    return os.waitstatus_to_exitcode(status), text, time.perf_counter() - t0, usage.ru_maxrss * 1024  # KiB


def measure_cell(n_ues: int, duration_s: float = 60.0, overrides: list[str] | None = None) -> dict:
    """Runs one size in a child process; adds its peak RSS (getrusage of
    that child alone, through wait4) and its wall time."""
    import os
    import shutil
    import sys
    import tempfile

    out = tempfile.mkdtemp(prefix=f"xrc-bench-{n_ues}-")
    try:
        code, text, wall, peak = _measured_child(
            [sys.executable, "-m", "xrc.bench", "--child", str(n_ues), repr(duration_s), os.path.join(out, "run"),
             *(overrides or [])], read="stdout")
        if code != 0:
            raise RuntimeError(f"the {n_ues}-UE run failed (exit {code})")
        r = json.loads(text.strip().splitlines()[-1])
        r["process_s"] = wall
        r["peak_rss_bytes"] = peak
        return r
    finally:
        shutil.rmtree(out, ignore_errors=True)


def nr_overrides(cell: str) -> list[str]:
    """The cell benchmark's scenario as an NR cell of numerology `cell`
    ("0".."3"): 50 MHz FDD (270 PRBs at μ = 0, 133 at 1, 65 at 2, 32 at 3:
    about the same bits per millisecond at every μ), the same UEs, flows,
    uplink and path, the per-TTI table sampled every millisecond; `[]` for
    "lte"."""
    if cell == "lte":
        return []
    # The per-TTI table sampled once per millisecond, as in the LTE cell:
    # the same rows per simulated second at every μ.
    return ["cell.rat=nr", "cell.bandwidth_mhz=50", f"cell.nr.numerology={cell}",
            f"output.rlc_sample_ttis={2 ** int(cell)}"]


def bench_cell(sizes=CELL_SIZES, duration_s: float = 60.0, json_out: str | None = None,
               overrides: list[str] | None = None, cells=("lte",)) -> int:
    """Prints the cell benchmark's tables (one per cell kind, one row per UE
    count) and, with μ = 0 and μ = 3, their cost ratio."""
    by_cell = {}
    for cell in cells:
        by_cell[cell] = _bench_one_cell(sizes, duration_s, (overrides or []) + nr_overrides(cell), cell,
                                        user_overrides=overrides)
    if "0" in by_cell and "3" in by_cell:
        print("mu = 3 over mu = 0, time in the core per simulated second (same traffic; target: at most 8x):")
        for r0, r3 in zip(by_cell["0"], by_cell["3"]):
            print(f"  {r0['ues']:>5} UEs: {r3['core_s'] / r0['core_s']:.2f}x in the core, "
                  f"{r3['run_s'] / r0['run_s']:.2f}x wall", flush=True)
    if json_out:
        import os

        tmp = f"{json_out}.tmp-{os.getpid()}"
        try:
            with open(tmp, "w") as f:
                json.dump({"duration_s": duration_s, "overrides": overrides or [],
                           "cells": {c: rows for c, rows in by_cell.items()}}, f, indent=1)
            os.replace(tmp, json_out)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return 0


def _bench_one_cell(sizes, duration_s: float, overrides: list[str], cell: str,
                    user_overrides: list[str] | None) -> list[dict]:
    """One table of :func:`bench_cell`."""
    if overrides:
        # Refused here, before any child runs, if a setting is wrong.
        from pathlib import Path

        from .scenario import load_text

        load_text(cell_scenario_text(1, duration_s), base=Path.cwd(), overrides=overrides)
    what = f"with {' '.join(user_overrides)}" if user_overrides else "every output at its default"
    kind = ("one 20 MHz LTE cell (1 ms TTI)" if cell == "lte" else
            f"one 50 MHz NR FDD cell (mu = {cell}: {1 / 2 ** int(cell):g} ms slot)")
    print(f"{kind}, {duration_s:g} s, one bulk CUBIC flow per UE, "
          f"{what}, written as `xrc run --no-plots` writes it")
    head = (f"{'UEs':>5} {'sim s/wall s':>12} {'wall':>8} {'core':>8} {'events':>10} {'events/s':>10} "
            f"{'alone':>8} {'events/s':>10} {'peak RSS':>9} {'Parquet':>8}")
    print(head)
    rows = []
    for n in sizes:
        r = measure_cell(n, duration_s, overrides)
        rows.append(r)
        print(f"{n:>5} {r['sim_s'] / r['run_s']:>12.1f} {r['run_s']:>7.2f}s {r['core_s']:>7.2f}s {r['events']:>10} "
              f"{r['events'] / r['core_s'] / 1e6:>8.2f} M {r['alone_s']:>7.2f}s {r['events'] / r['alone_s'] / 1e6:>8.2f} M "
              f"{r['peak_rss_bytes'] / 1e6:>7.0f} MB "
              f"{r['parquet_bytes'] / 1e6:>6.0f} MB", flush=True)
    print("wall: the whole run (core, Parquet, summary; not plots, not interpreter start-up); core: inside the "
          "simulator in that run (events/s is events over this; it includes handing the rows over, beside the "
          "thread writing Parquet); alone: the same scenario in the core alone, its rows dropped as they would "
          f"be handed over (best of {CORE_ALONE_REPEAT}); peak RSS: the run's process (getrusage)")
    if len(rows) >= 2:
        by = {r["ues"]: r for r in rows}
        rate = {n: by[n]["events"] / by[n]["core_s"] for n in by}
        alone = {n: by[n]["events"] / by[n]["alone_s"] for n in by}
        if 1 in by and 400 in by:
            print(f"events/s, 1 UE over 400 UEs: {rate[1] / rate[400]:.2f}x in the whole run's core, "
                  f"{alone[1] / alone[400]:.2f}x in the core alone (target: within 2x)")
        if 400 in by and 1000 in by:
            print(f"wall, 1000 UEs over 400 UEs: {by[1000]['run_s'] / by[400]['run_s']:.2f}x (target: at most 3x)")
        if 1000 in by:
            print(f"peak RSS, 1000 UEs: {by[1000]['peak_rss_bytes'] / 1e9:.2f} GB (target: at most 1 GB)")
    print(flush=True)
    return rows


#: ``xrc bench --memory``: the scenarios (a wired flow, a 1-UE LTE cell)
#: and the bound each way of running them must stay under, in bytes of
#: peak resident memory. ``xrc run --out`` streams its tables to disk and
#: reads them back in pieces; a run held in memory stops at
#: ``runner.IN_MEMORY_ROWS`` rows.
MEMORY_SCENARIOS = ("validation/dumbbell-20mbit-40ms", "bench/lte-1ue-20s")
MEMORY_BOUND_OUT = 1 << 30
MEMORY_BOUND_IN_MEMORY = 3 << 29

_MEMORY_CHILD = r"""
import sys
from xrc.bench import _die_with_parent
_die_with_parent()
how, name, duration, out = sys.argv[1:5]
if how == "out":
    from xrc.cli import main
    sys.exit(main(["run", name, "--set", f"duration_s={duration}", "--out", out, "--quiet"]))
import xrc
try:
    xrc.run(name, duration_s=float(duration))
except xrc.ScenarioError as e:
    print(f"refused: {e}", file=sys.stderr)
    sys.exit(2)
"""


def bench_memory(duration_s: float = 1e5) -> int:
    """Peak resident memory of ``xrc run --out`` (with its plots) and of
    ``xrc.run`` in memory, for each of :data:`MEMORY_SCENARIOS` over
    `duration_s` simulated seconds, each in its own process (getrusage of
    that child, through wait4). Prints a table and whether each stayed
    under its bound; returns 1 if one did not."""
    import os
    import shutil
    import sys
    import tempfile

    from .runner import IN_MEMORY_ROWS

    print(f"peak memory at {duration_s:g} simulated seconds (each run in its own process)")
    print(f"{'scenario':34} {'how':22} {'outcome':44} {'wall s':>7} {'peak MB':>8} {'bound MB':>8}")
    over = 0
    for name in MEMORY_SCENARIOS:
        for how, bound in (("out", MEMORY_BOUND_OUT), ("memory", MEMORY_BOUND_IN_MEMORY)):
            work = tempfile.mkdtemp(prefix="xrc-bench-memory-")
            try:
                code, err, wall, peak = _measured_child(
                    [sys.executable, "-c", _MEMORY_CHILD, how, name, repr(duration_s), os.path.join(work, "run")],
                    read="stderr")
            finally:
                shutil.rmtree(work, ignore_errors=True)
            if code == 0:
                outcome = "ran to the end"
            elif code == 2 and "refused:" in err:
                import re

                reason = err.split("refused: ", 1)[1]
                at = re.search(r"reached that (\d+) s", reason)
                outcome = (f"stopped at {at.group(1)} s ({IN_MEMORY_ROWS:.0e} rows held)" if at else
                           f"refused before running ({reason.split(':', 1)[0]})")[:44]
            else:
                outcome = f"FAILED (exit {code})"
                print(err[-2000:], file=sys.stderr)
            ok = code in (0, 2) and peak <= bound
            over += not ok
            print(f"{name:34} {'xrc run --out' if how == 'out' else 'xrc.run (in memory)':22} {outcome:44} "
                  f"{wall:7.1f} {peak / 2**20:8.0f} {bound / 2**20:8.0f}{'' if ok else '  OVER'}", flush=True)
    return 1 if over else 0


#: Runs of each size in the core alone (`alone`); the best is shown.
CORE_ALONE_REPEAT = 3

#: The measuring process's pid, handed to the measured child.
PARENT_ENV = "XRC_BENCH_PARENT"


def _die_with_parent() -> None:
    """In the measured child: be killed when the bench dies. A SIGTERM that
    reaches the bench while it is still starting this child (before it
    holds a handle to kill it with) would otherwise leave it running."""
    import os
    import signal

    from ._proc import die_with_parent

    parent = os.environ.get(PARENT_ENV)
    if parent:
        die_with_parent(int(parent), signal.SIGKILL)


if __name__ == "__main__":
    import sys

    if len(sys.argv) >= 5 and sys.argv[1] == "--child":
        _die_with_parent()
        sys.exit(_cell_child(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5:]))
    print("usage: python -m xrc.bench --child UES DURATION_S OUT_DIR [PATH=VALUE ...] (used by `xrc bench --cell`)",
          file=sys.stderr)
    sys.exit(2)


# ----- the Gymnasium environment (xrc.gym) -----

#: Aurora's gym (PCC-RL's simulated network, one process), as measured on
#: this kind of machine and quoted where the environment was asked for:
#: steps per second at low rates and at 50-60 Mbit/s. Stored, not measured
#: here.
AURORA_STEPS_PER_S = {"low rates": 873, "50-60 Mbit/s": 104}

#: Offered rates of the gym benchmark, Mbit/s: low, and beyond the bench
#: cell's capacity (about 36 Mbit/s at CQI 15 on 10 MHz), as Aurora's
#: 50-60 Mbit/s figure.
GYM_RATES = (2.0, 50.0)


def bench_gym(path: str | None = None, *, step_ms: float = 10.0, repeat: int = 3, num_envs: int = 32) -> int:
    """Steps per second of ``xrc.gym`` on one core (the environment and the
    core alone), and the vector environment's aggregate on 1 and 2 threads,
    over whole episodes of the 1-UE LTE bench scenario at a `step_ms` step."""
    try:
        import numpy as np

        from .gym import CongestionControlEnv, CongestionControlVectorEnv
    except ImportError as e:
        print(f"gym             skipped: {e}")
        return 0
    from .bundled import BENCH_SCENARIO, scenario as bundled_scenario

    path = path or str(bundled_scenario(BENCH_SCENARIO))
    env = CongestionControlEnv(path, 0, action="rate", step_ms=step_ms)
    steps = int(round(env._base["duration_s"] * 1e3 / step_ms))
    print(f"gym scenario    {path} ({env.scenario_name}, flow 0 driven, {step_ms:g} ms step, "
          f"{steps} steps an episode; best of {repeat} episodes)")
    for name, n in AURORA_STEPS_PER_S.items():
        print(f"Aurora's gym    {n:,} steps/s at {name} (stored figure, not measured here)")

    def episode(rate: float) -> tuple[float, int, float]:
        env.reset(seed=1)
        a = np.array([rate], dtype=np.float32)
        delivered = 0.0
        n = 0
        t0 = time.perf_counter()
        while True:
            _, _, term, trunc, info = env.step(a)
            n += 1
            delivered += info["delivery_rate_mbps"]
            if term or trunc:
                break
        return time.perf_counter() - t0, n, delivered / n

    def core_alone(rate: float) -> tuple[float, int]:
        env.reset(seed=1)
        sim, ns = env.simulation, env._interval_ns
        done = sim.FIELDS.index("done")
        n = 0
        t0 = time.perf_counter()
        while sim.step(ns, rate * 1e6, None)[done] == 0.0:
            n += 1
        return time.perf_counter() - t0, n + 1

    for rate in GYM_RATES:
        runs = [episode(rate) for _ in range(repeat)]
        wall, n, got = min(runs)
        core = min(core_alone(rate) for _ in range(repeat))
        print(f"gym, 1 core     {n / wall:,.0f} steps/s offering {rate:g} Mbit/s (the flow got {got:.1f}); "
              f"core alone {core[1] / core[0]:,.0f} steps/s")
    for threads in (1, 2):
        vec = CongestionControlVectorEnv(num_envs, threads=threads, scenario=path, action="rate", step_ms=step_ms)
        best = 0.0
        for _ in range(repeat):
            vec.reset(seed=1)
            a = np.full((num_envs, 1), GYM_RATES[-1], dtype=np.float32)
            t0 = time.perf_counter()
            for _ in range(steps - 1):
                vec.step(a)
            best = max(best, (steps - 1) * num_envs / (time.perf_counter() - t0))
        print(f"gym, vector     {best:,.0f} steps/s aggregate, {num_envs} environments on {threads} thread"
              f"{'s' if threads > 1 else ''} offering {GYM_RATES[-1]:g} Mbit/s")
    return 0
