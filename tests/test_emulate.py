"""``xrc emulate``: refusals (exit 2, nothing left behind) on any machine;
real runs through the cell where root, TUN, ``iperf3`` and ``ping`` are
available (skipped with the reason otherwise). Every run is bounded in
time; none asserts wall-clock accuracy (see ``skip_unless_quiet`` in
test_emulator.py): what is asserted is what the model and the files say."""

from __future__ import annotations

import json
import os
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


@pytest.mark.parametrize("cc", ["xrc", "copa"])
def test_a_flow_whose_congestion_control_the_kernel_lacks_is_refused_naming_the_flow_and_the_cc(tmp_path, capsys, cc):
    out = tmp_path / "out"
    rc = main(["emulate", str(cell_toml(tmp_path, cc=cc)), "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2
    assert "flows.0.cc" in err and repr(cc) in err, err
    assert not out.exists() and not list(tmp_path.glob(".out*")), "nothing left behind"


def test_a_non_bulk_flow_a_missing_command_and_too_many_ues_are_refused_with_exit_2(tmp_path, capsys):
    video = cell_toml(tmp_path, extra='traffic = { kind = "video" }')
    assert main(["emulate", str(video)]) == 2
    assert "flows.0.traffic.kind" in capsys.readouterr().err
    assert main(["emulate", str(cell_toml(tmp_path)), "--", "no-such-binary-xrc"]) == 2
    assert "no-such-binary-xrc" in capsys.readouterr().err
    many = from_dict({"seed": 1, "duration_s": 1, "topology": "cellular",
                      "ues": [{"channel": {"kind": "fixed_cqi", "cqi": 9}}] * 254,
                      "flows": [{"cc": "cubic", "ue": 0}]}).resolved
    with pytest.raises(em.EmulateError, match="at most 253 UEs, got 254"):
        em.plan(many, command=None, run_flows=True, out=True)


def test_an_address_of_the_emulators_prefix_on_the_host_is_an_address_clash(tmp_path, monkeypatch):
    monkeypatch.setattr(em, "_host_addresses", lambda: [("eth9", "10.77.0.5")])
    monkeypatch.setattr(em, "missing_requirements", lambda tools: [])
    r = from_dict({"seed": 1, "duration_s": 1, "topology": "cellular",
                   "ues": [{"channel": {"kind": "fixed_cqi", "cqi": 9}}], "flows": [{"cc": "cubic", "ue": 0}]})
    with pytest.raises(em.EmulateError, match="address clash.*10.77.0.5 on eth9"):
        em.plan(r.resolved, command=None, run_flows=True, out=True)


@pytest.mark.skipif(os.geteuid() == 0, reason="checks the refusal without root; runs as root here")
def test_without_root_it_refuses_with_exit_2(tmp_path, capsys):
    assert main(["emulate", str(cell_toml(tmp_path))]) == 2
    assert "root" in capsys.readouterr().err


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
    p = subprocess.Popen([*XRC, "emulate", str(cell_toml(tmp_path, duration=30.0)), "--out", str(out), "--quiet"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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
