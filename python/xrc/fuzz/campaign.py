"""The campaign: worker processes that each answer case numbers with
outcomes, the parent that feeds them, kills a worker stuck past its bound
or over its memory, writes a reproducer per failure and ``report.json``;
``xrc fuzz``'s command line."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import selectors
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import edges
from .scenarios import FAILURES as SCENARIO_FAILURES, PASSING as SCENARIO_PASSING
from .scenarios import Case, Generator, _CheckedSimulation, _install_checked_simulation, _write_case, execute

#: Every outcome of either surface.
PASSING = tuple(dict.fromkeys(SCENARIO_PASSING + edges.PASSING))
FAILURES = tuple(dict.fromkeys(SCENARIO_FAILURES + edges.FAILURES))


def _worker(args: argparse.Namespace) -> int:
    """Reads case numbers on stdin, answers one JSON line each on stdout."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything else printed goes to the log, not the protocol
    sys.stdout = sys.stderr
    _install_checked_simulation()
    _CheckedSimulation.max_events = args.max_events
    if args.surface == "edges":
        gen = edges.EdgeGenerator(args.seed, quick=args.quick)
        run_case = edges.execute
    else:
        gen = Generator(args.seed, Path(args.scenarios) if args.scenarios else None, args.run_fraction)
        run_case = execute
    # The parent makes and removes the directory: it ends its workers with
    # SIGKILL, which left one /tmp/xrc-fuzz-* per worker behind.
    tmp = Path(args.workdir)
    proto.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        req = json.loads(line)
        case = gen.case(req["index"])
        case.sabotage = req.get("sabotage", "")
        print(f"--- case {case.index}", file=sys.stderr, flush=True)
        res = run_case(case, tmp, args.case_timeout)
        res["index"] = case.index
        res["kind"] = case.kind
        res["ran"] = case.run
        proto.write(json.dumps(res) + "\n")
    return 0


# ---------------------------------------------------------------------------
# The campaign (parent process).


@dataclass
class Report:
    seed: int
    cases: int
    jobs: int
    wall_time_s: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)
    by_kind: dict[str, dict[str, int]] = field(default_factory=dict)
    runs: int = 0
    failures: list[dict[str, Any]] = field(default_factory=list)
    #: Every case's result, when replaying chosen cases.
    results: list[dict[str, Any]] = field(default_factory=list)
    surface: str = "scenarios"
    #: Worker seconds spent on each kind of case.
    seconds_by_kind: dict[str, float] = field(default_factory=dict)

    @property
    def failed(self) -> int:
        return sum(self.counts.get(k, 0) for k in FAILURES)

    def describe(self) -> str:
        lines = [f"{self.cases} cases (seed {self.seed}, {self.jobs} jobs) in {self.wall_time_s:.1f} s; "
                 f"{self.runs} run to completion"]
        shown = (edges.PASSING + edges.FAILURES if self.surface == "edges" else SCENARIO_PASSING + SCENARIO_FAILURES)
        lines.append("  " + ", ".join(f"{k} {self.counts.get(k, 0)}" for k in shown))
        for r in sorted(self.results, key=lambda r: r["index"]):
            lines.append(f"  case {r['index']} ({r['kind']}): {r['outcome']} {r['message'][:300]}")
        for f in self.failures[:20]:
            lines.append(f"  case {f['index']} ({f['kind']}): {f['outcome']}: {f['message'][:300]}  -> {f['dir']}")
        return "\n".join(lines)


def default_scenarios() -> Path | None:
    """The bundled scenarios: beside the package when installed with them,
    else ``scenarios/`` in the current directory."""
    try:
        from importlib.resources import files

        p = Path(str(files("xrc") / "scenarios"))
        if p.is_dir():
            return p
    except (ModuleNotFoundError, TypeError):
        pass
    p = Path("scenarios")
    return p.resolve() if p.is_dir() else None


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


class _Worker:
    def __init__(self, argv: list[str], log: Path):
        self.log = log
        # Its scratch directory, removed by kill() (the worker is killed,
        # so it cannot remove it itself).
        self.workdir = tempfile.mkdtemp(prefix="xrc-fuzz-")
        try:
            with open(log, "ab") as err:
                self.proc = subprocess.Popen([*argv, "--workdir", self.workdir], stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=err, start_new_session=True)
        except BaseException:
            shutil.rmtree(self.workdir, ignore_errors=True)
            raise
        self.buf = b""
        self.busy: tuple[int, float, int] | None = None  # (case, started, log offset)
        self.ready = False

    def send(self, index: int, sabotage: str = "") -> None:
        self.busy = (index, time.monotonic(), self.log.stat().st_size)
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"index": index, "sabotage": sabotage}) + "\n").encode())
        self.proc.stdin.flush()

    def log_since(self, offset: int) -> str:
        with open(self.log, "rb") as f:
            f.seek(offset)
            return f.read()[-4000:].decode(errors="replace")

    def kill(self) -> None:
        try:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            for s in (self.proc.stdin, self.proc.stdout):
                with contextlib.suppress(OSError):
                    s.close()  # type: ignore[union-attr]
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)


def write_reproducer(case: Case | edges.EdgeCase, result: dict[str, Any], out: Path) -> Path:
    d = out / "failures" / f"{case.index}-{result['outcome']}"
    shutil.rmtree(d, ignore_errors=True)
    if isinstance(case, edges.EdgeCase):
        # Its operations are data; the campaign replays them.
        d.mkdir(parents=True)
        info = {**asdict(case), "outcome": result["outcome"], "message": result["message"]}
        (d / "case.json").write_text(json.dumps(info, indent=2) + "\n")
        (d / "repro.sh").write_text(
            "#!/bin/sh\n"
            f"# Case {case.index} of edge fuzz seed {case.seed} ({case.kind}): {result['outcome']}\n"
            f"xrc fuzz --surface edges --seed {case.seed} --case {case.index} --out /tmp/xrc-fuzz-replay\n")
        (d / "repro.sh").chmod(0o755)
        return d
    path = _write_case(case, d)
    sets = " ".join(f"--set {shlex.quote(o)}" for o in case.overrides)
    info = {k: v for k, v in asdict(case).items() if k not in ("scenario", "files")}
    info.update(outcome=result["outcome"], message=result["message"], files=sorted(case.files))
    (d / "case.json").write_text(json.dumps(info, indent=2) + "\n")
    (d / "repro.sh").write_text(
        "#!/bin/sh\n"
        f"# Case {case.index} of fuzz seed {case.seed} ({case.kind}, from {case.base}): {result['outcome']}\n"
        "cd \"$(dirname \"$0\")\"\n"
        f"xrc validate {path.name} {sets}\n"
        + (f"xrc run {path.name} {sets} --out /tmp/xrc-fuzz-repro-{case.index} --force --no-plots\n"
           if case.run else "")
        + f"# or: xrc fuzz --seed {case.seed} --case {case.index} --out /tmp/xrc-fuzz-replay\n")
    (d / "repro.sh").chmod(0o755)
    return d


def campaign(cases: int, seed: int, out: str | Path, *, jobs: int | None = None, start: int = 0, surface: str = "scenarios",
             quick: bool = False,
             scenarios: Path | None = None, run_fraction: float = 0.15, case_timeout: float = 20.0,
             max_rss_mb: float = 4096.0, max_events: int = 5_000_000, only: list[int] | None = None, sabotage: dict[int, str] | None = None,
             progress: bool = False) -> Report:
    """Runs cases ``start .. start+cases`` (or `only`) on `jobs` worker
    processes; writes ``OUT/report.json`` and a reproducer per failure."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if (out / "report.json").is_file():  # an earlier campaign's reproducers
        shutil.rmtree(out / "failures", ignore_errors=True)
    for old in out.glob("worker-*.log"):
        old.unlink()
    todo = list(only) if only is not None else list(range(start, start + cases))
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(todo) or 1))
    scenarios = scenarios if scenarios is not None else default_scenarios()
    argv = [sys.executable, "-m", "xrc.fuzz", "--worker", "--surface", surface, *(["--quick"] if quick else []),
            "--seed", str(seed),
            "--run-fraction", str(run_fraction),
            "--case-timeout", str(case_timeout), "--max-events", str(max_events)] + (["--scenarios", str(scenarios)] if scenarios else [])
    gen = edges.EdgeGenerator(seed, quick=quick) if surface == "edges" else Generator(seed, scenarios, run_fraction)
    report = Report(seed=seed, cases=len(todo), jobs=jobs, surface=surface)
    sabotage = sabotage or {}
    t0 = time.perf_counter()
    queue = list(reversed(todo))
    sel = selectors.DefaultSelector()
    workers: list[_Worker] = []

    def spawn(k: int) -> _Worker:
        w = _Worker(argv, out / f"worker-{k}.log")
        assert w.proc.stdout is not None
        os.set_blocking(w.proc.stdout.fileno(), False)
        sel.register(w.proc.stdout, selectors.EVENT_READ, (k, w))
        return w

    def record(res: dict[str, Any]) -> None:
        o = res["outcome"]
        report.counts[o] = report.counts.get(o, 0) + 1
        kind = report.by_kind.setdefault(res["kind"], {})
        kind[o] = kind.get(o, 0) + 1
        report.seconds_by_kind[res["kind"]] = report.seconds_by_kind.get(res["kind"], 0.0) + float(res.get("seconds", 0.0))
        report.runs += int(o in ("ran", "heavy", "stopped", "absurd", "nondeterministic", "invariant") or
                           (res.get("ran", False) and o in ("hang", "memory", "crash", "panic")))
        if only is not None:
            report.results.append(res)
        if o in FAILURES:
            case = gen.case(res["index"])
            case.sabotage = sabotage.get(res["index"], "")
            d = write_reproducer(case, res, out)
            report.failures.append({**res, "dir": str(d)})

    def feed(w: _Worker) -> None:
        if queue:
            i = queue.pop()
            w.send(i, sabotage.get(i, ""))
        else:
            w.busy = None

    def replace(k: int, w: _Worker) -> _Worker:
        sel.unregister(w.proc.stdout)
        w.kill()
        nw = spawn(k)
        workers[k] = nw
        return nw

    try:
        workers.extend(spawn(k) for k in range(jobs))
        done = 0
        last_print = 0.0
        while done < len(todo):
            for key, _ in sel.select(timeout=0.25):
                k, w = key.data
                try:
                    chunk = os.read(key.fd, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:  # the worker died
                    if w.busy is not None:
                        index = w.busy[0]
                        msg = w.log_since(w.busy[2]) or f"worker exited with {w.proc.poll()}"
                        record({"index": index, "kind": gen.case(index).kind, "outcome": "crash",
                                "message": f"worker died (status {w.proc.wait()}): {msg}", "seconds": 0.0})
                        done += 1
                    elif not w.ready:
                        raise RuntimeError(f"fuzz worker failed to start: {w.log_since(0)}")
                    replace(k, w)
                    continue
                w.buf += chunk
                while b"\n" in w.buf:
                    line, _, w.buf = w.buf.partition(b"\n")
                    msg = json.loads(line)
                    if msg.get("ready"):
                        w.ready = True
                    else:
                        record(msg)
                        done += 1
                    feed(w)
            now = time.monotonic()
            for k, w in enumerate(list(workers)):
                if w.busy is None:
                    if w.ready and queue:
                        feed(w)
                    continue
                index, started, offset = w.busy
                over_time = now - started > case_timeout + 10
                rss = _rss_mb(w.proc.pid)
                if over_time or rss > max_rss_mb:
                    outcome = "hang" if over_time else "memory"
                    why = (f"no answer {now - started:.0f} s after the case started (stuck in native code?)"
                           if over_time else f"resident memory {rss:.0f} MB above {max_rss_mb:.0f} MB")
                    record({"index": index, "kind": gen.case(index).kind, "outcome": outcome,
                            "message": f"{why}; log: {w.log_since(offset)[-1000:]}", "seconds": now - started})
                    done += 1
                    replace(k, w)
            if progress and now - last_print > 5:
                last_print = now
                print(f"  {done}/{len(todo)} cases, {time.perf_counter() - t0:.0f} s, failures {report.failed}",
                      file=sys.stderr, flush=True)
    finally:
        for w in workers:
            with contextlib.suppress(OSError, ValueError):
                sel.unregister(w.proc.stdout)
            w.kill()
    report.wall_time_s = time.perf_counter() - t0
    report.failures.sort(key=lambda f: f["index"])
    (out / "report.json").write_text(json.dumps(asdict(report), indent=2) + "\n")
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="xrc fuzz", description="Fuzz scenario validation and the core.")
    ap.add_argument("--cases", type=int, default=10_000, help="number of cases (default 10000)")
    ap.add_argument("--seed", type=int, default=1, help="campaign seed (default 1)")
    ap.add_argument("--start", type=int, default=0, help="first case number (default 0)")
    ap.add_argument("--case", type=int, action="append", default=None, help="replay only this case (repeatable)")
    ap.add_argument("--out", default="runs/fuzz", help="directory for report.json and reproducers")
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default: all cores)")
    ap.add_argument("--scenarios", default=None, help="directory of base scenarios (default: the bundled ones)")
    ap.add_argument("--run-fraction", type=float, default=0.15, help="fraction of cases also run (default 0.15)")
    ap.add_argument("--case-timeout", type=float, default=20.0, help="wall-time bound per case, s (default 20)")
    ap.add_argument("--max-rss-mb", type=float, default=4096.0, help="memory bound per worker, MB (default 4096)")
    ap.add_argument("--max-events", type=int, default=5_000_000,
                    help="events a run may take before it counts as heavy and stops (default 5000000)")
    ap.add_argument("--surface", choices=["scenarios", "edges"], default="scenarios",
                    help="what the cases are: scenarios (files, --set overrides, traces; the default) or edges "
                         "(API calls, sweep files, damaged directories, signals, concurrent writers, full disks)")
    ap.add_argument("--quick", action="store_true",
                    help="with --surface edges: the kinds that start processes rarer (the test suite's campaign)")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--workdir", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return _worker(args)
    if args.cases < 0 or not 0.0 <= args.run_fraction <= 1.0 or args.case_timeout <= 0:
        print("xrc: error: --cases must be >= 0, --run-fraction in [0, 1], --case-timeout > 0", file=sys.stderr)
        return 2
    if args.jobs is not None and args.jobs < 1:
        print(f"xrc: error: --jobs must be at least 1, got {args.jobs}", file=sys.stderr)
        return 2
    scen = Path(args.scenarios) if args.scenarios else None
    from ..outdir import OutputError, check_parents

    try:
        check_parents(Path(args.out))
    except OutputError as e:
        print(f"xrc: error: {e}", file=sys.stderr)
        return 2
    try:
        rep = campaign(args.cases, args.seed, args.out, jobs=args.jobs, start=args.start, scenarios=scen,
                       surface=args.surface, quick=args.quick,
                       run_fraction=args.run_fraction, case_timeout=args.case_timeout, max_rss_mb=args.max_rss_mb,
                       max_events=args.max_events, only=args.case, progress=not args.quiet)
        print(rep.describe())
        print(f"  report: {Path(args.out) / 'report.json'}")
        sys.stdout.flush()
    except KeyboardInterrupt:
        print("xrc: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`xrc fuzz ... | head`), as `xrc validate`.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print("xrc: error: output closed by the reader (broken pipe)", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"xrc: error: --out {args.out!r}: {e.strerror or e}", file=sys.stderr)
        return 2
    return 1 if rep.failed else 0

