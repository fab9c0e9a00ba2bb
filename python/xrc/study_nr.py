"""``xrc study nr``: the 5G NR mid-band cell under TDD and FDD.

Runs the bundled ``nr/midband-tdd.toml`` (μ = 1, 100 MHz, DDDSU, eight UEs,
one bulk download each of a different scheme) and its FDD twin
``nr/midband-fdd.toml`` over a few seeds and reports, per scheme and
duplex mode:

- **utilization**: the UE's delivered bits over its capacity (``summary.json``'s
  ``utilization``: the larger of its fair share and what its radio carried);
- **HoL ≤ 10 ms**: the fraction of the UE's active time whose RLC
  head-of-line delay was within XRC's queuing budget (10 ms);
- **RTT**: mean and 95th percentile of the flow's RTT samples;
- **slow-start exit**: for every flow that starts in slow start, when it
  left it (seconds after its start), with what window (segments), that
  window over the flow's bandwidth-delay product (its mean delivered rate
  times its least RTT), and why: ``delay`` (HyStart's delay or ACK-train
  test: the window was still Open) or ``loss``.

Under TDD the uplink exists only in the U slot (ACKs leave once per 2.5 ms
period) and HARQ-ACKs wait for the S/U slots: the 5G form of the ACK
jitter that makes HyStart exit early over LTE
(``scenarios/studies/hystart-lte.toml``).
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from . import bundled, stopping
from .outdir import OutputError, check_named, check_parents
from .parallel import map_parallel
from .results import summarize
from .runner import simulate
from .scenario import from_dict, load

SCENARIOS = {"tdd": "nr/midband-tdd.toml", "fdd": "nr/midband-fdd.toml"}
HOL_BUDGET_MS = 10.0


def _exit(cw: dict[str, np.ndarray], k: int) -> tuple[float, int, str] | None:
    """The flow's first slow-start exit: (time, cwnd, cause) or None."""
    sel = cw["flow"] == k
    modes, states, cwnds, ts = cw["mode"][sel], cw["ca_state"][sel], cw["cwnd"][sel], cw["t"][sel]
    for i in range(1, len(modes)):
        if modes[i - 1] == "slow_start" and modes[i] != "slow_start":
            return float(ts[i]), int(cwnds[i]), "delay" if int(states[i]) == 0 else "loss"
    return None


def _scenario(duplex: str, seed: int, duration_s: float | None, alone: bool):
    """The TDD or FDD scenario (``tdd10``: the TDD one with DDDDDDDSUU); with
    `alone`, only its first CUBIC flow, started at 0.1 s."""
    base = "fdd" if duplex == "fdd" else "tdd"
    overrides = [f"duration_s={duration_s}"] if duration_s else []
    if duplex == "tdd10":
        overrides.append("cell.nr.tdd_pattern=DDDDDDDSUU")
    path = bundled.scenario(SCENARIOS[base])
    if not alone:
        return load(path, overrides=overrides, seed=seed)
    doc = tomllib.loads(Path(path).read_text())
    cubic = next(f for f in doc["flows"] if f["cc"] == "cubic")
    doc["flows"] = [{**cubic, "start_s": 0.1}]
    doc["seed"] = seed
    if duration_s:
        doc["duration_s"] = duration_s
    if duplex == "tdd10":
        doc["cell"]["nr"]["tdd_pattern"] = "DDDDDDDSUU"
    return from_dict(doc, base=Path(path).parent)


def run_one(duplex: str, seed: int, duration_s: float | None, alone: bool = False) -> dict[str, Any]:
    """Runs one scenario and keeps, per flow, what the report needs."""
    sc = _scenario(duplex, seed, duration_s, alone)
    r = simulate(sc)
    t = r["tables"]
    s = summarize(sc.resolved, t, events=r["events"], sim_time_s=r["sim_time_s"], wall_time_s=r["wall_time_s"])
    ues = {u["id"]: u for u in s["ues"]}
    rtt = t["rtt"]
    mss = 1448
    flows = []
    for k, f in enumerate(s["flows"]):
        samples = rtt["rtt_ms"][rtt["flow"] == k]
        u = ues[f["ue"]]
        ex = _exit(t["cwnd"], k)
        bdp = None
        if samples.size:
            # The UE's capacity (fair share or what its radio carried) over
            # the least RTT.
            bdp = u["capacity_mbps"] * 1e6 / 8 * float(samples.min()) / 1e3 / mss
        flows.append({
            "id": f["id"], "cc": f["cc"], "ue": f["ue"],
            "goodput_mbps": f["goodput_mbps"],
            "utilization": u["utilization"],
            "hol_within_budget": u["frac_time_hol_below_budget"],
            "rtt_mean_ms": float(samples.mean()) if samples.size else None,
            "rtt_p95_ms": float(np.percentile(samples, 95)) if samples.size else None,
            "ss_exit_s": None if ex is None else ex[0] - f["start_s"],
            "ss_exit_cwnd": None if ex is None else ex[1],
            "ss_exit_cause": None if ex is None else ex[2],
            "ss_exit_over_bdp": None if ex is None or not bdp else ex[1] / bdp,
        })
    return {"duplex": duplex, "seed": seed, "alone": alone, "events": r["events"], "wall_s": r["wall_time_s"],
            "flows": flows}


def _mean(xs: list[Any]) -> float | None:
    v = [x for x in xs if x is not None]
    return float(np.mean(v)) if v else None


def _fmt(x: float | None, spec: str) -> str:
    return "–" if x is None else format(x, spec)


#: The report's first line: how `--force` knows this study wrote it.
TITLE = "# 5G NR mid-band cell: TDD (DDDSU) against FDD"


def report(runs: list[dict[str, Any]]) -> str:
    """The report's text (Markdown): one row per scheme and duplex mode,
    each value the mean over the scheme's flows and the seeds."""
    alone = [r for r in runs if r["alone"]]
    runs = [r for r in runs if not r["alone"]]
    seeds = sorted({r["seed"] for r in runs})
    lines = [
        TITLE,
        "",
        f"μ = 1, 100 MHz (273 PRBs), 256QAM tables, eight UEs at CQI 12, one bulk flow each; "
        f"seeds {', '.join(map(str, seeds))}. Means over the scheme's flows and the seeds.",
        "",
        "## Eight schemes sharing the cell",
        "",
        "| scheme | duplex | goodput Mbit/s | utilization | HoL ≤ 10 ms | RTT mean ms | RTT p95 ms "
        "| slow-start exit s | exit cwnd | exit cwnd / BDP | exits by delay |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    schemes = list(dict.fromkeys(f["cc"] for r in runs for f in r["flows"]))
    for cc in schemes:
        for duplex in ("tdd", "fdd"):
            fl = [f for r in runs if r["duplex"] == duplex for f in r["flows"] if f["cc"] == cc]
            if not fl:
                continue
            exits = [f for f in fl if f["ss_exit_cause"] is not None]
            by_delay = sum(f["ss_exit_cause"] == "delay" for f in exits)
            lines.append(
                f"| {cc} | {duplex.upper()} | {_fmt(_mean([f['goodput_mbps'] for f in fl]), '.1f')} "
                f"| {_fmt(_mean([f['utilization'] for f in fl]), '.3f')} "
                f"| {_fmt(_mean([f['hol_within_budget'] for f in fl]), '.3f')} "
                f"| {_fmt(_mean([f['rtt_mean_ms'] for f in fl]), '.1f')} "
                f"| {_fmt(_mean([f['rtt_p95_ms'] for f in fl]), '.1f')} "
                f"| {_fmt(_mean([f['ss_exit_s'] for f in exits]), '.3f')} "
                f"| {_fmt(_mean([f['ss_exit_cwnd'] for f in exits]), '.0f')} "
                f"| {_fmt(_mean([f['ss_exit_over_bdp'] for f in exits]), '.2f')} "
                f"| {by_delay}/{len(fl)} |")
    lines += [
        "",
        "Slow-start exit: the first change from the `slow_start` mode, in seconds after the flow's start "
        "(– : the scheme's trace has no such mode, or it never left it); `exits by delay` counts exits with the "
        "window still Open (HyStart's delay or ACK-train test) over the flows. BDP: the UE's capacity (its fair "
        "share, or what its radio carried if more) times the flow's least RTT, in 1448-byte segments.",
    ]
    if alone:
        lines += [
            "",
            "## HyStart: one CUBIC flow alone in the cell",
            "",
            "The same cell with only one CUBIC download (HyStart on, from 0.1 s), per duplex pattern; an early "
            "exit leaves slow start below half the BDP (as `scenarios/studies/hystart-lte.toml` counts over LTE).",
            "",
            "| duplex | runs | exit s (mean) | exit cwnd (median) | exit cwnd / BDP (median) | early exits "
            "| exits by delay |",
            "|---|---|---|---|---|---|---|",
        ]
        for duplex in ("fdd", "tdd", "tdd10"):
            fl = [f for r in alone if r["duplex"] == duplex for f in r["flows"]]
            if not fl:
                continue
            ex = [f for f in fl if f["ss_exit_cause"] is not None]
            ratio = [f["ss_exit_over_bdp"] for f in ex if f["ss_exit_over_bdp"] is not None]
            early = sum(r < 0.5 for r in ratio)
            name = {"fdd": "FDD", "tdd": "TDD DDDSU", "tdd10": "TDD DDDDDDDSUU"}[duplex]
            lines.append(
                f"| {name} | {len(fl)} | {_fmt(_mean([f['ss_exit_s'] for f in ex]), '.3f')} "
                f"| {_fmt(float(np.median([f['ss_exit_cwnd'] for f in ex])) if ex else None, '.0f')} "
                f"| {_fmt(float(np.median(ratio)) if ratio else None, '.2f')} | {early}/{len(fl)} "
                f"| {sum(f['ss_exit_cause'] == 'delay' for f in ex)}/{len(fl)} |")
    every = runs + alone
    lines += ["", f"{len(every)} runs, {sum(r['events'] for r in every)} events, "
              f"{sum(r['wall_s'] for r in every):.1f} s of simulation (wall)."]
    return "\n".join(lines) + "\n"


def _run(args: tuple[str, int, float | None, bool]) -> dict[str, Any]:
    return run_one(*args)


#: What a study writes into its --out (and the temporary files it writes
#: them through): all that `--force` may find there and replace.
STUDY_FILES = ("report.md", "runs.json")


def _is_study_output(d: Path, title: str, extra: tuple[str, ...] = ()) -> bool:
    """Whether all `d` holds is what this study writes: judged by content,
    not by names (a user's own report.md was replaced): the report opens
    with the study's title and runs.json is a JSON list. `extra`: the other
    names the study writes (files, or directories of figures)."""
    names = {p.name for p in d.iterdir()}
    files = (*STUDY_FILES, *extra)
    if not names <= {*files, *(f".{n}.tmp" for n in files)} or "report.md" not in names:
        return False
    try:
        for name in STUDY_FILES:
            if (d / name).is_symlink() or ((d / name).exists() and not (d / name).is_file()):
                return False
        with open(d / "report.md", encoding="utf-8") as f:
            if f.readline().rstrip("\n") != title:
                return False
        if "runs.json" in names:
            with open(d / "runs.json", encoding="utf-8") as f:
                if not isinstance(json.load(f), list):
                    return False
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return False
    return True


@contextmanager
def study_out(out: str | Path | None, force: bool, title: str, extra: tuple[str, ...] = ()) -> Iterator[Path | None]:
    """A study's output directory, checked and created before any run (a
    bad --out used to fail only after the whole study): refused if it holds
    anything, unless `force` and all it holds is an earlier report of the
    same study (its first line `title`).
    Removed again if this created it and the study fails or is interrupted
    before writing into it."""
    if out is None:
        yield None
        return
    out = Path(out)
    # `--out ""` wrote the report into the current directory.
    check_named(out, "report directory")
    check_parents(out)
    # Every directory this makes, deepest first: removed again (if still
    # empty) on failure, parents included.
    made = [p for p in [out, *out.parents] if not p.exists()]
    try:
        # The directory is made inside the try that removes it: a signal's
        # exception landing just after mkdir left it (empty) behind.
        try:
            if out.exists() and not out.is_dir():
                raise OutputError(f"--out {str(out)!r} exists and is not a directory")
            if out.is_dir() and any(out.iterdir()):
                if not force:
                    raise OutputError(f"--out {str(out)!r} exists and is not empty (use --force)")
                if not _is_study_output(out, title, extra):
                    # `--force` replaced report.md in any directory, then
                    # any report.md and runs.json (known by name only).
                    raise OutputError(f"--out {str(out)!r} holds files that are not this study's report "
                                      f"({', '.join((*STUDY_FILES, *extra))}, the report opening with {title!r}), so "
                                      f"--force does not write there; remove them yourself or choose another "
                                      f"directory")
            out.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise OutputError(f"--out {str(out)!r}: {e.strerror or e}") from None
        yield out
    except BaseException:
        for d in made:
            try:
                d.rmdir()
            except OSError:
                break
        raise


def write_files(out: Path, files: dict[str, str]) -> None:
    """Writes a study's files so that each is either the old or the new one
    and, if any cannot be written, none is replaced; none after a SIGTERM
    whose exception was swallowed on the way (`stopping`)."""
    stopping.check()
    tmps: list[tuple[Path, Path]] = []
    try:
        for name, text in files.items():
            tmps.append((out / f".{name}.tmp", out / name))
            tmps[-1][0].write_text(text)
        for tmp, dest in tmps:
            os.replace(tmp, dest)
    except OSError as e:
        for tmp, _ in tmps:
            tmp.unlink(missing_ok=True)
        raise OutputError(f"--out {str(out)!r}: cannot write {e.filename or 'the report'}: {e.strerror or e}") from None


def study(out: str | Path | None, seeds: int = 3, quick: bool = False, jobs: int | None = None,
          force: bool = False) -> str:
    """Runs the study; writes ``report.md`` and ``runs.json`` into `out`
    (if given) and returns the report."""
    with study_out(out, force, TITLE) as out:
        duration = 4.0 if quick else None
        n = 1 if quick else seeds
        todo = [(d, s, duration, False) for s in range(1, n + 1) for d in ("tdd", "fdd")]
        # HyStart alone: 2 s is long past slow start; more seeds (cheap runs).
        todo += [(d, s, 2.0, True) for s in range(1, 3 * n + 1) for d in ("fdd", "tdd", "tdd10")]
        if jobs == 1:
            runs = [_run(a) for a in todo]
        else:
            # Not a plain ProcessPoolExecutor: its workers went on running
            # when the study was killed (SIGKILL).
            runs = map_parallel(_run, todo, jobs)
        text = report(runs)
        if out is not None:
            write_files(out, {"report.md": text, "runs.json": json.dumps(runs, indent=1)})
    return text
