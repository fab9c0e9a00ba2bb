"""The ``xrc`` command: run, validate, sweep, plot, reproduce, study, schema,
list, bench, fuzz, emulate and validate-linux. Every subcommand and option is
described in docs/cli.md (tests/test_cli_docs.py keeps the two in step);
``xrc SUBCOMMAND --help`` prints the same.

SCENARIO may also name a scenario bundled with xrc when no such file
exists here: ``paper/fig1-time-varying`` or
``scenarios/paper/fig1-time-varying.toml`` work from any directory.

Exit status: 0 on success, 2 for bad input (the message names the field and
the value), 1 for anything else.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import stopping
from .parallel import WorkerDied
from .scenario import ScenarioError, load


def _scenario_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", help="scenario file (TOML, or JSON as a run directory records it), or a run directory")
    p.add_argument("--seed", type=int, default=None, help="master seed (overrides the scenario's)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                   help="override a scenario field, e.g. --set flows.0.cc=cubic (repeatable)")


def _check_sets(overrides: list[str], flag: str = "--set") -> None:
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


def _check_seeds(args) -> None:
    """--seeds of reproduce and study: in [1, MAX_SEEDS], and not with
    --quick, which runs one seed (it was silently ignored)."""
    if args.seeds is None:
        return
    if not 1 <= args.seeds <= MAX_SEEDS:
        raise ScenarioError(f"--seeds must be in [1, {MAX_SEEDS}], got {args.seeds}")
    if args.quick:
        raise ScenarioError(f"--seeds {args.seeds} with --quick: --quick runs one seed; drop one of them")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="xrc", description="XRC and the cellular congestion-control lab.")
    ap.add_argument("--version", action="store_true", help="print versions and exit")
    sub = ap.add_subparsers(dest="cmd")

    r = sub.add_parser("run", help="run a scenario into a run directory")
    _scenario_args(r)
    r.add_argument("--out", required=True, help="run directory to create")
    r.add_argument("--force", action="store_true", help="replace the run directory if it exists")
    r.add_argument("--no-plots", action="store_true", help="skip the figures")
    r.add_argument("--quiet", action="store_true", help="print nothing but errors")

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
    _scenario_args(e)
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

    k = sub.add_parser("kernel", help="XRC's sender as a Linux congestion control (BPF): load, unload, status "
                       "(root; see docs/kernel.md)")
    ks = k.add_subparsers(dest="action", required=True)
    kl = ks.add_parser("load", help="register the congestion control xrc until `xrc kernel unload`")
    kl.add_argument("--set", dest="params", action="append", default=[], metavar="NAME=VALUE",
                    help="a parameter of xrc (cc_params: budget_ms, ramp_rtts, probe_segments, unfair_after_rtts, "
                         "unfair_gain, feedback_timeout_ms), a bound on feedback (max_rate_kbps, max_hol_ms), or the "
                         "keyed tag's key (tag_key, 32 hexadecimal digits); repeatable")
    kl.add_argument("--quiet", action="store_true", help="print nothing but errors")
    ku = ks.add_parser("unload", help="remove what `xrc kernel load` registered")
    ku.add_argument("--quiet", action="store_true", help="print nothing but errors")
    kst = ks.add_parser("status", help="what is loaded, its parameters and its per-socket counters")
    kst.add_argument("--json", action="store_true", help="print JSON")

    v = sub.add_parser("validate", help="check a scenario and print it resolved")
    _scenario_args(v)
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
                                      "the mid-band cell, stationary and mobile)")
    st.add_argument("study", choices=["nr", "roccet"], help="which study")
    st.add_argument("--out", default=None, help="report directory (report.md, runs.json); default: print only")
    st.add_argument("--seeds", type=int, default=None, help="seeds per scenario (default: nr 3, roccet 5)")
    st.add_argument("--quick", action="store_true", help="one seed, short runs (nr 4 s, roccet 3 s; for CI)")
    st.add_argument("--jobs", type=int, default=None, help="parallel runs (default: all cores)")
    st.add_argument("--force", action="store_true", help="write into a non-empty --out")

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
    b.add_argument("--json", default=None, metavar="FILE", help="also write --cell's measurements to FILE")
    b.add_argument("--set", action="append", default=[], metavar="PATH=VALUE", dest="bench_set",
                   help="override a field of --cell's scenario (e.g. output.rlc_sample_ttis=10); repeatable")
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


def _print_summary(summary) -> None:
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


def _validate_linux(args, argv: list[str]) -> int:
    import subprocess
    from pathlib import Path

    from .emulation import linuxref
    from .emulation.testbed import TestbedError, terminate_on_sigterm
    from .outdir import OutputError

    if args.list:
        print(linuxref.list_cases())
        return 0
    if args.resim and args.merge:
        raise ScenarioError("--resim and --merge: give one of them, not both")

    def results_path(p: str) -> Path:
        return Path(p) / "results.json" if Path(p).is_dir() else Path(p)

    if args.resim or args.merge:
        flag = "--resim" if args.resim else "--merge"
        if not args.out:
            raise ScenarioError(f"{flag}: needs --out DIR")
        out = Path(args.out)
        try:
            if args.resim:
                import shutil
                import tempfile

                rp = results_path(args.resim)
                src = linuxref.load_results(rp, "--resim")
                linuxref.prepare_out(out, args.force, replace=False)
                # Simulated into a temporary directory, so that a failure
                # (a trace not found) leaves no half-made --out behind.
                with tempfile.TemporaryDirectory(prefix="xrc-resim-") as tmp:
                    res = linuxref.resimulate(src, Path(tmp) / "traces", progress=not args.quiet,
                                              slices=(rp.parent / "trace-slices",))
                    out.mkdir(parents=True, exist_ok=True)
                    shutil.copytree(Path(tmp) / "traces", out / "traces", dirs_exist_ok=True)
            else:
                res = linuxref.merge_results([results_path(p) for p in args.merge])
                linuxref.prepare_out(out, args.force, replace=False)
        except OutputError as e:
            print(f"xrc: error: {e}", file=sys.stderr)
            return 2
        except (ValueError, linuxref.HarnessError) as e:
            # A file that is not a results file, a trace it names that is
            # not there (linuxref.HarnessError), a scenario the core refuses.
            raise ScenarioError(str(e)) from None
        linuxref.write_results(res, out)
        if not args.quiet:
            if args.resim:
                print(linuxref.markdown(res))
            print(f"{len(res['cases'])} cases; wrote {out}/results.json and {out}/table.md")
        return 0

    # Real runs: every argument is checked before anything is set up.
    if not 1 <= args.repeats <= 1000:
        raise ScenarioError(f"--repeats must be in [1, 1000], got {args.repeats}")
    lo = linuxref.STEADY_FROM_S + 1
    if not lo < args.duration <= 86_400:
        raise ScenarioError(f"--duration must be in ({lo:g}, 86400] s (the steady interval is "
                            f"[{linuxref.STEADY_FROM_S:g} s, duration)), got {args.duration}")
    if args.cpu is not None:
        import os

        allowed = sorted(os.sched_getaffinity(0))
        if args.cpu not in allowed:
            raise ScenarioError(f"--cpu must be one of the CPUs this process may use "
                                f"({', '.join(map(str, allowed))}), got {args.cpu}")
    if args.app_nice is not None and not -20 <= args.app_nice <= 19:
        raise ScenarioError(f"--app-nice must be in [-20, 19], got {args.app_nice}")
    if not 0 <= args.retake_noisy <= 20:
        raise ScenarioError(f"--retake-noisy must be in [0, 20], got {args.retake_noisy}")
    try:
        cases = linuxref.select_cases(args.cases)
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    out = Path(args.out or "runs/validate-linux")
    terminate_on_sigterm()
    try:
        linuxref.check_machine(cases)
        linuxref.prepare_out(out, args.force, replace=True)
        res = linuxref.run_cases(cases, out=out, repeats=args.repeats, duration_s=args.duration, pcap=args.pcap,
                                 cpu=args.cpu, fifo_priority=None if args.no_realtime else 50,
                                 simulate=not args.no_sim, argv=["xrc", *argv], progress=not args.quiet,
                                 app_nice=linuxref.APP_NICE if args.app_nice is None else args.app_nice,
                                 retake_noisy=args.retake_noisy)
    except (TestbedError, OutputError) as e:
        print(f"xrc: error: {e}", file=sys.stderr)
        return 2
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        # A run that failed (iperf3, ip, the emulator): everything is cleaned
        # up; what was measured before it is in --out.
        print(f"xrc: error: validate-linux: {e}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(linuxref.markdown(res))
        print(f"wrote {out}/results.json and {out}/table.md")
    return 0


# The handler and its exception live in `stopping`, which also remembers
# the request for code that must not commit after it.
_Terminated = stopping.Terminated
_on_terminate = stopping.on_signal


def main(argv: list[str] | None = None) -> int:
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return _main(argv)
    # Without this the process died at once: its staging directory stayed
    # beside --out and a sweep's workers went on running, orphaned.
    saved = stopping.install()
    try:
        rc = _main(argv)
        # A handler's exception swallowed by a library on the way: the
        # command finished, but was asked to stop (it wrote no result
        # after the request; see `stopping`).
        stopping.check()
        return rc
    except BaseException as e:
        if not (isinstance(e, _Terminated) or stopping.requested()):
            raise
        # Also when a library turned the handler's exception into its own
        # (a ValueError from Matplotlib): that is the signal, not a bug.
        sig = stopping.requested() or (e.code - 128 if isinstance(e.code, int) else signal.SIGTERM)
        print(f"xrc: terminated ({signal.Signals(sig).name})", file=sys.stderr)
        return 128 + sig
    finally:
        stopping.restore(saved)


def _main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["fuzz"]:
        from .fuzz import main as fuzz_main

        return fuzz_main(argv[1:])
    ap = _parser()
    command = None
    if argv[:1] == ["emulate"] and "--" in argv:
        cut = argv.index("--")
        argv, command = argv[:cut], argv[cut + 1:] or None
    args = ap.parse_args(argv)
    if args.version:
        from . import __version__, _core

        print(f"xrc {__version__} (core {_core.version()})")
        return 0
    if args.cmd is None:
        ap.print_help()
        return 2
    try:
        if getattr(args, "jobs", None) is not None and args.jobs < 1:
            # 0 would silently mean every core, -1 fail deep inside.
            raise ScenarioError(f"--jobs must be at least 1, got {args.jobs}")
        _check_sets(getattr(args, "overrides", None) or [])
        _check_sets(getattr(args, "bench_set", None) or [])
        if getattr(args, "scenario", None) is not None:
            # A name of a bundled scenario works from any directory.
            from .bundled import resolve_scenario_arg

            args.scenario = resolve_scenario_arg(args.scenario)
        if args.cmd == "run":
            from .runner import OutputError, run_to_dir

            sc = load(args.scenario, overrides=args.overrides, seed=args.seed)
            try:
                summary = run_to_dir(sc, args.out, force=args.force, plots=not args.no_plots,
                                     progress=not args.quiet, argv=["xrc", *argv])
            except OutputError as e:
                print(f"xrc: error: {e}", file=sys.stderr)
                return 2
            if not args.quiet:
                _print_summary(summary)
                print(f"  wrote {args.out}")
                sys.stdout.flush()
            return 0
        if args.cmd == "validate":
            sc = load(args.scenario, overrides=args.overrides, seed=args.seed)
            if args.print:
                print(json.dumps(sc.resolved, indent=2, sort_keys=True))
                sys.stdout.flush()
            else:
                print(f"{args.scenario}: ok ({sc.name}, seed {sc.seed}, {len(sc.resolved['flows'])} flows, "
                      f"{sc.resolved['duration_s']} s)")
            return 0
        if args.cmd == "study":
            if args.study == "roccet":
                from .study_roccet import study
            else:
                from .study_nr import study

            _check_seeds(args)
            seeds = {} if args.seeds is None else {"seeds": args.seeds}
            from .outdir import OutputError

            try:
                text = study(args.out, quick=args.quick, jobs=args.jobs, force=args.force, **seeds)
            except OutputError as e:
                print(f"xrc: error: {e}", file=sys.stderr)
                return 2
            print(text, end="")
            return 0
        if args.cmd == "sweep":
            from pathlib import Path

            from .outdir import OutputError
            from .sweeps import load_sweep, run_sweep

            sw = load_sweep(args.sweep)
            out = args.out or str(Path("runs") / Path(args.sweep).stem)
            try:
                path = run_sweep(sw, out, jobs=args.jobs, engine=args.engine, address=args.address,
                                 progress=not args.quiet)
            except OutputError as e:
                # A run that could not be written (a full disk): the runs
                # done before it are kept, the earlier table is untouched.
                print(f"xrc: error: {e}", file=sys.stderr)
                return 2
            if not args.quiet:
                from .sweeps import digest

                print(digest(path))
                print(f"{len(sw.runs())} runs; merged table: {path} (the rows above: means over seeds)")
            return 0
        if args.cmd == "reproduce":
            from . import _core
            from .reproduce import DEFAULT_VARIANTS, reproduce
            from .runner import OutputError

            _check_seeds(args)
            if args.seeds is None:
                args.seeds = 5
            others = [c for c in _core.schemes() if c != "xrc"]
            for v in args.variant or []:
                if v != "none" and v not in others:
                    raise ScenarioError(f"--variant: {v!r} is not a scheme other than xrc (one of: "
                                        f"{', '.join(others)}, or none)")
            if not args.quiet:
                from .reproduce.experiments import trace_files

                found = trace_files(args.traces)
                where = "bundled with xrc" if args.traces is None else f"from {args.traces}"
                print(f"trace study: {len(found)} trace(s) {where}: {', '.join(p.name for p in found)}")
                sys.stdout.flush()
            try:
                variants = tuple(v for v in (args.variant or DEFAULT_VARIANTS) if v != "none")
                res = reproduce(args.out, quick=args.quick, seeds=args.seeds, jobs=args.jobs, engine=args.engine,
                                address=args.address, force=args.force, progress=not args.quiet, traces=args.traces,
                                variants=variants)
            except OutputError as e:
                print(f"xrc: error: {e}", file=sys.stderr)
                return 2
            if not args.quiet:
                m = res["meta"]
                from .reproduce.report import fmt_unit

                held = sum(c["holds"] for c in res["claims"])
                vs = m.get("variants") or []
                also = "".join(f"; {v}: {sum(bool(c.get(v) and c[v]['holds']) for c in res['claims'])}" for v in vs)
                print(f"{m['runs']} runs in {m['wall_time_s']:.1f} s; {held} of {len(res['claims'])} claims hold "
                      f"(xrc{also}); report: {args.out}/report.html")
                for c in res["claims"]:
                    extra = "".join(f"  {v}: {fmt_unit(c[v]['ours'], c['unit'])} {c[v]['verdict'].upper()}"
                                    if c.get(v) else f"  {v}: -" for v in vs)
                    print(f"  {c['verdict'].upper():<12} {c['id']:<22} paper: {c['paper']:<32} "
                          f"ours: {fmt_unit(c['ours'], c['unit'])}{extra}")
            return 0
        if args.cmd == "emulate":
            import subprocess

            from .emulation.emulate import GSO_DEFAULT
            from .emulation.emulate import main as emulate_main
            from .emulation.testbed import TestbedError
            from .outdir import OutputError

            sc = load(args.scenario, overrides=args.overrides, seed=args.seed)
            try:
                return emulate_main(sc, out=args.out, force=args.force, command=command,
                                    run_flows=not args.no_flows, argv=["xrc", *argv] + (["--", *command] if command else []),
                                    quiet=args.quiet, xrc_acks=args.xrc_acks,
                                    gso=GSO_DEFAULT if args.gso is None else args.gso == "on",
                                    kernel_trace=args.kernel_trace,
                                    shim=tuple(x.strip() for x in args.shim.split(",") if x.strip()),
                                    placeholder=args.xrc_placeholder, tag_key=args.xrc_key)
            except (TestbedError, OutputError) as e:
                print(f"xrc: error: {e}", file=sys.stderr)
                return 2
            except (RuntimeError, subprocess.SubprocessError) as e:
                # A run that failed (ip, iperf3, the emulator): cleaned up.
                print(f"xrc: error: emulate: {e}", file=sys.stderr)
                return 1
        if args.cmd == "kernel":
            from .kernel import KernelError
            from .kernel import main as kernel_main

            try:
                return kernel_main(args)
            except KernelError as e:
                print(f"xrc: error: kernel: {e}", file=sys.stderr)
                return 2
            except RuntimeError as e:
                print(f"xrc: error: kernel: {e}", file=sys.stderr)
                return 1
        if args.cmd == "validate-linux":
            return _validate_linux(args, argv)
        if args.cmd == "plot":
            from .compare import plot_runs
            from .outdir import OutputError

            try:
                res = plot_runs(args.runs, args.out, labels=args.label)
            except OutputError as e:
                print(f"xrc: error: {e}", file=sys.stderr)
                return 2
            for w in res["problems"]:
                print(f"xrc: warning: figure: {w}", file=sys.stderr)
            print(f"{len(res['labels'])} runs: {'; '.join(res['labels'])}")
            print(f"wrote {len(res['files'])} files to {args.out}: {', '.join(sorted(res['files']))}")
            return 0
        if args.cmd == "list":
            from . import _core, bundled
            from .schemes import label_of

            if args.what in (None, "scenarios"):
                print("Bundled scenarios (xrc run NAME --out DIR, from any directory):")
                for name, desc in bundled.describe_scenarios():
                    print(f"  {name:<34} {desc}" if desc else f"  {name}")
            if args.what is None:
                print()
            if args.what in (None, "schemes"):
                pages = bundled.algorithms_dir()
                print(f"Congestion controls (cc = NAME; its page: xrc doc NAME, or {pages}/NAME.md):")
                for name in _core.schemes():
                    print(f"  {name:<12} {label_of(name)}")
            return 0
        if args.cmd == "doc":
            from . import _core, bundled

            page = bundled.algorithm_page(args.scheme) if args.scheme in _core.schemes() else None
            if page is None:
                print(f"xrc: error: doc: no congestion control {args.scheme!r}; known: {', '.join(_core.schemes())}",
                      file=sys.stderr)
                return 2
            sys.stdout.write(page.read_text(encoding="utf-8"))
            sys.stdout.flush()
            return 0
        if args.cmd == "schema":
            from .schema import dumps

            text = dumps()
            if args.out:
                from pathlib import Path

                from .outdir import OutputError, check_parents, write_whole

                try:
                    check_parents(Path(args.out))
                except OutputError as e:
                    print(f"xrc: error: {e}", file=sys.stderr)
                    return 2
                # Whole or not at all: a full disk left a truncated schema.
                write_whole(Path(args.out), text)
            else:
                sys.stdout.write(text)
                sys.stdout.flush()
            return 0
        if args.cmd == "bench":
            from .bench import bench
            from .bundled import BENCH_SCENARIO, scenario as bundled_scenario

            if args.memory:
                if args.cell or args.scenario or args.bench_set or args.ues is not None:
                    raise ScenarioError("--memory measures its own scenarios: give no scenario, --cell, --set or --ues")
                if not 1 <= args.memory_duration <= 1e6:
                    raise ScenarioError(f"--memory-duration must be in [1, 1e6] s, got {args.memory_duration}")
                from .bench import bench_memory

                return bench_memory(args.memory_duration)
            if args.cell:
                from .bench import CELL_SIZES, bench_cell

                try:
                    sizes = tuple(int(x) for x in args.ues.split(",")) if args.ues is not None else CELL_SIZES
                except ValueError:
                    raise ScenarioError(f"--ues: a comma-separated list of UE counts, got {args.ues!r}") from None
                if not sizes or any(not 1 <= n <= 1000 for n in sizes):
                    raise ScenarioError(f"--ues: UE counts must be in [1, 1000], got {args.ues!r}")
                if not 0.001 <= args.duration <= 3600:
                    raise ScenarioError(f"--duration must be in [0.001, 3600] s, got {args.duration}")
                cells = [c.strip() for c in args.mu.split(",")]
                if not cells or any(c not in ("lte", "0", "1", "2", "3") for c in cells):
                    raise ScenarioError(f"--mu: a comma-separated list of lte and numerologies 0..3, got {args.mu!r}")
                # `--mu lte,lte` measured every size twice.
                for flag, given, items in (("--ues", args.ues, sizes), ("--mu", args.mu, cells)):
                    twice = sorted({str(x) for x in items if list(items).count(x) > 1})
                    if twice:
                        raise ScenarioError(f"{flag}: {', '.join(twice)} given twice in {given!r}; give each once")
                if args.json is not None:
                    # Checked before measuring (it failed only after every run).
                    from pathlib import Path

                    j = Path(args.json)
                    if j.is_dir() or not j.parent.is_dir():
                        raise ScenarioError(f"--json {args.json!r}: " + ("is a directory" if j.is_dir() else
                                            f"no such directory {str(j.parent)!r}"))
                return bench_cell(sizes, args.duration, json_out=args.json, overrides=args.bench_set,
                                  cells=cells)
            if args.bench_set or args.ues is not None:
                raise ScenarioError("--set and --ues apply to --cell only")
            if args.repeat < 1:
                raise ScenarioError(f"--repeat must be at least 1, got {args.repeat}")
            if not 0 < args.ns3_seconds < float("inf"):
                raise ScenarioError(f"--ns3-seconds must be a positive number of seconds, got {args.ns3_seconds}")
            path = args.scenario or str(bundled_scenario(BENCH_SCENARIO))
            return bench(path, repeat=args.repeat, ns3_seconds=args.ns3_seconds)
    except ScenarioError as e:
        print(f"xrc: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("xrc: interrupted", file=sys.stderr)
        return 130
    except WorkerDied as e:
        print(f"xrc: error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (`xrc validate --print | head`): stop quietly,
        # and keep the interpreter from failing to flush at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print("xrc: error: output closed by the reader (broken pipe)", file=sys.stderr)
        return 2
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        print(f"xrc: error: {where}{e.strerror or e}", file=sys.stderr)
        return 2
    return 1


if __name__ == "__main__":
    sys.exit(main())
