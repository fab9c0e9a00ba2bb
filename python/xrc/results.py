"""Turning the core's columns into tables, Parquet files and the summary."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

NO_UE = 2**32 - 1


def columns_to_arrays(raw_tables: dict[str, dict[str, tuple[str, bytes]]]) -> dict[str, dict[str, np.ndarray]]:
    """Decodes the core's ``{table: {column: (dtype, bytes)}}`` into NumPy arrays."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for name, cols in raw_tables.items():
        out[name] = {c: np.frombuffer(b, dtype=np.dtype(dt)) for c, (dt, b) in cols.items()}
    return out


def to_arrow(cols: dict[str, np.ndarray]) -> pa.Table:
    return pa.table({k: pa.array(v) for k, v in cols.items()})


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


def write_parquet(tables: dict[str, dict[str, np.ndarray]], directory, flow_ids: list[str]) -> list[str]:
    """Writes one Parquet file per table. Flow indices are joined with their
    ids so files are readable on their own; every field carries its unit,
    meaning and (coded columns) the names of its codes as metadata. Returns
    the file names."""
    written = []
    for name in sorted(tables):
        cols = dict(tables[name])
        if "flow" in cols:
            idx = cols["flow"]
            ids = np.array(flow_ids + ["(unknown)"], dtype=object)
            safe = np.where(idx < len(flow_ids), idx, len(flow_ids)).astype(np.int64)
            cols = {"flow_id": ids[safe].astype(str), **cols}
        table = to_arrow(cols)
        table = table.cast(pa.schema([f.with_metadata(_field_metadata(name, f.name)) for f in table.schema]))
        fname = f"{name}.parquet"
        pq.write_table(table, directory / fname, compression="zstd", use_dictionary=True,
                       write_statistics=True)
        written.append(fname)
    return written


def _pct(values: np.ndarray, q: float) -> float:
    if values.size == 0:
        return float("nan")
    return float(np.percentile(values, q))


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
    every flow is alive; ``None`` with fewer than two flows or no overlap."""
    fs = tables["flows"]
    if fs["flow"].size < 2:
        return None
    start = float(fs["start_s"].max())
    end = float(fs["end_s"].min())
    if end <= start:
        return None
    tp = tables["flow_throughput"]
    rates = []
    for k in range(fs["flow"].size):
        sel = (tp["flow"] == k) & (tp["t"] >= start - 1e-9) & (tp["t"] < end - 1e-9)
        span = tp["t"][sel]
        if span.size == 0:
            rates.append(0.0)
            continue
        rates.append(float(tp["bytes"][sel].sum()) * 8 / (end - start) / 1e6)
    return jain(rates)


def summarize(resolved: dict[str, Any], tables: dict[str, dict[str, np.ndarray]], *, events: int,
              sim_time_s: float, wall_time_s: float) -> dict[str, Any]:
    """The run's ``summary.json`` (fields may be added, never renamed)."""
    flows_cfg = resolved["flows"]
    fs = tables["flows"]
    rtt = tables["rtt"]
    budget_ms = _hol_budget_ms(resolved)
    flows = []
    for k, fc in enumerate(flows_cfg):
        i = int(np.nonzero(fs["flow"] == k)[0][0])
        start, end = float(fs["start_s"][i]), float(fs["end_s"][i])
        dur = max(end - start, 1e-9)
        r = rtt["rtt_ms"][rtt["flow"] == k]
        ue = int(fs["ue"][i])
        flows.append({
            "id": fc["id"],
            "cc": fc["cc"],
            "ue": None if ue == NO_UE else ue,
            "goodput_mbps": float(fs["bytes_delivered"][i]) * 8 / dur / 1e6,
            "rtt_ms": {"p50": _clean(_pct(r, 50)), "p95": _clean(_pct(r, 95))},
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
    rlc = tables["rlc"]
    qd = tables["queue_delay"]
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
        sel = (rlc["ue"] == u) & (rlc["active"] == 1)
        hol = rlc["hol_ms"][sel]
        pkt = qd["delay_ms"][qd["ue"] == u]
        ues.append({
            "id": u,
            "capacity_mbps": capacity / act / 1e6 if act > 0 else 0.0,
            "delivered_mbps": deliv / act / 1e6 if act > 0 else 0.0,
            "utilization": float(us["delivered_bits"][i]) / capacity if capacity > 0 else None,
            "fair_share_mbps": fair / act / 1e6 if act > 0 else 0.0,
            "fair_share_ratio": deliv / fair if fair > 0 else None,
            "hol_delay_ms": {f"p{q}": _clean(_pct(hol, q)) for q in (50, 80, 90, 95, 99)},
            "frac_time_hol_below_budget": float(np.mean(hol <= budget_ms)) if hol.size else None,
            "queuing_delay_ms": {f"p{q}": _clean(_pct(pkt, q)) for q in (50, 80, 90, 95, 99)},
            "frac_packets_queued_below_budget": float(np.mean(pkt <= budget_ms)) if pkt.size else None,
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
        "jain_index": jain_over_overlap(tables, flows_cfg),
    }


def _hol_budget_ms(resolved: dict[str, Any]) -> float:
    """The queuing budget HoL is judged against: the XRC flows' budget if
    any (they must agree), else XRC's default of 10 ms."""
    budgets = {f["cc_params"]["budget_ms"] for f in resolved["flows"] if f["cc"] in ("xrc", "xrc2")}
    return float(min(budgets)) if budgets else 10.0
