"""Turning the core's columns into tables, Parquet files and the summary."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .grouped import GroupedArrays

NO_UE = 2**32 - 1

#: The options every Parquet file is written with.
PARQUET_OPTIONS = {"compression": "zstd", "write_statistics": True}
#: Rows of a Parquet row group, written so by a streamed run and by one held
#: in memory alike (equal rows give equal files). 2^18 rather than pyarrow's
#: 2^20: a streamed run holds up to a row group per table and one being
#: written, 550 MB at the peak for a 1-UE cell's four long tables at 2^20
#: and 400 MB at 2^18 (10^4 simulated s).
ROW_GROUP_ROWS = 1 << 18


def parquet_options(schema: pa.Schema) -> dict:
    """How a table is written: zstd, statistics, and dictionary encoding for
    its string columns only (flow ids, modes: a few values repeated). On the
    numeric series a dictionary costs a third of the writing time and makes
    the files larger (measured on Fig. 1 and the NR mid-band cell: 1.5x the
    time, 12-35% more bytes)."""
    return {**PARQUET_OPTIONS, "use_dictionary": [f.name for f in schema if pa.types.is_string(f.type)]}


def columns_to_arrays(raw_tables: dict[str, dict[str, tuple[str, bytes]]]) -> dict[str, dict[str, np.ndarray]]:
    """Decodes the core's ``{table: {column: (dtype, buffer)}}`` into NumPy
    arrays (views of the core's buffers, read-only, not copies)."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for name, cols in raw_tables.items():
        out[name] = {c: np.frombuffer(b, dtype=np.dtype(dt)) for c, (dt, b) in cols.items()}
    return out


def arrow_strings(values: list[str]) -> pa.Array:
    """A string array built from its buffers (``pa.array`` on Python or
    NumPy objects imports pandas, half a second of every run)."""
    data = [v.encode() for v in values]
    offsets = np.zeros(len(data) + 1, dtype=np.int32)
    offsets[1:] = np.cumsum([len(b) for b in data], dtype=np.int64)
    return pa.Array.from_buffers(pa.string(), len(data), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))])


def arrow_array(v: np.ndarray | pa.Array) -> pa.Array:
    """A column as Arrow: numeric NumPy arrays without a copy, from their
    buffer (see :func:`arrow_strings`); anything else through ``pa.array``."""
    if isinstance(v, pa.Array):
        return v
    if v.dtype.kind in "uif" and v.dtype.byteorder in "=<|":
        v = np.ascontiguousarray(v)
        return pa.Array.from_buffers(pa.from_numpy_dtype(v.dtype), len(v), [None, pa.py_buffer(v)])
    return pa.array(v)


_NUMPY_OF_ARROW = {pa.float64(): "<f8", pa.uint64(): "<u8", pa.uint32(): "<u4", pa.uint8(): "u1", pa.int64(): "<i8",
                   pa.int32(): "<i4"}


def numpy_of(a: pa.Array) -> np.ndarray:
    """A numeric Arrow array without nulls as NumPy, a view of its buffer
    (``to_numpy`` imports pandas)."""
    dtype = np.dtype(_NUMPY_OF_ARROW[a.type])
    if a.null_count:
        raise ValueError(f"{a.type} column with nulls")
    return np.frombuffer(a.buffers()[1], dtype=dtype, count=len(a), offset=a.offset * dtype.itemsize)


def decoded(codes: np.ndarray, names: list[str]) -> pa.Array:
    """Codes (indices into `names`) as an Arrow string array, built from its
    buffers with NumPy: a dictionary array's ``cast`` would import
    ``pyarrow.compute``, 0.1 s of every run spent wrapping its functions."""
    idx = np.ascontiguousarray(codes, dtype=np.int64)
    data = [v.encode() for v in names]
    lens = np.array([len(b) for b in data], dtype=np.int64)
    starts = np.zeros(len(data), dtype=np.int64)
    starts[1:] = np.cumsum(lens)[:-1]
    each = lens[idx]
    ends = np.cumsum(each)
    if idx.size and ends[-1] >= 2**31:
        raise ValueError(f"{idx.size} names of {ends[-1]} bytes: more than a string column holds")
    offsets = np.zeros(idx.size + 1, dtype=np.int32)
    offsets[1:] = ends
    # Byte k of the column is byte (k − its row's offset) of its row's name.
    row_start = np.repeat(offsets[:-1].astype(np.int64), each)
    src = np.arange(int(ends[-1]) if idx.size else 0, dtype=np.int64) - row_start + np.repeat(starts[idx], each)
    blob = np.frombuffer(b"".join(data), dtype=np.uint8) if data else np.zeros(0, np.uint8)
    chars = blob[src] if src.size else np.zeros(0, np.uint8)
    return pa.Array.from_buffers(pa.string(), idx.size, [None, pa.py_buffer(offsets), pa.py_buffer(chars.tobytes())])


def to_arrow(cols: dict[str, np.ndarray | pa.Array]) -> pa.Table:
    return pa.Table.from_arrays([arrow_array(v) for v in cols.values()], names=list(cols))


def _field_metadata(table: str, column: str) -> dict[bytes, bytes] | None:
    """A column's unit, meaning and codes (:mod:`xrc.columns`)."""
    import json

    from .columns import tables as documented

    t = documented().get(table)
    c = t.columns.get(column) if t else None
    if c is None:
        return None
    meta = {b"unit": c.unit.encode(), b"doc": c.doc.encode()}
    if c.categories:
        meta[b"codes"] = json.dumps(list(c.categories)).encode()
    return meta


def arrow_table(name: str, cols: dict[str, np.ndarray], flow_ids: list[str]) -> pa.Table:
    """Table `name` as written to Parquet: flow indices joined with their ids
    (a ``flow_id`` column first) so files are readable on their own; every
    field carries its unit, meaning and (coded columns) the names of its
    codes as metadata."""
    cols = dict(cols)
    if "flow" in cols:
        idx = cols["flow"]
        safe = np.where(idx < len(flow_ids), idx, len(flow_ids))
        cols = {"flow_id": decoded(safe, flow_ids + ["(unknown)"]), **cols}
    arrays = [arrow_array(v) for v in cols.values()]
    # The schema with each field's metadata, given to the arrays directly
    # (``Table.cast`` would import ``pyarrow.compute``: see :func:`decoded`).
    # No column has nulls: required fields, written without definition
    # levels (8-10% of a 400-UE run's wall time, which waits for Parquet).
    fields = [pa.field(c, a.type, nullable=False).with_metadata(_field_metadata(name, c)) for c, a in zip(cols, arrays)]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def write_parquet(tables: dict[str, dict[str, np.ndarray]], directory, flow_ids: list[str]) -> list[str]:
    """Writes one Parquet file per table (:func:`arrow_table`). Returns the
    file names."""
    written = []
    for name in sorted(tables):
        fname = f"{name}.parquet"
        t = arrow_table(name, tables[name], flow_ids)
        pq.write_table(t, directory / fname, row_group_size=ROW_GROUP_ROWS, **parquet_options(t.schema))
        written.append(fname)
    return written


class Grouped(Protocol):
    """A series' values by group (:mod:`xrc.grouped`)."""

    def values(self, group: int) -> np.ndarray: ...

    def percentiles(self, group: int, qs) -> list[float]: ...

    def count_at_most(self, group: int, x: float) -> tuple[int, int]: ...

    def cdf_points(self, group: int, points: int) -> tuple[np.ndarray, np.ndarray, int]: ...


#: Flow -> (times, windows) of the flows asked for; with ``points=(t0, t1,
#: n)`` only the points a plot of n columns over [t0, t1] shows
#: (:func:`envelope`).
CwndReader = Callable[..., dict[int, tuple[np.ndarray, np.ndarray]]]


def envelope(t: np.ndarray, w: np.ndarray, t0: float, t1: float, columns: int) -> np.ndarray:
    """Indices of the points of a time series (`t` non-decreasing) that a
    line plot of `columns` columns over [t0, t1] needs: in each column the
    first and the last point, the earliest lowest and the latest highest
    (M4: Jugel et al., "M4: a visualization-oriented time series data
    aggregation", VLDB 2014). Drawn, they give the picture of the whole
    series; a long run's window has millions of points. Applied to any
    split of the series in time order and then to the union of what each
    part kept, it keeps the same points as applied to the whole."""
    if t.size == 0:
        return np.arange(0)
    span = max(t1 - t0, 1e-12)
    col = np.clip(((t - t0) / span * columns).astype(np.int64), 0, columns - 1)
    starts = np.flatnonzero(np.r_[True, col[1:] != col[:-1]])
    ends = np.r_[starts[1:], t.size] - 1
    order = np.lexsort((w, col))   # by column, then by value; stable
    return np.unique(np.concatenate([starts, ends, order[starts], order[ends]]))
#: (table, columns) -> the table's rows in order, in batches of columns.
BatchReader = Callable[[str, list[str]], Iterator[dict[str, np.ndarray]]]


@dataclass
class RunData:
    """What the summary and the plots read of a run: the tables of one row
    per flow or UE (``flows``, ``ues``, ``chunks``) whole; the per-bin
    tables (``flow_throughput``, ``ue_rate``) in batches, as they grow with
    the run; and the long series by group: RTT samples by flow, HoL delays
    while active and packets' queuing delays by UE, and windows of chosen
    flows. In memory (:meth:`from_tables`) or streamed (:mod:`xrc.stream`)."""

    tables: dict[str, dict[str, np.ndarray]]
    rtt: Grouped
    hol_active: Grouped
    queue_delay: Grouped
    cwnd: CwndReader
    batches: BatchReader

    def whole(self, name: str, columns: list[str]) -> dict[str, np.ndarray]:
        """A per-bin table's columns whole (for a few UEs and flows)."""
        parts = list(self.batches(name, columns))
        return {c: np.concatenate([p[c] for p in parts]) for c in columns}

    @classmethod
    def from_tables(cls, tables: dict[str, dict[str, np.ndarray]]) -> "RunData":
        # A table a run did not write (an emulated run has no cwnd, and no
        # rlc or queue_delay outside a cell) reads as empty.
        e32, ef = np.zeros(0, dtype=np.uint32), np.zeros(0)
        rlc = tables.get("rlc") or {"active": np.zeros(0, dtype=np.uint8), "ue": e32, "hol_ms": ef}
        qd = tables.get("queue_delay") or {"ue": e32, "delay_ms": ef}
        rtt = tables.get("rtt") or {"flow": e32, "rtt_ms": ef}
        cw = tables.get("cwnd") or {"flow": e32, "t": ef, "cwnd": ef}
        # Outside a cell an emulated run has no per-UE tables either.
        tables = dict(tables)
        tables.setdefault("ues", {"ue": e32})
        tables.setdefault("ue_rate", {"t": ef, "ue": e32, "available_mbps": ef, "agent_mbps": ef})
        active = rlc["active"] == 1
        by_flow = GroupedArrays(cw["flow"], np.arange(cw["flow"].size))

        def cwnd(flows: list[int], points=None) -> dict[int, tuple[np.ndarray, np.ndarray]]:
            out = {}
            for k in flows:
                rows = by_flow.values(k).astype(np.int64)
                t, w = cw["t"][rows], cw["cwnd"][rows]
                if points is not None:
                    keep = envelope(t, w, *points)
                    t, w = t[keep], w[keep]
                out[k] = (t, w)
            return out

        def batches(name: str, columns: list[str]) -> Iterator[dict[str, np.ndarray]]:
            yield {c: tables[name][c] for c in columns}

        return cls(tables=tables, rtt=GroupedArrays(rtt["flow"], rtt["rtt_ms"]),
                   hol_active=GroupedArrays(rlc["ue"][active], rlc["hol_ms"][active]),
                   queue_delay=GroupedArrays(qd["ue"], qd["delay_ms"]), cwnd=cwnd, batches=batches)


#: The percentiles of a UE's HoL and queuing delays in the summary.
HOL_QUANTILES = (50, 80, 90, 95, 99)


def _clean(x: float) -> float | None:
    return None if (x is None or (isinstance(x, float) and math.isnan(x))) else x


def jain(xs: list[float]) -> float | None:
    xs = [x for x in xs if x is not None]
    if len(xs) < 2:
        return None
    s = sum(xs)
    q = sum(x * x for x in xs)
    if q == 0:
        return None
    return s * s / (len(xs) * q)


def jain_over_overlap(tables, flows_meta) -> float | None:
    """Jain's index of the flows' mean throughputs over the interval where
    every flow is alive; ``None`` with fewer than two flows or no overlap.
    `tables`: the tables in memory or a :class:`RunData`."""
    data = tables if isinstance(tables, RunData) else RunData.from_tables(tables)
    fs = data.tables["flows"]
    if fs["flow"].size < 2:
        return None
    start = float(fs["start_s"].max())
    end = float(fs["end_s"].min())
    if end <= start:
        return None
    # Bytes of each flow's bins in the overlap, summed as integers (one pass
    # over the table, not one per flow).
    sums = np.zeros(fs["flow"].size, dtype=np.uint64)
    for tp in data.batches("flow_throughput", ["t", "flow", "bytes"]):
        sel = (tp["t"] >= start - 1e-9) & (tp["t"] < end - 1e-9) & (tp["flow"] < fs["flow"].size)
        np.add.at(sums, tp["flow"][sel].astype(np.int64), tp["bytes"][sel])
    return jain([float(b) * 8 / (end - start) / 1e6 for b in sums])


def summarize(resolved: dict[str, Any], tables: "dict[str, dict[str, np.ndarray]] | RunData", *, events: int,
              sim_time_s: float, wall_time_s: float) -> dict[str, Any]:
    """The run's ``summary.json`` (fields may be added, never renamed), from
    its tables in memory or a :class:`RunData`."""
    data = tables if isinstance(tables, RunData) else RunData.from_tables(tables)
    tables = data.tables
    flows_cfg = resolved["flows"]
    fs = tables["flows"]
    budget_ms = _hol_budget_ms(resolved)
    flows = []
    row_of = {int(f): i for i, f in reversed(list(enumerate(fs["flow"])))}
    for k, fc in enumerate(flows_cfg):
        i = row_of[k]
        start, end = float(fs["start_s"][i]), float(fs["end_s"][i])
        dur = max(end - start, 1e-9)
        r50, r95 = data.rtt.percentiles(k, (50, 95))
        ue = int(fs["ue"][i])
        flows.append({
            "id": fc["id"],
            "cc": fc["cc"],
            "ue": None if ue == NO_UE else ue,
            "goodput_mbps": float(fs["bytes_delivered"][i]) * 8 / dur / 1e6,
            "rtt_ms": {"p50": _clean(r50), "p95": _clean(r95)},
            "retransmits": int(fs["retransmits"][i]),
            "bytes_delivered": int(fs["bytes_delivered"][i]),
            "start_s": start,
            "end_s": end,
            "completed": bool(fs["completed"][i]),
            "timeouts": int(fs["timeouts"][i]),
            "loss_undos": int(fs["loss_undos"][i]),
            "recovery_undos": int(fs["recovery_undos"][i]),
            "spurious_rtos": int(fs["spurious_rtos"][i]),
            "probes": int(fs["probes"][i]),
        })
    us = tables["ues"]
    ues = []
    for i in range(us["ue"].size):
        u = int(us["ue"][i])
        act = float(us["active_s"][i])
        fair = float(us["available_bits_active"][i])
        deliv = float(us["delivered_bits_active"][i])
        # Utilization: bits delivered over the capacity the UE had, the larger
        # of its fair share and what its radio carried (docs/outputs.md).
        # Everything delivered was carried, so it cannot exceed 1.
        carried = float(us["carried_bits"][i])
        capacity = max(fair, carried)
        # Statistics of the group, not its values: a long run's series do
        # not fit in memory (xrc.grouped reads them in pieces).
        hol_q = data.hol_active.percentiles(u, HOL_QUANTILES)
        pkt_q = data.queue_delay.percentiles(u, HOL_QUANTILES)
        hol_in, hol_n = data.hol_active.count_at_most(u, budget_ms)
        pkt_in, pkt_n = data.queue_delay.count_at_most(u, budget_ms)
        ues.append({
            "id": u,
            "capacity_mbps": capacity / act / 1e6 if act > 0 else 0.0,
            "delivered_mbps": deliv / act / 1e6 if act > 0 else 0.0,
            "utilization": float(us["delivered_bits"][i]) / capacity if capacity > 0 else None,
            "fair_share_mbps": fair / act / 1e6 if act > 0 else 0.0,
            "fair_share_ratio": deliv / fair if fair > 0 else None,
            "hol_delay_ms": {f"p{q}": _clean(x) for q, x in zip(HOL_QUANTILES, hol_q)},
            "frac_time_hol_below_budget": hol_in / hol_n if hol_n else None,
            "queuing_delay_ms": {f"p{q}": _clean(x) for q, x in zip(HOL_QUANTILES, pkt_q)},
            "frac_packets_queued_below_budget": pkt_in / pkt_n if pkt_n else None,
            "hol_budget_ms": budget_ms,
            "active_s": act,
            "rlc_drops": int(us["rlc_drops"][i]),
            "tbs_new": int(us["tbs_new"][i]),
            "tbs_retx": int(us["tbs_retx"][i]),
            "tbs_lost": int(us["tbs_lost"][i]),
        })
    return {
        "scenario": resolved["name"],
        "seed": resolved["seed"],
        "sim_time_s": sim_time_s,
        "wall_time_s": wall_time_s,
        "events": events,
        "flows": flows,
        "ues": ues,
        "jain_index": jain_over_overlap(data, flows_cfg),
    }


def _hol_budget_ms(resolved: dict[str, Any]) -> float:
    """The queuing budget HoL is judged against: the XRC flows' budget if
    any (they must agree), else XRC's default of 10 ms."""
    budgets = {f["cc_params"]["budget_ms"] for f in resolved["flows"] if f["cc"] in ("xrc", "xrc2")}
    return float(min(budgets)) if budgets else 10.0
