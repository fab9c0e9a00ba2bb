"""The Python API, for notebooks and scripts (``docs/python.md``)::

    import xrc
    run = xrc.run("paper/fig1-time-varying", flows__0__cc="cubic", duration_s=20)
    run.rtt                  # a pandas DataFrame; run.rtt.attrs["units"]["rtt_ms"] == "ms"
    run.drops.location       # categorical: internet_forward, rlc, ...
    again = xrc.read_run("runs/fig1")
    table = xrc.sweep("paper/fig1-time-varying", grid={"flows.0.cc": ["xrc", "cubic"]}, seeds=2)

Tables are pandas DataFrames. Why pandas and not polars: pyarrow, already
a dependency for the Parquet files, converts to pandas without copying the
numeric columns; pandas carries per-frame metadata (``DataFrame.attrs``,
where the units go) and a categorical type for coded columns; and it is
what notebooks, matplotlib and seaborn take directly. Polars would add a
second large native library for speed these tables (at most a few million
rows) do not need.

Every table's columns, units and code names come from :mod:`xrc.columns`
(the core's own definitions): coded columns (``drops.location``,
``cwnd.ca_state``, ``retransmits.kind``) are categoricals, 0/1 columns
booleans, the "no flow/UE" index 2^32 - 1 is missing (``<NA>``), and
``df.attrs["units"]`` maps every column to its unit (``""``: none).

Nothing here selects a matplotlib backend or changes ``rcParams``.
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from . import columns as _columns
from .scenario import Scenario, ScenarioError, load, load_text

__all__ = ["Run", "run", "read_run", "sweep", "overrides_from_kwargs"]


def _api(fn):
    """The API raises ScenarioError for what the caller gave: an OSError
    from a path it named (a name too long for the file system, a file
    where a directory belongs) was raised as it came."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from .outdir import OutputError

        try:
            return fn(*args, **kwargs)
        except OutputError as e:
            # The message names the command line's option.
            msg = str(e)
            if msg.startswith("--out "):
                raise OutputError("out " + msg[len("--out "):]) from None
            raise
        except OSError as e:
            where = f"{e.filename}: " if e.filename else ""
            raise ScenarioError(f"{where}{e.strerror or e}") from e

    return wrapper


def _toml_literal(value: Any) -> str:
    """A Python value as the TOML text of a ``--set`` override."""
    from . import tomlw

    if value is None:
        return "null"
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, Path):
        value = str(value)
    return tomlw._value(value)


def overrides_from_kwargs(kwargs: Mapping[str, Any]) -> list[str]:
    """``flows__0__cc="cubic"`` or ``**{"flows.0.cc": "cubic"}`` as
    ``["flows.0.cc=\\"cubic\\""]``: a double underscore stands for a dot."""
    out = []
    seen: dict[str, str] = {}
    for key, value in kwargs.items():
        path = key.replace("__", ".").strip()
        if path in seen:
            # `flows__0__cc=` and `**{"flows.0.cc": ...}`: the last one won.
            raise ScenarioError(f"{path}: given twice (as {seen[path]!r} and {key!r}); give it once")
        seen[path] = key
        try:
            out.append(f"{path}={_toml_literal(value)}")
        except TypeError as e:
            raise ScenarioError(f"{path}: {e}") from None
    return out


def _scenario(scenario: Scenario | str | Path | Mapping[str, Any], overrides: list[str],
              seed: int | None) -> Scenario:
    """Resolves what :func:`run` accepts into a :class:`Scenario`; an
    override's error names the override, not the command line's --set."""
    try:
        return _resolve(scenario, overrides, seed)
    except ScenarioError as e:
        msg = str(e)
        if msg.startswith("--set "):
            raise ScenarioError("override " + msg[len("--set "):]) from None
        raise


def _resolve(scenario: Scenario | str | Path | Mapping[str, Any], overrides: list[str],
             seed: int | None) -> Scenario:
    if isinstance(scenario, Scenario):
        doc = copy.deepcopy(scenario.resolved)
        base = scenario.path.resolve().parent if scenario.path is not None else Path.cwd()
        return load_text(json.dumps(doc), base=base, overrides=overrides, seed=seed, path=scenario.path,
                         json_text=True)
    if isinstance(scenario, Mapping):
        return load_text(json.dumps(_plain(scenario)), base=Path.cwd(), overrides=overrides, seed=seed,
                         json_text=True)
    if isinstance(scenario, (str, Path)):
        from .bundled import resolve_scenario_arg

        return load(resolve_scenario_arg(str(scenario)), overrides=overrides, seed=seed)
    raise ScenarioError(f"scenario: expected a Scenario, a path, a bundled scenario's name or a dict, got "
                        f"{type(scenario).__name__}")


def _path(name: str, value: Any) -> Path:
    """`value` as a path, or a ScenarioError naming the argument (not
    Python's TypeError from deep inside `pathlib` or `os`)."""
    if isinstance(value, (str, os.PathLike)) and not isinstance(value, bytes):
        return Path(value)
    raise ScenarioError(f"{name}: expected a path (str or os.PathLike), got {value!r} ({type(value).__name__})")


def _plain(node: Any, where: str = "") -> Any:
    """A mapping with NumPy scalars and paths as plain JSON values; any
    other kind of value is a ScenarioError naming where it is (a Decimal or
    a set was json's TypeError)."""
    if isinstance(node, Mapping):
        out = {}
        for k, v in node.items():
            if not isinstance(k, str):
                raise ScenarioError(f"{where + '.' if where else ''}{k!r}: a field name is a string, got "
                                    f"{type(k).__name__}")
            out[k] = _plain(v, f"{where}.{k}" if where else k)
        return out
    if isinstance(node, (list, tuple)):
        return [_plain(v, f"{where}.{i}") for i, v in enumerate(node)]
    if isinstance(node, np.generic):
        node = node.item()
    if isinstance(node, Path):
        return str(node)
    if node is None or isinstance(node, (str, bool, int, float)):
        return node
    raise ScenarioError(f"{where or 'value'}: {node!r} ({type(node).__name__}) is not a scenario value; give a "
                        f"str, int, float, bool, None, list or dict")


@_api
def run(scenario: Scenario | str | Path | Mapping[str, Any], *, seed: int | None = None,
        out: str | Path | None = None, force: bool = False, plots: bool = False, progress: bool = False,
        **overrides: Any) -> "Run":
    """Runs a scenario and returns its :class:`Run`.

    `scenario` is a scenario file, a run directory (what ran there), the
    name of a bundled scenario (``"paper/fig1-time-varying"``), a dict of
    fields, or a :class:`Scenario`. Keyword arguments override fields:
    ``duration_s=20``, ``flows__0__cc="cubic"`` (a double underscore is a
    dot) or ``**{"flows.0.cc": "cubic"}``; ``None`` removes a field (its
    default applies). With `out` the run directory is written as by
    ``xrc run`` (`force` replaces an existing one, `plots` draws its
    figures) and the Run reads from it; without, everything stays in
    memory. Bad input raises :class:`xrc.ScenarioError` naming the field.
    """
    # A NumPy integer (a seed from np.arange) as the plain int JSON takes.
    if out is not None:
        out = _path("out", out)
    sc = _scenario(scenario, overrides_from_kwargs(overrides), _plain(seed, "seed"))
    if out is not None:
        from .runner import run_to_dir

        run_to_dir(sc, out, force=force, plots=plots, progress=progress, argv=None)
        return read_run(out)
    from .results import summarize
    from .runner import metadata, simulate

    r = simulate(sc, progress=progress)
    summary = summarize(sc.resolved, r["tables"], events=r["events"], sim_time_s=r["sim_time_s"],
                        wall_time_s=r["wall_time_s"])
    return Run(scenario=sc.resolved, summary=summary, metadata=metadata(sc, None), arrays=r["tables"])


@_api
def read_run(directory: str | Path) -> "Run":
    """The :class:`Run` of a run directory (``xrc run --out DIR``); tables
    are read from its Parquet files when first used."""
    from .rundir import read_json, read_resolved, read_summary

    d = _path("directory", directory)
    if not d.is_dir():
        raise ScenarioError(f"{str(directory)!r} is not a run directory ("
                            f"{'a file' if d.exists() else 'it does not exist'})")
    docs = {}
    for name, read in (("summary.json", read_summary), ("scenario.resolved.json", read_resolved),
                       ("metadata.json", read_json)):
        if not os.path.lexists(d / name):
            raise ScenarioError(f"{str(directory)!r} is not a run directory (no {name})")
        # Checked as read: a summary holding a list, a named pipe (which
        # made this wait for ever), truncated JSON: a message naming it.
        docs[name] = read(d / name)
    return Run(scenario=docs["scenario.resolved.json"], summary=docs["summary.json"], metadata=docs["metadata.json"],
               directory=d)


class Run:
    """A finished run: its resolved scenario, summary, metadata and tables.

    Every table is an attribute holding a pandas DataFrame (``run.rtt``,
    ``run.cwnd``, ``run.drops``, ``run.flow_throughput``, ...; the list is
    :attr:`tables`), built on first use. ``run.flow_summary`` and
    ``run.ue_summary`` are the summary's per-flow and per-UE numbers.
    """

    def __init__(self, *, scenario: dict[str, Any], summary: dict[str, Any], metadata: dict[str, Any],
                 arrays: dict[str, dict[str, np.ndarray]] | None = None, directory: Path | None = None):
        self.scenario = scenario
        self.summary = summary
        self.metadata = metadata
        self.directory = directory
        self._arrays = arrays
        self._frames: dict[str, Any] = {}

    # ---- what it is
    @property
    def name(self) -> str:
        return self.scenario["name"]

    @property
    def seed(self) -> int:
        return self.scenario["seed"]

    @property
    def flow_ids(self) -> list[str]:
        return [f["id"] for f in self.scenario["flows"]]

    @property
    def tables(self) -> list[str]:
        """Names of the tables (each also an attribute)."""
        return list(_columns.tables())

    def __repr__(self) -> str:
        flows = ", ".join(f"{f['id']} ({f['cc']}): {f['goodput_mbps']:.2f} Mbit/s" for f in self.summary["flows"])
        where = f", {self.directory}" if self.directory is not None else ""
        how = "emulated (real Linux TCP)" if self.summary.get("emulated") else "simulated"
        return (f"<Run {self.name!r} seed {self.seed}, {self.summary['sim_time_s']:g} s {how}{where}; "
                f"{flows}>")

    def __dir__(self) -> Iterable[str]:
        return sorted(set(super().__dir__()) | set(self.tables))

    # ---- tables
    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if name in _columns.tables():
            return self.table(name)
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}; its tables: {', '.join(self.tables)}")

    def table(self, name: str):
        """Table `name` as a DataFrame (see the module doc)."""
        if name not in _columns.tables():
            raise KeyError(f"no table {name!r}; tables: {', '.join(self.tables)}")
        if name not in self._frames:
            self._frames[name] = _frame(name, self._columns_of(name), self.flow_ids)
        return self._frames[name]

    def _columns_of(self, name: str) -> dict[str, np.ndarray]:
        if self._arrays is not None:
            return dict(self._arrays[name])
        import pyarrow.parquet as pq

        path = self.directory / f"{name}.parquet"
        if not path.is_file():
            raise ScenarioError(f"{str(self.directory)!r} has no {path.name}")
        import pyarrow as pa

        try:
            t = pq.read_table(path)
        except (OSError, ValueError, pa.ArrowException) as e:
            # A damaged file: pyarrow's ArrowInvalid (a ValueError), or, for
            # flipped bits in its schema, ArrowNotImplementedError ("Integers
            # with less than 8 bits"), found by the edge fuzzer.
            raise ScenarioError(f"{str(self.directory)!r}: cannot read {path.name}: {e}") from None
        from .rundir import check_table_columns

        check_table_columns(path, name, t.column_names, set(_columns.tables()[name].columns))
        return {c: t.column(c).to_numpy() for c in t.column_names if c != "flow_id"}

    @property
    def flow_summary(self):
        """One row per flow: the summary's numbers (``rtt_p50_ms``, ...)."""
        import pandas as pd

        rows = []
        for f in self.summary["flows"]:
            row = {k: v for k, v in f.items() if not isinstance(v, dict)}
            for k, v in f.items():
                if isinstance(v, dict):
                    base = k.removesuffix("_ms")
                    unit = "_ms" if k.endswith("_ms") else ""
                    row.update({f"{base}_{q}{unit}": x for q, x in v.items()})
            rows.append(row)
        df = pd.DataFrame(rows)
        if "cc" in df:
            df["cc"] = df["cc"].astype("category")
        df.attrs["units"] = _summary_units(df.columns)
        return df

    @property
    def ue_summary(self):
        """One row per UE: utilization, capacity, HoL and queuing delay
        percentiles, counters."""
        import pandas as pd

        rows = []
        for u in self.summary["ues"]:
            row = {k: v for k, v in u.items() if not isinstance(v, dict)}
            for k, v in u.items():
                if isinstance(v, dict):
                    base = k.removesuffix("_ms")
                    row.update({f"{base}_{q}_ms": x for q, x in v.items()})
            rows.append(row)
        df = pd.DataFrame(rows)
        df.attrs["units"] = _summary_units(df.columns)
        return df


def _summary_units(cols) -> dict[str, str]:
    units = {}
    for c in cols:
        for suffix, unit in (("_mbps", "Mbit/s"), ("_ms", "ms"), ("_s", "s"), ("_bytes", "bytes")):
            if c.endswith(suffix):
                units[c] = unit
                break
        else:
            units[c] = "bytes" if c == "bytes_delivered" else ""
    return units


def _frame(name: str, cols: dict[str, np.ndarray], flow_ids: list[str]):
    """A table's columns as a DataFrame with categories, booleans, missing
    indices and units (see the module doc)."""
    import pandas as pd

    doc = _columns.tables()[name]
    data: dict[str, Any] = {}
    if "flow" in cols:
        idx = np.asarray(cols["flow"]).astype(np.int64)
        codes = np.where(idx < len(flow_ids), idx, -1)
        # Flow ids are unique (the core refuses duplicates).
        data["flow_id"] = pd.Categorical.from_codes(codes, categories=list(flow_ids))
    for c, v in cols.items():
        col = doc.columns.get(c)
        v = np.asarray(v)
        if col is not None and col.categories:
            codes = v.astype(np.int64)
            codes = np.where((codes >= 0) & (codes < len(col.categories)), codes, -1)
            data[c] = pd.Categorical.from_codes(codes, categories=list(col.categories))
        elif col is not None and col.dtype == "str":
            data[c] = pd.Categorical(v.astype(str))  # cwnd.mode: a few names, many rows
        elif (name, c) in _columns.BOOLEAN:
            data[c] = v.astype(bool)
        elif c in ("flow", "ue") and v.dtype.kind == "u":
            s = pd.array(v.astype(np.int64), dtype="Int64")
            s[v == _columns.NONE_INDEX] = pd.NA
            data[c] = s
        else:
            data[c] = v
    df = pd.DataFrame(data)
    df.attrs["table"] = name
    df.attrs["units"] = {c: (doc.columns[c].unit if c in doc.columns else "") for c in df.columns}
    df.attrs["docs"] = {c: doc.columns[c].doc for c in df.columns if c in doc.columns}
    return df


@_api
def sweep(scenario: Scenario | str | Path | Mapping[str, Any], grid: Mapping[str, list] | None = None, *,
          runs: list[Mapping[str, Any]] | None = None, seeds: int | list[int] = 1, out: str | Path | None = None,
          jobs: int | None = None, progress: bool = False, **overrides: Any):
    """Runs a grid (and/or a list) of overrides × seeds and returns one
    DataFrame: a row per run and flow, the overridden fields as columns
    named by their paths (``flows.0.cc``) with their values' types, and the
    flow's and its UE's summary numbers (as ``xrc sweep``'s
    ``summary.parquet``; ``df.attrs["units"]``).

    `grid` maps field paths to lists of values (their product is run);
    `runs` adds explicit override sets; keyword arguments override fields
    in every run (as in :func:`run`). With `out` the sweep directory is
    kept (and a repeated call resumes it: finished runs are not redone);
    without, it lives in a temporary directory removed at the end.
    """
    import pandas as pd
    import pyarrow.parquet as pq

    from .sweeps import Sweep, run_sweep

    from .sweeps import check_size, seed_list as _seed_list

    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ScenarioError(f"jobs must be at least 1, got {jobs!r}")
    if out is not None:
        out = _path("out", out)
    seed_list = _seed_list(seeds, "seeds")
    variants: list[dict[str, Any]] = []
    if grid is not None and not isinstance(grid, Mapping):
        raise ScenarioError(f"grid: expected a dict of field paths to lists of values, got {grid!r} "
                            f"({type(grid).__name__})")
    if runs is not None and (not isinstance(runs, (list, tuple)) or
                             not all(isinstance(r, Mapping) for r in runs)):
        bad = runs if not isinstance(runs, (list, tuple)) else next(r for r in runs if not isinstance(r, Mapping))
        raise ScenarioError(f"runs: expected a list of dicts of field paths to values (e.g. "
                            f"[{{'flows.0.cc': 'cubic'}}]), got {bad!r} ({type(bad).__name__})")
    # Paths as the overrides read them (surrounding spaces dropped): two
    # spellings of one field were two grid dimensions for one field.
    grid = _paths_of(grid or {}, "grid")
    runs = [_paths_of(r, f"runs[{i}]") for i, r in enumerate(runs or [])]
    for k, vals in grid.items():
        if not isinstance(vals, (list, tuple)) or not vals:
            raise ScenarioError(f"grid[{k!r}]: expected a non-empty list of values, got {vals!r}")
    import math

    check_size((math.prod(len(v) for v in grid.values()) if grid else 0) + len(runs or []) or 1, len(seed_list),
               "sweep")
    if grid:
        import itertools

        keys = sorted(grid)
        for combo in itertools.product(*(grid[k] for k in keys)):
            variants.append({k: _plain(v, f"grid[{k!r}]") for k, v in zip(keys, combo)})
    variants += [{k: _plain(v, f"runs[{i}][{k!r}]") for k, v in r.items()} for i, r in enumerate(runs)]
    if not variants:
        variants = [{}]
    common = overrides_from_kwargs(overrides)
    from .sweeps import refuse_seed

    refuse_seed([o.partition("=")[0] for o in common], "sweep", "seeds=[3]")
    refuse_seed(grid, "sweep: grid", "seeds=[1, 2, ...]")
    from .sweeps import refuse_repeated_values

    refuse_repeated_values(grid, "grid")
    for i, r in enumerate(runs or []):
        refuse_seed(r, f"sweep: runs[{i}]", "seeds=[3]")
    keywords = {o.partition("=")[0].strip() for o in common}
    both = sorted(set(grid) & keywords)
    if both:
        raise ScenarioError(f"{', '.join(both)}: both a keyword (every run) and in grid (varied); give it in one "
                            f"of them")
    for i, r in enumerate(runs):
        # The run's value silently won over the keyword's.
        both = sorted(set(r) & keywords)
        if both:
            raise ScenarioError(f"{', '.join(both)}: both a keyword (every run) and in runs[{i}]; give it in one "
                                f"of them")

    def go(root: Path):
        # Every variant resolves before anything runs (as `xrc sweep`
        # checks), and before anything is written: a dict's base went into
        # `out` first, which a refused sweep left behind.
        from .sweeps import _toml_value

        with tempfile.TemporaryDirectory(prefix="xrc-sweep-check-") as check:
            base = _base_file(scenario, Path(check))
            for v in variants:
                ov = common + [f"{k}={_toml_value(val)}" for k, val in sorted(v.items())]
                try:
                    load(base, overrides=ov, seed=seed_list[0])
                except ScenarioError as e:
                    raise ScenarioError(f"sweep variant {v}: {e}") from None
        base = _base_file(scenario, root)
        sw = Sweep(scenario=base, seeds=seed_list, common=common, variants=variants)
        path = run_sweep(sw, root, jobs=jobs, progress=progress)
        df = pq.read_table(path).to_pandas()
        return _sweep_frame(df, grid, variants)

    if out is not None:
        df = go(Path(out))
        df.attrs["sweep_dir"] = str(Path(out))
        return df
    with tempfile.TemporaryDirectory(prefix="xrc-sweep-") as tmp:
        return go(Path(tmp))


def _paths_of(d: Mapping[str, Any], where: str) -> dict[str, Any]:
    """`d` with its keys as override paths: ``__`` a dot, no surrounding
    spaces; two keys naming one field are refused."""
    out: dict[str, Any] = {}
    given: dict[str, Any] = {}
    for k, v in d.items():
        if not isinstance(k, str):
            raise ScenarioError(f"{where}: a field path is a string, got {k!r} ({type(k).__name__})")
        path = k.replace("__", ".").strip()
        if path in out:
            raise ScenarioError(f"{where}: {given[path]!r} and {k!r} name the same field {path}; give it once")
        out[path], given[path] = v, k
    return out


def _base_file(scenario, root: Path) -> Path:
    """The sweep's base scenario as a file: the given file, or (a dict, a
    Scenario) its resolved JSON written into the sweep directory."""
    if isinstance(scenario, (str, Path)) and not isinstance(scenario, Mapping):
        from .bundled import not_found, resolve_scenario_arg

        p = Path(resolve_scenario_arg(str(scenario)))
        if not p.exists():
            raise ScenarioError(not_found(str(scenario)))
        if p.is_dir():
            p = p / "scenario.resolved.json"
        return p.resolve()
    sc = _scenario(scenario, [], None)
    root.mkdir(parents=True, exist_ok=True)
    p = root / "base.scenario.json"
    text = json.dumps(sc.resolved, indent=2, sort_keys=True) + "\n"
    if not p.is_file() or p.read_text() != text:
        p.write_text(text)
    return p.resolve()


def _sweep_frame(df, grid, variants):
    """``set:PATH`` columns renamed to PATH with the values' own types."""
    import pandas as pd

    from .scenario import parse_value

    rename = {}
    for c in list(df.columns):
        if c.startswith("set:"):
            key = c[4:]
            rename[c] = key
            vals = [parse_value(x) if isinstance(x, str) else x for x in df[c]]
            if all(isinstance(x, bool) for x in vals if x is not None):
                df[c] = pd.array(vals, dtype="boolean")
            elif all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vals if x is not None):
                df[c] = pd.to_numeric(pd.Series(vals, index=df.index))
            else:
                df[c] = pd.Series([None if x is None else str(x) for x in vals], index=df.index, dtype="category")
    df = df.rename(columns=rename)
    for c in df.columns:
        # A number that is null in some runs (Jain's index of one flow).
        if df[c].dtype == object and all(x is None or isinstance(x, (int, float)) for x in df[c]):
            df[c] = pd.to_numeric(df[c].astype("float64"))
    for c in ("cc", "flow"):
        if c in df:
            df[c] = df[c].astype("category")
    keys = [rename[c] for c in sorted(rename)] + ["seed", "flow"]
    df = df.sort_values(keys, kind="stable", ignore_index=True)
    df.attrs["units"] = _summary_units(df.columns)
    for c in ("ue_utilization", "jain_index", "frac_hol_below_budget", "ue_fair_share_ratio"):
        if c in df.columns:
            df.attrs["units"][c] = ""
    return df
