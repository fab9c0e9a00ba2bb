"""Edge cases: what surrounds a scenario. ``xrc fuzz --surface edges``.

A case is a sequence of one to six operations on one output directory,
generated from ``(seed, index)`` as the scenario cases are, in the manner
of model-based property tests (bolero, proptest state machines): after
every operation the directory must be in a state the operations so far
allow, and nothing may be left behind. Kinds (what the sequence is made
of):

- ``api``: one Python API call (``xrc.run``, ``xrc.sweep``,
  ``xrc.read_run``) with arguments of every kind: dict scenarios holding
  values Python has and TOML has not (``Decimal``, sets, bytes, NumPy
  scalars), names and paths that are missing, too long, directories or
  pipes, keyword overrides that collide, grids and run lists of the wrong
  type, seeds out of range, outputs that are files, run directories or
  under a file;
- ``sweepfile``: a generated sweep file (seeds, ``set``, ``[grid]``,
  ``[[runs]]`` with odd keys, duplicates, tables, out-of-range seeds)
  run by ``xrc sweep``;
- ``damaged``: a finished run or sweep directory damaged (files deleted,
  truncated, emptied, swapped, replaced by a directory, a named pipe, a
  dangling link or a huge sparse file, JSON of the wrong kind, bytes
  flipped) and then read (``xrc.read_run``), rerun (``xrc run DIR``),
  plotted or resumed (``xrc sweep``);
- ``signal``: ``xrc run`` or ``xrc sweep`` (one or two workers) in its
  own process, sent SIGINT, SIGTERM or SIGKILL at a random moment, then
  resumed;
- ``concurrent``: two ``xrc run`` or two ``xrc sweep`` on one ``--out``
  at once;
- ``disk``: a run, a sweep or ``xrc schema --out`` on a full disk (a
  small tmpfs) or a read-only one, over an earlier result (root only: the
  worker mounts in its own mount namespace, so nothing outlives it);
- ``sequence``: three to six of the operations above on one directory.

The checks, after every operation:

- a refusal is exit 2 (or :class:`xrc.ScenarioError`) with a message, and
  leaves the directory as it was (``lost`` otherwise);
- a success leaves the directory complete and equal to an uninterrupted
  run or sweep of the same inputs (``wrong`` otherwise): a resumed sweep's
  table is the uninterrupted sweep's, a rerun from a run directory gives
  the same outputs, a sweep row's seed is its run's;
- an interrupted command exits 130, 143 or by SIGKILL, never with a
  traceback, and leaves the directory as it was or complete, never half
  written (``lost``);
- nothing is left (``leftover``): no staging directory beside the output
  or in a sweep's ``runs/`` (after a SIGKILL, once the janitor has had a
  few seconds), no file in the case's temporary directory (``TMPDIR``), no
  process of the command's group or naming the case's directory;
- any other exception is a ``traceback``; more than ``--case-timeout``
  seconds a ``hang``.
"""

from __future__ import annotations

import contextlib
import ctypes
import decimal
import hashlib
import io
import json
import math
import os
import random
import re
import shutil
import signal
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KINDS = ["api", "sweepfile", "damaged", "signal", "concurrent", "disk", "sequence"]
KIND_WEIGHTS = [34, 18, 22, 7, 4, 5, 10]
#: ``--quick`` (the test suite's campaign): every kind, the ones that start
#: processes (a few tenths of a second each) rarer.
QUICK_WEIGHTS = [45, 24, 20, 3, 2, 3, 3]
#: Outcomes that are findings, besides the scenario cases' own.
FAILURES = ("traceback", "hang", "crash", "memory", "lost", "wrong", "leftover", "message")
PASSING = ("done", "refused", "interrupted", "unsupported")

#: The scenario every operation runs: one NewReno flow over a 20 Mbit/s
#: link for 0.3 s (about 30 ms of work), so a case is cheap.
TINY = """name = "tiny"
seed = 1
duration_s = 0.3
topology = "wired"
[internet]
rate_mbps = 20.0
delay_ms = 10.0
buffer_packets = 60
[[flows]]
cc = "newreno"
"""
#: The sweep every sweep operation runs: four runs of TINY.
SWEEP = """scenario = "tiny.toml"
seeds = [1, 2]
[grid]
"flows.0.cc" = ["newreno", "cubic"]
"""

_STAGING = re.compile(r"^\..+\.(partial|old)-\d+$")


@dataclass
class EdgeCase:
    seed: int
    index: int
    kind: str
    ops: list[dict[str, Any]]
    #: Shared with the scenario cases' interface (never run to completion
    #: in the scenario sense).
    run: bool = False
    sabotage: str = ""
    base: str = "tiny"
    overrides: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------
# Generation.

def _api_value(rng: random.Random) -> Any:
    """A JSON-able description of a Python value (made into the value by
    :func:`_value`)."""
    return rng.choice([
        {"py": "decimal", "v": "0.2"}, {"py": "set", "v": ["cubic"]}, {"py": "bytes", "v": "cubic"},
        {"py": "tuple", "v": [1, 2]}, {"py": "none"}, {"py": "nan"}, {"py": "inf"}, {"py": "np.float64", "v": 0.2},
        {"py": "np.int64", "v": 3}, {"py": "object"}, {"py": "date"}, 0.2, 0.1, 0, -1, 1e300, 2**64, 2**63,
        True, "", "cubic", "bbr", "newreno", "x" * 300, [], {}, [0.2], {"a": 1}, "0.2", "nan",
    ])


def _value(d: Any) -> Any:
    if isinstance(d, dict) and "py" in d:
        import datetime

        import numpy as np

        return {"decimal": lambda: decimal.Decimal(d["v"]), "set": lambda: set(d["v"]),
                "bytes": lambda: d["v"].encode(), "tuple": lambda: tuple(d["v"]), "none": lambda: None,
                "nan": lambda: math.nan, "inf": lambda: math.inf, "np.float64": lambda: np.float64(d["v"]),
                "np.int64": lambda: np.int64(d["v"]), "object": object,
                "date": lambda: datetime.date(1979, 5, 27)}[d["py"]]()
    if isinstance(d, list):
        return [_value(x) for x in d]
    if isinstance(d, dict):
        return {k: _value(v) for k, v in d.items()}
    return d


_KEYWORDS = ["duration_s", "seed", "flows__0__cc", "flows.0.cc", " duration_s", "flows__0__tcp__initial_cwnd",
             "nonexistent", "flows__9__cc", "internet__rate_mbps", "flows__0__traffic"]
_SETS = ["duration_s=0.2", "flows.0.cc=cubic", "seed=3", "duration_s = 0.1", "flows.\u00b2.cc=x", "nonexistent=1",
         "flows.0.tcp.5=null", "internet.99=null", "duration_s=", "=1", "flows.0.cc=\"bbr\"", "duration_s=nan",
         "internet.delay_ms=5", "flows.0.tcp.initial_cwnd=4", "duration_s=0.2", "duration_s=1e300"]
_GRID_KEYS = ["flows.0.cc", "duration_s", "duration_s ", " flows.0.cc", "seed", "internet.delay_ms",
              "flows.0.tcp", "flows.\u00b2.cc", "nonexistent", "internet.rate_mbps", ""]
_GRID_VALUES = [["newreno", "cubic"], ["cubic"], ["newreno", "newreno"], [], [0.1, 0.2], [0.2], [5.0, 20.0],
                [{"initial_cwnd": 4}], "cubic", [1, 2], [None], [math.nan], [2**70]]
_SEEDS = [1, 2, [1, 2], [1, 1], [], 0, -3, 2**63, 2**64, [True], "x", 1.5, [3], [2**64 - 1], 100000000000]
_DAMAGES = ["delete", "truncate", "empty", "dir", "fifo", "dangling", "devzero", "swap", "json", "flip", "sparse"]


class EdgeGenerator:
    """Makes case `index` of campaign `seed`; the same in every process."""

    def __init__(self, seed: int, can_mount: bool | None = None, quick: bool = False):
        self.seed = seed
        self.can_mount = (os.geteuid() == 0) if can_mount is None else can_mount
        self.weights = QUICK_WEIGHTS if quick else KIND_WEIGHTS

    def case(self, index: int) -> EdgeCase:
        rng = random.Random(f"xrc-fuzz-edges/{self.seed}/{index}")
        weights = [w if (k != "disk" or self.can_mount) else 0 for k, w in zip(KINDS, self.weights)]
        kind = rng.choices(KINDS, weights)[0]
        if kind == "sequence":
            ops = [self._op(rng, rng.choice(["run", "sweep", "signal", "damaged", "concurrent", "read", "api"]
                                            + (["disk"] if self.can_mount else [])))
                   for _ in range(rng.randint(3, 6))]
        else:
            ops = [self._op(rng, kind)]
            if kind == "signal":
                ops.append({"op": ops[0]["cmd"], "force": True})   # then resume (or rerun)
        return EdgeCase(seed=self.seed, index=index, kind=kind, ops=ops)

    def _op(self, rng: random.Random, kind: str) -> dict[str, Any]:
        if kind in ("run", "sweep"):
            return {"op": kind, "force": rng.random() < 0.5}
        if kind == "read":
            return {"op": "read"}
        if kind == "api":
            fn = rng.choices(["run", "sweep", "read_run"], [5, 2, 3])[0]
            scen = rng.choices(["dict", "dict-odd", "name", "path", "other"], [4, 3, 1, 3, 1])[0]
            op: dict[str, Any] = {"op": "api", "fn": fn, "scenario": scen, "pick": rng.randrange(8),
                                  "odd": _api_value(rng), "odd_at": rng.randrange(6),
                                  "kw": {rng.choice(_KEYWORDS): (_api_value(rng) if rng.random() < 0.5 else
                                                                 rng.choice([0.2, 0.1, "cubic", 2]))
                                         for _ in range(rng.choice([0, 0, 1, 1, 2, 3]))},
                                  "out": rng.choices(["none", "shared", "file", "under-file", "empty", "int"],
                                                     [5, 4, 1, 1, 1, 1])[0],
                                  "force": rng.random() < 0.3}
            if fn == "sweep":
                op["grid"] = rng.choice([None, {"flows.0.cc": ["newreno", "cubic"]}, {"flows__0__cc": ["cubic"]},
                                         {}, ["x"], {"seed": [1]}, {"flows.0.cc": ["newreno", "newreno"]},
                                         {"duration_s": [0.1, 0.2]}, {"flows.0.cc": "cubic"}])
                op["runs"] = rng.choice([None, None, [{"flows.0.cc": "cubic"}], ["x"], [{}], [{"seed": 2}], 7])
                op["seeds"] = rng.choice([1, [1, 2], [1, 1], 0, -1, 2**64, [True], "2", [2**63]])
                op["jobs"] = rng.choice([1, 1, 1, 0, -1, "2", True])
            return op
        if kind == "sweepfile":
            doc: dict[str, Any] = {"scenario": rng.choice(["tiny.toml"] * 6 + ["missing.toml", "", 5])}
            if rng.random() < 0.9:
                doc["seeds"] = rng.choice(_SEEDS)
            if rng.random() < 0.6:
                doc["set"] = rng.sample(_SETS, rng.randint(0, 3))
            if rng.random() < 0.7:
                doc["grid"] = {rng.choice(_GRID_KEYS): rng.choice(_GRID_VALUES) for _ in range(rng.randint(0, 2))}
            if rng.random() < 0.3:
                doc["runs"] = [{rng.choice(_GRID_KEYS): rng.choice(["cubic", 0.2, 5.0, [1]])}
                               for _ in range(rng.randint(0, 2))]
            if rng.random() < 0.1:
                doc[rng.choice(["unknown", "jobs", "out"])] = 1
            return {"op": "sweepfile", "doc": doc, "cut": rng.randrange(400) if rng.random() < 0.1 else None}
        if kind == "damaged":
            what = rng.choice(["run", "run", "sweep"])
            return {"op": "damaged", "what": what,
                    "damages": [[rng.choice(_DAMAGES), rng.randrange(1 << 30), rng.randrange(1 << 30)]
                                for _ in range(rng.randint(1, 3))],
                    "then": rng.choices(["read", "rerun", "plot", "resume"], [6, 3, 0.5, 4 if what == "sweep" else 0])[0]}
        if kind == "signal":
            return {"op": "signal", "cmd": rng.choice(["run", "sweep"]), "jobs": rng.choice([1, 2]),
                    "sig": rng.choice([signal.SIGINT, signal.SIGTERM, signal.SIGKILL]).value,
                    "delay": round(0.7 * rng.random() ** 2, 4), "force": rng.random() < 0.3}
        if kind == "concurrent":
            return {"op": "concurrent", "cmd": rng.choice(["run", "sweep"]), "offset": round(rng.uniform(0, 0.2), 3)}
        if kind == "disk":
            return {"op": "disk", "cmd": rng.choice(["run", "sweep", "schema"]), "kb": rng.choice([16, 64, 256, 1024, 4096]),
                    "readonly": rng.random() < 0.25, "earlier": rng.random() < 0.5}
        raise AssertionError(kind)


# ---------------------------------------------------------------------------
# Execution (in a worker process).

class Finding(Exception):
    def __init__(self, outcome: str, message: str):
        super().__init__(message)
        self.outcome = outcome


def _tree(d: Path) -> dict[str, str] | None:
    """What a directory holds (paths to content hashes, link targets, kinds),
    or ``None`` if it does not exist. Never opens a pipe or a device."""
    if not os.path.lexists(d):
        return None
    out: dict[str, str] = {}
    if not d.is_dir() or d.is_symlink():
        return {".": _entry(d)}
    for root, dirs, files in os.walk(d):
        for name in dirs + files:
            p = Path(root) / name
            out[str(p.relative_to(d))] = _entry(p)
    return out


def _entry(p: Path) -> str:
    st = os.lstat(p)
    import stat

    if stat.S_ISLNK(st.st_mode):
        return "link:" + os.readlink(p)
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if not stat.S_ISREG(st.st_mode):
        return f"special:{stat.S_IFMT(st.st_mode)}"
    if st.st_size > 64 << 20:
        return f"big:{st.st_size}"
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _staging_left(out: Path) -> list[str]:
    left = []
    for parent in (out.parent, out / "runs"):
        with contextlib.suppress(OSError):
            left += [str(parent / n) for n in os.listdir(parent) if _STAGING.match(n)]
    return left


def _same_run(ref: Path, d: Path) -> list[str]:
    from .scenarios import _same_outputs

    if not d.is_dir():
        return ["not a directory"]
    try:
        return _same_outputs(ref, d)
    except (OSError, ValueError) as e:
        return [f"unreadable: {e}"]


def _table(d: Path):
    import pyarrow.parquet as pq

    t = pq.read_table(d / "summary.parquet").to_pandas()
    t = t[[c for c in t.columns if "wall" not in c]]
    return t.sort_values([c for c in ("run_id", "flow") if c in t.columns], kind="stable").reset_index(drop=True)


def _same_sweep(ref: Path, d: Path, check_meta: bool = True, values: bool = True) -> list[str]:
    try:
        a, b = _table(ref), _table(d)
    except Exception as e:  # noqa: BLE001 - any unreadable table is a difference
        return [f"summary.parquet unreadable: {type(e).__name__}: {e}"]
    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return ["summary.parquet has other columns or rows than the uninterrupted sweep's"]
    if values and not a.equals(b):
        return ["summary.parquet differs from the uninterrupted sweep's"]
    if not values and not a[["run_id", "seed"]].equals(b[["run_id", "seed"]]):
        return ["summary.parquet holds other runs than the uninterrupted sweep's"]
    problems = []
    for row in (b.itertuples() if check_meta else []):
        meta = d / "runs" / str(row.run_id) / "metadata.json"
        if not meta.is_file() or meta.is_symlink():
            continue   # a pipe put there on purpose would block the reader
        # (A metadata.json damaged on purpose says nothing.)
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            if json.loads(meta.read_text())["seed"] != int(row.seed):
                problems.append(f"run {row.run_id}: the table says seed {row.seed}, its metadata another")
    return problems


class Worker:
    """The per-worker state: fixtures (the tiny scenario, its run and sweep
    made once), the fork server, the mount namespace."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.fix = workdir / "fixtures"
        self.fix.mkdir(parents=True, exist_ok=True)
        (self.fix / "tiny.toml").write_text(TINY)
        (self.fix / "sweep.toml").write_text(SWEEP)
        self._ref_run: Path | None = None
        self._ref_sweep: Path | None = None
        self._ctx = None
        self.mounts = _private_mounts()

    def ref_run(self) -> Path:
        if self._ref_run is None:
            self._ref_run = self.fix / "ref-run"
            self._cli(["run", str(self.fix / "tiny.toml"), "--out", str(self._ref_run), "--no-plots", "--quiet"],
                      want=0)
        return self._ref_run

    def ref_sweep(self) -> Path:
        if self._ref_sweep is None:
            self._ref_sweep = self.fix / "ref-sweep"
            self._cli(["sweep", str(self.fix / "sweep.toml"), "--out", str(self._ref_sweep), "--jobs", "1",
                       "--quiet"], want=0)
        return self._ref_sweep

    def _cli(self, argv: list[str], want: int | None = None) -> tuple[int, str]:
        from .. import cli

        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            rc = cli.main(argv)
        if want is not None and rc != want:
            raise RuntimeError(f"fixture {argv} exited {rc}: {err.getvalue()[-2000:]}")
        return rc, err.getvalue()

    def context(self):
        if self._ctx is None:
            import multiprocessing

            self._ctx = multiprocessing.get_context("forkserver")
            # Everything a command imports, so that a child starts at once.
            self._ctx.set_forkserver_preload([
                "numpy", "pyarrow", "pyarrow.parquet", "pandas", "xrc.cli", "xrc.cli.run", "xrc.cli.sweep", "xrc.runner", "xrc.stream", "xrc.results",
                "xrc.outdir", "xrc.sweeps", "xrc.parallel", "xrc.rundir", "xrc.api", "xrc.grouped", "xrc.columns",
                "xrc.scenario", "xrc.bundled", "xrc.stopping", "xrc._proc"])
        return self._ctx


def _private_mounts() -> bool:
    """Moves the worker into its own mount namespace (root): a tmpfs it
    mounts disappears with it, even when killed."""
    if os.geteuid() != 0:
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(0x00020000) != 0:  # CLONE_NEWNS
            return False
        # Nothing mounted here propagates back to the host's namespace.
        return libc.mount(b"none", b"/", None, 0x4000 | 0x40000, None) == 0  # MS_REC | MS_PRIVATE
    except (OSError, AttributeError):
        return False


def _mount_tmpfs(where: Path, kb: int, readonly: bool) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    where.mkdir(parents=True, exist_ok=True)
    if libc.mount(b"tmpfs", str(where).encode(), b"tmpfs", 0, f"size={kb}k".encode()) != 0:
        raise OSError(ctypes.get_errno(), "mount tmpfs")
    if readonly and libc.mount(b"tmpfs", str(where).encode(), None, 0x20 | 0x1, None) != 0:  # REMOUNT | RDONLY
        raise OSError(ctypes.get_errno(), "remount read-only")


def _umount(where: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.umount2(str(where).encode(), 2)  # MNT_FORCE


def _child(argv: list[str], tmpdir: str, log: str, ready: str) -> None:
    """A command in its own process group (so that what it starts can be
    found), its output in `log`, its temporary files under `tmpdir`; it
    creates `ready` once the command's signal handlers are in place (a
    signal before that meets the fork server's child, not xrc: the
    interpreter's own start is what scripts/sigterm_scan.py covers)."""
    os.setpgid(0, 0)
    from .._proc import die_with_parent

    # Dies with the fork server, which dies with the fuzz worker.
    die_with_parent(os.getppid(), signal.SIGKILL)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.environ["TMPDIR"] = tmpdir
    tempfile.tempdir = None
    from .. import stopping
    from ..cli import main

    install = stopping.install

    def install_and_tell():
        saved = install()
        Path(ready).touch()
        return saved

    stopping.install = install_and_tell

    rc = main(argv)
    sys_exit = __import__("sys").exit
    sys_exit(rc)


def _processes_of(pgid: int, mark: str) -> list[str]:
    """Processes in group `pgid` or whose command line names `mark`."""
    found = []
    me = os.getpid()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == me:
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            fields = stat.rsplit(")", 1)[1].split()
            if fields[0] == "Z":
                continue
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if (pgid and int(fields[2]) == pgid) or mark in cmd:
            found.append(f"{pid}: {cmd[:200]}")
    return found


class Execution:
    """One case's operations on its directory, with the state they allow."""

    def __init__(self, w: Worker, case: EdgeCase, d: Path):
        self.w, self.case, self.d = w, case, d
        self.out = d / "out"
        self.tmp = d / "tmp"
        self.tmp.mkdir(parents=True)
        #: What `out` holds when complete: None, "run" or "sweep".
        self.kind: str | None = None
        self.outcome = "done"
        #: A case damaged --out (files a resume does not read may stay so).
        self.damaged = False
        #: A damage may have left a run's summary.json valid JSON with other
        #: numbers (a flipped digit): a resume trusts a summary that reads
        #: whole, so the table's values are not the uninterrupted sweep's.
        self.summary_edited = False

    # The oracle's pieces.
    def settle(self, pgid: int = 0, wait_s: float = 4.0) -> None:
        """Waits for the janitor and any process left, then checks nothing
        is left."""
        deadline = time.monotonic() + wait_s
        while True:
            left = _staging_left(self.out) + [f"process {p}" for p in _processes_of(pgid, str(self.d))]
            left += [f"temporary file {self.tmp / n}" for n in os.listdir(self.tmp)]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if left:
            raise Finding("leftover", "; ".join(left[:5]))

    def complete(self, what: str) -> None:
        ref = self.w.ref_run() if what == "run" else self.w.ref_sweep()
        # (A metadata.json a case damaged says nothing of what ran.)
        diffs = (_same_run(ref, self.out) if what == "run" else
                 _same_sweep(ref, self.out, check_meta=not self.damaged, values=not self.summary_edited))
        if diffs:
            raise Finding("wrong", f"after a successful {what}, --out differs from an uninterrupted {what}: "
                                   f"{', '.join(diffs[:5])}")
        self.kind = what

    def unchanged(self, before: dict | None, what: str) -> None:
        if _tree(self.out) != before:
            raise Finding("lost", f"{what} was refused but changed --out")

    def refused(self, rc: int, err: str, what: str) -> None:
        if rc != 2 or "Traceback" in err or "xrc: error:" not in err:
            raise Finding("traceback" if "Traceback" in err else "message",
                          f"{what} exited {rc}: {err[-1500:]}")
        if self.outcome == "done":
            self.outcome = "refused"

    # Operations.
    def cli(self, argv: list[str]) -> tuple[int, str]:
        old = tempfile.tempdir
        tempfile.tempdir = str(self.tmp)
        try:
            return self.w._cli(argv)
        finally:
            tempfile.tempdir = old

    def op_run(self, op: dict) -> None:
        before = _tree(self.out)
        argv = ["run", str(self.w.fix / "tiny.toml"), "--out", str(self.out), "--no-plots", "--quiet"]
        rc, err = self.cli(argv + (["--force"] if op.get("force") else []))
        self.settle()
        if rc == 0:
            self.complete("run")
        else:
            self.refused(rc, err, "xrc run")
            self.unchanged(before, "xrc run")
            if self.kind is None and before is None:
                raise Finding("wrong", f"xrc run into a new directory was refused: {err[-500:]}")

    def op_sweep(self, op: dict) -> None:
        before = _tree(self.out)
        rc, err = self.cli(["sweep", str(self.w.fix / "sweep.toml"), "--out", str(self.out), "--jobs", "1", "--quiet"])
        self.settle()
        if rc == 0:
            self.complete("sweep")
        else:
            self.refused(rc, err, "xrc sweep")
            if self.kind == "sweep" or before is None:
                raise Finding("wrong", f"xrc sweep refused to resume its own directory: {err[-500:]}")
            self.only_repaired(before)

    def changed_runs_complete(self, before: dict | None, who: str) -> None:
        from ..rundir import summary_ok

        after = _tree(self.out) or {}
        before = before or {}
        for k in {k for k in set(before) | set(after) if before.get(k) != after.get(k)}:
            parts = Path(k).parts
            if len(parts) >= 2 and parts[0] == "runs" and not parts[1].endswith(".lock") and \
                    os.path.lexists(self.out / "runs" / parts[1]) and \
                    not summary_ok(self.out / "runs" / parts[1] / "summary.json"):
                raise Finding("lost", f"{who} left run {parts[1]} incomplete")

    def only_repaired(self, before: dict | None) -> None:
        """A sweep refused after it ran again some runs (it could not merge
        their table): what changed must be runs it completed."""
        from ..rundir import summary_ok

        after = _tree(self.out)
        if after == before:
            return
        if before is None or after is None:
            raise Finding("lost", "a refused xrc sweep made or removed --out")
        changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
        for k in changed:
            parts = Path(k).parts
            if len(parts) == 2 and parts[1].endswith(".lock"):
                continue
            if len(parts) < 2 or parts[0] != "runs":
                raise Finding("lost", f"a refused xrc sweep changed {k}")
            if not summary_ok(self.out / "runs" / parts[1] / "summary.json"):
                raise Finding("lost", f"a refused xrc sweep left run {parts[1]} incomplete")

    def op_read(self, op: dict) -> None:
        import xrc

        try:
            r = xrc.read_run(self.out)
            for name in ("flows", "rtt", "cwnd"):
                getattr(r, name)
        except xrc.ScenarioError as e:
            if self.kind in ("run", "api-run"):
                raise Finding("wrong", f"a complete run directory did not read: {e}") from None
            if not str(e).strip():
                raise Finding("message", "an empty message") from None
            return
        if self.kind in ("sweep", "api-sweep", "damaged-sweep"):
            raise Finding("wrong", f"read_run read a {self.kind} directory as a run")

    def op_damaged(self, op: dict) -> None:
        what = op["what"]
        src = self.w.ref_run() if what == "run" else self.w.ref_sweep()
        if os.path.lexists(self.out):
            _remove(self.out)
        shutil.copytree(src, self.out, symlinks=True)
        (self.out / "metadata.json").exists()
        hit: set[str] = set()
        for dmg, a, b in op["damages"]:
            names = _damage(self.out, dmg, a, b)
            hit.update(names)
            if dmg in ("flip", "swap") and "summary.json" in names:
                self.summary_edited = True
        self.kind = f"damaged-{what}"
        self.damaged = True
        then = op.get("then", "read")
        before = _tree(self.out)
        if then == "read":
            self.op_read(op)
        elif then == "rerun":
            d2 = self.d / "rerun"
            rc, err = self.cli(["run", str(self.out), "--out", str(d2), "--no-plots", "--quiet"])
            self.settle()
            # What ran is what scenario.resolved.json says (a user may edit
            # it); the files naming the given path differ by design.
            diffs = [x for x in _same_run(self.w.ref_run(), d2) if x not in ("scenario.given.toml", "scenario.toml")]
            if rc == 0:
                if what == "run" and "scenario.resolved.json" not in hit and diffs:
                    raise Finding("wrong", f"a rerun of a damaged run directory ran something else: {diffs}")
            else:
                self.refused(rc, err, "xrc run RUNDIR")
                if os.path.lexists(d2):
                    raise Finding("lost", "a refused rerun left its --out")
            _remove(d2)
        elif then == "plot":
            d2 = self.d / "plots"
            rc, err = self.cli(["plot", str(self.out), "--out", str(d2)])
            self.settle()
            if rc != 0:
                self.refused(rc, err, "xrc plot")
            _remove(d2)
        elif then == "resume":
            self.op_sweep({})
            return
        if _tree(self.out) != before:
            raise Finding("lost", f"{then} changed the directory it read")

    def op_sweepfile(self, op: dict) -> None:
        from .. import tomlw

        doc = op["doc"]
        f = self.d / "sweep.toml"
        try:
            text = tomlw.dumps(doc)
        except TypeError:
            text = json.dumps(doc)
        if op.get("cut") is not None:
            text = text[:op["cut"]]
        f.write_text(text)
        shutil.copy(self.w.fix / "tiny.toml", self.d / "tiny.toml")
        out = self.d / "sweep-out"
        rc, err = self.cli(["sweep", str(f), "--out", str(out), "--jobs", "1", "--quiet"])
        self.settle()
        if rc != 0:
            self.refused(rc, err, "xrc sweep FILE")
            if os.path.lexists(out) and any((out / "runs").glob("*")):
                raise Finding("lost", "a refused sweep left runs behind")
            return
        # Each row's seed is its run's, each run once.
        import pyarrow.parquet as pq

        t = pq.read_table(out / "summary.parquet").to_pydict()
        ids = t.get("run_id", [])
        runs = sorted(p.name for p in (out / "runs").iterdir())
        if sorted(set(ids)) != runs:
            raise Finding("wrong", f"the table's runs {sorted(set(ids))[:5]} are not the directory's {runs[:5]}")
        for rid, seed in zip(ids, t.get("seed", [])):
            meta = json.loads((out / "runs" / rid / "metadata.json").read_text())
            if int(meta["seed"]) != int(seed):
                raise Finding("wrong", f"run {rid}: the table says seed {seed}, the run ran {meta['seed']}")
        if len(ids) != len(runs):
            raise Finding("wrong", f"{len(ids)} rows for {len(runs)} runs of one flow")

    def _spawn(self, argv: list[str], tag: str):
        ctx = self.w.context()
        ready = self.d / f"{tag}.ready"
        ready.unlink(missing_ok=True)   # an earlier operation's
        p = ctx.Process(target=_child, args=(argv, str(self.tmp), str(self.d / f"{tag}.log"), str(ready)))
        p.start()
        return p

    def _started(self, p, tag: str, bound_s: float = 30.0) -> None:
        """Waits until the command's handlers are in place (or it ended)."""
        deadline = time.monotonic() + bound_s
        while not (self.d / f"{tag}.ready").exists() and p.exitcode is None:
            if time.monotonic() > deadline:
                raise Finding("hang", f"the command did not start within {bound_s} s")
            time.sleep(0.002)

    def _argv(self, cmd: str, jobs: int = 1, force: bool = False) -> list[str]:
        if cmd == "run":
            return ["run", str(self.w.fix / "tiny.toml"), "--out", str(self.out), "--no-plots", "--quiet"] + (
                ["--force"] if force else [])
        return ["sweep", str(self.w.fix / "sweep.toml"), "--out", str(self.out), "--jobs", str(jobs), "--quiet"]

    def _wait(self, p, bound_s: float = 60.0) -> int:
        p.join(bound_s)
        if p.exitcode is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.join()
            raise Finding("hang", f"a command went on {bound_s} s")
        return p.exitcode

    def op_signal(self, op: dict) -> None:
        self.w.ref_run() if op["cmd"] == "run" else self.w.ref_sweep()
        before = _tree(self.out)
        p = self._spawn(self._argv(op["cmd"], op["jobs"], op.get("force", False)), "signal")
        self._started(p, "signal")
        time.sleep(op["delay"])
        with contextlib.suppress(ProcessLookupError):
            os.kill(p.pid, op["sig"])
        rc = self._wait(p)
        # A SIGKILL before the child opened its log leaves none.
        log = _read_log(self.d / "signal.log")
        self.settle(p.pid)
        if "Traceback" in log:
            raise Finding("traceback", f"{op['cmd']} given signal {op['sig']}: {log[-1500:]}")
        want = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGKILL: -9}[signal.Signals(op["sig"])]
        # -SIG: the signal came once the command had returned and put the
        # default handlers back (the directory is then complete).
        if rc not in (0, 2, want, -op["sig"]):
            raise Finding("message", f"{op['cmd']} given signal {op['sig']} exited {rc}: {log[-1000:]}")
        if rc == 2:
            self.refused(rc, log, op["cmd"])
        if rc == want and self.outcome == "done":
            self.outcome = "interrupted"
        now = _tree(self.out)
        if op["cmd"] == "run":
            if now != before and _same_run(self.w.ref_run(), self.out):
                raise Finding("lost", f"an interrupted run (exit {rc}) left --out half written: "
                                      f"{_same_run(self.w.ref_run(), self.out)}")
            if rc == 0 or now != before:
                self.complete("run")   # committed before the signal
        else:
            # What the command changed in runs/ is whole runs (a run
            # damaged before it and not reached is still damaged).
            self.changed_runs_complete(before, "an interrupted sweep")
            if rc == 0:
                self.complete("sweep")

    def op_concurrent(self, op: dict) -> None:
        self.w.ref_run() if op["cmd"] == "run" else self.w.ref_sweep()
        before = _tree(self.out)
        a = self._spawn(self._argv(op["cmd"]), "a")
        time.sleep(op["offset"])
        b = self._spawn(self._argv(op["cmd"]), "b")
        ra, rb = self._wait(a), self._wait(b)
        logs = [_read_log(self.d / f"{t}.log") for t in "ab"]
        self.settle(a.pid)
        self.settle(b.pid)
        if any("Traceback" in x for x in logs):
            raise Finding("traceback", "\n".join(x[-800:] for x in logs))
        codes = sorted([ra, rb])
        existed = before is not None
        if op["cmd"] == "run":
            # Without --force: the first writer alone, or neither if --out was there.
            ok = codes == [2, 2] if existed else codes == [0, 2]
        elif self.kind in (None, "sweep"):
            ok = codes in ([0, 0], [0, 2])   # the second refused (locked) or resumed a finished sweep
        elif self.kind in ("run", "api-run", "damaged-run"):
            ok = codes == [2, 2]
        else:
            ok = codes in ([0, 0], [0, 2], [2, 2])
        if not ok:
            raise Finding("lost", f"two {op['cmd']}s on one --out exited {ra} and {rb}: " +
                          " | ".join(x[-400:] for x in logs))
        if 0 in codes:
            self.complete(op["cmd"])
        elif _tree(self.out) != before:
            raise Finding("lost", "two refused writers changed --out")

    def op_disk(self, op: dict) -> None:
        if not self.w.mounts:
            self.outcome = "unsupported"
            return
        mnt = self.d / "mnt"
        _mount_tmpfs(mnt, op["kb"], False)
        try:
            out = mnt / "x"
            if op["earlier"]:
                with contextlib.suppress(OSError):
                    src = self.w.ref_run() if op["cmd"] == "run" else None
                    if src is not None:
                        shutil.copytree(src, out)
                    elif op["cmd"] == "schema":
                        out.write_text("{}\n")
            if op["readonly"]:
                libc = ctypes.CDLL(None, use_errno=True)
                libc.mount(b"tmpfs", str(mnt).encode(), None, 0x20 | 0x1, None)
            before = _tree(out)
            if op["cmd"] == "run":
                argv = ["run", str(self.w.fix / "tiny.toml"), "--out", str(out), "--no-plots", "--quiet", "--force"]
            elif op["cmd"] == "sweep":
                argv = ["sweep", str(self.w.fix / "sweep.toml"), "--out", str(out), "--jobs", "1", "--quiet"]
            else:
                argv = ["schema", "--out", str(out)]
            rc, err = self.cli(argv)
            self.settle()
            left = [n for n in os.listdir(mnt) if _STAGING.match(n)]
            if left:
                raise Finding("leftover", f"on a full disk: {left}")
            if rc == 0:
                if op["cmd"] == "run" and _same_run(self.w.ref_run(), out):
                    raise Finding("wrong", f"a run on a small disk said it wrote: {_same_run(self.w.ref_run(), out)}")
                if op["cmd"] == "schema":
                    json.loads(out.read_text())
            else:
                self.refused(rc, err, f"{op['cmd']} on a full or read-only disk")
                if op["cmd"] != "sweep" and _tree(out) != before:
                    raise Finding("lost", f"a refused {op['cmd']} changed the earlier result")
        finally:
            _umount(mnt)

    def op_api(self, op: dict) -> None:
        import xrc

        w = self.w
        doc = _tiny_doc()
        if op["scenario"] == "dict-odd":
            path = [("duration_s",), ("flows", 0, "cc"), ("internet", "delay_ms"), ("seed",), ("name",),
                    ("flows", 0, "tcp")][op["odd_at"]]
            node = doc
            for k in path[:-1]:
                node = node[k]
            node[path[-1]] = _value(op["odd"])
        pipe = self.d / "pipe"
        scen = {"dict": doc, "dict-odd": doc,
                "name": ["validation/dumbbell-20mbit-40ms", "nonexistent/x", "x" * 300, "",
                         "../../etc/passwd",  # noqa: repo-path (a name a user might give)
                         "paper/fig1-time-varying", "bench/lte-1ue-20s", "validation"][op["pick"]],
                "path": [str(w.fix / "tiny.toml"), w.fix / "tiny.toml", w.ref_run(), w.fix, self.d / "missing.toml",
                         "pipe", "/dev/null", w.fix / "sweep.toml"][op["pick"]],
                "other": [5, None, b"tiny.toml", ["x"], 1.5, True, {"py": "set"}, object()][op["pick"]]}[op["scenario"]]
        if scen == "pipe":
            os.mkfifo(pipe)
            scen = pipe
        kw = {k: _value(v) for k, v in op["kw"].items()}
        if op["scenario"] == "name" or op["fn"] == "sweep":
            kw.setdefault("duration_s", 0.2)
        out: Any = {"none": None, "shared": self.out, "file": w.fix / "tiny.toml", "under-file": w.fix / "tiny.toml" / "x",
                    "empty": "", "int": 5}[op["out"]]
        before = _tree(self.out)
        fixtures = _tree(w.fix)
        old = tempfile.tempdir
        tempfile.tempdir = str(self.tmp)
        try:
            if op["fn"] == "run":
                r = xrc.run(scen, out=out, force=op["force"], **kw)
                diffs = [x for x in _same_run(w.ref_run(), self.out) if x not in ("scenario.given.toml", "scenario.toml")]
                if out is self.out and op["scenario"] == "dict" and diffs and _same_run_kw(kw, doc):
                    raise Finding("wrong", f"xrc.run wrote a directory unlike xrc run's: {diffs}")
                r.summary  # noqa: B018 - must be there
                if out is self.out:
                    self.kind = "api-run"
            elif op["fn"] == "sweep":
                df = xrc.sweep(scen, op["grid"], runs=op["runs"], seeds=op["seeds"], out=out,
                               jobs=_value(op["jobs"]), **kw)
                seeds = op["seeds"] if isinstance(op["seeds"], list) else list(range(1, op["seeds"] + 1))
                if not set(int(s) for s in df["seed"]) <= set(int(s) for s in seeds):
                    raise Finding("wrong", f"the table's seeds {sorted(set(df['seed']))} are not those given {seeds}")
                if out is self.out:
                    self.kind = "api-sweep"
            else:
                r = xrc.read_run(scen)
                r.flows  # noqa: B018
        except xrc.ScenarioError as e:
            if not str(e).strip():
                raise Finding("message", "an empty ScenarioError") from None
            if self.outcome == "done":
                self.outcome = "refused"
            if _tree(self.out) != before:
                raise Finding("lost", f"a refused xrc.{op['fn']} changed its out ({e})")
        finally:
            tempfile.tempdir = old
            with contextlib.suppress(FileNotFoundError):
                pipe.unlink()
        self.settle()
        if _tree(w.fix) != fixtures:
            raise Finding("lost", f"xrc.{op['fn']} changed a file it was given")


def _read_log(p: Path) -> str:
    try:
        return p.read_text(errors="replace")
    except FileNotFoundError:
        return ""


def _same_run_kw(kw: dict, doc: dict) -> bool:
    """Whether an API run with these keywords is TINY unchanged."""
    return not kw


def _tiny_doc() -> dict[str, Any]:
    import tomllib

    return tomllib.loads(TINY)


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    elif os.path.lexists(p):
        p.unlink()


def _damage(root: Path, how: str, a: int, b: int) -> list[str]:
    """Damages one file of `root` (two for a swap); returns their names."""
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not p.is_symlink())
    if not files:
        return []
    p = root / files[a % len(files)]
    q = root / files[b % len(files)]
    _damage_one(root, how, p, q, a, b)
    return [p.name, q.name] if how == "swap" else [p.name]


def _damage_one(root: Path, how: str, p: Path, q: Path, a: int, b: int) -> None:
    if how == "delete":
        p.unlink()
    elif how == "truncate":
        n = p.stat().st_size
        os.truncate(p, (b % n) if n else 0)
    elif how == "empty":
        p.write_bytes(b"")
    elif how == "dir":
        p.unlink()
        p.mkdir()
    elif how == "fifo":
        p.unlink()
        os.mkfifo(p)
    elif how == "dangling":
        p.unlink()
        p.symlink_to(root / "nowhere")
    elif how == "devzero":
        p.unlink()
        p.symlink_to("/dev/zero")
    elif how == "swap" and p != q:
        tmp = p.with_name(p.name + ".swap")
        p.rename(tmp)
        q.rename(p)
        tmp.rename(q)
    elif how == "json":
        p.write_text(json.dumps([[], 5, "x", {}, None, {"kind": "run"}][b % 6]))
    elif how == "flip":
        data = bytearray(p.read_bytes())
        if data:
            for k in range(1 + b % 8):
                data[(a + k * 7919) % len(data)] ^= 1 << (k % 8)
            p.write_bytes(bytes(data))
    elif how == "sparse":
        os.truncate(p, (200 << 20) + (b % 1000))


_WORKER: Worker | None = None


def execute(case: EdgeCase, workdir: Path, timeout_s: float) -> dict[str, Any]:
    """Runs one edge case; returns ``{"outcome", "message", "seconds"}``."""
    global _WORKER
    t0 = time.perf_counter()
    if _WORKER is None or _WORKER.workdir != workdir:
        _WORKER = Worker(workdir)
    d = workdir / f"case-{case.index}"
    _remove(d)
    d.mkdir(parents=True)

    class Timeout(BaseException):
        pass

    def on_alarm(signum: int, frame: Any) -> None:
        raise Timeout()

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    ex = Execution(_WORKER, case, d)
    outcome, message = "done", ""
    try:
        if case.sabotage == "raise":
            raise RuntimeError("sabotage: an exception the front end does not expect")
        if case.sabotage == "leave":
            (ex.tmp / "left-behind").write_text("x")
            ex.settle(wait_s=0.1)
        for i, op in enumerate(case.ops):
            try:
                getattr(ex, f"op_{op['op']}")(op)
            except Finding as f:
                raise Finding(f.outcome, f"operation {i} ({op['op']}): {f}") from None
        outcome = ex.outcome
    except Finding as f:
        outcome, message = f.outcome, str(f)
    except Timeout:
        outcome, message = "hang", f"more than {timeout_s} s of wall time"
    except BaseException as e:  # noqa: BLE001 - every escape is a finding
        if isinstance(e, KeyboardInterrupt):
            raise
        outcome, message = "traceback", "".join(traceback.format_exception(e))[-4000:]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        with contextlib.suppress(OSError):
            for m in (d / "mnt",):
                if os.path.ismount(m):
                    _umount(m)
        shutil.rmtree(d, ignore_errors=True)
    return {"outcome": outcome, "message": message, "seconds": time.perf_counter() - t0}
