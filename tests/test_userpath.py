"""The new user's path beyond scenario contents: command-line options,
sweep files, files and directories. Bad input is a message naming the
option (or field, or file) and the value, with exit status 2: never a
traceback, a silent default or a wrong table. Each test failed before the
fix it guards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

import xrc
from xrc.cli import main
from xrc.scenario import ScenarioError
from xrc.sweeps import load_sweep

from .conftest import SCENARIOS, small_tmpfs
from .test_robustness import HEAVY

FIG1 = SCENARIOS / "paper" / "fig1-time-varying.toml"
XRC = [sys.executable, "-m", "xrc.cli"]


def _xrc(*args, timeout=120, **kw):
    return subprocess.run([*XRC, *map(str, args)], capture_output=True, text=True, timeout=timeout, **kw)


def _sweep(tmp_path, body: str):
    p = tmp_path / "s.toml"
    p.write_text(f'scenario = "{FIG1}"\n' + body)
    return p


# ---------------------------------------------------------------------------
# Sweep files.

def test_a_sweep_file_that_is_not_utf8_is_a_message_not_a_traceback(tmp_path):
    p = tmp_path / "s.toml"
    p.write_bytes(b'scenario = "caf\xe9.toml"\n')
    r = _xrc("sweep", p, "--out", tmp_path / "o")
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert "s.toml" in r.stderr and "UTF-8" in r.stderr, r.stderr


def test_a_sweep_file_that_is_a_directory_is_named_as_such(tmp_path, capsys):
    (tmp_path / "s.toml").mkdir()
    assert main(["sweep", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "is a directory" in err, err


@pytest.mark.parametrize("seeds,shown", [
    ("[1, 1]", "1"),             # the same run twice: duplicate rows and a false "no randomness" warning
    ("[true]", "True"),          # a boolean is not a seed
    ("[18446744073709551616]", "18446744073709551616"),   # beyond u64: was misquoted as 1.8e+19
])
def test_sweep_seeds_that_repeat_or_are_not_seeds_are_refused_naming_them(seeds, shown, tmp_path):
    p = _sweep(tmp_path, f"seeds = {seeds}\n")
    with pytest.raises(ScenarioError) as e:
        load_sweep(p)
    assert "sweep.seeds" in str(e.value) and shown in str(e.value), str(e.value)


def test_the_python_sweep_refuses_repeated_seeds_and_seeds_that_are_not_integers():
    for seeds, shown in (([1, 1], "1"), ("abc", "'abc'"), ([1.5], "1.5")):
        with pytest.raises(ScenarioError) as e:
            xrc.sweep("paper/fig1-time-varying", seeds=seeds, duration_s=0.2)
        assert "seeds" in str(e.value) and shown in str(e.value), str(e.value)


def test_a_grid_of_tables_runs_each_table_as_the_field(tmp_path):
    # A grid value that is a table was written back as a Python repr
    # ("{'cc': 'cubic'}") and refused as not a table.
    p = _sweep(tmp_path, 'seeds = 1\nset = ["duration_s=0.5"]\n'
                         '[grid]\n"flows.0.tcp" = [{ initial_cwnd = 4 }, { initial_cwnd = 20 }]\n'
                         '"flows.0.receiver.ack_on_read" = [true]\n')
    sw = load_sweep(p)
    assert main(["sweep", str(p), "--out", str(tmp_path / "o"), "--jobs", "1", "--quiet"]) == 0
    df = pq.read_table(tmp_path / "o" / "summary.parquet").to_pandas()
    assert len(df) == len(sw.runs()) == 2
    assert sorted(df["set:flows.0.tcp"]) == ["{'initial_cwnd': 20}", "{'initial_cwnd': 4}"]


def test_a_field_both_set_for_every_run_and_varied_by_the_grid_is_refused(tmp_path):
    # The grid silently won over `set`.
    p = _sweep(tmp_path, 'set = ["flows.0.cc=bbr"]\n[grid]\n"flows.0.cc" = ["cubic", "xrc"]\n')
    with pytest.raises(ScenarioError) as e:
        load_sweep(p)
    assert "flows.0.cc" in str(e.value) and "set" in str(e.value) and "grid" in str(e.value), str(e.value)


# ---------------------------------------------------------------------------
# Options.

@pytest.mark.parametrize("cmd", [
    ["sweep", "SWEEP", "--out", "OUT"],
    ["reproduce", "--quick", "--out", "OUT"],
    ["study", "nr", "--quick"],
    ["study", "roccet", "--quick"],
    ["fuzz", "--cases", "1", "--out", "OUT"],
])
@pytest.mark.parametrize("jobs", ["0", "-1"])
def test_jobs_below_one_is_refused_before_anything_runs(cmd, jobs, tmp_path):
    # -1 was a traceback (sweep, study), a report "on -1 worker(s)"
    # (reproduce) or one worker (fuzz); 0 silently meant every core.
    sweep = _sweep(tmp_path, 'set = ["duration_s=0.2"]\n')
    args = [str(sweep) if a == "SWEEP" else str(tmp_path / "o") if a == "OUT" else a for a in cmd]
    r = _xrc(*args, "--jobs", jobs, timeout=60)
    assert r.returncode == 2, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    assert f"--jobs must be at least 1, got {jobs}" in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


def test_the_python_sweep_refuses_jobs_below_one():
    with pytest.raises(ScenarioError, match="jobs must be at least 1, got 0"):
        xrc.sweep("paper/fig1-time-varying", seeds=1, jobs=0, duration_s=0.2)


@pytest.mark.parametrize("opt,value", [("--repeat", "0"), ("--repeat", "-1"), ("--ns3-seconds", "0"),
                                       ("--ns3-seconds", "-1"), ("--ns3-seconds", "nan")])
def test_bench_refuses_a_repeat_count_or_ns3_time_that_means_nothing(opt, value, capsys):
    # --repeat 0 ran once anyway; --ns3-seconds -1 printed "-50x faster".
    assert main(["bench", opt, value]) == 2
    err = capsys.readouterr().err
    assert opt in err and value in err, err


def test_a_seed_beyond_64_bits_is_quoted_as_given(capsys):
    # It reached the core as a float: "floating point `1e+23`".
    assert main(["validate", str(FIG1), "--seed", "99999999999999999999999"]) == 2
    err = capsys.readouterr().err
    assert "seed" in err and "99999999999999999999999" in err, err


# ---------------------------------------------------------------------------
# Signals: SIGTERM (what `timeout`, a job scheduler or `kill` sends, to the
# main process only) stops a command as Ctrl-C does.

def _terminate_when(proc, ready, seconds=60):
    """Waits until ready() (or the process ended), then sends SIGTERM to the
    main process alone; returns the seconds it took to exit."""
    t_end = time.monotonic() + seconds
    while not ready() and proc.poll() is None and time.monotonic() < t_end:
        time.sleep(0.05)
    assert proc.poll() is None, "ended before it could be terminated"
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _wait_or_kill(proc, 20, "SIGTERM")
    return time.monotonic() - t0


def _wait_or_kill(proc, seconds, what):
    """Waits for `proc` to exit; past `seconds`, kills its process group and
    fails the test."""
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail(f"{what} did not stop it within {seconds} s")


def _staging(d):
    return [p for p in d.iterdir() if ".partial-" in p.name] if d.is_dir() else []


def test_sigterm_stops_a_run_leaving_the_earlier_run_directory_and_no_staging_directory(tmp_path):
    # The run died at once, its hidden staging directory (the series
    # written so far) left beside --out until a later run there.
    (tmp_path / "s.toml").write_text(HEAVY)
    out = tmp_path / "o"
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(out), "--no-plots", "--quiet",
                 "--set", "duration_s=0.2"]) == 0
    before = (out / "summary.json").read_bytes()
    proc = subprocess.Popen([*XRC, "run", str(tmp_path / "s.toml"), "--out", str(out), "--force", "--no-plots"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    took = _terminate_when(proc, lambda: bool(_staging(tmp_path)))
    err = proc.stderr.read().decode()
    assert took < 5.0, f"{took:.1f} s to stop"
    assert proc.returncode == 128 + signal.SIGTERM and "terminated" in err and "Traceback" not in err, err
    assert _staging(tmp_path) == []
    assert (out / "summary.json").read_bytes() == before


def test_a_run_killed_with_sigkill_leaves_no_staging_directory(tmp_path):
    # SIGKILL cannot be caught: the staging directory (the series written
    # so far) stayed beside --out until the next run to the same place.
    (tmp_path / "s.toml").write_text(HEAVY)
    proc = subprocess.Popen([*XRC, "run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o"), "--no-plots"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t_end = time.monotonic() + 60
    while not _staging(tmp_path) and proc.poll() is None and time.monotonic() < t_end:
        time.sleep(0.05)
    assert proc.poll() is None and _staging(tmp_path), "ended before it could be killed"
    proc.kill()
    proc.wait(timeout=10)
    t_end = time.monotonic() + 10
    while _staging(tmp_path) and time.monotonic() < t_end:
        time.sleep(0.05)
    assert _staging(tmp_path) == [] and not (tmp_path / "o").exists()


def _heavy_sweep(tmp_path):
    """A sweep of 12 long runs on 2 workers, in a session of its own (its
    pid is the group's), stderr into a file (an orphaned worker would hold
    a pipe open); returns the process and its runs directory."""
    (tmp_path / "base.toml").write_text(HEAVY)
    (tmp_path / "sw.toml").write_text('scenario = "base.toml"\nseeds = 12\n')
    with open(tmp_path / "err", "wb") as err:
        proc = subprocess.Popen([*XRC, "sweep", str(tmp_path / "sw.toml"), "--out", str(tmp_path / "o"), "--jobs",
                                 "2", "--quiet"], stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    return proc, tmp_path / "o" / "runs"


def _group_alive(pgid: int) -> list:
    """The processes of group `pgid` still running. A child killed as its
    parent exits is reparented and may stay a zombie (dead, not yet
    reaped) for a while: not running."""
    import psutil

    out = []
    for p in psutil.process_iter(["status"]):
        try:
            if os.getpgid(p.pid) == pgid and p.info["status"] != psutil.STATUS_ZOMBIE:
                out.append(p)
        except (ProcessLookupError, psutil.Error):
            pass
    return out


def _outlived(pgid: int, within: float = 10.0) -> list:
    """Waits up to `within` s for group `pgid` to be gone, then kills what is
    left of it (so no test leaves a process behind) and returns it."""
    deadline = time.monotonic() + within
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = _group_alive(pgid)
    for p in left:
        p.kill()
    return left


def test_sigterm_stops_a_sweep_and_its_workers(tmp_path):
    # The workers were orphaned: they went on running their runs after
    # the sweep had exited.
    proc, runs = _heavy_sweep(tmp_path)
    took = _terminate_when(proc, lambda: len(_staging(runs)) == 2)
    assert took < 5.0, f"{took:.1f} s to stop"
    assert proc.returncode == 128 + signal.SIGTERM, (proc.returncode, (tmp_path / "err").read_text())
    time.sleep(0.5)
    try:
        os.killpg(proc.pid, 0)
        alive = True
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        alive = False
    assert not alive, "a worker outlived the sweep"
    assert _staging(runs) == []
    assert not any((d / "summary.json").exists() for d in runs.iterdir())


def test_a_sweep_whose_worker_is_killed_says_so_and_leaves_no_staging_directory(tmp_path):
    # A worker killed from outside (as the out-of-memory killer does) was
    # a traceback (BrokenProcessPool, exit 1), its staging directory left
    # in runs/.
    import psutil

    proc, runs = _heavy_sweep(tmp_path)
    try:
        deadline = time.monotonic() + 60
        while len(_staging(runs)) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None and len(_staging(runs)) == 2, "the two workers did not start their runs"
        psutil.Process(proc.pid).children()[0].kill()
        _wait_or_kill(proc, 30, "a killed worker")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    err = (tmp_path / "err").read_text()
    assert proc.returncode == 1 and "Traceback" not in err, err
    assert "a worker process died" in err and "killed by SIGKILL" in err, err
    assert _staging(runs) == []


def test_a_sweeps_workers_die_with_it_even_when_it_is_killed_outright(tmp_path):
    # SIGKILL gives the sweep no chance to stop its workers; they went on
    # with their runs. Now each worker is armed to get SIGTERM when the
    # sweep dies, which also removes the staging directory of its run.
    proc, runs = _heavy_sweep(tmp_path)
    deadline = time.monotonic() + 60
    while len(_staging(runs)) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None and len(_staging(runs)) == 2, "the two workers did not start their runs"
    proc.kill()
    proc.wait()
    assert not _outlived(proc.pid), "a worker outlived the killed sweep"
    assert _staging(runs) == [], "a worker left its staging directory"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_stops_a_study_at_once_and_writes_no_report(sig, tmp_path):
    # SIGTERM killed the main process alone and left its workers running
    # (exit status -15); Ctrl-C already stopped it and is checked alongside.
    proc = subprocess.Popen([*XRC, "study", "nr", "--seeds", "40", "--jobs", "2", "--out", str(tmp_path / "o")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    time.sleep(2.0)
    assert proc.poll() is None, "ended before it could be interrupted"
    t0 = time.monotonic()
    # Ctrl-C reaches the whole process group, SIGTERM the main process.
    (os.killpg if sig == signal.SIGINT else os.kill)(proc.pid, sig)
    _wait_or_kill(proc, 30, sig.name)
    took = time.monotonic() - t0
    err = proc.stderr.read().decode()
    assert took < 3.0, f"{took:.1f} s to stop"
    assert proc.returncode == (130 if sig == signal.SIGINT else 128 + signal.SIGTERM), err
    assert "Traceback" not in err, err
    assert not (tmp_path / "o").exists()
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)  # no worker left behind


def test_a_studys_workers_die_with_it_even_when_it_is_killed_outright(tmp_path):
    # The study ran its own process pool, whose workers were not armed to
    # die with it: killed with SIGKILL, it left both running their runs.
    import psutil

    with open(tmp_path / "err", "wb") as err:
        proc = subprocess.Popen([*XRC, "study", "nr", "--seeds", "40", "--jobs", "2", "--out", str(tmp_path / "o")],
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    try:
        workers: list = []
        deadline = time.monotonic() + 60
        while len(workers) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
            try:
                workers = psutil.Process(proc.pid).children()
            except psutil.Error:
                workers = []
        assert proc.poll() is None and len(workers) == 2, ("the two workers did not start",
                                                           (tmp_path / "err").read_text())
        time.sleep(0.5)  # into their runs
    finally:
        proc.kill()
        proc.wait()
    assert not _outlived(proc.pid), "a worker outlived the killed study"


# ---------------------------------------------------------------------------
# Files and directories.

@pytest.fixture
def small_disk(tmp_path):
    with small_tmpfs(tmp_path, "2m") as disk:
        yield disk


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_sweep_on_a_full_disk_is_a_message_and_keeps_the_earlier_table(jobs, small_disk, tmp_path):
    # A run that could not be written was a traceback (exit 1); a merged
    # table that could not be written did not name its file.
    out = small_disk / "sw"
    p = _sweep(tmp_path, 'seeds = [1]\nset = ["duration_s=0.3", "output.rlc_sample_ttis=100"]\n')
    assert main(["sweep", str(p), "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    table = (out / "summary.parquet").read_bytes()
    free = os.statvfs(small_disk)
    (small_disk / "fill").write_bytes(b"\0" * (free.f_bavail * free.f_frsize - 4096))
    more = _sweep(tmp_path, 'seeds = [1, 2, 3]\nset = ["duration_s=0.3", "output.rlc_sample_ttis=100"]\n')
    r = _xrc("sweep", more, "--out", out, "--jobs", jobs, "--quiet")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "No space left" in r.stderr and str(out) in r.stderr, r.stderr
    assert (out / "summary.parquet").read_bytes() == table
    assert not [x for x in (out / "runs").iterdir() if x.name.startswith(".")]
    # The runs are done; only the table cannot be written.
    (small_disk / "fill").unlink()
    assert main(["sweep", str(more), "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    (out / "summary.parquet").unlink()
    free = os.statvfs(small_disk)
    (small_disk / "fill").write_bytes(b"\0" * (free.f_bavail * free.f_frsize))
    r = _xrc("sweep", more, "--out", out, "--jobs", "1", "--quiet")
    assert r.returncode == 2 and "No space left" in r.stderr and "summary.parquet" in r.stderr, r.stderr
    assert sorted(x.name for x in out.iterdir()) == ["runs", "sweep.json"]


@pytest.mark.parametrize("study", ["nr", "roccet"])
def test_a_study_out_that_cannot_be_a_directory_fails_before_any_run(study, tmp_path):
    # It failed only after every run, naming the path but not the option.
    (tmp_path / "f").write_text("")
    for out in (tmp_path / "f", tmp_path / "f" / "sub"):
        r = _xrc("study", study, "--quick", "--jobs", "1", "--out", out, timeout=60)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert f"--out {str(out)!r}" in r.stderr, r.stderr
        assert r.stdout == "", "ran the study anyway"


@pytest.mark.parametrize("study", ["nr", "roccet"])
def test_a_study_refuses_the_current_directory_and_forces_only_over_its_own_report(study, tmp_path):
    # `--out ""` wrote report.md and runs.json into the current directory,
    # and `--force` replaced a report.md in any directory.
    (tmp_path / "report.md").write_text("my own notes")
    (tmp_path / "thesis.tex").write_text("x")
    for out in ("", ".", ".."):
        r = _xrc("study", study, "--quick", "--jobs", "1", "--out", out, "--force", cwd=tmp_path, timeout=60)
        assert r.returncode == 2 and "names the current directory" in r.stderr, r.stderr
    r = _xrc("study", study, "--quick", "--jobs", "1", "--out", tmp_path, "--force", timeout=60)
    assert r.returncode == 2 and "not this study's report" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert r.stdout == "" and (tmp_path / "report.md").read_text() == "my own notes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md", "thesis.tex"]


@pytest.mark.parametrize("study", ["nr", "roccet"])
def test_study_force_replaces_only_a_report_this_study_wrote(study, tmp_path):
    # A directory holding a user's own report.md (and runs.json) was taken
    # for a study's: --force recognised it by the file names alone.
    out = tmp_path / "mine"
    out.mkdir()
    (out / "report.md").write_text("# My thesis notes\n")
    (out / "runs.json").write_text("[]")
    r = _xrc("study", study, "--quick", "--jobs", "1", "--out", out, "--force", timeout=60)
    assert r.returncode == 2 and "not this study's report" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert (out / "report.md").read_text() == "# My thesis notes\n"
    other = "roccet" if study == "nr" else "nr"
    assert main(["study", other, "--quick", "--jobs", "1", "--out", str(tmp_path / "other")]) == 0
    r = _xrc("study", study, "--quick", "--jobs", "1", "--out", tmp_path / "other", "--force", timeout=60)
    assert r.returncode == 2 and "not this study's report" in r.stderr, r.stderr
    # Its own earlier report is replaced.
    assert main(["study", study, "--quick", "--jobs", "1", "--out", str(tmp_path / "same")]) == 0
    assert main(["study", study, "--quick", "--jobs", "1", "--out", str(tmp_path / "same"), "--force"]) == 0


def test_xrc_schema_on_a_full_disk_keeps_the_earlier_schema_and_leaves_no_partial_file(small_disk):
    # The schema was written in place: a full disk left a truncated,
    # invalid JSON file under the name editors read.
    import json

    out = small_disk / "scenario.schema.json"
    assert main(["schema", "--out", str(out)]) == 0
    before = out.read_bytes()
    json.loads(before)
    free = os.statvfs(small_disk)
    (small_disk / "fill").write_bytes(b"\0" * (free.f_bavail * free.f_frsize - len(before) // 2))
    r = _xrc("schema", "--out", out)
    assert r.returncode == 2 and "No space left" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert out.read_bytes() == before
    r = _xrc("schema", "--out", small_disk / "new.json")
    assert r.returncode == 2, r.stderr
    assert sorted(p.name for p in small_disk.iterdir()) == ["fill", "scenario.schema.json"]


def test_a_study_replaced_on_a_full_disk_keeps_its_earlier_report_and_runs(small_disk):
    # report.md was written before runs.json: a failure between them left
    # a new report beside the old runs.
    out = small_disk / "nr"
    assert main(["study", "nr", "--quick", "--jobs", "1", "--out", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    free = os.statvfs(small_disk)
    (small_disk / "fill").write_bytes(b"\0" * (free.f_bavail * free.f_frsize - len(before["report.md"]) - 8192))
    r = _xrc("study", "nr", "--quick", "--jobs", "1", "--out", out, "--force", timeout=120)
    assert r.returncode == 2 and "No space left" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_the_same_field_set_twice_is_refused_naming_both_values(capsys):
    # The last one silently won.
    assert main(["validate", str(FIG1), "--set", "duration_s=5", "--set", "duration_s = 6"]) == 2
    err = capsys.readouterr().err
    assert "--set duration_s" in err and "5" in err and "6" in err, err
    # A table and a field inside it are not the same field.
    assert main(["validate", str(FIG1), "--set", "flows.0={cc='cubic', ue=0}", "--set", "flows.0.cc=bbr"]) == 0


@pytest.mark.parametrize("path", ["flows.0.", ".duration_s", "flows..cc", "flows.0. .cc"])
def test_a_set_path_with_an_empty_field_name_is_refused_by_the_cli_and_the_library(path, capsys):
    # `--set flows.0.=null` removed a field named "" and passed (fuzz seed
    # 80211, case 86: the library accepted what the CLI refused).
    assert main(["validate", str(FIG1), "--set", f"{path}=null"]) == 2
    err = capsys.readouterr().err
    assert f"--set {path}" in err and "empty" in err and "Traceback" not in err, err
    with pytest.raises(ScenarioError, match="empty"):
        xrc.load(FIG1, overrides=[f"{path}=null"])


@pytest.mark.parametrize("path, named, hint", [
    ("flows.0.ccc", "'ccc' at flows.0", "did you mean cc"),
    ("sed", "'sed' at the top level", "did you mean seed"),
    ("cell.harq.blerr", "'blerr' at cell.harq", "did you mean bler"),
    ("output.nope", "'nope' at output", "rlc_sample_ttis"),
    ("foo.bar", "'foo' at the top level", "flows"),
    ("flows.0.cc_params.betta", "'betta' at flows.0.cc_params", "did you mean beta"),
])
def test_resetting_a_field_that_does_not_exist_is_refused_naming_it(path, named, hint, capsys):
    # `--set flows.0.ccc=null` (a typo) removed nothing and passed silently.
    assert main(["validate", str(FIG1), "--set", f"{path}=null"]) == 2
    err = capsys.readouterr().err
    assert f"no field {named}" in err and hint in err and "Traceback" not in err, err
    with pytest.raises(ScenarioError, match="no field"):
        xrc.load(FIG1, overrides=[f"{path}=null"])


@pytest.mark.parametrize("path, where", [("flows.0.tcp.5", "flows.0.tcp"), ("cell.99", "cell")])
def test_resetting_an_index_of_a_table_is_refused_naming_the_table(path, where, capsys):
    # `--set flows.0.tcp.5=null` and `--set cell.99=null` named no field and passed.
    assert main(["validate", str(FIG1), "--set", f"{path}=null"]) == 2
    err = capsys.readouterr().err
    assert f"{where} is a table, not a list" in err, err


@pytest.mark.parametrize("path", ["flows.0.cc_params.beta", "cc.cubic.beta", "output.rlc_sample_ttis",
                                  "cell.harq.max_retx", "ues.0.channel.cqi"])
def test_resetting_a_real_field_the_scenario_does_not_set_is_accepted(path):
    # The default already applies; sweeps give null for "the default".
    assert xrc.load(FIG1, overrides=[f"{path}=null"]).resolved == xrc.load(FIG1).resolved


def test_a_sweep_field_both_in_set_and_in_a_run_is_refused(tmp_path):
    # The run's value silently won over `set` (a grid's is refused).
    p = _sweep(tmp_path, 'set = ["duration_s=1"]\n[[runs]]\n"flows.0.cc" = "cubic"\n[[runs]]\nduration_s = 2\n')
    with pytest.raises(ScenarioError, match=r"duration_s is both in set \(every run\) and in runs\.1"):
        load_sweep(p)


def test_a_sweep_setting_the_same_field_twice_is_refused(tmp_path):
    p = _sweep(tmp_path, 'set = ["duration_s=1", "duration_s=2"]\n')
    with pytest.raises(ScenarioError, match="duration_s"):
        load_sweep(p)


@pytest.mark.parametrize("out", ["", ".", "./"])
def test_an_out_that_names_the_current_directory_is_refused_before_the_run(out, tmp_path):
    # In an empty directory the run went to its end, then failed to put
    # "." in place ("Device or resource busy").
    r = _xrc("run", FIG1, "--set", "duration_s=0.3", "--no-plots", "--out", out, "--force", cwd=tmp_path, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "--out" in r.stderr and "current directory" in r.stderr and "busy" not in r.stderr, r.stderr
    assert r.stdout == "" and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("opt,value", [("--ues", ""), ("--ues", " "), ("--mu", " ")])
def test_an_empty_list_for_the_cell_bench_is_refused_not_taken_as_the_default(opt, value, capsys):
    # --ues '' ran the full default bench (1 to 1,000 UEs, minutes).
    assert main(["bench", "--cell", opt, value]) == 2
    err = capsys.readouterr().err
    assert opt in err and repr(value) in err, err


@pytest.mark.parametrize("opt,value,named", [("--ues", "1,10,1", "1"), ("--mu", "lte,0,lte", "lte"),
                                             ("--mu", "3, 3", "3")])
def test_a_cell_bench_list_naming_a_size_or_cell_twice_is_refused(opt, value, named, capsys):
    # `--mu lte,lte` measured every size twice.
    assert main(["bench", "--cell", opt, value]) == 2
    err = capsys.readouterr().err
    assert f"{opt}: {named} given twice" in err, err


@pytest.mark.parametrize("where", ["missing/x.json", "DIR"])
def test_a_cell_bench_json_that_cannot_be_written_is_refused_before_measuring(where, tmp_path, capsys):
    # It failed only after every measurement had run.
    target = tmp_path if where == "DIR" else tmp_path / where
    assert main(["bench", "--cell", "--ues", "1", "--duration", "0.01", "--mu", "lte", "--json", str(target)]) == 2
    out, err = capsys.readouterr()
    assert "--json" in err and str(target) in err, err
    assert "UEs" not in out, "measured anyway"


def test_sigterm_stops_the_cell_bench_and_its_measuring_process(tmp_path):
    # The run being measured went on, orphaned, after the bench had exited.
    with open(tmp_path / "err", "wb") as err:
        proc = subprocess.Popen([*XRC, "bench", "--cell", "--ues", "400", "--duration", "60", "--mu", "lte"],
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    import psutil

    def child():
        try:
            return psutil.Process(proc.pid).children()
        except psutil.NoSuchProcess:
            return []

    _terminate_when(proc, lambda: bool(child()))
    assert proc.returncode == 128 + signal.SIGTERM, (tmp_path / "err").read_text()
    assert not _outlived(proc.pid, within=0.5), "the measured run outlived the bench"


@pytest.fixture(scope="module")
def a_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "a"
    assert main(["run", str(FIG1), "--set", "duration_s=1", "--out", str(out), "--quiet", "--no-plots"]) == 0
    return out


def test_plotting_a_run_with_a_damaged_parquet_file_names_the_file(a_run, tmp_path):
    # A traceback from pyarrow (exit 1).
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(a_run, bad)
    (bad / "rtt.parquet").write_text("not parquet\n")
    r = _xrc("plot", bad, a_run, "--out", tmp_path / "p")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "rtt.parquet" in r.stderr, r.stderr
    with pytest.raises(ScenarioError, match="rtt.parquet"):
        xrc.read_run(bad).rtt


def test_a_damaged_json_file_of_a_run_directory_is_named(a_run, tmp_path, capsys):
    # "a file of the run directory is not valid JSON": which one?
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(a_run, bad)
    (bad / "summary.json").write_text("{")
    assert main(["plot", str(bad), "--out", str(tmp_path / "p")]) == 2
    assert "summary.json" in capsys.readouterr().err


def test_the_same_label_for_two_runs_is_refused(a_run, tmp_path, capsys):
    # Two curves under one name in every legend.
    assert main(["plot", str(a_run), str(a_run), "--label", "x", "--label", "x", "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err
    assert "--label" in err and "'x'" in err, err
    assert not (tmp_path / "p").exists()


def test_a_numpy_integer_seed_runs_as_the_same_plain_seed():
    # TypeError: Object of type int64 is not JSON serializable.
    import numpy as np

    a = xrc.run("paper/fig1-time-varying", duration_s=0.3, seed=np.int64(3))
    b = xrc.run("paper/fig1-time-varying", duration_s=0.3, seed=3)
    assert a.seed == 3 and a.summary["flows"] == b.summary["flows"]


def test_a_sweep_into_a_directory_that_is_not_a_sweep_directory_is_refused(a_run, tmp_path):
    # It wrote runs/, summary.parquet and sweep.json into a run directory
    # (which `xrc plot` then read as the one run, and `xrc run --force`
    # would have deleted with the sweep in it).
    import shutil

    target = tmp_path / "run"
    shutil.copytree(a_run, target)
    before = sorted(p.name for p in target.iterdir())
    p = _sweep(tmp_path, 'set = ["duration_s=0.2"]\n')
    r = _xrc("sweep", p, "--out", target, "--jobs", "1", "--quiet")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"--out {str(target)!r}" in r.stderr and "sweep" in r.stderr, r.stderr
    assert sorted(p.name for p in target.iterdir()) == before
    # An empty directory, or a sweep's own (resumed), is fine.
    (tmp_path / "empty").mkdir()
    assert main(["sweep", str(p), "--out", str(tmp_path / "empty"), "--jobs", "1", "--quiet"]) == 0
    assert main(["sweep", str(p), "--out", str(tmp_path / "empty"), "--jobs", "1", "--quiet"]) == 0


@pytest.mark.parametrize("body,shown", [
    ("seeds = 100000000000\n", "100000000000"),
    ("[grid]\n" + "".join(f'"k{i}" = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n' for i in range(9)), "1000000000 runs"),
])
def test_a_sweep_too_large_to_list_is_refused_before_it_fills_the_memory(body, shown, tmp_path):
    # MemoryError (a traceback) after filling the memory, on a shared machine.
    import resource

    p = _sweep(tmp_path, body)
    r = _xrc("sweep", p, "--out", tmp_path / "o", timeout=60,
             preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30)))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-500:]
    assert shown in r.stderr and "1000000" in r.stderr, r.stderr
    with pytest.raises(ScenarioError, match="1000000000 runs"):
        xrc.sweep("paper/fig1-time-varying", grid={f"k{i}": list(range(10)) for i in range(9)})


@pytest.mark.parametrize("cmd", [["reproduce", "--out", "OUT"], ["study", "nr"], ["study", "roccet"]])
@pytest.mark.parametrize("seeds,quick,shown", [("100000000", False, "100000000"), ("0", False, "got 0"),
                                               ("3", True, "--quick")])
def test_seeds_out_of_reason_or_ignored_by_quick_are_refused(cmd, seeds, quick, shown, tmp_path):
    # 10^8 seeds: a MemoryError traceback after filling the memory (study)
    # or a run of everything; --seeds with --quick was silently ignored.
    import resource

    args = [str(tmp_path / "o") if a == "OUT" else a for a in cmd] + ["--seeds", seeds] + (["--quick"] if quick else [])
    r = _xrc(*args, timeout=60, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30)))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-500:]
    assert "--seeds" in r.stderr and shown in r.stderr, r.stderr
    assert r.stdout == "" and not (tmp_path / "o").exists()


# ------------------------------------------------ scenarios that are not files

def test_a_scenario_from_a_pipe_is_read_and_an_empty_pipe_or_device_is_refused_at_once(tmp_path):
    # `xrc validate <(make-scenario)`: the shell hands over /dev/fd/N, a pipe.
    text = (SCENARIOS / "paper" / "fig1-time-varying.toml").read_text()
    r, w = os.pipe()
    os.write(w, text.encode())
    os.close(w)
    try:
        p = _xrc("validate", f"/dev/fd/{r}", pass_fds=(r,))
    finally:
        os.close(r)
    assert p.returncode == 0 and "ok (fig1-time-varying" in p.stdout, p.stderr
    # A named pipe nobody writes to must not hang; /dev/null gives no text;
    # a device that never ends is cut off.
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, says in ((fifo, "gave no text"), ("/dev/null", "gave no text"), ("/dev/zero", "larger than 64 MiB")):
        p = _xrc("validate", path, timeout=30)
        assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr, (path, p.stderr)


@pytest.mark.parametrize("dies_after_s", [0.0, 2.0])
def test_the_cell_benchs_measured_run_dies_with_the_bench_even_before_the_bench_holds_it(dies_after_s):
    # A SIGTERM that reaches `xrc bench --cell` while it is still starting
    # the measured child leaves the bench no handle to kill it with. Here
    # the bench is a process that starts the child the way `measure_cell`
    # does and dies without killing it, at once (before the child can arm
    # itself) or after 2 s; the child must not go on with its run (1,000
    # UEs for 600 s: about a minute of wall time on the 2026-11-25 host).
    import psutil

    starter = (
        "import os, subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-m', 'xrc.bench', '--child', '1000', '600.0', sys.argv[1]],"
        " env={**os.environ, 'XRC_BENCH_PARENT': str(os.getpid())}, stdout=subprocess.DEVNULL,"
        " stderr=subprocess.DEVNULL)\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(float(sys.argv[2]))\n"
        "os._exit(0)\n")
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run([sys.executable, "-c", starter, os.path.join(d, "run"), str(dies_after_s)],
                             capture_output=True, text=True, timeout=60)
        child = int(out.stdout.split()[0])
        deadline = time.monotonic() + 10
        alive = True
        while time.monotonic() < deadline:
            try:
                alive = psutil.Process(child).status() != psutil.STATUS_ZOMBIE
            except psutil.NoSuchProcess:
                alive = False
            if not alive:
                break
            time.sleep(0.05)
        if alive:
            psutil.Process(child).kill()
        assert not alive, "the measured run outlived the bench"


@pytest.mark.parametrize("cmd", [
    ["run", "FIG1", "--set", "duration_s=0.2", "--no-plots", "--quiet"],
    ["sweep", "SWEEP", "--quiet"],
    ["reproduce", "--quick", "--jobs", "1", "--quiet"],
    ["study", "nr", "--quick", "--jobs", "1"],
    ["study", "roccet", "--quick", "--jobs", "1"],
    ["plot", "RUN"],
    ["fuzz", "--cases", "1", "--quiet"],
    ["schema"],
])
@pytest.mark.parametrize("below", ["sub", "sub/deeper"])
def test_an_out_below_a_file_is_refused_naming_the_out_and_the_file(cmd, below, a_run, tmp_path):
    # It said "File exists" (run, reproduce, fuzz) or "Not a directory"
    # (sweep, study, plot) without saying which path was a file.
    (tmp_path / "afile").write_text("mine")
    sweep = _sweep(tmp_path, 'set = ["duration_s=0.2"]\n')
    before = sorted(p.name for p in tmp_path.iterdir())
    out = tmp_path / "afile" / below
    args = [{"FIG1": FIG1, "SWEEP": sweep, "RUN": a_run}.get(a, a) for a in cmd]
    r = _xrc(*args, "--out", out, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"--out {str(out)!r}: {str(tmp_path / 'afile')!r} is a file" in r.stderr, r.stderr
    assert r.stdout == "", "it ran anyway"
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert (tmp_path / "afile").read_text() == "mine"


def test_xrc_list_names_every_bundled_scenario_and_every_scheme(capsys):
    from xrc import _core, bundled

    assert main(["list"]) == 0
    out = capsys.readouterr().out
    names = [n.removesuffix(".toml") for n in bundled.list_scenarios()]
    listed = [ln.split()[0] for ln in out.splitlines() if ln.startswith("  ")]
    assert listed == names + list(_core.schemes())
    assert "Fig. 1: single flow over a time-varying LTE channel" in out
    assert main(["list", "schemes"]) == 0
    only = capsys.readouterr().out
    assert "Bundled scenarios" not in only and [ln.split()[0] for ln in only.splitlines()[1:]] == list(_core.schemes())


def test_xrc_list_points_at_a_page_for_every_scheme_that_exists_where_xrc_is_installed(tmp_path, monkeypatch, capsys):
    # It named docs/algorithms/NAME.md, a path of the checkout that an
    # installed package does not have: the pages ship inside the package.
    import re
    from pathlib import Path

    from xrc import _core

    monkeypatch.chdir(tmp_path)  # anywhere but the checkout
    assert main(["list", "schemes"]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    m = re.search(r"(/\S+)/NAME\.md", header)
    assert m, header
    for name in _core.schemes():
        page = Path(m.group(1)) / f"{name}.md"
        assert page.is_file(), page
        assert f'(`cc = "{name}"`)' in page.read_text().splitlines()[0]
        # `xrc doc NAME` prints the same page.
        assert main(["doc", name]) == 0
        assert capsys.readouterr().out == page.read_text()
    assert main(["doc", "cubicc"]) == 2
    err = capsys.readouterr().err
    assert "no congestion control 'cubicc'" in err and "cubic" in err


def test_a_scenario_that_is_not_found_names_the_bundled_ones_with_a_similar_name(tmp_path, capsys):
    assert main(["run", "paper/fig1", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "scenario file not found: 'paper/fig1'" in err and "paper/fig1-time-varying" in err
    assert "xrc list" in err and not (tmp_path / "r").exists()
    assert main(["validate", "paper/fig5-pair"]) == 2
    assert "paper/fig5-pairs" in capsys.readouterr().err
    assert main(["validate", "no-such-thing-at-all"]) == 2
    err = capsys.readouterr().err
    assert "similar name" not in err and "xrc list" in err


def _signal_as_prepare_returns(monkeypatch, calls):
    """Has outdir.prepare make its staging directory and then take a
    SIGTERM's exception (what xrc.stopping's handler raises) as it
    returns: the instant between the directory's making and the code that
    removes it.
    Deterministic, unlike a real signal sent at a guessed time."""
    from xrc import outdir, runner, stopping
    from xrc import reproduce as rep

    real = outdir.prepare

    def prepare_then_signalled(*a, **kw):
        made = real(*a, **kw)
        calls.append(made)
        assert made.is_dir()
        stopping.on_signal(signal.SIGTERM, None)

    monkeypatch.setattr(outdir, "prepare", prepare_then_signalled)
    # Where a caller imported it by name.
    for mod in (runner, rep):
        if hasattr(mod, "prepare"):
            monkeypatch.setattr(mod, "prepare", prepare_then_signalled)


def test_a_sigterm_as_xrc_run_makes_its_staging_directory_leaves_nothing_beside_out(tmp_path, monkeypatch):
    # Between `staging = prepare(...)` returning and the `try:` that
    # removes it, a SIGTERM left .o.partial-PID beside --out until the
    # next run to the same destination.
    from .conftest import MINIMAL_CELL

    (tmp_path / "s.toml").write_text(MINIMAL_CELL)
    calls: list = []
    _signal_as_prepare_returns(monkeypatch, calls)
    rc = main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o"), "--no-plots", "--quiet"])
    assert calls, "the signal was not injected"
    assert rc == 128 + signal.SIGTERM
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]


def test_a_sigterm_as_xrc_reproduce_makes_its_staging_directory_leaves_nothing_beside_out(tmp_path, monkeypatch):
    # The same gap in the report's writing (after every run of the study,
    # which is skipped here: no run is needed to reach it).
    from xrc import reproduce as rep

    monkeypatch.setattr(rep, "_run_all", lambda *a, **kw: [])
    calls: list = []
    _signal_as_prepare_returns(monkeypatch, calls)
    rc = main(["reproduce", "--quick", "--jobs", "1", "--out", str(tmp_path / "r"), "--quiet"])
    assert calls, "the signal was not injected"
    assert rc == 128 + signal.SIGTERM
    assert list(tmp_path.iterdir()) == []


def test_a_sigterm_as_a_study_makes_its_out_directory_leaves_nothing(tmp_path, monkeypatch):
    # study_out made --out before entering the try that removes it again.
    from pathlib import Path

    from xrc import stopping
    from xrc.study_nr import study_out

    real, out = Path.mkdir, tmp_path / "study"

    def mkdir_then_signalled(self, *a, **kw):
        real(self, *a, **kw)
        if self == out:
            stopping.on_signal(signal.SIGTERM, None)

    monkeypatch.setattr(Path, "mkdir", mkdir_then_signalled)
    with pytest.raises(SystemExit):
        with study_out(out, False, "# t"):
            pass
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


def _plots_take_a_sigterm(monkeypatch, then):
    """Has xrc run's plotting receive a SIGTERM (the handler runs, as it
    would between two bytecodes of Matplotlib) and `then` decide what the
    library does with its exception."""
    from xrc import plots, stopping

    def plot_all(*a, **kw):
        try:
            stopping.on_signal(signal.SIGTERM, None)
        except BaseException as e:
            then(e)

    monkeypatch.setattr(plots, "plot_all", plot_all)


def _rethrow_as_valueerror(e):
    raise ValueError("Invalid affine transformation matrix") from e


@pytest.mark.parametrize("then", [_rethrow_as_valueerror, lambda e: None], ids=["turned-into-valueerror", "swallowed"])
def test_a_sigterm_whose_exception_a_library_swallows_or_replaces_still_stops_the_run(then, tmp_path, monkeypatch,
                                                                                      capsys):
    # Sent at random calls of `xrc run`: one landing in Matplotlib's path
    # conversion came out as its ValueError (a traceback, exit 1); one
    # caught by a library's clean-up let the run write its results and
    # exit 0.
    from .conftest import MINIMAL_CELL

    (tmp_path / "s.toml").write_text(MINIMAL_CELL)
    _plots_take_a_sigterm(monkeypatch, then)
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o")]) == 143
    assert "terminated (SIGTERM)" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]
    # The request ends with the command: the next one (or the API) runs.
    monkeypatch.undo()
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o"), "--no-plots"]) == 0


_IMPORTED_UNDER_SIGTERM = """
import os, signal, sys, time
sys.path.insert(0, sys.argv[1])
from xrc import stopping
saved = stopping.install()
t0 = time.monotonic()
try:
    import slow_module   # sends itself SIGTERM half-way through
    print("imported whole:", slow_module.DONE, flush=True)
    while time.monotonic() - t0 < 10:
        time.sleep(0.01)
    print("not stopped")
except stopping.Terminated as e:
    print("stopped after the import:", e.code, round(time.monotonic() - t0, 2))
finally:
    stopping.restore(saved)
"""


def test_a_sigterm_during_an_import_waits_for_the_import_then_stops(tmp_path):
    # A SIGTERM landing in Matplotlib's ft2font while it built its enums
    # left the C extension half initialised: the interpreter aborted at
    # exit (Fatal Python error, SIGABRT) instead of exiting 143.
    (tmp_path / "slow_module.py").write_text(
        "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\nDONE = sum(range(1000)) > 0\n")
    r = subprocess.run([sys.executable, "-c", _IMPORTED_UNDER_SIGTERM, str(tmp_path)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "imported whole: True", r.stdout
    assert lines[1].startswith("stopped after the import: 143"), r.stdout
    assert float(lines[1].split()[-1]) < 2, r.stdout


def test_a_failed_study_removes_the_parents_of_its_out_it_made_but_nothing_that_was_there(tmp_path):
    from xrc.study_nr import study_out

    (tmp_path / "kept").mkdir()
    out = tmp_path / "kept" / "new" / "deeper" / "study"
    with pytest.raises(RuntimeError):
        with study_out(out, False, "# t"):
            raise RuntimeError("the study failed")
    assert [p.name for p in tmp_path.rglob("*")] == ["kept"]


def _listing(d):
    return sorted((str(p.relative_to(d)), p.stat().st_size) for p in d.rglob("*"))


@pytest.mark.parametrize("where", ["the run", "its plots folder", "deep inside it", "through a link", "another run"])
def test_plot_refuses_an_out_inside_a_run_directory_and_writes_nothing(a_run, tmp_path, capsys, where):
    # `xrc plot RUN --out RUN` added its figures to the run directory,
    # beside what `xrc run` wrote (and `xrc run --force` dropped them).
    import shutil

    other = tmp_path / "other"
    shutil.copytree(a_run, other)
    (tmp_path / "link").symlink_to(a_run)
    out = {"the run": a_run, "its plots folder": a_run / "plots", "deep inside it": a_run / "figs" / "x",
           "through a link": tmp_path / "link" / "figs", "another run": other / "figs"}[where]
    inside = other if where == "another run" else a_run
    before, before_other = _listing(a_run), _listing(other)
    assert main(["plot", str(a_run), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"--out {str(out)!r}" in err and str(inside) in err and "run directory" in err, err
    assert _listing(a_run) == before and _listing(other) == before_other, "something was written"


def test_plot_writes_into_a_sweep_directory_beside_its_runs(a_run, tmp_path, capsys):
    # A sweep's directory is not a run directory: figures may go there.
    import shutil

    sw = tmp_path / "sw"
    shutil.copytree(a_run, sw / "runs" / "r0")
    assert main(["plot", str(sw / "runs" / "r0"), "--out", str(sw / "figures")]) == 0
    assert (sw / "figures" / "tradeoff.png").is_file()


@pytest.mark.parametrize("path", ["flows.².cc", "flows.0.tcp.①"])
def test_a_path_with_a_non_ascii_digit_is_refused_not_a_traceback(path, capsys):
    # int("²") raised ValueError: "²".isdigit() is true.
    assert main(["validate", str(FIG1), "--set", f"{path}=1"]) == 2
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["toml", "json"])
def test_a_scenario_nested_hundreds_deep_is_refused_not_a_recursion_error(tmp_path, capsys, kind):
    f = tmp_path / f"deep.{kind}"
    if kind == "toml":
        f.write_text("seed = 1\na = " + "[" * 600 + "]" * 600 + "\n")
    else:
        f.write_text('{"seed": 1, "x": ' + '{"a": ' * 600 + "1" + "}" * 600 + "}")
    assert main(["validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and ("nested too deeply" in err or "recursion limit" in err), err


def test_a_nul_in_a_trace_path_is_refused_naming_the_field(tmp_path, capsys):
    f = tmp_path / "nul.toml"
    f.write_text('seed = 1\ntopology = "trace"\n[trace]\ndownlink = "a\\u0000b"\n[[flows]]\ncc = "cubic"\n')
    assert main(["validate", str(f)]) == 2
    assert "trace.downlink: a file name cannot hold a NUL character" in capsys.readouterr().err


def test_a_dask_address_dask_cannot_parse_is_refused_before_anything_runs(tmp_path, capsys):
    f = tmp_path / "s.toml"
    f.write_text('scenario = "paper/fig1-time-varying"\nset = ["duration_s=0.5"]\n')
    assert main(["sweep", str(f), "--engine", "dask", "--address", "::::", "--out", str(tmp_path / "o")]) == 2
    assert "--address '::::'" in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_plot_of_a_sweep_over_a_table_valued_field_draws_it(tmp_path):
    # The form docs/cli.md shows: a TypeError sorting the tables.
    f = tmp_path / "s.toml"
    f.write_text('scenario = "paper/fig1-time-varying"\nset = ["duration_s=0.5"]\n[grid]\n'
                 '"flows.0.tcp" = [{ initial_cwnd = 4 }, { initial_cwnd = 20 }]\n')
    assert main(["sweep", str(f), "--out", str(tmp_path / "sw"), "--quiet", "--jobs", "1"]) == 0
    assert main(["plot", str(tmp_path / "sw"), "--out", str(tmp_path / "p")]) == 0
    assert list((tmp_path / "p").glob("sweep_*.png"))


# ---------------------------------------------------------------------------
# Damaged run and sweep directories: a message naming the file.

@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    from .conftest import MINIMAL_CELL

    d = tmp_path_factory.mktemp("finished")
    (d / "s.toml").write_text(MINIMAL_CELL)
    assert main(["run", str(d / "s.toml"), "--out", str(d / "run"), "--no-plots", "--quiet"]) == 0
    return d / "run"


def _damaged_copy(finished_run, tmp_path):
    import shutil

    d = tmp_path / "run"
    shutil.copytree(finished_run, d)
    return d


def test_a_run_whose_summary_is_a_list_is_a_message_from_read_run_and_xrc_plot(finished_run, tmp_path):
    # xrc plot failed with TypeError; read_run returned a run that failed later.
    d = _damaged_copy(finished_run, tmp_path)
    (d / "summary.json").write_text("[1, 2]")
    with pytest.raises(ScenarioError, match=r"summary\.json' holds a list, not an object"):
        xrc.read_run(d)
    r = _xrc("plot", d, "--out", tmp_path / "p")
    assert r.returncode == 2 and "summary.json' holds a list" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_read_run_of_a_summary_that_is_a_named_pipe_answers_at_once(finished_run, tmp_path):
    # It waited for ever for a writer.
    d = _damaged_copy(finished_run, tmp_path)
    (d / "summary.json").unlink()
    os.mkfifo(d / "summary.json")
    r = subprocess.run([sys.executable, "-c", f"import xrc; xrc.read_run({str(d)!r})"], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 1 and "summary.json' is not a regular file" in r.stderr, r.stderr
    r = _xrc("plot", d, "--out", tmp_path / "p", timeout=30)
    assert r.returncode == 2 and "summary.json' is not a regular file" in r.stderr, r.stderr


def test_a_table_file_swapped_for_another_is_refused_not_read_as_that_table(finished_run, tmp_path):
    # rtt.parquet copied over cwnd.parquet was returned as run.cwnd.
    import shutil

    d = _damaged_copy(finished_run, tmp_path)
    shutil.copy(d / "rtt.parquet", d / "cwnd.parquet")
    run = xrc.read_run(d)
    with pytest.raises(ScenarioError, match=r"cwnd\.parquet' holds columns that table 'cwnd' does not have \(rtt_ms"):
        run.cwnd
    assert len(run.rtt) > 0


@pytest.mark.parametrize("text", ["", "{\"runs\": ", "[]", "{\"runs\": [{\"run_id\": \"../x\", \"seed\": 1, "
                                                                "\"overrides\": []}]}"])
def test_xrc_plot_of_a_sweep_whose_sweep_json_is_damaged_names_it(text, tmp_path):
    # An empty sweep.json was a JSONDecodeError traceback.
    (tmp_path / "sw" / "runs").mkdir(parents=True)
    (tmp_path / "sw" / "sweep.json").write_text(text)
    r = _xrc("plot", tmp_path / "sw", "--out", tmp_path / "p")
    assert r.returncode == 2 and "sweep.json'" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "p").exists()


def test_a_sweep_resumed_over_a_truncated_run_summary_runs_that_point_again(tmp_path, capsys):
    # The truncated summary counted as a finished run: the merge failed
    # with a JSON traceback on every resume.
    from .conftest import MINIMAL_CELL

    (tmp_path / "base.toml").write_text(MINIMAL_CELL)
    (tmp_path / "sw.toml").write_text('scenario = "base.toml"\nseeds = 2\nset = ["duration_s=0.5"]\n')
    argv = ["sweep", str(tmp_path / "sw.toml"), "--out", str(tmp_path / "o"), "--jobs", "1", "--quiet"]
    assert main(argv) == 0
    table = pq.read_table(tmp_path / "o" / "summary.parquet").to_pylist()
    first = sorted((tmp_path / "o" / "runs").iterdir())[0]
    whole = (first / "summary.json").read_text()
    (first / "summary.json").write_text(whole[:len(whole) // 2])
    capsys.readouterr()
    assert main(argv) == 0
    assert f"damaged summary.json and run again: {first.name}" in capsys.readouterr().err
    import json

    def timeless(x):
        return {k: v for k, v in x.items() if "wall" not in k}

    assert timeless(json.loads((first / "summary.json").read_text())) == timeless(json.loads(whole))
    assert [timeless(r) for r in pq.read_table(tmp_path / "o" / "summary.parquet").to_pylist()] == \
        [timeless(r) for r in table]


def test_ctrl_c_while_the_arguments_are_parsed_is_an_interruption_not_a_traceback(monkeypatch, capsys):
    # Found by `xrc fuzz --surface edges`: SIGINT in the first milliseconds
    # of a command (argparse compiling its patterns) escaped main().
    import argparse

    from xrc import cli

    def interrupted(self, *a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", interrupted)
    assert cli.main(["list"]) == 130
    assert capsys.readouterr().err.strip() == "xrc: interrupted"


def test_a_ctrl_c_that_a_library_swallows_still_stops_the_run(tmp_path, monkeypatch, capsys):
    # Found by `xrc fuzz --surface edges`: SIGINT landing while a sweep
    # forked a worker went to logging's after-fork callback, was printed as
    # "Exception ignored" and the sweep ran to the end, exit 0.
    from xrc import plots

    from .conftest import MINIMAL_CELL

    def plot_all(*a, **kw):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):   # the handler runs between two bytecodes
                pass
        except KeyboardInterrupt:
            pass

    (tmp_path / "s.toml").write_text(MINIMAL_CELL)
    monkeypatch.setattr(plots, "plot_all", plot_all)
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o")]) == 130
    assert capsys.readouterr().err.strip().endswith("xrc: interrupted")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]
    monkeypatch.undo()
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o"), "--no-plots"]) == 0


def test_the_janitor_removes_a_staging_directory_killed_before_its_mark_and_nothing_else(tmp_path):
    # Found by `xrc fuzz --surface edges`: SIGKILL between making the
    # staging directory and writing its mark left `.out.partial-PID`; the
    # janitor removed only a marked one. An empty one is removed too; one
    # holding anything without the mark is not its own and stays.
    from xrc.outdir import Janitor

    empty, full = tmp_path / ".a.partial-1", tmp_path / ".b.partial-2"
    js = [Janitor(empty), Janitor(full)]
    empty.mkdir()
    full.mkdir()
    (full / "user-file").write_text("x")
    for j in js:
        j.proc.stdin.close()   # as when the writer dies
        j.proc.wait(timeout=10)
    assert not empty.exists() and (full / "user-file").exists()


def test_a_refused_api_sweep_leaves_no_output_directory(tmp_path):
    # Found by `xrc fuzz --surface edges`: a dict scenario's base file was
    # written into `out` before its variants were checked.
    import xrc

    from xrc.fuzz.edges import TINY

    import tomllib

    doc = tomllib.loads(TINY)
    with pytest.raises(xrc.ScenarioError, match="internet.rate_mbps"):
        # The keyword removes the field from every run: each variant fails.
        xrc.sweep(doc, {"flows.0.cc": ["cubic"]}, out=tmp_path / "sw", internet__rate_mbps=None)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_ctrl_c_the_instant_the_handlers_are_installed_is_an_interruption(monkeypatch, capsys):
    # Found by `xrc fuzz --surface edges`: a SIGINT landing as
    # stopping.install() returned escaped main() as a traceback.
    from xrc import stopping
    from xrc.cli import main

    install = stopping.install

    def install_then_interrupted():
        saved = install()
        stopping.restore(saved)   # what the interrupted caller could not do
        raise KeyboardInterrupt

    monkeypatch.setattr(stopping, "install", install_then_interrupted)
    assert main(["list"]) == 130
    assert capsys.readouterr().err.strip() == "xrc: interrupted"
