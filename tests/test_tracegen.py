"""Synthetic cellular traces (xrc.tracegen, `xrc trace synth`)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from xrc import _core
from xrc.tracegen import TraceGenError, TraceModel, generate

XRC = [sys.executable, "-m", "xrc.cli"]


def test_the_same_seed_gives_the_same_trace_byte_for_byte_and_another_seed_another():
    m = TraceModel(seconds=20)
    a, b, c = generate(m, 3).mahimahi(), generate(m, 3).mahimahi(), generate(m, 4).mahimahi()
    assert a == b and a != c


def test_a_trace_is_valid_mahimahi_of_the_length_asked_and_its_mean_rate_is_within_the_levels():
    tr = generate(TraceModel(seconds=30, fades_per_min=0, outages_per_min=0), 1)
    n, period_ms, mean_mbps = _core.check_trace(tr.mahimahi())
    assert period_ms == 30_000 and n == int(tr.per_ms.sum())
    assert 1.0 * 0.8 < mean_mbps < 40.0 and mean_mbps == pytest.approx(tr.mean_mbps, rel=1e-9)


def test_an_outage_carries_nothing_and_a_fade_carries_the_depth_of_the_rate():
    full = generate(TraceModel(seconds=60, fades_per_min=0, outages_per_min=0, min_mbps=20, max_mbps=20,
                               levels=1), 5)
    out = generate(TraceModel(seconds=60, fades_per_min=0, outages_per_min=6, outage_s=(2.0, 2.0),
                              min_mbps=20, max_mbps=20, levels=1), 5)
    assert full.outage_s == 0 and full.mean_mbps == pytest.approx(20, rel=0.03)
    assert out.outage_s > 4
    # Whole seconds without an opportunity, as many as the outages.
    per_s = out.per_ms[:60_000].reshape(60, 1000).sum(1)
    assert (per_s == 0).sum() >= int(out.outage_s) - 2 * 6
    faded = generate(TraceModel(seconds=60, fades_per_min=30, fade_s=1.0, fade_depth=0.0, outages_per_min=0,
                                min_mbps=20, max_mbps=20, levels=1), 5)
    assert faded.fade_s > 10
    assert faded.mean_mbps == pytest.approx(20 * (1 - faded.fade_s / 60), rel=0.05)


def test_opportunities_come_in_bursts_of_granted_milliseconds():
    tr = generate(TraceModel(seconds=60, min_mbps=12, max_mbps=12, levels=1, fades_per_min=0, outages_per_min=0,
                             grant_prob=0.25), 2)
    busy = tr.per_ms > 0
    assert 0.2 < busy.mean() < 0.25  # granted and not empty
    assert tr.per_ms[busy].mean() > 3  # one opportunity a millisecond on average, in bursts of 4


@pytest.mark.parametrize("field, value, says", [
    ("seconds", 0, "seconds must be a positive finite number"),
    ("max_mbps", float("nan"), "max_mbps must be a positive finite number"),
    ("levels", 0, "levels must be an integer in 1..64"),
    ("fade_depth", 1.5, "fade_depth must be in [0, 1]"),
    ("outage_s", (3.0, 1.0), "outage_s must be two finite seconds"),
    ("grant_prob", 0.0, "grant_prob must be in (0, 1]"),
    ("outages_per_min", -1, "outages_per_min must be a finite number >= 0"),
])
def test_a_parameter_out_of_range_is_refused_naming_it(field, value, says):
    with pytest.raises(TraceGenError, match=says.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                       .replace("]", r"\]")):
        generate(TraceModel(**{field: value}), 1)


def test_xrc_trace_synth_writes_a_tuning_half_and_a_held_out_half_and_describes_them(tmp_path):
    r = subprocess.run([*XRC, "trace", "synth", str(tmp_path / "t"), "--count", "4", "--seconds", "5",
                        "--quiet"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = json.loads((tmp_path / "t" / "traces.json").read_text())
    assert [(x["file"], x["half"], x["seed"]) for x in rows] == [
        ("synth-tune-000.down", "tune", 1), ("synth-holdout-001.down", "holdout", 2),
        ("synth-tune-002.down", "tune", 3), ("synth-holdout-003.down", "holdout", 4)]
    assert (tmp_path / "t" / "synth-holdout-003.down").read_text() == generate(TraceModel(seconds=5), 4).mahimahi()


@pytest.mark.parametrize("args, says", [
    (["--grant-prob", "2"], "grant_prob must be in (0, 1], got 2.0"),
    (["--count", "10000", "--seconds", "86400"], "count × seconds must be at most 864000 s"),
])
def test_xrc_trace_synth_refuses_bad_input_with_exit_2_naming_it_and_writes_nothing(tmp_path, args, says):
    r = subprocess.run([*XRC, "trace", "synth", str(tmp_path / "t"), *args],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and says in r.stderr, r.stderr
    assert not (tmp_path / "t").exists()


def test_xrc_trace_stats_measures_a_constant_trace_exactly_and_refuses_a_missing_file_with_exit_2(tmp_path):
    f = tmp_path / "c.down"
    f.write_text("".join(f"{ms}\n" for ms in range(1, 1001)))  # one opportunity a millisecond: 12 Mbit/s
    r = subprocess.run([*XRC, "trace", "stats", str(f)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "| c.down | 12.0 | 1.0 | 1.0 | 0.0 | 0.0 |" in r.stdout, r.stdout
    r = subprocess.run([*XRC, "trace", "stats", str(tmp_path / "nope.down")], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "nope.down: No such file or directory" in r.stderr and r.stdout == ""
