"""``xrc bench``: the simulator timed on a scenario and the engine alone, on
one cell with 1 to 1,000 UEs (--cell), its peak memory (--memory), or the
Gymnasium environment's steps per second (--gym)."""

from __future__ import annotations

import argparse

from ..scenario import ScenarioError


def command(args: argparse.Namespace, argv: list[str]) -> int:
    from ..bench import bench
    from ..bundled import BENCH_SCENARIO, scenario as bundled_scenario

    if args.memory:
        if args.cell or args.scenario or args.bench_set or args.ues is not None:
            raise ScenarioError("--memory measures its own scenarios: give no scenario, --cell, --set or --ues")
        if not 1 <= args.memory_duration <= 1e6:
            raise ScenarioError(f"--memory-duration must be in [1, 1e6] s, got {args.memory_duration}")
        from ..bench import bench_memory

        return bench_memory(args.memory_duration)
    if args.gym:
        if args.cell or args.bench_set or args.ues is not None:
            raise ScenarioError("--gym measures the environment on a scenario: give no --cell, --set or --ues")
        if args.repeat < 1:
            raise ScenarioError(f"--repeat must be at least 1, got {args.repeat}")
        from ..bench import bench_gym

        return bench_gym(args.scenario, repeat=min(args.repeat, 3))
    if args.cell:
        return _cell(args)
    if args.bench_set or args.ues is not None:
        raise ScenarioError("--set and --ues apply to --cell only")
    if args.repeat < 1:
        raise ScenarioError(f"--repeat must be at least 1, got {args.repeat}")
    if not 0 < args.ns3_seconds < float("inf"):
        raise ScenarioError(f"--ns3-seconds must be a positive number of seconds, got {args.ns3_seconds}")
    path = args.scenario or str(bundled_scenario(BENCH_SCENARIO))
    return bench(path, repeat=args.repeat, ns3_seconds=args.ns3_seconds)


def _cell(args: argparse.Namespace) -> int:
    from ..bench import CELL_SIZES, bench_cell

    try:
        sizes = tuple(int(x) for x in args.ues.split(",")) if args.ues is not None else CELL_SIZES
    except ValueError:
        raise ScenarioError(f"--ues: a comma-separated list of UE counts, got {args.ues!r}") from None
    if not sizes or any(not 1 <= n <= 1000 for n in sizes):
        raise ScenarioError(f"--ues: UE counts must be in [1, 1000], got {args.ues!r}")
    if not 0.001 <= args.duration <= 3600:
        raise ScenarioError(f"--duration must be in [0.001, 3600] s, got {args.duration}")
    cells = [c.strip() for c in args.mu.split(",")]
    if not cells or any(c not in ("lte", "0", "1", "2", "3") for c in cells):
        raise ScenarioError(f"--mu: a comma-separated list of lte and numerologies 0..3, got {args.mu!r}")
    # `--mu lte,lte` measured every size twice.
    for flag, given, items in (("--ues", args.ues, sizes), ("--mu", args.mu, cells)):
        twice = sorted({str(x) for x in items if list(items).count(x) > 1})
        if twice:
            raise ScenarioError(f"{flag}: {', '.join(twice)} given twice in {given!r}; give each once")
    if args.json is not None:
        # Checked before measuring (it failed only after every run).
        from pathlib import Path

        j = Path(args.json)
        if j.is_dir() or not j.parent.is_dir():
            raise ScenarioError(f"--json {args.json!r}: " + ("is a directory" if j.is_dir() else
                                f"no such directory {str(j.parent)!r}"))
    return bench_cell(sizes, args.duration, json_out=args.json, overrides=args.bench_set, cells=cells)
