"""How accurately the real-time emulator keeps time on this host: the
timing half of the emulator's tests, which cannot be a pass/fail test on a
shared machine (CPU steal, timer slack and the scheduler all add delay),
printed by ``make bench`` instead.

Two measurements, each through a fresh pair of namespaces:

- 50 pings through a 1 Gbit/s path with 10 ms each way: the round trip
  real ping measures against the 20 ms the model holds, and the emulator's
  own release error (``t_out − t_sched``) per packet;
- a 5 s iperf3 (CUBIC) through a 20 Mbit/s, 5 ms path: goodput against the
  19.31 Mbit/s of payload that 1500-byte packets at 20 Mbit/s carry.

Needs root, TUN and iperf3/ping (``make setup-linux-ref``); prints why it
skips otherwise.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import numpy as np

from ..scenario import from_dict
from . import testbed as tbmod


def _wired(rate_mbps: float, delay_ms: float) -> dict:
    return from_dict({"seed": 1, "duration_s": 10, "topology": "wired",
                      "internet": {"rate_mbps": rate_mbps, "delay_ms": delay_ms, "buffer_packets": 100},
                      "flows": [{"cc": "cubic"}]}).resolved


def _steal_s() -> float:
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[8]) / 100.0  # USER_HZ


def _release_error_us(emu) -> np.ndarray:
    cols = emu.capture_columns()
    t_out = np.frombuffer(cols["t_out_ns"][1], dtype=np.dtype(cols["t_out_ns"][0])).astype(np.int64)
    t_sched = np.frombuffer(cols["t_sched_ns"][1], dtype=np.dtype(cols["t_sched_ns"][0])).astype(np.int64)
    fate = np.frombuffer(cols["fate"][1], dtype=np.dtype(cols["fate"][0]))
    return (t_out - t_sched)[fate == 0] / 1e3


def main() -> int:
    missing = tbmod.missing_requirements(("ip", "ss", "sysctl", "ping", "iperf3"))
    if missing:
        print("emulator timing: skipped; needs " + "; ".join(missing))
        return 0
    cpu = tbmod.default_emulator_cpu()
    steal0 = _steal_s()
    with tbmod.testbed(_wired(1000.0, 10.0), emulator_cpu=cpu) as tb:
        tb.emulator.start(cpu=cpu, fifo_priority=50)
        r = tb.run("inet", ["ping", "-n", "-c", "50", "-i", "0.02", tb.ue_ip], timeout=30)
        tb.emulator.stop()
        err = _release_error_us(tb.emulator)
    rtt = np.array([float(x) for x in re.findall(r"time=([\d.]+) ms", r.stdout)])
    print(f"emulator ping, 10 ms each way: {rtt.size} replies, RTT median {np.median(rtt):.3f} ms "
          f"(excess {np.median(rtt) - 20:+.3f} ms), p95 {np.percentile(rtt, 95):.3f} ms; "
          f"release error median {np.median(err):.1f} us, p99 {np.percentile(err, 99):.1f} us, "
          f"max {err.max():.1f} us")
    sysctls = {"net.ipv4.tcp_congestion_control": "cubic", "net.ipv4.tcp_no_metrics_save": "1"}
    with tbmod.testbed(_wired(20.0, 5.0), sysctls=sysctls, emulator_cpu=cpu) as tb:
        tb.emulator.start(cpu=cpu, fifo_priority=50)
        tb.popen("ue", ["iperf3", "-s", "-1", "-B", tb.ue_ip],
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 5
        while not tb.run("ue", ["ss", "-Hltn", "sport = :5201"], timeout=5).stdout.strip():
            if time.monotonic() > deadline:
                print("emulator iperf3: the server did not start within 5 s", file=sys.stderr)
                return 1
            time.sleep(0.05)
        j = json.loads(tb.run("inet", ["iperf3", "-c", tb.ue_ip, "-t", "5", "-J"], timeout=35).stdout)
        tb.emulator.stop()
        err = _release_error_us(tb.emulator)
    got = j["end"]["sum_received"]["bits_per_second"] / 1e6
    print(f"emulator iperf3 CUBIC, 20 Mbit/s: {got:.2f} Mbit/s of 19.31 ({got / 19.31 - 1:+.1%}); "
          f"release error median {np.median(err):.1f} us, p99 {np.percentile(err, 99):.1f} us")
    print(f"hypervisor steal during the two: {_steal_s() - steal0:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
