"""SIGTERM, SIGHUP and SIGINT in the ``xrc`` command: stop like Ctrl-C,
wherever the signal lands, and remember that it came. (SIGINT still raises
``KeyboardInterrupt``; it is remembered too because a library swallowed
it: one landing while a sweep forked a worker went to ``logging``'s
after-fork callback, was printed as "Exception ignored" and the sweep ran
on to the end, found by ``xrc fuzz --surface edges``.)

The handler raises :class:`Terminated` in the main thread, so that
``finally`` blocks remove staging directories on the way out. Three places
that exception did harm, found by sending the signal at random calls of a
run (``scripts/sigterm_scan.py``):

- Inside an import. A C extension stopped half-way through its
  initialisation (Matplotlib's ``ft2font`` while it builds its enums)
  aborted the interpreter at exit (``Fatal Python error``, SIGABRT). An
  import is therefore never interrupted: the request is recorded and the
  signal sent again 50 ms later, until it finds the process outside any
  import.
- Inside a library that swallows the exception or turns it into its own: a
  signal landing in Matplotlib's path conversion came out as ``ValueError:
  Invalid affine transformation matrix`` (a traceback, exit 1); one in a
  weak-reference callback was printed as "Exception ignored" and the run
  went on to write its results and exit 0. So the request is also kept
  here: no result is committed after it (:func:`check`, called by
  ``outdir.commit`` and the run loop), ``xrc`` exits with 128 + the signal
  whatever became of the exception, and the "ignored" report is not
  printed for it.

What is not covered: a signal arriving in the instant the command puts the
previous handlers back as it returns (CPython drops a signal whose Python
handler is no longer installed when it gets to run it). Its results are
complete by then.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from typing import Any

#: The signals handled so.
SIGNALS = (signal.SIGTERM, signal.SIGHUP)

#: How long an import is given before the signal is sent again.
_AGAIN_S = 0.05


class Terminated(SystemExit):
    """SIGTERM or SIGHUP: unwinds like Ctrl-C (``finally`` and ``except
    BaseException`` blocks run), then exits with 128 + the signal."""


_signum = 0
_installed = False


def _importing(frame: Any) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib._bootstrap"):
            return True
        frame = frame.f_back
    return False


def _send_again(signum: int) -> None:
    def later() -> None:
        time.sleep(_AGAIN_S)
        if _installed:
            signal.pthread_kill(threading.main_thread().ident, signum)

    threading.Thread(target=later, name="xrc-stop-again", daemon=True).start()


def on_signal(signum: int, frame: Any) -> None:
    """The handler: remember the request, then unwind (after the import in
    progress, if any)."""
    global _signum
    _signum = _signum or signum
    if _importing(frame):
        _send_again(signum)
        return
    raise _exception(signum)


def _exception(signum: int) -> BaseException:
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(128 + signum)


def _unraisable(hook: Any) -> Any:
    def unraisable(u: Any) -> None:
        if isinstance(u.exc_value, Terminated) or (isinstance(u.exc_value, KeyboardInterrupt) and _signum):
            return   # remembered here; the command exits with it
        hook(u)

    return unraisable


def install() -> dict[Any, Any]:
    """Installs the handler (main thread only); returns what to give
    :func:`restore`."""
    global _signum, _installed
    # Nested (xrc fuzz runs `xrc validate` in its own process): the outer
    # command's state comes back with restore().
    saved: dict[Any, Any] = {"unraisablehook": sys.unraisablehook, "state": (_installed, _signum)}
    _signum = 0
    for s in SIGNALS:
        saved[s] = signal.signal(s, on_signal)
    # Unless ignored (a background job of a shell without job control).
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        saved[signal.SIGINT] = signal.signal(signal.SIGINT, on_signal)
    sys.unraisablehook = _unraisable(saved["unraisablehook"])
    _installed = True
    return saved


def restore(saved: dict[Any, Any]) -> None:
    """Puts back what :func:`install` replaced. The request is forgotten (a
    caller may run xrc's main again in the same process) unless an outer
    command is still running, which then stops too."""
    global _installed, _signum
    outer, outer_signum = saved["state"]
    _installed, _signum = outer, (outer_signum or _signum) if outer else 0
    for s in (*SIGNALS, signal.SIGINT):
        if s in saved:
            signal.signal(s, saved[s])
    sys.unraisablehook = saved["unraisablehook"]


def requested() -> int:
    """The signal that asked the running command to stop, or 0 (always 0
    outside the command: the Python API handles no signal)."""
    return _signum if _installed else 0


def check() -> None:
    """Raises Terminated (KeyboardInterrupt for SIGINT) if a stop was asked
    for, even one whose exception was swallowed or put off since."""
    if _installed and _signum:
        raise _exception(_signum)
