"""Metrics the paper's figures and claims use."""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

# Two-sided 95% Student t quantiles for n - 1 degrees of freedom.
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
        10: 2.228, 15: 2.131, 20: 2.086, 30: 2.042}


def jain(xs: Iterable[float]) -> float | None:
    """Jain's fairness index; ``None`` for fewer than two values or all zero."""
    xs = [float(x) for x in xs if x is not None and not math.isnan(x)]
    if len(xs) < 2:
        return None
    q = sum(x * x for x in xs)
    return (sum(xs) ** 2) / (len(xs) * q) if q > 0 else None


def mean_ci95(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Mean and the half-width of its 95% confidence interval (Student t);
    the half-width is ``None`` with one value."""
    v = np.array([x for x in values if x is not None and not math.isnan(x)], dtype=float)
    if v.size == 0:
        return None, None
    if v.size == 1:
        return float(v[0]), None
    df = v.size - 1
    t = _T95.get(df) or _T95[max(k for k in _T95 if k <= df)]
    return float(v.mean()), float(t * v.std(ddof=1) / math.sqrt(v.size))


def flow_rates(tp: dict, n_flows: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-bin goodput (Mbit/s) of every flow on a common time axis:
    returns (times, rates[flow, bin]), zero where a flow had no bin."""
    t = np.unique(tp["t"])
    rates = np.zeros((n_flows, t.size))
    idx = np.searchsorted(t, tp["t"])
    for k in range(n_flows):
        sel = tp["flow"] == k
        rates[k, idx[sel]] = tp["goodput_mbps"][sel]
    return t, rates


def jain_sliding(tp: dict, alive: list[tuple[float, float]], window_s: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Jain's index over sliding windows among the flows alive during the
    whole window (two or more). Returns (window starts, index)."""
    t, rates = flow_rates(tp, len(alive))
    if t.size == 0:
        return np.array([]), np.array([])
    bin_s = float(np.median(np.diff(t))) if t.size > 1 else 0.1
    per = max(1, int(round(window_s / bin_s)))
    starts, values = [], []
    for i in range(0, t.size - per + 1, per):
        a, b = t[i], t[i] + per * bin_s
        live = [k for k, (s, e) in enumerate(alive) if s <= a + 1e-9 and e >= b - 1e-9]
        if len(live) < 2:
            continue
        starts.append(a)
        values.append(jain(rates[live, i:i + per].mean(axis=1)))
    return np.array(starts), np.array(values, dtype=float)


def jain_over(tp: dict, flows: list[int], start: float, end: float) -> float | None:
    """Jain's index of the flows' mean goodput over [start, end)."""
    if end <= start:
        return None
    rates = []
    for k in flows:
        sel = (tp["flow"] == k) & (tp["t"] >= start - 1e-9) & (tp["t"] < end - 1e-9)
        rates.append(float(tp["bytes"][sel].sum()) * 8 / (end - start) / 1e6)
    return jain(rates)


def decimate(x: np.ndarray, n: int = 4000) -> np.ndarray:
    """At most ``n`` evenly spaced values (for CDFs in reports)."""
    if x.size <= n:
        return x
    return x[np.linspace(0, x.size - 1, n).astype(int)]


def pct(x: np.ndarray, q: float) -> float | None:
    return float(np.percentile(x, q)) if x.size else None
