"""``xrc study nr|roccet|frontier``: a study beyond the paper into a report."""

from __future__ import annotations

import argparse

from .parser import check_seeds


def command(args: argparse.Namespace, argv: list[str]) -> int:
    from ..scenario import ScenarioError

    if args.study != "frontier" and (args.traces is not None or args.duration is not None):
        raise ScenarioError(f"--traces and --duration are options of `xrc study frontier`, not of {args.study}")
    if args.study == "frontier":
        from ..study_frontier import study as frontier

        if args.seeds is not None:
            raise ScenarioError("--seeds: the frontier study runs each trace once (its runs are deterministic)")
        text = frontier(args.out, traces=args.traces, quick=args.quick, jobs=args.jobs, force=args.force,
                        duration_s=args.duration)
        print(text, end="")
        return 0
    if args.study == "roccet":
        from ..study_roccet import study
    else:
        from ..study_nr import study

    check_seeds(args)
    seeds = {} if args.seeds is None else {"seeds": args.seeds}
    text = study(args.out, quick=args.quick, jobs=args.jobs, force=args.force, **seeds)
    print(text, end="")
    return 0
