"""What ``xrc`` prints and exits with when a subcommand raises: the one map
from exceptions to exit statuses and messages.

- 2: bad input (:class:`~xrc.scenario.ScenarioError`, of which
  :class:`~xrc.outdir.OutputError` is one; a file that cannot be read or
  written; stdout closed by its reader; a machine the emulator cannot use).
- 1: a run that failed on the way (a worker process killed, the emulator,
  ``ip``, ``iperf3`` or the kernel failing).
- 130: Ctrl-C. 128 + N: signal N (SIGTERM, SIGHUP; see :mod:`xrc.stopping`).
- Anything else is a bug: its traceback is printed (exit 1).

A subcommand marks the part of it where failures of its own kind are
expected with ``with scope(NAME):``; the rules of that scope are tried
first, then those that hold everywhere.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator

from .. import stopping

#: An exception class, or "module:Class" for one of a module that the
#: command imports only when needed: it is looked up among the modules
#: already imported (one never imported cannot have raised), so naming it
#: here imports nothing.
Kind = type | str


def _says(prefix: str = "") -> Callable[[BaseException], str]:
    return lambda e: f"xrc: error: {prefix}{e}"


def _os_error(e: OSError) -> str:
    where = f"{e.filename}: " if e.filename else ""
    return f"xrc: error: {where}{e.strerror or e}"


def _reader_gone(e: BaseException) -> str:
    # The reader went away (`xrc validate --print | head`): stop quietly,
    # and keep the interpreter from failing to flush at exit.
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return "xrc: error: output closed by the reader (broken pipe)"


#: (scope or None for everywhere, exception kinds, exit status, message),
#: the first that matches wins.
RULES: tuple[tuple[str | None, tuple[Kind, ...], int, Callable[[BaseException], str]], ...] = (
    ("kernel", ("xrc.kernel:KernelError",), 2, _says("kernel: ")),
    ("kernel", (RuntimeError,), 1, _says("kernel: ")),
    ("emulate", ("xrc.emulation.testbed:TestbedError",), 2, _says()),
    # A run that failed (ip, iperf3, the emulator): cleaned up.
    ("emulate", (RuntimeError, "subprocess:SubprocessError"), 1, _says("emulate: ")),
    # Real runs: a machine that cannot run them, or input only the harness
    # can check.
    ("validate-linux", ("xrc.emulation.testbed:TestbedError", ValueError), 2, _says()),
    # A run that failed (iperf3, ip, the emulator): everything is cleaned
    # up; what was measured before it is in --out.
    ("validate-linux", (RuntimeError, OSError, "subprocess:SubprocessError"), 1, _says("validate-linux: ")),
    # --resim and --merge: a file that is not a results file, a trace it
    # names that is not there, a scenario the core refuses.
    ("validate-linux results", (ValueError, "xrc.emulation.linuxref:HarnessError"), 2, _says()),
    (None, ("xrc.scenario:ScenarioError",), 2, _says()),
    (None, (KeyboardInterrupt,), 130, lambda e: "xrc: interrupted"),
    (None, ("xrc.parallel:WorkerDied",), 1, _says()),
    (None, (BrokenPipeError,), 2, _reader_gone),
    (None, (OSError,), 2, _os_error),
)

_SCOPE = "_xrc_cli_scope"


@contextlib.contextmanager
def scope(name: str) -> Iterator[None]:
    """Marks an exception raised inside as raised in scope ``name`` (the
    innermost scope wins), for :func:`report`."""
    try:
        yield
    except Exception as e:
        if not hasattr(e, _SCOPE):
            setattr(e, _SCOPE, name)
        raise


def _classes(kinds: tuple[Kind, ...]) -> tuple[type, ...]:
    found = []
    for k in kinds:
        if isinstance(k, str):
            module, _, name = k.partition(":")
            k = getattr(sys.modules.get(module), name, None)
        if k is not None:
            found.append(k)
    return tuple(found)


def report(e: BaseException) -> int | None:
    """Prints the message for ``e`` and returns the exit status; None for
    an exception of none of the kinds above (a bug, or SystemExit)."""
    where = getattr(e, _SCOPE, None)
    for name, kinds, status, message in RULES:
        if name in (None, where) and isinstance(e, _classes(kinds)):
            print(message(e), file=sys.stderr)
            return status
    return None


def stopped(e: BaseException) -> int | None:
    """After a SIGTERM or SIGHUP (:mod:`xrc.stopping`): prints that and
    returns 128 + the signal, also when a library turned the handler's
    exception into its own (a ValueError from Matplotlib: that is the
    signal, not a bug). Ctrl-C is 130, also when it came before a
    subcommand's own handling (while the arguments were parsed; it was a
    traceback) or was swallowed by a library (:mod:`xrc.stopping`
    remembers it). None for any other exception."""
    if isinstance(e, KeyboardInterrupt) or stopping.requested() == signal.SIGINT:
        print("xrc: interrupted", file=sys.stderr)
        return 130
    if not (isinstance(e, stopping.Terminated) or stopping.requested()):
        return None
    sig = stopping.requested() or (e.code - 128 if isinstance(e.code, int) else signal.SIGTERM)
    print(f"xrc: terminated ({signal.Signals(sig).name})", file=sys.stderr)
    return 128 + sig
