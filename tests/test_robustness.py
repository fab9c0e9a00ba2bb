"""Robustness on the user's path (issue 9, defects 1-11): no crash, hang,
traceback or silent wrong number whatever the input. Each test failed
before the fix it guards.

Grouped as the issue groups them: crashes and hangs, tracebacks, silent
wrong results, files and processes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from xrc.cli import main

from .conftest import MINIMAL_CELL, SCENARIOS, small_tmpfs

XRC = [sys.executable, "-m", "xrc.cli"]

TRACE_SCENARIO = """
seed = 1
duration_s = 2.0
topology = "trace"
[trace]
downlink = "t.down"
[[flows]]
cc = "newreno"
"""


def _xrc(*args, timeout=120, **kw):
    """Runs the installed command in a fresh process (so a panic, a hang or a
    traceback shows as it would to a user)."""
    return subprocess.run([*XRC, *map(str, args)], capture_output=True, text=True, timeout=timeout, **kw)


def _no_traceback(r):
    assert "Traceback" not in r.stderr and "panicked" not in r.stderr, r.stderr


# ---------------------------------------------------------------------------
# 1-2. Crashes and hangs: values the core cannot represent, resources it
# cannot hold.

# (override, the field the message must name): each passed validation and
# then panicked, hung, or became zero in the core.
UNREPRESENTABLE = [
    ("internet.delay_ms=1e20", "internet.delay_ms"),
    ("flows.0.start_s=1e12", "flows.0.start_s"),
    ("internet.rate_mbps=1e20", "internet.rate_mbps"),
    ("internet.rate_mbps=1e-300", "internet.rate_mbps"),
    ("output.bin_ms=1e20", "output.bin_ms"),
    ("output.bin_ms=1e-12", "output.bin_ms"),
    ("output.bin_ms=1e-6", "output.bin_ms"),
    ("cell.uplink.sr_period_ms=1e20", "cell.uplink.sr_period_ms"),
    ("cell.tti_ms=1e-12", "cell.tti_ms"),
    ("internet.buffer_bytes=10", "internet.buffer_bytes"),
    ("flows.0.traffic={kind='video', period_s=1e20, on_s=1.0}", "flows.0.traffic.period_s"),
    ("ues.0.channel={kind='distance', trajectory={kind='random_jumps', interval_s=1e-12, min_m=10.0, max_m=20.0}}",
     "ues.0.channel.trajectory.interval_s"),
    ("ues.0.channel={kind='distance', trajectory={kind='schedule', points=[[0.0, 100.0], [1e20, 200.0]]}}",
     "ues.0.channel.trajectory.points.1"),
    ("flows.0.tcp.initial_cwnd=4294967295", "flows.0.tcp.initial_cwnd"),
    ("flows.0.tcp.min_rto_ms=1e-300", "flows.0.tcp.min_rto_ms"),
    ("duration_s=1e7", "duration_s"),
]


@pytest.mark.parametrize("override,field", UNREPRESENTABLE, ids=[u[0].split("=")[0] for u in UNREPRESENTABLE])
def test_a_value_the_core_cannot_represent_is_refused_naming_the_field(override, field, write_scenario, capsys):
    # Refused by validation, so `xrc run` never reaches the core with it.
    p = write_scenario(MINIMAL_CELL)
    assert main(["validate", str(p), "--set", override]) == 2
    err = capsys.readouterr().err
    assert field in err, err


@pytest.mark.parametrize("scheme,override,field", [
    ("xrc", "flows.0.xrc.probe_segments=1e20", "flows.0.xrc.probe_segments"),
    ("natcp", "flows.0.natcp.min_cwnd=4294967295", "flows.0.natcp.min_cwnd"),
    ("copa", "flows.0.copa.min_cwnd=4294967295", "flows.0.copa.min_cwnd"),
    ("abc", "flows.0.abc.min_cwnd=4294967295", "flows.0.abc.min_cwnd"),
])
def test_a_window_too_large_to_hold_in_memory_is_refused(scheme, override, field, write_scenario, capsys):
    p = write_scenario(MINIMAL_CELL)
    assert main(["validate", str(p), "--set", f"flows.0.cc={scheme}", "--set", override]) == 2
    err = capsys.readouterr().err
    table, _, name = field.rpartition(".")
    assert table in err and name in err and "1048576" in err, err


def test_a_cqi_file_time_the_core_cannot_represent_is_refused(tmp_path, capsys):
    (tmp_path / "cqi.txt").write_text("0 15\n1e14 3\n")
    (tmp_path / "s.toml").write_text(MINIMAL_CELL.replace('{ kind = "fixed_cqi", cqi = 10 }',
                                                          '{ kind = "cqi_trace", file = "cqi.txt" }'))
    assert main(["validate", str(tmp_path / "s.toml")]) == 2
    err = capsys.readouterr().err
    assert "ues.0.channel" in err and "1e14" in err


def test_a_trace_whose_period_overflows_is_refused_naming_the_line(tmp_path, capsys):
    # 2^58 + 1 ms: its period in nanoseconds wraps a u64 (the run went at 23 Mbit/s).
    (tmp_path / "t.down").write_text("0\n288230376151711745\n")
    (tmp_path / "s.toml").write_text(TRACE_SCENARIO)
    assert main(["validate", str(tmp_path / "s.toml")]) == 2
    err = capsys.readouterr().err
    assert "trace.downlink" in err and "line 2" in err and "288230376151711745" in err




# ---------------------------------------------------------------------------
# 3. Tracebacks instead of messages.

def test_a_toml_date_is_refused_naming_the_field(write_scenario):
    p = write_scenario(MINIMAL_CELL)
    r = _xrc("validate", p, "--set", "duration_s=1979-05-27")
    _no_traceback(r)
    assert r.returncode == 2 and "duration_s" in r.stderr and "1979-05-27" in r.stderr
    p.write_text(MINIMAL_CELL.replace("duration_s = 2.0", "duration_s = 1979-05-27T07:32:00Z"))
    r = _xrc("validate", p)
    _no_traceback(r)
    assert r.returncode == 2 and "duration_s" in r.stderr


def test_a_scenario_with_a_utf8_byte_order_mark_reads_like_one_without(tmp_path, capsys):
    p = tmp_path / "bom.toml"
    p.write_bytes(b"\xef\xbb\xbf" + MINIMAL_CELL.encode())
    assert main(["validate", str(p)]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("newline", ["\r", "\r\n", "\ufeff"], ids=["CR only", "CRLF", "BOM"])
def test_a_trace_with_other_line_ends_or_a_bom_runs_as_the_plain_one(newline, tmp_path):
    lines = [str(i) for i in range(1, 101)]
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "t.down").write_text("\n".join(lines) + "\n")
    (plain / "s.toml").write_text(TRACE_SCENARIO)
    other = tmp_path / "other"
    other.mkdir()
    text = ("\ufeff" + "\n".join(lines)) if newline == "\ufeff" else newline.join(lines) + newline
    (other / "t.down").write_bytes(text.encode())
    (other / "s.toml").write_text(TRACE_SCENARIO)
    for d in (plain, other):
        r = _xrc("run", d / "s.toml", "--out", d / "o", "--no-plots", "--quiet")
        _no_traceback(r)
        assert r.returncode == 0, r.stderr
    assert (plain / "o" / "flow_throughput.parquet").read_bytes() == (other / "o" / "flow_throughput.parquet").read_bytes()


def test_a_cqi_file_with_cr_line_ends_reads_like_one_with_lf(tmp_path, capsys):
    (tmp_path / "cqi.txt").write_bytes(b"0 15\r1000 5\r")
    (tmp_path / "s.toml").write_text(MINIMAL_CELL.replace('{ kind = "fixed_cqi", cqi = 10 }',
                                                          '{ kind = "cqi_trace", file = "cqi.txt" }'))
    assert main(["validate", str(tmp_path / "s.toml"), "--print"]) == 0
    assert json.loads(capsys.readouterr().out)["ues"][0]["channel"]["points"] == [[0.0, 15], [1000.0, 5]]


def test_an_over_long_file_name_is_a_message(tmp_path):
    r = _xrc("validate", tmp_path / ("x" * 300 + ".toml"))
    _no_traceback(r)
    assert r.returncode == 2 and "xrc: error" in r.stderr
    s = tmp_path / "s.toml"
    s.write_text(MINIMAL_CELL)
    r = _xrc("run", s, "--out", tmp_path / ("y" * 300), "--no-plots", "--quiet")
    _no_traceback(r)
    assert r.returncode == 2 and "--out" in r.stderr


def test_a_directory_that_is_not_a_run_directory_is_named_as_such(tmp_path):
    r = _xrc("validate", tmp_path)
    _no_traceback(r)
    assert r.returncode == 2 and "is a directory but not a run directory" in r.stderr


def test_an_unwritable_out_is_a_message(write_scenario):
    p = write_scenario(MINIMAL_CELL)
    r = _xrc("run", p, "--out", "/proc/xrc-run", "--no-plots", "--quiet")
    _no_traceback(r)
    assert r.returncode == 2 and "/proc/xrc-run" in r.stderr


def test_a_full_disk_is_a_message_and_leaves_nothing_behind(write_scenario, tmp_path):
    with small_tmpfs(tmp_path, "96k") as disk:
        p = write_scenario(MINIMAL_CELL)
        r = _xrc("run", p, "--out", disk / "run", "--quiet", "--set", "duration_s=20")
        _no_traceback(r)
        assert r.returncode == 2 and "No space left" in r.stderr, r.stderr
        assert list(disk.iterdir()) == []


def test_a_closed_output_pipe_is_not_a_traceback(tmp_path):
    # Far more output than a pipe holds (64 KB): 50,000 CQI points, inlined.
    (tmp_path / "cqi.txt").write_text("".join(f"{i} {1 + i % 15}\n" for i in range(50_000)))
    p = tmp_path / "big.toml"
    p.write_text(MINIMAL_CELL.replace('{ kind = "fixed_cqi", cqi = 10 }', '{ kind = "cqi_trace", file = "cqi.txt" }'))
    proc = subprocess.Popen([*XRC, "validate", str(p), "--print"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert proc.returncode == 2


# ---------------------------------------------------------------------------
# 4-8. Silent wrong results.

def _run(scenario, out, *extra):
    assert main(["run", str(scenario), "--out", str(out), "--quiet", "--no-plots", *extra]) == 0
    return json.loads((out / "summary.json").read_text())


def test_a_trace_flow_without_a_ue_is_on_ue_0_and_the_oracle_gets_the_trace(tmp_path):
    (tmp_path / "s.toml").write_text(f"""
seed = 1
duration_s = 10.0
topology = "trace"
[trace]
downlink = "{SCENARIOS / 'traces' / 'synthetic-lte.down'}"
[[flows]]
cc = "oracle"
""")
    s = _run(tmp_path / "s.toml", tmp_path / "o")
    f, u = s["flows"][0], s["ues"][0]
    assert f["ue"] == 0
    # The oracle sends at the trace's capacity (it got 0.2-1.1 Mbit/s of 16).
    assert f["goodput_mbps"] > 0.8 * u["capacity_mbps"], (f, u)


TWO_UES = MINIMAL_CELL.replace('cc = "newreno"', 'cc = "cubic"').replace("cqi = 10", "cqi = 15") + """
[[ues]]
channel = { kind = "fixed_cqi", cqi = 3 }
[[flows]]
ue = 1
cc = "cubic"
"""


def test_utilization_cannot_exceed_one_and_the_fair_share_ratio_keeps_its_own_name(tmp_path):
    # Two UEs at CQI 15 and 3: when one leaves PRBs idle the scheduler gives
    # them to the other, which then gets more than its equal share (the old
    # "utilization", delivered over the equal share, said 1.13 here).
    (tmp_path / "s.toml").write_text(TWO_UES)
    ratios = []
    for k, extra in enumerate([["--set", "cell.scheduler=rr", "--set", "flows.0.cc=xrc", "--set", "flows.1.cc=xrc"],
                               ["--set", "cell.scheduler=pf"]]):
        s = _run(tmp_path / "s.toml", tmp_path / f"o{k}", "--set", "duration_s=8", "--set", "cell.harq.bler=0",
                 *extra)
        for u in s["ues"]:
            assert 0 < u["utilization"] <= 1.0, u
            assert u["capacity_mbps"] >= u["fair_share_mbps"] and u["capacity_mbps"] >= u["delivered_mbps"] * 0.99
            ratios.append(u["fair_share_ratio"])
    assert max(ratios) > 1.05, f"the scenario shows the effect: {ratios}"


def test_the_throughput_bins_hold_every_byte_including_those_delivered_at_the_end(tmp_path, write_scenario):
    p = write_scenario(MINIMAL_CELL)
    for k, d in enumerate(["2", "3", "2.05"]):
        out = tmp_path / f"o{k}"
        _run(p, out, "--set", f"duration_s={d}", "--seed", str(k))
        tp = pq.read_table(out / "flow_throughput.parquet").to_pydict()
        fl = pq.read_table(out / "flows.parquet").to_pydict()
        assert sum(tp["bytes"]) == fl["bytes_delivered"][0], d


def test_queuing_delay_is_reported_per_packet_beside_hol_delay_over_time(tmp_path):
    (tmp_path / "s.toml").write_text(f"""
seed = 1
duration_s = 20.0
topology = "trace"
[trace]
downlink = "{SCENARIOS / 'traces' / 'synthetic-lte.down'}"
[[flows]]
cc = "cubic"
""")
    s = _run(tmp_path / "s.toml", tmp_path / "o")
    u = s["ues"][0]
    qd = pq.read_table(tmp_path / "o" / "queue_delay.parquet").to_pydict()["delay_ms"]
    import numpy as np

    assert set(u["queuing_delay_ms"]) == set(u["hol_delay_ms"]) == {"p50", "p80", "p90", "p95", "p99"}
    assert u["queuing_delay_ms"]["p95"] == pytest.approx(float(np.percentile(qd, 95)))
    assert 0 <= u["frac_packets_queued_below_budget"] <= 1
    # Over packets the busy periods weigh more than over time.
    assert u["queuing_delay_ms"]["p50"] != u["hol_delay_ms"]["p50"]


def test_parameters_for_a_scheme_the_flow_does_not_use_are_refused(write_scenario, capsys):
    p = write_scenario(MINIMAL_CELL + "\n[flows.cubic]\nhystart = true\n")
    assert main(["validate", str(p)]) == 2
    err = capsys.readouterr().err
    assert "flows.0.cubic" in err and "newreno" in err
    # The same table for the scheme the flow uses is fine.
    assert main(["validate", str(p), "--set", "flows.0.cc=cubic"]) == 0


def test_a_flow_that_starts_after_the_end_is_refused(write_scenario, capsys):
    p = write_scenario(MINIMAL_CELL)
    assert main(["validate", str(p), "--set", "flows.0.start_s=5"]) == 2
    assert "flows.0.start_s" in capsys.readouterr().err


def test_conflicting_bandwidth_and_prbs_are_refused(write_scenario, capsys):
    p = write_scenario(MINIMAL_CELL + "\n[cell]\nbandwidth_mhz = 20\nprbs = 50\n")
    assert main(["validate", str(p)]) == 2
    err = capsys.readouterr().err
    assert "cell.bandwidth_mhz" in err and "prbs" in err


DETERMINISTIC = """
seed = 1
duration_s = 3.0
topology = "wired"
[internet]
rate_mbps = 10.0
[[flows]]
cc = "newreno"
"""


def test_a_seed_sweep_over_a_scenario_without_randomness_says_so(tmp_path, capsys):
    (tmp_path / "base.toml").write_text(DETERMINISTIC)
    (tmp_path / "sw.toml").write_text('scenario = "base.toml"\nseeds = 3\n[grid]\n"flows.0.cc" = ["newreno", "bbr"]\n')
    assert main(["sweep", str(tmp_path / "sw.toml"), "--out", str(tmp_path / "o"), "--jobs", "1", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "warning" in err and "newreno" in err and "no randomness" in err, err
    assert "bbr" not in err, "BBR draws from the master seed: its seeds differ"
    report = json.loads((tmp_path / "o" / "sweep.json").read_text())
    assert len(report["warnings"]) == 1 and "newreno" in report["warnings"][0]


def test_a_claim_whose_seeds_all_agree_says_its_interval_means_nothing():
    from xrc.reproduce.report import Claims

    c = Claims()
    c.add("same", "a claim", "paper", [50, 50, 50], unit="%", measure="it", op=">", threshold=0)
    c.add("varies", "a claim", "paper", [40, 50, 60], unit="%", measure="it", op=">", threshold=0)
    same, varies = c.items
    assert same["ci95"] == 0 and "no randomness" in same["note"]
    assert "no randomness" not in varies["note"]


# ---------------------------------------------------------------------------
# 9-11. Files and processes.

def _run_dir(tmp_path, name="run"):
    p = tmp_path / "s.toml"
    if not p.exists():
        p.write_text(MINIMAL_CELL)
    out = tmp_path / name
    assert main(["run", str(p), "--out", str(out), "--quiet", "--no-plots"]) == 0
    return p, out


def test_force_replaces_a_run_directory_but_never_anything_else(tmp_path, capsys):
    p = tmp_path / "s.toml"
    p.write_text(MINIMAL_CELL)
    thesis = tmp_path / "thesis"
    thesis.mkdir()
    (thesis / "thesis.tex").write_text("years of work")
    assert main(["run", str(p), "--out", str(thesis), "--force", "--quiet", "--no-plots"]) == 2
    assert "not an xrc run directory" in capsys.readouterr().err
    assert (thesis / "thesis.tex").read_text() == "years of work"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["s.toml", "thesis"]
    # A run directory is replaced.
    _, out = _run_dir(tmp_path)
    (out / "extra").write_text("old run")
    assert main(["run", str(p), "--out", str(out), "--force", "--quiet", "--no-plots", "--seed", "5"]) == 0
    assert not (out / "extra").exists() and json.loads((out / "summary.json").read_text())["seed"] == 5


KILL_AT = """
import os, sys
from xrc import outdir
from xrc.cli import main
where = sys.argv[1]
if where == "before-exchange":
    outdir._exchange = lambda a, b: os._exit(9)
elif where == "after-exchange":
    real = outdir._exchange
    def ex(a, b):
        real(a, b)
        os._exit(9)
    outdir._exchange = ex
elif where == "between-renames":
    outdir._exchange = lambda a, b: False
    real_rename = os.rename
    calls = []
    def rn(a, b):
        real_rename(a, b)
        calls.append(1)
        if len(calls) == 1:
            os._exit(9)
    outdir.os.rename = rn
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("where", ["before-exchange", "after-exchange", "between-renames"])
def test_a_kill_during_force_leaves_the_old_or_the_new_run_directory(where, tmp_path):
    p, out = _run_dir(tmp_path)
    old = (out / "summary.json").read_text()
    r = subprocess.run([sys.executable, "-c", KILL_AT, where, "run", str(p), "--out", str(out), "--force", "--quiet",
                        "--no-plots", "--seed", "7"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 9, r.stderr
    if where == "between-renames":
        # The file system could not exchange: the next run to the same place
        # puts the old directory back before anything else.
        assert main(["validate", str(p)]) == 0
        assert main(["run", str(p), "--out", str(out), "--quiet", "--no-plots"]) == 2  # exists: needs --force
    seed = json.loads((out / "summary.json").read_text())["seed"]
    assert (seed == 3 and (out / "summary.json").read_text() == old) or seed == 7
    assert (out / "metadata.json").is_file() and (out / "flows.parquet").is_file()
    # Whatever was left beside it goes with the next run.
    assert main(["run", str(p), "--out", str(out), "--force", "--quiet", "--no-plots"]) == 0
    assert sorted(x.name for x in tmp_path.iterdir()) == ["run", "s.toml"]


def test_staging_directories_of_dead_runs_are_removed_and_others_kept(tmp_path):
    p, out = _run_dir(tmp_path)
    dead = tmp_path / ".run.partial-999999999"
    dead.mkdir()
    (dead / ".xrc-staging").touch()
    alive = tmp_path / f".run.partial-{os.getppid()}"
    alive.mkdir()
    (alive / ".xrc-staging").touch()
    foreign = tmp_path / ".run.partial-999999998"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("not ours")
    # Killed between creating its staging directory and marking it.
    unmarked = tmp_path / ".run.partial-999999997"
    unmarked.mkdir()
    assert main(["run", str(p), "--out", str(out), "--force", "--quiet", "--no-plots"]) == 0
    assert not dead.exists() and alive.exists() and foreign.exists() and not unmarked.exists()


# A path with no bottleneck (1 Tbit/s, no queue limit): the window grows to
# TCP's largest, and the run is long in wall time. 65000-byte segments keep
# each burst (one event) to 16,520 packets.
# About 5 s of wall time per 30 simulated seconds on the 2026-11-25 host:
# 300 s, so that a run is still going when the tests below interrupt it
# after 3-5 s on a host several times faster than that.
HEAVY = """
seed = 1
duration_s = 300.0
topology = "wired"
[internet]
rate_mbps = 1e6
buffer_packets = 4000000000
[output]
rtt_trace = false
[[flows]]
cc = "newreno"
tcp = { mss = 65000 }
"""


def _interrupt_after(proc, seconds, group=False):
    time.sleep(seconds)
    assert proc.poll() is None, "still running when interrupted"
    t0 = time.monotonic()
    (os.killpg if group else os.kill)(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail("Ctrl-C did not stop it within 20 s")
    return time.monotonic() - t0


def test_ctrl_c_stops_a_run_at_once_and_leaves_nothing_behind(tmp_path):
    (tmp_path / "s.toml").write_text(HEAVY)
    proc = subprocess.Popen([*XRC, "run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o"), "--no-plots"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    took = _interrupt_after(proc, 3.0)
    assert took < 2.0, f"{took:.1f} s to stop"
    assert proc.returncode == 130 and b"interrupted" in proc.stderr.read()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["s.toml"]


def test_ctrl_c_stops_a_sweep_at_once_without_starting_more_runs(tmp_path):
    (tmp_path / "base.toml").write_text(HEAVY)
    (tmp_path / "sw.toml").write_text('scenario = "base.toml"\nseeds = 12\n')
    proc = subprocess.Popen([*XRC, "sweep", str(tmp_path / "sw.toml"), "--out", str(tmp_path / "o"), "--jobs", "2",
                             "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    took = _interrupt_after(proc, 5.0, group=True)
    assert took < 5.0, f"{took:.1f} s to stop"
    assert proc.returncode == 130
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)  # no worker left behind
    runs = tmp_path / "o" / "runs"
    assert not any((d / "summary.json").exists() for d in runs.iterdir())


def test_a_sweep_resumed_after_its_base_scenario_changed_runs_again(tmp_path):
    base = tmp_path / "base.toml"
    base.write_text(DETERMINISTIC)
    (tmp_path / "sw.toml").write_text('scenario = "base.toml"\nseeds = 1\n[grid]\n"flows.0.cc" = ["newreno", "cubic"]\n')
    out = tmp_path / "o"
    assert main(["sweep", str(tmp_path / "sw.toml"), "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    before = pq.read_table(out / "summary.parquet").to_pydict()
    base.write_text(DETERMINISTIC.replace("rate_mbps = 10.0", "rate_mbps = 2.0"))
    assert main(["sweep", str(tmp_path / "sw.toml"), "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    after = pq.read_table(out / "summary.parquet").to_pydict()
    assert max(after["goodput_mbps"]) < 2.0 < min(before["goodput_mbps"]), (before["goodput_mbps"], after["goodput_mbps"])
    assert set(after["run_id"]).isdisjoint(before["run_id"])


def _parquets(d):
    return {p.name: p.read_bytes() for p in sorted(d.glob("*.parquet"))}


def test_a_run_directory_reruns_exactly_from_its_toml_its_json_or_itself(tmp_path):
    # A relative trace, a CQI-free trace scenario and an override: all three
    # broke a rerun (the override was lost, the path resolved from the run
    # directory, the JSON was not TOML).
    src = tmp_path / "src"
    src.mkdir()
    (src / "t.down").write_text("".join(f"{i}\n" for i in range(1, 201)))
    (src / "s.toml").write_text(TRACE_SCENARIO.replace('cc = "newreno"', 'cc = "xrc"'))
    first = tmp_path / "first"
    _run(src / "s.toml", first, "--set", "flows.0.cc=cubic", "--set", "duration_s=3")
    assert json.loads((first / "summary.json").read_text())["flows"][0]["cc"] == "cubic"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.chdir(elsewhere)
    for k, again in enumerate([first / "scenario.toml", first / "scenario.resolved.json", first]):
        out = tmp_path / f"again{k}"
        _run(again, out)
        assert _parquets(out) == _parquets(first), again
        assert (out / "scenario.resolved.json").read_text() == (first / "scenario.resolved.json").read_text()
    assert "--set flows.0.cc=cubic" in (first / "scenario.toml").read_text()
    assert (first / "scenario.given.toml").read_text() == (src / "s.toml").read_text()


def test_a_cqi_file_is_recorded_with_its_hash_and_inlined_for_reruns(tmp_path):
    (tmp_path / "cqi.txt").write_text("0 15\n1000 5\n")
    (tmp_path / "s.toml").write_text(MINIMAL_CELL.replace('{ kind = "fixed_cqi", cqi = 10 }',
                                                          '{ kind = "cqi_trace", file = "cqi.txt" }'))
    _run(tmp_path / "s.toml", tmp_path / "a")
    meta = json.loads((tmp_path / "a" / "metadata.json").read_text())
    assert meta["inputs"]["ues.0.channel.file"]["path"] == str(tmp_path / "cqi.txt")
    (tmp_path / "cqi.txt").write_text("0 1\n")  # the file changes; the run directory does not
    _run(tmp_path / "a" / "scenario.toml", tmp_path / "b")
    assert _parquets(tmp_path / "a") == _parquets(tmp_path / "b")


# ---------------------------------------------------------------------------
# 15 (progress part). A progress bar belongs on a terminal only.

def test_the_progress_bar_writes_no_carriage_returns_into_a_log(tmp_path):
    # Long enough (a few seconds) for the bar to appear where it used to.
    log = tmp_path / "log.txt"
    with open(log, "w") as f:
        r = subprocess.run([*XRC, "run", SCENARIOS / "paper" / "fig1-time-varying.toml", "--out", tmp_path / "o",
                            "--no-plots", "--set", "duration_s=1500", "--set", "output.rlc_sample_ttis=10000",
                            "--set", "output.cwnd_trace=false", "--set", "output.rtt_trace=false"],
                           stdout=f, stderr=f, timeout=300)
    assert r.returncode == 0, log.read_text()
    assert b"\r" not in log.read_bytes()


def test_the_progress_bar_is_plain_ascii_under_no_color(monkeypatch):
    from xrc import progress

    class Tty:
        def isatty(self):
            return True

        def write(self, s):
            pass

        def flush(self):
            pass

    monkeypatch.setattr(sys, "stderr", Tty())
    monkeypatch.delenv("TERM", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    b = progress.bar(total=10)
    assert b is not None and b.ascii is True
    b.close()
    monkeypatch.setattr(sys, "stderr", open(os.devnull, "w"))
    assert progress.bar(total=10) is None


# ---------------------------------------------------------------------------
# A sweep's worker stopped (SIGTERM) at any instant of its run.

def test_a_parquet_writer_whose_wake_up_a_signal_cut_off_still_writes_and_closes(tmp_path):
    # SIGTERM raises in the worker's main thread wherever it is; inside
    # queue.put after the job was queued and before the writer thread was
    # woken, the thread slept for ever and close() waited on the full queue
    # for ever: the worker hung until the sweep killed it, and its staging
    # directory stayed in runs/ (1 sweep in 25 on a full disk under load).
    import threading

    from xrc.stream import BackgroundWriter

    w = BackgroundWriter(depth=1)
    time.sleep(0.2)  # the thread is asleep in get()
    ran = []
    q = w._jobs
    with q.mutex:  # what put() has done when the signal cuts off its notify()
        q._put(lambda: ran.append(1))
        q.unfinished_tasks += 1
    closer = threading.Thread(target=w.close, daemon=True)
    closer.start()
    closer.join(timeout=10)
    assert not closer.is_alive(), "close() waits for ever on a writer that was not woken"
    assert ran == [1]


def test_map_parallel_returns_each_result_in_the_place_of_its_item():
    from xrc.parallel import map_parallel

    items = [-5, 4, -3, 2, -1, 0]
    assert map_parallel(abs, items, 2) == [5, 4, 3, 2, 1, 0]


class _Signalled(SystemExit):
    """What a SIGTERM handler raises, wherever the worker is."""


def test_a_run_stopped_while_removing_its_staging_directory_still_removes_all_of_it(tmp_path, monkeypatch):
    # A sweep's worker stopped (SIGTERM) while removing its staging
    # directory after a full disk left it half removed in runs/ (1 sweep
    # in 40 on a full disk under load, after the writer fix above).
    import errno

    from xrc import stream
    from xrc.runner import run_to_dir
    from xrc.scenario import load_text

    def full_disk(scenario, staging, **kw):
        for i in range(5):
            (staging / f"part{i}.parquet").write_bytes(b"x")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(stream, "stream_run", full_disk)
    real_unlink, calls = os.unlink, []

    def unlink_once_cut_off(*a, **kw):
        calls.append(a)
        if len(calls) == 2:
            raise _Signalled(143)
        return real_unlink(*a, **kw)

    monkeypatch.setattr(os, "unlink", unlink_once_cut_off)
    with pytest.raises(_Signalled):
        run_to_dir(load_text(MINIMAL_CELL, base=tmp_path), tmp_path / "o", plots=False)
    monkeypatch.undo()
    assert len(calls) >= 2, "the signal was not simulated"
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "a staging directory was left"


def _run_killed_midway(spec, out_root):
    """A sweep run whose worker is killed (as by the OOM killer) after its
    staging directory was made and marked."""
    from xrc import outdir

    outdir.prepare(Path(out_root) / "runs" / spec.run_id, force=True)
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_sweep_whose_worker_is_killed_midway_leaves_no_staging_directory(tmp_path, monkeypatch):
    # The killed worker's staging directory stayed in runs/ until the
    # next sweep to the same directory.
    import xrc.sweeps as sweep_mod

    (tmp_path / "s.toml").write_text(MINIMAL_CELL)
    (tmp_path / "sw.toml").write_text('scenario = "s.toml"\nseeds = 2\n')
    monkeypatch.setattr(sweep_mod, "run_one", _run_killed_midway)   # the forked workers see it too
    from xrc.parallel import WorkerDied

    with pytest.raises(WorkerDied, match="killed by SIGKILL"):
        sweep_mod.run_sweep(sweep_mod.load_sweep(tmp_path / "sw.toml"), tmp_path / "o", jobs=2, progress=False)
    assert [p.name for p in (tmp_path / "o" / "runs").iterdir()] == []


def _fail_on_one(x):
    if x == 1:
        raise ValueError("the run failed")
    time.sleep(5)
    return x


def test_a_parallel_run_stopped_by_an_error_stops_at_once_and_leaves_no_thread_or_worker_behind():
    # Once, with concurrent.futures, the pool's manager thread was still
    # closing its wake-up pipe when the interpreter exited ("Exception
    # ignored ... OSError: Bad file descriptor"). xrc.parallel now owns its
    # workers; nothing of a stopped run may outlive it either way.
    import multiprocessing
    import threading

    from xrc.parallel import run_parallel

    before = {t.ident for t in threading.enumerate()}
    t0 = time.monotonic()
    with pytest.raises(ValueError, match="the run failed"):
        run_parallel(_fail_on_one, [1, 2, 3, 4], 2, lambda r: None)
    assert time.monotonic() - t0 < 5, "it waited for the other runs"
    assert [t.name for t in threading.enumerate() if t.ident not in before and t.is_alive()] == []
    assert multiprocessing.active_children() == []


def _swallow_a_sigterm():
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1.0)
    except BaseException:
        pass
    return "went on"


def _worker_that_swallows_a_sigterm(inside_a_run: bool) -> None:
    from xrc import parallel

    parallel._worker_init(None)
    if inside_a_run:
        parallel._guarded(lambda _: _swallow_a_sigterm(), None)
    else:
        _swallow_a_sigterm()   # as concurrent.futures does while handing a result back
    os._exit(0)


@pytest.mark.parametrize("inside_a_run", [True, False])
def test_a_worker_given_sigterm_leaves_even_where_its_exception_is_caught(inside_a_run):
    # concurrent.futures catches every exception while a worker hands a
    # result back: a SIGTERM landing there (the parent died: SIGKILL) was
    # sent back as a result and the worker took the next run, on and on
    # (1 study in 6 left a worker running after its SIGKILL).
    import multiprocessing

    p = multiprocessing.get_context("fork").Process(target=_worker_that_swallows_a_sigterm, args=(inside_a_run,))
    p.start()
    p.join(timeout=20)
    if p.is_alive():
        p.kill()
        p.join()
    assert p.exitcode == 128 + signal.SIGTERM


def _stopped_from_outside(x):
    if x == 0:
        os.kill(os.getpid(), signal.SIGTERM)   # as `kill PID` on the worker would
        time.sleep(5)
    return x


def test_a_worker_stopped_by_sigterm_from_outside_is_named_so():
    # The message said "how is not known": the pool's own SIGTERMs and
    # one from outside were told apart by nothing.
    from xrc.parallel import WorkerDied, run_parallel

    t0 = time.monotonic()
    with pytest.raises(WorkerDied, match="stopped by SIGTERM"):
        run_parallel(_stopped_from_outside, [0, 1, 2], 2, lambda r: None)
    assert time.monotonic() - t0 < 20


def _raise_in_a_worker(x):
    raise KeyError(f"no such thing: {x}")


def test_an_exception_in_a_worker_reaches_the_parent_with_the_workers_traceback():
    from xrc.parallel import run_parallel

    with pytest.raises(KeyError, match="no such thing: 7") as e:
        run_parallel(_raise_in_a_worker, [7], 2, lambda r: None)
    assert "_raise_in_a_worker" in str(e.value.__cause__)


def _unpicklable_result(x):
    return lambda: x


def test_a_result_that_cannot_cross_to_the_parent_is_an_error_naming_it():
    from xrc.parallel import run_parallel

    with pytest.raises(RuntimeError, match="could not be sent back"):
        run_parallel(_unpicklable_result, [1, 2], 2, lambda r: None)


def test_parallel_runs_leave_no_child_process_whether_they_end_well_or_by_an_error():
    # Every worker is reaped (no zombie, no process left) on both ways out.
    import multiprocessing

    import psutil

    from xrc.parallel import map_parallel, run_parallel

    assert map_parallel(abs, list(range(-10, 10)), 2) == [abs(i) for i in range(-10, 10)]
    assert multiprocessing.active_children() == [] and psutil.Process().children() == []
    with pytest.raises(ValueError):
        run_parallel(_fail_on_one, [1, 2, 3, 4], 2, lambda r: None)
    assert multiprocessing.active_children() == [] and psutil.Process().children() == []


def test_stopping_parallel_runs_does_not_depend_on_the_standard_librarys_private_pool_attributes(monkeypatch):
    # _stop read ProcessPoolExecutor._processes and ._executor_manager_thread;
    # a Python release that renamed them would have left the workers running.
    import concurrent.futures

    import psutil

    from xrc import parallel

    class NoPool:
        def __init__(self, *a, **kw):
            raise AssertionError("concurrent.futures' pool was used")

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", NoPool)
    monkeypatch.setattr(parallel, "ProcessPoolExecutor", NoPool, raising=False)
    t0 = time.monotonic()
    with pytest.raises(ValueError, match="the run failed"):
        parallel.run_parallel(_fail_on_one, [1, 2, 3, 4], 2, lambda r: None)
    assert time.monotonic() - t0 < 5, "it waited for the other runs"
    assert psutil.Process().children() == []


def test_a_worker_leaves_when_its_parent_closes_its_end_of_the_pipe():
    # Without PR_SET_PDEATHSIG (not Linux) the end of file on its pipe is
    # what tells a worker that its parent is gone; the copy of the parent's
    # end that the fork gave the worker kept that from ever happening.
    import multiprocessing

    from xrc import parallel

    ctx = multiprocessing.get_context("fork")
    here, there = ctx.Pipe()
    p = ctx.Process(target=parallel._serve, args=(there, abs, None, (here,)))
    p.start()
    there.close()
    here.send((0, -3))
    assert here.poll(20) and here.recv() == (0, True, 3, "")
    here.close()
    p.join(timeout=20)
    if p.is_alive():
        p.kill()
        p.join()
        pytest.fail("the worker waited for ever on a pipe nobody else holds")
    assert p.exitcode == 0
