"""Files that ship inside the package: the bundled scenarios, the small
traces they use, the scenario schema and the page of each congestion
control.

Everything is found through :mod:`importlib.resources`, so an installed
wheel finds its files wherever pip put it, and nothing depends on where a
source checkout lies. In a checkout, ``scenarios/`` at the top is a
symbolic link to ``python/xrc/scenarios``, and ``docs/algorithms`` one to
``python/xrc/docs/algorithms``: the same files.

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


def algorithms_dir() -> Path:
    """The directory of the congestion controls' pages (``NAME.md``)."""
    return _dir("docs", "algorithms")


def algorithm_page(name: str) -> Path | None:
    """The page of congestion control `name` (``cc = NAME``), or ``None``."""
    if not name or "/" in name or "\\" in name or name.startswith("."):
        return None
    p = algorithms_dir() / f"{name}.md"
    return p if p.is_file() else None


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


def describe_scenarios(width: int = 90) -> list[tuple[str, str]]:
    """Every bundled scenario's name (without ``.toml``) and the start of its
    ``description``, or of its header comment where it has none, cut to
    `width` characters at a word."""
    import tomllib

    out = []
    for name in list_scenarios():
        text = (scenarios_dir() / name).read_text()
        try:
            desc = str(tomllib.loads(text).get("description", ""))
        except tomllib.TOMLDecodeError:
            desc = ""
        if not desc.strip():
            head = []
            for line in text.splitlines():
                if not line.startswith("#") or not line.strip("# "):
                    break
                head.append(line.strip("# "))
            desc = " ".join(head)
        desc = " ".join(desc.split())
        if len(desc) > width:
            desc = desc[:width].rsplit(" ", 1)[0].rstrip(",;:") + " …"
        out.append((name.removesuffix(".toml"), desc))
    return out


def similar_scenarios(name: str, n: int = 4) -> list[str]:
    """Bundled scenario names close to `name` (a typo, a prefix)."""
    import difflib

    names = [x.removesuffix(".toml") for x in list_scenarios()]
    given = name.replace("\\", "/").removeprefix("./").removeprefix("scenarios/").removesuffix(".toml")
    starts = [x for x in names if given and (x.startswith(given) or x.split("/")[-1].startswith(given))]
    close = difflib.get_close_matches(given, names, n=n, cutoff=0.6)
    return list(dict.fromkeys(starts + close))[:n]


def not_found(path: str) -> str:
    """The message for a scenario argument that names nothing: the bundled
    scenarios with a similar name, and where to see them all."""
    near = similar_scenarios(path)
    hint = f"; bundled scenarios with a similar name: {', '.join(near)}" if near else ""
    return f"scenario file not found: {path!r}{hint} (`xrc list` shows every bundled scenario)"


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
