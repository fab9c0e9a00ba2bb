"""Packet captures of a simulated run (``output.pcap``): read back with a
standard pcap reader (dpkt), they hold the run's own sequence numbers,
deliveries, retransmissions, RTT samples and XRC feedback, one connection
per flow, at both ends."""

from __future__ import annotations

import collections
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

import xrc
from xrc import _core
from xrc.outdir import OutputError
from xrc.scenario import ScenarioError

dpkt = pytest.importorskip("dpkt", reason="dpkt is a test extra (pip install -e '.[test]')")

MSS = 1448
#: Two UEs in one cell, an XRC flow on the first and a CUBIC flow on the
#: second: both ends of two connections, with the base station's option.
SCENARIO = """
name = "pcap"
seed = 3
duration_s = 3.0
topology = "cellular"

[internet]
delay_ms = 10.0
rate_mbps = 1000.0

[cell]
bandwidth_mhz = 5

[cell.rlc]
buffer_packets = 64

[[ues]]
channel = { kind = "fixed_cqi", cqi = 12 }

[[ues]]
channel = { kind = "fixed_cqi", cqi = 9 }

[[flows]]
id = "x"
ue = 0
cc = "xrc"

[[flows]]
id = "c"
ue = 1
cc = "cubic"
start_s = 0.5

[output]
pcap = true
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("pcap")
    (d / "s.toml").write_text(SCENARIO)
    return xrc.run(d / "s.toml", out=d / "run")


class Capture:
    """One pcap file as dpkt reads it: the header's fields and, per packet,
    (time as an exact Decimal of seconds, the IPv4 packet, original length)."""

    def __init__(self, path: Path):
        with open(path, "rb") as f:
            reader = dpkt.pcap.Reader(f)
            self.datalink = reader.datalink()
            self.snaplen = reader.snaplen
            self.nanos = reader._Reader__fh.magic == 0xA1B23C4D
            self.packets = [(ts, dpkt.ip.IP(buf), len(buf)) for ts, buf in reader]

    def data(self):
        """(t, tcp, payload length) of every data segment."""
        return [(t, ip.data, payload(ip)) for t, ip, _ in self.packets if payload(ip) > 0]

    def acks(self):
        return [(t, ip.data) for t, ip, _ in self.packets if payload(ip) == 0]


def payload(ip) -> int:
    return ip.len - 4 * ip.hl - 4 * ip.data.off


def captures(run, k: int) -> tuple[Capture, Capture]:
    d = run.directory / "pcap"
    return Capture(d / f"flow{k}-sender.pcap"), Capture(d / f"flow{k}-ue.pcap")


def options(tcp) -> dict[int, bytes]:
    return {kind: value for kind, value in dpkt.tcp.parse_opts(tcp.opts)}


def test_a_run_writes_a_nanosecond_raw_ipv4_capture_at_the_sender_and_at_the_ue_of_each_flow(run):
    names = sorted(p.name for p in (run.directory / "pcap").iterdir())
    assert names == ["flow0-sender.pcap", "flow0-ue.pcap", "flow1-sender.pcap", "flow1-ue.pcap"]
    for k in (0, 1):
        for cap in captures(run, k):
            assert cap.nanos and cap.datalink == 101 and cap.snaplen == 80
            assert cap.packets, "each capture holds packets"
            times = [t for t, _, _ in cap.packets]
            assert times == sorted(times), "records in time order"
            assert all(isinstance(t, Decimal) for t in times)
            for _, ip, kept in cap.packets:
                tcp = ip.data
                assert ip.p == dpkt.ip.IP_PROTO_TCP and ip.df
                assert kept == 4 * ip.hl + 4 * tcp.off, "headers only: the payload is cut"
                assert tcp.flags == dpkt.tcp.TH_ACK


def test_both_ends_of_each_flow_are_its_own_connection_in_the_documented_address_plan(run):
    for k, ue in ((0, 0), (1, 1)):
        sender, at_ue = captures(run, k)
        for cap in (sender, at_ue):
            for _, ip, _ in cap.packets:
                ends = {(ip.src, ip.data.sport), (ip.dst, ip.data.dport)}
                assert ends == {(bytes([10, 77, 0, 1]), 5201), (bytes([10, 77, 0, 2 + ue]), 49152 + k)}
            data = {(ip.src, ip.dst) for _, ip, _ in cap.packets if payload(ip) > 0}
            assert data == {(bytes([10, 77, 0, 1]), bytes([10, 77, 0, 2 + ue]))}, "data goes to the UE"


def test_the_checksums_verify_as_dpkt_computes_them_over_the_zero_filled_payload(run):
    sender, at_ue = captures(run, 0)
    for cap in (sender, at_ue):
        for _, ip, _ in cap.packets[:500]:
            again = dpkt.ip.IP(bytes(ip))
            # The whole packet as it was: its headers and a zero payload.
            again.data.data = bytes(payload(ip))
            want_ip, want_tcp = ip.sum, ip.data.sum
            again.sum = 0
            again.data.sum = 0
            again = dpkt.ip.IP(bytes(again))  # dpkt fills both checksums in when packing
            assert (again.sum, again.data.sum) == (want_ip, want_tcp)


def test_the_sequence_numbers_at_the_ue_add_up_to_the_bytes_the_run_delivered(run):
    flows = run.flows.set_index("flow")
    for k in (0, 1):
        sender, at_ue = captures(run, k)
        # The in-order prefix of what reached the UE is what its application got.
        nxt = 0
        for _, tcp, n in sorted(at_ue.data(), key=lambda d: d[1].seq):
            if tcp.seq <= nxt:
                nxt = max(nxt, tcp.seq + n)
        delivered = int(flows.loc[k, "bytes_delivered"])
        assert delivered > 100 * MSS
        assert nxt == delivered
        # Cumulative ACKs never pass it, and the sender's highest ACK is one
        # the UE sent, at most the UE's highest.
        ue_acks = [tcp.ack for _, tcp in at_ue.acks()]
        sender_acks = [tcp.ack for _, tcp in sender.acks()]
        assert max(ue_acks) <= delivered
        assert max(sender_acks) <= max(ue_acks)
        assert max(sender_acks) in set(ue_acks)


def test_every_segment_the_sender_sent_is_in_its_capture_and_the_repeats_are_the_runs_retransmissions(run):
    flows = run.flows.set_index("flow")
    for k in (0, 1):
        sender, _ = captures(run, k)
        data = sender.data()
        assert len(data) == int(flows.loc[k, "segments_sent"])
        seen: set[int] = set()
        repeats = []
        for t, tcp, n in data:
            if tcp.seq in seen:
                repeats.append((t, tcp.seq))
            seen.add(tcp.seq)
        rtx = run.retransmits[run.retransmits.flow == k]
        assert len(repeats) == int(flows.loc[k, "retransmits"]) == len(rtx)
        assert [s for _, s in repeats] == [int(s) % 2**32 for s in rtx.seq]
        assert [float(t) for t, _ in repeats] == pytest.approx(list(rtx.t), abs=1e-9)


def test_every_ack_reaching_the_sender_left_the_ue_earlier_with_the_same_fields(run):
    for k in (0, 1):
        sender, at_ue = captures(run, k)
        left = collections.defaultdict(list)
        for t, tcp in at_ue.acks():
            o = options(tcp)
            left[(tcp.ack, o[dpkt.tcp.TCP_OPT_TIMESTAMP], o.get(dpkt.tcp.TCP_OPT_SACK))].append(t)
        for t, tcp in sender.acks():
            o = options(tcp)
            when = left[(tcp.ack, o[dpkt.tcp.TCP_OPT_TIMESTAMP], o.get(dpkt.tcp.TCP_OPT_SACK))]
            # At least the Internet path's 10 ms after it left the UE.
            assert when and min(when) <= t - Decimal("0.010")


def test_rtt_samples_from_matching_data_to_its_ack_are_the_runs_rtt_table(run):
    for k in (0, 1):
        sender, _ = captures(run, k)
        sent = collections.defaultdict(list)
        for t, tcp, _ in sender.data():
            sent[tcp.seq].append(t)
        # An ACK that moves the cumulative ACK past a segment sent once and
        # not SACKed before gives the sample of that segment (Karn's rule;
        # the run's sender samples the first segment it newly acknowledges
        # and, from SACK blocks, others: several samples at one instant).
        ours = []
        sacked: set[int] = set()
        una = 0
        for t, tcp in sender.acks():
            if tcp.ack > una:
                if len(sent[una]) == 1 and una not in sacked:
                    ours.append((round(float(t), 9), float(t - sent[una][0]) * 1e3))
                una = tcp.ack
            blocks = options(tcp).get(dpkt.tcp.TCP_OPT_SACK, b"")
            for i in range(0, len(blocks), 8):
                start, end = int.from_bytes(blocks[i:i + 4], "big"), int.from_bytes(blocks[i + 4:i + 8], "big")
                sacked.update(range(start, end, MSS))
        rtt = run.rtt[run.rtt.flow == k]
        rows = collections.defaultdict(list)
        for t, ms in zip(rtt.t, rtt.rtt_ms):
            rows[round(float(t), 9)].append(ms)
        assert len(rtt) > 100 and len(ours) >= 0.5 * len(rtt), (len(ours), len(rtt))
        for t, ms in ours:
            assert any(abs(m - ms) < 1e-6 for m in rows.get(t, [])), (t, ms, rows.get(t))
        # The timestamps echo the data's send time (µs): TSecr - TSval is the same RTT.
        tsval = {}
        for t, tcp, _ in sender.data():
            tsval.setdefault(int.from_bytes(options(tcp)[dpkt.tcp.TCP_OPT_TIMESTAMP][:4], "big"), t)
        for t, tcp in sender.acks()[:200]:
            ecr = int.from_bytes(options(tcp)[dpkt.tcp.TCP_OPT_TIMESTAMP][4:], "big")
            if ecr:
                assert tsval[ecr] < t and int(tsval[ecr] * 10**6) == ecr


def test_acks_reaching_an_xrc_sender_carry_the_base_stations_option_and_those_leaving_the_ue_do_not(run):
    sender, at_ue = captures(run, 0)
    assert not any(253 in options(tcp) for _, tcp in at_ue.acks())
    written = []
    for t, tcp in sender.acks():
        o = options(tcp).get(253)
        if o is not None:
            assert o[:2] == b"XR", "the experiment identifier 0x5852"
            written.append((float(t), int.from_bytes(o[2:6], "big") * 1e3, int.from_bytes(o[6:8], "big") * 0.1))
    fb = run.feedback[run.feedback.flow == 0]
    assert len(written) > 100
    # Every option the sender got is in the feedback table, to the quantum.
    got = {(round(t, 9), round(r)) for t, r, _ in written}
    table = {(round(t, 9), round(r)) for t, r in zip(fb.t, fb.rate_mbps * 1e6)}
    assert got <= table, sorted(got - table)[:5]


def test_a_run_held_in_memory_refuses_output_pcap_naming_the_field(tmp_path):
    (tmp_path / "s.toml").write_text(SCENARIO)
    with pytest.raises(ScenarioError, match=r"output\.pcap"):
        xrc.run(tmp_path / "s.toml")


def test_the_core_refuses_output_pcap_without_a_directory_to_write_into(tmp_path):
    (tmp_path / "s.toml").write_text(SCENARIO)
    from xrc.scenario import load

    js = load(tmp_path / "s.toml").resolved_json()
    with pytest.raises(ValueError, match=r"output\.pcap"):
        _core.Simulation(js)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full to fail a write as a full disk does")
def test_a_capture_that_cannot_be_written_is_an_oserror_naming_the_file_and_the_run_directory_is_not_left(tmp_path):
    from xrc.scenario import load

    (tmp_path / "s.toml").write_text(SCENARIO)
    js = load(tmp_path / "s.toml").resolved_json()
    d = tmp_path / "pcap"
    d.mkdir()
    (d / "flow1-ue.pcap").symlink_to("/dev/full")
    sim = _core.Simulation(js, pcap_dir=str(d))
    with pytest.raises(OSError) as e:
        sim.run_until(sim.end_s)
    assert e.value.errno == 28 and e.value.filename == str(d / "flow1-ue.pcap")


def test_a_failed_run_leaves_no_capture_behind(tmp_path, monkeypatch):
    (tmp_path / "s.toml").write_text(SCENARIO)
    from xrc import stream

    def fail(*a, **k):
        raise OSError(28, "No space left on device", "somewhere")

    # The tables' first write fails once the captures are being written.
    monkeypatch.setattr(stream.TableSink, "add", fail)
    with pytest.raises(OutputError, match="No space left"):
        xrc.run(tmp_path / "s.toml", out=tmp_path / "run")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]


@pytest.mark.skipif(shutil.which("tcpdump") is None, reason="tcpdump is not installed (the Debian package tcpdump)")
def test_tcpdump_reads_the_captures_with_their_sack_blocks_and_the_xrc_option(run):
    def read(name: str) -> list[str]:
        return subprocess.run(["tcpdump", "-nn", "-r", str(run.directory / "pcap" / name)],
                              capture_output=True, text=True, check=True).stdout.splitlines()

    xrc_flow, cubic_flow = read("flow0-sender.pcap"), read("flow1-sender.pcap")
    assert any("10.77.0.1.5201 > 10.77.0.2.49152" in line and "length 1448" in line for line in xrc_flow)
    assert any("10.77.0.2.49152 > 10.77.0.1.5201" in line and "0x5852" in line for line in xrc_flow)
    assert any("10.77.0.3.49153 > 10.77.0.1.5201" in line and "sack 1 {" in line for line in cubic_flow)


def test_a_scenario_of_more_flows_than_a_capture_holds_is_refused_naming_output_pcap(tmp_path):
    from xrc.scenario import load_text

    flows = "".join(f'[[flows]]\nid = "f{k}"\ncc = "cubic"\n' for k in range(251))
    text = ('seed = 1\nduration_s = 1.0\ntopology = "wired"\n[internet]\nrate_mbps = 10.0\n'
            f"{flows}[output]\npcap = true\n")
    with pytest.raises(ScenarioError, match=r"output\.pcap: .* at most 250 flows, got 251"):
        load_text(text, base=tmp_path)
    load_text(text.replace("pcap = true", "pcap = false"), base=tmp_path)
