"""``python -m xrc.cli``: the ``xrc`` command."""

import sys

from . import main

sys.exit(main())
