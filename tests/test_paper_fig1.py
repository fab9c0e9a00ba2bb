"""The XRC paper's Fig. 1 claims, on scenarios/paper/fig1-time-varying.toml:
XRC fills the time-varying channel (utilization >= 0.90) while keeping the
RLC HoL delay within its 10 ms budget at least 80% of the time; CUBIC and
NewReno bloat the buffer to a p90 HoL delay at least ten times XRC's."""

from __future__ import annotations

import pytest

from xrc.runner import simulate
from xrc.results import summarize
from xrc.scenario import load

from .conftest import SCENARIOS

FIG1 = SCENARIOS / "paper" / "fig1-time-varying.toml"


def _ue(cc: str) -> dict:
    sc = load(FIG1, overrides=[f"flows.0.cc={cc}"])
    r = simulate(sc)
    s = summarize(sc.resolved, r["tables"], events=r["events"], sim_time_s=r["sim_time_s"], wall_time_s=0.0)
    return s["ues"][0]


@pytest.fixture(scope="module")
def xrc():
    return _ue("xrc")


def test_xrc_uses_at_least_90_percent_of_the_available_capacity(xrc):
    assert xrc["utilization"] >= 0.90


def test_xrc_keeps_hol_delay_within_its_budget_at_least_80_percent_of_the_time(xrc):
    assert xrc["frac_time_hol_below_budget"] >= 0.80


@pytest.mark.parametrize("cc", ["cubic", "newreno"])
def test_loss_based_tcp_has_ten_times_xrcs_p90_hol_delay(cc, xrc):
    other = _ue(cc)
    assert other["hol_delay_ms"]["p90"] >= 10 * xrc["hol_delay_ms"]["p90"]
    assert other["utilization"] > 0.85
