"""``xrc validate-linux`` without root: the cases, their scenarios, the
constant trace, the metrics, and refusing clearly when the machine cannot
host the testbed."""

from __future__ import annotations

import numpy as np
import pytest

from xrc import _core
from xrc.cli import main
from xrc.emulation import linuxref
from xrc.emulation import testbed as tbmod

from .conftest import SHARED


def test_the_constant_20_mbit_trace_is_five_opportunities_every_3_ms():
    text = linuxref.constant_trace(20.0)
    assert text == "1\n2\n2\n3\n3\n"
    n, period, mbps = _core.check_trace(text)
    assert (n, period) == (5, 3)
    assert mbps == pytest.approx(20.0, rel=1e-12)


@pytest.mark.parametrize("rate", [1.0, 12.0, 20.0, 48.5])
def test_a_constant_trace_has_the_asked_mean_rate(rate):
    _, _, mbps = _core.check_trace(linuxref.constant_trace(rate))
    assert mbps == pytest.approx(rate, rel=1e-9)


def test_there_are_24_cases_and_the_filter_takes_shell_patterns():
    assert len(linuxref.all_cases()) == 24
    ids = [c.id for c in linuxref.select_cases("wired-*-267p-*,ATT-LTE-driving-10ms-150kB-bbr")]
    assert ids == ["wired-20mbit-40ms-267p-cubic", "wired-20mbit-40ms-267p-reno", "wired-20mbit-40ms-267p-bbr",
                   "ATT-LTE-driving-10ms-150kB-bbr"]
    with pytest.raises(ValueError, match="matches no case"):
        linuxref.select_cases("nope-*")


def test_every_case_resolves_to_a_scenario_with_the_case_link(tmp_path):
    for case in linuxref.all_cases():
        if case.link == "cell" and not (SHARED / "traces" / f"{case.trace}.down").exists():
            continue
        traces = linuxref.trace_files(case, tmp_path)
        sc, _ = linuxref.resolve_sim(case, 60.0, traces)
        r = sc.resolved
        f = r["flows"][0]
        assert f["cc"] == {"reno": "newreno"}.get(case.cc, case.cc)
        assert f["tcp"]["mss"] == 1448 and f["tcp"]["loss_detection"] == "rack"
        assert f["tcp"]["min_rto_ms"] == 200.0 and f["receiver"]["delack_timeout_ms"] == 40.0
        assert f["receiver"]["quickack_segments"] == 16
        assert r["internet"]["delay_ms"] == case.rtt_ms / 2
        if case.link == "wired":
            assert r["topology"] == "wired" and r["internet"]["buffer_packets"] == case.buffer_packets
        else:
            assert r["topology"] == "trace"
            assert r["trace"]["buffer_packets"] == case.buffer_packets
            assert r["trace"]["buffer_bytes"] == case.buffer_bytes


def test_the_time_weighted_mean_of_a_step_function():
    t = np.array([0.0, 1.0, 3.0])
    v = np.array([10.0, 20.0, 40.0])
    assert linuxref.step_mean(t, v, 0.0, 4.0) == pytest.approx((10 + 40 + 40) / 4)
    assert linuxref.step_mean(t, v, 2.0, 4.0) == pytest.approx((20 + 40) / 2)


def test_validate_linux_refuses_without_root_with_exit_2(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(tbmod.os, "geteuid", lambda: 1000)
    code = main(["validate-linux", "--cases", "wired-20mbit-40ms-67p-cubic", "--repeats", "1",
                 "--duration", "10", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert "root" in err and "Traceback" not in err


def test_validate_linux_refuses_without_iperf3_with_exit_2(monkeypatch, capsys, tmp_path):
    real_which = tbmod.shutil.which
    monkeypatch.setattr(tbmod.shutil, "which", lambda t: None if t == "iperf3" else real_which(t))
    monkeypatch.setattr(tbmod.os, "geteuid", lambda: 0)
    code = main(["validate-linux", "--cases", "wired-20mbit-40ms-67p-cubic", "--out", str(tmp_path / "out")])
    assert code == 2
    assert "iperf3" in capsys.readouterr().err


def test_bad_harness_arguments_exit_2(capsys):
    assert main(["validate-linux", "--cases", "nope"]) == 2
    assert main(["validate-linux", "--repeats", "0", "--cases", "wired-20mbit-40ms-67p-cubic"]) == 2
    assert "repeats" in capsys.readouterr().err
