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


def _results(ids: list[str], duration: float) -> dict:
    return {"schema": linuxref.RESULTS_SCHEMA,
            "environment": {"date": "2026-01-01", "kernel": "6.18", "hz": 250, "cpus": 2, "command": ["xrc"],
                            "emulator": {"name": "xrc-emu", "git_commit": "abc", "xrc_version": "0"}},
            "settings": {"duration_s": duration, "steady_window_s": [5.0, duration], "repeats": 2},
            "cases": [{"id": i, "runs": []} for i in ids]}


def test_merged_results_follow_the_case_order_and_refuse_runs_of_other_lengths(tmp_path):
    import json

    a, b, c = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    a.write_text(json.dumps(_results(["ATT-LTE-driving-40ms-150kB-bbr"], 60.0)))
    b.write_text(json.dumps(_results(["wired-20mbit-40ms-67p-cubic"], 60.0)))
    c.write_text(json.dumps(_results(["wired-20mbit-40ms-67p-reno"], 30.0)))
    m = linuxref.merge_results([a, b])
    assert [x["id"] for x in m["cases"]] == ["wired-20mbit-40ms-67p-cubic", "ATT-LTE-driving-40ms-150kB-bbr"]
    assert len(m["parts"]) == 2
    assert "| wired-20mbit-40ms-67p-cubic |" in linuxref.markdown(m)
    with pytest.raises(ValueError, match="duration_s"):
        linuxref.merge_results([a, c])


def test_resimulating_stored_runs_fills_the_simulated_side_and_the_deltas(tmp_path):
    doc = _results(["wired-20mbit-40ms-67p-cubic"], 10.0)
    case = linuxref.select_cases("wired-20mbit-40ms-67p-cubic")[0]
    entry = doc["cases"][0]
    entry["case"] = {k: getattr(case, k) for k in ("id", "link", "cc", "rtt_ms", "buffer_packets", "buffer_bytes",
                                                   "trace", "rate_mbps")}
    entry["runs"] = [{"metrics": {"goodput_mbps": 19.0, "rtt_mean_ms": 70.0}, "flow_start_offset_s": 0.3}]
    entry["linux"] = linuxref.aggregate(entry["runs"])
    out = linuxref.resimulate(doc, tmp_path / "traces")
    sim = out["cases"][0]["xrc"]
    assert sim["flow_start_s"] == 0.0, "the smooth link is time-invariant: no offset"
    assert sim["scenario"]["internet"]["buffer_packets"] == 67
    m = sim["metrics"]
    assert 18.5 < m["goodput_mbps"] < 19.4 and m["rtt_samples"] > 1000
    assert out["cases"][0]["delta"]["goodput_mbps"] == pytest.approx((m["goodput_mbps"] - 19.0) / 19.0)
    assert out["cases"][0]["delta"]["drops"] is None, "no Linux number, no delta"
    again = linuxref.resimulate(doc, tmp_path / "traces")
    assert again["cases"][0]["xrc"]["metrics"] == m, "the simulated side is deterministic"
