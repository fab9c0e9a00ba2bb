"""``xrc validate SCENARIO``: a scenario checked, and printed resolved."""

from __future__ import annotations

import argparse
import sys


def command(args: argparse.Namespace, argv: list[str]) -> int:
    import json

    from ..scenario import load

    sc = load(args.scenario, overrides=args.overrides, seed=args.seed)
    if args.print:
        print(json.dumps(sc.resolved, indent=2, sort_keys=True))
        sys.stdout.flush()
    else:
        print(f"{args.scenario}: ok ({sc.name}, seed {sc.seed}, {len(sc.resolved['flows'])} flows, "
              f"{sc.resolved['duration_s']} s)")
    return 0
