"""``xrc validate-linux``: real Linux TCP through xrc's emulator against the
simulator (root, TUN, iperf3); --resim and --merge redo only the simulated
side or merge results, without root."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..scenario import ScenarioError
from . import errors


def command(args: argparse.Namespace, argv: list[str]) -> int:
    from ..emulation import linuxref

    if args.list:
        print(linuxref.list_cases())
        return 0
    if args.resim and args.merge:
        raise ScenarioError("--resim and --merge: give one of them, not both")
    if args.resim or args.merge:
        return _results(args)
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
    from ..emulation.testbed import terminate_on_sigterm

    terminate_on_sigterm()
    with errors.scope("validate-linux"):
        linuxref.check_machine(cases)
        linuxref.prepare_out(out, args.force, replace=True)
        res = linuxref.run_cases(cases, out=out, repeats=args.repeats, duration_s=args.duration, pcap=args.pcap,
                                 cpu=args.cpu, fifo_priority=None if args.no_realtime else 50,
                                 simulate=not args.no_sim, argv=["xrc", *argv], progress=not args.quiet,
                                 app_nice=linuxref.APP_NICE if args.app_nice is None else args.app_nice,
                                 retake_noisy=args.retake_noisy)
    if not args.quiet:
        print(linuxref.markdown(res))
        print(f"wrote {out}/results.json and {out}/table.md")
    return 0


def _results_path(p: str) -> Path:
    return Path(p) / "results.json" if Path(p).is_dir() else Path(p)


def _results(args: argparse.Namespace) -> int:
    """--resim (the simulated side again) or --merge (results files into one)."""
    from ..emulation import linuxref

    flag = "--resim" if args.resim else "--merge"
    if not args.out:
        raise ScenarioError(f"{flag}: needs --out DIR")
    out = Path(args.out)
    with errors.scope("validate-linux results"):
        if args.resim:
            import shutil
            import tempfile

            rp = _results_path(args.resim)
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
            res = linuxref.merge_results([_results_path(p) for p in args.merge])
            linuxref.prepare_out(out, args.force, replace=False)
    linuxref.write_results(res, out)
    if not args.quiet:
        if args.resim:
            print(linuxref.markdown(res))
        print(f"{len(res['cases'])} cases; wrote {out}/results.json and {out}/table.md")
    return 0
