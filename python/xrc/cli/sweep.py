"""``xrc sweep FILE``: a sweep file's grid of runs, resumable, merged into one
table, and its digest printed."""

from __future__ import annotations

import argparse
from pathlib import Path


def command(args: argparse.Namespace, argv: list[str]) -> int:
    from ..sweeps import digest, load_sweep, run_sweep

    sw = load_sweep(args.sweep)
    out = args.out or str(Path("runs") / Path(args.sweep).stem)
    # A run that cannot be written (a full disk) raises OutputError: the
    # runs done before it are kept, the earlier table is untouched.
    path = run_sweep(sw, out, jobs=args.jobs, engine=args.engine, address=args.address, progress=not args.quiet)
    if not args.quiet:
        print(digest(path))
        print(f"{len(sw.runs())} runs; merged table: {path} (the rows above: means over seeds)")
    return 0
