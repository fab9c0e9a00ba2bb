"""Bad input: every malformed scenario is rejected with exit status 2 and a
message that names the field (and the value where there is one)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from xrc.cli import main

from .conftest import MINIMAL_CELL

TRACE_OK = "1\n2\n3\n"

# (what is wrong, TOML to append or replace, extra files, words the message must contain)
CASES = [
    ("unknown top-level key", MINIMAL_CELL + "\nfoo = 1\n", {}, ["foo", "unknown field"]),
    ("unknown nested key", MINIMAL_CELL + "\n[cell]\nprb = 50\n", {}, ["cell", "prb"]),
    ("negative rate", MINIMAL_CELL + "\n[internet]\nrate_mbps = -5.0\n", {}, ["internet.rate_mbps", "-5"]),
    ("CQI 16", MINIMAL_CELL.replace("cqi = 10", "cqi = 16"), {}, ["ues.0.channel.cqi", "16"]),
    ("zero PRBs", MINIMAL_CELL + "\n[cell]\nprbs = 0\n", {}, ["cell.prbs", "0"]),
    ("not an LTE bandwidth", MINIMAL_CELL + "\n[cell]\nbandwidth_mhz = 7\n", {}, ["bandwidth_mhz", "7"]),
    ("BLER above one", MINIMAL_CELL + "\n[cell.harq]\nbler = 1.5\n", {}, ["cell.harq.bler", "1.5"]),
    ("unknown congestion control", MINIMAL_CELL.replace('cc = "newreno"', 'cc = "fastest"'), {}, ["flows.0", "fastest"]),
    ("unknown scheme parameter", MINIMAL_CELL.replace('cc = "newreno"', 'cc = "xrc"') + "\n[flows.xrc]\nbudget = 5\n", {},
     ["flows.0.xrc", "budget"]),
    ("impossible scheme parameter", MINIMAL_CELL.replace('cc = "newreno"', 'cc = "xrc"') + "\n[flows.xrc]\nbudget_ms = -1.0\n",
     {}, ["flows.0.xrc", "budget_ms", "-1"]),
    ("flow to a missing UE", MINIMAL_CELL.replace("ue = 0", "ue = 3"), {}, ["flows.0.ue", "3"]),
    ("missing seed", MINIMAL_CELL.replace("seed = 3", ""), {}, ["seed"]),
    ("negative duration", MINIMAL_CELL.replace("duration_s = 2.0", "duration_s = -2.0"), {}, ["duration_s", "-2"]),
    ("wrong type", MINIMAL_CELL.replace("duration_s = 2.0", 'duration_s = "long"'), {}, ["duration_s", "long"]),
    ("stop before start", MINIMAL_CELL + "start_s = 1.0\nstop_s = 0.5\n", {}, ["flows.0.stop_s", "0.5"]),
    ("missing trace file", 'seed = 1\nduration_s = 1\ntopology = "trace"\n[trace]\ndownlink = "nope.down"\n'
     '[[flows]]\nue = 0\ncc = "xrc"\n', {}, ["trace.downlink", "nope.down"]),
    ("non-monotonic trace", 'seed = 1\nduration_s = 1\ntopology = "trace"\n[trace]\ndownlink = "bad.down"\n'
     '[[flows]]\nue = 0\ncc = "xrc"\n', {"bad.down": "1\n5\n3\n"}, ["trace.downlink", "line 3", "3"]),
    ("garbage in a trace", 'seed = 1\nduration_s = 1\ntopology = "trace"\n[trace]\ndownlink = "bad.down"\n'
     '[[flows]]\nue = 0\ncc = "xrc"\n', {"bad.down": "1\n2\nhello\n"}, ["trace.downlink", "line 3", "hello"]),
    ("empty trace", 'seed = 1\nduration_s = 1\ntopology = "trace"\n[trace]\ndownlink = "empty.down"\n'
     '[[flows]]\nue = 0\ncc = "xrc"\n', {"empty.down": "\n"}, ["trace.downlink", "no delivery"]),
    ("missing uplink trace file", 'seed = 1\nduration_s = 1\ntopology = "trace"\n[trace]\ndownlink = "ok.down"\n'
     'uplink = "nope.up"\n[[flows]]\nue = 0\ncc = "xrc"\n', {"ok.down": TRACE_OK}, ["trace.uplink", "nope.up"]),
    ("garbage in an uplink trace", 'seed = 1\nduration_s = 1\ntopology = "trace"\n[trace]\ndownlink = "ok.down"\n'
     'uplink = "bad.up"\n[[flows]]\nue = 0\ncc = "xrc"\n', {"ok.down": TRACE_OK, "bad.up": "1\nx2\n"},
     ["trace.uplink", "line 2", "x2"]),
    ("zero-length trace", 'seed = 1\nduration_s = 1\ntopology = "trace"\n[trace]\ndownlink = "zero.down"\n'
     '[[flows]]\nue = 0\ncc = "xrc"\n', {"zero.down": "0\n0\n"}, ["trace.downlink", "last timestamp is 0"]),
    ("uplink trace and fixed uplink delay", 'seed = 1\nduration_s = 1\ntopology = "trace"\n[trace]\n'
     'downlink = "ok.down"\nuplink = "ok.down"\nuplink_delay_ms = 5.0\n[[flows]]\nue = 0\ncc = "xrc"\n',
     {"ok.down": TRACE_OK}, ["trace.uplink_delay_ms", "5", "trace.uplink"]),
    ("uplink queue without an uplink trace", 'seed = 1\nduration_s = 1\ntopology = "trace"\n[trace]\n'
     'downlink = "ok.down"\nuplink_buffer_packets = 10\n[[flows]]\nue = 0\ncc = "xrc"\n',
     {"ok.down": TRACE_OK}, ["trace.uplink_buffer_packets", "trace.uplink"]),
    ("zero uplink queue", 'seed = 1\nduration_s = 1\ntopology = "trace"\n[trace]\n'
     'downlink = "ok.down"\nuplink = "ok.down"\nuplink_buffer_bytes = 0\n[[flows]]\nue = 0\ncc = "xrc"\n',
     {"ok.down": TRACE_OK}, ["trace.uplink_buffer_bytes", "0"]),
    ("not TOML", "seed = = 1\n", {}, ["TOML"]),
    ("cellular without UEs", MINIMAL_CELL.replace('[[ues]]\nchannel = { kind = "fixed_cqi", cqi = 10 }\n', ""), {},
     ["ues"]),
    ("distance range upside down", MINIMAL_CELL.replace(
        'channel = { kind = "fixed_cqi", cqi = 10 }',
        'channel = { kind = "distance", trajectory = { kind = "random_jumps", interval_s = 1.0, min_m = 900.0, max_m = 100.0 } }'),
     {}, ["ues.0.channel.trajectory.min_m", "900"]),
    ("unknown channel kind", MINIMAL_CELL.replace('kind = "fixed_cqi"', 'kind = "magic"'), {}, ["ues.0.channel.kind", "magic"]),
    ("duplicate flow ids", MINIMAL_CELL + 'id = "a"\n[[flows]]\nid = "a"\nue = 0\ncc = "newreno"\n', {},
     ["flows.1.id", "duplicate", '"a"']),
]


@pytest.mark.parametrize("what,text,files,words", CASES, ids=[c[0] for c in CASES])
def test_malformed_scenarios_exit_2_naming_the_field(what, text, files, words, write_scenario, tmp_path, capsys):
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    p = write_scenario(text)
    code = main(["validate", str(p)])
    err = capsys.readouterr().err
    assert code == 2, f"{what}: exit {code}, stderr {err!r}"
    for w in words:
        assert w in err, f"{what}: {w!r} not in {err!r}"
    assert "Traceback" not in err


@pytest.mark.parametrize("assignment,words", [
    ("flows.7.cc=cubic", ["flows", "7"]),
    ("flows.x.cc=cubic", ["flows", "'x'"]),
    ("nonsense", ["PATH=VALUE"]),
    ("duration_s.deep=1", ["duration_s", "not a table"]),
])
def test_bad_overrides_are_rejected_naming_the_path(assignment, words, write_scenario, capsys):
    p = write_scenario(MINIMAL_CELL)
    assert main(["validate", str(p), "--set", assignment]) == 2
    err = capsys.readouterr().err
    for w in words:
        assert w in err, err


def test_overrides_reach_any_field(write_scenario, capsys):
    p = write_scenario(MINIMAL_CELL)
    assert main(["validate", str(p), "--print", "--set", "flows.0.cc=cubic", "--set", "cell.harq.bler=0.2",
                 "--seed", "9"]) == 0
    out = capsys.readouterr().out
    assert '"cc": "cubic"' in out and '"bler": 0.2' in out and '"seed": 9' in out


def test_the_installed_command_exits_2_on_bad_input(write_scenario):
    p = write_scenario(MINIMAL_CELL.replace("cqi = 10", "cqi = 16"))
    r = subprocess.run([sys.executable, "-m", "xrc.cli", "validate", str(p)], capture_output=True, text=True)
    assert r.returncode == 2
    assert "cqi" in r.stderr and "16" in r.stderr


def test_a_bad_run_leaves_existing_results_untouched(write_scenario, tmp_path, capsys):
    out = tmp_path / "run"
    good = write_scenario(MINIMAL_CELL, "good.toml")
    assert main(["run", str(good), "--out", str(out), "--quiet", "--no-plots"]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    bad = write_scenario(MINIMAL_CELL.replace("cqi = 10", "cqi = 16"), "bad.toml")
    assert main(["run", str(bad), "--out", str(out), "--force", "--quiet"]) == 2
    # Without --force an existing run directory is refused.
    assert main(["run", str(good), "--out", str(out), "--quiet"]) == 2
    after = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert before == after
    assert not any(p.name.startswith(".run.partial") for p in tmp_path.iterdir())
