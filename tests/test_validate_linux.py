"""``xrc validate-linux`` without root: the cases, their scenarios, the
constant trace, the metrics, and refusing clearly when the machine cannot
host the testbed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from xrc import _core
from xrc.cli import main
from xrc.emulation import linuxref
from xrc.emulation import testbed as tbmod



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
        # A cellular trace comes from ../shared/traces or, without it, from
        # the slices shipped beside the reference.
        traces = linuxref.trace_files(case, tmp_path)
        r = linuxref.resolve_sim(case, 60.0, traces).resolved
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
            # The ACKs cross an uplink trace, on both sides, with Mahimahi's
            # default (unlimited) uplink queue: the constant trace's own
            # file (mm-link T T), or the cellular trace's .up file.
            up = Path(r["trace"]["uplink"])
            assert up.name == (f"{case.trace}.up" if case.link == "cell" else Path(r["trace"]["downlink"]).name)
            assert r["trace"]["uplink_buffer_packets"] is None and r["trace"]["uplink_buffer_bytes"] is None
            assert r["internet"]["rate_mbps"] is None and r["internet"]["buffer_packets"] is None, \
                "mm-delay: a pure delay"


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


@pytest.mark.parametrize("args, says", [
    (["--cases", "nope"], "--cases 'nope' matches no case"),
    (["--repeats", "0"], "--repeats must be in [1, 1000], got 0"),
    (["--duration", "6"], "--duration must be in (6, 86400] s"),
    (["--duration", "nan"], "got nan"),
    (["--duration", "inf"], "got inf"),
    (["--cpu", "4096"], "--cpu must be one of the CPUs this process may use"),
    (["--app-nice", "-21"], "--app-nice must be in [-20, 19], got -21"),
    (["--retake-noisy", "-1"], "--retake-noisy must be in [0, 20], got -1"),
    (["--resim", "x.json", "--merge", "y.json", "--out", "z"], "give one of them, not both"),
    (["--resim", "x.json"], "--resim: needs --out DIR"),
])
def test_bad_harness_arguments_exit_2_naming_the_flag_and_the_value(capsys, args, says):
    assert main(["validate-linux", *args]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


def test_a_file_that_is_not_a_results_file_is_refused_with_exit_2(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    for text, says in (("{", "not JSON"), ("[1]", "not an xrc validate-linux results file"),
                       (json.dumps({**_results([], 60.0), "schema": 99}), "schema 99"),
                       (json.dumps(_results(["nope"], 60.0)), "case 'nope' is not one of")):
        bad.write_text(text)
        for flag in ("--resim", "--merge"):
            assert main(["validate-linux", flag, str(bad), "--out", str(tmp_path / "o")]) == 2
            err = capsys.readouterr().err
            assert says in err and flag in err and "Traceback" not in err
    assert main(["validate-linux", "--resim", str(tmp_path / "missing.json"), "--out", str(tmp_path / "o")]) == 2
    assert "No such file" in capsys.readouterr().err
    assert not (tmp_path / "o").exists(), "nothing written for bad input"


def test_results_are_never_written_over_without_force_nor_over_what_xrc_did_not_write(capsys, tmp_path):
    a = tmp_path / "a.json"
    a.write_text(json.dumps(_results(["wired-20mbit-40ms-67p-cubic"], 60.0)))
    out = tmp_path / "merged"
    assert main(["validate-linux", "--merge", str(a), "--out", str(out), "--quiet"]) == 0
    first = (out / "results.json").read_text()
    assert main(["validate-linux", "--merge", str(a), str(a), "--out", str(out), "--quiet"]) == 2
    assert "pass --force" in capsys.readouterr().err
    assert (out / "results.json").read_text() == first
    assert main(["validate-linux", "--merge", str(a), str(a), "--out", str(out), "--force", "--quiet"]) == 0
    assert len(json.loads((out / "results.json").read_text())["parts"]) == 2
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    assert main(["validate-linux", "--merge", str(a), "--out", str(foreign), "--force"]) == 2
    assert "not xrc validate-linux results" in capsys.readouterr().err
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]


def test_real_runs_refuse_an_occupied_out_before_setting_anything_up(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(linuxref, "check_machine", lambda cases: None)
    monkeypatch.setattr(linuxref, "run_cases", lambda *a, **k: pytest.fail("ran into an occupied --out"))
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text(json.dumps(_results([], 60.0)))
    assert main(["validate-linux", "--cases", "wired-20mbit-40ms-67p-cubic", "--out", str(out)]) == 2
    assert "pass --force" in capsys.readouterr().err
    assert (out / "results.json").exists()


def _results(ids: list[str], duration: float) -> dict:
    return {"schema": linuxref.RESULTS_SCHEMA,
            "environment": {"date": "2026-01-01", "kernel": "6.18", "hz": 250, "cpus": 2, "command": ["xrc"],
                            "emulator": {"name": "xrc-emu", "git_commit": "abc", "xrc_version": "0"}},
            "settings": {"duration_s": duration, "steady_window_s": [5.0, duration], "repeats": 2},
            "cases": [{"id": i, "case": {"id": i}, "runs": []} for i in ids]}


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


def test_resimulating_a_trace_case_models_its_uplink_and_drops_the_fat_uplink_mark(tmp_path):
    cid = "const-20mbit-40ms-67p-bbr"
    doc = _results([cid], 10.0)
    case = linuxref.select_cases(cid)[0]
    entry = doc["cases"][0]
    entry["case"] = {k: getattr(case, k) for k in ("id", "link", "cc", "rtt_ms", "buffer_packets", "buffer_bytes",
                                                   "trace", "rate_mbps")}
    entry["runs"] = [{"metrics": {"goodput_mbps": 18.9}, "flow_start_offset_s": 0.26,
                      "nstat": {k: 0 for k in linuxref.NSTAT_KEYS},
                      "emulator": {"release_error": {"n": 1, "late": 0, "p50_us": 1.0, "p99_us": 1.0, "max_us": 1.0},
                                   "cpu_s": 1.0, "longest_stalls": []},
                      "load_avg": {"before": [0.0, 0.0, 0.0], "after": [0.0, 0.0, 0.0]}}]
    entry["linux"] = linuxref.aggregate(entry["runs"])
    # As stored by a core before trace.uplink: the simulated side had a fat uplink.
    entry["xrc"] = {"metrics": {"goodput_mbps": 18.9}, "uplink_trace_modelled": False}
    assert f"| {cid} ‡ |" in linuxref.markdown(doc)
    out = linuxref.resimulate(doc, tmp_path / "traces")
    sim = out["cases"][0]["xrc"]
    assert sim["uplink_trace_modelled"] is True
    tr = sim["scenario"]["trace"]
    assert tr["uplink"] == tr["downlink"] == "const-20mbit.trace", "the constant trace carries the ACKs too"
    assert sim["flow_start_s"] == 0.26, "the real runs' trace phase (to 0.1 ms: slow start on a trace moves with it)"
    table = linuxref.markdown(out)
    assert f"| {cid} |" in table and "‡" not in table
    assert "simulated again on" in table


def test_a_resim_that_fails_writes_nothing(capsys, tmp_path, monkeypatch):
    cid = "ATT-LTE-driving-10ms-150kB-cubic"
    doc = _results([cid], 60.0)
    case = linuxref.select_cases(cid)[0]
    doc["cases"][0]["case"] = {k: getattr(case, k) for k in ("id", "link", "cc", "rtt_ms", "buffer_packets",
                                                             "buffer_bytes", "trace", "rate_mbps")}
    src = tmp_path / "r.json"
    src.write_text(json.dumps(doc))
    monkeypatch.setattr(linuxref, "SHARED_TRACES", tmp_path / "no-traces")
    monkeypatch.setattr(linuxref, "TRACE_SLICES", tmp_path / "no-slices")
    out = tmp_path / "o"
    assert main(["validate-linux", "--resim", str(src), "--out", str(out), "--quiet"]) == 2
    assert "'ATT-LTE-driving' not found" in capsys.readouterr().err
    assert not out.exists()


def _fake_runs(p99s: list[float]):
    """A run_real stand-in whose k-th call reports release error p99 p99s[k]
    and a goodput that tells the attempts apart."""
    calls = []

    def run_one(case, duration_s, traces, run_dir, **kw):
        p99 = p99s[len(calls)]
        calls.append(run_dir.name)
        return {"metrics": {"goodput_mbps": 10.0 + len(calls), "rtt_mean_ms": 50.0, "rtt_p95_ms": 60.0},
                "flow_start_offset_s": 0.0, "steal_s": {"cpu": 0.0},
                "load_avg": {"before": [0.0] * 3, "after": [0.0] * 3},
                "nstat": dict.fromkeys(("TcpExtTCPLossUndo", "TcpExtTCPSpuriousRTOs", "TcpExtTCPLossProbes",
                                        "TcpExtTCPTimeouts", "TcpExtTCPHystartTrainDetect",
                                        "TcpExtTCPHystartDelayDetect"), 0),
                "emulator": {"longest_stalls": [], "release_error": {"n": 1000, "p50_us": 5.0, "p99_us": p99, "p999_us": p99,
                                               "max_us": p99, "late": 0, "late_threshold_us": 1000.0},
                             "stalled_ms": 0.0, "cpu_s": 1.0}}
    return run_one, calls


def test_a_noisy_real_run_is_taken_again_and_the_quietest_attempt_kept_with_the_others_set_aside(tmp_path):
    case = linuxref.select_cases("wired-20mbit-40ms-67p-cubic")[0]
    # Run 1: noisy, noisier, then noisy again (none under 1 ms: the quietest
    # of the three, the first, is kept). Run 2: quiet at once, no retake.
    run_one, calls = _fake_runs([3000.0, 9000.0, 2000.0, 150.0])
    res = linuxref.run_cases([case], out=tmp_path, repeats=2, duration_s=10.0, pcap=False, cpu=None,
                             simulate=False, progress=False, retake_noisy=2, run_one=run_one)
    assert calls == ["real-1", "real-1-retake-1", "real-1-retake-2", "real-2"]
    entry = res["cases"][0]
    assert [r["emulator"]["release_error"]["p99_us"] for r in entry["runs"]] == [2000.0, 150.0]
    assert [r["attempt"] for r in entry["runs"]] == [3, 1]
    assert [(a["run"], a["attempt"], a["release_error"]["p99_us"]) for a in entry["set_aside"]] == \
        [(1, 1, 3000.0), (1, 2, 9000.0)]
    assert entry["linux"]["goodput_mbps"]["mean"] == pytest.approx((13.0 + 14.0) / 2)
    assert res["settings"]["retake_noisy"] == {"max_retakes": 2, "release_p99_us_above": 1000.0}
    table = linuxref.markdown(res)
    assert "set aside by `--retake-noisy`" in table and "| wired-20mbit-40ms-67p-cubic | 1 | 2 | 9000 |" in table


def test_without_retakes_a_noisy_run_is_kept_as_it_came():
    case = linuxref.select_cases("wired-20mbit-40ms-67p-cubic")[0]
    run_one, calls = _fake_runs([3000.0])
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        res = linuxref.run_cases([case], out=Path(d), repeats=1, duration_s=10.0, pcap=False, cpu=None,
                                 simulate=False, progress=False, run_one=run_one)
    assert calls == ["real-1"] and "set_aside" not in res["cases"][0]
    assert "set aside" not in linuxref.markdown(res)


def test_simulated_goodput_counts_only_whole_bins_when_the_flow_starts_between_bin_edges():
    # A flow that starts 50 ms into the run at 1 Mbit/s exactly; the run
    # ends 5.05 s in, so its last 100 ms bin holds only 50 ms of data.
    t = np.round(np.arange(0.0, 5.01, 0.1), 3)
    nbytes = np.full(t.size, 12_500, dtype=np.uint64)
    nbytes[-1] = 6_250
    tables = {
        "flow_throughput": {"t": t, "flow": np.zeros(t.size, np.uint32), "bytes": nbytes},
        "rtt": {"t": np.array([2.0, 3.0]), "flow": np.zeros(2, np.uint32), "rtt_ms": np.array([40.0, 50.0])},
        "retransmits": {"t": np.array([]), "flow": np.array([], np.uint32)},
        "drops": {"flow": np.array([], np.uint32), "location": np.array([], np.uint8)},
        "cwnd": {"t": np.array([0.05]), "flow": np.zeros(1, np.uint32), "cwnd": np.array([10]),
                 "ssthresh": np.array([0x7FFF_FFFF])},
    }
    m = linuxref.sim_metrics(tables, start_s=0.05, t0=1.0, t1=5.0)
    assert m["goodput_mbps"] == pytest.approx(1.0), "the half-filled last bin is left out, not counted as whole"
    assert m["rtt_mean_ms"] == 45.0 and m["ss_exit_cwnd_pkts"] is None


def _resim(tmp_path: Path, results: Path, out: Path, traces_dir: Path) -> "subprocess.CompletedProcess":
    import os
    import subprocess
    import sys

    # As in a clone without ../shared: the whole traces are nowhere.
    env = {**os.environ, "XRC_TRACES_DIR": str(traces_dir)}
    return subprocess.run([sys.executable, "-m", "xrc.cli", "validate-linux", "--resim", str(results), "--out",
                           str(out), "--quiet"], capture_output=True, text=True, timeout=300, env=env)


def test_resim_runs_in_a_clone_without_the_whole_traces_from_the_shipped_slices(tmp_path):
    ref = Path(__file__).resolve().parents[1] / "data" / "linux-reference"
    r = _resim(tmp_path, ref, tmp_path / "out", tmp_path / "no-traces")
    assert r.returncode == 0, r.stderr
    got = json.loads((tmp_path / "out" / "results.json").read_text())
    cell = [c for c in got["cases"] if c["case"]["link"] == "cell"]
    assert cell and all(c["xrc"]["metrics"] for c in cell)
    assert sorted(p.name for p in (tmp_path / "out" / "traces").glob("*LTE*")) == sorted(
        f"{t}.{d}" for t in {c["case"]["trace"] for c in cell} for d in ("down", "up"))


def test_a_trace_found_nowhere_is_exit_2_naming_it_and_leaves_no_out_behind(tmp_path):
    ref = Path(__file__).resolve().parents[1] / "data" / "linux-reference" / "results.json"
    doc = json.loads(ref.read_text())
    doc["cases"] = [c for c in doc["cases"] if c["case"]["link"] == "cell"][:1]
    doc["cases"][0]["case"]["trace"] = "No-Such-trace"
    (tmp_path / "ref").mkdir()
    (tmp_path / "ref" / "results.json").write_text(json.dumps(doc))
    r = _resim(tmp_path, tmp_path / "ref", tmp_path / "out", tmp_path / "no-traces")
    assert r.returncode == 2 and "No-Such-trace" in r.stderr and "not found" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists(), "nothing half-made"
