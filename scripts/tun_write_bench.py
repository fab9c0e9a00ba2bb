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
    sudo .venv/bin/python scripts/tun_write_bench.py --device veth --batch 64

``--device veth`` measures the alternative the emulator did not take: a
veth pair between two namespaces of its own, the same packets sent as
Ethernet frames through an ``AF_PACKET`` socket bound to one end (with
``PACKET_QDISC_BYPASS``), one ``send`` per packet and, beside it, one
``sendmmsg`` per batch (the time until the whole batch is handed over,
which is when its last packet leaves). ``--device both`` alternates the
two.

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


SOL_PACKET, PACKET_QDISC_BYPASS, ETH_P_IP = 263, 20, 0x0800


def _receiver(sock: socket.socket) -> int:
    """Forks a process on CPU 1 that reads ``sock`` forever; its pid."""
    child = os.fork()
    if child == 0:
        os.sched_setaffinity(0, {1})
        while True:
            sock.recv(2048)
    return child


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class _Msghdr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32), ("iov", ctypes.POINTER(_Iovec)),
                ("iovlen", ctypes.c_size_t), ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]


class _Mmsghdr(ctypes.Structure):
    _fields_ = [("hdr", _Msghdr), ("len", ctypes.c_uint)]


def measure_veth(rps: bool, receiver: bool, batch: int, batches: int) -> tuple[list[list[float]], list[float]]:
    """Per-packet ``send`` durations by position (µs), and the duration of
    one ``sendmmsg`` of the whole batch (µs), alternating batch by batch,
    through a veth pair between two namespaces created here."""
    pid = os.getpid()
    ns_tx, ns_rx = f"xrctwbt{pid}", f"xrctwbr{pid}"
    a, b = f"xtwa{pid % 100000}", f"xtwb{pid % 100000}"
    child = None
    here = os.open("/proc/self/ns/net", os.O_RDONLY)
    try:
        for ns in (ns_tx, ns_rx):
            subprocess.run(["ip", "netns", "add", ns], check=True)
        tx, rx = ["ip", "netns", "exec", ns_tx], ["ip", "netns", "exec", ns_rx]
        subprocess.run(tx + ["ip", "link", "add", a, "type", "veth", "peer", "name", b, "netns", ns_rx], check=True)
        subprocess.run(tx + ["ip", "link", "set", a, "up"], check=True)
        subprocess.run(rx + ["ip", "addr", "add", "10.99.0.1/24", "dev", b], check=True)
        subprocess.run(rx + ["ip", "link", "set", b, "up"], check=True)
        subprocess.run(rx + ["sh", "-c", f"echo {2 if rps else 0} > /sys/class/net/{b}/queues/rx-0/rps_cpus"],
                       check=True)
        mac_b = bytes.fromhex(subprocess.run(rx + ["cat", f"/sys/class/net/{b}/address"], check=True,
                                             capture_output=True, text=True).stdout.strip().replace(":", ""))
        mac_a = bytes.fromhex(subprocess.run(tx + ["cat", f"/sys/class/net/{a}/address"], check=True,
                                             capture_output=True, text=True).stdout.strip().replace(":", ""))
        _setns(os.open(f"/run/netns/{ns_tx}", os.O_RDONLY))
        try:
            ps = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP))
            ps.bind((a, ETH_P_IP))
            ps.setsockopt(SOL_PACKET, PACKET_QDISC_BYPASS, 1)
        finally:
            _setns(here)
        sock = None
        if receiver:
            _setns(os.open(f"/run/netns/{ns_rx}", os.O_RDONLY))
            try:
                sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                sock.bind(("10.99.0.1", 9000))
            finally:
                _setns(here)
            child = _receiver(sock)
        os.sched_setaffinity(0, {0})
        frame = mac_b + mac_a + struct.pack("!H", ETH_P_IP) + _packet()
        buf = ctypes.create_string_buffer(frame, len(frame))
        iov = (_Iovec * batch)(*[_Iovec(ctypes.addressof(buf), len(frame)) for _ in range(batch)])
        msgs = (_Mmsghdr * batch)()
        for k in range(batch):
            msgs[k].hdr.iov = ctypes.pointer(iov[k])
            msgs[k].hdr.iovlen = 1
        libc = ctypes.CDLL(None, use_errno=True)
        fd = ps.fileno()
        per: list[list[float]] = [[] for _ in range(batch)]
        whole: list[float] = []
        due = time.perf_counter()
        for n in range(batches):
            due += 0.001
            while time.perf_counter() < due:
                pass
            if n % 2 == 0:
                for k in range(batch):
                    t0 = time.perf_counter_ns()
                    ps.send(frame)
                    per[k].append((time.perf_counter_ns() - t0) / 1000)
            else:
                t0 = time.perf_counter_ns()
                sent = libc.sendmmsg(fd, msgs, batch, 0)
                whole.append((time.perf_counter_ns() - t0) / 1000)
                if sent != batch:
                    raise OSError(ctypes.get_errno(), f"sendmmsg sent {sent} of {batch}")
        return per, whole
    finally:
        if child:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
        for ns in (ns_tx, ns_rx):
            subprocess.run(["ip", "netns", "del", ns], check=False)


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
            child = _receiver(sock)
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


def _summary(pos: list[list[float]]) -> str:
    """Median/p90 µs by position (at most the first 6 and the last), and
    the batch's total (the time its last packet is handed over)."""
    totals = [sum(col) for col in zip(*pos)]
    shown = pos if len(pos) <= 7 else [*pos[:6], pos[-1]]
    cells = " ".join(f"{statistics.median(v):.1f}/{sorted(v)[int(0.9 * len(v))]:.1f}" for v in shown)
    more = " ..." if len(pos) > 7 else ""
    return (f"µs by position (median/p90): {cells.rsplit(' ', 1)[0] + more + ' ' + cells.rsplit(' ', 1)[1] if more else cells}; "
            f"whole batch median/p90 {statistics.median(totals):.1f}/{sorted(totals)[int(0.9 * len(totals))]:.1f} µs")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rps", choices=["0", "1"], help="Receive Packet Steering to CPU 1 (1) or off (0); default both")
    ap.add_argument("--receiver", choices=["none", "udp"], help="a UDP receiver on CPU 1 or none; default both")
    ap.add_argument("--batch", type=int, default=6, help="packets per batch (default 6: an LTE block at 64 Mbit/s)")
    ap.add_argument("--batches", type=int, default=3000, help="batches, one per millisecond (default 3000)")
    ap.add_argument("--device", choices=["tun", "veth", "both"], default="tun",
                    help="TUN writes (default), veth AF_PACKET send/sendmmsg, or both alternated per set-up")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("tun_write_bench: needs root (network namespaces, TUN)", file=sys.stderr)
        return 2
    if len(os.sched_getaffinity(0)) < 2 or not {0, 1} <= os.sched_getaffinity(0):
        print("tun_write_bench: needs CPUs 0 and 1", file=sys.stderr)
        return 2
    if not 1 <= a.batch <= 512 or not 1 <= a.batches <= 100_000:
        print(f"tun_write_bench: --batch must be in [1, 512] and --batches in [1, 100000], got {a.batch}, "
              f"{a.batches}", file=sys.stderr)
        return 2
    for rps in ([a.rps == "1"] if a.rps else [False, True]):
        for rx in ([a.receiver == "udp"] if a.receiver else [False, True]):
            setup = f"RPS {'to CPU 1' if rps else 'off':8} receiver {'on CPU 1' if rx else 'none':8}"
            if a.device in ("tun", "both"):
                pos = measure(rps, rx, a.batch, a.batches)
                print(f"TUN  {setup}: {_summary(pos)}", flush=True)
            if a.device in ("veth", "both"):
                per, whole = measure_veth(rps, rx, a.batch, a.batches)
                print(f"veth {setup}: send, {_summary(per)}; one sendmmsg of {a.batch}: median/p90 "
                      f"{statistics.median(whole):.1f}/{sorted(whole)[int(0.9 * len(whole))]:.1f} µs", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
