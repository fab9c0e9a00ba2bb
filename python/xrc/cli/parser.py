"""The parser of ``xrc``: every subcommand and option, with its help (docs/cli.md
describes the same; tests/test_cli_docs.py keeps the two in step), and the
checks on arguments that argparse cannot express."""

from __future__ import annotations

import argparse

from ..scenario import ScenarioError


def scenario_args(p: argparse.ArgumentParser) -> None:
    """The scenario argument and --seed and --set, as every subcommand that runs one takes them."""
    p.add_argument("scenario", help="scenario file (TOML, or JSON as a run directory records it), or a run directory")
    p.add_argument("--seed", type=int, default=None, help="master seed (overrides the scenario's)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                   help="override a scenario field, e.g. --set flows.0.cc=cubic (repeatable)")


def check_sets(overrides: list[str], flag: str = "--set") -> None:
    """Refuses the same field given twice (the last one silently won)."""
    seen: dict[str, str] = {}
    for o in overrides:
        path = o.partition("=")[0].strip()
        if path in seen and "=" in o:
            raise ScenarioError(f"{flag} {path}: given twice ({seen[path]!r} and {o!r}); give it once")
        seen[path] = o


#: More seeds per experiment than anyone runs; 10^8 filled the memory
#: listing the runs (a MemoryError traceback).
MAX_SEEDS = 10_000


def check_seeds(args) -> None:
    """--seeds of reproduce and study: in [1, MAX_SEEDS], and not with
    --quick, which runs one seed (it was silently ignored)."""
    if args.seeds is None:
        return
    if not 1 <= args.seeds <= MAX_SEEDS:
        raise ScenarioError(f"--seeds must be in [1, {MAX_SEEDS}], got {args.seeds}")
    if args.quick:
        raise ScenarioError(f"--seeds {args.seeds} with --quick: --quick runs one seed; drop one of them")


def build() -> argparse.ArgumentParser:
    """The parser of ``xrc`` and its subcommands (``xrc fuzz`` parses its own)."""
    ap = argparse.ArgumentParser(prog="xrc", description="XRC and the cellular congestion-control lab.")
    ap.add_argument("--version", action="store_true", help="print versions and exit")
    sub = ap.add_subparsers(dest="cmd")

    r = sub.add_parser("run", help="run a scenario into a run directory")
    scenario_args(r)
    r.add_argument("--out", required=True, help="run directory to create")
    r.add_argument("--force", action="store_true", help="replace the run directory if it exists")
    r.add_argument("--no-plots", action="store_true", help="skip the figures")
    r.add_argument("--quiet", action="store_true", help="print nothing but errors")
    r.add_argument("--policy", default=None, metavar="FILE",
                   help="a trained policy (xrc.gym.LinearPolicy.save's .npz) drives flow --policy-flow as its "
                        "congestion control (external), with the environment settings it was saved with "
                        "(docs/gym.md; needs gymnasium)")
    r.add_argument("--policy-flow", type=int, default=None, metavar="K",
                   help="the flow --policy drives (default 0)")

    e = sub.add_parser("emulate", help="run a scenario's network in real time with real Linux TCP and "
                       "applications through it (root; see docs/emulation.md)",
                       usage="xrc emulate [-h] [--seed SEED] [--set PATH=VALUE] [--out OUT] [--force] [--no-flows]\n"
                             "                   [--xrc-acks] [--xrc-placeholder] [--xrc-key HEX] [--kernel-trace] [--shim SCHEMES]\n"
                             "                   [--gso {on,off}] [--quiet]\n"
                             "                   scenario [-- COMMAND ...]",
                       epilog="COMMAND (after --) runs in the UE side's namespace. With --no-flows and without --out the "
                              "network runs until COMMAND (default: $SHELL) exits, like mm-link; otherwise for the "
                              "scenario's duration_s, and COMMAND ends with it. The Internet side is 10.77.0.1, "
                              "UE k is 10.77.0.(2+k). Examples: xrc emulate paper/fig1-time-varying --set "
                              "flows.0.cc=bbr --out runs/emu; xrc emulate paper/fig1-time-varying --no-flows -- "
                              "ping -c 5 10.77.0.1")
    scenario_args(e)
    e.add_argument("--out", default=None, help="run directory to create (the files of xrc run)")
    e.add_argument("--force", action="store_true", help="replace the run directory if it exists")
    e.add_argument("--no-flows", action="store_true",
                   help="do not start the scenario's flows (with a COMMAND and no --out: like mm-link)")
    e.add_argument("--xrc-acks", action="store_true",
                   help="the base station writes XRC's feedback into real ACKs (TCP option 253, ExID 0x5852)")
    e.add_argument("--kernel-trace", action="store_true",
                   help="write every hook call of xrc's kernel congestion control into kernel-trace.bin (with --out; "
                        "docs/kernel.md)")
    e.add_argument("--xrc-placeholder", action="store_true",
                   help="the receivers reserve the option in their pure ACKs for the base station to fill in place "
                        "(with --xrc-acks; docs/kernel.md)")
    e.add_argument("--xrc-key", default=None, metavar="HEX",
                   help="32 hexadecimal digits: the base station tags every option it writes (SipHash-2-4) and xrc's "
                        "kernel senders take only tagged options that check (docs/kernel.md)")
    e.add_argument("--shim", default="", metavar="SCHEMES",
                   help="comma-separated schemes to run through the shim (the core's own algorithm in user space) "
                        "even where the kernel has its own (cubic, newreno, bbr, xrc); schemes the kernel lacks "
                        "always do (docs/kernel.md)")
    e.add_argument("--gso", choices=["on", "off"], default=None,
                   help="write TCP segments the link releases at one instant to the UE as one GSO packet, "
                        "as GRO would merge them (default: see docs/emulation.md)")
    e.add_argument("--quiet", action="store_true", help="print nothing but errors")

    k = sub.add_parser("kernel", help="XRC's sender as a Linux congestion control (BPF): load, unload, status; "
                       "and the shim for every other scheme (root; see docs/kernel.md)")
    ks = k.add_subparsers(dest="action", required=True)
    kl = ks.add_parser("load", help="register the congestion control xrc until `xrc kernel unload`")
    kl.add_argument("--set", dest="params", action="append", default=[], metavar="NAME=VALUE",
                    help="a parameter of xrc (cc_params: budget_ms, ramp_rtts, probe_segments, unfair_after_rtts, "
                         "unfair_gain, feedback_timeout_ms), a bound on feedback (max_rate_kbps, max_hol_ms), or the "
                         "keyed tag's key (tag_key, 32 hexadecimal digits); repeatable")
    kl.add_argument("--quiet", action="store_true", help="print nothing but errors")
    ksh = ks.add_parser("shim", help="serve every socket that chooses xrc_shim with one of the simulator's "
                        "congestion controls, run by an agent in this process, until Ctrl-C (root)")
    ksh.add_argument("schemes", nargs="+", metavar="[PORT=]SCHEME",
                     help="the scheme for every socket on the shim, or PORT=SCHEME for the sockets whose remote "
                          "port is PORT (xrc list names the schemes; abc and pbe read the base station's or "
                          "the UE's option from ACKs, natcp and nacubic NetAssist's reports (--reports); the "
                          "oracles cannot run on real sockets)")
    ksh.add_argument("--set", dest="params", action="append", default=[], metavar="NAME=VALUE",
                     help="a cc_params entry of the schemes (as in a scenario), or a bound on the XRC feedback "
                          "the option parser takes (max_rate_kbps, max_hol_ms); repeatable")
    ksh.add_argument("--duration", type=float, default=None, metavar="S",
                     help="remove the shim after S seconds (default: at Ctrl-C or SIGTERM)")
    ksh.add_argument("--interval", type=float, default=10.0, metavar="S",
                     help="print the agent's status every S seconds (default 10; 0: never)")
    ksh.add_argument("--reports", type=int, default=None, metavar="PORT",
                     help="take NetAssist reports (natcp, nacubic; the datagram format is in docs/kernel.md) on "
                          "UDP port PORT")
    ksh.add_argument("--json", action="store_true", help="print the final status as JSON")
    ksh.add_argument("--quiet", action="store_true", help="print nothing but errors")
    ku = ks.add_parser("unload", help="remove what `xrc kernel load` registered")
    ku.add_argument("--quiet", action="store_true", help="print nothing but errors")
    kst = ks.add_parser("status", help="what is loaded, its parameters and its per-socket counters")
    kst.add_argument("--json", action="store_true", help="print JSON")

    v = sub.add_parser("validate", help="check a scenario and print it resolved")
    scenario_args(v)
    v.add_argument("--print", action="store_true", help="print the resolved scenario as JSON")

    s = sub.add_parser("sweep", help="run a grid of scenario overrides x seeds, resumable, merged into one table")
    s.add_argument("sweep", help="sweep file (TOML)")
    s.add_argument("--out", help="sweep directory (default: runs/<sweep file name>)")
    s.add_argument("--jobs", type=int, default=None, help="parallel runs (default: all cores)")
    s.add_argument("--engine", choices=["local", "dask"], default="local",
                   help="local processes (default) or a Dask cluster")
    s.add_argument("--address", default=None, help="Dask scheduler address (default: start a local cluster)")
    s.add_argument("--quiet", action="store_true")

    rp = sub.add_parser("reproduce", help="run every experiment of the XRC paper into a report")
    rp.add_argument("--out", required=True, help="report directory to create")
    rp.add_argument("--quick", action="store_true", help="one seed, shorter runs (for CI)")
    rp.add_argument("--seeds", type=int, default=None, help="seeds per experiment (default 5; --quick: 1)")
    rp.add_argument("--jobs", type=int, default=None, help="parallel runs (default: all cores)")
    rp.add_argument("--engine", choices=["local", "dask"], default="local")
    rp.add_argument("--address", default=None, help="Dask scheduler address (default: a local cluster)")
    rp.add_argument("--force", action="store_true", help="replace the report directory if it exists")
    rp.add_argument("--traces", metavar="DIR", default=None,
                    help="directory of Mahimahi downlink traces (*.down) for the trace study (default: the bundled ones)")
    rp.add_argument("--variant", action="append", default=None, metavar="CC",
                    help="an improved XRC whose claims the report shows beside the paper's xrc (default: xrc2; "
                         "repeat for several; 'none' for the paper's xrc only)")
    rp.add_argument("--quiet", action="store_true")

    st = sub.add_parser("study", help="a study beyond the paper into a report (nr: the 5G NR mid-band cell, TDD "
                                      "against FDD; roccet: the TCP ROCCET paper's comparison, each scheme alone on "
                                      "the mid-band cell, stationary and mobile; frontier: every scheme alone on "
                                      "each trace link against xrc2's curve over its knob)")
    st.add_argument("study", choices=["nr", "roccet", "frontier"], help="which study")
    st.add_argument("--out", default=None, help="report directory (report.md, runs.json); default: print only")
    st.add_argument("--seeds", type=int, default=None, help="seeds per scenario (default: nr 3, roccet 5)")
    st.add_argument("--quick", action="store_true", help="one seed, short runs (nr 4 s, roccet 3 s; for CI)")
    st.add_argument("--jobs", type=int, default=None, help="parallel runs (default: all cores)")
    st.add_argument("--force", action="store_true", help="write into a non-empty --out")
    st.add_argument("--traces", metavar="DIR", default=None,
                    help="frontier: directory of Mahimahi downlink traces (*.down; default: the bundled one)")
    st.add_argument("--duration", type=float, default=None, metavar="S",
                    help="frontier: seconds of each run (default 120)")

    vl = sub.add_parser("validate-linux", help="real Linux TCP through xrc's emulator against the simulator "
                        "(needs root, TUN, iperf3)")
    vl.add_argument("--cases", default=None, metavar="PATTERNS",
                    help="comma-separated shell patterns of case ids (default: all; see --list)")
    vl.add_argument("--repeats", type=int, default=2, help="real runs per case (default 2)")
    vl.add_argument("--duration", type=float, default=60.0, help="seconds per run (default 60)")
    vl.add_argument("--out", default=None, help="results directory (default: runs/validate-linux)")
    vl.add_argument("--force", action="store_true",
                    help="replace the results in --out (only a directory validate-linux wrote); real runs delete "
                         "the old measurement first")
    vl.add_argument("--pcap", action="store_true", help="also write a pcap of each side of every real run")
    vl.add_argument("--no-sim", action="store_true", help="real runs only")
    vl.add_argument("--cpu", type=int, default=None, help="CPU to pin the emulator to (default: the last)")
    vl.add_argument("--no-realtime", action="store_true", help="do not ask for SCHED_FIFO for the emulator")
    vl.add_argument("--app-nice", type=int, default=None, metavar="N",
                    help="niceness of the iperf3 client and server, -20..19 (default: inherited; -20 lets the "
                         "host's other work delay the applications, and so the ACKs, less)")
    vl.add_argument("--retake-noisy", type=int, default=0, metavar="N",
                    help="run a real run again, up to N times, when the emulator's release error p99 exceeded "
                         "1 ms (a host that stalled it), and keep the quietest attempt; the others stay in the "
                         "results, set aside (default 0)")
    vl.add_argument("--list", action="store_true", help="print the case ids and exit")
    vl.add_argument("--resim", metavar="RESULTS", default=None,
                    help="run only the simulated side again for a results.json (or its directory) and write the "
                         "refreshed results into --out; needs no root")
    vl.add_argument("--merge", nargs="+", metavar="RESULTS", default=None,
                    help="merge results.json files (or their directories) into --out and rewrite the table; "
                         "runs nothing")
    vl.add_argument("--quiet", action="store_true")
    pl = sub.add_parser("plot", help="comparison figures of run directories or of a sweep's runs")
    pl.add_argument("runs", nargs="+", metavar="RUN", help="run directories and/or sweep directories")
    pl.add_argument("--out", required=True, help="directory for the figures (not inside a run directory)")
    pl.add_argument("--label", action="append", default=None, metavar="NAME",
                    help="a run's label, once per run in order (default: what differs between the runs)")

    sc = sub.add_parser("schema", help="print the JSON Schema of scenario files (for editors)")
    sc.add_argument("--out", default=None, help="write it to this file instead")

    b = sub.add_parser("bench", help="time the simulator on a scenario and the engine alone, or on one cell "
                                     "with 1 to 1,000 UEs (--cell)")
    b.add_argument("scenario", nargs="?", default=None,
                   help="scenario file or bundled scenario name (default: the bundled bench/lte-1ue-20s.toml)")
    b.add_argument("--repeat", type=int, default=5, help="timed repetitions (default 5)")
    b.add_argument("--ns3-seconds", type=float, default=11.0,
                   help="ns-3.44 LTE wall time for the same scenario, for the speed-up line (default 11 s)")
    b.add_argument("--cell", action="store_true",
                   help="instead: one 20 MHz LTE cell, one bulk CUBIC flow per UE, for each UE count of --ues "
                        "(wall time, events/s, peak RSS of each run in its own process)")
    b.add_argument("--ues", default=None, metavar="N,N,...",
                   help="UE counts of --cell (default 1,10,100,400,1000)")
    b.add_argument("--duration", type=float, default=60.0, help="simulated seconds of --cell (default 60)")
    b.add_argument("--mu", default="lte,0,3", metavar="CELLS",
                   help="cells of --cell, comma-separated: lte (20 MHz) and NR numerologies 0..3 (50 MHz FDD, "
                        "the same traffic; default lte,0,3)")
    b.add_argument("--memory", action="store_true",
                   help="instead: peak memory of `xrc run --out` and of xrc.run in memory on a wired flow and a "
                        "1-UE LTE cell over --memory-duration simulated seconds, against their bounds")
    b.add_argument("--memory-duration", type=float, default=1e5, metavar="S",
                   help="simulated seconds of --memory (default 100000)")
    b.add_argument("--gym", action="store_true",
                   help="instead: steps/s of the Gymnasium environment (xrc.gym) on the scenario at a 10 ms step, "
                        "one core, and its vector form's aggregate on 1 and 2 threads, beside Aurora's figures")
    b.add_argument("--json", default=None, metavar="FILE", help="also write --cell's measurements to FILE")
    b.add_argument("--set", action="append", default=[], metavar="PATH=VALUE", dest="bench_set",
                   help="override a field of --cell's scenario (e.g. output.rlc_sample_ttis=10); repeatable")
    tr = sub.add_parser("trace", help="synthetic cellular traces in Mahimahi's format (docs/traces.md)")
    trs = tr.add_subparsers(dest="action", required=True, metavar="ACTION")
    sy = trs.add_parser("synth", help="write seeded synthetic traces, half of them held out from tuning")
    sy.add_argument("out", metavar="DIR", help="directory to write synth-tune-NNN.down, synth-holdout-NNN.down "
                                               "and traces.json into")
    sy.add_argument("--count", type=int, default=2, help="traces to write (default 2: one of each half)")
    sy.add_argument("--seed", type=int, default=1, help="seed of the first trace; trace k uses seed + k "
                                                        "(default 1)")
    sy.add_argument("--seconds", type=float, default=60.0, help="length of each trace (default 60)")
    sy.add_argument("--min-mbps", type=float, default=1.0, help="lowest rate level (default 1)")
    sy.add_argument("--max-mbps", type=float, default=40.0, help="highest rate level (default 40)")
    sy.add_argument("--levels", type=int, default=6, help="rate levels, log-spaced (default 6)")
    sy.add_argument("--dwell-s", type=float, default=1.5, help="mean time in a level (default 1.5 s)")
    sy.add_argument("--fades-per-min", type=float, default=4.0, help="deep fades a minute (default 4)")
    sy.add_argument("--fade-s", type=float, default=0.6, help="mean length of a fade (default 0.6 s)")
    sy.add_argument("--fade-depth", type=float, default=0.08, help="rate factor in a fade (default 0.08)")
    sy.add_argument("--outages-per-min", type=float, default=0.5, help="outages a minute (default 0.5)")
    sy.add_argument("--outage-s", type=float, nargs=2, default=[1.0, 4.0], metavar=("MIN", "MAX"),
                    help="an outage lasts a uniform time in [MIN, MAX] s (default 1 4)")
    sy.add_argument("--grant-prob", type=float, default=0.35,
                    help="share of milliseconds in which the link is granted (burstiness; default 0.35)")
    sy.add_argument("--quiet", action="store_true", help="print nothing but errors")
    tst = trs.add_parser("stats", help="statistics of Mahimahi traces (rate, burstiness), as a table")
    tst.add_argument("files", nargs="+", metavar="FILE", help="Mahimahi traces")
    li = sub.add_parser("list", help="the bundled scenarios (runnable by name from anywhere) and the congestion "
                                     "controls (cc = NAME)")
    li.add_argument("what", nargs="?", choices=["scenarios", "schemes"], help="only one of the two lists")
    dc = sub.add_parser("doc", help="print a congestion control's page (what it follows, its parameters, its "
                                    "deviations)")
    dc.add_argument("scheme", metavar="NAME", help="the congestion control (cc = NAME; xrc list schemes names them)")
    # Parsed by xrc.fuzz itself (listed here for --help).
    sub.add_parser("fuzz", help="fuzz scenario validation and the core; reproducers for every failure",
                   add_help=False)
    return ap


def check(args: argparse.Namespace) -> None:
    """Checks common to every subcommand; resolves a bundled scenario's name."""
    if getattr(args, "jobs", None) is not None and args.jobs < 1:
        # 0 would silently mean every core, -1 fail deep inside.
        raise ScenarioError(f"--jobs must be at least 1, got {args.jobs}")
    check_sets(getattr(args, "overrides", None) or [])
    check_sets(getattr(args, "bench_set", None) or [])
    if getattr(args, "scenario", None) is not None:
        # A name of a bundled scenario works from any directory.
        from ..bundled import resolve_scenario_arg

        args.scenario = resolve_scenario_arg(args.scenario)
