#!/usr/bin/env python3
"""Issue 10: where does a sender leave a trace link idle?

Reads run directories of the trace topology (``xrc run`` with
``output.cwnd_trace = true``) and counts, millisecond by millisecond, the
trace's delivery opportunities that carried no packet (the link idle with
capacity to spare), then files each idle millisecond under what the sender
was doing at that instant (its last logged state in ``cwnd.parquet``):

rto        in the Loss state (after a retransmission timeout)
recovery   in fast recovery (Recovery or Disorder)
window     open, and cwnd-limited (packets in flight ≥ cwnd − 1)
pacing     open, not cwnd-limited: the pacer (or the application) held data back;
           the last column is the part of it paced below the reported rate
           (xrc2's HoL correction, g < 1)
start      before the first window state was logged

and, orthogonally, by where it sits on the trace: within ``--after`` ms
after an outage (no opportunity for ``--outage`` ms or more), or not.

With ``--traces DIR`` it first runs ``--cc`` (default xrc2) over every
downlink trace, bundled and of DIR, whole, in the setting of
``scripts/xrc2_window.py``'s trace part (``traces/synthetic-xrc.toml``: 5 ms
each way, 150 KB buffer), into ``--out`` (one run directory per trace).

Opportunities per millisecond come from ``rlc.parquet``'s
``available_mbps`` (the row at t counts those in (t, t + 1 ms], 1500 IP
bytes each), departures from ``queue_delay.parquet`` (one row per packet
leaving the trace queue, at the opportunity's instant).

    .venv/bin/python scripts/xrc2_idle.py RUN_DIR [RUN_DIR ...]
    .venv/bin/python scripts/xrc2_idle.py --traces ../shared/traces --out /tmp/idle --jobs 2
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

OPP_BITS = 1500 * 8


def idle(run: Path, outage_ms: int, after_ms: int) -> dict:
    rlc = pq.read_table(run / "rlc.parquet", columns=["t", "available_mbps", "agent_mbps", "bytes"]).to_pandas()
    n = len(rlc) + 1
    opps = np.zeros(n, dtype=np.int64)
    rows = np.rint(rlc.t.values * 1000).astype(np.int64)
    opps[rows + 1] = np.rint(rlc.available_mbps.values * 1000 / OPP_BITS).astype(np.int64)
    qd = pq.read_table(run / "queue_delay.parquet", columns=["t"]).to_pandas()
    dep = np.bincount(np.rint(qd.t.values * 1000).astype(np.int64), minlength=n)[:n]
    lost = np.clip(opps - dep, 0, None)
    # Milliseconds within `after_ms` of the end of an outage of `outage_ms` or more.
    near = np.zeros(n, dtype=bool)
    run_len = 0
    for m in range(n):
        if opps[m] == 0:
            run_len += 1
            continue
        if run_len >= outage_ms:
            near[m:m + after_ms] = True
        run_len = 0
    cw = pq.read_table(run / "cwnd.parquet",
                       columns=["t", "cwnd", "in_flight", "ca_state", "mode", "pacing_mbps"]).to_pandas()
    ms = np.arange(n)
    at = np.searchsorted(np.rint(cw.t.values * 1000).astype(np.int64), ms, side="right") - 1
    state = np.where(at >= 0, cw.ca_state.values[np.maximum(at, 0)], -1)
    cwnd = cw.cwnd.values[np.maximum(at, 0)]
    infl = cw.in_flight.values[np.maximum(at, 0)]
    cause = np.full(n, "pacing", dtype=object)
    cause[infl + 1 >= cwnd] = "window"
    cause[(state == 1) | (state == 3)] = "recovery"
    cause[state == 4] = "rto"
    cause[at < 0] = "start"
    total = int(opps.sum())
    out = {"run": run.name, "ms": n, "opps": total, "used": int(np.minimum(dep, opps).sum()), "lost": int(lost.sum()),
           "near_outage": int(lost[near].sum())}
    for c in ["rto", "recovery", "window", "pacing", "start"]:
        out[c] = int(lost[cause == c].sum())
        out[c + "_near"] = int(lost[(cause == c) & near].sum())
    # Pacing-limited idle: was the sender paced below the reported rate
    # (g < 1, the HoL correction yielding) or at/above it (the rate itself
    # short of the link)? Rates in payload bit/s, the feedback's last.
    fb = pq.read_table(run / "feedback.parquet", columns=["t", "rate_mbps"]).to_pandas()
    fi = np.searchsorted(np.rint(fb.t.values * 1000).astype(np.int64), ms, side="right") - 1
    rate = np.where(fi >= 0, fb.rate_mbps.values[np.maximum(fi, 0)], np.nan) * 1448 / 1500
    pace = cw.pacing_mbps.values[np.maximum(at, 0)]
    pl = cause == "pacing"
    out["pacing_below_rate"] = int(lost[pl & (pace < 0.99 * rate)].sum())
    out["near_time"] = int(near.sum())
    out["near_opps"] = int(opps[near].sum())
    return out


def run_trace(job: tuple[str, str, str, tuple[str, ...]]) -> Path:
    """Runs `cc` over the whole trace `trace` into `out`/<trace>-<cc>."""
    from xrc import bundled
    from xrc.reproduce.experiments import TRACE_SCENARIO
    from xrc.runner import run_to_dir
    from xrc.scenario import load

    trace, cc, out, sets = job
    last = 0
    with open(trace) as fh:
        for line in fh:
            if line.strip():
                last = int(line)
    sc = load(bundled.scenario(TRACE_SCENARIO), overrides=[
        f"flows.0.cc={cc}", f"trace.downlink={json.dumps(trace)}", f"duration_s={max(last / 1000.0, 1.0)}",
        "output.cwnd_trace=true", *sets])
    d = Path(out) / f"{Path(trace).stem}-{cc}"
    run_to_dir(sc, d, force=True, plots=False)
    return d


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="*", type=Path, help="run directories of the trace topology")
    ap.add_argument("--traces", help="run every downlink trace, bundled and of this directory, first")
    ap.add_argument("--cc", default="xrc2", help="the scheme --traces runs (default xrc2)")
    ap.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                    help="a scenario override for the --traces runs, e.g. flows.0.cc_params.pacing_rounds=100")
    ap.add_argument("--out", default="xrc2-idle-runs", help="where --traces puts its run directories")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--outage", type=int, default=20, help="ms without an opportunity that make an outage")
    ap.add_argument("--after", type=int, default=300, help="ms after an outage counted as its tail")
    a = ap.parse_args(argv)
    runs = list(a.runs)
    if a.traces:
        from concurrent.futures import ProcessPoolExecutor

        from xrc.reproduce.experiments import trace_files

        traces = trace_files(None) + trace_files(a.traces)
        with ProcessPoolExecutor(a.jobs) as ex:
            runs += list(ex.map(run_trace, [(str(t), a.cc, a.out, tuple(a.set)) for t in traces]))
    if not runs:
        ap.error("give run directories or --traces")
    cols = ["rto", "recovery", "window", "pacing", "start"]
    print(f"Idle opportunities (share of the trace's; in parentheses: within {a.after} ms after an outage "
          f"of ≥ {a.outage} ms)\n")
    print("| run | opportunities | used | idle | " + " | ".join(cols) + " | after outages: time; opportunities | pacing idle at g < 1 |")
    print("|---|---|---|---|" + "---|" * len(cols) + "---|---|")
    for r in runs:
        v = idle(r, a.outage, a.after)
        tot = v["opps"]
        print(f"| {v['run']} | {tot} | {v['used'] / tot:.3f} | {v['lost'] / tot:.3f} ({v['near_outage'] / tot:.3f}) | "
              + " | ".join(f"{v[c] / tot:.3f} ({v[c + '_near'] / tot:.3f})" for c in cols)
              + f" | {v['near_time'] / v['ms']:.3f}; {v['near_opps'] / tot:.3f} | {v['pacing_below_rate'] / tot:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
