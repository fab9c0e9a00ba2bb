"""The real-time emulator between two network namespaces (needs root, TUN,
``ip``, ``ping`` and ``iperf3``: skipped with the reason otherwise; ``make
setup-linux-ref`` installs the tools). Every test is bounded in time and
leaves no namespace, interface or global setting behind."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from xrc.emulation import testbed as tbmod
from xrc.emulation.testbed import default_emulator_cpu, leftovers, missing_requirements, remove_stale
from xrc.scenario import from_dict

# Real traffic in real time: `make test` runs these alone (see pyproject.toml).
pytestmark = pytest.mark.realtime

MISSING = missing_requirements(("ip", "ss", "sysctl", "ping", "iperf3"))
needs_root = pytest.mark.skipif(bool(MISSING), reason="emulator tests need: " + "; ".join(MISSING))
ALLOWED = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
CUBIC = {"net.ipv4.tcp_congestion_control": "cubic", "net.ipv4.tcp_no_metrics_save": "1"}
CPU = default_emulator_cpu()


def wired(rate_mbps: float, delay_ms: float, buffer_packets: int = 100) -> dict:
    return from_dict({"seed": 1, "duration_s": 10, "topology": "wired",
                      "internet": {"rate_mbps": rate_mbps, "delay_ms": delay_ms, "buffer_packets": buffer_packets},
                      "flows": [{"cc": "cubic"}]}).resolved


def columns(emu) -> dict[str, np.ndarray]:
    return {k: np.frombuffer(b, dtype=np.dtype(d)) for k, (d, b) in emu.capture_columns().items()}


def iperf3(tb, seconds: float) -> dict:
    tb.popen("ue", ["iperf3", "-s", "-1", "-B", tb.ue_ip], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 5
    while not tb.run("ue", ["ss", "-Hltn", "sport = :5201"], timeout=5).stdout.strip():
        assert time.monotonic() < deadline, "iperf3 server did not start"
        time.sleep(0.05)
    r = tb.run("inet", ["iperf3", "-c", tb.ue_ip, "-t", f"{seconds:g}", "-J"], timeout=seconds + 30)
    return json.loads(r.stdout)


def steal_s() -> float:
    """Time the hypervisor took this VM's CPUs away, since boot (/proc/stat)."""
    with open("/proc/stat") as f:
        return int(f.readline().split()[8]) / os.sysconf("SC_CLK_TCK")


def skip_unless_quiet(steal0: float, t0: float, release_err_ns: np.ndarray, what: str) -> None:
    """How accurately real traffic sees the model's timing depends on the
    host: on a VM whose CPUs the hypervisor takes away (steal), every
    process is late, the emulator's release of each packet too. The
    accuracy checks below hold the emulator to its bound only when the host
    let it: hypervisor steal under 1 % of the test's time and the
    emulator's own release error p99 under 1 ms; otherwise they skip with
    the numbers (`make bench` prints them on any host)."""
    steal, wall = steal_s() - steal0, time.monotonic() - t0
    p99 = float(np.percentile(release_err_ns, 99)) / 1e6 if release_err_ns.size else 0.0
    if steal > 0.01 * wall or p99 > 1.0:
        pytest.skip(f"host too noisy to check {what}: hypervisor steal {steal:.2f} s in {wall:.1f} s, "
                    f"emulator release error p99 {p99:.2f} ms")


@pytest.fixture(autouse=True)
def nothing_left_behind():
    before = ALLOWED.read_text() if ALLOWED.exists() else None
    yield
    if not MISSING:
        assert leftovers() == {"namespaces": [], "interfaces": []}
        assert ALLOWED.read_text() == before, "the global allowed congestion controls were not restored"


@needs_root
def test_a_ping_through_a_fixed_delay_path_measures_that_delay_within_1_ms():
    steal0, t0 = steal_s(), time.monotonic()
    with tbmod.testbed(wired(1000.0, 10.0), emulator_cpu=CPU) as tb:
        tb.emulator.start(cpu=CPU, fifo_priority=50)
        r = tb.run("inet", ["ping", "-n", "-c", "20", "-i", "0.05", tb.ue_ip], timeout=20)
        report = tb.emulator.stop()
        c = columns(tb.emulator)
    times = [float(x) for x in re.findall(r"time=([\d.]+) ms", r.stdout)]
    assert len(times) == 20, r.stdout
    assert report["down"]["written"] == report["up"]["written"] == 20, "20 echo requests down, 20 replies up"
    held = (c["t_sched_ns"].astype(np.int64) - c["t_in_ns"].astype(np.int64))[c["fate"] == 0]
    # 10 ms each way plus the serialization of 84 bytes at 1 Gbit/s (672 ns).
    assert held.size == 40 and held.min() >= 10_000_000 and held.max() <= 10_001_000, held
    assert (c["t_out_ns"] >= c["t_sched_ns"]).all(), "a packet left before the model released it"
    assert min(times) >= 20.0 - 0.05, times  # ping prints to 0.001 ms; allow its own rounding
    # What the model does holds on any host; how close real pings come to it
    # is checked where the host kept time.
    skip_unless_quiet(steal0, t0, c["t_out_ns"].astype(np.int64) - c["t_sched_ns"].astype(np.int64), "ping times")
    assert abs(float(np.median(times)) - 20.0) <= 1.0, times


@needs_root
def test_a_5_s_iperf3_through_a_20_mbit_s_link_gets_19_3_mbit_s_within_3_percent():
    steal0, t0 = steal_s(), time.monotonic()
    with tbmod.testbed(wired(20.0, 5.0), sysctls=CUBIC, emulator_cpu=CPU) as tb:
        tb.emulator.start(cpu=CPU, fifo_priority=50)
        j = iperf3(tb, 5)
        report = tb.emulator.stop()
        c = columns(tb.emulator)
    got = j["end"]["sum_received"]["bits_per_second"] / 1e6
    # 20 Mbit/s of 1500-byte IP packets carry 20 x 1448 / 1500 = 19.31 Mbit/s of
    # payload: never more (1 % for iperf3's interval edges), on any host.
    assert got <= 1.01 * 19.31, f"{got:.2f} Mbit/s; emulator report {report}"
    skip_unless_quiet(steal0, t0, c["t_out_ns"].astype(np.int64) - c["t_sched_ns"].astype(np.int64), "the rate")
    assert abs(got - 19.31) <= 0.03 * 19.31, f"{got:.2f} Mbit/s; emulator report {report}"


@needs_root
def test_a_one_packet_per_5_ms_trace_never_carries_more_than_2_40_mbit_s():
    sc = from_dict({"seed": 1, "duration_s": 10, "topology": "trace",
                    "internet": {"delay_ms": 5.0, "buffer_packets": None},
                    "trace": {"downlink": str(Path(__file__).parent / "data" / "one-per-5ms.trace"),
                              "buffer_packets": 50, "buffer_bytes": None},
                    "flows": [{"cc": "cubic", "ue": 0}]}).resolved
    with tbmod.testbed(sc, downlink_text="5\n", sysctls=CUBIC, emulator_cpu=CPU) as tb:
        tb.emulator.start(cpu=CPU, fifo_priority=50)
        iperf3(tb, 5)
        tb.emulator.stop()
        c = columns(tb.emulator)
    down = (c["dir"] == 0) & (c["fate"] == 0)
    order = np.argsort(c["t_sched_ns"][down], kind="stable")
    t = c["t_sched_ns"][down][order].astype(np.int64)  # integer ns: no rounding at window edges
    cum = np.concatenate(([0], np.cumsum(c["len"][down][order].astype(np.int64))))
    assert t.size > 500, "the trace carried traffic"
    # A second starting at a release holds 200 opportunities of 1500 bytes;
    # the first may also release the part of a packet sent in earlier ones
    # (a packet is split across opportunities by bytes): below 201 x 1500.
    in_second = cum[np.searchsorted(t, t + 1_000_000_000, side="left")] - cum[:-1]
    assert in_second.max() <= 201 * 1500, in_second.max()
    busy = (t[-1] - t[0]) / 1e9
    # From the first release to the last: at most busy / 5 ms + 1 opportunities.
    assert cum[-1] * 8 / (busy + 0.005) <= 2.40e6, cum[-1] * 8 / busy


@needs_root
def test_no_namespace_or_interface_is_left_behind_when_the_block_fails():
    with pytest.raises(RuntimeError, match="boom"):
        with tbmod.testbed(wired(20.0, 1.0), sysctls=CUBIC) as tb:
            tb.emulator.start()
            tb.popen("ue", ["sleep", "30"])
            assert tb.inet_ns in tbmod.our_namespaces(os.getpid())
            raise RuntimeError("boom")
    # (the autouse fixture checks namespaces, interfaces and the global setting)


@pytest.fixture
def python_ctrl_c():
    """Python's own Ctrl-C handler for the test, whatever the process
    inherited. A command a non-interactive shell starts in the background
    (`cmd &`, as `setsid nohup ... &` did for CI's whole-suite run) starts
    with SIGINT ignored (bash), the ignore survives exec, and Python then
    installs no handler of its own: a SIGINT raised nothing in two such
    runs of two (measured later: `SigIgn` 0x...6 in /proc/PID/status of a
    background-launched `xrc validate-linux`, bits 1 and 2 = SIGINT and
    SIGQUIT)."""
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield before
    finally:
        signal.signal(signal.SIGINT, before)


@needs_root
def test_ctrl_c_stops_a_blocking_run_long_before_its_end(python_ctrl_c):
    with tbmod.testbed(wired(20.0, 1.0)) as tb:
        timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
        t0 = time.monotonic()
        timer.start()
        try:
            report = tb.emulator.run(30.0)
        except KeyboardInterrupt:
            pass
        else:
            # Seen once in CI (a loaded host): say how, for the next time.
            pytest.fail(f"the run ended without KeyboardInterrupt after {time.monotonic() - t0:.2f} s "
                        f"(timer alive: {timer.is_alive()}; report duration {report.get('duration_s')} s, "
                        f"fell behind {report.get('fell_behind')}; SIGINT handler before the test: {python_ctrl_c!r})")
        took = time.monotonic() - t0
        assert not tb.emulator.running
    # The run was 30 s long; the loop checks for signals every few ms (how
    # quickly on a noisy host is not this test's business).
    assert took < 0.3 + 5.0, took


@needs_root
def test_a_namespace_and_a_setting_left_by_a_dead_process_are_cleaned_at_start_up():
    p = subprocess.Popen(["true"])
    p.wait()
    dead = p.pid
    ns = f"xrc-{dead}-0-inet"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    state = tbmod._state_file(dead)
    state.write_text(json.dumps({tbmod.ALLOWED_CC: ALLOWED.read_text().strip()}))
    try:
        cleaned = remove_stale()
        assert ns in cleaned
        assert ns not in tbmod.our_namespaces()
        assert not state.exists()
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        state.unlink(missing_ok=True)


_HOLDER = r"""
import sys
from xrc.emulation import testbed as t
with t.allowed_congestion_control([sys.argv[1]]):
    print("in", flush=True)
    sys.stdin.readline()
print("out", flush=True)
"""


@needs_root
@pytest.mark.parametrize("first_out", ["the other process", "this process"])
def test_two_processes_testbeds_overlapping_keep_what_the_other_needs_and_restore_the_list_at_the_end(first_out):
    import sys

    before = ALLOWED.read_text()
    available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    extra = [c for c in ("cubic", "reno", "bbr", *available) if c in available and c not in before.split()]
    if not extra:
        pytest.skip(f"every available congestion control is already allowed ({before.strip()})")
    cc = extra[0]
    other = subprocess.Popen([sys.executable, "-c", _HOLDER, cc], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    try:
        assert other.stdout.readline().strip() == "in"
        assert cc in ALLOWED.read_text().split()
        with tbmod.allowed_congestion_control([cc]):
            assert ALLOWED.read_text().split() == before.split() + [cc]
            if first_out == "the other process":
                other.stdin.write("\n")
                other.stdin.flush()
                assert other.stdout.readline().strip() == "out"
                # This process still needs it: the other one's exit kept it.
                assert cc in ALLOWED.read_text().split()
        if first_out == "this process":
            assert cc in ALLOWED.read_text().split(), "removed while the other process still needs it"
            other.stdin.write("\n")
            other.stdin.flush()
            assert other.stdout.readline().strip() == "out"
        assert other.wait(timeout=10) == 0
        assert ALLOWED.read_text() == before
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()
        remove_stale()


# The two ends of a TCP transfer with known bytes: the UE side receives N
# bytes and answers with M bytes of its own (an upload, so that the UE
# side's reads are exercised too); each prints what it got.
_SINK = r"""
import hashlib, random, socket, sys
n, m = int(sys.argv[2]), int(sys.argv[3])
ls = socket.create_server((sys.argv[1], 5300))
ls.settimeout(30)
c, _ = ls.accept()
c.settimeout(30)
got, h = 0, hashlib.sha256()
while got < n:
    b = c.recv(1 << 16)
    if not b:
        break
    got += len(b)
    h.update(b)
c.sendall(random.Random(2).randbytes(m))
c.shutdown(socket.SHUT_WR)
print(got, h.hexdigest(), flush=True)
"""
_SOURCE = r"""
import hashlib, random, socket, sys
n, m = int(sys.argv[2]), int(sys.argv[3])
s = socket.create_connection((sys.argv[1], 5300), timeout=30)
s.sendall(random.Random(1).randbytes(n))
got, h = 0, hashlib.sha256()
while True:
    b = s.recv(1 << 16)
    if not b:
        break
    got += len(b)
    h.update(b)
print(got, h.hexdigest(), flush=True)
"""


@needs_root
def test_with_gso_a_burst_released_at_one_instant_reaches_a_real_tcp_socket_as_super_packets_intact(tmp_path):
    import hashlib
    import random
    import sys

    # 40 opportunities of 1504 bytes at the same millisecond, every 10 ms
    # (48 Mbit/s): whatever queued meanwhile leaves at one instant.
    trace = tmp_path / "burst.trace"
    trace.write_text("10\n" * 40)
    sc = from_dict({"seed": 1, "duration_s": 10, "topology": "trace",
                    "internet": {"delay_ms": 5.0, "buffer_packets": None},
                    "trace": {"downlink": str(trace), "buffer_packets": 400, "buffer_bytes": None},
                    "flows": [{"cc": "cubic", "ue": 0}]}).resolved
    n, m = 3_000_000, 500_000
    with tbmod.testbed(sc, downlink_text=trace.read_text(), sysctls=CUBIC, emulator_cpu=CPU, options={"gso": 1}) as tb:
        tb.emulator.start(cpu=CPU, fifo_priority=50)
        sink = tb.popen("ue", [sys.executable, "-c", _SINK, tb.ue_ip, str(n), str(m)],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 10
        while not tb.run("ue", ["ss", "-Hltn", "sport = :5300"], timeout=5).stdout.strip():
            assert time.monotonic() < deadline and sink.poll() is None, "the sink did not listen"
            time.sleep(0.05)
        src = tb.run("inet", [sys.executable, "-c", _SOURCE, tb.ue_ip, str(n), str(m)], timeout=60)
        sink_out, sink_err = sink.communicate(timeout=30)
        report = tb.emulator.stop()
        c = columns(tb.emulator)
    got_down, sha_down = sink_out.split()
    got_up, sha_up = src.stdout.split()
    assert (int(got_down), sha_down) == (n, hashlib.sha256(random.Random(1).randbytes(n)).hexdigest()), sink_err
    assert (int(got_up), sha_up) == (m, hashlib.sha256(random.Random(2).randbytes(m)).hexdigest())
    # The kernel took every super-packet (a refused write is a send error,
    # and the bytes would only have arrived through retransmissions).
    assert report["send_errors"] == 0, report["last_send_error"]
    down = report["down"]
    assert report["gso"] and down["written"] + down["dropped"] <= down["read"]
    assert down["packets_per_write"] > 2.0, down
    assert down["written"] >= n // 1448
    # The capture stays per packet: every data packet is there, none larger
    # than the wire's; reads from the UE side's device (the upload and the
    # ACKs) are wire-sized too: the kernel segmented before handing over.
    assert c["len"].max() <= 1500
    up = (c["dir"] == 1) & (c["fate"] == 0)
    assert up.sum() >= m // 1448
    written = c["fate"] == 0
    assert (c["t_out_ns"][written] >= c["t_sched_ns"][written]).all()
