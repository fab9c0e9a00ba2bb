"""scripts/xrc2_idle.py: the accounting of a trace link's idle opportunities
(docs/reproduction.md, "Where xrc2 leaves a trace link idle")."""

from __future__ import annotations

import pytest

from xrc import bundled

from .conftest import load_script


def _script():
    return load_script("xrc2_idle")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    mod = _script()
    out = tmp_path_factory.mktemp("idle")
    trace = str(bundled.traces_dir() / "synthetic-lte.down")
    return mod, {cc: mod.run_trace((trace, cc, str(out), ("duration_s=4",))) for cc in ("oracle", "xrc2")}


def test_the_oracle_leaves_no_opportunity_of_the_trace_idle(runs):
    mod, d = runs
    v = mod.idle(d["oracle"], 40, 100)
    assert v["opps"] > 1000
    assert v["lost"] <= 0.005 * v["opps"], v
    assert v["used"] + v["lost"] == v["opps"]


def test_every_idle_opportunity_of_xrc2_is_filed_under_exactly_one_cause(runs):
    mod, d = runs
    v = mod.idle(d["xrc2"], 40, 100)
    causes = ["rto", "recovery", "window", "pacing", "start"]
    assert v["lost"] > 0, "a sender that learns the rate from a 40 ms mean leaves some of a bursty trace idle"
    assert sum(v[c] for c in causes) == v["lost"]
    assert sum(v[c + "_near"] for c in causes) == v["near_outage"] <= v["lost"]
    assert 0 <= v["pacing_below_rate"] <= v["pacing"]
    assert v["used"] + v["lost"] == v["opps"]
    assert 0 <= v["near_opps"] <= v["opps"] and 0 <= v["near_time"] <= v["ms"]
