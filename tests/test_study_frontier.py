"""xrc study frontier: every scheme alone on each trace link against xrc2's curve."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from xrc.study_frontier import analyse, covers, dominates, halves

XRC = [sys.executable, "-m", "xrc.cli"]


def point(cc, g, q, setting=None, trace="t.down"):
    return {"trace": trace, "rtt_ms": 10.0, "buffer_bytes": 150_000, "cc": cc, "setting": setting,
            "goodput_mbps": g, "qdelay_mean_ms": q, "qdelay_p95_ms": q, "half": "tune"}


def test_a_point_dominates_only_with_at_least_the_goodput_at_most_the_delay_and_better_in_one():
    assert dominates(point("a", 10, 5), point("b", 9, 5))
    assert dominates(point("a", 10, 5), point("b", 10, 6))
    assert not dominates(point("a", 10, 5), point("b", 10, 5))
    assert not dominates(point("a", 11, 7), point("b", 10, 5))


def test_the_curve_covers_a_scheme_when_one_setting_has_its_goodput_and_its_delay_and_the_verdicts_say_so():
    curve = [point("xrc2", 8, 2, 5.0), point("xrc2", 10, 6, 10.0), point("xrc2", 12, 20, 40.0)]
    assert covers(curve, point("cubic", 11.5, 30)) and not covers(curve, point("vegas", 9, 3))
    runs = curve + [point("cubic", 11.5, 30), point("vegas", 10.5, 5), point("oracle", 13, 0.5)]
    (v,) = analyse(runs)
    assert v["dominating_default"] == ["vegas"] and v["not_covered"] == ["vegas"] and v["beat_oracle"] == []


def test_traces_named_by_xrc_trace_synth_keep_their_half_and_others_alternate():
    h = halves([Path("a.down"), Path("b.down"), Path("synth-tune-000.down"), Path("synth-holdout-001.down")])
    assert h == {"a.down": "tune", "b.down": "holdout", "synth-holdout-001.down": "holdout",
                 "synth-tune-000.down": "tune"}


def test_a_quick_study_writes_its_report_table_and_figures_and_nothing_beats_the_oracle(tmp_path):
    out = tmp_path / "fr"
    r = subprocess.run([*XRC, "study", "frontier", "--quick", "--jobs", "1", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("# The throughput-delay frontier")
    t = pd.read_parquet(out / "frontier.parquet")
    assert set(t["cc"]) == {"cubic", "bbr", "vegas", "xrc", "oracle", "xrc2"}
    # The bundled trace link and Fig. 1's cell under LTE timing, 8 points each.
    assert sorted(t["trace"].value_counts().items()) == [("fig1-lte", 8), ("synthetic-lte.down", 8)]
    assert sorted(t[(t["cc"] == "xrc2") & (t["trace"] == "fig1-lte")]["setting"]) == [5.0, 10.0, 40.0]
    links = json.loads((out / "links.json").read_text())
    assert [x["half"] for x in links] == ["cell", "tune"] and all(x["beat_oracle"] == [] for x in links)
    assert len(list((out / "plots").glob("*.png"))) == 2
    # Again into the same directory: --force replaces its own report.
    r = subprocess.run([*XRC, "study", "frontier", "--quick", "--jobs", "1", "--out", str(out), "--force"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("args, says", [
    (["--traces", "/nonexistent-dir"], "is not a directory"),
    (["--seeds", "2"], "--seeds: the frontier study runs each trace once"),
    (["--duration", "0"], "--duration must be positive and finite"),
])
def test_bad_input_to_the_frontier_study_exits_2_naming_it(tmp_path, args, says):
    r = subprocess.run([*XRC, "study", "frontier", "--quick", *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and says in r.stderr, r.stderr


def test_a_traces_directory_without_traces_and_frontier_options_on_another_study_are_refused(tmp_path):
    r = subprocess.run([*XRC, "study", "frontier", "--traces", str(tmp_path)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "holds no Mahimahi downlink trace" in r.stderr, r.stderr
    r = subprocess.run([*XRC, "study", "nr", "--duration", "3"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "options of `xrc study frontier`" in r.stderr, r.stderr
