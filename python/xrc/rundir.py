"""Reading what xrc wrote: run and sweep directories checked as they are
read, so that a damaged one is a message naming the file, never a
traceback, a hang or a wrong table.

What was found (each now a :class:`~xrc.scenario.ScenarioError`, exit 2 on
the command line): a ``summary.json`` holding a list made ``xrc plot`` fail
with ``TypeError`` and ``xrc.read_run`` return a run that failed later; a
``summary.json`` that is a named pipe made ``read_run`` wait for ever; a
table file swapped for another (``rtt.parquet`` copied over
``cwnd.parquet``) was returned as the other table; an empty ``sweep.json``
or a truncated run summary made ``xrc plot`` and a sweep's resume fail
with a JSON traceback.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from .scenario import ScenarioError

#: The largest JSON document read (a run's summary of 1,000 UEs is about
#: 2 MB); beyond it the file is not one xrc wrote.
MAX_JSON_BYTES = 256 << 20


def read_json(path: Path, kind: type = dict) -> Any:
    """The JSON document at `path`, which must be a regular file holding a
    `kind` (a dict or a list). Raises ScenarioError naming the file."""
    try:
        # Opened without blocking: a named pipe without a writer made the
        # reader wait for ever. Checked before anything is read.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ScenarioError(f"{str(path)!r} is missing") from None
    except OSError as e:
        raise ScenarioError(f"{str(path)!r}: cannot read it: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise ScenarioError(f"{str(path)!r} is {what}; xrc writes a JSON file there")
        if st.st_size > MAX_JSON_BYTES:
            raise ScenarioError(f"{str(path)!r} holds {st.st_size} bytes, more than xrc writes there "
                                f"({MAX_JSON_BYTES} at most)")
        with os.fdopen(fd, "rb") as f:
            fd = -1
            data = f.read(MAX_JSON_BYTES + 1)
    except OSError as e:
        raise ScenarioError(f"{str(path)!r}: cannot read it: {e.strerror or e}") from None
    finally:
        if fd >= 0:
            os.close(fd)
    try:
        doc = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ScenarioError(f"{str(path)!r} is not UTF-8 text: damaged, or not written by xrc") from None
    except RecursionError:
        raise ScenarioError(f"{str(path)!r} is nested too deeply to be xrc's") from None
    except ValueError as e:
        what = "empty" if not data.strip() else f"not valid JSON ({e})"
        raise ScenarioError(f"{str(path)!r} is {what}: damaged (a run or sweep stopped while writing it?), "
                            f"or not written by xrc") from None
    if not isinstance(doc, kind):
        want = "an object" if kind is dict else "a list"
        raise ScenarioError(f"{str(path)!r} holds {_json_kind(doc)}, not {want}: not what xrc writes there")
    return doc


def _json_kind(x: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "true or false", type(None): "null"}.get(
        type(x), "a number")


def _records(doc: dict[str, Any], key: str, path: Path, fields: tuple[str, ...]) -> None:
    rows = doc.get(key)
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ScenarioError(f"{str(path)!r}: '{key}' is not a list of objects: not what xrc writes there")
    for i, r in enumerate(rows):
        missing = [f for f in fields if f not in r]
        if missing:
            raise ScenarioError(f"{str(path)!r}: {key}[{i}] has no {', '.join(missing)}: not what xrc writes there")


def read_summary(path: Path) -> dict[str, Any]:
    """A run's ``summary.json``, with the fields readers use checked."""
    s = read_json(path)
    _records(s, "flows", path, ("id", "cc", "goodput_mbps"))
    _records(s, "ues", path, ("id",))
    if not isinstance(s.get("sim_time_s"), (int, float)) or isinstance(s.get("sim_time_s"), bool):
        raise ScenarioError(f"{str(path)!r}: 'sim_time_s' is not a number: not what xrc writes there")
    return s


def read_resolved(path: Path) -> dict[str, Any]:
    """A run's ``scenario.resolved.json``, with the fields readers use
    checked."""
    s = read_json(path)
    _records(s, "flows", path, ("id",))
    if not isinstance(s.get("name"), str) or not isinstance(s.get("seed"), int) or isinstance(s.get("seed"), bool):
        raise ScenarioError(f"{str(path)!r}: 'name' or 'seed' is missing or not what xrc writes there")
    return s


def summary_ok(path: Path) -> bool:
    """Whether `path` is a readable, well-formed run summary (a sweep's test
    of a finished run)."""
    try:
        read_summary(path)
        return True
    except ScenarioError:
        return False


def read_sweep_listing(path: Path) -> list[dict[str, Any]]:
    """The runs a ``sweep.json`` lists (``run_id``, ``seed``, ``overrides``)."""
    doc = read_json(path)
    _records(doc, "runs", path, ("run_id", "seed", "overrides"))
    for i, r in enumerate(doc["runs"]):
        if not isinstance(r["run_id"], str) or not r["run_id"] or "/" in r["run_id"] or r["run_id"] in (".", ".."):
            raise ScenarioError(f"{str(path)!r}: runs[{i}].run_id is {r['run_id']!r}: not a run's name")
        if not isinstance(r["overrides"], list) or not all(isinstance(o, str) for o in r["overrides"]):
            raise ScenarioError(f"{str(path)!r}: runs[{i}].overrides is not a list of strings")
    return doc["runs"]


def check_table_columns(path: Path, table: str, columns: list[str], expected: set[str]) -> None:
    """A table file must hold that table's columns: a file swapped for
    another table's was read as this one."""
    foreign = [c for c in columns if c not in expected and c != "flow_id"]
    if foreign:
        raise ScenarioError(f"{str(path)!r} holds columns that table '{table}' does not have "
                            f"({', '.join(foreign[:5])}): the file of another table, or not xrc's")
