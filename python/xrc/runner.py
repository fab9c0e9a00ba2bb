"""Running a scenario into a run directory.

A run directory holds:

- ``scenario.toml``: the file as given; ``scenario.resolved.json``: the
  scenario after overrides and defaults (what actually ran);
- ``metadata.json``: seed, versions, git commit, command line, input
  hashes;
- ``summary.json``: the headline numbers;
- one Parquet file per time series or table;
- ``plots/``: PNG and SVG figures.

The directory is written under a temporary name and renamed into place at
the end, so an interrupted or failed run never leaves a half-written
directory where results are expected, and never touches an existing one
unless asked to replace it.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from . import __version__, _core
from .results import columns_to_arrays, summarize, write_parquet
from .scenario import Scenario


class OutputError(ValueError):
    """The output directory cannot be used."""


def git_commit() -> str | None:
    """The commit of the xrc checkout this package runs from, if any."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
        if out.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=5)
        return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def simulate(scenario: Scenario, *, progress: bool = False) -> dict[str, Any]:
    """Runs the scenario in memory. Returns ``{"tables", "events",
    "sim_time_s", "wall_time_s"}``."""
    sim = _core.Simulation(scenario.resolved_json())
    end = sim.end_s
    t0 = time.perf_counter()
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=round(end, 3), unit="sim s", delay=2.0, file=sys.stderr,
                   bar_format="{l_bar}{bar}| {n:.1f}/{total:.1f} sim s [{elapsed}<{remaining}]")
    step = max(end / 200.0, 0.05)
    t = 0.0
    done = False
    while not done:
        t = min(t + step, end)
        done = sim.run_until(t)
        if bar is not None:
            bar.update(round(min(sim.now_s, end), 3) - bar.n)
    if bar is not None:
        bar.close()
    raw = sim.finish()
    wall = time.perf_counter() - t0
    tables = columns_to_arrays(raw["tables"])
    names = np.array(list(raw["mode_names"]) or [""], dtype=object)
    cw = tables["cwnd"]
    cw["mode"] = names[cw["mode"].astype(np.int64)].astype(str) if cw["mode"].size else np.array([], dtype=str)
    return {
        "tables": tables,
        "events": int(raw["events"]),
        "sim_time_s": float(raw["sim_time_s"]),
        "wall_time_s": wall,
    }


def metadata(scenario: Scenario, argv: list[str] | None) -> dict[str, Any]:
    inputs = {}
    trace = scenario.resolved.get("trace")
    if trace:
        for key in ("downlink", "uplink"):
            if trace.get(key):
                inputs[f"trace.{key}"] = {"path": trace[key], "sha256": _sha256(trace[key])}
    if scenario.path is not None:
        inputs["scenario"] = {"path": str(scenario.path), "sha256": hashlib.sha256(scenario.source_text.encode()).hexdigest()}
    return {
        "scenario": scenario.name,
        "seed": scenario.seed,
        "xrc_version": __version__,
        "core_version": _core.version(),
        "git_commit": git_commit(),
        "command": argv,
        "overrides": scenario.overrides,
        "inputs": inputs,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }


def _prepare_out(out: Path, force: bool) -> Path:
    """Checks the destination and returns a fresh staging directory beside it."""
    if out.exists() and not out.is_dir():
        raise OutputError(f"--out {str(out)!r} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise OutputError(f"--out {str(out)!r} already holds results; choose another directory or pass --force to replace it")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.partial-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir()
    return staging


def _commit(staging: Path, out: Path) -> None:
    if out.exists():
        old = out.parent / f".{out.name}.old-{os.getpid()}"
        os.replace(out, old)
        os.replace(staging, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(staging, out)


def run_to_dir(scenario: Scenario, out: str | Path, *, force: bool = False, plots: bool = True,
               progress: bool = False, argv: list[str] | None = None) -> dict[str, Any]:
    """Runs ``scenario`` and writes its run directory. Returns the summary."""
    out = Path(out)
    staging = _prepare_out(out, force)
    try:
        result = simulate(scenario, progress=progress)
        tables = result["tables"]
        (staging / "scenario.toml").write_text(scenario.source_text)
        (staging / "scenario.resolved.json").write_text(json.dumps(scenario.resolved, indent=2, sort_keys=True) + "\n")
        (staging / "metadata.json").write_text(json.dumps(metadata(scenario, argv), indent=2) + "\n")
        flow_ids = [f["id"] for f in scenario.resolved["flows"]]
        write_parquet(tables, staging, flow_ids)
        summary = summarize(scenario.resolved, tables, events=result["events"], sim_time_s=result["sim_time_s"],
                            wall_time_s=result["wall_time_s"])
        (staging / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        if plots:
            from .plots import plot_all

            plot_all(tables, scenario.resolved, staging / "plots")
        _commit(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return summary
