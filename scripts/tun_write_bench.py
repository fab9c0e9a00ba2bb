#!/usr/bin/env python3
"""What a TUN write costs on this host, by its place in a batch.

The emulator writes the packets a cell releases at one instant (a transport
block's) back to back, so the k-th of a batch is as late as the writes
before it took. This measures that cost alone, without the emulator: a
TUN device in a network namespace of its own, batches of ``--batch`` UDP
packets to a local address written every millisecond from CPU 0, with
Receive Packet Steering to CPU 1 or off, and a receiving process pinned
to CPU 1 or none. It prints the median and p90 duration of ``write`` by
position in the batch.

    sudo .venv/bin/python scripts/tun_write_bench.py            # the four set-ups
    sudo .venv/bin/python scripts/tun_write_bench.py --rps 0 --receiver udp

Needs root, TUN and two CPUs. The namespace (and with it the device) is
removed on every way out.
"""

from __future__ import annotations

import argparse
import ctypes
import fcntl
import os
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000
CLONE_NEWNET = 0x40000000


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns")


def _checksum(b: bytes) -> int:
    t = sum(struct.unpack(f"!{len(b) // 2}H", b))
    t = (t >> 16) + (t & 0xFFFF)
    return ~(t + (t >> 16)) & 0xFFFF


def _packet() -> bytes:
    payload = b"x" * 1400
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28 + len(payload), 1, 0, 64, 17, 0,
                     socket.inet_aton("10.99.0.2"), socket.inet_aton("10.99.0.1"))
    ip = ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:]
    return ip + struct.pack("!HHHH", 5000, 9000, 8 + len(payload), 0) + payload


def measure(rps: bool, receiver: bool, batch: int, batches: int) -> list[list[float]]:
    """Write durations in µs, one list per position in the batch."""
    ns, dev = f"xrctwb{os.getpid()}", f"xtwb{os.getpid() % 100000}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    child = None
    here = os.open("/proc/self/ns/net", os.O_RDONLY)
    try:
        there = os.open(f"/run/netns/{ns}", os.O_RDONLY)
        _setns(there)
        try:
            tun = os.open("/dev/net/tun", os.O_RDWR)
            fcntl.ioctl(tun, TUNSETIFF, struct.pack("16sH", dev.encode(), IFF_TUN | IFF_NO_PI))
            sock = None
            if receiver:
                sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        finally:
            _setns(here)
        sh = ["ip", "netns", "exec", ns]
        subprocess.run(sh + ["ip", "addr", "add", "10.99.0.1", "peer", "10.99.0.2/32", "dev", dev], check=True)
        subprocess.run(sh + ["ip", "link", "set", dev, "up"], check=True)
        subprocess.run(sh + ["sh", "-c", f"echo {2 if rps else 0} > /sys/class/net/{dev}/queues/rx-0/rps_cpus"],
                       check=True)
        if sock is not None:
            sock.bind(("10.99.0.1", 9000))
            child = os.fork()
            if child == 0:
                os.sched_setaffinity(0, {1})
                while True:
                    sock.recv(2048)
        os.sched_setaffinity(0, {0})
        pkt = _packet()
        out: list[list[float]] = [[] for _ in range(batch)]
        due = time.perf_counter()
        for _ in range(batches):
            due += 0.001
            while time.perf_counter() < due:
                pass
            for k in range(batch):
                t0 = time.perf_counter_ns()
                os.write(tun, pkt)
                out[k].append((time.perf_counter_ns() - t0) / 1000)
        return out
    finally:
        if child:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
        subprocess.run(["ip", "netns", "del", ns], check=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rps", choices=["0", "1"], help="Receive Packet Steering to CPU 1 (1) or off (0); default both")
    ap.add_argument("--receiver", choices=["none", "udp"], help="a UDP receiver on CPU 1 or none; default both")
    ap.add_argument("--batch", type=int, default=6, help="packets per batch (default 6: an LTE block at 64 Mbit/s)")
    ap.add_argument("--batches", type=int, default=3000, help="batches, one per millisecond (default 3000)")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("tun_write_bench: needs root (network namespaces, TUN)", file=sys.stderr)
        return 2
    if len(os.sched_getaffinity(0)) < 2 or not {0, 1} <= os.sched_getaffinity(0):
        print("tun_write_bench: needs CPUs 0 and 1", file=sys.stderr)
        return 2
    if not 1 <= a.batch <= 64 or not 1 <= a.batches <= 100_000:
        print(f"tun_write_bench: --batch must be in [1, 64] and --batches in [1, 100000], got {a.batch}, "
              f"{a.batches}", file=sys.stderr)
        return 2
    for rps in ([a.rps == "1"] if a.rps else [False, True]):
        for rx in ([a.receiver == "udp"] if a.receiver else [False, True]):
            pos = measure(rps, rx, a.batch, a.batches)
            cells = " ".join(f"{statistics.median(v):.1f}/{sorted(v)[int(0.9 * len(v))]:.1f}" for v in pos)
            print(f"RPS {'to CPU 1' if rps else 'off':8} receiver {'on CPU 1' if rx else 'none':8}: "
                  f"write µs by position (median/p90): {cells}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
