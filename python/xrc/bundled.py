"""Files that ship inside the package: the bundled scenarios, the small
traces they use, and the scenario schema.

Everything is found through :mod:`importlib.resources`, so an installed
wheel finds its files wherever pip put it, and nothing depends on where a
source checkout lies. In a checkout, ``scenarios/`` at the top is a
symbolic link to ``python/xrc/scenarios``: the same files.

A scenario argument that is not a file on disk may name a bundled scenario,
with or without the ``scenarios/`` prefix and the ``.toml`` suffix:
``paper/fig1-time-varying``, ``scenarios/paper/fig1-time-varying.toml``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

#: The bundled scenario the benchmark runs.
BENCH_SCENARIO = "bench/lte-1ue-20s.toml"


def _dir(*parts: str) -> Path:
    node = resources.files("xrc").joinpath(*parts)
    # Scenarios name their traces by relative path, so the files must be
    # real files side by side; every ordinary install (wheel, editable,
    # checkout) puts them on disk.
    if not isinstance(node, Path):
        raise RuntimeError(f"xrc's bundled files are not on a file system ({node!r}); install xrc unzipped")
    return node


def scenarios_dir() -> Path:
    """The directory of bundled scenarios (``paper/``, ``bench/``, ...)."""
    return _dir("scenarios")


def traces_dir() -> Path:
    """The directory of bundled traces (``*.down``) and their scenario."""
    return _dir("scenarios", "traces")


def scenario(name: str) -> Path:
    """The path of a bundled scenario by name (``paper/fig1-time-varying``);
    raises ``FileNotFoundError`` naming what exists."""
    p = find_scenario(name)
    if p is None:
        known = ", ".join(list_scenarios())
        raise FileNotFoundError(f"no bundled scenario {name!r}; bundled: {known}")
    return p


def find_scenario(name: str) -> Path | None:
    """A bundled scenario named `name`, or ``None``."""
    n = name.replace("\\", "/").strip()
    n = n.removeprefix("./").removeprefix("scenarios/")
    if not n or n.startswith("/") or ".." in n.split("/"):
        return None
    root = scenarios_dir()
    for cand in (n, n + ".toml"):
        p = root / cand
        if p.is_file() and p.suffix == ".toml":
            return p
    return None


def list_scenarios() -> list[str]:
    """Names of every bundled scenario (``paper/fig1-time-varying.toml``, ...)."""
    root = scenarios_dir()
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.toml"))


def resolve_scenario_arg(arg: str) -> str:
    """A scenario argument as given, or the bundled scenario it names when
    no such file or directory exists here."""
    if Path(arg).exists():
        return arg
    p = find_scenario(arg)
    return str(p) if p is not None else arg


def schema_path() -> Path:
    """The JSON Schema of scenario files, as shipped."""
    return _dir("data") / "scenario.schema.json"
