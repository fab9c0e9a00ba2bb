"""``xrc kernel load|unload|status``: XRC's sender as a Linux congestion
control (docs/kernel.md)."""

from __future__ import annotations

import argparse

from . import errors


def command(args: argparse.Namespace, argv: list[str]) -> int:
    from ..kernel import main as kernel_main

    with errors.scope("kernel"):
        return kernel_main(args)
