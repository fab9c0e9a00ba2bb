"""Sweeps: a grid or list of scenario overrides × seeds, run on all local
cores (or on a Dask cluster), resumable, merged into one Parquet table.

A sweep file (TOML)::

    scenario = "../scenarios/paper/fig1-time-varying.toml"   # relative to this file, or a bundled
                                                             # scenario's name: "paper/fig1-time-varying"
    seeds = 3                      # 1, 2, 3   (or a list: seeds = [1, 7, 9])
    set = ["duration_s=20"]        # overrides applied to every run

    [grid]                         # the cartesian product of these values
    "flows.0.cc" = ["xrc", "cubic", "newreno"]
    "cell.harq.bler" = [0.0, 0.1]

    # or, instead of (or as well as) a grid, explicit override sets:
    [[runs]]
    "flows.0.cc" = "xrc"

Each run (one override set and one seed) gets a directory
``OUT/runs/<id>/`` named by a hash of what it runs: the resolved scenario
(overrides, seed and every default applied), the contents of the files it
reads and the core's version. It is written atomically (see
:mod:`xrc.outdir`). A killed sweep restarted with the same file skips every
run whose directory is complete, so nothing is redone and nothing
half-written survives; a sweep restarted after its base scenario (or a
trace) changed runs the changed points again instead of returning the old
table. At the end every run's summary is merged into
``OUT/summary.parquet``: one row per run and flow, with the run's overrides
as columns, sorted by run id — the same table whether the sweep ran at
once or in pieces. ``OUT/sweep.json`` lists the runs and any warnings: a
variant whose seeds all gave identical results has no randomness, so its
spread over seeds (a zero-width confidence interval) says nothing.

Ctrl-C stops a sweep at once (:mod:`xrc.parallel`); the runs already done
are kept and a restart goes on from there.

From Python, ``xrc.sweep(...)`` (:func:`xrc.api.sweep`) runs a sweep and
returns its table as a DataFrame. This module is named ``sweeps``, not
``sweep``: importing a submodule binds its name on the package, and a module
``xrc.sweep`` would replace that function once imported.

Why Dask for clusters: runs are independent, CPU-bound tasks of a few
seconds; ``dask.distributed`` schedules such tasks with a small, pure
Python install and starts a local cluster in one call (which the tests
use), while Ray would add a large native dependency for no feature we need.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import operator
import os
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from . import _core, progress as _progress, tomlw
from .bundled import find_scenario
from .outdir import DirLock, OutputError, check_parents, clean_stale_in
from .rundir import read_summary, summary_ok
from .scenario import Scenario, ScenarioError, load, parse_value


def content_key(sc: Scenario) -> str:
    """A hash of everything a run's results depend on: the resolved scenario,
    the contents of the input files it names, and the core's version."""
    h = hashlib.sha256()
    inputs = {}
    for name, path in sorted(sc.inputs.items()):
        with open(path, "rb") as f:
            inputs[name] = hashlib.sha256(f.read()).hexdigest()
    doc = json.loads(sc.resolved_json())
    if isinstance(doc.get("trace"), dict):
        # A trace is keyed by its contents, not where it lies.
        for key in ("downlink", "uplink"):
            if doc["trace"].get(key) is not None:
                doc["trace"][key] = inputs.get(f"trace.{key}")
    h.update(json.dumps({"scenario": doc, "inputs": inputs, "core": _core.version()}, sort_keys=True).encode())
    return h.hexdigest()


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep; `key` is the :func:`content_key` of what it runs."""

    scenario: str
    overrides: tuple[str, ...]
    seed: int
    key: str = ""

    @property
    def run_id(self) -> str:
        return self.key[:16]


@dataclass
class Sweep:
    scenario: Path
    seeds: list[int]
    common: list[str]
    variants: list[dict[str, Any]] = field(default_factory=list)

    def runs(self) -> list[RunSpec]:
        """Every run, keyed by content (this resolves each one, and reads its
        input files)."""
        out = []
        for variant in self.variants:
            ov = tuple(self.common + [f"{k}={_toml_value(v)}" for k, v in sorted(variant.items())])
            for seed in self.seeds:
                sc = load(self.scenario, overrides=list(ov), seed=seed)
                out.append(RunSpec(str(self.scenario), ov, seed, content_key(sc)))
        return out


def _toml_value(v: Any) -> str:
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list, tuple)):
        # Python's repr of a table is not TOML (and of a list, only by luck).
        return tomlw._value(v)
    return str(v)


#: Seeds are the core's u64.
_SEED_MAX = 2**64 - 1

#: The most runs a sweep may hold: each is resolved (and listed) before
#: anything runs, so a mistyped count (seeds = 100000000000, ten keys of
#: ten values) must be refused before it fills the memory.
MAX_RUNS = 1_000_000


def check_size(n_variants: int, n_seeds: int, where: str = "sweep") -> None:
    """Refuses a sweep of more than :data:`MAX_RUNS` runs."""
    if n_variants * n_seeds > MAX_RUNS:
        raise ScenarioError(f"{where}: {n_variants} override set(s) x {n_seeds} seed(s) = {n_variants * n_seeds} runs, "
                            f"more than the {MAX_RUNS} a sweep may hold")


def refuse_repeated_values(grid: dict[str, Any], where: str) -> None:
    """A value given twice in one grid list ran the same runs twice: one
    run directory for both, duplicate rows in the table, and a false "all
    seeds identical" warning."""
    for k, vals in grid.items():
        seen: dict[str, Any] = {}
        for v in vals:
            key = _toml_value(v)
            if key in seen:
                raise ScenarioError(f"{where}.{k}: the value {v!r} is given twice; give each value once")
            seen[key] = v


def refuse_seed(paths: Iterable[str], where: str, hint: str = "seeds = [3]") -> None:
    """A sweep's seeds are its own list: `seed` given as an override (in
    `set`, the grid, `runs`, or a keyword) was overridden by that list
    without a word, while the results said the override's seed."""
    for k in paths:
        if k.strip() == "seed":
            raise ScenarioError(f"{where}: seed is chosen by the sweep's seeds (a count or a list), not by an "
                                f"override; give {hint}")


def seed_list(value: Any, where: str = "sweep.seeds") -> list[int]:
    """The seeds a sweep runs: a count N (seeds 1..N) or a list of distinct
    seeds. Raises :class:`ScenarioError` naming `where` and the value."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise ScenarioError(f"{where}: must be at least 1, got {value}")
        if value > MAX_RUNS:
            raise ScenarioError(f"{where}: {value} seeds, more than the {MAX_RUNS} runs a sweep may hold")
        return list(range(1, value + 1))
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
        raise ScenarioError(f"{where}: expected a count or a non-empty list of seeds, got {value!r}")
    seeds = []
    for s in value:
        try:
            n = None if isinstance(s, bool) else operator.index(s)   # ints, NumPy's too; not 1.5 or "1"
        except TypeError:
            n = None
        if n is None or not 0 <= n <= _SEED_MAX:
            raise ScenarioError(f"{where}: seeds are integers in [0, {_SEED_MAX}], got {s!r}")
        seeds.append(n)
    if not seeds:
        raise ScenarioError(f"{where}: expected a count or a non-empty list of seeds, got {value!r}")
    repeated = sorted({s for s in seeds if seeds.count(s) > 1})
    if repeated:
        # The same run twice: duplicate rows in the table, and identical
        # "seeds" that look like a scenario without randomness.
        raise ScenarioError(f"{where}: seed(s) {', '.join(map(str, repeated))} given more than once")
    return seeds


def load_sweep(path: str | Path) -> Sweep:
    """Reads and checks a sweep file. Raises :class:`ScenarioError` naming the field."""
    p = Path(path)
    if p.is_dir():
        raise ScenarioError(f"sweep file {str(path)!r} is a directory; give a sweep file (TOML)")
    if not p.is_file():
        raise ScenarioError(f"sweep file not found: {str(path)!r}")
    try:
        doc = tomllib.loads(p.read_text(encoding="utf-8-sig"))
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"sweep {str(path)!r} is not valid TOML: {e}") from None
    except UnicodeDecodeError as e:
        raise ScenarioError(f"cannot read sweep {str(path)!r}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise ScenarioError(f"cannot read sweep {str(path)!r}: {e.strerror or e}") from None
    unknown = set(doc) - {"scenario", "seeds", "set", "grid", "runs"}
    if unknown:
        raise ScenarioError(f"sweep: unknown key(s) {sorted(unknown)}; expected scenario, seeds, set, grid, runs")
    if "scenario" not in doc or not isinstance(doc["scenario"], str):
        raise ScenarioError("sweep.scenario: missing; give the base scenario file")
    scenario = (p.parent / doc["scenario"]).resolve()
    if not scenario.is_file():
        # As a scenario argument on the command line: the name of a bundled
        # scenario when no such file exists beside the sweep file.
        bundled_path = find_scenario(doc["scenario"])
        if bundled_path is None:
            from .bundled import similar_scenarios

            near = similar_scenarios(str(doc["scenario"]))
            raise ScenarioError(f"sweep.scenario: file not found: {doc['scenario']!r} (looked at {scenario}, "
                                f"and among the bundled scenarios"
                                + (f"; similar names: {', '.join(near)}" if near else "") + ")")
        scenario = bundled_path
    seeds = seed_list(doc.get("seeds", 1))
    common = doc.get("set", [])
    if not (isinstance(common, list) and all(isinstance(s, str) for s in common)):
        raise ScenarioError(f"sweep.set: expected a list of PATH=VALUE strings, got {common!r}")
    seen: dict[str, str] = {}
    for o in common:
        k = o.partition("=")[0].strip()
        if k in seen:
            raise ScenarioError(f"sweep.set: {k} given twice ({seen[k]!r} and {o!r}); give it once")
        seen[k] = o
    refuse_seed(seen, "sweep.set")
    grid = doc.get("grid", {})
    if not isinstance(grid, dict) or not all(isinstance(v, list) and v for v in grid.values()):
        raise ScenarioError("sweep.grid: expected a table of non-empty lists")
    grid = stripped_keys(grid, "sweep.grid")
    refuse_seed(grid, "sweep.grid", "seeds = [1, 2, ...] instead of a grid over seed")
    refuse_repeated_values(grid, "sweep.grid")
    both = sorted(set(grid) & {o.partition("=")[0].strip() for o in common})
    if both:
        # The grid's value would silently win over `set` in every run.
        raise ScenarioError(f"sweep: {', '.join(both)} is both in set (every run) and in grid (varied); "
                            f"give it in one of them")
    runs = doc.get("runs", [])
    if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
        raise ScenarioError("sweep.runs: expected an array of tables")
    runs = [stripped_keys(r, f"sweep.runs.{i}") for i, r in enumerate(runs)]
    for i, r in enumerate(runs):
        refuse_seed(r, f"sweep.runs.{i}")
        both = sorted(set(r) & {o.partition("=")[0].strip() for o in common})
        if both:
            # The run's value silently won over `set`, as a grid's would.
            raise ScenarioError(f"sweep: {', '.join(both)} is both in set (every run) and in runs.{i}; "
                                f"give it in one of them")
    check_size((math.prod(len(v) for v in grid.values()) if grid else 0) + len(runs) or 1, len(seeds))
    variants: list[dict[str, Any]] = []
    if grid:
        keys = sorted(grid)
        for combo in itertools.product(*(grid[k] for k in keys)):
            variants.append(dict(zip(keys, combo)))
    variants.extend(runs)
    if not variants:
        variants = [{}]
    sweep = Sweep(scenario=scenario, seeds=seeds, common=list(common), variants=variants)
    # Check every variant resolves before anything runs.
    for v in sweep.variants:
        ov = common + [f"{k}={_toml_value(val)}" for k, val in sorted(v.items())]
        try:
            load(scenario, overrides=ov, seed=seeds[0])
        except ScenarioError as e:
            raise ScenarioError(f"sweep variant {v}: {e}") from None
    return sweep


def stripped_keys(table: dict[str, Any], where: str) -> dict[str, Any]:
    """A grid's or run's keys as override paths (without surrounding
    spaces, as `set` reads them): ``"duration_s "`` escaped the check
    against `set` and made a second grid dimension for one field."""
    out: dict[str, Any] = {}
    given: dict[str, str] = {}
    for k, v in table.items():
        path = k.strip()
        if path in out:
            raise ScenarioError(f"{where}: {given[path]!r} and {k!r} name the same field {path}; give it once")
        out[path], given[path] = v, k
    return out


def run_one(spec: RunSpec, out_root: str) -> str:
    """Runs one sweep point into ``out_root/runs/<id>`` unless already done.
    Returns the run id. Safe to call from another process or a Dask worker."""
    from .runner import run_to_dir

    d = Path(out_root) / "runs" / spec.run_id
    # A run counts as done only if its summary reads whole: one truncated
    # (a disk that filled, a copy cut short) made the resume fail merging.
    # Run again, it replaces the damaged directory.
    if summary_ok(d / "summary.json"):
        return spec.run_id
    sc = load(spec.scenario, overrides=list(spec.overrides), seed=spec.seed)
    run_to_dir(sc, d, force=True, plots=False, progress=False,
               argv=["xrc", "sweep", spec.scenario, *[f"--set={o}" for o in spec.overrides], f"--seed={spec.seed}"])
    return spec.run_id


def _merge(out: Path, runs: list[RunSpec]) -> Path:
    """One row per run and flow, with the run's overrides as columns."""
    rows: list[dict[str, Any]] = []
    for spec in sorted(runs, key=lambda s: s.run_id):
        s = read_summary(out / "runs" / spec.run_id / "summary.json")
        base: dict[str, Any] = {"run_id": spec.run_id, "seed": spec.seed}
        for o in spec.overrides:
            k, _, v = o.partition("=")
            base[f"set:{k}"] = str(parse_value(v))
        ues = {u["id"]: u for u in s["ues"]}
        for f in s["flows"]:
            row = dict(base)
            row.update({
                "flow": f["id"], "cc": f["cc"], "ue": f["ue"], "goodput_mbps": f["goodput_mbps"],
                "rtt_p50_ms": f["rtt_ms"]["p50"], "rtt_p95_ms": f["rtt_ms"]["p95"], "retransmits": f["retransmits"],
                "events": s["events"], "jain_index": s["jain_index"],
            })
            u = ues.get(f["ue"]) if f["ue"] is not None else None
            row.update({
                "ue_utilization": u["utilization"] if u else None,
                "ue_capacity_mbps": u["capacity_mbps"] if u else None,
                "ue_fair_share_ratio": u.get("fair_share_ratio") if u else None,
                "hol_p50_ms": u["hol_delay_ms"]["p50"] if u else None,
                "hol_p90_ms": u["hol_delay_ms"]["p90"] if u else None,
                "hol_p95_ms": u["hol_delay_ms"]["p95"] if u else None,
                "frac_hol_below_budget": u["frac_time_hol_below_budget"] if u else None,
                "qdelay_p50_ms": u["queuing_delay_ms"]["p50"] if u and "queuing_delay_ms" in u else None,
                "qdelay_p95_ms": u["queuing_delay_ms"]["p95"] if u and "queuing_delay_ms" in u else None,
            })
            rows.append(row)
    cols = sorted({k for r in rows for k in r}, key=lambda k: (k.startswith("set:"), k))
    # A seed is any u64 (the core's); as int64 a seed of 2^63 or more
    # failed the merge (OverflowError) after every run.
    table = pa.table({c: pa.array([r.get(c) for r in rows], type=pa.uint64()) if c == "seed"
                      else [r.get(c) for r in rows] for c in cols})
    path = out / "summary.parquet"
    tmp = out / ".summary.parquet.tmp"
    try:
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise OutputError(f"--out {str(out)!r}: cannot write {path}: {e.strerror or e}") from None
    return path


#: The digest's columns: (summary.parquet column, header, format).
_DIGEST = (("goodput_mbps", "goodput Mbit/s", "{:.2f}"), ("rtt_p95_ms", "RTT p95 ms", "{:.1f}"),
           ("hol_p90_ms", "UE HoL p90 ms", "{:.1f}"), ("frac_hol_below_budget", "UE HoL <= budget", "{:.2f}"),
           ("ue_utilization", "UE util.", "{:.3f}"))


def _natural(v: Any) -> tuple:
    """Sorts numbers as numbers ("5" before "10") and before text."""
    try:
        return (0, float(v), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(v))


def digest(summary: str | Path, max_rows: int = 40) -> str:
    """A sweep's merged table (``summary.parquet``) as a text table: one row
    per variant (its overrides) and flow, each number the mean over the
    variant's seeds, goodput with its range. What ``xrc sweep`` prints at
    the end; the table itself has every run."""
    df = pq.read_table(summary).to_pandas()
    keys = [c for c in df.columns if c.startswith("set:")]
    cols = [(c, h, f) for c, h, f in _DIGEST if c in df.columns]
    head = [k[4:] for k in keys] + ["flow", "cc", "seeds"] + [h for _, h, _ in cols]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    groups = list(df.fillna({k: "" for k in keys}).groupby(keys + ["flow", "cc"], sort=False, dropna=False))
    groups.sort(key=lambda kg: [_natural(v) for v in (kg[0] if isinstance(kg[0], tuple) else (kg[0],))])
    for n, (key, g) in enumerate(groups):
        if n == max_rows:
            lines.append(f"(… {len(groups) - max_rows} more rows: {summary})")
            break
        cells = [str(v) for v in (key if isinstance(key, tuple) else (key,))] + [str(g["seed"].nunique())]
        for c, _, f in cols:
            v = g[c].dropna()
            if v.empty:
                cells.append("–")
            elif c == "goodput_mbps" and v.size > 1:
                cells.append(f"{f.format(v.mean())} ({f.format(v.min())}–{f.format(v.max())})")
            else:
                cells.append(f.format(v.mean()))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _seedless_variants(out: Path, runs: list[RunSpec]) -> list[str]:
    """Variants run with several seeds whose results are all identical."""
    by_variant: dict[tuple[str, ...], list[RunSpec]] = {}
    for r in runs:
        by_variant.setdefault(r.overrides, []).append(r)
    warnings = []
    for ov, specs in by_variant.items():
        if len(specs) < 2:
            continue
        seen = set()
        for spec in specs:
            s = read_summary(out / "runs" / spec.run_id / "summary.json")
            s.pop("wall_time_s", None)
            s.pop("seed", None)
            seen.add(json.dumps(s, sort_keys=True))
        if len(seen) == 1:
            name = " ".join(ov) if ov else "the base scenario"
            warnings.append(f"{name}: all {len(specs)} seeds gave identical results; the scenario has no randomness, "
                            f"so their spread (a zero-width confidence interval) says nothing about variability")
    return warnings


def run_sweep(sweep: Sweep, out: str | Path, *, jobs: int | None = None, engine: str = "local",
              address: str | None = None, progress: bool = True,
              on_done: Callable[[str], None] | None = None) -> Path:
    """Runs every point not yet done and writes the merged table; one
    process at a time per sweep directory (a second is refused)."""
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ScenarioError(f"--jobs must be at least 1, got {jobs}")
    if engine == "dask":
        from .parallel import require_dask

        require_dask(address)
    out = Path(out)
    check_parents(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"--out {str(out)!r}: {e.strerror or e}") from None
    with DirLock(out):
        return _run_sweep_locked(sweep, out, jobs=jobs, engine=engine, address=address, progress=progress,
                                 on_done=on_done)


def _run_sweep_locked(sweep: Sweep, out: Path, *, jobs: int | None, engine: str, address: str | None,
                      progress: bool, on_done: Callable[[str], None] | None) -> Path:
    try:
        # A sweep directory holds runs/ (sweep.json once merged; the Python
        # API writes base.scenario.json first). Anything else is not
        # written into: a run directory would take the sweep in.
        others = out.is_dir() and {p.name for p in out.iterdir()} - {"base.scenario.json"}
        if others and not ((out / "runs").is_dir() or (out / "sweep.json").is_file()):
            raise OutputError(f"--out {str(out)!r} holds files that are not a sweep's (no runs/ or sweep.json); "
                              f"choose another directory for the sweep")
        (out / "runs").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"--out {str(out)!r}: {e.strerror or e}") from None
    # A killed sweep leaves staging directories of unfinished runs.
    clean_stale_in(out / "runs")
    runs = sweep.runs()
    todo = [r for r in runs if not summary_ok(out / "runs" / r.run_id / "summary.json")]
    damaged = [r.run_id for r in todo if os.path.lexists(out / "runs" / r.run_id / "summary.json")]
    if damaged:
        print(f"xrc: warning: {len(damaged)} finished run(s) have a damaged summary.json and run again: "
              f"{', '.join(damaged[:5])}{' ...' if len(damaged) > 5 else ''}", file=sys.stderr)
    bar = _progress.bar(progress, total=len(runs), initial=len(runs) - len(todo), unit="run", delay=1.0)

    def done(run_id: str) -> None:
        if bar is not None:
            bar.update(1)
        if on_done is not None:
            on_done(run_id)

    try:
        if engine == "local":
            workers = jobs or os.cpu_count() or 1
            if workers == 1:
                for r in todo:
                    done(run_one(r, str(out)))
            else:
                from .parallel import run_parallel

                try:
                    run_parallel(functools.partial(run_one, out_root=str(out)), todo, workers, done)
                except BaseException:
                    # The workers are stopped now; one stopped (or killed)
                    # before its run's cleanup had finished left its
                    # staging directory, which is removed here rather
                    # than by the next sweep.
                    try:
                        clean_stale_in(out / "runs")
                    except OSError:
                        pass
                    raise
        elif engine == "dask":
            from dask.distributed import Client, LocalCluster, as_completed as dask_completed

            cluster = None
            if address is None:
                cluster = LocalCluster(n_workers=jobs or os.cpu_count() or 1, threads_per_worker=1,
                                       processes=True, dashboard_address=None)
                client = Client(cluster)
            else:
                client = Client(address)
            futs = []
            try:
                futs = [client.submit(run_one, r, str(out), pure=False) for r in todo]
                for f in dask_completed(futs):
                    done(f.result())
            except BaseException:
                client.cancel(futs)
                raise
            finally:
                client.close()
                if cluster is not None:
                    cluster.close()
        else:
            raise ScenarioError(f"--engine {engine!r}: expected 'local' or 'dask'")
    finally:
        if bar is not None:
            bar.close()
    path = _merge(out, runs)
    warnings = _seedless_variants(out, runs)
    for w in warnings:
        print(f"xrc: warning: {w}", file=sys.stderr)
    report = {"runs": [{"run_id": r.run_id, "overrides": list(r.overrides), "seed": r.seed} for r in
                       sorted(runs, key=lambda r: r.run_id)], "warnings": warnings}
    tmp = out / ".sweep.json.tmp"
    try:
        tmp.write_text(json.dumps(report, indent=2) + "\n")
        os.replace(tmp, out / "sweep.json")
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise OutputError(f"--out {str(out)!r}: cannot write {out / 'sweep.json'}: {e.strerror or e}") from None
    return path

