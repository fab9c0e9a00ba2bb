"""``xrc list [scenarios|schemes]``: the bundled scenarios and the congestion
controls. (Not ``list.py``: a submodule's import binds its name in the
package, where ``list`` is the built-in.)"""

from __future__ import annotations

import argparse


def command(args: argparse.Namespace, argv: list[str]) -> int:
    from .. import _core, bundled
    from ..schemes import label_of

    if args.what in (None, "scenarios"):
        print("Bundled scenarios (xrc run NAME --out DIR, from any directory):")
        for name, desc in bundled.describe_scenarios():
            print(f"  {name:<34} {desc}" if desc else f"  {name}")
    if args.what is None:
        print()
    if args.what in (None, "schemes"):
        pages = bundled.algorithms_dir()
        print(f"Congestion controls (cc = NAME; its page: xrc doc NAME, or {pages}/NAME.md):")
        for name in _core.schemes():
            print(f"  {name:<12} {label_of(name)}")
    return 0
