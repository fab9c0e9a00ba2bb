"""Fuzzing: bounded campaigns of mutated scenarios, ``--set`` overrides and
trace/CQI files, and of the edges around them (API calls, sweep files,
damaged directories, signals, concurrent writers, full disks), run in every
``make test``; the harness is shown to catch what it looks for, and each
defect the fuzzer found has its regression test (here, beside the code it
concerns, or in the core).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xrc import fuzz
from xrc.cli import main

from .conftest import MINIMAL_CELL, SCENARIOS

#: The campaign `make test` runs: its seed, size and share of runs.
SEED = 20261124
CASES = 2000
RUN_FRACTION = 0.6


def test_two_thousand_fuzz_cases_give_no_panic_traceback_hang_or_absurd_summary(tmp_path):
    rep = fuzz.campaign(CASES, SEED, tmp_path / "fuzz", jobs=2, scenarios=SCENARIOS, run_fraction=RUN_FRACTION,
                        case_timeout=20.0)
    print(rep.describe())
    assert sum(rep.counts.values()) == CASES
    assert rep.failed == 0, rep.describe()
    # The campaign exercised every path: rejections of each kind, accepted
    # scenarios, and runs to completion through the run directory.
    assert set(rep.by_kind) == set(fuzz.KINDS)
    for kind, counts in rep.by_kind.items():
        assert counts.get("rejected", 0) > 0, kind
    assert rep.counts.get("accepted", 0) + rep.counts.get("ran", 0) >= CASES // 10
    assert rep.counts.get("ran", 0) >= 200, rep.describe()
    report = json.loads((tmp_path / "fuzz" / "report.json").read_text())
    assert report["counts"] == rep.counts


#: The edge campaign `make test` runs.
EDGE_SEED = 20261129
EDGE_CASES = 2000


def test_two_thousand_edge_cases_lose_no_result_leave_nothing_and_raise_no_traceback(tmp_path):
    from xrc.fuzz import edges

    rep = fuzz.campaign(EDGE_CASES, EDGE_SEED, tmp_path / "edges", jobs=2, surface="edges", quick=True,
                        case_timeout=30.0)
    print(rep.describe())
    assert sum(rep.counts.values()) == EDGE_CASES
    assert rep.failed == 0, rep.describe()
    kinds = set(edges.KINDS) - (set() if edges.EdgeGenerator(0).can_mount else {"disk"})
    assert set(rep.by_kind) == kinds, rep.by_kind
    # Both sides of every kind's oracle were reached where it has two.
    for kind in ("api", "sweepfile", "damaged", "sequence"):
        assert rep.by_kind[kind].get("done", 0) > 0 and rep.by_kind[kind].get("refused", 0) > 0, (kind, rep.by_kind)
    assert rep.counts.get("interrupted", 0) > 0, rep.by_kind


def test_the_edge_harness_reports_an_exception_and_a_file_left_behind(tmp_path):
    rep = fuzz.campaign(4, 1, tmp_path / "out", jobs=1, surface="edges", case_timeout=30.0,
                        sabotage={1: "raise", 2: "leave"})
    assert rep.counts.get("traceback") == 1 and rep.counts.get("leftover") == 1, rep.describe()
    assert sorted(p.name for p in (tmp_path / "out" / "failures").iterdir()) == ["1-traceback", "2-leftover"]
    info = json.loads((tmp_path / "out" / "failures" / "2-leftover" / "case.json").read_text())
    assert info["ops"] and "left-behind" in info["message"]
    assert "--surface edges --seed 1 --case 2" in (tmp_path / "out" / "failures" / "2-leftover" / "repro.sh").read_text()


def test_the_same_seed_makes_the_same_edge_cases():
    from xrc.fuzz.edges import EdgeGenerator

    a, b, c = EdgeGenerator(3, can_mount=True), EdgeGenerator(3, can_mount=True), EdgeGenerator(4, can_mount=True)
    assert all(a.case(i) == b.case(i) for i in range(300))
    assert sum(a.case(i) == c.case(i) for i in range(300)) < 60


def test_the_same_seed_makes_the_same_cases_and_another_seed_other_cases():
    a = fuzz.Generator(3, SCENARIOS, 0.5)
    b = fuzz.Generator(3, SCENARIOS, 0.5)
    c = fuzz.Generator(4, SCENARIOS, 0.5)
    same = [a.case(i) == b.case(i) for i in range(200)]
    assert all(same)
    assert sum(a.case(i) == c.case(i) for i in range(200)) < 20


def test_the_harness_reports_an_exception_a_hang_and_a_dead_worker_with_a_reproducer_each(tmp_path, monkeypatch):
    # Cases 0..5 with three sabotaged: the rest must still be counted.
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr("tempfile.tempdir", str(tmp))
    rep = fuzz.campaign(6, 1, tmp_path / "out", jobs=2, scenarios=SCENARIOS, case_timeout=1.0,
                        sabotage={1: "raise", 2: "hang", 4: "abort"})
    # Nothing left in the temporary directory: the workers are killed at
    # the end (and the hung and aborted ones on the way), which left their
    # scratch directories, one /tmp/xrc-fuzz-* each.
    assert list(tmp.iterdir()) == []
    assert sum(rep.counts.values()) == 6
    outcomes = {f["index"]: f["outcome"] for f in rep.failures}
    assert outcomes == {1: "traceback", 2: "hang", 4: "crash"}, rep.describe()
    for f in rep.failures:
        d = Path(f["dir"])
        assert (d / "scenario.toml").is_file() and (d / "repro.sh").is_file()
        case = json.loads((d / "case.json").read_text())
        assert case["index"] == f["index"] and case["outcome"] == f["outcome"]


def test_a_summary_with_nan_or_utilization_above_one_is_absurd(tmp_path):
    from xrc.runner import run_to_dir
    from xrc.scenario import load_text

    sc = load_text(MINIMAL_CELL.replace("duration_s = 2.0", "duration_s = 0.3"), base=tmp_path)
    run_to_dir(sc, tmp_path / "run", plots=False)
    assert fuzz.check_summary(tmp_path / "run", sc.resolved) == []
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    s["ues"][0]["utilization"] = 1.2
    s["flows"][0]["retransmits"] = -1
    s["jain_index"] = float("nan")
    (tmp_path / "run" / "summary.json").write_text(json.dumps(s))
    problems = fuzz.check_summary(tmp_path / "run", sc.resolved)
    assert any("NaN" in p for p in problems), problems
    s["jain_index"] = None
    (tmp_path / "run" / "summary.json").write_text(json.dumps(s))
    problems = " ".join(fuzz.check_summary(tmp_path / "run", sc.resolved))
    assert "utilization = 1.2 is above 1" in problems and "retransmits = -1 is negative" in problems


# ---------------------------------------------------------------------------
# Defects the fuzzer found in the front end.


@pytest.mark.parametrize("value,shown", [
    ("nan", "nan"), ("inf", "inf"), ("-inf", "-inf"),
    ("99999999999999999999999", "99999999999999999999999"),
    ("-9223372036854775809", "-9223372036854775809"),
])
@pytest.mark.parametrize("field", ["duration_s", "seed", "flows.0.tcp.mss", "internet.delay_ms"])
def test_a_non_finite_number_or_an_integer_beyond_64_bits_is_refused_naming_the_field_and_the_value(
        field, value, shown, write_scenario, capsys):
    # Found by the fuzzer: NaN reached the core as JSON text it cannot
    # parse ("duration_s: expected value"), and 10**23 as a float ("invalid
    # type: floating point `1e+23`" for an integer the user wrote).
    p = write_scenario(MINIMAL_CELL)
    assert main(["validate", str(p), "--set", f"{field}={value}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"xrc: error: {field}: ") and shown in err, err
    assert "expected value" not in err and "floating point" not in err, err


def test_xrc_fuzz_into_a_closed_pipe_is_not_a_traceback(tmp_path):
    # Found running the campaign: `xrc fuzz ... | head -3` ended in a
    # BrokenPipeError traceback (the command bypassed the CLI's handlers).
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "xrc.cli", "fuzz", "--cases", "3", "--out", str(tmp_path / "f"),
                             "--scenarios", str(SCENARIOS), "--quiet", "--jobs", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert proc.returncode == 2 and "broken pipe" in err, (proc.returncode, err)
