"""``xrc reproduce --out DIR``: every experiment of the XRC paper into a
report, and each claim's verdict printed."""

from __future__ import annotations

import argparse
import sys

from ..scenario import ScenarioError
from .parser import check_seeds


def command(args: argparse.Namespace, argv: list[str]) -> int:
    from ..reproduce import DEFAULT_VARIANTS, reproduce, studied_schemes

    check_seeds(args)
    if args.seeds is None:
        args.seeds = 5
    others = [c for c in studied_schemes() if c != "xrc"]
    for v in args.variant or []:
        if v != "none" and v not in others:
            raise ScenarioError(f"--variant: {v!r} is not a scheme other than xrc (one of: "
                                f"{', '.join(others)}, or none)")
    if not args.quiet:
        from ..reproduce.experiments import trace_files

        found = trace_files(args.traces)
        where = "bundled with xrc" if args.traces is None else f"from {args.traces}"
        print(f"trace study: {len(found)} trace(s) {where}: {', '.join(p.name for p in found)}")
        sys.stdout.flush()
    variants = tuple(v for v in (args.variant or DEFAULT_VARIANTS) if v != "none")
    res = reproduce(args.out, quick=args.quick, seeds=args.seeds, jobs=args.jobs, engine=args.engine,
                    address=args.address, force=args.force, progress=not args.quiet, traces=args.traces,
                    variants=variants)
    if not args.quiet:
        m = res["meta"]
        from ..reproduce.report import fmt_unit

        held = sum(c["holds"] for c in res["claims"])
        vs = m.get("variants") or []
        also = "".join(f"; {v}: {sum(bool(c.get(v) and c[v]['holds']) for c in res['claims'])}" for v in vs)
        print(f"{m['runs']} runs in {m['wall_time_s']:.1f} s; {held} of {len(res['claims'])} claims hold "
              f"(xrc{also}); report: {args.out}/report.html")
        for c in res["claims"]:
            extra = "".join(f"  {v}: {fmt_unit(c[v]['ours'], c['unit'])} {c[v]['verdict'].upper()}"
                            if c.get(v) else f"  {v}: -" for v in vs)
            print(f"  {c['verdict'].upper():<12} {c['id']:<22} paper: {c['paper']:<32} "
                  f"ours: {fmt_unit(c['ours'], c['unit'])}{extra}")
    return 0
