"""``xrc run SCENARIO --out DIR``: a scenario into a run directory, and its
summary printed."""

from __future__ import annotations

import argparse
import sys

from ..scenario import ScenarioError


def command(args: argparse.Namespace, argv: list[str]) -> int:
    from ..runner import run_to_dir
    from ..scenario import load

    sc = load(args.scenario, overrides=args.overrides, seed=args.seed)
    driver = None
    if args.policy is not None:
        driver = _policy_driver(args, sc)
        sc = driver.scenario
    elif args.policy_flow is not None:
        raise ScenarioError("--policy-flow: names the flow a --policy drives; give --policy too")
    summary = run_to_dir(sc, args.out, force=args.force, plots=not args.no_plots,
                         progress=not args.quiet, argv=["xrc", *argv], simulation=driver)
    if not args.quiet:
        print_summary(summary)
        print(f"  wrote {args.out}")
        sys.stdout.flush()
    return 0


def _policy_driver(args: argparse.Namespace, sc):
    """The trained policy of --policy driving flow --policy-flow (default 0)
    of the scenario, with the environment's settings it was saved with."""
    try:
        from ..gym import LinearPolicy, PolicyDriver
    except ImportError as e:
        raise ScenarioError(f"--policy: {e}") from None
    try:
        policy = LinearPolicy.load(args.policy)
    except ValueError as e:
        raise ScenarioError(f"--policy: {e}") from None
    flow = 0 if args.policy_flow is None else args.policy_flow
    try:
        return PolicyDriver(policy, sc, flow, **policy.env)
    except ValueError as e:
        msg = str(e)
        raise ScenarioError(f"--policy-flow: {msg}" if msg.startswith("flow:") else msg) from None


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
