"""The reproduction report, built from synthetic runs (no simulation): each
claim shows its number in the paper's unit, its criterion in words and a
verdict that means what the paper meant, and the HTML renders the text the
Markdown writes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from xrc.reproduce import plan
from xrc.reproduce.report import write_report


def _meta(quick: bool, seeds: list[int]) -> dict:
    return {"quick": quick, "seeds": seeds, "runs": 0, "wall_time_s": 0.0, "jobs": 1, "engine": "local",
            "schemes": [], "xrc_version": "test", "core_version": "test", "git_commit": None, "sim_seconds": 0.0,
            "events": 0, "traces": {"source": "bundled", "files": []}, "inputs": {}}


def _run(exp: str, label: str, seed: int = 1, *, rates=(10.0,), starts=None, ends=None, hol_p50=5.0,
         hol_p90=9.0, frac=0.95, point: dict | None = None, fcts=(), duration: float = 30.0) -> dict:
    """One synthetic run: flows at constant rates (Mbit/s) over [start, end),
    in 0.5 s bins; optional short flows with completion times `fcts`."""
    n = len(rates)
    starts = list(starts or [0.0] * n)
    ends = list(ends or [duration] * n)
    t, flow, byts, gp = [], [], [], []
    for k, (rate, a, b) in enumerate(zip(rates, starts, ends)):
        x = a
        while x < b - 1e-9:
            t.append(x)
            flow.append(k)
            byts.append(rate * 1e6 / 8 * 0.5)
            gp.append(rate)
            x += 0.5
    flows = [{"id": f"f{k}", "cc": label.split("+")[0], "start_s": starts[k], "end_s": ends[k], "fct_s": None,
              "bytes": 0, "size": None} for k in range(n)]
    flows += [{"id": f"short{i}", "cc": "newreno", "start_s": 5.0 * (i + 1), "end_s": 5.0 * (i + 1) + f,
               "fct_s": f, "bytes": 0, "size": 1} for i, f in enumerate(fcts)]
    samples = [hol_p50] * 5 + [hol_p90] * 4
    p = point or {"exp": exp, "label": label, "scenario": "x.toml", "overrides": [f"duration_s={duration}"],
                  "seed": seed, "gen": {}}
    return {
        "point": p,
        "summary": {"ues": [{"utilization": 0.95}],
                    "flows": [{"goodput_mbps": r} for r in rates]},
        "flows": flows,
        "qdelay": {"0": {"p50": 3.0, "p95": 8.0, "mean": 4.0, "frac_below_10": 0.99, "samples": [1.0, 3.0, 8.0]}},
        "hol": {"samples": samples, "p50": hol_p50, "p90": hol_p90, "p95": hol_p90, "frac_below_10": frac},
        "tp": {"t": t, "flow": flow, "bytes": byts, "goodput_mbps": gp},
        "cap": {"t": [0.0, duration], "available_mbps": [12.0, 12.0], "delivered_mbps": [10.0, 10.0]},
        "chunks": [2.01, 2.02],
        "events": 1, "wall_s": 0.0, "sim_s": duration,
    }


def _report(tmp_path: Path, results: list[dict], quick: bool = False, seeds=(1,)) -> tuple[dict, str, str]:
    (tmp_path / "figures").mkdir(parents=True)
    claims = write_report(results, _meta(quick, list(seeds)), tmp_path)
    return ({c["id"]: c for c in claims}, (tmp_path / "report.md").read_text(),
            (tmp_path / "report.html").read_text())


def _fig1(seeds=(1,), xrc_p90=10.0, other_p90=400.0) -> list[dict]:
    rs = []
    for s in seeds:
        rs.append(_run("fig1", "xrc", s, hol_p50=5.0, hol_p90=xrc_p90, frac=0.9))
        for cc in ("cubic", "newreno", "illinois", "veno"):
            rs.append(_run("fig1", cc, s, hol_p50=100.0, hol_p90=other_p90, frac=0.1))
        rs.append(_run("fig1", "oracle", s, hol_p50=0.0, hol_p90=0.0, frac=1.0))
    return rs


def _pair_with_jain(exp: str, label: str, seed: int, jain: float) -> dict:
    """A two-flow run whose Jain's index over the overlap is `jain`."""
    # Jain of (1, x) = (1 + x)^2 / (2 (1 + x^2)); solve for x <= 1.
    a = 2 * jain - 1
    x = 1.0 if jain >= 1 else (1 - (1 - a * a) ** 0.5) / a  # the root of a x^2 - 2x + a in (0, 1]
    return _run(exp, label, seed, rates=(10.0, 10.0 * x), starts=(0.0, 5.0), ends=(30.0, 30.0))


def _fig4(xrc_jain_rates, other: str, other_rates, seeds=(1,)) -> list[dict]:
    starts, ends = (0.0, 10.0, 20.0, 30.0), (70.0, 80.0, 90.0, 100.0)
    rs = []
    for s in seeds:
        rs.append(_run("fig4", "xrc", s, rates=xrc_jain_rates, starts=starts, ends=ends, duration=100.0))
        rs.append(_run("fig4", other, s, rates=other_rates, starts=starts, ends=ends, duration=100.0))
    return rs


def _claim_row(md: str, cid: str) -> str:
    return next(line for line in md.splitlines() if line.startswith(f"| `{cid}` |"))


def _claims_header(md: str) -> str:
    return next(line for line in md.splitlines() if line.startswith("| id |"))


def test_the_html_report_renders_inline_code_and_bold_instead_of_showing_the_markdown(tmp_path):
    # A failed claim's verdict is bold in Markdown; the Fig. 1 text names `oracle`.
    _, md, html = _report(tmp_path, _fig1(xrc_p90=30.0, other_p90=40.0))
    assert "`oracle`" in md
    body = re.sub(r"data:image/png;base64,[^\"]*", "", html)
    assert "<code>oracle</code>" in body
    assert "`" not in body and "**" not in body


def test_a_quick_report_describes_the_quick_runs_not_the_full_experiment(tmp_path):
    pl = plan(quick=True, variants=())["points"]
    rs = []
    for p in pl:
        if p["exp"] == "fig4" and p["label"] in ("xrc", "newreno"):
            rs.append(_run("fig4", p["label"], rates=(5.0,) * 4, starts=(0.0, 5.0, 10.0, 15.0),
                           ends=(35.0, 40.0, 45.0, 50.0), duration=50.0, point=p))
        if p["exp"] == "fig7" and p["label"] in ("xrc", "cubic"):
            n = p["gen"]["short_flows"]
            rs.append(_run("fig7", p["label"], fcts=[0.5] * n, duration=5.0 * n + 5, point=p))
    _, md, html = _report(tmp_path, rs, quick=True)
    fig4 = md.split("## Fig. 4")[1].split("\n## ")[0]
    fig7 = md.split("## Fig. 7")[1].split("\n## ")[0]
    assert "70 s" not in fig4 and "10 s apart" not in fig4
    assert "5 s apart" in fig4 and "35 s" in fig4
    assert "50 short" not in fig7 and "10 short" in fig7
    assert "50 short" not in html


def test_a_claim_the_paper_states_in_milliseconds_shows_ours_in_milliseconds(tmp_path):
    claims, md, html = _report(tmp_path, _fig1(xrc_p90=10.0, other_p90=400.0))
    c = claims["fig1-others-p90"]
    assert "ms" in c["paper"]
    assert c["ours"] == pytest.approx(400.0) and c["unit"] == "ms"
    row = _claim_row(md, "fig1-others-p90")
    assert "400 ms" in row
    # Fractions of time the paper gives in percent are percentages too.
    hol = claims["fig1-xrc-hol"]
    assert hol["unit"] == "%" and hol["ours"] == pytest.approx(90.0)


def test_a_confidence_interval_comes_from_seeds_stays_within_bounds_and_agrees_with_the_verdict(tmp_path):
    # One seed: Fig. 3 and Fig. 5 are two setups of one seed, not two samples.
    one = [_pair_with_jain("fig3", "xrc+cubic", 1, 0.98), _pair_with_jain("fig5", "xrc+cubic", 1, 0.80)]
    claims, _, _ = _report(tmp_path / "one", one)
    c = claims["xrc-cubic-jain"]
    assert c["seeds"] == 1 and c["ci95"] is None
    # Three seeds whose interval reaches both sides of the 99% criterion.
    three = []
    for s, j in ((1, 0.999), (2, 0.95), (3, 0.999)):
        three += [_pair_with_jain("fig3", "xrc+cubic", s, j), _pair_with_jain("fig5", "xrc+cubic", s, j)]
    claims, md, _ = _report(tmp_path / "three", three, seeds=(1, 2, 3))
    c = claims["xrc-cubic-jain"]
    assert c["seeds"] == 3
    lo, hi = c["interval"]
    assert lo < 99.0 < hi and hi <= 100.0
    assert c["verdict"] == "inconclusive" and c["holds"] is False
    row = _claim_row(md, "xrc-cubic-jain")
    assert "inconclusive" in row


def test_a_baseline_nearly_as_fair_as_xrc_does_not_confirm_that_it_is_less_fair(tmp_path):
    # XRC 1.000 against NewReno about 0.99, where the paper saw 86.74%.
    claims, md, _ = _report(tmp_path, _fig4((10.0,) * 4, "newreno", (10.0, 10.0, 10.0, 7.8)))
    c = claims["fig4-jain-newreno"]
    assert c["holds"] is False and c["verdict"] == "fails"
    assert c["unit"] == "%" and c["ours"] == pytest.approx(98.99, abs=0.01)
    assert "86.74" in c["criterion"]
    header = _claims_header(md)
    assert "criterion" in header and "verdict" in header
    # A NewReno as unfair as the paper's holds.
    claims, _, _ = _report(tmp_path / "unfair", _fig4((10.0,) * 4, "newreno", (10.0, 10.0, 4.0, 4.0)))
    assert claims["fig4-jain-newreno"]["verdict"] == "holds"
