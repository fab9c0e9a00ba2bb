"""Running a scenario into a run directory.

A run directory holds:

- ``scenario.toml``: the scenario as it ran (overrides, seed and defaults
  applied, file paths absolute), so ``xrc run RUNDIR/scenario.toml`` runs it
  again; ``scenario.resolved.json``: the same as JSON (``xrc run RUNDIR``
  runs it); ``scenario.given.toml``: the file as given, comments and all;
- ``metadata.json``: seed, versions, git commit, command line, overrides,
  input files and their hashes;
- ``summary.json``: the headline numbers;
- one Parquet file per time series or table, written as the run goes
  (:mod:`xrc.stream`: a run's memory does not grow with its series);
- ``plots/``: PNG and SVG figures.

The directory is written under a temporary name and put into place at the
end (:mod:`xrc.outdir`), so an interrupted or failed run never leaves a
half-written directory where results are expected, never touches an
existing one unless asked to replace it, and replaces only a run directory.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from . import __version__, _core, progress as _progress, stopping, tomlw
from ._proc import trim_heap
from .outdir import OutputError, commit, staged
from .results import columns_to_arrays, summarize
from .scenario import Scenario, ScenarioError, load_text

__all__ = ["OutputError", "run_to_dir", "simulate", "metadata", "git_commit"]


def exact_seconds(s: float) -> float:
    """The core's simulated time, integer nanoseconds scaled by 1e-9 in
    floating point (60 s comes out 60.00000000000001), as the nearest
    double to the nanoseconds' exact value in seconds (60.0)."""
    return round(float(s) * 1e9) / 1e9


@functools.lru_cache(maxsize=1)
def git_commit() -> str | None:
    """The commit of the xrc checkout this package runs from (``-dirty`` if
    tracked files differ from it), or ``None``: an installed wheel is not in
    a checkout, and a package that merely lies inside some other repository
    (a virtualenv in a project) does not take that repository's commit.

    Asked once per process: the code that runs is what the process imported
    (and the core it loaded), so a later edit of the checkout does not
    change it; a sweep's runs were spending three `git` processes each."""
    here = Path(__file__).resolve().parent
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=here, capture_output=True, text=True,
                             timeout=5)
        if top.returncode != 0:
            return None
        root = Path(top.stdout.strip())
        # Ours: the package is the checkout's python/xrc, beside the core.
        if not ((root / "crates" / "xrc-core" / "Cargo.toml").is_file() and (root / "python" / "xrc") == here):
            return None
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
        if out.returncode != 0:
            return None
        # Without the index refresh's lock: a `git status` killed with the
        # run's process group (timeout -s KILL, a fuzz case) left
        # .git/index.lock, and every git command after it failed.
        dirty = subprocess.run(["git", "--no-optional-locks", "status", "--porcelain", "--untracked-files=no"],
                               cwd=here, capture_output=True, text=True, timeout=5)
        return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def sha256_file(path: str) -> str:
    """The SHA-256 of a file's bytes, in hex."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


#: The most rows a run held in memory (:func:`simulate`, ``xrc.run``
#: without ``out``) may record, over every table: about 45 bytes each at
#: the peak (the core's columns, then the caller's frames), so about 1 GB.
#: (Measured: 1.76·10^7 rows, a 20 Mbit/s flow for 2·10^4 simulated
#: seconds, peaked at 0.83 GB.) A scenario whose per-TTI table alone would
#: pass it is refused before it runs; otherwise the run stops when its
#: tables reach it. ``xrc run`` (:func:`run_to_dir`) streams its tables to
#: disk and is bounded by the core's validation instead.
IN_MEMORY_ROWS = 2e7
#: The per-TTI table's share of it, checked before the run.
IN_MEMORY_SAMPLED_ROWS = IN_MEMORY_ROWS


def sampled_rows(resolved: dict[str, Any]) -> float:
    """Rows of the per-TTI RLC table a scenario records."""
    topo = resolved["topology"]
    if topo == "cellular":
        n_ues, tick_ms = len(resolved["ues"]), float(resolved["cell"]["tti_ms"])
    elif topo == "trace":
        n_ues, tick_ms = 1, 1.0
    else:
        return 0.0
    every = int(resolved["output"]["rlc_sample_ttis"])
    return math.ceil(float(resolved["duration_s"]) * 1e3 / tick_ms / every) * n_ues


def too_many_rows(scenario: Scenario, at_s: float) -> str:
    """The message for an in-memory run whose tables reached
    :data:`IN_MEMORY_ROWS` at `at_s` simulated seconds."""
    o = scenario.resolved["output"]
    on = [f"output.{k} = false" for k in ("rtt_trace", "cwnd_trace", "queue_delay_trace") if o.get(k)]
    thin = f"turn off per-packet tables it does not need ({', '.join(on)}), " if on else ""
    return (f"duration_s: a run held in memory records at most {IN_MEMORY_ROWS:.0e} rows "
            f"(about {IN_MEMORY_ROWS * 50 / 1e9:.2g} GB), and this one reached that {at_s:.0f} s into its "
            f"{float(scenario.resolved['duration_s']):g} s; {thin}"
            f"shorten duration_s, or write it to a directory (`xrc run --out`, xrc.run(..., out=DIR)), "
            f"which streams its tables to disk")


def simulate(scenario: Scenario, *, progress: bool = False) -> dict[str, Any]:
    """Runs the scenario in memory. Returns ``{"tables", "events",
    "sim_time_s", "wall_time_s"}``. A scenario whose per-TTI table would
    pass :data:`IN_MEMORY_SAMPLED_ROWS` rows is refused (ScenarioError
    naming ``output.rlc_sample_ttis``), and a run whose tables reach
    :data:`IN_MEMORY_ROWS` is stopped (naming the ``output`` fields that
    thin them): write it to a run directory instead, which streams its
    series. So is one with ``output.pcap`` (ScenarioError naming it): its
    captures are files of a run directory, which a run in memory has not
    (a temporary directory would be removed before the caller could read
    them)."""
    if scenario.resolved["output"].get("pcap", False):
        raise ScenarioError("output.pcap: packet captures are written into a run directory (pcap/), which a run "
                            "held in memory has not; write the run to a directory (`xrc run --out DIR`, "
                            "xrc.run(..., out=DIR)) or set output.pcap = false")
    rows = sampled_rows(scenario.resolved)
    if rows > IN_MEMORY_SAMPLED_ROWS:
        every = int(scenario.resolved["output"]["rlc_sample_ttis"])
        fix = math.ceil(rows / IN_MEMORY_SAMPLED_ROWS * every)
        raise ScenarioError(
            f"output.rlc_sample_ttis: sampling every {every} TTIs makes {rows:.3g} rows of the per-TTI table, "
            f"more than the {IN_MEMORY_SAMPLED_ROWS:.0e} a run held in memory can record; set "
            f"output.rlc_sample_ttis to at least {fix}, or write the run to a directory (`xrc run --out`, "
            f"xrc.run(..., out=DIR)), which streams its series to disk")
    from .stream import core_simulation

    sim = core_simulation(scenario)
    end = sim.end_s
    t0 = time.perf_counter()
    bar = _progress.bar(progress, total=round(end, 3), unit="sim s", delay=2.0,
                        bar_format="{l_bar}{bar}| {n:.1f}/{total:.1f} sim s [{elapsed}<{remaining}]")
    step = max(end / 200.0, 0.05)
    t = 0.0
    done = False
    try:
        while not done:
            t = min(t + step, end)
            # Runs in bounded steps and raises KeyboardInterrupt on Ctrl-C.
            done = sim.run_until(t, max_rows=int(IN_MEMORY_ROWS) + 1)
            stopping.check()   # a SIGTERM put off or swallowed since the last step
            if sim.rows_held > IN_MEMORY_ROWS:
                raise ScenarioError(too_many_rows(scenario, sim.now_s))
            if bar is not None:
                bar.update(round(min(sim.now_s, end), 3) - bar.n)
    except ValueError as e:
        # The core stopped the run (more in flight or recorded than it holds).
        raise ScenarioError(str(e)) from None
    finally:
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
        "sim_time_s": exact_seconds(raw["sim_time_s"]),
        "wall_time_s": wall,
    }


def metadata(scenario: Scenario, argv: list[str] | None) -> dict[str, Any]:
    inputs = {field: {"path": p, "sha256": sha256_file(p)} for field, p in sorted(scenario.inputs.items())}
    if scenario.path is not None:
        inputs["scenario"] = {"path": str(scenario.path), "sha256": hashlib.sha256(scenario.source_text.encode()).hexdigest()}
    return {
        "xrc_output": "run",
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


def scenario_toml(scenario: Scenario) -> str:
    """The scenario as it ran, as TOML that resolves to the same scenario.

    Written from the resolved scenario, so every default is explicit and a
    rerun does not depend on today's defaults. A value TOML cannot hold (a
    limit set to none where the default is a number, possible only from
    JSON) is reported in the header: rerun such a directory with
    ``xrc run RUNDIR``, which reads the JSON."""
    head = ["# The scenario as it ran: written by xrc, every default filled in.",
            "# Run it again:  xrc run THIS_FILE --out DIR   (or: xrc run RUN_DIRECTORY --out DIR)"]
    if scenario.path is not None:
        head.append(f"# Given as {scenario.path}" + (f" with --set {' --set '.join(scenario.overrides)}"
                                                     if scenario.overrides else ""))
    body = tomlw.dumps(scenario.resolved)
    try:
        again = load_text(body, base=Path("/")).resolved
    except ScenarioError as e:
        again = {"error": str(e)}
    if again != scenario.resolved:
        head.append("# NOTE: TOML cannot hold every value of this scenario exactly (a limit set to none?);")
        head.append("# rerun it with `xrc run RUN_DIRECTORY`, which reads scenario.resolved.json.")
    return "\n".join(head) + "\n\n" + body


def run_to_dir(scenario: Scenario, out: str | Path, *, force: bool = False, plots: bool = True,
               progress: bool = False, argv: list[str] | None = None,
               stats: dict[str, Any] | None = None, simulation: Any = None) -> dict[str, Any]:
    """Runs ``scenario`` and writes its run directory. Returns the summary.
    `stats`, if given, receives the time spent in the core (``core_s``), of
    which running events (``events_s``: the rows it records stay in the
    core; the rest is handing them over), and the rows written per table
    (``rows``), for ``xrc bench``. `simulation` runs the scenario instead
    of the core's own (``stream_run``): ``xrc run --policy``."""
    out = Path(out)
    with staged(out, force) as staging:
        try:
            from .stream import stream_run

            run = stream_run(scenario, staging, progress=progress, simulation=simulation)
            if stats is not None:
                stats.update(core_s=run.core_time_s, events_s=run.events_time_s, rows=dict(run.rows))
            try:
                (staging / "scenario.toml").write_text(scenario_toml(scenario))
                (staging / "scenario.given.toml").write_text(scenario.source_text)
                (staging / "scenario.resolved.json").write_text(
                    json.dumps(scenario.resolved, indent=2, sort_keys=True) + "\n")
                (staging / "metadata.json").write_text(json.dumps(metadata(scenario, argv), indent=2) + "\n")
                summary = summarize(scenario.resolved, run.data, events=run.events, sim_time_s=run.sim_time_s,
                                    wall_time_s=run.wall_time_s)
                (staging / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
                trim_heap()
                if plots:
                    from .plots import plot_all

                    plot_all(run.data, scenario.resolved, staging / "plots", summary=summary)
            finally:
                run.close()
            commit(staging, out, force)
        except OSError as e:
            # The staging directory is removed on the way out of the with.
            raise OutputError(f"--out {str(out)!r}: cannot write {e.filename or 'the run directory'}: "
                              f"{e.strerror or e}") from None
    return summary
