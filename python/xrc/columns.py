"""Every column of a run's tables: its type, unit, meaning and, for coded
columns, its categories.

The core defines its tables, their columns, units and doc comments, and
what every code means (``xrc-core/src/metrics``); this module reads them
from the core (:func:`xrc._core.tables_info`, :func:`xrc._core.codes`)
and adds only what the front end itself writes: ``flow_id`` beside every
``flow`` index, and ``cwnd.mode`` as the algorithm's mode name. The Parquet
files carry these units and meanings as field metadata, the DataFrames of
:class:`xrc.Run` as categories and ``attrs``, and ``docs/outputs.md`` lists
them (a test checks it is up to date), all from this one source.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from . import _core

#: The index the core writes where a row has no UE or no flow.
NONE_INDEX = 2**32 - 1

#: Columns holding 0 or 1 (booleans in DataFrames).
BOOLEAN = {("rlc", "active"), ("flows", "completed")}


@dataclass(frozen=True)
class Column:
    name: str
    #: As written to Parquet: ``f64``, ``u64``, ``u32``, ``u8`` or ``str``.
    dtype: str
    #: Empty for counts, indices, codes and names.
    unit: str
    doc: str
    #: For a coded column, the name of each code (index = code).
    categories: tuple[str, ...] | None = None
    #: For a coded column, what each code means.
    category_docs: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Table:
    name: str
    doc: str
    columns: dict[str, Column]


def _clean(doc: str) -> str:
    """Without the pointer to the core's code table (the codes are listed
    here) and with Rust doc links as plain code spans."""
    doc = re.sub(r"; the codes are \[`codes::\w+`\]", "", doc)
    return re.sub(r"\[`([^`]+)`\]", r"`\1`", doc)


@functools.cache
def tables() -> dict[str, Table]:
    """Every table a run writes, by name, in the order the core lists them."""
    codes = _core.codes()
    out: dict[str, Table] = {}
    for t in _core.tables_info():
        cols: dict[str, Column] = {}
        names = [c["name"] for c in t["columns"]]
        if "flow" in names:
            cols["flow_id"] = Column("flow_id", "str", "", "The flow's `id` (from the scenario; `(unknown)` where "
                                     "`flow` is 2^32 - 1).")
        for c in t["columns"]:
            key = f"{t['name']}.{c['name']}"
            doc = _clean(c["doc"])
            dtype = c["dtype"]
            if key == "cwnd.mode":
                dtype = "str"
                doc = "The algorithm's mode (its own names, e.g. BBR's `startup`; empty for algorithms without modes)."
            cats = codes.get(key)
            cols[c["name"]] = Column(
                c["name"], dtype, c["unit"], doc,
                tuple(n for n, _ in cats) if cats else None,
                tuple(d for _, d in cats) if cats else None,
            )
        out[t["name"]] = Table(t["name"], _clean(t["doc"]), cols)
    return out


def units(table: str) -> dict[str, str]:
    """Column -> unit of a table (empty string: no unit)."""
    return {c.name: c.unit for c in tables()[table].columns.values()}


def markdown() -> str:
    """Every table and column as Markdown (the generated part of
    docs/outputs.md)."""
    lines = []
    for t in tables().values():
        lines += [f"### `{t.name}.parquet`", "", t.doc, "", "| column | type | unit | meaning |", "|---|---|---|---|"]
        for c in t.columns.values():
            doc = c.doc
            if c.categories:
                doc += " Codes: " + "; ".join(f"{i} = `{n}`, {d}" for i, (n, d) in
                                             enumerate(zip(c.categories, c.category_docs or ()))) + "."
            if (t.name, c.name) in BOOLEAN:
                doc += " (0 or 1)"
            doc = doc.replace("|", "\\|")
            lines.append(f"| `{c.name}` | {c.dtype} | {c.unit or '–'} | {doc} |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
