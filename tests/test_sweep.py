"""Sweeps: resumable after a kill, merged deterministically, and the same
on a Dask cluster as on local processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from xrc.cli import main
from xrc.scenario import ScenarioError
from xrc.sweeps import load_sweep, run_sweep

from .conftest import SCENARIOS

SWEEP = f"""
scenario = "{SCENARIOS / 'paper' / 'fig1-time-varying.toml'}"
seeds = 2
set = ["duration_s=15", "output.rlc_sample_ttis=10"]
[grid]
"flows.0.cc" = ["xrc", "cubic", "newreno"]
"""


@pytest.fixture
def sweep_file(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(SWEEP)
    return p


def _done(out):
    runs = out / "runs"
    return sum(1 for d in runs.iterdir() if (d / "summary.json").is_file()) if runs.is_dir() else 0


def test_a_sweep_killed_halfway_and_restarted_merges_exactly_the_same_table(sweep_file, tmp_path):
    whole = tmp_path / "whole"
    assert main(["sweep", str(sweep_file), "--out", str(whole), "--jobs", "1", "--quiet"]) == 0
    pieces = tmp_path / "pieces"
    proc = subprocess.Popen([sys.executable, "-m", "xrc.cli", "sweep", str(sweep_file), "--out", str(pieces),
                             "--jobs", "1", "--quiet"], start_new_session=True)
    deadline = time.time() + 120
    while _done(pieces) < 2 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.02)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = _done(pieces)
    assert 0 < killed_at < 6, f"killed halfway ({killed_at} of 6 runs done)"
    assert not (pieces / "summary.parquet").exists()
    assert main(["sweep", str(sweep_file), "--out", str(pieces), "--jobs", "1", "--quiet"]) == 0
    assert _done(pieces) == 6
    assert not any(p.name.startswith(".") for p in (pieces / "runs").iterdir()), "no half-written run is left"
    assert (whole / "summary.parquet").read_bytes() == (pieces / "summary.parquet").read_bytes()
    t = pq.read_table(whole / "summary.parquet")
    assert t.num_rows == 6
    assert sorted(set(t.column("set:flows.0.cc").to_pylist())) == ["cubic", "newreno", "xrc"]


def test_a_restarted_sweep_does_not_redo_finished_runs(sweep_file, tmp_path):
    out = tmp_path / "out"
    run_sweep(load_sweep(sweep_file), out, jobs=1, progress=False)
    stamps = {d.name: (d / "summary.json").stat().st_mtime_ns for d in (out / "runs").iterdir()}
    redone = []
    run_sweep(load_sweep(sweep_file), out, jobs=1, progress=False, on_done=redone.append)
    assert redone == []
    assert stamps == {d.name: (d / "summary.json").stat().st_mtime_ns for d in (out / "runs").iterdir()}


def test_a_local_dask_cluster_gives_the_same_table_as_local_processes(sweep_file, tmp_path):
    pytest.importorskip("dask.distributed")
    a, b = tmp_path / "local", tmp_path / "dask"
    run_sweep(load_sweep(sweep_file), a, jobs=2, progress=False)
    run_sweep(load_sweep(sweep_file), b, jobs=2, engine="dask", progress=False)
    assert (a / "summary.parquet").read_bytes() == (b / "summary.parquet").read_bytes()


def test_a_bad_sweep_is_rejected_before_anything_runs(tmp_path, capsys):
    p = tmp_path / "bad.toml"
    p.write_text(SWEEP.replace('"cubic"', '"warp"'))
    assert main(["sweep", str(p), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert "warp" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    with pytest.raises(ScenarioError, match="seeds"):
        p.write_text(SWEEP.replace("seeds = 2", "seeds = 0"))
        load_sweep(p)


def test_a_finished_sweep_prints_one_row_per_variant_and_flow_with_means_over_its_seeds(tmp_path, capsys):
    sc = tmp_path / "two.toml"
    sc.write_text('seed = 1\nduration_s = 4\ntopology = "cellular"\n'
                  '[[ues]]\nchannel = { kind = "fixed_cqi", cqi = 12 }\n'
                  '[[ues]]\nchannel = { kind = "fixed_cqi", cqi = 7 }\n'
                  '[[flows]]\nue = 0\ncc = "xrc2"\n[[flows]]\nue = 1\ncc = "cubic"\n')
    sw = tmp_path / "sw.toml"
    sw.write_text(f'scenario = "{sc}"\nseeds = 3\n[grid]\n"flows.0.cc" = ["xrc", "bbr"]\n'
                  '"cell.harq.bler" = [0.0, 0.1]\n')
    assert main(["sweep", str(sw), "--out", str(tmp_path / "out"), "--jobs", "1"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| ")]
    assert lines[0].split(" | ")[:5] == ["| cell.harq.bler", "flows.0.cc", "flow", "cc", "seeds"]
    rows = [[c.strip() for c in ln.strip("| ").split("|")] for ln in lines[1:]]
    assert len(rows) == 2 * 2 * 2 and all(r[4] == "3" for r in rows)
    assert [r[:4] for r in rows[:2]] == [["0.0", "bbr", "f0", "bbr"], ["0.0", "bbr", "f1", "cubic"]]
    assert [r[0] for r in rows] == ["0.0"] * 4 + ["0.1"] * 4
    # Each number is the mean over the variant's seeds of summary.parquet's rows.
    df = pq.read_table(tmp_path / "out" / "summary.parquet").to_pandas()
    g = df[(df["set:flows.0.cc"] == "xrc") & (df["set:cell.harq.bler"] == "0.1") & (df["flow"] == "f0")]
    row = next(r for r in rows if r[:3] == ["0.1", "xrc", "f0"])
    assert row[5].startswith(f"{g.goodput_mbps.mean():.2f} ({g.goodput_mbps.min():.2f}–")
    assert row[9] == f"{g.ue_utilization.mean():.3f}"


def test_a_sweep_file_may_name_a_bundled_scenario_as_the_command_line_does(tmp_path):
    p = tmp_path / "named.toml"
    p.write_text('scenario = "paper/fig1-time-varying"\nseeds = 1\nset = ["duration_s=1"]\n')
    assert load_sweep(p).scenario.resolve() == (SCENARIOS / "paper" / "fig1-time-varying.toml").resolve()


def test_a_file_beside_the_sweep_file_wins_over_a_bundled_scenario_of_the_same_name(tmp_path):
    (tmp_path / "paper").mkdir()
    mine = tmp_path / "paper" / "fig1-time-varying.toml"
    mine.write_text((SCENARIOS / "paper" / "fig1-time-varying.toml").read_text())
    p = tmp_path / "named.toml"
    p.write_text('scenario = "paper/fig1-time-varying.toml"\n')
    assert load_sweep(p).scenario == mine.resolve()


def test_a_sweep_naming_neither_a_file_nor_a_bundled_scenario_is_refused(tmp_path):
    p = tmp_path / "named.toml"
    p.write_text('scenario = "paper/no-such-figure"\n')
    with pytest.raises(ScenarioError, match="no-such-figure.*bundled"):
        load_sweep(p)
    p.write_text('scenario = "paper/fig5-pair"\n')
    with pytest.raises(ScenarioError, match="similar names: paper/fig5-pairs"):
        load_sweep(p)


def test_the_digest_orders_numbers_as_numbers(tmp_path):
    import pyarrow as pa

    from xrc.sweeps import digest

    rows = [("5", 1, 1.0), ("10", 1, 2.0), ("20", 1, 3.0), ("5", 2, 3.0)]
    pq.write_table(pa.table({"set:duration_s": [r[0] for r in rows], "seed": [r[1] for r in rows],
                             "flow": ["f0"] * 4, "cc": ["cubic"] * 4, "goodput_mbps": [r[2] for r in rows]}),
                   tmp_path / "s.parquet")
    body = digest(tmp_path / "s.parquet").splitlines()[2:]
    assert [ln.split(" | ")[0] for ln in body] == ["| 5", "| 10", "| 20"]
    assert "2.00 (1.00–3.00)" in body[0] and body[0].split(" | ")[3] == "2"


@pytest.mark.parametrize("body", ['set = ["seed=3"]', 'grid = { seed = [1, 2] }', '[[runs]]\nseed = 3'])
def test_a_seed_given_as_an_override_is_refused_pointing_at_seeds_not_run_with_another(tmp_path, body):
    # It ran with the sweep's own seed (1) while the table said 3.
    f = tmp_path / "s.toml"
    f.write_text(f'scenario = "paper/fig1-time-varying"\n{body}\n')
    with pytest.raises(ScenarioError, match=r"seed is chosen by the sweep's seeds.*give seeds"):
        load_sweep(str(f))


def test_the_api_refuses_a_seed_keyword_in_a_sweep_before_running_anything(tmp_path):
    import xrc

    out = tmp_path / "sw"
    with pytest.raises(ScenarioError, match=r"seeds=\[3\]"):
        xrc.sweep("paper/fig1-time-varying", grid={"flows.0.cc": ["xrc"]}, seed=3, out=out)
    assert not out.exists()


@pytest.mark.parametrize("cmd", [["sweep", "SWEEP"], ["reproduce", "--quick", "--out", "OUT"]])
def test_engine_dask_without_dask_says_which_extra_to_install(tmp_path, capsys, monkeypatch, cmd):
    f = tmp_path / "s.toml"
    f.write_text('scenario = "paper/fig1-time-varying"\nset = ["duration_s=1"]\n')
    # As in an install without the cluster extra: importing Dask fails.
    monkeypatch.setitem(sys.modules, "dask", None)
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    argv = [str(f) if a == "SWEEP" else str(tmp_path / "rep") if a == "OUT" else a for a in cmd]
    rc = main([*argv, "--engine", "dask", "--quiet"] + (["--out", str(tmp_path / "sw")] if cmd[0] == "sweep" else []))
    err = capsys.readouterr().err
    assert rc == 2 and "xrc-lab[cluster]" in err, err
    assert not (tmp_path / "sw").exists() and not (tmp_path / "rep").exists()


def test_a_value_given_twice_in_a_grid_is_refused(tmp_path):
    # The same runs twice: duplicate rows and a false "all seeds identical".
    f = tmp_path / "s.toml"
    f.write_text('scenario = "paper/fig1-time-varying"\n[grid]\n"flows.0.cc" = ["xrc", "cubic", "xrc"]\n')
    with pytest.raises(ScenarioError, match=r"sweep.grid.flows.0.cc: the value 'xrc' is given twice"):
        load_sweep(str(f))


def test_a_seed_at_or_above_2_63_runs_and_merges(tmp_path):
    # It ran every point, then failed merging (OverflowError), and so did
    # every resume.
    f = tmp_path / "s.toml"
    f.write_text(f'scenario = "paper/fig1-time-varying"\nseeds = [{2**63}, {2**64 - 1}]\nset = ["duration_s=0.5"]\n')
    path = run_sweep(load_sweep(str(f)), tmp_path / "out", jobs=1, progress=False)
    seeds = pq.read_table(path).column("seed").to_pylist()
    assert sorted(set(seeds)) == [2**63, 2**64 - 1]


def test_a_parallel_sweep_runs_under_the_forkserver_start_method(tmp_path):
    # Found by `xrc fuzz --surface edges`: a caller that set the forkserver
    # start method (Python 3.14's default on Linux) had every worker take
    # the fork server for its parent, think it dead and stop: WorkerDied.
    import subprocess
    import sys

    from xrc.fuzz.edges import TINY

    (tmp_path / "tiny.toml").write_text(TINY)
    code = f"""
import multiprocessing as mp
if __name__ == "__main__":
    mp.set_start_method("forkserver")
    import xrc
    df = xrc.sweep({str(tmp_path / 'tiny.toml')!r}, {{"flows.0.cc": ["newreno", "cubic"]}}, jobs=2,
                   out={str(tmp_path / 'sw')!r})
    print(len(df))
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "2", p.stderr[-2000:]


_FINALIZER_SIGTERM = """
import os, signal, sys
from xrc import parallel


class SigtermOnDelete:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(10000):   # the handler runs here, inside __del__
            pass


def run(item):
    obj = SigtermOnDelete()
    del obj
    sys.stderr.flush()   # the worker leaves with os._exit, which does not
    return item


try:
    parallel.run_parallel(run, [1, 2], 2, lambda r: None)
except parallel.WorkerDied as e:
    print("died:", e)
"""


def test_a_sigterm_that_lands_in_a_workers_finalizer_is_not_printed_as_an_ignored_exception():
    # Found by `xrc fuzz --surface edges`: SIGTERM to a sweep landed in a
    # worker inside ParquetWriter.__del__ and came out on the sweep's
    # stderr as "Exception ignored in ... Traceback ... _Terminated: 143".
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", _FINALIZER_SIGTERM], capture_output=True, text=True, timeout=60)
    assert "died:" in r.stdout and "stopped by SIGTERM" in r.stdout, (r.stdout, r.stderr)
    assert "Exception ignored" not in r.stderr and "Traceback" not in r.stderr, r.stderr
