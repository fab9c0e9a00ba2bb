"""Synthetic cellular capacity traces in Mahimahi's format (``xrc trace
synth``): seeded, with the features of recorded LTE traces that matter to
a congestion control and that a smooth random walk lacks.

The model, in three layers (every random draw from one NumPy ``PCG64``
generator seeded with ``seed``, in a fixed order, so a seed gives the same
file on every machine):

1. **Markov-modulated rate.** The link's rate is one of ``levels`` values
   spaced evenly in log scale between ``min_mbps`` and ``max_mbps``. It
   stays in a level for an exponential time of mean ``dwell_s``, then moves
   one level up or down (a birth-death chain; at an end it moves inward),
   as a user moving through a cell drifts between MCS ranges.
2. **Deep fades and outages.** Fades start as a Poisson process
   (``fades_per_min``), last an exponential time of mean ``fade_s`` and
   scale the rate by ``fade_depth``; outages start as a Poisson process
   (``outages_per_min``), last a time uniform in ``outage_s`` and carry
   nothing (a tunnel, a handover that failed, a dead zone).
3. **Bursty opportunities.** Within a millisecond of rate r the link is
   granted with probability ``grant_prob``, and a granted millisecond
   carries a Poisson number of 1500-byte opportunities of mean
   r / (12 kbit · ``grant_prob``), so the mean rate is r while the
   opportunities come in bursts and gaps, as a base station's scheduler
   grants a UE some TTIs and not others.

Held-out traces: ``xrc trace synth DIR --count N`` writes N traces with
the seeds ``seed``, ``seed + 1``, ...; the odd-numbered ones
(``synth-holdout-NNN.down``) are the held-out half, never used for tuning,
the even-numbered ones (``synth-tune-NNN.down``) the tuning half.

Deviations from a recorded trace, named: no uplink trace is generated (use
a fixed uplink delay); no correlation between the rate and the grant
probability; the last millisecond carries at least one opportunity, so the
file's period (its last line) is the requested length.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

#: The most trace a set may hold, s: ten days (at 40 Mbit/s, about 10 GB
#: of Mahimahi text).
MAX_TOTAL_S = 864_000.0

#: Bits of one delivery opportunity (a 1500-byte packet, Mahimahi's).
OPPORTUNITY_BITS = 12_000


class TraceGenError(ValueError):
    """A parameter out of range: the message names it and its value."""


@dataclass(frozen=True)
class TraceModel:
    seconds: float = 60.0
    min_mbps: float = 1.0
    max_mbps: float = 40.0
    levels: int = 6
    dwell_s: float = 1.5
    fades_per_min: float = 4.0
    fade_s: float = 0.6
    fade_depth: float = 0.08
    outages_per_min: float = 0.5
    outage_s: tuple[float, float] = (1.0, 4.0)
    grant_prob: float = 0.35

    def check(self) -> None:
        def positive(name: str, v: float, hi: float = math.inf) -> None:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 < v <= hi) or not math.isfinite(v):
                raise TraceGenError(f"{name} must be a positive finite number (at most {hi}), got {v!r}")

        positive("seconds", self.seconds, 86_400)
        positive("min_mbps", self.min_mbps, 100_000)
        positive("max_mbps", self.max_mbps, 100_000)
        if self.max_mbps < self.min_mbps:
            raise TraceGenError(f"max_mbps ({self.max_mbps}) must be at least min_mbps ({self.min_mbps})")
        if isinstance(self.levels, bool) or not isinstance(self.levels, int) or not 1 <= self.levels <= 64:
            raise TraceGenError(f"levels must be an integer in 1..64, got {self.levels!r}")
        positive("dwell_s", self.dwell_s)
        positive("fade_s", self.fade_s)
        for name in ("fades_per_min", "outages_per_min"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 <= v < math.inf):
                raise TraceGenError(f"{name} must be a finite number >= 0, got {v!r}")
        if not (isinstance(self.fade_depth, (int, float)) and 0 <= self.fade_depth <= 1):
            raise TraceGenError(f"fade_depth must be in [0, 1], got {self.fade_depth!r}")
        lo, hi = self.outage_s
        if not (math.isfinite(lo) and math.isfinite(hi) and 0 < lo <= hi):
            raise TraceGenError(f"outage_s must be two finite seconds 0 < MIN <= MAX, got {self.outage_s!r}")
        if not (isinstance(self.grant_prob, (int, float)) and 0 < self.grant_prob <= 1):
            raise TraceGenError(f"grant_prob must be in (0, 1], got {self.grant_prob!r}")


@dataclass(frozen=True)
class SynthTrace:
    """A generated trace: its opportunities per millisecond, and what it is
    made of."""

    per_ms: "object"  # numpy int array, one entry per millisecond
    model: TraceModel
    seed: int
    fade_s: float
    outage_s: float

    @property
    def mean_mbps(self) -> float:
        return float(self.per_ms.sum()) * OPPORTUNITY_BITS / (len(self.per_ms) * 1e3)

    def mahimahi(self) -> str:
        """The trace as Mahimahi's text: one line per opportunity, its
        millisecond (from 1), in order."""
        import numpy as np

        ms = np.repeat(np.arange(1, len(self.per_ms) + 1), self.per_ms)
        return "\n".join(map(str, ms.tolist())) + "\n"

    def summary(self) -> dict:
        return {"seed": self.seed, "seconds": len(self.per_ms) / 1e3, "mean_mbps": round(self.mean_mbps, 3),
                "fade_s": round(self.fade_s, 3), "outage_s": round(self.outage_s, 3),
                "model": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self.model).items()}}


def _intervals(rng, per_min: float, mean_or_range, total_ms: int, uniform: bool) -> list[tuple[int, int]]:
    """Start and end (ms) of events that start as a Poisson process of
    `per_min` and last an exponential time of mean `mean_or_range` s (or a
    uniform one in that range)."""
    out = []
    if per_min <= 0:
        return out
    t = 0.0
    while True:
        t += rng.exponential(60_000.0 / per_min)
        if t >= total_ms:
            return out
        d = rng.uniform(*mean_or_range) if uniform else rng.exponential(mean_or_range)
        out.append((int(t), min(int(t + d * 1e3), total_ms)))


def generate(model: TraceModel, seed: int) -> SynthTrace:
    """The trace of `model` for `seed` (an integer >= 0)."""
    import numpy as np

    model.check()
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise TraceGenError(f"seed must be an integer >= 0, got {seed!r}")
    rng = np.random.Generator(np.random.PCG64(seed))
    n = int(round(model.seconds * 1e3))
    if n < 1:
        raise TraceGenError(f"seconds must be at least 0.001, got {model.seconds!r}")
    levels = np.geomspace(model.min_mbps, model.max_mbps, model.levels) if model.levels > 1 else \
        np.array([model.min_mbps])
    # 1. The Markov-modulated rate, one value per millisecond.
    rate = np.empty(n)
    k, t = int(rng.integers(model.levels)), 0
    while t < n:
        d = max(1, int(rng.exponential(model.dwell_s) * 1e3))
        rate[t:t + d] = levels[k]
        t += d
        if model.levels > 1:
            step = 1 if k == 0 else -1 if k == model.levels - 1 else (1 if rng.random() < 0.5 else -1)
            k += step
    # 2. Fades, then outages.
    fades = _intervals(rng, model.fades_per_min, model.fade_s, n, uniform=False)
    outages = _intervals(rng, model.outages_per_min, model.outage_s, n, uniform=True)
    faded = np.zeros(n, bool)
    for a, b in fades:
        faded[a:b] = True
    out = np.zeros(n, bool)
    for a, b in outages:
        out[a:b] = True
    rate = np.where(faded, rate * model.fade_depth, rate)
    rate = np.where(out, 0.0, rate)
    # 3. Bursty opportunities.
    mean_per_ms = rate * 1e6 / OPPORTUNITY_BITS / 1e3
    granted = rng.random(n) < model.grant_prob
    per_ms = np.where(granted, rng.poisson(mean_per_ms / model.grant_prob), 0).astype(np.int64)
    per_ms[-1] = max(per_ms[-1], 1)
    return SynthTrace(per_ms=per_ms, model=model, seed=seed, fade_s=float(faded.sum()) / 1e3,
                      outage_s=float(out.sum()) / 1e3)


def stats(text: str) -> dict:
    """Statistics of a Mahimahi trace's text, to compare synthetic traces
    with recorded ones: the mean rate (Mbit/s); ``busy``, the share of
    milliseconds with an opportunity; ``burst``, opportunities in such a
    millisecond; ``cv``, the coefficient of variation of the rate over
    100-ms windows; ``zero``, the share of those windows with none. Raises
    :class:`TraceGenError` for text that is not a trace."""
    import numpy as np

    try:
        ms = np.array([int(x) for x in text.split()], dtype=np.int64)
    except ValueError as e:
        raise TraceGenError(f"not a Mahimahi trace: {e}") from None
    if ms.size == 0 or ms.min() < 0 or np.any(np.diff(ms) < 0):
        raise TraceGenError("not a Mahimahi trace: empty, negative or out of order")
    n = int(ms.max())
    if n < 100:
        raise TraceGenError(f"a trace of {n} ms is too short for 100-ms windows")
    per = np.bincount(ms, minlength=n + 1)[1:]
    busy = per > 0
    w = per[: n // 100 * 100].reshape(-1, 100).sum(1) * OPPORTUNITY_BITS / 0.1 / 1e6
    return {"mean_mbps": round(float(per.sum()) * OPPORTUNITY_BITS / n / 1e3, 2),
            "busy": round(float(busy.mean()), 3), "burst": round(float(per[busy].mean()), 2),
            "cv": round(float(w.std() / w.mean()) if w.mean() > 0 else math.inf, 2),
            "zero": round(float((w == 0).mean()), 3)}


def write_set(out_dir: Path, model: TraceModel, seed: int, count: int) -> list[dict]:
    """Writes `count` traces (seeds `seed`, `seed` + 1, ...) into `out_dir`
    as ``synth-tune-NNN.down`` (even NNN) and ``synth-holdout-NNN.down``
    (odd NNN), and ``traces.json`` describing them; returns that list."""
    import json

    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 10_000:
        raise TraceGenError(f"count must be an integer in 1..10000, got {count!r}")
    model.check()
    if count * model.seconds > MAX_TOTAL_S:
        raise TraceGenError(f"count × seconds must be at most {MAX_TOTAL_S:g} s of traces (gigabytes of text), "
                            f"got {count} × {model.seconds:g} s")
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(count):
        tr = generate(model, seed + i)
        half = "holdout" if i % 2 else "tune"
        name = f"synth-{half}-{i:03d}.down"
        (out_dir / name).write_text(tr.mahimahi())
        rows.append({"file": name, "half": half, **tr.summary()})
    (out_dir / "traces.json").write_text(json.dumps(rows, indent=2) + "\n")
    return rows
