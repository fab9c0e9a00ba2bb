"""xrc: XRC explicit rate control and a deterministic simulator of the
cellular last hop and TCP to measure it and its competitors.

The simulator core is Rust (``xrc._core``); this package loads scenarios,
runs them, and writes run directories with Parquet series, a summary and
plots. From Python (docs/python.md): ``xrc.run(...)``, ``xrc.read_run(dir)``
and ``xrc.sweep(...)`` return runs whose tables are pandas DataFrames.
"""

__version__ = "0.1.0"

from .scenario import Scenario, ScenarioError, load  # noqa: E402

__all__ = ["Run", "Scenario", "ScenarioError", "load", "read_run", "run", "sweep", "__version__"]

_API = {"Run", "read_run", "run", "sweep"}


def __dir__() -> list[str]:
    # The lazily imported API is listed too (tab completion in notebooks).
    return sorted(set(globals()) | _API)


def __getattr__(name: str):
    # The notebook API (xrc.api) loads pandas; the command line needs it
    # only when asked, so it is imported on first use.
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'xrc' has no attribute {name!r}")
