#!/usr/bin/env python3
"""The whole test suite as ``make test`` runs it (after ``make setup``), in
the order that keeps it short on a small machine:

1. the Rust tests (``make test-rust``: one optimized build with the debug
   checks) under ``SCHED_IDLE``, their output kept, **beside**
2. the realtime Python tests (``-m realtime``: real traffic through network
   namespaces, the kernel's congestion controls) one at a time, at normal
   priority: they wait on the clock most of the time, and the scheduler
   preempts the compiler at once whenever an emulator thread, iperf3 or
   the kernel's work wakes up;
3. then the other Python tests on every core (pytest-xdist).

Not the other Python tests beside the realtime ones: those are CPU-bound
for minutes, and beside them (even at ``SCHED_IDLE``) the shim agent's
decision lag p99 reached 5.4 ms where the tests ask for under 1 ms.

Every group runs even when one before it failed; the exit status is 1 if
any failed. ``--one-after-the-other`` (or a system without ``SCHED_IDLE``)
runs the three in turn.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTEST = [sys.executable, "-m", "pytest", "-q", "-rs"]
REALTIME = [*PYTEST, "-m", "realtime", "tests"]
OTHERS = [*PYTEST, "-n", "auto", "--dist", "loadgroup", "-m", "not realtime", "tests"]
RUST = ["make", "--no-print-directory", "test-rust"]


def _idle() -> None:
    # In the child before exec: cargo, rustc and the test binaries inherit
    # it. Lowering one's own policy needs no privilege.
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


def _say(text: str) -> None:
    print(f"== {text}", flush=True)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--one-after-the-other", action="store_true",
                    help="the Rust tests, then the realtime Python tests, then the others")
    args = ap.parse_args(argv)
    failed = []
    if args.one_after_the_other or not hasattr(os, "SCHED_IDLE"):
        for name, cmd in (("Rust", RUST), ("realtime Python", REALTIME)):
            _say(f"the {name} tests")
            if subprocess.call(cmd, cwd=ROOT):
                failed.append(name)
    else:
        _say("the Rust tests at idle priority (their output follows the realtime tests'), "
             "beside the realtime Python tests")
        with tempfile.TemporaryFile(mode="w+") as log:
            rust = subprocess.Popen(RUST, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_idle,
                                    start_new_session=True)

            def stop(signum, _frame):
                raise KeyboardInterrupt if signum == signal.SIGINT else SystemExit(128 + signum)

            signal.signal(signal.SIGTERM, stop)
            try:
                if subprocess.call(REALTIME, cwd=ROOT):
                    failed.append("realtime Python")
                _say("the Rust tests")
                if rust.wait():
                    failed.append("Rust")
            finally:
                if rust.poll() is None:
                    os.killpg(rust.pid, signal.SIGTERM)
                    try:
                        rust.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        os.killpg(rust.pid, signal.SIGKILL)
                        rust.wait()
                log.seek(0)
                sys.stdout.write(log.read())
                sys.stdout.flush()
    _say("the other Python tests, on every core")
    if subprocess.call(OTHERS, cwd=ROOT):
        failed.append("other Python")
    if failed:
        _say("failed: " + ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
