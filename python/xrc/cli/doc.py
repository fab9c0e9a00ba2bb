"""``xrc doc NAME``: a congestion control's page, as shipped in the package."""

from __future__ import annotations

import argparse
import sys

from ..scenario import ScenarioError


def command(args: argparse.Namespace, argv: list[str]) -> int:
    from .. import _core, bundled

    page = bundled.algorithm_page(args.scheme) if args.scheme in _core.schemes() else None
    if page is None:
        raise ScenarioError(f"doc: no congestion control {args.scheme!r}; known: {', '.join(_core.schemes())}")
    sys.stdout.write(page.read_text(encoding="utf-8"))
    sys.stdout.flush()
    return 0
