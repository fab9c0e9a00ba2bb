#!/usr/bin/env python3
"""Wall time of ns-3.44's LTE module and of xrc on the same N-UE cells, side
by side in one run (issue 11: xrc >= 200x faster at 10 and 40 UEs).

The cell, on both sides: one eNB, 10 MHz (50 PRBs), proportional-fair
scheduler, N static UEs, one bulk TCP CUBIC flow per UE from one remote host
(1 Gbit/s, 15 ms each way to the core), RLC UM transmit buffer of 128
packets (192,000 bytes in ns-3), 1448-byte segments, no first-transmission
HARQ failures, for --sim-time simulated seconds.

* ns-3: ``tools/ns3/lte_bench_probe.py --ues N`` (LteHelper +
  PointToPointEpcHelper, ideal RRC, Friis path loss, PfFfMacScheduler). UE i
  stands at ``DISTANCES[i % 4]`` m, where ns-3's own SINR -> CQI chain gives
  CQI 15, 12, 9 and 6 (MCS 28, 22, 16, 10; docs/ns3-lte.md), BLER 0.
  Timed: ``Simulator::Run()`` only (its set-up and the 10-20 s cppyy JIT
  excluded), wall and process CPU time.
* xrc: the same cell as a scenario (``scenario_text``), UE i with the fixed
  CQI ``CQIS[i % 4]`` (xrc's CQI -> MCS gives the same MCS), ``cell.harq.bler
  = 0``. Timed: the whole ``xrc run --no-plots`` (simulation and writing every
  output to Parquet) in a child process, wall and process CPU time, and the
  core alone.

Three speed-ups are printed. *core*: ns-3's Run() wall time over xrc's
simulation (the core's ``run_until``, recording every series into its
streams) -- like for like, neither side setting up or writing files; the
target applies to it. *whole*: over xrc's whole run, writing every series
(per-TTI RLC, per-packet queuing delay, per-ACK RTT, ...) to Parquet,
which ns-3 does not do at all. *CPU*: process CPU times, Run() over the
whole run (a loaded or stolen-from machine disturbs it less than wall
time).
Aggregate goodput is printed on both sides as a check that the two simulate
comparable cells (ns-3 attaches its UEs by random access; xrc's flows start
at 0; ns-3 uses 16 of the 17 resource block groups, docs/ns3-lte.md).

ns-3 is installed on first use into ``.venv-ns3`` (``scripts/crossval_ns3.py``
does the same) unless ``--ns3-python`` names a Python that has ``ns3==3.44.post0``.
Part of ``make bench``; not of the tests (it takes minutes).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROBE = REPO / "tools" / "ns3" / "lte_bench_probe.py"
#: ns-3 distances (m) and the CQI its SINR -> CQI chain reports there (docs/ns3-lte.md).
DISTANCES = (1000.0, 3500.0, 6400.0, 12630.0)
CQIS = (15, 12, 9, 6)
TARGET = 200.0

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crossval_ns3 import NS3_VENV, ensure_ns3  # noqa: E402


def scenario_text(n_ues: int, sim_time: float) -> str:
    from xrc.bench import cell_scenario_text

    return cell_scenario_text(n_ues, sim_time, name=f"ns3-cell-{n_ues}ue", bandwidth_mhz=10, cqis=CQIS,
                              cell_tables=("[cell.harq]", "bler = 0.0", "", "[cell.rlc]", "buffer_packets = 128", ""))


def run_xrc(n_ues: int, sim_time: float, xrc_python: str) -> dict:
    """`xrc run --no-plots` of the cell in a child process; its wall time,
    the core's time and the aggregate goodput from summary.json."""
    with tempfile.TemporaryDirectory(prefix=f"bench-ns3-xrc-{n_ues}-") as tmp:
        sc = Path(tmp) / "cell.toml"
        sc.write_text(scenario_text(n_ues, sim_time))
        out = Path(tmp) / "run"
        code = (
            "import json, sys, time\n"
            "from xrc.runner import run_to_dir\n"
            "from xrc.scenario import load\n"
            "sc = load(sys.argv[1]); stats = {}\n"
            "t0, c0 = time.perf_counter(), time.process_time()\n"
            "s = run_to_dir(sc, sys.argv[2], force=True, plots=False, stats=stats)\n"
            "wall, cpu = time.perf_counter() - t0, time.process_time() - c0\n"
            "print(json.dumps({'wall_s': wall, 'cpu_s': cpu, 'core_s': stats['core_s'],\n"
            "  'events_s': stats['events_s'], 'events': s['events'],\n"
            "  'goodput_mbps': sum(f['goodput_mbps'] for f in s['flows'])}))\n"
        )
        p = subprocess.run([xrc_python, "-c", code, str(sc), str(out)], capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"xrc with {n_ues} UEs failed (exit {p.returncode}):\n{p.stderr[-3000:]}")
        return json.loads(p.stdout.strip().splitlines()[-1])


def run_ns3(n_ues: int, sim_time: float, ns3_python: str) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"bench-ns3-{n_ues}-") as tmp:
        res = Path(tmp) / "res.json"
        cmd = [ns3_python, str(PROBE), "--ues", str(n_ues), "--distances", ",".join(f"{d:g}" for d in DISTANCES),
               "--sim-time", repr(sim_time), "--rlc-buffer", "192000", "--no-pdcp-discard", "--json", str(res)]
        t0 = time.perf_counter()
        # An empty working directory: the ns3 package searches the current
        # directory for its libraries (see scripts/crossval_ns3.py).
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
        total = time.perf_counter() - t0
        if p.returncode != 0 or not res.exists():
            raise RuntimeError(f"ns-3 with {n_ues} UEs failed (exit {p.returncode}):\n{p.stderr[-3000:]}")
        r = json.loads(res.read_text().strip().splitlines()[-1])
        r["process_s"] = total
        return r


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ues", default="10,40", help="comma-separated UE counts (default 10,40)")
    ap.add_argument("--sim-time", type=float, default=10.0, help="simulated seconds (default 10)")
    ap.add_argument("--ns3-python", default=None, help="a Python with ns3==3.44.post0 (default: .venv-ns3)")
    ap.add_argument("--xrc-python", default=str(REPO / ".venv" / "bin" / "python"),
                    help="the Python with xrc installed (default: the repository's .venv)")
    ap.add_argument("--json", default=None, help="append one JSON line per size to this file")
    a = ap.parse_args(argv)
    try:
        sizes = [int(x) for x in a.ues.split(",")]
    except ValueError:
        ap.error(f"--ues must be comma-separated integers, got {a.ues!r}")
    if not sizes or any(n < 1 for n in sizes):
        ap.error(f"--ues must name UE counts of at least 1, got {a.ues!r}")
    if not (a.sim_time > 1.0):
        ap.error(f"--sim-time must exceed 1 s (ns-3's UEs attach first), got {a.sim_time!r}")
    ns3_py = ensure_ns3(a.ns3_python, NS3_VENV)

    print(f"one 10 MHz LTE cell, PF, N UEs (CQI {'/'.join(map(str, CQIS))} in turn), one bulk CUBIC flow per UE, "
          f"{a.sim_time:g} s simulated")
    head = (f"{'UEs':>4} | {'ns-3 Run() wall/CPU':>19} {'events':>9} {'Mbit/s':>6} | {'xrc run/+rows':>15} "
            f"{'whole run wall/CPU':>18} {'events':>8} {'Mbit/s':>6} | {'speed-up: core':>14} {'whole':>6} "
            f"{'CPU':>5}")
    print(head)
    print("-" * len(head))
    ok = True
    for n in sizes:
        x = run_xrc(n, a.sim_time, a.xrc_python)
        s = run_ns3(n, a.sim_time, ns3_py)
        sp_core = s["wall_run_s"] / x["events_s"]
        sp_whole = s["wall_run_s"] / x["wall_s"]
        sp_cpu = s["cpu_run_s"] / x["cpu_s"]
        ok &= sp_core >= TARGET
        print(f"{n:>4} | {s['wall_run_s']:>8.1f}s /{s['cpu_run_s']:>7.1f}s {s['events']:>9} "
              f"{s['goodput_mbps_whole']:>6.1f} | {x['events_s']:>6.3f}s/{x['core_s']:>6.3f}s "
              f"{x['wall_s']:>8.2f}s /{x['cpu_s']:>6.2f}s "
              f"{x['events']:>8} {x['goodput_mbps']:>6.1f} | {sp_core:>13.0f}x {sp_whole:>5.0f}x {sp_cpu:>4.0f}x",
              flush=True)
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps({"ues": n, "sim_time_s": a.sim_time, "ns3": s, "xrc": x, "speedup_core": sp_core,
                                    "speedup_whole": sp_whole, "speedup_cpu": sp_cpu}) + "\n")
    print("xrc run = running the events, every series recorded in memory; +rows = and handing the rows over to "
          "Python;\nspeed-up: core = ns-3's Simulator::Run() wall time / xrc's run (both without set-up, neither "
          "exporting or writing anything);\n          whole = the same / xrc's whole run, writing every series to "
          "Parquet; CPU = process CPU time, Run() / whole run")
    print(f"target: core speed-up >= {TARGET:.0f}x at every size: {'met' if ok else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
