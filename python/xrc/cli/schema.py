"""``xrc schema [--out FILE]``: the JSON Schema of scenario files."""

from __future__ import annotations

import argparse
import sys


def command(args: argparse.Namespace, argv: list[str]) -> int:
    from ..schema import dumps

    text = dumps()
    if args.out:
        from pathlib import Path

        from ..outdir import check_parents, write_whole

        check_parents(Path(args.out))
        # Whole or not at all: a full disk left a truncated schema.
        write_whole(Path(args.out), text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return 0
