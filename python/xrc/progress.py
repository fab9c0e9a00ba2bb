"""Progress bars that stay out of logs.

A bar redraws itself with carriage returns: on a terminal that is a bar,
in a log file or a CI transcript it is hundreds of ``\\r`` fragments. So a
bar is shown only when stderr is a terminal (and ``TERM`` is not
``dumb``); with ``NO_COLOR`` set (https://no-color.org) it is drawn in
plain ASCII without colour.
"""

from __future__ import annotations

import os
import sys
from typing import Any


def wanted(stream=None) -> bool:
    """Whether a bar belongs on `stream` (default stderr)."""
    stream = sys.stderr if stream is None else stream
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        return False
    return tty and os.environ.get("TERM") != "dumb"


def bar(enabled: bool = True, **kwargs: Any):
    """A tqdm bar on stderr, or ``None`` where it does not belong."""
    if not (enabled and wanted()):
        return None
    from tqdm import tqdm

    if os.environ.get("NO_COLOR"):
        kwargs.update(ascii=True, colour=None)
    return tqdm(file=sys.stderr, **kwargs)
