"""``xrc run SCENARIO --out DIR``: a scenario into a run directory, and its
summary printed."""

from __future__ import annotations

import argparse
import sys


def command(args: argparse.Namespace, argv: list[str]) -> int:
    from ..runner import run_to_dir
    from ..scenario import load

    sc = load(args.scenario, overrides=args.overrides, seed=args.seed)
    summary = run_to_dir(sc, args.out, force=args.force, plots=not args.no_plots,
                         progress=not args.quiet, argv=["xrc", *argv])
    if not args.quiet:
        print_summary(summary)
        print(f"  wrote {args.out}")
        sys.stdout.flush()
    return 0


def print_summary(summary) -> None:
    """A run's summary.json, one line per flow and per UE."""
    print(f"{summary['scenario']}: {summary['sim_time_s']:.1f} s simulated in {summary['wall_time_s']:.2f} s "
          f"({summary['events']} events)")
    for f in summary["flows"]:
        r = f["rtt_ms"]
        p50 = "-" if r["p50"] is None else f"{r['p50']:.1f}"
        p95 = "-" if r["p95"] is None else f"{r['p95']:.1f}"
        print(f"  flow {f['id']:<10} {f['cc']:<8} goodput {f['goodput_mbps']:6.2f} Mbit/s  "
              f"RTT p50 {p50} p95 {p95} ms  retransmits {f['retransmits']}")
    for u in summary["ues"]:
        h = u["hol_delay_ms"]
        util = "-" if u["utilization"] is None else f"{u['utilization']:.3f}"
        frac = "-" if u["frac_time_hol_below_budget"] is None else f"{u['frac_time_hol_below_budget']:.3f}"
        p90 = "-" if h["p90"] is None else f"{h['p90']:.1f}"
        print(f"  UE {u['id']}: capacity {u['capacity_mbps']:.2f} delivered {u['delivered_mbps']:.2f} Mbit/s  "
              f"utilization {util}  HoL p90 {p90} ms  HoL<=budget {frac}")
    if summary["jain_index"] is not None:
        print(f"  Jain's index {summary['jain_index']:.4f}")
