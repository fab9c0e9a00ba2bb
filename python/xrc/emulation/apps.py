"""The applications of a scenario's non-bulk flows under ``xrc emulate``:
a transfer (``traffic.kind = "transfer"``: ``size_bytes``, then close) and
the ON/OFF video source (``traffic.kind = "video"``), as real programs on
real kernel sockets, and the sink that receives them. Bulk flows are
``iperf3`` (:mod:`xrc.emulation.emulate`).

Each runs as its own process inside a namespace of the emulator, as a
script (it needs the standard library only, so it starts in tens of
milliseconds)::

    python apps.py sink --bind IP --port P --out FILE --until T
    python apps.py send --dst IP --port P --cc CC --out FILE --until T [--at T0]
                                      (--bytes N | --video PERIOD_S,ON_S,RATE_MBPS)
                                      [--mss N] [--nodelay]

``--until`` is an absolute ``CLOCK_MONOTONIC`` time in ns (both namespaces
share the host's clock): every loop ends by then, whatever the network
does. ``--at`` is when the sender starts (it is started early and waits,
so that the interpreter's start-up does not delay the flow). Each process writes its log as JSON to ``--out`` when it ends
(normally, at ``--until``, or on SIGTERM).

* **sink**: accepts one connection and reads until the sender closes it;
  logs the monotonic time of every read and the bytes received so far
  (when the receiving application got each byte: what the simulator's
  ``fct_s`` and ``delivered_s`` measure).
* **send --bytes N**: writes N bytes as fast as the socket takes them,
  then closes its side (a transfer; the completion time is the sink's).
* **send --video**: the simulator's source (``traffic::VideoSource``):
  a chunk of ``round(rate · on_s / 8)`` bytes written in 1-ms ticks of
  ``ceil(chunk / (on_s · 1000))`` bytes, the next chunk at
  ``max(start + period, delivered)``. Deviation: the source cannot see the
  receiving application, so "delivered" is when the kernel says every
  byte written has been acknowledged (``SIOCOUTQ`` = 0); the sink's log
  gives the true delivery time for the outputs. A tick the socket cannot
  take whole carries the rest over (the simulator's sender has an
  unbounded buffer; this one has the kernel's).

The congestion control is set per socket (``TCP_CONGESTION``), as are
``TCP_MAXSEG`` and ``TCP_NODELAY`` when the scenario asks for them.
"""

from __future__ import annotations

import argparse
import errno
import fcntl
import json
import math
import signal
import socket
import struct
import sys
import time

SIOCOUTQ = 0x5411  # TIOCOUTQ: bytes in the send queue not yet acknowledged
READ_SIZE = 1 << 16


class _Stop(Exception):
    pass


def _on_term(*_):
    raise _Stop


def _now() -> int:
    return time.monotonic_ns()


def _write(path: str, obj: dict) -> None:
    with open(path, "w") as f:
        json.dump(obj, f)


def sink(bind: str, port: int, out: str, until_ns: int) -> int:
    log: dict = {"role": "sink", "accepted_ns": None, "reads": [], "eof_ns": None}
    t_read, cum_read = [], []
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((bind, port))
        srv.listen(1)
        log["listening_ns"] = _now()
        _write(out, log)  # tells the caller the port is open
        conn = None
        while conn is None:
            left = (until_ns - _now()) / 1e9
            if left <= 0:
                return 0
            srv.settimeout(min(left, 0.5))
            try:
                conn, _ = srv.accept()
            except socket.timeout:
                continue
        log["accepted_ns"] = _now()
        total = 0
        with conn:
            while True:
                left = (until_ns - _now()) / 1e9
                if left <= 0:
                    break
                conn.settimeout(min(left, 0.5))
                try:
                    b = conn.recv(READ_SIZE)
                except socket.timeout:
                    continue
                if not b:
                    log["eof_ns"] = _now()
                    break
                total += len(b)
                t_read.append(_now())
                cum_read.append(total)
    except _Stop:
        pass
    finally:
        srv.close()
        log["reads"] = [t_read, cum_read]
        _write(out, log)
    return 0


def _socket(dst: str, port: int, cc: str, mss: int | None, nodelay: bool, until_ns: int) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    if mss:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, mss)
    if nodelay:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(max((until_ns - _now()) / 1e9, 0.001))
    s.connect((dst, port))
    s.setblocking(False)
    return s


def _unacked(s: socket.socket) -> int:
    return struct.unpack("i", fcntl.ioctl(s.fileno(), SIOCOUTQ, b"\0\0\0\0"))[0]


def _push(s: socket.socket, owed: int, zeros: memoryview) -> int:
    """Writes up to ``owed`` bytes without blocking; returns how many."""
    done = 0
    while done < owed:
        try:
            n = s.send(zeros[: min(owed - done, len(zeros))])
        except BlockingIOError:
            break
        except OSError as e:
            if e.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                break
            raise
        done += n
    return done


def send(dst: str, port: int, cc: str, out: str, until_ns: int, *, size: int | None,
         video: tuple[float, float, float] | None, mss: int | None, nodelay: bool, at_ns: int | None = None) -> int:
    log: dict = {"role": "send", "start_ns": None, "connected_ns": None, "written": 0, "closed_ns": None,
                 "chunks": []}
    zeros = memoryview(bytes(1 << 18))
    s = None
    try:
        if at_ns is not None:
            time.sleep(max(min(at_ns, until_ns) - _now(), 0) / 1e9)
        log["start_ns"] = _now()
        s = _socket(dst, port, cc, mss, nodelay, until_ns)
        log["connected_ns"] = _now()
        if size is not None:
            while log["written"] < size and _now() < until_ns:
                log["written"] += _push(s, size - log["written"], zeros)
                if log["written"] < size:
                    time.sleep(0.0005)
            if log["written"] >= size:
                s.shutdown(socket.SHUT_WR)
                log["closed_ns"] = _now()
                # Until every byte is acknowledged (or the run ends).
                while _unacked(s) > 0 and _now() < until_ns:
                    time.sleep(0.001)
        else:
            period, on, rate = video
            chunk = max(round(rate * 1e6 / 8 * on), 1)
            ticks = max(round(on * 1e3), 1)
            per_tick = math.ceil(chunk / ticks)
            start = log["start_ns"]
            while start < until_ns:
                c = {"start_ns": start, "written_ns": None, "acked_ns": None}
                log["chunks"].append(c)
                end_byte = log["written"] + chunk
                owed = 0
                tick = start
                while log["written"] < end_byte and _now() < until_ns:
                    owed = min(owed + per_tick, end_byte - log["written"])
                    n = _push(s, owed, zeros)
                    log["written"] += n
                    owed -= n
                    tick += 1_000_000
                    time.sleep(max(tick - _now(), 0) / 1e9)
                if log["written"] < end_byte:
                    break
                c["written_ns"] = _now()
                while _unacked(s) > 0 and _now() < until_ns:
                    time.sleep(0.001)
                if _unacked(s) > 0:
                    break
                c["acked_ns"] = _now()
                start = max(start + round(period * 1e9), _now())
                time.sleep(max(start - _now(), 0) / 1e9)
    except _Stop:
        pass
    finally:
        if s is not None:
            s.close()
        _write(out, log)
    return 0


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _on_term)
    ap = argparse.ArgumentParser(prog="apps.py")
    sub = ap.add_subparsers(dest="role", required=True)
    k = sub.add_parser("sink")
    k.add_argument("--bind", required=True)
    k.add_argument("--port", type=int, required=True)
    k.add_argument("--out", required=True)
    k.add_argument("--until", type=int, required=True, help="CLOCK_MONOTONIC ns")
    d = sub.add_parser("send")
    d.add_argument("--dst", required=True)
    d.add_argument("--port", type=int, required=True)
    d.add_argument("--cc", required=True)
    d.add_argument("--out", required=True)
    d.add_argument("--until", type=int, required=True, help="CLOCK_MONOTONIC ns")
    d.add_argument("--at", type=int, default=None, help="CLOCK_MONOTONIC ns to start at")
    g = d.add_mutually_exclusive_group(required=True)
    g.add_argument("--bytes", type=int)
    g.add_argument("--video", help="PERIOD_S,ON_S,RATE_MBPS")
    d.add_argument("--mss", type=int)
    d.add_argument("--nodelay", action="store_true")
    a = ap.parse_args(argv)
    if a.role == "sink":
        return sink(a.bind, a.port, a.out, a.until)
    video = None
    if a.video is not None:
        try:
            video = tuple(float(x) for x in a.video.split(","))
        except ValueError:
            video = ()
        if len(video) != 3 or not (0 < video[1] <= video[0]) or video[2] <= 0:
            ap.error(f"--video: PERIOD_S,ON_S,RATE_MBPS with 0 < ON_S <= PERIOD_S and RATE_MBPS > 0, got {a.video!r}")
    if a.bytes is not None and a.bytes < 1:
        ap.error(f"--bytes must be at least 1, got {a.bytes}")
    return send(a.dst, a.port, a.cc, a.out, a.until, size=a.bytes, video=video, mss=a.mss, nodelay=a.nodelay,
                at_ns=a.at)


if __name__ == "__main__":
    sys.exit(main())
