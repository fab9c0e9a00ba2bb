"""Child processes that do not outlive the process that started them."""

from __future__ import annotations

import ctypes
import os

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int, sig: int) -> None:
    """In a child process: have Linux send it `sig` when its parent (the
    thread that started it) dies, with PR_SET_PDEATHSIG, and exit at once if
    the parent, `parent` by pid, is already gone (it died before the signal
    was armed). Without this a child that its parent could not stop (a
    SIGTERM or SIGKILL that reaches the parent while it starts the child, or
    before it stops it) runs on alone. Elsewhere than Linux, nothing."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return
    prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    if os.getppid() != parent:
        os._exit(128 + int(sig))
