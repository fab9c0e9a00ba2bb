"""``xrc study nr|roccet``: a study beyond the paper into a report."""

from __future__ import annotations

import argparse

from .parser import check_seeds


def command(args: argparse.Namespace, argv: list[str]) -> int:
    if args.study == "roccet":
        from ..study_roccet import study
    else:
        from ..study_nr import study

    check_seeds(args)
    seeds = {} if args.seeds is None else {"seeds": args.seeds}
    text = study(args.out, quick=args.quick, jobs=args.jobs, force=args.force, **seeds)
    print(text, end="")
    return 0
