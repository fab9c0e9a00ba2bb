"""``python -m xrc.fuzz``: the campaign's command line (and its workers)."""

import sys

from .campaign import main

sys.exit(main())
