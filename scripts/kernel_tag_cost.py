#!/usr/bin/env python3
"""What the keyed tag costs the kernel's XRC per ACK: the option parser's
run time (xrc_sockops, the BPF program that reads the option from every
ACK) with and without the tag, on the same transfer, as the kernel counts
it (BPF_ENABLE_STATS: run count and run time of each program).

    sudo .venv/bin/python scripts/kernel_tag_cost.py [--seconds 5] [--repeats 3]

A 20 Mbit/s wired link, fixed feedback of 20 Mbit/s, iperf3 with the
kernel's xrc; the runs with and without the tag alternate. Prints the
parser's mean ns per call for each, and the difference.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

KEY = "000102030405060708090a0b0c0d0e0f"


def one(seconds: float, tagged: bool) -> tuple[int, int]:
    from xrc import _core
    from xrc.emulation import emulate as em
    from xrc.emulation.testbed import default_emulator_cpu, testbed
    from xrc.kernel import loaded
    from xrc.scenario import from_dict

    resolved = from_dict({"seed": 1, "duration_s": seconds + 5, "topology": "wired",
                          "internet": {"delay_ms": 20, "rate_mbps": 20, "buffer_packets": 400},
                          "flows": [{"cc": "cubic"}]}).resolved
    opts = {"xrc_fixed_kbps": 20_000, "xrc_fixed_hol_tenths": 0, **({"xrc_tag_key": KEY} if tagged else {})}
    cpu = default_emulator_cpu()
    stats = _core.KernelRunStats()
    try:
        with loaded(None, tag_key=KEY if tagged else None):
            with testbed(resolved, emulator_cpu=cpu, options=opts) as tb:
                tb.popen("ue", ["iperf3", "-s", "-1", "-B", tb.ue_ip], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
                em._wait_listening(tb, 5201)
                tb.emulator.start(cpu=cpu, fifo_priority=50)
                tb.run("inet", ["iperf3", "-c", tb.ue_ip, "-C", "xrc", "-t", f"{seconds}"], timeout=seconds + 60)
                tb.emulator.stop()
                got = {n: (c, t) for n, c, t in _core.kernel_program_stats()}
    finally:
        stats.close()
    return got["xrc_sockops"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    per = {False: [], True: []}
    for _ in range(a.repeats):
        for tagged in (False, True):
            calls, ns = one(a.seconds, tagged)
            per[tagged].append(ns / max(calls, 1))
            print(f"{'tagged' if tagged else 'plain '}: {calls} calls, {ns / max(calls, 1):.0f} ns per call",
                  file=sys.stderr)
    plain, tagged = statistics.median(per[False]), statistics.median(per[True])
    print(f"option parser (xrc_sockops), median of {a.repeats}: {plain:.0f} ns per call without the tag, "
          f"{tagged:.0f} ns with it: the tag costs {tagged - plain:.0f} ns per ACK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
