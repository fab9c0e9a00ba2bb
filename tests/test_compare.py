"""`xrc plot RUN... --out DIR`: comparison figures of any runs, or of a
sweep's runs."""

from __future__ import annotations

import xrc
from xrc.cli import main
from xrc.compare import labels_of, plot_runs, style


def test_runs_are_compared_in_sound_figures_labelled_by_what_differs(tmp_path, capsys):
    for cc in ("xrc", "cubic"):
        xrc.run("paper/fig1-time-varying", duration_s=3, flows__0__cc=cc, out=tmp_path / cc)
    assert main(["plot", str(tmp_path / "xrc"), str(tmp_path / "cubic"), "--out", str(tmp_path / "figs")]) == 0
    out = capsys.readouterr()
    assert "flows.0.cc=xrc; flows.0.cc=cubic" in out.out  # the schemes' parameters go without saying
    assert "warning" not in out.err
    for stem in ("goodput", "rtt_cdf", "queuing_cdf", "tradeoff"):
        for ext in ("png", "svg"):
            assert (tmp_path / "figs" / f"{stem}.{ext}").is_file(), stem
    res = plot_runs([tmp_path / "xrc", tmp_path / "cubic"], tmp_path / "f2", labels=["ours", "theirs"])
    assert res["labels"] == ["ours", "theirs"] and res["problems"] == []


def test_a_sweep_directory_plots_all_its_runs_and_the_metrics_against_the_swept_field(tmp_path, capsys):
    xrc.sweep("paper/fig1-time-varying", grid={"flows.0.cc": ["xrc", "cubic"], "cell.rlc.buffer_packets": [32, 256]},
              duration_s=2, out=tmp_path / "sw", jobs=2)
    res = plot_runs([tmp_path / "sw"], tmp_path / "figs")
    assert len(res["labels"]) == 4 and res["problems"] == [], res
    # In order of the swept values (32 before 256), numbers as numbers.
    assert res["labels"][0].startswith("cell.rlc.buffer_packets=32")
    assert (tmp_path / "figs" / "sweep_sw.png").is_file()


def test_something_that_is_not_a_run_is_refused_with_exit_status_2(tmp_path, capsys):
    (tmp_path / "notes").mkdir()
    assert main(["plot", str(tmp_path / "notes"), "--out", str(tmp_path / "f")]) == 2
    assert "neither a run directory" in capsys.readouterr().err


def test_forty_runs_get_forty_distinct_styles_and_identical_scenarios_their_directory_names(tmp_path):
    assert len({tuple(style(i).items()) for i in range(40)}) == 40
    same = {"name": "a", "seed": 1}
    assert labels_of([same, dict(same)], [tmp_path / "one", tmp_path / "two"]) == ["one", "two"]
