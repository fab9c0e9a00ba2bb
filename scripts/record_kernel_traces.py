#!/usr/bin/env python3
"""Records the kernel XRC traces that tests/test_kernel.py replays without
root (tests/data/kernel/), as root, on a kernel with BPF struct_ops:

    sudo .venv/bin/python scripts/record_kernel_traces.py

- ``fig1-xrc-trace.bin.gz``: 6 s of the XRC paper's Fig. 1 cell, the kernel's
  ``xrc`` through the emulated base station (``xrc emulate ... --kernel-trace``);
- ``loss-xrc-trace.bin.gz``: 6 s over a 6 Mbit/s wired link with a
  20-packet buffer while fixed feedback says 40 Mbit/s, switched off from 3
  to 4.5 s (``feedback_timeout_ms = 300``): losses, recovery, and the fall
  back to standard TCP.

Record them again whenever ``crates/xrc-kernel/bpf/xrc.bpf.c`` changes what
it does or what it traces.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "kernel"

#: The loss case's set-up, shared with tests/test_kernel.py.
LOSS_LINK = {"delay_ms": 20, "rate_mbps": 6, "buffer_packets": 20}
LOSS_FEEDBACK = {"xrc_fixed_kbps": 40_000, "xrc_fixed_hol_tenths": 5, "xrc_off_from_ms": 3000,
                 "xrc_off_until_ms": 4500}
LOSS_CC = {"feedback_timeout_ms": 300}


def record_loss(trace: Path, seconds: float = 6.0) -> None:
    """The loss case, its trace written to `trace`."""
    from xrc.emulation import emulate as em
    from xrc.emulation.testbed import default_emulator_cpu, testbed
    from xrc.kernel import loaded
    from xrc.scenario import from_dict

    resolved = from_dict({"seed": 1, "duration_s": seconds + 2, "topology": "wired", "internet": LOSS_LINK,
                          "flows": [{"cc": "cubic"}]}).resolved
    cpu = default_emulator_cpu()
    with loaded(LOSS_CC, trace):
        with testbed(resolved, sysctls={"net.ipv4.tcp_congestion_control": "cubic"}, emulator_cpu=cpu,
                     options=LOSS_FEEDBACK) as tb:
            tb.popen("ue", ["iperf3", "-s", "-1", "-B", tb.ue_ip], stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
            em._wait_listening(tb, 5201)
            tb.emulator.start(cpu=cpu, fifo_priority=50)
            tb.run("inet", ["iperf3", "-c", tb.ue_ip, "-C", "xrc", "-t", f"{seconds}"], timeout=seconds + 60)
            tb.emulator.stop()


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        run = Path(d) / "fig1"
        subprocess.run([sys.executable, "-m", "xrc.cli", "emulate", "paper/fig1-time-varying", "--set",
                        "flows.0.cc=xrc", "--set", "duration_s=6", "--out", str(run), "--kernel-trace", "--quiet"],
                       check=True)
        (OUT / "fig1-xrc-trace.bin.gz").write_bytes(gzip.compress((run / "kernel-trace.bin").read_bytes(), 9, mtime=0))
        loss = Path(d) / "loss.bin"
        record_loss(loss)
        (OUT / "loss-xrc-trace.bin.gz").write_bytes(gzip.compress(loss.read_bytes(), 9, mtime=0))
        shutil.rmtree(run)
    for f in sorted(OUT.glob("*.gz")):
        print(f"wrote {f.relative_to(ROOT)} ({f.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
