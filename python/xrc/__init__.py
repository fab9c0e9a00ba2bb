"""xrc: XRC explicit rate control and a deterministic simulator of the
cellular last hop and TCP to measure it and its competitors.

The simulator core is Rust (``xrc._core``); this package loads scenarios,
runs them, and writes run directories with Parquet series, a summary and
plots.
"""

__version__ = "0.1.0"

from .scenario import Scenario, ScenarioError, load  # noqa: E402

__all__ = ["Scenario", "ScenarioError", "load", "__version__"]
