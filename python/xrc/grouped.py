"""A series' values by group (a UE, a flow), for per-group statistics.

The summary needs, for every UE, its HoL delays while active and its
packets' queuing delays, and for every flow its RTT samples: exact
percentiles of each group's values. Selecting them with one boolean mask
per group reads the whole series once per group (O(groups x rows): 400
UEs x 24 M rows of the per-TTI table), and holding every value for a long
run of many UEs does not fit in memory. Two ways to the same values, in
the order they were recorded:

- :class:`GroupedArrays`: a series in memory, sorted once by group
  (stably);
- :class:`GroupedSpill`: a series handed over in batches as a run goes
  (:mod:`xrc.stream`); values are buffered and written to a temporary file
  in chunks, each sorted by group, so that a group's values are a few
  contiguous slices read back when asked for. Memory: the buffer, and
  for statistics at most :data:`WHOLE_VALUES` of a group's values: a
  larger group's percentiles are selected exactly from its slices read in
  pieces (a radix selection on the values' bits, a few passes over the
  file), so a run of any length summarizes in bounded memory.

Both give the same numbers: ``percentiles`` is NumPy's ``np.percentile``
(its default, linear method) whichever way the order statistics were
found (``tests/test_grouped.py`` checks it bit for bit).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

__all__ = ["GroupedArrays", "GroupedSpill", "WHOLE_VALUES"]

#: A group with at most this many values is read whole for its statistics
#: (64 MiB of float64); a larger one is read in pieces of
#: :data:`PIECE_VALUES` values.
WHOLE_VALUES = 1 << 23
PIECE_VALUES = 1 << 18
#: A radix selection collects a bucket of at most this many values to sort.
_COLLECT_VALUES = 1 << 20
_SIGN = np.uint64(1 << 63)


def _sorted_by_group(groups: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Stably sorted by group. Groups (UE and flow indices) are small
    integers: as 16-bit keys NumPy's stable sort is a radix sort, O(n)."""
    keys = groups
    if groups.size and groups.min() >= 0 and groups.max() < 1 << 16:
        keys = groups.astype(np.uint16)
    order = np.argsort(keys, kind="stable")
    return groups[order], values[order]


class GroupedArrays:
    """Values held in memory, by group."""

    def __init__(self, groups: np.ndarray, values: np.ndarray):
        self._groups, self._values = _sorted_by_group(np.asarray(groups), np.asarray(values, dtype=np.float64))

    def values(self, group: int) -> np.ndarray:
        """Group `group`'s values in recording order (empty if none)."""
        lo, hi = np.searchsorted(self._groups, [group, group + 1])
        return self._values[lo:hi]

    def percentiles(self, group: int, qs) -> list[float]:
        """``np.percentile`` of the group's values at each of `qs` (NaN
        when it has none)."""
        return _percentiles_whole(self.values(group), qs)

    def count_at_most(self, group: int, x: float) -> tuple[int, int]:
        """(values <= `x`, values) of the group."""
        v = self.values(group)
        return int(np.count_nonzero(v <= x)), int(v.size)

    def cdf_points(self, group: int, points: int) -> tuple[np.ndarray, np.ndarray, int]:
        """The empirical CDF at no more than `points` evenly spaced ranks:
        (values at those ranks, the ranks, number of values), NaNs left out."""
        return _cdf_whole(self.values(group), points)


class GroupedSpill:
    """Values spilled to a file under `directory`, by group.

    :meth:`add` takes batches; every `chunk_values` values the buffer is
    sorted by group (stably) and appended to the file with the bounds of
    each group in it. :meth:`values` joins a group's slices of every chunk
    (through a memory map), so it gives the same values in the same order
    as :class:`GroupedArrays` over the whole series. Call :meth:`close` to
    delete the file. (Slices are read with ``pread``, not through a memory
    map: a map's pages count in the process's resident memory as they are
    touched, and the summary touches them all.)
    """

    def __init__(self, directory: Path, name: str, chunk_values: int = 1 << 21):
        self.path = Path(directory) / f".{name}.spill"
        self._file = open(self.path, "w+b")
        self._chunk_values = chunk_values
        self._buf_groups: list[np.ndarray] = []
        self._buf_values: list[np.ndarray] = []
        self._buffered = 0
        # Per chunk: its first value's index in the file, its sorted groups'
        # distinct ids and where each starts (and the chunk's end).
        self._chunks: list[tuple[int, np.ndarray, np.ndarray]] = []
        self._written = 0
        # Batches given by instant (`add_masked`): (values, keep), each of
        # shape (instants, groups), all with the same number of groups.
        self._buf_tiles: list[tuple[np.ndarray, np.ndarray]] = []

    def add(self, groups: np.ndarray, values: np.ndarray) -> None:
        if len(groups) == 0:
            return
        self._flush_tiles()
        self._buf_groups.append(np.asarray(groups, dtype=np.uint32))
        self._buf_values.append(np.asarray(values, dtype=np.float64))
        self._buffered += len(groups)
        if self._buffered >= self._chunk_values:
            self._flush()

    def add_masked(self, groups: np.ndarray, values: np.ndarray, keep: np.ndarray) -> None:
        """``add(groups[keep], values[keep])``, in one pass when the rows
        come by instant, every group 0..n-1 in order at each (the per-TTI
        table: one row per UE per sampled TTI). Such a batch is taken as an
        (instants x groups) matrix and transposed when the chunk is written,
        instead of being sorted: the same values in the same order."""
        groups = np.asarray(groups)
        n = int(groups.max()) + 1 if groups.size else 0
        tiled = (n > 0 and groups.size % n == 0
                 and np.array_equal(groups.reshape(-1, n), np.broadcast_to(np.arange(n, dtype=groups.dtype),
                                                                           (groups.size // n, n))))
        if not tiled:
            self.add(groups[keep], np.asarray(values)[keep])
            return
        if self._buffered:
            self._flush()
        if self._buf_tiles and self._buf_tiles[0][0].shape[1] != n:
            self._flush_tiles()
        self._buf_tiles.append((np.asarray(values, dtype=np.float64).reshape(-1, n),
                                np.asarray(keep, dtype=bool).reshape(-1, n)))
        if sum(v.size for v, _ in self._buf_tiles) >= self._chunk_values:
            self._flush_tiles()

    def _flush_tiles(self) -> None:
        if not self._buf_tiles:
            return
        v = np.concatenate([t[0] for t in self._buf_tiles])
        k = np.concatenate([t[1] for t in self._buf_tiles])
        self._buf_tiles = []
        # Group-major, each group's values in instant order: what a stable
        # sort by group of the rows kept gives.
        vals = v.T[k.T]
        counts = k.sum(axis=0)
        present = np.flatnonzero(counts)
        if present.size:
            bounds = np.r_[0, np.cumsum(counts[present])]
            self._write_chunk(present.astype(np.int64), bounds, vals)

    def _write_chunk(self, ids: np.ndarray, bounds: np.ndarray, v: np.ndarray) -> None:
        self._chunks.append((self._written, ids, bounds))
        # The array's own memory, not a bytes copy of it.
        self._file.write(memoryview(np.ascontiguousarray(v, dtype="<f8")).cast("B"))
        self._written += len(v)

    def _flush(self) -> None:
        self._flush_tiles()
        if not self._buffered:
            return
        g, v = _sorted_by_group(np.concatenate(self._buf_groups), np.concatenate(self._buf_values))
        # Sorted: each group's run starts where the value changes.
        starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
        self._write_chunk(g[starts].astype(np.int64), np.append(starts, len(g)), v)
        self._buf_groups, self._buf_values, self._buffered = [], [], 0

    def values(self, group: int) -> np.ndarray:
        """Group `group`'s values in recording order (empty if none)."""
        spans = self._spans(group)
        if not spans:
            return np.empty(0)
        return np.concatenate([self._read(first, n) for first, n in spans])

    def count(self, group: int) -> int:
        """How many values the group has."""
        return sum(n for _, n in self._spans(group))

    def pieces(self, group: int, size: int = PIECE_VALUES):
        """The group's values in recording order, in arrays of at most
        `size` values."""
        for first, n in self._spans(group):
            for at in range(0, n, size):
                yield self._read(first + at, min(size, n - at))

    def percentiles(self, group: int, qs) -> list[float]:
        """``np.percentile`` of the group's values at each of `qs` (NaN
        when it has none), holding at most :data:`WHOLE_VALUES` of them."""
        n = self.count(group)
        if n <= WHOLE_VALUES:
            return _percentiles_whole(self.values(group), qs)
        if any(np.isnan(p).any() for p in self.pieces(group)):
            return [float("nan")] * len(qs)
        lo, hi, gamma = _linear_ranks(n, qs)
        got = _select(lambda: self.pieces(group), sorted(set(lo) | set(hi)))
        return [float(_lerp(got[a], got[b], g)) for a, b, g in zip(lo, hi, gamma)]

    def count_at_most(self, group: int, x: float) -> tuple[int, int]:
        """(values <= `x`, values) of the group, read in pieces."""
        below = n = 0
        for p in self.pieces(group):
            below += int(np.count_nonzero(p <= x))
            n += p.size
        return below, n

    def cdf_points(self, group: int, points: int) -> tuple[np.ndarray, np.ndarray, int]:
        """As :meth:`GroupedArrays.cdf_points`. A group of more than
        :data:`WHOLE_VALUES` values gives each rank's value to 12
        significant bits (the top 24 of its 64: within 0.025 %, finer than
        a figure's pixels), found in two passes over the values."""
        n = self.count(group)
        if n <= WHOLE_VALUES:
            return _cdf_whole(self.values(group), points)
        nans = sum(int(np.isnan(p).sum()) for p in self.pieces(group))
        m = n - nans
        if m == 0:
            return np.empty(0), np.empty(0, dtype=np.int64), 0
        rank = _cdf_ranks(m, points)
        got = _select(lambda: (p[~np.isnan(p)] for p in self.pieces(group)), list(rank), widths=(16, 8),
                      collect=False)
        return np.array([got[r] for r in rank]), rank, m

    def _spans(self, group: int) -> list[tuple[int, int]]:
        if self._buffered or self._buf_tiles:
            self._flush()
        self._file.flush()
        spans = []
        for offset, ids, bounds in self._chunks:
            i = np.searchsorted(ids, group)
            if i < len(ids) and ids[i] == group:
                spans.append((offset + int(bounds[i]), int(bounds[i + 1] - bounds[i])))
        return spans

    def _read(self, first: int, n: int) -> np.ndarray:
        out = np.empty(n, dtype="<f8")
        view = memoryview(out).cast("B")
        got = 0
        while got < len(view):
            k = os.preadv(self._file.fileno(), [view[got:]], first * 8 + got)
            if k <= 0:
                raise OSError(f"{self.path}: short read")
            got += k
        return out.astype(np.float64, copy=False)

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()
        try:
            os.remove(self.path)
        except FileNotFoundError:
            pass


def _percentiles_whole(values: np.ndarray, qs) -> list[float]:
    if values.size == 0:
        return [float("nan")] * len(qs)
    return [float(x) for x in np.percentile(values, list(qs))]


def _cdf_ranks(n: int, points: int) -> np.ndarray:
    if n > points:
        # (Not np.arange(n) first: 800 MB for a 10^8-value group.)
        return np.unique(np.linspace(0, n - 1, points).round().astype(np.int64))
    return np.arange(n)


def _cdf_whole(values: np.ndarray, points: int) -> tuple[np.ndarray, np.ndarray, int]:
    x = np.sort(np.asarray(values, dtype=float))
    x = x[~np.isnan(x)]
    rank = _cdf_ranks(x.size, points)
    return x[rank], rank, int(x.size)


def _linear_ranks(n: int, qs) -> tuple[list[int], list[int], list[float]]:
    """The two order statistics and the weight ``np.percentile`` (method
    "linear", NumPy 2) interpolates between for each of `qs` over `n`
    values: the virtual index ``(n - 1) * q / 100``, its floor and the next
    index, both the last one at or past the end."""
    q = np.true_divide(np.asanyarray(list(qs)), 100)
    virtual = (n - 1) * q
    prev = np.floor(virtual)
    nxt = prev + 1
    above = virtual >= n - 1
    prev[above] = n - 1
    nxt[above] = n - 1
    gamma = virtual - np.where(above, -1, prev)
    return [int(x) for x in prev], [int(x) for x in nxt], [float(g) for g in gamma]


def _lerp(a: float, b: float, t: float) -> np.float64:
    """NumPy's interpolation between two order statistics (it computes from
    the nearer end, for accuracy)."""
    a, b, t = np.float64(a), np.float64(b), np.float64(t)
    d = b - a
    return b - d * (1 - t) if t >= 0.5 else a + d * t


def _keys(v: np.ndarray) -> np.ndarray:
    """Unsigned keys in the order of the floats (``-0.0`` as ``0.0``)."""
    b = (v + 0.0).view(np.uint64)
    return np.where(b >> np.uint64(63) == 1, ~b, b | _SIGN)


def _float_of(key: int) -> float:
    k = np.uint64(key)
    b = k & ~_SIGN if k & _SIGN else ~k
    return float(np.array([b], dtype=np.uint64).view(np.float64)[0])


def _select(pieces, ranks: list[int], widths: tuple[int, ...] = (16, 16, 16, 16),
            collect: bool = True) -> dict[int, float]:
    """The value at each of `ranks` (0-based, in ascending order of the
    values; no NaN among them) of the values `pieces()` yields (called once
    per pass). A radix selection on 64-bit keys ordered as the floats,
    ``widths[i]`` bits in pass i; with `collect`, a bucket of few values is
    gathered and sorted instead of going one level down. A rank still in a
    bucket after the passes (widths short of 64 bits, without `collect`)
    gets the bucket's smallest possible value. Memory: a piece and one
    histogram of 2^20 counts (prefixes are taken 2^20 >> width at a time)."""
    # Per rank: the key's top bits fixed so far, and the rank among the
    # values that have them.
    state = {r: (0, r) for r in ranks}
    done: dict[int, float] = {}
    fixed = 0
    for w in widths:
        shift = np.uint64(64 - fixed - w)
        mask = np.uint64((1 << w) - 1)
        prefixes = sorted({p for p, _ in state.values()})
        counts: dict[int, np.ndarray] = {}
        per_pass = max(1, (1 << 20) >> w)
        for at in range(0, len(prefixes), per_pass):
            part = np.array(prefixes[at:at + per_pass], dtype=np.uint64)
            hist = np.zeros(part.size << w, dtype=np.int64)
            for v in pieces():
                k = _keys(v)
                j, ok = _matching(part, k >> np.uint64(64 - fixed) if fixed else np.zeros(k.size, np.uint64))
                digit = ((k[ok] >> shift) & mask).astype(np.int64)
                hist += np.bincount((j << w) | digit, minlength=hist.size)
            for i, p in enumerate(part):
                counts[int(p)] = hist[i << w:(i + 1) << w].copy()
            del hist
        nxt: dict[int, tuple[int, int, int]] = {}
        for r, (p, within) in state.items():
            cum = np.cumsum(counts[p])
            d = int(np.searchsorted(cum, within, side="right"))
            nxt[r] = ((p << w) | d, within - (int(cum[d - 1]) if d else 0), int(counts[p][d]))
        del counts
        fixed += w
        last = fixed == 64
        small = {r: st for r, st in nxt.items() if last or (collect and st[2] <= _COLLECT_VALUES)}
        if small and not last:
            want = np.array(sorted({p for p, _, _ in small.values()}), dtype=np.uint64)
            got: list[list[np.ndarray]] = [[] for _ in want]
            for v in pieces():
                j, ok = _matching(want, _keys(v) >> np.uint64(64 - fixed))
                order = np.argsort(j, kind="stable")
                sel, js = v[ok][order], j[order]
                bounds = np.searchsorted(js, np.arange(want.size + 1))
                for i in range(want.size):
                    if bounds[i + 1] > bounds[i]:
                        got[i].append(sel[bounds[i]:bounds[i + 1]])
            index = {int(p): i for i, p in enumerate(want)}
            for r, (p, within, _) in small.items():
                done[r] = float(np.sort(np.concatenate(got[index[p]]) + 0.0)[within])
        else:
            for r, (p, _, _) in small.items():
                done[r] = _float_of(p)
        state = {r: (p, within) for r, (p, within, _) in nxt.items() if r not in small}
        if not state:
            return done
    for r, (p, _) in state.items():
        done[r] = _float_of(p << (64 - fixed))
    return done


def _matching(sorted_prefixes: np.ndarray, top: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For keys whose top bits are `top`: the index in `sorted_prefixes` of
    each key's prefix (keys whose prefix is one of them) and the mask of
    those keys."""
    where = np.searchsorted(sorted_prefixes, top)
    ok = (where < sorted_prefixes.size) & (sorted_prefixes[np.minimum(where, sorted_prefixes.size - 1)] == top)
    return where[ok].astype(np.int64), ok
