"""Child processes that do not outlive the process that started them, and
memory given back to the system between the phases of a long run."""

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


_TRIM: list = []


def trim_heap() -> None:
    """Gives the memory glibc keeps after frees back to the system
    (``malloc_trim``), where there is glibc; else nothing. A long run's
    phases (streaming, the summary, each figure) each free hundreds of MB
    that glibc would otherwise keep: the resident peak of one phase
    stacked on what the previous ones left."""
    if not _TRIM:
        try:
            libc = ctypes.CDLL(None)
            fn = libc.malloc_trim
            fn.argtypes, fn.restype = [ctypes.c_size_t], ctypes.c_int
        except (OSError, AttributeError):
            fn = None
        _TRIM.append(fn)
    if _TRIM[0] is not None:
        _TRIM[0](0)
