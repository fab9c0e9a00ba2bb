"""``xrc emulate``: refusals (exit 2, nothing left behind) on any machine;
real runs through the cell where root, TUN, ``iperf3`` and ``ping`` are
available (skipped with the reason otherwise). Every run is bounded in
time; none asserts wall-clock accuracy (see ``skip_unless_quiet`` in
test_emulator.py): what is asserted is what the model and the files say."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from xrc.cli import main
from xrc.emulation import emulate as em
from xrc.emulation.testbed import missing_requirements, our_namespaces
from xrc.scenario import from_dict

# Real traffic in real time: `make test` runs these alone (see pyproject.toml).
pytestmark = pytest.mark.realtime

MISSING = missing_requirements(("ip", "ss", "sysctl", "ping", "iperf3"))
needs_root = pytest.mark.skipif(bool(MISSING), reason="emulate tests need: " + "; ".join(MISSING))
XRC = [sys.executable, "-m", "xrc.cli"]


def cell_toml(tmp_path: Path, *, cc: str = "cubic", duration: float = 3.0, ues: int = 1, extra: str = "") -> Path:
    ue_tables = "".join('[[ues]]\nchannel = { kind = "fixed_cqi", cqi = 9 }\n' for _ in range(ues))
    p = tmp_path / "cell.toml"
    p.write_text(f"""name = "cell-test"
seed = 3
duration_s = {duration}
topology = "cellular"
[internet]
delay_ms = 10.0
[cell.harq]
bler = 0.0
{ue_tables}
[[flows]]
id = "bulk"
ue = 0
cc = "{cc}"
{extra}
""")
    return p


def no_namespaces_of_children() -> list[str]:
    """Namespaces named like ours whose owner is gone (a child's left-overs)."""
    out = []
    for n in our_namespaces():
        pid = int(n.split("-")[1])
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            out.append(n)
    return out


@pytest.mark.parametrize("cc", ["oracle-rate", "oracle"])
def test_a_flow_whose_congestion_control_the_kernel_lacks_is_refused_naming_the_flow_and_the_cc(tmp_path, capsys, cc):
    out = tmp_path / "out"
    rc = main(["emulate", str(cell_toml(tmp_path, cc=cc)), "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2
    assert "flows.0.cc" in err and repr(cc) in err, err
    assert not out.exists() and not list(tmp_path.glob(".out*")), "nothing left behind"


def test_a_missing_command_and_too_many_ues_are_refused_with_exit_2(tmp_path, capsys):
    assert main(["emulate", str(cell_toml(tmp_path)), "--", "no-such-binary-xrc"]) == 2
    assert "no-such-binary-xrc" in capsys.readouterr().err
    many = from_dict({"seed": 1, "duration_s": 1, "topology": "cellular",
                      "ues": [{"channel": {"kind": "fixed_cqi", "cqi": 9}}] * 254,
                      "flows": [{"cc": "cubic", "ue": 0}]}).resolved
    with pytest.raises(em.EmulateError, match="at most 253 UEs, got 254"):
        em.plan(many, command=None, run_flows=True, out=True)
    wired = from_dict({"seed": 1, "duration_s": 1, "topology": "wired", "internet": {"rate_mbps": 10},
                       "flows": [{"cc": "cubic"}]}).resolved
    with pytest.raises(em.EmulateError, match="--xrc-acks.*cellular"):
        em.plan(wired, command=None, run_flows=True, out=True, xrc_acks=True)


def test_an_address_of_the_emulators_prefix_on_the_host_is_an_address_clash(tmp_path, monkeypatch):
    monkeypatch.setattr(em, "_host_addresses", lambda: [("eth9", "10.77.0.5")])
    monkeypatch.setattr(em, "missing_requirements", lambda tools: [])
    r = from_dict({"seed": 1, "duration_s": 1, "topology": "cellular",
                   "ues": [{"channel": {"kind": "fixed_cqi", "cqi": 9}}], "flows": [{"cc": "cubic", "ue": 0}]})
    with pytest.raises(em.EmulateError, match="address clash.*10.77.0.5 on eth9"):
        em.plan(r.resolved, command=None, run_flows=True, out=True)


@pytest.mark.skipif(os.geteuid() == 0 and shutil.which("setpriv") is None,
                    reason="as root, needs setpriv (util-linux) to run as an unprivileged user")
def test_without_root_it_refuses_with_exit_2(tmp_path, capsys):
    if os.geteuid() != 0:
        assert main(["emulate", str(cell_toml(tmp_path))]) == 2
        assert "root" in capsys.readouterr().err
        return
    # As root (CI), the same as an unprivileged user, on a scenario it can
    # read (pytest's directories are root's alone).
    import tempfile

    from .conftest import skip_unless_nobody_can_run_xrc

    skip_unless_nobody_can_run_xrc()

    with tempfile.TemporaryDirectory(prefix="xrc-emulate-noroot-") as d:
        os.chmod(d, 0o755)
        path = Path(d) / "cell.toml"
        path.write_text(cell_toml(tmp_path).read_text())
        path.chmod(0o644)
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *XRC, "emulate",
                            str(path)], capture_output=True, text=True, timeout=60, env={**os.environ, "HOME": d},
                           cwd=d)
    assert r.returncode == 2 and "missing: root" in r.stderr, (r.returncode, r.stderr)


@needs_root
def test_a_short_cellular_emulation_writes_a_run_directory_with_the_files_of_xrc_run(tmp_path):
    out = tmp_path / "run"
    r = subprocess.run([*XRC, "emulate", str(cell_toml(tmp_path, duration=3.0)), "--out", str(out), "--quiet"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    for f in ("summary.json", "metadata.json", "scenario.toml", "scenario.resolved.json", "flow_throughput.parquet",
              "rtt.parquet", "drops.parquet", "rlc.parquet", "queue_delay.parquet", "ue_rate.parquet",
              "flows.parquet", "ues.parquet", "inet.pcap", "ue.pcap", "emulator-report.json"):
        assert (out / f).is_file(), f
    s = json.loads((out / "summary.json").read_text())
    f = s["flows"][0]
    assert f["linux_cc"] == "cubic" and f["five_tuple"].endswith("10.77.0.2:5201")
    # CQI 9 with 50 PRBs carries ~15 Mbit/s: a real flow cannot get more
    # than the cell gives it, on any host.
    assert 0 < f["goodput_mbps"] < s["ues"][0]["capacity_mbps"] * 1.05, s
    assert s["timing"]["tti_start_lateness_us"]["n"] >= 2900, "every TTI of 3 s reported"
    assert s["not_measured"] and f["timeouts"] is None, "what a real run cannot measure is null, not invented"
    import pyarrow.parquet as pq

    rlc = pq.read_table(out / "rlc.parquet")
    assert rlc.num_rows >= 2900 and "hol_ms" in rlc.column_names
    assert "timeouts" not in pq.read_table(out / "flows.parquet").column_names
    # The sender's view of the real flow: an RTT sample per ACK of new data.
    rtt = pq.read_table(out / "rtt.parquet").to_pydict()
    assert len(rtt["rtt_ms"]) > 100 and set(rtt["flow"]) == {0} and f["rtt_ms"]["p50"] is not None
    assert not no_namespaces_of_children()


@needs_root
def test_without_flows_and_out_a_command_in_the_ue_side_crosses_the_cell_like_mm_link(tmp_path):
    r = subprocess.run([*XRC, "emulate", str(cell_toml(tmp_path)), "--no-flows", "--quiet", "--",
                        "ping", "-n", "-c", "5", "-i", "0.2", "10.77.0.1"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr + r.stdout
    rtts = [float(x.split("time=")[1].split()[0]) for x in r.stdout.splitlines() if "time=" in x]
    # 2 x 10 ms of Internet delay plus at least the cell's shortest air round
    # trip (a TTI and decoding down, SR, grant and PUSCH up): never below.
    assert len(rtts) == 5 and min(rtts) >= 20.0 + 4.0, rtts
    assert not no_namespaces_of_children()


@needs_root
def test_sigterm_during_an_emulation_cleans_up_and_leaves_no_run_directory(tmp_path):
    out = tmp_path / "run"
    # Its temporary directory too: each interrupted emulation left a
    # /tmp/xrc-emulate-apps-* behind.
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    p = subprocess.Popen([*XRC, "emulate", str(cell_toml(tmp_path, duration=30.0)), "--out", str(out), "--quiet"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "TMPDIR": str(tmp)})
    try:
        deadline = time.monotonic() + 20
        while not our_namespaces(p.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert our_namespaces(p.pid), "the emulation started"
        time.sleep(1.0)
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
    assert p.returncode != 0
    assert our_namespaces(p.pid) == []
    assert not out.exists() and not [x for x in tmp_path.iterdir() if x.name.startswith(".run")], \
        list(tmp_path.iterdir())
    assert list(tmp.iterdir()) == []


def _pcap_packets(path: Path) -> list[bytes]:
    """The packets of a pcap file (LINKTYPE_RAW), as captured."""
    import struct

    b = path.read_bytes()
    assert struct.unpack("<I", b[:4])[0] == 0xA1B23C4D and struct.unpack("<I", b[20:24])[0] == 101
    out, i = [], 24
    while i < len(b):
        _, _, incl, _ = struct.unpack("<IIII", b[i:i + 16])
        out.append(b[i + 16:i + 16 + incl])
        i += 16 + incl
    return out


def _xrc_option(pkt: bytes) -> tuple[int, int] | None:
    """(rate kbit/s, HoL in 0.1 ms) of option 253 with ExID 0x5852 (RFC
    6994), read as a receiver would, or None."""
    ihl = (pkt[0] & 0x0F) * 4
    doff = (pkt[ihl + 12] >> 4) * 4
    opts, i = pkt[ihl + 20:ihl + doff], 0
    while i < len(opts):
        kind = opts[i]
        if kind == 0:
            return None
        if kind == 1:
            i += 1
            continue
        n = opts[i + 1]
        if kind == 253 and n == 10 and opts[i + 2:i + 4] == b"\x58\x52":
            return int.from_bytes(opts[i + 4:i + 8], "big"), int.from_bytes(opts[i + 8:i + 10], "big")
        i += n
    return None


def _checksums_ok(pkt: bytes) -> bool:
    def fold(data: bytes, acc: int = 0) -> int:
        if len(data) % 2:
            data += b"\0"
        for k in range(0, len(data), 2):
            acc += (data[k] << 8) | data[k + 1]
        while acc > 0xFFFF:
            acc = (acc & 0xFFFF) + (acc >> 16)
        return acc

    ihl = (pkt[0] & 0x0F) * 4
    pseudo = pkt[12:20] + bytes([0, 6]) + (len(pkt) - ihl).to_bytes(2, "big")
    return fold(pkt[:ihl]) == 0xFFFF and fold(pseudo + pkt[ihl:]) == 0xFFFF


@needs_root
def test_the_xrc_option_is_on_every_ack_crossing_the_base_station_with_the_agents_values_at_that_tti(tmp_path):
    """Reads the option back from the Internet side's capture (bytes as the
    sender's device got them) and compares it with the agent's series the
    run directory's rlc.parquet is made of, at the TTI the ACK reached the
    base station (model time: the capture's scheduled release minus the
    reverse Internet delay, which has no rate limit)."""
    import numpy as np

    from xrc.emulation.testbed import default_emulator_cpu, testbed

    delay_ms = 10.0
    sc = from_dict({"seed": 3, "duration_s": 4, "topology": "cellular", "internet": {"delay_ms": delay_ms},
                    "cell": {"harq": {"bler": 0.0}}, "ues": [{"channel": {"kind": "fixed_cqi", "cqi": 9}}],
                    "flows": [{"cc": "cubic", "ue": 0}]}).resolved
    cpu = default_emulator_cpu()
    with testbed(sc, sysctls={"net.ipv4.tcp_congestion_control": "cubic"}, emulator_cpu=cpu,
                 options={"xrc_acks": 1}) as tb:
        emu = tb.emulator
        tb.popen("ue", ["iperf3", "-s", "-1", "-B", tb.ue_ip], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        em._wait_listening(tb, 5201)
        emu.start(cpu=cpu, fifo_priority=50)
        tb.run("inet", ["iperf3", "-c", tb.ue_ip, "-t", "2"], timeout=30)
        report = emu.stop()
        c = {k: np.frombuffer(b, dtype=np.dtype(d)) for k, (d, b) in emu.capture_columns().items()}
        cell = {k: (np.frombuffer(v[1], dtype=np.dtype(v[0])) if isinstance(v, tuple) else v)
                for k, v in emu.cell_columns().items()}
        emu.write_pcap(str(tmp_path / "inet.pcap"), "inet")
    # The ACKs written to the Internet side, in the pcap's order (by write
    # time, then record).
    up = np.nonzero((c["dir"] == 1) & (c["fate"] == 0))[0]
    up = up[np.lexsort((up, c["t_out_ns"][up]))]
    pkts = [p for p in _pcap_packets(tmp_path / "inet.pcap") if p[16:20] == bytes([10, 77, 0, 1])]
    assert len(pkts) == up.size
    pure = (c["is_tcp"][up] == 1) & (c["payload"][up] == 0) & ((c["tcp_flags"][up] & 0x07) == 0) \
        & ((c["tcp_flags"][up] & 0x10) != 0)
    assert pure.sum() > 500, "a 2 s transfer sends many ACKs"
    assert report["xrc_acks_written"] + report["xrc_acks_no_room"] == pure.sum()
    tti_t, agent, hol = cell["tti_t_ns"].astype(np.int64), cell["tti_agent_bps"], cell["tti_hol_ns"]
    checked = no_room = 0
    for k, p in zip(up, pkts):
        opt = _xrc_option(p)
        if not (c["is_tcp"][k] and c["payload"][k] == 0 and c["tcp_flags"][k] & 0x10 and not c["tcp_flags"][k] & 7):
            assert opt is None, "only pure ACKs carry it"
            continue
        if opt is None:
            # Only where the TCP header had no room: 12 more option bytes
            # would pass 60 (timestamps and two or more SACK blocks).
            doff = (p[32] >> 4) * 4
            assert doff + 12 > 60, (doff, len(p))
            no_room += 1
            continue
        assert _checksums_ok(p), "checksums fixed up"
        assert opt == (c["xrc_rate_kbps"][k], c["xrc_hol_tenths_ms"][k])
        at_bs = int(c["t_sched_ns"][k]) - int(delay_ms * 1e6)
        i = int(np.searchsorted(tti_t, at_bs, side="right")) - 1
        # At a TTI boundary the ACK may arrive just before that TTI runs:
        # then the previous TTI's values hold. One or two flows (iperf3's
        # control connection) may be active on the UE.
        cands = [j for j in (i, i - 1) if j >= 0 and (j == i or tti_t[i] == at_bs)]
        rate_ok = any(opt[0] == agent[j] // af // 1000 for j in cands for af in (1, 2))
        # HoL at arrival: the TTI's sample aged by the time since (the
        # head does not change between TTIs), or less if the buffer was empty.
        hol_ok = any(abs(opt[1] * 100_000 - min(hol[j] + (at_bs - tti_t[j]) if hol[j] else at_bs - tti_t[j],
                                                6553_500_000)) <= 100_000 or (hol[j] == 0 and opt[1] * 100_000
                                                                             <= at_bs - tti_t[j])
                     for j in cands)
        assert rate_ok and hol_ok, (opt, [(tti_t[j], agent[j], hol[j]) for j in cands], at_bs)
        checked += 1
    assert checked + no_room == pure.sum() and no_room == report["xrc_acks_no_room"]
    assert checked > 0.8 * pure.sum(), "most ACKs have room (SACK blocks only during recovery)"


# ------------------------------------------------- the scenario's TCP settings

def _flows(tcp: dict | None = None, receiver: dict | None = None, cc: str = "cubic", n: int = 1) -> list[dict]:
    f = {"cc": cc, **({"tcp": tcp} if tcp else {}), **({"receiver": receiver} if receiver else {})}
    return from_dict({"seed": 1, "duration_s": 2, "topology": "wired", "internet": {"delay_ms": 20, "rate_mbps": 20},
                      "flows": [f] * n}).resolved["flows"]


def test_tcp_settings_the_kernel_has_knobs_for_become_socket_options_routes_and_sysctls():
    from xrc.emulation import kernel_tcp as K

    k = K.plan(_flows({"mss": 1000, "nodelay": True, "initial_cwnd": 20, "min_rto_ms": 100, "frto": False,
                       "timer_hz": 1000}, {"sack": False, "delayed_ack": False}))
    assert k.iperf3 == {0: ["-M", "1012", "-N"]}, "TCP_MAXSEG counts the 12 bytes of the timestamp option"
    assert k.routes == {0: {"initcwnd": "20", "rto_min": "100ms"}} and k.ue_route == {"quickack": "1"}
    assert k.sysctls == {"inet": {"net.ipv4.tcp_frto": "0"}, "ue": {"net.ipv4.tcp_sack": "0"}}
    assert len(k.applied) == 7 and any("timer_hz" in x for x in k.kernel_own)
    assert K.plan(_flows()).summary() == {"applied": [], "kernel_own": []}, "the defaults are Linux's: nothing to do"


@pytest.mark.parametrize("tcp, receiver, cc_params, field", [
    ({"initial_rto_ms": 500}, None, None, "tcp.initial_rto_ms"),
    ({"undo": False}, None, None, "tcp.undo"),
    ({"rwnd_bytes": 100_000}, None, None, "tcp.rwnd_bytes"),
    ({"mss": 2000}, None, None, "tcp.mss"),
    ({"pacing": True}, None, None, "tcp.pacing"),
    (None, {"ack_every": 1}, None, "receiver.ack_every"),
    (None, None, {"beta": 600}, "cc_params.beta"),
])
def test_a_tcp_setting_the_kernel_cannot_take_is_refused_naming_the_field_and_the_value(tcp, receiver, cc_params,
                                                                                        field):
    from xrc.emulation import kernel_tcp as K

    f = {"cc": "cubic", **({"tcp": tcp} if tcp else {}), **({"receiver": receiver} if receiver else {}),
         **({"cc_params": cc_params} if cc_params else {})}
    flows = from_dict({"seed": 1, "duration_s": 2, "topology": "wired",
                       "internet": {"delay_ms": 20, "rate_mbps": 20}, "flows": [f]}).resolved["flows"]
    with pytest.raises(K.KernelTcpError) as e:
        K.plan(flows)
    value = next(iter((tcp or receiver or cc_params).values()))
    assert f"flows.0.{field}: {value!r}" in str(e.value)


def test_flows_that_share_a_namespace_or_a_route_must_agree_on_its_setting_defaults_included():
    from xrc.emulation import kernel_tcp as K

    flows = _flows(n=2)
    flows[0]["tcp"]["frto"] = False
    with pytest.raises(K.KernelTcpError, match=r"flows.1.tcp.frto: True here but False in flows.0; .*per namespace"):
        K.plan(flows)
    flows = _flows(n=2)
    flows[1]["tcp"]["initial_cwnd"] = 30
    with pytest.raises(K.KernelTcpError, match=r"flows.1.tcp.initial_cwnd: 30 here but 10 in flows.0; .*per route"):
        K.plan(flows)


def test_emulate_refuses_a_tcp_setting_the_kernel_cannot_take_with_exit_2(tmp_path, capsys):
    p = cell_toml(tmp_path, extra="[flows.tcp]\ninitial_rto_ms = 300.0\n")
    assert main(["emulate", str(p), "--out", str(tmp_path / "o")]) == 2
    assert "flows.0.tcp.initial_rto_ms: 300.0" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def _pcap_records(path: Path) -> list[tuple[int, bytes]]:
    """(time ns, packet) of a nanosecond pcap file (LINKTYPE_RAW)."""
    import struct

    b = path.read_bytes()
    out, i = [], 24
    while i < len(b):
        sec, ns, incl, _ = struct.unpack("<IIII", b[i:i + 16])
        out.append((sec * 10**9 + ns, b[i + 16:i + 16 + incl]))
        i += 16 + incl
    return out


def _loopback_app(tmp_path, *send_args: str, run_s: float = 20.0) -> tuple[dict, dict]:
    """Runs the apps' sink and sender on loopback (no namespace, no root);
    the sender starts 2 s from now (both interpreters are up by then) and
    runs ``run_s``."""
    import socket as so

    with so.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    at = time.monotonic_ns() + 2_000_000_000
    until = at + int(run_s * 1e9)
    app = em.APPS
    sink = subprocess.Popen([*app, "sink", "--bind", "127.0.0.1", "--port", str(port), "--out",
                             str(tmp_path / "sink.json"), "--until", str(until + 2_000_000_000)])
    try:
        deadline = time.monotonic() + 10
        while not (tmp_path / "sink.json").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        send = subprocess.run([*app, "send", "--dst", "127.0.0.1", "--port", str(port), "--cc", "reno", "--out",
                               str(tmp_path / "send.json"), "--at", str(at), "--until", str(until), *send_args],
                              timeout=run_s + 15)
        assert send.returncode == 0
        sink.wait(timeout=5)  # the sender's close ends it
    finally:
        if sink.poll() is None:
            sink.send_signal(signal.SIGTERM)
            sink.wait(timeout=10)
    return (json.loads((tmp_path / "send.json").read_text()), json.loads((tmp_path / "sink.json").read_text()))


def test_the_transfer_application_delivers_exactly_its_bytes_and_closes(tmp_path):
    snd, snk = _loopback_app(tmp_path, "--bytes", "3000001")
    assert snd["written"] == 3000001 and snd["closed_ns"] is not None
    assert snk["reads"][1][-1] == 3000001 and snk["eof_ns"] is not None
    assert snk["reads"][0] == sorted(snk["reads"][0])


def test_the_video_application_writes_chunks_of_rate_times_on_time_one_period_apart(tmp_path):
    # 0.2 s period, 0.05 s on at 8 Mbit/s: 50,000-byte chunks, for 0.7 s
    # (chunks at 0, 0.2, 0.4 and 0.6 s; a late host may push the last out).
    snd, snk = _loopback_app(tmp_path, "--video", "0.2,0.05,8", run_s=0.7)
    chunks = snd["chunks"]
    assert 3 <= len(chunks) <= 4, chunks
    done = [c for c in chunks if c["acked_ns"] is not None]
    assert len(done) >= 3, chunks
    assert snd["written"] <= 50_000 * len(chunks) and snk["reads"][1][-1] >= 50_000 * len(done), (snd, snk["eof_ns"])
    starts = [c["start_ns"] for c in chunks]
    # Loopback delivers at once: a chunk starts a period after the last,
    # or later if the host was late.
    assert all(0.199 <= (b - a) / 1e9 < 0.3 for a, b in zip(starts, starts[1:])), starts
    # Written over its ON time in 1-ms ticks (not faster; the host may be late).
    assert all(0.049 <= (c["written_ns"] - c["start_ns"]) / 1e9 < 0.15 for c in done), chunks


def test_route_metrics_are_read_back_through_iproute2s_lock_keyword_and_its_units():
    from xrc.emulation.emulate import _route_metric

    line = "10.77.0.2 dev xrc0 scope link initcwnd 20 rto_min lock 1s ssthresh 40 quickack 1".split()
    assert _route_metric(line, "rto_min") == 1000.0
    assert _route_metric(line, "initcwnd") == 20.0 and _route_metric(line, "ssthresh") == 40.0
    assert _route_metric(line, "quickack") == 1.0
    assert _route_metric("x rto_min lock 200ms".split(), "rto_min") == 200.0
    assert _route_metric("x rto_min 4294.97s".split(), "rto_min") == 4294970.0
    assert _route_metric(line, "initrwnd") is None and _route_metric("x rto_min".split(), "rto_min") is None


@needs_root
def test_transfer_and_video_flows_run_as_real_applications_with_their_completion_and_chunks(tmp_path):
    """A 2 MB CUBIC transfer from 0.5 s and a BBR video flow (2 s period,
    0.5 s ON at 8 Mbit/s) through a 20 Mbit/s, 40 ms wired link: the
    transfer completes (flows.parquet completed, fct_s between the link's
    physical limit and 3x it) and every chunk is delivered within a
    second of its start; the summary says both."""
    import pyarrow.parquet as pq

    sc = tmp_path / "tv.toml"
    sc.write_text('name = "tv"\nseed = 1\nduration_s = 5.0\ntopology = "wired"\n[internet]\ndelay_ms = 20.0\n'
                  'rate_mbps = 20.0\n[[flows]]\nid = "xfer"\ncc = "cubic"\nstart_s = 0.5\n'
                  'traffic = { kind = "transfer", size_bytes = 2000000 }\n[[flows]]\nid = "video"\ncc = "bbr"\n'
                  'traffic = { kind = "video", period_s = 2.0, on_s = 0.5, rate_mbps = 8.0 }\n')
    out = tmp_path / "run"
    r = subprocess.run([*XRC, "emulate", str(sc), "--out", str(out), "--quiet"], capture_output=True, text=True,
                       timeout=90)
    assert r.returncode == 0, r.stderr
    fl = pq.read_table(out / "flows.parquet").to_pydict()
    assert fl["completed"] == [1, 0] and fl["bytes_delivered"][0] == 2_000_000
    limit = 2_000_000 * 8 / 20e6 + 0.04
    assert limit < fl["fct_s"][0] < 3 * limit, fl["fct_s"]
    ch = pq.read_table(out / "chunks.parquet").to_pydict()
    assert len(ch["chunk"]) == 3 and set(ch["flow_id"]) == {"video"}
    assert all(0.5 <= d < 1.5 for d in ch["delivery_time_s"]), ch
    s = json.loads((out / "summary.json").read_text())
    assert [f["completed"] for f in s["flows"]] == [True, False]
    assert "chunks.parquet" not in s["not_measured"]
    assert set(pq.read_table(out / "rtt.parquet").to_pydict()["flow"]) == {0, 1}, "RTT samples of both flows"
    assert not no_namespaces_of_children()


@needs_root
def test_twelve_short_transfers_each_start_on_time_and_complete(tmp_path):
    """Twelve 60 kB CUBIC transfers, one every 0.25 s, through a 20 Mbit/s
    wired link with 20 ms each way: each completes, no sooner than the
    link's physical limit (two round trips plus the bytes' serialization)
    and within a second."""
    import pyarrow.parquet as pq

    flows = "".join(f'[[flows]]\nid = "t{k}"\ncc = "cubic"\nstart_s = {0.25 * k}\n'
                    f'traffic = {{ kind = "transfer", size_bytes = 60000 }}\n' for k in range(12))
    sc = tmp_path / "short.toml"
    sc.write_text('name = "short"\nseed = 1\nduration_s = 4.5\ntopology = "wired"\n[internet]\ndelay_ms = 20.0\n'
                  'rate_mbps = 20.0\n' + flows)
    out = tmp_path / "run"
    r = subprocess.run([*XRC, "emulate", str(sc), "--out", str(out), "--quiet"], capture_output=True, text=True,
                       timeout=90)
    assert r.returncode == 0, r.stderr
    fl = pq.read_table(out / "flows.parquet").to_pydict()
    assert fl["completed"] == [1] * 12 and fl["bytes_delivered"] == [60000] * 12, fl
    limit = 2 * 0.040 + 60000 * 8 / 20e6
    assert all(limit < x < 1.0 for x in fl["fct_s"]), fl["fct_s"]
    assert not no_namespaces_of_children()


@needs_root
def test_a_scenarios_mss_initial_window_and_sack_setting_reach_the_real_flow(tmp_path):
    """tcp.mss = 1000, tcp.initial_cwnd = 20 and receiver.sack = false, read
    back from the Internet side's capture (the sender's device): 1000-byte
    segments, 20 of them before the first ACK of data, and no
    SACK-permitted option in the receiver's SYN-ACK. tcp.min_rto_ms = 1000
    and receiver.delayed_ack = false go on routes, which the kernel reports
    as ``rto_min lock 1s`` and ``quickack 1``: the read-back accepts them."""
    import struct

    sc = tmp_path / "w.toml"
    sc.write_text('name = "w"\nseed = 1\nduration_s = 2.0\ntopology = "wired"\n[internet]\ndelay_ms = 20.0\n'
                  'rate_mbps = 20.0\n[[flows]]\ncc = "cubic"\n[flows.tcp]\nmss = 1000\ninitial_cwnd = 20\n'
                  'min_rto_ms = 1000\n[flows.receiver]\nsack = false\ndelayed_ack = false\n')
    out = tmp_path / "run"
    r = subprocess.run([*XRC, "emulate", str(sc), "--out", str(out), "--quiet"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert len(json.loads((out / "summary.json").read_text())["environment"]["kernel_tcp"]["applied"]) == 5
    pkts = []
    for t, p in _pcap_records(out / "inet.pcap"):
        ihl = (p[0] & 0x0F) * 4
        if p[9] != 6:
            continue
        sport, dport, seq, ack = struct.unpack(">HHII", p[ihl:ihl + 12])
        doff, flags = (p[ihl + 12] >> 4) * 4, p[ihl + 13]
        # Captures keep the headers only: the payload length is the IP length's.
        ip_len = struct.unpack(">H", p[2:4])[0]
        pkts.append((t, sport, dport, seq, ack, flags, ip_len - ihl - doff, p[ihl + 20:ihl + doff]))
    # The data connection: the one to port 5201 that carried the most.
    by_port: dict[int, int] = {}
    for x in pkts:
        if x[2] == 5201:
            by_port[x[1]] = by_port.get(x[1], 0) + x[6]
    cport = max(by_port, key=by_port.get)
    data = [x for x in pkts if x[1] == cport and x[2] == 5201]
    back = [x for x in pkts if x[2] == cport and x[1] == 5201]
    assert max(x[6] for x in data) == 1000
    synack = next(x for x in back if x[5] & 0x12 == 0x12)
    opts, i, kinds = synack[7], 0, []
    while i < len(opts) and opts[i] != 0:
        kinds.append(opts[i])
        i += 1 if opts[i] == 1 else max(opts[i + 1], 2)
    assert 2 in kinds and 4 not in kinds, f"MSS present, SACK-permitted absent: {kinds}"
    # iperf3 first sends its 37-byte cookie on the data connection; the
    # window is the flight of full segments after it, up to the first ACK
    # of one of them.
    first = next(x for x in data if x[6] == 1000)
    first_ack = next(x for x in back if x[0] > first[0] and (x[4] - first[3]) % 2**32 < 2**31 and x[4] != first[3])
    assert sum(1 for x in data if x[6] > 0 and first[0] <= x[0] < first_ack[0]) == 20
    assert not no_namespaces_of_children()


def test_the_timing_bench_has_a_help_and_refuses_bad_options_with_exit_2(capsys):
    from xrc.emulation import bench

    with pytest.raises(SystemExit) as e:
        bench.main(["--help"])
    assert e.value.code == 0 and "--ceiling" in capsys.readouterr().out
    for bad in (["--streams", "0", "--cell"], ["--gso", "on"], ["--cell", "--ceiling"], ["--fast"]):
        with pytest.raises(SystemExit) as e:
            bench.main(bad)
        assert e.value.code == 2, bad
        assert "error:" in capsys.readouterr().err
