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
  contiguous slices read back when asked for. Memory: the buffer and one
  group's values.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

__all__ = ["GroupedArrays", "GroupedSpill"]


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
        if self._buffered or self._buf_tiles:
            self._flush()
        self._file.flush()
        spans = []
        for offset, ids, bounds in self._chunks:
            i = np.searchsorted(ids, group)
            if i < len(ids) and ids[i] == group:
                spans.append((offset + int(bounds[i]), int(bounds[i + 1] - bounds[i])))
        out = np.empty(sum(n for _, n in spans), dtype="<f8")
        at = 0
        fd = self._file.fileno()
        for first, n in spans:
            view = memoryview(out[at:at + n]).cast("B")
            got = 0
            while got < len(view):
                k = os.preadv(fd, [view[got:]], first * 8 + got)
                if k <= 0:
                    raise OSError(f"{self.path}: short read")
                got += k
            at += n
        return out.astype(np.float64, copy=False)

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()
        try:
            os.remove(self.path)
        except FileNotFoundError:
            pass
