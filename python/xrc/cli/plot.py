"""``xrc plot RUN... --out DIR``: comparison figures of run directories or of
a sweep's runs."""

from __future__ import annotations

import argparse
import sys


def command(args: argparse.Namespace, argv: list[str]) -> int:
    from ..compare import plot_runs

    res = plot_runs(args.runs, args.out, labels=args.label)
    for w in res["problems"]:
        print(f"xrc: warning: figure: {w}", file=sys.stderr)
    print(f"{len(res['labels'])} runs: {'; '.join(res['labels'])}")
    print(f"wrote {len(res['files'])} files to {args.out}: {', '.join(sorted(res['files']))}")
    return 0
