"""5G NR cells from the front end: bad NR fields are exit-2 errors naming
the field and the value, the bundled mid-band scenarios run, and `xrc study
nr` reports TDD against FDD."""

from __future__ import annotations

import pytest

from xrc import bundled
from xrc.cli import main

TDD = str(bundled.scenario("nr/midband-tdd.toml"))


@pytest.mark.parametrize("override, message", [
    ("cell.bandwidth_mhz=120", "cell.bandwidth_mhz: 120 MHz at numerology 1"),
    ("cell.nr.numerology=0", "cell.bandwidth_mhz: 100 MHz at numerology 0"),
    ("cell.nr.numerology=7", "cell.nr.numerology must be in [0, 3], got 7"),
    ("cell.nr.tdd_pattern=DDSXU", 'cell.nr.tdd_pattern: "DDSXU"'),
    ("cell.nr.mcs_table=qam1024", "cell.nr.mcs_table"),
    ("cell.harq.k1_slots=99", "cell.harq.k1_slots must be in [0, 15], got 99"),
])
def test_a_bad_nr_field_is_an_exit_2_error_naming_the_field_and_value(override, message, capsys):
    assert main(["validate", TDD, "--set", override]) == 2
    assert message in capsys.readouterr().err


def test_the_tdd_cell_carries_about_three_and_a_half_fifths_of_its_fdd_twin(tmp_path):
    from xrc.runner import simulate
    from xrc.scenario import load

    got = {}
    for name in ("tdd", "fdd"):
        sc = load(bundled.scenario(f"nr/midband-{name}.toml"), overrides=["duration_s=3"])
        t = simulate(sc)["tables"]["flows"]
        got[name] = float(t["bytes_delivered"].sum())
    # D slots carry what FDD slots do, the S slot 8 of 12 PDSCH symbols, the
    # U slot nothing: (3 + ~0.67) / 5 of the downlink, give or take TCP.
    assert 0.65 < got["tdd"] / got["fdd"] < 0.80, got


def test_study_nr_reports_every_scheme_under_tdd_and_fdd_and_hystart_alone(tmp_path, capsys):
    out = tmp_path / "study"
    assert main(["study", "nr", "--quick", "--jobs", "1", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert text == (out / "report.md").read_text()
    for cc in ("xrc", "cubic", "bbr", "bbr3", "roccet", "newreno"):
        assert f"| {cc} | TDD |" in text and f"| {cc} | FDD |" in text
    for row in ("| FDD | 3 |", "| TDD DDDSU | 3 |", "| TDD DDDDDDDSUU | 3 |"):
        assert row in text
    assert main(["study", "nr", "--quick", "--out", str(out)]) == 2


MMWAVE = str(bundled.scenario("nr/mmwave-blockage.toml"))


@pytest.mark.parametrize("override, message", [
    ("ues.0.channel.pathloss.frequency_ghz=200", "ues.0.channel.pathloss.frequency_ghz must be in [0.5, 100]"),
    ("ues.0.channel.blockage.mean_blocked_ms=0", "ues.0.channel.blockage.mean_blocked_ms must be in [0.1,"),
    ("ues.0.channel.pathloss.scenario=rma", "ues.0.channel.pathloss.scenario: unknown variant `rma`, expected `uma` or `umi`"),
])
def test_a_bad_mmwave_channel_field_is_an_exit_2_error(override, message, capsys):
    assert main(["validate", MMWAVE, "--set", override]) == 2
    assert message in capsys.readouterr().err


def test_blockage_collapses_the_mmwave_capacity_and_it_recovers():
    from xrc.runner import simulate
    from xrc.scenario import load

    # Seed 1: blocked from 5.05 to 5.19 s, 7.26 to 7.36 s, ...
    t = simulate(load(MMWAVE, overrides=["duration_s=8"]))["tables"]["rlc"]
    avail = t["available_mbps"]
    # Line of sight: 256QAM at CQI 15 over 264 PRBs; blocked: far less.
    hi, lo = float(avail.max()), float(avail.min())
    assert lo < 0.6 * hi, (lo, hi)
    # It comes back: the last high sample is after the first low one.
    low = (avail < 0.6 * hi).nonzero()[0]
    high = (avail > 0.9 * hi).nonzero()[0]
    assert low.size and high.size and high[-1] > low[0]


STATIONARY = str(bundled.scenario("nr/roccet-stationary.toml"))
MOBILE = str(bundled.scenario("nr/roccet-mobile.toml"))


@pytest.mark.parametrize("path", [STATIONARY, MOBILE])
@pytest.mark.parametrize("cc", ["cubic", "roccet", "bbr3", "xrc", "xrc2"])
def test_the_roccet_scenarios_validate_with_every_scheme_of_the_comparison(path, cc, capsys):
    assert main(["validate", path, "--set", f"flows.0.cc={cc}"]) == 0
    assert "1 flows, 30.0 s" in capsys.readouterr().out


@pytest.mark.parametrize("override, message", [
    ("ues.0.channel.shadowing_decorrelation_m=0.5", "ues.0.channel.shadowing_decorrelation_m must be in [1, 10000], "
                                                    "got 0.5"),
    ("ues.0.channel.trajectory.points=[[0.0, 200.0], [0.0, 300.0]]",
     "ues.0.channel.trajectory.points.1: time 0 s must be after the previous point"),
    ("ues.0.channel.trajectory.points=[[0.0, 0.5]]", "ues.0.channel.trajectory.points.0.1 (distance, m) must be in"),
])
def test_a_bad_path_trajectory_is_an_exit_2_error_naming_the_field_and_value(override, message, capsys):
    assert main(["validate", MOBILE, "--set", override]) == 2
    assert message in capsys.readouterr().err


def test_shadowing_on_a_path_without_a_decorrelation_distance_is_an_exit_2_error(tmp_path, capsys):
    text = open(MOBILE).read().replace("shadowing_decorrelation_m = 50.0\n", "")
    (tmp_path / "m.toml").write_text(text)
    assert main(["validate", str(tmp_path / "m.toml")]) == 2
    assert "ues.0.channel.shadowing_decorrelation_m: required with trajectory kind \"path\"" in capsys.readouterr().err


def test_the_stationary_ue_keeps_its_capacity_and_the_driving_ue_sees_it_change_over_seconds():
    from xrc.runner import simulate
    from xrc.scenario import load

    per_s = {}
    for name, path in (("stationary", STATIONARY), ("mobile", MOBILE)):
        t = simulate(load(path, overrides=["duration_s=12", "flows.0.cc=xrc"]))["tables"]["rlc"]
        sec = (t["t"] // 1).astype(int)
        per_s[name] = [float(t["available_mbps"][sec == s].mean()) for s in range(12)]
    st, mo = per_s["stationary"], per_s["mobile"]
    # A fixed SINR: the same capacity every second (CQI 13 of table 2).
    assert max(st) - min(st) < 1e-6 * max(st), st
    # Driving away through correlated shadowing: one-second means that
    # differ by more than a third between their best and worst seconds.
    assert min(mo) < 0.67 * max(mo), mo


def test_study_roccet_reports_every_scheme_alone_stationary_and_mobile(tmp_path, capsys):
    out = tmp_path / "study"
    assert main(["study", "roccet", "--quick", "--jobs", "1", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert text == (out / "report.md").read_text()
    for cc in ("cubic", "roccet", "bbr3", "xrc", "xrc2"):
        for where in ("stationary", "mobile"):
            assert f"| {cc} | {where} |" in text
    assert "20 runs" in text
    assert "| roccet | mobile, deep buffer |" in text
    assert main(["study", "roccet", "--quick", "--out", str(out)]) == 2
    assert main(["study", "roccet", "--seeds", "0"]) == 2
