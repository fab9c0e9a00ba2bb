"""docs/python.md, the notebooks in examples/, and the commands of
docs/walkthrough.md and docs/traces.md run as written."""

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
    if path.name.startswith("gym-"):
        pytest.importorskip("gymnasium", reason="the xrc.gym notebooks need gymnasium, a test extra "
                                                "(pip install -e '.[test]')")
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

    from xrc.sweeps import Sweep, run_sweep

    sw = Sweep(scenario=ROOT / "scenarios" / "paper" / "fig1-time-varying.toml", seeds=[1],
               common=["duration_s=1"], variants=[{"flows.0.cc": "cubic"}])
    cols = pq.read_schema(run_sweep(sw, tmp_path / "s", jobs=1, progress=False)).names
    text = (ROOT / "docs" / "outputs.md").read_text()
    for c in cols:
        assert f"`{'set:PATH' if c.startswith('set:') else c}`" in text, c


def _blocks(markdown: str) -> list[tuple[str, str]]:
    return re.findall(r"```(sh|toml|python|text)\n(.*?)```", markdown, flags=re.S)


def _shell(tmp_path: Path) -> dict:
    """An environment whose `xrc` and `python` are this interpreter with
    this checkout's package, as a reader's activated venv would be."""
    import sys

    import xrc

    bindir = tmp_path / "bin"
    bindir.mkdir()
    pkg = Path(xrc.__file__).resolve().parent.parent
    for name, argv in (("xrc", f'"{sys.executable}" -m xrc.cli'), ("python", f'"{sys.executable}"')):
        p = bindir / name
        p.write_text(f'#!/bin/sh\nPYTHONPATH="{pkg}" exec {argv} "$@"\n')
        p.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{bindir}{os.pathsep}/usr/bin{os.pathsep}/bin"
    env["MPLBACKEND"] = "Agg"
    return env


def _sh(code: str, cwd: Path, env: dict, where: str) -> str:
    import subprocess

    r = subprocess.run(["bash", "-e", "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"{where} failed ({r.returncode}):\n{code}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    return r.stdout


def test_docs_walkthrough_md_runs_as_written(tmp_path):
    # Every command of the walkthrough, in order, in an empty directory;
    # its three edits of the copied scenario applied as the text says.
    blocks = _blocks((ROOT / "docs" / "walkthrough.md").read_text())
    sh = [c for k, c in blocks if k == "sh"]
    toml = [c for k, c in blocks if k == "toml"]
    py = [c for k, c in blocks if k == "python"]
    assert len(sh) == 8 and len(toml) == 3 and len(py) == 2, [k for k, _ in blocks]
    env = _shell(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    assert "paper/fig1-time-varying" in _sh(sh[0], work, env, "walkthrough: xrc list")
    _sh(sh[1], work, env, "walkthrough: the copy")
    text = (work / "my-cell.toml").read_text()
    text, n1 = re.subn(r'(?m)^name = .*\n(?:.*\n)*?duration_s = .*\n', toml[0], text, count=1)
    text, n2 = re.subn(r"(?m)^trajectory = .*\n", toml[1], text, count=1)
    assert n1 == n2 == 1, "the walkthrough's edits no longer fit the bundled scenario"
    (work / "my-cell.toml").write_text(text + "\n" + toml[2])
    assert "my-cell.toml: ok (my-cell, seed 1, 2 flows, 20.0 s)" in _sh(sh[2], work, env, "walkthrough: validate")
    for i, code in enumerate(sh[3:], 4):
        _sh(code, work, env, f"walkthrough: sh block {i}")
    for i, code in enumerate(py, 1):
        _sh(f"python - <<'PYEOF'\n{code}PYEOF\n", work, env, f"walkthrough: python block {i}")
    assert (work / "runs" / "my-cell" / "plots" / "rate.png").is_file()
    assert (work / "runs" / "my-sweep-plots" / "sweep_my-sweep.png").is_file()


def test_the_commands_of_docs_traces_md_run_as_written(tmp_path):
    blocks = _blocks((ROOT / "docs" / "traces.md").read_text())
    (sh,) = [c for k, c in blocks if k == "sh"]
    (conv,) = [c for k, c in blocks if k == "python"]
    env = _shell(tmp_path)
    assert "capacity 12.00" in _sh(sh, tmp_path, env, "docs/traces.md")
    # The converter: rates of 12.5, 30 and 4.2 Mbit/s for a second each.
    (tmp_path / "conv.py").write_text(conv)
    (tmp_path / "rates.txt").write_text("12.5\n30\n4.2\n")
    _sh("python conv.py rates.txt rates.down", tmp_path, env, "docs/traces.md converter")
    lines = (tmp_path / "rates.down").read_text().split()
    per_s = [sum(1 for x in lines if (int(x) - 1) // 1000 == s) for s in range(3)]
    assert [abs(n * 1500 * 8 / 1e6 - r) < 0.02 for n, r in zip(per_s, (12.5, 30, 4.2))] == [True] * 3, per_s
