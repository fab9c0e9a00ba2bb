#!/usr/bin/env python3
"""Sends SIGTERM to `xrc run` at random points of its execution and checks
what each run left: exit 143 with "terminated", no traceback, no
"Exception ignored" report, no run directory and no staging directory.

The points are Python function calls, counted by a trace function in the
child process (the signal is sent by the child to itself at the N-th
call), so every phase is reached in proportion to the calls it makes:
imports, argument checks, the simulation loop, Parquet writing, plots and
the commit. A timer would mostly land in the simulation.

    python scripts/sigterm_scan.py --points 300 [--seed 1] [-- SCENARIO --set ...]

Prints the outcomes and the first few bad ones; exits 1 if any.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import shutil
import subprocess
import sys
import tempfile

CHILD = r"""
import os, signal, sys
n, N = 0, int(sys.argv[1])
def trace(frame, event, arg):
    global n
    n += 1
    if n == N:
        sys.settrace(None)
        os.kill(os.getpid(), signal.SIGTERM)
    return None
sys.argv = ["xrc", *sys.argv[2:]]
from xrc.cli import main
if N != 0:
    sys.settrace(trace)
rc = main()
sys.settrace(None)
print(f"CALLS={n}", file=sys.stderr)
sys.exit(rc)
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("scenario", nargs="*", default=["validation/dumbbell-20mbit-40ms", "--set", "duration_s=2"])
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="xrc-sigterm-scan-")
    try:
        def child(n: int, out: str) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-c", CHILD, str(n), "run", *a.scenario, "--out", out],
                                  capture_output=True, text=True, timeout=300, cwd=work)

        # Counting the calls of an undisturbed run (main imports first, as
        # the injected runs do).
        r = child(-1, "count")
        if r.returncode != 0:
            print(r.stderr, file=sys.stderr)
            return 1
        shutil.rmtree(os.path.join(work, "count"))
        calls = int(r.stderr.rsplit("CALLS=", 1)[1].split()[0])
        # The trace counts only calls made after main is imported.
        rng = random.Random(a.seed)
        outcomes: collections.Counter = collections.Counter()
        bad = []
        for i, n in enumerate(sorted(rng.randrange(1, calls) for _ in range(a.points))):
            out = f"r{i}"
            r = child(n, out)
            left = sorted(p for p in os.listdir(work) if p != out and out in p)
            key = (r.returncode,
                   "Traceback" in r.stderr, "Exception ignored" in r.stderr,
                   os.path.exists(os.path.join(work, out)), bool(left))
            outcomes[key] += 1
            if key != (143, False, False, False, False) or "terminated (SIGTERM)" not in r.stderr:
                bad.append((n, key, r.stderr[-1200:]))
            shutil.rmtree(os.path.join(work, out), ignore_errors=True)
            for p in left:
                shutil.rmtree(os.path.join(work, p), ignore_errors=True)
        print(f"{a.points} SIGTERMs at random calls of {calls} (seed {a.seed}):")
        for (rc, tb, ign, out, left), k in sorted(outcomes.items()):
            print(f"  {k:4d}  exit {rc}, traceback {tb}, 'Exception ignored' {ign}, run directory {out}, "
                  f"staging left {left}")
        for n, key, err in bad[:5]:
            print(f"\n-- call {n}: {key}\n{err}")
        return 1 if bad else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
