"""docs/python.md and the notebooks in examples/ run as written."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from .conftest import ROOT


def python_blocks(markdown: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", markdown, flags=re.S)


def test_every_code_block_of_docs_python_md_runs_in_order(tmp_path, monkeypatch, capsys):
    blocks = python_blocks((ROOT / "docs" / "python.md").read_text())
    assert len(blocks) >= 5
    monkeypatch.chdir(tmp_path)  # nothing relies on the checkout as the working directory
    ns: dict = {"__name__": "__docs__"}
    t0 = time.perf_counter()
    for i, code in enumerate(blocks):
        try:
            exec(compile(code, f"docs/python.md block {i + 1}", "exec"), ns)
        except Exception as e:  # pragma: no cover - the message says which block
            raise AssertionError(f"docs/python.md block {i + 1} failed: {e!r}\n{code}") from e
    out = capsys.readouterr().out
    # What the text says the blocks print.
    assert "internet.delay_ms must be in [0, 10000], got -5" in out
    assert "rlc" in out and "recovery" in out
    print(f"docs/python.md: {len(blocks)} blocks in {time.perf_counter() - t0:.1f} s")


def test_the_python_block_of_the_readme_runs_as_written(tmp_path, monkeypatch):
    (code,) = python_blocks((ROOT / "README.md").read_text())
    monkeypatch.chdir(tmp_path)
    ns: dict = {"__name__": "__readme__"}
    exec(compile(code, "README.md python block", "exec"), ns)
    assert set(ns["table"]["flows.0.cc"]) == {"xrc", "cubic"} and set(ns["table"]["seed"]) == {1, 2, 3}
    assert "rlc" in set(ns["run"].drops["location"])


NOTEBOOKS = sorted((ROOT / "examples").glob("*.ipynb"))


def test_there_are_the_two_example_notebooks():
    assert {p.name for p in NOTEBOOKS} >= {"fig1-comparison.ipynb", "sweep.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_an_example_notebook_executes_without_errors(path, tmp_path):
    nbformat = pytest.importorskip("nbformat", reason="nbformat is a test extra (pip install -e '.[test]')")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is a test extra (pip install -e '.[test]')")
    nb = nbformat.read(path, as_version=4)
    env_before = os.environ.get("MPLBACKEND")
    t0 = time.perf_counter()
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    wall = time.perf_counter() - t0
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, errors
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if "image/png" in o.get("data", {})]
    assert images, "the notebook draws its figures inline"
    assert os.environ.get("MPLBACKEND") == env_before
    print(f"{path.name}: executed in {wall:.1f} s")


def test_the_column_tables_of_docs_outputs_md_are_generated_from_the_core_and_current():
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_outputs_doc", ROOT / "scripts" / "build_outputs_doc.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    text = (ROOT / "docs" / "outputs.md").read_text()
    assert mod.render(text) == text, "run: .venv/bin/python scripts/build_outputs_doc.py"
    from xrc import _core

    # Every column of every table the core writes is there, and every code.
    for t in _core.tables_info():
        assert f"### `{t['name']}.parquet`" in text
        for c in t["columns"]:
            assert f"| `{c['name']}` |" in text
    for codes in _core.codes().values():
        for name, _ in codes:
            assert f"`{name}`" in text


def test_every_column_of_a_sweeps_summary_is_documented(tmp_path):
    import pyarrow.parquet as pq

    from xrc.sweep import Sweep, run_sweep

    sw = Sweep(scenario=ROOT / "scenarios" / "paper" / "fig1-time-varying.toml", seeds=[1],
               common=["duration_s=1"], variants=[{"flows.0.cc": "cubic"}])
    cols = pq.read_schema(run_sweep(sw, tmp_path / "s", jobs=1, progress=False)).names
    text = (ROOT / "docs" / "outputs.md").read_text()
    for c in cols:
        assert f"`{'set:PATH' if c.startswith('set:') else c}`" in text, c
