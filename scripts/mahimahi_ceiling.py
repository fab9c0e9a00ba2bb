#!/usr/bin/env python3
"""Mahimahi's forwarding ceiling, measured as ``python -m xrc.emulation.bench
--ceiling`` measures xrc's emulator (docs/emulation.md, "Forwarding
ceiling, against Mahimahi"): ``mm-delay 40 mm-link C C`` with a constant
trace ``C`` of each rate (``R/12`` 1500-byte opportunities per millisecond,
a 12-ms period), drop-tail queues of two bandwidth-delay products both
ways, and four parallel CUBIC iperf3 streams from the host into the shell
(``-R``: Mahimahi's downlink) for 6 s, the first omitted. Prints goodput
against the link's payload rate and the CPU time of Mahimahi's own
processes (every process whose name starts with ``mm-``, polled).

Mahimahi is not part of the project and cannot be installed from the
package registries: build it from a copy of ``ravinet/mahimahi`` for this
measurement only and pass its ``bin`` directory. Mahimahi refuses to run as
root, so the shell runs as ``--user`` (an unprivileged account). Needs
root itself (to switch user and to set, then restore, the two sysctls
Mahimahi needs: ``net.ipv4.ip_forward = 1`` and ``cubic`` in
``net.ipv4.tcp_allowed_congestion_control`` for the unprivileged iperf3).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SECONDS = 6
DELAY_MS = 40


def constant_trace(rate_mbps: int, path: Path) -> None:
    """``rate_mbps`` Mbit/s of 1500-byte opportunities, over a 12-ms period."""
    lines, prev = [], 0
    for t in range(1, 13):
        cum = t * rate_mbps // 12
        lines += [str(t)] * (cum - prev)
        prev = cum
    path.write_text("\n".join(lines) + "\n")


def mm_cpu_s() -> float:
    """User + system CPU of every process named ``mm-*``."""
    tot = 0
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            st = Path(f"/proc/{p}/stat").read_text()
        except OSError:
            continue
        if st[st.index("(") + 1:st.rindex(")")].startswith("mm-"):
            f = st[st.rindex(")") + 2:].split()
            tot += int(f[11]) + int(f[12])
    return tot / os.sysconf("SC_CLK_TCK")


def run(rate: int, mm_bin: Path, user: str) -> dict:
    d = Path(tempfile.mkdtemp(prefix="mm-ceiling-"))
    try:
        os.chmod(d, 0o777)
        tr = d / "c.trace"
        constant_trace(rate, tr)
        os.chmod(tr, 0o644)
        q = max(2 * int(rate * 1e6 / 8 * 2 * DELAY_MS / 1e3 / 1500), 100)
        out = d / "iperf3.json"
        srv = subprocess.Popen(["iperf3", "-s", "-1", "-p", "5299"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.5)
            inner = f"iperf3 -c $MAHIMAHI_BASE -p 5299 -R -P 4 -C cubic -t {SECONDS} -O 1 -J > {out}"
            shell = (f"{mm_bin}/mm-delay {DELAY_MS} {mm_bin}/mm-link {tr} {tr} --downlink-queue=droptail "
                     f"--downlink-queue-args=packets={q} --uplink-queue=droptail --uplink-queue-args=packets={q} "
                     f"-- sh -c '{inner}'")
            peak, stop = [0.0], threading.Event()

            def poll():
                while not stop.is_set():
                    peak[0] = max(peak[0], mm_cpu_s())
                    time.sleep(0.2)

            th = threading.Thread(target=poll)
            th.start()
            try:
                p = subprocess.run(["su", user, "-c", shell], capture_output=True, text=True, timeout=SECONDS + 60)
            finally:
                stop.set()
                th.join()
        finally:
            srv.kill()
            srv.wait()
        if p.returncode != 0 or not out.exists():
            raise RuntimeError(f"Mahimahi at {rate} Mbit/s failed (exit {p.returncode}): {p.stderr.strip()[-500:]}")
        j = json.loads(out.read_text())
        if "error" in j:
            raise RuntimeError(f"iperf3 at {rate} Mbit/s: {j['error']}")
        got = j["end"]["sum_received"]["bits_per_second"] / 1e6
        return {"rate_mbps": rate, "goodput_mbps": got, "of_link": got / (rate * 1448 / 1500), "cpu_s": peak[0],
                "cpu_ms_per_mbit": peak[0] / (got * (SECONDS + 1)) * 1e3}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mm-bin", type=Path, required=True, help="the bin directory of a Mahimahi build")
    ap.add_argument("--user", required=True, help="an unprivileged user to run Mahimahi as")
    ap.add_argument("--rates", default="100,200,400,800", help="link rates, integer Mbit/s (default 100,200,400,800)")
    a = ap.parse_args(argv)
    try:
        rates = [int(x) for x in a.rates.split(",")]
    except ValueError:
        ap.error(f"--rates: comma-separated integers, got {a.rates!r}")
    if any(r < 1 for r in rates):
        ap.error(f"--rates: each at least 1 Mbit/s, got {a.rates!r}")
    for tool in ("mm-delay", "mm-link"):
        if not (a.mm_bin / tool).is_file():
            ap.error(f"--mm-bin: no {tool} in {a.mm_bin}")
    if os.geteuid() != 0:
        ap.error("needs root (to run Mahimahi as --user and set two sysctls)")
    if shutil.which("iperf3") is None:
        ap.error("needs iperf3 (make setup-linux-ref)")
    keys = ("net.ipv4.ip_forward", "net.ipv4.tcp_allowed_congestion_control")
    saved = {k: subprocess.run(["sysctl", "-n", k], capture_output=True, text=True, check=True).stdout.strip()
             for k in keys}
    try:
        subprocess.run(["sysctl", "-qw", "net.ipv4.ip_forward=1"], check=True)
        allowed = saved["net.ipv4.tcp_allowed_congestion_control"].split()
        if "cubic" not in allowed:
            subprocess.run(["sysctl", "-qw", f"net.ipv4.tcp_allowed_congestion_control={' '.join(allowed + ['cubic'])}"],
                           check=True)
        print(f"Mahimahi: mm-delay {DELAY_MS} + mm-link (constant trace), 4 CUBIC streams, {SECONDS} s (first "
              f"omitted)")
        print(f"{'link':>9} {'goodput':>9} {'of link':>7} {'CPU':>6} {'CPU/Mbit':>9}")
        for r in rates:
            x = run(r, a.mm_bin, a.user)
            print(f"{r:>6} Mb {x['goodput_mbps']:>7.1f} Mb {x['of_link']:>6.1%} {x['cpu_s']:>5.2f}s "
                  f"{x['cpu_ms_per_mbit']:>6.2f} ms", flush=True)
    finally:
        for k, v in saved.items():
            subprocess.run(["sysctl", "-qw", f"{k}={v}"], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
