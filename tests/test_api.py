"""The Python API (docs/python.md): xrc.run, xrc.read_run, xrc.sweep and
the DataFrames of a Run."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from xrc.cli import main

import xrc
from xrc import _core

from .conftest import MINIMAL_CELL

FIG1 = "paper/fig1-time-varying"


@pytest.fixture(scope="module")
def cubic_run():
    # Short, but long enough for drops, recoveries and retransmissions.
    return xrc.run(FIG1, duration_s=6, flows__0__cc="cubic")


def test_keyword_overrides_are_the_same_as_set_on_the_command_line(cubic_run, tmp_path):
    assert cubic_run.scenario["flows"][0]["cc"] == "cubic"
    assert cubic_run.scenario["duration_s"] == 6
    same = xrc.run(FIG1, **{"duration_s": 6, "flows.0.cc": "cubic"})
    assert same.summary["flows"] == cubic_run.summary["flows"]
    from xrc import bundled

    sc = xrc.load(bundled.scenario(FIG1), overrides=["duration_s=6", "flows.0.cc=cubic"])
    assert sc.resolved == cubic_run.scenario


def test_coded_columns_are_categoricals_named_by_the_core(cubic_run):
    codes = _core.codes()
    drops = cubic_run.drops
    assert isinstance(drops["location"].dtype, pd.CategoricalDtype)
    assert list(drops["location"].cat.categories) == [n for n, _ in codes["drops.location"]]
    assert set(drops["location"]) == {"rlc"}  # a single UE's flow loses packets in its RLC buffer only
    assert list(cubic_run.cwnd["ca_state"].cat.categories) == [n for n, _ in codes["cwnd.ca_state"]]
    assert {"open", "recovery"} <= set(cubic_run.cwnd["ca_state"])
    assert list(cubic_run.retransmits["kind"].cat.categories) == ["fast", "timeout", "probe"]
    assert (cubic_run.retransmits["kind"] == "fast").sum() == cubic_run.summary["flows"][0]["retransmits"] - \
        (cubic_run.retransmits["kind"] != "fast").sum()


def test_every_column_has_its_unit_in_the_frames_metadata(cubic_run):
    for name in cubic_run.tables:
        df = cubic_run.table(name)
        assert set(df.attrs["units"]) == set(df.columns), name
    assert cubic_run.rtt.attrs["units"]["rtt_ms"] == "ms"
    assert cubic_run.rtt.attrs["units"]["t"] == "s"
    assert cubic_run.cwnd.attrs["units"]["cwnd"] == "segments"
    assert cubic_run.flow_throughput.attrs["units"]["goodput_mbps"] == "Mbit/s"
    assert cubic_run.rlc["active"].dtype == bool
    assert cubic_run.flows["completed"].dtype == bool
    assert list(cubic_run.rtt["flow_id"].cat.categories) == ["bulk"]


def test_a_run_read_back_from_its_directory_has_the_same_frames(cubic_run, tmp_path):
    on_disk = xrc.run(FIG1, duration_s=6, flows__0__cc="cubic", out=tmp_path / "run")
    again = xrc.read_run(tmp_path / "run")
    for name in cubic_run.tables:
        pd.testing.assert_frame_equal(cubic_run.table(name), again.table(name), check_exact=True, obj=name)
        pd.testing.assert_frame_equal(on_disk.table(name), again.table(name), obj=name)
    assert again.summary["flows"][0]["bytes_delivered"] == cubic_run.summary["flows"][0]["bytes_delivered"]
    # The files carry units and code names too, for readers other than xrc.
    f = pq.read_schema(tmp_path / "run" / "drops.parquet").field("location")
    assert json.loads(f.metadata[b"codes"]) == [n for n, _ in _core.codes()["drops.location"]]
    assert pq.read_schema(tmp_path / "run" / "rtt.parquet").field("rtt_ms").metadata[b"unit"] == b"ms"


def test_a_dict_a_scenario_object_and_a_file_all_run(tmp_path, write_scenario):
    path = write_scenario(MINIMAL_CELL)
    from_file = xrc.run(path)
    doc = {"seed": 3, "duration_s": 2.0, "topology": "cellular", "name": "minimal",
           "ues": [{"channel": {"kind": "fixed_cqi", "cqi": np.int64(10)}}], "flows": [{"ue": 0, "cc": "newreno"}]}
    from_dict = xrc.run(doc)
    from_object = xrc.run(xrc.load(path))
    assert from_file.summary["flows"] == from_dict.summary["flows"] == from_object.summary["flows"]
    # A wired flow has no UE: missing, not 4294967295.
    wired = xrc.run({"seed": 1, "duration_s": 1, "topology": "wired", "internet": {"rate_mbps": 10},
                     "flows": [{"cc": "newreno"}]})
    assert wired.flows["ue"].isna().all()
    assert "f0" in repr(wired)


def test_bad_input_raises_a_scenario_error_naming_the_field():
    with pytest.raises(xrc.ScenarioError, match="internet.delay_ms"):
        xrc.run(FIG1, internet__delay_ms=1e20)
    with pytest.raises(xrc.ScenarioError, match="not a run directory"):
        xrc.read_run("/nonexistent-run-dir")
    with pytest.raises(AttributeError, match="its tables"):
        xrc.run(FIG1, duration_s=1).no_such_table


def test_a_path_argument_of_the_wrong_type_is_a_scenario_error_naming_the_argument(tmp_path):
    with pytest.raises(xrc.ScenarioError, match=r"^out: expected a path .*got 5 \(int\)"):
        xrc.run(FIG1, duration_s=0.1, out=5)
    with pytest.raises(xrc.ScenarioError, match=r"^out: expected a path .*bytes"):
        xrc.sweep(FIG1, grid={"duration_s": [0.1]}, out=b"x")
    with pytest.raises(xrc.ScenarioError, match=r"^directory: expected a path .*None"):
        xrc.read_run(None)
    assert list(tmp_path.iterdir()) == []


def test_a_sweep_returns_one_frame_with_typed_override_columns(tmp_path):
    df = xrc.sweep(FIG1, grid={"flows.0.cc": ["xrc", "cubic"], "cell.harq.bler": [0.0, 0.1]}, seeds=2,
                   duration_s=3, out=tmp_path / "sw", jobs=2)
    assert len(df) == 2 * 2 * 2  # variants x seeds, one flow each
    assert df["cell.harq.bler"].dtype == np.float64
    assert isinstance(df["flows.0.cc"].dtype, pd.CategoricalDtype)
    assert set(df["flows.0.cc"]) == {"xrc", "cubic"}
    assert df.attrs["units"]["goodput_mbps"] == "Mbit/s"
    assert df["jain_index"].dtype == np.float64  # one flow: NaN, not None objects
    # The XRC runs keep the queue short (the paper's point), the CUBIC ones not.
    med = df.groupby("flows.0.cc", observed=True)["hol_p90_ms"].median()
    assert med["xrc"] < med["cubic"]
    # A repeated call resumes: nothing is run again, the same table comes back.
    again = xrc.sweep(FIG1, grid={"flows.0.cc": ["xrc", "cubic"], "cell.harq.bler": [0.0, 0.1]}, seeds=2,
                      duration_s=3, out=tmp_path / "sw", jobs=2)
    pd.testing.assert_frame_equal(df, again)
    # A dict scenario works too (written into the sweep directory).
    small = xrc.sweep({"seed": 1, "duration_s": 1, "topology": "wired", "internet": {"rate_mbps": 10},
                       "flows": [{"cc": "newreno"}]}, runs=[{"internet.rate_mbps": 5}, {"internet.rate_mbps": 20}],
                      jobs=1)
    assert sorted(small["internet.rate_mbps"]) == [5, 20]
    assert small.loc[small["internet.rate_mbps"] == 5, "goodput_mbps"].iloc[0] < 5


def test_dir_of_xrc_lists_the_lazily_imported_api_for_tab_completion():
    import xrc

    assert {"run", "sweep", "read_run", "Run", "load", "ScenarioError"} <= set(dir(xrc))


_EVERY_MODULE_THEN_THE_API = """
import importlib, inspect, pkgutil
import xrc, xrc.api, xrc.scenario
for m in pkgutil.walk_packages(xrc.__path__, "xrc."):
    if not m.name.endswith(".__main__"):   # `python -m xrc.cli` runs the command
        importlib.import_module(m.name)
for name in xrc.__all__:
    if name == "__version__":
        continue
    value = getattr(xrc, name)
    where = xrc.api if name in xrc._API else xrc.scenario
    assert value is getattr(where, name), f"xrc.{name} is {value!r}, not {where.__name__}.{name}"
assert "grid" in inspect.signature(xrc.sweep).parameters
"""


def test_the_api_names_stay_the_api_whatever_modules_were_imported():
    # Importing a submodule binds its name on the package: a module named
    # like an API function (once xrc/sweep.py) replaced the function as soon
    # as the command line or a test imported it. A fresh process, so that
    # every module is imported after `xrc` itself.
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", _EVERY_MODULE_THEN_THE_API], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]


def test_the_summary_gives_the_simulated_time_exactly_not_its_floating_point_product(tmp_path):
    # 60 s of integer nanoseconds times 1e-9 is 60.00000000000001 in binary
    # floating point; the summary says 60.0.
    import json

    import xrc

    assert xrc.run("paper/fig1-time-varying").summary["sim_time_s"] == 60.0
    assert main(["run", "paper/fig1-time-varying", "--out", str(tmp_path / "r"), "--quiet", "--no-plots"]) == 0
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["sim_time_s"] == 60.0


def test_an_api_override_that_names_no_field_is_reported_as_an_override_not_as_a_set_flag():
    import xrc

    with pytest.raises(xrc.ScenarioError) as e:
        xrc.run("paper/fig1-time-varying", flows__9__cc="cubic")
    assert str(e.value).startswith("override flows.9.cc") and "--set" not in str(e.value), str(e.value)


_DICT = {"name": "m", "seed": 3, "duration_s": 0.3, "topology": "cellular",
         "ues": [{"channel": {"kind": "fixed_cqi", "cqi": 10}}], "flows": [{"ue": 0, "cc": "newreno"}]}


@pytest.mark.parametrize("call,says", [
    # Each raised TypeError, AttributeError or OSError from deep inside.
    (lambda: xrc.run({**_DICT, "duration_s": __import__("decimal").Decimal("0.3")}),
     "duration_s: Decimal('0.3') (Decimal) is not a scenario value"),
    (lambda: xrc.run({**_DICT, "flows": [{"ue": 0, "cc": {"newreno"}}]}), "flows.0.cc: {'newreno'} (set)"),
    (lambda: xrc.run(5), "scenario: expected a Scenario, a path"),
    (lambda: xrc.sweep(_DICT, runs=["duration_s=0.2"]), "runs: expected a list of dicts"),
    (lambda: xrc.sweep(_DICT, runs=[{"duration_s": 0.2}, 7]), "got 7 (int)"),
    (lambda: xrc.sweep(_DICT, grid=["duration_s"]), "grid: expected a dict"),
    (lambda: xrc.read_run(__file__), "is not a run directory (a file)"),
    (lambda: xrc.run("x" * 300), "File name too long"),
    (lambda: xrc.read_run("x" * 300), "File name too long"),
    (lambda: xrc.run(_DICT, out="y" * 300), "out 'yyy"),
], ids=["decimal", "set", "int-scenario", "runs-of-strings", "runs-item-int", "grid-list", "read_run-file",
        "long-scenario-name", "long-run-directory", "long-out"])
def test_bad_arguments_to_the_api_raise_scenario_error_naming_them(call, says):
    with pytest.raises(xrc.ScenarioError) as e:
        call()
    assert says in str(e.value), str(e.value)
    assert not str(e.value).startswith("--out")


@pytest.mark.parametrize("call,says", [
    # Each ran with the last value, silently.
    (lambda: xrc.run(_DICT, flows__0__cc="cubic", **{"flows.0.cc": "bbr"}),
     "flows.0.cc: given twice (as 'flows__0__cc' and 'flows.0.cc')"),
    (lambda: xrc.run(_DICT, duration_s=0.2, **{" duration_s": 0.4}), "duration_s: given twice"),
    (lambda: xrc.sweep(_DICT, runs=[{"duration_s": 0.2}], duration_s=0.4),
     "duration_s: both a keyword (every run) and in runs[0]"),
    (lambda: xrc.sweep(_DICT, grid={"duration_s": [0.2], "duration_s ": [0.4]}), "name the same field duration_s"),
    (lambda: xrc.sweep(_DICT, grid={"flows__0__cc": ["cubic"]}, **{"flows.0.cc": "bbr"}),
     "flows.0.cc: both a keyword (every run) and in grid"),
], ids=["keyword-and-dotted", "spaces", "runs-and-keyword", "grid-spellings", "grid-and-keyword"])
def test_the_api_refuses_one_field_given_twice_as_the_command_line_does(call, says):
    with pytest.raises(xrc.ScenarioError) as e:
        call()
    assert says in str(e.value), str(e.value)


@pytest.mark.parametrize("body,says", [
    ('set = ["duration_s=0.3"]\n[grid]\n"duration_s " = [0.2, 0.4]\n', "is both in set (every run) and in grid"),
    ('[grid]\n"duration_s" = [0.2]\n" duration_s" = [0.4]\n', "name the same field duration_s"),
    ('set = ["duration_s=0.3"]\n[[runs]]\n"duration_s " = 0.2\n', "is both in set (every run) and in runs.0"),
], ids=["grid-key-with-a-space", "two-grid-spellings", "runs-key-with-a-space"])
def test_a_sweep_file_key_with_spaces_is_the_field_it_names(body, says, tmp_path):
    # "duration_s " escaped the check against set: its value silently won
    # in every run, or made a second grid dimension for one field.
    from xrc.sweeps import load_sweep

    (tmp_path / "base.toml").write_text(MINIMAL_CELL)
    p = tmp_path / "sw.toml"
    p.write_text('scenario = "base.toml"\n' + body)
    with pytest.raises(xrc.ScenarioError) as e:
        load_sweep(p)
    assert says in str(e.value), str(e.value)


def test_the_output_error_is_a_scenario_error():
    from xrc.outdir import OutputError

    assert issubclass(OutputError, xrc.ScenarioError)


def test_xrc_load_takes_a_bundled_scenarios_name_as_xrc_run_does(tmp_path, monkeypatch):
    # It said "not found" and suggested the very name it was given.
    monkeypatch.chdir(tmp_path)
    sc = xrc.load("validation/dumbbell-20mbit-40ms", overrides=["duration_s=1"])
    assert sc.resolved["duration_s"] == 1.0 and sc.path.name == "dumbbell-20mbit-40ms.toml"
    with pytest.raises(xrc.ScenarioError, match="not found: 'validation/dumbbell-20mbit-40'"):
        xrc.load("validation/dumbbell-20mbit-40")


def test_a_table_file_with_flipped_bits_in_its_schema_is_a_message_naming_it(tmp_path):
    # Found by `xrc fuzz --surface edges`: pyarrow raised
    # ArrowNotImplementedError ("Integers with less than 8 bits not
    # implemented"), which read_run let through as a traceback.
    from unittest import mock

    import pyarrow as pa

    run = xrc.run(_DICT, out=tmp_path / "r")
    with mock.patch("pyarrow.parquet.read_table",
                    side_effect=pa.ArrowNotImplementedError("Integers with less than 8 bits not implemented")):
        with pytest.raises(xrc.ScenarioError, match="cannot read rtt.parquet: Integers with less than 8 bits"):
            xrc.read_run(tmp_path / "r").rtt
    assert run.summary["flows"]
