"""A lone ``xrc2`` flow never pulses (deviations 9-10 of ``cc/xrc2.rs``).

The unfairness mode is for a competitor in the UE's own RLC buffer. A flow
alone in its UE (in a cell of other UEs, whatever the radio timing) or alone
on a trace has none; if the agent's rate ever read above what the link
serves, the starved rounds over budget would fire pulses at the sender's own
queue. Checked on the random cells of ``scripts/xrc2_window.py``, Fig. 1
under the paper's and the default LTE timing, and the bundled trace; the
last test shows the check sees a pulse where there is one.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from xrc import bundled
from xrc.reproduce.experiments import TRACE_SCENARIO
from xrc.runner import simulate
from xrc.scenario import from_dict, load

from .conftest import load_script


def _unfair_rows(sc) -> dict[int, int]:
    """Each xrc2 flow's cwnd-trace rows in the unfairness mode."""
    sc.resolved["output"]["cwnd_trace"] = True
    cwnd = simulate(sc)["tables"]["cwnd"]
    return {i: int(np.sum(cwnd["mode"][cwnd["flow"] == i] == "unfair"))
            for i, f in enumerate(sc.resolved["flows"]) if f["cc"] == "xrc2"}


def _unfair_rows_of_lone_xrc2_flows(sc) -> dict[int, int]:
    ues = [f.get("ue") for f in sc.resolved["flows"]]
    rows = {i: n for i, n in _unfair_rows(sc).items() if ues.count(ues[i]) == 1}
    assert rows, "no lone xrc2 flow in the scenario"
    return rows


@pytest.mark.parametrize("k", range(6))
def test_a_lone_xrc2_flow_in_a_random_busy_cell_never_pulses(k):
    w = load_script("xrc2_window")
    doc = w._random_doc("xrc2", k, 2, {})
    doc["duration_s"] = 10
    sc = from_dict(doc, base=Path(bundled.scenario(w.FIG1)).parent)
    assert set(_unfair_rows_of_lone_xrc2_flows(sc).values()) == {0}, doc["description"]


@pytest.mark.parametrize("lte_timing", [False, True])
def test_a_lone_xrc2_flow_on_fig1_never_pulses(lte_timing):
    w = load_script("xrc2_window")
    sc = load(bundled.scenario(w.FIG1), overrides=["flows.0.cc=xrc2", "duration_s=20", *(w.LTE if lte_timing else [])])
    assert _unfair_rows_of_lone_xrc2_flows(sc) == {0: 0}


def test_a_lone_xrc2_flow_on_the_bundled_trace_never_pulses():
    trace = str(bundled.traces_dir() / "synthetic-lte.down")
    sc = load(bundled.scenario(TRACE_SCENARIO),
              overrides=["flows.0.cc=xrc2", f"trace.downlink={json.dumps(trace)}", "duration_s=30"])
    assert _unfair_rows_of_lone_xrc2_flows(sc) == {0: 0}


def test_the_check_sees_the_pulses_of_xrc2_beside_cubic_in_its_ue():
    sc = load(bundled.scenario("paper/fig5-pairs.toml"), overrides=["flows.0.cc=xrc2", "flows.1.cc=cubic"])
    assert [f.get("ue") for f in sc.resolved["flows"]] == [0, 0]
    assert _unfair_rows(sc)[0] > 0
