"""One real run of a ``validate-linux`` case with everything needed to
reconstruct the sender's delivery-rate samples offline.

Usage (root; network namespaces and TUN; nothing else measuring)::

    .venv/bin/python scripts/bbr_rate_probe.py CASE_ID DURATION_S OUT_DIR [--ss-interval S]

Writes into ``OUT_DIR``:

- ``capture.npz``: the emulator's capture, every packet of both
  directions (``Emulator.capture_columns``: read time ``t_in_ns``, write
  time ``t_out_ns``, scheduled release ``t_sched_ns``, direction, fate, TCP
  sequence/ACK/SACK/timestamps), times in ns since the emulator started;
- ``ss.txt``: ``ss -tin`` of the iperf3 connection polled in the sender's
  namespace every ``--ss-interval`` seconds (default 0.05), each block headed
  ``T <CLOCK_REALTIME seconds>``: Linux BBR's own bandwidth estimate
  (``bbr:(bw:...)``), min RTT, gains, cwnd, pacing rate, unacked;
- ``ss-rx.txt`` (with ``--ss-receiver``): ``ss -tinm`` of the same
  connection in the receiver's namespace, same format: the receive side's
  ``rcv_ssthresh``, ``rcv_space``, ``rcv_rtt`` and socket memory
  (``skmem:(r<queued>,rb<rcvbuf>,...)``), the state that decides whether
  the receiver acknowledges at once (``__tcp_ack_snd_check``);
- ``meta.json``: the real-time origin of the capture's clock (to place the
  ``ss`` polls on it), the emulator's timing report, the hypervisor's steal
  time and the load average over the run, the sender's ``nstat`` counters,
  the qdisc and offload settings of both devices;
- ``iperf3.json``.

Analyse with ``scripts/bbr_rate_analysis.py OUT_DIR``. This is the
experiment behind the "BBR on the emulator" part of ``docs/validation.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from xrc.emulation import linuxref as L
from xrc.emulation.testbed import UE_IP, default_emulator_cpu, testbed
from xrc.scenario import from_dict


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("case")
    ap.add_argument("duration_s", type=float)
    ap.add_argument("out", type=Path)
    ap.add_argument("--ss-interval", type=float, default=0.05)
    ap.add_argument("--no-ss", action="store_true", help="do not poll ss (its forks disturb the sender's CPU)")
    ap.add_argument("--ss-receiver", action="store_true",
                    help="also poll ss -tinm in the receiver's namespace (ss-rx.txt): its receive window state")
    ap.add_argument("--no-rps", action="store_true",
                    help="turn Receive Packet Steering off on both devices (the testbed turns it on): each "
                         "namespace's stack then runs inside the emulator's write, on the emulator's CPU")
    ap.add_argument("--app-nice", type=int, default=None, metavar="N",
                    help="run iperf3 (client and server) at niceness N (e.g. -20), so that other work on the "
                         "machine rarely preempts them (SCHED_FIFO starves the namespace's other tasks)")
    a = ap.parse_args()
    cases = {c.id: c for c in L.all_cases()}
    if a.case not in cases:
        print(f"case: unknown {a.case!r}; one of {', '.join(cases)}", file=sys.stderr)
        return 2
    if not (a.duration_s > 1):
        print(f"duration_s: must exceed 1 s, got {a.duration_s}", file=sys.stderr)
        return 2
    if a.app_nice is not None and not (-20 <= a.app_nice <= 19):
        print(f"--app-nice: a niceness -20..19, got {a.app_nice}", file=sys.stderr)
        return 2
    busy = subprocess.run(["pgrep", "-af", "validate-linux|xrc emulate|iperf3"], capture_output=True, text=True).stdout
    if busy.strip():
        print(f"another real-time measurement is running (it would disturb this one):\n{busy}", file=sys.stderr)
        return 1
    case = cases[a.case]
    prefix = ["nice", "-n", str(a.app_nice)] if a.app_nice is not None else []
    out: Path = a.out
    out.mkdir(parents=True, exist_ok=True)
    traces = L.trace_files(case, out / "gen")
    resolved = from_dict(L.sim_scenario(case, a.duration_s, traces)).resolved
    down = traces.downlink.read_text() if traces else None
    up = traces.uplink.read_text() if traces else None
    sysctls = {"net.ipv4.tcp_congestion_control": case.cc, "net.ipv4.tcp_no_metrics_save": "1"}
    cpu = default_emulator_cpu()
    meta: dict = {"case": a.case, "duration_s": a.duration_s, "emulator_cpu": cpu, "app_nice": a.app_nice,
                  "no_rps": a.no_rps, "ss_interval_s": None if a.no_ss else a.ss_interval}
    load0, steal0 = os.getloadavg(), L.cpu_steal_s()
    with testbed(resolved, downlink_text=down, uplink_text=up, sysctls=sysctls, emulator_cpu=cpu) as tb:
        dev = {}
        for side in ("inet", "ue"):
            dev[side] = {
                "qdisc": tb.run(side, ["tc", "qdisc", "show"], timeout=5, check=False).stdout,
                "link": tb.run(side, ["ip", "-d", "link", "show"], timeout=5, check=False).stdout,
            }
        meta["devices"] = dev
        if a.no_rps:
            for side, name in zip(("inet", "ue"), tb.emulator.tun_names):
                tb.run(side, ["sh", "-c", f"echo 0 > /sys/class/net/{name}/queues/rx-0/rps_cpus"], timeout=5)
        meta["rps_cpus"] = {side: tb.run(side, ["sh", "-c", f"cat /sys/class/net/{name}/queues/rx-0/rps_cpus"],
                                         timeout=5, check=False).stdout.strip()
                            for side, name in zip(("inet", "ue"), tb.emulator.tun_names)}
        emu = tb.emulator
        t_mono0, t_real0 = time.monotonic_ns(), time.time_ns()
        emu.start(cpu=cpu, fifo_priority=50)
        t_mono1, t_real1 = time.monotonic_ns(), time.time_ns()
        meta["start_bracket"] = {"monotonic_ns": [t_mono0, t_mono1], "realtime_ns": [t_real0, t_real1]}
        tb.popen("ue", [*prefix, "iperf3", "-s", "-1", "-B", UE_IP], stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL)
        L._wait_listening(tb)
        ss_file = open(out / "ss.txt", "w")
        if not a.no_ss:
            loop = (f"while true; do echo T $(date +%s.%N); ss -tin dst {UE_IP} dport = 5201; "
                    f"sleep {a.ss_interval:g}; done")
            tb.popen("inet", ["sh", "-c", loop], stdout=ss_file, stderr=subprocess.DEVNULL)
        ss_rx = open(out / "ss-rx.txt", "w") if a.ss_receiver and not a.no_ss else None
        if ss_rx is not None:
            loop = (f"while true; do echo T $(date +%s.%N); ss -tinm src {UE_IP} sport = 5201; "
                    f"sleep {a.ss_interval:g}; done")
            tb.popen("ue", ["sh", "-c", loop], stdout=ss_rx, stderr=subprocess.DEVNULL)
        cli = tb.run("inet", [*prefix, "iperf3", "-c", UE_IP, "-t", f"{a.duration_s:g}", "-i", "0.1", "-J"],
                     timeout=a.duration_s + 60, check=False)
        (out / "iperf3.json").write_text(cli.stdout)
        meta["nstat"] = tb.nstat("inet")
        time.sleep(0.2)
        rep = emu.stop()
        tb.stop_processes()
        ss_file.close()
        if ss_rx is not None:
            ss_rx.close()
        cols = {k: (np.frombuffer(v[1], dtype=np.dtype(v[0])) if isinstance(v, tuple) else v)
                for k, v in emu.capture_columns().items()}
        flows = emu.flows()
        # The real-time origin of the capture clock, from a pcap's first
        # packet (the pcap places records at realtime_origin + t).
        emu.write_pcap(str(out / "inet.pcap"), "inet")
    raw = (out / "inet.pcap").read_bytes()
    sec, nsec = int.from_bytes(raw[24:28], "little"), int.from_bytes(raw[28:32], "little")
    first = sec * 1_000_000_000 + nsec
    down_in = cols["t_in_ns"][cols["dir"] == 0]
    up_out = cols["t_out_ns"][(cols["dir"] == 1) & (cols["fate"] == 0)]
    t_first = min(int(down_in.min()) if len(down_in) else 1 << 62, int(up_out.min()) if len(up_out) else 1 << 62)
    meta["realtime_origin_ns"] = first - t_first
    (out / "inet.pcap").unlink()
    np.savez_compressed(out / "capture.npz", **cols)
    meta["flows"] = flows
    meta["emulator_report"] = rep
    meta["load_before_after"] = [load0, os.getloadavg()]
    steal1 = L.cpu_steal_s()
    meta["steal_s"] = {k: round(steal1[k] - steal0.get(k, 0.0), 3) for k in steal1}
    meta["iperf3_rc"] = cli.returncode
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    rel = rep["release_error"]
    print(f"{a.case}: release error p50/p99/max {rel['p50_us']:.0f}/{rel['p99_us']:.0f}/{rel['max_us']:.0f} us, "
          f"late {rel['late']}, stalls {rep['stalls']} ({rep['stalled_ms']:.1f} ms), steal {meta['steal_s']}, "
          f"load {meta['load_before_after']}")
    return 0 if cli.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
