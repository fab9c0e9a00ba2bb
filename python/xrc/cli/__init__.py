"""The ``xrc`` command: run, validate, sweep, plot, reproduce, study, schema,
list, bench, fuzz, emulate and validate-linux. Every subcommand and option is
described in docs/cli.md (tests/test_cli_docs.py keeps the two in step);
``xrc SUBCOMMAND --help`` prints the same.

SCENARIO may also name a scenario bundled with xrc when no such file
exists here: ``paper/fig1-time-varying`` or
``scenarios/paper/fig1-time-varying.toml`` work from any directory.

Exit status: 0 on success, 2 for bad input (the message names the field and
the value), 1 for anything else; 130 after Ctrl-C, 128 + N after signal N.

The parser is :mod:`xrc.cli.parser`; each subcommand's body is a module of
this package (``xrc validate-linux``: :mod:`xrc.cli.validate_linux`),
imported only when it runs, so that ``xrc --help`` and ``xrc list`` load no
more than they need; :mod:`xrc.cli.errors` maps what they raise to the
message and the exit status. ``xrc fuzz`` parses its own arguments
(:func:`xrc.fuzz.main`).
"""

from __future__ import annotations

import importlib
import sys

from .. import stopping
from . import errors, parser

__all__ = ["main"]

#: The module of each subcommand, in this package. None is named like
#: anything this module defines: importing a submodule binds its name here.
COMMANDS = {
    "run": "run",
    "emulate": "emulate",
    "kernel": "kernel",
    "validate": "validate",
    "sweep": "sweep",
    "reproduce": "reproduce",
    "study": "study",
    "validate-linux": "validate_linux",
    "plot": "plot",
    "schema": "schema",
    "bench": "bench",
    "list": "listing",
    "doc": "doc",
    "trace": "trace",
}


def main(argv: list[str] | None = None) -> int:
    """Runs ``xrc`` with ``argv`` (default: ``sys.argv[1:]``); returns the
    exit status."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return _main(argv)
    # Without this the process died at once: its staging directory stayed
    # beside --out and a sweep's workers went on running, orphaned.
    saved = None
    try:
        # Inside the try: a Ctrl-C the instant the handlers are in place is
        # an interruption too, not a traceback (found by the edge fuzzer).
        saved = stopping.install()
        rc = _main(argv)
        if rc == 130 and stopping.requested() == signal.SIGINT:
            return rc   # the subcommand said so already
        # A handler's exception swallowed by a library on the way: the
        # command finished, but was asked to stop (it wrote no result
        # after the request; see `stopping`).
        stopping.check()
        return rc
    except BaseException as e:
        status = errors.stopped(e)
        if status is None:
            raise
        return status
    finally:
        if saved is not None:
            stopping.restore(saved)


def _main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["fuzz"]:
        from ..fuzz import main as fuzz_main

        return fuzz_main(argv[1:])
    ap = parser.build()
    command = None
    if argv[:1] == ["emulate"] and "--" in argv:
        cut = argv.index("--")
        argv, command = argv[:cut], argv[cut + 1:] or None
    args = ap.parse_args(argv)
    if args.version:
        from .. import __version__, _core

        print(f"xrc {__version__} (core {_core.version()})")
        return 0
    if args.cmd is None:
        ap.print_help()
        return 2
    # What runs in the UE's namespace (xrc emulate ... -- COMMAND).
    args.command = command
    try:
        parser.check(args)
        name = COMMANDS.get(args.cmd)
        if name is None:
            return 1
        return importlib.import_module(f".{name}", __name__).command(args, argv)
    except BaseException as e:
        status = errors.report(e)
        if status is None:
            raise
        return status
