"""``xrc emulate SCENARIO [-- COMMAND]``: a scenario's network in real time,
with real Linux TCP and applications through it (docs/emulation.md)."""

from __future__ import annotations

import argparse

from . import errors


def command(args: argparse.Namespace, argv: list[str]) -> int:
    from ..emulation.emulate import GSO_DEFAULT
    from ..emulation.emulate import main as emulate_main
    from ..scenario import load

    sc = load(args.scenario, overrides=args.overrides, seed=args.seed)
    inner = args.command
    with errors.scope("emulate"):
        return emulate_main(sc, out=args.out, force=args.force, command=inner,
                            run_flows=not args.no_flows, argv=["xrc", *argv] + (["--", *inner] if inner else []),
                            quiet=args.quiet, xrc_acks=args.xrc_acks,
                            gso=GSO_DEFAULT if args.gso is None else args.gso == "on",
                            kernel_trace=args.kernel_trace,
                            shim=tuple(x.strip() for x in args.shim.split(",") if x.strip()),
                            placeholder=args.xrc_placeholder, tag_key=args.xrc_key)
