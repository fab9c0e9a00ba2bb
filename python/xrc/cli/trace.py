"""``xrc trace synth DIR``: synthetic cellular traces (:mod:`xrc.tracegen`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..scenario import ScenarioError


def command(args: argparse.Namespace, argv: list[str]) -> int:
    from ..tracegen import TraceGenError, TraceModel, stats, write_set

    if args.action == "stats":
        rows = []
        for f in args.files:
            try:
                st = stats(Path(f).read_text())
            except OSError as e:
                raise ScenarioError(f"trace stats: {f}: {e.strerror}") from None
            except TraceGenError as e:
                raise ScenarioError(f"trace stats: {f}: {e}") from None
            rows.append(f"| {Path(f).name} | {st['mean_mbps']} | {st['busy']} | {st['burst']} | {st['cv']} | "
                        f"{st['zero']} |")
        print("| trace | mean Mbit/s | busy | burst | cv | zero |\n|---|---|---|---|---|---|\n" + "\n".join(rows))
        return 0

    try:
        model = TraceModel(seconds=args.seconds, min_mbps=args.min_mbps, max_mbps=args.max_mbps,
                           levels=args.levels, dwell_s=args.dwell_s, fades_per_min=args.fades_per_min,
                           fade_s=args.fade_s, fade_depth=args.fade_depth, outages_per_min=args.outages_per_min,
                           outage_s=tuple(args.outage_s), grant_prob=args.grant_prob)
        if args.seed < 0:
            raise TraceGenError(f"seed must be an integer >= 0, got {args.seed}")
        rows = write_set(Path(args.out), model, args.seed, args.count)
    except TraceGenError as e:
        raise ScenarioError(f"trace synth: {e}") from None
    if not args.quiet:
        for r in rows:
            print(f"{args.out}/{r['file']}: {r['seconds']:.0f} s, mean {r['mean_mbps']:.2f} Mbit/s, "
                  f"fades {r['fade_s']:.1f} s, outages {r['outage_s']:.1f} s ({r['half']})", file=sys.stdout)
    return 0
