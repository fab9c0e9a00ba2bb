"""`xrc reproduce --quick`: every experiment runs, the report is written,
and claims.json follows its contract."""

from __future__ import annotations

import json

from xrc.cli import main
from xrc.reproduce.report import UNITS, VERDICTS


def test_quick_reproduction_writes_report_figures_and_claims(tmp_path):
    out = tmp_path / "repro"
    assert main(["reproduce", "--quick", "--out", str(out), "--quiet", "--jobs", "2"]) == 0
    for name in ["report.md", "report.html", "claims.json", "results.parquet", "metadata.json"]:
        assert (out / name).is_file(), name
    claims = json.loads((out / "claims.json").read_text())
    assert len(claims) >= 15
    for c in claims:
        assert {"id", "claim", "paper", "ours", "unit", "ci95", "interval", "criterion", "verdict", "holds"} <= set(c)
        assert isinstance(c["holds"], bool) and c["holds"] == (c["verdict"] == "holds")
        assert c["unit"] in UNITS and c["verdict"] in VERDICTS and c["criterion"]
        # The improved XRC's numbers for the same claim, from its own runs.
        assert {"ours", "ci95", "interval", "criterion", "verdict", "holds"} <= set(c["xrc2"]), c
        assert isinstance(c["xrc2"]["holds"], bool)
    ids = {c["id"] for c in claims}
    assert {"fig1-xrc-hol", "fig4-jain-xrc", "fig5-hol-reduction", "fig6-chunk", "fig7-fct", "xrc-cubic-jain"} <= ids
    figs = {p.name for p in (out / "figures").iterdir()}
    for f in ["fig1a_rates.png", "fig1b_hol_cdf.png", "fig3_coexistence.png", "fig4_rtt_fairness.png",
              "fig5_pairs.png", "fig6_video.png", "fig7_short_flows.png", "traces_scatter.png"]:
        assert f in figs, f
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html and "<table>" in html
    assert "ours (xrc2)" in (out / "report.md").read_text() and "ours (xrc2)" in html
    # The XRC paper's headline claim holds even in the short runs.
    assert next(c for c in claims if c["id"] == "fig1-xrc-hol")["holds"]
    # Every figure has units on its axes, distinct series, delays from 0.
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["figure_problems"] == [], meta["figure_problems"]
    assert meta["traces"]["source"] == "bundled"
    # Every column of results.parquet is documented (docs/outputs.md).
    import pyarrow.parquet as pq

    from .conftest import ROOT

    doc = (ROOT / "docs" / "outputs.md").read_text()
    for c in pq.read_schema(out / "results.parquet").names:
        assert f"`{c}`" in doc, c
    # The XRC arms ran once more with xrc2; the baselines once.
    t = pq.read_table(out / "results.parquet").to_pandas()
    v = t[t.variant == "xrc2"]
    assert len(v) and set(v.label.str[:3]) == {"xrc"} and "xrc2" in set(v.cc)
    assert not (t[t.variant == ""].cc == "xrc2").any() or set(t[(t.variant == "") & (t.cc == "xrc2")].exp) == {"traces"}


def test_reproduce_refuses_an_unknown_variant_naming_it(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["reproduce", "--quick", "--out", str(out), "--quiet", "--variant", "xrc3"]) == 2
    err = capsys.readouterr().err
    assert "--variant" in err and "xrc3" in err
    assert not out.exists()


def test_reproduce_without_a_variant_shows_only_the_papers_xrc(tmp_path):
    from xrc.reproduce import plan

    pts = plan(quick=True, variants=())["points"]
    assert not any("variant" in p for p in pts)
    assert len(plan(quick=True)["points"]) > len(pts)


def test_reproduce_refuses_to_overwrite_results(tmp_path, capsys):
    out = tmp_path / "r"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert main(["reproduce", "--quick", "--out", str(out), "--quiet"]) == 2
    assert (out / "keep.txt").read_text() == "mine"
