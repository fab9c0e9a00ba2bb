"""Run directories: their contents, the summary contract, determinism."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from xrc.cli import main

from .conftest import SCENARIOS

FIG1 = SCENARIOS / "paper" / "fig1-time-varying.toml"


def _run(out, *extra):
    assert main(["run", str(FIG1), "--out", str(out), "--quiet", *extra]) == 0


@pytest.fixture(scope="module")
def fig1_short(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "fig1"
    _run(out, "--set", "duration_s=12")
    return out


def test_a_run_directory_holds_config_metadata_series_summary_and_plots(fig1_short):
    names = {p.name for p in fig1_short.iterdir()}
    for n in ["scenario.toml", "scenario.resolved.json", "metadata.json", "summary.json", "flow_throughput.parquet",
              "cwnd.parquet", "rtt.parquet", "rlc.parquet", "ue_rate.parquet", "drops.parquet", "retransmits.parquet",
              "feedback.parquet", "flows.parquet", "ues.parquet", "plots"]:
        assert n in names, n
    plots = {p.name for p in (fig1_short / "plots").iterdir()}
    for stem in ["rate", "hol_cdf", "cwnd"]:
        assert f"{stem}.png" in plots and f"{stem}.svg" in plots
    meta = json.loads((fig1_short / "metadata.json").read_text())
    assert meta["seed"] == 1 and meta["xrc_version"] and meta["core_version"]
    assert meta["overrides"] == ["duration_s=12"]
    resolved = json.loads((fig1_short / "scenario.resolved.json").read_text())
    assert resolved["duration_s"] == 12 and resolved["cell"]["prbs"] == 50


def test_the_summary_follows_its_contract(fig1_short):
    s = json.loads((fig1_short / "summary.json").read_text())
    assert {"scenario", "seed", "sim_time_s", "wall_time_s", "events", "flows", "ues", "jain_index"} <= set(s)
    assert s["scenario"] == "fig1-time-varying" and s["seed"] == 1 and s["sim_time_s"] == pytest.approx(12.0)
    assert isinstance(s["events"], int) and s["events"] > 0
    f = s["flows"][0]
    assert {"id", "cc", "ue", "goodput_mbps", "rtt_ms", "retransmits"} <= set(f)
    assert set(f["rtt_ms"]) == {"p50", "p95"} and f["ue"] == 0 and f["cc"] == "xrc"
    u = s["ues"][0]
    assert {"id", "capacity_mbps", "delivered_mbps", "utilization", "hol_delay_ms", "frac_time_hol_below_budget"} <= set(u)
    assert set(u["hol_delay_ms"]) == {"p50", "p80", "p90", "p95", "p99"}
    assert 0 < u["utilization"] <= 1.05
    assert s["jain_index"] is None  # a single flow


def test_rlc_state_is_sampled_every_tti(fig1_short):
    t = pq.read_table(fig1_short / "rlc.parquet")
    assert t.num_rows == 12_000
    assert set(t.column_names) >= {"t", "ue", "hol_ms", "sdus", "bytes", "cqi", "available_mbps", "agent_mbps"}


def test_the_same_scenario_and_seed_give_byte_identical_results(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _run(a, "--set", "duration_s=15", "--no-plots")
    _run(b, "--set", "duration_s=15", "--no-plots")
    sa = json.loads((a / "summary.json").read_text())
    sb = json.loads((b / "summary.json").read_text())
    sa.pop("wall_time_s"), sb.pop("wall_time_s")
    assert sa == sb
    parquets = sorted(p.name for p in a.glob("*.parquet"))
    assert len(parquets) >= 10
    for name in parquets:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert (a / "scenario.resolved.json").read_bytes() == (b / "scenario.resolved.json").read_bytes()


def test_another_seed_gives_another_run(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _run(a, "--set", "duration_s=8", "--no-plots")
    _run(b, "--set", "duration_s=8", "--no-plots", "--seed", "2")
    assert (a / "rlc.parquet").read_bytes() != (b / "rlc.parquet").read_bytes()


def test_a_cqi_schedule_read_from_a_file_drives_the_channel(tmp_path):
    (tmp_path / "cqi.txt").write_text("# time_ms cqi\n0 15\n1000, 5\n2000 0\n2500 15\n")
    (tmp_path / "s.toml").write_text("""
seed = 1
duration_s = 3.0
topology = "cellular"
[[ues]]
channel = { kind = "cqi_trace", file = "cqi.txt" }
[[flows]]
ue = 0
cc = "xrc"
""")
    out = tmp_path / "run"
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(out), "--quiet", "--no-plots"]) == 0
    rlc = pq.read_table(out / "rlc.parquet").to_pydict()
    cqi_at = {round(t * 1000): c for t, c in zip(rlc["t"], rlc["cqi"])}
    assert cqi_at[500] == 15 and cqi_at[1500] == 5 and cqi_at[2200] == 0 and cqi_at[2800] == 15
    resolved = json.loads((out / "scenario.resolved.json").read_text())
    assert resolved["ues"][0]["channel"]["points"][1] == [1000.0, 5]


def test_a_bad_cqi_file_is_rejected_naming_the_line(tmp_path, capsys):
    (tmp_path / "cqi.txt").write_text("0 15\n1000 sixteen\n")
    (tmp_path / "s.toml").write_text("""
seed = 1
duration_s = 3.0
topology = "cellular"
[[ues]]
channel = { kind = "cqi_trace", file = "cqi.txt" }
[[flows]]
ue = 0
cc = "xrc"
""")
    assert main(["validate", str(tmp_path / "s.toml")]) == 2
    err = capsys.readouterr().err
    assert "ues.0.channel" in err and "line 2" in err and "sixteen" in err


def test_acks_cross_an_uplink_trace_named_relative_to_the_scenario(tmp_path):
    # 12 Mbit/s down; the uplink trace carries 27 ACKs a second, so the
    # download is throttled, and both traces are inputs of the run.
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "fast.down").write_text("".join(f"{i}\n" for i in range(1, 101)))
    (tmp_path / "traces" / "slow.up").write_text("1000\n")
    scenario = """
seed = 1
duration_s = 4.0
topology = "trace"
[trace]
downlink = "traces/fast.down"
uplink = "traces/slow.up"
[[flows]]
ue = 0
cc = "cubic"
"""
    (tmp_path / "s.toml").write_text(scenario)
    (tmp_path / "fixed.toml").write_text(scenario.replace('uplink = "traces/slow.up"\n', ""))
    slow, fixed = tmp_path / "slow", tmp_path / "fixed"
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(slow), "--quiet", "--no-plots"]) == 0
    assert main(["run", str(tmp_path / "fixed.toml"), "--out", str(fixed), "--quiet", "--no-plots"]) == 0
    meta = json.loads((slow / "metadata.json").read_text())
    assert meta["inputs"]["trace.uplink"]["path"] == str((tmp_path / "traces" / "slow.up").resolve())
    assert len(meta["inputs"]["trace.uplink"]["sha256"]) == 64
    assert "trace.uplink" not in json.loads((fixed / "metadata.json").read_text())["inputs"]
    g_slow = json.loads((slow / "summary.json").read_text())["flows"][0]["goodput_mbps"]
    g_fixed = json.loads((fixed / "summary.json").read_text())["flows"][0]["goodput_mbps"]
    assert g_slow < g_fixed / 5, (g_slow, g_fixed)


def test_the_checkout_commit_is_asked_of_git_once_per_process(monkeypatch):
    from xrc import runner

    calls = []
    real = runner.subprocess.run

    def counting(*a, **k):
        calls.append(a[0])
        return real(*a, **k)

    monkeypatch.setattr(runner.subprocess, "run", counting)
    runner.git_commit.cache_clear()
    try:
        first = runner.git_commit()
        n = len(calls)
        assert n >= 1
        assert runner.git_commit() == first and len(calls) == n
    finally:
        runner.git_commit.cache_clear()


def test_a_second_writer_of_one_out_is_refused_at_once_naming_the_first(tmp_path):
    # Two `xrc run` into one --out without --force both said "wrote" and one
    # result silently replaced the other.
    import os
    import subprocess
    import sys

    from xrc.outdir import DirLock, OutputError

    out = tmp_path / "r"
    with DirLock(out):
        r = subprocess.run([sys.executable, "-m", "xrc.cli", "run", "paper/fig1-time-varying", "--out", str(out),
                            "--quiet", "--no-plots"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and f"pid {os.getpid()}" in r.stderr and "another xrc process" in r.stderr, r.stderr
        with pytest.raises(OutputError, match="being written by another"):
            DirLock(out).acquire()
    assert not out.exists() and not (tmp_path / ".r.lock").exists(), "the lock file goes with its holder"
    assert main(["run", "paper/fig1-time-varying", "--out", str(out), "--quiet", "--no-plots"]) == 0


def test_a_run_does_not_replace_what_another_process_put_there_while_it_ran(tmp_path):
    from xrc.outdir import OutputError, commit

    out, staging = tmp_path / "r", tmp_path / ".r.partial-1"
    staging.mkdir()
    (staging / "summary.json").write_text("{}")
    out.mkdir()
    (out / "summary.json").write_text('{"theirs": true}')
    with pytest.raises(OutputError, match="written by another process while this one ran"):
        commit(staging, out, force=False)
    assert (out / "summary.json").read_text() == '{"theirs": true}'


def test_two_sweeps_on_one_directory_do_not_run_at_once(tmp_path):
    from xrc.outdir import DirLock, OutputError
    from xrc.sweeps import load_sweep, run_sweep

    f = tmp_path / "s.toml"
    f.write_text('scenario = "paper/fig1-time-varying"\nset = ["duration_s=0.5"]\n')
    with DirLock(tmp_path / "sw"):
        with pytest.raises(OutputError, match="being written by another"):
            run_sweep(load_sweep(str(f)), tmp_path / "sw", jobs=1, progress=False)


def test_rerunning_a_run_directory_whose_input_file_changed_is_refused_naming_the_file(tmp_path, capsys):
    # It reran with the file's new contents (22.67 became 11.60 Mbit/s)
    # though metadata.json recorded its SHA-256.
    import shutil

    trace = tmp_path / "link.down"
    shutil.copy(SCENARIOS / "traces" / "synthetic-lte.down", trace)
    sc = tmp_path / "t.toml"
    sc.write_text((SCENARIOS / "traces" / "synthetic-xrc.toml").read_text()
                  .replace('downlink = "synthetic-lte.down"', f'downlink = "{trace}"'))
    run = tmp_path / "run"
    assert main(["run", str(sc), "--out", str(run), "--quiet", "--no-plots", "--set", "duration_s=1"]) == 0
    assert main(["run", str(run), "--out", str(tmp_path / "again"), "--quiet", "--no-plots"]) == 0
    first, rest = trace.read_text().split("\n", 1)
    trace.write_text(f"{first}\n{first}\n{rest}")  # one more opportunity in the first millisecond
    capsys.readouterr()
    assert main(["run", str(run), "--out", str(tmp_path / "changed"), "--quiet", "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert "trace.downlink" in err and str(trace) in err and "changed since the run" in err, err
    assert not (tmp_path / "changed").exists()


def test_the_commit_a_run_records_is_read_without_taking_gits_index_lock(monkeypatch):
    # A `git status` killed with the run's process group left
    # .git/index.lock behind (seen during the edge fuzz campaign), and
    # every git command in the checkout failed after it.
    import subprocess

    from xrc import runner

    calls = []
    real = subprocess.run

    def run(argv, *a, **k):
        calls.append(list(argv))
        return real(argv, *a, **k)

    monkeypatch.setattr(subprocess, "run", run)
    runner.git_commit.cache_clear()
    commit = runner.git_commit()
    runner.git_commit.cache_clear()
    status = [c for c in calls if "status" in c]
    assert status or commit is None, calls   # a checkout is asked whether it is dirty
    assert all("--no-optional-locks" in c for c in status), status


def test_a_forked_child_does_not_keep_its_parents_directory_lock(tmp_path):
    # A sweep's worker is a fork: once it kept the sweep's --out locked
    # while it finished a run after the sweep was killed, and a resume at
    # once was refused ("being written by another xrc process").
    import os
    import signal

    from xrc.outdir import DirLock

    lock = DirLock(tmp_path / "out")
    lock.acquire()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: sits until killed
        os.close(r)
        os.write(w, b"x")
        signal.pause()
        os._exit(0)
    try:
        os.close(w)
        os.read(r, 1)
        os.close(lock.fd)  # the parent dies, as far as the lock goes
        lock.fd = None
        again = DirLock(tmp_path / "out")
        again.acquire()  # refused before: the child held the lock
        again.release()
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(r)
